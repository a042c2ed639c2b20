//! Control-plane routes and their error paths.

use reqwest::Method;
use serde_json::{json, Value};

use crate::common::{run, start, start_sandbox, stdout_of};

#[tokio::test]
async fn create_get_list_timeout_kill() {
    let h = start().await;
    let resp = h
        .try_create(
            json!({"templateID": "base", "metadata": {"user": "a b&c"}, "envVars": {"A": "1"}}),
        )
        .await;
    assert_eq!(resp.status(), 201);
    let sbx: Value = resp.json().await.unwrap();
    let id = sbx["sandboxID"].as_str().unwrap().to_string();
    assert_eq!(id.len(), 20);
    assert!(id
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()));
    assert_eq!(sbx["envdVersion"], "0.6.13");
    assert!(sbx["domain"].is_null());
    assert!(sbx["clientID"].is_string());
    assert!(sbx["envdAccessToken"].is_string());

    let detail: Value = h
        .api_send(Method::GET, &format!("/sandboxes/{id}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(detail["state"], "running");
    assert_eq!(detail["metadata"]["user"], "a b&c");
    for key in [
        "startedAt",
        "endAt",
        "cpuCount",
        "memoryMB",
        "diskSizeMB",
        "envdVersion",
    ] {
        assert!(detail.get(key).is_some(), "{key}");
    }

    let other = h
        .create(json!({"templateID": "base", "metadata": {"user": "z"}}))
        .await;
    // metadata=user%3Da%2Bb%2526c : k=v with v percent-encoded once more.
    let q = "metadata=user%3Da%2520b%2526c&state=running";
    let list: Vec<Value> = h
        .api_send(Method::GET, &format!("/v2/sandboxes?{q}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(list[0]["sandboxID"], id.as_str());
    assert!(list[0].get("envdAccessToken").is_none());
    let paused: Vec<Value> = h
        .api_send(Method::GET, "/v2/sandboxes?state=paused")
        .await
        .json()
        .await
        .unwrap();
    assert!(paused.is_empty());
    for (q, n) in [
        ("template=base&startedAfter=2000-01-01T00:00:00%2B02:00", 2),
        ("template=other", 0),
        ("startedAfter=2999-01-01T00:00:00Z", 0),
    ] {
        let list: Vec<Value> = h
            .api_send(Method::GET, &format!("/v2/sandboxes?{q}"))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(list.len(), n, "{q}");
    }
    // Pages of one, newest first (E2B's default), joined by the
    // x-next-token header.
    let first = h.api_send(Method::GET, "/v2/sandboxes?limit=1").await;
    let token = first.headers()["x-next-token"]
        .to_str()
        .unwrap()
        .to_string();
    let first: Vec<Value> = first.json().await.unwrap();
    let second = h
        .api_send(
            Method::GET,
            &format!("/v2/sandboxes?limit=1&nextToken={token}"),
        )
        .await;
    assert!(second.headers().get("x-next-token").is_none());
    let second: Vec<Value> = second.json().await.unwrap();
    assert_eq!((first.len(), second.len()), (1, 1));
    assert_ne!(first[0]["sandboxID"], id.as_str(), "the newer one first");
    assert_eq!(second[0]["sandboxID"], id.as_str());
    let oldest: Vec<Value> = h
        .api_send(Method::GET, "/v2/sandboxes?limit=1&order=asc")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        oldest[0]["sandboxID"],
        id.as_str(),
        "order=asc: the older one"
    );
    for bad in ["limit=0", "limit=101", "limit=x", "order=sideways"] {
        let resp = h
            .api_send(Method::GET, &format!("/v2/sandboxes?{bad}"))
            .await;
        assert_eq!(resp.status(), 400, "{bad}");
    }

    let resp = h
        .api(Method::POST, &format!("/sandboxes/{id}/timeout"))
        .json(&json!({"timeout": 600}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 204);

    let resp = h
        .api_send(Method::DELETE, &format!("/sandboxes/{id}"))
        .await;
    assert_eq!(resp.status(), 204);
    let resp = h
        .api_send(Method::DELETE, &format!("/sandboxes/{id}"))
        .await;
    assert_eq!(resp.status(), 404);
    assert_eq!(resp.headers()["should-retry"], "false");
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["code"], 404);
    assert!(body["message"].is_string());
    for (m, p) in [
        (Method::GET, format!("/sandboxes/{id}")),
        (Method::POST, format!("/sandboxes/{id}/timeout")),
        (Method::POST, format!("/sandboxes/{id}/pause")),
        (Method::POST, format!("/v2/sandboxes/{id}/connect")),
    ] {
        let resp = h
            .api(m, &p)
            .json(&json!({"timeout": 5}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 404, "{p}");
    }
    let stats = h.server.stats();
    assert_eq!(stats.count("POST /sandboxes/{id}/timeout"), 2);
    assert_eq!(stats.count("POST /v2/sandboxes"), 2);
    assert_eq!(stats.live_sandboxes, 1);
    assert_eq!(stats.sandboxes_created, 2);
    assert_eq!(stats.sandboxes_killed, 1);
    let _ = other;
    h.server.shutdown().await;
}

#[tokio::test]
async fn auth_and_bad_requests() {
    let h = start().await;
    let resp = h
        .http
        .post(h.url("/v2/sandboxes"))
        .json(&json!({"templateID": "base"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    assert_eq!(resp.headers()["should-retry"], "false");
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["code"], 401);
    let resp = h
        .http
        .post(h.url("/v2/sandboxes"))
        .header("X-API-KEY", "e2b_wrong")
        .json(&json!({"templateID": "base"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);

    for body in [
        "{not json",
        r#"{"templateID":"base","timeout":0}"#,
        r#"{"templateID":"base","timeout":-5}"#,
        "",
    ] {
        let resp = h
            .api(Method::POST, "/v2/sandboxes")
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 400, "{body}");
        let v: Value = resp.json().await.unwrap();
        assert_eq!(v["code"], 400);
    }
    let resp = h.api_send(Method::GET, "/nope").await;
    assert_eq!(resp.status(), 404);
    // An unknown template is not found, as on E2B, and nothing is created.
    let resp = h.try_create(json!({"templateID": "my-tpl"})).await;
    assert_eq!(resp.status(), 404);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["code"], 404);
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .starts_with("template 'my-tpl' not found"),
        "{v}"
    );
    assert_eq!(h.server.stats().sandboxes_created, 0);
    h.server.shutdown().await;
}

#[tokio::test]
async fn v1_create_and_connect() {
    let h = start().await;
    let resp = h
        .api_json(
            Method::POST,
            "/sandboxes",
            &json!({"templateID": "base", "secure": true, "timeout": 300}),
        )
        .await;
    assert_eq!(resp.status(), 201);
    let v: Value = resp.json().await.unwrap();
    let id = v["sandboxID"].as_str().unwrap();
    let resp = h
        .api(Method::POST, &format!("/sandboxes/{id}/connect"))
        .json(&json!({"timeout": 10}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["sandboxID"], id);
    h.server.shutdown().await;
}

#[tokio::test]
async fn cap_on_live_sandboxes() {
    let h = crate::common::start_with(e2b_local::Options {
        max_sandboxes: 1,
        ..Default::default()
    })
    .await;
    h.create_default().await;
    let resp = h.try_create(json!({"templateID": "base"})).await;
    assert_eq!(resp.status(), 429);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["code"], 429);
    h.server.shutdown().await;
}

#[tokio::test]
async fn pause_keeps_files_and_connect_resumes() {
    let (h, sbx) = start_sandbox().await;
    let resp = h.upload(&sbx, "/home/user/keep.txt", "kept").await;
    assert_eq!(resp.status(), 200);
    let resp = h.pause(&sbx).await;
    assert_eq!(resp.status(), 204);
    let resp = h.pause(&sbx).await;
    assert_eq!(resp.status(), 409);
    let detail: Value = h
        .api_send(Method::GET, &format!("/sandboxes/{}", sbx.id))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(detail["state"], "paused");
    // Paused without autoResume: the sandbox plane does not answer.
    let resp = h
        .sandbox_send(&sbx, 49983, Method::GET, "/files?path=keep.txt")
        .await;
    assert_eq!(resp.status(), 502);
    let resp = h.connect(&sbx, 60).await;
    assert_eq!(resp.status(), 201);
    let resp = h
        .sandbox_send(&sbx, 49983, Method::GET, "/files?path=keep.txt")
        .await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.text().await.unwrap(), "kept");
    h.server.shutdown().await;
}

/// A filesystem-only pause stops the processes in the background too (at
/// the TTL that stop is the only one), and on a loaded machine it may
/// begin late. It never lands on the sandbox a resume booted after it: a
/// process started after the connect outlives it.
#[tokio::test]
async fn a_late_stop_of_a_pause_spares_the_sandbox_resumed_after_it() {
    let (h, sbx) = start_sandbox().await;
    h.server.faults().delay_pause_stops(1_000);
    let resp = h
        .api_json(
            Method::POST,
            &format!("/sandboxes/{}/pause", sbx.id),
            &json!({"memory": false}),
        )
        .await;
    assert_eq!(resp.status(), 204);
    assert_eq!(h.connect(&sbx, 60).await.status(), 201);
    run(&h, &sbx, "setsid sleep 999 > /dev/null 2>&1 < /dev/null &").await;
    tokio::time::sleep(std::time::Duration::from_millis(1_500)).await;
    let (events, _) = run(&h, &sbx, "pgrep -x sleep || echo none").await;
    let out = stdout_of(&events);
    assert!(
        out.trim().parse::<u32>().is_ok(),
        "after the late stop: {out}"
    );
    h.server.shutdown().await;
}

/// Runs `code` in the sandbox's kernel; its `result` line's text, else the
/// whole answer.
async fn execute(h: &crate::common::Harness, sbx: &crate::common::Sbx, code: &str) -> String {
    let answer = h
        .sandbox(sbx, 49999, Method::POST, "/execute")
        .json(&json!({ "code": code }))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    answer
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|v| v["type"] == "result")
        .and_then(|v| v["text"].as_str().map(str::to_string))
        .unwrap_or(answer)
}

/// The host pid of the process whose command line is `sleep <secs>`.
fn sleep_pid(secs: &str) -> Option<u32> {
    let want = format!("sleep\0{secs}\0");
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
        (cmdline == want.as_bytes())
            .then(|| e.file_name().to_str()?.parse().ok())
            .flatten()
    })
}

/// Whether the cgroup freezer holds `pid` frozen (v1 `freezer.state`, v2
/// `cgroup.events`).
fn frozen(pid: u32) -> bool {
    let cgroups = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
    cgroups.lines().any(|line| {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next(), fields.next(), fields.next());
        let path = path.unwrap_or("").trim_start_matches('/');
        match controllers {
            Some("freezer") => {
                std::fs::read_to_string(format!("/sys/fs/cgroup/freezer/{path}/freezer.state"))
                    .is_ok_and(|s| s.trim() == "FROZEN")
            }
            Some("") => std::fs::read_to_string(format!("/sys/fs/cgroup/{path}/cgroup.events"))
                .is_ok_and(|s| s.lines().any(|l| l.trim() == "frozen 1")),
            _ => false,
        }
    })
}

#[tokio::test]
async fn pause_freezes_processes_and_resume_thaws_them_with_their_memory() {
    let (h, sbx) = start_sandbox().await;
    assert_eq!(execute(&h, &sbx, "x = 41\nx").await, "41");
    crate::common::run(&h, &sbx, "nohup sleep 611 >/dev/null 2>&1 &").await;
    let mut pid = None;
    for _ in 0..50 {
        pid = sleep_pid("611");
        if pid.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let pid = pid.expect("the background sleep runs");
    assert!(!frozen(pid));

    let resp = h.pause(&sbx).await;
    assert_eq!(resp.status(), 204);
    assert_eq!(sleep_pid("611"), Some(pid), "paused, not killed");
    assert!(frozen(pid), "its processes are frozen while paused");

    let resp = h.connect(&sbx, 60).await;
    assert_eq!(resp.status(), 201);
    assert_eq!(sleep_pid("611"), Some(pid), "the same process, resumed");
    assert!(!frozen(pid));
    // The kernel kept its variables.
    assert_eq!(execute(&h, &sbx, "x + 1").await, "42");

    // A kill while paused ends frozen processes too.
    let resp = h.pause(&sbx).await;
    assert_eq!(resp.status(), 204);
    let resp = h
        .api_send(Method::DELETE, &format!("/sandboxes/{}", sbx.id))
        .await;
    assert_eq!(resp.status(), 204);
    for _ in 0..100 {
        if sleep_pid("611").is_none() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(sleep_pid("611"), None, "killed with the sandbox");
    h.server.shutdown().await;
}

/// A sandbox's `envVars` go to its envd in one message: up to 64 KiB they
/// reach its commands whole, beyond they are refused at creation.
#[tokio::test]
async fn env_vars_are_bounded_and_reach_commands_whole() {
    let h = start().await;
    let resp = h
        .try_create(json!({"templateID": "base", "envVars": {"BIG": "x".repeat(65 << 10)}}))
        .await;
    assert_eq!(resp.status(), 400);
    let body: Value = resp.json().await.unwrap();
    assert!(
        body["message"]
            .as_str()
            .unwrap_or("")
            .contains("envVars are too large"),
        "{body}"
    );
    let sbx = h
        .create(json!({"templateID": "base", "envVars": {"BIG": "x".repeat(60 << 10)}}))
        .await;
    let (events, _) = crate::common::run(&h, &sbx, "echo ${#BIG}").await;
    assert_eq!(crate::common::stdout_of(&events), format!("{}\n", 60 << 10));
    h.server.shutdown().await;
}
