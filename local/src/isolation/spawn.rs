//! How the orchestrator starts a host process: with the descriptors it is
//! handed and no others, and, for the processes of a sandbox, in its
//! cgroup, as its ids, tied to the server's life.
//!
//! A server inherits whatever its parent leaked (a shell's or a
//! supervisor's directory or pipe descriptors, without `FD_CLOEXEC`), and
//! bubblewrap passes on everything it is given: without this, sandbox code
//! would read and write host files through `/proc/self/fd/N`. So every
//! process the orchestrator starts marks every descriptor from 3 on
//! close-on-exec between fork and exec, then clears the flag on those it
//! was handed ([`HostCommand::pass_fd`]).

use std::ffi::{CString, OsStr};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Output};
use std::sync::Mutex;

/// A host process to start: a [`Command`] (reached through `Deref`) and
/// what is done between fork and exec.
pub(super) struct HostCommand {
    cmd: Command,
    /// Handed over at their own numbers; the server's copies keep
    /// `FD_CLOEXEC` and close when the command is dropped.
    kept: Vec<OwnedFd>,
    setup: ChildSetup,
}

/// What the child does before exec, prepared in the parent: the closure
/// that runs it must not allocate.
#[derive(Default)]
struct ChildSetup {
    kept: Vec<RawFd>,
    /// `cgroup.procs` files it joins, before it drops to `ids`.
    cgroup_procs: Vec<CString>,
    /// The host uid and gid it runs as (with no supplementary groups).
    ids: Option<(u32, u32)>,
    /// A `/dev/net/tun` of its own, open to every uid, in a mount
    /// namespace of its own (made while still root).
    private_tun: bool,
    /// SIGKILL when the server dies; the server's pid.
    die_with: Option<libc::pid_t>,
}

impl std::ops::Deref for HostCommand {
    type Target = Command;
    fn deref(&self) -> &Command {
        &self.cmd
    }
}

impl std::ops::DerefMut for HostCommand {
    fn deref_mut(&mut self) -> &mut Command {
        &mut self.cmd
    }
}

impl HostCommand {
    /// `program`, with an empty environment.
    pub fn new(program: impl AsRef<OsStr>) -> Self {
        let mut cmd = Command::new(program);
        cmd.env_clear();
        Self {
            cmd,
            kept: Vec::new(),
            setup: ChildSetup::default(),
        }
    }

    /// Hands `fd` to the child at the same number (returned). No other
    /// child gets it: the server's copy stays close-on-exec.
    pub fn pass_fd(&mut self, fd: OwnedFd) -> RawFd {
        let n = fd.as_raw_fd();
        self.setup.kept.push(n);
        self.kept.push(fd);
        n
    }

    /// Joins the cgroup whose `cgroup.procs` files these are before it
    /// runs anything (the server must be root).
    pub fn join_cgroup(&mut self, procs: Vec<PathBuf>) -> std::io::Result<()> {
        for file in procs {
            let file = CString::new(file.as_os_str().as_bytes())
                .map_err(|_| std::io::Error::other("a cgroup path with a NUL"))?;
            self.setup.cgroup_procs.push(file);
        }
        Ok(())
    }

    /// Runs as these host ids, dropped to after the set-up that needs root.
    pub fn run_as(&mut self, uid: u32, gid: u32) {
        self.setup.ids = Some((uid, gid));
    }

    /// Gives it a `/dev/net/tun` of its own that any uid may open: for
    /// slirp4netns, which opens the device as the sandbox's root, whatever
    /// the host's node allows (0600 on some machines; udev makes it 0666).
    /// The server must be root.
    pub fn private_tun(&mut self) {
        self.setup.private_tun = true;
    }

    /// Kills it (SIGKILL) when the server process dies.
    pub fn die_with_server(&mut self) {
        self.setup.die_with = Some(std::process::id() as libc::pid_t);
    }

    fn prepare(&mut self) {
        let setup = std::mem::take(&mut self.setup);
        // SAFETY: `in_child` makes only async-signal-safe system calls on
        // memory prepared before the fork.
        #[allow(unsafe_code)]
        unsafe {
            self.cmd.pre_exec(move || setup.in_child());
        }
    }

    /// Starts it on the anchor thread (see [`from_anchor_thread`]).
    pub fn spawn(mut self) -> std::io::Result<Child> {
        self.prepare();
        from_anchor_thread(self)
    }

    /// Runs it to its end here (a helper), collecting its output.
    pub fn output(mut self) -> std::io::Result<Output> {
        self.prepare();
        self.cmd.output()
    }
}

impl ChildSetup {
    /// Between fork and exec: raw system calls only.
    fn in_child(&self) -> std::io::Result<()> {
        let check = |r: libc::c_int| {
            if r < 0 {
                Err(std::io::Error::last_os_error())
            } else {
                Ok(())
            }
        };
        // SAFETY: system calls on pointers to memory prepared before the
        // fork (NUL-terminated paths, constants), or on plain numbers.
        #[allow(unsafe_code)]
        unsafe {
            for procs in &self.cgroup_procs {
                let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                check(fd)?;
                // "0": the writing process itself.
                let written = libc::write(fd, b"0".as_ptr().cast(), 1);
                libc::close(fd);
                check(written as libc::c_int)?;
            }
            if self.private_tun {
                check(libc::unshare(libc::CLONE_NEWNS))?;
                // Nothing mounted here reaches the host's namespace.
                check(libc::mount(
                    std::ptr::null(),
                    c"/".as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null(),
                ))?;
                check(libc::mount(
                    c"tmpfs".as_ptr(),
                    c"/dev/net".as_ptr(),
                    c"tmpfs".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NOEXEC,
                    c"mode=755,size=4k".as_ptr().cast(),
                ))?;
                check(libc::mknod(
                    c"/dev/net/tun".as_ptr(),
                    libc::S_IFCHR | 0o666,
                    libc::makedev(10, 200),
                ))?;
                // mknod's mode passes through the umask.
                check(libc::chmod(c"/dev/net/tun".as_ptr(), 0o666))?;
            }
            if let Some((uid, gid)) = self.ids {
                check(libc::setgroups(0, std::ptr::null()))?;
                check(libc::setgid(gid))?;
                check(libc::setuid(uid))?;
            }
            if let Some(server) = self.die_with {
                // After the uid change, which clears the death signal.
                check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0))?;
                if libc::getppid() != server {
                    return Err(std::io::Error::other("the server is gone"));
                }
            }
            close_on_exec_from_3();
            for fd in &self.kept {
                check(libc::fcntl(*fd, libc::F_SETFD, 0))?;
            }
        }
        Ok(())
    }
}

/// Marks every descriptor from 3 on close-on-exec.
///
/// # Safety
/// Only system calls; for a child between fork and exec.
#[allow(unsafe_code)]
unsafe fn close_on_exec_from_3() {
    let all = libc::syscall(
        libc::SYS_close_range,
        3u32,
        u32::MAX,
        libc::CLOSE_RANGE_CLOEXEC,
    );
    if all == 0 {
        return;
    }
    // Linux before 5.11: one descriptor at a time, up to the limit.
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    let max = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
        limit.rlim_cur.min(1 << 20) as RawFd
    } else {
        1 << 16
    };
    for fd in 3..max {
        libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
    }
}

type SpawnRequest = (HostCommand, std::sync::mpsc::Sender<std::io::Result<Child>>);

/// Spawns on one thread that lives as long as the server process. A
/// parent-death signal (bwrap's `--die-with-parent`, slirp4netns') fires
/// when the *thread* that spawned the process exits, and runtime threads
/// (the blocking pool's, a test's) come and go, while a sandbox must live
/// as long as the server wants it.
fn from_anchor_thread(cmd: HostCommand) -> std::io::Result<Child> {
    static SPAWNER: std::sync::OnceLock<Mutex<std::sync::mpsc::Sender<SpawnRequest>>> =
        std::sync::OnceLock::new();
    let sender = SPAWNER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<SpawnRequest>();
        let spawned = std::thread::Builder::new()
            .name("e2b-local-anchors".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    // The kept descriptors close here, after the fork.
                    let _ = reply.send(cmd.cmd.spawn());
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("cannot start the anchor thread: {e}");
        }
        Mutex::new(tx)
    });
    let (reply_tx, reply_rx) = std::sync::mpsc::channel();
    sender
        .lock()
        .map_err(|_| std::io::Error::other("anchor thread lock poisoned"))?
        .send((cmd, reply_tx))
        .map_err(|_| std::io::Error::other("the anchor thread is gone"))?;
    reply_rx
        .recv()
        .map_err(|_| std::io::Error::other("the anchor thread is gone"))?
}
