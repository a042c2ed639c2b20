//! The size-limited filesystem behind a sandbox's writable directories:
//! a sparse ext4 image on a loop device, mounted ID-mapped ([`idmap`]),
//! and the consistent copies of it that snapshots and forks are.
//!
//! The host side only ever copies the image file, a host file the server
//! made and owns; it never walks the tree on it, which the sandbox wrote.

use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use rustix::fs::SeekFrom;
use rustix::mount::UnmountFlags;

use super::idmap;
use super::limits::find;
use super::spawn::HostCommand;

/// A sandbox's disk: its image and where it is mounted.
#[derive(Debug)]
pub struct Disk {
    mount_point: PathBuf,
    image: PathBuf,
    /// Dropping it unmounts but keeps the image (a paused sandbox's, at
    /// a persistent server's shutdown).
    keep_image: bool,
}

impl Disk {
    /// Whether disks can be made here (root, `mkfs.ext4`, loop devices,
    /// `fsfreeze` and ID-mapped mounts).
    pub fn available(privileged: bool) -> bool {
        privileged
            && Path::new("/dev/loop-control").exists()
            && ["mkfs.ext4", "mount", "fsfreeze"]
                .iter()
                .all(|tool| find(tool).is_some())
            && idmap::supported()
    }

    /// Makes a sparse ext4 image of `size_mb` at `image`, mounts it on
    /// `mount_point` (`nosuid,nodev`), lets `lay_out` make the sandbox's
    /// directories on it (owned by the ids inside: `root` 0, `user`
    /// 1000), then maps it onto the block at `base`: about 25 ms.
    pub fn create(
        image: &Path,
        mount_point: &Path,
        size_mb: u32,
        base: u32,
        lay_out: impl FnOnce() -> std::io::Result<()>,
    ) -> std::io::Result<Disk> {
        let file = File::create_new(image)?;
        file.set_len(u64::from(size_mb) << 20)?;
        drop(file);
        let made = run(
            "mkfs.ext4",
            [
                "-q".as_ref(),
                "-F".as_ref(),
                "-m".as_ref(),
                "0".as_ref(),
                "-O".as_ref(),
                "^has_journal".as_ref(),
                "-E".as_ref(),
                "lazy_itable_init=1,nodiscard".as_ref(),
                image.as_os_str(),
            ],
        );
        if let Err(e) = made {
            let _ = std::fs::remove_file(image);
            return Err(e);
        }
        let disk = match Disk::mount(image, mount_point) {
            Ok(disk) => disk,
            Err(e) => {
                let _ = std::fs::remove_file(image);
                return Err(e);
            }
        };
        // mkfs leaves lost+found; the sandbox's directories are all it holds.
        let _ = std::fs::remove_dir(mount_point.join("lost+found"));
        lay_out()?;
        idmap::remount_mapped(mount_point, base)?;
        Ok(disk)
    }

    /// Mounts the image already at `image` (a copy of a snapshot, or a
    /// paused sandbox's after a restart) on `mount_point`, mapped onto
    /// the block at `base`. Once mounted the image is the disk's: dropping
    /// the disk removes it; when the mount fails, it stays where it is.
    pub fn attach(image: &Path, mount_point: &Path, base: u32) -> std::io::Result<Disk> {
        let mut disk = Disk::mount(image, mount_point)?;
        disk.keep_image = true;
        idmap::remount_mapped(mount_point, base)?;
        disk.keep_image = false;
        Ok(disk)
    }

    fn mount(image: &Path, mount_point: &Path) -> std::io::Result<Disk> {
        std::fs::create_dir_all(mount_point)?;
        let mounted = run(
            "mount",
            [
                "-o".as_ref(),
                "loop,nosuid,nodev,noatime".as_ref(),
                image.as_os_str(),
                mount_point.as_os_str(),
            ],
        );
        mounted?;
        Ok(Disk {
            mount_point: mount_point.to_path_buf(),
            image: image.to_path_buf(),
            keep_image: false,
        })
    }

    /// Readies the image for a copy while the sandbox still runs: what is
    /// written so far goes to the image (so the freeze that follows has
    /// little left to flush), and the blocks no file uses are given back
    /// to the host (they stay allocated after a file is deleted), so a
    /// copy holds only what files use. Best effort: a copy of an image
    /// not readied is only slower and larger.
    pub fn ready_for_copy(&self) {
        if let Err(e) = self.sync() {
            tracing::debug!("syncfs before a copy: {e}");
        }
        let _ = run("fstrim", [self.mount_point.as_os_str()]);
    }

    /// Copies the image to `dest` (a new file) consistently: the
    /// filesystem is frozen (`FIFREEZE`: everything written so far is on
    /// the image, nothing more is written) for the copy, then thawed.
    /// The sandbox's processes should be frozen meanwhile: a write of
    /// theirs would wait for the thaw.
    pub fn copy_to(&self, dest: &Path) -> std::io::Result<()> {
        let freeze = |how: &str| run("fsfreeze", [how.as_ref(), self.mount_point.as_os_str()]);
        freeze("-f")?;
        let copied = copy_sparse(&self.image, dest, false);
        // A thaw that fails would leave the sandbox's writes hanging: try
        // again before giving up.
        let thawed = freeze("-u").or_else(|_| freeze("-u"));
        if let Err(e) = thawed {
            tracing::error!("cannot thaw a sandbox's filesystem: {e}");
        }
        copied
    }

    /// Its image file.
    pub fn image(&self) -> &Path {
        &self.image
    }

    /// Flushes the filesystem to its image (a pause that must survive the
    /// machine going down).
    pub fn sync(&self) -> std::io::Result<()> {
        let dir = File::open(&self.mount_point)?;
        rustix::fs::syncfs(&dir)?;
        Ok(())
    }

    /// Unmounts the disk and keeps its image.
    pub fn detach(mut self) {
        self.keep_image = true;
    }
}

impl Drop for Disk {
    fn drop(&mut self) {
        if self.keep_image {
            // Written out whole before it is let go.
            unmount(&self.mount_point);
        } else {
            // Lazy: nothing on it is needed any more, and a process of a
            // dead sandbox may still hold a file for a moment.
            super::overlay::unmount(&self.mount_point);
            let _ = rustix::mount::unmount(&self.mount_point, UnmountFlags::DETACH);
            let _ = std::fs::remove_file(&self.image);
        }
    }
}

/// Unmounts what is mounted on `mount_point`, if anything: at once when
/// nothing holds it, else lazily (a process of a dead sandbox may hold a
/// file for a moment). False when it had to be lazy.
pub fn unmount(mount_point: &Path) -> bool {
    // The root's overlays on it first (a killed server's sandbox left them).
    super::overlay::unmount(mount_point);
    match rustix::mount::unmount(mount_point, UnmountFlags::empty()) {
        Ok(()) => true,
        Err(rustix::io::Errno::BUSY) => {
            let _ = rustix::mount::unmount(mount_point, UnmountFlags::DETACH);
            false
        }
        // Not a mount point (EINVAL) or gone: nothing to do.
        Err(_) => true,
    }
}

/// Thaws the filesystem on `mount_point` if a copy left it frozen (a
/// server killed during a snapshot): its sandbox's processes could not
/// die, nor its disk be let go, until it thaws.
pub fn thaw_stale(mount_point: &Path) {
    let _ = run("fsfreeze", ["-u".as_ref(), mount_point.as_os_str()]);
}

/// Whether a loop device still reads `image`: a filesystem on it is still
/// alive (held by processes of a dead server's sandbox that have not
/// finished dying), and mounting the image again would make two.
pub fn in_use(image: &Path) -> bool {
    let Ok(devices) = std::fs::read_dir("/sys/block") else {
        return false;
    };
    devices.flatten().any(|device| {
        std::fs::read_to_string(device.path().join("loop/backing_file"))
            .is_ok_and(|backing| Path::new(backing.trim_end()) == image)
    })
}

/// Bytes `path` takes on its filesystem (its allocated blocks).
pub fn allocated(path: &Path) -> u64 {
    std::fs::symlink_metadata(path).map_or(0, |m| m.blocks() * 512)
}

/// Copies the regular file `src` to a new file `dst`: a reflink where
/// the filesystem has them (btrfs, XFS), else its data extents only, so
/// holes stay holes. `dst` is removed when the copy fails; `durable`, it
/// is on disk before this returns (a snapshot that must survive the
/// machine going down).
pub fn copy_sparse(src: &Path, dst: &Path, durable: bool) -> std::io::Result<()> {
    let from = File::open(src)?;
    let to = File::create_new(dst)?;
    let copied = (|| {
        if rustix::fs::ioctl_ficlone(&to, &from).is_err() {
            copy_extents(&from, &to)?;
        }
        if durable {
            to.sync_all()?;
        }
        Ok(())
    })();
    if copied.is_err() {
        let _ = std::fs::remove_file(dst);
    }
    copied
}

fn copy_extents(from: &File, to: &File) -> std::io::Result<()> {
    let len = from.metadata()?.len();
    to.set_len(len)?;
    let mut pos = 0;
    while pos < len {
        let data = match rustix::fs::seek(from, SeekFrom::Data(pos)) {
            Ok(data) => data,
            // No data after `pos`: the rest is a hole.
            Err(rustix::io::Errno::NXIO) => break,
            Err(e) => return Err(e.into()),
        };
        let hole = rustix::fs::seek(from, SeekFrom::Hole(data))?.min(len);
        copy_range(from, to, data, hole)?;
        pos = hole;
    }
    Ok(())
}

/// Copies bytes `start..end` of `from` to the same place in `to`.
fn copy_range(from: &File, to: &File, start: u64, end: u64) -> std::io::Result<()> {
    let (mut off_in, mut off_out) = (start, start);
    while off_in < end {
        let want = usize::try_from(end - off_in)
            .unwrap_or(usize::MAX)
            .min(1 << 30);
        match rustix::fs::copy_file_range(from, Some(&mut off_in), to, Some(&mut off_out), want) {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            // Filesystems without it: read and write.
            Err(
                rustix::io::Errno::XDEV
                | rustix::io::Errno::NOSYS
                | rustix::io::Errno::OPNOTSUPP
                | rustix::io::Errno::INVAL,
            ) => return copy_by_hand(from, to, off_in, end),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

fn copy_by_hand(from: &File, to: &File, start: u64, end: u64) -> std::io::Result<()> {
    let mut buf = vec![0u8; 1 << 20];
    let mut off = start;
    while off < end {
        let want = usize::try_from(end - off)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        let n = from.read_at(&mut buf[..want], off)?;
        if n == 0 {
            break;
        }
        to.write_all_at(&buf[..n], off)?;
        off += n as u64;
    }
    Ok(())
}

/// Runs the host tool `name` (found in the system directories) with
/// `args`, an empty environment and no descriptor of the server's.
fn run<'a>(name: &str, args: impl IntoIterator<Item = &'a std::ffi::OsStr>) -> std::io::Result<()> {
    let mut cmd = HostCommand::new(find(name).unwrap_or_else(|| name.into()));
    cmd.args(args);
    let out = cmd.output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "{name} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sparse_copy_keeps_data_and_holes() {
        let dir = tempfile::tempdir().unwrap();
        let (src, dst) = (dir.path().join("src"), dir.path().join("dst"));
        let file = File::create(&src).unwrap();
        file.set_len(64 << 20).unwrap();
        file.write_all_at(b"head", 0).unwrap();
        file.write_all_at(&[7u8; 1 << 20], 32 << 20).unwrap();
        file.sync_all().unwrap();
        copy_sparse(&src, &dst, true).unwrap();
        assert_eq!(std::fs::read(&src).unwrap(), std::fs::read(&dst).unwrap());
        // 64 MiB long, about 1 MiB of it allocated.
        assert!(allocated(&dst) < 4 << 20, "{}", allocated(&dst));
        // Never over an existing file.
        assert!(copy_sparse(&src, &dst, false).is_err());
        assert!(dst.exists());
    }
}
