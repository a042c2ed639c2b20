//! Snapshots and forks (issue 27) through the real host against the real
//! local server: a model forks, works in each fork by id, keeps one; the
//! session's forks end with it unless handed on; the stateless world
//! addresses forks and snapshots from fresh instances; nothing leaks.

use e2b_tools_host::{
    ComponentSource, ForkArgs, SandboxConfig, StatelessOptions, StatelessRuntime,
};
use serde_json::{json, Value};

use crate::harness::{call, env_for, failed, ok, server, session_with};

fn all_tools() -> SandboxConfig {
    SandboxConfig {
        tools: Some(vec!["all".into()]),
        ..SandboxConfig::default()
    }
}

fn ids(result: &Value) -> Vec<String> {
    result["sandbox_ids"]
        .as_array()
        .expect("sandbox_ids")
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_forks_works_in_each_fork_by_id_and_the_session_kills_them() {
    let server = server().await;
    let s = session_with(&server, all_tools(), 1.0).await;
    ok(call(
        &s,
        "write_file",
        json!({"path": "fix.txt", "content": "base"}),
    )
    .await);
    let forked = ok(call(&s, "fork_sandbox", json!({"count": 2})).await);
    let forks = ids(&forked);
    assert_eq!(forks.len(), 2, "{forked}");
    assert_eq!(forked["errors"], json!([]));
    assert_eq!(server.stats().live_sandboxes, 3);
    // Each fork starts with the files and goes its own way.
    for (fork, fix) in forks.iter().zip(["a", "b"]) {
        let r = ok(call(
            &s,
            "read_file",
            json!({"path": "fix.txt", "sandbox_id": fork}),
        )
        .await);
        assert_eq!(r["content"], "base");
        ok(call(
            &s,
            "run_command",
            json!({"command": format!("echo {fix} > fix.txt"), "sandbox_id": fork}),
        )
        .await);
    }
    for (fork, fix) in forks.iter().zip(["a\n", "b\n"]) {
        let r = ok(call(
            &s,
            "read_file",
            json!({"path": "fix.txt", "sandbox_id": fork}),
        )
        .await);
        assert_eq!(r["content"], fix);
    }
    let own = ok(call(&s, "read_file", json!({"path": "fix.txt"})).await);
    assert_eq!(
        own["content"], "base",
        "the session's own sandbox is untouched"
    );
    // An id the session did not make is refused, and names no sandbox.
    let refused = call(
        &s,
        "read_file",
        json!({"path": "fix.txt", "sandbox_id": "nosuchsandbox"}),
    )
    .await;
    failed(
        &refused,
        "Failed to read file: Sandbox nosuchsandbox is not one of this session's",
    );
    // The snapshot of a fork outlives it.
    let snap = ok(call(
        &s,
        "create_snapshot",
        json!({"name": "fix-b", "sandbox_id": forks[1]}),
    )
    .await);
    let snapshot_id = snap["snapshot_id"].as_str().unwrap().to_string();
    assert!(snap["names"].to_string().contains("fix-b"), "{snap}");
    assert!(s.shutdown().await.unwrap());
    assert_eq!(
        server.stats().live_sandboxes,
        0,
        "the forks ended with the session"
    );
    // A new session from the snapshot (its template) has the fork's files.
    let from = session_with(
        &server,
        SandboxConfig {
            template: Some(snapshot_id),
            ..SandboxConfig::default()
        },
        1.0,
    )
    .await;
    let r = ok(call(&from, "read_file", json!({"path": "fix.txt"})).await);
    assert_eq!(r["content"], "b\n");
    from.shutdown().await.unwrap();
    assert_eq!(server.stats().live_sandboxes, 0);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_forks_handed_on_outlive_the_session_and_bad_counts_are_refused() {
    let server = server().await;
    let s = session_with(&server, all_tools(), 1.0).await;
    let forks = s
        .fork_sandbox(ForkArgs {
            count: Some(1),
            timeout_seconds: Some(120),
            keep: true,
        })
        .await
        .unwrap()
        .expect("forked");
    assert_eq!((forks.sandbox_ids.len(), forks.failures.len()), (1, 0));
    let refused = s
        .fork_sandbox(ForkArgs {
            count: Some(9),
            timeout_seconds: None,
            keep: false,
        })
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(refused.kind, e2b_tools_host::ErrorKind::InvalidArgument);
    let snapshot = s.create_snapshot(None).await.unwrap().expect("a snapshot");
    assert!(!snapshot.snapshot_id.is_empty());
    s.shutdown().await.unwrap();
    // Handed on: still there, until killed or its timeout.
    assert_eq!(server.stats().live_sandboxes, 1);
    let kept = &forks.sandbox_ids[0];
    assert_eq!(
        crate::harness::sandbox_detail(&server, kept).await["state"],
        "running"
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_tools_stay_e2b_adks_and_refuse_the_fork_tools() {
    let server = server().await;
    let s = session_with(&server, SandboxConfig::default(), 1.0).await;
    let names = crate::harness::tool_names(&s).await;
    assert!(!names
        .iter()
        .any(|n| n == "fork_sandbox" || n == "create_snapshot"));
    for spec in s.list_tools().await.unwrap() {
        assert!(
            !spec.parameters_schema.contains("sandbox_id"),
            "{}",
            spec.name
        );
    }
    let refused = call(&s, "fork_sandbox", json!({})).await;
    failed(&refused, "Unknown tool: fork_sandbox.");
    s.shutdown().await.unwrap();
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateless_instances_fork_by_id_and_start_from_a_snapshot() {
    let server = server().await;
    let runtime = StatelessRuntime::load(ComponentSource::EmbeddedStateless).unwrap();
    let o = StatelessOptions {
        env: env_for(&server),
        ..StatelessOptions::default()
    };
    let call = |tool: &'static str, args: Value| {
        let (runtime, o) = (&runtime, &o);
        async move { runtime.call(o, tool, &args).await.expect("a result") }
    };
    let first = ok(call(
        "run_code",
        json!({"code": "open('state.txt', 'w').write('kept')"}),
    )
    .await);
    let id = first["sandbox_id"].as_str().unwrap().to_string();
    let forked = ok(call("fork_sandbox", json!({"sandbox_id": id, "count": 2})).await);
    assert_eq!(forked["sandbox_id"], id.as_str());
    let forks = ids(&forked);
    assert_eq!(forks.len(), 2);
    // A fresh instance works in a fork by its id.
    let r = ok(call(
        "read_file",
        json!({"sandbox_id": forks[0], "path": "state.txt"}),
    )
    .await);
    assert_eq!(
        (r["content"].as_str(), r["sandbox_id"].as_str()),
        (Some("kept"), Some(forks[0].as_str()))
    );
    let snap = ok(call(
        "create_snapshot",
        json!({"sandbox_id": forks[0], "name": ""}),
    )
    .await);
    let snapshot_id = snap["snapshot_id"].as_str().unwrap().to_string();
    // A snapshot id as sandbox_id starts a new sandbox from it.
    let born = ok(call(
        "read_file",
        json!({"sandbox_id": snapshot_id, "path": "state.txt"}),
    )
    .await);
    assert_eq!(born["content"], "kept");
    let born_id = born["sandbox_id"].as_str().unwrap().to_string();
    assert!(
        born_id != id && !forks.contains(&born_id) && !born_id.contains(':'),
        "{born}"
    );
    for sandbox in [id, born_id, forks[0].clone(), forks[1].clone()] {
        assert_eq!(
            ok(call("close_sandbox", json!({"sandbox_id": sandbox})).await)["closed"],
            "killed"
        );
    }
    assert_eq!(server.stats().live_sandboxes, 0, "nothing leaked");
    let unknown = call("fork_sandbox", json!({"sandbox_id": "nosuchsandbox"})).await;
    assert_eq!(
        (unknown["success"].as_bool(), unknown["kind"].as_str()),
        (Some(false), Some("not-found")),
        "{unknown}"
    );
    server.shutdown().await;
}
