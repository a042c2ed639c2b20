//! [`WarmPool`]: sessions of the embedding world whose sandboxes are made
//! ahead, so a new session's first call does not wait for a sandbox.
//!
//! A pool serves one set of [`SessionOptions`]: it opens sessions with
//! exactly those and has each create its sandbox (`prepare`) on the short
//! [`WAITING_TIMEOUT`]. [`WarmPool::session`] hands out a waiting session
//! after one more `prepare` that gives its sandbox the configured timeout
//! and proves it still lives (a dead one is dropped and the next taken).

use super::filler::{Pool, PoolError, PoolStats, Stock, WAITING_TIMEOUT};
use crate::error::SessionError;
use crate::runtime::Runtime;
use crate::session::{Session, SessionOptions};

/// Sessions with their sandboxes made ahead, for one set of options.
/// Cheap to clone; every clone is the same pool, closed when the last one
/// is dropped (its waiting sandboxes are then killed by the runtime's
/// reaper).
#[derive(Clone)]
pub struct WarmPool {
    pool: Pool<Sessions>,
}

/// Sessions of one set of options, each with its sandbox prepared.
struct Sessions {
    runtime: Runtime,
    options: SessionOptions,
    /// What the options are, to tell whether a session may come from here.
    key: String,
}

impl Stock for Sessions {
    type Item = Session;

    async fn make(&self) -> Option<Session> {
        let session = Session::open(&self.runtime, self.options.clone())
            .await
            .ok()?;
        match session.prepare(Some(WAITING_TIMEOUT)).await {
            Ok(Ok(_)) => Some(session),
            // Dropped: the reaper kills what may have been made.
            _ => None,
        }
    }

    async fn refresh(&self, session: &Session) -> bool {
        matches!(session.prepare(Some(WAITING_TIMEOUT)).await, Ok(Ok(_)))
    }

    async fn kill(&self, session: Session) {
        let _ = session.shutdown().await;
    }
}

impl std::fmt::Debug for WarmPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WarmPool")
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
        let stock = Sessions {
            runtime: runtime.clone(),
            key: key(&options),
            options,
        };
        Ok(WarmPool {
            pool: Pool::start(stock, size)?,
        })
    }

    /// Whether sessions opened with `options` may come from this pool:
    /// the same configuration, environment and limits.
    pub fn serves(&self, options: &SessionOptions) -> bool {
        key(options) == self.pool.stock().key
    }

    /// A session with the pool's options: a waiting one, its sandbox ready
    /// and on the configured timeout, else (none waiting, none about to
    /// be ready, or the pool closed) a new one that creates its sandbox on
    /// its first call, as without a pool.
    pub async fn session(&self) -> Result<Session, SessionError> {
        if let Some(session) = self.take().await {
            return Ok(session);
        }
        let stock = self.pool.stock();
        Session::open(&stock.runtime, stock.options.clone()).await
    }

    /// A waiting session made ready for use, if there is one (waiting for
    /// the one being made, if any).
    pub async fn take(&self) -> Option<Session> {
        while let Some(session) = self.pool.take().await {
            // The configured timeout, and the proof it still lives.
            if let Ok(Ok(_)) = session.prepare(None).await {
                self.pool.handed_out();
                return Some(session);
            }
            self.pool.discarded();
            // Dropped: the reaper kills what may be left of it.
        }
        None
    }

    /// What the pool did so far.
    pub fn stats(&self) -> PoolStats {
        self.pool.stats()
    }

    /// Stops filling and kills every waiting sandbox (sessions handed out
    /// are their holders'). Later [`WarmPool::session`] calls open new
    /// sessions.
    pub async fn close(&self) {
        self.pool.close().await;
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
