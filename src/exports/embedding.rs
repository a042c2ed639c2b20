//! The wit-bindgen export glue of the embedding world: each function
//! builds its call, runs it in its own `block_on` on the instance's one
//! session, and converts the answer ([`super::convert`]).
//! The generated `export!` needs `unsafe`; nothing else here uses it.
#![allow(unsafe_code)]

use super::convert::{required, unexpected, FromOutput};
use crate::config::{ConfigInput, Settings};
use crate::errors::ToolError;
use crate::tools::background::output::OutputArgs;
use crate::tools::background::stop::StopArgs;
use crate::tools::background::{Offsets, INVALID_PID};
use crate::tools::list_files::ListFilesArgs;
use crate::tools::read_file::ReadFileArgs;
use crate::tools::write_file::WriteFileArgs;
use crate::tools::{self, args, catalog, ToolCall};
use crate::{output::results, session};

use super::wit::export;
use super::wit::exports::e2b::tools::catalog as wit_catalog;
use super::wit::exports::e2b::tools::lifecycle as wit_lifecycle;
use super::wit::exports::e2b::tools::sandboxes as wit_sandboxes;
use super::wit::exports::e2b::tools::tools as wit_tools;
use super::wit::exports::e2b::tools::types as wit_types;

struct Component;

export!(Component with_types_in super::wit);

/// The instance's session, its events reported through the `events`
/// import.
fn ctx() -> session::Ctx<session::http::Wasi> {
    session::wasi(|event| super::wit::e2b::tools::events::report(&event.into()))
}

/// Runs one call of a typed function to completion, as its WIT output.
fn run<T: FromOutput>(call: ToolCall) -> Result<T, wit_types::ToolError> {
    let output = wstd::runtime::block_on(tools::execute(&ctx(), call))?;
    T::from_output(output).ok_or_else(|| unexpected().into())
}

impl wit_lifecycle::Guest for Component {
    fn configure(config: wit_lifecycle::Config) -> Result<(), wit_types::ToolError> {
        if ctx().read(|s| s.sandbox.is_some()) {
            return Err(ToolError::invalid(
                "A sandbox is already open: call shutdown() before configure()",
            )
            .into());
        }
        let input = ConfigInput::from(config);
        let settings = Settings::resolve(input, session::env_var)?;
        ctx().update(|s| *s = session::Session::new(settings));
        Ok(())
    }

    fn sandbox_id() -> Option<String> {
        ctx().read(|s| s.sandbox.as_ref().map(|h| h.id.clone()))
    }

    fn prepare(timeout_seconds: Option<u32>) -> Result<String, wit_types::ToolError> {
        let ctx = ctx();
        let secrets = ctx.secrets();
        wstd::runtime::block_on(ctx.prepare(timeout_seconds)).map_err(|f| {
            let err = ToolError::from_failure("Sandbox unavailable: ", f);
            tools::redact_error(err, &secrets).into()
        })
    }

    fn shutdown() -> Result<bool, wit_types::ToolError> {
        let ctx = ctx();
        let secrets = ctx.secrets();
        wstd::runtime::block_on(ctx.shutdown()).map_err(|f| {
            let err = ToolError::from_failure("Failed to shut down the sandbox: ", f);
            tools::redact_error(err, &secrets).into()
        })
    }

    fn kill(sandbox_id: String) -> Result<bool, wit_types::ToolError> {
        let id = required(sandbox_id, "sandbox_id")?;
        let ctx = ctx();
        let secrets = ctx.secrets();
        wstd::runtime::block_on(ctx.kill_by_id(&id)).map_err(|f| {
            let err = ToolError::from_failure("Failed to kill the sandbox: ", f);
            tools::redact_error(err, &secrets).into()
        })
    }
}

impl wit_sandboxes::Guest for Component {
    fn list_sandboxes() -> Result<Vec<wit_sandboxes::ListedSandbox>, wit_types::ToolError> {
        let ctx = ctx();
        let listed = inventory(&ctx, "Failed to list sandboxes: ", ctx.list_sandboxes())?;
        Ok(listed.into_iter().map(Into::into).collect())
    }

    fn list_snapshots() -> Result<Vec<wit_sandboxes::ListedSnapshot>, wit_types::ToolError> {
        let ctx = ctx();
        let listed = inventory(&ctx, "Failed to list snapshots: ", ctx.list_snapshots())?;
        Ok(listed.into_iter().map(Into::into).collect())
    }

    fn delete_snapshot(snapshot_id: String) -> Result<bool, wit_types::ToolError> {
        let id = required(snapshot_id, "snapshot_id")?;
        let ctx = ctx();
        inventory(
            &ctx,
            "Failed to delete the snapshot: ",
            ctx.delete_snapshot(&id),
        )
    }
}

/// Runs one call of the `sandboxes` interface: its failure prefixed and
/// redacted like a tool's.
fn inventory<T>(
    ctx: &session::Ctx<session::http::Wasi>,
    prefix: &'static str,
    call: impl std::future::Future<Output = Result<T, crate::errors::Failure>>,
) -> Result<T, wit_types::ToolError> {
    let secrets = ctx.secrets();
    wstd::runtime::block_on(call).map_err(|f| {
        let err = ToolError::from_failure(prefix, f);
        tools::redact_error(err, &secrets).into()
    })
}

impl wit_tools::Guest for Component {
    fn run_code(
        a: wit_tools::RunCodeArgs,
    ) -> Result<wit_tools::RunCodeOutput, wit_types::ToolError> {
        run(a.try_into()?)
    }

    fn run_command(
        a: wit_tools::RunCommandArgs,
    ) -> Result<wit_tools::CommandOutput, wit_types::ToolError> {
        run(a.try_into()?)
    }

    fn write_file(path: String, content: String) -> Result<(), wit_types::ToolError> {
        run(ToolCall::WriteFile(WriteFileArgs {
            path: required(path, "path")?,
            content: content.into_bytes(),
        }))
    }

    fn read_file(path: String) -> Result<String, wit_types::ToolError> {
        run(ToolCall::ReadFile(ReadFileArgs {
            path: required(path, "path")?,
            encoding: args::Encoding::Utf8,
        }))
    }

    fn list_files(path: Option<String>) -> Result<Vec<wit_tools::DirEntry>, wit_types::ToolError> {
        let path = path.filter(|p| !p.is_empty()).unwrap_or_else(|| ".".into());
        run(ToolCall::ListFiles(ListFilesArgs { path, depth: 1 }))
    }

    fn start_background_command(
        a: wit_tools::BackgroundArgs,
    ) -> Result<wit_tools::BackgroundProcess, wit_types::ToolError> {
        run(a.try_into()?)
    }

    fn get_background_output(
        pid: u32,
        since: Option<wit_tools::OutputOffsets>,
    ) -> Result<wit_tools::ProcessOutput, wit_types::ToolError> {
        run(ToolCall::GetBackgroundOutput(OutputArgs {
            pid: positive_pid(pid)?,
            since: since.map_or_else(Offsets::default, Into::into),
        }))
    }

    fn stop_background_command(
        pid: u32,
        signal: Option<wit_tools::StopSignal>,
    ) -> Result<wit_tools::StoppedProcess, wit_types::ToolError> {
        run(ToolCall::StopBackgroundCommand(StopArgs {
            pid: positive_pid(pid)?,
            signal: signal.map(Into::into).unwrap_or_default(),
        }))
    }

    fn create_snapshot(name: Option<String>) -> Result<wit_tools::Snapshot, wit_types::ToolError> {
        let mut args = args::Args::new();
        if let Some(name) = name {
            args.insert("name".into(), name.into());
        }
        run(tools::parse_object(tools::ToolName::CreateSnapshot, args)?)
    }

    fn fork_sandbox(a: wit_tools::ForkArgs) -> Result<wit_tools::Forks, wit_types::ToolError> {
        run(a.try_into()?)
    }
}

/// Pid 0 is nobody's.
fn positive_pid(pid: u32) -> Result<u32, ToolError> {
    if pid == 0 {
        return Err(ToolError::invalid(INVALID_PID));
    }
    Ok(pid)
}

impl wit_catalog::Guest for Component {
    fn list_tools() -> Vec<wit_catalog::ToolSpec> {
        let enabled = ctx().read(|s| s.settings.tools);
        catalog::enabled(enabled)
            .map(|spec| wit_catalog::ToolSpec {
                parameters_schema: catalog::parameters_schema(spec, enabled),
                ..spec.into()
            })
            .collect()
    }

    fn call_tool(name: String, arguments_json: String) -> String {
        let (rich, enabled) = ctx().read(|s| (s.settings.rich_results, s.settings.tools));
        let call = tools::parse_enabled_call(&name, &arguments_json, enabled);
        // The arguments may be tens of megabytes: free them before the call.
        drop(arguments_json);
        let ctx = ctx();
        match call {
            Err(err) => results::failure_json(&tools::refused(&ctx, &name, err)),
            Ok(call) => match wstd::runtime::block_on(tools::execute_admitted(&ctx, call)) {
                Ok(output) => tools::success_json(&output, rich),
                Err(err) => results::failure_json(&err),
            },
        }
    }

    fn instructions() -> String {
        ctx().read(|s| catalog::instructions(&s.settings))
    }
}
