//! `start_background_command`: a long-running process (a server), left
//! running, with its readiness probed on a port or an early exit watched.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::script;
use crate::config::{Settings, ToolName};
use crate::errors::{ErrorKind, Failure, ToolError};
use crate::output::redact::Secrets;
use crate::output::results::OrderedObject;
use crate::protocol::api::SandboxHandle;
use crate::protocol::envd::{ProcessStream, StartSpec};
use crate::session::platform::Platform;
use crate::session::Ctx;
use crate::tools::args::{cwd, envs, require_str, timeout_ms, Args};
use crate::tools::exec::{pump, start, OpError};
use crate::tools::spec::{ToolSpec, RUNS_CODE};
use crate::tools::tool::Tool;

/// `start_background_command`: a command left running, its pid returned.
pub struct StartBackgroundCommand;

impl Tool for StartBackgroundCommand {
    const SPEC: ToolSpec = ToolSpec {
        tool: ToolName::StartBackgroundCommand,
        title: "Start a background command",
        hints: RUNS_CODE,
        description: "Start a long-running command (such as a web/dev server) inside an isolated E2B sandbox and return immediately with its process id. Provide a port to also get a preview URL for the exposed service; the call then waits (up to 10 seconds by default) until the port accepts connections and says whether the service is ready, not listening yet, or exited (with its output so far). Without a port it watches for a second for an early exit.",
        parameters_schema: include_str!("../../schemas/start_background_command.json"),
        result_schema: include_str!("../../schemas/results/start_background_command.json"),
        failure_prefix: "Failed to start command: ",
        instruction: "start_background_command (servers and other \
    long-running processes; give a port to get a preview URL and a readiness check)",
    };

    type Input = BackgroundArgs;
    type Output = BackgroundOutput;

    /// Parses `start_background_command`'s arguments; a failure echoes the
    /// command.
    fn parse(args: &mut Args) -> Result<BackgroundArgs, ToolError> {
        let command = require_str(args, "command", false)?;
        let echo = |e: ToolError| e.with_command(command.clone());
        Ok(BackgroundArgs {
            port: port(args).map_err(echo)?,
            cwd: cwd(args).map_err(echo)?,
            envs: envs(args).map_err(echo)?,
            timeout_ms: timeout_ms(args).map_err(echo)?,
            command,
        })
    }

    /// Adds the command to an error.
    fn echo(a: &BackgroundArgs, err: ToolError) -> ToolError {
        err.with_command(a.command.clone())
    }

    /// Starts the command and watches it: for the port to accept
    /// connections (with a port), or a second for an early exit.
    async fn run<P: Platform>(
        ctx: &Ctx<P>,
        settings: &Settings,
        sandbox: &SandboxHandle,
        a: &mut BackgroundArgs,
    ) -> Result<BackgroundOutput, OpError> {
        let command = if settings.tools.controls_background() {
            script::wrap(&a.command)
        } else {
            a.command.clone()
        };
        let spec = StartSpec {
            command,
            cwd: a.cwd.clone(),
            envs: a.envs.clone(),
            timeout_ms: a.timeout_ms.filter(|ms| *ms > 0),
        };
        let mut stream = ProcessStream::new(settings.max_output_bytes).redacting(&ctx.secrets());
        // Wait for the `start` event within the request timeout.
        let started = ctx
            .with_deadline(
                u64::from(settings.request_timeout_ms),
                async {
                    let mut body = start(ctx, settings, sandbox, &spec).await?;
                    pump(&mut body, &mut stream, |s| s.pid.is_some() || s.is_done()).await?;
                    Ok(body)
                },
                || {
                    Failure::new(
                        ErrorKind::Timeout,
                        "Request timed out: the stream didn't open within 'request_timeout'",
                    )
                },
            )
            .await;
        let mut body = match started {
            Ok(body) => body,
            Err(f) => return Err((f, stream.partial_output())),
        };
        let Some(pid) = stream.pid else {
            let failure = stream.outcome().err().unwrap_or_else(|| {
                Failure::new(
                    ErrorKind::Internal,
                    "Failed to start process: expected start event, got nothing",
                )
            });
            return Err((failure, stream.partial_output()));
        };

        let mut readiness = None;
        let watch_ms = match a.port {
            // The probe ends itself after the readiness wait; this bounds a
            // probe request that hangs.
            Some(_) => u64::from(settings.readiness_timeout_ms) + 10_000,
            None => EARLY_EXIT_WATCH_MS,
        };
        // Keep reading the stream (an early exit) while probing the port.
        let watch = async {
            match pump(&mut body, &mut stream, |s| s.end.is_some() || s.is_done()).await {
                Ok(()) => Some(Readiness::Exited),
                // A broken stream says nothing about the process (envd keeps
                // it running): let the probe or the timer decide.
                Err(_) => futures_lite::future::pending().await,
            }
        };
        let probe = async {
            match a.port {
                Some(port) => Some(probe_port(ctx, settings, sandbox, port).await),
                None => {
                    ctx.platform.sleep_ns(watch_ms * 1_000_000).await;
                    None
                }
            }
        };
        let timer = async {
            ctx.platform.sleep_ns((watch_ms + 1_000) * 1_000_000).await;
            a.port.map(|_| Readiness::NotListening)
        };
        let verdict = futures_lite::future::or(watch, futures_lite::future::or(probe, timer)).await;
        let exited = stream.end.is_some() || stream.is_done();
        if exited || verdict == Some(Readiness::Exited) {
            readiness = Some(Readiness::Exited);
        } else if a.port.is_some() {
            readiness = verdict.or(Some(Readiness::NotListening));
        }
        drop(body);
        let exit_code = match readiness {
            Some(Readiness::Exited) => Some(stream.end.as_ref().map_or(-1, |e| e.exit_code)),
            _ => None,
        };
        Ok(BackgroundOutput {
            command: a.command.clone(),
            pid,
            preview_url: a
                .port
                .map(|port| settings.preview_url(&sandbox.id, port, sandbox.domain.as_deref())),
            readiness,
            exit_code,
            stdout: stream.out.stdout.finish(),
            stderr: stream.out.stderr.finish(),
        })
    }

    /// Removes secrets from every text of the output.
    fn redact(b: BackgroundOutput, secrets: &Secrets) -> BackgroundOutput {
        let r = |s: String| secrets.redact(&s);
        BackgroundOutput {
            command: r(b.command),
            preview_url: b.preview_url.map(r),
            stdout: r(b.stdout),
            stderr: r(b.stderr),
            ..b
        }
    }

    /// e2b-adk's dict; the output so far only when not ready.
    fn dict(b: &BackgroundOutput, _rich: bool, obj: OrderedObject) -> OrderedObject {
        let mut obj = obj
            .put("command", b.command.as_str())
            .put("pid", b.pid)
            .put("preview_url", b.preview_url.clone());
        if let Some(readiness) = b.readiness {
            obj = obj.put("readiness", readiness.as_str());
            if readiness == Readiness::Exited {
                obj = obj.put("exit_code", b.exit_code);
            }
            if readiness != Readiness::Ready {
                obj = obj
                    .put("stdout", b.stdout.as_str())
                    .put("stderr", b.stderr.as_str());
            }
        }
        obj
    }
}

/// How long a start without a port watches for an early exit.
const EARLY_EXIT_WATCH_MS: u64 = 1_000;

/// `start_background_command`'s arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackgroundArgs {
    /// Shell command (non-empty).
    pub command: String,
    /// Port to probe and preview.
    pub port: Option<u16>,
    /// Working directory.
    pub cwd: Option<String>,
    /// Environment.
    pub envs: BTreeMap<String, String>,
    /// Lifetime in ms; `None` or `Some(0)`: until the sandbox ends.
    pub timeout_ms: Option<u64>,
}

/// Readiness of a background process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    /// The port accepts connections.
    Ready,
    /// The process exited during the wait.
    Exited,
    /// The port did not accept connections in time.
    NotListening,
}

impl Readiness {
    /// The JSON string.
    pub fn as_str(self) -> &'static str {
        match self {
            Readiness::Ready => "ready",
            Readiness::Exited => "exited",
            Readiness::NotListening => "not-listening",
        }
    }
}

/// A started background process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackgroundOutput {
    /// The command, echoed.
    pub command: String,
    /// Its pid.
    pub pid: u32,
    /// Preview URL when a port was given.
    pub preview_url: Option<String>,
    /// Readiness (always with a port; `Exited` without one if it died).
    pub readiness: Option<Readiness>,
    /// Exit code when it exited.
    pub exit_code: Option<i32>,
    /// Output captured while waiting, truncated.
    pub stdout: String,
    /// Error output captured while waiting, truncated.
    pub stderr: String,
}

/// The message e2b-adk gives a bad port.
pub const INVALID_PORT: &str = "Invalid port: expected an integer between 1 and 65535";

/// e2b-adk's port rule: null, or an integer (not a bool, not a float) in
/// 1..=65535.
pub(crate) fn port(args: &Map<String, Value>) -> Result<Option<u16>, ToolError> {
    match args.get("port") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => n
            .as_u64()
            .and_then(|p| u16::try_from(p).ok())
            .filter(|p| *p >= 1)
            .map(Some)
            .ok_or_else(|| ToolError::invalid(INVALID_PORT)),
        Some(_) => Err(ToolError::invalid(INVALID_PORT)),
    }
}

/// 127.0.0.1:`port` accepts a connection, 1 after about `wait_ms`.
pub fn readiness_probe_script(port: u16, wait_ms: u32) -> String {
    let attempts = (wait_ms / 200).max(1);
    format!(
        "for ((i=0;i<{attempts};i++)); do (: </dev/tcp/127.0.0.1/{port}) >/dev/null 2>&1 && exit 0; sleep 0.2; done; exit 1"
    )
}

/// Runs the probe script in the sandbox: ready if it exits 0.
async fn probe_port<P: Platform>(
    ctx: &Ctx<P>,
    settings: &Settings,
    sandbox: &SandboxHandle,
    port: u16,
) -> Readiness {
    let wait = settings.readiness_timeout_ms;
    let spec = StartSpec {
        command: readiness_probe_script(port, wait),
        cwd: None,
        envs: Default::default(),
        timeout_ms: Some(u64::from(wait) + 5_000),
    };
    let mut stream = ProcessStream::new(256);
    let result = async {
        let mut body = start(ctx, settings, sandbox, &spec).await?;
        pump(&mut body, &mut stream, ProcessStream::is_done).await?;
        stream.outcome()
    }
    .await;
    match result {
        Ok(0) => Readiness::Ready,
        _ => Readiness::NotListening,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigInput;
    use crate::session::platform::fake::{run, Answer, Step};
    use crate::testing::*;
    use crate::tools::{execute, parse_call, ToolCall, ToolOutput};

    #[test]
    fn probe_script_is_bounded() {
        let s = readiness_probe_script(8000, 10_000);
        assert!(s.contains("i<50;"));
        assert!(s.contains("/dev/tcp/127.0.0.1/8000"));
        assert!(readiness_probe_script(1, 0).contains("i<1;"));
    }

    #[test]
    fn ports_follow_e2b_adk() {
        for bad in [r#""evil.example/#""#, "8000.0", "true", "0", "-1", "65536"] {
            let json = format!(r#"{{"command": "x", "port": {bad}}}"#);
            let err = parse_call("start_background_command", &json).unwrap_err();
            assert_eq!(err.message, INVALID_PORT, "{bad}");
            assert_eq!(err.command.as_deref(), Some("x"));
        }
        match parse_call(
            "start_background_command",
            r#"{"command": "x", "port": 8000}"#,
        )
        .unwrap()
        {
            ToolCall::StartBackgroundCommand(a) => assert_eq!(a.port, Some(8000)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_background_server_is_ready_when_the_probe_connects() {
        let ctx = ctx(300);
        // The probe script names the port; the server's start does not.
        let mut probe = vec![started(8)];
        probe.extend(exited(0));
        ctx.platform
            .route("127.0.0.1/8123", vec![Answer::steps(200, probe)]);
        ctx.platform.route(
            START,
            vec![Answer::steps(
                200,
                vec![started(42), stdout("listening\n"), Step::Hang],
            )],
        );
        let out = run(
            &ctx.platform.clock,
            execute(&ctx, background("serve", Some(8123))),
        )
        .unwrap();
        let ToolOutput::StartBackgroundCommand(out) = out else {
            panic!("{out:?}")
        };
        assert_eq!(out.pid, 42);
        assert_eq!(out.readiness, Some(Readiness::Ready));
        assert_eq!(out.exit_code, None);
        assert_eq!(out.stdout, "listening\n");
    }

    #[test]
    fn a_background_command_that_dies_at_once_is_reported_exited_with_its_code() {
        let ctx = ctx(300);
        let mut steps = vec![started(5), stdout("boom\n")];
        steps.extend(exited(3));
        ctx.platform.route(START, vec![Answer::steps(200, steps)]);
        let out = run(
            &ctx.platform.clock,
            execute(&ctx, background("crash", None)),
        )
        .unwrap();
        let ToolOutput::StartBackgroundCommand(out) = out else {
            panic!("{out:?}")
        };
        assert_eq!(out.readiness, Some(Readiness::Exited));
        assert_eq!(out.exit_code, Some(3));
        assert_eq!(out.stdout, "boom\n");
    }

    #[test]
    fn a_background_command_still_running_after_the_watch_is_left_running() {
        let ctx = ctx(300);
        ctx.platform.route(
            START,
            vec![Answer::steps(200, vec![started(5), Step::Hang])],
        );
        let out = run(
            &ctx.platform.clock,
            execute(&ctx, background("sleep 99", None)),
        )
        .unwrap();
        let ToolOutput::StartBackgroundCommand(out) = out else {
            panic!("{out:?}")
        };
        assert_eq!((out.pid, out.readiness, out.exit_code), (5, None, None));
        // It watched for an early exit for one second.
        assert_eq!(ctx.platform.clock.now() / 1_000_000, 1_000);
    }

    #[test]
    fn background_output_is_kept_only_when_a_tool_reads_or_stops_it() {
        // Default tools: the command goes to envd as the model wrote it.
        let plain = ctx(300);
        plain.platform.route(
            START,
            vec![Answer::steps(200, vec![started(5), Step::Hang])],
        );
        run(
            &plain.platform.clock,
            execute(&plain, background("serve", None)),
        )
        .unwrap();
        let body = &plain.platform.bodies(START)[0];
        assert!(!body.contains(script::LOG_DIR), "{body}");
        // The background tools enabled: it runs behind the prelude.
        let kept = ctx_with(ConfigInput {
            tools: Some(vec!["default".into(), "stop_background_command".into()]),
            ..Default::default()
        });
        kept.platform.route(
            START,
            vec![Answer::steps(200, vec![started(5), Step::Hang])],
        );
        let out = run(
            &kept.platform.clock,
            execute(&kept, background("serve", None)),
        )
        .unwrap();
        let body = &kept.platform.bodies(START)[0];
        assert!(body.contains(script::LOG_DIR), "{body}");
        // The echo is still the model's command.
        let ToolOutput::StartBackgroundCommand(out) = out else {
            panic!("{out:?}")
        };
        assert_eq!(out.command, "serve");
    }
}
