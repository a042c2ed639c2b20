//! envd's descriptors: what it starts with, and what its children get.
//!
//! bubblewrap hands envd every descriptor bubblewrap itself was given,
//! and whatever a process inherits, a command envd starts would inherit
//! too. So envd keeps its control socket alone (close-on-exec: no command
//! may accept connections meant for envd), and every child starts with
//! its stdin, stdout and stderr only ([`close_on_exec_from`], called
//! between fork and exec).

use std::os::fd::{AsRawFd, OwnedFd, RawFd};

/// Closes every descriptor of this process but stdin, stdout, stderr and
/// `control`, which becomes close-on-exec; stdin and stdout (bubblewrap's
/// pipes to the server) become `/dev/null`. Called first thing, while
/// envd has one thread.
pub fn keep_only(control: &OwnedFd) -> std::io::Result<()> {
    let keep = u32::try_from(control.as_raw_fd()).map_err(std::io::Error::other)?;
    for (first, last) in [(3, keep.saturating_sub(1)), (keep + 1, u32::MAX)] {
        if first <= last {
            close_range(first, last, 0)?;
        }
    }
    rustix::io::fcntl_setfd(control, rustix::io::FdFlags::CLOEXEC)?;
    let null = rustix::fs::open(
        "/dev/null",
        rustix::fs::OFlags::RDWR | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )?;
    for target in [0, 1] {
        // SAFETY: dup2 onto this process's own stdin and stdout, which
        // nothing else in envd holds a handle to.
        #[allow(unsafe_code)]
        if unsafe { libc::dup2(null.as_raw_fd(), target) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Marks every descriptor from `first` on close-on-exec. Async-signal-
/// safe (raw system calls only): for a child between fork and exec.
pub fn close_on_exec_from(first: RawFd) {
    let from = u32::try_from(first).unwrap_or(3);
    if close_range(from, u32::MAX, libc::CLOSE_RANGE_CLOEXEC).is_ok() {
        return;
    }
    // Linux before 5.11: one descriptor at a time, up to the limit.
    // SAFETY: getrlimit and fcntl on numbers that may not be open: each
    // fails harmlessly on those.
    #[allow(unsafe_code)]
    unsafe {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        let max = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur.min(1 << 20) as RawFd
        } else {
            1 << 16
        };
        for fd in first..max {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
    }
}

fn close_range(first: u32, last: u32, flags: libc::c_uint) -> std::io::Result<()> {
    // SAFETY: close_range(2) takes plain numbers; closing descriptors this
    // process owns no handle to is what it is for (see `keep_only`).
    #[allow(unsafe_code)]
    let r = unsafe { libc::syscall(libc::SYS_close_range, first, last, flags) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
