//! The front-ends' lines in the host's audit trail (target
//! [`AUDIT_TARGET`]): what the library's sessions do, failed shutdowns
//! included, is logged by the library (its lifecycle events); what only a
//! front-end does is logged here.

use e2b_tools_host::AUDIT_TARGET;

/// The embedded local server started.
pub(crate) fn local_server_started(url: &str, isolated: bool) {
    tracing::info!(target: AUDIT_TARGET, url = %url, isolation = isolated, "local server started");
}
