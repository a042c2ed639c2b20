//! Why a file operation failed, shown as envd (Go) shows it.

use std::fmt;
use std::io;

use e2b_wire::connect::{Code, ConnectError};
use rustix::io::Errno;

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
    pub(super) fn as_str(self) -> &'static str {
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
    /// On the kernel pseudo-filesystem named ([`super::PSEUDO_FILESYSTEMS`]).
    PseudoFs(&'static str),
    /// A read-only mount, or one of the [`super::MOUNT_POINTS`] (`EROFS`).
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
    pub(super) fn new(kind: FsErrorKind, op: Op, path: &str) -> Self {
        Self {
            kind,
            op,
            path: path.to_string(),
        }
    }

    pub(super) fn errno(e: Errno, op: Op, path: &str) -> Self {
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

/// The Connect error for a failed operation, in envd's words.
pub(crate) fn connect_error(e: FsError) -> ConnectError {
    use FsErrorKind as K;
    let code = match e.kind {
        K::NotFound => Code::NotFound,
        K::NotADirectory
        | K::IsADirectory
        | K::NotRegular
        | K::TooManySymlinks
        | K::InvalidPath(_) => Code::InvalidArgument,
        K::PseudoFs(_) | K::ReadOnly | K::PermissionDenied => Code::PermissionDenied,
        K::AlreadyExists => Code::AlreadyExists,
        K::NoSpace | K::Other(_) => Code::Internal,
    };
    ConnectError::new(code, e.to_string())
}
