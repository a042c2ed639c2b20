//! [`Runtime`]: the component compiled once, linked with WASI and
//! `wasi:http`, ready to instantiate cheaply for each session.

use crate::bindings::E2bToolsPre;
use crate::error::WasmError;
use crate::events::{Subscriber, Subscribers, Subscription};
use crate::loader::{self, ComponentSource, RuntimeError, RuntimeOptions};
use crate::outbound::OutboundClient;
use crate::proxy::Proxy;
use crate::reaper::Reaper;
use crate::state::SessionState;
use std::sync::Arc;
use std::time::Duration;

/// The loaded component. Cheap to clone; share one per process and open
/// [`Session`](crate::Session)s from it.
///
/// Dropping its last handle waits (at most
/// [`KILL_TIMEOUT`](crate::KILL_TIMEOUT) and a second) for the sandboxes of
/// sessions dropped without a shutdown to be killed.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<RuntimeInner>,
}

struct RuntimeInner {
    pre: E2bToolsPre<SessionState>,
    client: OutboundClient,
    proxy: Proxy,
    load_time: Duration,
    subscribers: Arc<Subscribers>,
    reaper: Arc<Reaper>,
}

impl Drop for RuntimeInner {
    fn drop(&mut self) {
        self.reaper.runtime_dropped();
    }
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("load_time", &self.inner.load_time)
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// Loads a component with the default options (compilation cache on).
    /// Blocking: compiling takes up to seconds on a cache miss.
    pub fn load(source: ComponentSource) -> Result<Self, RuntimeError> {
        Self::load_with(source, RuntimeOptions::default())
    }

    /// Loads a component. Blocking: compiling takes up to seconds on a
    /// cache miss.
    pub fn load_with(
        source: ComponentSource,
        options: RuntimeOptions,
    ) -> Result<Self, RuntimeError> {
        let loaded = loader::load(source, options)?;
        let pre = E2bToolsPre::new(loaded.instantiate_pre()?)
            .map_err(|err| RuntimeError::Link(WasmError::new(err)))?;
        let load_time = loaded.finish();
        Ok(Self {
            inner: Arc::new(RuntimeInner {
                pre,
                client: loaded.client,
                proxy: loaded.proxy,
                load_time,
                subscribers: Arc::default(),
                reaper: Reaper::new(),
            }),
        })
    }

    /// How long loading (compiling or reading the cache, linking) took.
    pub fn load_time(&self) -> Duration {
        self.inner.load_time
    }

    /// Where its sessions' connections go.
    pub fn proxy(&self) -> &Proxy {
        &self.inner.proxy
    }

    /// Registers `subscriber` for the [lifecycle events](crate::events) of
    /// every session opened from this runtime, from now on. It runs on a
    /// thread of its own behind a bounded queue: a subscriber that panics
    /// or blocks loses events (counted) and never holds a call up. Fails
    /// only when no thread can be started.
    pub fn subscribe(&self, subscriber: impl Subscriber) -> std::io::Result<Subscription> {
        self.inner.subscribers.subscribe(Arc::new(subscriber))
    }

    pub(crate) fn subscribers(&self) -> &Arc<Subscribers> {
        &self.inner.subscribers
    }

    pub(crate) fn reaper(&self) -> &Arc<Reaper> {
        &self.inner.reaper
    }

    pub(crate) fn pre(&self) -> &E2bToolsPre<SessionState> {
        &self.inner.pre
    }

    pub(crate) fn client(&self) -> &OutboundClient {
        &self.inner.client
    }

    /// How the requests of this runtime's sessions were sent so far.
    pub fn outbound_stats(&self) -> crate::OutboundStats {
        self.inner.client.stats()
    }
}
