//! Lifecycle events: what a session does, told to the subscribers
//! registered on its [`Runtime`](crate::Runtime) (every session of it) or
//! on the [`Session`](crate::Session) itself.
//!
//! Six kinds ([`EventKind`]): a sandbox started (created or resumed) or
//! stopped (shut down, gone, killed on drop), a tool call started or ended,
//! a snapshot was taken (a successful `create_snapshot` call), and an error
//! of the session itself (a trap, a failed shutdown). An event carries the
//! tool, the sandbox id, a duration, success and the error kind; never
//! argument values, and its `detail` text comes from the component, which
//! redacts secrets from everything it returns.
//!
//! Delivery never holds a call up: each subscriber has a bounded queue
//! ([`QUEUE_CAPACITY`]) drained by a thread of its own, so a subscriber that
//! panics or blocks loses events (counted by [`Subscription::dropped`])
//! and nothing else. The audit trail is the one subscriber run inline,
//! because it only writes `tracing` events.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::{Arc, RwLock, Weak};
use std::time::{Duration, SystemTime};

/// How many undelivered events a subscriber's queue holds; past that, new
/// events for it are dropped and counted.
pub const QUEUE_CAPACITY: usize = 1024;

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// The session's sandbox was created (`detail`: `created`) or
    /// attached to (`resumed`).
    SandboxStart,
    /// The session's sandbox is gone: `detail` says `shutdown`, `gone`
    /// (it expired or was killed elsewhere) or `dropped` (killed because
    /// the session was dropped without a shutdown); `duration` is how long
    /// the session had it.
    SandboxStop,
    /// A tool call began.
    ExecStart,
    /// A tool call ended, after `duration`, with `success` (a failed tool
    /// is `success: false`, with `error_kind` when the component gave one).
    ExecEnd,
    /// A `create_snapshot` call succeeded; `detail` is its `snapshot_id`.
    Snapshot,
    /// The session itself failed: the component trapped (`error_kind`
    /// `trapped`) or a shutdown failed; `detail` says why.
    Error,
}

impl EventKind {
    /// The kind's name, as every host spells it (`exec_end`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::SandboxStart => "sandbox_start",
            EventKind::SandboxStop => "sandbox_stop",
            EventKind::ExecStart => "exec_start",
            EventKind::ExecEnd => "exec_end",
            EventKind::Snapshot => "snapshot",
            EventKind::Error => "error",
        }
    }
}

/// One lifecycle event.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Event {
    /// What happened.
    pub kind: EventKind,
    /// The session's number ([`Session::id`](crate::Session::id)).
    pub session: u64,
    /// When it happened.
    #[serde(skip)]
    pub time: SystemTime,
    /// The tool, for exec and snapshot events.
    pub tool: Option<String>,
    /// The sandbox, when the session has one.
    pub sandbox_id: Option<String>,
    /// How long the call took (exec end), or the session had the sandbox
    /// (sandbox stop).
    #[serde(serialize_with = "as_millis")]
    pub duration: Option<Duration>,
    /// Whether the call succeeded (exec end).
    pub success: Option<bool>,
    /// The failure's kind, kebab-case as in the WIT (`not-found`,
    /// `timeout`, …), or `trapped`.
    pub error_kind: Option<String>,
    /// More about it: see each [`EventKind`].
    pub detail: Option<String>,
}

fn as_millis<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_some(&(d.as_millis() as u64)),
        None => s.serialize_none(),
    }
}

impl Event {
    /// An event of `kind` in `session`, every other field empty.
    pub(crate) fn new(kind: EventKind, session: u64) -> Self {
        Self {
            kind,
            session,
            time: SystemTime::now(),
            tool: None,
            sandbox_id: None,
            duration: None,
            success: None,
            error_kind: None,
            detail: None,
        }
    }

    pub(crate) fn tool(mut self, tool: &str) -> Self {
        self.tool = Some(tool.to_string());
        self
    }

    pub(crate) fn sandbox(mut self, sandbox: Option<&str>) -> Self {
        self.sandbox_id = sandbox.map(str::to_string);
        self
    }

    pub(crate) fn detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }
}

/// Receives events. Implemented for every `Fn(&Event) + Send + Sync`.
/// Runs on a thread of its own; a panic or a long wait there costs only
/// this subscriber's events.
pub trait Subscriber: Send + Sync + 'static {
    /// One event, in the order the session made them.
    fn on_event(&self, event: &Event);
}

impl<F: Fn(&Event) + Send + Sync + 'static> Subscriber for F {
    fn on_event(&self, event: &Event) {
        self(event)
    }
}

/// Counts of one subscriber's events.
#[derive(Debug, Default)]
struct Counters {
    delivered: AtomicU64,
    dropped: AtomicU64,
}

/// One subscriber's end of its queue.
struct Queue {
    sender: SyncSender<Event>,
    counters: Arc<Counters>,
}

/// A registered subscriber: its counts, and the way to remove it.
/// Dropping the handle keeps the subscriber registered.
pub struct Subscription {
    queue: Arc<Queue>,
    list: Weak<Subscribers>,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("delivered", &self.delivered())
            .field("dropped", &self.dropped())
            .finish()
    }
}

impl Subscription {
    /// Events handed to the subscriber that returned without panicking.
    pub fn delivered(&self) -> u64 {
        self.queue.counters.delivered.load(Ordering::Relaxed)
    }

    /// Events lost: its queue was full (it blocked or is slow), or it
    /// panicked on them.
    pub fn dropped(&self) -> u64 {
        self.queue.counters.dropped.load(Ordering::Relaxed)
    }

    /// Removes the subscriber; events already queued are still delivered.
    pub fn unsubscribe(self) {
        if let Some(list) = self.list.upgrade() {
            let mut queues = list.queues.write().unwrap_or_else(|e| e.into_inner());
            queues.retain(|q| !Arc::ptr_eq(q, &self.queue));
        }
    }
}

/// The subscribers of a runtime or a session.
#[derive(Default)]
pub(crate) struct Subscribers {
    queues: RwLock<Vec<Arc<Queue>>>,
}

impl Subscribers {
    /// Registers `subscriber` behind a bounded queue and a thread of its own.
    pub(crate) fn subscribe(
        self: &Arc<Self>,
        subscriber: Arc<dyn Subscriber>,
    ) -> std::io::Result<Subscription> {
        let (sender, receiver) = sync_channel::<Event>(QUEUE_CAPACITY);
        let counters = Arc::new(Counters::default());
        let count = counters.clone();
        // Ends when the queue's last sender (list and handle) is dropped.
        std::thread::Builder::new()
            .name("e2b-tools-events".into())
            .spawn(move || {
                for event in receiver {
                    let call = std::panic::AssertUnwindSafe(|| subscriber.on_event(&event));
                    if std::panic::catch_unwind(call).is_ok() {
                        count.delivered.fetch_add(1, Ordering::Relaxed);
                    } else {
                        count.dropped.fetch_add(1, Ordering::Relaxed);
                        tracing::warn!(kind = event.kind.as_str(), "an event subscriber panicked");
                    }
                }
            })?;
        let queue = Arc::new(Queue { sender, counters });
        self.queues
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push(queue.clone());
        Ok(Subscription {
            queue,
            list: Arc::downgrade(self),
        })
    }

    /// Queues `event` for each subscriber, never waiting.
    pub(crate) fn publish(&self, event: &Event) {
        let queues = self.queues.read().unwrap_or_else(|e| e.into_inner());
        for queue in queues.iter() {
            match queue.sender.try_send(event.clone()) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                    // Warn once per subscriber, not once per event.
                    if queue.counters.dropped.fetch_add(1, Ordering::Relaxed) == 0 {
                        tracing::warn!(
                            kind = event.kind.as_str(),
                            "an event subscriber is not keeping up; its events are dropped"
                        );
                    }
                }
            }
        }
    }
}

/// An error kind's WIT name (`not-found`, …).
pub(crate) fn kind_name(kind: crate::bindings::ErrorKind) -> &'static str {
    use crate::bindings::ErrorKind as K;
    match kind {
        K::InvalidArgument => "invalid-argument",
        K::SandboxUnavailable => "sandbox-unavailable",
        K::SandboxExpired => "sandbox-expired",
        K::Timeout => "timeout",
        K::NotFound => "not-found",
        K::PermissionDenied => "permission-denied",
        K::RateLimited => "rate-limited",
        K::Auth => "auth",
        K::Network => "network",
        K::Cancelled => "cancelled",
        K::Internal => "internal",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::channel;

    #[test]
    fn a_panicking_or_blocked_subscriber_loses_only_its_own_events() {
        let list = Arc::new(Subscribers::default());
        let (seen, got) = channel();
        let seen = std::sync::Mutex::new(seen);
        let good = list
            .subscribe(Arc::new(move |e: &Event| {
                seen.lock().unwrap().send(e.session).unwrap();
            }))
            .unwrap();
        let panics = list
            .subscribe(Arc::new(|e: &Event| {
                assert!(e.session >= 3, "subscriber bug")
            }))
            .unwrap();
        let (_release, wait) = channel::<()>();
        let wait = std::sync::Mutex::new(wait);
        let blocks = list
            .subscribe(Arc::new(move |_: &Event| {
                let _ = wait.lock().unwrap().recv();
            }))
            .unwrap();
        let total = QUEUE_CAPACITY as u64 + 10;
        let mut order = Vec::new();
        for n in 0..total {
            list.publish(&Event::new(EventKind::ExecStart, n));
            // The good and the panicking subscriber keep up (their queues
            // never fill); the blocked one cannot.
            if n % 100 == 99 {
                order.extend((0..100).map(|_| got.recv().unwrap()));
                while panics.delivered() + panics.dropped() <= n {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
        while (order.len() as u64) < total {
            order.push(got.recv().unwrap());
        }
        assert_eq!(order, (0..total).collect::<Vec<_>>(), "in order, none lost");
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while panics.delivered() + panics.dropped() < total && std::time::Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!((panics.dropped(), panics.delivered()), (3, total - 3));
        // The blocked one holds one event and queues QUEUE_CAPACITY more.
        assert!(blocks.dropped() >= 9, "{}", blocks.dropped());
        assert_eq!(good.dropped(), 0);
        good.unsubscribe();
        list.publish(&Event::new(EventKind::ExecEnd, 0));
        assert!(got.recv_timeout(Duration::from_millis(200)).is_err());
    }
}
