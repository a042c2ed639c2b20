//! Server faults, injected through the local server's handle: each gives a
//! clear failure of the right kind, and the next call works when it should.

use std::time::Duration;

use e2b_local::{Fault, FaultRule};
use e2b_tools_host::ErrorKind;
use serde_json::json;

use crate::harness::{call, command, failed, ok, server, session, status_fault};

fn rule(path_prefix: &str, fault: Fault) -> FaultRule {
    FaultRule {
        method: None,
        path_prefix: path_prefix.into(),
        times: 1,
        fault,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_failures_are_typed_and_not_cached() {
    let server = server().await;
    let s = session(&server).await;
    // 503 and 429 are retried three times: they fail when they persist.
    for (code, times, kind) in [
        (500, 1, ErrorKind::SandboxUnavailable),
        (503, 4, ErrorKind::SandboxUnavailable),
        (429, 4, ErrorKind::RateLimited),
        (401, 1, ErrorKind::Auth),
    ] {
        server.faults().inject(FaultRule {
            times,
            ..rule("/v2/sandboxes", status_fault(code, None))
        });
        let err = s
            .run_command(&command("true"))
            .await
            .unwrap()
            .expect_err("create fails");
        assert_eq!(err.kind, kind, "{code}: {err:?}");
        assert!(
            err.message.starts_with("Sandbox unavailable: "),
            "{}",
            err.message
        );
        assert!(
            !err.message.contains(server.api_key()),
            "the key never appears"
        );
    }
    ok(call(&s, "run_command", json!({"command": "true"})).await);
    assert_eq!(server.stats().sandboxes_created, 1);
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_streams_fail_cleanly_and_the_sandbox_survives() {
    let server = server().await;
    let s = session(&server).await;
    ok(call(&s, "run_command", json!({"command": "true"})).await);

    for fault in [
        Fault::ResetAfter { bytes: 0 },
        Fault::ResetAfter { bytes: 40 },
        Fault::EndWithoutEndEvent,
        Fault::TruncatedEnvelope,
        status_fault(503, None),
    ] {
        let name = format!("{fault:?}");
        server
            .faults()
            .inject(rule("/process.Process/Start", fault));
        let r = call(
            &s,
            "run_command",
            json!({"command": "echo one; sleep 0.2; echo two"}),
        )
        .await;
        failed(&r, "Failed to run command: ");
        assert_eq!(r["command"], "echo one; sleep 0.2; echo two", "{name}");
        ok(call(&s, "run_command", json!({"command": "true"})).await);
    }

    server
        .faults()
        .inject(rule("/execute", Fault::ResetAfter { bytes: 10 }));
    failed(
        &call(&s, "run_code", json!({"code": "print(1)"})).await,
        "Failed to run code: ",
    );
    server
        .faults()
        .inject(rule("/execute", Fault::BlankNdjsonLine));
    let r = ok(call(&s, "run_code", json!({"code": "print(1)"})).await);
    assert_eq!(r["stdout"], "1\n", "a blank line is skipped, not fatal");
    server
        .faults()
        .inject(rule("/files", status_fault(500, None)));
    failed(
        &call(&s, "read_file", json!({"path": "/etc/hostname"})).await,
        "Failed to read file: ",
    );
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_answer_hits_the_request_timeout() {
    let server = server().await;
    // 3 s: room for creating the sandbox on a busy machine, far below the
    // delay.
    let config = e2b_tools_host::SandboxConfig {
        request_timeout_ms: Some(3000),
        ..Default::default()
    };
    let s = crate::harness::session_with(&server, config, 1.0).await;
    ok(call(&s, "list_files", json!({})).await);
    server.faults().inject(rule(
        "/filesystem.Filesystem/ListDir",
        Fault::Delay(Duration::from_secs(60)),
    ));
    let started = std::time::Instant::now();
    let err = s.list_files(None).await.unwrap().expect_err("times out");
    assert_eq!(err.kind, ErrorKind::Timeout, "{err:?}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "gave up at the 3 s timeout, not the 60 s delay"
    );
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expiry_mid_call_and_between_calls_is_reported() {
    let server = server().await;
    let s = session(&server).await;
    ok(call(&s, "run_command", json!({"command": "true"})).await);
    let id = s.sandbox_id().unwrap();

    let faults = server.faults().clone();
    let killer_id = id.clone();
    let killer = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(700)).await;
        faults.expire_now(&killer_id);
    });
    let err = s
        .run_command(&command("echo started; sleep 20"))
        .await
        .unwrap()
        .expect_err("killed mid-call");
    killer.await.unwrap();
    assert!(matches!(err.kind, ErrorKind::SandboxExpired), "{err:?}");
    assert_eq!(err.partial_output, "started\n");

    let err = s
        .run_command(&command("true"))
        .await
        .unwrap()
        .expect_err("still gone");
    assert_eq!(err.kind, ErrorKind::SandboxExpired, "{err:?}");
    assert!(!s.shutdown().await.unwrap(), "nothing left to kill");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_keep_alive_does_not_fail_the_call() {
    let server = crate::harness::server_scaled(30.0).await;
    let config = e2b_tools_host::SandboxConfig {
        timeout_seconds: Some(60),
        ..Default::default()
    };
    let s = crate::harness::session_with(&server, config, 30.0).await;
    ok(call(&s, "run_command", json!({"command": "true"})).await);
    // 1.3 real s = 39 s of the 60 s timeout: the next call refreshes first,
    // and that refresh fails.
    tokio::time::sleep(Duration::from_millis(1300)).await;
    let before = server.stats().count("POST /sandboxes/{id}/timeout");
    server.faults().inject(FaultRule {
        method: Some(http::Method::POST),
        path_prefix: "/sandboxes/".into(),
        times: 1,
        fault: status_fault(500, None),
    });
    let out = s
        .run_command(&command("echo ok"))
        .await
        .unwrap()
        .expect("the call succeeds");
    assert_eq!(out.stdout, "ok\n");
    assert!(
        server.stats().count("POST /sandboxes/{id}/timeout") > before,
        "a refresh was tried"
    );
    s.shutdown().await.unwrap();
}

/// The host sends a request whose body the component has written from the
/// calling task, and hands an answer that comes at once back ready; a slow
/// answer, or a body still being written (a large upload), goes on in a
/// task of its own, and arrives whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quick_answers_come_back_inline_and_slow_or_streamed_requests_go_on_in_a_task() {
    use e2b_tools_host::{ComponentSource, Runtime, Session, SessionOptions};
    let server = server().await;
    // A runtime of its own: its counts are this test's requests only.
    let runtime = Runtime::load(ComponentSource::Embedded).unwrap();
    let options = SessionOptions {
        env: crate::harness::env_for(&server),
        ..SessionOptions::default()
    };
    let s = Session::open(&runtime, options).await.unwrap();
    ok(call(&s, "write_file", json!({"path": "a.txt", "content": "hi"})).await);
    let before = runtime.outbound_stats();
    ok(call(&s, "read_file", json!({"path": "a.txt"})).await);
    let after = runtime.outbound_stats();
    assert_eq!(
        after.answered_inline,
        before.answered_inline + 1,
        "{after:?}"
    );
    assert_eq!(after.in_task, before.in_task, "{after:?}");

    server
        .faults()
        .inject(rule("/files", Fault::Delay(Duration::from_millis(300))));
    let r = ok(call(&s, "read_file", json!({"path": "a.txt"})).await);
    assert_eq!(r["content"], "hi");
    let slow = runtime.outbound_stats();
    assert_eq!(slow.in_task, after.in_task + 1, "{slow:?}");

    // Larger than the host's body buffer: written after `handle`.
    let content = "x".repeat(4 << 20);
    ok(call(
        &s,
        "write_file",
        json!({"path": "big.txt", "content": content}),
    )
    .await);
    let streamed = runtime.outbound_stats();
    assert_eq!(streamed.in_task, slow.in_task + 1, "{streamed:?}");
    let r = ok(call(&s, "run_command", json!({"command": "wc -c < big.txt"})).await);
    assert_eq!(r["stdout"], format!("{}\n", 4 << 20));
    s.shutdown().await.unwrap();
    server.shutdown().await;
}
