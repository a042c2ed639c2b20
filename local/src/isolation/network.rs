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
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::Duration;

use super::limits::find;
use super::spawn::HostCommand;

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
    /// Finds slirp4netns and what it needs. On a server run as root,
    /// slirp4netns runs as a sandbox's root uid, with a `/dev/net/tun` of
    /// its own, open to it, in a mount namespace of its own (see
    /// `HostCommand::private_tun`), whatever the host's node allows:
    /// tried here once. A server run as an ordinary user gives none:
    /// slirp4netns (1.2) must become root in the user namespace of the
    /// sandbox it serves, and that namespace maps only the server's uid,
    /// as `user`.
    pub fn detect(privileged: bool) -> Self {
        let Some(slirp) = find("slirp4netns") else {
            return Internet::Unavailable(
                "slirp4netns not found (apt-get install slirp4netns)".into(),
            );
        };
        if !privileged {
            return Internet::Unavailable(
                "slirp4netns must be root in the sandbox's user namespace, which a server run \
                 as an ordinary user cannot give it: run the server as root for internet"
                    .into(),
            );
        }
        match private_tun_opens() {
            Ok(()) => Internet::Slirp(slirp),
            Err(e) => Internet::Unavailable(format!("/dev/net/tun: {e}")),
        }
    }

    /// Why sandboxes get no internet here, if they do not.
    pub fn missing(&self) -> Option<&str> {
        match self {
            Internet::Slirp(_) => None,
            Internet::Unavailable(why) => Some(why),
        }
    }

    /// For the server's startup line.
    pub fn describe(&self) -> String {
        match self {
            Internet::Slirp(_) => "own namespace each; internet through slirp4netns".into(),
            Internet::Unavailable(why) => format!("own namespace each; no internet ({why})"),
        }
    }

    /// Gives the network namespace of `pid` an `eth0` with a default
    /// route and DNS (10.0.2.3), and waits until it is up. slirp4netns
    /// runs as `owner` (the namespace's owner: the sandbox's root) and
    /// joins the user namespace, so it holds no host privilege; it joins the sandbox's cgroup (`cgroup_procs`), so
    /// the sandbox's limits bound it and a restart's sweep of a dead
    /// server's groups ends it. It ends with the returned handle, and with
    /// the server however it dies: it reads the end of a pipe whose other
    /// end only the server holds (`--exit-fd`), and gets SIGKILL when the
    /// server goes.
    pub fn attach(
        &self,
        pid: u32,
        owner: (u32, u32),
        cgroup_procs: Vec<PathBuf>,
    ) -> std::io::Result<Slirp> {
        let Internet::Slirp(slirp) = self else {
            return Err(std::io::Error::other("no internet on this machine"));
        };
        let mut cmd = HostCommand::new(slirp);
        let (exit_reader, exit_writer) = std::io::pipe()?;
        let exit_fd = cmd.pass_fd(exit_reader.into());
        // The ready byte comes on stdin (a pipe's write end): stdout and
        // stderr carry slirp4netns' chatter.
        cmd.args(["--configure", "--mtu=65520", "--disable-host-loopback"])
            .args(["--enable-sandbox", "--enable-seccomp", "--ready-fd=0"])
            .arg(format!("--exit-fd={exit_fd}"))
            .arg(format!("--userns-path=/proc/{pid}/ns/user"))
            .arg(pid.to_string())
            .arg("eth0");
        cmd.join_cgroup(cgroup_procs)?;
        // The device as the sandbox's root may open it, whatever the
        // host's node allows; then the sandbox's root it is.
        cmd.private_tun();
        cmd.run_as(owner.0, owner.1);
        cmd.die_with_server();
        let (mut ready, ready_writer) = std::io::pipe()?;
        cmd.current_dir("/")
            .stdin(Stdio::from(ready_writer))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // Our copy of the write end goes with `cmd`: only the child holds
        // it, so its death reads as EOF. A bounded wait on a thread.
        let child = cmd.spawn()?;
        let mut slirp = Slirp {
            child,
            _exit: exit_writer.into(),
        };
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut b = [0u8; 1];
            let _ = tx.send(ready.read(&mut b).map(|n| n == 1 && b[0] == b'1'));
        });
        match rx.recv_timeout(READY_TIMEOUT) {
            Ok(Ok(true)) => Ok(slirp),
            other => {
                slirp.stop();
                Err(std::io::Error::other(format!(
                    "slirp4netns did not come up: {other:?}"
                )))
            }
        }
    }
}

/// A running slirp4netns: killed when dropped.
#[derive(Debug)]
pub struct Slirp {
    child: Child,
    /// The server's end of slirp4netns' `--exit-fd` pipe.
    _exit: OwnedFd,
}

impl Slirp {
    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Slirp {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Whether a process set up as slirp4netns is, as an unprivileged uid
/// (`nobody`'s), opens its private `/dev/net/tun`.
fn private_tun_opens() -> std::io::Result<()> {
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Err(std::io::Error::other("no such device"));
    }
    let mut cmd = HostCommand::new("/bin/sh");
    cmd.args(["-c", ": <>/dev/net/tun"]).current_dir("/");
    cmd.private_tun();
    cmd.run_as(65534, 65534);
    let out = cmd.output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "a private node did not open: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}
