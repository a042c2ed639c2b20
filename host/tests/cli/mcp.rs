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
