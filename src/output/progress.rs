//! Progress while a call runs, for hosts that relay it (an MCP server's
//! `notifications/progress`): the latest line the sandbox printed, at most
//! a few times a second, redacted and bounded. Opt-in (`config.progress`);
//! the component emits each event through [`Platform::progress`]
//! (`wasi:cli/stdout`, one JSON object a line), so no host needs a new
//! import and the tools' results are the same with it on or off.
//!
//! [`Platform::progress`]: crate::session::platform::Platform::progress

use crate::output::redact::Secrets;

/// Bytes of the current line kept before it is redacted.
const KEPT_BYTES: usize = 1024;
/// Characters of a line in an event.
pub const LINE_CHARS: usize = 200;
/// Events at most this often.
const MIN_INTERVAL_NS: u64 = 250_000_000;

/// Follows a stream's latest line and says when to report it.
#[derive(Debug, Clone, Default)]
pub struct LatestLine {
    /// The last complete non-blank line.
    complete: String,
    /// The line being printed (no newline yet).
    partial: Vec<u8>,
    /// What was last reported.
    reported: String,
    last_report_ns: Option<u64>,
}

impl LatestLine {
    /// Takes output bytes.
    pub fn feed(&mut self, bytes: &[u8]) {
        for line in bytes.split_inclusive(|b| *b == b'\n') {
            let room = KEPT_BYTES.saturating_sub(self.partial.len());
            let body = line.strip_suffix(b"\n").unwrap_or(line);
            self.partial
                .extend_from_slice(&body[..body.len().min(room)]);
            if line.ends_with(b"\n") {
                let text = String::from_utf8_lossy(&self.partial);
                if !text.trim().is_empty() {
                    self.complete = text.trim_end().to_string();
                }
                self.partial.clear();
            }
        }
    }

    /// The line to report at `now_ns`, if it changed and the last report
    /// is old enough: redacted, then cut to [`LINE_CHARS`].
    pub fn due(&mut self, now_ns: u64, secrets: &Secrets) -> Option<String> {
        if self
            .last_report_ns
            .is_some_and(|last| now_ns.saturating_sub(last) < MIN_INTERVAL_NS)
        {
            return None;
        }
        let partial = String::from_utf8_lossy(&self.partial);
        let current = if partial.trim().is_empty() {
            self.complete.clone()
        } else {
            partial.trim_end().to_string()
        };
        if current.is_empty() || current == self.reported {
            return None;
        }
        self.reported = current.clone();
        self.last_report_ns = Some(now_ns);
        let line: String = secrets.redact(&current).chars().take(LINE_CHARS).collect();
        Some(line)
    }
}

/// One event as the component writes it: `{"progress": {"line", "tool"}}`
/// (keys sorted, so the text is the same whatever serde_json's features).
pub fn event_json(tool: &str, line: &str) -> String {
    serde_json::json!({"progress": {"line": line, "tool": tool}}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_line_is_reported_once_redacted_bounded_and_rate_limited() {
        let secrets = Secrets::new(["e2b_secret"]);
        let mut latest = LatestLine::default();
        assert_eq!(latest.due(0, &secrets), None, "nothing printed yet");
        latest.feed(b"step 1\nstep 2 key=e2b_secret\n\n");
        assert_eq!(
            latest.due(0, &secrets).as_deref(),
            Some("step 2 key=<redacted>")
        );
        latest.feed(b"step 3 half");
        assert_eq!(latest.due(100_000_000, &secrets), None, "too soon");
        assert_eq!(
            latest.due(300_000_000, &secrets).as_deref(),
            Some("step 3 half")
        );
        assert_eq!(latest.due(900_000_000, &secrets), None, "unchanged");
        latest.feed(&[b'x'; 5000]);
        let long = latest.due(2_000_000_000, &secrets).unwrap();
        assert!(long.starts_with("step 3 halfxxx") && long.chars().count() == LINE_CHARS);
        assert_eq!(
            event_json("run_command", "a\"b"),
            r#"{"progress":{"line":"a\"b","tool":"run_command"}}"#
        );
    }
}
