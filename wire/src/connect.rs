//! The Connect protocol as envd speaks it with the JSON codec.
//!
//! Unary calls carry a bare JSON body (`application/json`); server-streaming
//! calls (`application/connect+json`) carry *envelopes*: a flags byte, a
//! big-endian `u32` length, then the payload. The stream ends with exactly
//! one envelope flagged [`FLAG_END_STREAM`] whose payload is [`EndStream`].

use serde::{Deserialize, Serialize};

/// Content type of unary Connect calls with the JSON codec.
pub const CONTENT_TYPE_UNARY: &str = "application/json";
/// Content type of streaming Connect calls with the JSON codec. Exactly this
/// string: the Python client rejects any parameter after it.
pub const CONTENT_TYPE_STREAM: &str = "application/connect+json";
/// Envelope flag: the payload is compressed (never used here).
pub const FLAG_COMPRESSED: u8 = 0x01;
/// Envelope flag: this is the end-of-stream envelope.
pub const FLAG_END_STREAM: u8 = 0x02;
/// Size of an envelope's prefix.
pub const PREFIX_LEN: usize = 5;

/// Frames `payload` as one envelope with `flags`.
pub fn encode_envelope(flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(PREFIX_LEN + payload.len());
    out.push(flags);
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// One decoded envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// The flags byte.
    pub flags: u8,
    /// The payload (JSON with this codec).
    pub payload: Vec<u8>,
}

impl Envelope {
    /// Whether this is the end-of-stream envelope.
    pub fn is_end_stream(&self) -> bool {
        self.flags & FLAG_END_STREAM != 0
    }
}

/// Why a byte stream is not a valid envelope stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvelopeError {
    /// An envelope announced more bytes than the decoder allows.
    TooLarge {
        /// The announced payload length.
        len: usize,
        /// The decoder's limit.
        max: usize,
    },
    /// The stream ended inside an envelope.
    Truncated {
        /// Bytes of the unfinished envelope that did arrive.
        buffered: usize,
    },
}

impl std::fmt::Display for EnvelopeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::TooLarge { len, max } => {
                write!(
                    f,
                    "envelope of {len} bytes exceeds the limit of {max} bytes"
                )
            }
            Self::Truncated { buffered } => {
                write!(
                    f,
                    "stream ended inside an envelope ({buffered} bytes buffered)"
                )
            }
        }
    }
}

impl std::error::Error for EnvelopeError {}

/// Incremental envelope parser: feed it chunks as they arrive (an envelope
/// may be split across chunks or several may share one), take envelopes out.
#[derive(Debug)]
pub struct EnvelopeDecoder {
    buf: Vec<u8>,
    max_payload: usize,
}

impl EnvelopeDecoder {
    /// A decoder refusing payloads larger than `max_payload` bytes, so a
    /// hostile length prefix cannot make it allocate without bound.
    pub fn new(max_payload: usize) -> Self {
        Self {
            buf: Vec::new(),
            max_payload,
        }
    }

    /// Appends received bytes.
    pub fn push(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
    }

    /// The next complete envelope, `Ok(None)` if more bytes are needed.
    pub fn next_envelope(&mut self) -> Result<Option<Envelope>, EnvelopeError> {
        if self.buf.len() < PREFIX_LEN {
            return Ok(None);
        }
        let len = u32::from_be_bytes([self.buf[1], self.buf[2], self.buf[3], self.buf[4]]) as usize;
        if len > self.max_payload {
            return Err(EnvelopeError::TooLarge {
                len,
                max: self.max_payload,
            });
        }
        if self.buf.len() < PREFIX_LEN + len {
            return Ok(None);
        }
        let flags = self.buf[0];
        let payload = self.buf[PREFIX_LEN..PREFIX_LEN + len].to_vec();
        self.buf.drain(..PREFIX_LEN + len);
        Ok(Some(Envelope { flags, payload }))
    }

    /// Call at the end of the body: an error if an envelope was left unfinished.
    pub fn finish(&self) -> Result<(), EnvelopeError> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(EnvelopeError::Truncated {
                buffered: self.buf.len(),
            })
        }
    }
}

/// Connect error codes, written as their snake_case names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum Code {
    Canceled,
    Unknown,
    InvalidArgument,
    DeadlineExceeded,
    NotFound,
    AlreadyExists,
    PermissionDenied,
    ResourceExhausted,
    FailedPrecondition,
    Aborted,
    OutOfRange,
    Unimplemented,
    Internal,
    Unavailable,
    DataLoss,
    Unauthenticated,
}

impl Code {
    /// The HTTP status a unary error with this code is sent with.
    pub fn http_status(self) -> u16 {
        match self {
            Code::Canceled => 499,
            Code::Unknown | Code::Internal | Code::DataLoss => 500,
            Code::InvalidArgument | Code::FailedPrecondition | Code::OutOfRange => 400,
            Code::DeadlineExceeded => 504,
            Code::NotFound => 404,
            Code::AlreadyExists | Code::Aborted => 409,
            Code::PermissionDenied => 403,
            Code::ResourceExhausted => 429,
            Code::Unimplemented => 501,
            Code::Unavailable => 503,
            Code::Unauthenticated => 401,
        }
    }

    /// The code a client infers from an HTTP status when the body is not a
    /// Connect error (a proxy page, envd's integer-coded JSON errors).
    pub fn from_http_status(status: u16) -> Self {
        match status {
            400 => Code::InvalidArgument,
            401 => Code::Unauthenticated,
            403 => Code::PermissionDenied,
            404 => Code::NotFound,
            409 => Code::AlreadyExists,
            413 | 429 => Code::ResourceExhausted,
            499 => Code::Canceled,
            500 => Code::Internal,
            501 | 505 => Code::Unimplemented,
            502 | 503 => Code::Unavailable,
            504 => Code::DeadlineExceeded,
            _ => Code::Unknown,
        }
    }

    /// The snake_case name, as on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Canceled => "canceled",
            Code::Unknown => "unknown",
            Code::InvalidArgument => "invalid_argument",
            Code::DeadlineExceeded => "deadline_exceeded",
            Code::NotFound => "not_found",
            Code::AlreadyExists => "already_exists",
            Code::PermissionDenied => "permission_denied",
            Code::ResourceExhausted => "resource_exhausted",
            Code::FailedPrecondition => "failed_precondition",
            Code::Aborted => "aborted",
            Code::OutOfRange => "out_of_range",
            Code::Unimplemented => "unimplemented",
            Code::Internal => "internal",
            Code::Unavailable => "unavailable",
            Code::DataLoss => "data_loss",
            Code::Unauthenticated => "unauthenticated",
        }
    }
}

/// A Connect error: the body of a failed unary call, or the `error` of an
/// end-of-stream envelope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConnectError {
    /// The error code.
    pub code: Code,
    /// A human-readable message.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

impl ConnectError {
    /// An error with `code` and `message`.
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.message.is_empty() {
            f.write_str(self.code.as_str())
        } else {
            f.write_str(&self.message)
        }
    }
}

/// The payload of the end-of-stream envelope: `{}` or `{"error": …}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EndStream {
    /// Set when the stream failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ConnectError>,
    /// Trailing metadata (unused by envd's clients).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<serde_json::Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelopes_split_and_merged_across_chunks() {
        let mut wire = encode_envelope(0, br#"{"event":{"start":{"pid":1}}}"#);
        wire.extend(encode_envelope(FLAG_END_STREAM, b"{}"));
        for split in 0..=wire.len() {
            let mut dec = EnvelopeDecoder::new(1 << 20);
            let mut got = Vec::new();
            for chunk in [&wire[..split], &wire[split..]] {
                dec.push(chunk);
                while let Some(env) = dec.next_envelope().unwrap() {
                    got.push(env);
                }
            }
            dec.finish().unwrap();
            assert_eq!(got.len(), 2, "split at {split}");
            assert!(!got[0].is_end_stream());
            assert!(got[1].is_end_stream());
            assert_eq!(got[1].payload, b"{}");
        }
    }

    #[test]
    fn hostile_length_is_refused_and_truncation_reported() {
        let mut dec = EnvelopeDecoder::new(16);
        dec.push(&[0, 0xff, 0xff, 0xff, 0xff]);
        assert!(matches!(
            dec.next_envelope(),
            Err(EnvelopeError::TooLarge { .. })
        ));
        let mut dec = EnvelopeDecoder::new(16);
        dec.push(&[0, 0, 0, 0, 4, b'{']);
        assert_eq!(dec.next_envelope(), Ok(None));
        assert_eq!(dec.finish(), Err(EnvelopeError::Truncated { buffered: 6 }));
    }

    #[test]
    fn end_stream_shapes() {
        let ok: EndStream = serde_json::from_str("{}").unwrap();
        assert!(ok.error.is_none());
        let err: EndStream = serde_json::from_str(
            r#"{"error":{"code":"deadline_exceeded","message":"context deadline exceeded"}}"#,
        )
        .unwrap();
        assert_eq!(err.error.unwrap().code, Code::DeadlineExceeded);
        assert_eq!(serde_json::to_string(&EndStream::default()).unwrap(), "{}");
    }

    #[test]
    fn status_mapping_round_trips_for_canonical_codes() {
        for code in [
            Code::NotFound,
            Code::Unauthenticated,
            Code::DeadlineExceeded,
            Code::PermissionDenied,
        ] {
            assert_eq!(Code::from_http_status(code.http_status()), code);
        }
    }
}
