//! Notices said once per terminal session: the backend notice is news the
//! first time a shell runs `e2b-tools`, noise on every call after.
//!
//! A session is the kernel's (`getsid`): every command of one shell, its
//! pipes and scripts included, shares it. A marker file per session and
//! notice, in a directory only this user may write (`$XDG_RUNTIME_DIR`, else
//! `e2b-tools-UID` in the temporary directory), says the notice was shown.
//! Anything uncertain (no session id, a directory that is not ours) shows
//! the notice again: a repeated line costs less than a missed one.

// `getsid` and `getuid` come from `libc` (rustix's `getsid` panicked on a
// CI machine where the session's leader was outside its PID namespace).
#![allow(unsafe_code)]

use std::fs;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// Whether the notice named `notice` is new to this terminal session;
/// marks it shown.
pub(crate) fn first_in_session(notice: &str) -> bool {
    let Some(session) = session_id() else {
        return true;
    };
    let Some(dir) = marker_dir() else {
        return true;
    };
    let marker = dir.join(format!("{notice}-{session}"));
    if marker.exists() {
        return false;
    }
    forget_ended_sessions(&dir);
    // Not created: shown again next time, which is the safe side.
    let _ = fs::write(&marker, b"");
    true
}

/// This process's session id; `None` when the kernel cannot tell (`-1`) or
/// the session's leader is outside this PID namespace (`0`).
fn session_id() -> Option<u32> {
    // SAFETY: getsid(0) only reads the calling process's session.
    let sid = unsafe { libc::getsid(0) };
    u32::try_from(sid).ok().filter(|&sid| sid > 0)
}

/// The user's marker directory, made if missing; `None` unless it is a
/// real directory of this user that no one else can write.
fn marker_dir() -> Option<PathBuf> {
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    let dir = match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(runtime) => Path::new(&runtime).join("e2b-tools"),
        None => std::env::temp_dir().join(format!("e2b-tools-{uid}")),
    };
    let _ = fs::DirBuilder::new().mode(0o700).create(&dir);
    let meta = fs::symlink_metadata(&dir).ok()?;
    (meta.is_dir() && meta.uid() == uid && meta.mode() & 0o022 == 0).then_some(dir)
}

/// Removes the markers of sessions that have ended (their leader's pid is
/// gone), so the directory holds one file per open shell at most.
fn forget_ended_sessions(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(session) = name.to_str().and_then(|n| n.rsplit_once('-')) else {
            continue;
        };
        if session.1.parse::<u32>().is_ok() && !Path::new("/proc").join(session.1).exists() {
            let _ = fs::remove_file(entry.path());
        }
    }
}
