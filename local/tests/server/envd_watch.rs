//! Directory watchers (`WatchDir`, `CreateWatcher`/`GetWatcherEvents`/
//! `RemoveWatcher`) and file metadata (`X-Metadata-*` uploads, `metadata`
//! in entry info) over raw Connect JSON and `/files`.

use std::time::{Duration, Instant};

use e2b_wire::connect::{encode_envelope, EnvelopeDecoder};
use serde_json::{json, Value};

use crate::common::{run, start_sandbox, Harness, Sbx};

/// Polls watcher `id` until an event `(name, type)` shows (5 s); every
/// event seen.
async fn poll_until(h: &Harness, sbx: &Sbx, id: &str, name: &str, kind: &str) -> Vec<Value> {
    poll_all(h, sbx, id, &[(name, kind)]).await
}

/// Polls watcher `id` until every `(name, type)` in `want` showed (5 s).
async fn poll_all(h: &Harness, sbx: &Sbx, id: &str, want: &[(&str, &str)]) -> Vec<Value> {
    let mut seen = Vec::new();
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        let (status, v) = h
            .filesystem(sbx, "GetWatcherEvents", json!({"watcherId": id}))
            .await;
        assert_eq!(status, 200, "{v}");
        seen.extend(v["events"].as_array().cloned().unwrap_or_default());
        let has = |(name, kind): &(&str, &str)| {
            seen.iter()
                .any(|e| e["name"] == *name && e["type"] == *kind)
        };
        if want.iter().all(has) {
            return seen;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("not all of {want:?} in {seen:?}");
}

async fn create_watcher(h: &Harness, sbx: &Sbx, body: Value) -> String {
    let (status, v) = h.filesystem(sbx, "CreateWatcher", body).await;
    assert_eq!(status, 200, "{v}");
    v["watcherId"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn watch_dir_streams_events_until_its_deadline() {
    let (h, sbx) = start_sandbox().await;
    run(&h, &sbx, "mkdir -p /home/user/w").await;
    let resp = h
        .sandbox(
            &sbx,
            49983,
            reqwest::Method::POST,
            "/filesystem.Filesystem/WatchDir",
        )
        .header("content-type", "application/connect+json")
        .header("connect-timeout-ms", "3000")
        .header("keepalive-ping-interval", "1")
        .body(encode_envelope(
            0,
            br#"{"path": "w", "includeEntry": true}"#,
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let mut resp = resp;
    let mut dec = EnvelopeDecoder::new(1 << 20);
    let mut msgs: Vec<Value> = Vec::new();
    let mut end = Value::Null;
    let mut wrote = false;
    while let Some(chunk) = resp.chunk().await.unwrap() {
        dec.push(&chunk);
        while let Some(env) = dec.next_envelope().unwrap() {
            let v: Value = serde_json::from_slice(&env.payload).unwrap();
            if env.is_end_stream() {
                end = v;
            } else {
                msgs.push(v);
            }
        }
        if !wrote && !msgs.is_empty() {
            wrote = true;
            run(&h, &sbx, "echo hi > /home/user/w/a.txt && mkdir /home/user/w/sub && echo x > /home/user/w/sub/deep").await;
        }
    }
    assert_eq!(msgs[0], json!({"start": {}}));
    let events: Vec<(&str, &str)> = msgs
        .iter()
        .filter_map(|m| m.get("filesystem"))
        .map(|e| (e["name"].as_str().unwrap(), e["type"].as_str().unwrap()))
        .collect();
    assert!(
        events.contains(&("a.txt", "EVENT_TYPE_CREATE")),
        "{events:?}"
    );
    assert!(
        events.contains(&("a.txt", "EVENT_TYPE_WRITE")),
        "{events:?}"
    );
    assert!(events.contains(&("sub", "EVENT_TYPE_CREATE")), "{events:?}");
    // Not recursive.
    assert!(
        events.iter().all(|(n, _)| !n.contains("deep")),
        "{events:?}"
    );
    let created = msgs
        .iter()
        .filter_map(|m| m.get("filesystem"))
        .find(|e| e["name"] == "a.txt")
        .unwrap();
    assert_eq!(created["entry"]["path"], "/home/user/w/a.txt");
    assert!(
        msgs.iter().any(|m| m.get("keepalive").is_some()),
        "{msgs:?}"
    );
    assert_eq!(end["error"]["code"], "deadline_exceeded", "{end}");

    // A missing directory and a file are refused, as envd.
    let (msgs, end) = h
        .stream(
            &sbx,
            "/filesystem.Filesystem/WatchDir",
            json!({"path": "/home/user/nope"}),
            &[],
        )
        .await;
    assert!(msgs.is_empty());
    assert_eq!(end["error"]["code"], "not_found", "{end}");
    assert_eq!(
        end["error"]["message"],
        "path /home/user/nope not found: stat /home/user/nope: no such file or directory"
    );
    let (_, end) = h
        .stream(
            &sbx,
            "/filesystem.Filesystem/WatchDir",
            json!({"path": "/home/user/w/a.txt"}),
            &[],
        )
        .await;
    assert_eq!(end["error"]["code"], "invalid_argument", "{end}");
    h.server.shutdown().await;
}

#[tokio::test]
async fn polled_watchers_recursive_symlinks_and_limits() {
    let (h, sbx) = start_sandbox().await;
    run(
        &h,
        &sbx,
        "mkdir -p /home/user/p/old /home/user/elsewhere && ln -s ../elsewhere /home/user/p/link && ln -s / /home/user/rootlink",
    )
    .await;
    let id = create_watcher(&h, &sbx, json!({"path": "/home/user/p", "recursive": true})).await;
    // A directory made after the watch, and a file in it at once.
    let (status, _) = h
        .filesystem(&sbx, "MakeDir", json!({"path": "/home/user/p/new/deeper"}))
        .await;
    assert_eq!(status, 200);
    run(&h, &sbx, "echo x > /home/user/p/new/deeper/f.txt; echo y > /home/user/p/old/g; echo z > /home/user/elsewhere/through-link").await;
    let want = [
        ("old/g", "EVENT_TYPE_WRITE"),
        ("new", "EVENT_TYPE_CREATE"),
        ("new/deeper/f.txt", "EVENT_TYPE_CREATE"),
        ("link", "EVENT_TYPE_CREATE"),
    ];
    let seen = poll_all(&h, &sbx, &id, &want[..3]).await;
    assert!(!seen.iter().any(|e| e["name"] == want[3].0), "{seen:?}");
    // A symlinked directory is an entry, never a watched subtree.
    assert!(
        seen.iter()
            .all(|e| !e["name"].as_str().unwrap().starts_with("link/")),
        "{seen:?}"
    );
    // Events since the last poll only.
    let (_, v) = h
        .filesystem(&sbx, "GetWatcherEvents", json!({"watcherId": id}))
        .await;
    assert!(
        v["events"]
            .as_array()
            .is_none_or(|e| e.iter().all(|e| e["name"] != "old/g")),
        "{v}"
    );
    let (status, _) = h
        .filesystem(&sbx, "RemoveWatcher", json!({"watcherId": id}))
        .await;
    assert_eq!(status, 200);
    let (status, v) = h
        .filesystem(&sbx, "GetWatcherEvents", json!({"watcherId": id}))
        .await;
    assert_eq!(
        (status, v["code"].as_str()),
        (404, Some("not_found")),
        "{v}"
    );

    // A symlink to the sandbox's `/` watches the sandbox's root, not the
    // host's: /tmp there is the sandbox's /tmp.
    let id = create_watcher(&h, &sbx, json!({"path": "/home/user/rootlink/tmp"})).await;
    run(&h, &sbx, "echo q > /tmp/via-root").await;
    poll_until(&h, &sbx, &id, "via-root", "EVENT_TYPE_CREATE").await;

    // At most 8 watchers a sandbox (one above is still alive); another
    // sandbox cannot poll or remove this one's.
    let mut ids = vec![id];
    for _ in 1..8 {
        ids.push(create_watcher(&h, &sbx, json!({"path": "/tmp"})).await);
    }
    let (status, v) = h
        .filesystem(&sbx, "CreateWatcher", json!({"path": "/tmp"}))
        .await;
    assert_eq!(
        (status, v["code"].as_str()),
        (429, Some("resource_exhausted")),
        "{v}"
    );
    let other = h.create_default().await;
    let (status, _) = h
        .filesystem(&other, "GetWatcherEvents", json!({"watcherId": ids[0]}))
        .await;
    assert_eq!(status, 404);
    let (status, _) = h
        .filesystem(&other, "RemoveWatcher", json!({"watcherId": ids[0]}))
        .await;
    assert_eq!(status, 404);
    h.filesystem(&sbx, "RemoveWatcher", json!({"watcherId": ids[0]}))
        .await;
    let again = create_watcher(&h, &sbx, json!({"path": "/tmp"})).await;

    // A pause keeps the watchers: envd is frozen with the rest of the
    // sandbox, memory and all, as E2B's snapshot keeps it.
    let resp = h.pause(&sbx).await;
    assert_eq!(resp.status(), 204);
    let resp = h.connect(&sbx, 60).await;
    assert!(resp.status().is_success(), "{}", resp.status());
    crate::common::run(&h, &sbx, "touch /tmp/after-resume").await;
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let (status, v) = h
            .filesystem(&sbx, "GetWatcherEvents", json!({"watcherId": again}))
            .await;
        assert_eq!(status, 200, "the watcher did not outlive the pause: {v}");
        if v.to_string().contains("after-resume") {
            break;
        }
        assert!(Instant::now() < until, "no event after the resume: {v}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Removing them frees the budget.
    for id in ids[1..].iter().chain([&again]) {
        let (status, v) = h
            .filesystem(&sbx, "RemoveWatcher", json!({"watcherId": id}))
            .await;
        assert_eq!(status, 200, "{v}");
    }
    for _ in 0..8 {
        create_watcher(&h, &sbx, json!({"path": "/tmp"})).await;
    }
    let (status, v) = h
        .filesystem(&sbx, "CreateWatcher", json!({"path": "/home/user/missing"}))
        .await;
    assert_eq!(
        (status, v["code"].as_str()),
        (404, Some("not_found")),
        "{v}"
    );
    h.server.shutdown().await;
}

async fn upload(
    h: &Harness,
    sbx: &Sbx,
    path: &str,
    body: &str,
    md: &[(&str, &str)],
) -> (u16, Value) {
    let mut req = h
        .sandbox(
            sbx,
            49983,
            reqwest::Method::POST,
            &format!("/files?path={path}"),
        )
        .header("content-type", "application/octet-stream")
        .body(body.to_string());
    for (k, v) in md {
        req = req.header(format!("X-Metadata-{k}"), *v);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap())
}

#[tokio::test]
async fn upload_metadata_shows_in_entry_info() {
    let (h, sbx) = start_sandbox().await;
    let (status, v) = upload(
        &h,
        &sbx,
        "/home/user/m.txt",
        "x",
        &[("Author", "mish"), ("purpose", "a test")],
    )
    .await;
    assert_eq!(status, 200, "{v}");
    let want = json!({"author": "mish", "purpose": "a test"});
    assert_eq!(v[0]["metadata"], want, "{v}");
    let (_, v) = h.filesystem(&sbx, "Stat", json!({"path": "m.txt"})).await;
    assert_eq!(v["entry"]["metadata"], want, "{v}");
    let (_, v) = h
        .filesystem(&sbx, "ListDir", json!({"path": "/home/user"}))
        .await;
    let listed = v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "m.txt")
        .unwrap();
    assert_eq!(listed["metadata"], want);
    // Kept by a rename, and by a move across mounts (a copy).
    let (_, v) = h
        .filesystem(
            &sbx,
            "Move",
            json!({"source": "m.txt", "destination": "n.txt"}),
        )
        .await;
    assert_eq!(v["entry"]["metadata"], want, "{v}");
    let (_, v) = h
        .filesystem(
            &sbx,
            "Move",
            json!({"source": "n.txt", "destination": "/tmp/n.txt"}),
        )
        .await;
    assert_eq!(v["entry"]["metadata"], want, "{v}");
    // A new upload replaces the whole set; none clears it.
    let (_, v) = upload(&h, &sbx, "/tmp/n.txt", "y", &[("author", "alice")]).await;
    assert_eq!(v[0]["metadata"], json!({"author": "alice"}));
    let (_, v) = upload(&h, &sbx, "/tmp/n.txt", "z", &[]).await;
    assert!(v[0].get("metadata").is_none(), "{v}");
    let (_, v) = h
        .filesystem(&sbx, "Stat", json!({"path": "/tmp/n.txt"}))
        .await;
    assert!(v["entry"].get("metadata").is_none(), "{v}");

    // Multipart: the same metadata on every file.
    let form = crate::common::files_form(&[("/tmp/one", b"1"), ("/tmp/two", b"2")]);
    let v: Value = h
        .sandbox(&sbx, 49983, reqwest::Method::POST, "/files")
        .header("X-Metadata-Batch", "b1")
        .multipart(form)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v[0]["metadata"], json!({"batch": "b1"}), "{v}");
    assert_eq!(v[1]["metadata"], json!({"batch": "b1"}), "{v}");

    // Bounds: too many keys, too long a value; nothing is written.
    let many: Vec<(String, String)> = (0..33).map(|i| (format!("k{i}"), "v".into())).collect();
    let many: Vec<(&str, &str)> = many.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let (status, v) = upload(&h, &sbx, "/tmp/refused", "x", &many).await;
    assert_eq!(status, 400, "{v}");
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .starts_with("invalid metadata: "),
        "{v}"
    );
    let long = "v".repeat(1025);
    let (status, _) = upload(&h, &sbx, "/tmp/refused", "x", &[("a", &long)]).await;
    assert_eq!(status, 400);
    let (status, _) = h
        .filesystem(&sbx, "Stat", json!({"path": "/tmp/refused"}))
        .await;
    assert_eq!(status, 404);

    // Set inside the sandbox: shown (bounded); a symlink has none of its
    // target's.
    run(
        &h,
        &sbx,
        "cd /tmp && echo > own && python3 -c \"import os; os.setxattr('own', 'user.e2b.k', b'v'); os.setxattr('own', 'user.e2b.big', b'x' * 2000); os.setxattr('own', 'user.other', b'o')\" && ln -s own own-link",
    )
    .await;
    let (_, v) = h
        .filesystem(&sbx, "Stat", json!({"path": "/tmp/own"}))
        .await;
    assert_eq!(v["entry"]["metadata"], json!({"k": "v"}), "{v}");
    let (status, v) = h
        .filesystem(&sbx, "Stat", json!({"path": "/tmp/own-link"}))
        .await;
    assert_eq!(status, 200, "{v}");
    assert!(v["entry"].get("metadata").is_none(), "{v}");
    h.server.shutdown().await;
}
