//! The fault matrix, one test per cell that `faults` does not already cover
//! on its own: each asserts the tool result (`success`, error kind, message)
//! and that the next call works when it should.

use std::time::{Duration, Instant};

use e2b_local::{Fault, FaultRule, LocalServer};
use e2b_tools_host::{ErrorKind, SandboxConfig, Session, ToolError};
use serde_json::json;

use crate::harness::{call, failed, ok, server, session, session_with, status_fault};

fn once(path_prefix: &str, fault: Fault) -> FaultRule {
    FaultRule {
        method: None,
        path_prefix: path_prefix.into(),
        times: 1,
        fault,
    }
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
            should_retry: None,
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

/// A create whose answer was lost (a gateway error, a reset after the
/// server made the sandbox) is retried with the same idempotency key, and
/// the server answers with the sandbox it made: one sandbox, the call
/// succeeds.
async fn lost_create_answer(fault: Fault) {
    let server = server().await;
    let s = session(&server).await;
    server.faults().inject(once("/v2/sandboxes", fault));
    let r = ok(call(&s, "run_command", json!({"command": "echo hi"})).await);
    assert_eq!(r["stdout"], "hi\n");
    assert_eq!(server.stats().count(CREATE), 2, "one retry");
    assert_eq!(
        server.stats().sandboxes_created,
        1,
        "never a second sandbox"
    );
    assert!(s.shutdown().await.unwrap());
    assert_eq!(server.stats().live_sandboxes, 0, "none left behind");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_502_is_retried_with_its_idempotency_key() {
    lost_create_answer(status_fault(502, None)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_503_that_says_should_retry_false_is_not_retried() {
    let server = server().await;
    let s = session(&server).await;
    server.faults().inject(once(
        "/v2/sandboxes",
        Fault::Status {
            status: 503,
            message: "injected 503".into(),
            retry_after: None,
            should_retry: Some(false),
        },
    ));
    let r = call(&s, "run_command", json!({"command": "true"})).await;
    failed(
        &r,
        "Sandbox unavailable: 503: Service temporarily unavailable",
    );
    assert_eq!(server.stats().count(CREATE), 1);
}

// Retries: an idempotent request (or a creation that provably made
// nothing) that meets 429, 502, 503, 504 or a reset is tried again, with
// backoff or after `Retry-After`, at most 3 times.

const CREATE: &str = "POST /v2/sandboxes";

/// Creation answered `status` once: retried, so the call succeeds.
async fn create_retried_cell(status: u16, retry_after: Option<u32>) {
    let server = server().await;
    let s = session(&server).await;
    server
        .faults()
        .inject(once("/v2/sandboxes", status_fault(status, retry_after)));
    let started = Instant::now();
    let r = ok(call(&s, "run_command", json!({"command": "echo hi"})).await);
    assert_eq!(r["stdout"], "hi\n");
    assert_eq!(server.stats().count(CREATE), 2);
    assert_eq!(server.stats().sandboxes_created, 1);
    if let Some(secs) = retry_after {
        assert!(
            started.elapsed() >= Duration::from_secs(u64::from(secs)),
            "Retry-After honoured"
        );
    }
    assert!(s.shutdown().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_503_once_is_retried() {
    create_retried_cell(503, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_429_with_retry_after_is_retried_after_it() {
    create_retried_cell(429, Some(1)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_429_without_retry_after_is_retried_with_backoff() {
    create_retried_cell(429, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_503_that_persists_fails_after_three_retries() {
    let server = server().await;
    let s = session(&server).await;
    server.faults().inject(FaultRule {
        times: 10,
        ..once("/v2/sandboxes", status_fault(503, None))
    });
    let started = Instant::now();
    let r = call(&s, "run_command", json!({"command": "true"})).await;
    failed(
        &r,
        "Sandbox unavailable: 503: Service temporarily unavailable",
    );
    assert_eq!(
        r["error"].as_str().unwrap().matches("injected 503").count(),
        1
    );
    assert_eq!(server.stats().count(CREATE), 4, "1 + 3 retries");
    assert!(started.elapsed() < Duration::from_secs(5), "bounded");
    assert_eq!(server.stats().sandboxes_created, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_reset_after_the_sandbox_was_made_is_retried_into_the_same_one() {
    // The server made the sandbox; only its answer was cut.
    lost_create_answer(Fault::ResetAfter { bytes: 0 }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attach_retries_get_info_and_connect() {
    let server = server().await;
    let owner = warm(&server, SandboxConfig::default()).await;
    let id = owner.sandbox_id().unwrap();
    let s = session_with(
        &server,
        SandboxConfig {
            sandbox_id: Some(id.clone()),
            ..SandboxConfig::default()
        },
        1.0,
    )
    .await;
    server.faults().inject(FaultRule {
        method: Some(http::Method::GET),
        ..once(&format!("/sandboxes/{id}"), status_fault(503, None))
    });
    server.faults().inject(once(
        &format!("/v2/sandboxes/{id}/connect"),
        status_fault(502, None),
    ));
    ok(call(&s, "run_command", json!({"command": "true"})).await);
    let stats = server.stats();
    assert_eq!(stats.count("GET /sandboxes/{id}"), 2);
    assert_eq!(stats.count("POST /v2/sandboxes/{id}/connect"), 2);
    assert!(s.shutdown().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_504_is_retried() {
    let server = server().await;
    let s = warm(&server, SandboxConfig::default()).await;
    server.faults().inject(FaultRule {
        method: Some(http::Method::DELETE),
        ..once("/sandboxes/", status_fault(504, None))
    });
    assert!(s.shutdown().await.unwrap());
    assert_eq!(server.stats().count("DELETE /sandboxes/{id}"), 2);
    assert_eq!(server.stats().live_sandboxes, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refresh_503_is_retried() {
    const SCALE: f64 = 30.0;
    let server = crate::harness::server_scaled(SCALE).await;
    let config = SandboxConfig {
        timeout_seconds: Some(60),
        ..SandboxConfig::default()
    };
    let s = session_with(&server, config, SCALE).await;
    ok(call(&s, "run_command", json!({"command": "true"})).await);
    // 36 s later less than half is left: the call refreshes first.
    tokio::time::sleep(Duration::from_secs_f64(36.0 / SCALE)).await;
    // Twice: retried, the third attempt succeeds before the call. Without
    // the retry the call's heartbeat would try once more at once, fail, and
    // wait a tenth of the timeout (0.2 s here), longer than the call.
    server.faults().inject(FaultRule {
        method: Some(http::Method::POST),
        times: 2,
        ..once("/sandboxes/", status_fault(503, None))
    });
    ok(call(&s, "run_command", json!({"command": "true"})).await);
    assert_eq!(server.stats().count("POST /sandboxes/{id}/timeout"), 3);
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_file_reset_and_503_are_retried() {
    let server = server().await;
    let s = warm(&server, SandboxConfig::default()).await;
    ok(call(
        &s,
        "write_file",
        json!({"path": "r.txt", "content": "whole"}),
    )
    .await);
    for fault in [Fault::ResetAfter { bytes: 0 }, status_fault(503, None)] {
        server.faults().inject(FaultRule {
            method: Some(http::Method::GET),
            ..once("/files", fault)
        });
        let r = ok(call(&s, "read_file", json!({"path": "r.txt"})).await);
        assert_eq!(r["content"], "whole");
    }
    assert_eq!(server.stats().count("GET /files"), 4);
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_429_is_retried_after_its_retry_after() {
    let server = server().await;
    let s = warm(&server, SandboxConfig::default()).await;
    server.faults().inject(once(
        "/filesystem.Filesystem/ListDir",
        status_fault(429, Some(1)),
    ));
    let started = Instant::now();
    ok(call(&s, "list_files", json!({"path": "/home/user"})).await);
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(
        server.stats().count("POST /filesystem.Filesystem/ListDir"),
        2
    );
    s.shutdown().await.unwrap();
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
    // The call's own 1 s deadline ends it, in the code interpreter SDK's
    // words for an execution past its timeout, before any output.
    failed(&r, "Failed to run code: ");
    assert_eq!(
        r["error"],
        "Failed to run code: Execution timed out — the 'timeout' option can be used to \
         increase this timeout",
        "{r}"
    );
    assert_eq!(r["partial_output"], "", "{r}");
    assert!(
        elapsed < Duration::from_secs(8),
        "gave up after {elapsed:?}: {r}"
    );
    // Typed, the same failure is a timeout.
    server
        .faults()
        .inject(once("/execute", Fault::Delay(Duration::from_secs(10))));
    let err = s
        .run_code(&e2b_tools_host::RunCodeArgs {
            code: "print(2)".into(),
            language: None,
            envs: vec![],
            timeout_seconds: Some(1),
        })
        .await
        .unwrap()
        .expect_err("the execution times out");
    assert_eq!(err.kind, ErrorKind::Timeout, "{err:?}");
    assert_eq!(err.message, r["error"], "{err:?}");
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
    let id = s.sandbox_id().unwrap();
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
