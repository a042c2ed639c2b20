//! Running a program inside a sandbox: Debian's `bubblewrap` gives each
//! process a mount namespace where `/` is the host's, read-only, and
//! `/home/user` and `/tmp` are the sandbox's own directories, plus a pid
//! namespace so killing the `bwrap` process kills everything it started.
//! The network is shared on purpose: processes of one sandbox must reach each
//! other's ports.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use e2b_wire::HOME_DIR;

use crate::paths::SandboxPaths;
use crate::Isolation;

/// The `PATH` a sandbox process gets.
pub const SANDBOX_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/// The user processes run as.
pub const SANDBOX_USER: &str = "user";

/// How processes are launched, decided once at server start.
#[derive(Debug, Clone)]
pub enum Launcher {
    /// Through `bwrap` at this path.
    Bwrap {
        /// The bwrap binary.
        bwrap: PathBuf,
        /// Host directory to hide inside sandboxes (the data dir), when it
        /// is not already covered by the sandbox's own `/tmp` or `/home`.
        hide: Option<PathBuf>,
    },
    /// Directly on the host (explicit opt-out; no isolation at all).
    Unisolated,
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
        let launcher = Launcher::Bwrap { bwrap, hide };
        launcher.self_test(data_dir).await?;
        Ok(launcher)
    }

    /// Runs `true` in a throwaway sandbox to prove namespaces work here.
    async fn self_test(&self, data_dir: &Path) -> Result<(), IsolationUnavailable> {
        let root = data_dir.join(".selftest");
        let paths = SandboxPaths::new(root.clone(), data_dir.to_path_buf());
        paths
            .create()
            .map_err(|e| IsolationUnavailable(format!("cannot create {}: {e}", root.display())))?;
        let mut cmd = self.command(
            &paths,
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

    /// A command running `program args` in the sandbox with working
    /// directory `cwd` (a sandbox path) and exactly the environment `envs`
    /// (plus the base variables when not already set).
    pub fn command(
        &self,
        paths: &SandboxPaths,
        program: &str,
        args: &[String],
        cwd: &str,
        envs: &BTreeMap<String, String>,
    ) -> tokio::process::Command {
        let mut cmd = match self {
            Launcher::Bwrap { bwrap, hide } => {
                let mut cmd = tokio::process::Command::new(bwrap);
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
                cmd.arg("--").arg(program).args(args);
                cmd.current_dir("/");
                cmd
            }
            Launcher::Unisolated => {
                let mut cmd = tokio::process::Command::new(program);
                cmd.args(args);
                let host_cwd = paths
                    .resolve(cwd, true)
                    .map(|r| r.host)
                    .unwrap_or_else(|_| paths.home());
                cmd.current_dir(host_cwd);
                // Its own process group, so a kill reaches its children too.
                cmd.process_group(0);
                cmd
            }
        };
        cmd.env_clear();
        let home = match self {
            Launcher::Bwrap { .. } => HOME_DIR.to_string(),
            Launcher::Unisolated => paths.home().to_string_lossy().into_owned(),
        };
        cmd.env("PATH", SANDBOX_PATH)
            .env("HOME", home)
            .env("USER", SANDBOX_USER)
            .env("LOGNAME", SANDBOX_USER);
        cmd.envs(envs);
        cmd.kill_on_drop(true);
        cmd
    }

    /// Whether processes run isolated.
    pub fn is_isolated(&self) -> bool {
        matches!(self, Launcher::Bwrap { .. })
    }
}

fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| SANDBOX_PATH.into());
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}
