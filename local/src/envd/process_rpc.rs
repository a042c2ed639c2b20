//! `process.Process` RPCs: Start, Connect, List, SendInput, SendSignal,
//! CloseStdin, Update.

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

use super::processes::{ManagedProcess, Outcome, StreamItem};
use super::rpc::{self, StreamWriter};
use super::sandbox_fs;
use crate::paths;
use crate::sandbox::Sandbox;

type Sbx = Extension<Arc<Sandbox>>;

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

fn find(sandbox: &Sandbox, sel: &ProcessSelector) -> Result<Arc<ManagedProcess>, ConnectError> {
    match sel {
        ProcessSelector::Pid(pid) => sandbox.processes.by_pid(*pid),
        ProcessSelector::Tag(tag) => sandbox.processes.by_tag(tag),
    }
    .ok_or_else(|| not_found(sel))
}

/// A running process (not one that already exited).
fn find_running(
    sandbox: &Sandbox,
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
    let cwd = paths::clean(&paths::absolutize(&cwd_given));
    // Resolved inside the sandbox's root, as the files API resolves paths.
    let cwd_is_dir = match sandbox_fs::for_sandbox(&sandbox, user) {
        Ok(fs) => fs.is_dir(&cwd),
        Err(e) => {
            return rpc::stream_error(ConnectError::new(
                Code::Unavailable,
                format!("error starting process '{}': {}", req.process.cmd, e.kind),
            ))
        }
    };
    if !cwd_is_dir {
        return rpc::stream_error(ConnectError::new(
            Code::InvalidArgument,
            format!("cwd '{cwd}' does not exist"),
        ));
    }
    let mut envs: BTreeMap<String, String> = sandbox.env_vars().clone();
    envs.extend(req.process.envs.clone());
    let mut cmd =
        match sandbox
            .runner
            .command(&req.process.cmd, &req.process.args, &cwd, &envs, user)
        {
            Ok(cmd) => cmd,
            Err(e) => {
                return rpc::stream_error(ConnectError::new(
                    Code::FailedPrecondition,
                    format!("error starting process '{}': {e}", req.process.cmd),
                ))
            }
        };
    // No real terminal: a PTY request gets its output as `pty` data and its
    // input through stdin.
    let pty = req.pty.is_some();
    let keep_stdin = req.stdin.unwrap_or(false) || pty;
    cmd.stdin(if keep_stdin {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return rpc::stream_error(ConnectError::new(
                Code::Internal,
                format!("error starting process '{}': {e}", req.process.cmd),
            ))
        }
    };
    let deadline = rpc::timeout_header(&headers).map(|d| Instant::now() + d);
    let host_pid = child.id().unwrap_or(0);
    let pid = sandbox
        .runner
        .sandbox_pid(host_pid)
        .await
        .unwrap_or(host_pid);
    let (proc, rx) = sandbox
        .processes
        .adopt(child, pid, req.process, req.tag, deadline, pty);
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
            proc.write_stdin(&data).await.map_err(|e| match e {
                super::processes::InputError::StdinClosed => ConnectError::new(
                    Code::FailedPrecondition,
                    "stdin of the process is not open (start it with stdin enabled)",
                ),
                super::processes::InputError::Io(e) => {
                    ConnectError::new(Code::Internal, format!("error writing to stdin: {e}"))
                }
            })?;
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

/// `Update` (PTY resize): accepted, nothing to resize without a PTY.
pub async fn update(Extension(sandbox): Sbx, headers: HeaderMap, body: Body) -> Response {
    rpc::unary(
        async {
            let req: SelectRequest = rpc::read_unary(&headers, body).await?;
            find_running(&sandbox, &req.process)?;
            Ok(serde_json::json!({}))
        }
        .await,
    )
}
