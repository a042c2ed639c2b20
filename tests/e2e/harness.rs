//! Shared set-up: one compiled component per test binary, one local server
//! and one session per test.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use e2b_local::{LocalServer, Options};
use e2b_tools_host::{ClockMode, ComponentSource, Runtime, SandboxConfig, Session, SessionOptions};
use serde_json::Value;

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
