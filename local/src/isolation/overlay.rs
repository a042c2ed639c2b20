//! A sandbox's root, copy-on-write: every path is writable, as on an E2B
//! VM, and what the sandbox changes lives on its own disk.
//!
//! Each layer of the root ([`Layer`]: the server-written base at `/`, the
//! host's `/usr` and `/var/lib/dpkg`, a template's environment) is an
//! overlayfs whose lower layer is an ID-mapped, read-only clone of the host
//! directory (the host's root shown as the sandbox's `root`, or a template
//! environment's owner as its `user`) and whose upper layer is on the
//! sandbox's disk (`<disk>/.rootfs/<layer>/upper`). So `pip install` and
//! `apt-get install` write to the disk, counted by its quota and carried
//! by snapshots, forks and pauses, and never to the host's files nor to the
//! shared template. The overlays are mounted by the server before each
//! start (`<disk>/.rootfs/mnt/<layer>`), on a thread of its own whose
//! filesystem ids are the sandbox's root, so what they write on the disk
//! is the sandbox's; bubblewrap binds them into place. The `.rootfs`
//! directory itself is never in the sandbox's view.
//!
//! Overlay features that follow paths or file handles stored in the upper
//! layer (`redirect_dir`, `metacopy`, `index`) are off: the upper layer is
//! written by the sandbox and carried between machines in snapshots.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{Mode, OFlags};
use rustix::mount::{MountFlags, UnmountFlags};

use super::idmap;

/// Where a disk keeps its overlays' upper layers and mount points.
pub const STATE_DIR: &str = ".rootfs";

/// One overlay of a sandbox's root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layer {
    /// Its name on the disk (`.rootfs/<name>`).
    pub name: &'static str,
    /// The host directory under it, read-only.
    pub lower: PathBuf,
    /// Where it is in the sandbox.
    pub at: PathBuf,
    /// The id inside the sandbox that the lower layer's owner shows as
    /// (`root`'s 0 for the host's trees: all their ids map to the
    /// sandbox's block; `user`'s 1000 for a template's environment, whose
    /// owner alone maps).
    pub owner: u32,
}

/// Mounts every layer's overlay for the sandbox whose disk is mounted at
/// `disk` and whose ids start at host id `base`, replacing what an earlier
/// start left mounted; returns each mount point with where it goes in the
/// sandbox, in the order of `layers`.
/// Blocks (helpers, mounts): call it off an async runtime's workers.
pub fn mount(disk: &Path, base: u32, layers: &[Layer]) -> std::io::Result<Vec<(PathBuf, PathBuf)>> {
    unmount(disk);
    // Each lower layer's ID mapping, and one user namespace per distinct
    // mapping (a helper process makes each), made with the server's own
    // credentials.
    let mut namespaces: Vec<(idmap::Map, Arc<OwnedFd>)> = Vec::new();
    let mut mapped = Vec::with_capacity(layers.len());
    for layer in layers {
        let map = lower_map(base, layer)?;
        let userns = match namespaces.iter().find(|(m, _)| *m == map) {
            Some((_, userns)) => Arc::clone(userns),
            None => {
                let userns = Arc::new(idmap::user_namespace(&map)?);
                namespaces.push((map, Arc::clone(&userns)));
                userns
            }
        };
        mapped.push((layer.clone(), userns));
    }
    let disk = disk.to_path_buf();
    // Credentials are a thread's own: the ids changed here change no
    // other thread of the server.
    std::thread::spawn(move || {
        as_sandbox_root(base)?;
        mapped
            .iter()
            .map(|(layer, userns)| {
                mount_layer(&disk, base, layer, userns)
                    .map(|point| (point, layer.at.clone()))
                    .map_err(|e| {
                        std::io::Error::new(e.kind(), format!("the {} layer: {e}", layer.name))
                    })
            })
            .collect()
    })
    .join()
    .unwrap_or_else(|_| Err(std::io::Error::other("the overlay thread panicked")))
}

/// Unmounts the overlays mounted on the disk at `disk` (lazily: a process
/// of a dead sandbox may still hold a file for a moment).
pub fn unmount(disk: &Path) {
    let Ok(points) = std::fs::read_dir(disk.join(STATE_DIR).join("mnt")) else {
        return;
    };
    for point in points.flatten() {
        // EINVAL: not a mount point (never mounted, or already gone).
        let _ = rustix::mount::unmount(point.path(), UnmountFlags::DETACH);
    }
}

/// Makes this thread's filesystem ids the sandbox's root (host id `base`),
/// so directories it makes on the ID-mapped disk are stored as the
/// sandbox's, and the overlays it mounts copy up as the sandbox's root,
/// with the filesystem capabilities the change drops raised again
/// (`CAP_CHOWN`, `CAP_DAC_OVERRIDE`, `CAP_FOWNER`, …: a copy-up keeps
/// owners and modes).
fn as_sandbox_root(base: u32) -> std::io::Result<()> {
    #[allow(unsafe_code)]
    // SAFETY: setfsuid(2) and setfsgid(2) take an id by value and change
    // only the calling thread's credentials (the raw calls: glibc does not
    // broadcast them to other threads either); they touch no memory.
    unsafe {
        libc::syscall(libc::SYS_setfsgid, base);
        libc::syscall(libc::SYS_setfsuid, base);
    }
    let mut caps = rustix::thread::capabilities(None)?;
    caps.effective = caps.permitted;
    rustix::thread::set_capabilities(None, caps)?;
    Ok(())
}

/// How `layer`'s lower layer is ID-mapped for the sandbox at `base`: the
/// host's trees as the block, a template environment's owner as `user`.
fn lower_map(base: u32, layer: &Layer) -> std::io::Result<idmap::Map> {
    if layer.owner == 0 {
        return Ok(idmap::Map::Block { base });
    }
    let meta = std::fs::metadata(&layer.lower)?;
    Ok(idmap::Map::One {
        host: meta.uid(),
        gid: meta.gid(),
        to: base + layer.owner,
    })
}

/// Mounts `layer`'s overlay, its lower layer ID-mapped by `userns`;
/// returns its mount point.
fn mount_layer(
    disk: &Path,
    base: u32,
    layer: &Layer,
    userns: &OwnedFd,
) -> std::io::Result<PathBuf> {
    let state = disk.join(STATE_DIR);
    let dirs = state.join(layer.name);
    let (upper, work) = (dirs.join("upper"), dirs.join("work"));
    let point = state.join("mnt").join(layer.name);
    for dir in [&state, &dirs, &upper, &work, &state.join("mnt"), &point] {
        make_dir(dir)?;
    }
    // The upper layer's root is the merged root's: its mode and owner.
    let lower_meta = std::fs::metadata(&layer.lower)?;
    rustix::fs::chmod(&upper, Mode::from_raw_mode(lower_meta.mode() & 0o7777))?;
    let owner = base + layer.owner;
    rustix::fs::chown(
        &upper,
        Some(rustix::fs::Uid::from_raw(owner)),
        Some(rustix::fs::Gid::from_raw(owner)),
    )?;
    let lower = idmap::mapped_clone(&layer.lower, userns, true)?;
    let open = |dir: &Path| {
        rustix::fs::open(
            dir,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
    };
    let (upper, work) = (open(&upper)?, open(&work)?);
    let fd = |fd: &OwnedFd| format!("/proc/self/fd/{}", fd.as_fd().as_raw_fd());
    let options = format!(
        "lowerdir={},upperdir={},workdir={},redirect_dir=off,index=off,metacopy=off,xino=off,uuid=off",
        fd(&lower),
        fd(&upper),
        fd(&work)
    );
    let options = std::ffi::CString::new(options).map_err(std::io::Error::other)?;
    rustix::mount::mount(
        "overlay",
        &point,
        "overlay",
        MountFlags::NOSUID | MountFlags::NODEV,
        Some(options.as_c_str()),
    )?;
    Ok(point)
}

/// Makes `dir` (0755) unless it is there.
fn make_dir(dir: &Path) -> std::io::Result<()> {
    match std::fs::DirBuilder::new().mode(0o755).create(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        other => other,
    }
}
