//! `write_file`: text or base64 content, up to
//! [`MAX_WRITE_BYTES`], in one envd upload.

use e2b_wire::host_guest::{write_too_large, MAX_WRITE_BYTES};

use super::args::{encoding, missing, require_str, Args, Encoding};
use super::spec::{Hints, ToolSpec};
use crate::config::{Settings, ToolName};
use crate::errors::{from_envd_http, Failure, ToolError};
use crate::protocol::api::SandboxHandle;
use crate::protocol::envd;
use crate::session::platform::Platform;
use crate::session::Ctx;
use serde_json::Value;

/// `write_file`'s entry in the catalog.
pub const SPEC: ToolSpec = ToolSpec {
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

/// Parses `write_file`'s arguments (the path, the bytes to write); a
/// failure echoes the path.
pub(crate) fn parse(args: &mut Args) -> Result<(String, Vec<u8>), ToolError> {
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
    Ok((path, content))
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

/// Uploads the content (moved into the request, not copied).
pub(crate) async fn run<P: Platform>(
    ctx: &Ctx<P>,
    settings: &Settings,
    sandbox: &SandboxHandle,
    path: &str,
    content: Vec<u8>,
) -> Result<(), Failure> {
    let req = envd::write_file_request(settings, sandbox, path, content);
    let (status, body) = ctx.exchange(settings, &req).await?;
    if (200..300).contains(&status) {
        Ok(())
    } else {
        Err(from_envd_http(status, &body))
    }
}
