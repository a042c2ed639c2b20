//! `read_file`: a file's content as text (e2b-adk's way) or base64,
//! bounded and redacted as it streams.

use super::args::{encoding, require_str, Args, Encoding};
use super::exec::{error_body, plain, OpError};
use super::spec::{ToolSpec, READS};
use super::tool::Tool;
use crate::config::{Settings, ToolName};
use crate::errors::{from_envd_http, ErrorKind, Failure, ToolError};
use crate::output::base64_sink::Base64Sink;
use crate::output::redact::Secrets;
use crate::output::results::OrderedObject;
use crate::output::truncate::TruncatingSink;
use crate::protocol::api::SandboxHandle;
use crate::protocol::envd;
use crate::session::platform::{Platform, ResponseBody};
use crate::session::retry::{Attempt, Retry};
use crate::session::Ctx;

/// `read_file`: a file's content, as text or base64.
pub struct ReadFile;

impl Tool for ReadFile {
    const SPEC: ToolSpec = ToolSpec {
        tool: ToolName::ReadFile,
        title: "Read a file",
        hints: READS,
        description: "Read a text file from an isolated E2B sandbox at the given path and return its content. Use this to inspect files the sandbox produced or that you wrote earlier.",
        parameters_schema: include_str!("../schemas/read_file.json"),
        result_schema: include_str!("../schemas/results/read_file.json"),
        failure_prefix: "Failed to read file: ",
        instruction: "read_file (text, or base64 for binary files)",
    };

    type Input = ReadFileArgs;
    type Output = ReadOutput;
    const ONE_REQUEST: bool = true;

    /// Parses `read_file`'s arguments (the path, the encoding); a failure
    /// echoes the path.
    fn parse(args: &mut Args) -> Result<ReadFileArgs, ToolError> {
        let path = require_str(args, "path", false)?;
        let encoding = encoding(args).map_err(|e| e.with_path(path.clone()))?;
        Ok(ReadFileArgs { path, encoding })
    }

    /// Adds the path to an error.
    fn echo(a: &ReadFileArgs, err: ToolError) -> ToolError {
        err.with_path(a.path.clone())
    }

    /// Reads the file, bounded and redacted as it streams.
    async fn run<P: Platform>(
        ctx: &Ctx<P>,
        settings: &Settings,
        sandbox: &SandboxHandle,
        a: &mut ReadFileArgs,
    ) -> Result<ReadOutput, OpError> {
        let (content, invalid_utf8) = read(ctx, settings, sandbox, &a.path, a.encoding)
            .await
            .map_err(plain)?;
        Ok(ReadOutput {
            path: a.path.clone(),
            content,
            encoding: a.encoding,
            invalid_utf8,
        })
    }

    /// Removes secrets from every text of the output.
    fn redact(out: ReadOutput, secrets: &Secrets) -> ReadOutput {
        ReadOutput {
            path: secrets.redact(&out.path),
            content: secrets.redact(&out.content),
            ..out
        }
    }

    /// e2b-adk's dict, plus a key only where it says something new.
    fn dict(out: &ReadOutput, _rich: bool, obj: OrderedObject) -> OrderedObject {
        let mut obj = obj
            .put("path", out.path.as_str())
            .put("content", out.content.as_str());
        if out.encoding == Encoding::Base64 {
            obj = obj.put("encoding", out.encoding.as_str());
        }
        if out.invalid_utf8 {
            obj = obj.put("invalid_utf8", true);
        }
        obj
    }
}

/// Reads the file, bounded and redacted as it streams; retried afresh
/// when the server is busy or the connection resets.
async fn read<P: Platform>(
    ctx: &Ctx<P>,
    settings: &Settings,
    sandbox: &SandboxHandle,
    path: &str,
    encoding: Encoding,
) -> Result<(String, bool), Failure> {
    let req = envd::read_file_request(settings, sandbox, path);
    let timeout = settings.request_timeout_ms;
    let started = ctx.platform.now_ns();
    let mut attempt = 0;
    loop {
        // A retry starts the content afresh.
        let mut sink = FileSink::new(encoding, settings.max_output_bytes, &ctx.secrets());
        let result = ctx
            .with_deadline(
                u64::from(timeout),
                async {
                    let mut resp = ctx.platform.send(&req, timeout).await?;
                    if resp.status != 200 {
                        let body = error_body(&mut resp.body).await;
                        return Ok(Some((resp.status, resp.headers, body)));
                    }
                    while let Some(chunk) = resp.body.chunk().await? {
                        sink.push(&chunk);
                    }
                    Ok(None)
                },
                || Failure::new(ErrorKind::Timeout, crate::errors::REQUEST_TIMEOUT),
            )
            .await;
        let outcome = match &result {
            Ok(None) => return Ok(sink.finish()),
            Ok(Some((status, headers, body))) => Attempt::answer(*status, headers, body),
            Err(f) => Attempt::broken(f),
        };
        if !ctx
            .wait_to_retry(settings, Retry::Idempotent, attempt, outcome, started)
            .await
        {
            return match result {
                Ok(Some((status, _, body))) => Err(from_envd_http(status, &body)),
                Ok(None) => Ok(sink.finish()),
                Err(f) => Err(f),
            };
        }
        attempt += 1;
    }
}

/// What `read_file` is asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadFileArgs {
    /// Source.
    pub path: String,
    /// How the content is returned.
    pub encoding: Encoding,
}

/// What `read_file` read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOutput {
    /// The requested path.
    pub path: String,
    /// The content, truncated: text, or base64.
    pub content: String,
    /// How `content` is encoded.
    pub encoding: Encoding,
    /// The file is not valid UTF-8 (read as text, it holds U+FFFD):
    /// read it as base64 to get its bytes.
    pub invalid_utf8: bool,
}

/// A file's content as it is read: text, or base64.
enum FileSink {
    Text(TruncatingSink),
    Base64(Base64Sink),
}

impl FileSink {
    fn new(encoding: Encoding, limit: usize, secrets: &Secrets) -> Self {
        match encoding {
            Encoding::Utf8 => FileSink::Text(TruncatingSink::new(limit).redacting(secrets)),
            Encoding::Base64 => FileSink::Base64(Base64Sink::new(limit, secrets)),
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        match self {
            FileSink::Text(sink) => sink.push_bytes(bytes),
            FileSink::Base64(sink) => sink.push(bytes),
        }
    }

    /// The content, and whether text was not valid UTF-8.
    fn finish(self) -> (String, bool) {
        match self {
            FileSink::Text(sink) => {
                let invalid = sink.saw_invalid_utf8();
                (sink.finish(), invalid)
            }
            FileSink::Base64(sink) => (sink.finish(), false),
        }
    }
}
