//! The tools as data: e2b-adk's descriptions (true of this component:
//! `start_background_command` says that it checks readiness), their arguments as
//! standard JSON Schema (usable by OpenAI, Anthropic, Gemini and MCP), and
//! the system-prompt fragment. The schemas are `src/schemas/<tool>.json`,
//! embedded as written. A session lists only the tools it enables.

use crate::args::{ToolName, ToolSet};
use crate::config::Settings;

/// One tool's description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolSpec {
    /// Name.
    pub name: &'static str,
    /// A short human title.
    pub title: &'static str,
    /// Description, e2b-adk's text where it is true of this component.
    pub description: &'static str,
    /// JSON Schema of the arguments object.
    pub parameters_schema: &'static str,
    /// JSON Schema of the result object (both its shapes).
    pub result_schema: &'static str,
    /// What calling it does to the sandbox and the world.
    pub hints: Hints,
}

/// Behaviour hints, as MCP's tool annotations carry them. Every tool acts
/// in the sandbox (creating it on first use); "read-only" means it changes
/// nothing there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hints {
    /// It changes nothing in the sandbox.
    pub read_only: bool,
    /// It may overwrite or delete (only meaningful when not read-only).
    pub destructive: bool,
    /// Repeating it with the same arguments has no further effect.
    pub idempotent: bool,
    /// It may reach beyond the sandbox (the internet, from code it runs).
    pub open_world: bool,
}

/// Runs arbitrary code: anything may happen, inside and out.
const RUNS_CODE: Hints = Hints {
    read_only: false,
    destructive: true,
    idempotent: false,
    open_world: true,
};

/// Only looks.
const READS: Hints = Hints {
    read_only: true,
    destructive: false,
    idempotent: true,
    open_world: false,
};

/// Every tool: e2b-adk's six in its order, then the opt-in ones, in
/// [`ToolName::ALL`]'s order.
pub const TOOLS: [ToolSpec; 8] = [
    ToolSpec {
        name: "run_code",
        title: "Run code",
        hints: RUNS_CODE,
        result_schema: include_str!("schemas/results/run_code.json"),
        description: "Execute a code snippet inside an isolated E2B sandbox and return its stdout, stderr, the last expression's value, and any runtime error. Use this to actually run and verify code rather than only reasoning about it. Defaults to Python.",
        parameters_schema: include_str!("schemas/run_code.json"),
    },
    ToolSpec {
        name: "run_command",
        title: "Run a shell command",
        hints: RUNS_CODE,
        result_schema: include_str!("schemas/results/run_command.json"),
        description: "Run a shell command inside an isolated E2B sandbox and return its stdout, stderr, and exit code. Use this for shell tasks such as installing packages or inspecting the filesystem. cwd and env vars do not persist between calls.",
        parameters_schema: include_str!("schemas/run_command.json"),
    },
    ToolSpec {
        name: "write_file",
        title: "Write a file",
        hints: Hints {
            read_only: false,
            destructive: true,
            idempotent: true,
            open_world: false,
        },
        result_schema: include_str!("schemas/results/write_file.json"),
        description: "Write a text file into an isolated E2B sandbox at the given path, creating or overwriting it. Use this to place source files, configs, or data into the sandbox before running them.",
        parameters_schema: include_str!("schemas/write_file.json"),
    },
    ToolSpec {
        name: "read_file",
        title: "Read a file",
        hints: READS,
        result_schema: include_str!("schemas/results/read_file.json"),
        description: "Read a text file from an isolated E2B sandbox at the given path and return its content. Use this to inspect files the sandbox produced or that you wrote earlier.",
        parameters_schema: include_str!("schemas/read_file.json"),
    },
    ToolSpec {
        name: "list_files",
        title: "List files",
        hints: READS,
        result_schema: include_str!("schemas/results/list_files.json"),
        description: "List the entries of a directory in an isolated E2B sandbox. Returns each child's name and type (file or dir). Defaults to the current directory. Use this to explore the sandbox filesystem.",
        parameters_schema: include_str!("schemas/list_files.json"),
    },
    ToolSpec {
        name: "start_background_command",
        title: "Start a background command",
        hints: RUNS_CODE,
        result_schema: include_str!("schemas/results/start_background_command.json"),
        description: "Start a long-running command (such as a web/dev server) inside an isolated E2B sandbox and return immediately with its process id. Provide a port to also get a preview URL for the exposed service; the call then waits (up to 10 seconds by default) until the port accepts connections and says whether the service is ready, not listening yet, or exited (with its output so far). Without a port it watches for a second for an early exit.",
        parameters_schema: include_str!("schemas/start_background_command.json"),
    },
    ToolSpec {
        name: "get_background_output",
        title: "Read a background command's output",
        hints: READS,
        result_schema: include_str!("schemas/results/get_background_output.json"),
        description: "Read what a process started with start_background_command has printed (stdout and stderr, each truncated like every output) and whether it is still running or has exited (with its exit_code). Pass the previous answer's next_since as since to get only the new output. Use this to check a server's log or a long job's progress.",
        parameters_schema: include_str!("schemas/get_background_output.json"),
    },
    ToolSpec {
        name: "stop_background_command",
        title: "Stop a background command",
        hints: Hints {
            read_only: false,
            destructive: true,
            idempotent: true,
            open_world: false,
        },
        result_schema: include_str!("schemas/results/stop_background_command.json"),
        description: "Stop a process started with start_background_command, and the processes it started: sends SIGTERM (or the given signal), then SIGKILL to whatever is left after 5 seconds, and returns its exit state. Its output stays readable with get_background_output.",
        parameters_schema: include_str!("schemas/stop_background_command.json"),
    },
];

/// The specs of the tools `enabled` offers, in catalog order.
pub fn enabled(enabled: ToolSet) -> impl Iterator<Item = &'static ToolSpec> {
    ToolName::ALL
        .into_iter()
        .zip(TOOLS.iter())
        .filter(move |(tool, _)| enabled.contains(*tool))
        .map(|(_, spec)| spec)
}

/// A short system-prompt fragment about the tools and the sandbox.
pub fn instructions(settings: &Settings) -> String {
    let enabled = settings.tools;
    let mut tools = Vec::new();
    for tool in enabled.tools() {
        tools.push(match tool {
            ToolName::RunCode => format!(
                "run_code (execute {} in a stateful kernel; returns stdout, stderr, the last \
expression's value as text, and any raised error)",
                or_list(&settings.run_code_languages())
            ),
            ToolName::RunCommand => {
                "run_command (bash -l -c; returns stdout, stderr, exit_code; default timeout 60 s)"
                    .into()
            }
            ToolName::WriteFile => "write_file (text, or base64 for binary files)".into(),
            ToolName::ReadFile => "read_file (text, or base64 for binary files)".into(),
            ToolName::ListFiles => "list_files (one directory level, or up to 10)".into(),
            ToolName::StartBackgroundCommand => "start_background_command (servers and other \
long-running processes; give a port to get a preview URL and a readiness check)"
                .into(),
            ToolName::GetBackgroundOutput => "get_background_output (what a background process \
printed, from an offset, and whether it still runs)"
                .into(),
            ToolName::StopBackgroundCommand => "stop_background_command (SIGTERM, then SIGKILL \
after 5 s)"
                .into(),
        });
    }
    format!(
        "You have tools that act in one isolated E2B cloud sandbox (a Linux VM, template \
`{template}`), created on first use and kept for this whole session: files, installed \
packages and run_code variables persist across calls (run_command's cwd and env vars do not). \
The home and default working directory is /home/user; relative paths resolve against it. \
Tools: {tools}. Every result has `success`; `success: true` means the tool \
ran, so check `exit_code` and `error` too. Output fields are truncated to {limit} bytes with a \
`…[truncated N bytes]` marker: print summaries rather than huge outputs. The sandbox stops \
{ttl} seconds after the last activity.",
        template = settings.template,
        tools = joined(&tools, "and"),
        limit = settings.max_output_bytes,
        ttl = settings.ttl_seconds(),
    )
}

/// `a, b or c`.
fn or_list(items: &[&str]) -> String {
    joined(items, "or")
}

/// `a, b <word> c`.
fn joined<S: AsRef<str>>(items: &[S], word: &str) -> String {
    let items: Vec<&str> = items.iter().map(AsRef::as_ref).collect();
    match &items[..] {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} {word} {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instructions_list_the_languages_the_backend_has() {
        let e2b = Settings::from_env(|_| None);
        assert!(instructions(&e2b).contains("python, javascript, typescript, r, java or bash"));
        let local = Settings::from_env(|name| {
            (name == "E2B_TOOLS_LANGUAGES").then(|| "python, JavaScript,bash".to_string())
        });
        assert!(instructions(&local).contains("execute python, javascript or bash in"));
        assert!(local.check_language("bash").is_ok());
        let err = local.check_language("r").unwrap_err();
        assert_eq!(err.kind, crate::errors::ErrorKind::InvalidArgument);
        assert!(
            err.message.contains("'r' is not available on this backend"),
            "{}",
            err.message
        );
        assert!(e2b.check_language("r").is_ok());
    }

    #[test]
    fn descriptions_say_what_this_component_does() {
        let background = TOOLS
            .iter()
            .find(|t| t.name == "start_background_command")
            .unwrap();
        // e2b-adk's says readiness is not verified; here it is probed.
        assert!(!background.description.contains("not verified"));
        assert!(background
            .description
            .contains("until the port accepts connections"));
    }

    #[test]
    fn schemas_are_valid_json_schema_objects() {
        for spec in TOOLS {
            let schema: serde_json::Value = serde_json::from_str(spec.parameters_schema).unwrap();
            assert_eq!(schema["type"], "object", "{}", spec.name);
            let props = schema["properties"].as_object().unwrap();
            for required in schema["required"].as_array().unwrap() {
                assert!(props.contains_key(required.as_str().unwrap()));
            }
            for (name, prop) in props {
                assert!(prop["description"].is_string(), "{}.{name}", spec.name);
            }
        }
        let names: Vec<_> = TOOLS.iter().map(|t| t.name).collect();
        assert_eq!(names, crate::args::TOOL_NAMES);
        // The default catalog is e2b-adk's six, in its order.
        let default: Vec<_> = enabled(ToolSet::DEFAULT).map(|t| t.name).collect();
        assert_eq!(
            default,
            [
                "run_code",
                "run_command",
                "write_file",
                "read_file",
                "list_files",
                "start_background_command"
            ]
        );
    }

    #[test]
    fn instructions_name_only_the_enabled_tools() {
        let only = |tools: &str| {
            Settings::from_env(|name| (name == crate::config::TOOLS_VAR).then(|| tools.to_string()))
        };
        let default = instructions(&Settings::from_env(|_| None));
        assert!(!default.contains("get_background_output"), "{default}");
        let all = instructions(&only("all"));
        assert!(
            all.contains("get_background_output (what a background"),
            "{all}"
        );
        assert!(
            all.contains("and stop_background_command (SIGTERM"),
            "{all}"
        );
        let reader = instructions(&only("read_file,list_files"));
        assert!(
            reader.contains("Tools: read_file (text, or base64 for binary files) and list_files"),
            "{reader}"
        );
        assert!(!reader.contains("run_command ("), "{reader}");
    }

    #[test]
    fn instructions_mention_the_sandbox() {
        let s = Settings::from_env(|_| None);
        let text = instructions(&s);
        assert!(text.contains("/home/user"));
        assert!(text.contains("code-interpreter-v1"));
        assert!(text.contains("10000 bytes"));
    }

    /// Every shape a result dict takes matches its tool's result schema,
    /// and the schema is strict enough to refuse a dict of another tool.
    #[test]
    fn every_result_dict_matches_its_result_schema() {
        use crate::args::{Encoding, Offsets, StopSignal};
        use crate::background::{ProcessOutput, ProcessState, StoppedProcess};
        use crate::envd::{EntryKind, ListedEntry};
        use crate::interpreter::{Execution, RichResult};
        use crate::results::*;
        let listed = |with_paths, omitted| ToolOutput::Listed {
            path: ".".into(),
            entries: vec![ListedEntry {
                name: "a".into(),
                path: "/home/user/a".into(),
                kind: EntryKind::Dir,
            }],
            with_paths,
            omitted,
        };
        let background = |readiness, exit_code| {
            ToolOutput::Background(BackgroundOutput {
                command: "serve".into(),
                pid: 3,
                preview_url: Some("https://8000-sbx.e2b.app".into()),
                readiness,
                exit_code,
                stdout: "o".into(),
                stderr: "e".into(),
            })
        };
        let outputs = [
            (
                "run_code",
                ToolOutput::Code(Execution {
                    stdout: "1".into(),
                    stderr: String::new(),
                    text: "2".into(),
                    error: String::new(),
                    rich: vec![RichResult {
                        mime_type: "image/png".into(),
                        data: "AA==".into(),
                        is_main_result: true,
                    }],
                }),
            ),
            (
                "run_command",
                ToolOutput::Command(CommandOutput {
                    command: "ls".into(),
                    stdout: String::new(),
                    stderr: String::new(),
                    exit_code: 2,
                }),
            ),
            ("write_file", ToolOutput::Written { path: "a".into() }),
            (
                "read_file",
                ToolOutput::Read {
                    path: "a".into(),
                    content: "AA==".into(),
                    encoding: Encoding::Base64,
                    invalid_utf8: false,
                },
            ),
            (
                "read_file",
                ToolOutput::Read {
                    path: "a".into(),
                    content: "\u{FFFD}".into(),
                    encoding: Encoding::Utf8,
                    invalid_utf8: true,
                },
            ),
            ("list_files", listed(false, 0)),
            ("list_files", listed(true, 5)),
            ("start_background_command", background(None, None)),
            (
                "start_background_command",
                background(Some(Readiness::Ready), None),
            ),
            (
                "start_background_command",
                background(Some(Readiness::Exited), Some(1)),
            ),
            (
                "get_background_output",
                ToolOutput::ProcessOutput(ProcessOutput {
                    pid: 3,
                    state: ProcessState::Exited,
                    exit_code: None,
                    stdout: "x".into(),
                    stderr: String::new(),
                    next_since: Offsets {
                        stdout: 1,
                        stderr: 0,
                    },
                }),
            ),
            (
                "stop_background_command",
                ToolOutput::Stopped(StoppedProcess {
                    pid: 3,
                    exit_code: Some(-1),
                    signal: Some(StopSignal::Kill),
                }),
            ),
        ];
        let validator = |tool: &str| {
            let spec = TOOLS.iter().find(|t| t.name == tool).unwrap();
            let schema: serde_json::Value = serde_json::from_str(spec.result_schema).unwrap();
            jsonschema::validator_for(&schema).unwrap()
        };
        for (tool, output) in &outputs {
            for rich in [false, true] {
                let dict: serde_json::Value =
                    serde_json::from_str(&success_json(output, rich)).unwrap();
                let v = validator(tool);
                assert!(v.is_valid(&dict), "{tool}: {dict} {:?}", v.validate(&dict));
            }
        }
        let failure = crate::errors::ToolError::invalid("no").with_path("a");
        let dict: serde_json::Value = serde_json::from_str(&failure_json(&failure)).unwrap();
        for spec in TOOLS {
            assert!(validator(spec.name).is_valid(&dict), "{}", spec.name);
        }
        // A run_command dict is not a get_background_output one.
        let dict: serde_json::Value =
            serde_json::from_str(&success_json(&outputs[1].1, false)).unwrap();
        assert!(!validator("get_background_output").is_valid(&dict));
    }

    /// The schemas models see and the parser that checks their calls agree
    /// on what is valid (cases on both sides of every rule the schemas state).
    #[test]
    fn every_schema_agrees_with_the_argument_parser() {
        let cases: &[(&str, &str, bool)] = &[
            ("run_code", r#"{"code": "1"}"#, true),
            (
                "run_code",
                r#"{"code": "1", "language": "javascript", "envs": {"A": "b"}, "timeout": 5}"#,
                true,
            ),
            ("run_code", r#"{}"#, false),
            ("run_code", r#"{"code": 1}"#, false),
            ("run_code", r#"{"code": "1", "envs": {"A": 1}}"#, false),
            (
                "run_command",
                r#"{"command": "ls", "cwd": "/tmp", "timeout": 3}"#,
                true,
            ),
            ("run_command", r#"{"cwd": "/tmp"}"#, false),
            (
                "run_command",
                r#"{"command": "ls", "envs": {"A": 1}}"#,
                false,
            ),
            ("write_file", r#"{"path": "a", "content": ""}"#, true),
            ("write_file", r#"{"path": "a"}"#, false),
            ("write_file", r#"{"content": "x"}"#, false),
            ("read_file", r#"{"path": "a"}"#, true),
            ("read_file", r#"{}"#, false),
            ("list_files", r#"{}"#, true),
            ("list_files", r#"{"path": "/tmp"}"#, true),
            ("start_background_command", r#"{"command": "x"}"#, true),
            (
                "start_background_command",
                r#"{"command": "x", "port": 8080, "timeout": 0}"#,
                true,
            ),
            (
                "start_background_command",
                r#"{"command": "x", "port": 0}"#,
                false,
            ),
            (
                "start_background_command",
                r#"{"command": "x", "port": 70000}"#,
                false,
            ),
            ("start_background_command", r#"{"port": 80}"#, false),
            ("get_background_output", r#"{"pid": 3}"#, true),
            (
                "get_background_output",
                r#"{"pid": 3, "since": {"stdout": 5, "stderr": 0}}"#,
                true,
            ),
            ("get_background_output", r#"{}"#, false),
            ("get_background_output", r#"{"pid": 0}"#, false),
            (
                "get_background_output",
                r#"{"pid": 3, "since": {"stdout": -1}}"#,
                false,
            ),
            (
                "get_background_output",
                r#"{"pid": 3, "since": {"lines": 1}}"#,
                false,
            ),
            ("stop_background_command", r#"{"pid": 3}"#, true),
            (
                "stop_background_command",
                r#"{"pid": 3, "signal": "SIGKILL"}"#,
                true,
            ),
            (
                "stop_background_command",
                r#"{"pid": 3, "signal": "SIGUSR1"}"#,
                false,
            ),
            ("stop_background_command", r#"{"signal": "SIGTERM"}"#, false),
        ];
        for (tool, args, valid) in cases {
            let spec = TOOLS.iter().find(|t| t.name == *tool).unwrap();
            let schema: serde_json::Value = serde_json::from_str(spec.parameters_schema).unwrap();
            let validator = jsonschema::validator_for(&schema).unwrap();
            let instance: serde_json::Value = serde_json::from_str(args).unwrap();
            assert_eq!(
                validator.is_valid(&instance),
                *valid,
                "schema of {tool} on {args}"
            );
            let parsed = crate::args::parse_call(tool, args);
            assert_eq!(
                parsed.is_ok(),
                *valid,
                "parser on {tool} {args}: {parsed:?}"
            );
        }
    }
}
