//! Starting one sandbox: bubblewrap makes its namespaces and root and runs
//! envd as its first process; the server keeps the other end of envd's
//! control socket, through which it hands envd the connections the edge
//! opens ([`e2b_wire::envd_setup`]).

use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::Mutex;

use super::network::Slirp;
use super::spawn::HostCommand;
use e2b_wire::envd_setup::{self, EnvdConfig, ENVD_PATH, SUDO_PATH, TOOLS_DIR};
use rustix::net::{
    AddressFamily, SendAncillaryBuffer, SendAncillaryMessage, SendFlags, SocketFlags, SocketType,
};

/// A running sandbox: bubblewrap (or, without isolation, envd itself) and
/// the server's end of envd's control socket.
pub(super) struct Anchor {
    child: Child,
    /// bubblewrap's init, in the sandbox's namespaces (host pid).
    pub init: u32,
    control: Mutex<OwnedFd>,
    /// The user-mode network stack, when the sandbox has internet.
    pub slirp: Option<Slirp>,
    /// Without isolation envd is the child: it ends its processes when
    /// its control socket closes, given a moment.
    direct: bool,
    /// bubblewrap's errors, read only if it exits before serving.
    stderr: Option<std::process::ChildStderr>,
}

impl Anchor {
    /// Starts `cmd` (bubblewrap ending in envd's path, or envd) with
    /// envd's control socket, whose number becomes envd's argument, and
    /// sends it `config`; `on_spawn` runs while bubblewrap waits for its
    /// user namespace (the maps, the cgroup), given bwrap's init pid.
    pub fn start(
        mut cmd: HostCommand,
        config: &EnvdConfig,
        bwrap: bool,
        on_spawn: impl FnOnce(u32) -> Result<(), String>,
    ) -> Result<Anchor, String> {
        let (ours, theirs) = rustix::net::socketpair(
            AddressFamily::UNIX,
            SocketType::SEQPACKET,
            SocketFlags::CLOEXEC,
            None,
        )
        .map_err(|e| format!("cannot make envd's control socket: {e}"))?;
        let control_fd = cmd.pass_fd(theirs);
        cmd.arg(control_fd.to_string());
        let message = serde_json::to_vec(config).map_err(|e| e.to_string())?;
        if message.len() > envd_setup::MAX_CONFIG_BYTES {
            return Err(format!(
                "the sandbox's settings are too large ({} bytes, at most {})",
                message.len(),
                envd_setup::MAX_CONFIG_BYTES
            ));
        }
        rustix::net::send(&ours, &message, SendFlags::empty())
            .map_err(|e| format!("cannot configure envd: {e}"))?;
        if !bwrap {
            cmd.stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            let child = cmd.spawn().map_err(|e| e.to_string())?;
            let init = child.id();
            return Ok(Anchor {
                child,
                init,
                control: Mutex::new(ours),
                slirp: None,
                direct: true,
                stderr: None,
            });
        }
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let child = cmd.spawn().map_err(|e| e.to_string())?;
        let mut anchor = Anchor {
            child,
            init: 0,
            control: Mutex::new(ours),
            slirp: None,
            direct: false,
            stderr: None,
        };
        anchor.init = read_child_pid(&mut anchor.child)?;
        on_spawn(anchor.init)?;
        // A byte lets bwrap go on (the block fd reads it).
        if let Some(mut stdin) = anchor.child.stdin.take() {
            let _ = stdin.write_all(b"1");
        }
        anchor.stderr = anchor.child.stderr.take();
        Ok(anchor)
    }

    /// Whether the sandbox still runs (its own root may kill envd, which
    /// ends it).
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Why the sandbox stopped before it served (`None` while it runs):
    /// how bubblewrap (whose status is envd's) exited, and the last line
    /// it or envd wrote, which is the one that says why.
    pub fn failure(&mut self) -> Option<String> {
        // The probe saw envd go: bubblewrap follows within moments.
        let mut status = None;
        for _ in 0..50 {
            status = self.child.try_wait().ok().flatten();
            if status.is_some() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let status = status?;
        let mut err = String::new();
        if let Some(stderr) = self.stderr.take() {
            let _ = stderr.take(64 << 10).read_to_string(&mut err);
        }
        let last = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        Some(format!("envd {status}: {}", last.trim()))
    }

    /// The sandbox served a connection: its stderr is the sandbox's from
    /// now on, and nothing on the host reads it.
    pub fn serving(&mut self) {
        self.stderr = None;
    }

    /// Hands envd `theirs`, the sandbox end of a connection for `port`.
    pub fn send_connection(&self, port: u16, theirs: impl AsFd) -> std::io::Result<()> {
        let control = self
            .control
            .lock()
            .map_err(|_| std::io::Error::other("control socket poisoned"))?;
        let fds = [theirs.as_fd()];
        let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut cmsgs = SendAncillaryBuffer::new(&mut space);
        cmsgs.push(SendAncillaryMessage::ScmRights(&fds));
        let message = envd_setup::encode_port(port);
        // Never blocks: an envd that stopped reading (frozen, stopped by
        // its own root) fails the connection instead of hanging the server.
        rustix::net::sendmsg(
            &*control,
            &[std::io::IoSlice::new(&message)],
            &mut cmsgs,
            SendFlags::DONTWAIT | SendFlags::NOSIGNAL,
        )?;
        Ok(())
    }
}

impl Drop for Anchor {
    fn drop(&mut self) {
        if self.direct {
            // envd ends its processes when the control socket closes.
            if let Ok(control) = self.control.get_mut() {
                let _ = rustix::net::shutdown(&*control, rustix::net::Shutdown::Both);
            }
            for _ in 0..200 {
                if !self.alive() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
        // bwrap's init dies with it (--die-with-parent), and with init
        // everything else in the sandbox's pid namespace.
        let _ = self.child.kill();
        let _ = self.child.wait();
        drop(self.slirp.take());
    }
}

/// What the sandbox's root may do, each with why it is there: Podman's
/// default set (Docker's less `NET_RAW`, `MKNOD`, `SYS_CHROOT` and
/// `AUDIT_WRITE`). Every one acts only inside the sandbox's own user
/// namespace: over files whose owners it maps (the host's files belong
/// to ids it does not), over its own processes, in its own network
/// namespace. These bound every process of the sandbox.
///
/// Left out, and why: `NET_RAW`, raw and packet sockets, with which a
/// forged packet addressed to `127.0.0.1` or `::1` went out through
/// slirp4netns to the host's loopback (CRI-O dropped it after
/// CVE-2020-14386 too; `ping` needs it or an ICMP socket range, and a
/// sandbox has neither); `MKNOD` (device nodes; a user namespace may not
/// make them anyway); `SYS_CHROOT` (no tool a sandbox runs needs it, and
/// it is a step in escapes that confuse a privileged helper); `AUDIT_WRITE`
/// (the host's audit log, not namespaced). Never `SYS_ADMIN`: bubblewrap's
/// read-only binds of host directories are made inside the sandbox's own
/// user namespace, so their flags are not locked, and with it root could
/// remount them writable, mount, or make namespaces. Nor `NET_ADMIN`,
/// `SYS_PTRACE` (its own processes it may trace anyway), `SYS_MODULE` and
/// the like.
pub(super) const ROOT_CAPABILITIES: [(&str, &str); 10] = [
    (
        "CAP_CHOWN",
        "chown of its files (package managers, `chown user`)",
    ),
    (
        "CAP_DAC_OVERRIDE",
        "root reads and writes its files whatever their modes",
    ),
    (
        "CAP_FOWNER",
        "chmod, utimes and the like on files it does not own",
    ),
    ("CAP_FSETID", "set-id bits kept when it writes a file"),
    ("CAP_KILL", "signals for any process of its own"),
    (
        "CAP_SETGID",
        "becoming another group (`sudo -u`, envd's users)",
    ),
    (
        "CAP_SETUID",
        "becoming another user (`sudo -u`, envd's users)",
    ),
    (
        "CAP_SETPCAP",
        "dropping capabilities for what it starts (capsh, services)",
    ),
    (
        "CAP_SETFCAP",
        "file capabilities on its files (packages set them; under \
         no_new_privs exec grants none)",
    ),
    (
        "CAP_NET_BIND_SERVICE",
        "ports below 1024 on its own network namespace",
    ),
];

/// bubblewrap's arguments for a sandbox running envd from `envd` (a host
/// file bound read-only at [`ENVD_PATH`]); the root filesystem's come
/// after these.
pub(super) fn bwrap_prefix(cmd: &mut HostCommand, envd: &Path, privileged: bool) {
    // bwrap tells the pid of the sandbox's init on stdout, then waits on
    // stdin until the server has written the user namespace's maps.
    cmd.args(["--unshare-user", "--info-fd", "1", "--userns-block-fd", "0"]);
    if privileged {
        // envd is the sandbox's root, with root's capabilities in its own
        // user namespace only (over nothing the namespace does not map).
        for (cap, _why) in ROOT_CAPABILITIES {
            cmd.args(["--cap-add", cap]);
        }
    }
    // Directories bubblewrap makes on its own are its user's alone (0700):
    // the sandbox's root's now. Those `user` must cross are made first.
    for dir in ["/opt", "/opt/e2b", TOOLS_DIR] {
        cmd.args(["--perms", "0755", "--dir", dir]);
    }
    cmd.arg("--ro-bind").arg(envd).arg(ENVD_PATH);
    // The same binary is the sandbox's sudo (envd serves its requests).
    cmd.arg("--ro-bind").arg(envd).arg(SUDO_PATH);
}

/// Reads `{"child-pid": N, …}` from bwrap's info fd (its stdout).
fn read_child_pid(bwrap: &mut Child) -> Result<u32, String> {
    let mut out = bwrap.stdout.take().ok_or("bwrap has no stdout")?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 512];
    loop {
        let n = out.read(&mut chunk).map_err(|e| e.to_string())?;
        if n == 0 {
            let mut err = String::new();
            if let Some(stderr) = bwrap.stderr.take() {
                let _ = stderr.take(4096).read_to_string(&mut err);
            }
            return Err(format!("bubblewrap failed: {}", err.trim()));
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Ok(info) = serde_json::from_slice::<serde_json::Value>(&buf) {
            return info["child-pid"]
                .as_u64()
                .and_then(|p| u32::try_from(p).ok())
                .ok_or_else(|| format!("bubblewrap's info has no child-pid: {info}"));
        }
        if buf.len() > 64 << 10 {
            return Err("bubblewrap's info is too long".into());
        }
    }
}
