//! The dispatch: parsing a call by name, prefixes and echoes, redaction,
//! admission, and every tool's result dict.

use super::*;
use crate::errors::ErrorKind;
use crate::protocol::envd::{EntryKind, ListedEntry};
use crate::protocol::interpreter::Execution;
use crate::session::platform::fake::run;
use crate::testing::*;
use crate::tools::args::Encoding;
use crate::tools::background::script::{ProcessOutput, StoppedProcess};
use crate::tools::background::start::{BackgroundOutput, Readiness};
use crate::tools::list_files::Listing;
use crate::tools::read_file::ReadOutput;
use crate::tools::run_command::CommandOutput;

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
        ToolCall::WriteFile(crate::tools::write_file::WriteFileArgs {
            path: "/a".into(),
            content: Vec::new()
        })
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
        ToolCall::WriteFile(crate::tools::write_file::WriteFileArgs {
            path: "b".into(),
            content: vec![0, 1, 2, 255]
        })
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
            ToolCall::ReadFile(crate::tools::read_file::ReadFileArgs {
                path: "b".into(),
                encoding: want
            }),
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
        ToolCall::ListFiles(crate::tools::list_files::ListFilesArgs {
            path: ".".into(),
            depth: 1
        })
    );
    assert_eq!(
        parse_call("list_files", r#"{"path": ""}"#).unwrap(),
        ToolCall::ListFiles(crate::tools::list_files::ListFilesArgs {
            path: ".".into(),
            depth: 1
        })
    );
    assert_eq!(
        parse_call("list_files", "").unwrap(),
        ToolCall::ListFiles(crate::tools::list_files::ListFilesArgs {
            path: ".".into(),
            depth: 1
        })
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

#[test]
fn prefixes_and_echoes_follow_e2b_adk() {
    let call = parse_call("read_file", r#"{"path": "/tmp/x"}"#).unwrap();
    assert_eq!(call.failure_prefix(), "Failed to read file: ");
    let err = call.echo(ToolError::invalid("e"));
    assert_eq!(err.path.as_deref(), Some("/tmp/x"));
    let call = parse_call("start_background_command", r#"{"command": "srv"}"#).unwrap();
    assert_eq!(call.failure_prefix(), "Failed to start command: ");
    assert_eq!(
        call.echo(ToolError::invalid("e")).command.as_deref(),
        Some("srv")
    );
    let call = parse_call("run_code", r#"{"code": "1"}"#).unwrap();
    let err = call.echo(ToolError::invalid("e"));
    assert!(err.path.is_none() && err.command.is_none());
}

#[test]
fn redaction_covers_outputs_and_errors() {
    let out = redact_output(
        ToolOutput::RunCommand(CommandOutput {
            command: "env".into(),
            stdout: "E2B_API_KEY=e2b_supersecret\n".into(),
            stderr: String::new(),
            exit_code: 0,
        }),
        &Secrets::new(["e2b_supersecret"]),
    );
    match out {
        ToolOutput::RunCommand(c) => assert_eq!(c.stdout, "E2B_API_KEY=<redacted>\n"),
        other => panic!("{other:?}"),
    }
    let err = redact_error(
        ToolError::invalid("bad key e2b_supersecret").with_partial_output("e2b_supersecret".into()),
        &Secrets::new(["e2b_supersecret"]),
    );
    assert!(!err.message.contains("supersecret") && !err.partial_output.contains("supersecret"));
}

#[test]
fn a_disabled_tool_is_refused_before_anything_is_sent() {
    let ctx = ctx(300);
    let call = ToolCall::StopBackgroundCommand(crate::tools::background::stop::StopArgs {
        pid: 5,
        signal: Default::default(),
    });
    let err = run(&ctx.platform.clock, execute(&ctx, call)).unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument);
    assert!(
        err.message
            .contains("stop_background_command is not enabled")
            && err.message.contains("start_background_command"),
        "{}",
        err.message
    );
    assert!(ctx.platform.sent_ms(CREATE).is_empty());
}

#[test]
fn success_dicts_match_appendix_b() {
    let code = ToolOutput::RunCode(Execution {
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
    let cmd = ToolOutput::RunCommand(CommandOutput {
        command: "fail now".into(),
        stdout: String::new(),
        stderr: "boom\n".into(),
        exit_code: 2,
    });
    assert_eq!(
        success_json(&cmd, false),
        r#"{"command":"fail now","stdout":"","stderr":"boom\n","exit_code":2,"success":true}"#
    );
    let read = ToolOutput::ReadFile(ReadOutput {
        path: "/tmp/a.txt".into(),
        content: "héllo".into(),
        encoding: Encoding::Utf8,
        invalid_utf8: false,
    });
    assert_eq!(
        success_json(&read, false),
        r#"{"path":"/tmp/a.txt","content":"héllo","success":true}"#
    );
    let binary = ToolOutput::ReadFile(ReadOutput {
        path: "b".into(),
        content: "AP8=".into(),
        encoding: Encoding::Base64,
        invalid_utf8: false,
    });
    assert_eq!(
        success_json(&binary, false),
        r#"{"path":"b","content":"AP8=","encoding":"base64","success":true}"#
    );
    let garbled = ToolOutput::ReadFile(ReadOutput {
        path: "b".into(),
        content: "\u{FFFD}".into(),
        encoding: Encoding::Utf8,
        invalid_utf8: true,
    });
    assert!(success_json(&garbled, false).contains(r#""invalid_utf8":true,"success":true"#));
    let listed = ToolOutput::ListFiles(Listing {
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
    });
    assert_eq!(
        success_json(&listed, false),
        r#"{"path":"/tmp","entries":[{"name":"a.txt","type":"file"},{"name":"d","type":"dir"}],"success":true}"#
    );
    assert_eq!(
        success_json(
            &ToolOutput::WriteFile(crate::tools::write_file::Written {
                path: "/tmp/a.txt".into()
            }),
            false
        ),
        r#"{"path":"/tmp/a.txt","success":true}"#
    );
}

#[test]
fn background_control_dicts() {
    use crate::tools::background::script::ProcessState;
    use crate::tools::background::{Offsets, StopSignal};
    let out = ToolOutput::GetBackgroundOutput(ProcessOutput {
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
    let stopped = ToolOutput::StopBackgroundCommand(StoppedProcess {
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
        success_json(&ToolOutput::StartBackgroundCommand(b.clone()), false),
        r#"{"command":"srv","pid":4321,"preview_url":null,"success":true}"#
    );
    b.preview_url = Some("https://8000-isbx123.e2b.app".into());
    b.readiness = Some(Readiness::Ready);
    assert_eq!(
        success_json(&ToolOutput::StartBackgroundCommand(b.clone()), false),
        r#"{"command":"srv","pid":4321,"preview_url":"https://8000-isbx123.e2b.app","readiness":"ready","success":true}"#
    );
    b.readiness = Some(Readiness::Exited);
    b.exit_code = Some(127);
    b.stderr = "srv: command not found\n".into();
    assert_eq!(
        success_json(&ToolOutput::StartBackgroundCommand(b), false),
        r#"{"command":"srv","pid":4321,"preview_url":"https://8000-isbx123.e2b.app","readiness":"exited","exit_code":127,"stdout":"","stderr":"srv: command not found\n","success":true}"#
    );
}
