//! ID-mapped mounts of the sandboxes' disks.
//!
//! A disk image stores the sandbox's own ids (`root` 0, `user` 1000), as
//! a container image does, and is mounted through an ID-mapped mount
//! (Linux 5.12 and later) that shows them as the sandbox's block of host
//! ids. So an image is not bound to the block it was made with: a
//! snapshot starts a sandbox on another block, a fork runs beside its
//! source, and a paused sandbox resumes on a fresh block after a restart,
//! with no walk over the files to change their owners (a walk the host
//! side must never do over a tree a sandbox wrote).

use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use rustix::mount::{MoveMountFlags, OpenTreeFlags, UnmountFlags};

use super::ids::SUBID_COUNT;
use super::limits::find;
use super::spawn::HostCommand;

/// Whether the kernel has `mount_setattr` (the ID-mapped mounts' call,
/// with ext4's support in the same release) and the helpers are here.
pub fn supported() -> bool {
    // An invalid descriptor: EBADF where the call exists, ENOSYS where not.
    let probe = mount_setattr(-1, -1, 0);
    let has_call = !matches!(probe, Err(e) if e.raw_os_error() == Some(libc::ENOSYS));
    has_call && find("unshare").is_some() && find("sleep").is_some()
}

/// Turns the mount on `mount_point` into one that shows the ids stored on
/// it (0 to 65,535) as the block starting at host id `base`: the mount is
/// cloned, the clone ID-mapped, the original unmounted and the clone put
/// in its place. Nothing may use the mount meanwhile (the sandbox has not
/// started).
pub fn remount_mapped(mount_point: &Path, base: u32) -> std::io::Result<()> {
    let userns = user_namespace(&Map::Block { base })?;
    let tree = mapped_clone(mount_point, &userns, false)?;
    rustix::mount::unmount(mount_point, UnmountFlags::empty())
        .map_err(|e| with_context("umount", mount_point, e.into()))?;
    rustix::mount::move_mount(
        tree.as_fd(),
        "",
        rustix::fs::CWD,
        mount_point,
        MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
    )
    .map_err(|e| with_context("move_mount", mount_point, e.into()))
}

/// How an ID-mapped mount shows the ids stored on its filesystem.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Map {
    /// Ids 0 to 65,535 as the block starting at host id `base`.
    Block { base: u32 },
    /// The one owner `host`:`gid` as host id `to` (uid and gid); no other
    /// id maps.
    One { host: u32, gid: u32, to: u32 },
}

impl Map {
    /// The user namespace's `uid_map` and `gid_map`.
    fn lines(&self) -> (String, String) {
        match *self {
            Map::Block { base } => {
                let line = format!("0 {base} {SUBID_COUNT}\n");
                (line.clone(), line)
            }
            Map::One { host, gid, to } => (format!("{host} {to} 1\n"), format!("{gid} {to} 1\n")),
        }
    }
}

/// A detached clone of the mount tree at `path` (not its submounts),
/// ID-mapped by the user namespace `userns` ([`user_namespace`]) and,
/// `read_only`, read-only: a directory to hand to another mount (an
/// overlay's layer) as `/proc/self/fd/<fd>`.
pub fn mapped_clone(path: &Path, userns: &OwnedFd, read_only: bool) -> std::io::Result<OwnedFd> {
    let tree = rustix::mount::open_tree(
        rustix::fs::CWD,
        path,
        OpenTreeFlags::OPEN_TREE_CLONE | OpenTreeFlags::OPEN_TREE_CLOEXEC,
    )
    .map_err(|e| with_context("open_tree", path, e.into()))?;
    let extra = if read_only { MOUNT_ATTR_RDONLY } else { 0 };
    mount_setattr(tree.as_raw_fd(), userns.as_raw_fd(), extra)
        .map_err(|e| with_context("mount_setattr", path, e))?;
    Ok(tree)
}

fn with_context(call: &str, path: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{call} {}: {e}", path.display()))
}

/// A user namespace with `map`'s ids: a
/// helper (`unshare --user sleep`, as host root with an empty
/// environment) makes it, the server writes its maps and keeps a
/// descriptor of it, and the helper is killed. The mount keeps the
/// namespace alive.
pub fn user_namespace(map: &Map) -> std::io::Result<OwnedFd> {
    let unshare = find("unshare").ok_or_else(|| std::io::Error::other("unshare not found"))?;
    let sleep = find("sleep").ok_or_else(|| std::io::Error::other("sleep not found"))?;
    let mut helper = HostCommand::new(unshare);
    helper
        .arg("--user")
        .arg("--")
        .arg(sleep)
        .arg("30")
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut helper = helper.spawn()?;
    let made = (|| {
        let own = std::fs::read_link("/proc/self/ns/user")?;
        let proc = Path::new("/proc").join(helper.id().to_string());
        let started = Instant::now();
        while std::fs::read_link(proc.join("ns/user"))? == own {
            if started.elapsed() > Duration::from_secs(5) {
                return Err(std::io::Error::other(
                    "unshare did not make a user namespace",
                ));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let (uids, gids) = map.lines();
        std::fs::write(proc.join("uid_map"), uids)?;
        std::fs::write(proc.join("gid_map"), gids)?;
        Ok(OwnedFd::from(std::fs::File::open(proc.join("ns/user"))?))
    })();
    let _ = helper.kill();
    let _ = helper.wait();
    made
}

/// `struct mount_attr` of `<linux/mount.h>`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// `MOUNT_ATTR_IDMAP`.
const MOUNT_ATTR_IDMAP: u64 = 0x0010_0000;
/// `MOUNT_ATTR_RDONLY`.
const MOUNT_ATTR_RDONLY: u64 = 0x0000_0001;

/// `mount_setattr(tree, "", AT_EMPTY_PATH, {MOUNT_ATTR_IDMAP | extra,
/// userns})`: neither rustix nor nix wraps it yet.
fn mount_setattr(tree: RawFd, userns: RawFd, extra: u64) -> std::io::Result<()> {
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_IDMAP | extra,
        attr_clr: 0,
        propagation: 0,
        userns_fd: userns as u64,
    };
    #[allow(unsafe_code)]
    // SAFETY: mount_setattr(2) reads `size` bytes at `&attr`, a live,
    // initialised repr(C) `struct mount_attr` of exactly that size, and a
    // NUL-terminated path; it writes nothing of ours. Bad descriptors are
    // the kernel's EBADF, not undefined behaviour.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            tree,
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
