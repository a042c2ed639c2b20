//! The security promises, each tried against the real pieces: the outbound
//! allow-list, secrets kept out of results, logs and the sandbox, the
//! memory cap, and the local server's own authentication and isolation.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use e2b_local::{LocalServer, Options};
use e2b_tools_host::{ErrorKind, OutboundPolicy, Session, SessionError, SessionOptions};
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;

use crate::harness::{call, command, env_for, http, ok, runtime, server, session};

/// Everything the host and server log, at every level, for the whole binary.
fn captured_logs() -> &'static Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let writer = LogWriter(buffer.clone());
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(
                "info,e2b_tools=trace,e2b_tools_host=trace,e2b_local=trace",
            ))
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        // Another module may have installed one first; then logs go there
        // and the sanity check below says so.
        let _ = tracing::subscriber::set_global_default(subscriber);
        buffer
    })
}

#[derive(Clone)]
struct LogWriter(Arc<Mutex<Vec<u8>>>);

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The envd access token of `sandbox_id`, from the control plane.
async fn access_token(server: &LocalServer, sandbox_id: &str) -> String {
    let (status, body) = http(
        server,
        "GET",
        &format!("/sandboxes/{sandbox_id}"),
        &[("X-API-KEY", server.api_key())],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let detail: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    detail["envdAccessToken"]
        .as_str()
        .expect("a token")
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_to_a_host_outside_the_allow_list_is_refused() {
    let allowed = server().await;
    let elsewhere = server().await;
    // The component is pointed at `elsewhere`, the allow-list names only `allowed`.
    let s = Session::open(
        runtime(),
        SessionOptions {
            env: env_for(&elsewhere),
            policy: Some(
                OutboundPolicy::for_endpoints(Some(&allowed.url()), Some(&allowed.url()), None)
                    .unwrap(),
            ),
            ..SessionOptions::default()
        },
    )
    .await
    .unwrap();
    let err = s
        .run_command(&command("true"))
        .await
        .unwrap()
        .expect_err("refused");
    assert_eq!(err.kind, ErrorKind::Network, "{err:?}");
    assert!(!err.message.is_empty());
    let r = call(&s, "read_file", json!({"path": "/etc/hostname"})).await;
    assert_eq!(r["success"], false, "{r}");
    assert!(
        elsewhere.stats().requests.is_empty(),
        "nothing reached it: {:?}",
        elsewhere.stats()
    );
    assert!(
        allowed.stats().requests.is_empty(),
        "nor the allowed one (not asked)"
    );
    assert_eq!(elsewhere.stats().live_sandboxes, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_and_token_never_appear_in_results_logs_or_the_sandbox() {
    let logs = captured_logs();
    let server = server().await;
    let mut env = env_for(&server);
    env.insert("NOT_E2B_SECRET".into(), "leak-marker-4711".into());
    let s = Session::open(
        runtime(),
        SessionOptions {
            env,
            ..SessionOptions::default()
        },
    )
    .await
    .unwrap();
    let mut results = Vec::new();
    results.push(ok(call(
        &s,
        "run_command",
        json!({"command": "env; cat /proc/self/environ | tr '\\0' '\\n'"}),
    )
    .await));
    let id = s.sandbox_id().expect("a sandbox");
    let token = access_token(&server, &id).await;
    let key = server.api_key().to_string();
    assert!(token.len() >= 8 && key.len() >= 8);

    let env_out = results[0]["stdout"].as_str().unwrap().to_string();
    assert!(env_out.contains("PATH="), "the env listing ran: {env_out}");
    for secret in [&key, &token, &"leak-marker-4711".to_string()] {
        assert!(
            !env_out.contains(secret.as_str()),
            "the sandbox env holds {secret}"
        );
    }
    // Successes and every kind of failure.
    results.push(
        call(
            &s,
            "run_command",
            json!({"command": "echo $E2B_API_KEY $E2B_ACCESS_TOKEN; exit 3"}),
        )
        .await,
    );
    results.push(
        call(
            &s,
            "run_code",
            json!({"code": "import os; print(dict(os.environ)); 1/0"}),
        )
        .await,
    );
    results.push(call(&s, "read_file", json!({"path": "/nope/missing"})).await);
    results.push(
        call(
            &s,
            "write_file",
            json!({"path": "/proc/forbidden", "content": "x"}),
        )
        .await,
    );
    results.push(call(&s, "list_files", json!({"path": "/home/user"})).await);
    results.push(
        call(
            &s,
            "start_background_command",
            json!({"command": "sleep 1"}),
        )
        .await,
    );
    results.push(call(&s, "no_such_tool", json!({})).await);
    results.push(call(&s, "run_command", json!({"command": 42})).await);
    // A failing keyed request: the server answers 401 for a wrong key.
    let mut wrong = env_for(&server);
    wrong.insert("E2B_API_KEY".into(), format!("{key}x"));
    let w = Session::open(
        runtime(),
        SessionOptions {
            env: wrong,
            ..SessionOptions::default()
        },
    )
    .await
    .unwrap();
    let err = w
        .run_command(&command("true"))
        .await
        .unwrap()
        .expect_err("bad key");
    assert_eq!(err.kind, ErrorKind::Auth, "{err:?}");
    results.push(json!({"error": err.message, "partial": err.partial_output}));
    assert!(s.shutdown().await.unwrap());

    for r in &results {
        let text = r.to_string();
        assert!(!text.contains(&key), "the key is in a result: {text}");
        assert!(!text.contains(&token), "the token is in a result: {text}");
    }
    let logged = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
    if logged.contains("e2b_tools::audit") {
        assert!(!logged.contains(&key), "the key is in the logs");
        assert!(!logged.contains(&token), "the token is in the logs");
    } else {
        panic!(
            "the log capture saw no audit line; captured {} bytes",
            logged.len()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_really_in_the_sandbox_is_redacted_from_every_field() {
    let server = server().await;
    let s = session(&server).await;
    let key = server.api_key().to_string();
    // The sandbox gets the key only in two halves, which are not secrets
    // alone; it puts them together itself.
    let (a, b) = key.split_at(key.len() / 2);
    let halves = json!({"A": a, "B": b});
    let leaks = |text: &str| text.contains(&key) || text.contains(&key[..12]);

    // Printed in two halves, apart in time (two chunks of the stream).
    let r = ok(call(
        &s,
        "run_command",
        json!({"command": "printf %s \"$A\"; sleep 0.3; printf '%s\\n' \"$B\"", "envs": halves}),
    )
    .await);
    assert_eq!(r["stdout"], "<redacted>\n", "{r}");
    // Cut by the 10,000-byte truncation: no prefix of it survives.
    let r = ok(call(
        &s,
        "run_command",
        json!({"command": "head -c 9995 /dev/zero | tr '\\0' a; printf %s \"$A$B\"", "envs": halves}),
    )
    .await);
    // Redacted first (9,995 + 10 bytes), then cut: the cut falls in the
    // marker, not in the key.
    assert_eq!(
        r["stdout"].as_str().unwrap(),
        format!("{}<reda…[truncated 5 bytes]", "a".repeat(9995))
    );

    // A file that holds it, and a file named after it.
    ok(call(
        &s,
        "run_command",
        json!({"command": "printf %s \"$A$B\" > /home/user/k.txt; touch \"/home/user/x-$A$B\"", "envs": halves}),
    )
    .await);
    let r = ok(call(&s, "read_file", json!({"path": "/home/user/k.txt"})).await);
    assert_eq!(r["content"], "<redacted>", "{r}");
    let r = ok(call(&s, "list_files", json!({"path": "/home/user"})).await);
    assert!(!leaks(&r.to_string()), "{r}");
    assert!(r.to_string().contains("x-<redacted>"), "{r}");

    // The kernel: printed in halves, and as the value of the last line.
    let r = ok(call(
        &s,
        "run_code",
        json!({"code": format!(
            "import time\nprint({a:?}, end='', flush=True)\ntime.sleep(0.3)\nprint({b:?})\n{a:?} + {b:?}"
        )}),
    )
    .await);
    assert_eq!(r["stdout"], "<redacted>\n", "{r}");
    assert!(!leaks(&r.to_string()), "{r}");

    // A background command echoed back.
    let r = ok(call(
        &s,
        "start_background_command",
        json!({"command": format!("echo {key}; sleep 5")}),
    )
    .await);
    assert!(!leaks(&r.to_string()), "{r}");
    assert!(r["command"].as_str().unwrap().contains("<redacted>"), "{r}");
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_over_its_memory_cap_traps_while_other_sessions_keep_working() {
    let server = server().await;
    let healthy = session(&server).await;
    ok(call(&healthy, "run_command", json!({"command": "true"})).await);
    let capped = crate::harness::session_capped(&server, 16 << 20).await;
    // Under write_file's 32 MiB limit (so the host lets it through), over
    // the guest's 16 MiB.
    let big = "x".repeat(24 << 20);
    let still_here = command("echo still here");
    let (trapped, meanwhile) = tokio::join!(
        capped.write_file("/home/user/big.txt", &big),
        healthy.run_command(&still_here)
    );
    assert!(
        matches!(trapped, Err(SessionError::Trapped(_))),
        "{trapped:?}"
    );
    assert_eq!(meanwhile.unwrap().unwrap().stdout, "still here\n");
    assert!(matches!(
        capped.list_tools().await,
        Err(SessionError::Dead(_))
    ));
    ok(call(&healthy, "read_file", json!({"path": "/etc/hostname"})).await);
    healthy.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_over_its_cpu_budget_is_stopped_while_other_sessions_keep_working() {
    let server = server().await;
    let healthy = session(&server).await;
    ok(call(&healthy, "run_command", json!({"command": "true"})).await);
    // 50 M fuel opens a session and serves small calls, but not parsing
    // 32 MiB of arguments: a stand-in for a guest that spins.
    let budgeted = Session::open(
        runtime(),
        SessionOptions {
            env: env_for(&server),
            fuel_per_call: 50_000_000,
            ..SessionOptions::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(
        budgeted.list_tools().await.unwrap().len(),
        6,
        "small calls fit the budget"
    );
    let heavy = json!({"code": "x".repeat(32 << 20)}).to_string();
    let still_here = command("echo still here");
    let (stopped, meanwhile) = tokio::join!(
        budgeted.call_text("run_code", &heavy),
        healthy.run_command(&still_here)
    );
    match stopped {
        Err(SessionError::Trapped(reason)) => assert!(reason.contains("CPU budget"), "{reason}"),
        other => panic!("expected a trap: {other:?}"),
    }
    assert_eq!(meanwhile.unwrap().unwrap().stdout, "still here\n");
    assert!(matches!(
        budgeted.list_tools().await,
        Err(SessionError::Dead(_))
    ));
    assert_eq!(
        server.stats().sandboxes_created,
        1,
        "the stopped guest created nothing"
    );
    healthy.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_local_server_refuses_requests_without_a_valid_key_or_token() {
    let server = server().await;
    let key = server.api_key().to_string();
    assert_eq!(http(&server, "GET", "/sandboxes", &[]).await.0, 401);
    assert_eq!(
        http(
            &server,
            "GET",
            "/sandboxes",
            &[("X-API-KEY", "e2b_00000000000000000000000000000000")]
        )
        .await
        .0,
        401
    );
    assert_eq!(
        http(&server, "GET", "/sandboxes", &[("X-API-KEY", &key)])
            .await
            .0,
        200
    );

    let a = session(&server).await;
    let b = session(&server).await;
    ok(call(
        &a,
        "write_file",
        json!({"path": "/home/user/a.txt", "content": "from a"}),
    )
    .await);
    ok(call(
        &b,
        "write_file",
        json!({"path": "/home/user/b.txt", "content": "from b"}),
    )
    .await);
    let a_id = a.sandbox_id().unwrap();
    let b_id = b.sandbox_id().unwrap();
    let a_token = access_token(&server, &a_id).await;
    let files = |id: &str| {
        vec![
            ("E2b-Sandbox-Id", id.to_string()),
            ("E2b-Sandbox-Port", "49983".to_string()),
        ]
    };
    let get = |id: String, token: Option<String>, path: &'static str| {
        let server = &server;
        let mut headers = files(&id);
        if let Some(t) = token {
            headers.push(("X-Access-Token", t));
        }
        async move {
            let h: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
            http(server, "GET", &format!("/files?path={path}"), &h).await
        }
    };
    let (status, body) = get(a_id.clone(), Some(a_token.clone()), "/home/user/a.txt").await;
    assert_eq!((status, body.contains("from a")), (200, true), "{body}");
    assert_eq!(get(a_id.clone(), None, "/home/user/a.txt").await.0, 401);
    assert_eq!(
        get(a_id.clone(), Some("wrong".into()), "/home/user/a.txt")
            .await
            .0,
        401
    );
    // A's token does not open B.
    let (status, body) = get(b_id.clone(), Some(a_token.clone()), "/home/user/b.txt").await;
    assert_eq!(status, 401, "{body}");
    assert!(!body.contains("from b"));
    // Nor does an upload with it.
    let mut headers = files(&b_id);
    headers.push(("X-Access-Token", a_token.clone()));
    let h: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    assert_eq!(
        http(&server, "POST", "/files?path=/home/user/b.txt", &h)
            .await
            .0,
        401
    );
    assert_eq!(
        ok(call(&b, "read_file", json!({"path": "/home/user/b.txt"})).await)["content"],
        "from b"
    );
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

fn find_file(dir: &Path, name: &str) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.file_name().is_some_and(|n| n == name) {
            return Some(path);
        }
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            if let Some(found) = find_file(&path, name) {
                return Some(found);
            }
        }
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandbox_cannot_reach_another_sandboxs_files_by_host_path() {
    // A data dir outside /tmp, so it is not covered by the sandbox's own /tmp.
    let data_dir =
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("security-{}", std::process::id()));
    std::fs::create_dir_all(&data_dir).unwrap();
    let server = LocalServer::start(Options {
        data_dir: Some(data_dir.clone()),
        ..Options::default()
    })
    .await
    .unwrap();
    let a = session(&server).await;
    let b = session(&server).await;
    ok(call(
        &b,
        "write_file",
        json!({"path": "/home/user/secret-b.txt", "content": "b-secret-31337"}),
    )
    .await);
    ok(call(&a, "run_command", json!({"command": "true"})).await);
    let host_path = find_file(&data_dir, "secret-b.txt").expect("B's file is under the data dir");
    let host_dir = host_path.parent().unwrap().display().to_string();
    let host_path = host_path.display().to_string();

    let probe = format!(
        "cat {host_path}; ls -la {dir}; echo pwned > {dir}/pwn.txt; echo pwned > {host_path}; ls {data}",
        dir = host_dir,
        data = data_dir.display()
    );
    let r = call(&a, "run_command", json!({"command": probe})).await;
    let text = r.to_string();
    assert!(!text.contains("b-secret-31337"), "A read B's file: {text}");
    assert!(
        !Path::new(&host_dir).join("pwn.txt").exists(),
        "A wrote into B: {text}"
    );
    let r = call(&a, "read_file", json!({"path": host_path})).await;
    assert_eq!(
        r["success"], false,
        "the files API resolves inside A only: {r}"
    );
    let r = call(
        &a,
        "write_file",
        json!({"path": format!("{host_dir}/pwn2.txt"), "content": "x"}),
    )
    .await;
    let _ = r;
    assert!(
        !Path::new(&host_dir).join("pwn2.txt").exists(),
        "A wrote into B via the files API"
    );
    assert_eq!(
        ok(call(&b, "read_file", json!({"path": "/home/user/secret-b.txt"})).await)["content"],
        "b-secret-31337"
    );
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
    drop(server);
    let _ = std::fs::remove_dir_all(&data_dir);
}

/// The escape attempts a prompt-injected model would make first, through
/// the component's own tools (the full suite is the local server's
/// `tests/server/escape.rs`).
#[tokio::test]
async fn a_sandbox_sees_neither_the_hosts_environment_nor_its_files() {
    // In the server's (this process's) environment, set by cargo.
    let canary = "CARGO_PKG_NAME";
    assert!(std::env::var(canary).is_ok());
    let server = server().await;
    let s = session(&server).await;
    for path in ["/proc/self/environ", "/proc/1/environ"] {
        let r = call(&s, "read_file", json!({"path": path})).await;
        assert!(!r.to_string().contains(canary), "{path}: {r}");
    }
    let project_file = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    for path in [project_file, "/etc/shadow"] {
        let r = call(&s, "read_file", json!({"path": path})).await;
        assert_eq!(r["success"], false, "{path}: {r}");
    }
    let r = ok(call(&s, "list_files", json!({"path": "/root"})).await);
    assert_eq!(r["entries"], json!([]), "{r}");
    let r = call(
        &s,
        "run_command",
        json!({"command": format!("cat /proc/*/environ {project_file} /etc/shadow; echo; whoami")}),
    )
    .await;
    let text = r.to_string();
    assert!(!text.contains(canary), "{text}");
    assert!(!text.contains("[workspace]"), "{text}");
    let last_line = r["stdout"].as_str().and_then(|o| o.lines().last());
    assert_eq!(last_line, Some("user"), "{text}");
    s.shutdown().await.unwrap();
    server.shutdown().await;
}

/// Sends one JSON-RPC message over the MCP stdio framing (one JSON per line).
async fn mcp_send(writer: &mut (impl tokio::io::AsyncWrite + Unpin), message: Value) {
    let mut line = message.to_string();
    line.push('\n');
    writer.write_all(line.as_bytes()).await.unwrap();
}

/// Reads MCP messages until the answer with `id` arrives; returns every line read.
async fn mcp_until(reader: &mut (impl tokio::io::AsyncBufRead + Unpin), id: u64) -> Vec<String> {
    use tokio::io::AsyncBufReadExt;
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        let n = tokio::time::timeout(
            std::time::Duration::from_secs(60),
            reader.read_line(&mut line),
        )
        .await
        .expect("the MCP server answers")
        .unwrap();
        assert!(n > 0, "the MCP server closed early; got {lines:?}");
        let done = serde_json::from_str::<Value>(&line).is_ok_and(|v| v["id"] == id);
        lines.push(line);
        if done {
            return lines;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_and_token_never_appear_in_mcp_messages() {
    let server = server().await;
    let s = session(&server).await;
    let mcp = e2b_tools_cli::mcp::McpServer::new(s).await.unwrap();
    let session = mcp.session().expect("an open session").clone();
    let (client, server_side) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server_side);
    let serving = tokio::spawn(mcp.serve((server_read, server_write)));
    let (client_read, mut client_write) = tokio::io::split(client);
    let mut reader = tokio::io::BufReader::new(client_read);

    let mut seen = Vec::new();
    mcp_send(&mut client_write, json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "security-test", "version": "0"}}})).await;
    seen.extend(mcp_until(&mut reader, 1).await);
    mcp_send(
        &mut client_write,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    let calls = [
        json!({"name": "run_command", "arguments": {"command": "env"}}),
        json!({"name": "run_command", "arguments": {"command": "echo $E2B_API_KEY; exit 2"}}),
        json!({"name": "read_file", "arguments": {"path": "/nope"}}),
        json!({"name": "run_code", "arguments": {"code": "1/0"}}),
        json!({"name": "no_such_tool", "arguments": {}}),
    ];
    mcp_send(
        &mut client_write,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    )
    .await;
    seen.extend(mcp_until(&mut reader, 2).await);
    for (i, params) in calls.into_iter().enumerate() {
        let id = 10 + i as u64;
        mcp_send(
            &mut client_write,
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}),
        )
        .await;
        seen.extend(mcp_until(&mut reader, id).await);
    }
    let id = session.sandbox_id().expect("a sandbox");
    let token = access_token(&server, &id).await;
    let all = seen.concat();
    assert!(all.contains("PATH="), "the env call answered: {all}");
    assert!(
        !all.contains(server.api_key()),
        "the key is in an MCP message"
    );
    assert!(!all.contains(&token), "the token is in an MCP message");
    drop(client_write);
    drop(reader);
    serving.await.unwrap().unwrap();
    assert_eq!(
        server.stats().live_sandboxes,
        0,
        "closing MCP shut the sandbox down"
    );
}

/// The model's own path to the attack of issue 25: `run_command`'s `envs`
/// name a library the model wrote with `write_file`, also through the
/// host's `/proc/<pid>/root`. It loads only in the sandbox's command,
/// never in a host process.
#[tokio::test]
async fn a_preload_library_in_run_command_envs_never_loads_on_the_host() {
    use base64::Engine;
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("/tmp/e2b-e2e-preload-{}", std::process::id());
    let library = dir.path().join("mark.so");
    let built = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&library)
        .arg(format!("-DMARKER=\"{marker}\""))
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/local/tests/fixtures/preload_marker.c"
        ))
        .status()
        .expect("a C compiler (cc) for the test library (local/tests/fixtures)");
    assert!(built.success());
    let bytes = std::fs::read(&library).unwrap();
    let server = server().await;
    let s = session(&server).await;
    ok(call(
        &s,
        "write_file",
        json!({
            "path": "/home/user/e.so",
            "content": base64::engine::general_purpose::STANDARD.encode(&bytes),
            "encoding": "base64",
        }),
    )
    .await);
    ok(call(
        &s,
        "start_background_command",
        json!({"command": "sleep 987607"}),
    )
    .await);
    let want = b"sleep\x00987607\x00";
    let pid = (0..250)
        .find_map(|_| {
            let found = std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
                let pid: u32 = e.file_name().to_str()?.parse().ok()?;
                (std::fs::read(e.path().join("cmdline")).ok()? == want).then_some(pid)
            });
            if found.is_none() {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            found
        })
        .expect("the sandbox's sleep runs");
    for var in ["LD_PRELOAD", "LD_AUDIT"] {
        for path in [
            "/home/user/e.so".to_string(),
            format!("/proc/{pid}/root/home/user/e.so"),
        ] {
            ok(call(
                &s,
                "run_command",
                json!({"command": "true", "envs": {var: path}}),
            )
            .await);
            assert!(
                !Path::new(&marker).exists(),
                "{var}={path} in run_command's envs loaded on the host"
            );
        }
    }
    let inside = ok(call(&s, "read_file", json!({"path": marker})).await);
    assert!(
        inside["content"]
            .as_str()
            .unwrap_or_default()
            .contains("loaded"),
        "the library never loaded in the sandbox: {inside}"
    );
    let _ = s.shutdown().await;
    server.shutdown().await;
}
