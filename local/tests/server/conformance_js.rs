//! The official E2B JavaScript SDKs against the server:
//! `tests/conformance/node/scenario.mjs` with `e2b` and `@e2b/code-interpreter`
//! at the versions `tests/conformance/node/package.json` pins.
//!
//! `E2B_TOOLS_NODE_CONFORMANCE` names the directory with the scenario and its
//! `npm ci`-installed node_modules (`scripts/bootstrap --test` installs them
//! into `tests/conformance/node` and `scripts/test` exports the variable).
//! Missing it is a failure, not a skip, as for the Python SDK tests.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::start;
use crate::conformance::{run_sdk_client, start_with_interpreter};

const SOURCE_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance/node");

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The directory `E2B_TOOLS_NODE_CONFORMANCE` names, checked to hold the
/// scenario and the pinned SDK versions.
fn node_dir() -> PathBuf {
    let dir = std::env::var("E2B_TOOLS_NODE_CONFORMANCE").unwrap_or_else(|_| {
        panic!(
            "E2B_TOOLS_NODE_CONFORMANCE is not set: point it at a directory with scenario.mjs \
             and `npm ci` done; `scripts/bootstrap --test` does it in {SOURCE_DIR} \
             (export E2B_TOOLS_NODE_CONFORMANCE={SOURCE_DIR})"
        )
    });
    let dir = PathBuf::from(dir);
    assert!(
        dir.join("scenario.mjs").is_file(),
        "E2B_TOOLS_NODE_CONFORMANCE={} has no scenario.mjs (use {SOURCE_DIR})",
        dir.display()
    );
    // The installed SDKs must be the ones package.json pins: a stale
    // node_modules would test other versions than it claims.
    let pins = read_json(&Path::new(SOURCE_DIR).join("package.json"));
    for (name, want) in pins["dependencies"].as_object().expect("dependencies") {
        let installed = dir.join("node_modules").join(name).join("package.json");
        assert!(
            installed.is_file(),
            "{name} is not installed in {}: run `npm ci` there (scripts/bootstrap --test does)",
            dir.display()
        );
        let got = read_json(&installed)["version"].clone();
        assert_eq!(
            &got,
            want,
            "{name} in {} is {got}, package.json pins {want}: run `npm ci` there",
            dir.display()
        );
    }
    dir
}

#[tokio::test]
async fn js_sdk_scenario() {
    let dir = node_dir();
    let h = start().await;
    let mut node = tokio::process::Command::new("node");
    node.arg("scenario.mjs").current_dir(&dir);
    let stdout = run_sdk_client(&h, node, "the JS SDK scenario (Node.js 20 or later)").await;
    let last = stdout.lines().last().unwrap_or("");
    let n: u32 = last
        .strip_prefix("OK ")
        .and_then(|rest| rest.strip_suffix(" checks"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no `OK <n> checks` line at the end:\n{stdout}"));
    assert!(n >= 60, "only {n} checks ran:\n{stdout}");
    let stats = h.server.stats();
    assert_eq!(stats.live_sandboxes, 0, "{stats:?}");
    // Two sandboxes, both through the v2 create; the code-interpreter steps
    // reached the interpreter.
    assert_eq!(stats.count("POST /v2/sandboxes"), 2, "{stats:?}");
    assert_eq!(stats.sandboxes_created, 2, "{stats:?}");
    assert!(stats.count("POST /execute") >= 5, "{stats:?}");
    h.server.shutdown().await;
}

/// Snapshots and forks through the JS SDK (`snapshots.mjs`), on a server
/// with disk images (root).
#[tokio::test]
async fn js_sdk_snapshots() {
    let dir = node_dir();
    let h = start().await;
    if !h.server.isolation().contains("ext4 image") {
        return;
    }
    let mut node = tokio::process::Command::new("node");
    node.arg("snapshots.mjs").current_dir(&dir);
    let stdout = run_sdk_client(&h, node, "the JS SDK snapshot scenario").await;
    assert!(stdout.trim_end().ends_with("OK 12 checks"), "{stdout}");
    let stats = h.server.stats();
    assert_eq!(stats.live_sandboxes, 0, "{stats:?}");
    assert_eq!(
        stats.count("POST /sandboxes/{id}/snapshots"),
        2,
        "{stats:?}"
    );
    assert_eq!(stats.count("POST /sandboxes/{id}/fork"), 1, "{stats:?}");
    h.server.shutdown().await;
}

/// A sandbox is a whole machine through the JS SDK (`machine.mjs`), on a
/// server whose roots are copy-on-write (root, with disk images).
#[tokio::test]
async fn js_sdk_machine() {
    let dir = node_dir();
    let h = start().await;
    if !h.server.isolation().contains("root: copy-on-write") {
        return;
    }
    let mut node = tokio::process::Command::new("node");
    node.arg("machine.mjs").current_dir(&dir);
    let stdout = run_sdk_client(&h, node, "the JS SDK machine scenario").await;
    assert!(stdout.trim_end().ends_with("OK 10 checks"), "{stdout}");
    assert_eq!(h.server.stats().live_sandboxes, 0);
    h.server.shutdown().await;
}

/// The code interpreter is the real one through the JS SDK
/// (`interpreter.mjs`, `@e2b/code-interpreter`): E2B's formatters, every
/// language's env vars and cwd, a kernel killed from inside, an abandoned
/// cell interrupted.
#[tokio::test]
async fn js_sdk_interpreter() {
    let dir = node_dir();
    let h = start_with_interpreter().await;
    let mut node = tokio::process::Command::new("node");
    node.arg("interpreter.mjs").current_dir(&dir);
    let stdout = run_sdk_client(&h, node, "the JS SDK interpreter scenario").await;
    assert!(stdout.trim_end().ends_with("OK 27 checks"), "{stdout}");
    assert_eq!(h.server.stats().live_sandboxes, 0);
    h.server.shutdown().await;
}
