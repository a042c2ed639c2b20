//! Running the `e2b-tools` binary built for these tests (and the MCP test's
//! Python client) with a bounded wait.

use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// How long one run may take before it is killed and its test fails. The
/// slowest runs start a local server and a sandbox; on a loaded 2-core
/// machine that takes seconds, not minutes.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// The result of one run of `e2b-tools`.
pub struct Run {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// stdout parsed as one JSON value.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|err| panic!("stdout is not JSON ({err}): {self:?}"))
    }
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {}\n--- stdout\n{}\n--- stderr\n{}",
            self.status, self.stdout, self.stderr
        )
    }
}

/// A command for the binary with a clean environment: no `E2B_*`
/// variables, so the local backend is the default; its once-per-session
/// notices marked in a runtime directory of these tests, not the user's.
pub fn e2b_tools(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_e2b-tools"));
    command.args(args);
    for (key, _) in std::env::vars() {
        if key.starts_with("E2B_") {
            command.env_remove(key);
        }
    }
    command.env("XDG_RUNTIME_DIR", runtime_dir("shared"));
    command
}

/// A private directory `name` of this test run, made if missing.
pub fn runtime_dir(name: &str) -> std::path::PathBuf {
    use std::os::unix::fs::DirBuilderExt;
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("cli-runtime-{}", std::process::id()))
        .join(name);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .unwrap();
    dir
}

/// Runs the command with `stdin` as its input, for at most [`RUN_TIMEOUT`].
pub fn run(command: Command, stdin: &str) -> Run {
    run_within(command, stdin, RUN_TIMEOUT)
}

/// Runs the command with `stdin` as its input. Past `limit` the child is
/// killed and the test fails with what it printed so far; a test that
/// panics while it runs kills it too.
pub fn run_within(mut command: Command, stdin: &str, limit: Duration) -> Run {
    let child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|err| panic!("cannot start {command:?}: {err}"));
    let mut child = KillOnDrop(child);
    // Pipes are fed and drained on threads, so a child that writes before
    // it reads cannot deadlock with us.
    let mut input = child.0.stdin.take().expect("stdin is piped");
    let stdin = stdin.as_bytes().to_vec();
    // A child that exits without reading its input breaks the pipe; its
    // exit status says what went wrong.
    thread::spawn(move || drop(input.write_all(&stdin)));
    let stdout = drain(child.0.stdout.take().expect("stdout is piped"));
    let stderr = drain(child.0.stderr.take().expect("stderr is piped"));

    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.0.try_wait().expect("the child can be waited for") {
            break Some(status);
        }
        if Instant::now() >= deadline {
            break None;
        }
        thread::sleep(Duration::from_millis(10));
    };
    if status.is_none() {
        child.kill();
    }
    // The pipes close when the child exits, unless a process it started
    // still holds them: then what was read is enough.
    let grace = Duration::from_secs(5);
    let run = Run {
        status: status.and_then(|s| s.code()).unwrap_or(-1),
        stdout: stdout.recv_timeout(grace).unwrap_or_default(),
        stderr: stderr.recv_timeout(grace).unwrap_or_default(),
    };
    if status.is_none() {
        panic!("{command:?} did not finish within {limit:?} and was killed: {run:?}");
    }
    run
}

/// Reads `pipe` to its end on a thread; the text arrives on the channel.
fn drain(mut pipe: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        let _ = tx.send(String::from_utf8_lossy(&bytes).into_owned());
    });
    rx
}

/// A child that is killed and reaped when dropped, unless it has exited.
struct KillOnDrop(Child);

impl KillOnDrop {
    fn kill(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        self.kill();
    }
}
