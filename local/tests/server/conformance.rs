//! The official E2B Python SDK against the server: `tests/conformance/scenario.py`
//! and `fidelity.py`.
//!
//! The Python interpreter comes from `E2B_TOOLS_PYTHON` (a venv with
//! e2b==2.63.0 and e2b-code-interpreter==2.11.5), the v1 run's from
//! `E2B_TOOLS_PYTHON_V1` (a venv with e2b==2.32.0, the v1 endpoints, without
//! the code-interpreter steps). Missing either is a failure, not a skip:
//! these tests are what prove compatibility. `scripts/bootstrap --test`
//! makes both venvs and `scripts/test` exports both variables.

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
    let mut command = tokio::process::Command::new(python);
    command.arg(script).args(args);
    let stdout = run_sdk_client(h, command, &format!("the scenario with {python}")).await;
    assert!(stdout.contains(passed), "{stdout}");
    assert_eq!(h.server.stats().live_sandboxes, 0);
}

/// Runs an official SDK's client `command` pointed at `h` (the SDKs'
/// own variables, nothing else of E2B's) for at most 5 minutes; it must
/// exit 0. Returns its stdout.
pub async fn run_sdk_client(
    h: &Harness,
    mut command: tokio::process::Command,
    what: &str,
) -> String {
    let child = command
        .env("E2B_API_URL", h.server.url())
        .env("E2B_SANDBOX_URL", h.server.url())
        .env("E2B_API_KEY", h.server.api_key())
        .env_remove("E2B_DEBUG")
        .env_remove("E2B_DOMAIN")
        .env_remove("E2B_ACCESS_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    let out = tokio::time::timeout(Duration::from_secs(300), child.wait_with_output())
        .await
        .expect("the client finished within 5 minutes")
        .expect("the client ran");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{what} failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );
    stdout
}

/// The interpreter `variable` names; panics with how to get one when unset.
fn python_from(variable: &str, packages: &str, venv: &str) -> String {
    std::env::var(variable).unwrap_or_else(|_| {
        panic!(
            "{variable} is not set: point it at a Python with {packages} installed; \
             `scripts/bootstrap --test` makes one in {venv} (use {venv}/bin/python)"
        )
    })
}

#[tokio::test]
async fn python_sdk_scenario() {
    let python = python_from(
        "E2B_TOOLS_PYTHON",
        "e2b==2.63.0 and e2b-code-interpreter==2.11.5",
        "target/pyenv",
    );
    let h = start().await;
    run_scenario(&h, &python).await;
    let stats = h.server.stats();
    // Two sandboxes, and the create of an unknown template refused.
    assert_eq!(stats.count("POST /v2/sandboxes"), 3, "{stats:?}");
    assert_eq!(stats.sandboxes_created, 2, "{stats:?}");
    assert!(stats.count("POST /execute") >= 3, "{stats:?}");
    h.server.shutdown().await;
}

/// The last behaviours E2B's own SDK tests caught (`fidelity.py`):
/// removing what is not there, a killed process gone, `sudo`, signed URLs
/// on the shared host, paused sandboxes in pages, a killed sandbox under
/// `wait()`.
#[tokio::test]
async fn python_sdk_fidelity() {
    let python = python_from(
        "E2B_TOOLS_PYTHON",
        "e2b==2.63.0 and e2b-code-interpreter==2.11.5",
        "target/pyenv",
    );
    let h = start().await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance/fidelity.py");
    run_python(&h, &python, script, &[], "fidelity scenario passed").await;
    h.server.shutdown().await;
}

/// Snapshots, forks and idempotent creates (`snapshots.py`), on a server
/// with disk images (root); without them snapshots are refused, which
/// `snapshots::snapshot_and_fork_errors_are_clear` checks.
#[tokio::test]
async fn python_sdk_snapshots() {
    let python = python_from(
        "E2B_TOOLS_PYTHON",
        "e2b==2.63.0 and e2b-code-interpreter==2.11.5",
        "target/pyenv",
    );
    let h = start().await;
    if !h.server.isolation().contains("ext4 image") {
        return;
    }
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/conformance/snapshots.py"
    );
    run_python(&h, &python, script, &[], "snapshot scenario passed").await;
    let stats = h.server.stats();
    assert_eq!(
        stats.count("POST /sandboxes/{id}/snapshots"),
        2,
        "{stats:?}"
    );
    assert_eq!(stats.count("POST /sandboxes/{id}/fork"), 1, "{stats:?}");
    assert_eq!(stats.count("DELETE /templates/{id}"), 3, "{stats:?}");
    // The source, two from snapshots, two forks, one per idempotency key.
    assert_eq!(stats.sandboxes_created, 6, "{stats:?}");
    h.server.shutdown().await;
}

#[tokio::test]
async fn python_sdk_v1_scenario() {
    let python = python_from("E2B_TOOLS_PYTHON_V1", "e2b==2.32.0", "target/pyenv-v1");
    let h = start().await;
    run_scenario(&h, &python).await;
    let stats = h.server.stats();
    assert_eq!(stats.count("POST /sandboxes"), 3, "{stats:?}");
    assert_eq!(stats.sandboxes_created, 2, "{stats:?}");
    assert_eq!(stats.count("POST /v2/sandboxes"), 0, "{stats:?}");
    h.server.shutdown().await;
}

/// A sandbox is a whole machine (`machine.py`): root writes anywhere,
/// `pip install` as `user`, `dpkg -i` and `npm install -g` as root, kept
/// through a pause and a snapshot; on a server with disk images (root),
/// whose roots are copy-on-write. None of it reaches the host: not its
/// `/usr`, its dpkg database nor the shared template's Python, and no
/// overlay stays mounted once the sandboxes are gone.
#[tokio::test]
async fn python_sdk_machine() {
    let python = python_from(
        "E2B_TOOLS_PYTHON",
        "e2b==2.63.0 and e2b-code-interpreter==2.11.5",
        "target/pyenv",
    );
    let data = tempfile::tempdir().unwrap();
    let h = crate::common::start_with(e2b_local::Options {
        data_dir: Some(data.path().to_path_buf()),
        ..Default::default()
    })
    .await;
    if !h.server.isolation().contains("root: copy-on-write") {
        return;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance/machine.py");
    // With internet, pip install from the registry too.
    let args: Vec<String> = if h.server.isolation().contains("internet through") {
        vec!["internet".into()]
    } else {
        vec![]
    };
    run_python(&h, &python, script, &args, "machine scenario passed").await;
    assert!(
        std::path::Path::new("/usr/bin/true").exists(),
        "a sandbox removed the host's /usr"
    );
    for path in [
        "/0",
        "/opt/tool",
        "/opt/huge",
        "/usr/local/share/e2b-machine",
        "/usr/bin/e2b-machine-tool",
        "/usr/local/bin/e2b-machine-npm",
        "/usr/bin/e2b-machine-npm",
    ] {
        assert!(
            !std::path::Path::new(path).exists(),
            "{path} reached the host"
        );
    }
    let status = std::fs::read_to_string("/var/lib/dpkg/status").unwrap();
    assert!(
        !status.contains("e2b-machine-deb"),
        "the host's dpkg database changed"
    );
    let templates = std::env::var("E2B_TOOLS_TEMPLATES_DIR")
        .unwrap_or_else(|_| "/var/lib/e2b-tools/templates".into());
    let site = std::path::Path::new(&templates)
        .join("code-interpreter-v1/lib/python3.11/site-packages/e2b_machine_pkg.py");
    assert!(
        !site.exists(),
        "the shared template changed: {}",
        site.display()
    );
    // Kills tear down in the background: give them a moment.
    let data = data.path().display().to_string();
    let overlays = || {
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        let mine = mounts
            .lines()
            .filter(|l| l.contains(&data) && l.contains(".rootfs"));
        mine.map(str::to_string).collect::<Vec<_>>()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !overlays().is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(
        overlays(),
        Vec::<String>::new(),
        "an overlay outlived its sandbox"
    );
    h.server.shutdown().await;
}

/// A server whose `code-interpreter-v1` sandboxes have the template's venv
/// (its Jupyter kernels): the interpreter scenarios need it.
pub(crate) async fn start_with_interpreter() -> Harness {
    let h = start().await;
    assert!(
        h.server
            .isolation()
            .contains("code-interpreter-v1: the venv"),
        "no code-interpreter-v1 template (run scripts/bootstrap): {}",
        h.server.isolation()
    );
    h
}

/// The code interpreter is the real one (`interpreter.py`, through the
/// official e2b-code-interpreter SDK): IPython's kernel with E2B's
/// formatters in `code-interpreter-v1`, its default contexts running from
/// the sandbox's start, a kernel killed from inside restarted.
#[tokio::test]
async fn python_sdk_interpreter() {
    let python = python_from(
        "E2B_TOOLS_PYTHON",
        "e2b==2.63.0 and e2b-code-interpreter==2.11.5",
        "target/pyenv",
    );
    let h = start_with_interpreter().await;
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/conformance/interpreter.py"
    );
    run_python(&h, &python, script, &[], "interpreter scenario passed").await;
    h.server.shutdown().await;
}
