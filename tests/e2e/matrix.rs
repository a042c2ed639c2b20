//! The fault matrix, one test per cell that `faults` does not already cover
//! on its own: each asserts the tool result (`success`, error kind, message)
//! and that the next call works when it should.

use std::time::{Duration, Instant};

use e2b_local::{Fault, FaultRule, LocalServer};
use e2b_tools_host::{ErrorKind, SandboxConfig, Session, ToolError};
use serde_json::{json, Value};

use crate::harness::{call, failed, ok, server, session, session_with};

fn once(path_prefix: &str, fault: Fault) -> FaultRule {
    FaultRule {
        method: None,
        path_prefix: path_prefix.into(),
        times: 1,
        fault,
    }
}

/// The error a JSON result carries, as a `ToolError`-like pair.
fn error_text(result: &Value) -> String {
    result["error"].as_str().unwrap_or_default().to_string()
}

/// Creation answered `status`: the typed error, its message, nothing cached,
/// and the next call creates the sandbox.
async fn create_cell(status: u16, retry_after: Option<u32>, kind: ErrorKind, says: &str) {
    let server = server().await;
    let s = session(&server).await;
    server.faults().inject(once(
        "/v2/sandboxes",
        Fault::Status {
            status,
            message: format!("injected {status}"),
            retry_after,
        },
    ));
    let started = Instant::now();
    let err: ToolError = s
        .run_command(&e2b_tools_host::RunCommandArgs {
            command: "echo hi".into(),
            cwd: None,
            envs: vec![],
            timeout_seconds: None,
        })
        .await
        .unwrap()
        .expect_err("creation fails");
    assert_eq!(err.kind, kind, "{err:?}");
    assert!(
        err.message.starts_with("Sandbox unavailable: "),
        "{}",
        err.message
    );
    assert!(err.message.contains(says), "{} lacks {says:?}", err.message);
    assert!(
        err.message.contains(&format!("injected {status}")),
        "{}",
        err.message
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "no hidden retry loop"
    );
    assert_eq!(server.stats().sandboxes_created, 0);
    // By JSON too, and the next call creates the sandbox.
    let r = ok(call(&s, "run_command", json!({"command": "echo hi"})).await);
    assert_eq!(r["stdout"], "hi\n");
    assert_eq!(server.stats().sandboxes_created, 1);
    assert!(s.shutdown().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_500() {
    create_cell(500, None, ErrorKind::SandboxUnavailable, "500: ").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_503() {
    create_cell(
        503,
        None,
        ErrorKind::SandboxUnavailable,
        "503: Service temporarily unavailable",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_429_with_retry_after() {
    create_cell(
        429,
        Some(7),
        ErrorKind::RateLimited,
        "429: Rate limit exceeded",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_429_without_retry_after() {
    create_cell(
        429,
        None,
        ErrorKind::RateLimited,
        "429: Rate limit exceeded",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_401() {
    create_cell(401, None, ErrorKind::Auth, "401: Unauthorized").await;
}

/// A session with its sandbox already made, so faults hit the call itself.
async fn warm(server: &LocalServer, config: SandboxConfig) -> Session {
    let s = session_with(server, config, 1.0).await;
    ok(call(&s, "run_command", json!({"command": "true"})).await);
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_reset_after_the_start_event() {
    let server = server().await;
    let s = warm(&server, SandboxConfig::default()).await;
    // The start event (< 100 bytes) goes out, then the command is quiet for
    // a second, then a 4 KB output envelope is cut at byte 200.
    server.faults().inject(once(
        "/process.Process/Start",
        Fault::ResetAfter { bytes: 200 },
    ));
    let command = "sleep 1; head -c 3000 /dev/zero | tr '\\0' x";
    let r = call(&s, "run_command", json!({"command": command})).await;
    failed(&r, "Failed to run command: ");
    assert_eq!(r["partial_output"], "", "{r}");
    assert_eq!(r["command"], command);
    let r = ok(call(&s, "run_command", json!({"command": "echo next"})).await);
    assert_eq!(r["stdout"], "next\n");
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_reset_after_some_output() {
    let server = server().await;
    let s = warm(&server, SandboxConfig::default()).await;
    server.faults().inject(once(
        "/process.Process/Start",
        Fault::ResetAfter { bytes: 300 },
    ));
    let command = "echo one; sleep 1; head -c 3000 /dev/zero | tr '\\0' x";
    let err = s
        .run_command(&e2b_tools_host::RunCommandArgs {
            command: command.into(),
            cwd: None,
            envs: vec![],
            timeout_seconds: None,
        })
        .await
        .unwrap()
        .expect_err("the stream breaks");
    assert_eq!(err.kind, ErrorKind::Network, "{err:?}");
    assert_eq!(err.partial_output, "one\n", "{err:?}");
    assert!(
        err.message.starts_with("Failed to run command: "),
        "{}",
        err.message
    );
    let r = ok(call(&s, "run_command", json!({"command": "echo next"})).await);
    assert_eq!(r["stdout"], "next\n");
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn execute_answering_10s_late_hits_a_1s_timeout() {
    let server = server().await;
    let config = SandboxConfig {
        request_timeout_ms: Some(1000),
        ..SandboxConfig::default()
    };
    let s = warm(&server, config).await;
    ok(call(&s, "run_code", json!({"code": "1"})).await);
    server
        .faults()
        .inject(once("/execute", Fault::Delay(Duration::from_secs(10))));
    let started = Instant::now();
    let r = call(&s, "run_code", json!({"code": "print(2)", "timeout": 1})).await;
    let elapsed = started.elapsed();
    failed(&r, "Failed to run code: ");
    assert!(
        elapsed < Duration::from_secs(8),
        "gave up after {elapsed:?}: {r}"
    );
    let err = s
        .run_code(&e2b_tools_host::RunCodeArgs {
            code: "print(3)".into(),
            language: None,
            envs: vec![],
            timeout_seconds: Some(1),
        })
        .await
        .unwrap();
    assert_eq!(err.expect("the next call works").stdout, "3\n");
    let _ = error_text(&r);
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_answering_10s_late_hits_a_1s_timeout() {
    let server = server().await;
    let config = SandboxConfig {
        request_timeout_ms: Some(1000),
        ..SandboxConfig::default()
    };
    let s = warm(&server, config).await;
    server.faults().inject(once(
        "/process.Process/Start",
        Fault::Delay(Duration::from_secs(10)),
    ));
    let started = Instant::now();
    let r = call(
        &s,
        "run_command",
        json!({"command": "echo late", "timeout": 1}),
    )
    .await;
    let elapsed = started.elapsed();
    failed(&r, "Failed to run command: ");
    assert!(
        elapsed < Duration::from_secs(8),
        "gave up after {elapsed:?}: {r}"
    );
    let r = ok(call(&s, "run_command", json!({"command": "echo next"})).await);
    assert_eq!(r["stdout"], "next\n");
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandbox_expiring_during_run_code() {
    let server = server().await;
    let s = warm(&server, SandboxConfig::default()).await;
    ok(call(&s, "run_code", json!({"code": "1"})).await);
    let id = s.sandbox_id().await.unwrap().unwrap();
    let faults = server.faults().clone();
    let killer = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        faults.expire_now(&id);
    });
    let err = s
        .run_code(&e2b_tools_host::RunCodeArgs {
            code: "import time\nprint('started', flush=True)\ntime.sleep(20)".into(),
            language: None,
            envs: vec![],
            timeout_seconds: None,
        })
        .await
        .unwrap()
        .expect_err("expired mid-call");
    killer.await.unwrap();
    assert_eq!(err.kind, ErrorKind::SandboxExpired, "{err:?}");
    assert_eq!(err.partial_output, "started\n", "{err:?}");
    assert!(
        err.message.starts_with("Failed to run code: "),
        "{}",
        err.message
    );
    // Not replaced silently: the next call says so too.
    let r = call(&s, "run_code", json!({"code": "1"})).await;
    failed(&r, "Failed to run code: ");
    assert_eq!(server.stats().sandboxes_created, 1);
}
