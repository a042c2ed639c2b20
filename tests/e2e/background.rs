//! Background process control (`get_background_output`,
//! `stop_background_command`) and tool selection, through the real host
//! and the real local server.

use e2b_tools_host::{ErrorKind, OutputOffsets, ProcessState, SandboxConfig, StopSignal};
use serde_json::{json, Value};

use crate::harness::{call, failed, ok, server, session, session_with, tool_names};

fn all_tools() -> SandboxConfig {
    SandboxConfig {
        tools: Some(vec!["all".into()]),
        ..SandboxConfig::default()
    }
}

/// One GET to the sandbox's server on `port`, from inside the sandbox.
fn fetch(port: u16, path: &str) -> Value {
    json!({"command": format!(
        "python3 -c \"import urllib.request as u; u.urlopen('http://127.0.0.1:{port}{path}').read()\""
    )})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_request_log_is_read_then_it_is_stopped_and_gone() {
    let server = server().await;
    let s = session_with(&server, all_tools(), 1.0).await;
    let started = ok(call(
        &s,
        "start_background_command",
        json!({"command": "cd /tmp && python3 -m http.server 8811", "port": 8811}),
    )
    .await);
    assert_eq!(started["readiness"], "ready", "{started}");
    let pid = started["pid"].clone();

    ok(call(&s, "run_command", fetch(8811, "/first")).await);
    let first = ok(call(&s, "get_background_output", json!({"pid": pid})).await);
    assert_eq!(first["state"], "running", "{first}");
    assert_eq!(first["exit_code"], Value::Null);
    let log = first["stderr"].as_str().unwrap();
    // The file does not exist: a 404, logged like any request.
    assert!(log.contains("\"GET /first HTTP/1.1\" 404"), "{first}");
    assert_eq!(first["next_since"]["stderr"], log.len());

    // From the offsets the answer gave: only what came since.
    ok(call(&s, "run_command", fetch(8811, "/second")).await);
    let second = ok(call(
        &s,
        "get_background_output",
        json!({"pid": pid, "since": first["next_since"]}),
    )
    .await);
    let log = second["stderr"].as_str().unwrap();
    assert!(
        log.contains("GET /second") && !log.contains("GET /first"),
        "{second}"
    );

    let stopped = ok(call(&s, "stop_background_command", json!({"pid": pid})).await);
    assert_eq!(
        (&stopped["state"], &stopped["signal"], &stopped["exit_code"]),
        (&json!("exited"), &json!("SIGTERM"), &json!(-1)),
        "{stopped}"
    );
    let ps = ok(call(
        &s,
        "run_command",
        json!({"command": "ps -eo pid,stat,args"}),
    )
    .await);
    let listing = ps["stdout"].as_str().unwrap();
    assert!(!listing.contains("http.server"), "{listing}");
    assert!(
        !listing
            .lines()
            .any(|l| l.trim_start().starts_with(&format!("{pid} "))),
        "{listing}"
    );
    // Its output stays readable, and a second stop reports how it ended.
    let after = ok(call(&s, "get_background_output", json!({"pid": pid})).await);
    assert_eq!(after["state"], "exited");
    assert!(after["stderr"].as_str().unwrap().contains("GET /second"));
    let again = ok(call(&s, "stop_background_command", json!({"pid": pid})).await);
    assert_eq!(
        (&again["signal"], &again["exit_code"]),
        (&Value::Null, &json!(-1))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_calls_page_through_output_and_escalate_to_sigkill() {
    let server = server().await;
    let config = SandboxConfig {
        max_output_bytes: Some(100),
        ..all_tools()
    };
    let s = session_with(&server, config, 1.0).await;
    // 250 bytes, then a shell that ignores SIGTERM (its sleeps do not).
    let started = ok(call(
        &s,
        "start_background_command",
        json!({"command": "printf 'x%.0s' $(seq 250); trap '' TERM; while :; do sleep 0.2; done"}),
    )
    .await);
    let pid = u32::try_from(started["pid"].as_u64().unwrap()).unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;

    let page = s
        .get_background_output(pid, None)
        .await
        .unwrap()
        .expect("read the output");
    assert_eq!(page.state, ProcessState::Running);
    assert_eq!(
        page.stdout,
        format!("{}…[truncated 150 bytes]", "x".repeat(100))
    );
    assert_eq!(page.next_since.stdout, 100);
    let page = s
        .get_background_output(pid, Some(page.next_since))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        page.stdout,
        format!("{}…[truncated 50 bytes]", "x".repeat(100))
    );
    let last = s
        .get_background_output(pid, Some(page.next_since))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (last.stdout.as_str(), last.next_since.stdout),
        ("x".repeat(50).as_str(), 250)
    );

    let stopped = s
        .stop_background_command(pid, Some(StopSignal::Sigterm))
        .await
        .unwrap()
        .expect("stop");
    assert_eq!(
        stopped.signal,
        Some(StopSignal::Sigkill),
        "SIGTERM was ignored"
    );
    assert_eq!(stopped.exit_code, Some(-1));
    let err = s
        .get_background_output(
            pid,
            Some(OutputOffsets {
                stdout: 251,
                stderr: 0,
            }),
        )
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument);
    assert!(
        err.message.contains("since.stdout is 251, past the end"),
        "{}",
        err.message
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pids_that_are_not_ours_and_bad_arguments_are_clear_failures() {
    let server = server().await;
    let s = session_with(&server, all_tools(), 1.0).await;
    let cases = [
        ("get_background_output", json!({"pid": 1}), "Failed to get background output: process 1 was not started by start_background_command"),
        ("stop_background_command", json!({"pid": 1}), "Failed to stop command: process 1 was not started by start_background_command"),
        ("get_background_output", json!({"pid": 4_000_000}), "Failed to get background output: no process with pid 4000000"),
        ("get_background_output", json!({"pid": -2}), "Invalid pid"),
        ("get_background_output", json!({"pid": 3, "since": {"stdout": -5}}), "Invalid since"),
        ("stop_background_command", json!({"pid": 3, "signal": "SIGSEGV"}), "Invalid signal"),
    ];
    for (tool, args, prefix) in cases {
        failed(&call(&s, tool, args).await, prefix);
    }
    // A process the model started itself, not through the tool.
    let own = ok(call(
        &s,
        "run_command",
        json!({"command": "sleep 60 >/dev/null 2>&1 & echo $!"}),
    )
    .await);
    let pid: u32 = own["stdout"].as_str().unwrap().trim().parse().unwrap();
    failed(
        &call(&s, "stop_background_command", json!({"pid": pid})).await,
        &format!("Failed to stop command: process {pid} was not started"),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_default_the_new_tools_are_absent_and_starts_are_unwrapped() {
    let server = server().await;
    let s = session(&server).await;
    let names = tool_names(&s).await;
    assert_eq!(
        names,
        [
            "run_code",
            "run_command",
            "write_file",
            "read_file",
            "list_files",
            "start_background_command"
        ]
    );
    let result = call(&s, "get_background_output", json!({"pid": 3})).await;
    assert_eq!(
        result["error"],
        "Unknown tool: get_background_output. Available tools: run_code, run_command, \
write_file, read_file, list_files, start_background_command"
    );
    ok(call(
        &s,
        "start_background_command",
        json!({"command": "sleep 30"}),
    )
    .await);
    let listing = ok(call(&s, "list_files", json!({"path": "/tmp", "depth": 3})).await);
    assert!(!listing.to_string().contains(".e2b-tools"), "{listing}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_tool_set_refuses_writes_and_lists_only_what_it_offers() {
    let server = server().await;
    let config = SandboxConfig {
        tools: Some(vec!["read_file".into(), "list_files".into()]),
        ..SandboxConfig::default()
    };
    let s = session_with(&server, config, 1.0).await;
    let names = tool_names(&s).await;
    assert_eq!(names, ["read_file", "list_files"]);
    let instructions = s.instructions().await.unwrap();
    assert!(
        instructions.contains("Tools: read_file (text"),
        "{instructions}"
    );
    assert!(!instructions.contains("run_code ("), "{instructions}");

    let result = call(&s, "write_file", json!({"path": "x", "content": "y"})).await;
    assert_eq!(
        result["error"],
        "Unknown tool: write_file. Available tools: read_file, list_files"
    );
    let err = s.write_file("x", "y").await.unwrap().unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument);
    assert_eq!(
        err.message,
        "Tool write_file is not enabled in this session. Enabled tools: read_file, list_files"
    );
    // Nothing was written: the sandbox was not even needed for the refusal.
    assert_eq!(s.sandbox_id(), None);
    ok(call(&s, "list_files", json!({})).await);
}
