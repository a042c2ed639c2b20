//! Keeping the session's secrets (the API key, the sandbox's tokens) out of
//! every text a tool returns.
//!
//! Whole strings are redacted with [`Secrets::redact`]. Streamed output is
//! redacted as it arrives, *before* it is truncated, by a
//! [`StreamRedactor`]: it holds back the tail of the stream that could still
//! be the start of a secret, so a secret split across chunks is caught and
//! one cut by the truncation boundary leaks no prefix.

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

    /// The earliest occurrence of a secret in `text`: (start, length).
    fn find_first(&self, text: &str) -> Option<(usize, usize)> {
        self.0
            .iter()
            .filter_map(|s| text.find(s.as_str()).map(|at| (at, s.len())))
            // Earliest start; at equal starts the longest (listed first).
            .min_by_key(|&(at, _)| at)
    }

    /// Where in `text` the earliest secret begins that runs past its end
    /// (`text[at..]` is a proper prefix of it), if one does.
    fn pending_start(&self, text: &str) -> Option<usize> {
        let from = text.len().saturating_sub(self.longest().saturating_sub(1));
        (from..text.len())
            .filter(|&at| text.is_char_boundary(at))
            .find(|&at| {
                let tail = &text[at..];
                self.0
                    .iter()
                    .any(|s| s.len() > tail.len() && s.starts_with(tail))
            })
    }

    fn longest(&self) -> usize {
        self.0.first().map_or(0, String::len)
    }
}

/// Redacts a text stream piece by piece.
#[derive(Debug, Clone, Default)]
pub struct StreamRedactor {
    secrets: Secrets,
    /// The unsent tail: shorter than the longest secret, free of whole
    /// secrets, possibly the start of one.
    held: String,
}

impl StreamRedactor {
    /// A redactor of `secrets`.
    pub fn new(secrets: Secrets) -> Self {
        Self {
            secrets,
            held: String::new(),
        }
    }

    /// Takes the next piece of the stream; returns the redacted text that
    /// can no longer be part of a secret.
    pub fn push(&mut self, text: &str) -> String {
        if self.secrets.is_empty() {
            return text.to_string();
        }
        self.held.push_str(text);
        let mut out = String::new();
        loop {
            // A secret that may still complete where it starts wins over
            // a match at or after its start, as on the whole text (the
            // earliest start, then the longest).
            let pending = self.secrets.pending_start(&self.held);
            match self.secrets.find_first(&self.held) {
                Some((at, len)) if pending.is_none_or(|p| p > at) => {
                    out.push_str(&self.held[..at]);
                    out.push_str(REDACTED);
                    self.held.drain(..at + len);
                }
                _ => {
                    // Nothing before `pending` can start a secret any more.
                    let safe = pending.unwrap_or(self.held.len());
                    out.push_str(&self.held[..safe]);
                    self.held.drain(..safe);
                    return out;
                }
            }
        }
    }

    /// The rest of the stream, at its end.
    pub fn finish(&mut self) -> String {
        let mut out = String::new();
        let mut held = std::mem::take(&mut self.held);
        while let Some((at, len)) = self.secrets.find_first(&held) {
            out.push_str(&held[..at]);
            out.push_str(REDACTED);
            held.drain(..at + len);
        }
        out.push_str(&held);
        out
    }
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
    fn a_secret_inside_another_is_replaced_whole() {
        let s = Secrets::new(["abcdef", "xxabcdefyy"]);
        assert_eq!(
            s.redact("1 xxabcdefyy 2 abcdef"),
            "1 <redacted> 2 <redacted>"
        );
    }
}
