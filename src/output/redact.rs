//! Keeping the session's secrets (the API key, the sandbox's tokens) out of
//! every text a tool returns.
//!
//! Whole strings are redacted with [`Secrets::redact`]. Streamed output is
//! redacted as it arrives, *before* it is truncated, by a
//! [`StreamRedactor`]: it holds back the tail of the stream that could still
//! be the start of a secret, so a secret split across chunks is caught and
//! one cut by the truncation boundary leaks no prefix. A file read as base64
//! is redacted on its raw bytes, before encoding.

use std::ops::Range;

/// What a secret is replaced with.
pub const REDACTED: &str = "<redacted>";

/// Shorter "secrets" are not redacted: they would mangle ordinary text,
/// and real keys and tokens are long.
const MIN_SECRET_BYTES: usize = 6;

/// The secrets of a session, longest first (so a secret that contains
/// another is replaced whole).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Secrets(Vec<String>);

impl Secrets {
    /// The non-trivial ones of `secrets`.
    pub fn new<S: Into<String>>(secrets: impl IntoIterator<Item = S>) -> Self {
        let mut list: Vec<String> = secrets
            .into_iter()
            .map(Into::into)
            .filter(|s| s.len() >= MIN_SECRET_BYTES)
            .collect();
        list.sort_by_key(|s| std::cmp::Reverse(s.len()));
        list.dedup();
        Self(list)
    }

    /// Whether there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The secrets, longest first.
    pub fn as_slice(&self) -> &[String] {
        &self.0
    }

    /// `text` with every occurrence of every secret replaced.
    pub fn redact(&self, text: &str) -> String {
        let mut redactor = StreamRedactor::new(self.clone());
        let mut out = redactor.push(text);
        out.push_str(&redactor.finish());
        out
    }

    /// The earliest occurrence of a secret in `data`: (start, length).
    fn find_first(&self, data: &[u8]) -> Option<(usize, usize)> {
        self.0
            .iter()
            .filter_map(|s| memchr::memmem::find(data, s.as_bytes()).map(|at| (at, s.len())))
            // Earliest start; at equal starts the longest (listed first).
            .min_by_key(|&(at, _)| at)
    }

    /// The byte ranges of `data` inside an occurrence of a secret, merged
    /// and in order. Overlapping occurrences count too (unlike
    /// [`Secrets::redact`], which replaces them left to right), so whatever
    /// part of `data` is shown, no byte of any occurrence is.
    pub fn covered(&self, data: &[u8]) -> Vec<Range<usize>> {
        let mut hits = Vec::new();
        for secret in &self.0 {
            let finder = memchr::memmem::Finder::new(secret.as_bytes());
            let mut from = 0;
            while let Some(at) = finder.find(&data[from..]) {
                hits.push(from + at..from + at + secret.len());
                from += at + 1;
            }
        }
        hits.sort_by_key(|r| r.start);
        let mut merged: Vec<Range<usize>> = Vec::with_capacity(hits.len());
        for hit in hits {
            match merged.last_mut() {
                Some(last) if hit.start <= last.end => last.end = last.end.max(hit.end),
                _ => merged.push(hit),
            }
        }
        merged
    }

    /// Where in `data` the earliest secret begins that runs past its end
    /// (`data[at..]` is a proper prefix of it), if one does.
    pub fn pending_start(&self, data: &[u8]) -> Option<usize> {
        let from = data.len().saturating_sub(self.longest().saturating_sub(1));
        (from..data.len()).find(|&at| {
            let tail = &data[at..];
            self.0
                .iter()
                .any(|s| s.len() > tail.len() && s.as_bytes().starts_with(tail))
        })
    }

    /// The length in bytes of the longest secret (0 when there is none).
    pub fn longest(&self) -> usize {
        self.0.first().map_or(0, String::len)
    }
}

/// Redacts a stream piece by piece: text, or the raw bytes of a file.
///
/// It works on bytes. On UTF-8 text every cut it makes falls on a
/// character boundary: a secret is UTF-8, so a match or a possible start of
/// one begins with a leading byte.
#[derive(Debug, Clone, Default)]
pub struct StreamRedactor {
    secrets: Secrets,
    /// The unsent tail: free of whole secrets, starting where a secret may
    /// still be completed.
    held: Vec<u8>,
}

impl StreamRedactor {
    /// A redactor of `secrets`.
    pub fn new(secrets: Secrets) -> Self {
        Self {
            secrets,
            held: Vec::new(),
        }
    }

    /// Takes the next piece of a text stream; returns the redacted text
    /// that can no longer be part of a secret.
    pub fn push(&mut self, text: &str) -> String {
        text_of(self.push_bytes(text.as_bytes()))
    }

    /// The rest of a text stream, at its end.
    pub fn finish(&mut self) -> String {
        text_of(self.finish_bytes())
    }

    /// Takes the next piece of a byte stream; returns the redacted bytes
    /// that can no longer be part of a secret.
    pub fn push_bytes(&mut self, data: &[u8]) -> Vec<u8> {
        if self.secrets.is_empty() {
            return data.to_vec();
        }
        self.held.extend_from_slice(data);
        let mut out = Vec::new();
        loop {
            // A secret that may still complete where it starts wins over
            // a match at or after its start, as on the whole text (the
            // earliest start, then the longest).
            let pending = self.secrets.pending_start(&self.held);
            match self.secrets.find_first(&self.held) {
                Some((at, len)) if pending.is_none_or(|p| p > at) => {
                    out.extend_from_slice(&self.held[..at]);
                    out.extend_from_slice(REDACTED.as_bytes());
                    self.held.drain(..at + len);
                }
                _ => {
                    // Nothing before `pending` can start a secret any more.
                    let safe = pending.unwrap_or(self.held.len());
                    out.extend(self.held.drain(..safe));
                    return out;
                }
            }
        }
    }

    /// The rest of a byte stream, at its end.
    pub fn finish_bytes(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut held = std::mem::take(&mut self.held);
        while let Some((at, len)) = self.secrets.find_first(&held) {
            out.extend_from_slice(&held[..at]);
            out.extend_from_slice(REDACTED.as_bytes());
            held.drain(..at + len);
        }
        out.extend_from_slice(&held);
        out
    }
}

/// Bytes the redactor passed on from UTF-8 text: UTF-8 (see
/// [`StreamRedactor`]); never a panic if that were ever wrong.
fn text_of(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "e2b_0123456789abcdef";

    #[test]
    fn whole_strings_lose_every_secret() {
        let s = Secrets::new(["tok-abcdef", KEY, "short"]);
        assert_eq!(
            s.redact(&format!("key {KEY} and tok-abcdef, short stays")),
            "key <redacted> and <redacted>, short stays"
        );
        assert_eq!(s.redact("nothing here"), "nothing here");
        assert!(Secrets::new(["", "abc"]).is_empty());
    }

    #[test]
    fn a_secret_split_across_pieces_is_caught_for_every_split() {
        let s = Secrets::new([KEY]);
        let text = format!("héllo {KEY} wörld {KEY}");
        for split in 0..=text.len() {
            if !text.is_char_boundary(split) {
                continue;
            }
            let mut r = StreamRedactor::new(s.clone());
            let mut out = r.push(&text[..split]);
            out.push_str(&r.push(&text[split..]));
            out.push_str(&r.finish());
            assert_eq!(out, "héllo <redacted> wörld <redacted>", "split at {split}");
        }
    }

    #[test]
    fn byte_by_byte_pieces_never_pass_a_prefix_on() {
        let s = Secrets::new([KEY]);
        let mut r = StreamRedactor::new(s);
        let mut out = String::new();
        for c in KEY[..KEY.len() - 1].chars() {
            out.push_str(&r.push(&c.to_string()));
        }
        // All but the last character arrived: none of it was passed on.
        assert_eq!(out, "");
        out.push_str(&r.push("f!"));
        out.push_str(&r.finish());
        assert_eq!(out, "<redacted>!");
    }

    #[test]
    fn a_longer_secret_still_arriving_wins_over_a_shorter_one_inside_it() {
        // Found by fuzz/server_answers: the whole text is one secret, and a
        // shorter one lies inside it; split anywhere, the stream must give
        // what the whole text gives.
        let text = String::from_utf8_lossy(&[12u8, 254, 254, 255, 150]).into_owned();
        let a: String = text.chars().take(8).collect();
        let b: String = text.chars().skip(3).take(12).collect();
        let s = Secrets::new([a, b]);
        let whole = s.redact(&text);
        assert_eq!(whole, "<redacted>");
        for cut in (0..=text.len()).filter(|&i| text.is_char_boundary(i)) {
            let mut r = StreamRedactor::new(s.clone());
            let mut out = r.push(&text[..cut]);
            out.push_str(&r.push(&text[cut..]));
            out.push_str(&r.finish());
            assert_eq!(out, whole, "cut {cut}");
        }
    }

    #[test]
    fn covered_counts_every_occurrence_overlapping_ones_too() {
        let s = Secrets::new(["abcabc", "zzzzzz"]);
        // Left to right, redact would leave the last "abc" of the run.
        assert_eq!(s.redact("abcabcabc"), "<redacted>abc");
        assert_eq!(s.covered(b"abcabcabc"), vec![Range { start: 0, end: 9 }]);
        assert_eq!(s.covered(b"-abcabc-zzzzzz-ab"), [1..7, 8..14]);
        assert!(s.covered(b"no secrets").is_empty());
        assert_eq!(s.longest(), 6);
    }

    #[test]
    fn a_secret_inside_another_is_replaced_whole() {
        let s = Secrets::new(["abcdef", "xxabcdefyy"]);
        assert_eq!(
            s.redact("1 xxabcdefyy 2 abcdef"),
            "1 <redacted> 2 <redacted>"
        );
    }
}
