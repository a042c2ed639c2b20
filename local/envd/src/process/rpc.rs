//! `process.Process` RPCs: Start, Connect, List, SendInput, StreamInput,
//! SendSignal, CloseStdin, Update.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::response::Response;
use axum::Extension;
use e2b_wire::connect::{Code, ConnectError};
use e2b_wire::process::{
    KeepAlive, ListResponse, ProcessEvent, ProcessEventMessage, ProcessSelector, SelectRequest,
    SendInputRequest, SendSignalRequest, Signal, StartEvent, StartRequest,
};
use http::HeaderMap;
use serde::Deserialize;
use tokio::sync::mpsc;

use super::pty;
use super::table::{InputError, ManagedProcess, Outcome, StreamItem};
use crate::connect_rpc::{self as rpc, StreamWriter};
use crate::context::Envd;
use crate::paths;

type Sbx = Extension<Arc<Envd>>;

fn not_found(sel: &ProcessSelector) -> ConnectError {
    match sel {
        ProcessSelector::Pid(pid) => {
            ConnectError::new(Code::NotFound, format!("process with pid {pid} not found"))
        }
        ProcessSelector::Tag(tag) => {
            ConnectError::new(Code::NotFound, format!("process with tag {tag} not found"))
        }
    }
}

fn find(sandbox: &Envd, sel: &ProcessSelector) -> Result<Arc<ManagedProcess>, ConnectError> {
    match sel {
        ProcessSelector::Pid(pid) => sandbox.processes.by_pid(*pid),
        ProcessSelector::Tag(tag) => sandbox.processes.by_tag(tag),
    }
    .ok_or_else(|| not_found(sel))
}

/// A running process (not one that already exited).
fn find_running(
    sandbox: &Envd,
    sel: &ProcessSelector,
) -> Result<Arc<ManagedProcess>, ConnectError> {
    let p = find(sandbox, sel)?;
    if p.finished() {
        return Err(not_found(sel));
    }
    Ok(p)
}

/// `Start`: runs a process; its lifetime is `Connect-Timeout-Ms`,
/// independent of this request.
pub async fn start(Extension(sandbox): Sbx, headers: HeaderMap, body: Body) -> Response {
    let req: StartRequest = match rpc::read_stream_request(&headers, body).await {
        Ok(r) => r,
        Err(e) => return rpc::stream_error(e),
    };
    let user = match rpc::user_from_headers(&headers) {
        Ok(u) => u,
        Err(e) => return rpc::stream_error(e),
    };
    let cwd_given = req.process.cwd.clone().unwrap_or_default();
    let cwd = paths::clean(&paths::absolutize(&cwd_given, user.home()));
    // Resolved inside the sandbox's root, as the files API resolves paths.
    if !sandbox.fs(user).is_dir(&cwd) {
        return rpc::stream_error(ConnectError::new(
            Code::InvalidArgument,
            format!("cwd '{cwd}' does not exist"),
        ));
    }
    let mut envs: BTreeMap<String, String> = sandbox.env_vars().clone();
    envs.extend(req.process.envs.clone());
    let terminal = match req.pty.as_ref().map(pty_config).transpose() {
        Ok(config) => match config.map(|c| pty::open(c.size)).transpose() {
            Ok(terminal) => terminal,
            Err(e) => {
                return rpc::stream_error(ConnectError::new(
                    Code::Internal,
                    format!("error starting pty: {e}"),
                ))
            }
        },
        Err(e) => return rpc::stream_error(e),
    };
    // On a terminal the program leads a session of its own with the
    // terminal as its controlling one (util-linux `setsid --ctty`).
    let (program, args) = match &terminal {
        Some(_) => (
            "setsid".to_string(),
            [
                vec!["--ctty".to_string(), req.process.cmd.clone()],
                req.process.args.clone(),
            ]
            .concat(),
        ),
        None => (req.process.cmd.clone(), req.process.args.clone()),
    };
    let mut cmd = match sandbox.command(&program, &args, &cwd, &envs, user) {
        Ok(cmd) => cmd,
        Err(e) => {
            return rpc::stream_error(ConnectError::new(
                Code::FailedPrecondition,
                format!("error starting process '{}': {e}", req.process.cmd),
            ))
        }
    };
    let spawned = match &terminal {
        Some(pair) => {
            let end = || pair.slave.try_clone().map(Stdio::from);
            match (end(), end(), end()) {
                (Ok(stdin), Ok(stdout), Ok(stderr)) => {
                    cmd.stdin(stdin).stdout(stdout).stderr(stderr);
                    cmd.spawn()
                }
                (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => Err(e),
            }
        }
        None => {
            // Its own group: a signal reaches what it starts in the foreground.
            cmd.process_group(0);
            let keep_stdin = req.stdin.unwrap_or(false);
            cmd.stdin(if keep_stdin {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
            cmd.spawn()
        }
    };
    // Our copies of the terminal's slave end go now: the master reads EOF
    // (EIO) once the process and its children close theirs.
    drop(cmd);
    let master = terminal.map(|pair| pair.master);
    let child = match spawned {
        Ok(c) => c,
        Err(e) => {
            return rpc::stream_error(ConnectError::new(
                Code::Internal,
                format!("error starting process '{}': {e}", req.process.cmd),
            ))
        }
    };
    let deadline = rpc::timeout_header(&headers).map(|d| Instant::now() + d);
    let pid = child.id().unwrap_or(0);
    let (proc, rx) = sandbox
        .processes
        .adopt(child, pid, req.process, req.tag, deadline, master);
    let (writer, resp) = rpc::stream_response();
    let keepalive = rpc::keepalive_header(&headers);
    tokio::spawn(pump_events(writer, proc.pid, rx, keepalive, None));
    resp
}

/// `Connect`: attaches to a running process (or replays `start` + `end` of
/// one that exited recently). Its deadline ends only this stream.
pub async fn connect(Extension(sandbox): Sbx, headers: HeaderMap, body: Body) -> Response {
    let req: SelectRequest = match rpc::read_stream_request(&headers, body).await {
        Ok(r) => r,
        Err(e) => return rpc::stream_error(e),
    };
    let proc = match find(&sandbox, &req.process) {
        Ok(p) => p,
        Err(e) => return rpc::stream_error(e),
    };
    let rx = proc.attach();
    let (writer, resp) = rpc::stream_response();
    let keepalive = rpc::keepalive_header(&headers);
    let deadline = rpc::timeout_header(&headers).map(|d| Instant::now() + d);
    tokio::spawn(pump_events(writer, proc.pid, rx, keepalive, deadline));
    resp
}

/// Writes `start`, then data/keepalive events, then `end` and the
/// end-stream envelope. Stops early (the process lives on) when the client
/// goes away.
async fn pump_events(
    writer: StreamWriter,
    pid: u32,
    mut rx: mpsc::Receiver<StreamItem>,
    keepalive: Duration,
    deadline: Option<Instant>,
) {
    let event = |e: ProcessEvent| ProcessEventMessage { event: e };
    if !writer
        .send(&event(ProcessEvent::Start(StartEvent { pid })))
        .await
    {
        return;
    }
    let deadline_sleep = async {
        match deadline {
            Some(d) => tokio::time::sleep_until(d.into()).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(deadline_sleep);
    loop {
        let item = tokio::select! {
            item = tokio::time::timeout(keepalive, rx.recv()) => item,
            _ = &mut deadline_sleep => {
                writer.end(Some(deadline_exceeded())).await;
                return;
            }
        };
        match item {
            Err(_) => {
                if !writer
                    .send(&event(ProcessEvent::Keepalive(KeepAlive {})))
                    .await
                {
                    return;
                }
            }
            Ok(Some(StreamItem::Data(data))) => {
                if !writer.send(&event(ProcessEvent::Data(data))).await {
                    return;
                }
            }
            Ok(Some(StreamItem::Finished(Outcome::Ended(end)))) => {
                if writer.send(&event(ProcessEvent::End(end))).await {
                    writer.end(None).await;
                }
                return;
            }
            Ok(Some(StreamItem::Finished(Outcome::DeadlineExceeded))) => {
                // envd's request context expires with the process: no `end`.
                writer.end(Some(deadline_exceeded())).await;
                return;
            }
            // The sandbox died or paused under the stream: the client sees
            // the connection drop, as behind E2B's proxy.
            Ok(Some(StreamItem::Finished(Outcome::SandboxGone))) | Ok(None) => {
                writer.abort().await;
                return;
            }
        }
    }
}

fn deadline_exceeded() -> ConnectError {
    ConnectError::new(Code::DeadlineExceeded, "context deadline exceeded")
}

/// `List`: the running processes.
pub async fn list(Extension(sandbox): Sbx, headers: HeaderMap, body: Body) -> Response {
    #[derive(Deserialize)]
    struct ListRequest {}
    rpc::unary(
        async {
            let _: ListRequest = rpc::read_unary(&headers, body).await?;
            Ok(ListResponse {
                processes: sandbox.processes.list().iter().map(|p| p.info()).collect(),
            })
        }
        .await,
    )
}

/// `SendInput`: bytes to a process's stdin.
pub async fn send_input(Extension(sandbox): Sbx, headers: HeaderMap, body: Body) -> Response {
    rpc::unary(
        async {
            let req: SendInputRequest = rpc::read_unary(&headers, body).await?;
            let proc = find_running(&sandbox, &req.process)?;
            let data = req.input.stdin.or(req.input.pty).unwrap_or_default();
            proc.write_stdin(&data).await.map_err(input_error)?;
            Ok(serde_json::json!({}))
        }
        .await,
    )
}

/// `SendSignal`: SIGTERM or SIGKILL.
pub async fn send_signal(Extension(sandbox): Sbx, headers: HeaderMap, body: Body) -> Response {
    rpc::unary(
        async {
            let req: SendSignalRequest = rpc::read_unary(&headers, body).await?;
            let proc = find_running(&sandbox, &req.process)?;
            let sig = match req.signal {
                Signal::Sigkill => libc::SIGKILL,
                Signal::Sigterm => libc::SIGTERM,
                Signal::Unspecified => {
                    return Err(ConnectError::new(Code::InvalidArgument, "invalid signal"))
                }
            };
            proc.signal(sig);
            Ok(serde_json::json!({}))
        }
        .await,
    )
}

/// `CloseStdin`.
pub async fn close_stdin(Extension(sandbox): Sbx, headers: HeaderMap, body: Body) -> Response {
    rpc::unary(
        async {
            let req: SelectRequest = rpc::read_unary(&headers, body).await?;
            find_running(&sandbox, &req.process)?.close_stdin().await;
            Ok(serde_json::json!({}))
        }
        .await,
    )
}

/// `Update`: resizes a PTY process's terminal.
pub async fn update(Extension(sandbox): Sbx, headers: HeaderMap, body: Body) -> Response {
    #[derive(Deserialize)]
    struct UpdateRequest {
        process: ProcessSelector,
        #[serde(default)]
        pty: Option<serde_json::Value>,
    }
    rpc::unary(
        async {
            let req: UpdateRequest = rpc::read_unary(&headers, body).await?;
            let proc = find_running(&sandbox, &req.process)?;
            let size = req
                .pty
                .as_ref()
                .map(pty_config)
                .transpose()?
                .and_then(|c| c.size);
            if let Some(size) = size {
                match proc.resize(size) {
                    Some(Ok(())) => {}
                    Some(Err(e)) => {
                        return Err(ConnectError::new(
                            Code::InvalidArgument,
                            format!("error resizing pty: {e}"),
                        ))
                    }
                    None => {
                        return Err(ConnectError::new(
                            Code::FailedPrecondition,
                            "the process was not started with a pty",
                        ))
                    }
                }
            }
            Ok(serde_json::json!({}))
        }
        .await,
    )
}

/// A request's `pty` field.
fn pty_config(value: &serde_json::Value) -> Result<pty::PtyConfig, ConnectError> {
    serde_json::from_value(value.clone())
        .map_err(|e| ConnectError::new(Code::InvalidArgument, format!("invalid pty: {e}")))
}

/// One message of `StreamInput`: the process first, then its input.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
enum StreamInputEvent {
    Start {
        process: ProcessSelector,
    },
    Data {
        input: e2b_wire::process::ProcessInput,
    },
    Keepalive {},
}

/// `StreamInput`: a client stream naming a process, then input for its
/// stdin (or terminal), each written as it arrives; answered with one
/// empty message when the client ends the stream.
pub async fn stream_input(Extension(sandbox): Sbx, headers: HeaderMap, body: Body) -> Response {
    use futures_util::StreamExt;
    if let Err(e) = rpc::require_stream(&headers) {
        return rpc::stream_error(e);
    }
    let outcome = async {
        let mut chunks = body.into_data_stream();
        let mut decoder = e2b_wire::connect::EnvelopeDecoder::new(rpc::RPC_BODY_LIMIT);
        let mut target: Option<Arc<ManagedProcess>> = None;
        loop {
            while let Some(envelope) = decoder
                .next_envelope()
                .map_err(|e| ConnectError::new(Code::InvalidArgument, e.to_string()))?
            {
                if envelope.flags & e2b_wire::connect::FLAG_END_STREAM != 0 {
                    return Ok(());
                }
                // proto3 JSON: the oneof's one field names the event.
                match rpc::decode_message::<StreamInputEvent>(&envelope.payload)? {
                    StreamInputEvent::Start { process } => {
                        target = Some(find_running(&sandbox, &process)?);
                    }
                    StreamInputEvent::Data { input } => {
                        let proc = target.as_ref().ok_or_else(|| {
                            ConnectError::new(Code::InvalidArgument, "input before the start event")
                        })?;
                        let data = input.stdin.or(input.pty).unwrap_or_default();
                        proc.write_stdin(&data).await.map_err(input_error)?;
                    }
                    StreamInputEvent::Keepalive {} => {}
                }
            }
            match chunks.next().await {
                Some(Ok(chunk)) => decoder.push(&chunk),
                Some(Err(e)) => {
                    return Err(ConnectError::new(
                        Code::Canceled,
                        format!("reading the request body: {e}"),
                    ))
                }
                // connect-python ends a client stream with the body alone.
                None => return Ok(()),
            }
        }
    }
    .await;
    let (writer, resp) = rpc::stream_response();
    tokio::spawn(async move {
        match outcome {
            Ok(()) => {
                if writer.send(&serde_json::json!({})).await {
                    writer.end(None).await;
                }
            }
            Err(e) => writer.end(Some(e)).await,
        }
    });
    resp
}

fn input_error(e: InputError) -> ConnectError {
    match e {
        InputError::StdinClosed => ConnectError::new(
            Code::FailedPrecondition,
            "stdin of the process is not open (start it with stdin enabled)",
        ),
        InputError::Io(e) => {
            ConnectError::new(Code::Internal, format!("error writing to stdin: {e}"))
        }
    }
}
