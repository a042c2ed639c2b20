//! The six tools: a validated [`ToolCall`] in, a [`ToolOutput`] or a
//! prefixed [`ToolError`] out, with e2b-adk's failure prefixes and echoes.
//! The pure parts (prefixes, the readiness probe script, redaction of
//! outputs) are here; the orchestration over the network is wasm-only.

use crate::args::ToolCall;
use crate::envd::ListedEntry;
use crate::errors::ToolError;
use crate::interpreter::{Execution, RichResult};
use crate::redact::Secrets;
use crate::results::{BackgroundOutput, CommandOutput, ToolOutput};

/// e2b-adk's failure prefix of each tool.
pub fn failure_prefix(call: &ToolCall) -> &'static str {
    match call {
        ToolCall::RunCode(_) => "Failed to run code: ",
        ToolCall::RunCommand(_) => "Failed to run command: ",
        ToolCall::WriteFile { .. } => "Failed to write file: ",
        ToolCall::ReadFile { .. } => "Failed to read file: ",
        ToolCall::ListFiles { .. } => "Failed to list directory: ",
        ToolCall::StartBackground(_) => "Failed to start command: ",
        ToolCall::GetBackgroundOutput { .. } => "Failed to get background output: ",
        ToolCall::StopBackground { .. } => "Failed to stop command: ",
    }
}

/// Adds the call's echoed path or command to an error, as e2b-adk does.
pub fn echo(call: &ToolCall, err: ToolError) -> ToolError {
    match call {
        ToolCall::RunCode(_)
        | ToolCall::GetBackgroundOutput { .. }
        | ToolCall::StopBackground { .. } => err,
        ToolCall::RunCommand(a) => err.with_command(a.command.clone()),
        ToolCall::StartBackground(a) => err.with_command(a.command.clone()),
        ToolCall::WriteFile { path, .. }
        | ToolCall::ReadFile { path, .. }
        | ToolCall::ListFiles { path, .. } => err.with_path(path.clone()),
    }
}

/// A bash script, run inside the sandbox, that exits 0 as soon as
/// 127.0.0.1:`port` accepts a connection, 1 after about `wait_ms`.
pub fn readiness_probe_script(port: u16, wait_ms: u32) -> String {
    let attempts = (wait_ms / 200).max(1);
    format!(
        "for ((i=0;i<{attempts};i++)); do (: </dev/tcp/127.0.0.1/{port}) >/dev/null 2>&1 && exit 0; sleep 0.2; done; exit 1"
    )
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
    let r = |s: String| secrets.redact(&s);
    match out {
        ToolOutput::Code(ex) => ToolOutput::Code(Execution {
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
        }),
        ToolOutput::Command(c) => ToolOutput::Command(CommandOutput {
            command: r(c.command),
            stdout: r(c.stdout),
            stderr: r(c.stderr),
            exit_code: c.exit_code,
        }),
        ToolOutput::Written { path } => ToolOutput::Written { path: r(path) },
        ToolOutput::Read {
            path,
            content,
            encoding,
            invalid_utf8,
        } => ToolOutput::Read {
            path: r(path),
            content: r(content),
            encoding,
            invalid_utf8,
        },
        ToolOutput::Listed {
            path,
            entries,
            with_paths,
            omitted,
        } => ToolOutput::Listed {
            path: r(path),
            entries: entries
                .into_iter()
                .map(|e| ListedEntry {
                    name: r(e.name),
                    path: r(e.path),
                    ..e
                })
                .collect(),
            with_paths,
            omitted,
        },
        ToolOutput::Background(b) => ToolOutput::Background(BackgroundOutput {
            command: r(b.command),
            preview_url: b.preview_url.map(r),
            stdout: r(b.stdout),
            stderr: r(b.stderr),
            ..b
        }),
        // Redacted as they were read, each chunk on its own.
        out @ (ToolOutput::ProcessOutput(_) | ToolOutput::Stopped(_)) => out,
    }
}

pub use orchestration::execute;

/// How each tool's call goes: requests, streams, deadlines, the
/// background-start race, the expiry check after a broken stream. Generic
/// over the [`Platform`](crate::platform::Platform), so natively testable.
mod orchestration {
    use super::*;
    use crate::api::SandboxHandle;
    use crate::args::Encoding;
    use crate::args::{BackgroundArgs, RunCodeArgs, RunCommandArgs};
    use crate::background;
    use crate::base64_sink::Base64Sink;
    use crate::config::Settings;
    use crate::envd::{self, ProcessStream, StartSpec};
    use crate::errors::{
        body_message, from_connect_http, from_envd_http, from_interpreter_http,
        sandbox_unavailable, ErrorKind, Failure, DEADLINE_SUFFIX, EXECUTION_TIMEOUT,
    };
    use crate::interpreter::{self, ExecutionCollector};
    use crate::platform::{Platform, ResponseBody};
    use crate::progress::{self, LatestLine};
    use crate::results::Readiness;
    use crate::retry::{Attempt, Retry};
    use crate::session::{Ctx, Unavailable};
    use crate::truncate::TruncatingSink;

    /// Default execution timeout of run_code (the interpreter SDK's).
    const RUN_CODE_TIMEOUT_MS: u64 = 300_000;
    /// Default timeout of run_command (the SDK's `commands.run`).
    const RUN_COMMAND_TIMEOUT_MS: u64 = 60_000;
    /// Grace past a command's deadline before we stop waiting for envd's
    /// own `deadline_exceeded`.
    const DEADLINE_GRACE_MS: u64 = 2_000;
    /// How long a background start without a port watches for an early exit.
    const EARLY_EXIT_WATCH_MS: u64 = 1_000;
    /// How long the health probe after a broken connection may take.
    const HEALTH_PROBE_MS: u64 = 5_000;
    /// The code interpreter SDK's text for a sandbox killed mid-execution.
    const SANDBOX_KILLED: &str = "The sandbox was killed while the request was in progress. This can happen when the sandbox times out or is killed manually. You can modify the sandbox timeout by passing 'timeout' when starting the sandbox or calling '.set_timeout' on the sandbox with the desired timeout";
    /// Largest error body read.
    const MAX_ERROR_BODY: usize = 64 * 1024;

    /// A failure plus the output captured before it.
    type OpError = (Failure, String);

    fn plain(f: Failure) -> OpError {
        (f, String::new())
    }

    /// Runs one validated call in the sandbox.
    pub async fn execute<P: Platform>(
        ctx: &Ctx<P>,
        mut call: ToolCall,
    ) -> Result<ToolOutput, ToolError> {
        // Typed calls come here unparsed: refuse what would not fit, and a
        // language the backend is known not to have.
        let settings = ctx.snapshot().settings;
        let refused = settings
            .tools
            .check(call.tool())
            .and_then(|()| match &call {
                ToolCall::WriteFile { content, .. } => crate::args::check_write_size(content),
                ToolCall::RunCode(a) => settings.check_language(&a.language),
                _ => Ok(()),
            });
        drop(settings);
        if let Err(err) = refused {
            return Err(finish_error(ctx, &call, err));
        }
        let prefix = failure_prefix(&call);
        let (settings, sandbox) = match ctx.acquire().await {
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
        let bound = request_bounded(&settings, &call);
        let op = run(ctx, &settings, &sandbox, &mut call);
        let result = ctx.with_heartbeat(&settings, &sandbox.id, bound, op).await;
        let secrets = ctx.secrets();
        match result {
            Ok(out) => Ok(redact_output(out, &secrets)),
            Err((failure, partial)) => {
                let failure = confirm_gone(ctx, &settings, &sandbox, &call, failure).await;
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
            crate::request::Method::Get,
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
            ToolCall::RunCode(a) => run_code(ctx, settings, sandbox, a)
                .await
                .map(ToolOutput::Code),
            ToolCall::RunCommand(a) => run_command(ctx, settings, sandbox, a)
                .await
                .map(ToolOutput::Command),
            ToolCall::WriteFile { path, content } => {
                // Moved into the request, not copied.
                let content = std::mem::take(content);
                write_file(ctx, settings, sandbox, path, content)
                    .await
                    .map_err(plain)?;
                Ok(ToolOutput::Written { path: path.clone() })
            }
            ToolCall::ReadFile { path, encoding } => {
                let (content, invalid_utf8) = read_file(ctx, settings, sandbox, path, *encoding)
                    .await
                    .map_err(plain)?;
                Ok(ToolOutput::Read {
                    path: path.clone(),
                    content,
                    encoding: *encoding,
                    invalid_utf8,
                })
            }
            ToolCall::ListFiles { path, depth } => {
                let req = envd::list_dir_request(settings, sandbox, path, *depth);
                let (status, body) = ctx
                    .exchange_retrying(settings, &req, Retry::Idempotent)
                    .await
                    .map_err(plain)?;
                let mut entries = envd::parse_list_dir(status, &body).map_err(plain)?;
                let omitted = entries.len().saturating_sub(envd::MAX_LIST_ENTRIES);
                entries.truncate(envd::MAX_LIST_ENTRIES);
                Ok(ToolOutput::Listed {
                    path: path.clone(),
                    entries,
                    with_paths: *depth > 1,
                    omitted,
                })
            }
            ToolCall::StartBackground(a) => start_background(ctx, settings, sandbox, a)
                .await
                .map(ToolOutput::Background),
            ToolCall::GetBackgroundOutput { pid, since } => {
                let limit = settings.max_output_bytes;
                // The same secrets for the script's context and the parse.
                let secrets = ctx.secrets();
                let context = background::context_bytes(&secrets);
                let script = background::output_script(*pid, *since, limit, context);
                let answer_bound = background::output_answer_bound(limit, context);
                let timeout = u64::from(settings.request_timeout_ms);
                let answer = run_script(ctx, settings, sandbox, script, timeout, answer_bound)
                    .await
                    .map_err(plain)?;
                background::parse_output(*pid, &answer, *since, limit, &secrets)
                    .map(ToolOutput::ProcessOutput)
                    .map_err(plain)
            }
            ToolCall::StopBackground { pid, signal } => {
                let script = background::stop_script(*pid, *signal);
                let timeout = background::STOP_SCRIPT_MS;
                let answer = run_script(ctx, settings, sandbox, script, timeout, 256)
                    .await
                    .map_err(plain)?;
                background::parse_stop(*pid, &answer)
                    .map(ToolOutput::Stopped)
                    .map_err(plain)
            }
        }
    }

    /// Runs one of our scripts in the sandbox and returns its stdout (at
    /// most `bound` bytes kept) once it exits 0.
    async fn run_script<P: Platform>(
        ctx: &Ctx<P>,
        settings: &Settings,
        sandbox: &SandboxHandle,
        script: String,
        timeout_ms: u64,
        bound: usize,
    ) -> Result<String, Failure> {
        let spec = StartSpec {
            command: script,
            cwd: None,
            envs: Default::default(),
            timeout_ms: Some(timeout_ms),
        };
        let mut stream = ProcessStream::new(bound);
        ctx.with_deadline(
            timeout_ms + DEADLINE_GRACE_MS,
            async {
                let mut body = start(ctx, settings, sandbox, &spec).await?;
                pump(&mut body, &mut stream, ProcessStream::is_done).await
            },
            deadline_failure,
        )
        .await?;
        match stream.outcome()? {
            0 => Ok(stream.stdout.finish()),
            code => Err(Failure::new(
                ErrorKind::Internal,
                format!(
                    "the sandbox's process query failed (exit code {code}): {}",
                    stream.stderr.finish()
                ),
            )),
        }
    }

    async fn error_body(body: &mut impl ResponseBody) -> Vec<u8> {
        body.read_to_end(MAX_ERROR_BODY).await.unwrap_or_default()
    }

    async fn run_code<P: Platform>(
        ctx: &Ctx<P>,
        settings: &Settings,
        sandbox: &SandboxHandle,
        a: &RunCodeArgs,
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

    /// Sends a Start request and checks its status.
    async fn start<P: Platform>(
        ctx: &Ctx<P>,
        settings: &Settings,
        sandbox: &SandboxHandle,
        spec: &StartSpec,
    ) -> Result<P::Body, Failure> {
        let req = envd::start_request(settings, sandbox, spec);
        let mut resp = ctx.platform.send(&req, settings.request_timeout_ms).await?;
        if resp.status != 200 {
            let body = error_body(&mut resp.body).await;
            return Err(from_connect_http(resp.status, &body));
        }
        Ok(resp.body)
    }

    /// Feeds `stream` from `body` until `stop(stream)` or the body's end.
    async fn pump(
        body: &mut impl ResponseBody,
        stream: &mut ProcessStream,
        stop: impl Fn(&ProcessStream) -> bool,
    ) -> Result<(), Failure> {
        pump_reporting(body, stream, stop, |_| {}).await
    }

    /// [`pump`], calling `report` with the stream's latest line after
    /// every chunk.
    async fn pump_reporting(
        body: &mut impl ResponseBody,
        stream: &mut ProcessStream,
        stop: impl Fn(&ProcessStream) -> bool,
        mut report: impl FnMut(&mut Option<LatestLine>),
    ) -> Result<(), Failure> {
        while !stop(stream) {
            match body.chunk().await? {
                Some(chunk) => {
                    stream.feed(&chunk)?;
                    report(&mut stream.latest);
                }
                None => {
                    stream.finish_body()?;
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// Reports the latest line for `tool` when it is due (only streams
    /// that follow one, with progress on, have it).
    fn report_progress<P: Platform>(
        ctx: &Ctx<P>,
        secrets: &Secrets,
        tool: &str,
        latest: &mut Option<LatestLine>,
    ) {
        if let Some(line) = latest
            .as_mut()
            .and_then(|l| l.due(ctx.platform.now_ns(), secrets))
        {
            ctx.platform.progress(&progress::event_json(tool, &line));
        }
    }

    fn deadline_failure() -> Failure {
        Failure::new(
            ErrorKind::Timeout,
            format!("context deadline exceeded{DEADLINE_SUFFIX}"),
        )
    }

    async fn run_command<P: Platform>(
        ctx: &Ctx<P>,
        settings: &Settings,
        sandbox: &SandboxHandle,
        a: &RunCommandArgs,
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
                stdout: stream.stdout.finish(),
                stderr: stream.stderr.finish(),
                exit_code,
            }),
            Err(f) => {
                let partial = stream.partial_output();
                Err((f, partial))
            }
        }
    }

    async fn start_background<P: Platform>(
        ctx: &Ctx<P>,
        settings: &Settings,
        sandbox: &SandboxHandle,
        a: &BackgroundArgs,
    ) -> Result<BackgroundOutput, OpError> {
        let command = if settings.tools.controls_background() {
            background::wrap(&a.command)
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
            stdout: stream.stdout.finish(),
            stderr: stream.stderr.finish(),
        })
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

    async fn write_file<P: Platform>(
        ctx: &Ctx<P>,
        settings: &Settings,
        sandbox: &SandboxHandle,
        path: &str,
        content: Vec<u8>,
    ) -> Result<(), Failure> {
        let req = envd::write_file_request(settings, sandbox, path, content);
        let (status, body) = ctx.exchange(settings, &req).await?;
        if (200..300).contains(&status) {
            Ok(())
        } else {
            Err(from_envd_http(status, &body))
        }
    }

    async fn read_file<P: Platform>(
        ctx: &Ctx<P>,
        settings: &Settings,
        sandbox: &SandboxHandle,
        path: &str,
        encoding: Encoding,
    ) -> Result<(String, bool), Failure> {
        let req = envd::read_file_request(settings, sandbox, path);
        let timeout = settings.request_timeout_ms;
        let started = ctx.platform.now_ns();
        let mut attempt = 0;
        loop {
            // A retry starts the content afresh.
            let mut sink = FileSink::new(encoding, settings.max_output_bytes, &ctx.secrets());
            let result = ctx
                .with_deadline(
                    u64::from(timeout),
                    async {
                        let mut resp = ctx.platform.send(&req, timeout).await?;
                        if resp.status != 200 {
                            let body = error_body(&mut resp.body).await;
                            return Ok(Some((resp.status, resp.headers, body)));
                        }
                        while let Some(chunk) = resp.body.chunk().await? {
                            sink.push(&chunk);
                        }
                        Ok(None)
                    },
                    || Failure::new(ErrorKind::Timeout, crate::errors::REQUEST_TIMEOUT),
                )
                .await;
            let outcome = match &result {
                Ok(None) => return Ok(sink.finish()),
                Ok(Some((status, headers, body))) => Attempt::answer(*status, headers, body),
                Err(f) => Attempt::broken(f),
            };
            if !ctx
                .wait_to_retry(settings, Retry::Idempotent, attempt, outcome, started)
                .await
            {
                return match result {
                    Ok(Some((status, _, body))) => Err(from_envd_http(status, &body)),
                    Ok(None) => Ok(sink.finish()),
                    Err(f) => Err(f),
                };
            }
            attempt += 1;
        }
    }

    /// A file's content as it is read: text, or base64.
    enum FileSink {
        Text(TruncatingSink),
        Base64(Base64Sink),
    }

    impl FileSink {
        fn new(encoding: Encoding, limit: usize, secrets: &Secrets) -> Self {
            match encoding {
                Encoding::Utf8 => FileSink::Text(TruncatingSink::new(limit).redacting(secrets)),
                Encoding::Base64 => FileSink::Base64(Base64Sink::new(limit, secrets)),
            }
        }

        fn push(&mut self, bytes: &[u8]) {
            match self {
                FileSink::Text(sink) => sink.push_bytes(bytes),
                FileSink::Base64(sink) => sink.push(bytes),
            }
        }

        /// The content, and whether text was not valid UTF-8.
        fn finish(self) -> (String, bool) {
            match self {
                FileSink::Text(sink) => {
                    let invalid = sink.saw_invalid_utf8();
                    (sink.finish(), invalid)
                }
                FileSink::Base64(sink) => (sink.finish(), false),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::parse_call;

    #[test]
    fn prefixes_and_echoes_follow_e2b_adk() {
        let call = parse_call("read_file", r#"{"path": "/tmp/x"}"#).unwrap();
        assert_eq!(failure_prefix(&call), "Failed to read file: ");
        let err = echo(&call, ToolError::invalid("e"));
        assert_eq!(err.path.as_deref(), Some("/tmp/x"));
        let call = parse_call("start_background_command", r#"{"command": "srv"}"#).unwrap();
        assert_eq!(failure_prefix(&call), "Failed to start command: ");
        assert_eq!(
            echo(&call, ToolError::invalid("e")).command.as_deref(),
            Some("srv")
        );
        let call = parse_call("run_code", r#"{"code": "1"}"#).unwrap();
        let err = echo(&call, ToolError::invalid("e"));
        assert!(err.path.is_none() && err.command.is_none());
    }

    #[test]
    fn probe_script_is_bounded() {
        let s = readiness_probe_script(8000, 10_000);
        assert!(s.contains("i<50;"));
        assert!(s.contains("/dev/tcp/127.0.0.1/8000"));
        assert!(readiness_probe_script(1, 0).contains("i<1;"));
    }

    #[test]
    fn redaction_covers_outputs_and_errors() {
        let out = redact_output(
            ToolOutput::Command(CommandOutput {
                command: "env".into(),
                stdout: "E2B_API_KEY=e2b_supersecret\n".into(),
                stderr: String::new(),
                exit_code: 0,
            }),
            &Secrets::new(["e2b_supersecret"]),
        );
        match out {
            ToolOutput::Command(c) => assert_eq!(c.stdout, "E2B_API_KEY=<redacted>\n"),
            other => panic!("{other:?}"),
        }
        let err = redact_error(
            ToolError::invalid("bad key e2b_supersecret")
                .with_partial_output("e2b_supersecret".into()),
            &Secrets::new(["e2b_supersecret"]),
        );
        assert!(
            !err.message.contains("supersecret") && !err.partial_output.contains("supersecret")
        );
    }
}

/// The orchestration natively: canned answers on a virtual clock, in
/// milliseconds, with no server and no wasm.
#[cfg(test)]
mod orchestration_tests {
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

    use super::*;
    use crate::config::ConfigInput;
    use crate::errors::ErrorKind;
    use crate::platform::fake::{run, Answer, Step, WALL_START_NS};
    use crate::platform::Platform;
    use crate::results::Readiness;
    use crate::testing::*;

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
    fn the_heartbeat_refreshes_every_half_ttl_while_a_call_runs() {
        let ctx = ctx(300);
        let mut steps = vec![started(7), Step::Wait(400_000), stdout("done\n")];
        steps.extend(exited(0));
        ctx.platform.route(START, vec![Answer::steps(200, steps)]);
        let out = run(&ctx.platform.clock, execute(&ctx, command("make", Some(0)))).unwrap();
        let ToolOutput::Command(out) = out else {
            panic!("{out:?}")
        };
        assert_eq!((out.stdout.as_str(), out.exit_code), ("done\n", 0));
        assert_eq!(ctx.platform.sent_ms(REFRESH), vec![150_000, 300_000]);
        // The last beat counts as the last refresh: the next call at 401 s
        // (101 s after it) needs none.
        assert!(!ctx.snapshot().keep_alive.due(401_000_000_000));
    }

    #[test]
    fn a_long_call_started_just_before_half_the_ttl_is_refreshed_at_half_the_ttl() {
        let ctx = ctx(300);
        ctx.platform
            .route(START, vec![lasting(1), lasting(200_000)]);
        run(&ctx.platform.clock, execute(&ctx, command("true", None))).unwrap();
        // 149 s after the creation no refresh is due yet; the long call
        // that starts then must be refreshed at 150 s (half a TTL of
        // margin), not half a TTL after its own start (299 s, 1 s before
        // the sandbox would expire).
        run(&ctx.platform.clock, async {
            ctx.platform.sleep_ns(149_000_000_000).await;
            execute(&ctx, command("make", Some(0))).await
        })
        .unwrap();
        assert_eq!(ctx.platform.sent_ms(REFRESH), vec![150_000, 300_000]);
    }

    #[test]
    fn attaching_to_a_sandbox_with_longer_left_never_shortens_it() {
        let ctx = ctx_with(ConfigInput {
            timeout_seconds: Some(300),
            sandbox_id: Some("sbx1".into()),
            ..Default::default()
        });
        // It has an hour left; our TTL is five minutes.
        let end = humantime::format_rfc3339(
            std::time::UNIX_EPOCH
                + std::time::Duration::from_nanos(WALL_START_NS + 3_600_000_000_000),
        );
        ctx.platform.route(
            "Get http://api.test/sandboxes/sbx1",
            vec![Answer::new(
                200,
                format!(r#"{{"sandboxID":"sbx1","state":"running","endAt":"{end}"}}"#),
            )],
        );
        ctx.platform.route(
            "Post http://api.test/v2/sandboxes/sbx1/connect",
            vec![Answer::new(
                200,
                r#"{"sandboxID":"sbx1","templateID":"t","clientID":"c","envdVersion":"0.6.13"}"#,
            )],
        );
        ctx.platform.route(START, vec![lasting(400_000)]);
        run(&ctx.platform.clock, execute(&ctx, command("make", Some(0)))).unwrap();
        // A refresh to 300 s from now would have cut its hour short.
        assert!(ctx.platform.sent_ms(REFRESH).is_empty());
        assert!(!ctx.snapshot().keep_alive.due(3_449_000_000_000));
        assert!(ctx.snapshot().keep_alive.due(3_451_000_000_000));
    }

    #[test]
    fn a_call_between_refreshes_refreshes_only_when_less_than_half_is_left() {
        let ctx = ctx(300);
        let mut steps = vec![started(7)];
        steps.extend(exited(0));
        ctx.platform.route(START, vec![Answer::steps(200, steps)]);
        run(&ctx.platform.clock, execute(&ctx, command("true", None))).unwrap();
        assert_eq!(ctx.platform.sent_ms(CREATE), vec![0]);
        assert!(ctx.platform.sent_ms(REFRESH).is_empty());
        // 149 s later: still more than half left.
        run(&ctx.platform.clock, async {
            ctx.platform.sleep_ns(149_000_000_000).await;
            execute(&ctx, command("true", None)).await
        })
        .unwrap();
        assert!(ctx.platform.sent_ms(REFRESH).is_empty());
        // 151 s after the creation: refreshed before the call.
        run(&ctx.platform.clock, async {
            ctx.platform.sleep_ns(2_000_000_000).await;
            execute(&ctx, command("true", None)).await
        })
        .unwrap();
        assert_eq!(ctx.platform.sent_ms(REFRESH), vec![151_000]);
    }

    #[test]
    fn a_busy_api_and_a_reset_listing_are_retried_with_backoff() {
        let ctx = ctx(300);
        ctx.platform.route(
            CREATE,
            vec![
                Answer::new(503, r#"{"code":503,"message":"busy"}"#),
                Answer::new(429, r#"{"code":429,"message":"slow down"}"#).header("retry-after", "2"),
                Answer::new(
                    201,
                    r#"{"sandboxID":"sbx1","templateID":"t","clientID":"c","envdVersion":"0.6.13"}"#,
                ),
            ],
        );
        let list = "Post http://sbx.test/filesystem.Filesystem/ListDir";
        ctx.platform.route(
            list,
            vec![Answer::reset(), Answer::new(200, r#"{"entries":[]}"#)],
        );
        let call = ToolCall::ListFiles {
            path: "/".into(),
            depth: 1,
        };
        run(&ctx.platform.clock, execute(&ctx, call)).unwrap();
        // 50 ms of backoff (the jitter is 0 here), then the Retry-After.
        assert_eq!(ctx.platform.sent_ms(CREATE), vec![0, 50, 2_050]);
        assert_eq!(ctx.platform.sent_ms(list), vec![2_050, 2_100]);
    }

    #[test]
    fn a_create_that_may_have_made_a_sandbox_is_not_retried() {
        let ctx = ctx(300);
        ctx.platform
            .route(CREATE, vec![Answer::new(502, "bad gateway")]);
        let err = run(&ctx.platform.clock, execute(&ctx, command("true", None))).unwrap_err();
        assert_eq!(err.kind, ErrorKind::SandboxUnavailable, "{err:?}");
        assert_eq!(ctx.platform.sent_ms(CREATE), vec![0]);
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
        let ToolOutput::Background(out) = out else {
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
        let ToolOutput::Background(out) = out else {
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
        let ToolOutput::Background(out) = out else {
            panic!("{out:?}")
        };
        assert_eq!((out.pid, out.readiness, out.exit_code), (5, None, None));
        // It watched for an early exit for one second.
        assert_eq!(ctx.platform.clock.now() / 1_000_000, 1_000);
    }

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
        assert!(!body.contains(crate::background::LOG_DIR), "{body}");
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
        assert!(body.contains(crate::background::LOG_DIR), "{body}");
        // The echo is still the model's command.
        let ToolOutput::Background(out) = out else {
            panic!("{out:?}")
        };
        assert_eq!(out.command, "serve");
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
        let ToolOutput::Command(out) = out else {
            panic!("{out:?}")
        };
        assert_eq!(out.stdout, "step 1\nstep 2 <redacted>\nstep 3\n");
        // Off (the default): nothing.
        let quiet = quiet_run();
        assert!(quiet.is_empty());
    }

    #[test]
    fn a_disabled_tool_is_refused_before_anything_is_sent() {
        let ctx = ctx(300);
        let call = ToolCall::StopBackground {
            pid: 5,
            signal: Default::default(),
        };
        let err = run(&ctx.platform.clock, execute(&ctx, call)).unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidArgument);
        assert!(
            err.message
                .contains("stop_background_command is not enabled")
                && err.message.contains("start_background_command"),
            "{}",
            err.message
        );
        assert!(ctx.platform.sent_ms(CREATE).is_empty());
    }

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
        let call = ToolCall::GetBackgroundOutput {
            pid: 42,
            since: crate::args::Offsets {
                stdout: 2,
                stderr: 0,
            },
        };
        let out = run(&ctx.platform.clock, execute(&ctx, call)).unwrap();
        let ToolOutput::ProcessOutput(out) = out else {
            panic!("{out:?}")
        };
        assert_eq!(out.stdout, "llo world");
        assert_eq!(out.next_since.stdout, 11);
        let body = &ctx.platform.bodies(START)[0];
        assert!(body.contains("background/42"), "{body}");
        // Read with the key's length but one of context either side.
        assert!(body.contains("local a=$(( $2 - 6 ))"), "{body}");
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
