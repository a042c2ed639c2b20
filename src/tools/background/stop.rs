//! `stop_background_command`: a signal to a background process and the
//! processes it started, SIGKILL for what outlives the grace.

use super::script::{self, StoppedProcess};
use super::{pid, stop_signal, StopSignal};
use crate::config::{Settings, ToolName};
use crate::errors::ToolError;
use crate::output::results::OrderedObject;
use crate::protocol::api::SandboxHandle;
use crate::session::platform::Platform;
use crate::session::Ctx;
use crate::tools::args::Args;
use crate::tools::exec::{plain, run_script, OpError};
use crate::tools::spec::{Hints, ToolSpec};

/// `stop_background_command`'s entry in the catalog.
pub const SPEC: ToolSpec = ToolSpec {
    tool: ToolName::StopBackgroundCommand,
    title: "Stop a background command",
    hints: Hints {
        read_only: false,
        destructive: true,
        idempotent: true,
        open_world: false,
    },
    description: "Stop a process started with start_background_command, and the processes it started: sends SIGTERM (or the given signal), then SIGKILL to whatever is left after 5 seconds, and returns its exit state. Its output stays readable with get_background_output.",
    parameters_schema: include_str!("../../schemas/stop_background_command.json"),
    result_schema: include_str!("../../schemas/results/stop_background_command.json"),
    failure_prefix: "Failed to stop command: ",
    instruction: "stop_background_command (SIGTERM, then SIGKILL \
after 5 s)",
};

/// Parses `stop_background_command`'s arguments (the pid, the signal).
pub(crate) fn parse(args: &mut Args) -> Result<(u32, StopSignal), ToolError> {
    Ok((pid(args)?, stop_signal(args)?))
}

/// Runs the stopping script and parses its answer.
pub(crate) async fn run<P: Platform>(
    ctx: &Ctx<P>,
    settings: &Settings,
    sandbox: &SandboxHandle,
    pid: u32,
    signal: StopSignal,
) -> Result<StoppedProcess, OpError> {
    let text = script::stop_script(pid, signal);
    let answer = run_script(ctx, settings, sandbox, text, script::STOP_SCRIPT_MS, 256)
        .await
        .map_err(plain)?;
    script::parse_stop(pid, &answer).map_err(plain)
}

/// The dict's keys.
pub(crate) fn dict(s: &StoppedProcess, obj: OrderedObject) -> OrderedObject {
    obj.put("pid", s.pid)
        .put("state", "exited")
        .put("exit_code", s.exit_code)
        .put("signal", s.signal.map(|s| s.as_str()))
}
