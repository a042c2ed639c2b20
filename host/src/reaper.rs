//! Kills the sandbox of a session dropped without a shutdown, so no sandbox
//! outlives the host process for longer than it takes to kill it.
//!
//! A dropped session's instance is handed to the runtime's reaper: one
//! thread, with a tokio runtime of its own (a `Drop` cannot await, and the
//! caller's runtime may be ending, as it is when `main` returns), that runs
//! the component's `shutdown` for it, bounded by [`KILL_TIMEOUT`]. Dropping
//! the last handle of the [`Runtime`](crate::Runtime) waits, again bounded,
//! for the kills under way; a session dropped after its runtime waits for
//! its own kill. E2B's timeout stays the backstop for a process that is
//! killed outright.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The longest a kill on drop may take, and so the longest a drop waits.
pub const KILL_TIMEOUT: Duration = Duration::from_secs(10);

type Job = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The kills on drop of one runtime's sessions.
#[derive(Default)]
pub(crate) struct Reaper {
    sender: Mutex<Option<tokio::sync::mpsc::UnboundedSender<Job>>>,
    /// Kills queued or running.
    pending: Mutex<usize>,
    done: Condvar,
    /// Cleared when the runtime is dropped: later drops wait themselves.
    runtime_alive: AtomicBool,
}

impl Reaper {
    pub(crate) fn new() -> Arc<Self> {
        let reaper = Arc::new(Self::default());
        reaper.runtime_alive.store(true, Ordering::SeqCst);
        reaper
    }

    /// Runs `kill` on the reaper thread, bounded by [`KILL_TIMEOUT`]; waits
    /// for it when the runtime is gone (nobody else would).
    pub(crate) fn reap(self: &Arc<Self>, kill: impl Future<Output = ()> + Send + 'static) {
        *self.pending.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        let reaper = self.clone();
        let job: Job = Box::pin(async move {
            if tokio::time::timeout(KILL_TIMEOUT, kill).await.is_err() {
                tracing::warn!(
                    target: crate::AUDIT_TARGET,
                    "a dropped session's sandbox was not killed within {KILL_TIMEOUT:?}; it ends at its timeout"
                );
            }
            let mut pending = reaper.pending.lock().unwrap_or_else(|e| e.into_inner());
            *pending -= 1;
            reaper.done.notify_all();
        });
        if let Err(err) = self.send(job) {
            tracing::warn!(target: crate::AUDIT_TARGET, error = %err, "cannot start the reaper thread");
            *self.pending.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
            return;
        }
        if !self.runtime_alive.load(Ordering::SeqCst) {
            self.wait(KILL_TIMEOUT + Duration::from_secs(1));
        }
    }

    /// The runtime is being dropped: waits for the kills under way.
    pub(crate) fn runtime_dropped(&self) {
        self.runtime_alive.store(false, Ordering::SeqCst);
        self.wait(KILL_TIMEOUT + Duration::from_secs(1));
    }

    fn wait(&self, bound: Duration) {
        let deadline = Instant::now() + bound;
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        while *pending > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            pending = match self.done.wait_timeout(pending, left) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
    }

    /// Hands `job` to the reaper thread, starting it the first time.
    fn send(&self, job: Job) -> std::io::Result<()> {
        let mut sender = self.sender.lock().unwrap_or_else(|e| e.into_inner());
        if sender.is_none() {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Job>();
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            std::thread::Builder::new()
                .name("e2b-tools-reaper".into())
                .spawn(move || {
                    runtime.block_on(async move {
                        while let Some(job) = rx.recv().await {
                            tokio::spawn(job);
                        }
                    })
                })?;
            *sender = Some(tx);
        }
        let tx = sender.as_ref().expect("set above");
        tx.send(job)
            .map_err(|_| std::io::Error::other("the reaper thread has ended"))
    }
}
