//! The files API's filesystem: every operation of `/files`,
//! `filesystem.Filesystem` and Start's cwd check, done inside one
//! sandbox's root directory and nowhere else.
//!
//! The root is a directory fd (the sandbox anchor's `/proc/<pid>/root`, or
//! a plain directory without isolation and in tests). Every path resolves
//! with `openat2(root, path, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)`: the
//! kernel walks `..` and symlinks (absolute or relative) as if the root
//! were `/`, atomically, so nothing a sandbox puts in its tree can lead a
//! request outside it, and `/proc/self/…` links cannot jump to the
//! server's own files. Operations on an entry itself (Stat, Remove, Move)
//! resolve its parent that way and act on the last component with an
//! `*at` call that does not follow it; reads, writes and ListDir follow it.
//!
//! Everything inside was written by untrusted code, and the server may be
//! host root, so the content is distrusted as well:
//! - only regular files are read or written: a FIFO would hang a request,
//!   a device node is the host's device;
//! - nothing on a kernel pseudo-filesystem ([`PSEUDO_FILESYSTEMS`]) is
//!   read, written, created or removed: a sandbox may mount procfs or
//!   sysfs, whose files speak for the host kernel to host root;
//! - a file is checked before it is truncated, and an entry is looked at
//!   through an `O_PATH` fd before it is opened for real;
//! - what the API creates is handed to the acting user (`owner`).

use std::ffi::{CStr, CString};
use std::fmt;
use std::io::{self, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustix::fs::{
    AtFlags, Dir, FileType, Gid, Mode, OFlags, ResolveFlags, Statx, StatxAttributes, StatxFlags,
    Uid,
};
use rustix::io::Errno;

use super::entry::{entry_info, Entry};
use super::metadata::{self, Metadata};
use e2b_wire::envd_setup::USER_ID;

use crate::paths;

/// Sandbox paths that are mount points of every sandbox's layout. They are
/// never removed or moved: the kernel would refuse the final `rmdir` only
/// after a recursive remove had emptied them.
pub(crate) const MOUNT_POINTS: [&str; 4] = ["/", "/home/user", "/tmp", "/var/tmp"];

/// Kernel pseudo-filesystems (`statfs` magic numbers from
/// `<linux/magic.h>`, and names for messages). Their files are the host
/// kernel's state and controls, not the sandbox's data: reading
/// `/proc/kcore` or writing `/proc/sys/…` as host root through a procfs
/// the sandbox mounted must be impossible, and a `mkdir` in cgroupfs,
/// tracefs or configfs creates kernel objects. The API lists their names
/// and stats entries, nothing more.
pub(crate) const PSEUDO_FILESYSTEMS: [(u32, &str); 18] = [
    (0x0000_9fa0, "proc"),
    (0x6265_6572, "sysfs"),
    (0x0027_e0eb, "cgroup"),
    (0x6367_7270, "cgroup2"),
    (0x0000_1cd1, "devpts"),
    (0x1980_0202, "mqueue"),
    (0x7363_6673, "securityfs"),
    (0x6462_6720, "debugfs"),
    (0x7472_6163, "tracefs"),
    (0xcafe_4a11, "bpf"),
    (0x4249_4e4d, "binfmt_misc"),
    (0x6265_6570, "configfs"),
    (0x6165_676c, "pstore"),
    (0xde5e_81e4, "efivarfs"),
    (0x6e73_6673, "nsfs"),
    (0x6573_5543, "fusectl"),
    (0xf97c_ff8c, "selinuxfs"),
    (0x4341_5d53, "smackfs"),
];

/// Modes of what the API creates (before the server's umask), as envd.
const DIR_MODE: u32 = 0o755;
const FILE_MODE: u32 = 0o644;

/// Deepest directory tree Remove and a cross-mount Move walk: they
/// recurse, and a sandbox can nest directories without limit.
const MAX_TREE_DEPTH: usize = 256;

/// How often a resolution is retried when the kernel answers `EAGAIN`
/// (`RESOLVE_IN_ROOT` gives up when a rename races with a `..` walk).
const RESOLVE_RETRIES: usize = 8;

/// Resolution of a whole path: inside the root, no `/proc` magic links.
const IN_ROOT: ResolveFlags = ResolveFlags::IN_ROOT.union(ResolveFlags::NO_MAGICLINKS);

/// Resolution of one component under a directory fd already resolved:
/// never a symlink, never above that directory.
const ONE_COMPONENT: ResolveFlags = ResolveFlags::BENEATH
    .union(ResolveFlags::NO_SYMLINKS)
    .union(ResolveFlags::NO_MAGICLINKS);

/// An `O_PATH` handle on a directory: resolves, stats, serves as `*at` base.
const DIR_PATH: OFlags = OFlags::PATH.union(OFlags::DIRECTORY);

/// Opening content: a FIFO must not block, a terminal must not become ours.
const NO_SURPRISES: OFlags = OFlags::NONBLOCK.union(OFlags::NOCTTY);

/// The id an unmapped host id shows as inside a user namespace.
const OVERFLOW_ID: u32 = 65_534;

/// One line of a user namespace's `uid_map`/`gid_map`: `count` ids from
/// `inside` are the host ids from `host`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IdMap {
    /// First id inside the sandbox.
    pub inside: u32,
    /// The host id it is.
    pub host: u32,
    /// How many ids follow.
    pub count: u32,
}

impl IdMap {
    /// The id inside that `host_id` is, `None` when it is not mapped.
    fn inside_of(self, host_id: u32) -> Option<u32> {
        host_id
            .checked_sub(self.host)
            .filter(|offset| *offset < self.count)
            .map(|offset| self.inside + offset)
    }
}

/// How `EntryInfo.owner`/`group` name the host ids the server sees: by
/// the name the id has inside the sandbox (`root`, `user`, else its
/// number; `nobody` when unmapped, as the kernel shows it inside).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OwnerNames {
    /// The sandbox's uid map.
    pub uids: IdMap,
    /// The sandbox's gid map.
    pub gids: IdMap,
}

impl OwnerNames {
    /// Names as envd sees ids inside its sandbox: each id is itself.
    pub fn inside() -> Self {
        let all = IdMap {
            inside: 0,
            host: 0,
            count: u32::MAX,
        };
        Self {
            uids: all,
            gids: all,
        }
    }

    /// Only host `uid`/`gid` are mapped, as `user`.
    pub fn single_user(uid: u32, gid: u32) -> Self {
        let one = |host| IdMap {
            inside: USER_ID,
            host,
            count: 1,
        };
        Self {
            uids: one(uid),
            gids: one(gid),
        }
    }

    /// The owner name of host uid `uid`.
    pub fn owner(&self, uid: u32) -> String {
        inside_name(self.uids.inside_of(uid))
    }

    /// The group name of host gid `gid`.
    pub fn group(&self, gid: u32) -> String {
        inside_name(self.gids.inside_of(gid))
    }
}

fn inside_name(id: Option<u32>) -> String {
    match id {
        Some(0) => "root".into(),
        Some(USER_ID) => "user".into(),
        // The kernel's overflow id: a host id the sandbox does not map.
        Some(OVERFLOW_ID) | None => "nobody".into(),
        Some(id) => id.to_string(),
    }
}

/// What an operation was doing when it failed (Go's `PathError.Op`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// Resolving or opening a file.
    Open,
    /// Reading a file's content.
    Read,
    /// Writing a file's content.
    Write,
    /// Looking at an entry.
    Stat,
    /// Listing a directory.
    ReadDir,
    /// Making a directory (also a write's parents).
    Mkdir,
    /// Moving an entry.
    Rename,
    /// Removing an entry.
    Remove,
}

impl Op {
    fn as_str(self) -> &'static str {
        match self {
            Op::Open => "open",
            Op::Read => "read",
            Op::Write => "write",
            Op::Stat => "stat",
            Op::ReadDir => "readdir",
            Op::Mkdir => "mkdir",
            Op::Rename => "rename",
            Op::Remove => "remove",
        }
    }
}

/// Why an operation failed.
#[derive(Debug)]
pub(crate) enum FsErrorKind {
    /// Nothing there (`ENOENT`).
    NotFound,
    /// A directory was needed (`ENOTDIR`).
    NotADirectory,
    /// A directory where content was needed (`EISDIR`).
    IsADirectory,
    /// A FIFO, socket or device where a regular file was needed.
    NotRegular,
    /// On the kernel pseudo-filesystem named ([`PSEUDO_FILESYSTEMS`]).
    PseudoFs(&'static str),
    /// A read-only mount, or one of the [`MOUNT_POINTS`] (`EROFS`).
    ReadOnly,
    /// `EACCES`/`EPERM`.
    PermissionDenied,
    /// `ENOSPC`/`EDQUOT`.
    NoSpace,
    /// `ELOOP`: a symlink loop, or a symlink where none may be.
    TooManySymlinks,
    /// `EEXIST`.
    AlreadyExists,
    /// A path the kernel cannot take (NUL byte, name too long).
    InvalidPath(&'static str),
    /// Anything else.
    Other(io::Error),
}

impl fmt::Display for FsErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FsErrorKind::NotFound => f.write_str("no such file or directory"),
            FsErrorKind::NotADirectory => f.write_str("not a directory"),
            FsErrorKind::IsADirectory => f.write_str("is a directory"),
            FsErrorKind::NotRegular => f.write_str("not a regular file"),
            FsErrorKind::PseudoFs(fs) => write!(
                f,
                "on the kernel pseudo-filesystem {fs}, which the files API does not touch"
            ),
            FsErrorKind::ReadOnly => f.write_str("read-only file system"),
            FsErrorKind::PermissionDenied => f.write_str("permission denied"),
            FsErrorKind::NoSpace => f.write_str("no space left on device"),
            FsErrorKind::TooManySymlinks => f.write_str("too many levels of symbolic links"),
            FsErrorKind::AlreadyExists => f.write_str("file exists"),
            FsErrorKind::InvalidPath(why) => f.write_str(why),
            FsErrorKind::Other(e) => e.fmt(f),
        }
    }
}

impl From<Errno> for FsErrorKind {
    fn from(e: Errno) -> Self {
        match e {
            Errno::NOENT => FsErrorKind::NotFound,
            Errno::NOTDIR => FsErrorKind::NotADirectory,
            Errno::ISDIR => FsErrorKind::IsADirectory,
            Errno::ROFS => FsErrorKind::ReadOnly,
            Errno::ACCESS | Errno::PERM => FsErrorKind::PermissionDenied,
            Errno::NOSPC | Errno::DQUOT => FsErrorKind::NoSpace,
            Errno::LOOP => FsErrorKind::TooManySymlinks,
            Errno::EXIST => FsErrorKind::AlreadyExists,
            // open(2) of a FIFO without a reader (non-blocking) or a socket.
            Errno::NXIO => FsErrorKind::NotRegular,
            Errno::NAMETOOLONG => FsErrorKind::InvalidPath("file name too long"),
            other => FsErrorKind::Other(other.into()),
        }
    }
}

/// A failed operation on a sandbox path, shown Go-style:
/// `"{op} {path}: {kind}"`.
#[derive(Debug)]
pub(crate) struct FsError {
    /// Why.
    pub kind: FsErrorKind,
    /// What was being done.
    pub op: Op,
    /// The clean sandbox path the failure is about (for a missing parent
    /// or a file in the way, that component's path).
    pub path: String,
}

impl FsError {
    fn new(kind: FsErrorKind, op: Op, path: &str) -> Self {
        Self {
            kind,
            op,
            path: path.to_string(),
        }
    }

    fn errno(e: Errno, op: Op, path: &str) -> Self {
        Self::new(e.into(), op, path)
    }

    /// The failure `e` of `op` on `path`.
    pub fn from_io(e: io::Error, op: Op, path: &str) -> Self {
        match e.raw_os_error() {
            Some(raw) => Self::errno(Errno::from_raw_os_error(raw), op, path),
            None => Self::new(FsErrorKind::Other(e), op, path),
        }
    }
}

impl fmt::Display for FsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: {}", self.op.as_str(), self.path, self.kind)
    }
}

impl std::error::Error for FsError {}

/// A regular file opened for reading.
#[derive(Debug)]
pub(crate) struct ReadFile {
    /// The open file (blocking reads; stream big ones from the pool).
    pub file: std::fs::File,
    /// Its size when opened.
    pub size: u64,
}

/// What `statx` says about an entry, as the files API needs it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Meta {
    /// File, directory, symlink, FIFO, …
    pub file_type: FileType,
    /// Permission bits (with set-id and sticky bits).
    pub perm: u32,
    /// Host uid of the owner.
    pub uid: u32,
    /// Host gid of the group.
    pub gid: u32,
    /// Size in bytes.
    pub size: u64,
    /// Last modification.
    pub modified: Option<SystemTime>,
    /// Whether it is the root of a mount.
    pub mount_root: bool,
}

impl Meta {
    fn from_statx(s: &Statx) -> Self {
        let mtime = Duration::new(0, s.stx_mtime.tv_nsec);
        let modified = match u64::try_from(s.stx_mtime.tv_sec) {
            Ok(secs) => UNIX_EPOCH.checked_add(Duration::from_secs(secs) + mtime),
            Err(_) => UNIX_EPOCH
                .checked_sub(Duration::from_secs(s.stx_mtime.tv_sec.unsigned_abs()) - mtime),
        };
        let mode = u32::from(s.stx_mode);
        Self {
            file_type: FileType::from_raw_mode(mode),
            perm: mode & 0o7777,
            uid: s.stx_uid,
            gid: s.stx_gid,
            size: s.stx_size,
            modified,
            mount_root: s.stx_attributes_mask.contains(StatxAttributes::MOUNT_ROOT)
                && s.stx_attributes.contains(StatxAttributes::MOUNT_ROOT),
        }
    }

    /// A directory (not a symlink to one).
    pub fn is_dir(&self) -> bool {
        self.file_type == FileType::Directory
    }

    /// A symlink.
    pub fn is_symlink(&self) -> bool {
        self.file_type == FileType::Symlink
    }
}

/// The files API's handle on one sandbox's filesystem, acting for one user.
/// Cheap to clone (for the blocking pool).
#[derive(Debug, Clone)]
pub(crate) struct SandboxFs {
    root: Arc<OwnedFd>,
    owner: Option<(u32, u32)>,
    names: OwnerNames,
}

impl SandboxFs {
    /// The filesystem under `root` (an `O_PATH` directory fd, see
    /// [`SandboxFs::open_root`]). What the API creates is chowned to
    /// `owner` (host uid, gid); `None` leaves it the server's.
    pub fn new(root: Arc<OwnedFd>, owner: Option<(u32, u32)>, names: OwnerNames) -> Self {
        Self { root, owner, names }
    }

    /// Opens `dir` (the sandbox's `/`, or its directory without
    /// isolation) as a root for [`SandboxFs::new`].
    pub fn open_root(dir: &Path) -> io::Result<OwnedFd> {
        rustix::fs::open(dir, DIR_PATH | OFlags::CLOEXEC, Mode::empty()).map_err(Into::into)
    }

    /// Opens the regular file at `path` for reading, following symlinks
    /// inside the root.
    pub fn open_read(&self, path: &str) -> Result<ReadFile, FsError> {
        let clean = checked(path, Op::Open)?;
        let rel = rel(&clean);
        let open_err = |e| FsError::errno(e, Op::Open, &clean);
        // Look through an O_PATH fd first: opening a device or a FIFO for
        // real already has effects.
        let probe = self.resolve(rel, OFlags::PATH, 0).map_err(open_err)?;
        check_content(&probe, Op::Open, &clean)?;
        let fd = self
            .resolve(rel, OFlags::RDONLY | NO_SURPRISES, 0)
            .map_err(open_err)?;
        // The entry may have been swapped since the probe.
        let meta = check_content(&fd, Op::Open, &clean)?;
        Ok(ReadFile {
            file: fd.into(),
            size: meta.size,
        })
    }

    /// Replaces the content of the regular file at `path` (following
    /// symlinks inside the root) with `data`, creating it (mode 0644) and
    /// its parents (0755) as needed; its metadata becomes `md` (none
    /// clears it, as envd). Returns the metadata the file then has.
    pub fn write_with_metadata(
        &self,
        path: &str,
        data: &[u8],
        md: &Metadata,
    ) -> Result<Metadata, FsError> {
        let clean = checked(path, Op::Open)?;
        let (fd, created) = self.open_for_write(&clean)?;
        if created {
            self.hand_over(&fd)
                .map_err(|e| FsError::errno(e, Op::Open, &clean))?;
        }
        // Truncated only now that it is known to be a regular file here.
        rustix::fs::ftruncate(&fd, 0).map_err(|e| FsError::errno(e, Op::Write, &clean))?;
        let mut file = std::fs::File::from(fd);
        file.write_all(data)
            .map_err(|e| FsError::from_io(e, Op::Write, &clean))?;
        match metadata::replace(&file, md) {
            Ok(true) => {}
            // As envd: the content is written, the metadata dropped, and
            // the answer (read back) shows none.
            Ok(false) => tracing::warn!(
                path = %clean,
                "the filesystem keeps no user extended attributes: metadata not stored"
            ),
            Err(e) => {
                let kind = match e {
                    Errno::NOSPC | Errno::DQUOT => FsErrorKind::NoSpace,
                    e => FsErrorKind::Other(io::Error::other(format!(
                        "storing file metadata: {}",
                        io::Error::from(e)
                    ))),
                };
                return Err(FsError::new(kind, Op::Write, &clean));
            }
        }
        Ok(metadata::read_fd(&file))
    }

    /// [`SandboxFs::write_with_metadata`] without metadata.
    #[cfg(test)]
    pub fn write(&self, path: &str, data: &[u8]) -> Result<(), FsError> {
        self.write_with_metadata(path, data, &Metadata::new())
            .map(|_| ())
    }

    /// Describes the entry at `path` itself (a symlink, not its target).
    pub fn stat(&self, path: &str) -> Result<Entry, FsError> {
        let clean = checked(path, Op::Stat)?;
        if clean == "/" {
            let meta = meta_of(&*self.root).map_err(|e| FsError::errno(e, Op::Stat, "/"))?;
            return Ok(Entry {
                info: entry_info("/", &meta, None, false, &self.names),
                metadata: metadata::read_at(&*self.root, None),
            });
        }
        let (parent, name) = self.parent_of(&clean, Op::Stat)?;
        let meta =
            meta_at(&parent, name, false).map_err(|e| FsError::errno(e, Op::Stat, &clean))?;
        Ok(self.describe(&parent, name, rel(&clean).as_bytes(), &clean, &meta))
    }

    /// Whether `path` is a directory (following symlinks inside the root).
    pub fn is_dir(&self, path: &str) -> bool {
        checked(path, Op::Stat).is_ok_and(|clean| self.resolve(rel(&clean), DIR_PATH, 0).is_ok())
    }

    /// The entries under the directory at `path` (following symlinks in
    /// `path`), `depth` levels deep (1: its children), sorted by name per
    /// directory. Symlinked directories and pseudo-filesystems are listed
    /// but not entered.
    pub fn list_dir(&self, path: &str, depth: u32) -> Result<Vec<Entry>, FsError> {
        let clean = checked(path, Op::ReadDir)?;
        let rel = rel(&clean);
        let dir = self
            .resolve(rel, OFlags::RDONLY | OFlags::DIRECTORY, 0)
            .map_err(|e| FsError::errno(e, Op::ReadDir, &clean))?;
        let mut out = Vec::new();
        self.walk(&dir, rel.as_bytes(), &clean, depth.max(1), &mut out)?;
        Ok(out)
    }

    /// Makes the directory at `path` with its parents; one that exists is
    /// [`FsErrorKind::AlreadyExists`], another entry there
    /// [`FsErrorKind::NotADirectory`].
    pub fn make_dir(&self, path: &str) -> Result<Entry, FsError> {
        let clean = checked(path, Op::Mkdir)?;
        match self.resolve(rel(&clean), OFlags::PATH, 0) {
            Ok(fd) => {
                let meta = meta_of(&fd).map_err(|e| FsError::errno(e, Op::Mkdir, &clean))?;
                let kind = if meta.is_dir() {
                    FsErrorKind::AlreadyExists
                } else {
                    FsErrorKind::NotADirectory
                };
                return Err(FsError::new(kind, Op::Mkdir, &clean));
            }
            // A file among the parents is reported by make_dirs, by name.
            Err(Errno::NOENT | Errno::NOTDIR) => {}
            Err(e) => return Err(FsError::errno(e, Op::Mkdir, &clean)),
        }
        self.make_dirs(&clean)?;
        self.stat(&clean)
    }

    /// Moves the entry at `source` (a symlink itself, not its target) to
    /// `destination`, replacing what is there as rename(2) does and making
    /// the destination's parents. Across mounts it copies, then removes.
    pub fn rename(&self, source: &str, destination: &str) -> Result<Entry, FsError> {
        let src = checked(source, Op::Rename)?;
        let dst = checked(destination, Op::Rename)?;
        for p in [&src, &dst] {
            refuse_mount_point(p, Op::Rename)?;
        }
        let (sdir, sname) = self.parent_of(&src, Op::Rename)?;
        let meta = meta_at(&sdir, sname, false).map_err(|e| FsError::errno(e, Op::Rename, &src))?;
        check_mutable(&sdir, &meta, Op::Rename, &src)?;
        let (dparent, dname) =
            split(&dst).ok_or_else(|| FsError::new(FsErrorKind::ReadOnly, Op::Rename, &dst))?;
        let ddir = self.make_dirs(dparent)?;
        refuse_pseudo(&ddir, Op::Rename, &dst)?;
        match rustix::fs::renameat(&sdir, sname, &ddir, dname) {
            Ok(()) => {}
            // The sandbox's /home/user, /tmp and /var/tmp are separate
            // mounts: move as mv does.
            Err(Errno::XDEV) => move_by_copy(&sdir, sname, &meta, &ddir, dname, &src, &dst)?,
            Err(e) => return Err(FsError::errno(e, Op::Rename, &src)),
        }
        self.stat(&dst)
    }

    /// Removes the entry at `path` (a symlink itself, not its target), a
    /// directory with everything in it.
    pub fn remove(&self, path: &str) -> Result<(), FsError> {
        let clean = checked(path, Op::Remove)?;
        refuse_mount_point(&clean, Op::Remove)?;
        let (dir, name) = self.parent_of(&clean, Op::Remove)?;
        let meta = meta_at(&dir, name, false).map_err(|e| FsError::errno(e, Op::Remove, &clean))?;
        check_mutable(&dir, &meta, Op::Remove, &clean)?;
        remove_entry(&dir, name, &meta, &clean, 0)
    }

    /// `openat2` of `rel` under the root, inside it, with `O_CLOEXEC`.
    fn resolve<P: rustix::path::Arg + Copy>(
        &self,
        rel: P,
        flags: OFlags,
        mode: u32,
    ) -> Result<OwnedFd, Errno> {
        let mut tries = 0;
        loop {
            let r = rustix::fs::openat2(
                &*self.root,
                rel,
                flags | OFlags::CLOEXEC,
                Mode::from_raw_mode(mode),
                IN_ROOT,
            );
            match r {
                Err(Errno::AGAIN | Errno::INTR) if tries < RESOLVE_RETRIES => tries += 1,
                r => return r,
            }
        }
    }

    /// The parent of the clean path `clean` (not `/`), resolved, and the
    /// last component's name.
    fn parent_of<'p>(&self, clean: &'p str, op: Op) -> Result<(OwnedFd, &'p str), FsError> {
        let (parent, name) = split(clean)
            .ok_or_else(|| FsError::new(FsErrorKind::InvalidPath("no parent"), op, clean))?;
        let fd = self
            .resolve(rel(parent), DIR_PATH, 0)
            .map_err(|e| FsError::errno(e, op, clean))?;
        Ok((fd, name))
    }

    /// Opens `clean` for writing: an existing regular file, else a new one
    /// (after its parents). `true` when this call created it.
    fn open_for_write(&self, clean: &str) -> Result<(OwnedFd, bool), FsError> {
        let rel = rel(clean);
        let open_err = |e| FsError::errno(e, Op::Open, clean);
        let write = OFlags::WRONLY | NO_SURPRISES;
        let create = write | OFlags::CREATE;
        for _ in 0..2 {
            match self.resolve(rel, OFlags::PATH, 0) {
                Ok(probe) => {
                    check_content(&probe, Op::Open, clean)?;
                    let fd = self.resolve(rel, write, 0).map_err(open_err)?;
                    check_content(&fd, Op::Open, clean)?;
                    return Ok((fd, false));
                }
                Err(Errno::NOENT) => {}
                Err(e) => return Err(open_err(e)),
            }
            if let Some((parent, _)) = split(clean) {
                let dir = self.make_dirs(parent)?;
                // The kernel's pseudo-filesystems refuse O_CREAT, all but
                // efivarfs (a new file is a new EFI variable): ask none.
                refuse_pseudo(&dir, Op::Open, clean)?;
            }
            match self.resolve(rel, create | OFlags::EXCL, FILE_MODE) {
                Ok(fd) => {
                    check_content(&fd, Op::Open, clean)?;
                    return Ok((fd, true));
                }
                // Made meanwhile (look again), or a dangling symlink:
                // O_EXCL never follows one.
                Err(Errno::EXIST) => {}
                Err(e) => return Err(open_err(e)),
            }
        }
        // Missing twice and a name in the way: a dangling symlink, whose
        // target open(2) creates (inside the root).
        let fd = self.resolve(rel, create, FILE_MODE).map_err(open_err)?;
        check_content(&fd, Op::Open, clean)?;
        Ok((fd, true))
    }

    /// `mkdir -p` of the clean path `dir`; returns it as an `O_PATH` fd.
    /// Each missing component is made with mkdirat under its resolved
    /// parent, so a symlink among them leads nowhere outside the root.
    fn make_dirs(&self, dir: &str) -> Result<OwnedFd, FsError> {
        let mut cur = self
            .resolve(".", DIR_PATH, 0)
            .map_err(|e| FsError::errno(e, Op::Mkdir, "/"))?;
        let mut prefix = String::with_capacity(dir.len());
        for comp in dir.split('/').filter(|c| !c.is_empty()) {
            prefix.push('/');
            prefix.push_str(comp);
            let err = |e| FsError::errno(e, Op::Mkdir, &prefix);
            match self.resolve(rel(&prefix), DIR_PATH, 0) {
                Ok(fd) => {
                    cur = fd;
                    continue;
                }
                Err(Errno::NOENT) => {}
                Err(e) => return Err(err(e)),
            }
            refuse_pseudo(&cur, Op::Mkdir, &prefix)?;
            match rustix::fs::mkdirat(&cur, comp, Mode::from_raw_mode(DIR_MODE)) {
                Ok(()) => self.hand_over_at(&cur, comp).map_err(err)?,
                // Made meanwhile; opened below like any other.
                Err(Errno::EXIST) => {}
                Err(e) => return Err(err(e)),
            }
            cur = self.resolve(rel(&prefix), DIR_PATH, 0).map_err(err)?;
        }
        Ok(cur)
    }

    /// Lists `dir` (at root-relative `rel`, shown as `shown`) into `out`.
    fn walk(
        &self,
        dir: &OwnedFd,
        rel: &[u8],
        shown: &str,
        depth: u32,
        out: &mut Vec<Entry>,
    ) -> Result<(), FsError> {
        let names = read_names(dir).map_err(|e| FsError::errno(e, Op::ReadDir, shown))?;
        for name in names {
            let child_shown = child_path(shown, &String::from_utf8_lossy(name.to_bytes()));
            let child_rel = if rel == b"." {
                name.to_bytes().to_vec()
            } else {
                [rel, b"/", name.to_bytes()].concat()
            };
            // Gone since the listing: not listed.
            let Ok(meta) = meta_at(dir, name.as_c_str(), false) else {
                continue;
            };
            out.push(self.describe(dir, name.as_c_str(), &child_rel, &child_shown, &meta));
            if depth <= 1 || !meta.is_dir() {
                continue;
            }
            let child = match open_child(dir, name.as_c_str(), OFlags::RDONLY | OFlags::DIRECTORY) {
                Ok(fd) => fd,
                // Replaced since the stat: listed as it was, not entered.
                Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP) => continue,
                Err(e) => return Err(FsError::errno(e, Op::ReadDir, &child_shown)),
            };
            // A pseudo-filesystem's tree is the kernel's: names at most.
            if !matches!(pseudo_fs(&child), Ok(None)) {
                continue;
            }
            self.walk(&child, &child_rel, &child_shown, depth - 1, out)?;
        }
        Ok(())
    }

    /// `EntryInfo` of `name` in `parent` (lstat'ed as `meta`), whose path
    /// is `rel` under the root and `shown` in the sandbox.
    fn describe<N: rustix::path::Arg + Copy>(
        &self,
        parent: &OwnedFd,
        name: N,
        rel: &[u8],
        shown: &str,
        meta: &Meta,
    ) -> Entry {
        let (target, to_dir) = if meta.is_symlink() {
            // As envd reports it: absolute, a relative target taken from
            // the link's directory (a text, never followed here).
            let target = rustix::fs::readlinkat(parent, name, Vec::new())
                .ok()
                .map(|t| t.to_string_lossy().into_owned())
                .map(|t| match t.starts_with('/') {
                    true => crate::paths::clean(&t),
                    false => {
                        let dir = shown.rsplit_once('/').map_or("/", |(d, _)| d);
                        crate::paths::clean(&format!("{dir}/{t}"))
                    }
                });
            // Where the link leads, resolved as the sandbox would.
            let to_dir = self
                .resolve(rel, OFlags::PATH, 0)
                .ok()
                .and_then(|fd| meta_of(&fd).ok())
                .is_some_and(|m| m.is_dir());
            (target, to_dir)
        } else {
            (None, false)
        };
        // User metadata lives on files and directories (the kernel keeps
        // no user attributes on symlinks, and nothing else is read).
        let metadata = if meta.is_dir() || meta.file_type == FileType::RegularFile {
            name.as_cow_c_str()
                .map(|n| metadata::read_at(parent, Some(n.to_bytes())))
                .unwrap_or_default()
        } else {
            Metadata::new()
        };
        Entry {
            info: entry_info(shown, meta, target, to_dir, &self.names),
            metadata,
        }
    }

    /// The directory at `path` (following symlinks inside the root, as
    /// envd's stat does), opened for a watcher, and its clean path. A
    /// pseudo-filesystem is not watched.
    pub fn open_watched_dir(&self, path: &str) -> Result<(OwnedFd, String), FsError> {
        let clean = checked(path, Op::Stat)?;
        let fd = self
            .resolve(rel(&clean), OFlags::RDONLY | OFlags::DIRECTORY, 0)
            .map_err(|e| FsError::errno(e, Op::Stat, &clean))?;
        refuse_pseudo(&fd, Op::Stat, &clean)?;
        Ok((fd, clean))
    }

    /// Gives a file this call created to the acting user.
    fn hand_over(&self, fd: &OwnedFd) -> Result<(), Errno> {
        match self.owner {
            Some((uid, gid)) => {
                rustix::fs::fchown(fd, Some(Uid::from_raw(uid)), Some(Gid::from_raw(gid)))
            }
            None => Ok(()),
        }
    }

    /// Gives the directory `name` this call made in `dir` to the acting
    /// user (without following: whatever is there now is what gets it).
    fn hand_over_at(&self, dir: &OwnedFd, name: &str) -> Result<(), Errno> {
        match self.owner {
            Some((uid, gid)) => rustix::fs::chownat(
                dir,
                name,
                Some(Uid::from_raw(uid)),
                Some(Gid::from_raw(gid)),
                AtFlags::SYMLINK_NOFOLLOW,
            ),
            None => Ok(()),
        }
    }
}

/// `path` absolutized and cleaned the way envd does; a NUL byte cannot
/// reach the kernel.
fn checked(path: &str, op: Op) -> Result<String, FsError> {
    let clean = paths::clean(&paths::absolutize(path));
    if clean.contains('\0') {
        return Err(FsError::new(
            FsErrorKind::InvalidPath("path contains a NUL byte"),
            op,
            &clean,
        ));
    }
    Ok(clean)
}

/// A clean sandbox path relative to the root (`.` for `/`).
fn rel(clean: &str) -> &str {
    match clean.trim_start_matches('/') {
        "" => ".",
        rest => rest,
    }
}

/// `(parent, name)` of a clean path; `None` for `/`.
fn split(clean: &str) -> Option<(&str, &str)> {
    let (parent, name) = clean.rsplit_once('/')?;
    if name.is_empty() {
        return None;
    }
    Some((if parent.is_empty() { "/" } else { parent }, name))
}

fn child_path(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

/// `statx` of the open `fd` itself.
fn meta_of<F: AsFd>(fd: F) -> Result<Meta, Errno> {
    rustix::fs::statx(fd, c"", AtFlags::EMPTY_PATH, StatxFlags::BASIC_STATS)
        .map(|s| Meta::from_statx(&s))
}

/// `statx` of `name` in `dir`, following a symlink there only if `follow`.
fn meta_at<F: AsFd, N: rustix::path::Arg>(dir: F, name: N, follow: bool) -> Result<Meta, Errno> {
    let mut flags = AtFlags::NO_AUTOMOUNT;
    if !follow {
        flags |= AtFlags::SYMLINK_NOFOLLOW;
    }
    rustix::fs::statx(dir, name, flags, StatxFlags::BASIC_STATS).map(|s| Meta::from_statx(&s))
}

/// The pseudo-filesystem `fd` lives on, if any.
// `f_type`'s type differs between architectures (i64 here, u32 on s390x).
#[allow(clippy::unnecessary_cast)]
fn pseudo_fs<F: AsFd>(fd: F) -> Result<Option<&'static str>, Errno> {
    let magic = rustix::fs::fstatfs(fd)?.f_type as u32;
    Ok(PSEUDO_FILESYSTEMS
        .iter()
        .find(|(m, _)| *m == magic)
        .map(|(_, name)| *name))
}

/// Refuses when `fd` (about `path`) lives on a pseudo-filesystem.
fn refuse_pseudo(fd: &OwnedFd, op: Op, path: &str) -> Result<(), FsError> {
    match pseudo_fs(fd) {
        Ok(None) => Ok(()),
        Ok(Some(fs)) => Err(FsError::new(FsErrorKind::PseudoFs(fs), op, path)),
        Err(e) => Err(FsError::errno(e, op, path)),
    }
}

/// The open `fd` must be a regular file on a real filesystem; its
/// metadata when it is.
fn check_content(fd: &OwnedFd, op: Op, path: &str) -> Result<Meta, FsError> {
    let meta = meta_of(fd).map_err(|e| FsError::errno(e, op, path))?;
    match meta.file_type {
        FileType::RegularFile => {}
        FileType::Directory => return Err(FsError::new(FsErrorKind::IsADirectory, op, path)),
        _ => return Err(FsError::new(FsErrorKind::NotRegular, op, path)),
    }
    refuse_pseudo(fd, op, path)?;
    Ok(meta)
}

/// The sandbox's own mount points stay where they are.
fn refuse_mount_point(clean: &str, op: Op) -> Result<(), FsError> {
    if MOUNT_POINTS.contains(&clean) {
        return Err(FsError::new(FsErrorKind::ReadOnly, op, clean));
    }
    Ok(())
}

/// Whether the entry lstat'ed as `meta` in `parent` may be removed or
/// moved: not a mount point (wherever a symlinked parent put it), not on
/// a pseudo-filesystem.
fn check_mutable(parent: &OwnedFd, meta: &Meta, op: Op, path: &str) -> Result<(), FsError> {
    if meta.mount_root {
        return Err(FsError::new(FsErrorKind::ReadOnly, op, path));
    }
    refuse_pseudo(parent, op, path)
}

/// Opens the single component `name` of `dir`, never through a symlink.
fn open_child<N: rustix::path::Arg>(
    dir: &OwnedFd,
    name: N,
    flags: OFlags,
) -> Result<OwnedFd, Errno> {
    rustix::fs::openat2(
        dir,
        name,
        flags | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
        ONE_COMPONENT,
    )
}

/// The names in the directory `dir` (without `.` and `..`), sorted.
fn read_names(dir: &OwnedFd) -> Result<Vec<CString>, Errno> {
    let mut names = Vec::new();
    for entry in Dir::read_from(dir)? {
        let name = entry?.file_name().to_owned();
        if name.as_c_str() != c"." && name.as_c_str() != c".." {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

/// Removes `name` (lstat'ed as `meta`) from `dir`, recursively; `shown` is
/// its sandbox path, `depth` how deep the walk already is.
fn remove_entry<N: rustix::path::Arg + Copy>(
    dir: &OwnedFd,
    name: N,
    meta: &Meta,
    shown: &str,
    depth: usize,
) -> Result<(), FsError> {
    let err = |e| FsError::errno(e, Op::Remove, shown);
    if !meta.is_dir() {
        return match rustix::fs::unlinkat(dir, name, AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(e) => Err(err(e)),
        };
    }
    if depth >= MAX_TREE_DEPTH {
        return Err(too_deep(Op::Remove, shown));
    }
    let sub = open_child(dir, name, OFlags::RDONLY | OFlags::DIRECTORY).map_err(err)?;
    refuse_pseudo(&sub, Op::Remove, shown)?;
    for child in read_names(&sub).map_err(err)? {
        let child_shown = child_path(shown, &String::from_utf8_lossy(child.to_bytes()));
        let m = match meta_at(&sub, child.as_c_str(), false) {
            Ok(m) => m,
            Err(Errno::NOENT) => continue,
            Err(e) => return Err(FsError::errno(e, Op::Remove, &child_shown)),
        };
        if m.mount_root {
            return Err(FsError::new(
                FsErrorKind::ReadOnly,
                Op::Remove,
                &child_shown,
            ));
        }
        remove_entry(&sub, child.as_c_str(), &m, &child_shown, depth + 1)?;
    }
    match rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR) {
        Ok(()) | Err(Errno::NOENT) => Ok(()),
        Err(e) => Err(err(e)),
    }
}

fn too_deep(op: Op, path: &str) -> FsError {
    FsError::new(
        FsErrorKind::Other(io::Error::other(format!(
            "directory tree deeper than {MAX_TREE_DEPTH} levels"
        ))),
        op,
        path,
    )
}

/// A move across mounts: copies `sname` (lstat'ed as `meta`) from `sdir`
/// to `dname` in `ddir` (replacing what is there, as rename(2) would),
/// then removes the source. A failed copy is removed again.
fn move_by_copy(
    sdir: &OwnedFd,
    sname: &str,
    meta: &Meta,
    ddir: &OwnedFd,
    dname: &str,
    src: &str,
    dst: &str,
) -> Result<(), FsError> {
    match meta_at(ddir, dname, false) {
        Ok(existing) => {
            let kind = match (meta.is_dir(), existing.is_dir()) {
                _ if existing.mount_root => Some(FsErrorKind::ReadOnly),
                (true, false) => Some(FsErrorKind::NotADirectory),
                (false, true) => Some(FsErrorKind::IsADirectory),
                _ => None,
            };
            if let Some(kind) = kind {
                return Err(FsError::new(kind, Op::Rename, dst));
            }
            // rename(2) replaces a directory only when it is empty: rmdir.
            let flags = if existing.is_dir() {
                AtFlags::REMOVEDIR
            } else {
                AtFlags::empty()
            };
            rustix::fs::unlinkat(ddir, dname, flags)
                .map_err(|e| FsError::errno(e, Op::Rename, dst))?;
        }
        Err(Errno::NOENT) => {}
        Err(e) => return Err(FsError::errno(e, Op::Rename, dst)),
    }
    if let Err(e) = copy_entry(sdir, sname, meta, ddir, dname, src, 0) {
        if let Ok(copied) = meta_at(ddir, dname, false) {
            let _ = remove_entry(ddir, dname, &copied, dst, 0);
        }
        return Err(e);
    }
    remove_entry(sdir, sname, meta, src, 0)
}

/// Copies `sname` (lstat'ed as `meta`) in `sdir` to the new `dname` in
/// `ddir`: regular files, directories and symlinks, with their owner
/// (when the server may) and permissions, set-id bits dropped.
fn copy_entry<N: rustix::path::Arg + Copy>(
    sdir: &OwnedFd,
    sname: N,
    meta: &Meta,
    ddir: &OwnedFd,
    dname: N,
    shown: &str,
    depth: usize,
) -> Result<(), FsError> {
    let err = |e| FsError::errno(e, Op::Rename, shown);
    let perm = Mode::from_raw_mode(meta.perm & 0o1777);
    match meta.file_type {
        FileType::Symlink => {
            let target = rustix::fs::readlinkat(sdir, sname, Vec::new()).map_err(err)?;
            rustix::fs::symlinkat(target.as_c_str(), ddir, dname).map_err(err)?;
            keep_owner(rustix::fs::chownat(
                ddir,
                dname,
                Some(Uid::from_raw(meta.uid)),
                Some(Gid::from_raw(meta.gid)),
                AtFlags::SYMLINK_NOFOLLOW,
            ))
            .map_err(err)
        }
        FileType::RegularFile => {
            let from = open_child(sdir, sname, OFlags::RDONLY | NO_SURPRISES).map_err(err)?;
            check_content(&from, Op::Rename, shown)?;
            let to = open_child(ddir, dname, OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL)
                .map_err(err)?;
            let mut to = std::fs::File::from(to);
            let mut from = std::fs::File::from(from);
            io::copy(&mut from, &mut to).map_err(|e| FsError::from_io(e, Op::Rename, shown))?;
            metadata::copy(&from, &to).map_err(err)?;
            finish_copy(&to, meta, perm).map_err(err)
        }
        FileType::Directory => {
            if depth >= MAX_TREE_DEPTH {
                return Err(too_deep(Op::Rename, shown));
            }
            if meta.mount_root && depth > 0 {
                return Err(FsError::new(FsErrorKind::ReadOnly, Op::Rename, shown));
            }
            let from = open_child(sdir, sname, OFlags::RDONLY | OFlags::DIRECTORY).map_err(err)?;
            refuse_pseudo(&from, Op::Rename, shown)?;
            rustix::fs::mkdirat(ddir, dname, Mode::from_raw_mode(0o700)).map_err(err)?;
            let to = open_child(ddir, dname, OFlags::RDONLY | OFlags::DIRECTORY).map_err(err)?;
            for child in read_names(&from).map_err(err)? {
                let child_shown = child_path(shown, &String::from_utf8_lossy(child.to_bytes()));
                let m = match meta_at(&from, child.as_c_str(), false) {
                    Ok(m) => m,
                    Err(Errno::NOENT) => continue,
                    Err(e) => return Err(FsError::errno(e, Op::Rename, &child_shown)),
                };
                let c = child.as_c_str();
                copy_entry(&from, c, &m, &to, c, &child_shown, depth + 1)?;
            }
            metadata::copy(&from, &to).map_err(err)?;
            finish_copy(&to, meta, perm).map_err(err)
        }
        _ => Err(FsError::new(FsErrorKind::NotRegular, Op::Rename, shown)),
    }
}

/// The subdirectory `name` of the watched directory `dir`, opened for a
/// recursive watcher: never through a symlink, never on a
/// pseudo-filesystem (`None` for anything else, or gone).
pub(crate) fn open_watched_child(dir: &OwnedFd, name: &CStr) -> Option<OwnedFd> {
    let fd = open_child(dir, name, OFlags::RDONLY | OFlags::DIRECTORY).ok()?;
    matches!(pseudo_fs(&fd), Ok(None)).then_some(fd)
}

/// The names in the directory `dir`, each with whether it is a directory
/// itself (not a symlink to one); empty when it cannot be read.
pub(crate) fn dir_children(dir: &OwnedFd) -> Vec<(CString, bool)> {
    read_names(dir)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|name| {
            let meta = meta_at(dir, name.as_c_str(), false).ok()?;
            Some((name, meta.is_dir()))
        })
        .collect()
}

/// Owner, then permissions (a chown clears set-id bits) of a copy.
fn finish_copy<F: AsFd>(to: F, meta: &Meta, perm: Mode) -> Result<(), Errno> {
    keep_owner(rustix::fs::fchown(
        &to,
        Some(Uid::from_raw(meta.uid)),
        Some(Gid::from_raw(meta.gid)),
    ))?;
    rustix::fs::fchmod(&to, perm)
}

/// A server that is not root keeps copies as its own: `EPERM` is fine.
fn keep_owner(r: Result<(), Errno>) -> Result<(), Errno> {
    match r {
        Err(Errno::PERM) => Ok(()),
        r => r,
    }
}

#[cfg(test)]
mod tests;
