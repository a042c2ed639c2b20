//! The argument rules several tools share, with e2b-adk's exact messages:
//! required strings, `envs`, `timeout`, `cwd`, `encoding`, and the JSON
//! object a `call-tool` brings.

use std::collections::BTreeMap;

use e2b_wire::host_guest::{arguments_too_large, MAX_ARGUMENTS_BYTES};
use serde_json::{Map, Value};

use crate::errors::ToolError;

/// A call's arguments, as a JSON object.
pub type Args = Map<String, Value>;

/// `call-tool`'s arguments text as an object: empty or `null` is `{}`.
pub fn object(arguments_json: &str) -> Result<Args, ToolError> {
    if arguments_json.len() > MAX_ARGUMENTS_BYTES {
        return Err(ToolError::invalid(arguments_too_large(
            arguments_json.len(),
        )));
    }
    let trimmed = arguments_json.trim();
    let value: Value = if trimmed.is_empty() {
        Value::Object(Map::new())
    } else {
        serde_json::from_str(trimmed).map_err(|e| {
            ToolError::invalid(format!("Invalid arguments: expected a JSON object ({e})"))
        })?
    };
    match value {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(Map::new()),
        _ => Err(ToolError::invalid(
            "Invalid arguments: expected a JSON object",
        )),
    }
}

/// How `read_file` returns a file and `write_file` takes one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Encoding {
    /// As text (e2b-adk's way): invalid UTF-8 becomes U+FFFD.
    #[default]
    Utf8,
    /// As base64: any bytes, binary files included.
    Base64,
}

impl Encoding {
    /// The name in arguments and results.
    pub fn as_str(self) -> &'static str {
        match self {
            Encoding::Utf8 => "utf8",
            Encoding::Base64 => "base64",
        }
    }
}

/// The optional `encoding` argument: absent, null or "" is utf8.
pub(crate) fn encoding(args: &Map<String, Value>) -> Result<Encoding, ToolError> {
    match args.get("encoding") {
        None | Some(Value::Null) => Ok(Encoding::Utf8),
        Some(Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
            "" | "utf8" | "utf-8" => Ok(Encoding::Utf8),
            "base64" => Ok(Encoding::Base64),
            _ => Err(invalid_encoding()),
        },
        Some(_) => Err(invalid_encoding()),
    }
}

fn invalid_encoding() -> ToolError {
    ToolError::invalid(r#"Invalid encoding: expected "utf8" or "base64""#)
}

/// e2b-adk's message for a missing or mistyped required argument.
pub(crate) fn missing(key: &str) -> ToolError {
    ToolError::invalid(format!("Missing or invalid required argument: {key}"))
}

/// e2b-adk's `_require_str`: a string, non-empty unless `allow_empty`.
pub(crate) fn require_str(
    args: &Map<String, Value>,
    key: &str,
    allow_empty: bool,
) -> Result<String, ToolError> {
    match args.get(key) {
        Some(Value::String(s)) if allow_empty || !s.is_empty() => Ok(s.clone()),
        _ => Err(missing(key)),
    }
}

/// Python truthiness of a JSON value (for `args.get(k) or default`).
pub(crate) fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// Optional environment variables: an object of strings, or null.
pub(crate) fn envs(args: &Map<String, Value>) -> Result<BTreeMap<String, String>, ToolError> {
    match args.get("envs") {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                _ => Err(ToolError::invalid(format!(
                    "Invalid envs: the value of '{k}' must be a string"
                ))),
            })
            .collect(),
        Some(_) => Err(ToolError::invalid(
            "Invalid envs: expected an object mapping names to string values",
        )),
    }
}

/// Optional timeout in seconds (integer or not), as milliseconds.
pub(crate) fn timeout_ms(args: &Map<String, Value>) -> Result<Option<u64>, ToolError> {
    match args.get("timeout") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(secs) if secs >= 0.0 && secs.is_finite() && secs < 1e12 => {
                Ok(Some((secs * 1000.0).round() as u64))
            }
            _ => Err(ToolError::invalid(
                "Invalid timeout: expected a non-negative number of seconds",
            )),
        },
        Some(_) => Err(ToolError::invalid(
            "Invalid timeout: expected a non-negative number of seconds",
        )),
    }
}

/// Optional working directory: a string or null (empty means default).
pub(crate) fn cwd(args: &Map<String, Value>) -> Result<Option<String>, ToolError> {
    match args.get("cwd") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ToolError::invalid("Invalid cwd: expected a string")),
    }
}

/// Lower-cased language, `python` when missing, empty or not a string.
///
/// ASCII folding only: every kernel name is ASCII, so only an unknown
/// language's echo can differ from Python's `lower()`, and it fails
/// either way. Unicode case tables would add 24 KiB to every instance's
/// memory image.
pub fn normalize_language(language: Option<&str>) -> String {
    match language {
        Some(l) if !l.is_empty() => l.to_ascii_lowercase(),
        _ => "python".to_string(),
    }
}
