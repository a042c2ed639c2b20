//! The warm pools (issue 28) through the real host against the real local
//! server: a pooled session's first call, and a stateless call that names
//! no sandbox, find their sandboxes made; a dead pooled sandbox is never
//! handed out, the pools refill, configurations never share one, and
//! closing or dropping a pool leaves no sandbox.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use e2b_local::{Fault, FaultRule, LocalServer};
use e2b_tools_host::{
    ComponentSource, EventKind, PoolStats, SandboxConfig, SessionOptions, StatelessOptions,
    StatelessPool, StatelessRuntime, WarmPool, WAITING_TIMEOUT,
};
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
    waiting(|| pool.stats(), n).await;
}

/// Waits until a pool's `stats` say `n` sandboxes wait.
async fn waiting(stats: impl Fn() -> PoolStats, n: usize) {
    let until = Instant::now() + Duration::from_secs(30);
    while stats().waiting < n {
        assert!(
            Instant::now() < until,
            "the pool never filled: {:?}",
            stats()
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
        path_prefix: "/v2/sandboxes$".into(),
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
    let id = session.sandbox_id().expect("a sandbox");
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
    assert_eq!(late.sandbox_id(), None);
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
    assert_ne!(session.sandbox_id().as_deref(), Some(dead.as_str()));
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

fn stateless_options(server: &LocalServer) -> StatelessOptions {
    StatelessOptions {
        env: env_for(server),
        ..StatelessOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_call_naming_no_sandbox_runs_in_one_made_ahead_and_the_pool_refills() {
    let server = server().await;
    slow_creates(&server);
    // A runtime of its own: its subscribers hear only this test's calls.
    let runtime = &StatelessRuntime::load(ComponentSource::EmbeddedStateless).unwrap();
    let told = Arc::new(Mutex::new(Vec::new()));
    let _subscription = {
        let told = told.clone();
        runtime
            .subscribe(move |e: &e2b_tools_host::Event| {
                told.lock().unwrap().push((e.kind, e.tool.clone()));
            })
            .unwrap()
    };
    let options = stateless_options(&server);
    let pool = StatelessPool::start(runtime, options.clone(), 2).unwrap();
    waiting(|| pool.stats(), 2).await;
    let made = live_ids(&server).await;
    assert_eq!(made.len(), 2);
    for id in &made {
        assert!(time_left(&server, id).await <= Duration::from_secs(u64::from(WAITING_TIMEOUT)));
    }
    let started = Instant::now();
    let first = ok(pool
        .call("run_code", &json!({"code": "x = 41"}))
        .await
        .unwrap());
    let first_call = started.elapsed();
    assert!(
        first_call < Duration::from_millis(300),
        "the first call waited for a create: {first_call:?}"
    );
    let id = first["sandbox_id"].as_str().unwrap().to_string();
    assert!(made.contains(&id), "{id} was not made ahead: {made:?}");
    // Handed out on the configured timeout (300 s), not the pool's.
    let left = time_left(&server, &id).await;
    assert!(
        left > Duration::from_secs(u64::from(WAITING_TIMEOUT) + 60),
        "{left:?}"
    );
    // It is the caller's now: a call by its id keeps its state.
    let again = ok(pool
        .call("run_code", &json!({"code": "x + 1", "sandbox_id": id}))
        .await
        .unwrap());
    assert_eq!(again["text"], "42");
    assert_eq!(pool.stats().handed_out, 1);
    waiting(|| pool.stats(), 2).await;
    assert_eq!(pool.stats().made, 3, "refilled");
    // Arguments refused before anything ran: the sandbox stays in the
    // pool, and the answer names none, as without a pool.
    let before = live_ids(&server).await;
    let refused = pool.call("read_file", &json!({})).await.unwrap();
    assert_eq!(refused["kind"], "invalid-argument", "{refused}");
    assert_eq!(refused["sandbox_id"], "", "{refused}");
    assert_eq!(pool.stats().waiting, 2);
    assert_eq!(pool.stats().handed_out, 1);
    // As does a call the host refuses (no such tool), and the pool never
    // holds more than its size although it was refilling meanwhile.
    assert!(pool.call("no_such_tool", &json!({})).await.is_err());
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(pool.stats().waiting, 2, "{:?}", pool.stats());
    assert_eq!(pool.stats().handed_out, 1);
    // A sandbox the filler started while the taken one was out is killed
    // once made (a make waits for the sandbox's kernels: up to seconds).
    let mut before = before;
    before.sort();
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut after = live_ids(&server).await;
    after.sort();
    while after != before && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
        after = live_ids(&server).await;
        after.sort();
    }
    assert_eq!(before, after, "the same sandboxes wait, none replaced");
    // Other options are not this pool's.
    let mut other = options.clone();
    other.env.insert("E2B_TOOLS_TEMPLATE".into(), "base".into());
    assert!(pool.serves(&options) && !pool.serves(&other));
    // The subscribers heard of the caller's calls only, not the pool's.
    let tools: Vec<String> = told
        .lock()
        .unwrap()
        .iter()
        .filter(|(kind, _)| *kind == EventKind::ExecStart)
        .filter_map(|(_, tool)| tool.clone())
        .collect();
    assert_eq!(tools, ["run_code", "run_code", "read_file"]);
    let closed = ok(pool
        .call("close_sandbox", &json!({"sandbox_id": id}))
        .await
        .unwrap());
    assert_eq!(closed["closed"], "killed");
    pool.close().await;
    assert_eq!(
        server.stats().live_sandboxes,
        0,
        "closing kills the waiting ones"
    );
    // A closed pool's calls create their sandboxes, as without one (and
    // wait for the create's delay, which connecting never had).
    let started = Instant::now();
    let late = ok(pool
        .call("run_command", &json!({"command": "true"}))
        .await
        .unwrap());
    assert!(started.elapsed() >= Duration::from_millis(400));
    let late = late["sandbox_id"].as_str().unwrap().to_string();
    ok(runtime
        .call(&options, "close_sandbox", &json!({"sandbox_id": late}))
        .await
        .unwrap());
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pooled_stateless_sandbox_killed_behind_the_pools_back_is_never_handed_out() {
    let server = server().await;
    let runtime = crate::stateless::runtime();
    let pool = StatelessPool::start(runtime, stateless_options(&server), 1).unwrap();
    waiting(|| pool.stats(), 1).await;
    let dead = live_ids(&server).await.remove(0);
    let key = [("X-API-KEY", server.api_key())];
    let (status, _) = http(&server, "DELETE", &format!("/sandboxes/{dead}"), &key).await;
    assert_eq!(status, 204);
    let r = ok(pool
        .call("run_command", &json!({"command": "echo alive"}))
        .await
        .unwrap());
    assert_eq!(r["stdout"], "alive\n");
    let id = r["sandbox_id"].as_str().unwrap().to_string();
    assert_ne!(id, dead);
    assert_eq!(pool.stats().discarded, 1, "{:?}", pool.stats());
    ok(pool
        .call("close_sandbox", &json!({"sandbox_id": id}))
        .await
        .unwrap());
    drop(pool);
    // Dropping the pool closes what waits (on its filler's task).
    let until = Instant::now() + Duration::from_secs(15);
    while server.stats().live_sandboxes > 0 {
        assert!(Instant::now() < until, "a pooled sandbox outlived its pool");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(StatelessPool::start(runtime, stateless_options(&server), 0).is_err());
    server.shutdown().await;
}
