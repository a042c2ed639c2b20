//! Tool arguments: parsing `call-tool`'s JSON with e2b-adk's exact rules and
//! messages, into typed calls shared with the typed WIT functions.

use std::collections::BTreeMap;

pub use e2b_wire::{MAX_ARGUMENTS_BYTES, MAX_WRITE_BYTES};
use serde_json::{Map, Value};

use crate::errors::ToolError;

/// A tool, by the name models call it with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolName {
    /// `run_code`.
    RunCode,
    /// `run_command`.
    RunCommand,
    /// `write_file`.
    WriteFile,
    /// `read_file`.
    ReadFile,
    /// `list_files`.
    ListFiles,
    /// `start_background_command`.
    StartBackgroundCommand,
    /// `get_background_output` (opt-in).
    GetBackgroundOutput,
    /// `stop_background_command` (opt-in).
    StopBackgroundCommand,
}

impl ToolName {
    /// Every tool: e2b-adk's six in its order, then ours.
    pub const ALL: [ToolName; 8] = [
        ToolName::RunCode,
        ToolName::RunCommand,
        ToolName::WriteFile,
        ToolName::ReadFile,
        ToolName::ListFiles,
        ToolName::StartBackgroundCommand,
        ToolName::GetBackgroundOutput,
        ToolName::StopBackgroundCommand,
    ];

    /// The name as models see it.
    pub const fn as_str(self) -> &'static str {
        match self {
            ToolName::RunCode => "run_code",
            ToolName::RunCommand => "run_command",
            ToolName::WriteFile => "write_file",
            ToolName::ReadFile => "read_file",
            ToolName::ListFiles => "list_files",
            ToolName::StartBackgroundCommand => "start_background_command",
            ToolName::GetBackgroundOutput => "get_background_output",
            ToolName::StopBackgroundCommand => "stop_background_command",
        }
    }

    /// Its bit in a [`ToolSet`].
    const fn bit(self) -> u8 {
        1 << self as u8
    }

    /// The tool called `name`, `None` for any other name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == name)
    }
}

/// Every tool's name, in [`ToolName::ALL`]'s order.
pub const TOOL_NAMES: [&str; 8] = [
    ToolName::RunCode.as_str(),
    ToolName::RunCommand.as_str(),
    ToolName::WriteFile.as_str(),
    ToolName::ReadFile.as_str(),
    ToolName::ListFiles.as_str(),
    ToolName::StartBackgroundCommand.as_str(),
    ToolName::GetBackgroundOutput.as_str(),
    ToolName::StopBackgroundCommand.as_str(),
];

/// The tools a session offers: listed, described and callable. The rest
/// answer as if unknown, naming the enabled ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolSet(u8);

impl ToolSet {
    /// e2b-adk's six, the default.
    pub const DEFAULT: ToolSet = ToolSet(
        ToolName::RunCode.bit()
            | ToolName::RunCommand.bit()
            | ToolName::WriteFile.bit()
            | ToolName::ReadFile.bit()
            | ToolName::ListFiles.bit()
            | ToolName::StartBackgroundCommand.bit(),
    );
    /// Every tool.
    pub const ALL: ToolSet = ToolSet(Self::DEFAULT.0 | Self::BACKGROUND_CONTROL.0);
    /// The tools that need a background process's output kept in the
    /// sandbox (see [`crate::background`]).
    const BACKGROUND_CONTROL: ToolSet =
        ToolSet(ToolName::GetBackgroundOutput.bit() | ToolName::StopBackgroundCommand.bit());

    /// Parses a list of names; `default` and `all` stand for those sets.
    /// Empty or unknown names are refused, naming the known ones.
    pub fn parse<S: AsRef<str>>(names: &[S]) -> Result<ToolSet, String> {
        let mut set = ToolSet(0);
        for name in names {
            let name = name.as_ref().trim();
            set.0 |= match name {
                "all" => Self::ALL.0,
                "default" => Self::DEFAULT.0,
                _ => match ToolName::parse(name) {
                    Some(tool) => tool.bit(),
                    None => {
                        return Err(format!(
                            "unknown tool '{name}' (known: {}, or default, all)",
                            TOOL_NAMES.join(", ")
                        ))
                    }
                },
            };
        }
        if set.0 == 0 {
            return Err("no tool enabled: name at least one".into());
        }
        Ok(set)
    }

    /// Whether `tool` is enabled.
    pub fn contains(self, tool: ToolName) -> bool {
        self.0 & tool.bit() != 0
    }

    /// The enabled tools, in [`ToolName::ALL`]'s order.
    pub fn tools(self) -> impl Iterator<Item = ToolName> {
        ToolName::ALL.into_iter().filter(move |t| self.contains(*t))
    }

    /// Whether background processes are started with their output kept
    /// in the sandbox (a tool that reads or stops them is enabled).
    pub fn controls_background(self) -> bool {
        self.0 & Self::BACKGROUND_CONTROL.0 != 0
    }

    /// `Ok` if `tool` is enabled, else the invalid-argument failure that
    /// names the enabled tools.
    pub fn check(self, tool: ToolName) -> Result<(), ToolError> {
        if self.contains(tool) {
            return Ok(());
        }
        Err(ToolError::invalid(format!(
            "Tool {} is not enabled in this session. Enabled tools: {}",
            tool.as_str(),
            self.names().join(", ")
        )))
    }

    /// The enabled tools' names.
    pub fn names(self) -> Vec<&'static str> {
        self.tools().map(ToolName::as_str).collect()
    }
}

impl Default for ToolSet {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Byte offsets into a background process's stdout and stderr (what
/// `get_background_output` read up to).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Offsets {
    /// Into stdout.
    pub stdout: u64,
    /// Into stderr.
    pub stderr: u64,
}

/// The optional `since` of `get_background_output`: `{"stdout": n,
/// "stderr": m}` (either may be left out: 0), or null.
fn since(args: &Map<String, Value>) -> Result<Offsets, ToolError> {
    let bad = || {
        ToolError::invalid(
            r#"Invalid since: expected {"stdout": N, "stderr": M} with non-negative integer offsets, as next_since returned them"#,
        )
    };
    let map = match args.get("since") {
        None | Some(Value::Null) => return Ok(Offsets::default()),
        Some(Value::Object(map)) => map,
        Some(_) => return Err(bad()),
    };
    let offset = |key: &str| match map.get(key) {
        None | Some(Value::Null) => Ok(0),
        Some(Value::Number(n)) => n.as_u64().ok_or_else(bad),
        Some(_) => Err(bad()),
    };
    if map.keys().any(|k| k != "stdout" && k != "stderr") {
        return Err(bad());
    }
    Ok(Offsets {
        stdout: offset("stdout")?,
        stderr: offset("stderr")?,
    })
}

/// The signal `stop_background_command` sends first (SIGKILL follows
/// after the grace period if the process is still there).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StopSignal {
    /// Terminate (the default).
    #[default]
    Term,
    /// Interrupt, as Ctrl-C.
    Int,
    /// Hang up.
    Hup,
    /// Quit.
    Quit,
    /// Kill at once.
    Kill,
}

impl StopSignal {
    /// Every signal, for messages.
    pub const ALL: [StopSignal; 5] = [
        StopSignal::Term,
        StopSignal::Int,
        StopSignal::Hup,
        StopSignal::Quit,
        StopSignal::Kill,
    ];

    /// `SIGTERM`, ….
    pub const fn as_str(self) -> &'static str {
        match self {
            StopSignal::Term => "SIGTERM",
            StopSignal::Int => "SIGINT",
            StopSignal::Hup => "SIGHUP",
            StopSignal::Quit => "SIGQUIT",
            StopSignal::Kill => "SIGKILL",
        }
    }

    /// `TERM`, … as `kill -s` takes it.
    pub fn short_name(self) -> &'static str {
        &self.as_str()[3..]
    }

    /// `SIGTERM`, `sigterm` or `TERM`.
    pub fn parse(name: &str) -> Option<Self> {
        let upper = name.trim().to_ascii_uppercase();
        let short = upper.strip_prefix("SIG").unwrap_or(&upper);
        Self::ALL.into_iter().find(|s| s.short_name() == short)
    }
}

/// The optional `signal` of `stop_background_command`.
fn stop_signal(args: &Map<String, Value>) -> Result<StopSignal, ToolError> {
    let names: Vec<_> = StopSignal::ALL.iter().map(|s| s.as_str()).collect();
    let bad = || ToolError::invalid(format!("Invalid signal: expected {}", names.join(", ")));
    match args.get("signal") {
        None | Some(Value::Null) => Ok(StopSignal::default()),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(StopSignal::default()),
        Some(Value::String(s)) => StopSignal::parse(s).ok_or_else(bad),
        Some(_) => Err(bad()),
    }
}

/// The message for a pid that cannot be one.
pub const INVALID_PID: &str =
    "Invalid pid: expected the positive integer start_background_command returned";

/// The required `pid`: a positive integer.
fn pid(args: &Map<String, Value>) -> Result<u32, ToolError> {
    match args.get("pid") {
        Some(Value::Number(n)) => n
            .as_u64()
            .and_then(|p| u32::try_from(p).ok())
            .filter(|p| *p > 0)
            .ok_or_else(|| ToolError::invalid(INVALID_PID)),
        _ => Err(missing("pid")),
    }
}

/// Refuses `write_file` content over [`MAX_WRITE_BYTES`].
pub fn check_write_size(content: &[u8]) -> Result<(), ToolError> {
    if content.len() > MAX_WRITE_BYTES {
        return Err(ToolError::invalid(e2b_wire::write_too_large(content.len())));
    }
    Ok(())
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
fn encoding(args: &Map<String, Value>) -> Result<Encoding, ToolError> {
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

/// The deepest `list_files` walks.
pub const MAX_LIST_DEPTH: u32 = 10;

/// `list_files`'s optional `depth`: absent or null is 1.
fn list_depth(args: &Map<String, Value>) -> Result<u32, ToolError> {
    match args.get("depth") {
        None | Some(Value::Null) => Ok(1),
        Some(Value::Number(n)) => n
            .as_u64()
            .filter(|d| (1..=u64::from(MAX_LIST_DEPTH)).contains(d))
            .map(|d| d as u32)
            .ok_or_else(invalid_depth),
        Some(_) => Err(invalid_depth()),
    }
}

fn invalid_depth() -> ToolError {
    ToolError::invalid(format!(
        "Invalid depth: expected an integer between 1 and {MAX_LIST_DEPTH}"
    ))
}

/// The message e2b-adk gives a bad port.
pub const INVALID_PORT: &str = "Invalid port: expected an integer between 1 and 65535";

/// `run_code`'s arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunCodeArgs {
    /// Source code (non-empty).
    pub code: String,
    /// Lower-cased language, `python` by default.
    pub language: String,
    /// Environment for this execution.
    pub envs: BTreeMap<String, String>,
    /// Timeout in ms; `None`: the default (300 s); `Some(0)`: none.
    pub timeout_ms: Option<u64>,
}

/// `run_command`'s arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunCommandArgs {
    /// Shell command (non-empty).
    pub command: String,
    /// Working directory.
    pub cwd: Option<String>,
    /// Environment for this command.
    pub envs: BTreeMap<String, String>,
    /// Timeout in ms; `None`: the default (60 s); `Some(0)`: none.
    pub timeout_ms: Option<u64>,
}

/// `start_background_command`'s arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackgroundArgs {
    /// Shell command (non-empty).
    pub command: String,
    /// Port to probe and preview.
    pub port: Option<u16>,
    /// Working directory.
    pub cwd: Option<String>,
    /// Environment.
    pub envs: BTreeMap<String, String>,
    /// Lifetime in ms; `None` or `Some(0)`: until the sandbox ends.
    pub timeout_ms: Option<u64>,
}

/// One parsed tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolCall {
    /// `run_code`.
    RunCode(RunCodeArgs),
    /// `run_command`.
    RunCommand(RunCommandArgs),
    /// `write_file`.
    WriteFile {
        /// Destination.
        path: String,
        /// The bytes to write (may be empty): the text, or what its base64
        /// decodes to.
        content: Vec<u8>,
    },
    /// `read_file`.
    ReadFile {
        /// Source.
        path: String,
        /// How the content is returned.
        encoding: Encoding,
    },
    /// `list_files`.
    ListFiles {
        /// Directory, `.` by default.
        path: String,
        /// How many levels: 1 (its children, e2b-adk's) to [`MAX_LIST_DEPTH`].
        depth: u32,
    },
    /// `start_background_command`.
    StartBackground(BackgroundArgs),
    /// `get_background_output`.
    GetBackgroundOutput {
        /// The process, as its start returned it.
        pid: u32,
        /// Where to read from (0: from the start).
        since: Offsets,
    },
    /// `stop_background_command`.
    StopBackground {
        /// The process, as its start returned it.
        pid: u32,
        /// The signal sent first.
        signal: StopSignal,
    },
}

impl ToolCall {
    /// The tool this call is for.
    pub fn tool(&self) -> ToolName {
        match self {
            ToolCall::RunCode(_) => ToolName::RunCode,
            ToolCall::RunCommand(_) => ToolName::RunCommand,
            ToolCall::WriteFile { .. } => ToolName::WriteFile,
            ToolCall::ReadFile { .. } => ToolName::ReadFile,
            ToolCall::ListFiles { .. } => ToolName::ListFiles,
            ToolCall::StartBackground(_) => ToolName::StartBackgroundCommand,
            ToolCall::GetBackgroundOutput { .. } => ToolName::GetBackgroundOutput,
            ToolCall::StopBackground { .. } => ToolName::StopBackgroundCommand,
        }
    }
}

fn missing(key: &str) -> ToolError {
    ToolError::invalid(format!("Missing or invalid required argument: {key}"))
}

/// e2b-adk's `_require_str`: a string, non-empty unless `allow_empty`.
fn require_str(
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
fn truthy(value: &Value) -> bool {
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
fn envs(args: &Map<String, Value>) -> Result<BTreeMap<String, String>, ToolError> {
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
fn timeout_ms(args: &Map<String, Value>) -> Result<Option<u64>, ToolError> {
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
fn cwd(args: &Map<String, Value>) -> Result<Option<String>, ToolError> {
    match args.get("cwd") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ToolError::invalid("Invalid cwd: expected a string")),
    }
}

/// e2b-adk's port rule: null, or an integer (not a bool, not a float) in
/// 1..=65535.
fn port(args: &Map<String, Value>) -> Result<Option<u16>, ToolError> {
    match args.get("port") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => n
            .as_u64()
            .and_then(|p| u16::try_from(p).ok())
            .filter(|p| *p >= 1)
            .map(Some)
            .ok_or_else(|| ToolError::invalid(INVALID_PORT)),
        Some(_) => Err(ToolError::invalid(INVALID_PORT)),
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

/// Parses `call-tool`'s arguments for tool `name`, any tool enabled.
pub fn parse_call(name: &str, arguments_json: &str) -> Result<ToolCall, ToolError> {
    parse_enabled_call(name, arguments_json, ToolSet::ALL)
}

/// Parses `call-tool`'s arguments for tool `name`, one of `enabled`.
pub fn parse_enabled_call(
    name: &str,
    arguments_json: &str,
    enabled: ToolSet,
) -> Result<ToolCall, ToolError> {
    let Some(tool) = ToolName::parse(name).filter(|t| enabled.contains(*t)) else {
        // e2b-adk's message, for a disabled tool too: the model should
        // use what it has.
        return Err(ToolError::invalid(format!(
            "Unknown tool: {name}. Available tools: {}",
            enabled.names().join(", ")
        )));
    };
    if arguments_json.len() > MAX_ARGUMENTS_BYTES {
        return Err(ToolError::invalid(e2b_wire::arguments_too_large(
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
    let args = match value {
        Value::Object(map) => map,
        Value::Null => Map::new(),
        _ => {
            return Err(ToolError::invalid(
                "Invalid arguments: expected a JSON object",
            ))
        }
    };
    parse_args(tool, args)
}

/// Parses tool `tool`'s arguments given as a JSON object (moved in, so a
/// large `content` is not copied).
pub fn parse_object(tool: ToolName, args: Map<String, Value>) -> Result<ToolCall, ToolError> {
    parse_args(tool, args)
}

fn parse_args(tool: ToolName, mut args: Map<String, Value>) -> Result<ToolCall, ToolError> {
    let args = &mut args;
    match tool {
        ToolName::RunCode => {
            let code = require_str(args, "code", false)?;
            let language = match args.get("language") {
                Some(Value::String(s)) => normalize_language(Some(s)),
                _ => normalize_language(None),
            };
            Ok(ToolCall::RunCode(RunCodeArgs {
                code,
                language,
                envs: envs(args)?,
                timeout_ms: timeout_ms(args)?,
            }))
        }
        ToolName::RunCommand => {
            let command = require_str(args, "command", false)?;
            let echo = |e: ToolError| e.with_command(command.clone());
            Ok(ToolCall::RunCommand(RunCommandArgs {
                cwd: cwd(args).map_err(echo)?,
                envs: envs(args).map_err(echo)?,
                timeout_ms: timeout_ms(args).map_err(echo)?,
                command,
            }))
        }
        ToolName::WriteFile => {
            let path = require_str(args, "path", false)?;
            // Taken, not cloned: it may be tens of megabytes.
            let content = match args.remove("content") {
                Some(Value::String(s)) => s,
                _ => return Err(missing("content").with_path(path)),
            };
            let echo = |e: ToolError| e.with_path(path.clone());
            let encoding = encoding(args).map_err(echo)?;
            let content = decode_content(content, encoding).map_err(echo)?;
            check_write_size(&content).map_err(echo)?;
            Ok(ToolCall::WriteFile { path, content })
        }
        ToolName::ReadFile => {
            let path = require_str(args, "path", false)?;
            let encoding = encoding(args).map_err(|e| e.with_path(path.clone()))?;
            Ok(ToolCall::ReadFile { path, encoding })
        }
        ToolName::ListFiles => {
            let path = match args.get("path") {
                Some(v) if truthy(v) => match v {
                    Value::String(s) => s.clone(),
                    other => {
                        return Err(ToolError::invalid(
                            "Failed to list directory: invalid path: expected a string",
                        )
                        .with_path(other.to_string()))
                    }
                },
                _ => ".".to_string(),
            };
            let depth = list_depth(args).map_err(|e| e.with_path(path.clone()))?;
            Ok(ToolCall::ListFiles { path, depth })
        }
        ToolName::StartBackgroundCommand => {
            let command = require_str(args, "command", false)?;
            let echo = |e: ToolError| e.with_command(command.clone());
            Ok(ToolCall::StartBackground(BackgroundArgs {
                port: port(args).map_err(echo)?,
                cwd: cwd(args).map_err(echo)?,
                envs: envs(args).map_err(echo)?,
                timeout_ms: timeout_ms(args).map_err(echo)?,
                command,
            }))
        }
        ToolName::GetBackgroundOutput => Ok(ToolCall::GetBackgroundOutput {
            pid: pid(args)?,
            since: since(args)?,
        }),
        ToolName::StopBackgroundCommand => Ok(ToolCall::StopBackground {
            pid: pid(args)?,
            signal: stop_signal(args)?,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errors::ErrorKind;

    #[test]
    fn every_name_parses_to_its_tool_and_nothing_else_does() {
        for tool in ToolName::ALL {
            assert_eq!(ToolName::parse(tool.as_str()), Some(tool));
        }
        assert_eq!(ToolName::parse("start_background"), None);
        // A disabled tool is unknown to the model, and the message lists
        // what it can use: e2b-adk's six by default.
        let err = parse_enabled_call("stop_background_command", r#"{"pid": 3}"#, ToolSet::DEFAULT)
            .unwrap_err();
        assert_eq!(
            err.message,
            "Unknown tool: stop_background_command. Available tools: run_code, run_command, \
write_file, read_file, list_files, start_background_command"
        );
        assert!(parse_call("stop_background_command", r#"{"pid": 3}"#).is_ok());
    }

    #[test]
    fn tool_sets_parse_names_and_the_two_shorthands() {
        assert_eq!(ToolSet::parse(&["default"]).unwrap(), ToolSet::DEFAULT);
        assert_eq!(ToolSet::parse(&["all"]).unwrap(), ToolSet::ALL);
        let reader = ToolSet::parse(&["read_file", " list_files"]).unwrap();
        assert_eq!(reader.names(), ["read_file", "list_files"]);
        assert!(!reader.controls_background());
        assert!(!ToolSet::DEFAULT.controls_background());
        assert!(ToolSet::parse(&["get_background_output"])
            .unwrap()
            .controls_background());
        let err = ToolSet::parse(&["read_file", "rm_rf"]).unwrap_err();
        assert!(err.contains("unknown tool 'rm_rf'"), "{err}");
        assert!(ToolSet::parse::<&str>(&[]).is_err());
        let err = reader.check(ToolName::WriteFile).unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidArgument);
        assert_eq!(
            err.message,
            "Tool write_file is not enabled in this session. Enabled tools: read_file, list_files"
        );
    }

    #[test]
    fn background_control_arguments_are_checked() {
        let call = parse_call(
            "get_background_output",
            r#"{"pid": 7, "since": {"stdout": 10}}"#,
        )
        .unwrap();
        assert_eq!(
            call,
            ToolCall::GetBackgroundOutput {
                pid: 7,
                since: Offsets {
                    stdout: 10,
                    stderr: 0
                }
            }
        );
        let call = parse_call("stop_background_command", r#"{"pid": 7, "signal": "int"}"#);
        assert_eq!(
            call.unwrap(),
            ToolCall::StopBackground {
                pid: 7,
                signal: StopSignal::Int
            }
        );
        for (tool, args, message) in [
            (
                "get_background_output",
                r#"{}"#,
                "Missing or invalid required argument: pid",
            ),
            ("get_background_output", r#"{"pid": 0}"#, INVALID_PID),
            ("get_background_output", r#"{"pid": -3}"#, INVALID_PID),
            ("get_background_output", r#"{"pid": 1.5}"#, INVALID_PID),
            (
                "get_background_output",
                r#"{"pid": "7"}"#,
                "Missing or invalid required argument: pid",
            ),
            (
                "get_background_output",
                r#"{"pid": 7, "since": {"stdout": -1}}"#,
                "Invalid since",
            ),
            (
                "get_background_output",
                r#"{"pid": 7, "since": 5}"#,
                "Invalid since",
            ),
            (
                "get_background_output",
                r#"{"pid": 7, "since": {"out": 5}}"#,
                "Invalid since",
            ),
            (
                "stop_background_command",
                r#"{"pid": 7, "signal": "SIGUSR1"}"#,
                "Invalid signal: expected SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGKILL",
            ),
            (
                "stop_background_command",
                r#"{"pid": 7, "signal": 9}"#,
                "Invalid signal",
            ),
        ] {
            let err = parse_call(tool, args).unwrap_err();
            assert!(
                err.message.starts_with(message),
                "{tool} {args}: {}",
                err.message
            );
            assert_eq!(err.kind, ErrorKind::InvalidArgument);
        }
    }

    #[test]
    fn required_arguments_use_e2b_adk_messages() {
        let err = parse_call("run_code", "{}").unwrap_err();
        assert_eq!(err.message, "Missing or invalid required argument: code");
        assert_eq!(err.kind, ErrorKind::InvalidArgument);
        let err = parse_call("run_command", r#"{"command": ""}"#).unwrap_err();
        assert_eq!(err.message, "Missing or invalid required argument: command");
        let err = parse_call("write_file", r#"{"path": "/a"}"#).unwrap_err();
        assert_eq!(err.message, "Missing or invalid required argument: content");
        assert_eq!(err.path.as_deref(), Some("/a"));
        assert_eq!(
            parse_call("write_file", r#"{"path": "/a", "content": ""}"#).unwrap(),
            ToolCall::WriteFile {
                path: "/a".into(),
                content: Vec::new()
            }
        );
        let err = parse_call("read_file", r#"{"path": 5}"#).unwrap_err();
        assert_eq!(err.message, "Missing or invalid required argument: path");
        assert!(err.path.is_none());
    }

    #[test]
    fn files_take_an_encoding_and_refuse_bad_base64() {
        let call = parse_call(
            "write_file",
            r#"{"path": "b", "content": "AAEC\n/w==", "encoding": "base64"}"#,
        );
        assert_eq!(
            call.unwrap(),
            ToolCall::WriteFile {
                path: "b".into(),
                content: vec![0, 1, 2, 255]
            }
        );
        let err = parse_call(
            "write_file",
            r#"{"path": "b", "content": "!!", "encoding": "base64"}"#,
        )
        .unwrap_err();
        assert!(
            err.message.starts_with("Invalid base64 content"),
            "{}",
            err.message
        );
        assert_eq!(err.path.as_deref(), Some("b"));
        for (json, want) in [
            (r#"{"path": "b"}"#, Encoding::Utf8),
            (r#"{"path": "b", "encoding": null}"#, Encoding::Utf8),
            (r#"{"path": "b", "encoding": "UTF-8"}"#, Encoding::Utf8),
            (r#"{"path": "b", "encoding": "base64"}"#, Encoding::Base64),
        ] {
            assert_eq!(
                parse_call("read_file", json).unwrap(),
                ToolCall::ReadFile {
                    path: "b".into(),
                    encoding: want
                },
                "{json}"
            );
        }
        for bad in [r#""hex""#, "1"] {
            let json = format!(r#"{{"path": "b", "encoding": {bad}}}"#);
            let err = parse_call("read_file", &json).unwrap_err();
            assert_eq!(
                err.message,
                r#"Invalid encoding: expected "utf8" or "base64""#
            );
        }
    }

    #[test]
    fn list_depth_is_bounded() {
        match parse_call("list_files", r#"{"path": "/", "depth": 3}"#).unwrap() {
            ToolCall::ListFiles { depth, .. } => assert_eq!(depth, 3),
            other => panic!("{other:?}"),
        }
        for bad in ["0", "10000", "2.5", "-1", r#""3""#, "true"] {
            let json = format!(r#"{{"path": "/", "depth": {bad}}}"#);
            let err = parse_call("list_files", &json).unwrap_err();
            assert_eq!(
                err.message, "Invalid depth: expected an integer between 1 and 10",
                "{bad}"
            );
            assert_eq!(err.path.as_deref(), Some("/"));
        }
    }

    #[test]
    fn ports_follow_e2b_adk() {
        for bad in [r#""evil.example/#""#, "8000.0", "true", "0", "-1", "65536"] {
            let json = format!(r#"{{"command": "x", "port": {bad}}}"#);
            let err = parse_call("start_background_command", &json).unwrap_err();
            assert_eq!(err.message, INVALID_PORT, "{bad}");
            assert_eq!(err.command.as_deref(), Some("x"));
        }
        match parse_call(
            "start_background_command",
            r#"{"command": "x", "port": 8000}"#,
        )
        .unwrap()
        {
            ToolCall::StartBackground(a) => assert_eq!(a.port, Some(8000)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn defaults_and_normalization() {
        match parse_call(
            "run_code",
            r#"{"code": "1", "language": "Python", "timeout": 2.5}"#,
        )
        .unwrap()
        {
            ToolCall::RunCode(a) => {
                assert_eq!(a.language, "python");
                assert_eq!(a.timeout_ms, Some(2500));
            }
            other => panic!("{other:?}"),
        }
        match parse_call("run_code", r#"{"code": "1", "language": null}"#).unwrap() {
            ToolCall::RunCode(a) => assert_eq!(a.language, "python"),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            parse_call("list_files", "{}").unwrap(),
            ToolCall::ListFiles {
                path: ".".into(),
                depth: 1
            }
        );
        assert_eq!(
            parse_call("list_files", r#"{"path": ""}"#).unwrap(),
            ToolCall::ListFiles {
                path: ".".into(),
                depth: 1
            }
        );
        assert_eq!(
            parse_call("list_files", "").unwrap(),
            ToolCall::ListFiles {
                path: ".".into(),
                depth: 1
            }
        );
    }

    #[test]
    fn malformed_input_never_panics() {
        assert!(parse_call("run_code", "{not json")
            .unwrap_err()
            .message
            .starts_with("Invalid arguments"));
        assert!(parse_call("run_code", "[1,2]").is_err());
        assert!(parse_call("nope", "{}")
            .unwrap_err()
            .message
            .starts_with("Unknown tool: nope"));
        let err = parse_call("run_command", r#"{"command": "x", "envs": {"A": 1}}"#).unwrap_err();
        assert_eq!(err.command.as_deref(), Some("x"));
        assert!(parse_call("run_command", r#"{"command": "x", "timeout": -1}"#).is_err());
        assert!(parse_call("run_command", r#"{"command": "x", "timeout": "5"}"#).is_err());
        let huge = format!(r#"{{"code": "{}"}}"#, "x".repeat(1 << 20));
        assert!(parse_call("run_code", &huge).is_ok());
    }
}
