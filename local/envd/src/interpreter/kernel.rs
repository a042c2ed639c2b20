//! One running kernel process: start it, send it executions and
//! interrupts, read what it says.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::language::Language;
use super::pipe_parser::{KernelEvent, Pipe, PipeParser};

/// Starts kernel processes inside one sandbox.
pub trait KernelSpawner: Send + Sync + 'static {
    /// A command that runs `program args` inside the sandbox (isolated, cwd
    /// /home/user, sandbox env vars applied); the caller pipes stdio. An
    /// error says why the sandbox cannot run it.
    fn command(&self, program: &str, args: &[String]) -> Result<tokio::process::Command, String>;
    /// The sandbox-global env vars (from create `envVars`).
    fn global_envs(&self) -> BTreeMap<String, String>;
}

/// How long a kernel may take to say it is ready: a JVM with JShell, or R,
/// on a loaded machine takes seconds (more than the bridge's own 30 s wait
/// for its kernel, so the bridge's error is the one that reaches the user).
const START_TIMEOUT: Duration = Duration::from_secs(45);
/// Read size for the kernel's pipes.
const READ_CHUNK: usize = 32 * 1024;
/// Events buffered between the pipe readers and the execution; when full,
/// the readers stop reading and the kernel blocks on its writes.
const EVENT_BUFFER: usize = 64;
/// Stderr kept for the error message of a kernel that failed to start.
const MAX_START_STDERR: usize = 4096;

/// A live kernel process.
pub(crate) struct KernelProcess {
    language: Language,
    child: Child,
    stdin: ChildStdin,
    events: mpsc::Receiver<KernelEvent>,
    readers: [JoinHandle<()>; 2],
    /// It is the Jupyter bridge: JSON requests, executions numbered by
    /// the kernel.
    jupyter: bool,
}

impl KernelProcess {
    /// Starts a `language` kernel in `cwd` and waits until it is ready.
    pub(crate) async fn start(
        spawner: &dyn KernelSpawner,
        language: Language,
        cwd: &str,
    ) -> Result<KernelProcess, String> {
        let (program, args) = language.launch(cwd);
        let mut command = spawner
            .command(program, &args)
            .map_err(|e| format!("Failed to start the {} kernel: {e}", language.name()))?;
        command
            // The spawner applies them already; repeating them keeps the
            // guarantee that a first execution sees them.
            .envs(spawner.global_envs())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            // Its own process group, so an interrupt or kill reaches the
            // kernel's children too (where the sandbox keeps the group).
            .process_group(0);
        // An interrupt is SIGINT for the kernel's group: never inherited ignored.
        crate::process::start_clean(&mut command);
        let mut child = command.spawn().map_err(|e| {
            format!(
                "Failed to start the {} kernel ({program}): {e}",
                language.name()
            )
        })?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err("kernel pipes missing".to_string());
        };
        let (tx, events) = mpsc::channel(EVENT_BUFFER);
        let readers = [
            tokio::spawn(read_pipe(stdout, Pipe::Stdout, tx.clone())),
            tokio::spawn(read_pipe(stderr, Pipe::Stderr, tx)),
        ];
        let mut kernel = KernelProcess {
            language,
            child,
            stdin,
            events,
            readers,
            jupyter: false,
        };
        kernel.wait_ready().await?;
        Ok(kernel)
    }

    async fn wait_ready(&mut self) -> Result<(), String> {
        let mut stderr = String::new();
        let deadline = tokio::time::sleep(START_TIMEOUT);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                event = self.next_event() => match event {
                    KernelEvent::Ready { jupyter } => {
                        self.jupyter = jupyter;
                        return Ok(());
                    }
                    KernelEvent::Exited => {
                        return Err(format!(
                            "The {} kernel exited while starting: {}",
                            self.language.name(),
                            stderr.trim()
                        ))
                    }
                    KernelEvent::Stderr { text } | KernelEvent::Stdout { text }
                        if stderr.len() < MAX_START_STDERR =>
                    {
                        stderr.push_str(&text);
                    }
                    _ => {}
                },
                _ = &mut deadline => {
                    return Err(format!(
                        "The {} kernel did not start within {} s: {}",
                        self.language.name(),
                        START_TIMEOUT.as_secs(),
                        stderr.trim()
                    ))
                }
            }
        }
    }

    /// Whether the kernel numbers its executions itself (a Jupyter kernel):
    /// then the number comes as [`KernelEvent::Count`] once the execution
    /// started.
    pub(crate) fn counts(&self) -> bool {
        self.jupyter
    }

    /// The next thing the kernel said; [`KernelEvent::Exited`] once it is gone.
    pub(crate) async fn next_event(&mut self) -> KernelEvent {
        self.events.recv().await.unwrap_or(KernelEvent::Exited)
    }

    /// Drops output the kernel produced between executions (background
    /// threads, late child output), so it is not blamed on the next one.
    pub(crate) fn drain_stale(&mut self) {
        while self.events.try_recv().is_ok() {}
    }

    /// Starts an execution.
    pub(crate) async fn execute(
        &mut self,
        code: &str,
        env_vars: &BTreeMap<String, String>,
        count: u64,
    ) -> std::io::Result<()> {
        let request = match self.language {
            // The bash driver reads shell lines; everything else JSON.
            Language::Bash if !self.jupyter => bash_execution(code, env_vars),
            _ => {
                let mut line =
                    json!({"op": "execute", "code": code, "env_vars": env_vars, "count": count})
                        .to_string();
                line.push('\n');
                line
            }
        };
        self.write(request.as_bytes()).await
    }

    /// Asks the kernel to interrupt the running execution (like Ctrl-C).
    pub(crate) async fn interrupt(&mut self) {
        match self.language {
            Language::Bash if !self.jupyter => {
                let _ = self.write(b"#e2b-interrupt\n").await;
            }
            // The drivers read stdin on a thread, so this works whatever
            // process tree the sandbox puts around the kernel.
            _ => {
                let _ = self.write(b"{\"op\": \"interrupt\"}\n").await;
            }
        }
    }

    /// Kills the kernel and everything in its process group.
    pub(crate) fn kill(&mut self) {
        self.signal_group(libc::SIGKILL);
        let _ = self.child.start_kill();
        for reader in &self.readers {
            reader.abort();
        }
    }

    fn signal_group(&self, signal: libc::c_int) {
        if let Some(pid) = self.child.id() {
            crate::process::signal_group(pid, signal);
        }
    }

    async fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stdin.write_all(bytes).await?;
        self.stdin.flush().await
    }
}

impl Drop for KernelProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Reads one pipe until EOF, turning its bytes into events.
async fn read_pipe(mut pipe: impl AsyncRead + Unpin, kind: Pipe, tx: mpsc::Sender<KernelEvent>) {
    let mut parser = PipeParser::new(kind);
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        let n = match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        for event in parser.feed(&buf[..n]) {
            if tx.send(event).await.is_err() {
                return;
            }
        }
    }
}

/// `s` as a bash ANSI-C quoted word (`$'…'`): one line, any content.
fn bash_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 3);
    out.push_str("$'");
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\0' => {}
            c if c.is_control() && c.is_ascii() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// Whether `name` can be a shell variable.
fn is_shell_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// One bash execution as a single input line: set the execution's env
/// vars, run the code in this shell (so state persists; quoted as one word,
/// so an unfinished quote cannot swallow what follows), restore the env vars, then print
/// the end markers with the exit status on stdout and stderr.
fn bash_execution(code: &str, env_vars: &BTreeMap<String, String>) -> String {
    let mut line = String::new();
    let vars: Vec<&String> = env_vars.keys().filter(|k| is_shell_name(k)).collect();
    for (i, key) in vars.iter().enumerate() {
        line.push_str(&format!(
            "if [ -n \"${{{key}+x}}\" ]; then __e2b_old_{i}=\"${key}\"; __e2b_had_{i}=1; else __e2b_had_{i}=; fi; export {key}={}; ",
            bash_quote(&env_vars[*key])
        ));
    }
    // Sourced, so the driver's interrupt trap (`return`) ends just this
    // execution; `source` reads all the code before running it.
    line.push_str(&format!(
        ". <(printf '%s\\n' {}) </dev/null; __e2b_rc=$?; ",
        bash_quote(code)
    ));
    // After a trap `return`ed out of a wait for a child, bash leaves its
    // wait-time SIGINT handler installed and ignores the next interrupt;
    // waiting for one more child (a subshell) restores the handler.
    line.push_str("if [ \"$__e2b_rc\" -ge 128 ]; then (:); fi; ");
    for (i, key) in vars.iter().enumerate() {
        line.push_str(&format!(
            "if [ -n \"$__e2b_had_{i}\" ]; then export {key}=\"$__e2b_old_{i}\"; else unset {key}; fi; "
        ));
    }
    line.push_str(
        "printf '\\036E2B\\037{\"type\":\"done\",\"exit_code\":%d}\\n' \"$__e2b_rc\"; printf '\\036E2B\\037{\"type\":\"mark\"}\\n' >&2\n",
    );
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bash_quoting_keeps_everything_on_one_line() {
        assert_eq!(bash_quote("a'b\\c\nd"), "$'a\\'b\\\\c\\nd'");
        assert!(!bash_execution("echo 'x\n", &BTreeMap::new())
            .trim_end()
            .contains('\n'));
        assert!(is_shell_name("_A1") && !is_shell_name("1A") && !is_shell_name("A-B"));
    }
}
