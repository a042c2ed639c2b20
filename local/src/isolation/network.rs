//! A sandbox's network: its own network namespace (made by bubblewrap),
//! so its loopback is its own and the host's loopback services (this
//! server's control plane among them) are out of reach. Internet access,
//! when allowed, comes from `slirp4netns`, a user-mode TCP/IP stack on the
//! host side that forwards the sandbox's connections as ordinary sockets,
//! with `--disable-host-loopback` (its gateway never leads to the host's
//! `127.0.0.1`), in a sandbox and seccomp filter of its own.
//!
//! The server reaches a port inside a sandbox (a preview URL) by creating
//! the socket inside the sandbox's network namespace, never through the
//! host's loopback.

use std::io::Read;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::limits::find;

/// How long slirp4netns may take to say it is ready.
const READY_TIMEOUT: Duration = Duration::from_secs(5);

/// How sandboxes get to the internet on this machine, decided once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Internet {
    /// Through this `slirp4netns` binary.
    Slirp(PathBuf),
    /// Not at all, and why.
    Unavailable(String),
}

impl Internet {
    /// Finds slirp4netns and what it needs (`/dev/net/tun` openable by us).
    pub fn detect() -> Self {
        let Some(slirp) = find("slirp4netns") else {
            return Internet::Unavailable(
                "slirp4netns not found (apt-get install slirp4netns)".into(),
            );
        };
        match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/net/tun")
        {
            Ok(_) => Internet::Slirp(slirp),
            Err(e) => Internet::Unavailable(format!("/dev/net/tun: {e}")),
        }
    }

    /// For the server's startup line.
    pub fn describe(&self) -> String {
        match self {
            Internet::Slirp(_) => "own namespace each; internet through slirp4netns".into(),
            Internet::Unavailable(why) => format!("own namespace each; no internet ({why})"),
        }
    }

    /// Gives the network namespace of `pid` an `eth0` with a default route
    /// and DNS (10.0.2.3), and waits until it is up. The child lives as long
    /// as the returned handle; `userns` is joined first when the server is
    /// not root.
    pub fn attach(&self, pid: u32, join_userns: bool) -> std::io::Result<Child> {
        let Internet::Slirp(slirp) = self else {
            return Err(std::io::Error::other("no internet on this machine"));
        };
        let mut cmd = Command::new(slirp);
        // The ready byte comes on stdin (a pipe's write end): stdout and
        // stderr carry slirp4netns' chatter.
        cmd.args(["--configure", "--mtu=65520", "--disable-host-loopback"])
            .args(["--enable-sandbox", "--enable-seccomp", "--ready-fd=0"]);
        if join_userns {
            cmd.arg(format!("--userns-path=/proc/{pid}/ns/user"));
        }
        cmd.arg(pid.to_string()).arg("eth0");
        let (mut ready, ready_writer) = std::io::pipe()?;
        cmd.env_clear()
            .stdin(Stdio::from(ready_writer))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut child = cmd.spawn()?;
        // Our copy of the write end went with `cmd`'s stdin: only the child
        // holds it, so its death reads as EOF. A bounded wait on a thread.
        drop(cmd);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut b = [0u8; 1];
            let _ = tx.send(ready.read(&mut b).map(|n| n == 1 && b[0] == b'1'));
        });
        match rx.recv_timeout(READY_TIMEOUT) {
            Ok(Ok(true)) => Ok(child),
            other => {
                let _ = child.kill();
                let _ = child.wait();
                Err(std::io::Error::other(format!(
                    "slirp4netns did not come up: {other:?}"
                )))
            }
        }
    }
}

/// Connects to `127.0.0.1:port` inside the network namespace at `netns`
/// (`/proc/<pid>/ns/net`), from a short-lived thread that joins it: the
/// socket stays in that namespace. Needs root (`CAP_SYS_ADMIN` over the
/// namespace and our own).
pub fn connect_in(
    netns: &Path,
    port: u16,
    timeout: Duration,
) -> std::io::Result<std::net::TcpStream> {
    let ns = std::fs::File::open(netns)?;
    std::thread::scope(|s| {
        s.spawn(|| {
            rustix::thread::move_into_link_name_space(
                ns.as_fd(),
                Some(rustix::thread::LinkNameSpaceType::Network),
            )
            .map_err(std::io::Error::from)?;
            let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
            let stream = std::net::TcpStream::connect_timeout(&addr, timeout)?;
            stream.set_nodelay(true)?;
            Ok(stream)
        })
        .join()
        .unwrap_or_else(|_| Err(std::io::Error::other("connect thread panicked")))
    })
}

/// What the helper of [`connect_through`] runs: connect, hand the socket
/// over on stdin (a UNIX socket) with `SCM_RIGHTS`, exit.
const HAND_OVER_SCRIPT: &str = "import socket, sys\n\
s = socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=5)\n\
socket.send_fds(socket.socket(fileno=0), [b'1'], [s.fileno()])\n";

/// Connects to `127.0.0.1:port` inside a sandbox's network namespace
/// without privileges: `join` (nsenter joining every namespace of the
/// sandbox, so the helper has exactly a sandbox process's powers) runs
/// the sandbox's `python3`, which connects and passes the socket back.
/// What comes back is checked: a TCP socket connected to that port.
pub fn connect_through(
    mut join: Command,
    port: u16,
    timeout: Duration,
) -> std::io::Result<std::net::TcpStream> {
    use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
    let (ours, theirs) = std::os::unix::net::UnixStream::pair()?;
    ours.set_read_timeout(Some(timeout))?;
    join.args(["python3", "-c", HAND_OVER_SCRIPT, &port.to_string()])
        .env_clear()
        .env("PATH", super::SANDBOX_PATH)
        .stdin(Stdio::from(std::os::fd::OwnedFd::from(theirs)))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = join.spawn()?;
    drop(join);
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut cmsgs = RecvAncillaryBuffer::new(&mut space);
    let mut byte = [0u8; 1];
    let received = rustix::net::recvmsg(
        &ours,
        &mut [std::io::IoSliceMut::new(&mut byte)],
        &mut cmsgs,
        RecvFlags::CMSG_CLOEXEC,
    );
    let _ = child.kill();
    let _ = child.wait();
    received?;
    let fd = cmsgs
        .drain()
        .find_map(|m| match m {
            RecvAncillaryMessage::ScmRights(mut fds) => fds.next(),
            _ => None,
        })
        .ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "port not open")
        })?;
    // The helper runs among the sandbox's processes: trust nothing it sends.
    let stream = std::net::TcpStream::from(fd);
    let peer = stream.peer_addr()?;
    if peer != std::net::SocketAddr::from(([127, 0, 0, 1], port)) {
        return Err(std::io::Error::other(format!(
            "the helper connected to {peer}"
        )));
    }
    Ok(stream)
}
