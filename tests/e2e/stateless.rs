//! The stateless component through the host's per-call runner (a fresh
//! instance for every call, as plugin hosts make): state travels as the
//! sandbox id, and nothing is left behind.

use std::sync::OnceLock;
use std::time::Duration;

use e2b_local::LocalServer;
use e2b_tools_host::{ComponentSource, StatelessOptions, StatelessRuntime};
use serde_json::{json, Value};

use crate::harness::{env_for, server, server_scaled};

/// The stateless world's tools, in WIT order.
pub const TOOLS: [&str; 11] = [
    "e2b-run-code",
    "e2b-run-command",
    "e2b-write-file",
    "e2b-read-file",
    "e2b-list-files",
    "e2b-start-background-command",
    "e2b-get-background-output",
    "e2b-stop-background-command",
    "e2b-create-snapshot",
    "e2b-fork-sandbox",
    "e2b-close-sandbox",
];

pub fn runtime() -> &'static StatelessRuntime {
    static RUNTIME: OnceLock<StatelessRuntime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        StatelessRuntime::load(ComponentSource::EmbeddedStateless).expect("load the component")
    })
}

fn options(server: &LocalServer) -> StatelessOptions {
    StatelessOptions {
        env: env_for(server),
        ..StatelessOptions::default()
    }
}

async fn call(options: &StatelessOptions, tool: &str, args: Value) -> Value {
    runtime()
        .call(options, tool, &args)
        .await
        .expect("the call returns a result")
}

#[track_caller]
fn ok(result: Value) -> Value {
    assert_eq!(result["success"], true, "expected success: {result}");
    result
}

#[test]
fn the_component_exports_exactly_its_eleven_tools_with_flat_parameters() {
    let names: Vec<&str> = runtime().tools().iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, TOOLS);
    for tool in runtime().tools() {
        assert_eq!(tool.params[0].0, "sandbox-id", "{}", tool.name);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_travels_as_the_sandbox_id_across_fresh_instances() {
    let server = server().await;
    let o = options(&server);
    let first = ok(call(&o, "run_code", json!({"code": "x = 41"})).await);
    let id = first["sandbox_id"].as_str().expect("an id").to_string();
    let r = ok(call(
        &o,
        "run_code",
        json!({"sandbox_id": id, "code": "print(x + 1)"}),
    )
    .await);
    assert_eq!(
        (r["stdout"].as_str(), r["sandbox_id"].as_str()),
        (Some("42\n"), Some(id.as_str()))
    );
    ok(call(
        &o,
        "write_file",
        json!({"sandbox-id": id, "path": "notes.txt", "content": "kept"}),
    )
    .await);
    let r = ok(call(
        &o,
        "read_file",
        json!({"sandbox_id": id, "path": "notes.txt"}),
    )
    .await);
    assert_eq!(r["content"], "kept");
    let r = ok(call(&o, "list_files", json!({"sandbox_id": id})).await);
    assert!(r.to_string().contains("notes.txt"), "{r}");
    let r = ok(call(
        &o,
        "run_command",
        json!({"sandbox_id": id, "command": "pwd", "cwd": "/tmp"}),
    )
    .await);
    assert_eq!(r["stdout"], "/tmp\n");
    assert_eq!(
        server.stats().sandboxes_created,
        1,
        "one sandbox for all calls"
    );

    let r = ok(call(&o, "close_sandbox", json!({"sandbox_id": id})).await);
    assert_eq!(r["closed"], "killed");
    assert_eq!(server.stats().live_sandboxes, 0);
    // A closed (or expired) id is an error, never a new sandbox.
    let r = call(&o, "run_code", json!({"sandbox_id": id, "code": "x"})).await;
    assert_eq!(
        (r["success"].as_bool(), r["kind"].as_str()),
        (Some(false), Some("not-found")),
        "{r}"
    );
    assert_eq!(server.stats().sandboxes_created, 1);
    let r = ok(call(&o, "close_sandbox", json!({"sandbox_id": id})).await);
    assert_eq!(r["closed"], "gone");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_process_is_read_and_stopped_from_later_instances() {
    let server = server().await;
    let o = options(&server);
    let started = ok(call(
        &o,
        "start_background_command",
        json!({"command": "echo one; sleep 1; echo two; sleep 300"}),
    )
    .await);
    let (id, pid) = (started["sandbox_id"].clone(), started["pid"].clone());
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let read = ok(call(
        &o,
        "get_background_output",
        json!({"sandbox_id": id, "pid": pid}),
    )
    .await);
    assert_eq!(
        (&read["stdout"], &read["state"]),
        (&json!("one\ntwo\n"), &json!("running")),
        "{read}"
    );
    let since = ok(call(
        &o,
        "get_background_output",
        json!({"sandbox_id": id, "pid": pid, "since_stdout": 4}),
    )
    .await);
    assert_eq!(since["stdout"], "two\n", "{since}");
    let stopped = ok(call(
        &o,
        "stop_background_command",
        json!({"sandbox_id": id, "pid": pid}),
    )
    .await);
    assert_eq!(stopped["signal"], "SIGTERM", "{stopped}");
    // A start without the sandbox's id made a sandbox; reading with no id
    // would make another, where the pid is unknown.
    let lost = call(&o, "get_background_output", json!({"pid": pid})).await;
    assert_eq!(lost["kind"], "not-found", "{lost}");
    for sandbox in [id, lost["sandbox_id"].clone()] {
        ok(call(&o, "close_sandbox", json!({"sandbox_id": sandbox})).await);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_calls_with_an_id_then_close_leave_no_sandbox() {
    let server = server().await;
    let o = options(&server);
    let id = ok(call(&o, "run_command", json!({"command": "echo 0 > n"})).await)["sandbox_id"]
        .as_str()
        .unwrap()
        .to_string();
    for i in 1..200 {
        let r = call(
            &o,
            "run_command",
            json!({"sandbox_id": id, "command": "echo $(( $(cat n) + 1 )) > n; cat n"}),
        )
        .await;
        assert_eq!(r["stdout"], format!("{i}\n"), "call {i}: {r}");
    }
    ok(call(&o, "close_sandbox", json!({"sandbox_id": id})).await);
    let stats = server.stats();
    assert_eq!(
        (stats.sandboxes_created, stats.live_sandboxes),
        (1, 0),
        "{stats:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandbox_never_closed_still_ends_at_its_timeout() {
    // 60 s of sandbox time last 2 real seconds.
    let server = server_scaled(30.0).await;
    let mut o = options(&server);
    o.env.insert("E2B_TOOLS_TIMEOUT".into(), "60".into());
    let r = ok(call(&o, "run_command", json!({"command": "true"})).await);
    assert_eq!(server.stats().live_sandboxes, 1);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(server.stats().live_sandboxes, 0, "{r}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn created_sandboxes_are_tagged_and_configured_from_the_environment() {
    let server = server().await;
    let mut o = options(&server);
    o.env
        .insert("E2B_TOOLS_MAX_OUTPUT_BYTES".into(), "5".into());
    let r = ok(call(&o, "run_command", json!({"command": "echo 123456789"})).await);
    assert_eq!(r["stdout"], "12345…[truncated 5 bytes]");
    let id = r["sandbox_id"].as_str().unwrap();
    let detail = crate::harness::sandbox_detail(&server, id).await;
    assert_eq!(detail["metadata"], json!({"e2b-tools": "stateless"}));
    o.env.insert("E2B_TOOLS_TIMEOUT".into(), "soon".into());
    let r = call(&o, "run_command", json!({"command": "true"})).await;
    assert_eq!(r["kind"], "invalid-argument", "{r}");
    let bad = runtime()
        .call(&o, "run_command", &json!({"port": "x"}))
        .await;
    assert!(bad.is_ok(), "unknown keys are ignored");
    let bad = runtime()
        .call(&o, "start_background_command", &json!({"port": "x"}))
        .await;
    assert!(bad.unwrap_err().to_string().contains("argument port"));
    o.env.remove("E2B_TOOLS_TIMEOUT");
    ok(call(&o, "close_sandbox", json!({"sandbox_id": id})).await);
}
