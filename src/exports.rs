//! The wit-bindgen export glue: converts between the WIT types and the
//! crate's own, and runs each call's async work in its own `block_on`.
//! The generated bindings need `unsafe`; nothing else here uses it.
#![allow(unsafe_code)]

use crate::args::{
    self, BackgroundArgs, Offsets, RunCodeArgs, RunCommandArgs, StopSignal, ToolCall,
};
use crate::background::ProcessState;
use crate::config::{ConfigInput, NetworkRules, OnTimeout, Settings};
use crate::errors::{ErrorKind, ToolError};
use crate::results::{self, Readiness, ToolOutput};
use crate::{catalog, session, tools};

wit_bindgen::generate!({
    world: "e2b-tools",
    path: "wit",
});

use exports::e2b::tools::catalog as wit_catalog;
use exports::e2b::tools::lifecycle as wit_lifecycle;
use exports::e2b::tools::tools as wit_tools;
use exports::e2b::tools::types as wit_types;

struct Component;

export!(Component);

fn to_wit_error(err: ToolError) -> wit_types::ToolError {
    let kind = match err.kind {
        ErrorKind::InvalidArgument => wit_types::ErrorKind::InvalidArgument,
        ErrorKind::SandboxUnavailable => wit_types::ErrorKind::SandboxUnavailable,
        ErrorKind::SandboxExpired => wit_types::ErrorKind::SandboxExpired,
        ErrorKind::Timeout => wit_types::ErrorKind::Timeout,
        ErrorKind::NotFound => wit_types::ErrorKind::NotFound,
        ErrorKind::PermissionDenied => wit_types::ErrorKind::PermissionDenied,
        ErrorKind::RateLimited => wit_types::ErrorKind::RateLimited,
        ErrorKind::Auth => wit_types::ErrorKind::Auth,
        ErrorKind::Network => wit_types::ErrorKind::Network,
        ErrorKind::Cancelled => wit_types::ErrorKind::Cancelled,
        ErrorKind::Internal => wit_types::ErrorKind::Internal,
    };
    wit_types::ToolError {
        kind,
        message: err.message,
        partial_output: err.partial_output,
        path: err.path,
        command: err.command,
    }
}

fn pairs(list: Vec<wit_types::KeyValue>) -> Vec<(String, String)> {
    list.into_iter().map(|kv| (kv.key, kv.value)).collect()
}

fn seconds_to_ms(seconds: Option<u32>) -> Option<u64> {
    seconds.map(|s| u64::from(s) * 1000)
}

/// Runs one validated call to completion.
fn run(call: ToolCall) -> Result<ToolOutput, ToolError> {
    wstd::runtime::block_on(tools::execute(&session::wasi(), call))
}

fn required(value: String, key: &str) -> Result<String, ToolError> {
    if value.is_empty() {
        Err(ToolError::invalid(format!(
            "Missing or invalid required argument: {key}"
        )))
    } else {
        Ok(value)
    }
}

impl wit_lifecycle::Guest for Component {
    fn configure(config: wit_lifecycle::Config) -> Result<(), wit_types::ToolError> {
        if session::wasi().snapshot().sandbox.is_some() {
            return Err(to_wit_error(ToolError::invalid(
                "A sandbox is already open: call shutdown() before configure()",
            )));
        }
        let input = ConfigInput {
            api_key: config.api_key,
            template: config.template,
            metadata: pairs(config.metadata),
            envs: pairs(config.envs),
            timeout_seconds: config.timeout_seconds,
            domain: config.domain,
            api_url: config.api_url,
            sandbox_url: config.sandbox_url,
            request_timeout_ms: config.request_timeout_ms,
            allow_internet_access: config.allow_internet_access,
            network: config.network.map(|n| NetworkRules {
                allow_out: n.allow_out,
                deny_out: n.deny_out,
                allow_public_traffic: n.allow_public_traffic,
                mask_request_host: n.mask_request_host,
            }),
            on_timeout: config.on_timeout.map(|t| match t {
                wit_lifecycle::OnTimeout::Kill => OnTimeout::Kill,
                wit_lifecycle::OnTimeout::Pause => OnTimeout::Pause,
            }),
            auto_resume: config.auto_resume,
            volume_mounts: config
                .volume_mounts
                .into_iter()
                .map(|v| (v.name, v.path))
                .collect(),
            max_output_bytes: config.max_output_bytes,
            rich_results: config.rich_results,
            readiness_timeout_ms: config.readiness_timeout_ms,
            sandbox_id: config.sandbox_id,
            tools: config.tools,
            progress: config.progress,
        };
        let settings = Settings::resolve(input, session::env_var).map_err(to_wit_error)?;
        session::wasi().update(|s| *s = session::Session::new(settings));
        Ok(())
    }

    fn sandbox_id() -> Option<String> {
        session::wasi().snapshot().sandbox.map(|h| h.id)
    }

    fn shutdown() -> Result<bool, wit_types::ToolError> {
        let ctx = session::wasi();
        let secrets = ctx.secrets();
        wstd::runtime::block_on(ctx.shutdown()).map_err(|f| {
            let err = ToolError::from_failure("Failed to shut down the sandbox: ", f);
            to_wit_error(tools::redact_error(err, &secrets))
        })
    }
}

impl wit_tools::Guest for Component {
    fn run_code(
        a: wit_tools::RunCodeArgs,
    ) -> Result<wit_tools::RunCodeOutput, wit_types::ToolError> {
        let call = ToolCall::RunCode(RunCodeArgs {
            code: required(a.code, "code").map_err(to_wit_error)?,
            language: args::normalize_language(a.language.as_deref()),
            envs: pairs(a.envs).into_iter().collect(),
            timeout_ms: seconds_to_ms(a.timeout_seconds),
        });
        match run(call).map_err(to_wit_error)? {
            ToolOutput::Code(ex) => Ok(wit_tools::RunCodeOutput {
                stdout: ex.stdout,
                stderr: ex.stderr,
                text: ex.text,
                error: ex.error,
                rich: ex
                    .rich
                    .into_iter()
                    .map(|r| wit_tools::RichResult {
                        mime_type: r.mime_type,
                        data: r.data,
                        is_main_result: r.is_main_result,
                    })
                    .collect(),
            }),
            _ => Err(to_wit_error(unexpected())),
        }
    }

    fn run_command(
        a: wit_tools::RunCommandArgs,
    ) -> Result<wit_tools::CommandOutput, wit_types::ToolError> {
        let call = ToolCall::RunCommand(RunCommandArgs {
            command: required(a.command, "command").map_err(to_wit_error)?,
            cwd: a.cwd.filter(|c| !c.is_empty()),
            envs: pairs(a.envs).into_iter().collect(),
            timeout_ms: seconds_to_ms(a.timeout_seconds),
        });
        match run(call).map_err(to_wit_error)? {
            ToolOutput::Command(c) => Ok(wit_tools::CommandOutput {
                command: c.command,
                stdout: c.stdout,
                stderr: c.stderr,
                exit_code: c.exit_code,
            }),
            _ => Err(to_wit_error(unexpected())),
        }
    }

    fn write_file(path: String, content: String) -> Result<(), wit_types::ToolError> {
        let path = required(path, "path").map_err(to_wit_error)?;
        run(ToolCall::WriteFile {
            path,
            content: content.into_bytes(),
        })
        .map(|_| ())
        .map_err(to_wit_error)
    }

    fn read_file(path: String) -> Result<String, wit_types::ToolError> {
        let path = required(path, "path").map_err(to_wit_error)?;
        let call = ToolCall::ReadFile {
            path,
            encoding: args::Encoding::Utf8,
        };
        match run(call).map_err(to_wit_error)? {
            ToolOutput::Read { content, .. } => Ok(content),
            _ => Err(to_wit_error(unexpected())),
        }
    }

    fn list_files(path: Option<String>) -> Result<Vec<wit_tools::DirEntry>, wit_types::ToolError> {
        let path = path.filter(|p| !p.is_empty()).unwrap_or_else(|| ".".into());
        match run(ToolCall::ListFiles { path, depth: 1 }).map_err(to_wit_error)? {
            ToolOutput::Listed { entries, .. } => Ok(entries
                .into_iter()
                .map(|e| wit_tools::DirEntry {
                    name: e.name,
                    type_: match e.kind {
                        crate::envd::EntryKind::File => wit_tools::EntryType::File,
                        crate::envd::EntryKind::Dir => wit_tools::EntryType::Dir,
                        crate::envd::EntryKind::Symlink => wit_tools::EntryType::Symlink,
                        crate::envd::EntryKind::Unknown => wit_tools::EntryType::Unknown,
                    },
                })
                .collect()),
            _ => Err(to_wit_error(unexpected())),
        }
    }

    fn start_background_command(
        a: wit_tools::BackgroundArgs,
    ) -> Result<wit_tools::BackgroundProcess, wit_types::ToolError> {
        let command = required(a.command, "command").map_err(to_wit_error)?;
        if a.port == Some(0) {
            return Err(to_wit_error(
                ToolError::invalid(args::INVALID_PORT).with_command(command),
            ));
        }
        let call = ToolCall::StartBackground(BackgroundArgs {
            command,
            port: a.port,
            cwd: a.cwd.filter(|c| !c.is_empty()),
            envs: pairs(a.envs).into_iter().collect(),
            timeout_ms: seconds_to_ms(a.timeout_seconds),
        });
        match run(call).map_err(to_wit_error)? {
            ToolOutput::Background(b) => Ok(wit_tools::BackgroundProcess {
                command: b.command,
                pid: b.pid,
                preview_url: b.preview_url,
                readiness: b.readiness.map(|r| match r {
                    Readiness::Ready => wit_tools::Readiness::Ready,
                    Readiness::Exited => wit_tools::Readiness::Exited,
                    Readiness::NotListening => wit_tools::Readiness::NotListening,
                }),
                exit_code: b.exit_code,
                stdout: b.stdout,
                stderr: b.stderr,
            }),
            _ => Err(to_wit_error(unexpected())),
        }
    }

    fn get_background_output(
        pid: u32,
        since: Option<wit_tools::OutputOffsets>,
    ) -> Result<wit_tools::ProcessOutput, wit_types::ToolError> {
        let since = since.map_or_else(Offsets::default, |o| Offsets {
            stdout: o.stdout,
            stderr: o.stderr,
        });
        let call = ToolCall::GetBackgroundOutput {
            pid: positive_pid(pid)?,
            since,
        };
        match run(call).map_err(to_wit_error)? {
            ToolOutput::ProcessOutput(p) => Ok(wit_tools::ProcessOutput {
                pid: p.pid,
                state: match p.state {
                    ProcessState::Running => wit_tools::ProcessState::Running,
                    ProcessState::Exited => wit_tools::ProcessState::Exited,
                },
                exit_code: p.exit_code,
                stdout: p.stdout,
                stderr: p.stderr,
                next_since: wit_tools::OutputOffsets {
                    stdout: p.next_since.stdout,
                    stderr: p.next_since.stderr,
                },
            }),
            _ => Err(to_wit_error(unexpected())),
        }
    }

    fn stop_background_command(
        pid: u32,
        signal: Option<wit_tools::StopSignal>,
    ) -> Result<wit_tools::StoppedProcess, wit_types::ToolError> {
        let signal = match signal {
            None | Some(wit_tools::StopSignal::Sigterm) => StopSignal::Term,
            Some(wit_tools::StopSignal::Sigint) => StopSignal::Int,
            Some(wit_tools::StopSignal::Sighup) => StopSignal::Hup,
            Some(wit_tools::StopSignal::Sigquit) => StopSignal::Quit,
            Some(wit_tools::StopSignal::Sigkill) => StopSignal::Kill,
        };
        let call = ToolCall::StopBackground {
            pid: positive_pid(pid)?,
            signal,
        };
        match run(call).map_err(to_wit_error)? {
            ToolOutput::Stopped(s) => Ok(wit_tools::StoppedProcess {
                pid: s.pid,
                exit_code: s.exit_code,
                signal: s.signal.map(|s| match s {
                    StopSignal::Term => wit_tools::StopSignal::Sigterm,
                    StopSignal::Int => wit_tools::StopSignal::Sigint,
                    StopSignal::Hup => wit_tools::StopSignal::Sighup,
                    StopSignal::Quit => wit_tools::StopSignal::Sigquit,
                    StopSignal::Kill => wit_tools::StopSignal::Sigkill,
                }),
            }),
            _ => Err(to_wit_error(unexpected())),
        }
    }
}

/// Pid 0 is nobody's.
fn positive_pid(pid: u32) -> Result<u32, wit_types::ToolError> {
    if pid == 0 {
        return Err(to_wit_error(ToolError::invalid(args::INVALID_PID)));
    }
    Ok(pid)
}

fn unexpected() -> ToolError {
    ToolError {
        kind: ErrorKind::Internal,
        message: "internal error: the tool produced another tool's output".into(),
        partial_output: String::new(),
        path: None,
        command: None,
    }
}

impl wit_catalog::Guest for Component {
    fn list_tools() -> Vec<wit_catalog::ToolSpec> {
        catalog::enabled(session::wasi().snapshot().settings.tools)
            .map(|t| wit_catalog::ToolSpec {
                name: t.name.into(),
                title: t.title.into(),
                description: t.description.into(),
                parameters_schema: t.parameters_schema.into(),
                result_schema: t.result_schema.into(),
                hints: wit_catalog::ToolHints {
                    read_only: t.hints.read_only,
                    destructive: t.hints.destructive,
                    idempotent: t.hints.idempotent,
                    open_world: t.hints.open_world,
                },
            })
            .collect()
    }

    fn call_tool(name: String, arguments_json: String) -> String {
        let settings = session::wasi().snapshot().settings;
        let rich = settings.rich_results;
        let call = args::parse_enabled_call(&name, &arguments_json, settings.tools);
        drop(settings);
        // The arguments may be tens of megabytes: free them before the call.
        drop(arguments_json);
        match call {
            Err(err) => results::failure_json(&err),
            Ok(call) => match run(call) {
                Ok(output) => results::success_json(&output, rich),
                Err(err) => results::failure_json(&err),
            },
        }
    }

    fn instructions() -> String {
        catalog::instructions(&session::wasi().snapshot().settings)
    }
}
