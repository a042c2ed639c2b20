//! `e2b-tools --stateless call`: the stateless component, one process and
//! one fresh instance per call, the sandbox carried by its id.

use crate::binary::{e2b_tools, run, Run};
use e2b_local::{LocalServer, Options};
use serde_json::Value;

/// `e2b-tools --backend e2b --stateless ARGS` against `server`.
async fn stateless(server: &LocalServer, args: &[&str]) -> (Run, Value) {
    let url = server.url();
    let mut all = vec![
        "--backend",
        "e2b",
        "--api-url",
        &url,
        "--sandbox-url",
        &url,
        "--stateless",
    ];
    all.extend_from_slice(args);
    let mut command = e2b_tools(&all);
    command.env("E2B_API_KEY", server.api_key());
    let out = tokio::task::spawn_blocking(move || run(command, ""))
        .await
        .expect("the run finishes");
    let value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", out.stdout, out.stderr));
    (out, value)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn separate_processes_share_a_sandbox_by_id_and_close_it() {
    let server = LocalServer::start(Options::default()).await.unwrap();
    let (out, first) = stateless(
        &server,
        &["call", "run_code", r#"{"code": "x = 41"}"#, "--json"],
    )
    .await;
    assert_eq!(out.status, 0, "{}", out.stderr);
    let id = first["sandbox_id"].as_str().expect("an id").to_string();
    assert_eq!(
        server.stats().live_sandboxes,
        1,
        "the sandbox outlives the call"
    );

    let (_, second) = stateless(
        &server,
        &[
            "--sandbox-id",
            &id,
            "call",
            "run_code",
            r#"{"code": "print(x + 1)"}"#,
            "--json",
        ],
    )
    .await;
    assert_eq!(second["stdout"], "42\n", "{second}");
    let (out, closed) = stateless(
        &server,
        &["--sandbox-id", &id, "call", "close_sandbox", "--json"],
    )
    .await;
    assert_eq!(
        (out.status, closed["closed"].as_str()),
        (0, Some("killed")),
        "{closed}"
    );
    assert_eq!(server.stats().live_sandboxes, 0);

    // The id is gone: a failure (exit 1) naming it, and no new sandbox.
    let (out, gone) = stateless(
        &server,
        &[
            "--sandbox-id",
            &id,
            "call",
            "run_command",
            r#"{"command": "true"}"#,
            "--json",
        ],
    )
    .await;
    assert_eq!(
        (out.status, gone["kind"].as_str()),
        (1, Some("not-found")),
        "{gone}"
    );
    assert_eq!(server.stats().sandboxes_created, 1);
}
