//! envd's `process.Process` service messages (proto3 JSON).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::proto_json::{is_default, opt_bytes};

/// Path of the Start RPC (server-streaming).
pub const START_PATH: &str = "/process.Process/Start";
/// Path of the Connect RPC (server-streaming).
pub const CONNECT_PATH: &str = "/process.Process/Connect";
/// Path of the List RPC.
pub const LIST_PATH: &str = "/process.Process/List";
/// Path of the SendInput RPC.
pub const SEND_INPUT_PATH: &str = "/process.Process/SendInput";
/// Path of the SendSignal RPC.
pub const SEND_SIGNAL_PATH: &str = "/process.Process/SendSignal";
/// Path of the CloseStdin RPC.
pub const CLOSE_STDIN_PATH: &str = "/process.Process/CloseStdin";

/// What to run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessConfig {
    /// The executable.
    pub cmd: String,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Extra environment variables.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub envs: BTreeMap<String, String>,
    /// Working directory (relative paths resolve against the home directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

/// `StartRequest`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StartRequest {
    /// The process to start.
    pub process: ProcessConfig,
    /// A PTY (unused by the tools; accepted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pty: Option<serde_json::Value>,
    /// A tag to find the process by later.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// Keep stdin open (closed otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin: Option<bool>,
}

/// Selects a process by pid or tag.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ProcessSelector {
    /// By process id.
    Pid(u32),
    /// By tag.
    Tag(String),
}

/// `ConnectRequest` and the selector-only requests (`CloseStdin`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SelectRequest {
    /// The process.
    pub process: ProcessSelector,
}

/// `SendSignalRequest`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendSignalRequest {
    /// The process.
    pub process: ProcessSelector,
    /// The signal, by enum name.
    pub signal: Signal,
}

/// Signals envd can send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub enum Signal {
    #[serde(rename = "SIGNAL_UNSPECIFIED")]
    Unspecified,
    #[serde(rename = "SIGNAL_SIGTERM")]
    Sigterm,
    #[serde(rename = "SIGNAL_SIGKILL")]
    Sigkill,
}

/// `ProcessInput`: one of stdin or pty bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessInput {
    /// Bytes for stdin.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_bytes")]
    pub stdin: Option<Vec<u8>>,
    /// Bytes for the PTY.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_bytes")]
    pub pty: Option<Vec<u8>>,
}

/// `SendInputRequest`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendInputRequest {
    /// The process.
    pub process: ProcessSelector,
    /// The input.
    pub input: ProcessInput,
}

/// One running process in a `List` answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessInfo {
    /// How it was started.
    pub config: ProcessConfig,
    /// Its pid.
    pub pid: u32,
    /// Its tag, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
}

/// `ListResponse`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ListResponse {
    /// The running processes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub processes: Vec<ProcessInfo>,
}

/// `StartResponse` / `ConnectResponse`: one event of the stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessEventMessage {
    /// The event.
    pub event: ProcessEvent,
}

/// The `oneof event` of `ProcessEvent`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ProcessEvent {
    /// The process started.
    Start(StartEvent),
    /// Output.
    Data(DataEvent),
    /// The process ended.
    End(EndEvent),
    /// Nothing happened for a keepalive interval.
    Keepalive(KeepAlive),
}

/// `StartEvent`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StartEvent {
    /// The process id (omitted when 0, as proto3 does).
    #[serde(default, skip_serializing_if = "is_default")]
    pub pid: u32,
}

/// `DataEvent`: one chunk of stdout, stderr or PTY output.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataEvent {
    /// stdout bytes.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_bytes")]
    pub stdout: Option<Vec<u8>>,
    /// stderr bytes.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_bytes")]
    pub stderr: Option<Vec<u8>>,
    /// PTY bytes.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_bytes")]
    pub pty: Option<Vec<u8>>,
}

/// `EndEvent`, zero values omitted: a clean exit is
/// `{"exited":true,"status":"exit status 0"}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndEvent {
    /// Exit code; -1 when killed by a signal.
    #[serde(default, skip_serializing_if = "is_default")]
    pub exit_code: i32,
    /// Whether the process exited on its own (false when signalled).
    #[serde(default, skip_serializing_if = "is_default")]
    pub exited: bool,
    /// Go's `ProcessState` text, e.g. `exit status 2`, `signal: killed`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub status: String,
    /// Set on failure, e.g. `exit status 2`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `KeepAlive` (empty).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeepAlive {}

/// The exact `end` event envd sends for a process that finished with
/// `exit_code`, or was killed by signal (`exit_code: None`, `signal` name).
pub fn end_event(exit_code: Option<i32>, signal: Option<&str>) -> EndEvent {
    match (exit_code, signal) {
        (Some(0), _) => EndEvent {
            exited: true,
            status: "exit status 0".into(),
            ..Default::default()
        },
        (Some(code), _) => EndEvent {
            exit_code: code,
            exited: true,
            status: format!("exit status {code}"),
            error: Some(format!("exit status {code}")),
        },
        (None, sig) => {
            let status = format!("signal: {}", sig.unwrap_or("killed"));
            EndEvent {
                exit_code: -1,
                exited: false,
                status: status.clone(),
                error: Some(status),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_request_matches_captured_sdk_body() {
        let captured = r#"{"process":{"cmd":"/bin/bash","args":["-l","-c","echo hello"],"envs":{"E":"1"},"cwd":"/tmp"},"stdin":false}"#;
        let req: StartRequest = serde_json::from_str(captured).unwrap();
        assert_eq!(req.process.args[2], "echo hello");
        assert_eq!(serde_json::to_string(&req).unwrap(), captured);
    }

    #[test]
    fn events_in_proto3_json() {
        let data = ProcessEventMessage {
            event: ProcessEvent::Data(DataEvent {
                stdout: Some(b"hi\n".to_vec()),
                ..Default::default()
            }),
        };
        assert_eq!(
            serde_json::to_string(&data).unwrap(),
            r#"{"event":{"data":{"stdout":"aGkK"}}}"#
        );
        let ok = ProcessEventMessage {
            event: ProcessEvent::End(end_event(Some(0), None)),
        };
        assert_eq!(
            serde_json::to_string(&ok).unwrap(),
            r#"{"event":{"end":{"exited":true,"status":"exit status 0"}}}"#
        );
        let two = serde_json::to_string(&end_event(Some(2), None)).unwrap();
        assert_eq!(
            two,
            r#"{"exitCode":2,"exited":true,"status":"exit status 2","error":"exit status 2"}"#
        );
        let killed = serde_json::to_string(&end_event(None, Some("killed"))).unwrap();
        assert_eq!(
            killed,
            r#"{"exitCode":-1,"status":"signal: killed","error":"signal: killed"}"#
        );
        let ka: ProcessEventMessage =
            serde_json::from_str(r#"{"event":{"keepalive":{}}}"#).unwrap();
        assert_eq!(ka.event, ProcessEvent::Keepalive(KeepAlive {}));
    }

    #[test]
    fn selectors_and_signals() {
        let req = SendSignalRequest {
            process: ProcessSelector::Pid(7),
            signal: Signal::Sigkill,
        };
        assert_eq!(
            serde_json::to_string(&req).unwrap(),
            r#"{"process":{"pid":7},"signal":"SIGNAL_SIGKILL"}"#
        );
        let input: SendInputRequest =
            serde_json::from_str(r#"{"process":{"pid":7},"input":{"stdin":"aGkK"}}"#).unwrap();
        assert_eq!(input.input.stdin.as_deref(), Some(&b"hi\n"[..]));
    }
}
