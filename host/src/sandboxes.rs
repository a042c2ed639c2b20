//! What an instance's guest reported of its sandboxes (WIT `events`, or
//! the stateless world's stdout lines): turned into the session's
//! lifecycle [events](crate::events) as they come, and kept where the
//! session can read them without the instance, so a host stopping in the
//! middle of a call still knows every sandbox that is its to kill.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use e2b_wire::lifecycle::{Origin, Report, StopReason};

use crate::emitter::Emitter;
use crate::events::EventKind;

/// One instance's sandboxes, as reported.
pub(crate) struct Tracker {
    events: Emitter,
    known: Mutex<Known>,
    /// Whether attaching to a sandbox is told as its start.
    tell_attached: bool,
    /// Whether tool calls are told of.
    tell_calls: bool,
}

#[derive(Default)]
struct Known {
    /// The instance's own sandbox (not a fork), and since when.
    current: Option<(String, Instant)>,
    /// The sandboxes alive that are the host's to kill, oldest first.
    owned: Vec<String>,
    /// Set while the host itself kills them (a dropped session, a stop):
    /// what their stop events say instead of `shutdown`.
    killing_for: Option<&'static str>,
}

impl Tracker {
    pub(crate) fn new(events: Emitter) -> Self {
        Self {
            events,
            known: Mutex::default(),
            tell_attached: true,
            tell_calls: true,
        }
    }

    /// Attaching is not a start (the stateless world attaches at every
    /// call to the sandbox whose creation was told).
    pub(crate) fn without_attached_starts(mut self) -> Self {
        self.tell_attached = false;
        self
    }

    /// With `quiet`, tool calls are not told of (a pool's own calls).
    pub(crate) fn without_calls(mut self, quiet: bool) -> Self {
        self.tell_calls = !quiet;
        self
    }

    fn known(&self) -> std::sync::MutexGuard<'_, Known> {
        self.known.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The instance's own sandbox, if it has one.
    pub(crate) fn current(&self) -> Option<String> {
        self.known().current.as_ref().map(|(id, _)| id.clone())
    }

    /// The sandboxes that are the host's to kill, newest first (forks
    /// before the sandbox they came from).
    pub(crate) fn owned(&self) -> Vec<String> {
        self.known().owned.iter().rev().cloned().collect()
    }

    /// The host kills them now, because of `why` (`dropped`, `stopped`):
    /// their stop events say so.
    pub(crate) fn killing_for(&self, why: &'static str) {
        self.known().killing_for = Some(why);
    }

    /// Sandbox `id`, one of these, was killed by id through another
    /// instance (which does not report another's sandbox): told as if
    /// reported. Nothing for an id not owned (already told).
    pub(crate) fn killed_elsewhere(&self, id: &str, killed: bool) {
        if !self.known().owned.iter().any(|owned| owned == id) {
            return;
        }
        let reason = if killed {
            StopReason::Killed
        } else {
            StopReason::Gone
        };
        self.report(Report::SandboxStopped {
            sandbox_id: id.to_string(),
            reason,
        });
    }

    /// Takes one report: remembers what it says, and tells the
    /// subscribers.
    pub(crate) fn report(&self, report: Report) {
        let events = &self.events;
        let event = match report {
            Report::SandboxStarted {
                sandbox_id,
                origin,
                owned,
                ..
            } => {
                let mut known = self.known();
                if owned && !known.owned.contains(&sandbox_id) {
                    known.owned.push(sandbox_id.clone());
                }
                if origin != Origin::Forked {
                    known.current = Some((sandbox_id.clone(), Instant::now()));
                }
                let detail = match origin {
                    Origin::Created => "created",
                    Origin::Attached if !self.tell_attached => return,
                    Origin::Attached => "resumed",
                    Origin::Forked => "forked",
                };
                events
                    .event(EventKind::SandboxStart)
                    .sandbox(Some(&sandbox_id))
                    .detail(detail)
            }
            Report::SandboxStopped { sandbox_id, reason } => {
                let mut known = self.known();
                known.owned.retain(|id| *id != sandbox_id);
                let mut duration = None;
                if known
                    .current
                    .as_ref()
                    .is_some_and(|(id, _)| *id == sandbox_id)
                {
                    duration = known.current.take().map(|(_, since)| since.elapsed());
                }
                let detail = match reason {
                    StopReason::Killed => known.killing_for.unwrap_or("shutdown"),
                    StopReason::Released => "released",
                    StopReason::Gone => "gone",
                };
                let mut event = events.event(EventKind::SandboxStop);
                event.duration = duration;
                event.success = Some(reason == StopReason::Killed);
                event.sandbox(Some(&sandbox_id)).detail(detail)
            }
            Report::ExecStarted { .. } | Report::ExecEnded { .. } if !self.tell_calls => return,
            Report::ExecStarted { tool, sandbox_id } => events
                .event(EventKind::ExecStart)
                .tool(&tool)
                .sandbox(sandbox_id.as_deref()),
            Report::ExecEnded {
                tool,
                sandbox_id,
                duration_ms,
                error_kind,
            } => {
                let mut event = events.event(EventKind::ExecEnd).tool(&tool);
                event.duration = Some(Duration::from_millis(duration_ms));
                event.success = Some(error_kind.is_none());
                event.error_kind = error_kind;
                event.sandbox(sandbox_id.as_deref())
            }
            Report::SnapshotCreated {
                sandbox_id,
                snapshot_id,
            } => events
                .event(EventKind::Snapshot)
                .tool("create_snapshot")
                .sandbox(Some(&sandbox_id))
                .detail(snapshot_id),
        };
        events.emit(event);
    }
}

impl From<crate::bindings::e2b::tools::events::Event> for Report {
    fn from(event: crate::bindings::e2b::tools::events::Event) -> Self {
        use crate::bindings::e2b::tools::events as wit;
        match event {
            wit::Event::SandboxStarted(s) => Report::SandboxStarted {
                sandbox_id: s.sandbox_id,
                template: s.template,
                origin: match s.origin {
                    wit::Origin::Created => Origin::Created,
                    wit::Origin::Attached => Origin::Attached,
                    wit::Origin::Forked => Origin::Forked,
                },
                owned: s.owned,
                source: s.source,
            },
            wit::Event::SandboxStopped(s) => Report::SandboxStopped {
                sandbox_id: s.sandbox_id,
                reason: match s.reason {
                    wit::StopReason::Killed => StopReason::Killed,
                    wit::StopReason::Released => StopReason::Released,
                    wit::StopReason::Gone => StopReason::Gone,
                },
            },
            wit::Event::ExecStarted(e) => Report::ExecStarted {
                tool: e.tool,
                sandbox_id: e.sandbox_id,
            },
            wit::Event::ExecEnded(e) => Report::ExecEnded {
                tool: e.tool,
                sandbox_id: e.sandbox_id,
                duration_ms: e.duration_ms,
                error_kind: e.error_kind,
            },
            wit::Event::SnapshotCreated(s) => Report::SnapshotCreated {
                sandbox_id: s.sandbox_id,
                snapshot_id: s.snapshot_id,
            },
        }
    }
}
