//! What the tools return, and its shaping into e2b-adk's result dicts:
//! tool fields in e2b-adk's order with `success: true` last, or
//! `{"success": false, "error", "partial_output", "path"?, "command"?}`.

use serde_json::Value;

use crate::args::Encoding;
use crate::background::{ProcessOutput, StoppedProcess};
use crate::envd::ListedEntry;
use crate::errors::ToolError;
use crate::interpreter::Execution;

/// What `run_command` produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandOutput {
    /// The command, echoed.
    pub command: String,
    /// stdout, truncated.
    pub stdout: String,
    /// stderr, truncated.
    pub stderr: String,
    /// Exit code (-1 when killed by a signal).
    pub exit_code: i32,
}

/// Readiness of a background process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    /// The port accepts connections.
    Ready,
    /// The process exited during the wait.
    Exited,
    /// The port did not accept connections in time.
    NotListening,
}

impl Readiness {
    /// The JSON string.
    pub fn as_str(self) -> &'static str {
        match self {
            Readiness::Ready => "ready",
            Readiness::Exited => "exited",
            Readiness::NotListening => "not-listening",
        }
    }
}

/// A started background process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackgroundOutput {
    /// The command, echoed.
    pub command: String,
    /// Its pid.
    pub pid: u32,
    /// Preview URL when a port was given.
    pub preview_url: Option<String>,
    /// Readiness (always with a port; `Exited` without one if it died).
    pub readiness: Option<Readiness>,
    /// Exit code when it exited.
    pub exit_code: Option<i32>,
    /// Output captured while waiting, truncated.
    pub stdout: String,
    /// Error output captured while waiting, truncated.
    pub stderr: String,
}

/// A successful tool call's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolOutput {
    /// `run_code`.
    Code(Execution),
    /// `run_command`.
    Command(CommandOutput),
    /// `write_file`.
    Written {
        /// The requested path.
        path: String,
    },
    /// `read_file`.
    Read {
        /// The requested path.
        path: String,
        /// The content, truncated: text, or base64.
        content: String,
        /// How `content` is encoded.
        encoding: Encoding,
        /// The file is not valid UTF-8 (read as text, it holds U+FFFD):
        /// read it as base64 to get its bytes.
        invalid_utf8: bool,
    },
    /// `list_files`.
    Listed {
        /// The requested path.
        path: String,
        /// Its entries, at most [`MAX_LIST_ENTRIES`](crate::envd::MAX_LIST_ENTRIES).
        entries: Vec<ListedEntry>,
        /// Whether entries carry their `path` (a listing deeper than 1).
        with_paths: bool,
        /// How many entries were left out past the bound.
        omitted: usize,
    },
    /// `start_background_command`.
    Background(BackgroundOutput),
    /// `get_background_output`.
    ProcessOutput(ProcessOutput),
    /// `stop_background_command`.
    Stopped(StoppedProcess),
}

/// A JSON object that keeps its keys in insertion order (serde_json's map
/// sorts them unless a crate-wide feature is switched on).
#[derive(Debug, Default)]
pub struct OrderedObject(Vec<(&'static str, Value)>);

impl OrderedObject {
    /// Appends a key.
    pub fn put(mut self, key: &'static str, value: impl Into<Value>) -> Self {
        self.0.push((key, value.into()));
        self
    }

    /// The compact JSON text.
    pub fn to_json(&self) -> String {
        let mut out = String::from("{");
        for (i, (key, value)) in self.0.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&Value::from(*key).to_string());
            out.push(':');
            out.push_str(&value.to_string());
        }
        out.push('}');
        out
    }
}

/// e2b-adk's success dict for `output`; `rich` adds run_code's `results`.
pub fn success_json(output: &ToolOutput, rich: bool) -> String {
    success_object(output, rich).put("success", true).to_json()
}

/// [`success_json`]'s keys before `success`, for callers that add some.
pub fn success_object(output: &ToolOutput, rich: bool) -> OrderedObject {
    let obj = OrderedObject::default();
    match output {
        ToolOutput::Code(ex) => {
            let mut obj = obj
                .put("stdout", ex.stdout.as_str())
                .put("stderr", ex.stderr.as_str())
                .put("text", ex.text.as_str())
                .put("error", ex.error.as_str());
            if rich {
                let results: Vec<Value> = ex
                    .rich
                    .iter()
                    .map(|r| {
                        serde_json::json!({
                            "mime_type": r.mime_type,
                            "data": r.data,
                            "is_main_result": r.is_main_result,
                        })
                    })
                    .collect();
                obj = obj.put("results", results);
            }
            obj
        }
        ToolOutput::Command(c) => obj
            .put("command", c.command.as_str())
            .put("stdout", c.stdout.as_str())
            .put("stderr", c.stderr.as_str())
            .put("exit_code", c.exit_code),
        ToolOutput::Written { path } => obj.put("path", path.as_str()),
        ToolOutput::Read {
            path,
            content,
            encoding,
            invalid_utf8,
        } => {
            // e2b-adk's dict, plus a key only where it says something new.
            let mut obj = obj
                .put("path", path.as_str())
                .put("content", content.as_str());
            if *encoding == Encoding::Base64 {
                obj = obj.put("encoding", encoding.as_str());
            }
            if *invalid_utf8 {
                obj = obj.put("invalid_utf8", true);
            }
            obj
        }
        ToolOutput::Listed {
            path,
            entries,
            with_paths,
            omitted,
        } => {
            let entries: Vec<Value> = entries
                .iter()
                .map(|e| {
                    let mut entry = serde_json::json!({"name": e.name, "type": e.kind.as_str()});
                    if *with_paths {
                        entry["path"] = e.path.clone().into();
                    }
                    entry
                })
                .collect();
            let obj = obj.put("path", path.as_str()).put("entries", entries);
            if *omitted > 0 {
                obj.put("omitted_entries", *omitted)
            } else {
                obj
            }
        }
        ToolOutput::Background(b) => {
            let mut obj = obj
                .put("command", b.command.as_str())
                .put("pid", b.pid)
                .put("preview_url", b.preview_url.clone());
            if let Some(readiness) = b.readiness {
                obj = obj.put("readiness", readiness.as_str());
                if readiness == Readiness::Exited {
                    obj = obj.put("exit_code", b.exit_code);
                }
                if readiness != Readiness::Ready {
                    obj = obj
                        .put("stdout", b.stdout.as_str())
                        .put("stderr", b.stderr.as_str());
                }
            }
            obj
        }
        ToolOutput::ProcessOutput(p) => obj
            .put("pid", p.pid)
            .put("state", p.state.as_str())
            .put("exit_code", p.exit_code)
            .put("stdout", p.stdout.as_str())
            .put("stderr", p.stderr.as_str())
            // Keys in sorted order: the same text whether serde_json
            // preserves insertion order (a feature another crate may turn
            // on) or sorts.
            .put(
                "next_since",
                serde_json::json!({"stderr": p.next_since.stderr, "stdout": p.next_since.stdout}),
            ),
        ToolOutput::Stopped(s) => obj
            .put("pid", s.pid)
            .put("state", "exited")
            .put("exit_code", s.exit_code)
            .put("signal", s.signal.map(|s| s.as_str())),
    }
}

/// e2b-adk's failure dict.
pub fn failure_json(err: &ToolError) -> String {
    failure_object(err).to_json()
}

/// [`failure_json`]'s object, for callers that add keys.
pub fn failure_object(err: &ToolError) -> OrderedObject {
    let mut obj = OrderedObject::default()
        .put("success", false)
        .put("error", err.message.as_str())
        .put("partial_output", err.partial_output.as_str());
    if let Some(path) = &err.path {
        obj = obj.put("path", path.as_str());
    }
    if let Some(command) = &err.command {
        obj = obj.put("command", command.as_str());
    }
    obj
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envd::EntryKind;

    #[test]
    fn success_dicts_match_appendix_b() {
        let code = ToolOutput::Code(Execution {
            stdout: "stdout works\n".into(),
            text: "42".into(),
            ..Default::default()
        });
        assert_eq!(
            success_json(&code, false),
            r#"{"stdout":"stdout works\n","stderr":"","text":"42","error":"","success":true}"#
        );
        assert_eq!(
            success_json(&code, true),
            r#"{"stdout":"stdout works\n","stderr":"","text":"42","error":"","results":[],"success":true}"#
        );
        let cmd = ToolOutput::Command(CommandOutput {
            command: "fail now".into(),
            stdout: String::new(),
            stderr: "boom\n".into(),
            exit_code: 2,
        });
        assert_eq!(
            success_json(&cmd, false),
            r#"{"command":"fail now","stdout":"","stderr":"boom\n","exit_code":2,"success":true}"#
        );
        let read = ToolOutput::Read {
            path: "/tmp/a.txt".into(),
            content: "héllo".into(),
            encoding: Encoding::Utf8,
            invalid_utf8: false,
        };
        assert_eq!(
            success_json(&read, false),
            r#"{"path":"/tmp/a.txt","content":"héllo","success":true}"#
        );
        let binary = ToolOutput::Read {
            path: "b".into(),
            content: "AP8=".into(),
            encoding: Encoding::Base64,
            invalid_utf8: false,
        };
        assert_eq!(
            success_json(&binary, false),
            r#"{"path":"b","content":"AP8=","encoding":"base64","success":true}"#
        );
        let garbled = ToolOutput::Read {
            path: "b".into(),
            content: "\u{FFFD}".into(),
            encoding: Encoding::Utf8,
            invalid_utf8: true,
        };
        assert!(success_json(&garbled, false).contains(r#""invalid_utf8":true,"success":true"#));
        let listed = ToolOutput::Listed {
            path: "/tmp".into(),
            entries: vec![
                ListedEntry {
                    name: "a.txt".into(),
                    kind: EntryKind::File,
                    path: "/tmp/a.txt".into(),
                },
                ListedEntry {
                    name: "d".into(),
                    kind: EntryKind::Dir,
                    path: "/tmp/d".into(),
                },
            ],
            with_paths: false,
            omitted: 0,
        };
        assert_eq!(
            success_json(&listed, false),
            r#"{"path":"/tmp","entries":[{"name":"a.txt","type":"file"},{"name":"d","type":"dir"}],"success":true}"#
        );
        assert_eq!(
            success_json(
                &ToolOutput::Written {
                    path: "/tmp/a.txt".into()
                },
                false
            ),
            r#"{"path":"/tmp/a.txt","success":true}"#
        );
    }

    #[test]
    fn background_control_dicts() {
        use crate::args::{Offsets, StopSignal};
        use crate::background::ProcessState;
        let out = ToolOutput::ProcessOutput(ProcessOutput {
            pid: 4,
            state: ProcessState::Running,
            exit_code: None,
            stdout: "GET /\n".into(),
            stderr: String::new(),
            next_since: Offsets {
                stdout: 6,
                stderr: 0,
            },
        });
        assert_eq!(
            success_json(&out, false),
            r#"{"pid":4,"state":"running","exit_code":null,"stdout":"GET /\n","stderr":"","next_since":{"stderr":0,"stdout":6},"success":true}"#
        );
        let stopped = ToolOutput::Stopped(StoppedProcess {
            pid: 4,
            exit_code: Some(-1),
            signal: Some(StopSignal::Term),
        });
        assert_eq!(
            success_json(&stopped, false),
            r#"{"pid":4,"state":"exited","exit_code":-1,"signal":"SIGTERM","success":true}"#
        );
    }

    #[test]
    fn background_dicts() {
        let mut b = BackgroundOutput {
            command: "srv".into(),
            pid: 4321,
            preview_url: None,
            readiness: None,
            exit_code: None,
            stdout: String::new(),
            stderr: String::new(),
        };
        assert_eq!(
            success_json(&ToolOutput::Background(b.clone()), false),
            r#"{"command":"srv","pid":4321,"preview_url":null,"success":true}"#
        );
        b.preview_url = Some("https://8000-isbx123.e2b.app".into());
        b.readiness = Some(Readiness::Ready);
        assert_eq!(
            success_json(&ToolOutput::Background(b.clone()), false),
            r#"{"command":"srv","pid":4321,"preview_url":"https://8000-isbx123.e2b.app","readiness":"ready","success":true}"#
        );
        b.readiness = Some(Readiness::Exited);
        b.exit_code = Some(127);
        b.stderr = "srv: command not found\n".into();
        assert_eq!(
            success_json(&ToolOutput::Background(b), false),
            r#"{"command":"srv","pid":4321,"preview_url":"https://8000-isbx123.e2b.app","readiness":"exited","exit_code":127,"stdout":"","stderr":"srv: command not found\n","success":true}"#
        );
    }

    #[test]
    fn failure_dicts_match_appendix_b() {
        let err = ToolError::invalid("Missing or invalid required argument: code");
        assert_eq!(
            failure_json(&err),
            r#"{"success":false,"error":"Missing or invalid required argument: code","partial_output":""}"#
        );
        let err = ToolError::invalid("Failed to read file: path '/tmp/missing.txt' does not exist")
            .with_path("/tmp/missing.txt");
        assert_eq!(
            failure_json(&err),
            r#"{"success":false,"error":"Failed to read file: path '/tmp/missing.txt' does not exist","partial_output":"","path":"/tmp/missing.txt"}"#
        );
        let err = ToolError::invalid("x")
            .with_command("sleep 10")
            .with_partial_output("tick\n".into());
        assert_eq!(
            failure_json(&err),
            r#"{"success":false,"error":"x","partial_output":"tick\n","command":"sleep 10"}"#
        );
    }
}
