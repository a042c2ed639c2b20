//! `e2b-tools sandbox list | kill` and `snapshot list | delete`, and a local
//! preview URL, against a separate local server through the E2B path (the
//! variables `local serve` prints), as a user runs them.

use crate::binary::{e2b_tools, run, Run};
use crate::mcp::{api_post, live_sandboxes, local_serve, Stop};
use crate::signals::{create_sandbox, Env};

fn command(args: &[&str], env: &Env) -> Run {
    let mut command = e2b_tools(args);
    command.envs(env);
    run(command, "")
}

/// A snapshot of sandbox `id`, through the server's API: its id.
fn snapshot_of(env: &Env, id: &str) -> String {
    let made = api_post(
        env,
        &format!("/sandboxes/{id}/snapshots"),
        r#"{"name":"kept"}"#,
    );
    made["snapshotID"].as_str().expect("an id").to_string()
}

#[test]
fn sandboxes_and_snapshots_are_listed_killed_and_deleted_by_id() {
    let state = tempfile::tempdir().unwrap();
    let (local, env) = local_serve(state.path());
    let _local = Stop(local);
    let live = || live_sandboxes(&env["E2B_API_URL"], &env["E2B_API_KEY"]);

    let out = command(&["sandbox", "list"], &env);
    assert_eq!(
        (out.status, out.stdout.as_str()),
        (0, "no sandboxes\n"),
        "{out:?}"
    );
    let (a, b) = (create_sandbox(&env), create_sandbox(&env));
    let out = command(&["sandbox", "list"], &env);
    assert_eq!(out.status, 0, "{out:?}");
    assert!(out.stdout.starts_with("SANDBOX ID"), "{out:?}");
    assert!(
        out.stdout.contains(&a) && out.stdout.contains(&b),
        "{out:?}"
    );
    let listed = command(&["sandbox", "list", "--json"], &env).json();
    let mut ids: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sandbox_id"].as_str().unwrap())
        .collect();
    ids.sort();
    let mut made = [a.as_str(), b.as_str()];
    made.sort();
    assert_eq!(ids, made);
    assert_eq!(listed[0]["state"], "running");

    // Snapshots: listed with their names, deleted by id.
    let snapshot = snapshot_of(&env, &a);
    let out = command(&["snapshot", "list"], &env);
    assert!(out.stdout.contains(&snapshot), "{out:?}");
    let out = command(&["snapshot", "delete", &snapshot], &env);
    assert_eq!(
        (out.status, out.stdout.trim()),
        (0, format!("deleted {snapshot}").as_str()),
        "{out:?}"
    );
    let out = command(&["snapshot", "list", "--json"], &env);
    assert_eq!(out.json(), serde_json::json!([]), "{out:?}");
    let out = command(&["snapshot", "delete", &snapshot], &env);
    assert_eq!(out.status, 1, "a second delete finds none: {out:?}");

    // Kill one by id, then all; an unknown id is a failure, not a crash.
    let out = command(&["sandbox", "kill", &a], &env);
    assert_eq!(
        (out.status, out.stdout.trim()),
        (0, format!("killed {a}").as_str()),
        "{out:?}"
    );
    assert_eq!(live(), 1);
    let out = command(&["sandbox", "kill", "--all"], &env);
    assert_eq!(out.status, 0, "{out:?}");
    assert_eq!(live(), 0);
    let out = command(&["sandbox", "kill", &a], &env);
    assert_eq!(out.status, 1, "{out:?}");
    assert!(out.stderr.contains("already gone"), "{out:?}");

    // Without a server named, a usage error that says what to set.
    let out = run(e2b_tools(&["sandbox", "list"]), "");
    assert_eq!(out.status, 2, "{out:?}");
    assert!(out.stderr.contains("E2B_API_KEY"), "{out:?}");
    // A wrong key: the server's refusal, in words.
    let mut wrong = env.clone();
    wrong.insert("E2B_API_KEY".into(), "e2b_wrong".into());
    let out = command(&["sandbox", "list"], &wrong);
    assert_eq!(out.status, 1, "{out:?}");
    assert!(out.stderr.contains("Failed to list sandboxes"), "{out:?}");
}

#[test]
fn a_local_preview_url_reaches_the_service_from_the_host() {
    use std::io::{BufRead, BufReader, Read, Write};
    let state = tempfile::tempdir().unwrap();
    let (local, env) = local_serve(state.path());
    let _local = Stop(local);
    let mut batch = e2b_tools(&["--backend", "e2b", "batch"])
        .envs(&env)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(batch.stdout.take().unwrap());
    let start = serde_json::json!({"tool": "start_background_command",
        "args": {"command": "python3 -m http.server 8000", "port": 8000}});
    writeln!(batch.stdin.as_mut().unwrap(), "{start}").unwrap();
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let started: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(started["readiness"], "ready", "{started}");
    let url = started["preview_url"].as_str().unwrap().to_string();
    // http://8000-<id>.localhost:<the server's port>: loopback, routed by Host.
    let rest = url.strip_prefix("http://").expect("plain http on loopback");
    let (host, port) = rest.rsplit_once(':').unwrap();
    assert!(
        host.starts_with("8000-") && host.ends_with(".localhost"),
        "{url}"
    );
    assert!(
        env["E2B_SANDBOX_URL"].ends_with(&format!(":{port}")),
        "{url}"
    );
    let mut tcp =
        std::net::TcpStream::connect(("127.0.0.1", port.parse::<u16>().unwrap())).unwrap();
    write!(
        tcp,
        "GET / HTTP/1.1\r\nHost: {rest}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    tcp.read_to_string(&mut answer).unwrap();
    assert!(answer.split_whitespace().nth(1) == Some("200"), "{answer}");
    assert!(
        answer.contains("Directory listing"),
        "the sandbox's http.server answered"
    );
    drop(batch.stdin.take());
    assert!(batch.wait().unwrap().success());
}
