//! envd's side of `sudo`: it listens on the sandbox's abstract socket,
//! runs each request's command as the target user with the caller's
//! descriptors, forwards the caller's signals, and answers how it ended.

use std::io;
use std::os::fd::OwnedFd;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use rustix::net::{AddressFamily, RecvFlags, SocketFlags, SocketType};
use tokio::io::unix::AsyncFd;
use tokio::process::Child;

use super::environment::{self, Caller};
use super::invocation::{Forward, Reply, Request};
use super::STDIO_FDS;
use crate::context::Envd;
use crate::control::{register, say};

/// How long a client may take to send its request once connected.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves `sudo` requests until envd ends. A sandbox whose socket cannot
/// be made has no `sudo` (said on envd's stderr); everything else works.
pub async fn serve(envd: Arc<Envd>) {
    let listener = match listen() {
        Ok(listener) => listener,
        Err(e) => return say(&format!("no sudo in this sandbox: {e}")),
    };
    loop {
        let Ok(mut ready) = listener.readable().await else {
            return;
        };
        let accepted = ready.try_io(|fd| {
            rustix::net::accept_with(fd, SocketFlags::CLOEXEC | SocketFlags::NONBLOCK)
                .map_err(io::Error::from)
        });
        match accepted {
            Ok(Ok(conn)) => {
                tokio::spawn(session(Arc::clone(&envd), conn));
            }
            // Out of descriptors, say: let the sandbox free some.
            Ok(Err(_)) => tokio::time::sleep(Duration::from_millis(50)).await,
            Err(_would_block) => {}
        }
    }
}

fn listen() -> io::Result<AsyncFd<OwnedFd>> {
    let fd = rustix::net::socket_with(
        AddressFamily::UNIX,
        SocketType::SEQPACKET,
        SocketFlags::CLOEXEC | SocketFlags::NONBLOCK,
        None,
    )?;
    rustix::net::bind(&fd, &super::address()?)?;
    rustix::net::listen(&fd, 64)?;
    register(fd)
}

/// One client: its request, its command, its signals, the answer.
async fn session(envd: Arc<Envd>, conn: OwnedFd) {
    let Ok(conn) = register(conn) else {
        return;
    };
    // The kernel's word on who called; the request's is never asked.
    let caller = match rustix::net::sockopt::socket_peercred(conn.get_ref()) {
        Ok(cred) => Caller {
            uid: cred.uid.as_raw(),
            gid: cred.gid.as_raw(),
        },
        Err(_) => return,
    };
    let first = tokio::time::timeout(REQUEST_TIMEOUT, next::<Request>(&conn)).await;
    let reply = match first {
        Ok(Ok(Some((req, fds)))) => match start(&envd, &req, fds, caller) {
            Ok(child) => match supervise(child, &conn, &envd).await {
                Some(reply) => reply,
                // The client is gone: nobody to answer.
                None => return,
            },
            Err(message) => Reply::Failed(message),
        },
        Ok(Ok(None)) | Err(_) => return,
        Ok(Err(e)) => Reply::Failed(format!("sudo: {e}")),
    };
    let _ = super::send(conn.get_ref(), &reply, &[]);
}

/// The next message on `conn`.
async fn next<T: serde::de::DeserializeOwned>(
    conn: &AsyncFd<OwnedFd>,
) -> io::Result<Option<(T, Vec<OwnedFd>)>> {
    loop {
        let mut ready = conn.readable().await?;
        match ready.try_io(|fd| super::receive(fd, RecvFlags::DONTWAIT)) {
            Ok(result) => return result,
            Err(_would_block) => continue,
        }
    }
}

/// Starts the command with the caller's stdin, stdout and stderr.
fn start(envd: &Envd, req: &Request, fds: Vec<OwnedFd>, caller: Caller) -> Result<Child, String> {
    let Ok::<[OwnedFd; STDIO_FDS], _>([stdin, stdout, stderr]) = fds.try_into() else {
        return Err("sudo: the request did not carry stdin, stdout and stderr".into());
    };
    let mut command = environment::command(req, caller, envd.path(), envd.home())?;
    if !std::path::Path::new(&command.cwd).is_dir() {
        command.cwd = "/".into();
    }
    let mut cmd = envd
        .command(
            &command.program,
            &command.args,
            &command.cwd,
            &command.env,
            command.who,
        )
        .map_err(|e| format!("sudo: {e}"))?;
    // Its own group, which a signal for the command reaches whole.
    cmd.process_group(0)
        .stdin(Stdio::from(stdin))
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::from(stderr));
    cmd.spawn().map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => format!("sudo: {}: command not found", command.program),
        _ => format!("sudo: unable to execute {}: {e}", command.program),
    })
}

/// Waits for the command while forwarding the client's signals. `None`
/// when the client went away first (the command is killed then, as it
/// is when envd ends).
async fn supervise(mut child: Child, conn: &AsyncFd<OwnedFd>, envd: &Envd) -> Option<Reply> {
    let pid = child.id()?;
    let mut gone = envd.gone();
    loop {
        tokio::select! {
            status = child.wait() => {
                use std::os::unix::process::ExitStatusExt;
                let status = status.ok()?;
                return Some(match (status.code(), status.signal()) {
                    (Some(code), _) => Reply::Exited(code),
                    (None, Some(signal)) => Reply::Signaled(signal),
                    (None, None) => Reply::Failed("sudo: the command ended oddly".into()),
                });
            }
            message = next::<Forward>(conn) => match message {
                Ok(Some((forward, _))) => crate::process::signal_group(pid, forward.signal),
                // A malformed message, or the client closed: it is gone.
                Ok(None) | Err(_) => break,
            },
            _ = gone.wait_for(|g| *g) => break,
        }
    }
    crate::process::signal_group(pid, libc::SIGKILL);
    let _ = child.wait().await;
    None
}
