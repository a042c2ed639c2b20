//! The audit trail: one `tracing` event per thing a session does, all with
//! the target [`AUDIT_TARGET`] (`--verbose` or `--log-format json` shows
//! them). Every event of a session carries its id. Nothing secret goes in:
//! no keys, tokens, arguments or outputs.

use std::time::Duration;

use crate::bindings::ErrorKind;

/// The log target of the audit trail.
pub const AUDIT_TARGET: &str = "e2b_tools::audit";

/// A session was opened, allowed to reach `allowed`.
pub(crate) fn session_opened(session: u64, allowed: &dyn std::fmt::Display) {
    tracing::info!(target: AUDIT_TARGET, session, allowed = %allowed, "session opened");
}

/// A tool call began.
pub(crate) fn call_started(session: u64, tool: &str) {
    tracing::info!(target: AUDIT_TARGET, session, tool, "tool call started");
}

/// A tool call ended after `took`; `error_kind` when it failed with one.
pub(crate) fn call_finished(
    session: u64,
    tool: &str,
    took: Duration,
    success: bool,
    error_kind: Option<ErrorKind>,
) {
    let duration_ms = took.as_millis() as u64;
    match error_kind {
        Some(kind) => tracing::info!(
            target: AUDIT_TARGET,
            session,
            tool,
            duration_ms,
            success,
            error_kind = ?kind,
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

/// The session's sandbox changed from `old` to `new`; `resumed` when `new`
/// is the sandbox the configuration asked to attach to.
pub(crate) fn sandbox_changed(session: u64, old: Option<&str>, new: Option<&str>, resumed: bool) {
    match (old, new) {
        (_, Some(new)) if resumed => {
            tracing::info!(target: AUDIT_TARGET, session, sandbox = %new, "sandbox resumed")
        }
        (_, Some(new)) => {
            tracing::info!(target: AUDIT_TARGET, session, sandbox = %new, "sandbox created")
        }
        (Some(old), None) => {
            tracing::info!(target: AUDIT_TARGET, session, sandbox = %old, "sandbox gone")
        }
        (None, None) => {}
    }
}

/// The session's sandbox was shut down (`killed`: it existed and is gone).
pub(crate) fn sandbox_shut_down(session: u64, sandbox: &str, killed: bool) {
    tracing::info!(target: AUDIT_TARGET, session, sandbox = %sandbox, killed, "sandbox shut down");
}

/// The component trapped: the session is closed.
pub(crate) fn trapped(session: u64, reason: &str) {
    tracing::error!(target: AUDIT_TARGET, session, error = %reason, "component trapped; session closed");
}
