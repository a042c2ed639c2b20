//! The background tools: `start_background_command` ([`start`]) and, when
//! enabled, `get_background_output` ([`output`]) and
//! `stop_background_command` ([`stop`]), which read and stop what the
//! start left running through scripts run in the sandbox ([`script`]).
//! Here: the arguments they share.

use serde_json::{Map, Value};

use super::args::missing;
use crate::errors::ToolError;

pub mod output;
pub mod script;
pub mod start;
pub mod stop;

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
pub(crate) fn since(args: &Map<String, Value>) -> Result<Offsets, ToolError> {
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
pub(crate) fn stop_signal(args: &Map<String, Value>) -> Result<StopSignal, ToolError> {
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
pub(crate) fn pid(args: &Map<String, Value>) -> Result<u32, ToolError> {
    match args.get("pid") {
        Some(Value::Number(n)) => n
            .as_u64()
            .and_then(|p| u32::try_from(p).ok())
            .filter(|p| *p > 0)
            .ok_or_else(|| ToolError::invalid(INVALID_PID)),
        _ => Err(missing("pid")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errors::ErrorKind;
    use crate::tools::{parse_call, ToolCall};

    #[test]
    fn background_control_arguments_are_checked() {
        const GET: &str = "get_background_output";
        const STOP: &str = "stop_background_command";
        let call = parse_call(
            "get_background_output",
            r#"{"pid": 7, "since": {"stdout": 10}}"#,
        )
        .unwrap();
        assert_eq!(
            call,
            ToolCall::GetBackgroundOutput(crate::tools::background::output::OutputArgs {
                pid: 7,
                since: Offsets {
                    stdout: 10,
                    stderr: 0
                }
            })
        );
        let call = parse_call("stop_background_command", r#"{"pid": 7, "signal": "int"}"#);
        assert_eq!(
            call.unwrap(),
            ToolCall::StopBackgroundCommand(crate::tools::background::stop::StopArgs {
                pid: 7,
                signal: StopSignal::Int
            })
        );
        for (tool, args, message) in [
            (GET, r#"{}"#, "Missing or invalid required argument: pid"),
            (GET, r#"{"pid": 0}"#, INVALID_PID),
            (GET, r#"{"pid": -3}"#, INVALID_PID),
            (GET, r#"{"pid": 1.5}"#, INVALID_PID),
            (
                GET,
                r#"{"pid": "7"}"#,
                "Missing or invalid required argument: pid",
            ),
            (
                GET,
                r#"{"pid": 7, "since": {"stdout": -1}}"#,
                "Invalid since",
            ),
            (GET, r#"{"pid": 7, "since": 5}"#, "Invalid since"),
            (GET, r#"{"pid": 7, "since": {"out": 5}}"#, "Invalid since"),
            (
                STOP,
                r#"{"pid": 7, "signal": "SIGUSR1"}"#,
                "Invalid signal: expected SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGKILL",
            ),
            (STOP, r#"{"pid": 7, "signal": 9}"#, "Invalid signal"),
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
}
