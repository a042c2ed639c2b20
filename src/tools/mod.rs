//! The tools. Each lives in its own file with everything that makes it:
//! its [`ToolSpec`] (name, description, schemas, hints, failure prefix),
//! its argument parser, its orchestration over the session and its result
//! dict. This file is the registry ([`ALL`]) and the dispatch: a call is
//! parsed once into a [`ToolCall`], admitted once against the session's
//! [`ToolSet`], run, redacted, and shaped into e2b-adk's dict. The
//! catalog (`list_tools`, the instructions) is derived from the specs in
//! [`catalog`].
//!
//! Adding a tool: its file (with its `SPEC`), its line in [`ALL`], its
//! line in the config's tool list (`tool_names!`, which makes the
//! [`ToolName`]), and the WIT. The compiler then points to every `match`
//! that needs an arm: [`spec()`], [`failure_prefix`], [`parse_object`],
//! the dispatch over [`ToolCall`] and [`ToolOutput`], and the exports.

use serde_json::Map;

pub use crate::config::{ToolName, ToolSet};
pub use spec::{Hints, ToolSpec};

use crate::config::Settings;
use crate::errors::{body_message, sandbox_unavailable, ErrorKind, Failure, ToolError};
use crate::output::redact::Secrets;
use crate::output::results::OrderedObject;
use crate::protocol::api::SandboxHandle;
use crate::protocol::envd;
use crate::protocol::interpreter::Execution;
use crate::session::platform::Platform;
use crate::session::report::{Report, StopReason};
use crate::session::{Ctx, Unavailable};
use args::Encoding;
use background::script::{ProcessOutput, StoppedProcess};
use background::start::{BackgroundArgs, BackgroundOutput};
use background::{Offsets, StopSignal};
use e2b_wire::api::SnapshotInfo;
use exec::{error_body, plain, OpError};
use fork_sandbox::{ForkArgs, Forks};
use list_files::Listing;
use read_file::ReadOutput;
use run_code::RunCodeArgs;
use run_command::{CommandOutput, RunCommandArgs};

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
pub mod write_file;

/// Every tool, in catalog order: e2b-adk's six in its order, then ours.
pub const ALL: [&ToolSpec; ToolName::ALL.len()] = [
    &run_code::SPEC,
    &run_command::SPEC,
    &write_file::SPEC,
    &read_file::SPEC,
    &list_files::SPEC,
    &background::start::SPEC,
    &background::output::SPEC,
    &background::stop::SPEC,
    &create_snapshot::SPEC,
    &fork_sandbox::SPEC,
];

/// The spec of `tool`.
pub const fn spec(tool: ToolName) -> &'static ToolSpec {
    match tool {
        ToolName::RunCode => &run_code::SPEC,
        ToolName::RunCommand => &run_command::SPEC,
        ToolName::WriteFile => &write_file::SPEC,
        ToolName::ReadFile => &read_file::SPEC,
        ToolName::ListFiles => &list_files::SPEC,
        ToolName::StartBackgroundCommand => &background::start::SPEC,
        ToolName::GetBackgroundOutput => &background::output::SPEC,
        ToolName::StopBackgroundCommand => &background::stop::SPEC,
        ToolName::CreateSnapshot => &create_snapshot::SPEC,
        ToolName::ForkSandbox => &fork_sandbox::SPEC,
    }
}

/// How long the health probe after a broken connection may take.
const HEALTH_PROBE_MS: u64 = 5_000;
/// The code interpreter SDK's text for a sandbox killed mid-execution.
const SANDBOX_KILLED: &str = "The sandbox was killed while the request was in progress. This can happen when the sandbox times out or is killed manually. You can modify the sandbox timeout by passing 'timeout' when starting the sandbox or calling '.set_timeout' on the sandbox with the desired timeout";

/// One parsed tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolCall {
    /// `run_code`.
    RunCode(RunCodeArgs),
    /// `run_command`.
    RunCommand(RunCommandArgs),
    /// `write_file`.
    WriteFile {
        /// Destination.
        path: String,
        /// The bytes to write (may be empty): the text, or what its base64
        /// decodes to.
        content: Vec<u8>,
    },
    /// `read_file`.
    ReadFile {
        /// Source.
        path: String,
        /// How the content is returned.
        encoding: Encoding,
    },
    /// `list_files`.
    ListFiles {
        /// Directory, `.` by default.
        path: String,
        /// How many levels: 1 (its children, e2b-adk's) to [`MAX_LIST_DEPTH`](list_files::MAX_LIST_DEPTH).
        depth: u32,
    },
    /// `start_background_command`.
    StartBackground(BackgroundArgs),
    /// `get_background_output`.
    GetBackgroundOutput {
        /// The process, as its start returned it.
        pid: u32,
        /// Where to read from (0: from the start).
        since: Offsets,
    },
    /// `stop_background_command`.
    StopBackground {
        /// The process, as its start returned it.
        pid: u32,
        /// The signal sent first.
        signal: StopSignal,
    },
    /// `create_snapshot`.
    CreateSnapshot {
        /// Its optional name.
        name: Option<String>,
    },
    /// `fork_sandbox`.
    ForkSandbox(ForkArgs),
}

impl ToolCall {
    /// The tool this call is for.
    pub fn tool(&self) -> ToolName {
        match self {
            ToolCall::RunCode(_) => ToolName::RunCode,
            ToolCall::RunCommand(_) => ToolName::RunCommand,
            ToolCall::WriteFile { .. } => ToolName::WriteFile,
            ToolCall::ReadFile { .. } => ToolName::ReadFile,
            ToolCall::ListFiles { .. } => ToolName::ListFiles,
            ToolCall::StartBackground(_) => ToolName::StartBackgroundCommand,
            ToolCall::GetBackgroundOutput { .. } => ToolName::GetBackgroundOutput,
            ToolCall::StopBackground { .. } => ToolName::StopBackgroundCommand,
            ToolCall::CreateSnapshot { .. } => ToolName::CreateSnapshot,
            ToolCall::ForkSandbox(_) => ToolName::ForkSandbox,
        }
    }
}

/// A successful tool call's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolOutput {
    /// `run_code`.
    Code(Execution),
    /// `run_command`.
    Command(CommandOutput),
    /// `write_file`.
    Written {
        /// The requested path.
        path: String,
    },
    /// `read_file`.
    Read(ReadOutput),
    /// `list_files`.
    Listed(Listing),
    /// `start_background_command`.
    Background(BackgroundOutput),
    /// `get_background_output`.
    ProcessOutput(ProcessOutput),
    /// `stop_background_command`.
    Stopped(StoppedProcess),
    /// `create_snapshot`.
    Snapshot(SnapshotInfo),
    /// `fork_sandbox`.
    Forked(Forks),
}

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

/// Parses tool `tool`'s arguments given as a JSON object (moved in, so a
/// large `content` is not copied).
pub fn parse_object(
    tool: ToolName,
    mut args: Map<String, serde_json::Value>,
) -> Result<ToolCall, ToolError> {
    let args = &mut args;
    Ok(match tool {
        ToolName::RunCode => ToolCall::RunCode(run_code::parse(args)?),
        ToolName::RunCommand => ToolCall::RunCommand(run_command::parse(args)?),
        ToolName::WriteFile => {
            let (path, content) = write_file::parse(args)?;
            ToolCall::WriteFile { path, content }
        }
        ToolName::ReadFile => {
            let (path, encoding) = read_file::parse(args)?;
            ToolCall::ReadFile { path, encoding }
        }
        ToolName::ListFiles => {
            let (path, depth) = list_files::parse(args)?;
            ToolCall::ListFiles { path, depth }
        }
        ToolName::StartBackgroundCommand => {
            ToolCall::StartBackground(background::start::parse(args)?)
        }
        ToolName::GetBackgroundOutput => {
            let (pid, since) = background::output::parse(args)?;
            ToolCall::GetBackgroundOutput { pid, since }
        }
        ToolName::StopBackgroundCommand => {
            let (pid, signal) = background::stop::parse(args)?;
            ToolCall::StopBackground { pid, signal }
        }
        ToolName::CreateSnapshot => ToolCall::CreateSnapshot {
            name: create_snapshot::parse(args)?,
        },
        ToolName::ForkSandbox => ToolCall::ForkSandbox(fork_sandbox::parse(args)?),
    })
}

/// e2b-adk's failure prefix of the call's tool.
pub fn failure_prefix(call: &ToolCall) -> &'static str {
    // Read from each spec at compile time: through `spec()` at run time
    // the whole specs (descriptions, schemas) would be linked into the
    // stateless world, which lists no catalog (24 KiB).
    match call.tool() {
        ToolName::RunCode => run_code::SPEC.failure_prefix,
        ToolName::RunCommand => run_command::SPEC.failure_prefix,
        ToolName::WriteFile => write_file::SPEC.failure_prefix,
        ToolName::ReadFile => read_file::SPEC.failure_prefix,
        ToolName::ListFiles => list_files::SPEC.failure_prefix,
        ToolName::StartBackgroundCommand => background::start::SPEC.failure_prefix,
        ToolName::GetBackgroundOutput => background::output::SPEC.failure_prefix,
        ToolName::StopBackgroundCommand => background::stop::SPEC.failure_prefix,
        ToolName::CreateSnapshot => create_snapshot::SPEC.failure_prefix,
        ToolName::ForkSandbox => fork_sandbox::SPEC.failure_prefix,
    }
}

/// Adds the call's echoed path or command to an error, as e2b-adk does.
pub fn echo(call: &ToolCall, err: ToolError) -> ToolError {
    match call {
        ToolCall::RunCode(_)
        | ToolCall::GetBackgroundOutput { .. }
        | ToolCall::StopBackground { .. }
        | ToolCall::CreateSnapshot { .. }
        | ToolCall::ForkSandbox(_) => err,
        ToolCall::RunCommand(a) => err.with_command(a.command.clone()),
        ToolCall::StartBackground(a) => err.with_command(a.command.clone()),
        ToolCall::WriteFile { path, .. }
        | ToolCall::ReadFile { path, .. }
        | ToolCall::ListFiles { path, .. } => err.with_path(path.clone()),
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

/// Removes secrets from every text of an output. Streamed fields were
/// redacted before truncation already; this covers the rest (paths,
/// names, echoes, rich results) and costs nothing when there is nothing.
pub fn redact_output(out: ToolOutput, secrets: &Secrets) -> ToolOutput {
    match out {
        ToolOutput::Code(ex) => ToolOutput::Code(run_code::redact(ex, secrets)),
        ToolOutput::Command(c) => ToolOutput::Command(run_command::redact(c, secrets)),
        ToolOutput::Written { path } => ToolOutput::Written {
            path: secrets.redact(&path),
        },
        ToolOutput::Read(r) => ToolOutput::Read(read_file::redact(r, secrets)),
        ToolOutput::Listed(l) => ToolOutput::Listed(list_files::redact(l, secrets)),
        ToolOutput::Background(b) => ToolOutput::Background(background::start::redact(b, secrets)),
        ToolOutput::Snapshot(s) => ToolOutput::Snapshot(create_snapshot::redact(s, secrets)),
        ToolOutput::Forked(f) => ToolOutput::Forked(fork_sandbox::redact(f, secrets)),
        // Redacted as they were read, each chunk on its own.
        out @ (ToolOutput::ProcessOutput(_) | ToolOutput::Stopped(_)) => out,
    }
}

/// e2b-adk's success dict for `output`; `rich` adds run_code's `results`.
pub fn success_json(output: &ToolOutput, rich: bool) -> String {
    success_object(output, rich).put("success", true).to_json()
}

/// [`success_json`]'s keys before `success`, for callers that add some.
pub fn success_object(output: &ToolOutput, rich: bool) -> OrderedObject {
    let obj = OrderedObject::default();
    match output {
        ToolOutput::Code(ex) => run_code::dict(ex, rich, obj),
        ToolOutput::Command(c) => run_command::dict(c, obj),
        ToolOutput::Written { path } => obj.put("path", path.as_str()),
        ToolOutput::Read(r) => read_file::dict(r, obj),
        ToolOutput::Listed(l) => list_files::dict(l, obj),
        ToolOutput::Background(b) => background::start::dict(b, obj),
        ToolOutput::ProcessOutput(p) => background::output::dict(p, obj),
        ToolOutput::Stopped(s) => background::stop::dict(s, obj),
        ToolOutput::Snapshot(s) => create_snapshot::dict(s, obj),
        ToolOutput::Forked(f) => fork_sandbox::dict(f, obj),
    }
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
        if let (Ok(ToolOutput::Snapshot(snapshot)), Some(sandbox_id)) = (result, &self.sandbox_id) {
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
    // Typed calls come here unparsed: refuse what would not fit, and a
    // language the backend is known not to have.
    let refused = match &call {
        ToolCall::WriteFile { content, .. } => write_file::check_size(content),
        ToolCall::RunCode(a) => ctx.read(|s| s.settings.check_language(&a.language)),
        _ => Ok(()),
    };
    if let Err(err) = refused {
        return Err(finish_error(ctx, &call, err));
    }
    let prefix = failure_prefix(&call);
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
    let op = run(ctx, &settings, &sandbox, &mut call);
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
            Err(redact_error(echo(&call, err), &secrets))
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
    redact_error(echo(call, err), &ctx.secrets())
}

/// How long the call can last at most, in milliseconds, when it is
/// known: each file tool makes one request under the request timeout.
fn request_bounded(settings: &Settings, call: &ToolCall) -> Option<u64> {
    match call {
        ToolCall::WriteFile { .. } | ToolCall::ReadFile { .. } | ToolCall::ListFiles { .. } => {
            Some(u64::from(settings.request_timeout_ms)).filter(|ms| *ms > 0)
        }
        _ => None,
    }
}

async fn run<P: Platform>(
    ctx: &Ctx<P>,
    settings: &Settings,
    sandbox: &SandboxHandle,
    call: &mut ToolCall,
) -> Result<ToolOutput, OpError> {
    match call {
        ToolCall::RunCode(a) => run_code::run(ctx, settings, sandbox, a)
            .await
            .map(ToolOutput::Code),
        ToolCall::RunCommand(a) => run_command::run(ctx, settings, sandbox, a)
            .await
            .map(ToolOutput::Command),
        ToolCall::WriteFile { path, content } => {
            // Moved into the request, not copied.
            let content = std::mem::take(content);
            write_file::run(ctx, settings, sandbox, path, content)
                .await
                .map_err(plain)?;
            Ok(ToolOutput::Written { path: path.clone() })
        }
        ToolCall::ReadFile { path, encoding } => {
            let (content, invalid_utf8) = read_file::run(ctx, settings, sandbox, path, *encoding)
                .await
                .map_err(plain)?;
            Ok(ToolOutput::Read(ReadOutput {
                path: path.clone(),
                content,
                encoding: *encoding,
                invalid_utf8,
            }))
        }
        ToolCall::ListFiles { path, depth } => {
            list_files::run(ctx, settings, sandbox, path, *depth)
                .await
                .map(ToolOutput::Listed)
        }
        ToolCall::StartBackground(a) => background::start::run(ctx, settings, sandbox, a)
            .await
            .map(ToolOutput::Background),
        ToolCall::GetBackgroundOutput { pid, since } => {
            background::output::run(ctx, settings, sandbox, *pid, *since)
                .await
                .map(ToolOutput::ProcessOutput)
        }
        ToolCall::StopBackground { pid, signal } => {
            background::stop::run(ctx, settings, sandbox, *pid, *signal)
                .await
                .map(ToolOutput::Stopped)
        }
        ToolCall::CreateSnapshot { name } => {
            create_snapshot::run(ctx, settings, sandbox, name.as_deref())
                .await
                .map(ToolOutput::Snapshot)
        }
        ToolCall::ForkSandbox(a) => fork_sandbox::run(ctx, settings, sandbox, *a)
            .await
            .map(ToolOutput::Forked),
    }
}

#[cfg(test)]
mod tests;
