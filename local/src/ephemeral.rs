//! An ephemeral server's data directory: a fresh `e2b-local-*` in the
//! temporary directory, holding an owner file (the server's pid, that
//! process's start time and its PID namespace). A server killed with
//! `kill -9` cannot remove its directory, and its sandboxes' disks stay
//! mounted there (their processes die with it): the next ephemeral
//! server's start unmounts and removes what dead servers left.
//!
//! The temporary directory is everyone's: a directory is removed only if
//! it is a real directory (no symlink) of this user that no one else may
//! write (the server opens it to the sandboxes' users: 0711), whose
//! owner file is this user's and names a server of this PID namespace
//! that no longer runs (its pid gone, or another process's now). A
//! directory without an owner file (a server still starting) is left.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use tempfile::TempDir;

use crate::isolation::{thaw_stale, unmount};

/// The directories' name prefix.
const PREFIX: &str = "e2b-local-";
/// The owner file in each.
const OWNER: &str = ".owner";

/// A fresh data directory for an ephemeral server, in the temporary
/// directory, after removing those dead servers left there.
pub(crate) fn create() -> std::io::Result<TempDir> {
    let temp = std::env::temp_dir();
    sweep(&temp);
    let dir = tempfile::Builder::new().prefix(PREFIX).tempdir_in(&temp)?;
    if let Some(me) = Owner::of_this_process() {
        // Not written: the directory is never swept, as before.
        let _ = fs::write(dir.path().join(OWNER), me.to_line());
    }
    Ok(dir)
}

/// Removes the directories of dead ephemeral servers in `temp`.
fn sweep(temp: &Path) {
    let Some(me) = Owner::of_this_process() else {
        return;
    };
    let uid = rustix::process::geteuid().as_raw();
    for entry in fs::read_dir(temp).into_iter().flatten().flatten() {
        if !entry.file_name().to_string_lossy().starts_with(PREFIX) {
            continue;
        }
        let dir = entry.path();
        let ours = fs::symlink_metadata(&dir)
            .is_ok_and(|m| m.is_dir() && m.uid() == uid && m.permissions().mode() & 0o022 == 0);
        let dead = ours
            && Owner::read(&dir.join(OWNER), uid)
                .is_some_and(|owner| owner.pid_namespace == me.pid_namespace && !owner.runs());
        if dead {
            remove(&dir);
        }
    }
}

/// Unmounts the sandboxes' disks in a dead server's directory (so the
/// walk below does not enter them), then removes it.
fn remove(dir: &Path) {
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            // Frozen by a snapshot under way, its processes could not die.
            thaw_stale(&entry.path());
            unmount(&entry.path());
        }
    }
    match fs::remove_dir_all(dir) {
        Ok(()) => tracing::info!("removed {}, left by a server that died", dir.display()),
        // Another server starting at the same time removed it first.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => tracing::warn!(
            "cannot remove {}, left by a server that died: {e}",
            dir.display()
        ),
    }
}

/// Who made a directory.
#[derive(Debug, PartialEq, Eq)]
struct Owner {
    pid: u32,
    /// The process's start, in clock ticks after boot (`/proc/PID/stat`):
    /// a pid used again is another process.
    started: u64,
    /// The inode of the PID namespace the pid is in.
    pid_namespace: u64,
}

impl Owner {
    fn of_this_process() -> Option<Owner> {
        let pid = std::process::id();
        Some(Owner {
            pid,
            started: started(pid)?,
            pid_namespace: fs::metadata("/proc/self/ns/pid").ok()?.ino(),
        })
    }

    /// The owner file at `path`, if it is a small regular file of `uid`.
    fn read(path: &Path, uid: u32) -> Option<Owner> {
        let meta = fs::symlink_metadata(path).ok()?;
        if !meta.is_file() || meta.uid() != uid || meta.len() > 64 {
            return None;
        }
        Owner::parse(&fs::read_to_string(path).ok()?)
    }

    fn to_line(&self) -> String {
        format!("{} {} {}\n", self.pid, self.started, self.pid_namespace)
    }

    fn parse(line: &str) -> Option<Owner> {
        let mut words = line.split_whitespace().map(str::parse::<u64>);
        let owner = Owner {
            pid: u32::try_from(words.next()?.ok()?).ok()?,
            started: words.next()?.ok()?,
            pid_namespace: words.next()?.ok()?,
        };
        words.next().is_none().then_some(owner)
    }

    /// Whether the process that wrote it still runs.
    fn runs(&self) -> bool {
        started(self.pid) == Some(self.started)
    }
}

/// When process `pid` started (field 22 of its `stat`, after the name,
/// which may hold spaces and parentheses); `None` if there is none.
fn started(pid: u32) -> Option<u64> {
    crate::procfs::stat_fields(Path::new(&format!("/proc/{pid}")))?
        .get(19)?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_runs_and_its_line_reads_back() {
        let me = Owner::of_this_process().unwrap();
        assert!(me.runs());
        let line = me.to_line();
        assert_eq!(Owner::parse(&line), Some(me));
        let me = Owner::of_this_process().unwrap();
        let reused = Owner {
            started: me.started + 1,
            ..me
        };
        assert!(!reused.runs(), "another process with the same pid");
        for bad in ["", "1 2", "1 2 3 4", "-1 2 3", "x 2 3", "99999999999 2 3"] {
            assert_eq!(Owner::parse(bad), None, "{bad:?}");
        }
    }
}
