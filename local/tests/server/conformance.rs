//! The official E2B Python SDK against the server: `tests/conformance/scenario.py`.
//!
//! The Python interpreter comes from `E2B_TOOLS_PYTHON` (a venv with
//! e2b==2.63.0 and e2b-code-interpreter==2.11.5). Missing it is a failure,
//! not a skip: this test is what proves compatibility. `E2B_TOOLS_PYTHON_V1`
//! (a venv with e2b==2.32.0, the v1 endpoints) runs the same scenario
//! without the code-interpreter steps, when set.

use std::process::Stdio;
use std::time::Duration;

use crate::common::{start, Harness};

async fn run_scenario(h: &Harness, python: &str) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance/scenario.py");
    run_python(h, python, script, &[], "conformance scenario passed").await;
}

/// Runs `script args` with the official SDK pointed at `h`; it must exit 0,
/// print `passed`, and leave no sandbox alive.
pub async fn run_python(h: &Harness, python: &str, script: &str, args: &[String], passed: &str) {
    let child = tokio::process::Command::new(python)
        .arg(script)
        .args(args)
        .env("E2B_API_URL", h.server.url())
        .env("E2B_SANDBOX_URL", h.server.url())
        .env("E2B_API_KEY", h.server.api_key())
        .env_remove("E2B_DEBUG")
        .env_remove("E2B_DOMAIN")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {python}: {e}"));
    let out = tokio::time::timeout(Duration::from_secs(300), child.wait_with_output())
        .await
        .expect("scenario finished within 5 minutes")
        .expect("scenario ran");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "scenario failed with {python} ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );
    assert!(stdout.contains(passed), "{stdout}");
    assert_eq!(h.server.stats().live_sandboxes, 0);
}

#[tokio::test]
async fn python_sdk_scenario() {
    let python = std::env::var("E2B_TOOLS_PYTHON").unwrap_or_else(|_| {
        panic!(
            "E2B_TOOLS_PYTHON is not set: point it at a Python with e2b==2.63.0 and \
             e2b-code-interpreter==2.11.5 installed (e.g. a venv's bin/python)"
        )
    });
    let h = start().await;
    run_scenario(&h, &python).await;
    let stats = h.server.stats();
    assert_eq!(stats.count("POST /v2/sandboxes"), 2, "{stats:?}");
    assert!(stats.count("POST /execute") >= 3, "{stats:?}");
    h.server.shutdown().await;
}

#[tokio::test]
async fn python_sdk_v1_scenario() {
    let Ok(python) = std::env::var("E2B_TOOLS_PYTHON_V1") else {
        eprintln!(
            "E2B_TOOLS_PYTHON_V1 is not set: skipping the e2b==2.32.0 (v1 endpoints) scenario"
        );
        return;
    };
    let h = start().await;
    run_scenario(&h, &python).await;
    let stats = h.server.stats();
    assert_eq!(stats.count("POST /sandboxes"), 2, "{stats:?}");
    assert_eq!(stats.count("POST /v2/sandboxes"), 0, "{stats:?}");
    h.server.shutdown().await;
}
