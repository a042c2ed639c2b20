//! Snapshots and forks through the control plane: their error paths, the
//! snapshot budget, forks under the sandbox cap, what a snapshot of a
//! busy disk holds, and create's Idempotency-Key.

use std::time::Duration;

use e2b_local::Options;
use reqwest::Method;
use serde_json::{json, Value};

use crate::common::{run, start, start_with, stdout_of, Harness, Sbx};

/// A command's stdout.
async fn sh(h: &Harness, sbx: &Sbx, cmd: &str) -> String {
    stdout_of(&run(h, sbx, cmd).await.0)
}

/// Whether the server keeps disk images (root, loop devices), which
/// snapshots and forks copy.
fn has_disks(h: &Harness) -> bool {
    h.server.isolation().contains("ext4 image")
}

async fn snapshot(h: &Harness, id: &str, body: Value) -> reqwest::Response {
    h.api_json(Method::POST, &format!("/sandboxes/{id}/snapshots"), &body)
        .await
}

async fn fork(h: &Harness, id: &str, body: Value) -> reqwest::Response {
    h.api_json(Method::POST, &format!("/sandboxes/{id}/fork"), &body)
        .await
}

/// The status and the error message of a refused request.
async fn refused(resp: reqwest::Response) -> (u16, String) {
    let status = resp.status().as_u16();
    assert_eq!(resp.headers()["should-retry"], "false");
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["code"], status, "{body}");
    (status, body["message"].as_str().unwrap().to_string())
}

fn sandbox_of(v: &Value) -> Sbx {
    Sbx {
        id: v["sandboxID"].as_str().unwrap().to_string(),
        token: v["envdAccessToken"].as_str().unwrap().to_string(),
    }
}

#[tokio::test]
async fn snapshot_and_fork_errors_are_clear() {
    let h = start().await;
    let sbx = h.create_default().await;
    let (status, message) = refused(snapshot(&h, "nosuchsandbox", json!({})).await).await;
    assert_eq!(
        (status, message.as_str()),
        (404, "Sandbox nosuchsandbox not found")
    );
    assert_eq!(
        refused(fork(&h, "nosuchsandbox", json!({})).await).await.0,
        404
    );
    for name in ["a/b", "../x", "x.y", "base", "UP", "other/x", "x:v2", "-x"] {
        let (status, message) = refused(snapshot(&h, &sbx.id, json!({ "name": name })).await).await;
        assert_eq!(status, 400, "{name}: {message}");
        assert!(message.contains("invalid snapshot name"), "{message}");
    }
    for body in [json!({"count": 0}), json!({"count": 101})] {
        let (status, message) = refused(fork(&h, &sbx.id, body).await).await;
        assert_eq!(status, 400);
        assert!(
            message.contains("count must be between 1 and 100"),
            "{message}"
        );
    }
    assert_eq!(
        refused(fork(&h, &sbx.id, json!({"timeout": -1})).await)
            .await
            .0,
        400
    );
    let (status, message) =
        refused(h.try_create(json!({"templateID": "nope:default"})).await).await;
    assert_eq!(status, 404);
    assert!(
        message.contains("template 'nope:default' not found"),
        "{message}"
    );
    let delete = |id: &str| h.api(Method::DELETE, &format!("/templates/{id}")).send();
    assert_eq!(
        refused(delete("nope%3Adefault").await.unwrap()).await.0,
        404
    );
    assert_eq!(refused(delete("base").await.unwrap()).await.0, 400);
    assert_eq!(
        refused(h.api_send(Method::GET, "/snapshots?limit=0").await)
            .await
            .0,
        400
    );
    if !has_disks(&h) {
        // A server without disk images says why, for both.
        let (status, message) = refused(snapshot(&h, &sbx.id, json!({})).await).await;
        assert_eq!(status, 501);
        assert!(
            message.contains("disk images need a server run as root"),
            "{message}"
        );
        assert_eq!(refused(fork(&h, &sbx.id, json!({})).await).await.0, 501);
        h.server.shutdown().await;
        return;
    }
    assert_eq!(h.pause(&sbx).await.status(), 204);
    let (status, message) = refused(snapshot(&h, &sbx.id, json!({})).await).await;
    assert_eq!(status, 409);
    assert!(message.contains("is paused"), "{message}");
    assert_eq!(refused(fork(&h, &sbx.id, json!({})).await).await.0, 409);
    assert_eq!(h.connect(&sbx, 60).await.status(), 201);
    // Memory cannot be carried: the filesystem is.
    let resp = snapshot(&h, &sbx.id, json!({"memory": true})).await;
    assert_eq!(resp.status(), 201);
    let kill = h
        .api_send(Method::DELETE, &format!("/sandboxes/{}", sbx.id))
        .await;
    assert_eq!(kill.status(), 204);
    assert_eq!(refused(snapshot(&h, &sbx.id, json!({})).await).await.0, 404);
    // Nothing of it hurt the server.
    let other = h.create_default().await;
    assert_eq!(sh(&h, &other, "echo ok").await, "ok\n");
    h.server.shutdown().await;
}

/// A server whose snapshots and forks share 16 MiB; `None` where the
/// server keeps no disk images (no snapshots at all).
async fn with_a_16_mib_budget() -> Option<Harness> {
    let h = start_with(Options {
        snapshot_budget: 16 << 20,
        ..Default::default()
    })
    .await;
    has_disks(&h).then_some(h)
}

#[tokio::test]
async fn the_budget_refuses_a_snapshot_and_deletes_nothing() {
    let Some(h) = with_a_16_mib_budget().await else {
        return;
    };
    let sbx = h.create_default().await;
    sh(&h, &sbx, "echo kept > /home/user/kept").await;
    let first: Value = snapshot(&h, &sbx.id, json!({"name": "first"}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(first["snapshotID"], "local/first:default");
    sh(&h, &sbx, "head -c 24M /dev/urandom > /home/user/big").await;
    let (status, message) = refused(snapshot(&h, &sbx.id, json!({})).await).await;
    assert_eq!(status, 507);
    assert!(
        message.contains("budget for snapshots and forks is full"),
        "{message}"
    );
    assert!(message.contains("the budget is 16.0 MiB"), "{message}");
    let listed: Vec<Value> = h
        .api_send(Method::GET, "/snapshots")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(listed, std::slice::from_ref(&first));
    let from = sandbox_of(
        &h.try_create(json!({"templateID": "local/first:default"}))
            .await
            .json::<Value>()
            .await
            .unwrap(),
    );
    assert_eq!(sh(&h, &from, "cat /home/user/kept").await, "kept\n");
    // The v1 create starts sandboxes from snapshots too, by name.
    let v1 = h
        .api_json(Method::POST, "/sandboxes", &json!({"templateID": "first"}))
        .await;
    assert_eq!(v1.status(), 201);
    let v1 = sandbox_of(&v1.json::<Value>().await.unwrap());
    assert_eq!(sh(&h, &v1, "cat /home/user/kept").await, "kept\n");
    // Freed blocks are given back before a snapshot: it fits again.
    sh(&h, &sbx, "rm /home/user/big").await;
    assert_eq!(snapshot(&h, &sbx.id, json!({})).await.status(), 201);
    h.server.shutdown().await;
}

/// Forks count in the snapshots' budget while they live: a fork past it
/// is refused whole, deleting and starting nothing.
#[tokio::test]
async fn a_fork_past_the_budget_is_refused_and_deletes_nothing() {
    let Some(h) = with_a_16_mib_budget().await else {
        return;
    };
    let source = h.create_default().await;
    sh(&h, &source, "head -c 6M /dev/urandom > /home/user/six").await;
    async fn live(h: &Harness) -> usize {
        let listed = h.api_send(Method::GET, "/v2/sandboxes").await;
        listed.json::<Vec<Value>>().await.unwrap().len()
    }
    // Three copies of 6 MiB: past 16 MiB.
    let (status, message) = refused(fork(&h, &source.id, json!({"count": 3})).await).await;
    assert_eq!(status, 507, "{message}");
    assert!(
        message.contains("budget for snapshots and forks is full"),
        "{message}"
    );
    assert_eq!(live(&h).await, 1, "no fork started");
    // One fits; with a snapshot beside it, a second fork does not.
    let first = fork(&h, &source.id, json!({"count": 1})).await;
    assert_eq!(first.status(), 201);
    let first: Vec<Value> = first.json().await.unwrap();
    let first = sandbox_of(&first[0]["sandbox"]);
    assert_eq!(
        snapshot(&h, &source.id, json!({"name": "kept"}))
            .await
            .status(),
        201
    );
    let (status, _) = refused(fork(&h, &source.id, json!({"count": 1})).await).await;
    assert_eq!(status, 507);
    assert_eq!(live(&h).await, 2);
    assert_eq!(sh(&h, &first, "wc -c < /home/user/six").await, "6291456\n");
    // A killed fork gives its room back.
    let kill = h
        .api_send(Method::DELETE, &format!("/sandboxes/{}", first.id))
        .await;
    assert_eq!(kill.status(), 204);
    let mut again = fork(&h, &source.id, json!({"count": 1})).await;
    for _ in 0..50 {
        if again.status() == 201 {
            break;
        }
        // The kill's teardown runs in the background.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        again = fork(&h, &source.id, json!({"count": 1})).await;
    }
    assert_eq!(again.status(), 201);
    h.server.shutdown().await;
}

#[tokio::test]
async fn forks_get_their_own_disks_and_429_past_the_cap() {
    let h = start_with(Options {
        max_sandboxes: 3,
        ..Default::default()
    })
    .await;
    if !has_disks(&h) {
        return;
    }
    let source = h
        .create(json!({"templateID": "base", "envVars": {"FROM": "source"}}))
        .await;
    sh(&h, &source, "echo before > /home/user/state").await;
    let resp = fork(&h, &source.id, json!({"count": 3, "timeout": 60})).await;
    assert_eq!(resp.status(), 201);
    let results: Vec<Value> = resp.json().await.unwrap();
    assert_eq!(results.len(), 3, "{results:?}");
    // The cap (3) holds the source and two forks; the third fork alone fails.
    assert_eq!(results[2]["error"]["code"], 429, "{results:?}");
    assert!(results[2].get("sandbox").is_none());
    let forks: Vec<Sbx> = results[..2]
        .iter()
        .map(|r| sandbox_of(&r["sandbox"]))
        .collect();
    assert_ne!(forks[0].id, forks[1].id);
    for f in &forks {
        assert_eq!(
            sh(&h, f, "cat /home/user/state; echo $FROM").await,
            "before\nsource\n"
        );
        let detail = h.detail(f).await;
        assert_eq!(detail["state"], "running");
    }
    sh(&h, &forks[0], "echo changed > /home/user/state").await;
    assert_eq!(sh(&h, &forks[1], "cat /home/user/state").await, "before\n");
    assert_eq!(sh(&h, &source, "cat /home/user/state").await, "before\n");
    assert_eq!(h.detail(&source).await["state"], "running");
    h.server.shutdown().await;
}

/// The snapshot is the disk at the moment its processes stopped: every line
/// a busy writer appended before it, none after. The writer stamps its
/// lines (`$EPOCHREALTIME`), so in the source's log the line after the
/// snapshot's last one comes after the pause.
#[tokio::test]
async fn a_snapshot_is_the_disk_at_the_freeze_even_while_it_is_written() {
    let data = tempfile::Builder::new()
        .prefix("e2b-snapshot-test-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let h = start_with(Options {
        data_dir: Some(data.path().to_path_buf()),
        ..Default::default()
    })
    .await;
    if !has_disks(&h) {
        return;
    }
    let sbx = h.create_default().await;
    sh(&h, &sbx, "echo fresh > /home/user/fresh").await;
    let writer = "i=0; while :; do echo \"$i $EPOCHREALTIME\" >> /home/user/log; \
                  mkdir -p /home/user/d/$((i % 20)); i=$((i+1)); done";
    let mut busy = h
        .start_process(
            &sbx,
            json!({"process": {"cmd": "/bin/bash", "args": ["-c", writer]}}),
        )
        .await;
    let _ = busy.chunk().await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let info: Value = snapshot(&h, &sbx.id, json!({})).await.json().await.unwrap();
    let raw = info["snapshotID"]
        .as_str()
        .unwrap()
        .strip_suffix(":default")
        .unwrap()
        .to_string();
    let image = data.path().join(".snapshots").join(format!("{raw}.img"));
    let fsck = std::process::Command::new("e2fsck")
        .arg("-fn")
        .arg(&image)
        .output()
        .unwrap();
    assert!(
        fsck.status.success(),
        "{}{}",
        String::from_utf8_lossy(&fsck.stdout),
        String::from_utf8_lossy(&fsck.stderr)
    );
    let from = h.create(json!({"templateID": info["snapshotID"]})).await;
    assert_eq!(sh(&h, &from, "cat /home/user/fresh").await, "fresh\n");
    let line = |text: &str| -> (u64, f64) {
        let (n, t) = text
            .trim()
            .split_once(' ')
            .unwrap_or_else(|| panic!("{text:?}"));
        (n.parse().unwrap(), t.parse().unwrap())
    };
    // Whole lines only, and the last one written before the pause.
    let bad = sh(&h, &from, "grep -cv '^[0-9]* [0-9.]*$' /home/user/log").await;
    assert_eq!(bad, "0\n");
    let (last, at) = line(&sh(&h, &from, "tail -n 1 /home/user/log").await);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let next = sh(
        &h,
        &sbx,
        &format!("grep -m 1 '^{} ' /home/user/log", last + 1),
    )
    .await;
    let (_, resumed) = line(&next);
    assert!(
        resumed - at >= 0.005,
        "line {} came {:.1} ms after the snapshot's last: written before the pause, missing from the snapshot",
        last + 1,
        (resumed - at) * 1e3
    );
    h.server.shutdown().await;
}

#[tokio::test]
async fn an_idempotency_key_makes_one_sandbox() {
    // 600 s of window in 0.6 s.
    let h = start_with(Options {
        time_scale: 1000.0,
        ..Default::default()
    })
    .await;
    let create = |key: &str, body: Value| {
        h.api(Method::POST, "/v2/sandboxes")
            .header("Idempotency-Key", key)
            .json(&body)
            .send()
    };
    let body = json!({"templateID": "base", "metadata": {"k": "v"}});
    let first = create("retry-1", body.clone()).await.unwrap();
    assert_eq!(first.status(), 201);
    let first: Value = first.json().await.unwrap();
    let again = create("retry-1", body.clone()).await.unwrap();
    assert_eq!(again.status(), 201);
    assert_eq!(again.json::<Value>().await.unwrap(), first);
    assert_eq!(h.server.stats().sandboxes_created, 1);
    let (status, message) = refused(
        create("retry-1", json!({"templateID": "base"}))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 409);
    assert!(
        message.contains("already used with a different request"),
        "{message}"
    );
    for bad in ["Upper", "under_score", &"a".repeat(256)] {
        let (status, message) = refused(create(bad, body.clone()).await.unwrap()).await;
        assert_eq!(status, 400, "{bad}");
        assert!(message.contains("invalid Idempotency-Key"), "{message}");
    }
    // A create that failed is not remembered.
    let failed = create("retry-2", json!({"templateID": "nope"}))
        .await
        .unwrap();
    assert_eq!(failed.status(), 404);
    assert_eq!(
        create("retry-2", json!({"templateID": "nope"}))
            .await
            .unwrap()
            .status(),
        404
    );
    // Past the window the key is free again.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let later: Value = create("retry-1", body).await.unwrap().json().await.unwrap();
    assert_ne!(later["sandboxID"], first["sandboxID"]);
    assert_eq!(h.server.stats().sandboxes_created, 2);
    h.server.shutdown().await;
}
