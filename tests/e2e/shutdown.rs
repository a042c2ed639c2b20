//! Shutdown that does not go smoothly: a kill the server refuses, retried,
//! and shutdown while the first call is still creating the sandbox. Either
//! way no sandbox may be left alive on the server.

use std::sync::Arc;
use std::time::Duration;

use e2b_local::{Fault, FaultRule, LocalServer};
use e2b_tools_host::{ErrorKind, Session, SessionError};
use http::Method;
use serde_json::json;

use crate::harness::{call, http, ok, sandbox_detail, server, session};

const CREATE_DELAY: Duration = Duration::from_millis(1500);

/// The next sandbox creation waits [`CREATE_DELAY`] before it is served.
fn delay_the_create(server: &LocalServer) {
    server.faults().inject(FaultRule {
        method: Some(Method::POST),
        path_prefix: "/v2/sandboxes".into(),
        times: 1,
        fault: Fault::Delay(CREATE_DELAY),
    });
}

/// Asserts the control plane no longer knows `id` and nothing is alive.
async fn assert_gone(server: &LocalServer, id: &str) {
    let path = format!("/sandboxes/{id}");
    let (status, body) = http(server, "GET", &path, &[("X-API-KEY", server.api_key())]).await;
    assert_eq!(status, 404, "{id} is still there: {body}");
    assert_eq!(server.stats().live_sandboxes, 0, "{:?}", server.stats());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_kill_keeps_the_sandbox_and_a_second_shutdown_kills_it() {
    let server = server().await;
    let s = session(&server).await;
    ok(call(&s, "run_command", json!({"command": "true"})).await);
    let id = s.sandbox_id().expect("a sandbox after a call");
    server.faults().inject(FaultRule {
        method: Some(Method::DELETE),
        path_prefix: format!("/sandboxes/{id}"),
        times: 1,
        // A 500, which no client retries: the kill fails for good.
        fault: Fault::Status {
            status: 500,
            message: "injected kill failure".into(),
            retry_after: None,
            should_retry: None,
        },
    });

    let err = match s.shutdown().await {
        Err(SessionError::Lifecycle(err)) => err,
        other => panic!("expected the kill to be refused, got {other:?}"),
    };
    assert_eq!(err.kind, ErrorKind::Internal, "{err:?}");
    assert_eq!(
        err.message,
        "Failed to shut down the sandbox: 500: injected kill failure"
    );
    // Not forgotten: the sandbox lives on and the session still holds it.
    assert_eq!(sandbox_detail(&server, &id).await["state"], "running");
    assert_eq!(s.sandbox_id().as_deref(), Some(id.as_str()));

    assert!(s.shutdown().await.unwrap(), "the retry kills it");
    assert_gone(&server, &id).await;
    assert_eq!(s.sandbox_id(), None);
    assert_eq!(server.stats().count("DELETE /sandboxes/{id}"), 2);
    assert!(!s.shutdown().await.unwrap(), "nothing is left to kill");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_during_the_creating_call_waits_for_it_and_kills_the_sandbox() {
    let server = server().await;
    let s = Arc::new(session(&server).await);
    delay_the_create(&server);
    let first = tokio::spawn({
        let s = s.clone();
        async move { call(&s, "run_command", json!({"command": "echo first"})).await }
    });
    tokio::time::sleep(CREATE_DELAY / 3).await;
    assert!(!first.is_finished(), "the call is still creating");
    assert_eq!(
        server.stats().sandboxes_created,
        0,
        "the create is in flight"
    );

    // Calls on a session are serialized: shutdown waits for the call, which
    // gets its sandbox, then kills it.
    let killed = s.shutdown().await.expect("shutdown");
    let r = ok(first.await.unwrap());
    assert_eq!(r["stdout"], "first\n");
    assert!(killed, "shutdown killed the sandbox the call created");
    assert_eq!(server.stats().sandboxes_created, 1);
    assert_eq!(server.stats().live_sandboxes, 0, "{:?}", server.stats());
    assert_eq!(s.sandbox_id(), None);
}

/// Cancels `s`'s running call after `delay`, from outside the call.
fn cancel_after(s: &Arc<Session>, delay: Duration) -> tokio::task::JoinHandle<()> {
    let s = s.clone();
    tokio::spawn(async move {
        tokio::time::sleep(delay).await;
        s.cancel_current_call();
    })
}

/// What the CLI's Ctrl-C and an MCP client's `notifications/cancelled` do:
/// the call is cancelled, not dropped (a dropped call would leave the
/// instance unenterable). The create it was waiting on runs to its end, the
/// call then returns `cancelled` at once, and shutdown kills the sandbox.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_cancelled_while_creating_returns_and_shutdown_leaves_no_sandbox() {
    let server = server().await;
    let s = Arc::new(session(&server).await);
    delay_the_create(&server);
    let canceller = cancel_after(&s, CREATE_DELAY / 3);
    let result = call(&s, "run_command", json!({"command": "echo first"})).await;
    canceller.await.unwrap();
    assert_cancelled(&result);
    assert!(
        s.shutdown().await.unwrap(),
        "the sandbox was created, then killed"
    );
    assert_eq!(server.stats().live_sandboxes, 0);
}

/// A running command cancelled from outside the call: its process is
/// killed within moments and the session goes on with the same sandbox.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_command_is_killed_and_the_session_stays_usable() {
    let server = server().await;
    let s = Arc::new(session(&server).await);
    ok(call(&s, "run_code", json!({"code": "x = 41"})).await);
    let canceller = cancel_after(&s, Duration::from_millis(1500));
    let started = std::time::Instant::now();
    let err = s
        .run_command(&e2b_tools_host::RunCommandArgs {
            command: "echo started; sleep 300".into(),
            cwd: None,
            envs: vec![],
            timeout_seconds: None,
        })
        .await
        .unwrap()
        .expect_err("cancelled");
    canceller.await.unwrap();
    assert_eq!(err.kind, ErrorKind::Cancelled, "{err:?}");
    assert!(err.message.contains("was killed"), "{err:?}");
    assert_eq!(err.partial_output, "started\n");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    // The kernel's command line is long: search, do not list.
    let ps = ok(call(
        &s,
        "run_command",
        json!({"command": "ps -eo args | grep -c '^sleep 300' || true"}),
    )
    .await);
    assert_eq!(ps["stdout"], "0\n", "{ps}");
    let x = ok(call(&s, "run_code", json!({"code": "x + 1"})).await);
    assert_eq!(x["text"], "42");
    // A cancellation between calls reaches no later call.
    s.cancel_current_call();
    ok(call(&s, "run_command", json!({"command": "true"})).await);
}

/// Cancelled code: its stream is cut, which interrupts the execution (the
/// interpreter's answer to a client that went away), and the kernel goes
/// on with its state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_code_is_interrupted_and_the_kernel_keeps_its_state() {
    let server = server().await;
    let s = Arc::new(session(&server).await);
    ok(call(&s, "run_code", json!({"code": "x = 41"})).await);
    let canceller = cancel_after(&s, Duration::from_millis(1500));
    let started = std::time::Instant::now();
    let result = call(
        &s,
        "run_code",
        json!({"code": "import time\nprint('going', flush=True)\ntime.sleep(300)"}),
    )
    .await;
    canceller.await.unwrap();
    assert_cancelled(&result);
    assert!(started.elapsed() < Duration::from_secs(30));
    let x = ok(call(&s, "run_code", json!({"code": "x + 1"})).await);
    assert_eq!(x["text"], "42", "{x}");
}

/// A call the client cancelled answers as a failure that says so.
fn assert_cancelled(result: &serde_json::Value) {
    assert_eq!(result["success"], false, "{result}");
    assert!(
        result["error"]
            .as_str()
            .unwrap()
            .contains("cancelled by the client"),
        "{result}"
    );
}
