//! What envd knows of its sandbox and does with the sandbox's credentials:
//! starting processes as the acting user, and opening its filesystem.

use std::collections::BTreeMap;
use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::{Arc, Mutex};

use e2b_wire::envd_setup::{EnvdConfig, SandboxUser, Users};
use e2b_wire::HOME_DIR;

use crate::filesystem::sandbox_fs::{OwnerNames, SandboxFs};
use crate::interpreter::{Interpreter, KernelSpawner};
use crate::process::table::ProcessTable;

/// Why a command cannot be started.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// The requested user does not exist in this sandbox.
    #[error("user '{0}' is not available: the local server runs as an ordinary user, so its sandboxes have no root")]
    NoSuchUser(&'static str),
}

/// One sandbox's envd: its configuration, processes and interpreter.
pub struct Envd {
    config: EnvdConfig,
    /// The sandbox's `/`: every file path is resolved beneath it.
    root: Arc<OwnedFd>,
    /// The processes started through `process.Process`.
    pub processes: Arc<ProcessTable>,
    interpreter: Mutex<Option<Arc<Interpreter>>>,
    /// True once envd shuts down: open streams end.
    gone: tokio::sync::watch::Sender<bool>,
}

/// Sets up envd's own process before it serves: the file-size limit its
/// processes inherit, and no ambient capabilities for them to inherit.
pub fn prepare_process(config: &EnvdConfig) -> io::Result<()> {
    if let Some(bytes) = config.max_file_size {
        let limit = rustix::process::Rlimit {
            current: Some(bytes),
            maximum: Some(bytes),
        };
        rustix::process::setrlimit(rustix::process::Resource::Fsize, limit)?;
    }
    if config.users == Users::Both {
        // bwrap grants its capabilities as ambient ones; a program envd
        // starts as root gets root's anyway, and `user`'s must get none.
        rustix::thread::clear_ambient_capability_set()?;
    }
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o022));
    Ok(())
}

impl Envd {
    /// envd for the sandbox `config` describes.
    pub fn new(config: EnvdConfig) -> io::Result<Arc<Self>> {
        let root = SandboxFs::open_root(Path::new(&config.root))?;
        Ok(Arc::new(Self {
            config,
            root: Arc::new(root),
            processes: Arc::default(),
            interpreter: Mutex::new(None),
            gone: tokio::sync::watch::Sender::new(false),
        }))
    }

    /// The sandbox's id.
    pub fn id(&self) -> &str {
        &self.config.sandbox_id
    }

    /// The `PATH` of the sandbox's processes (also `sudo`'s `secure_path`).
    pub fn path(&self) -> &str {
        &self.config.path
    }

    /// `HOME` of `user`.
    pub fn home(&self) -> &str {
        &self.config.home
    }

    /// Whether the sandbox is isolated (envd runs inside it, not on the
    /// host).
    pub fn isolated(&self) -> bool {
        self.config.users != Users::Host
    }

    /// The sandbox-global environment variables.
    pub fn env_vars(&self) -> &BTreeMap<String, String> {
        &self.config.env_vars
    }

    /// The sandbox's filesystem as `who`: what the API creates is theirs.
    pub fn fs(&self, who: SandboxUser) -> SandboxFs {
        let (owner, names) = match self.config.users {
            Users::Both => (
                Some((who.inside_id(), who.inside_id())),
                OwnerNames::inside(),
            ),
            Users::UserOnly => (None, OwnerNames::inside()),
            Users::Host => (
                None,
                OwnerNames::single_user(
                    rustix::process::getuid().as_raw(),
                    rustix::process::getgid().as_raw(),
                ),
            ),
        };
        SandboxFs::new(Arc::clone(&self.root), owner, names).with_home(who.home())
    }

    /// A command running `program args` as `who`, in `cwd` (a sandbox
    /// path), with `envs` over the base variables (`PATH`, `HOME`, `USER`,
    /// `LOGNAME`). It stays in envd's process group: the caller makes it
    /// lead its own, or a session (`setsid`, which forks a group leader).
    pub fn command(
        &self,
        program: &str,
        args: &[String],
        cwd: &str,
        envs: &BTreeMap<String, String>,
        who: SandboxUser,
    ) -> Result<tokio::process::Command, LaunchError> {
        let mut cmd = tokio::process::Command::new(self.resolve(program));
        // argv[0] as given, as a shell would pass it.
        cmd.arg0(program).args(args);
        let home = match (self.config.users, who) {
            (Users::Host, _) => self.config.home.clone(),
            (Users::UserOnly, SandboxUser::Root) => return Err(LaunchError::NoSuchUser("root")),
            (_, SandboxUser::Root) => "/root".to_string(),
            (_, SandboxUser::User) => self.config.home.clone(),
        };
        match self.config.users {
            // Without isolation sandbox paths live under the sandbox's directory.
            Users::Host => {
                let inside = Path::new(&self.config.root).join(cwd.trim_start_matches('/'));
                let dir = if inside.is_dir() {
                    inside
                } else {
                    self.config.home.clone().into()
                };
                cmd.current_dir(dir);
            }
            _ => {
                cmd.current_dir(cwd);
            }
        }
        if self.config.users == Users::Both && who == SandboxUser::User {
            // std clears the supplementary groups when root changes uid.
            cmd.uid(who.inside_id()).gid(who.inside_id());
        }
        cmd.env_clear()
            .env("PATH", &self.config.path)
            .env("HOME", home)
            .env("USER", who.name())
            .env("LOGNAME", who.name())
            .envs(envs)
            .kill_on_drop(true);
        crate::process::start_clean(&mut cmd);
        Ok(cmd)
    }

    /// `program` found on the sandbox's `PATH` (the template's first), as
    /// the command's own environment would find it; envd's `PATH` is not
    /// the sandbox's.
    fn resolve(&self, program: &str) -> std::path::PathBuf {
        use std::os::unix::fs::PermissionsExt;
        if program.contains('/') {
            return program.into();
        }
        self.config
            .path
            .split(':')
            .map(|dir| Path::new(dir).join(program))
            .find(|candidate| {
                std::fs::metadata(candidate)
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            })
            .unwrap_or_else(|| program.into())
    }

    /// The code interpreter, started on first use.
    pub fn interpreter(self: &Arc<Self>) -> Arc<Interpreter> {
        let mut slot = self.interpreter.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert_with(|| {
            Interpreter::new(Arc::new(Kernels {
                envd: Arc::clone(self),
            }))
        })
        .clone()
    }

    /// Starts the default contexts the sandbox's template starts with.
    pub fn start_default_contexts(self: &Arc<Self>) {
        if !self.config.default_contexts.is_empty() {
            self.interpreter()
                .start_defaults(&self.config.default_contexts);
        }
    }

    /// Watches for envd shutting down.
    pub fn gone(&self) -> tokio::sync::watch::Receiver<bool> {
        self.gone.subscribe()
    }

    /// Ends every process and kernel (the control socket closed: the
    /// server is done with this sandbox).
    pub async fn shut_down(&self) {
        self.gone.send_replace(true);
        let interpreter = self.interpreter.lock().ok().and_then(|mut s| s.take());
        if let Some(interpreter) = interpreter {
            interpreter.shutdown().await;
        }
        self.processes.kill_all().await;
    }
}

/// Starts the interpreter's kernels in `user`'s home, as the sandbox's
/// `root` where it has one: E2B's Jupyter server runs as root (a context
/// may be made in `/root`), its commands as `user`.
struct Kernels {
    envd: Arc<Envd>,
}

impl KernelSpawner for Kernels {
    fn command(&self, program: &str, args: &[String]) -> Result<tokio::process::Command, String> {
        let envd = &self.envd;
        let who = match envd.config.users {
            Users::Both => SandboxUser::Root,
            _ => SandboxUser::User,
        };
        let mut cmd = envd
            .command(program, args, HOME_DIR, envd.env_vars(), who)
            .map_err(|e| e.to_string())?;
        cmd.process_group(0);
        Ok(cmd)
    }

    fn global_envs(&self) -> BTreeMap<String, String> {
        self.envd.env_vars().clone()
    }
}
