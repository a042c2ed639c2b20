//! Whole trees: a recursive remove, a move across mounts by copy, and
//! the children a recursive watcher opens.

use super::*;

/// Removes `name` (lstat'ed as `meta`) from `dir`, recursively; `shown` is
/// its sandbox path, `depth` how deep the walk already is.
pub(super) fn remove_entry<N: rustix::path::Arg + Copy>(
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

pub(super) fn too_deep(op: Op, path: &str) -> FsError {
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
pub(super) fn move_by_copy(
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
