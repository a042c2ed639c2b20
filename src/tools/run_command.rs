//! `run_command`: `bash -l -c` through envd's process service, its output
//! streamed, bounded and redacted as it comes.

use std::collections::BTreeMap;

use super::args::{cwd, envs, require_str, timeout_ms, Args};
use super::exec::{
    deadline_failure, pump_reporting, report_progress, start, OpError, DEADLINE_GRACE_MS,
};
use super::spec::{ToolSpec, RUNS_CODE};
use super::tool::Tool;
use crate::config::{Settings, ToolName};
use crate::errors::{ErrorKind, Failure, ToolError};
use crate::output::progress::LatestLine;
use crate::output::redact::Secrets;
use crate::output::results::OrderedObject;
use crate::protocol::api::SandboxHandle;
use crate::protocol::envd::{self, ProcessStream, StartSpec};
use crate::session::platform::Platform;
use crate::session::Ctx;

/// `run_command`: a shell command in the sandbox.
pub struct RunCommand;

impl Tool for RunCommand {
    const SPEC: ToolSpec = ToolSpec {
        tool: ToolName::RunCommand,
        title: "Run a shell command",
        hints: RUNS_CODE,
        description: "Run a shell command inside an isolated E2B sandbox and return its stdout, stderr, and exit code. Use this for shell tasks such as installing packages or inspecting the filesystem. cwd and env vars do not persist between calls.",
        parameters_schema: include_str!("../schemas/run_command.json"),
        result_schema: include_str!("../schemas/results/run_command.json"),
        failure_prefix: "Failed to run command: ",
        instruction: "run_command (bash -l -c; returns stdout, stderr, exit_code; default timeout 60 s)",
    };

    type Input = RunCommandArgs;
    type Output = CommandOutput;

    /// Parses `run_command`'s arguments; a failure echoes the command.
    fn parse(args: &mut Args) -> Result<RunCommandArgs, ToolError> {
        let command = require_str(args, "command", false)?;
        let echo = |e: ToolError| e.with_command(command.clone());
        Ok(RunCommandArgs {
            cwd: cwd(args).map_err(echo)?,
            envs: envs(args).map_err(echo)?,
            timeout_ms: timeout_ms(args).map_err(echo)?,
            command,
        })
    }

    /// Adds the command to an error.
    fn echo(a: &RunCommandArgs, err: ToolError) -> ToolError {
        err.with_command(a.command.clone())
    }

    /// Runs the command to its end, its deadline or a cancellation (which
    /// kills it: envd keeps a process whose stream is gone).
    async fn run<P: Platform>(
        ctx: &Ctx<P>,
        settings: &Settings,
        sandbox: &SandboxHandle,
        a: &mut RunCommandArgs,
    ) -> Result<CommandOutput, OpError> {
        let timeout = a.timeout_ms.unwrap_or(RUN_COMMAND_TIMEOUT_MS);
        let spec = StartSpec {
            command: a.command.clone(),
            cwd: a.cwd.clone(),
            envs: a.envs.clone(),
            timeout_ms: (timeout > 0).then_some(timeout),
        };
        let local_deadline = if timeout > 0 {
            timeout + DEADLINE_GRACE_MS
        } else {
            0
        };
        let secrets = ctx.secrets();
        let mut stream = ProcessStream::new(settings.max_output_bytes).redacting(&secrets);
        if settings.progress {
            stream.latest = Some(LatestLine::default());
        }
        let outcome = ctx
            .with_deadline(
                local_deadline,
                async {
                    let mut body = start(ctx, settings, sandbox, &spec).await?;
                    pump_reporting(&mut body, &mut stream, ProcessStream::is_done, |latest| {
                        report_progress(ctx, &secrets, "run_command", latest)
                    })
                    .await
                },
                deadline_failure,
            )
            .await;
        let exit_code = outcome.and_then(|()| stream.outcome());
        if let (Err(f), Some(pid)) = (&exit_code, stream.pid) {
            if f.kind == ErrorKind::Cancelled {
                // envd keeps a process whose stream is gone: kill it.
                let req = envd::kill_process_request(settings, sandbox, pid);
                let _ = ctx.exchange(settings, &req).await;
                let failure = Failure::new(
                    ErrorKind::Cancelled,
                    format!("cancelled by the client; process {pid} was killed"),
                );
                return Err((failure, stream.partial_output()));
            }
        }
        match exit_code {
            Ok(exit_code) => Ok(CommandOutput {
                command: a.command.clone(),
                stdout: stream.out.stdout.finish(),
                stderr: stream.out.stderr.finish(),
                exit_code,
            }),
            Err(f) => {
                let partial = stream.partial_output();
                Err((f, partial))
            }
        }
    }

    /// Removes secrets from every text of the output.
    fn redact(c: CommandOutput, secrets: &Secrets) -> CommandOutput {
        let r = |s: String| secrets.redact(&s);
        CommandOutput {
            command: r(c.command),
            stdout: r(c.stdout),
            stderr: r(c.stderr),
            exit_code: c.exit_code,
        }
    }

    /// e2b-adk's dict keys.
    fn dict(c: &CommandOutput, _rich: bool, obj: OrderedObject) -> OrderedObject {
        obj.put("command", c.command.as_str())
            .put("stdout", c.stdout.as_str())
            .put("stderr", c.stderr.as_str())
            .put("exit_code", c.exit_code)
    }
}

/// Default timeout of run_command (the SDK's `commands.run`).
const RUN_COMMAND_TIMEOUT_MS: u64 = 60_000;

/// `run_command`'s arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunCommandArgs {
    /// Shell command (non-empty).
    pub command: String,
    /// Working directory.
    pub cwd: Option<String>,
    /// Environment for this command.
    pub envs: BTreeMap<String, String>,
    /// Timeout in ms; `None`: the default (60 s); `Some(0)`: none.
    pub timeout_ms: Option<u64>,
}

/// What `run_command` produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandOutput {
    /// The command, echoed.
    pub command: String,
    /// stdout, truncated.
    pub stdout: String,
    /// stderr, truncated.
    pub stderr: String,
    /// Exit code (-1 when killed by a signal).
    pub exit_code: i32,
}

#[cfg(test)]
mod tests {
    use crate::config::ConfigInput;
    use crate::errors::ErrorKind;
    use crate::session::platform::fake::{run, Answer, Step};
    use crate::testing::*;
    use crate::tools::{execute, ToolOutput};

    /// The progress events of a printing command with progress off.
    pub(super) fn quiet_run() -> Vec<String> {
        let ctx = ctx(300);
        let mut steps = vec![started(7), stdout("step 1\n")];
        steps.extend(exited(0));
        ctx.platform.route(START, vec![Answer::steps(200, steps)]);
        run(&ctx.platform.clock, execute(&ctx, command("make", None))).unwrap();
        let events = ctx.platform.progress.borrow().clone();
        events
    }

    #[test]
    fn a_command_past_its_deadline_fails_after_the_grace_with_its_partial_output() {
        let ctx = ctx(300);
        ctx.platform.route(
            START,
            vec![Answer::steps(
                200,
                vec![started(7), stdout("half"), Step::Hang],
            )],
        );
        let err = run(
            &ctx.platform.clock,
            execute(&ctx, command("sleep 9", Some(1_000))),
        )
        .unwrap_err();
        assert_eq!(err.kind, ErrorKind::Timeout);
        assert!(
            err.message.contains("context deadline exceeded"),
            "{}",
            err.message
        );
        assert!(err.partial_output.contains("half"), "{err:?}");
        // envd is given the timeout; we stop waiting 2 s after it.
        assert_eq!(ctx.platform.clock.now() / 1_000_000, 3_000);
    }

    #[test]
    fn with_progress_on_a_command_reports_its_latest_line_as_it_prints() {
        let ctx = ctx_with(ConfigInput {
            progress: Some(true),
            ..Default::default()
        });
        let mut steps = vec![
            started(7),
            stdout("step 1\n"),
            Step::Wait(1_000),
            stdout("step 2 e2b_key\n"),
            stdout("step 3\n"),
        ];
        steps.extend(exited(0));
        ctx.platform.route(START, vec![Answer::steps(200, steps)]);
        let out = run(&ctx.platform.clock, execute(&ctx, command("make", None))).unwrap();
        // Step 3 came too soon after step 2 to be reported; the result
        // is the same as without progress.
        assert_eq!(
            *ctx.platform.progress.borrow(),
            [
                r#"{"progress":{"line":"step 1","tool":"run_command"}}"#,
                r#"{"progress":{"line":"step 2 <redacted>","tool":"run_command"}}"#,
            ]
        );
        let ToolOutput::RunCommand(out) = out else {
            panic!("{out:?}")
        };
        assert_eq!(out.stdout, "step 1\nstep 2 <redacted>\nstep 3\n");
        // Off (the default): nothing.
        let quiet = quiet_run();
        assert!(quiet.is_empty());
    }
}
