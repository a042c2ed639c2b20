//! The filler both warm pools share ([`Pool`]): a queue kept at N over a
//! [`Stock`] that says how one sandbox is made, refreshed and killed.
//!
//! Each waiting sandbox is made on a short timeout, [`WAITING_TIMEOUT`],
//! which the filler refreshes while it waits; E2B's timeout is the
//! backstop if the process dies. A pool that cannot fill (429, quota, the
//! local server's cap) backs off, and calls go on as they would without
//! it. Closing the pool, or dropping its last handle, kills what waits.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The timeout of a sandbox waiting in a pool, in seconds: short, so a
/// pool whose process died costs at most this long per sandbox.
pub const WAITING_TIMEOUT: u32 = 60;

/// The most sandboxes one pool holds.
pub const MAX_POOL_SIZE: usize = 64;

/// The longest wait between two attempts to fill a pool that fails.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// How long `close` waits for a sandbox being made, to kill it.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a taker waits for the sandbox being made before going on
/// without the pool.
const TAKE_TIMEOUT: Duration = Duration::from_secs(30);

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
    /// Sandboxes waiting now.
    pub waiting: usize,
    /// Sandboxes the pool made.
    pub made: u64,
    /// Sandboxes handed out alive.
    pub handed_out: u64,
    /// Waiting sandboxes found dead (or failing to refresh) and dropped.
    pub discarded: u64,
    /// Attempts to make a sandbox that failed.
    pub failed: u64,
}

/// What a pool keeps, and how one is made, refreshed and killed.
pub(crate) trait Stock: Send + Sync + 'static {
    /// One waiting sandbox (a session, or an id).
    type Item: Send + 'static;
    /// Makes one on [`WAITING_TIMEOUT`]; `None` when that failed (nothing
    /// is left of the attempt).
    fn make(&self) -> impl Future<Output = Option<Self::Item>> + Send;
    /// Gives a waiting one [`WAITING_TIMEOUT`] again; `false`: it is dead.
    fn refresh(&self, item: &Self::Item) -> impl Future<Output = bool> + Send;
    /// Kills a waiting one.
    fn kill(&self, item: Self::Item) -> impl Future<Output = ()> + Send;
}

/// The filler and the queue of one pool. Cheap to clone; every clone is the
/// same pool, closed when the last one is dropped.
pub(crate) struct Pool<S: Stock> {
    shared: Arc<Shared<S>>,
    _handles: Arc<Handles<S>>,
}

impl<S: Stock> Clone for Pool<S> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
            _handles: Arc::clone(&self._handles),
        }
    }
}

/// Closes the pool when the last handle goes: the filler holds the pool
/// itself, so only the handles say when nobody wants it.
struct Handles<S: Stock>(Arc<Shared<S>>);

impl<S: Stock> Drop for Handles<S> {
    fn drop(&mut self) {
        self.0.closed.store(true, Ordering::SeqCst);
        self.0.wake.notify_one();
        self.0.ready.notify_waiters();
    }
}

struct Shared<S: Stock> {
    stock: S,
    size: usize,
    waiting: Mutex<VecDeque<S::Item>>,
    /// Wakes the filler (one was taken, or the pool closes).
    wake: tokio::sync::Notify,
    /// Wakes takers waiting for the one being made.
    ready: tokio::sync::Notify,
    /// Whether the filler is making one now.
    filling: AtomicBool,
    /// The filler, awaited by `close` (it kills what it made last).
    filler: Mutex<Option<tokio::task::JoinHandle<()>>>,
    closed: AtomicBool,
    made: AtomicU64,
    handed_out: AtomicU64,
    discarded: AtomicU64,
    failed: AtomicU64,
}

impl<S: Stock> Pool<S> {
    /// Starts filling `size` of `stock` on a task of the current tokio
    /// runtime.
    pub(crate) fn start(stock: S, size: usize) -> Result<Self, PoolError> {
        if !(1..=MAX_POOL_SIZE).contains(&size) {
            return Err(PoolError::Size {
                size,
                max: MAX_POOL_SIZE,
            });
        }
        let handle = tokio::runtime::Handle::try_current().map_err(|_| PoolError::NoRuntime)?;
        let shared = Arc::new(Shared {
            stock,
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
        let filler = handle.spawn(fill(Arc::clone(&shared)));
        *shared.filler.lock().unwrap_or_else(|e| e.into_inner()) = Some(filler);
        Ok(Self {
            _handles: Arc::new(Handles(Arc::clone(&shared))),
            shared,
        })
    }

    /// What the pool keeps.
    pub(crate) fn stock(&self) -> &S {
        &self.shared.stock
    }

    /// The next waiting one (waiting for the one being made, if any), not
    /// yet probed: the caller proves it lives and says [`Pool::handed_out`]
    /// or [`Pool::discarded`]. `None`: none waits and none is being made,
    /// or the pool is closed.
    pub(crate) async fn take(&self) -> Option<S::Item> {
        let shared = &self.shared;
        loop {
            if shared.closed.load(Ordering::SeqCst) {
                return None;
            }
            let ready = shared.ready.notified();
            let next = shared.lock().pop_front();
            shared.wake.notify_one();
            match next {
                Some(item) => return Some(item),
                // One is being made: sooner than making another.
                None if shared.filling.load(Ordering::SeqCst) => {
                    tokio::time::timeout(TAKE_TIMEOUT, ready).await.ok()?;
                }
                None => return None,
            }
        }
    }

    /// Puts one taken but not used back at the front (or kills it, if the
    /// pool closed meanwhile).
    pub(crate) async fn put_back(&self, item: S::Item) {
        if self.shared.closed.load(Ordering::SeqCst) {
            self.shared.stock.kill(item).await;
            return;
        }
        self.shared.lock().push_front(item);
        self.shared.ready.notify_waiters();
    }

    /// Counts one taken and found alive.
    pub(crate) fn handed_out(&self) {
        self.shared.handed_out.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one taken and found dead.
    pub(crate) fn discarded(&self) {
        self.shared.discarded.fetch_add(1, Ordering::Relaxed);
    }

    /// What the pool did so far.
    pub(crate) fn stats(&self) -> PoolStats {
        let shared = &self.shared;
        PoolStats {
            waiting: shared.lock().len(),
            made: shared.made.load(Ordering::Relaxed),
            handed_out: shared.handed_out.load(Ordering::Relaxed),
            discarded: shared.discarded.load(Ordering::Relaxed),
            failed: shared.failed.load(Ordering::Relaxed),
        }
    }

    /// Stops filling and kills every waiting one, and the one being made.
    pub(crate) async fn close(&self) {
        let shared = &self.shared;
        shared.closed.store(true, Ordering::SeqCst);
        shared.wake.notify_one();
        shared.ready.notify_waiters();
        // The filler kills what waits, and the one it may be making: left
        // to a runtime that is shutting down, that one would leak.
        let filler = shared
            .filler
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(filler) = filler {
            let _ = tokio::time::timeout(CLOSE_TIMEOUT, filler).await;
        }
        kill_waiting(shared).await;
    }
}

impl<S: Stock> Shared<S> {
    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<S::Item>> {
        // A panic while holding it cannot leave the queue inconsistent.
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }
}

async fn kill_waiting<S: Stock>(shared: &Shared<S>) {
    let waiting: Vec<S::Item> = shared.lock().drain(..).collect();
    for item in waiting {
        shared.stock.kill(item).await;
    }
}

/// The filler: keeps `size` waiting, refreshes them before their short
/// timeout ends, backs off while making fails, and kills what waits when
/// the pool closes.
async fn fill<S: Stock>(shared: Arc<Shared<S>>) {
    let mut backoff = Duration::from_millis(250);
    let refresh_every = Duration::from_secs(u64::from(WAITING_TIMEOUT) / 3);
    let mut last_refresh = tokio::time::Instant::now();
    while !shared.closed.load(Ordering::SeqCst) {
        if last_refresh.elapsed() >= refresh_every {
            refresh(&shared).await;
            last_refresh = tokio::time::Instant::now();
        }
        let wake = shared.wake.notified();
        if shared.lock().len() < shared.size {
            shared.filling.store(true, Ordering::SeqCst);
            let made = shared.stock.make().await;
            shared.filling.store(false, Ordering::SeqCst);
            match made {
                Some(item) => {
                    shared.made.fetch_add(1, Ordering::Relaxed);
                    // One given back meanwhile may have filled the pool.
                    let extra = {
                        let mut waiting = shared.lock();
                        match waiting.len() < shared.size {
                            true => {
                                waiting.push_back(item);
                                None
                            }
                            false => Some(item),
                        }
                    };
                    if let Some(item) = extra {
                        shared.stock.kill(item).await;
                    }
                    shared.ready.notify_waiters();
                    backoff = Duration::from_millis(250);
                }
                None => {
                    shared.failed.fetch_add(1, Ordering::Relaxed);
                    shared.ready.notify_waiters();
                    let _ = tokio::time::timeout(backoff, wake).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
            continue;
        }
        // Full: sleep until one is taken, the pool closes, or the next
        // refresh.
        let until_refresh = refresh_every.saturating_sub(last_refresh.elapsed());
        let _ = tokio::time::timeout(until_refresh, wake).await;
    }
    // Closed: whatever was made meanwhile goes with the pool.
    kill_waiting(&shared).await;
}

/// Refreshes every waiting one, one at a time (the others stay there to
/// be taken); one that fails is dropped, and refilled.
async fn refresh<S: Stock>(shared: &Shared<S>) {
    let count = shared.lock().len();
    for _ in 0..count {
        let Some(item) = shared.lock().pop_front() else {
            return;
        };
        if shared.stock.refresh(&item).await {
            shared.lock().push_back(item);
        } else {
            shared.discarded.fetch_add(1, Ordering::Relaxed);
            // Dropped: a session's reaper kills what may be left of it.
            shared.stock.kill(item).await;
        }
    }
}
