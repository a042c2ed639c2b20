//! The tools. Each is one declaration, a [`Tool`] in its own file: its
//! [`ToolSpec`] (name, description, schemas, hints, failure prefix), its
//! argument parser, its work over the session, its redaction and its
//! result dict. This file is the registry (`tools!`), from which the
//! dispatch follows: a call is parsed once into a [`ToolCall`], admitted
//! once against the session's [`ToolSet`], run, redacted, and shaped into
//! e2b-adk's dict. The catalog (`list_tools`, the instructions) is derived
//! from the specs in [`catalog`].
//!
//! Adding a tool: its file (a [`Tool`]), its line in `tools!` below, its
//! line in the config's tool list (`tool_names!`, which makes the
//! [`ToolName`]), and the WIT with its typed export.

use serde_json::Map;

pub use crate::config::{ToolName, ToolSet};
pub use spec::{Hints, ToolSpec};
pub use tool::Tool;

use crate::config::Settings;
use crate::errors::{body_message, sandbox_unavailable, ErrorKind, Failure, ToolError};
use crate::output::redact::Secrets;
use crate::output::results::OrderedObject;
use crate::protocol::api::SandboxHandle;
use crate::protocol::envd;
use crate::session::platform::Platform;
use crate::session::report::{Report, StopReason};
use crate::session::{Ctx, Unavailable};
use exec::{error_body, OpError};

pub mod args;
pub mod background;
pub mod catalog;
pub mod create_snapshot;
mod exec;
pub mod fork_sandbox;
pub mod list_files;
pub mod read_file;
pub mod run_code;
pub mod run_command;
pub mod spec;
mod tool;
pub mod write_file;

/// The registry: each tool's [`ToolName`] variant and its [`Tool`], in
/// catalog order. Makes [`ToolCall`], [`ToolOutput`], [`ALL`], [`spec()`]
/// and every per-tool dispatch below; nothing else matches on tools.
macro_rules! tools {
    ($($variant:ident => $tool:ty,)*) => {
        /// One parsed tool call: the tool and its arguments.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum ToolCall {
            $(
                #[doc = concat!("`", stringify!($variant), "`'s call.")]
                $variant(<$tool as Tool>::Input),
            )*
        }

        /// A successful tool call's output.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum ToolOutput {
            $(
                #[doc = concat!("`", stringify!($variant), "`'s output.")]
                $variant(<$tool as Tool>::Output),
            )*
        }

        /// Every tool, in catalog order: e2b-adk's six in its order, then ours.
        pub const ALL: [&ToolSpec; ToolName::ALL.len()] = [$(&<$tool as Tool>::SPEC,)*];

        /// The spec of `tool`.
        pub const fn spec(tool: ToolName) -> &'static ToolSpec {
            match tool {
                $(ToolName::$variant => &<$tool as Tool>::SPEC,)*
            }
        }

        impl ToolCall {
            /// The tool this call is for.
            pub fn tool(&self) -> ToolName {
                match self {
                    $(ToolCall::$variant(_) => ToolName::$variant,)*
                }
            }

            /// e2b-adk's failure prefix of the call's tool.
            pub fn failure_prefix(&self) -> &'static str {
                // A constant of each arm: through `spec()` the whole specs
                // (descriptions, schemas) would be linked into the
                // stateless world, which lists no catalog (24 KiB).
                match self {
                    $(ToolCall::$variant(_) => <$tool as Tool>::SPEC.failure_prefix,)*
                }
            }

            /// Adds the call's echoed path or command to an error, as
            /// e2b-adk does.
            pub fn echo(&self, err: ToolError) -> ToolError {
                match self {
                    $(ToolCall::$variant(a) => <$tool as Tool>::echo(a, err),)*
                }
            }

            /// Refuses what must not reach a sandbox (see [`Tool::admit`]).
            fn admit(&self, settings: &Settings) -> Result<(), ToolError> {
                match self {
                    $(ToolCall::$variant(a) => <$tool as Tool>::admit(settings, a),)*
                }
            }

            /// Whether the call is one request (see [`Tool::ONE_REQUEST`]).
            fn one_request(&self) -> bool {
                match self {
                    $(ToolCall::$variant(_) => <$tool as Tool>::ONE_REQUEST,)*
                }
            }

            /// Does the call's work in `sandbox`.
            async fn run<P: Platform>(
                &mut self,
                ctx: &Ctx<P>,
                settings: &Settings,
                sandbox: &SandboxHandle,
            ) -> Result<ToolOutput, OpError> {
                match self {
                    $(ToolCall::$variant(a) => <$tool as Tool>::run(ctx, settings, sandbox, a)
                        .await
                        .map(ToolOutput::$variant),)*
                }
            }
        }

        /// Parses tool `tool`'s arguments given as a JSON object (moved in,
        /// so a large `content` is not copied).
        pub fn parse_object(
            tool: ToolName,
            mut args: Map<String, serde_json::Value>,
        ) -> Result<ToolCall, ToolError> {
            Ok(match tool {
                $(ToolName::$variant => ToolCall::$variant(<$tool as Tool>::parse(&mut args)?),)*
            })
        }

        /// Removes secrets from every text of an output. Streamed fields
        /// were redacted before truncation already; this covers the rest
        /// (paths, names, echoes, rich results) and costs nothing when
        /// there is nothing.
        pub fn redact_output(out: ToolOutput, secrets: &Secrets) -> ToolOutput {
            match out {
                $(ToolOutput::$variant(o) => ToolOutput::$variant(<$tool as Tool>::redact(o, secrets)),)*
            }
        }

        /// [`success_json`]'s keys before `success`, for callers that add
        /// some.
        pub fn success_object(output: &ToolOutput, rich: bool) -> OrderedObject {
            let obj = OrderedObject::default();
            match output {
                $(ToolOutput::$variant(o) => <$tool as Tool>::dict(o, rich, obj),)*
            }
        }
    };
}

tools! {
    RunCode => run_code::RunCode,
    RunCommand => run_command::RunCommand,
    WriteFile => write_file::WriteFile,
    ReadFile => read_file::ReadFile,
    ListFiles => list_files::ListFiles,
    StartBackgroundCommand => background::start::StartBackgroundCommand,
    GetBackgroundOutput => background::output::GetBackgroundOutput,
    StopBackgroundCommand => background::stop::StopBackgroundCommand,
    CreateSnapshot => create_snapshot::CreateSnapshot,
    ForkSandbox => fork_sandbox::ForkSandbox,
}

/// How long the health probe after a broken connection may take.
const HEALTH_PROBE_MS: u64 = 5_000;
/// The code interpreter SDK's text for a sandbox killed mid-execution.
const SANDBOX_KILLED: &str = "The sandbox was killed while the request was in progress. This can happen when the sandbox times out or is killed manually. You can modify the sandbox timeout by passing 'timeout' when starting the sandbox or calling '.set_timeout' on the sandbox with the desired timeout";

/// A call whose tool the session offers, and the sandbox it acts in.
/// Only [`parse_enabled_call`] (which reads the name once) and
/// [`execute`] (for calls whose tool is known from the function called)
/// make one, so no call's tool is checked twice.
#[derive(Debug)]
pub struct Admitted {
    call: ToolCall,
    /// `sandbox_id`: one of the session's forks (`None`: its own sandbox).
    target: Option<String>,
}

/// Parses `call-tool`'s arguments for tool `name`, any tool enabled.
pub fn parse_call(name: &str, arguments_json: &str) -> Result<ToolCall, ToolError> {
    parse_enabled_call(name, arguments_json, ToolSet::ALL).map(|a| a.call)
}

/// Parses `call-tool`'s arguments for tool `name`, one of `enabled`.
pub fn parse_enabled_call(
    name: &str,
    arguments_json: &str,
    enabled: ToolSet,
) -> Result<Admitted, ToolError> {
    let Some(tool) = ToolName::parse(name).filter(|t| enabled.contains(*t)) else {
        // e2b-adk's message, for a disabled tool too: the model should
        // use what it has.
        return Err(ToolError::invalid(format!(
            "Unknown tool: {name}. Available tools: {}",
            enabled.names().join(", ")
        )));
    };
    let mut args = args::object(arguments_json)?;
    let target = sandbox_target(&mut args)?;
    parse_object(tool, args).map(|call| Admitted { call, target })
}

/// The optional `sandbox_id` every tool takes (the sandbox to act in); an
/// empty one is the session's own.
fn sandbox_target(args: &mut args::Args) -> Result<Option<String>, ToolError> {
    match args.remove("sandbox_id") {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(serde_json::Value::String(s)) => Ok(Some(s.trim().to_string())),
        Some(_) => Err(ToolError::invalid("Invalid sandbox_id: expected a string")),
    }
}

/// Removes secrets from every text of an error.
pub fn redact_error(err: ToolError, secrets: &Secrets) -> ToolError {
    let r = |s: String| secrets.redact(&s);
    ToolError {
        message: r(err.message),
        partial_output: r(err.partial_output),
        path: err.path.map(r),
        command: err.command.map(r),
        kind: err.kind,
    }
}

/// e2b-adk's success dict for `output`; `rich` adds run_code's `results`.
pub fn success_json(output: &ToolOutput, rich: bool) -> String {
    success_object(output, rich).put("success", true).to_json()
}

/// Runs one call whose tool is known from the function called (typed
/// WIT functions, the stateless world): refused unless enabled.
pub async fn execute<P: Platform>(ctx: &Ctx<P>, call: ToolCall) -> Result<ToolOutput, ToolError> {
    let enabled = ctx.session.borrow().settings.tools;
    match enabled.check(call.tool()) {
        Ok(()) => execute_admitted(ctx, Admitted { call, target: None }).await,
        Err(err) => Err(refused(
            ctx,
            call.tool().as_str(),
            finish_error(ctx, &call, err),
        )),
    }
}

/// A call refused before it reached a sandbox (unknown or disabled tool,
/// bad arguments): reported as begun and ended, and returned.
pub fn refused<P: Platform>(ctx: &Ctx<P>, tool: &str, err: ToolError) -> ToolError {
    Exec::new(ctx, &reported_name(tool)).end(ctx, Err(&err));
    err
}

/// The longest tool name a report carries.
const MAX_REPORTED_NAME: usize = 64;

/// A tool name as reported: a model may send any text as one (megabytes,
/// newlines), and reports go to the host's logs. Bounded, and each
/// character but printable ASCII (spaces too) replaced by `?`; a real
/// tool's name passes unchanged.
fn reported_name(name: &str) -> String {
    name.chars()
        .take(MAX_REPORTED_NAME)
        .map(|c| if c.is_ascii_graphic() { c } else { '?' })
        .collect()
}

/// One call's `exec-started` and `exec-ended` reports.
struct Exec {
    tool: String,
    began_ns: u64,
    sandbox_id: Option<String>,
    started: bool,
}

impl Exec {
    fn new<P: Platform>(ctx: &Ctx<P>, tool: &str) -> Self {
        Self {
            tool: tool.to_string(),
            began_ns: ctx.platform.now_ns(),
            sandbox_id: None,
            started: false,
        }
    }

    /// The call has its sandbox: its work begins.
    fn start<P: Platform>(&mut self, ctx: &Ctx<P>, sandbox_id: &str) {
        self.sandbox_id = Some(sandbox_id.to_string());
        self.started = true;
        ctx.platform.report(Report::ExecStarted {
            tool: self.tool.clone(),
            sandbox_id: self.sandbox_id.clone(),
        });
    }

    /// The call ended with `result` (a start is reported first if the
    /// call never got a sandbox), and a snapshot it took.
    fn end<P: Platform>(&self, ctx: &Ctx<P>, result: Result<&ToolOutput, &ToolError>) {
        if !self.started {
            ctx.platform.report(Report::ExecStarted {
                tool: self.tool.clone(),
                sandbox_id: None,
            });
        }
        let elapsed = ctx.platform.now_ns().saturating_sub(self.began_ns);
        ctx.platform.report(Report::ExecEnded {
            tool: self.tool.clone(),
            sandbox_id: self.sandbox_id.clone(),
            duration_ms: elapsed / 1_000_000,
            error_kind: result.err().map(|e| e.kind.as_str().to_string()),
        });
        if let (Ok(ToolOutput::CreateSnapshot(snapshot)), Some(sandbox_id)) =
            (result, &self.sandbox_id)
        {
            ctx.platform.report(Report::SnapshotCreated {
                sandbox_id: sandbox_id.clone(),
                snapshot_id: snapshot.snapshot_id.clone(),
            });
        }
    }
}

/// Runs one admitted call in the sandbox, reported as it begins and ends.
pub async fn execute_admitted<P: Platform>(
    ctx: &Ctx<P>,
    admitted: Admitted,
) -> Result<ToolOutput, ToolError> {
    let mut exec = Exec::new(ctx, admitted.call.tool().as_str());
    let result = in_sandbox(ctx, admitted, &mut exec).await;
    exec.end(ctx, result.as_ref());
    result
}

/// [`execute_admitted`]'s work: acquire the sandbox, run, shape the result.
async fn in_sandbox<P: Platform>(
    ctx: &Ctx<P>,
    Admitted { mut call, target }: Admitted,
    exec: &mut Exec,
) -> Result<ToolOutput, ToolError> {
    if let Err(err) = ctx.read(|s| call.admit(&s.settings)) {
        return Err(finish_error(ctx, &call, err));
    }
    let prefix = call.failure_prefix();
    let (settings, sandbox) = match ctx.acquire_in(target.as_deref()).await {
        Ok(pair) => pair,
        Err(Unavailable::Create(f)) => {
            return Err(finish_error(
                ctx,
                &call,
                ToolError::from_failure("Sandbox unavailable: ", f),
            ))
        }
        Err(Unavailable::Expired(f)) => {
            return Err(finish_error(ctx, &call, ToolError::from_failure(prefix, f)))
        }
    };
    exec.start(ctx, &sandbox.id);
    let bound = request_bounded(&settings, &call);
    let op = call.run(ctx, &settings, &sandbox);
    let result = ctx.with_heartbeat(&settings, &sandbox.id, bound, op).await;
    let secrets = ctx.secrets();
    match result {
        Ok(out) => Ok(redact_output(out, &secrets)),
        Err((failure, partial)) => {
            let failure = confirm_gone(ctx, &settings, &sandbox, &call, failure).await;
            if failure.kind == ErrorKind::SandboxExpired {
                ctx.stopped(&sandbox.id, StopReason::Gone);
            }
            let err = ToolError::from_failure(prefix, failure).with_partial_output(partial);
            Err(redact_error(call.echo(err), &secrets))
        }
    }
}

/// After a broken connection, asks the sandbox's `/health` whether it
/// is gone (as the SDK does): if the proxy no longer knows it, the
/// failure is the sandbox's expiry.
async fn confirm_gone<P: Platform>(
    ctx: &Ctx<P>,
    settings: &Settings,
    sandbox: &SandboxHandle,
    call: &ToolCall,
    failure: Failure,
) -> Failure {
    if failure.kind != ErrorKind::Network {
        return failure;
    }
    let req = envd::sandbox_request(
        settings,
        sandbox,
        e2b_wire::ENVD_PORT,
        crate::protocol::request::Method::Get,
        "/health",
    );
    let probe = ctx
        .with_deadline(
            HEALTH_PROBE_MS,
            async {
                let mut resp = ctx.platform.send(&req, HEALTH_PROBE_MS as u32).await?;
                Ok((resp.status, error_body(&mut resp.body).await))
            },
            || Failure::new(ErrorKind::Timeout, "health probe timed out"),
        )
        .await;
    match probe {
        Ok((502, body)) if body_message(&body).contains("was not found") => match call {
            ToolCall::RunCode(_) => Failure::new(ErrorKind::SandboxExpired, SANDBOX_KILLED),
            _ => sandbox_unavailable(&body_message(&body)),
        },
        _ => failure,
    }
}

fn finish_error<P: Platform>(ctx: &Ctx<P>, call: &ToolCall, err: ToolError) -> ToolError {
    redact_error(call.echo(err), &ctx.secrets())
}

/// How long the call can last at most, in milliseconds, when it is
/// known: a call of one request lasts at most the request timeout.
fn request_bounded(settings: &Settings, call: &ToolCall) -> Option<u64> {
    call.one_request()
        .then_some(u64::from(settings.request_timeout_ms))
        .filter(|ms| *ms > 0)
}

#[cfg(test)]
mod tests;
