//! Splits a kernel's stdout/stderr byte stream into driver messages and raw
//! output.
//!
//! Drivers write each protocol message on its own line starting with
//! [`MAGIC`]; everything else (output of child processes, `process.stdout`
//! writes) is raw output and is passed on as soon as it arrives, so nothing
//! is buffered until a newline.

use serde::Deserialize;
use serde_json::{Map, Value};

/// Starts every protocol line (record separator, "E2B", unit separator).
pub(crate) const MAGIC: &[u8] = b"\x1eE2B\x1f";
/// Longest protocol line accepted (images travel base64 in one line).
const MAX_MESSAGE: usize = 64 * 1024 * 1024;

/// What a kernel said.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum KernelEvent {
    /// The driver is up and reading requests.
    Ready {
        /// Whether it is the Jupyter bridge (`jupyter_bridge.py`): it takes
        /// JSON requests whatever the language and reports each
        /// execution's number itself ([`KernelEvent::Count`]).
        #[serde(default)]
        jupyter: bool,
    },
    /// The number the kernel gave the execution (Jupyter's
    /// `execute_input`).
    Count {
        /// Jupyter's `execution_count`.
        execution_count: u64,
    },
    /// Output written to stdout.
    Stdout {
        /// The chunk.
        text: String,
    },
    /// Output written to stderr.
    Stderr {
        /// The chunk.
        text: String,
    },
    /// A display (`main == false`) or the last expression's value.
    Result {
        /// The MIME bundle.
        data: Map<String, Value>,
        /// Whether it is the last expression's value.
        #[serde(default)]
        main: bool,
    },
    /// The execution raised.
    Error {
        /// Exception class.
        name: String,
        /// Message.
        value: String,
        /// Formatted traceback.
        traceback: String,
    },
    /// The execution finished (stdout side); bash adds its exit status.
    Done {
        /// Exit status of the executed commands (bash only).
        #[serde(default)]
        exit_code: Option<i32>,
    },
    /// The execution finished (stderr side): all its stderr has been read.
    Mark,
    /// The kernel's pipes closed: it died.
    #[serde(skip)]
    Exited,
}

/// Which pipe a parser reads; raw bytes become that kind of output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pipe {
    /// The kernel's stdout.
    Stdout,
    /// The kernel's stderr.
    Stderr,
}

/// Incremental parser for one pipe.
#[derive(Debug)]
pub(crate) struct PipeParser {
    pipe: Pipe,
    /// Bytes of a protocol line being collected (`Some` while inside one).
    message: Option<Vec<u8>>,
    /// The tail of an incomplete UTF-8 sequence of raw output.
    utf8_carry: Vec<u8>,
    /// Skipping the rest of an oversized protocol line.
    skipping: bool,
}

impl PipeParser {
    /// A parser for `pipe`.
    pub(crate) fn new(pipe: Pipe) -> Self {
        Self {
            pipe,
            message: None,
            utf8_carry: Vec::new(),
            skipping: false,
        }
    }

    /// Takes the next bytes read from the pipe.
    pub(crate) fn feed(&mut self, mut chunk: &[u8]) -> Vec<KernelEvent> {
        let mut events = Vec::new();
        while !chunk.is_empty() {
            if self.skipping || self.message.is_some() {
                let end = chunk.iter().position(|&b| b == b'\n');
                let (body, rest) = match end {
                    Some(i) => (&chunk[..i], &chunk[i + 1..]),
                    None => (chunk, &[][..]),
                };
                if !self.skipping {
                    let message = self.message.as_mut().expect("inside a message");
                    message.extend_from_slice(body);
                    if message.len() > MAX_MESSAGE {
                        self.message = None;
                        self.skipping = true;
                        events.push(self.raw_event(format!(
                            "[kernel output line longer than {MAX_MESSAGE} bytes dropped]\n"
                        )));
                    }
                }
                if end.is_some() {
                    if self.skipping {
                        self.skipping = false;
                    } else if let Some(message) = self.message.take() {
                        events.extend(self.finish_message(message));
                    }
                }
                chunk = rest;
            } else {
                let start = chunk.iter().position(|&b| b == MAGIC[0]);
                let (raw, rest) = match start {
                    Some(i) => (&chunk[..i], &chunk[i..]),
                    None => (chunk, &[][..]),
                };
                if let Some(text) = self.decode_raw(raw) {
                    events.push(self.raw_event(text));
                }
                if start.is_some() {
                    self.message = Some(Vec::new());
                }
                chunk = rest;
            }
        }
        events
    }

    /// A complete line that started with the magic's first byte.
    fn finish_message(&mut self, line: Vec<u8>) -> Option<KernelEvent> {
        if let Some(json) = line.strip_prefix(MAGIC) {
            if let Ok(event) = serde_json::from_slice::<KernelEvent>(json) {
                return Some(event);
            }
        }
        // A stray separator byte in ordinary output: pass the line on as is.
        let mut raw = line;
        raw.push(b'\n');
        self.decode_raw(&raw).map(|text| self.raw_event(text))
    }

    /// Raw bytes as text, keeping an incomplete UTF-8 tail for the next chunk.
    fn decode_raw(&mut self, raw: &[u8]) -> Option<String> {
        if raw.is_empty() {
            return None;
        }
        let mut bytes = std::mem::take(&mut self.utf8_carry);
        bytes.extend_from_slice(raw);
        let keep_from = match std::str::from_utf8(&bytes) {
            Ok(_) => bytes.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => bytes.len(),
        };
        self.utf8_carry = bytes.split_off(keep_from);
        if bytes.is_empty() {
            return None;
        }
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }

    fn raw_event(&self, text: String) -> KernelEvent {
        match self.pipe {
            Pipe::Stdout => KernelEvent::Stdout { text },
            Pipe::Stderr => KernelEvent::Stderr { text },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed_all(parser: &mut PipeParser, wire: &[u8], split: usize) -> Vec<KernelEvent> {
        let mut events = parser.feed(&wire[..split]);
        events.extend(parser.feed(&wire[split..]));
        events
    }

    #[test]
    fn messages_and_raw_output_are_separated_at_any_chunking() {
        let wire = "raw é\x1eE2B\x1f{\"type\": \"stdout\", \"text\": \"hi\"}\nmore\x1eE2B\x1f{\"type\":\"done\"}\n".as_bytes();
        for split in 0..=wire.len() {
            let mut parser = PipeParser::new(Pipe::Stdout);
            let events = feed_all(&mut parser, wire, split);
            let text: String = events
                .iter()
                .filter_map(|e| match e {
                    KernelEvent::Stdout { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            assert_eq!(text, "raw éhimore", "split at {split}");
            assert_eq!(events.last(), Some(&KernelEvent::Done { exit_code: None }));
        }
    }

    #[test]
    fn stray_separator_is_raw_output_and_stderr_is_stderr() {
        let mut parser = PipeParser::new(Pipe::Stderr);
        let events = parser.feed(b"a\x1ebc\n\x1eE2B\x1f{\"type\":\"mark\"}\n");
        assert_eq!(
            events,
            vec![
                KernelEvent::Stderr { text: "a".into() },
                KernelEvent::Stderr {
                    text: "\u{1e}bc\n".into()
                },
                KernelEvent::Mark,
            ]
        );
    }
}
