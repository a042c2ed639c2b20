//! A sandbox's network: its own network namespace (made by bubblewrap),
//! so its loopback is its own and the host's loopback services (this
//! server's control plane among them) are out of reach. Internet access,
//! when allowed, comes from `slirp4netns`, a user-mode TCP/IP stack on the
//! host side that forwards the sandbox's connections as ordinary sockets,
//! with `--disable-host-loopback` (its gateway never leads to the host's
//! `127.0.0.1`), in a sandbox and seccomp filter of its own.
//!
//! The server never opens a socket in that namespace: envd, inside,
//! joins the connections the edge hands it to the sandbox's ports.

use std::io::Read;
use std::path::PathBuf;
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
    /// Finds slirp4netns and what it needs: `/dev/net/tun` openable by the
    /// uid slirp4netns runs as, a sandbox's (so, on a server run as root,
    /// by any uid: `crw-rw-rw-`, as udev makes it) or the server's own.
    pub fn detect(privileged: bool) -> Self {
        let Some(slirp) = find("slirp4netns") else {
            return Internet::Unavailable(
                "slirp4netns not found (apt-get install slirp4netns)".into(),
            );
        };
        if privileged {
            use std::os::unix::fs::PermissionsExt;
            return match std::fs::metadata("/dev/net/tun") {
                Ok(m) if m.permissions().mode() & 0o006 == 0o006 => Internet::Slirp(slirp),
                Ok(_) => Internet::Unavailable(
                    "/dev/net/tun is not open to unprivileged uids, and slirp4netns runs as \
                     the sandbox's: `chmod 0666 /dev/net/tun` (udev's default) gives \
                     sandboxes internet"
                        .into(),
                ),
                Err(e) => Internet::Unavailable(format!("/dev/net/tun: {e}")),
            };
        }
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

    /// Gives the network namespace of `pid` an `eth0` with a default route and DNS (10.0.2.3), and
    /// waits until it is up. slirp4netns runs as `owner` (the namespace's
    /// owner, when the server is root; else as the server) and joins the
    /// user namespace, so it holds no host privilege. The child lives as
    /// long as the returned handle.
    pub fn attach(&self, pid: u32, owner: Option<(u32, u32)>) -> std::io::Result<Child> {
        let Internet::Slirp(slirp) = self else {
            return Err(std::io::Error::other("no internet on this machine"));
        };
        let mut cmd = Command::new(slirp);
        // The ready byte comes on stdin (a pipe's write end): stdout and
        // stderr carry slirp4netns' chatter.
        cmd.args(["--configure", "--mtu=65520", "--disable-host-loopback"])
            .args(["--enable-sandbox", "--enable-seccomp", "--ready-fd=0"]);
        cmd.arg(format!("--userns-path=/proc/{pid}/ns/user"));
        if let Some((uid, gid)) = owner {
            use std::os::unix::process::CommandExt;
            cmd.uid(uid).gid(gid);
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
