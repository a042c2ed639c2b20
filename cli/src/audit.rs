//! The front-ends' events in the host's audit trail (target
//! [`AUDIT_TARGET`]): what the library's sessions do is logged by the
//! library; what only a front-end does is logged here.

use e2b_tools_host::AUDIT_TARGET;

/// Shutting a sandbox down failed.
pub(crate) fn shutdown_failed(error: &dyn std::fmt::Display) {
    tracing::warn!(target: AUDIT_TARGET, error = %error, "sandbox shutdown failed");
}

/// The embedded local server started.
pub(crate) fn local_server_started(url: &str, isolated: bool) {
    tracing::info!(target: AUDIT_TARGET, url = %url, isolation = isolated, "local server started");
}
