//! Shared set-up: one compiled component per test binary, one local server
//! and one session per test.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use e2b_local::{LocalServer, Options};
use e2b_tools_host::{
    ClockMode, ComponentSource, RunCodeArgs, RunCommandArgs, Runtime, SandboxConfig, Session,
    SessionOptions,
};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The component, compiled once for the whole test binary.
pub fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| Runtime::load(ComponentSource::Embedded).expect("load the component"))
}

/// A local server whose sandbox timeouts run `time_scale` times faster.
pub async fn server_scaled(time_scale: f64) -> LocalServer {
    LocalServer::start(Options {
        time_scale,
        ..Options::default()
    })
    .await
    .expect("start the local server")
}

/// A local server on real time.
pub async fn server() -> LocalServer {
    server_scaled(1.0).await
}

/// The `E2B_*` environment that points a component at `server`.
pub fn env_for(server: &LocalServer) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("E2B_API_URL".to_string(), server.url()),
        ("E2B_SANDBOX_URL".to_string(), server.url()),
        ("E2B_API_KEY".to_string(), server.api_key().to_string()),
    ])
}

/// A session on `server` with `config`, on a clock `scale` times faster.
pub async fn session_with(server: &LocalServer, config: SandboxConfig, scale: f64) -> Session {
    let clock = if scale == 1.0 {
        ClockMode::Real
    } else {
        ClockMode::Scaled(scale)
    };
    Session::open(
        runtime(),
        SessionOptions {
            config,
            env: env_for(server),
            clock,
            ..SessionOptions::default()
        },
    )
    .await
    .expect("open a session")
}

/// A session on `server` whose guest may grow to `memory_limit` bytes.
pub async fn session_capped(server: &LocalServer, memory_limit: usize) -> Session {
    Session::open(
        runtime(),
        SessionOptions {
            env: env_for(server),
            memory_limit,
            ..SessionOptions::default()
        },
    )
    .await
    .expect("open a session")
}

/// An injected `status` answer, as E2B's API gives it (no `Should-Retry`).
pub fn status_fault(status: u16, retry_after: Option<u32>) -> e2b_local::Fault {
    e2b_local::Fault::Status {
        status,
        message: format!("injected {status}"),
        retry_after,
        should_retry: None,
    }
}

/// A session on `server` with the default configuration.
pub async fn session(server: &LocalServer) -> Session {
    session_with(server, SandboxConfig::default(), 1.0).await
}

/// Calls a tool by JSON and returns its result dict.
pub async fn call(session: &Session, tool: &str, args: Value) -> Value {
    session
        .call_json(tool, &args)
        .await
        .expect("the session survives the call")
}

/// Asserts a result dict is a success and returns it.
#[track_caller]
pub fn ok(result: Value) -> Value {
    assert_eq!(result["success"], true, "expected success: {result}");
    result
}

/// Asserts a result dict is a failure whose error starts with `prefix`.
#[track_caller]
pub fn failed(result: &Value, prefix: &str) {
    assert_eq!(result["success"], false, "expected failure: {result}");
    let error = result["error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with(prefix),
        "error {error:?} does not start with {prefix:?}"
    );
    assert!(
        result.get("partial_output").is_some(),
        "partial_output missing: {result}"
    );
}

/// One raw HTTP/1.1 request to the local server: (status, body text).
pub async fn http(
    server: &LocalServer,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    let mut request = format!(
        "{method} {target} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: 0\r\n",
        server.addr()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {text:?}"));
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// `GET /sandboxes/{id}` on `server`'s control plane.
pub async fn sandbox_detail(server: &LocalServer, id: &str) -> Value {
    let (status, body) = http(
        server,
        "GET",
        &format!("/sandboxes/{id}"),
        &[("X-API-KEY", server.api_key())],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

/// `run_command`'s typed arguments for `command`, every option left unset.
pub fn command(command: &str) -> RunCommandArgs {
    RunCommandArgs {
        command: command.into(),
        cwd: None,
        envs: vec![],
        timeout_seconds: None,
    }
}

/// `run_code`'s typed arguments for `code`, every option left unset.
pub fn code(code: &str) -> RunCodeArgs {
    RunCodeArgs {
        code: code.into(),
        language: None,
        envs: vec![],
        timeout_seconds: None,
    }
}

/// The names of the tools `session` offers, in catalog order.
pub async fn tool_names(session: &Session) -> Vec<String> {
    let tools = session.list_tools().await.unwrap();
    tools.into_iter().map(|t| t.name).collect()
}
