//! `call-tool` returns e2b-adk 0.1.2's result dicts: the same calls go through
//! e2b-adk itself (from PyPI, in the test venv) and through the component,
//! both against one local server, and the dicts are compared key by key, in
//! order. The only differences allowed are the documented improvements.

use std::process::Stdio;

use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;

use crate::harness::{call, env_for, server, session};

/// The calls, covering every tool's success and failure paths that do not
/// depend on timing or on process ids.
fn calls() -> Vec<Value> {
    let calls = [
        (
            "run_code",
            json!({"code": "x = 6 * 7\nprint('stdout works')\nx"}),
        ),
        ("run_code", json!({"code": "x + 1"})),
        (
            "run_code",
            json!({"code": "import sys\nprint('warn', file=sys.stderr)\n'text'"}),
        ),
        ("run_code", json!({"code": "1 / 0"})),
        ("run_code", json!({"code": "print('a' * 20000)"})),
        ("run_code", json!({"code": "print('é' * 6000)"})),
        (
            "run_code",
            json!({"code": "print(1)", "language": "Python"}),
        ),
        (
            "run_code",
            json!({"code": "echo from bash", "language": "bash"}),
        ),
        ("run_code", json!({})),
        ("run_code", json!({"code": ""})),
        ("run_code", json!({"code": 42})),
        (
            "run_command",
            json!({"command": "echo hello", "cwd": "/tmp"}),
        ),
        ("run_command", json!({"command": "pwd"})),
        ("run_command", json!({"command": "ls /definitely-not-here"})),
        (
            "run_command",
            json!({"command": "echo $FOO-$BAR", "envs": {"FOO": "a", "BAR": "b"}}),
        ),
        (
            "run_command",
            json!({"command": "printf 'x%.0s' $(seq 1 12000)"}),
        ),
        (
            "run_command",
            json!({"command": "echo early; sleep 10", "timeout": 1}),
        ),
        (
            "run_command",
            json!({"command": "true", "cwd": "/does/not/exist"}),
        ),
        ("run_command", json!({})),
        ("run_command", json!({"command": ["ls"]})),
        (
            "write_file",
            json!({"path": "/tmp/a.txt", "content": "héllo"}),
        ),
        ("read_file", json!({"path": "/tmp/a.txt"})),
        (
            "write_file",
            json!({"path": "notes/empty.txt", "content": ""}),
        ),
        ("read_file", json!({"path": "/home/user/notes/empty.txt"})),
        (
            "run_command",
            json!({"command": "mkdir -p /tmp/d && ln -sf /tmp/a.txt /tmp/l && cat /home/user/notes/empty.txt"}),
        ),
        ("list_files", json!({"path": "/tmp"})),
        ("list_files", json!({})),
        ("list_files", json!({"path": "/nope"})),
        ("read_file", json!({"path": "/tmp/missing.txt"})),
        ("read_file", json!({"path": "/tmp"})),
        ("read_file", json!({})),
        ("write_file", json!({"path": "/tmp/b.txt"})),
        ("write_file", json!({"content": "x"})),
        (
            "write_file",
            json!({"path": "/proc/forbidden.txt", "content": "x"}),
        ),
        ("start_background_command", json!({"command": "sleep 30"})),
        (
            "start_background_command",
            json!({"command": "x", "port": 0}),
        ),
        (
            "start_background_command",
            json!({"command": "x", "port": -1}),
        ),
        (
            "start_background_command",
            json!({"command": "x", "port": 65536}),
        ),
        (
            "start_background_command",
            json!({"command": "x", "port": 8000.0}),
        ),
        (
            "start_background_command",
            json!({"command": "x", "port": true}),
        ),
        (
            "start_background_command",
            json!({"command": "x", "port": "evil.example/#"}),
        ),
        ("start_background_command", json!({})),
    ];
    calls
        .into_iter()
        .map(|(tool, args)| json!({"tool": tool, "args": args}))
        .collect()
}

/// Runs `calls` through e2b-adk (tests/e2e/adk_reference.py).
async fn through_e2b_adk(
    env: &std::collections::BTreeMap<String, String>,
    calls: &[Value],
) -> Vec<Value> {
    let python = std::env::var("E2B_TOOLS_PYTHON").expect(
        "E2B_TOOLS_PYTHON must name a Python with e2b-adk==0.1.2 installed (scripts/test sets it up)",
    );
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/e2e/adk_reference.py");
    let mut child = tokio::process::Command::new(python)
        .arg(script)
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("start the e2b-adk reference driver");
    let mut input = String::new();
    for c in calls {
        input.push_str(&c.to_string());
        input.push('\n');
    }
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(input.as_bytes())
        .await
        .expect("write calls");
    drop(stdin);
    let out = child
        .wait_with_output()
        .await
        .expect("e2b-adk driver output");
    assert!(
        out.status.success(),
        "e2b-adk driver failed: {:?}",
        out.status
    );
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON dict per line"))
        .collect()
}

/// Replaces what legitimately differs between two runs (process ids) and
/// what this project does better on purpose (partial output kept on
/// failure), so the rest must be equal.
fn normalise(mut dict: Value) -> Value {
    if let Some(map) = dict.as_object_mut() {
        if let Some(pid) = map.get_mut("pid") {
            assert!(
                pid.as_u64().is_some_and(|p| p > 0),
                "pid must be a positive integer: {pid}"
            );
            *pid = json!("<pid>");
        }
        if map.contains_key("partial_output") {
            map.insert("partial_output".into(), json!("<partial>"));
        }
    }
    dict
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_tool_gives_e2b_adk_dicts_for_the_same_calls() {
    let server = server().await;
    let calls = calls();

    let session = session(&server).await;
    let mut ours = Vec::new();
    for c in &calls {
        let result = call(&session, c["tool"].as_str().unwrap(), c["args"].clone()).await;
        ours.push(result);
    }
    session.shutdown().await.expect("shutdown");

    let theirs = through_e2b_adk(&env_for(&server), &calls).await;
    assert_eq!(theirs.len(), calls.len(), "e2b-adk answered every call");

    let mut mismatches = Vec::new();
    for ((c, ours), theirs) in calls.iter().zip(&ours).zip(&theirs) {
        // Compared as text: with preserve_order the maps keep their key
        // order, but map equality ignores it, and the order is the contract.
        let ours_text = normalise(ours.clone()).to_string();
        let theirs_text = normalise(theirs.clone()).to_string();
        if ours_text != theirs_text {
            mismatches.push(format!("call {c}\n  ours:    {ours}\n  e2b-adk: {theirs}"));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} calls differ:\n{}",
        mismatches.len(),
        calls.len(),
        mismatches.join("\n")
    );

    // The improvement the normalisation hides must be real: the timed-out
    // command's output before the timeout is kept.
    let timed_out = calls
        .iter()
        .position(|c| c["args"]["command"] == "echo early; sleep 10")
        .unwrap();
    assert_eq!(
        ours[timed_out]["partial_output"], "early\n",
        "{}",
        ours[timed_out]
    );
    assert_eq!(theirs[timed_out]["partial_output"], "");
    assert_eq!(server.stats().live_sandboxes, 0, "both sandboxes are gone");
}
