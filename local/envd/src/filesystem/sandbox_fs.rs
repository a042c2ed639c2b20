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
use std::io::{self, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::sync::Arc;

use rustix::fs::{AtFlags, Dir, FileType, Gid, Mode, OFlags, ResolveFlags, StatxFlags, Uid};
use rustix::io::Errno;

use super::entry::{entry_info, Entry, Meta};
use super::metadata::{self, Metadata};

use crate::paths;

mod errors;
mod tree;

pub(crate) use super::owners::OwnerNames;
pub(crate) use errors::{connect_error, FsError, FsErrorKind, Op};
pub(crate) use tree::{dir_children, open_watched_child};
use tree::{move_by_copy, remove_entry};

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

/// A regular file opened for reading.
#[derive(Debug)]
pub(crate) struct ReadFile {
    /// The open file (blocking reads; stream big ones from the pool).
    pub file: std::fs::File,
    /// Its size when opened.
    pub size: u64,
}

/// The files API's handle on one sandbox's filesystem, acting for one user.
/// Cheap to clone (for the blocking pool).
#[derive(Debug, Clone)]
pub(crate) struct SandboxFs {
    root: Arc<OwnedFd>,
    owner: Option<(u32, u32)>,
    names: OwnerNames,
    /// Where the user's relative paths start.
    home: &'static str,
}

impl SandboxFs {
    /// The filesystem under `root` (an `O_PATH` directory fd, see
    /// [`SandboxFs::open_root`]). What the API creates is chowned to
    /// `owner` (host uid, gid); `None` leaves it the server's.
    pub fn new(root: Arc<OwnedFd>, owner: Option<(u32, u32)>, names: OwnerNames) -> Self {
        Self {
            root,
            owner,
            names,
            home: e2b_wire::HOME_DIR,
        }
    }

    /// The same, with relative paths starting at `home` (the user's).
    pub fn with_home(self, home: &'static str) -> Self {
        Self { home, ..self }
    }

    /// Acts as the user for as long as the guard lives, for a change (a
    /// write, a new directory, a move, a removal): the kernel checks the
    /// user's permissions (envd is the sandbox's root, whose root is
    /// writable everywhere) and what is made is the user's. Reads stay
    /// envd's, as E2B's envd reads for any user. Only on this
    /// thread, and only for a call that does not wait in between. Nothing
    /// changes where there is no owner to act as (no uid block) or it is
    /// root.
    fn act(&self) -> Acting {
        match self.owner {
            Some((uid, gid)) if uid != 0 => Acting(Some(Acting::set(uid, gid))),
            _ => Acting(None),
        }
    }

    /// A client's `path` made absolute for this user (`~`, relative) and
    /// cleaned (`.`, `..`), as the calls here take it.
    pub fn absolute(&self, path: &str) -> String {
        paths::clean(&paths::absolutize(path, self.home))
    }

    /// Opens `dir` (the sandbox's `/`, or its directory without
    /// isolation) as a root for [`SandboxFs::new`].
    pub fn open_root(dir: &Path) -> io::Result<OwnedFd> {
        rustix::fs::open(dir, DIR_PATH | OFlags::CLOEXEC, Mode::empty()).map_err(Into::into)
    }

    /// Opens the regular file at `path` for reading, following symlinks
    /// inside the root.
    pub fn open_read(&self, path: &str) -> Result<ReadFile, FsError> {
        let clean = checked(path, self.home, Op::Open)?;
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
        let _acting = self.act();
        let clean = checked(path, self.home, Op::Open)?;
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
        let clean = checked(path, self.home, Op::Stat)?;
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
        checked(path, self.home, Op::Stat)
            .is_ok_and(|clean| self.resolve(rel(&clean), DIR_PATH, 0).is_ok())
    }

    /// The entries under the directory at `path` (following symlinks in
    /// `path`), `depth` levels deep (1: its children), sorted by name per
    /// directory. Symlinked directories and pseudo-filesystems are listed
    /// but not entered.
    pub fn list_dir(&self, path: &str, depth: u32) -> Result<Vec<Entry>, FsError> {
        let clean = checked(path, self.home, Op::ReadDir)?;
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
        let _acting = self.act();
        let clean = checked(path, self.home, Op::Mkdir)?;
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
        let _acting = self.act();
        let src = checked(source, self.home, Op::Rename)?;
        let dst = checked(destination, self.home, Op::Rename)?;
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
        let _acting = self.act();
        let clean = checked(path, self.home, Op::Remove)?;
        refuse_mount_point(&clean, Op::Remove)?;
        // A path that is not there is removed already (E2B's envd removes
        // with Go's os.RemoveAll, which says the same): clean-ups that run
        // before the thing they clean up must not fail.
        let (dir, name) = match self.parent_of(&clean, Op::Remove) {
            Err(e) if matches!(e.kind, FsErrorKind::NotFound) => return Ok(()),
            other => other?,
        };
        let meta = match meta_at(&dir, name, false) {
            Err(Errno::NOENT) => return Ok(()),
            other => other.map_err(|e| FsError::errno(e, Op::Remove, &clean))?,
        };
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
        let clean = checked(path, self.home, Op::Stat)?;
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
fn checked(path: &str, home: &str, op: Op) -> Result<String, FsError> {
    let clean = paths::clean(&paths::absolutize(path, home));
    if clean.contains('\0') {
        return Err(FsError::new(
            FsErrorKind::InvalidPath("path contains a NUL byte"),
            op,
            &clean,
        ));
    }
    Ok(clean)
}

/// This thread's filesystem ids made a user's while it lives (see
/// [`SandboxFs::act`]), and set back when it is dropped.
struct Acting(Option<(u32, u32)>);

impl Acting {
    fn set(uid: u32, gid: u32) -> (u32, u32) {
        #[allow(unsafe_code)]
        // SAFETY: setfsgid(2) and setfsuid(2) take ids by value, touch no
        // memory and change only the calling thread's credentials; each
        // returns the previous id.
        let (gid, uid) = unsafe {
            (
                libc::syscall(libc::SYS_setfsgid, gid),
                libc::syscall(libc::SYS_setfsuid, uid),
            )
        };
        (
            u32::try_from(uid).unwrap_or(0),
            u32::try_from(gid).unwrap_or(0),
        )
    }
}

impl Drop for Acting {
    fn drop(&mut self) {
        if let Some((uid, gid)) = self.0 {
            Acting::set(uid, gid);
            // A change of filesystem ids makes the kernel mark the process
            // not dumpable; envd is as it was (the sandbox's root may
            // inspect it, as any of its processes).
            let _ =
                rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::Dumpable);
        }
    }
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

/// Opens the single component `name` of `dir`, never through a symlink;
/// one it creates is its owner's alone (`0600`) until its mode is set (a
/// copy's attributes are written first, as the user the API acts for).
fn open_child<N: rustix::path::Arg>(
    dir: &OwnedFd,
    name: N,
    flags: OFlags,
) -> Result<OwnedFd, Errno> {
    rustix::fs::openat2(
        dir,
        name,
        flags | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        // openat2 takes a mode with O_CREAT only.
        if flags.contains(OFlags::CREATE) {
            Mode::from_raw_mode(0o600)
        } else {
            Mode::empty()
        },
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

#[cfg(test)]
mod tests;
