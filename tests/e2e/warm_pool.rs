//! The warm pool (issue 28) through the real host against the real local
//! server: a pooled session's first call finds its sandbox made, a dead
//! pooled sandbox is never handed out, the pool refills, configurations
//! never share one, and closing or dropping it leaves no sandbox.

use std::time::{Duration, Instant};

use e2b_local::{Fault, FaultRule, LocalServer};
use e2b_tools_host::{SandboxConfig, SessionOptions, WarmPool, WAITING_TIMEOUT};
use serde_json::json;

use crate::harness::{call, env_for, http, ok, runtime, sandbox_detail, server};

const CREATE: &str = "POST /v2/sandboxes";

fn options(server: &LocalServer) -> SessionOptions {
    SessionOptions {
        env: env_for(server),
        ..SessionOptions::default()
    }
}

/// Waits until `pool` holds `n` made sandboxes.
async fn filled(pool: &WarmPool, n: usize) {
    let until = Instant::now() + Duration::from_secs(30);
    while pool.stats().waiting < n {
        assert!(
            Instant::now() < until,
            "the pool never filled: {:?}",
            pool.stats()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The ids of `server`'s live sandboxes.
async fn live_ids(server: &LocalServer) -> Vec<String> {
    let key = [("X-API-KEY", server.api_key())];
    let (status, body) = http(server, "GET", "/v2/sandboxes", &key).await;
    assert_eq!(status, 200, "{body}");
    let listed: serde_json::Value = serde_json::from_str(&body).unwrap();
    listed
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sandboxID"].as_str().unwrap().to_string())
        .collect()
}

/// How long sandbox `id` has left.
async fn time_left(server: &LocalServer, id: &str) -> Duration {
    let detail = sandbox_detail(server, id).await;
    humantime::parse_rfc3339_weak(detail["endAt"].as_str().unwrap())
        .unwrap()
        .duration_since(std::time::SystemTime::now())
        .unwrap_or_default()
}

/// E2B's create latency on every create.
fn slow_creates(server: &LocalServer) {
    server.faults().inject(FaultRule {
        method: None,
        path_prefix: "/v2/sandboxes".into(),
        times: usize::MAX,
        fault: Fault::Delay(Duration::from_millis(400)),
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pooled_sessions_first_call_finds_its_sandbox_made_and_the_pool_refills() {
    let server = server().await;
    slow_creates(&server);
    let pool = WarmPool::start(runtime(), options(&server), 2).unwrap();
    filled(&pool, 2).await;
    assert_eq!(server.stats().sandboxes_created, 2);
    // Made on the pool's short timeout while they wait.
    for id in live_ids(&server).await {
        assert!(time_left(&server, &id).await <= Duration::from_secs(u64::from(WAITING_TIMEOUT)));
    }
    let session = pool.session().await.unwrap();
    let started = Instant::now();
    let r = ok(call(&session, "run_command", json!({"command": "echo warm"})).await);
    let first_call = started.elapsed();
    assert_eq!(r["stdout"], "warm\n");
    assert!(
        first_call < Duration::from_millis(300),
        "the first call waited for a create: {first_call:?}"
    );
    let id = session.sandbox_id().await.unwrap().expect("a sandbox");
    // Handed out on the configured timeout (300 s), not the pool's.
    let left = time_left(&server, &id).await;
    assert!(
        left > Duration::from_secs(u64::from(WAITING_TIMEOUT) + 60),
        "{left:?}"
    );
    assert_eq!(pool.stats().handed_out, 1);
    filled(&pool, 2).await;
    assert_eq!(server.stats().sandboxes_created, 3, "refilled");
    // Another configuration is not this pool's.
    let other = SessionOptions {
        config: SandboxConfig {
            template: Some("base".into()),
            ..SandboxConfig::default()
        },
        ..options(&server)
    };
    assert!(pool.serves(&options(&server)) && !pool.serves(&other));
    session.shutdown().await.unwrap();
    pool.close().await;
    assert_eq!(
        server.stats().live_sandboxes,
        0,
        "closing kills the waiting ones"
    );
    // A closed pool opens sessions as without one.
    let late = pool.session().await.unwrap();
    assert_eq!(late.sandbox_id().await.unwrap(), None);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pooled_sandbox_killed_behind_the_pools_back_is_never_handed_out() {
    let server = server().await;
    let pool = WarmPool::start(runtime(), options(&server), 1).unwrap();
    filled(&pool, 1).await;
    let dead = live_ids(&server).await.remove(0);
    let key = [("X-API-KEY", server.api_key())];
    let (status, _) = http(&server, "DELETE", &format!("/sandboxes/{dead}"), &key).await;
    assert_eq!(status, 204);
    let session = pool.session().await.unwrap();
    let r = ok(call(&session, "run_command", json!({"command": "echo alive"})).await);
    assert_eq!(r["stdout"], "alive\n");
    assert_ne!(
        session.sandbox_id().await.unwrap().as_deref(),
        Some(dead.as_str())
    );
    assert_eq!(pool.stats().discarded, 1, "{:?}", pool.stats());
    session.shutdown().await.unwrap();
    drop(pool);
    // Dropping the pool kills what waits (on the runtime's reaper).
    let until = Instant::now() + Duration::from_secs(15);
    while server.stats().live_sandboxes > 0 {
        assert!(Instant::now() < until, "a pooled sandbox outlived its pool");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_that_cannot_fill_backs_off_and_sessions_open_as_without_it() {
    let server = server().await;
    server.faults().inject(FaultRule {
        method: None,
        path_prefix: "/v2/sandboxes".into(),
        times: 3,
        fault: crate::harness::status_fault(429, None),
    });
    assert!(WarmPool::start(runtime(), options(&server), 0).is_err());
    assert!(WarmPool::start(runtime(), options(&server), 65).is_err());
    let pool = WarmPool::start(runtime(), options(&server), 1).unwrap();
    // The create retries its 429s, then the pool backs off and tries again.
    filled(&pool, 1).await;
    assert!(server.stats().count(CREATE) >= 4, "{:?}", server.stats());
    pool.close().await;
    assert_eq!(server.stats().live_sandboxes, 0);
    server.shutdown().await;
}
