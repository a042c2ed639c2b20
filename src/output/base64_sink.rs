//! A file read as base64: its bytes redacted (a secret in a binary file is
//! replaced by `<redacted>` before encoding), encoded on the stream, and
//! truncated on a 4-character boundary with the usual marker, so what is
//! kept always decodes. Memory stays O(limit) whatever the file's size.

use base64::Engine as _;

use crate::output::redact::{Secrets, StreamRedactor};
use crate::output::truncate::TruncatingSink;

const BASE64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// Collects a byte stream as truncated base64.
#[derive(Debug)]
pub struct Base64Sink {
    redactor: StreamRedactor,
    /// Fewer than 3 bytes not encoded yet.
    carry: Vec<u8>,
    sink: TruncatingSink,
}

impl Base64Sink {
    /// A sink keeping at most `limit` characters of base64 (rounded down to
    /// a multiple of 4), with `secrets` redacted from the bytes.
    pub fn new(limit: usize, secrets: &Secrets) -> Self {
        Self {
            redactor: StreamRedactor::new(secrets.clone()),
            carry: Vec::new(),
            sink: TruncatingSink::new(limit - limit % 4),
        }
    }

    /// Takes the next bytes of the file.
    pub fn push(&mut self, bytes: &[u8]) {
        let clean = self.redactor.push_bytes(bytes);
        self.encode(&clean);
    }

    /// The base64 text, truncated.
    pub fn finish(mut self) -> String {
        let rest = self.redactor.finish_bytes();
        self.encode(&rest);
        self.sink.push_str(&BASE64.encode(&self.carry));
        self.sink.finish()
    }

    /// Encodes the whole 3-byte groups of the carry and `bytes`.
    fn encode(&mut self, bytes: &[u8]) {
        self.carry.extend_from_slice(bytes);
        let whole = self.carry.len() / 3 * 3;
        if whole > 0 {
            self.sink.push_str(&BASE64.encode(&self.carry[..whole]));
            self.carry.drain(..whole);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_chunking_gives_the_whole_files_base64() {
        let data: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        let want = BASE64.encode(&data);
        for chunk in [1, 2, 3, 7, 64, 1000] {
            let mut sink = Base64Sink::new(10_000, &Secrets::default());
            for part in data.chunks(chunk) {
                sink.push(part);
            }
            assert_eq!(sink.finish(), want, "chunk {chunk}");
        }
    }

    #[test]
    fn truncation_keeps_whole_quads_and_counts_the_rest() {
        let mut sink = Base64Sink::new(10, &Secrets::default());
        sink.push(&[0u8; 30]); // 40 characters of base64
        let out = sink.finish();
        assert_eq!(out, "AAAAAAAA…[truncated 32 bytes]");
        let kept = out.split('…').next().unwrap();
        assert!(BASE64.decode(kept).is_ok());
    }

    #[test]
    fn a_secret_in_the_bytes_is_redacted_before_encoding() {
        let key = "e2b_0123456789abcdef";
        let mut data = vec![0u8, 255];
        data.extend_from_slice(key.as_bytes());
        data.push(7);
        let mut sink = Base64Sink::new(1000, &Secrets::new([key]));
        for part in data.chunks(5) {
            sink.push(part);
        }
        let decoded = BASE64.decode(sink.finish()).unwrap();
        assert_eq!(decoded, [&[0u8, 255][..], b"<redacted>", &[7]].concat());
    }
}
