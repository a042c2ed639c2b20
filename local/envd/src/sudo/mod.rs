//! The sandbox's `sudo`: E2B's templates give `user` passwordless `sudo`,
//! and here it maps to the sandbox's own root (its user namespace's uid 0,
//! never host root).
//!
//! A setuid `sudo` cannot work in a sandbox (bubblewrap sets
//! `no_new_privs`, and the host's binary is not the sandbox's to trust), so
//! envd does it: the orchestrator binds envd's binary at
//! [`SUDO_PATH`](e2b_wire::envd_setup::SUDO_PATH), first on every `PATH`,
//! and called by that name it is a client ([`client`]) that hands its
//! command line, working directory, environment and its stdin, stdout and
//! stderr to envd over an abstract `SOCK_SEQPACKET` socket in the
//! sandbox's network namespace (so no other sandbox and nothing on the host
//! can reach it). envd ([`server`]) asks the kernel who called
//! (`SO_PEERCRED`), builds the command's environment by Debian's rules
//! ([`environment`]: `env_reset`, `secure_path`), starts it as the target
//! user with the caller's own descriptors, forwards the signals the client
//! gets, and answers how it ended; a client that dies takes the command
//! with it. All of it happens inside the sandbox: the host side is not
//! involved.

pub mod client;
pub mod environment;
pub mod invocation;
pub mod server;

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, ReturnFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};

/// The abstract socket envd listens on (per network namespace: each
/// sandbox has its own).
pub const SOCKET_NAME: &[u8] = b"e2b-envd-sudo";

/// The largest message (a request's command line and environment).
pub const MAX_MESSAGE: usize = 128 << 10;

/// The descriptors a request carries: stdin, stdout, stderr.
pub const STDIO_FDS: usize = 3;

/// Sends `message` as one JSON datagram, with `fds` attached.
pub fn send<T: serde::Serialize>(
    socket: impl AsFd,
    message: &T,
    fds: &[BorrowedFd<'_>],
) -> io::Result<()> {
    let bytes = serde_json::to_vec(message).map_err(io::Error::other)?;
    if bytes.len() > MAX_MESSAGE {
        return Err(io::Error::other(format!(
            "the command line and environment are too large ({} bytes, at most {MAX_MESSAGE})",
            bytes.len()
        )));
    }
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(STDIO_FDS))];
    let mut cmsgs = SendAncillaryBuffer::new(&mut space);
    if !fds.is_empty() && !cmsgs.push(SendAncillaryMessage::ScmRights(fds)) {
        return Err(io::Error::other("too many descriptors"));
    }
    rustix::net::sendmsg(
        socket,
        &[io::IoSlice::new(&bytes)],
        &mut cmsgs,
        SendFlags::NOSIGNAL,
    )?;
    Ok(())
}

/// Receives one JSON datagram and at most [`STDIO_FDS`] descriptors;
/// `None` when the peer closed. A datagram that is too long or not `T`
/// is an error (its descriptors are closed).
pub fn receive<T: serde::de::DeserializeOwned>(
    socket: impl AsFd,
    flags: RecvFlags,
) -> io::Result<Option<(T, Vec<OwnedFd>)>> {
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(STDIO_FDS))];
    let mut cmsgs = RecvAncillaryBuffer::new(&mut space);
    let mut buf = vec![0u8; MAX_MESSAGE];
    let received = rustix::net::recvmsg(
        socket,
        &mut [io::IoSliceMut::new(&mut buf)],
        &mut cmsgs,
        flags | RecvFlags::CMSG_CLOEXEC,
    )?;
    let fds: Vec<OwnedFd> = cmsgs
        .drain()
        .flat_map(|m| match m {
            RecvAncillaryMessage::ScmRights(fds) => fds.collect(),
            _ => Vec::new(),
        })
        .collect();
    if received.bytes == 0 && fds.is_empty() {
        return Ok(None);
    }
    if received
        .flags
        .intersects(ReturnFlags::TRUNC | ReturnFlags::CTRUNC)
    {
        return Err(io::Error::other("a message too large"));
    }
    let message = serde_json::from_slice(&buf[..received.bytes])
        .map_err(|e| io::Error::other(format!("a malformed message: {e}")))?;
    Ok(Some((message, fds)))
}

/// The abstract address of [`SOCKET_NAME`].
fn address() -> io::Result<rustix::net::SocketAddrUnix> {
    Ok(rustix::net::SocketAddrUnix::new_abstract_name(SOCKET_NAME)?)
}
