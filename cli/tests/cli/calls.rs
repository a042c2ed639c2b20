//! `e2b-tools call` for each tool and `e2b-tools batch`, on the local
//! backend (the default without `E2B_API_KEY`).

use std::os::unix::process::CommandExt;

use crate::binary::{e2b_tools, run, runtime_dir, Run};
use serde_json::{json, Value};

fn call_json(tool: &str, args: Value) -> (Run, Value) {
    let out = run(e2b_tools(&["call", "--json", tool, &args.to_string()]), "");
    let result = out.json();
    (out, result)
}

#[test]
#[allow(unsafe_code)] // pre_exec, for runs in a session of their own
fn the_default_backend_without_a_key_is_local_and_says_so_once_per_terminal_session() {
    let runtime = runtime_dir("notice");
    let in_new_session = |mut command: std::process::Command| {
        command.env("XDG_RUNTIME_DIR", &runtime);
        // SAFETY: setsid is async-signal-safe.
        unsafe {
            command.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
        run(command, "")
    };
    // One terminal session: a shell leading a session of its own runs three
    // calls, the last with `-v`. (The tests' own session may have its leader
    // outside their PID namespace, as on CI's runner: there every call says
    // it, the safe side.)
    let code = r#"{"code": "print(6 * 7)"}"#;
    let mut shell = std::process::Command::new("sh");
    shell.args([
        "-c",
        r#"for flag in "" "" -v; do "$0" call $flag run_code "$1"; echo "exit $?" >&2; done"#,
        env!("CARGO_BIN_EXE_e2b-tools"),
        code,
    ]);
    for (key, _) in std::env::vars() {
        if key.starts_with("E2B_") {
            shell.env_remove(key);
        }
    }
    let session = in_new_session(shell);
    // Human rendering: the sandbox's stdout is our stdout.
    assert_eq!(session.stdout, "42\n".repeat(3), "{session:?}");
    let calls: Vec<&str> = session.stderr.split_inclusive("exit 0\n").collect();
    assert_eq!(calls.len(), 3, "{session:?}");
    let noticed = |call: &str| call.contains("using the local backend");
    assert!(
        noticed(calls[0]),
        "the first call in a session: {session:?}"
    );
    assert!(!noticed(calls[1]), "the second: {session:?}");
    assert!(noticed(calls[2]), "-v: {session:?}");
    // Another terminal, another session: said again.
    let other = in_new_session(e2b_tools(&["call", "run_code", code]));
    assert_eq!(other.status, 0, "{other:?}");
    assert!(noticed(&other.stderr), "{other:?}");
}

#[test]
fn run_code_returns_stdout_and_the_last_value() {
    let (out, result) = call_json("run_code", json!({"code": "print('hi')\n40 + 2"}));
    assert_eq!(out.status, 0, "{out:?}");
    assert_eq!(result["success"], true, "{out:?}");
    assert_eq!(result["stdout"], "hi\n");
    assert_eq!(result["text"], "42");
}

#[test]
fn run_command_returns_output_and_exit_code() {
    let (out, result) = call_json("run_command", json!({"command": "echo hello; exit 3"}));
    // The call worked (`success`), but the command failed: a script's
    // `&&` must see it.
    assert_eq!(out.status, 1, "{out:?}");
    assert_eq!(result["success"], true, "{out:?}");
    assert_eq!(result["stdout"], "hello\n");
    assert_eq!(result["exit_code"], 3);
}

#[test]
fn code_that_raises_exits_1_and_a_batch_with_a_failed_command_too() {
    let (out, result) = call_json("run_code", json!({"code": "1 / 0"}));
    assert_eq!(out.status, 1, "{out:?}");
    assert!(
        result["error"]
            .as_str()
            .is_some_and(|e| e.contains("ZeroDivisionError")),
        "{out:?}"
    );
    let (out, _) = call_json("run_code", json!({"code": "1"}));
    assert_eq!(out.status, 0, "{out:?}");
    let lines = [
        json!({"tool": "run_command", "args": {"command": "true"}}),
        json!({"tool": "run_command", "args": {"command": "false"}}),
    ];
    let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let out = run(e2b_tools(&["batch"]), &input);
    assert_eq!(out.status, 1, "{out:?}");
    assert_eq!(
        out.stdout.lines().count(),
        2,
        "every line still runs: {out:?}"
    );
}

#[test]
fn write_file_echoes_the_path() {
    let (out, result) = call_json(
        "write_file",
        json!({"path": "/home/user/notes/a.txt", "content": "hello"}),
    );
    assert_eq!(out.status, 0, "{out:?}");
    assert_eq!(result["success"], true);
    assert_eq!(result["path"], "/home/user/notes/a.txt");
}

#[test]
fn read_file_returns_content_and_fails_cleanly_when_missing() {
    let (out, result) = call_json("read_file", json!({"path": "/etc/os-release"}));
    assert_eq!(out.status, 0, "{out:?}");
    assert!(
        result["content"]
            .as_str()
            .is_some_and(|c| c.contains("NAME=")),
        "{out:?}"
    );

    let out = run(
        e2b_tools(&["call", "read_file", r#"{"path": "/home/user/missing.txt"}"#]),
        "",
    );
    assert_eq!(out.status, 1, "{out:?}");
    assert!(out.stderr.contains("error: Failed to read file"), "{out:?}");
}

#[test]
fn list_files_lists_a_directory() {
    let (out, result) = call_json("list_files", json!({"path": "/"}));
    assert_eq!(out.status, 0, "{out:?}");
    let entries = result["entries"].as_array().expect("entries");
    assert!(
        entries
            .iter()
            .any(|e| e["name"] == "etc" && e["type"] == "dir"),
        "{out:?}"
    );
}

#[test]
fn start_background_command_returns_a_pid() {
    let (out, result) = call_json("start_background_command", json!({"command": "sleep 30"}));
    assert_eq!(out.status, 0, "{out:?}");
    assert!(result["pid"].as_u64().is_some_and(|pid| pid > 0), "{out:?}");
}

#[test]
fn usage_errors_exit_with_2() {
    let out = run(e2b_tools(&["call", "run_code", "{not json"]), "");
    assert_eq!(out.status, 2, "{out:?}");
    let out = run(e2b_tools(&["call", "run_code", "[1]"]), "");
    assert_eq!(out.status, 2, "{out:?}");
    let out = run(e2b_tools(&["call", "no_such_tool", "{}"]), "");
    assert_eq!(out.status, 2, "{out:?}");
    let out = run(e2b_tools(&["call"]), "");
    assert_eq!(out.status, 2, "{out:?}");
    // E2B without a key: a usage error that says what to set.
    let out = run(
        e2b_tools(&["--backend", "e2b", "call", "run_code", "{}"]),
        "",
    );
    assert_eq!(out.status, 2, "{out:?}");
    assert!(out.stderr.contains("export E2B_API_KEY="), "{out:?}");
}

#[test]
fn batch_keeps_state_in_one_sandbox_and_survives_malformed_lines() {
    let input = [
        r#"{"tool": "run_code", "args": {"code": "x = 41"}}"#,
        "this is not JSON",
        r#"{"tool": "run_code", "args": {"code": "x + 1"}}"#,
        r#"{"tool": "write_file", "args": {"path": "/home/user/b.txt", "content": "kept"}}"#,
        "",
        r#"{"tool": "read_file", "args": {"path": "/home/user/b.txt"}}"#,
    ]
    .join("\n");
    let out = run(e2b_tools(&["batch"]), &input);
    let lines: Vec<Value> = out
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("each output line is JSON"))
        .collect();
    assert_eq!(lines.len(), 5, "one line per non-empty input line: {out:?}");
    assert_eq!(lines[0]["success"], true, "{out:?}");
    assert_eq!(lines[1]["success"], false);
    assert!(lines[1]["error"]
        .as_str()
        .is_some_and(|e| e.contains("malformed batch line 2")));
    assert_eq!(lines[2]["text"], "42", "{out:?}");
    assert_eq!(lines[4]["content"], "kept", "{out:?}");
    // One failed line: the batch exits 1 but ran everything.
    assert_eq!(out.status, 1, "{out:?}");
}

/// Python code whose value shows as a PNG and an SVG (no plotting library
/// needed: the kernel asks `_repr_png_` / `_repr_svg_` as Jupyter does).
const PICTURES: &str = r#"import base64
class Chart:
    def _repr_png_(self):
        return base64.b64decode("iVBORw0KGgo=")
    def _repr_svg_(self):
        return "<svg xmlns='http://www.w3.org/2000/svg'/>"
Chart()"#;

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("e2b-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn pictures_from_run_code_are_written_to_files_and_their_paths_printed() {
    let dir = scratch("pictures");
    let out_dir = dir.join("charts");
    let args = json!({ "code": PICTURES }).to_string();
    let out = run(
        e2b_tools(&[
            "--rich-results",
            "--output-dir",
            out_dir.to_str().unwrap(),
            "call",
            "run_code",
            &args,
        ]),
        "",
    );
    assert_eq!(out.status, 0, "{out:?}");
    let png = out_dir.join("result-1.png");
    let svg = out_dir.join("result-2.svg");
    assert!(
        out.stdout
            .contains(&format!("image/png: {}", png.display()))
            && out
                .stdout
                .contains(&format!("image/svg+xml: {}", svg.display())),
        "{out:?}"
    );
    assert_eq!(std::fs::read(&png).unwrap(), b"\x89PNG\r\n\x1a\n");
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));

    // Without --output-dir: a fresh e2b-output directory under the current
    // one; batch lines name each file beside the data.
    let mut batch = e2b_tools(&["--rich-results", "batch"]);
    batch.current_dir(&dir);
    let line = json!({"tool": "run_code", "args": {"code": PICTURES}}).to_string();
    let out = run(batch, &format!("{line}\n"));
    assert_eq!(out.status, 0, "{out:?}");
    let result: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    let files: Vec<&str> = result["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["file"].as_str())
        .collect();
    assert_eq!(
        files,
        ["./e2b-output/result-1.png", "./e2b-output/result-2.svg"],
        "{result}"
    );
    assert!(dir.join("e2b-output/result-1.png").is_file());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn tools_selects_what_is_listed_and_callable() {
    let out = run(e2b_tools(&["--tools", "read_file,list_files", "tools"]), "");
    assert_eq!(out.status, 0, "{out:?}");
    let names: Vec<String> = out
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["read_file", "list_files"]);
    let out = run(
        e2b_tools(&[
            "--tools",
            "read_file",
            "call",
            "write_file",
            r#"{"path": "a", "content": "b"}"#,
        ]),
        "",
    );
    assert_eq!(out.status, 2, "{out:?}");
    assert!(out.stderr.contains("the tools are: read_file"), "{out:?}");
    let out = run(e2b_tools(&["--tools", "read_file,nope", "tools"]), "");
    assert_ne!(out.status, 0);
    assert!(out.stderr.contains("unknown tool 'nope'"), "{out:?}");
    // The background tools, through the human rendering; in `base`, which
    // starts no kernels, the command is the sandbox's first process (pid 3)
    // after bubblewrap's init and envd.
    let lines = [
        json!({"tool": "start_background_command", "args": {"command": "echo ready; sleep 300"}}),
        json!({"tool": "get_background_output", "args": {"pid": 3}}),
        json!({"tool": "stop_background_command", "args": {"pid": 3}}),
    ];
    let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let out = run(
        e2b_tools(&["--tools", "all", "--template", "base", "batch"]),
        &input,
    );
    assert_eq!(out.status, 0, "{out:?}");
    let results: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(results[1]["stdout"], "ready\n", "{out:?}");
    assert_eq!(results[2]["signal"], "SIGTERM", "{out:?}");
}
