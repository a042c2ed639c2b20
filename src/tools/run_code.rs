//! `run_code`: a snippet in the sandbox's stateful kernel, through the
//! code interpreter's `/execute` stream.

use std::collections::BTreeMap;

use serde_json::Value;

use super::args::{envs, normalize_language, require_str, timeout_ms, Args};
use super::exec::{error_body, report_progress, OpError};
use super::spec::{ToolSpec, RUNS_CODE};
use super::tool::Tool;
use crate::config::{Settings, ToolName};
use crate::errors::{from_interpreter_http, ErrorKind, Failure, ToolError, EXECUTION_TIMEOUT};
use crate::output::progress::LatestLine;
use crate::output::redact::Secrets;
use crate::output::results::OrderedObject;
use crate::protocol::api::SandboxHandle;
use crate::protocol::interpreter::{self, Execution, ExecutionCollector, RichResult};
use crate::session::platform::{Platform, ResponseBody};
use crate::session::Ctx;

/// `run_code`: a snippet in the sandbox's stateful kernel.
pub struct RunCode;

impl Tool for RunCode {
    const SPEC: ToolSpec = ToolSpec {
        tool: ToolName::RunCode,
        title: "Run code",
        hints: RUNS_CODE,
        description: "Execute a code snippet inside an isolated E2B sandbox and return its stdout, stderr, the last expression's value, and any runtime error. Use this to actually run and verify code rather than only reasoning about it. Defaults to Python.",
        parameters_schema: include_str!("../schemas/run_code.json"),
        result_schema: include_str!("../schemas/results/run_code.json"),
        failure_prefix: "Failed to run code: ",
        instruction: "run_code (execute {languages} in a stateful kernel; returns stdout, stderr, the last \
    expression's value as text, and any raised error)",
    };

    type Input = RunCodeArgs;
    type Output = Execution;

    /// Parses `run_code`'s arguments.
    fn parse(args: &mut Args) -> Result<RunCodeArgs, ToolError> {
        let code = require_str(args, "code", false)?;
        let language = match args.get("language") {
            Some(Value::String(s)) => normalize_language(Some(s)),
            _ => normalize_language(None),
        };
        Ok(RunCodeArgs {
            code,
            language,
            envs: envs(args)?,
            timeout_ms: timeout_ms(args)?,
        })
    }

    /// A language the backend is known not to have.
    fn admit(settings: &Settings, a: &RunCodeArgs) -> Result<(), ToolError> {
        settings.check_language(&a.language)
    }

    /// Runs the snippet, streaming its output into the result.
    async fn run<P: Platform>(
        ctx: &Ctx<P>,
        settings: &Settings,
        sandbox: &SandboxHandle,
        a: &mut RunCodeArgs,
    ) -> Result<Execution, OpError> {
        let req = interpreter::execute_request(settings, sandbox, &a.code, &a.language, &a.envs);
        let deadline = a.timeout_ms.unwrap_or(RUN_CODE_TIMEOUT_MS);
        let secrets = ctx.secrets();
        let mut collector =
            ExecutionCollector::new(settings.max_output_bytes, settings.rich_results)
                .redacting(&secrets);
        if settings.progress {
            collector.latest = Some(LatestLine::default());
        }
        let outcome = ctx
            .with_deadline(
                deadline,
                async {
                    let mut resp = ctx.platform.send(&req, settings.request_timeout_ms).await?;
                    if resp.status != 200 {
                        let body = error_body(&mut resp.body).await;
                        return Err(from_interpreter_http(resp.status, &body));
                    }
                    while let Some(chunk) = resp.body.chunk().await? {
                        collector.feed(&chunk)?;
                        report_progress(ctx, &secrets, "run_code", &mut collector.latest);
                        if collector.ended() {
                            break;
                        }
                    }
                    Ok(())
                },
                || Failure::new(ErrorKind::Timeout, EXECUTION_TIMEOUT),
            )
            .await;
        match outcome {
            Ok(()) => collector.finish(),
            Err(f) => Err((f, collector.partial_output())),
        }
    }

    /// Removes secrets from every text of the output.
    fn redact(ex: Execution, secrets: &Secrets) -> Execution {
        let r = |s: String| secrets.redact(&s);
        Execution {
            stdout: r(ex.stdout),
            stderr: r(ex.stderr),
            text: r(ex.text),
            error: r(ex.error),
            rich: ex
                .rich
                .into_iter()
                .map(|rich| RichResult {
                    data: r(rich.data),
                    ..rich
                })
                .collect(),
        }
    }

    /// e2b-adk's dict keys; `rich` adds `results`.
    fn dict(ex: &Execution, rich: bool, obj: OrderedObject) -> OrderedObject {
        let mut obj = obj
            .put("stdout", ex.stdout.as_str())
            .put("stderr", ex.stderr.as_str())
            .put("text", ex.text.as_str())
            .put("error", ex.error.as_str());
        if rich {
            let results: Vec<Value> = ex
                .rich
                .iter()
                .map(|r| {
                    serde_json::json!({
                        "mime_type": r.mime_type,
                        "data": r.data,
                        "is_main_result": r.is_main_result,
                    })
                })
                .collect();
            obj = obj.put("results", results);
        }
        obj
    }
}

/// Default execution timeout of run_code (the interpreter SDK's).
const RUN_CODE_TIMEOUT_MS: u64 = 300_000;

/// `run_code`'s arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunCodeArgs {
    /// Source code (non-empty).
    pub code: String,
    /// Lower-cased language, `python` by default.
    pub language: String,
    /// Environment for this execution.
    pub envs: BTreeMap<String, String>,
    /// Timeout in ms; `None`: the default (300 s); `Some(0)`: none.
    pub timeout_ms: Option<u64>,
}

#[cfg(test)]
mod tests {
    use crate::errors::ErrorKind;
    use crate::session::platform::fake::{run, Answer, Step};
    use crate::testing::*;
    use crate::tools::execute;

    #[test]
    fn a_broken_execution_whose_sandbox_is_gone_is_reported_expired() {
        let ctx = ctx(300);
        ctx.platform.route(
            "Post http://sbx.test/execute",
            vec![Answer::steps(
                200,
                vec![
                    Step::Bytes(b"{\"type\": \"stdout\", \"text\": \"par".to_vec()),
                    Step::Break,
                ],
            )],
        );
        ctx.platform.route(
            "Get http://sbx.test/health",
            vec![Answer::new(
                502,
                r#"{"sandboxId":"sbx1","message":"The sandbox was not found","code":502}"#,
            )],
        );
        let err = run(&ctx.platform.clock, execute(&ctx, python("1"))).unwrap_err();
        assert_eq!(err.kind, ErrorKind::SandboxExpired, "{err:?}");
        assert!(
            err.message.contains("The sandbox was killed"),
            "{}",
            err.message
        );
    }

    #[test]
    fn a_broken_execution_of_a_live_sandbox_stays_a_network_failure() {
        let ctx = ctx(300);
        ctx.platform.route(
            "Post http://sbx.test/execute",
            vec![Answer::steps(200, vec![Step::Break])],
        );
        ctx.platform
            .route("Get http://sbx.test/health", vec![Answer::new(204, "")]);
        let err = run(&ctx.platform.clock, execute(&ctx, python("1"))).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Network, "{err:?}");
    }
}
