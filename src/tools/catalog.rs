//! The catalog, derived from the tools' specs ([`ALL`]): the specs a
//! session lists, and the system-prompt fragment that describes them and
//! the sandbox. The schemas are `src/schemas/<tool>.json`, embedded as
//! written by each tool's spec. A session lists only the tools it enables.

use super::spec::LANGUAGES;
use super::{ToolSet, ToolSpec, ALL};
use crate::config::Settings;

/// The specs of the tools `enabled` offers, in catalog order.
pub fn enabled(enabled: ToolSet) -> impl Iterator<Item = &'static ToolSpec> {
    ALL.into_iter()
        .filter(move |spec| enabled.contains(spec.tool))
}

/// What `sandbox_id` is, where tools take it.
const SANDBOX_ID: &str = "Optional: the id of a fork (from fork_sandbox) to act in that fork; leave it out for this session's own sandbox.";

/// The parameters schema of `spec` as a session offering `enabled` lists
/// it: with a `sandbox_id` argument when the session can have forks.
pub fn parameters_schema(spec: &ToolSpec, enabled: ToolSet) -> String {
    if !enabled.addresses_sandboxes() {
        return spec.parameters_schema.to_string();
    }
    let mut schema: serde_json::Value = match serde_json::from_str(spec.parameters_schema) {
        Ok(schema) => schema,
        Err(_) => return spec.parameters_schema.to_string(),
    };
    if let Some(properties) = schema
        .get_mut("properties")
        .and_then(serde_json::Value::as_object_mut)
    {
        properties.insert(
            "sandbox_id".into(),
            serde_json::json!({"type": "string", "description": SANDBOX_ID}),
        );
    }
    schema.to_string()
}

/// A short system-prompt fragment about the tools and the sandbox.
pub fn instructions(settings: &Settings) -> String {
    let languages = or_list(&settings.run_code_languages());
    let tools: Vec<String> = enabled(settings.tools)
        .map(|spec| spec.instruction.replace(LANGUAGES, &languages))
        .collect();
    format!(
        "You have tools that act in one isolated E2B cloud sandbox (a Linux VM, template \
`{template}`), created on first use and kept for this whole session: files, installed \
packages and run_code variables persist across calls (run_command's cwd and env vars do not). \
The home and default working directory is /home/user; relative paths resolve against it. \
Tools: {tools}.{forks} Every result has `success`; `success: true` means the tool \
ran, so check `exit_code` and `error` too. Output fields are truncated to {limit} bytes with a \
`…[truncated N bytes]` marker: print summaries rather than huge outputs. The sandbox stops \
{ttl} seconds after the last activity.",
        template = settings.template,
        tools = joined(&tools, "and"),
        forks = if settings.tools.addresses_sandboxes() {
            " Every tool also takes sandbox_id, the id of a fork, to act in that fork instead \
of the session's own sandbox; the forks end with the session."
        } else {
            ""
        },
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
    use crate::tools::{spec, ToolName};
    use e2b_wire::host_guest::env as vars;

    #[test]
    fn instructions_list_the_languages_the_backend_has() {
        let e2b = Settings::from_env(|_| None);
        assert!(instructions(&e2b).contains("python, javascript, typescript, r, java or bash"));
        let local = Settings::from_env(|name| {
            (name == vars::LANGUAGES).then(|| "python, JavaScript,bash".to_string())
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
        let background = ALL
            .iter()
            .find(|t| t.name() == "start_background_command")
            .unwrap();
        // e2b-adk's says readiness is not verified; here it is probed.
        assert!(!background.description.contains("not verified"));
        assert!(background
            .description
            .contains("until the port accepts connections"));
    }

    #[test]
    fn schemas_are_valid_json_schema_objects() {
        for spec in ALL {
            let schema: serde_json::Value = serde_json::from_str(spec.parameters_schema).unwrap();
            assert_eq!(schema["type"], "object", "{}", spec.name());
            let props = schema["properties"].as_object().unwrap();
            for required in schema["required"].as_array().unwrap() {
                assert!(props.contains_key(required.as_str().unwrap()));
            }
            for (name, prop) in props {
                assert!(prop["description"].is_string(), "{}.{name}", spec.name());
            }
        }
        let names: Vec<_> = ALL.iter().map(|t| t.tool).collect();
        assert_eq!(names, ToolName::ALL);
        for tool in ToolName::ALL {
            assert_eq!(spec(tool).tool, tool);
        }
        // The default catalog is e2b-adk's six, in its order.
        let default: Vec<_> = enabled(ToolSet::DEFAULT).map(|t| t.name()).collect();
        assert_eq!(
            default.join(","),
            "run_code,run_command,write_file,read_file,list_files,start_background_command"
        );
    }

    #[test]
    fn instructions_name_only_the_enabled_tools() {
        let only = |tools: &str| {
            Settings::from_env(|name| (name == vars::ENABLED).then(|| tools.to_string()))
        };
        let default = instructions(&Settings::from_env(|_| None));
        assert!(!default.contains("get_background_output"), "{default}");
        let all = instructions(&only("all"));
        assert!(
            all.contains("get_background_output (what a background"),
            "{all}"
        );
        assert!(all.contains(", stop_background_command (SIGTERM"), "{all}");
        assert!(all.contains("and fork_sandbox (branches"), "{all}");
        assert!(all.contains("Every tool also takes sandbox_id"), "{all}");
        assert!(!default.contains("sandbox_id"), "{default}");
        let reader = instructions(&only("read_file,list_files"));
        assert!(
            reader.contains("Tools: read_file (text, or base64 for binary files) and list_files"),
            "{reader}"
        );
        assert!(!reader.contains("run_command ("), "{reader}");
    }

    #[test]
    fn tools_take_a_sandbox_id_only_where_there_can_be_forks() {
        let run_command = spec(ToolName::RunCommand);
        assert_eq!(
            parameters_schema(run_command, ToolSet::DEFAULT),
            run_command.parameters_schema,
            "e2b-adk's schema, unchanged"
        );
        let with_forks = ToolSet::parse(&["default", "fork_sandbox"]).unwrap();
        for tool in with_forks.tools() {
            let schema: serde_json::Value =
                serde_json::from_str(&parameters_schema(spec(tool), with_forks)).unwrap();
            assert_eq!(
                schema["properties"]["sandbox_id"]["type"],
                "string",
                "{}",
                tool.as_str()
            );
            assert!(!schema["required"]
                .as_array()
                .unwrap()
                .contains(&"sandbox_id".into()));
        }
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
        use crate::output::results::failure_json;
        use crate::protocol::envd::{EntryKind, ListedEntry};
        use crate::protocol::interpreter::{Execution, RichResult};
        use crate::tools::args::Encoding;
        use crate::tools::background::script::{ProcessOutput, ProcessState, StoppedProcess};
        use crate::tools::background::start::{BackgroundOutput, Readiness};
        use crate::tools::background::{Offsets, StopSignal};
        use crate::tools::list_files::Listing;
        use crate::tools::read_file::ReadOutput;
        use crate::tools::run_command::CommandOutput;
        use crate::tools::{success_json, ToolOutput};
        let listed = |with_paths, omitted| {
            ToolOutput::ListFiles(Listing {
                path: ".".into(),
                entries: vec![ListedEntry {
                    name: "a".into(),
                    path: "/home/user/a".into(),
                    kind: EntryKind::Dir,
                }],
                with_paths,
                omitted,
            })
        };
        let background = |readiness, exit_code| {
            ToolOutput::StartBackgroundCommand(BackgroundOutput {
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
                ToolOutput::RunCode(Execution {
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
                ToolOutput::RunCommand(CommandOutput {
                    command: "ls".into(),
                    stdout: String::new(),
                    stderr: String::new(),
                    exit_code: 2,
                }),
            ),
            (
                "write_file",
                ToolOutput::WriteFile(crate::tools::write_file::Written { path: "a".into() }),
            ),
            (
                "read_file",
                ToolOutput::ReadFile(ReadOutput {
                    path: "a".into(),
                    content: "AA==".into(),
                    encoding: Encoding::Base64,
                    invalid_utf8: false,
                }),
            ),
            (
                "read_file",
                ToolOutput::ReadFile(ReadOutput {
                    path: "a".into(),
                    content: "\u{FFFD}".into(),
                    encoding: Encoding::Utf8,
                    invalid_utf8: true,
                }),
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
                ToolOutput::GetBackgroundOutput(ProcessOutput {
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
                ToolOutput::StopBackgroundCommand(StoppedProcess {
                    pid: 3,
                    exit_code: Some(-1),
                    signal: Some(StopSignal::Kill),
                }),
            ),
            (
                "create_snapshot",
                ToolOutput::CreateSnapshot(e2b_wire::api::SnapshotInfo {
                    snapshot_id: "local/try:default".into(),
                    names: vec!["local/try:default".into()],
                }),
            ),
            (
                "fork_sandbox",
                ToolOutput::ForkSandbox(crate::tools::fork_sandbox::Forks {
                    sandbox_ids: vec!["f1".into()],
                    errors: vec![crate::errors::Failure::new(
                        crate::errors::ErrorKind::RateLimited,
                        "429: busy",
                    )],
                }),
            ),
        ];
        let mut covered: Vec<&str> = outputs.iter().map(|(tool, _)| *tool).collect();
        covered.dedup();
        assert_eq!(
            covered,
            ToolName::ALL.map(ToolName::as_str),
            "every tool's dict"
        );
        let validator = |tool: &str| {
            let spec = ALL.iter().find(|t| t.name() == tool).unwrap();
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
        for spec in ALL {
            assert!(validator(spec.name()).is_valid(&dict), "{}", spec.name());
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
        let (start, get, stop) = (
            "start_background_command",
            "get_background_output",
            "stop_background_command",
        );
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
            (start, r#"{"command": "x"}"#, true),
            (
                start,
                r#"{"command": "x", "port": 8080, "timeout": 0}"#,
                true,
            ),
            (start, r#"{"command": "x", "port": 0}"#, false),
            (start, r#"{"command": "x", "port": 70000}"#, false),
            (start, r#"{"port": 80}"#, false),
            (get, r#"{"pid": 3}"#, true),
            (
                get,
                r#"{"pid": 3, "since": {"stdout": 5, "stderr": 0}}"#,
                true,
            ),
            (get, r#"{}"#, false),
            (get, r#"{"pid": 0}"#, false),
            (get, r#"{"pid": 3, "since": {"stdout": -1}}"#, false),
            (get, r#"{"pid": 3, "since": {"lines": 1}}"#, false),
            (stop, r#"{"pid": 3}"#, true),
            (stop, r#"{"pid": 3, "signal": "SIGKILL"}"#, true),
            (stop, r#"{"pid": 3, "signal": "SIGUSR1"}"#, false),
            (stop, r#"{"signal": "SIGTERM"}"#, false),
            ("create_snapshot", r#"{}"#, true),
            ("create_snapshot", r#"{"name": "before-fix.1"}"#, true),
            ("create_snapshot", r#"{"name": "a/b"}"#, false),
            ("create_snapshot", r#"{"name": ".x"}"#, false),
            ("fork_sandbox", r#"{}"#, true),
            (
                "fork_sandbox",
                r#"{"count": 8, "timeout": 60, "keep": true}"#,
                true,
            ),
            ("fork_sandbox", r#"{"count": 9}"#, false),
            ("fork_sandbox", r#"{"count": 0}"#, false),
            ("fork_sandbox", r#"{"timeout": 0}"#, false),
            ("fork_sandbox", r#"{"keep": "yes"}"#, false),
        ];
        for (tool, args, valid) in cases {
            let spec = ALL.iter().find(|t| t.name() == *tool).unwrap();
            let schema: serde_json::Value = serde_json::from_str(spec.parameters_schema).unwrap();
            let validator = jsonschema::validator_for(&schema).unwrap();
            let instance: serde_json::Value = serde_json::from_str(args).unwrap();
            assert_eq!(
                validator.is_valid(&instance),
                *valid,
                "schema of {tool} on {args}"
            );
            let parsed = crate::tools::parse_call(tool, args);
            assert_eq!(
                parsed.is_ok(),
                *valid,
                "parser on {tool} {args}: {parsed:?}"
            );
        }
    }
}
