//! The control socket ([`e2b_wire::envd_setup`]): the configuration, then
//! one connection after another from the edge, each served here or joined
//! to a port a sandbox program listens on.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use e2b_wire::envd_setup::{self, EnvdConfig, MAX_CONFIG_BYTES, PORT_CLOSED, PORT_OPEN};
use e2b_wire::{ENVD_PORT, INTERPRETER_PORT};
use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
use tokio::io::unix::AsyncFd;
use tokio::io::AsyncWriteExt;
use tokio::net::UnixStream;

use crate::context::Envd;

/// How long joining a connection to a sandbox port may take.
const DIAL_TIMEOUT: Duration = Duration::from_secs(5);

/// Reads the configuration, the control socket's first message.
pub fn read_config(control: &OwnedFd) -> io::Result<EnvdConfig> {
    let mut buf = vec![0u8; MAX_CONFIG_BYTES];
    let n = rustix::net::recv(control, &mut buf, RecvFlags::empty())?.0;
    serde_json::from_slice(&buf[..n.min(buf.len())])
        .map_err(|e| io::Error::other(format!("bad configuration: {e}")))
}

/// One message: a port and the connection that goes with it.
fn receive(control: &impl AsFd) -> io::Result<Option<(u16, OwnedFd)>> {
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut cmsgs = RecvAncillaryBuffer::new(&mut space);
    let mut message = [0u8; 8];
    let received = rustix::net::recvmsg(
        control,
        &mut [io::IoSliceMut::new(&mut message)],
        &mut cmsgs,
        RecvFlags::CMSG_CLOEXEC | RecvFlags::DONTWAIT,
    )?;
    if received.bytes == 0 {
        return Ok(None);
    }
    let fd = cmsgs.drain().find_map(|m| match m {
        RecvAncillaryMessage::ScmRights(mut fds) => fds.next(),
        _ => None,
    });
    match (envd_setup::decode_port(&message[..received.bytes]), fd) {
        (Some(port), Some(fd)) => Ok(Some((port, fd))),
        _ => Err(io::Error::other("malformed control message")),
    }
}

/// Serves `envd`'s connections until the server closes the control
/// socket, then ends every process.
pub async fn serve(control: OwnedFd, envd: Arc<Envd>) -> io::Result<()> {
    let envd_routes = crate::api::router().layer(axum::Extension(Arc::clone(&envd)));
    let interpreter_routes =
        crate::interpreter::router().layer(axum::Extension(envd.interpreter()));
    rustix::io::ioctl_fionbio(&control, true)?;
    let control = register(control)?;
    loop {
        let mut ready = control.readable().await?;
        let message = match ready.try_io(receive) {
            Ok(message) => message,
            Err(_would_block) => continue,
        };
        let (port, fd) = match message {
            Ok(Some(message)) => message,
            Ok(None) => break,
            // A control message envd cannot use: the server's bug, never
            // the sandbox's; skip it.
            Err(e) => {
                say(&e);
                continue;
            }
        };
        let stream = match into_stream(fd) {
            Ok(stream) => stream,
            Err(e) => {
                say(&e);
                continue;
            }
        };
        let routes = match port {
            ENVD_PORT => Some(envd_routes.clone()),
            INTERPRETER_PORT => Some(interpreter_routes.clone()),
            _ => None,
        };
        tokio::spawn(async move {
            match routes {
                Some(routes) => serve_http(stream, routes).await,
                None => join_port(stream, port).await,
            }
        });
    }
    envd.shut_down().await;
    Ok(())
}

/// A socket (the control socket, `sudo`'s), registered with the reactor
/// for reading.
#[allow(unsafe_code)]
pub fn register(control: OwnedFd) -> io::Result<AsyncFd<OwnedFd>> {
    // SAFETY: the registration owns the fd: it stays open, and the same
    // file, until it is deregistered (when the `AsyncFd` drops).
    unsafe { AsyncFd::register_with_interest(control, tokio::io::Interest::READABLE) }
        .map_err(io::Error::from)
}

/// A line on envd's stderr, which nobody may be reading once it serves
/// (a failed write is no reason to stop).
pub fn say(what: &dyn std::fmt::Display) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "envd: {what}");
}

fn into_stream(fd: OwnedFd) -> io::Result<UnixStream> {
    let stream = std::os::unix::net::UnixStream::from(fd);
    stream.set_nonblocking(true)?;
    UnixStream::from_std(stream)
}

/// envd's own protocol (or the interpreter's) on one connection.
async fn serve_http(mut stream: UnixStream, routes: Router) {
    if stream.write_all(&[PORT_OPEN]).await.is_err() {
        return;
    }
    let service = hyper_util::service::TowerToHyperService::new(routes);
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
        .await;
}

/// Joins the connection to `port` on the sandbox's own loopback.
async fn join_port(mut stream: UnixStream, port: u16) {
    let dial = tokio::net::TcpStream::connect(("127.0.0.1", port));
    let mut upstream = match tokio::time::timeout(DIAL_TIMEOUT, dial).await {
        Ok(Ok(upstream)) => upstream,
        _ => {
            let _ = stream.write_all(&[PORT_CLOSED]).await;
            return;
        }
    };
    let _ = upstream.set_nodelay(true);
    if stream.write_all(&[PORT_OPEN]).await.is_ok() {
        let _ = tokio::io::copy_bidirectional(&mut stream, &mut upstream).await;
    }
}
