//! Soak: many cheap calls on one session, and many sessions at once in one
//! host process, against one local server: no failure, bounded host memory,
//! no sandbox left alive. Figures go to stderr (`--nocapture` shows them).
//!
//! RSS is the whole test process's, which other tests of this binary share
//! while they run, so the bounds are generous; a per-call leak still shows,
//! since it grows with the number of calls.

use std::sync::Arc;
use std::time::Instant;

use serde_json::json;

use crate::harness::{call, ok, server, session};

/// The two soak tests measure memory; they run one at a time.
static SOAK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Sequential calls on one session.
const SEQUENTIAL_CALLS: usize = 2_000;
/// Most the host's RSS may grow over the sequential calls after warm-up.
const SEQUENTIAL_RSS_BOUND_MIB: f64 = 32.0;
/// Sessions at once, and calls each makes.
const SESSIONS: usize = 50;
const CALLS_PER_SESSION: usize = 10;
/// Most the host's RSS may grow per concurrent session (its store, linear
/// memory and buffers), plus a fixed allowance.
const PER_SESSION_RSS_BOUND_MIB: f64 = 4.0;
const FIXED_RSS_BOUND_MIB: f64 = 64.0;

/// This process's resident set size in MiB.
fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS");
    kib / 1024.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_session_makes_2000_sequential_calls() {
    let _one_at_a_time = SOAK.lock().await;
    let server = server().await;
    let s = session(&server).await;
    ok(call(
        &s,
        "write_file",
        json!({"path": "/home/user/small.txt", "content": "small\n"}),
    )
    .await);
    // Warm-up: pools, caches and the guest's memory reach their steady size.
    for _ in 0..50 {
        ok(call(&s, "read_file", json!({"path": "/home/user/small.txt"})).await);
    }
    let rss_before = rss_mib();
    let started = Instant::now();
    for i in 0..SEQUENTIAL_CALLS {
        if i % 2 == 0 {
            let r = ok(call(&s, "read_file", json!({"path": "/home/user/small.txt"})).await);
            assert_eq!(r["content"], "small\n", "call {i}");
        } else {
            ok(call(&s, "list_files", json!({"path": "/home/user"})).await);
        }
    }
    let elapsed = started.elapsed();
    let rss_after = rss_mib();
    eprintln!(
        "soak sequential: {SEQUENTIAL_CALLS} calls in {:.1} s ({:.0} calls/s), host RSS {rss_before:.1} -> {rss_after:.1} MiB",
        elapsed.as_secs_f64(),
        SEQUENTIAL_CALLS as f64 / elapsed.as_secs_f64()
    );
    assert!(
        rss_after - rss_before < SEQUENTIAL_RSS_BOUND_MIB,
        "RSS grew {rss_before:.1} -> {rss_after:.1} MiB"
    );
    assert!(s.shutdown().await.unwrap());
    let stats = server.stats();
    assert_eq!(stats.live_sandboxes, 0, "{stats:?}");
    assert_eq!(stats.sandboxes_created, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_sessions_call_concurrently_in_one_host() {
    let _one_at_a_time = SOAK.lock().await;
    let server = server().await;
    let rss_before = rss_mib();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for n in 0..SESSIONS {
        let s = Arc::new(session(&server).await);
        tasks.push(tokio::spawn(async move {
            let path = format!("/home/user/s{n}.txt");
            ok(call(
                &s,
                "write_file",
                json!({"path": path, "content": format!("session {n}")}),
            )
            .await);
            for i in 0..CALLS_PER_SESSION {
                let r = match i % 3 {
                    0 => ok(call(&s, "read_file", json!({"path": path})).await),
                    1 => ok(call(&s, "list_files", json!({"path": "/home/user"})).await),
                    _ => ok(call(&s, "run_command", json!({"command": format!("echo {n}")})).await),
                };
                if i % 3 == 0 {
                    assert_eq!(r["content"], format!("session {n}"), "sandboxes stay apart");
                }
            }
            assert!(
                s.shutdown().await.unwrap(),
                "session {n} killed its sandbox"
            );
        }));
    }
    for task in tasks {
        task.await.expect("no session failed");
    }
    let elapsed = started.elapsed();
    let rss_after = rss_mib();
    let stats = server.stats();
    eprintln!(
        "soak concurrent: {SESSIONS} sessions x {} calls in {:.1} s, host RSS {rss_before:.1} -> {rss_after:.1} MiB, sandboxes created {} live {}",
        CALLS_PER_SESSION + 2,
        elapsed.as_secs_f64(),
        stats.sandboxes_created,
        stats.live_sandboxes
    );
    let bound = FIXED_RSS_BOUND_MIB + PER_SESSION_RSS_BOUND_MIB * SESSIONS as f64;
    assert!(
        rss_after - rss_before < bound,
        "RSS grew {rss_before:.1} -> {rss_after:.1} MiB (bound {bound} MiB)"
    );
    assert_eq!(stats.sandboxes_created, SESSIONS as u64);
    assert_eq!(stats.live_sandboxes, 0, "no sandbox left alive: {stats:?}");
}
