//! `get_background_output`: what a background process printed since the
//! given offsets, read by a script in the sandbox, masked against secrets.

use super::script::{self, ProcessOutput};
use super::{pid, since, Offsets};
use crate::config::{Settings, ToolName};
use crate::errors::ToolError;
use crate::output::results::OrderedObject;
use crate::protocol::api::SandboxHandle;
use crate::session::platform::Platform;
use crate::session::Ctx;
use crate::tools::args::Args;
use crate::tools::exec::{plain, run_script, OpError};
use crate::tools::spec::{ToolSpec, READS};
use crate::tools::tool::Tool;

/// `get_background_output`: what a background process printed, paged.
pub struct GetBackgroundOutput;

impl Tool for GetBackgroundOutput {
    const SPEC: ToolSpec = ToolSpec {
        tool: ToolName::GetBackgroundOutput,
        title: "Read a background command's output",
        hints: READS,
        description: "Read what a process started with start_background_command has printed (stdout and stderr, each truncated like every output) and whether it is still running or has exited (with its exit_code). Pass the previous answer's next_since as since to get only the new output. Use this to check a server's log or a long job's progress.",
        parameters_schema: include_str!("../../schemas/get_background_output.json"),
        result_schema: include_str!("../../schemas/results/get_background_output.json"),
        failure_prefix: "Failed to get background output: ",
        instruction: "get_background_output (what a background process \
    printed, from an offset, and whether it still runs)",
    };

    type Input = OutputArgs;
    type Output = ProcessOutput;

    /// Parses `get_background_output`'s arguments (the pid, the offsets).
    fn parse(args: &mut Args) -> Result<OutputArgs, ToolError> {
        Ok(OutputArgs {
            pid: pid(args)?,
            since: since(args)?,
        })
    }

    /// Runs the reading script and parses its answer (redacted as read,
    /// each chunk on its own).
    async fn run<P: Platform>(
        ctx: &Ctx<P>,
        settings: &Settings,
        sandbox: &SandboxHandle,
        a: &mut OutputArgs,
    ) -> Result<ProcessOutput, OpError> {
        let OutputArgs { pid, since } = *a;
        let limit = settings.max_output_bytes;
        // The same secrets for the script's context and the parse.
        let secrets = ctx.secrets();
        let context = script::context_bytes(&secrets);
        let text = script::output_script(pid, since, limit, context);
        let answer_bound = script::output_answer_bound(limit, context);
        let timeout = u64::from(settings.request_timeout_ms);
        let answer = run_script(ctx, settings, sandbox, text, timeout, answer_bound)
            .await
            .map_err(plain)?;
        script::parse_output(pid, &answer, since, limit, &secrets).map_err(plain)
    }

    /// The dict's keys.
    fn dict(p: &ProcessOutput, _rich: bool, obj: OrderedObject) -> OrderedObject {
        obj.put("pid", p.pid)
            .put("state", p.state.as_str())
            .put("exit_code", p.exit_code)
            .put("stdout", p.stdout.as_str())
            .put("stderr", p.stderr.as_str())
            // Keys in sorted order: the same text whether serde_json
            // preserves insertion order (a feature another crate may turn
            // on) or sorts.
            .put(
                "next_since",
                serde_json::json!({"stderr": p.next_since.stderr, "stdout": p.next_since.stdout}),
            )
    }
}

/// What `get_background_output` is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputArgs {
    /// The process, as its start returned it.
    pub pid: u32,
    /// Where to read from (0: from the start).
    pub since: Offsets,
}

#[cfg(test)]
mod tests {
    use crate::config::ConfigInput;
    use crate::session::platform::fake::run;
    use crate::session::platform::fake::Answer;
    use crate::testing::*;
    use crate::tools::{execute, ToolCall, ToolOutput};

    #[test]
    fn background_output_is_read_by_a_script_and_its_answer_parsed() {
        let ctx = ctx_with(ConfigInput {
            tools: Some(vec!["all".into()]),
            ..Default::default()
        });
        // "hello world" from offset 2, nothing on stderr: the script reads
        // from offset 0, the context before the page (the key is a secret).
        let mut steps = vec![started(9), stdout("running - 11 0\naGVsbG8gd29ybGQ=\n\n")];
        steps.extend(exited(0));
        ctx.platform.route(START, vec![Answer::steps(200, steps)]);
        let call = ToolCall::GetBackgroundOutput(super::OutputArgs {
            pid: 42,
            since: crate::tools::background::Offsets {
                stdout: 2,
                stderr: 0,
            },
        });
        let out = run(&ctx.platform.clock, execute(&ctx, call)).unwrap();
        let ToolOutput::GetBackgroundOutput(out) = out else {
            panic!("{out:?}")
        };
        assert_eq!(out.stdout, "llo world");
        assert_eq!(out.next_since.stdout, 11);
        let body = &ctx.platform.bodies(START)[0];
        assert!(body.contains("background/42"), "{body}");
        // Read with the key's length but one of context either side.
        assert!(body.contains("local a=$(( $2 - 6 ))"), "{body}");
    }
}
