//! Every conversion between the embedding world's WIT types and the
//! crate's own, in one place: `From` where every value has a counterpart
//! (errors, outputs, signals, the configuration), `TryFrom` where the
//! arguments are checked as `call-tool` checks them. The one step that is
//! not total, a typed function's output out of the call's [`ToolOutput`],
//! is [`FromOutput`], with one fallback for all tools.

use super::wit::e2b::tools::events as wit_events;
use super::wit::exports::e2b::tools::catalog as wit_catalog;
use super::wit::exports::e2b::tools::lifecycle as wit_lifecycle;
use super::wit::exports::e2b::tools::sandboxes as wit_sandboxes;
use super::wit::exports::e2b::tools::tools as wit_tools;
use super::wit::exports::e2b::tools::types as wit_types;
use crate::config::{ConfigInput, NetworkRules, OnTimeout};
use crate::errors::{ErrorKind, ToolError};
use crate::protocol::envd::{EntryKind, ListedEntry};
use crate::protocol::interpreter::{Execution, RichResult};
use crate::session::report::{Origin, Report, StopReason};
use crate::tools::args::{missing, normalize_language};
use crate::tools::background::script::{ProcessOutput, ProcessState, StoppedProcess};
use crate::tools::background::start::{BackgroundArgs, BackgroundOutput, Readiness, INVALID_PORT};
use crate::tools::background::{Offsets, StopSignal};
use crate::tools::fork_sandbox::{Forks, MAX_FORK_TIMEOUT_S};
use crate::tools::run_code::RunCodeArgs;
use crate::tools::run_command::{CommandOutput, RunCommandArgs};
use crate::tools::{Hints, ToolCall, ToolOutput, ToolSpec};
use e2b_wire::api::{SandboxDetail, SnapshotInfo};

impl From<ErrorKind> for wit_types::ErrorKind {
    fn from(kind: ErrorKind) -> Self {
        match kind {
            ErrorKind::InvalidArgument => Self::InvalidArgument,
            ErrorKind::SandboxUnavailable => Self::SandboxUnavailable,
            ErrorKind::SandboxExpired => Self::SandboxExpired,
            ErrorKind::Timeout => Self::Timeout,
            ErrorKind::NotFound => Self::NotFound,
            ErrorKind::PermissionDenied => Self::PermissionDenied,
            ErrorKind::RateLimited => Self::RateLimited,
            ErrorKind::Auth => Self::Auth,
            ErrorKind::Network => Self::Network,
            ErrorKind::Cancelled => Self::Cancelled,
            ErrorKind::Internal => Self::Internal,
        }
    }
}

impl From<SandboxDetail> for wit_sandboxes::ListedSandbox {
    fn from(s: SandboxDetail) -> Self {
        Self {
            sandbox_id: s.sandbox_id,
            template_id: s.template_id,
            state: s.state,
            started_at: s.started_at,
            end_at: s.end_at,
            metadata: s
                .metadata
                .unwrap_or_default()
                .into_iter()
                .map(|(key, value)| wit_types::KeyValue { key, value })
                .collect(),
        }
    }
}

impl From<SnapshotInfo> for wit_sandboxes::ListedSnapshot {
    fn from(s: SnapshotInfo) -> Self {
        Self {
            snapshot_id: s.snapshot_id,
            names: s.names,
        }
    }
}

impl From<Origin> for wit_events::Origin {
    fn from(origin: Origin) -> Self {
        match origin {
            Origin::Created => Self::Created,
            Origin::Attached => Self::Attached,
            Origin::Forked => Self::Forked,
        }
    }
}

impl From<StopReason> for wit_events::StopReason {
    fn from(reason: StopReason) -> Self {
        match reason {
            StopReason::Killed => Self::Killed,
            StopReason::Released => Self::Released,
            StopReason::Gone => Self::Gone,
        }
    }
}

impl From<Report> for wit_events::Event {
    fn from(report: Report) -> Self {
        match report {
            Report::SandboxStarted {
                sandbox_id,
                template,
                origin,
                owned,
                source,
            } => Self::SandboxStarted(wit_events::SandboxStarted {
                sandbox_id,
                template,
                origin: origin.into(),
                owned,
                source,
            }),
            Report::SandboxStopped { sandbox_id, reason } => {
                Self::SandboxStopped(wit_events::SandboxStopped {
                    sandbox_id,
                    reason: reason.into(),
                })
            }
            Report::ExecStarted { tool, sandbox_id } => {
                Self::ExecStarted(wit_events::ExecStarted { tool, sandbox_id })
            }
            Report::ExecEnded {
                tool,
                sandbox_id,
                duration_ms,
                error_kind,
            } => Self::ExecEnded(wit_events::ExecEnded {
                tool,
                sandbox_id,
                duration_ms,
                error_kind,
            }),
            Report::SnapshotCreated {
                sandbox_id,
                snapshot_id,
            } => Self::SnapshotCreated(wit_events::SnapshotCreated {
                sandbox_id,
                snapshot_id,
            }),
        }
    }
}

impl From<ToolError> for wit_types::ToolError {
    fn from(err: ToolError) -> Self {
        Self {
            kind: err.kind.into(),
            message: err.message,
            partial_output: err.partial_output,
            path: err.path,
            command: err.command,
        }
    }
}

/// A required string argument: "" is missing, as in `call-tool`.
pub(super) fn required(value: String, key: &str) -> Result<String, ToolError> {
    if value.is_empty() {
        Err(missing(key))
    } else {
        Ok(value)
    }
}

/// WIT key-values as pairs. Maps are collected from these `Vec`s, so
/// there is one instance of the sort `BTreeMap` collects with (5 KB of
/// .wasm each), as when every caller went through a `Vec`.
fn pairs(list: Vec<wit_types::KeyValue>) -> Vec<(String, String)> {
    list.into_iter().map(Into::into).collect()
}

fn seconds_to_ms(seconds: Option<u32>) -> Option<u64> {
    seconds.map(|s| u64::from(s) * 1000)
}

impl From<wit_types::KeyValue> for (String, String) {
    fn from(kv: wit_types::KeyValue) -> Self {
        (kv.key, kv.value)
    }
}

impl From<wit_lifecycle::VolumeMount> for (String, String) {
    fn from(v: wit_lifecycle::VolumeMount) -> Self {
        (v.name, v.path)
    }
}

impl From<wit_lifecycle::Config> for ConfigInput {
    fn from(config: wit_lifecycle::Config) -> Self {
        Self {
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
            network: config.network.map(Into::into),
            on_timeout: config.on_timeout.map(Into::into),
            auto_resume: config.auto_resume,
            volume_mounts: config.volume_mounts.into_iter().map(Into::into).collect(),
            max_output_bytes: config.max_output_bytes,
            rich_results: config.rich_results,
            readiness_timeout_ms: config.readiness_timeout_ms,
            sandbox_id: config.sandbox_id,
            tools: config.tools,
            progress: config.progress,
        }
    }
}

impl TryFrom<wit_tools::RunCodeArgs> for ToolCall {
    type Error = ToolError;

    fn try_from(a: wit_tools::RunCodeArgs) -> Result<Self, ToolError> {
        Ok(ToolCall::RunCode(RunCodeArgs {
            code: required(a.code, "code")?,
            language: normalize_language(a.language.as_deref()),
            envs: pairs(a.envs).into_iter().collect(),
            timeout_ms: seconds_to_ms(a.timeout_seconds),
        }))
    }
}

impl TryFrom<wit_tools::RunCommandArgs> for ToolCall {
    type Error = ToolError;

    fn try_from(a: wit_tools::RunCommandArgs) -> Result<Self, ToolError> {
        Ok(ToolCall::RunCommand(RunCommandArgs {
            command: required(a.command, "command")?,
            cwd: a.cwd.filter(|c| !c.is_empty()),
            envs: pairs(a.envs).into_iter().collect(),
            timeout_ms: seconds_to_ms(a.timeout_seconds),
        }))
    }
}

impl TryFrom<wit_tools::BackgroundArgs> for ToolCall {
    type Error = ToolError;

    fn try_from(a: wit_tools::BackgroundArgs) -> Result<Self, ToolError> {
        let command = required(a.command, "command")?;
        if a.port == Some(0) {
            return Err(ToolError::invalid(INVALID_PORT).with_command(command));
        }
        Ok(ToolCall::StartBackgroundCommand(BackgroundArgs {
            command,
            port: a.port,
            cwd: a.cwd.filter(|c| !c.is_empty()),
            envs: pairs(a.envs).into_iter().collect(),
            timeout_ms: seconds_to_ms(a.timeout_seconds),
        }))
    }
}

impl From<wit_lifecycle::OnTimeout> for OnTimeout {
    fn from(t: wit_lifecycle::OnTimeout) -> Self {
        match t {
            wit_lifecycle::OnTimeout::Kill => Self::Kill,
            wit_lifecycle::OnTimeout::Pause => Self::Pause,
        }
    }
}

impl From<wit_lifecycle::NetworkRules> for NetworkRules {
    fn from(n: wit_lifecycle::NetworkRules) -> Self {
        Self {
            allow_out: n.allow_out,
            deny_out: n.deny_out,
            allow_public_traffic: n.allow_public_traffic,
            mask_request_host: n.mask_request_host,
        }
    }
}

impl From<Execution> for wit_tools::RunCodeOutput {
    fn from(ex: Execution) -> Self {
        Self {
            stdout: ex.stdout,
            stderr: ex.stderr,
            text: ex.text,
            error: ex.error,
            rich: ex.rich.into_iter().map(Into::into).collect(),
        }
    }
}

impl From<RichResult> for wit_tools::RichResult {
    fn from(r: RichResult) -> Self {
        Self {
            mime_type: r.mime_type,
            data: r.data,
            is_main_result: r.is_main_result,
        }
    }
}

impl From<CommandOutput> for wit_tools::CommandOutput {
    fn from(c: CommandOutput) -> Self {
        Self {
            command: c.command,
            stdout: c.stdout,
            stderr: c.stderr,
            exit_code: c.exit_code,
        }
    }
}

impl From<EntryKind> for wit_tools::EntryType {
    fn from(kind: EntryKind) -> Self {
        match kind {
            EntryKind::File => Self::File,
            EntryKind::Dir => Self::Dir,
            EntryKind::Symlink => Self::Symlink,
            EntryKind::Unknown => Self::Unknown,
        }
    }
}

impl From<ListedEntry> for wit_tools::DirEntry {
    fn from(e: ListedEntry) -> Self {
        Self {
            name: e.name,
            type_: e.kind.into(),
        }
    }
}

impl From<Readiness> for wit_tools::Readiness {
    fn from(r: Readiness) -> Self {
        match r {
            Readiness::Ready => Self::Ready,
            Readiness::Exited => Self::Exited,
            Readiness::NotListening => Self::NotListening,
        }
    }
}

impl From<BackgroundOutput> for wit_tools::BackgroundProcess {
    fn from(b: BackgroundOutput) -> Self {
        Self {
            command: b.command,
            pid: b.pid,
            preview_url: b.preview_url,
            readiness: b.readiness.map(Into::into),
            exit_code: b.exit_code,
            stdout: b.stdout,
            stderr: b.stderr,
        }
    }
}

impl From<wit_tools::OutputOffsets> for Offsets {
    fn from(o: wit_tools::OutputOffsets) -> Self {
        Self {
            stdout: o.stdout,
            stderr: o.stderr,
        }
    }
}

impl From<Offsets> for wit_tools::OutputOffsets {
    fn from(o: Offsets) -> Self {
        Self {
            stdout: o.stdout,
            stderr: o.stderr,
        }
    }
}

impl From<ProcessState> for wit_tools::ProcessState {
    fn from(state: ProcessState) -> Self {
        match state {
            ProcessState::Running => Self::Running,
            ProcessState::Exited => Self::Exited,
        }
    }
}

impl From<ProcessOutput> for wit_tools::ProcessOutput {
    fn from(p: ProcessOutput) -> Self {
        Self {
            pid: p.pid,
            state: p.state.into(),
            exit_code: p.exit_code,
            stdout: p.stdout,
            stderr: p.stderr,
            next_since: p.next_since.into(),
        }
    }
}

impl From<wit_tools::StopSignal> for StopSignal {
    fn from(s: wit_tools::StopSignal) -> Self {
        match s {
            wit_tools::StopSignal::Sigterm => Self::Term,
            wit_tools::StopSignal::Sigint => Self::Int,
            wit_tools::StopSignal::Sighup => Self::Hup,
            wit_tools::StopSignal::Sigquit => Self::Quit,
            wit_tools::StopSignal::Sigkill => Self::Kill,
        }
    }
}

impl From<StopSignal> for wit_tools::StopSignal {
    fn from(s: StopSignal) -> Self {
        match s {
            StopSignal::Term => Self::Sigterm,
            StopSignal::Int => Self::Sigint,
            StopSignal::Hup => Self::Sighup,
            StopSignal::Quit => Self::Sigquit,
            StopSignal::Kill => Self::Sigkill,
        }
    }
}

impl From<StoppedProcess> for wit_tools::StoppedProcess {
    fn from(s: StoppedProcess) -> Self {
        Self {
            pid: s.pid,
            exit_code: s.exit_code,
            signal: s.signal.map(Into::into),
        }
    }
}

impl From<SnapshotInfo> for wit_tools::Snapshot {
    fn from(s: SnapshotInfo) -> Self {
        Self {
            snapshot_id: s.snapshot_id,
            names: s.names,
        }
    }
}

impl From<Forks> for wit_tools::Forks {
    fn from(f: Forks) -> Self {
        Self {
            sandbox_ids: f.sandbox_ids,
            failures: f
                .errors
                .into_iter()
                .map(|e| wit_tools::ForkFailure {
                    kind: e.kind.into(),
                    message: e.message,
                })
                .collect(),
        }
    }
}

impl TryFrom<wit_tools::ForkArgs> for ToolCall {
    type Error = ToolError;

    /// Checked as `call-tool` checks `fork_sandbox`'s arguments.
    fn try_from(a: wit_tools::ForkArgs) -> Result<Self, ToolError> {
        let mut args = crate::tools::args::Args::new();
        if let Some(count) = a.count {
            args.insert("count".into(), count.into());
        }
        if let Some(timeout) = a.timeout_seconds {
            args.insert("timeout".into(), timeout.min(MAX_FORK_TIMEOUT_S + 1).into());
        }
        args.insert("keep".into(), a.keep.into());
        crate::tools::parse_object(crate::tools::ToolName::ForkSandbox, args)
    }
}

impl From<Hints> for wit_catalog::ToolHints {
    fn from(h: Hints) -> Self {
        Self {
            read_only: h.read_only,
            destructive: h.destructive,
            idempotent: h.idempotent,
            open_world: h.open_world,
        }
    }
}

impl From<&ToolSpec> for wit_catalog::ToolSpec {
    fn from(t: &ToolSpec) -> Self {
        Self {
            name: t.name().into(),
            title: t.title.into(),
            description: t.description.into(),
            parameters_schema: t.parameters_schema.into(),
            result_schema: t.result_schema.into(),
            hints: t.hints.into(),
        }
    }
}

/// A typed function's output from the [`ToolOutput`] its call returned:
/// a call of one tool only returns that tool's variant, so the other arm
/// (one, here, for all of them) is an internal error, never a panic.
pub(super) trait FromOutput: Sized {
    /// The typed output, or `None` for another tool's variant.
    fn from_output(output: ToolOutput) -> Option<Self>;
}

macro_rules! from_output {
    ($($wit:ty => $variant:pat => $value:expr;)*) => {$(
        impl FromOutput for $wit {
            fn from_output(output: ToolOutput) -> Option<Self> {
                match output {
                    $variant => Some($value),
                    _ => None,
                }
            }
        }
    )*};
}

from_output! {
    wit_tools::RunCodeOutput => ToolOutput::RunCode(ex) => ex.into();
    wit_tools::CommandOutput => ToolOutput::RunCommand(c) => c.into();
    () => ToolOutput::WriteFile(_) => ();
    String => ToolOutput::ReadFile(r) => r.content;
    Vec<wit_tools::DirEntry> => ToolOutput::ListFiles(l) => l.entries.into_iter().map(Into::into).collect();
    wit_tools::BackgroundProcess => ToolOutput::StartBackgroundCommand(b) => b.into();
    wit_tools::ProcessOutput => ToolOutput::GetBackgroundOutput(p) => p.into();
    wit_tools::StoppedProcess => ToolOutput::StopBackgroundCommand(s) => s.into();
    wit_tools::Snapshot => ToolOutput::CreateSnapshot(s) => s.into();
    wit_tools::Forks => ToolOutput::ForkSandbox(f) => f.into();
}

/// The error for another tool's output (a bug, reported, not a panic).
pub(super) fn unexpected() -> ToolError {
    ToolError {
        kind: ErrorKind::Internal,
        message: "internal error: the tool produced another tool's output".into(),
        partial_output: String::new(),
        path: None,
        command: None,
    }
}
