//! Log output on stderr: text for people, JSON for machines.

use super::args::LogFormat;
use std::io::IsTerminal;
use tracing_subscriber::EnvFilter;

/// Installs the global subscriber. The filter comes from `E2B_TOOLS_LOG`,
/// then `RUST_LOG`; by default only warnings, plus the audit trail when
/// `audit` is on.
pub(crate) fn init(format: LogFormat, audit: bool) {
    let default = if audit {
        "warn,e2b_tools::audit=info"
    } else {
        "warn"
    };
    let filter = std::env::var("E2B_TOOLS_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .ok()
        .and_then(|spec| EnvFilter::try_new(spec).ok())
        .unwrap_or_else(|| EnvFilter::new(default));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.with_target(false).init(),
        LogFormat::Json => builder.json().with_current_span(false).init(),
    }
}
