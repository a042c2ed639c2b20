//! `e2b-tools mcp` with the official MCP Python SDK's stdio client.
//!
//! Needs `E2B_TOOLS_PYTHON`: a Python with `mcp` installed (the test fails
//! without it rather than passing silently).

use std::process::Command;

#[test]
fn the_official_python_client_lists_six_tools_and_runs_code() {
    let python = std::env::var("E2B_TOOLS_PYTHON").expect(
        "set E2B_TOOLS_PYTHON to a Python with the `mcp` package (e.g. /tmp/sdkvenv/bin/python)",
    );
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cli/mcp_client.py");
    let output = Command::new(python)
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_e2b-tools"))
        .env_remove("E2B_API_KEY")
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "mcp client failed\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    );
    assert!(stdout.contains("OK"), "{stdout}");
}
