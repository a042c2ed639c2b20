//! The code interpreter's `/execute` request and its NDJSON answer lines.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The languages the local server's code interpreter has kernels for
/// (TypeScript, R and Java on Jupyter kernels, in the `code-interpreter-v1`
/// template that `scripts/bootstrap` installs).
pub const LOCAL_LANGUAGES: [&str; 6] = ["python", "javascript", "typescript", "r", "java", "bash"];

/// Path of the execute endpoint.
pub const EXECUTE_PATH: &str = "/execute";

/// `POST /execute` body. Missing and `null` fields mean the same.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecuteRequest {
    /// The code.
    pub code: String,
    /// A context to run in (exclusive with `language`).
    #[serde(default)]
    pub context_id: Option<String>,
    /// The language of the default context to run in.
    #[serde(default)]
    pub language: Option<String>,
    /// Environment variables for this execution only.
    #[serde(default)]
    pub env_vars: Option<BTreeMap<String, String>>,
}

/// One NDJSON line of an `/execute` answer, tagged by `type`.
// Lines are parsed and consumed one at a time; boxing the large `Result`
// would only add an allocation per line.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OutputLine {
    /// The kernel's execution counter.
    NumberOfExecutions {
        /// The counter.
        execution_count: u64,
    },
    /// A chunk of stdout.
    Stdout {
        /// The text (carries its own newlines).
        text: String,
        /// ISO-8601 time of the chunk.
        #[serde(default)]
        timestamp: Option<String>,
    },
    /// A chunk of stderr.
    Stderr {
        /// The text.
        text: String,
        /// ISO-8601 time of the chunk.
        #[serde(default)]
        timestamp: Option<String>,
    },
    /// A display or the value of the last expression.
    Result(ExecutionResult),
    /// The code raised.
    Error {
        /// Exception class name.
        name: String,
        /// Exception message.
        value: String,
        /// The formatted traceback.
        traceback: String,
    },
    /// Sent after 5 s of silence.
    Keepalive,
    /// Always the last line.
    EndOfExecution,
    /// Internal to the real server; clients treat it as an error.
    UnexpectedEndOfExecution,
}

/// A `result` line: a MIME bundle, nulls omitted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecutionResult {
    /// `text/plain`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// `text/html`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub html: Option<String>,
    /// `text/markdown`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub markdown: Option<String>,
    /// `image/svg+xml`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub svg: Option<String>,
    /// `image/png`, base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub png: Option<String>,
    /// `image/jpeg`, base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jpeg: Option<String>,
    /// `application/pdf`, base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pdf: Option<String>,
    /// `text/latex`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latex: Option<String>,
    /// `application/json`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json: Option<serde_json::Value>,
    /// `application/javascript`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub javascript: Option<String>,
    /// `e2b/data`: a pandas DataFrame as `{column: [values]}` (E2B's
    /// formatter in the code-interpreter template).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
    /// `e2b/chart`: a matplotlib figure as E2B's `e2b-charts` describes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart: Option<serde_json::Value>,
    /// Remaining MIME types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<serde_json::Value>,
    /// Whether this is the last expression's value (`execute_result`).
    #[serde(default)]
    pub is_main_result: bool,
}

/// `POST /contexts` body.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CreateContextRequest {
    /// Language of the new context (default python).
    #[serde(default)]
    pub language: Option<String>,
    /// Working directory (default `/home/user`).
    #[serde(default)]
    pub cwd: Option<String>,
}

/// A context, as `/contexts` returns it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Context {
    /// Its id.
    pub id: String,
    /// Its language.
    pub language: String,
    /// Its working directory.
    pub cwd: String,
}

/// Why a line of an NDJSON stream could not be taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineError {
    /// A line grew past the limit before its newline.
    TooLong {
        /// The limit in bytes.
        max: usize,
    },
}

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::TooLong { max } => write!(f, "NDJSON line longer than {max} bytes"),
        }
    }
}

impl std::error::Error for LineError {}

/// Incremental newline splitter: feed chunks, take complete lines (without
/// the `\n`). A line longer than the limit is an error, so a hostile server
/// cannot make the reader buffer without bound.
#[derive(Debug)]
pub struct LineSplitter {
    buf: Vec<u8>,
    scanned: usize,
    max_line: usize,
}

impl LineSplitter {
    /// A splitter refusing lines longer than `max_line` bytes.
    pub fn new(max_line: usize) -> Self {
        Self {
            buf: Vec::new(),
            scanned: 0,
            max_line,
        }
    }

    /// Appends received bytes.
    pub fn push(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
    }

    /// The next complete line, `Ok(None)` if more bytes are needed.
    pub fn next_line(&mut self) -> Result<Option<Vec<u8>>, LineError> {
        match self.buf[self.scanned..].iter().position(|&b| b == b'\n') {
            Some(i) => {
                let end = self.scanned + i;
                let mut line: Vec<u8> = self.buf.drain(..=end).collect();
                line.pop();
                self.scanned = 0;
                Ok(Some(line))
            }
            None => {
                self.scanned = self.buf.len();
                if self.buf.len() > self.max_line {
                    Err(LineError::TooLong { max: self.max_line })
                } else {
                    Ok(None)
                }
            }
        }
    }

    /// Whatever is left after the last newline (a final unterminated line).
    pub fn take_rest(&mut self) -> Vec<u8> {
        self.scanned = 0;
        std::mem::take(&mut self.buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_as_the_real_server_writes_them() {
        let lines = [
            r#"{"type": "number_of_executions", "execution_count": 1}"#,
            r#"{"type": "stdout", "text": "stdout works\n", "timestamp": "2025-01-01T00:00:00.123456+00:00"}"#,
            r#"{"type": "result", "text": "42", "extra": {}, "is_main_result": true}"#,
            r#"{"type": "error", "name": "ZeroDivisionError", "value": "division by zero", "traceback": "tb"}"#,
            r#"{"type": "keepalive"}"#,
            r#"{"type": "end_of_execution"}"#,
        ];
        let parsed: Vec<OutputLine> = lines
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(
            parsed[0],
            OutputLine::NumberOfExecutions { execution_count: 1 }
        );
        match &parsed[2] {
            OutputLine::Result(r) => assert!(r.is_main_result && r.text.as_deref() == Some("42")),
            other => panic!("{other:?}"),
        }
        assert_eq!(parsed[5], OutputLine::EndOfExecution);
    }

    #[test]
    fn splitter_handles_any_chunking_and_bounds_lines() {
        let wire = b"{\"a\":1}\n{\"b\":2}\npartial";
        for split in 0..wire.len() {
            let mut s = LineSplitter::new(64);
            let mut got = Vec::new();
            for chunk in [&wire[..split], &wire[split..]] {
                s.push(chunk);
                while let Some(line) = s.next_line().unwrap() {
                    got.push(line);
                }
            }
            assert_eq!(got, vec![b"{\"a\":1}".to_vec(), b"{\"b\":2}".to_vec()]);
            assert_eq!(s.take_rest(), b"partial");
        }
        let mut s = LineSplitter::new(4);
        s.push(b"0123456789");
        assert_eq!(s.next_line(), Err(LineError::TooLong { max: 4 }));
    }

    #[test]
    fn execute_request_accepts_nulls_and_missing_keys() {
        let a: ExecuteRequest = serde_json::from_str(
            r#"{"code":"1","context_id":null,"language":"python","env_vars":null}"#,
        )
        .unwrap();
        let b: ExecuteRequest =
            serde_json::from_str(r#"{"code":"1","language":"python"}"#).unwrap();
        assert_eq!(a, b);
    }
}
