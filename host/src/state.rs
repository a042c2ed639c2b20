//! The per-session store data: what one component instance may touch.

use crate::clock::SessionClock;
use crate::limits::MemoryLimiter;
use crate::outbound::OutboundHooks;
use std::collections::BTreeMap;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

/// The `T` of a session's `Store<T>`.
pub(crate) struct SessionState {
    wasi: WasiCtx,
    http: WasiHttpCtx,
    pub(crate) table: ResourceTable,
    pub(crate) hooks: OutboundHooks,
    pub(crate) limits: MemoryLimiter,
    pub(crate) clock: SessionClock,
    /// Cancels the instance's current call (shared with its hooks).
    pub(crate) cancel: std::sync::Arc<crate::outbound::CallCancel>,
    /// What the guest reports of its sandboxes (shared with the session).
    pub(crate) tracker: std::sync::Arc<crate::sandboxes::Tracker>,
}

impl SessionState {
    /// A state whose guest sees only `env` as its environment, no
    /// filesystem, no sockets and no stdin; its stderr goes to the host's
    /// stderr so guest panics are visible, its stdout (progress events)
    /// to `progress`, its lifecycle events to `tracker`.
    pub(crate) fn new(
        env: &BTreeMap<String, String>,
        hooks: OutboundHooks,
        limits: MemoryLimiter,
        clock: SessionClock,
        progress: tokio::sync::watch::Sender<crate::progress::Progress>,
        tracker: std::sync::Arc<crate::sandboxes::Tracker>,
    ) -> Self {
        let mut wasi = WasiCtx::builder();
        for (key, value) in env {
            wasi.env(key, value);
        }
        // The write budget: a few events in flight at most.
        wasi.stdout(wasmtime_wasi::cli::AsyncStdoutStream::new(
            4096,
            crate::progress::ProgressWriter::new(progress, tracker.clone()),
        ));
        wasi.inherit_stderr()
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false);
        Self {
            wasi: wasi.build(),
            http: WasiHttpCtx::new(),
            table: ResourceTable::new(),
            hooks,
            limits,
            clock,
            cancel: Default::default(),
            tracker,
        }
    }
}

/// The embedding world's `events` import: each report, as it comes.
impl crate::bindings::e2b::tools::events::Host for SessionState {
    fn report(&mut self, event: crate::bindings::e2b::tools::events::Event) {
        self.tracker.report(event.into());
    }
}

impl WasiView for SessionState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for SessionState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.hooks,
        }
    }
}
