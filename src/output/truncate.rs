//! Byte-bounded, UTF-8-safe truncation of tool output, on a stream.
//!
//! The result is exactly e2b-adk's `truncate_output(text, limit)` applied to
//! the whole text: text whose UTF-8 length is at most `limit` is returned
//! unchanged; longer text keeps its longest prefix of whole characters that
//! fits in `limit` bytes, followed by `…[truncated N bytes]` (`N` with
//! thousands separators). Unlike e2b-adk, the whole text is never held:
//! a [`TruncatingSink`] keeps at most `limit` bytes and only counts the rest,
//! so memory stays O(limit) whatever the output size.
//!
//! Raw bytes from the wire are decoded as UTF-8 on the fly; each maximal
//! invalid sequence becomes U+FFFD, as Python's `errors="replace"` decoder
//! (used by the E2B SDK) does. Byte counts — the limit and `N` — are counted
//! on the *decoded* text, so an invalid byte counts as the three bytes of
//! U+FFFD. That is what e2b-adk reports too, since it truncates the text the
//! SDK has already decoded.

use crate::output::redact::{Secrets, StreamRedactor};

/// The replacement character's UTF-8 encoding.
const REPLACEMENT: &str = "\u{FFFD}";

/// Collects a text stream, keeping at most `limit` bytes of it.
#[derive(Debug, Clone)]
pub struct TruncatingSink {
    limit: usize,
    kept: String,
    /// UTF-8 length of everything pushed (after decoding).
    total: u64,
    /// Set once a character did not fit: nothing more is kept after it.
    full: bool,
    /// An incomplete UTF-8 sequence at the end of the last byte chunk.
    pending: Vec<u8>,
    /// Redacts the decoded text before it is counted and kept.
    redactor: Option<StreamRedactor>,
    /// Whether any bytes were not UTF-8 (and became U+FFFD).
    invalid_utf8: bool,
}

impl TruncatingSink {
    /// A sink keeping at most `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Self {
            limit,
            kept: String::new(),
            total: 0,
            full: false,
            pending: Vec::new(),
            redactor: None,
            invalid_utf8: false,
        }
    }

    /// The same sink, replacing `secrets` before truncating (so the
    /// truncation can never cut a secret and keep its prefix).
    pub fn redacting(mut self, secrets: &Secrets) -> Self {
        if !secrets.is_empty() {
            self.redactor = Some(StreamRedactor::new(secrets.clone()));
        }
        self
    }

    /// Appends already-decoded text.
    pub fn push_str(&mut self, text: &str) {
        self.flush_pending();
        self.append(text);
    }

    /// Appends raw bytes, decoding UTF-8 across chunk boundaries.
    pub fn push_bytes(&mut self, mut bytes: &[u8]) {
        // Complete a sequence left over from the previous chunk first.
        while !self.pending.is_empty() && !bytes.is_empty() {
            self.pending.push(bytes[0]);
            bytes = &bytes[1..];
            match std::str::from_utf8(&self.pending) {
                Ok(_) => {
                    let done = std::mem::take(&mut self.pending);
                    self.append(std::str::from_utf8(&done).unwrap_or(REPLACEMENT));
                }
                Err(e) if e.error_len().is_some() => {
                    // The leftover was not the start of a valid sequence:
                    // replace its invalid part and re-feed the rest.
                    let done = std::mem::take(&mut self.pending);
                    let bad = e.valid_up_to() + e.error_len().unwrap_or(1);
                    self.invalid_utf8 = true;
                    self.append(REPLACEMENT);
                    let rest = done[bad..].to_vec();
                    self.push_bytes(&rest);
                }
                Err(_) => {}
            }
        }
        while !bytes.is_empty() {
            match std::str::from_utf8(bytes) {
                Ok(text) => {
                    self.append(text);
                    return;
                }
                Err(e) => {
                    let (valid, rest) = bytes.split_at(e.valid_up_to());
                    self.append(std::str::from_utf8(valid).unwrap_or(""));
                    match e.error_len() {
                        Some(n) => {
                            self.invalid_utf8 = true;
                            self.append(REPLACEMENT);
                            bytes = &rest[n..];
                        }
                        None => {
                            self.pending = rest.to_vec();
                            return;
                        }
                    }
                }
            }
        }
    }

    /// Whether anything was pushed.
    pub fn is_empty(&self) -> bool {
        self.total == 0 && self.pending.is_empty()
    }

    /// The truncated text without consuming the sink (an unfinished UTF-8
    /// sequence at the end counts as one U+FFFD).
    pub fn snapshot(&self) -> String {
        self.clone().finish()
    }

    /// The truncated text.
    pub fn finish(mut self) -> String {
        self.flush_pending();
        if let Some(redactor) = self.redactor.as_mut() {
            let rest = redactor.finish();
            self.keep(&rest);
        }
        self.render()
    }

    fn render(&self) -> String {
        if self.total <= self.limit as u64 {
            return self.kept.clone();
        }
        let omitted = self.total - self.kept.len() as u64;
        format!("{}{}", self.kept, marker(omitted))
    }

    fn flush_pending(&mut self) {
        if !self.pending.is_empty() {
            self.pending.clear();
            self.invalid_utf8 = true;
            self.append(REPLACEMENT);
        }
    }

    /// Whether bytes pushed so far were not UTF-8 (an unfinished sequence
    /// at the end counts once [`finish`](Self::finish) replaces it).
    pub fn saw_invalid_utf8(&self) -> bool {
        self.invalid_utf8 || !self.pending.is_empty()
    }

    fn append(&mut self, text: &str) {
        match self.redactor.as_mut() {
            Some(redactor) => {
                let safe = redactor.push(text);
                self.keep(&safe);
            }
            None => self.keep(text),
        }
    }

    /// Counts `text` and keeps what fits.
    fn keep(&mut self, text: &str) {
        self.total += text.len() as u64;
        if self.full {
            return;
        }
        let room = self.limit - self.kept.len();
        if text.len() <= room {
            self.kept.push_str(text);
            return;
        }
        // Keep the longest whole-character prefix that fits.
        let mut cut = room;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        self.kept.push_str(&text[..cut]);
        self.full = true;
    }
}

/// A process's stdout and stderr, each kept to the same bound on its own
/// (an envd process stream, a code execution).
#[derive(Debug, Clone)]
pub struct Outputs {
    /// stdout so far (truncated).
    pub stdout: TruncatingSink,
    /// stderr so far (truncated).
    pub stderr: TruncatingSink,
}

impl Outputs {
    /// Both outputs keeping `limit` bytes each.
    pub fn new(limit: usize) -> Self {
        Self {
            stdout: TruncatingSink::new(limit),
            stderr: TruncatingSink::new(limit),
        }
    }

    /// The same outputs, redacting `secrets` before truncating.
    pub fn redacting(self, secrets: &Secrets) -> Self {
        Self {
            stdout: self.stdout.redacting(secrets),
            stderr: self.stderr.redacting(secrets),
        }
    }

    /// stdout and stderr so far, for a failure's `partial_output`.
    pub fn partial_output(&self) -> String {
        combine_partial(&self.stdout.snapshot(), &self.stderr.snapshot())
    }
}

/// Joins captured stdout and stderr for a failure's `partial_output`.
pub fn combine_partial(stdout: &str, stderr: &str) -> String {
    match (stdout.is_empty(), stderr.is_empty()) {
        (_, true) => stdout.to_string(),
        (true, false) => stderr.to_string(),
        (false, false) => format!("{stdout}\n[stderr]\n{stderr}"),
    }
}

/// The marker that ends a field `omitted` bytes short.
pub fn marker(omitted: u64) -> String {
    format!("…[truncated {} bytes]", thousands(omitted))
}

/// e2b-adk's `truncate_output` on a whole string.
pub fn truncate_text(text: &str, limit: usize) -> String {
    let mut sink = TruncatingSink::new(limit);
    sink.push_str(text);
    sink.finish()
}

/// `1234567` → `1,234,567`, as Python's `{:,}`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_and_exact_limit_are_unchanged() {
        assert_eq!(truncate_text("hello", 10_000), "hello");
        let exact = "a".repeat(10_000);
        assert_eq!(truncate_text(&exact, 10_000), exact);
        assert_eq!(truncate_text("", 0), "");
    }

    #[test]
    fn marker_counts_omitted_bytes_with_separators() {
        let text = "a".repeat(10_431);
        let out = truncate_text(&text, 10_000);
        assert_eq!(out, format!("{}…[truncated 431 bytes]", "a".repeat(10_000)));
        let big = "b".repeat(15_000);
        assert!(truncate_text(&big, 10_000).ends_with("…[truncated 5,000 bytes]"));
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
    }

    #[test]
    fn partial_trailing_character_is_dropped() {
        // "é" is 2 bytes: limit 1 keeps nothing of it.
        assert_eq!(truncate_text("éabc", 1), "…[truncated 5 bytes]");
        assert_eq!(truncate_text("aé", 2), "a…[truncated 2 bytes]");
        assert_eq!(truncate_text("abc", 0), "…[truncated 3 bytes]");
        let emoji = "😀".repeat(3000); // 12,000 bytes
        let out = truncate_text(&emoji, 10_001);
        assert_eq!(
            out,
            format!("{}…[truncated 2,000 bytes]", "😀".repeat(2500))
        );
    }

    #[test]
    fn stream_equals_whole_text_for_any_chunking() {
        let text = "héllo wörld 😀 ".repeat(50);
        for limit in [0, 1, 7, 100, 333, text.len(), text.len() + 1] {
            let want = truncate_text(&text, limit);
            for chunk in [1, 2, 3, 5, 64] {
                let mut sink = TruncatingSink::new(limit);
                for part in text.as_bytes().chunks(chunk) {
                    sink.push_bytes(part);
                }
                assert_eq!(sink.finish(), want, "limit {limit} chunk {chunk}");
            }
        }
    }

    #[test]
    fn invalid_utf8_becomes_replacement_like_python() {
        let mut sink = TruncatingSink::new(100);
        sink.push_bytes(b"a\xffb\xe2\x82");
        sink.push_bytes(b"\xacc\xe2\x82");
        assert_eq!(sink.finish(), "a\u{FFFD}b€c\u{FFFD}");
        // An invalid continuation splits the leftover into U+FFFD + the rest.
        let mut sink = TruncatingSink::new(100);
        sink.push_bytes(b"\xe2");
        sink.push_bytes(b"x");
        assert_eq!(sink.finish(), "\u{FFFD}x");
        // Counts are on the decoded text: one bad byte is 3 bytes.
        let mut sink = TruncatingSink::new(2);
        sink.push_bytes(b"\xff\xff");
        assert_eq!(sink.finish(), "…[truncated 6 bytes]");
        let mut sink = TruncatingSink::new(100);
        sink.push_bytes("héllo".as_bytes());
        assert!(!sink.saw_invalid_utf8());
        sink.push_bytes(b"\xe2");
        assert!(sink.saw_invalid_utf8(), "an unfinished sequence at the end");
    }

    #[test]
    fn a_secret_at_the_truncation_boundary_leaks_no_prefix() {
        let key = "e2b_0123456789abcdef";
        let secrets = Secrets::new([key]);
        let text = format!("{}{key}{}", "a".repeat(95), "b".repeat(50));
        for chunk in [1, 7, 64, text.len()] {
            let mut sink = TruncatingSink::new(100).redacting(&secrets);
            for part in text.as_bytes().chunks(chunk) {
                sink.push_bytes(part);
            }
            // Truncation counts the redacted text: 95 + 10 + 50 bytes.
            assert_eq!(
                sink.finish(),
                format!("{}<reda…[truncated 55 bytes]", "a".repeat(95)),
                "chunk {chunk}"
            );
        }
    }

    #[test]
    fn memory_stays_bounded_on_large_streams() {
        let mut sink = TruncatingSink::new(16);
        let chunk = vec![b'x'; 1 << 16];
        for _ in 0..1024 {
            sink.push_bytes(&chunk);
        }
        assert!(sink.kept.capacity() < 1024);
        assert_eq!(
            sink.finish(),
            format!("{}…[truncated 67,108,848 bytes]", "x".repeat(16))
        );
    }
}
