//! `e2b-tools mcp` with the official MCP Python SDK's stdio client.
//!
//! Needs `E2B_TOOLS_PYTHON`: a Python with `mcp` and `jsonschema` installed
//! (the test fails without either rather than passing silently).

use std::os::unix::process::ExitStatusExt;
use std::process::Command;

use crate::binary::run;

#[test]
fn the_official_python_client_lists_the_enabled_tools_and_calls_them() {
    let python = std::env::var("E2B_TOOLS_PYTHON").expect(
        "set E2B_TOOLS_PYTHON to a Python with the `mcp` and `jsonschema` packages \
         (`scripts/bootstrap --test` makes target/pyenv)",
    );
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cli/mcp_client.py");
    let mut client = Command::new(python);
    client
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_e2b-tools"))
        .env_remove("E2B_API_KEY");
    let out = run(client, "");
    assert_eq!(out.status, 0, "mcp client failed: {out:?}");
    assert!(out.stdout.contains("OK"), "{out:?}");
}

/// `mcp --http` with the official Python client over streamable HTTP,
/// against a separate local server whose API counts the sandboxes; then
/// SIGTERM, after which no sandbox is left.
#[test]
fn the_official_python_client_over_streamable_http() {
    let python = std::env::var("E2B_TOOLS_PYTHON").expect(
        "set E2B_TOOLS_PYTHON to a Python with the `mcp` and `jsonschema` packages \
         (`scripts/bootstrap --test` makes target/pyenv)",
    );
    let state = tempfile::tempdir().unwrap();
    let (mut local, env) = local_serve(state.path());
    let (mut server, url) = http_server(
        &[
            "--backend",
            "e2b",
            "--tools",
            "all",
            "mcp",
            "--http",
            "0",
            "--max-sessions",
            "2",
        ],
        &env,
    );
    let client = |phase: &str| http_client(&python, phase, &url, &env);
    let sessions = client("sessions");
    // Graceful shutdown: every session ends and its sandbox is killed.
    let _ = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status();
    let status = server.wait().unwrap();
    let after = client("after-shutdown");
    let _ = Command::new("kill")
        .args(["-INT", &local.id().to_string()])
        .status();
    let _ = local.wait();
    assert_eq!(sessions.status, 0, "{sessions:?}");
    ended_by_sigterm(status);
    assert_eq!(after.status, 0, "{after:?}");
}

/// The server cleaned up, then ended by SIGTERM, as a shell expects.
fn ended_by_sigterm(status: std::process::ExitStatus) {
    assert_eq!(status.signal(), Some(15), "{status:?}");
}

/// One `phase` of `mcp_http_client.py` (the official Python client)
/// against the MCP server at `url`, the local server of `env` counting.
fn http_client(
    python: &str,
    phase: &str,
    url: &str,
    env: &std::collections::BTreeMap<String, String>,
) -> crate::binary::Run {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cli/mcp_http_client.py");
    let mut client = Command::new(python);
    client.args([
        script,
        phase,
        url,
        "test-token",
        &env["E2B_API_URL"],
        &env["E2B_API_KEY"],
    ]);
    run(client, "")
}

/// `e2b-tools local serve` on a free port, keeping its state in `state`;
/// the child and the `E2B_*` variables it printed.
pub(crate) fn local_serve(
    state: &std::path::Path,
) -> (
    std::process::Child,
    std::collections::BTreeMap<String, String>,
) {
    local_serve_with(state, &[])
}

/// [`local_serve`] with `extra` arguments.
pub(crate) fn local_serve_with(
    state: &std::path::Path,
    extra: &[&str],
) -> (
    std::process::Child,
    std::collections::BTreeMap<String, String>,
) {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let state_dir = state.to_str().unwrap();
    let mut args = vec!["local", "serve", "--port", "0", "--state-dir", state_dir];
    args.extend_from_slice(extra);
    let mut local = crate::binary::e2b_tools(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the local server starts");
    let mut exports = BufReader::new(local.stdout.take().unwrap());
    let mut env = std::collections::BTreeMap::new();
    for _ in 0..3 {
        let mut line = String::new();
        exports.read_line(&mut line).unwrap();
        let (name, value) = line
            .trim()
            .trim_start_matches("export ")
            .split_once('=')
            .unwrap();
        env.insert(name.to_string(), value.trim_matches('\'').to_string());
    }
    (local, env)
}

/// Starts `e2b-tools ARGS` (an `mcp --http` server) with token
/// `test-token`, and reads its URL from stderr.
pub(crate) fn http_server(
    args: &[&str],
    env: &std::collections::BTreeMap<String, String>,
) -> (std::process::Child, String) {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let mut server = crate::binary::e2b_tools(args);
    server
        .envs(env)
        .env("E2B_TOOLS_MCP_TOKEN", "test-token")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut server = server.spawn().expect("the MCP server starts");
    let mut stderr = BufReader::new(server.stderr.take().unwrap());
    let url = loop {
        let mut line = String::new();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "no URL on stderr");
        if let Some(url) = line.trim().strip_prefix("e2b-tools: MCP over HTTP at ") {
            break url.to_string();
        }
    };
    // Keep draining stderr so the server never blocks on it.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    (server, url)
}

/// The official TypeScript SDK (`@modelcontextprotocol/sdk` from npm) over
/// streamable HTTP: refused without the token, the catalog with output
/// schemas and annotations, state across calls, structured results.
#[test]
fn the_official_typescript_client_over_streamable_http() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp-node");
    assert!(
        std::path::Path::new(dir)
            .join("node_modules/@modelcontextprotocol/sdk")
            .is_dir(),
        "run `npm ci` in {dir} (scripts/bootstrap --test does)"
    );
    let (mut server, url) = http_server(&["mcp", "--http", "0"], &Default::default());
    let mut client = Command::new("node");
    client
        .current_dir(dir)
        .args(["client.mjs", &url, "test-token"]);
    let out = run(client, "");
    let _ = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status();
    let status = server.wait().unwrap();
    assert_eq!(out.status, 0, "{out:?}");
    assert!(out.stdout.contains("OK"), "{out:?}");
    ended_by_sigterm(status);
}

/// The session cap of `mcp --http` holds however many `initialize`s arrive
/// at once, and places come back when sessions end.
///
/// Each client sends its request's headers, waits until every client has
/// (by then the server has run its cap check on all of them), and only
/// then its body: a check that counted nothing until rmcp had made the
/// session (it reads the body first) would let every one of them in.
#[test]
fn concurrent_initializes_never_exceed_the_session_cap() {
    use std::sync::{Arc, Barrier};
    const CAP: usize = 3;
    const CLIENTS: usize = 12;
    let (server, url) = http_server(
        &["mcp", "--http", "0", "--max-sessions", &CAP.to_string()],
        &Default::default(),
    );
    let server = Stop(server);
    let addr = url
        .strip_prefix("http://")
        .and_then(|rest| rest.strip_suffix("/mcp"))
        .expect("http://ADDR/mcp")
        .to_string();
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");

    let barrier = Arc::new(Barrier::new(CLIENTS));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (addr, barrier) = (addr.clone(), barrier.clone());
            std::thread::spawn(move || initialize(&addr, Some(&barrier)))
        })
        .collect();
    let answers: Vec<Answer> = clients.into_iter().map(|c| c.join().unwrap()).collect();
    let sessions: Vec<String> = answers.iter().filter_map(|a| a.session.clone()).collect();
    assert_eq!(sessions.len(), CAP, "{answers:#?}");
    for answer in answers.iter().filter(|a| a.session.is_none()) {
        assert_eq!(answer.status, 503, "{answers:#?}");
        assert!(
            answer.text.contains("live sessions, its limit"),
            "{answer:?}"
        );
    }

    // Every place comes back: the sessions' when they are deleted, and
    // those of requests that made none (not JSON) when they are answered.
    // Then the cap holds again.
    for session in &sessions {
        let status = delete(&addr, session);
        assert!(matches!(status, 200 | 202 | 204), "DELETE: {status}");
    }
    for _ in 0..2 * CAP {
        let answer = post(&addr, "{not json");
        assert!(matches!(answer.status, 400..=499), "{answer:?}");
    }
    for _ in 0..CAP {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let answer = initialize(&addr, None);
            if answer.session.is_some() {
                break;
            }
            assert!(
                answer.status == 503 && std::time::Instant::now() < deadline,
                "no new session after the old ones were deleted: {answer:?}"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
    let over = initialize(&addr, None);
    assert_eq!(over.status, 503, "{over:?}");
    drop(server);
}

/// A child server, sent SIGTERM (and waited for) when dropped, also when
/// the test fails.
pub(crate) struct Stop(pub(crate) std::process::Child);

impl Drop for Stop {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let _ = self.0.wait();
    }
}

/// What the server answered to one request: the status, the session it
/// made, and the text read (headers, and the body of a refusal).
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) session: Option<String>,
    pub(crate) text: String,
}

/// One raw POST of `body` to `addr` without a session, as a whole.
fn post(addr: &str, body: &str) -> Answer {
    send_post(addr, body, None)
}

/// One raw `initialize` to `addr` (the token `test-token`). With a
/// `barrier`, the body follows the headers once every client has sent its
/// headers and the server has had time to look at them; a request refused
/// by then is not sent its body.
pub(crate) fn initialize(addr: &str, barrier: Option<&std::sync::Barrier>) -> Answer {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
    send_post(addr, body, barrier)
}

/// [`initialize`] with any body.
fn send_post(addr: &str, body: &str, barrier: Option<&std::sync::Barrier>) -> Answer {
    use std::io::Write;
    use std::time::Duration;
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer test-token\r\n\
         Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let mut tcp = std::net::TcpStream::connect(addr).expect("connect");
    tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    tcp.write_all(head.as_bytes()).unwrap();
    if let Some(barrier) = barrier {
        barrier.wait();
        std::thread::sleep(Duration::from_millis(500));
        // Refused already (the check answers without the body)?
        tcp.set_nonblocking(true).unwrap();
        let answered = tcp.peek(&mut [0u8; 1]).is_ok_and(|n| n > 0);
        tcp.set_nonblocking(false).unwrap();
        if answered {
            return read_answer(&mut tcp);
        }
    }
    // A refusal may close the connection before the body is written.
    let _ = tcp.write_all(body.as_bytes());
    read_answer(&mut tcp)
}

/// Reads the status and headers, and for anything but a session's event
/// stream the rest, up to the server's close.
fn read_answer(tcp: &mut std::net::TcpStream) -> Answer {
    use std::io::Read;
    let mut text = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = text.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        match tcp.read(&mut buf) {
            Ok(0) | Err(_) => break text.len(),
            Ok(n) => text.extend_from_slice(&buf[..n]),
        }
    };
    let head = String::from_utf8_lossy(&text[..head_end]).into_owned();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let session = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_string())
        })
        .filter(|_| status == 200);
    if session.is_none() {
        let _ = tcp.read_to_end(&mut text);
    }
    Answer {
        status,
        session,
        text: String::from_utf8_lossy(&text).into_owned(),
    }
}

/// A raw `DELETE` of `session`: its status.
fn delete(addr: &str, session: &str) -> u16 {
    use std::io::Write;
    let mut tcp = std::net::TcpStream::connect(addr).expect("connect");
    tcp.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let request = format!(
        "DELETE /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer test-token\r\n\
         Mcp-Session-Id: {session}\r\nMcp-Protocol-Version: 2025-11-25\r\n\
         Connection: close\r\n\r\n"
    );
    tcp.write_all(request.as_bytes()).unwrap();
    read_answer(&mut tcp).status
}

/// `mcp --http --warm-pool 2`: the pool fills with two sandboxes before any
/// client comes, and SIGTERM (then, for a second server, Ctrl-C's SIGINT)
/// leaves none behind.
#[test]
fn a_warm_pool_fills_ahead_and_leaves_nothing_at_sigterm_or_sigint() {
    use std::process::Stdio;
    let state = tempfile::tempdir().unwrap();
    let (local, env) = local_serve(state.path());
    let _local = Stop(local);
    let live = || live_sandboxes(&env["E2B_API_URL"], &env["E2B_API_KEY"]);
    let wait_for = |n: usize| {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while live() != n {
            assert!(
                std::time::Instant::now() < until,
                "expected {n} sandboxes, got {}",
                live()
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    };
    for signal in ["-TERM", "-INT"] {
        let args = ["--backend", "e2b", "--warm-pool", "2", "mcp", "--http", "0"];
        let (mut server, _url) = http_server(&args, &env);
        wait_for(2);
        let _ = Command::new("kill")
            .args([signal, &server.id().to_string()])
            .status();
        let status = server.wait().unwrap();
        // It cleaned up, then ended by the signal (as a shell expects).
        let number = if signal == "-TERM" { 15 } else { 2 };
        assert_eq!(status.signal(), Some(number), "{signal}: {status:?}");
        assert_eq!(live(), 0, "{signal}: the pooled sandboxes are killed");
    }
    // batch: the sandbox made ahead serves the lines; none is left after.
    let mut batch = crate::binary::e2b_tools(&["--backend", "e2b", "--warm-pool", "1", "batch"]);
    batch
        .envs(&env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut batch = batch.spawn().unwrap();
    {
        use std::io::Write;
        let mut stdin = batch.stdin.take().unwrap();
        wait_for(1);
        writeln!(
            stdin,
            r#"{{"tool": "run_command", "args": {{"command": "echo pooled"}}}}"#
        )
        .unwrap();
    }
    let out = batch.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(r#""stdout":"pooled\n""#),
        "{out:?}"
    );
    assert_eq!(live(), 0, "batch leaves no sandbox");
    // mcp on stdio: the pool fills while the client has not called yet,
    // and the end of the connection kills what waits.
    let mut stdio = crate::binary::e2b_tools(&["--backend", "e2b", "--warm-pool", "1", "mcp"]);
    stdio
        .envs(&env)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut stdio = stdio.spawn().unwrap();
    wait_for(1);
    // (A connection that ends before `initialize` is an error exit.)
    drop(stdio.stdin.take());
    let _ = stdio.wait().unwrap();
    assert_eq!(live(), 0, "mcp on stdio leaves no sandbox");
    // A size the pool cannot take is a usage error.
    let refused = crate::binary::e2b_tools(&["--warm-pool", "0", "batch"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("a warm pool holds 1 to 64"));
}

/// `mcp --http --warm-pool 1` with the official Python client of the
/// stateless revision: from its first call on, a call that names no
/// sandbox runs in one made before it; SIGTERM leaves no sandbox of either
/// pool behind.
#[test]
fn a_stateless_clients_call_takes_a_sandbox_made_ahead_and_sigterm_leaves_none() {
    let python = std::env::var("E2B_TOOLS_PYTHON").expect(
        "set E2B_TOOLS_PYTHON to a Python with the `mcp` and `jsonschema` packages \
         (`scripts/bootstrap --test` makes target/pyenv)",
    );
    let state = tempfile::tempdir().unwrap();
    let (local, env) = local_serve(state.path());
    let _local = Stop(local);
    let args = ["--backend", "e2b", "--warm-pool", "1", "mcp", "--http", "0"];
    let (mut server, url) = http_server(&args, &env);
    let pooled = http_client(&python, "stateless-pool", &url, &env);
    let _ = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status();
    let status = server.wait().unwrap();
    assert_eq!(pooled.status, 0, "{pooled:?}");
    ended_by_sigterm(status);
    assert_eq!(
        live_sandboxes(&env["E2B_API_URL"], &env["E2B_API_KEY"]),
        0,
        "the pools' waiting sandboxes are killed"
    );
}

/// A raw `POST` of JSON `body` to `path` of the API of `env`'s server:
/// the JSON it answered.
pub(crate) fn api_post(
    env: &std::collections::BTreeMap<String, String>,
    path: &str,
    body: &str,
) -> serde_json::Value {
    use std::io::{Read, Write};
    let addr = env["E2B_API_URL"].trim_start_matches("http://").to_string();
    let mut tcp = std::net::TcpStream::connect(&addr).expect("connect");
    write!(
        tcp,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nX-API-KEY: {}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        env["E2B_API_KEY"],
        body.len()
    )
    .unwrap();
    let mut text = String::new();
    tcp.read_to_string(&mut text).unwrap();
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// How many sandboxes the local server at `api_url` runs.
pub(crate) fn live_sandboxes(api_url: &str, key: &str) -> usize {
    use std::io::{Read, Write};
    let addr = api_url.trim_start_matches("http://");
    let mut tcp = std::net::TcpStream::connect(addr).expect("connect");
    write!(
        tcp,
        "GET /sandboxes HTTP/1.1\r\nHost: {addr}\r\nX-API-KEY: {key}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    tcp.read_to_string(&mut text).unwrap();
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    let listed: serde_json::Value =
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {text}"));
    listed.as_array().map_or(0, Vec::len)
}
