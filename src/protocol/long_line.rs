//! Over-long `stdout`/`stderr` NDJSON lines, decoded without holding them.
//!
//! The code interpreter sends each Jupyter stream message as one line, so
//! `print("a" * 2**30)` arrives as a single 1 GiB line. Rather than buffer
//! it, the collector recognises the line's head
//! (`{"type": "stdout", "text": "`) and feeds the JSON string that follows
//! through [`JsonStringDecoder`] straight into a truncating sink.

/// Which output an over-long line carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextStream {
    /// `stdout`.
    Stdout,
    /// `stderr`.
    Stderr,
}

/// If `head` starts a `stdout`/`stderr` line whose `type` comes first and
/// `text` second (as the real and local servers write them), the stream and
/// the offset just past the text's opening quote.
pub fn text_line_head(head: &[u8]) -> Option<(TextStream, usize)> {
    let mut p = Scanner { buf: head, pos: 0 };
    p.token(b"{")?;
    p.key(b"\"type\"")?;
    let stream = if p.literal(b"\"stdout\"").is_some() {
        TextStream::Stdout
    } else {
        p.literal(b"\"stderr\"")?;
        TextStream::Stderr
    };
    p.token(b",")?;
    p.key(b"\"text\"")?;
    p.byte(b'"')?;
    Some((stream, p.pos))
}

struct Scanner<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl Scanner<'_> {
    fn ws(&mut self) {
        while self
            .buf
            .get(self.pos)
            .is_some_and(|b| b.is_ascii_whitespace())
        {
            self.pos += 1;
        }
    }

    fn byte(&mut self, b: u8) -> Option<()> {
        (self.buf.get(self.pos) == Some(&b)).then(|| self.pos += 1)
    }

    fn literal(&mut self, lit: &[u8]) -> Option<()> {
        self.buf[self.pos..]
            .starts_with(lit)
            .then(|| self.pos += lit.len())
    }

    /// `lit` with whitespace either side.
    fn token(&mut self, lit: &[u8]) -> Option<()> {
        self.ws();
        self.literal(lit)?;
        self.ws();
        Some(())
    }

    /// An object key and its colon: `"key" :`, whitespace either side.
    fn key(&mut self, key: &[u8]) -> Option<()> {
        self.literal(key)?;
        self.token(b":")
    }
}

/// What one call of [`JsonStringDecoder::feed`] produced.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Decoded {
    /// Decoded pieces in order: raw UTF-8 bytes or text from escapes.
    pub pieces: Vec<Piece>,
    /// Offset just past the closing quote, if the string ended.
    pub end: Option<usize>,
}

/// A piece of decoded string content.
#[derive(Debug, PartialEq, Eq)]
pub enum Piece {
    /// Bytes copied as they were (UTF-8, possibly split across chunks).
    Raw(Vec<u8>),
    /// Text from an escape sequence.
    Text(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Normal,
    Escape,
    Unicode { value: u32, digits: u8 },
}

/// Decodes the inside of a JSON string fed in arbitrary chunks. Lone
/// surrogates become U+FFFD, as e2b-adk's normalisation makes them.
#[derive(Debug)]
pub struct JsonStringDecoder {
    state: State,
    high_surrogate: Option<u32>,
}

impl Default for JsonStringDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl JsonStringDecoder {
    /// A decoder positioned just after the opening quote.
    pub fn new() -> Self {
        Self {
            state: State::Normal,
            high_surrogate: None,
        }
    }

    /// Decodes `chunk`; a malformed escape is an error.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Decoded, String> {
        let mut out = Decoded::default();
        let mut raw_start = 0;
        let mut i = 0;
        while i < chunk.len() {
            let b = chunk[i];
            match self.state {
                State::Normal => match b {
                    b'"' | b'\\' => {
                        self.flush_raw(&chunk[raw_start..i], &mut out);
                        if b == b'"' {
                            self.flush_surrogate(&mut out);
                            out.end = Some(i + 1);
                            return Ok(out);
                        }
                        self.state = State::Escape;
                    }
                    b'\n' => return Err("newline inside a JSON string".into()),
                    _ => {}
                },
                State::Escape => {
                    let text = match b {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            self.state = State::Unicode {
                                value: 0,
                                digits: 0,
                            };
                            i += 1;
                            raw_start = i;
                            continue;
                        }
                        other => return Err(format!("invalid escape \\{}", other as char)),
                    };
                    self.flush_surrogate(&mut out);
                    out.pieces.push(Piece::Text(text.to_string()));
                    self.state = State::Normal;
                    raw_start = i + 1;
                }
                State::Unicode { value, digits } => {
                    let digit = (b as char)
                        .to_digit(16)
                        .ok_or_else(|| "invalid \\u escape".to_string())?;
                    let value = value * 16 + digit;
                    if digits + 1 < 4 {
                        self.state = State::Unicode {
                            value,
                            digits: digits + 1,
                        };
                    } else {
                        self.take_code_unit(value, &mut out);
                        self.state = State::Normal;
                    }
                    raw_start = i + 1;
                }
            }
            i += 1;
        }
        if self.state == State::Normal {
            self.flush_raw(&chunk[raw_start..], &mut out);
        }
        Ok(out)
    }

    fn flush_raw(&mut self, bytes: &[u8], out: &mut Decoded) {
        if !bytes.is_empty() {
            self.flush_surrogate(out);
            out.pieces.push(Piece::Raw(bytes.to_vec()));
        }
    }

    fn flush_surrogate(&mut self, out: &mut Decoded) {
        if self.high_surrogate.take().is_some() {
            out.pieces.push(Piece::Text('\u{FFFD}'.to_string()));
        }
    }

    fn take_code_unit(&mut self, unit: u32, out: &mut Decoded) {
        match unit {
            0xD800..=0xDBFF => {
                self.flush_surrogate(out);
                self.high_surrogate = Some(unit);
            }
            0xDC00..=0xDFFF => match self.high_surrogate.take() {
                Some(high) => {
                    let c = 0x10000 + ((high - 0xD800) << 10) + (unit - 0xDC00);
                    out.pieces.push(Piece::Text(
                        char::from_u32(c).unwrap_or('\u{FFFD}').to_string(),
                    ));
                }
                None => out.pieces.push(Piece::Text('\u{FFFD}'.to_string())),
            },
            _ => {
                self.flush_surrogate(out);
                out.pieces.push(Piece::Text(
                    char::from_u32(unit).unwrap_or('\u{FFFD}').to_string(),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(json_inside: &[u8], chunk: usize) -> (String, Option<usize>) {
        let mut d = JsonStringDecoder::new();
        let mut sink = crate::output::truncate::TruncatingSink::new(usize::MAX / 2);
        let mut offset = 0;
        for part in json_inside.chunks(chunk) {
            let out = d.feed(part).unwrap();
            for piece in out.pieces {
                match piece {
                    Piece::Raw(b) => sink.push_bytes(&b),
                    Piece::Text(t) => sink.push_str(&t),
                }
            }
            if let Some(end) = out.end {
                return (sink.finish(), Some(offset + end));
            }
            offset += part.len();
        }
        (sink.finish(), None)
    }

    #[test]
    fn heads_are_recognised() {
        let line = br#"{"type": "stdout", "text": "abc", "timestamp": "t"}"#;
        let (stream, at) = text_line_head(line).unwrap();
        assert_eq!(stream, TextStream::Stdout);
        assert_eq!(&line[at..at + 3], b"abc");
        assert_eq!(
            text_line_head(br#"{"type":"stderr","text":"x"#).unwrap().0,
            TextStream::Stderr
        );
        assert!(text_line_head(br#"{"text": "x", "type": "stdout"}"#).is_none());
        assert!(text_line_head(br#"{"type": "result", "png": "x"#).is_none());
    }

    #[test]
    fn strings_decode_like_serde_for_any_chunking() {
        let value = "héllo \"q\" \\ / \n\t 😀 end";
        let json = serde_json::to_string(value).unwrap();
        let inner = &json.as_bytes()[1..];
        for chunk in [1, 2, 3, 7, inner.len()] {
            let (text, end) = decode_all(inner, chunk);
            assert_eq!(text, value, "chunk {chunk}");
            assert_eq!(end, Some(inner.len()));
        }
        let escaped = br#"\u00e9\ud83d\ude00\ud800x\udc00" tail"#;
        for chunk in [1, 5, escaped.len()] {
            let (text, end) = decode_all(escaped, chunk);
            assert_eq!(text, "é😀\u{FFFD}x\u{FFFD}");
            assert_eq!(end, Some(escaped.len() - 5));
        }
    }

    #[test]
    fn malformed_strings_fail() {
        assert!(JsonStringDecoder::new().feed(br#"\q"#).is_err());
        assert!(JsonStringDecoder::new().feed(br#"\u12x4"#).is_err());
        assert!(JsonStringDecoder::new().feed(b"a\nb").is_err());
    }
}
