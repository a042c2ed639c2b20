//! Processes as E2B's own SDK tests expect them, through the official
//! Python SDK: a real terminal (`tests/conformance/pty.py`: echo, line
//! editing, resize, Ctrl-C, exit, kill) and commands
//! (`tests/conformance/commands.py`: scoped environment variables, the
//! async SDK's background kill, a sandbox killed under a command).

use crate::common::start;
use crate::conformance::run_python;

fn python() -> String {
    std::env::var("E2B_TOOLS_PYTHON").unwrap_or_else(|_| {
        panic!("E2B_TOOLS_PYTHON is not set (`scripts/bootstrap --test` makes target/pyenv)")
    })
}

#[tokio::test]
async fn commands_behave_as_the_sdk_expects() {
    let python = python();
    let h = start().await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance/commands.py");
    run_python(&h, &python, script, &[], "commands scenario passed").await;
    h.server.shutdown().await;
}

#[tokio::test]
async fn the_sdk_gets_a_real_terminal() {
    let python = python();
    let h = start().await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance/pty.py");
    run_python(&h, &python, script, &[], "pty scenario passed").await;
    assert!(h.server.stats().count("POST /process.Process/Update") >= 1);
    h.server.shutdown().await;
}
