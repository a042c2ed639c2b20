//! Running programs inside a sandbox.
//!
//! Debian's `bubblewrap` builds the sandbox: a mount namespace where `/` is
//! the host's, read-only, and `/home/user` and `/tmp` are the sandbox's own
//! directories, plus user (uid 1000 inside = the server's uid outside), pid
//! and IPC namespaces. One long-lived *anchor* process (`sleep infinity`
//! under bwrap) holds these namespaces for the sandbox's lifetime; every
//! command enters them with `nsenter`, so all processes of a sandbox see each
//! other and a background job a command leaves behind (`server &`) keeps
//! running, as on E2B. Killing the anchor tears the pid namespace down,
//! which kills everything left in it. The network is shared on purpose:
//! processes of one sandbox must reach each other's ports.
//!
//! Every process leads its own process group, so a signal to `-pid`
//! reaches what it started in the foreground.

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use e2b_wire::HOME_DIR;

use crate::paths::SandboxPaths;
use crate::Isolation;

/// The `PATH` a sandbox process gets.
pub const SANDBOX_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/// The user processes run as.
pub const SANDBOX_USER: &str = "user";
/// How long an anchor may take to appear.
const ANCHOR_START_TIMEOUT: Duration = Duration::from_secs(5);

/// How processes are launched, decided once at server start.
#[derive(Debug, Clone)]
pub enum Launcher {
    /// Through bubblewrap.
    Bwrap {
        /// The bwrap binary.
        bwrap: PathBuf,
        /// Host directory to hide inside sandboxes (the data dir), when it
        /// is not already covered by the sandbox's own `/tmp` or `/home`.
        hide: Option<PathBuf>,
        /// `nsenter` and `env` to join a sandbox's anchor; `None`
        /// when joining does not work here (then each process gets its own
        /// namespaces and background jobs end with their command).
        join: Option<JoinTools>,
    },
    /// Directly on the host (explicit opt-out; no isolation at all).
    Unisolated,
}

/// The binaries that run a program inside an anchor's namespaces.
#[derive(Debug, Clone)]
pub struct JoinTools {
    nsenter: PathBuf,
    env: PathBuf,
}

/// Why isolation cannot be set up.
#[derive(Debug)]
pub struct IsolationUnavailable(pub String);

impl Launcher {
    /// Finds and tries bubblewrap (or accepts the opt-out).
    pub async fn detect(
        isolation: &Isolation,
        data_dir: &Path,
    ) -> Result<Self, IsolationUnavailable> {
        if matches!(isolation, Isolation::None) {
            tracing::warn!(
                "running sandboxes WITHOUT isolation: commands can read and write the whole host"
            );
            return Ok(Launcher::Unisolated);
        }
        let bwrap = find_in_path("bwrap").ok_or_else(|| {
            IsolationUnavailable(
                "bubblewrap not found: install it (apt-get install bubblewrap) or pass --no-isolation"
                    .into(),
            )
        })?;
        let hide = if data_dir.starts_with("/tmp") || data_dir.starts_with("/home") {
            None
        } else {
            Some(data_dir.to_path_buf())
        };
        let join = match (find_in_path("nsenter"), find_in_path("env")) {
            (Some(nsenter), Some(env)) => Some(JoinTools { nsenter, env }),
            _ => None,
        };
        let plain = Launcher::Bwrap {
            bwrap: bwrap.clone(),
            hide: hide.clone(),
            join: None,
        };
        plain.self_test(data_dir).await?;
        if join.is_some() {
            let shared = Launcher::Bwrap { bwrap, hide, join };
            match shared.self_test(data_dir).await {
                Ok(()) => return Ok(shared),
                Err(e) => tracing::warn!(
                    "cannot join sandbox namespaces with nsenter here ({}): each command gets its own",
                    e.0
                ),
            }
        }
        Ok(plain)
    }

    /// Runs a command in a throwaway sandbox to prove the set-up works.
    async fn self_test(&self, data_dir: &Path) -> Result<(), IsolationUnavailable> {
        let root = data_dir.join(".selftest");
        let paths = SandboxPaths::new(root.clone(), data_dir.to_path_buf());
        paths
            .create()
            .map_err(|e| IsolationUnavailable(format!("cannot create {}: {e}", root.display())))?;
        let runner = SandboxRunner::new(self.clone(), paths.clone());
        let mut cmd = runner.command(
            "/bin/sh",
            &["-c".into(), "touch /home/user/ok".into()],
            HOME_DIR,
            &BTreeMap::new(),
        );
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let out = cmd.output().await;
        let made = paths.home().join("ok").exists();
        runner.stop();
        let _ = std::fs::remove_dir_all(&root);
        match out {
            Ok(out) if out.status.success() && made => Ok(()),
            Ok(out) => Err(IsolationUnavailable(format!(
                "bubblewrap does not work here ({}): {}; fix it or pass --no-isolation",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ))),
            Err(e) => Err(IsolationUnavailable(format!(
                "bubblewrap cannot be run: {e}; fix it or pass --no-isolation"
            ))),
        }
    }

    /// bwrap's arguments building a sandbox's namespaces, up to `--`.
    fn bwrap_args(
        bwrap: &Path,
        hide: Option<&Path>,
        paths: &SandboxPaths,
        cwd: &str,
    ) -> std::process::Command {
        let mut cmd = std::process::Command::new(bwrap);
        cmd.arg("--ro-bind").arg("/").arg("/");
        cmd.arg("--tmpfs").arg("/home");
        cmd.arg("--bind").arg(paths.home()).arg(HOME_DIR);
        cmd.arg("--bind").arg(paths.tmp()).arg("/tmp");
        if let Some(hide) = hide {
            cmd.arg("--tmpfs").arg(hide);
        }
        cmd.args(["--dev", "/dev", "--proc", "/proc"]);
        cmd.args(["--unshare-pid", "--unshare-ipc", "--unshare-user"]);
        // uid 1000 inside maps to the server's uid outside, so files
        // written by commands and through /files are the same owner's.
        cmd.args(["--uid", "1000", "--gid", "1000"]);
        cmd.args(["--die-with-parent", "--new-session"]);
        cmd.arg("--chdir").arg(cwd);
        cmd.current_dir("/");
        cmd
    }
}

/// The process holding one sandbox's namespaces.
struct Anchor {
    bwrap: std::process::Child,
    /// Host pid of the `sleep` inside, whose namespaces commands join.
    target: u32,
}

impl Drop for Anchor {
    fn drop(&mut self) {
        // bwrap's pid 1 dies with it (--die-with-parent), and with pid 1
        // everything else in the pid namespace.
        let _ = self.bwrap.kill();
        let _ = self.bwrap.wait();
    }
}

/// How many milliseconds [`SandboxRunner::sandbox_pid`] waits at most.
const PID_LOOKUP_TRIES: u32 = 100;

/// The pid of `pid` in its innermost pid namespace (`NSpid`'s last field).
fn innermost_pid(pid: u32) -> Option<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|line| line.strip_prefix("NSpid:"))?
        .split_whitespace()
        .last()?
        .parse()
        .ok()
}

/// Whether `pid` exists and has not exited (a zombie has).
fn running(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // The state is the first field after the parenthesised command name.
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next());
    !matches!(state, None | Some('Z' | 'X'))
}

/// Runs programs inside one sandbox.
pub struct SandboxRunner {
    launcher: Launcher,
    paths: SandboxPaths,
    anchor: Mutex<Option<Anchor>>,
}

impl SandboxRunner {
    /// A runner for the sandbox at `paths`.
    pub fn new(launcher: Launcher, paths: SandboxPaths) -> Self {
        Self {
            launcher,
            paths,
            anchor: Mutex::new(None),
        }
    }

    /// A command running `program args` in the sandbox with working
    /// directory `cwd` (a sandbox path), environment `envs` over the base
    /// variables (`PATH`, `HOME`, `USER`, `LOGNAME`), leading its own
    /// process group.
    pub fn command(
        &self,
        program: &str,
        args: &[String],
        cwd: &str,
        envs: &BTreeMap<String, String>,
    ) -> tokio::process::Command {
        let std_cmd = match &self.launcher {
            Launcher::Bwrap { bwrap, hide, join } => {
                let target = join
                    .as_ref()
                    .and_then(|_| self.anchor_target(bwrap, hide.as_deref()));
                match (join, target) {
                    (Some(tools), Some(target)) => {
                        let mut cmd = std::process::Command::new(&tools.nsenter);
                        cmd.args(["-t", &target.to_string()]);
                        cmd.args([
                            "-U", "-m", "-p", "-i", "-r", "-w", "-S", "1000", "-G", "1000", "--",
                        ]);
                        cmd.arg(&tools.env).arg("-C").arg(cwd).arg("--");
                        cmd.arg(program).args(args);
                        cmd.current_dir("/");
                        // nsenter forks the program into the pid namespace;
                        // one process group holds both for signals.
                        cmd.process_group(0);
                        cmd
                    }
                    _ => {
                        let mut cmd =
                            Launcher::bwrap_args(bwrap, hide.as_deref(), &self.paths, cwd);
                        cmd.arg("--").arg(program).args(args);
                        cmd.process_group(0);
                        cmd
                    }
                }
            }
            Launcher::Unisolated => {
                let mut cmd = std::process::Command::new(program);
                cmd.args(args);
                let host_cwd = self
                    .paths
                    .resolve(cwd, true)
                    .map(|r| r.host)
                    .unwrap_or_else(|_| self.paths.home());
                cmd.current_dir(host_cwd);
                cmd.process_group(0);
                cmd
            }
        };
        let mut cmd = tokio::process::Command::from(std_cmd);
        cmd.env_clear();
        let home = match self.launcher {
            Launcher::Bwrap { .. } => HOME_DIR.to_string(),
            Launcher::Unisolated => self.paths.home().to_string_lossy().into_owned(),
        };
        cmd.env("PATH", SANDBOX_PATH)
            .env("HOME", home)
            .env("USER", SANDBOX_USER)
            .env("LOGNAME", SANDBOX_USER);
        cmd.envs(envs);
        cmd.kill_on_drop(true);
        cmd
    }

    /// The pid that a process [`Self::command`] started has inside the
    /// sandbox, as envd reports pids: the host pid names only its `nsenter`
    /// wrapper, which the sandbox cannot see, so `kill <pid>` in the
    /// sandbox would miss. `None` when the process does not live in the
    /// sandbox's shared pid namespace (no isolation, or a command that got
    /// namespaces of its own) or is already gone: the host pid is then the
    /// only stable name.
    pub async fn sandbox_pid(&self, host_pid: u32) -> Option<u32> {
        let anchor_ns = {
            let slot = self.anchor.lock().ok()?;
            let target = slot.as_ref()?.target;
            std::fs::read_link(format!("/proc/{target}/ns/pid")).ok()?
        };
        // nsenter forks the program into the namespace after joining it:
        // that takes about a millisecond.
        for _ in 0..PID_LOOKUP_TRIES {
            if let Some(child) = first_child(host_pid) {
                let ns = std::fs::read_link(format!("/proc/{child}/ns/pid")).ok()?;
                return if ns == anchor_ns {
                    innermost_pid(child)
                } else {
                    None
                };
            }
            if !running(host_pid) {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        None
    }

    /// The pid whose namespaces to join, starting the anchor if needed.
    fn anchor_target(&self, bwrap: &Path, hide: Option<&Path>) -> Option<u32> {
        let mut slot = self.anchor.lock().ok()?;
        if let Some(anchor) = slot.as_mut() {
            if matches!(anchor.bwrap.try_wait(), Ok(None)) {
                return Some(anchor.target);
            }
            slot.take();
        }
        let mut cmd = Launcher::bwrap_args(bwrap, hide, &self.paths, HOME_DIR);
        cmd.args(["--", "sleep", "infinity"]);
        cmd.env_clear().env("PATH", SANDBOX_PATH);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let bwrap_child = match spawn_from_anchor_thread(cmd) {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!("cannot start a sandbox anchor: {e}");
                return None;
            }
        };
        let mut anchor = Anchor {
            target: 0,
            bwrap: bwrap_child,
        };
        // bwrap → its pid 1 → `sleep infinity`: wait for the grandchild.
        let started = Instant::now();
        while started.elapsed() < ANCHOR_START_TIMEOUT {
            let init = first_child(anchor.bwrap.id());
            if let Some(target) = init.and_then(first_child) {
                anchor.target = target;
                *slot = Some(anchor);
                return Some(target);
            }
            if !matches!(anchor.bwrap.try_wait(), Ok(None)) {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        tracing::warn!("a sandbox anchor did not come up");
        None
    }

    /// Stops the anchor: every process still in the sandbox dies.
    pub fn stop(&self) {
        let anchor = self.anchor.lock().ok().and_then(|mut s| s.take());
        drop(anchor);
    }
}

impl Drop for SandboxRunner {
    fn drop(&mut self) {
        self.stop();
    }
}

type SpawnRequest = (
    std::process::Command,
    std::sync::mpsc::Sender<std::io::Result<std::process::Child>>,
);

/// Spawns on one thread that lives as long as the server process. bwrap's
/// `--die-with-parent` fires when the *thread* that spawned it exits, and
/// runtime threads (the blocking pool's, a test's) come and go, while an
/// anchor must live as long as its sandbox.
fn spawn_from_anchor_thread(cmd: std::process::Command) -> std::io::Result<std::process::Child> {
    static SPAWNER: std::sync::OnceLock<Mutex<std::sync::mpsc::Sender<SpawnRequest>>> =
        std::sync::OnceLock::new();
    let sender = SPAWNER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<SpawnRequest>();
        let spawned = std::thread::Builder::new()
            .name("e2b-local-anchors".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("cannot start the anchor thread: {e}");
        }
        Mutex::new(tx)
    });
    let (reply_tx, reply_rx) = std::sync::mpsc::channel();
    sender
        .lock()
        .map_err(|_| std::io::Error::other("anchor thread lock poisoned"))?
        .send((cmd, reply_tx))
        .map_err(|_| std::io::Error::other("the anchor thread is gone"))?;
    reply_rx
        .recv()
        .map_err(|_| std::io::Error::other("the anchor thread is gone"))?
}

/// The first child of `pid`, from procfs.
fn first_child(pid: u32) -> Option<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| SANDBOX_PATH.into());
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}
