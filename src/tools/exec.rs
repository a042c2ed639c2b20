//! What every tool's orchestration shares: starting a process through
//! envd and pumping its stream, running one of our scripts, deadlines,
//! progress reports, and the error body of a refused request.

use crate::config::Settings;
use crate::errors::{ErrorKind, Failure, DEADLINE_SUFFIX};
use crate::output::progress::{self, LatestLine};
use crate::output::redact::Secrets;
use crate::protocol::api::SandboxHandle;
use crate::protocol::envd::{self, ProcessStream, StartSpec};
use crate::session::platform::{Platform, ResponseBody};
use crate::session::Ctx;

/// Grace past a command's deadline before we stop waiting for envd's
/// own `deadline_exceeded`.
pub(crate) const DEADLINE_GRACE_MS: u64 = 2_000;
/// Largest error body read.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// A failure plus the output captured before it.
pub(crate) type OpError = (Failure, String);

/// A failure with no output captured.
pub(crate) fn plain(f: Failure) -> OpError {
    (f, String::new())
}

/// The body of a refused request, bounded.
pub(crate) async fn error_body(body: &mut impl ResponseBody) -> Vec<u8> {
    body.read_to_end(MAX_ERROR_BODY).await.unwrap_or_default()
}

/// envd's `deadline_exceeded`, when we stop waiting for it.
pub(crate) fn deadline_failure() -> Failure {
    Failure::new(
        ErrorKind::Timeout,
        format!("context deadline exceeded{DEADLINE_SUFFIX}"),
    )
}

/// Sends a Start request and checks its status.
pub(crate) async fn start<P: Platform>(
    ctx: &Ctx<P>,
    settings: &Settings,
    sandbox: &SandboxHandle,
    spec: &StartSpec,
) -> Result<P::Body, Failure> {
    let req = envd::start_request(settings, sandbox, spec);
    let mut resp = ctx.platform.send(&req, settings.request_timeout_ms).await?;
    if resp.status != 200 {
        let body = error_body(&mut resp.body).await;
        return Err(crate::errors::from_connect_http(resp.status, &body));
    }
    Ok(resp.body)
}

/// Feeds `stream` from `body` until `stop(stream)` or the body's end.
pub(crate) async fn pump(
    body: &mut impl ResponseBody,
    stream: &mut ProcessStream,
    stop: impl Fn(&ProcessStream) -> bool,
) -> Result<(), Failure> {
    pump_reporting(body, stream, stop, |_| {}).await
}

/// [`pump`], calling `report` with the stream's latest line after
/// every chunk.
pub(crate) async fn pump_reporting(
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
pub(crate) fn report_progress<P: Platform>(
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

/// Runs one of our scripts in the sandbox and returns its stdout (at
/// most `bound` bytes kept) once it exits 0.
pub(crate) async fn run_script<P: Platform>(
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
        0 => Ok(stream.out.stdout.finish()),
        code => Err(Failure::new(
            ErrorKind::Internal,
            format!(
                "the sandbox's process query failed (exit code {code}): {}",
                stream.out.stderr.finish()
            ),
        )),
    }
}
