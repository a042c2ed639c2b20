//! The code-interpreter client (port 49999): the `/execute` request and an
//! incremental collector of its NDJSON answer into truncating sinks
//! (docs/PROTOCOL.md §5).

use std::collections::BTreeMap;

use e2b_wire::interpreter::{
    ExecuteRequest, ExecutionResult, LineSplitter, OutputLine, EXECUTE_PATH,
};
use e2b_wire::INTERPRETER_PORT;

use crate::config::Settings;
use crate::errors::{ErrorKind, Failure};
use crate::output::progress::LatestLine;
use crate::output::redact::Secrets;
use crate::output::truncate::Outputs;
use crate::protocol::api::SandboxHandle;
use crate::protocol::envd::sandbox_request;
use crate::protocol::long_line::{text_line_head, JsonStringDecoder, Piece, TextStream};
use crate::protocol::request::{HttpRequest, Method};

/// Longest NDJSON line held in memory (a result line may carry a large
/// image); longer `stdout`/`stderr` lines are decoded on the fly.
const MAX_LINE_BYTES: usize = 32 << 20;
/// Past this many bytes without a newline, a line is treated as long.
const LONG_LINE_BYTES: usize = 256 * 1024;
/// Total bytes of rich results kept per execution.
const MAX_RICH_BYTES: usize = 16 << 20;

/// `POST /execute` as code-interpreter 2.11.5 sends it: `context_id` null,
/// `language` always set.
pub fn execute_request(
    settings: &Settings,
    sandbox: &SandboxHandle,
    code: &str,
    language: &str,
    envs: &BTreeMap<String, String>,
) -> HttpRequest {
    let body = ExecuteRequest {
        code: code.to_string(),
        context_id: None,
        language: Some(language.to_string()),
        env_vars: (!envs.is_empty()).then(|| envs.clone()),
    };
    let mut req = sandbox_request(
        settings,
        sandbox,
        INTERPRETER_PORT,
        Method::Post,
        EXECUTE_PATH,
    )
    .header("accept-encoding", "identity")
    .json(&body);
    if let Some(token) = &sandbox.traffic_token {
        req = req.header("e2b-traffic-access-token", token.clone());
    }
    req
}

/// One rich result (image, HTML, JSON, …).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RichResult {
    /// MIME type.
    pub mime_type: String,
    /// Base64 for binary types, text otherwise.
    pub data: String,
    /// Whether it is the last expression's value.
    pub is_main_result: bool,
}

/// What an execution produced, truncated.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Execution {
    /// stdout.
    pub stdout: String,
    /// stderr.
    pub stderr: String,
    /// The main result's text.
    pub text: String,
    /// `<name>: <value>\n<traceback>` or empty.
    pub error: String,
    /// Rich results (only collected when asked for).
    pub rich: Vec<RichResult>,
}

/// Collects an `/execute` answer chunk by chunk.
#[derive(Debug)]
pub struct ExecutionCollector {
    limit: usize,
    splitter: LineSplitter,
    mode: LineMode,
    out: Outputs,
    text: Option<String>,
    error: Option<String>,
    rich: Vec<RichResult>,
    rich_bytes: usize,
    collect_rich: bool,
    ended: bool,
    /// The latest output line, followed for progress events when set.
    pub latest: Option<LatestLine>,
}

impl ExecutionCollector {
    /// A collector keeping `limit` bytes per field.
    pub fn new(limit: usize, collect_rich: bool) -> Self {
        Self {
            limit,
            splitter: LineSplitter::new(LONG_LINE_BYTES),
            mode: LineMode::Lines,
            out: Outputs::new(limit),
            text: None,
            error: None,
            rich: Vec::new(),
            rich_bytes: 0,
            collect_rich,
            ended: false,
            latest: None,
        }
    }

    /// The same collector, redacting `secrets` from stdout and stderr
    /// before truncating them (the other fields are redacted whole).
    pub fn redacting(mut self, secrets: &Secrets) -> Self {
        self.out = self.out.redacting(secrets);
        self
    }

    /// Takes a chunk of the answer.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), Failure> {
        let mut data = chunk;
        while !data.is_empty() {
            data = match std::mem::replace(&mut self.mode, LineMode::Lines) {
                LineMode::Lines => {
                    self.splitter.push(data);
                    self.take_lines()?;
                    &[]
                }
                LineMode::Big(mut line) => match data.iter().position(|&b| b == b'\n') {
                    Some(i) => {
                        line.extend_from_slice(&data[..i]);
                        self.take_line(&line)?;
                        &data[i + 1..]
                    }
                    None => {
                        if line.len() + data.len() > MAX_LINE_BYTES {
                            return Err(malformed(format!(
                                "NDJSON line longer than {MAX_LINE_BYTES} bytes"
                            )));
                        }
                        line.extend_from_slice(data);
                        self.mode = LineMode::Big(line);
                        &[]
                    }
                },
                LineMode::Text(stream, mut decoder) => {
                    let decoded = decoder.feed(data).map_err(malformed)?;
                    let sink = match stream {
                        TextStream::Stdout => &mut self.out.stdout,
                        TextStream::Stderr => &mut self.out.stderr,
                    };
                    for piece in decoded.pieces {
                        let bytes = match &piece {
                            Piece::Raw(bytes) => bytes.as_slice(),
                            Piece::Text(text) => text.as_bytes(),
                        };
                        if let Some(latest) = self.latest.as_mut() {
                            latest.feed(bytes);
                        }
                        match piece {
                            Piece::Raw(bytes) => sink.push_bytes(&bytes),
                            Piece::Text(text) => sink.push_str(&text),
                        }
                    }
                    match decoded.end {
                        Some(end) => {
                            self.mode = LineMode::SkipLine;
                            &data[end..]
                        }
                        None => {
                            self.mode = LineMode::Text(stream, decoder);
                            &[]
                        }
                    }
                }
                LineMode::SkipLine => match data.iter().position(|&b| b == b'\n') {
                    Some(i) => &data[i + 1..],
                    None => {
                        self.mode = LineMode::SkipLine;
                        &[]
                    }
                },
            };
        }
        Ok(())
    }

    /// Takes the complete lines the splitter holds; a line growing past
    /// [`LONG_LINE_BYTES`] switches to streaming (text) or big-line mode.
    fn take_lines(&mut self) -> Result<(), Failure> {
        loop {
            match self.splitter.next_line() {
                Ok(Some(line)) => self.take_line(&line)?,
                Ok(None) => return Ok(()),
                Err(_) => {
                    // No newline in the buffer: it holds one unfinished line.
                    let head = self.splitter.take_rest();
                    return match text_line_head(&head) {
                        Some((stream, at)) => {
                            self.mode = LineMode::Text(stream, JsonStringDecoder::new());
                            self.feed(&head[at..])
                        }
                        None => {
                            self.mode = LineMode::Big(head);
                            Ok(())
                        }
                    };
                }
            }
        }
    }

    /// Whether `end_of_execution` arrived.
    pub fn ended(&self) -> bool {
        self.ended
    }

    fn take_line(&mut self, line: &[u8]) -> Result<(), Failure> {
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        let line = &*replace_lone_surrogates(line);
        let parsed: OutputLine = match serde_json::from_slice(line) {
            Ok(parsed) => parsed,
            Err(e) => {
                // Unknown line types are ignored, as the SDK does; anything
                // that is not a typed JSON object is a protocol error.
                let value: Option<serde_json::Value> = serde_json::from_slice(line).ok();
                let known_shape = value
                    .as_ref()
                    .and_then(|v| v.get("type"))
                    .and_then(|t| t.as_str())
                    .is_some_and(|t| !KNOWN_TYPES.contains(&t));
                if known_shape {
                    return Ok(());
                }
                return Err(Failure::new(
                    ErrorKind::Internal,
                    format!("malformed line from the code interpreter: {e}"),
                ));
            }
        };
        match parsed {
            OutputLine::Stdout { text, .. } => {
                if let Some(latest) = self.latest.as_mut() {
                    latest.feed(text.as_bytes());
                }
                self.out.stdout.push_str(&text)
            }
            OutputLine::Stderr { text, .. } => {
                if let Some(latest) = self.latest.as_mut() {
                    latest.feed(text.as_bytes());
                }
                self.out.stderr.push_str(&text)
            }
            OutputLine::Result(result) => self.take_result(result),
            OutputLine::Error {
                name,
                value,
                traceback,
            } => {
                if self.error.is_none() {
                    self.error = Some(format!("{name}: {value}\n{traceback}"));
                }
            }
            OutputLine::UnexpectedEndOfExecution => {
                if self.error.is_none() {
                    self.error = Some("UnexpectedEndOfExecution: Connection to the execution was closed before the execution was finished\n".into());
                }
                self.ended = true;
            }
            OutputLine::EndOfExecution => self.ended = true,
            OutputLine::NumberOfExecutions { .. } | OutputLine::Keepalive => {}
        }
        Ok(())
    }

    fn take_result(&mut self, result: ExecutionResult) {
        if result.is_main_result && self.text.is_none() {
            self.text = Some(result.text.clone().unwrap_or_default());
        }
        if !self.collect_rich {
            return;
        }
        let main = result.is_main_result;
        let json = result.json.map(|v| v.to_string());
        let items = [
            ("image/png", result.png),
            ("image/jpeg", result.jpeg),
            ("image/svg+xml", result.svg),
            ("text/html", result.html),
            ("text/markdown", result.markdown),
            ("text/latex", result.latex),
            ("application/json", json),
            ("application/javascript", result.javascript),
            ("application/pdf", result.pdf),
        ];
        for (mime, data) in items {
            let Some(data) = data else { continue };
            if self.rich_bytes + data.len() > MAX_RICH_BYTES {
                continue;
            }
            self.rich_bytes += data.len();
            self.rich.push(RichResult {
                mime_type: mime.to_string(),
                data,
                is_main_result: main,
            });
        }
    }

    /// Output so far, for a failure's `partial_output`.
    pub fn partial_output(&self) -> String {
        self.out.partial_output()
    }

    /// The execution, once the body is over.
    pub fn finish(mut self) -> Result<Execution, (Failure, String)> {
        let rest = match std::mem::replace(&mut self.mode, LineMode::Lines) {
            LineMode::Lines => self.splitter.take_rest(),
            LineMode::Big(line) => line,
            // The stream stopped inside a long text line.
            LineMode::Text(..) | LineMode::SkipLine => Vec::new(),
        };
        if let Err(e) = self.take_line(&rest) {
            return Err((e, self.partial_output()));
        }
        if !self.ended {
            return Err((
                Failure::new(
                    ErrorKind::Network,
                    "the code interpreter closed the stream before the execution finished",
                ),
                self.partial_output(),
            ));
        }
        let truncate = |s: Option<String>| {
            crate::output::truncate::truncate_text(&s.unwrap_or_default(), self.limit)
        };
        Ok(Execution {
            text: truncate(self.text.take()),
            error: truncate(self.error.take()),
            stdout: self.out.stdout.finish(),
            stderr: self.out.stderr.finish(),
            rich: self.rich,
        })
    }
}

/// How the bytes that arrive next are read.
#[derive(Debug)]
enum LineMode {
    /// Complete lines through the splitter.
    Lines,
    /// An over-long line that is not stdout/stderr, held up to the limit.
    Big(Vec<u8>),
    /// Inside the `text` string of an over-long stdout/stderr line.
    Text(TextStream, JsonStringDecoder),
    /// After that string, up to the end of its line.
    SkipLine,
}

fn malformed(detail: impl std::fmt::Display) -> Failure {
    Failure::new(
        ErrorKind::Internal,
        format!("malformed answer from the code interpreter: {detail}"),
    )
}

const KNOWN_TYPES: &[&str] = &[
    "number_of_executions",
    "stdout",
    "stderr",
    "result",
    "error",
    "keepalive",
    "end_of_execution",
    "unexpected_end_of_execution",
];

/// `line` with every `\uXXXX` escape of a lone UTF-16 surrogate replaced
/// by `\ufffd`: Python's `json` (the kernel's side, and e2b-adk's) takes
/// them and e2b-adk ends with U+FFFD; serde_json refuses the whole line.
fn replace_lone_surrogates(line: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    /// The UTF-16 unit of a `\uXXXX` escape at `at`, if there is one.
    fn unit_at(line: &[u8], at: usize) -> Option<u32> {
        let hex = line.get(at..at + 6)?;
        if hex[0] != b'\\' || hex[1] != b'u' {
            return None;
        }
        u32::from_str_radix(std::str::from_utf8(&hex[2..]).ok()?, 16).ok()
    }
    let is_high = |u: u32| (0xD800..=0xDBFF).contains(&u);
    let is_low = |u: u32| (0xDC00..=0xDFFF).contains(&u);
    if !line.windows(3).any(|w| w == b"\\ud" || w == b"\\uD") {
        return std::borrow::Cow::Borrowed(line);
    }
    let mut out = Vec::with_capacity(line.len());
    let mut i = 0;
    while i < line.len() {
        if line[i] != b'\\' {
            out.push(line[i]);
            i += 1;
            continue;
        }
        match unit_at(line, i) {
            Some(high) if is_high(high) && unit_at(line, i + 6).is_some_and(is_low) => {
                out.extend_from_slice(&line[i..i + 12]);
                i += 12;
            }
            Some(unit) if is_high(unit) || is_low(unit) => {
                out.extend_from_slice(b"\\ufffd");
                i += 6;
            }
            // Any other escape (`\\\\` included) is copied whole.
            _ => {
                out.extend_from_slice(&line[i..(i + 2).min(line.len())]);
                i += 2;
            }
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogates_become_replacement_characters_like_e2b_adk() {
        let mut c = ExecutionCollector::new(100, false);
        let lines = concat!(
            r#"{"type": "stdout", "text": "a\ud800b \udc00 \ud83d\ude00 \\ud800"}"#,
            "\n",
            r#"{"type": "end_of_execution"}"#,
            "\n"
        );
        c.feed(lines.as_bytes()).unwrap();
        let ex = c.finish().unwrap();
        assert_eq!(ex.stdout, "a\u{FFFD}b \u{FFFD} 😀 \\ud800");
    }

    const STREAM: &str = concat!(
        "{\"type\": \"number_of_executions\", \"execution_count\": 1}\n",
        "{\"type\": \"stdout\", \"text\": \"stdout works\\n\", \"timestamp\": \"2025-01-01T00:00:00Z\"}\n",
        "{\"type\": \"result\", \"png\": \"iVBO\", \"is_main_result\": false}\n",
        "{\"type\": \"result\", \"text\": \"42\", \"extra\": {}, \"is_main_result\": true}\n",
        "{\"type\": \"future_kind\", \"x\": 1}\n",
        "{\"type\": \"error\", \"name\": \"ZeroDivisionError\", \"value\": \"division by zero\", \"traceback\": \"tb\"}\n",
        "{\"type\": \"end_of_execution\"}\n"
    );

    #[test]
    fn request_matches_code_interpreter_sdk() {
        let (settings, handle) = crate::protocol::envd::tests::fixture();
        let req = execute_request(&settings, &handle, "x", "python", &BTreeMap::new());
        assert_eq!(req.url, "http://127.0.0.1:4000/execute");
        assert_eq!(req.header_value("e2b-sandbox-port"), Some("49999"));
        assert_eq!(
            req.body,
            br#"{"code":"x","context_id":null,"language":"python","env_vars":null}"#
        );
    }

    #[test]
    fn collects_any_chunking() {
        for chunk in [1, 5, STREAM.len()] {
            let mut c = ExecutionCollector::new(10_000, true);
            for part in STREAM.as_bytes().chunks(chunk) {
                c.feed(part).unwrap();
            }
            let ex = c.finish().unwrap();
            assert_eq!(ex.stdout, "stdout works\n");
            assert_eq!(ex.text, "42");
            assert_eq!(ex.error, "ZeroDivisionError: division by zero\ntb");
            assert_eq!(ex.rich.len(), 1);
            assert_eq!(ex.rich[0].mime_type, "image/png");
        }
    }

    #[test]
    fn missing_end_and_garbage_fail() {
        let mut c = ExecutionCollector::new(100, false);
        c.feed(b"{\"type\": \"stdout\", \"text\": \"partial\"}\n")
            .unwrap();
        let (err, partial) = c.finish().unwrap_err();
        assert_eq!(err.kind, ErrorKind::Network);
        assert_eq!(partial, "partial");
        let mut c = ExecutionCollector::new(100, false);
        assert!(c.feed(b"<html>\n").is_err());
    }

    #[test]
    fn long_text_lines_stream_without_buffering() {
        let text = format!("{}é\"end", "a".repeat(3 << 20));
        let mut wire =
            serde_json::json!({"type": "stdout", "text": text, "timestamp": "t"}).to_string();
        wire.push('\n');
        let big = serde_json::json!({"type": "result", "text": "7", "html": "h".repeat(400_000), "is_main_result": true});
        wire.push_str(&big.to_string());
        wire.push_str(
            "\n{\"type\": \"stderr\", \"text\": \"e\"}\n{\"type\": \"end_of_execution\"}\n",
        );
        for chunk in [4096, 65536, 1 << 20] {
            let mut c = ExecutionCollector::new(10, true);
            for part in wire.as_bytes().chunks(chunk) {
                c.feed(part).unwrap();
            }
            let ex = c.finish().unwrap();
            assert_eq!(
                ex.stdout,
                format!(
                    "aaaaaaaaaa…[truncated {} bytes]",
                    thousands_of(text.len() - 10)
                )
            );
            assert_eq!(ex.stderr, "e");
            assert_eq!(ex.text, "7");
            assert_eq!(ex.rich.len(), 1);
        }
    }

    fn thousands_of(n: usize) -> String {
        let t = crate::output::truncate::truncate_text(&"x".repeat(n + 1), 1);
        t.trim_start_matches("x…[truncated ")
            .trim_end_matches(" bytes]")
            .to_string()
    }

    #[test]
    fn outputs_are_truncated() {
        let mut c = ExecutionCollector::new(5, false);
        let line = serde_json::json!({"type": "stdout", "text": "a".repeat(20_000)}).to_string();
        c.feed(line.as_bytes()).unwrap();
        c.feed(b"\n{\"type\":\"end_of_execution\"}\n").unwrap();
        let ex = c.finish().unwrap();
        assert_eq!(ex.stdout, "aaaaa…[truncated 19,995 bytes]");
        assert!(ex.rich.is_empty());
    }
}
