//! Many callers at once: sandboxes created in parallel, with internet (a
//! slirp4netns each, as users get them), all serve their first command,
//! and nothing of them is left once they are killed.

use std::sync::Arc;

use reqwest::Method;
use serde_json::json;

use crate::common::{run, start, stderr_of, stdout_of, Harness};

/// One sandbox's life as an SDK user lives it: create, a command, a file
/// written and read back, kill. What went wrong, if anything.
async fn one_life(h: &Harness, n: usize) -> Result<(), String> {
    let resp = h.try_create(json!({"templateID": "base"})).await;
    let status = resp.status();
    let body: serde_json::Value = resp.json().await.map_err(|e| e.to_string())?;
    if status != 201 {
        return Err(format!("create: {status} {body}"));
    }
    let sbx = crate::common::Sbx {
        id: body["sandboxID"].as_str().unwrap_or_default().into(),
        token: body["envdAccessToken"].as_str().unwrap_or_default().into(),
    };
    let (events, _) = run(h, &sbx, &format!("echo {n}; grep -c eth0 /proc/net/dev")).await;
    let out = stdout_of(&events);
    if out != format!("{n}\n1\n") {
        return Err(format!("first command: {out:?} {}", stderr_of(&events)));
    }
    let path = format!("/home/user/{n}.txt");
    let written = h.upload(&sbx, &path, "round trip").await;
    if !written.status().is_success() {
        return Err(format!("write: {}", written.status()));
    }
    let read = h
        .sandbox_send(&sbx, 49983, Method::GET, &format!("/files?path={path}"))
        .await;
    let text = read.text().await.unwrap_or_default();
    if text != "round trip" {
        return Err(format!("read back: {text:?}"));
    }
    let killed = h
        .api_send(Method::DELETE, &format!("/sandboxes/{}", sbx.id))
        .await;
    if killed.status() != 204 {
        return Err(format!("kill: {}", killed.status()));
    }
    Ok(())
}

/// 48 sandboxes, 16 at a time, with internet where the server gives it:
/// every one serves.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_creators_at_once_all_get_serving_sandboxes() {
    let h = Arc::new(start().await);
    if rustix::process::getuid().is_root() {
        assert!(
            h.server
                .isolation()
                .contains("internet through slirp4netns"),
            "{}",
            h.server.isolation()
        );
    }
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut workers = Vec::new();
    for _ in 0..16 {
        let (h, next) = (Arc::clone(&h), Arc::clone(&next));
        workers.push(tokio::spawn(async move {
            let mut failures = Vec::new();
            loop {
                let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if n >= 48 {
                    return failures;
                }
                if let Err(e) = one_life(&h, n).await {
                    failures.push(format!("sandbox {n}: {e}"));
                }
            }
        }));
    }
    let mut failures = Vec::new();
    for worker in workers {
        failures.extend(worker.await.unwrap());
    }
    assert!(
        failures.is_empty(),
        "{} of 48 failed: {failures:#?}",
        failures.len()
    );
    let stats = h.server.stats();
    assert_eq!(stats.live_sandboxes, 0, "{stats:?}");
    Arc::try_unwrap(h).ok().unwrap().server.shutdown().await;
}

/// A server dropped (not shut down) while a killed sandbox's teardown is
/// under way finishes the teardown: nothing of the sandbox stays in its
/// data directory, on a disk or in a cgroup.
#[tokio::test]
async fn a_server_dropped_mid_teardown_leaves_nothing() {
    let data = tempfile::tempdir().unwrap();
    let h = crate::common::start_with(e2b_local::Options {
        data_dir: Some(data.path().to_path_buf()),
        ..Default::default()
    })
    .await;
    let sbx = h.create_default().await;
    let killed = h
        .api_send(Method::DELETE, &format!("/sandboxes/{}", sbx.id))
        .await;
    assert_eq!(killed.status(), 204);
    drop(h);
    let left: Vec<_> = std::fs::read_dir(data.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
    let leftovers = e2b_local::leftovers(data.path());
    assert!(
        leftovers.mounts.is_empty() && leftovers.loop_devices.is_empty(),
        "{leftovers:?}"
    );
}

/// A create past what the machine holds is refused with the limit it hit
/// (here the disk: the data directory on a 128 MiB tmpfs, filled), and what runs
/// goes on serving.
#[tokio::test]
async fn a_create_past_the_disk_gets_507_and_disturbs_nothing() {
    if !rustix::process::getuid().is_root() {
        return;
    }
    let data = tempfile::tempdir().unwrap();
    rustix::mount::mount(
        "tmpfs",
        data.path(),
        "tmpfs",
        rustix::mount::MountFlags::empty(),
        Some(c"size=128m,mode=0711"),
    )
    .unwrap();
    let unmount = |p: &std::path::Path| {
        let _ = rustix::mount::unmount(p, rustix::mount::UnmountFlags::DETACH);
    };
    let h = crate::common::start_with(e2b_local::Options {
        data_dir: Some(data.path().to_path_buf()),
        ..Default::default()
    })
    .await;
    // A sandbox that fits, then a file that leaves no room for another.
    let running = h.create_default().await;
    std::fs::write(data.path().join("filler"), vec![0u8; 90 << 20]).ok();
    let resp = h.try_create(json!({"templateID": "base"})).await;
    let status = resp.status().as_u16();
    let body: serde_json::Value = resp.json().await.unwrap();
    let (events, _) = run(&h, &running, "echo still").await;
    h.server.shutdown().await;
    unmount(data.path());
    assert_eq!(status, 507, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("MiB free"),
        "{body}"
    );
    assert_eq!(stdout_of(&events), "still\n");
}
