//! The signals that stop the command line: SIGINT (Ctrl-C), SIGTERM
//! (`docker stop`, systemd, Kubernetes) and, for `mcp` on stdio, SIGHUP
//! (its client's terminal went away). [`listen`] catches them from the
//! start; each command waits for one ([`stopped`]) beside its work, kills
//! the sandboxes it owns, and then the process ends *by* the signal
//! ([`end_if_stopped`]), as a supervisor or a shell expects of it. A
//! second signal during that cleanup changes nothing: the cleanup is
//! bounded. `kill -9` is E2B's timeout's job.
// Restoring a signal's default action and raising it needs `libc`.
#![allow(unsafe_code)]

use std::sync::OnceLock;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::watch;

/// A signal that stops the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// SIGINT.
    Interrupt,
    /// SIGTERM.
    Terminate,
    /// SIGHUP.
    Hangup,
}

impl Stop {
    fn number(self) -> i32 {
        match self {
            Stop::Interrupt => libc::SIGINT,
            Stop::Terminate => libc::SIGTERM,
            Stop::Hangup => libc::SIGHUP,
        }
    }

    /// Its name, for messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Stop::Interrupt => "SIGINT",
            Stop::Terminate => "SIGTERM",
            Stop::Hangup => "SIGHUP",
        }
    }

    /// The exit status a shell shows for it.
    pub(crate) fn status(self) -> u8 {
        128 + self.number() as u8
    }
}

static STOPS: OnceLock<watch::Receiver<Option<Stop>>> = OnceLock::new();

/// Catches the stop signals from now on (SIGHUP too with `hangup`):
/// they no longer end the process at once, [`stopped`] tells of the
/// first. Call once, early; later calls do nothing.
pub(crate) fn listen(hangup: bool) -> std::io::Result<()> {
    if STOPS.get().is_some() {
        return Ok(());
    }
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    let mut hup = if hangup {
        Some(signal(SignalKind::hangup())?)
    } else {
        None
    };
    let (tx, rx) = watch::channel(None);
    tokio::spawn(async move {
        let hup = async {
            match hup.as_mut() {
                Some(hup) => hup.recv().await,
                None => std::future::pending().await,
            }
        };
        let stop = tokio::select! {
            _ = int.recv() => Stop::Interrupt,
            _ = term.recv() => Stop::Terminate,
            _ = hup => Stop::Hangup,
        };
        let _ = tx.send(Some(stop));
        // Later signals are caught (and dropped) while the cleanup runs.
        loop {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
        }
    });
    let _ = STOPS.set(rx);
    Ok(())
}

/// Resolves with the first stop signal; never without [`listen`].
pub(crate) async fn stopped() -> Stop {
    let Some(rx) = STOPS.get() else {
        return std::future::pending().await;
    };
    let mut rx = rx.clone();
    let stop = match rx.wait_for(Option::is_some).await {
        Ok(stop) => *stop,
        Err(_) => None,
    };
    match stop {
        Some(stop) => stop,
        None => std::future::pending().await,
    }
}

/// The stop signal received so far, if any.
pub(crate) fn received() -> Option<Stop> {
    STOPS.get().and_then(|rx| *rx.borrow())
}

/// Once everything is cleaned up: if a stop signal came, the process
/// ends by it (its default action restored, then raised).
pub(crate) fn end_if_stopped() {
    let Some(stop) = received() else {
        return;
    };
    // SAFETY: `signal` with SIG_DFL and `raise` touch only this process's
    // signal disposition and pending set; nothing else runs after them
    // that depends on the handler tokio had installed.
    unsafe {
        libc::signal(stop.number(), libc::SIG_DFL);
        libc::raise(stop.number());
    }
}
