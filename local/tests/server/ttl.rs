//! Sandbox TTLs: death (or pause) at the timeout, processes gone.

use std::time::Duration;

use reqwest::Method;
use serde_json::json;

use crate::common::{start, start_sandbox, start_with};

/// Whether any host process runs `sleep <secs>` (the sandboxed one).
fn sleeping(secs: &str) -> bool {
    let want = format!("sleep\0{secs}\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .any(|e| std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c == want.as_bytes()))
}

async fn start_background(h: &crate::common::Harness, sbx: &crate::common::Sbx, secs: &str) -> u64 {
    let mut resp = h
        .start_process(sbx, json!({"process": {"cmd": "sleep", "args": [secs]}}))
        .await;
    let chunk = resp.chunk().await.unwrap().unwrap();
    let mut dec = e2b_wire::connect::EnvelopeDecoder::new(1 << 20);
    dec.push(&chunk);
    let env = dec.next_envelope().unwrap().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&env.payload).unwrap();
    v["event"]["start"]["pid"].as_u64().unwrap()
}

#[tokio::test]
async fn short_timeout_kills_sandbox_and_processes() {
    let h = start().await;
    let sbx = h.create(json!({"templateID": "base", "timeout": 2})).await;
    let pid = start_background(&h, &sbx, "601").await;
    assert!(pid > 0);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(sleeping("601"));
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let resp = h.sandbox_send(&sbx, 49983, Method::GET, "/health").await;
    assert_eq!(resp.status(), 204);
    tokio::time::sleep(Duration::from_millis(1600)).await;
    let resp = h.sandbox_send(&sbx, 49983, Method::GET, "/health").await;
    assert_eq!(resp.status(), 502);
    let resp = h
        .api_send(Method::GET, &format!("/sandboxes/{}", sbx.id))
        .await;
    assert_eq!(resp.status(), 404);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!sleeping("601"), "the sandboxed sleep survived its sandbox");
    assert_eq!(h.server.stats().live_sandboxes, 0);
    h.server.shutdown().await;
}

#[tokio::test]
async fn set_timeout_extends_and_time_scale_speeds_up() {
    let h = start_with(e2b_local::Options {
        time_scale: 10.0,
        ..Default::default()
    })
    .await;
    // 10 scaled seconds = 1 s; extended at once to 30 = 3 s from now.
    let sbx = h.create(json!({"templateID": "base", "timeout": 10})).await;
    let extended_at = std::time::Instant::now();
    let resp = h
        .api(Method::POST, &format!("/sandboxes/{}/timeout", sbx.id))
        .json(&json!({"timeout": 30}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 204);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let resp = h.sandbox_send(&sbx, 49983, Method::GET, "/health").await;
    assert_eq!(resp.status(), 204, "alive past its first TTL: extended");
    tokio::time::sleep(Duration::from_millis(3300).saturating_sub(extended_at.elapsed())).await;
    let resp = h.sandbox_send(&sbx, 49983, Method::GET, "/health").await;
    assert_eq!(resp.status(), 502);
    h.server.shutdown().await;
}

#[tokio::test]
async fn auto_pause_at_timeout_and_auto_resume_on_traffic() {
    let h = start().await;
    let sbx = h
        .create(json!({"templateID": "base", "timeout": 1, "autoPause": true, "autoResume": {"enabled": true}}))
        .await;
    start_background(&h, &sbx, "602").await;
    let resp = h.upload(&sbx, "k.txt", "kept").await;
    assert_eq!(resp.status(), 200);
    // The TTL is 1 s (bounded wait on a loaded machine).
    let mut v = serde_json::Value::Null;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        v = h.detail(&sbx).await;
        if v["state"] == "paused" {
            break;
        }
    }
    assert_eq!(v["state"], "paused");
    // Frozen, not stopped (control_plane.rs checks the freezer itself).
    assert!(sleeping("602"));
    let resp = h
        .sandbox_send(&sbx, 49983, Method::GET, "/files?path=k.txt")
        .await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.text().await.unwrap(), "kept");
    assert_eq!(h.detail(&sbx).await["state"], "running");
    assert!(sleeping("602"), "resumed with its processes");
    h.server.shutdown().await;
}

#[tokio::test]
async fn dropping_the_server_kills_every_process() {
    let (h, sbx) = start_sandbox().await;
    start_background(&h, &sbx, "603").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(sleeping("603"));
    drop(h);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !sleeping("603"),
        "a sandboxed process outlived the dropped server"
    );
}

#[tokio::test]
async fn background_jobs_outlive_their_command_but_not_the_sandbox() {
    let (h, sbx) = start_sandbox().await;
    let (events, end) =
        crate::common::run(&h, &sbx, "sleep 604 > /dev/null 2>&1 & echo started").await;
    assert_eq!(crate::common::stdout_of(&events), "started\n");
    assert_eq!(end, json!({}));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(sleeping("604"), "the background job died with its command");
    // Processes of one sandbox see each other, envd among them.
    let (events, _) =
        crate::common::run(&h, &sbx, "pgrep -x sleep | wc -l; pgrep -x envd | wc -l").await;
    assert_eq!(
        crate::common::stdout_of(&events),
        "1\n1\n",
        "the job and envd"
    );
    let resp = h
        .api_send(Method::DELETE, &format!("/sandboxes/{}", sbx.id))
        .await;
    assert_eq!(resp.status(), 204);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!sleeping("604"), "the background job outlived its sandbox");
    h.server.shutdown().await;
}

#[tokio::test]
async fn shutdown_removes_every_sandbox_root() {
    let dir = std::env::temp_dir().join(format!("e2b-local-test-{}", std::process::id()));
    let h = start_with(e2b_local::Options {
        data_dir: Some(dir.clone()),
        ..Default::default()
    })
    .await;
    let a = h.create_default().await;
    let _b = h.create_default().await;
    crate::common::run(&h, &a, "echo x > /home/user/f").await;
    // Sandbox roots; the server's own files (`.rootfs`, `.disks`) are hidden.
    let roots = |dir: &std::path::Path| {
        std::fs::read_dir(dir)
            .unwrap()
            .filter(|e| {
                !e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with('.')
            })
            .count()
    };
    assert_eq!(roots(&dir), 2);
    let resp = h
        .api_send(Method::DELETE, &format!("/sandboxes/{}", a.id))
        .await;
    assert_eq!(resp.status(), 204);
    h.server.shutdown().await;
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "roots left behind"
    );
    std::fs::remove_dir(&dir).unwrap();
}
