//! The component's progress events (`config.progress`): it writes them to
//! its stdout, one JSON object a line; this is that stdout, keeping the
//! latest line in a `watch` channel a host relays from (the MCP server's
//! `notifications/progress`). The stateless world's lifecycle events come
//! the same way (`{"event": …}` lines) and go to the instance's
//! tracker (`sandboxes.rs`). Anything else is dropped.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use e2b_wire::lifecycle::Report;

use crate::sandboxes::Tracker;

use tokio::io::AsyncWrite;
use tokio::sync::watch;

/// The latest progress a session's component reported.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Progress {
    /// Events so far (to tell a new one from the last).
    pub count: u64,
    /// The tool that reported it.
    pub tool: String,
    /// Its latest output line (redacted and bounded by the component).
    pub line: String,
}

/// Bytes of one line kept before it is dropped as not an event.
const MAX_LINE: usize = 4096;

/// The component's stdout: parses progress lines into `sender`, event
/// lines into `tracker`.
pub(crate) struct ProgressWriter {
    sender: watch::Sender<Progress>,
    tracker: Arc<Tracker>,
    line: Vec<u8>,
}

impl ProgressWriter {
    pub(crate) fn new(sender: watch::Sender<Progress>, tracker: Arc<Tracker>) -> Self {
        Self {
            sender,
            tracker,
            line: Vec::new(),
        }
    }

    fn take(&mut self, bytes: &[u8]) {
        for piece in bytes.split_inclusive(|b| *b == b'\n') {
            let room = MAX_LINE.saturating_sub(self.line.len());
            self.line.extend_from_slice(&piece[..piece.len().min(room)]);
            if piece.ends_with(b"\n") {
                let line = std::mem::take(&mut self.line);
                if let Some((tool, text)) = parse_event(&line) {
                    self.sender.send_modify(|p| {
                        p.count += 1;
                        p.tool = tool;
                        p.line = text;
                    });
                } else if let Some(report) = Report::from_json_line(&line) {
                    self.tracker.report(report);
                }
            }
        }
    }
}

/// `{"progress": {"line": …, "tool": …}}`.
fn parse_event(line: &[u8]) -> Option<(String, String)> {
    let value: serde_json::Value = serde_json::from_slice(line).ok()?;
    let event = value.get("progress")?;
    Some((
        event.get("tool")?.as_str()?.to_string(),
        event.get("line")?.as_str()?.to_string(),
    ))
}

impl AsyncWrite for ProgressWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.get_mut().take(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_lines_become_the_latest_progress_and_anything_else_is_dropped() {
        let (tx, rx) = watch::channel(Progress::default());
        let events = crate::emitter::Emitter::new(0, Default::default());
        let tracker = Arc::new(Tracker::new(events));
        let mut writer = ProgressWriter::new(tx, tracker.clone());
        writer.take(b"not json\n{\"progress\":{\"line\":\"step 1\",\"tool\":\"run_");
        assert_eq!(rx.borrow().count, 0);
        writer.take(b"command\"}}\n{\"other\":1}\n");
        assert_eq!(
            *rx.borrow(),
            Progress {
                count: 1,
                tool: "run_command".into(),
                line: "step 1".into()
            }
        );
        // A lifecycle event (the stateless world's) goes to the tracker.
        writer.take(b"{\"event\":{\"kind\":\"sandbox_started\",\"sandbox_id\":\"sbx\",\"template\":\"t\",\"origin\":\"created\",\"owned\":true,\"source\":null}}\n");
        assert_eq!(tracker.owned(), ["sbx"]);
        assert_eq!(rx.borrow().count, 1);
    }
}
