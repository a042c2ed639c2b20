//! `write_file`: text or base64 content, up to
//! [`MAX_WRITE_BYTES`], in one envd upload.

use e2b_wire::host_guest::{write_too_large, MAX_WRITE_BYTES};

use super::args::{encoding, missing, require_str, Args, Encoding};
use super::exec::{plain, OpError};
use super::spec::{Hints, ToolSpec};
use super::tool::Tool;
use crate::config::{Settings, ToolName};
use crate::errors::{from_envd_http, ToolError};
use crate::output::redact::Secrets;
use crate::output::results::OrderedObject;
use crate::protocol::api::SandboxHandle;
use crate::protocol::envd;
use crate::session::platform::Platform;
use crate::session::Ctx;
use serde_json::Value;

/// `write_file`: text or base64 content into a file.
pub struct WriteFile;

impl Tool for WriteFile {
    const SPEC: ToolSpec = ToolSpec {
        tool: ToolName::WriteFile,
        title: "Write a file",
        hints: Hints {
            read_only: false,
            destructive: true,
            idempotent: true,
            open_world: false,
        },
        description: "Write a text file into an isolated E2B sandbox at the given path, creating or overwriting it. Use this to place source files, configs, or data into the sandbox before running them.",
        parameters_schema: include_str!("../schemas/write_file.json"),
        result_schema: include_str!("../schemas/results/write_file.json"),
        failure_prefix: "Failed to write file: ",
        instruction: "write_file (text, or base64 for binary files)",
    };

    type Input = WriteFileArgs;
    type Output = Written;
    const ONE_REQUEST: bool = true;

    /// Parses `write_file`'s arguments (the path, the bytes to write); a
    /// failure echoes the path.
    fn parse(args: &mut Args) -> Result<WriteFileArgs, ToolError> {
        let path = require_str(args, "path", false)?;
        // Taken, not cloned: it may be tens of megabytes.
        let content = match args.remove("content") {
            Some(Value::String(s)) => s,
            _ => return Err(missing("content").with_path(path)),
        };
        let echo = |e: ToolError| e.with_path(path.clone());
        let encoding = encoding(args).map_err(echo)?;
        let content = decode_content(content, encoding).map_err(echo)?;
        check_size(&content).map_err(echo)?;
        Ok(WriteFileArgs { path, content })
    }

    /// Content that would not fit (typed calls come unparsed).
    fn admit(_settings: &Settings, a: &WriteFileArgs) -> Result<(), ToolError> {
        check_size(&a.content)
    }

    /// Adds the path to an error.
    fn echo(a: &WriteFileArgs, err: ToolError) -> ToolError {
        err.with_path(a.path.clone())
    }

    /// Uploads the content (moved into the request, not copied).
    async fn run<P: Platform>(
        ctx: &Ctx<P>,
        settings: &Settings,
        sandbox: &SandboxHandle,
        a: &mut WriteFileArgs,
    ) -> Result<Written, OpError> {
        let content = std::mem::take(&mut a.content);
        let req = envd::write_file_request(settings, sandbox, &a.path, content);
        let (status, body) = ctx.exchange(settings, &req).await.map_err(plain)?;
        if (200..300).contains(&status) {
            Ok(Written {
                path: a.path.clone(),
            })
        } else {
            Err(plain(from_envd_http(status, &body)))
        }
    }

    /// Removes secrets from the echoed path.
    fn redact(out: Written, secrets: &Secrets) -> Written {
        Written {
            path: secrets.redact(&out.path),
        }
    }

    /// e2b-adk's dict keys.
    fn dict(out: &Written, _rich: bool, obj: OrderedObject) -> OrderedObject {
        obj.put("path", out.path.as_str())
    }
}

/// What `write_file` is asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteFileArgs {
    /// Destination.
    pub path: String,
    /// The bytes to write (may be empty): the text, or what its base64
    /// decodes to.
    pub content: Vec<u8>,
}

/// What `write_file` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The requested path.
    pub path: String,
}

/// Refuses content over [`MAX_WRITE_BYTES`].
pub fn check_size(content: &[u8]) -> Result<(), ToolError> {
    if content.len() > MAX_WRITE_BYTES {
        return Err(ToolError::invalid(write_too_large(content.len())));
    }
    Ok(())
}

/// `write_file` content in `encoding`, as the bytes to write; base64 may
/// hold whitespace (line breaks), which is ignored.
fn decode_content(content: String, encoding: Encoding) -> Result<Vec<u8>, ToolError> {
    use base64::Engine as _;
    match encoding {
        Encoding::Utf8 => Ok(content.into_bytes()),
        Encoding::Base64 => {
            let compact: Vec<u8> = content
                .bytes()
                .filter(|b| !b.is_ascii_whitespace())
                .collect();
            drop(content);
            base64::engine::general_purpose::STANDARD
                .decode(&compact)
                .map_err(|e| ToolError::invalid(format!("Invalid base64 content: {e}")))
        }
    }
}
