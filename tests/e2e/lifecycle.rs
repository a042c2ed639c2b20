//! The one sandbox of a session: lazy creation, keep-alive, expiry, resume and
//! shutdown. Timing tests run guest and server on a clock 30 times faster, so
//! a 60 s sandbox timeout lasts 2 real seconds.

use e2b_tools_host::{ErrorKind, KeyValue, RunCommandArgs, SandboxConfig};
use serde_json::json;

use crate::harness::{
    call, command, ok, sandbox_detail, server, server_scaled, session, session_with,
};

const SCALE: f64 = 30.0;
const TIMEOUT_KEY: &str = "POST /sandboxes/{id}/timeout";

fn with_timeout(seconds: u32) -> SandboxConfig {
    SandboxConfig {
        timeout_seconds: Some(seconds),
        ..SandboxConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandbox_is_created_lazily_once_and_killed_by_shutdown() {
    let server = server().await;
    let s = session(&server).await;
    assert_eq!(s.sandbox_id(), None, "no sandbox before the first call");
    assert_eq!(server.stats().sandboxes_created, 0);

    for i in 0..20 {
        ok(call(&s, "run_command", json!({"command": format!("echo {i}")})).await);
    }
    let id = s.sandbox_id().expect("a sandbox after a call");
    let stats = server.stats();
    assert_eq!(stats.sandboxes_created, 1, "one sandbox for all calls");
    // e2b-adk sends 2 keep-alive requests per call (40 here); with a 300 s
    // timeout and quick calls none is needed.
    assert!(
        stats.count(TIMEOUT_KEY) <= 1,
        "keep-alive requests: {}",
        stats.count(TIMEOUT_KEY)
    );

    assert!(s.shutdown().await.unwrap());
    assert_eq!(s.sandbox_id(), None);
    assert_eq!(server.stats().live_sandboxes, 0, "{id} is gone");
    assert!(
        !s.shutdown().await.unwrap(),
        "a second shutdown has nothing to kill"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeat_keeps_the_sandbox_alive_through_a_long_call() {
    let server = server_scaled(SCALE).await;
    let s = session_with(&server, with_timeout(60), SCALE).await;
    ok(call(&s, "run_command", json!({"command": "true"})).await);
    let id = s.sandbox_id().unwrap();

    // 5 real seconds = 150 s of sandbox time, well past the 60 s timeout.
    let out = s
        .run_command(&RunCommandArgs {
            command: "sleep 5; echo done".into(),
            cwd: None,
            envs: vec![],
            timeout_seconds: Some(0),
        })
        .await
        .unwrap()
        .expect("the call outlives the timeout");
    assert_eq!(out.stdout, "done\n");
    assert!(
        server.stats().count(TIMEOUT_KEY) >= 2,
        "heartbeats were sent during the call"
    );
    ok(call(&s, "run_command", json!({"command": "true"})).await);
    assert_eq!(s.sandbox_id().as_deref(), Some(id.as_str()), "same sandbox");
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_gap_longer_than_the_timeout_expires_the_sandbox() {
    let server = server_scaled(SCALE).await;
    let s = session_with(&server, with_timeout(60), SCALE).await;
    ok(call(
        &s,
        "write_file",
        json!({"path": "keep.txt", "content": "x"}),
    )
    .await);

    // 3 real seconds = 90 s of sandbox time with nothing running.
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let err = s
        .run_command(&command("cat keep.txt"))
        .await
        .unwrap()
        .expect_err("the sandbox expired");
    assert_eq!(err.kind, ErrorKind::SandboxExpired, "{err:?}");
    // Never silently replaced: no second sandbox was created.
    assert_eq!(server.stats().sandboxes_created, 1);
    let r = call(&s, "read_file", json!({"path": "keep.txt"})).await;
    assert_eq!(r["success"], false, "{r}");

    // After shutdown the next call starts afresh.
    s.shutdown().await.unwrap();
    ok(call(&s, "run_command", json!({"command": "true"})).await);
    assert_eq!(server.stats().sandboxes_created, 2);
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refresh_between_calls_only_when_half_the_timeout_is_gone() {
    let server = server_scaled(SCALE).await;
    let s = session_with(&server, with_timeout(60), SCALE).await;
    ok(call(&s, "run_command", json!({"command": "true"})).await);
    let before = server.stats().count(TIMEOUT_KEY);
    // 0.3 s real = 9 s: no refresh needed.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    ok(call(&s, "run_command", json!({"command": "true"})).await);
    assert_eq!(
        server.stats().count(TIMEOUT_KEY),
        before,
        "no refresh with most of the timeout left"
    );
    // 1.3 s real = 39 s: less than half is left, so one refresh, and the
    // sandbox survives another 1.3 s that would otherwise have killed it.
    tokio::time::sleep(std::time::Duration::from_millis(1300)).await;
    ok(call(&s, "run_command", json!({"command": "true"})).await);
    assert_eq!(server.stats().count(TIMEOUT_KEY), before + 1);
    tokio::time::sleep(std::time::Duration::from_millis(1300)).await;
    ok(call(&s, "run_command", json!({"command": "true"})).await);
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_call_started_just_before_half_the_timeout_is_refreshed_in_time() {
    let server = server_scaled(SCALE).await;
    let s = session_with(&server, with_timeout(60), SCALE).await;
    let created = std::time::Instant::now();
    ok(call(&s, "run_command", json!({"command": "true"})).await);
    // 28 s after the creation: more than half is left, no refresh before
    // the call. The first beat must come at about 30 s, not 28 + 30 s (2 s
    // before the sandbox would expire).
    tokio::time::sleep(std::time::Duration::from_secs_f64(28.0 / SCALE)).await;
    let before = server.stats().count(TIMEOUT_KEY);
    let watch = async {
        while created.elapsed() < std::time::Duration::from_secs(5) {
            if server.stats().count(TIMEOUT_KEY) > before {
                return created.elapsed().as_secs_f64() * SCALE;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        f64::INFINITY
    };
    let long_call = call(
        &s,
        "run_command",
        json!({"command": "sleep 3", "timeout": 0}),
    );
    let (r, first_beat) = tokio::join!(long_call, watch);
    ok(r);
    assert!(
        (29.0..45.0).contains(&first_beat),
        "first refresh {first_beat:.1} s after the creation"
    );
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attaching_never_shortens_a_longer_timeout() {
    let server = server_scaled(SCALE).await;
    let owner = session_with(&server, with_timeout(3_600), SCALE).await;
    ok(call(&owner, "run_command", json!({"command": "true"})).await);
    let id = owner.sandbox_id().unwrap();
    let end_at = |detail: serde_json::Value| {
        humantime::parse_rfc3339_weak(detail["endAt"].as_str().unwrap()).unwrap()
    };
    let hour_end = end_at(sandbox_detail(&server, &id).await);

    let config = SandboxConfig {
        sandbox_id: Some(id.clone()),
        ..with_timeout(60)
    };
    let attached = session_with(&server, config, SCALE).await;
    // 75 s of calls with a 60 s timeout: refreshes would set 60 s from now.
    for _ in 0..3 {
        ok(call(&attached, "run_command", json!({"command": "sleep 0.8"})).await);
    }
    let end = end_at(sandbox_detail(&server, &id).await);
    assert!(
        end >= hour_end,
        "the hour was cut short: {end:?} < {hour_end:?}"
    );
    attached.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_session_resumes_the_sandbox_by_id() {
    let server = server().await;
    let first = session(&server).await;
    ok(call(
        &first,
        "write_file",
        json!({"path": "shared.txt", "content": "from the first"}),
    )
    .await);
    let id = first.sandbox_id().unwrap();

    let config = SandboxConfig {
        sandbox_id: Some(id.clone()),
        ..SandboxConfig::default()
    };
    let second = session_with(&server, config, 1.0).await;
    let r = ok(call(&second, "read_file", json!({"path": "shared.txt"})).await);
    assert_eq!(r["content"], "from the first");
    assert_eq!(second.sandbox_id().as_deref(), Some(id.as_str()));
    assert_eq!(server.stats().sandboxes_created, 1);
    second.shutdown().await.unwrap();
    assert_eq!(server.stats().live_sandboxes, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandbox_options_reach_the_sandbox() {
    let server = server().await;
    let config = SandboxConfig {
        envs: vec![KeyValue::new("TEAM", "blue")],
        metadata: vec![KeyValue::new("purpose", "e2e")],
        ..SandboxConfig::default()
    };
    let s = session_with(&server, config, 1.0).await;
    let r = ok(call(&s, "run_command", json!({"command": "echo $TEAM"})).await);
    assert_eq!(r["stdout"], "blue\n");
    let id = s.sandbox_id().expect("a sandbox after a call");
    assert_eq!(
        sandbox_detail(&server, &id).await["metadata"],
        json!({"purpose": "e2e"}),
        "the sandbox carries the configured metadata"
    );
    s.shutdown().await.unwrap();
}
