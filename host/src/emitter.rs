//! [`Emitter`]: where one session's lifecycle events go, in order: the
//! audit trail (inline), the session's own subscribers, its runtime's.

use std::sync::Arc;

use crate::events::{Event, EventKind, Subscribers};

/// Where a session's events go: the audit trail, its own subscribers and
/// its runtime's.
#[derive(Clone)]
pub(crate) struct Emitter {
    pub(crate) session: u64,
    pub(crate) own: Arc<Subscribers>,
    runtime: Arc<Subscribers>,
}

impl Emitter {
    pub(crate) fn new(session: u64, runtime: Arc<Subscribers>) -> Self {
        Self {
            session,
            own: Arc::default(),
            runtime,
        }
    }

    /// A new event of this session.
    pub(crate) fn event(&self, kind: EventKind) -> Event {
        Event::new(kind, self.session)
    }

    pub(crate) fn emit(&self, event: Event) {
        crate::audit::record(&event);
        self.own.publish(&event);
        self.runtime.publish(&event);
    }
}
