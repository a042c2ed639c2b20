//! [`WarmPool`]: sessions whose sandboxes are made ahead, so a new
//! session's first call does not wait for a sandbox (on E2B, 400 ms at the
//! median and a second at the tail).
//!
//! A pool serves one set of [`SessionOptions`]: it opens sessions with
//! exactly those and has each create its sandbox (`prepare`) on a short
//! timeout, [`WAITING_TIMEOUT`], which a background task refreshes while
//! the session waits; E2B's timeout is the backstop if the process dies.
//! [`WarmPool::session`] hands out a waiting session after one more
//! `prepare` that gives its sandbox the configured timeout and proves it
//! still lives (a dead one is dropped and the next taken), and wakes the
//! filler. A pool that cannot fill (429, quota, the local server's cap)
//! backs off, and sessions open as they would without it. Closing the
//! pool, or dropping it, kills the sandboxes still waiting.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::error::SessionError;
use crate::runtime::Runtime;
use crate::session::{Session, SessionOptions};

/// The timeout of a sandbox waiting in a pool, in seconds: short, so a
/// pool whose process died costs at most this long per sandbox.
pub const WAITING_TIMEOUT: u32 = 60;

/// The longest wait between two attempts to fill a pool that fails.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// How long `close` waits for a sandbox being made, to kill it.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(30);

/// The most sessions one pool holds.
pub const MAX_POOL_SIZE: usize = 64;

/// Why a pool cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    /// A size of 0, or more than [`MAX_POOL_SIZE`] (or the backend's cap).
    #[error("a warm pool holds 1 to {max} sandboxes, not {size}")]
    Size {
        /// The size asked for.
        size: usize,
        /// The most allowed.
        max: usize,
    },
    /// Not inside a tokio runtime (the pool fills on a task of its own).
    #[error("a warm pool needs a tokio runtime to fill on")]
    NoRuntime,
}

/// What a pool did, for tests and benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Sessions waiting now.
    pub waiting: usize,
    /// Sandboxes the pool made.
    pub made: u64,
    /// Sessions handed out ready.
    pub handed_out: u64,
    /// Waiting sandboxes found dead (or failing to refresh) and dropped.
    pub discarded: u64,
    /// Attempts to make a sandbox that failed.
    pub failed: u64,
}

/// Sessions with their sandboxes made ahead, for one set of options.
/// Cheap to clone; every clone is the same pool, closed when the last one
/// is dropped (its waiting sandboxes are then killed by the runtime's
/// reaper).
#[derive(Clone)]
pub struct WarmPool {
    inner: Arc<Inner>,
    _handles: Arc<Handles>,
}

/// Closes the pool when the last [`WarmPool`] handle goes: the filler
/// holds the pool itself, so only the handles say when nobody wants it.
struct Handles(Arc<Inner>);

impl Drop for Handles {
    fn drop(&mut self) {
        self.0.closed.store(true, Ordering::SeqCst);
        self.0.wake.notify_one();
        self.0.ready.notify_waiters();
    }
}

struct Inner {
    runtime: Runtime,
    options: SessionOptions,
    /// What the options are, to tell whether a session may come from here.
    key: String,
    size: usize,
    waiting: Mutex<VecDeque<Session>>,
    /// Wakes the filler (a session was taken, or the pool closes).
    wake: tokio::sync::Notify,
    /// Wakes sessions waiting for a sandbox being made.
    ready: tokio::sync::Notify,
    /// Whether the filler is making a sandbox now.
    filling: AtomicBool,
    /// The filler, awaited by `close` (it kills what it made last).
    filler: Mutex<Option<tokio::task::JoinHandle<()>>>,
    closed: AtomicBool,
    made: AtomicU64,
    handed_out: AtomicU64,
    discarded: AtomicU64,
    failed: AtomicU64,
}

impl std::fmt::Debug for WarmPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WarmPool")
            .field("size", &self.inner.size)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl WarmPool {
    /// Starts a pool of `size` sessions opened with `options`, filling on a
    /// task of the current tokio runtime.
    pub fn start(
        runtime: &Runtime,
        options: SessionOptions,
        size: usize,
    ) -> Result<WarmPool, PoolError> {
        if !(1..=MAX_POOL_SIZE).contains(&size) {
            return Err(PoolError::Size {
                size,
                max: MAX_POOL_SIZE,
            });
        }
        let handle = tokio::runtime::Handle::try_current().map_err(|_| PoolError::NoRuntime)?;
        let inner = Arc::new(Inner {
            runtime: runtime.clone(),
            key: key(&options),
            options,
            size,
            waiting: Mutex::new(VecDeque::new()),
            wake: tokio::sync::Notify::new(),
            ready: tokio::sync::Notify::new(),
            filling: AtomicBool::new(false),
            filler: Mutex::new(None),
            closed: AtomicBool::new(false),
            made: AtomicU64::new(0),
            handed_out: AtomicU64::new(0),
            discarded: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        });
        let filler = handle.spawn(fill(Arc::clone(&inner)));
        *inner.filler.lock().unwrap_or_else(|e| e.into_inner()) = Some(filler);
        Ok(WarmPool {
            _handles: Arc::new(Handles(Arc::clone(&inner))),
            inner,
        })
    }

    /// Whether sessions opened with `options` may come from this pool:
    /// the same configuration, environment and limits.
    pub fn serves(&self, options: &SessionOptions) -> bool {
        key(options) == self.inner.key
    }

    /// A session with the pool's options: a waiting one, its sandbox ready
    /// and on the configured timeout, else (none waiting, none about to
    /// be ready, or the pool closed) a new one that creates its sandbox on
    /// its first call, as without a pool.
    pub async fn session(&self) -> Result<Session, SessionError> {
        if let Some(session) = self.take().await {
            return Ok(session);
        }
        Session::open(&self.inner.runtime, self.inner.options.clone()).await
    }

    /// A waiting session made ready for use, if there is one (waiting for
    /// the one being made, if any).
    pub async fn take(&self) -> Option<Session> {
        let inner = &self.inner;
        loop {
            if inner.closed.load(Ordering::SeqCst) {
                return None;
            }
            let ready = inner.ready.notified();
            let next = inner.lock().pop_front();
            inner.wake.notify_one();
            match next {
                Some(session) => {
                    // The configured timeout, and the proof it still lives.
                    if let Ok(Ok(_)) = session.prepare(None).await {
                        inner.handed_out.fetch_add(1, Ordering::Relaxed);
                        return Some(session);
                    }
                    inner.discarded.fetch_add(1, Ordering::Relaxed);
                    // Dropped: the reaper kills what may be left of it.
                }
                None if inner.filling.load(Ordering::SeqCst) => {
                    // A sandbox is being made: sooner than making another.
                    let waited = tokio::time::timeout(Duration::from_secs(30), ready).await;
                    if waited.is_err() {
                        return None;
                    }
                }
                None => return None,
            }
        }
    }

    /// What the pool did so far.
    pub fn stats(&self) -> PoolStats {
        let inner = &self.inner;
        PoolStats {
            waiting: inner.lock().len(),
            made: inner.made.load(Ordering::Relaxed),
            handed_out: inner.handed_out.load(Ordering::Relaxed),
            discarded: inner.discarded.load(Ordering::Relaxed),
            failed: inner.failed.load(Ordering::Relaxed),
        }
    }

    /// Stops filling and kills every waiting sandbox (sessions handed out
    /// are their holders'). Later [`WarmPool::session`] calls open new
    /// sessions.
    pub async fn close(&self) {
        let inner = &self.inner;
        inner.closed.store(true, Ordering::SeqCst);
        inner.wake.notify_one();
        inner.ready.notify_waiters();
        // The filler kills what waits, and the sandbox it may be making:
        // left to a runtime that is shutting down, that one would leak.
        let filler = inner
            .filler
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(filler) = filler {
            let _ = tokio::time::timeout(CLOSE_TIMEOUT, filler).await;
        }
        let waiting: Vec<Session> = inner.lock().drain(..).collect();
        for session in waiting {
            let _ = session.shutdown().await;
        }
    }
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Session>> {
        // A panic while holding it cannot leave the queue inconsistent.
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What makes two sessions' options the same for a pool. It holds the
/// environment (with the API key): compared, never shown.
fn key(options: &SessionOptions) -> String {
    format!(
        "{:?}|{:?}|{}|{:?}|{}|{:?}",
        options.config,
        options.env,
        options.memory_limit,
        options.clock,
        options.fuel_per_call,
        options.policy
    )
}

/// The filler: keeps `size` sessions waiting, refreshes them before their
/// short timeout ends, backs off while making sandboxes fails, and ends
/// when the pool is closed (dropping the waiting sessions with the pool).
async fn fill(inner: Arc<Inner>) {
    let mut backoff = Duration::from_millis(250);
    let refresh_every = Duration::from_secs(u64::from(WAITING_TIMEOUT) / 3);
    let mut last_refresh = tokio::time::Instant::now();
    while !inner.closed.load(Ordering::SeqCst) {
        if last_refresh.elapsed() >= refresh_every {
            refresh(&inner).await;
            last_refresh = tokio::time::Instant::now();
        }
        let wake = inner.wake.notified();
        if inner.lock().len() < inner.size {
            inner.filling.store(true, Ordering::SeqCst);
            let made = make(&inner).await;
            inner.filling.store(false, Ordering::SeqCst);
            match made {
                Some(session) => {
                    inner.made.fetch_add(1, Ordering::Relaxed);
                    inner.lock().push_back(session);
                    inner.ready.notify_waiters();
                    backoff = Duration::from_millis(250);
                }
                None => {
                    inner.failed.fetch_add(1, Ordering::Relaxed);
                    inner.ready.notify_waiters();
                    let _ = tokio::time::timeout(backoff, wake).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
            continue;
        }
        // Full: sleep until a session is taken, the pool closes, or the
        // next refresh.
        let until_refresh = refresh_every.saturating_sub(last_refresh.elapsed());
        let _ = tokio::time::timeout(until_refresh, wake).await;
    }
    // Closed: whatever was made meanwhile goes with the pool.
    let waiting: Vec<Session> = inner.lock().drain(..).collect();
    for session in waiting {
        let _ = session.shutdown().await;
    }
}

/// A session of the pool's options with its sandbox made on the waiting
/// timeout; `None` when that failed (the session is dropped).
async fn make(inner: &Inner) -> Option<Session> {
    let session = Session::open(&inner.runtime, inner.options.clone())
        .await
        .ok()?;
    match session.prepare(Some(WAITING_TIMEOUT)).await {
        Ok(Ok(_)) => Some(session),
        _ => None,
    }
}

/// Refreshes every waiting session's sandbox on the waiting timeout; one
/// that fails is dropped (and refilled).
async fn refresh(inner: &Inner) {
    let waiting: Vec<Session> = inner.lock().drain(..).collect();
    for session in waiting {
        match session.prepare(Some(WAITING_TIMEOUT)).await {
            Ok(Ok(_)) => inner.lock().push_back(session),
            _ => {
                inner.discarded.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}
