//! The audit trail: one `tracing` event per thing a session does, all with
//! the target [`AUDIT_TARGET`] (`--verbose` or `--log-format json` shows
//! them). It is a subscriber of the session's [lifecycle
//! events](crate::events), run inline (it only writes `tracing` events),
//! plus the opening of a session, which is no lifecycle event. Every line
//! of a session carries its id. Nothing secret goes in: no keys, tokens,
//! arguments or outputs.

use crate::events::{Event, EventKind};

/// The log target of the audit trail.
pub const AUDIT_TARGET: &str = "e2b_tools::audit";

/// A session was opened, allowed to reach `allowed`.
pub(crate) fn session_opened(session: u64, allowed: &dyn std::fmt::Display) {
    tracing::info!(target: AUDIT_TARGET, session, allowed = %allowed, "session opened");
}

/// Writes one lifecycle event to the trail.
pub(crate) fn record(event: &Event) {
    let session = event.session;
    let sandbox = event.sandbox_id.as_deref().unwrap_or("");
    let tool = event.tool.as_deref().unwrap_or("");
    let detail = event.detail.as_deref().unwrap_or("");
    match event.kind {
        EventKind::ExecStart => {
            tracing::info!(target: AUDIT_TARGET, session, tool, "tool call started")
        }
        EventKind::ExecEnd => {
            let duration_ms = event.duration.unwrap_or_default().as_millis() as u64;
            let success = event.success.unwrap_or(false);
            match &event.error_kind {
                Some(kind) => tracing::info!(
                    target: AUDIT_TARGET,
                    session,
                    tool,
                    duration_ms,
                    success,
                    error_kind = %kind,
                    "tool call finished"
                ),
                None => tracing::info!(
                    target: AUDIT_TARGET,
                    session,
                    tool,
                    duration_ms,
                    success,
                    "tool call finished"
                ),
            }
        }
        EventKind::SandboxStart if detail == "resumed" => {
            tracing::info!(target: AUDIT_TARGET, session, sandbox, "sandbox resumed")
        }
        EventKind::SandboxStart => {
            tracing::info!(target: AUDIT_TARGET, session, sandbox, "sandbox created")
        }
        EventKind::SandboxStop if detail == "gone" => {
            tracing::info!(target: AUDIT_TARGET, session, sandbox, "sandbox gone")
        }
        EventKind::SandboxStop => {
            let killed = event.success.unwrap_or(false);
            tracing::info!(target: AUDIT_TARGET, session, sandbox, killed, reason = detail, "sandbox shut down")
        }
        EventKind::Snapshot => {
            tracing::info!(target: AUDIT_TARGET, session, sandbox, tool, snapshot = detail, "snapshot created")
        }
        EventKind::Error if event.error_kind.as_deref() == Some("trapped") => {
            tracing::error!(target: AUDIT_TARGET, session, error = detail, "component trapped; session closed")
        }
        EventKind::Error => {
            let error_kind = event.error_kind.as_deref().unwrap_or("");
            tracing::warn!(target: AUDIT_TARGET, session, sandbox, error_kind, error = detail, "session error")
        }
    }
}
