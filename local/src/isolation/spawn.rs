//! How the orchestrator spawns a host process for a sandbox: on one
//! long-lived thread, with the file descriptors it hands over and no others.

use std::os::fd::OwnedFd;
use std::process::Command;
use std::sync::Mutex;

use command_fds::CommandFdExt;

/// Hands `fd` to the child `cmd` starts, at the same number (returned),
/// without letting any other child inherit it: the parent's copy keeps
/// `FD_CLOEXEC`, the child's loses it between fork and exec (bubblewrap
/// passes it on to envd). The command owns the fd until it is dropped.
pub(super) fn pass_fd(cmd: &mut Command, fd: OwnedFd) -> std::os::fd::RawFd {
    use std::os::fd::AsRawFd;
    let n = fd.as_raw_fd();
    cmd.preserved_fds(vec![fd]);
    n
}

type SpawnRequest = (
    std::process::Command,
    std::sync::mpsc::Sender<std::io::Result<std::process::Child>>,
);

/// Spawns on one thread that lives as long as the server process. bwrap's
/// `--die-with-parent` fires when the *thread* that spawned it exits, and
/// runtime threads (the blocking pool's, a test's) come and go, while a
/// sandbox must live as long as the server wants it.
pub(super) fn from_anchor_thread(
    cmd: std::process::Command,
) -> std::io::Result<std::process::Child> {
    static SPAWNER: std::sync::OnceLock<Mutex<std::sync::mpsc::Sender<SpawnRequest>>> =
        std::sync::OnceLock::new();
    let sender = SPAWNER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<SpawnRequest>();
        let spawned = std::thread::Builder::new()
            .name("e2b-local-anchors".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
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
