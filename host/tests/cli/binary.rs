//! Running the `e2b-tools` binary built for these tests.

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// The result of one run of `e2b-tools`.
pub struct Run {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    fn from_output(output: Output) -> Self {
        Self {
            status: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

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
/// variables, so the local backend is the default.
pub fn e2b_tools(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_e2b-tools"));
    command.args(args);
    for (key, _) in std::env::vars() {
        if key.starts_with("E2B_") {
            command.env_remove(key);
        }
    }
    command
}

/// Runs the command with `stdin` as its input.
pub fn run(mut command: Command, stdin: &str) -> Run {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("e2b-tools starts");
    let mut input = child.stdin.take().expect("stdin is piped");
    input
        .write_all(stdin.as_bytes())
        .expect("stdin is writable");
    drop(input);
    Run::from_output(child.wait_with_output().expect("e2b-tools finishes"))
}
