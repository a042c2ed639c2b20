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
use crate::tools::tool::Tool;

/// `stop_background_command`: a background process signalled, then killed.
pub struct StopBackgroundCommand;

impl Tool for StopBackgroundCommand {
    const SPEC: ToolSpec = ToolSpec {
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

    type Input = StopArgs;
    type Output = StoppedProcess;

    /// Parses `stop_background_command`'s arguments (the pid, the signal).
    fn parse(args: &mut Args) -> Result<StopArgs, ToolError> {
        Ok(StopArgs {
            pid: pid(args)?,
            signal: stop_signal(args)?,
        })
    }

    /// Runs the stopping script and parses its answer.
    async fn run<P: Platform>(
        ctx: &Ctx<P>,
        settings: &Settings,
        sandbox: &SandboxHandle,
        a: &mut StopArgs,
    ) -> Result<StoppedProcess, OpError> {
        let StopArgs { pid, signal } = *a;
        let text = script::stop_script(pid, signal);
        let answer = run_script(ctx, settings, sandbox, text, script::STOP_SCRIPT_MS, 256)
            .await
            .map_err(plain)?;
        script::parse_stop(pid, &answer).map_err(plain)
    }

    /// The dict's keys.
    fn dict(s: &StoppedProcess, _rich: bool, obj: OrderedObject) -> OrderedObject {
        obj.put("pid", s.pid)
            .put("state", "exited")
            .put("exit_code", s.exit_code)
            .put("signal", s.signal.map(|s| s.as_str()))
    }
}

/// What `stop_background_command` is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StopArgs {
    /// The process, as its start returned it.
    pub pid: u32,
    /// The signal sent first.
    pub signal: StopSignal,
}
