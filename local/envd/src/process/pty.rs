//! A real terminal for `Start` with a `pty`: a pseudo-terminal pair opened
//! by envd, its slave end the process's stdin, stdout and stderr and
//! (through util-linux `setsid --ctty` inside the sandbox) its controlling
//! terminal, so echo, line editing, job control, Ctrl-C and `tput cols`
//! behave as in E2B's envd. The master stays with envd: output, input,
//! `Update`'s resize and the signals of the terminal's session.
//!
//! The terminal is made in the sandbox's own devpts (its `/dev/ptmx`,
//! checked to be the ptmx device), so `tty` names it inside. What a
//! process can do through its end (`TIOCSTI` included) reaches only its
//! own terminal, whose other end is envd's.

use std::io;
use std::os::fd::{AsFd, OwnedFd};

use rustix::fs::{Mode, OFlags};
use rustix::pty::OpenptFlags;
use rustix::termios::Winsize;

/// The requested size, as envd's `PTY.Size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
pub struct PtySize {
    /// Columns.
    #[serde(default)]
    pub cols: u16,
    /// Rows.
    #[serde(default)]
    pub rows: u16,
}

/// `StartRequest.pty` / `UpdateRequest.pty`: `{"size": {...}}`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
pub struct PtyConfig {
    /// The size, when given.
    #[serde(default)]
    pub size: Option<PtySize>,
}

/// A terminal's two ends.
pub struct PtyPair {
    /// The server's end.
    pub master: OwnedFd,
    /// The process's end.
    pub slave: OwnedFd,
}

/// The ptmx device: character device 5:2.
const PTMX: (u32, u32) = (5, 2);

/// Opens a pseudo-terminal of `size` (80 x 24 when none) in the
/// sandbox's devpts. Both ends are close-on-exec from their creation, so
/// no process started meanwhile inherits them.
pub fn open(size: Option<PtySize>) -> io::Result<PtyPair> {
    let master = ptmx()?;
    rustix::pty::grantpt(&master)?;
    rustix::pty::unlockpt(&master)?;
    // The peer from the master itself: no path is looked up.
    let slave = rustix::pty::ioctl_tiocgptpeer(
        &master,
        OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC,
    )?;
    resize(&master, size.unwrap_or(PtySize { cols: 80, rows: 24 }))?;
    Ok(PtyPair { master, slave })
}

/// `/dev/ptmx`, if it is the ptmx device: sandbox root may have put
/// anything there, and a FIFO would block the open (non-blocking until
/// checked).
fn ptmx() -> io::Result<OwnedFd> {
    let fd = rustix::fs::open(
        "/dev/ptmx",
        OFlags::RDWR | OFlags::NOCTTY | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let stat = rustix::fs::fstat(&fd)?;
    let is_char =
        rustix::fs::FileType::from_raw_mode(stat.st_mode) == rustix::fs::FileType::CharacterDevice;
    let rdev = (
        rustix::fs::major(stat.st_rdev),
        rustix::fs::minor(stat.st_rdev),
    );
    if !is_char || rdev != PTMX {
        return Err(io::Error::other("/dev/ptmx is not the ptmx device"));
    }
    rustix::fs::fcntl_setfl(&fd, OFlags::empty())?;
    Ok(fd)
}

/// Sets the terminal's size; the process gets SIGWINCH.
pub fn resize(master: impl AsFd, size: PtySize) -> io::Result<()> {
    if size.cols == 0 || size.rows == 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a terminal needs at least one row and one column",
        ));
    }
    rustix::termios::tcsetwinsize(
        master,
        Winsize {
            ws_row: size.rows,
            ws_col: size.cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        },
    )?;
    Ok(())
}

/// Signals the terminal's session: its leader's group and the foreground
/// group (a job the shell runs). The program left the group of the process
/// the server started when it became the session leader, so signalling that
/// group alone would miss it.
pub fn signal_session(master: impl AsFd, signal: i32) {
    let Some(signal) = rustix::process::Signal::from_named_raw(signal) else {
        return;
    };
    let master = master.as_fd();
    // Both are the kernel's answers in the server's pid namespace.
    let groups = [
        rustix::termios::tcgetsid(master).ok(),
        rustix::termios::tcgetpgrp(master).ok(),
    ];
    for group in groups.into_iter().flatten() {
        let _ = rustix::process::kill_process_group(group, signal);
    }
}
