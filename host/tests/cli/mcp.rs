//! `e2b-tools mcp` with the official MCP Python SDK's stdio client.
//!
//! Needs `E2B_TOOLS_PYTHON`: a Python with `mcp` and `jsonschema` installed
//! (the test fails without either rather than passing silently).

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
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let python = std::env::var("E2B_TOOLS_PYTHON").expect(
        "set E2B_TOOLS_PYTHON to a Python with the `mcp` and `jsonschema` packages \
         (`scripts/bootstrap --test` makes target/pyenv)",
    );
    let mut local = crate::binary::e2b_tools(&["local", "serve", "--port", "0"])
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
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cli/mcp_http_client.py");
    let client = |phase: &str| {
        let mut client = Command::new(&python);
        client.args([
            script,
            phase,
            &url,
            "test-token",
            &env["E2B_API_URL"],
            &env["E2B_API_KEY"],
        ]);
        run(client, "")
    };
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
    assert!(status.success(), "{status:?}");
    assert_eq!(after.status, 0, "{after:?}");
}

/// Starts `e2b-tools ARGS` (an `mcp --http` server) with token
/// `test-token`, and reads its URL from stderr.
fn http_server(
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
    assert!(status.success(), "{status:?}");
}
