//! Running programs inside a sandbox, and the layers that isolate it.
//!
//! Debian's `bubblewrap` builds each sandbox: a user namespace whose
//! `root` and `user` are unprivileged host uids ([`ids`]), a mount
//! namespace holding a minimal root ([`rootfs`]), and its own pid, IPC,
//! UTS and network namespaces ([`network`]), inside a cgroup with CPU,
//! memory and process limits and on a size-limited disk ([`limits`]).
//! One long-lived *anchor* process (`sleep infinity` under bwrap) holds
//! the namespaces for the sandbox's lifetime; every command joins them
//! with `nsenter`, run as the sandbox's unprivileged host uid (privileges
//! are dropped *before* entering), so all processes of a sandbox see each
//! other and a job a command leaves behind (`server &`) keeps running, as
//! on E2B. Killing the anchor tears the pid namespace down, which kills
//! everything left in it. The files API works inside the same root
//! ([`SandboxRunner::root_dir`]); the server reaches sandbox ports inside
//! its network namespace ([`SandboxRunner::connect`]).
//!
//! Every process leads its own process group, so a signal to `-pid`
//! reaches what it started in the foreground.

pub mod ids;
pub mod limits;
pub mod network;
pub mod rootfs;
pub mod seccomp;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use e2b_wire::HOME_DIR;

use crate::paths::SandboxPaths;
use crate::Isolation;
use ids::IdBlocks;
pub use ids::{HostIds, SandboxUser};
use limits::{Cgroup, Disk, Enforcement};
pub use limits::{Limits, Usage};
use network::Internet;
use rootfs::{RootFs, TemplateEnvs};

/// The `PATH` a sandbox process gets.
pub const SANDBOX_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/// Under the data directory: the sandboxes' disk images.
pub const DISKS_DIR: &str = ".disks";

/// The user processes run as by default.
pub const SANDBOX_USER: &str = "user";
/// How long an anchor may take to appear.
const ANCHOR_START_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a connection to a sandbox port may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How processes are launched, decided once at server start.
#[derive(Debug, Clone)]
pub enum Launcher {
    /// In bubblewrap sandboxes.
    Bwrap(Arc<Isolated>),
    /// Directly on the host (explicit opt-out; no isolation at all).
    None,
}

/// What isolated sandboxes are made with on this machine.
#[derive(Debug)]
pub struct Isolated {
    bwrap: PathBuf,
    nsenter: PathBuf,
    env: PathBuf,
    sh: PathBuf,
    prlimit: Option<PathBuf>,
    /// The server runs as root: sandboxes get id blocks, cgroups, disks.
    privileged: bool,
    own_ids: (u32, u32),
    rootfs: RootFs,
    enforcement: Enforcement,
    disks: bool,
    internet: Internet,
    limits: Limits,
}

/// Why isolation cannot be set up.
#[derive(Debug)]
pub struct IsolationUnavailable(pub String);

/// Why a command cannot be started.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// The requested user does not exist in this sandbox.
    #[error("user '{0}' is not available: the local server runs as an ordinary user, so its sandboxes have no root")]
    NoSuchUser(&'static str),
    /// The sandbox's namespaces could not be made or joined.
    #[error("the sandbox could not be started: {0}")]
    Anchor(String),
}

impl Launcher {
    /// Finds and tries bubblewrap and the other layers (or accepts the opt-out).
    pub async fn detect(
        isolation: &Isolation,
        data_dir: &Path,
        limits: Limits,
    ) -> Result<Self, IsolationUnavailable> {
        if matches!(isolation, Isolation::None) {
            tracing::warn!(
                "running sandboxes WITHOUT isolation: commands can read and write the whole host"
            );
            return Ok(Launcher::None);
        }
        let need = |name: &str, package: &str| {
            limits::find(name).ok_or_else(|| {
                IsolationUnavailable(format!(
                    "{name} not found: install it (apt-get install {package}) or pass --no-isolation"
                ))
            })
        };
        let uid = rustix::process::getuid().as_raw();
        let gid = rustix::process::getgid().as_raw();
        let privileged = uid == 0;
        if privileged {
            // The sandboxes' unprivileged uids must reach their own roots.
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(data_dir, std::fs::Permissions::from_mode(0o711))
                .map_err(|e| IsolationUnavailable(format!("{}: {e}", data_dir.display())))?;
        }
        let rootfs = RootFs::create(data_dir, TemplateEnvs::detect(privileged))
            .map_err(|e| IsolationUnavailable(format!("cannot write the sandbox /etc: {e}")))?;
        let isolated = Isolated {
            bwrap: need("bwrap", "bubblewrap")?,
            nsenter: need("nsenter", "util-linux")?,
            env: need("env", "coreutils")?,
            sh: need("sh", "dash")?,
            prlimit: limits::find("prlimit"),
            privileged,
            own_ids: (uid, gid),
            rootfs,
            enforcement: if privileged {
                Enforcement::detect()
            } else {
                Enforcement::Rlimits
            },
            disks: Disk::available(privileged),
            internet: Internet::detect(),
            limits,
        };
        let launcher = Launcher::Bwrap(Arc::new(isolated));
        launcher.self_test(data_dir).await?;
        Ok(launcher)
    }

    /// Removes what [`Launcher::detect`] and [`Launcher::provision`] left
    /// in `data_dir` beside the sandbox roots (at shutdown).
    pub fn clean_up(data_dir: &Path) {
        for dir in [DISKS_DIR, rootfs::ROOTFS_DIR] {
            let _ = std::fs::remove_dir_all(data_dir.join(dir));
        }
    }

    /// One line saying which layers are in force, for the startup log.
    pub fn describe(&self) -> String {
        match self {
            Launcher::None => "isolation: NONE (--no-isolation)".into(),
            Launcher::Bwrap(i) => format!(
                "isolation: bubblewrap; users: {}; limits: {}; disk: {}; network: {}; {}",
                if i.privileged {
                    "a subordinate uid block per sandbox"
                } else {
                    "the server's own uid (no root inside)"
                },
                i.enforcement.describe(),
                if i.disks {
                    format!("{} MiB ext4 image per sandbox", i.limits.disk_mb)
                } else {
                    format!("file size capped at {} MiB, total not", i.limits.disk_mb)
                },
                i.internet.describe(),
                i.rootfs.templates().describe(),
            ),
        }
    }

    /// Makes the host side of sandbox `id` (its disk, directories, cgroup
    /// and ids) and a runner for it; `internet` says whether it may reach
    /// out.
    pub fn provision(
        &self,
        id: &str,
        paths: SandboxPaths,
        internet: bool,
    ) -> std::io::Result<SandboxRunner> {
        let Launcher::Bwrap(iso) = self else {
            paths.create()?;
            let (uid, gid) = (rustix::process::getuid(), rustix::process::getgid());
            return Ok(SandboxRunner::new(
                self.clone(),
                paths,
                HostIds::Own {
                    uid: uid.as_raw(),
                    gid: gid.as_raw(),
                },
                Held::default(),
                false,
            ));
        };
        let mut held = Held::default();
        let ids = if iso.privileged {
            let base = IdBlocks::global()
                .take()
                .ok_or_else(|| std::io::Error::other("no free uid block"))?;
            held.block = Some(base);
            HostIds::Block { base }
        } else {
            HostIds::Own {
                uid: iso.own_ids.0,
                gid: iso.own_ids.1,
            }
        };
        if iso.disks {
            let disks = paths.data_dir().join(DISKS_DIR);
            std::fs::create_dir_all(&disks)?;
            let image = disks.join(id).with_extension("img");
            held.disk = Some(Disk::create(&image, paths.root(), iso.limits.disk_mb)?);
        }
        paths.create()?;
        if let Some((uid, gid)) = ids.host(SandboxUser::User).filter(|_| iso.privileged) {
            let (root_uid, root_gid) = ids.host(SandboxUser::Root).unwrap_or((uid, gid));
            chown(paths.root(), uid, gid)?;
            chown(&paths.root().join("home"), root_uid, root_gid)?;
            chown(&paths.home(), uid, gid)?;
            chown(&paths.tmp(), root_uid, root_gid)?;
            chown(&paths.root().join("var"), root_uid, root_gid)?;
            chown(&paths.var_tmp(), root_uid, root_gid)?;
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(paths.root(), std::fs::Permissions::from_mode(0o700))?;
        }
        held.cgroup = iso.enforcement.create(id, &iso.limits, ids.anchor().0)?;
        let internet = internet && matches!(iso.internet, Internet::Slirp(_));
        Ok(SandboxRunner::new(self.clone(), paths, ids, held, internet))
    }

    /// The limits every sandbox gets.
    pub fn limits(&self) -> Limits {
        match self {
            Launcher::Bwrap(i) => i.limits,
            Launcher::None => Limits::default(),
        }
    }

    /// Runs a command in a throwaway sandbox to prove the set-up works.
    async fn self_test(&self, data_dir: &Path) -> Result<(), IsolationUnavailable> {
        let id = format!("selftest-{}", crate::registry::random_id(8));
        let root = data_dir.join(&id);
        let paths = SandboxPaths::new(root.clone(), data_dir.to_path_buf());
        let runner = self
            .provision(&id, paths.clone(), false)
            .map_err(|e| IsolationUnavailable(format!("cannot prepare a sandbox: {e}")))?;
        let out = match runner.command(
            "/bin/sh",
            &[
                "-c".into(),
                "touch /home/user/ok && test ! -e /root/.bashrc".into(),
            ],
            HOME_DIR,
            &BTreeMap::new(),
            SandboxUser::User,
        ) {
            Ok(mut cmd) => {
                cmd.stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped());
                cmd.output().await.map_err(|e| e.to_string())
            }
            Err(e) => Err(e.to_string()),
        };
        let made = paths.home().join("ok").exists();
        runner.stop();
        runner.release();
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
}

fn chown(path: &Path, uid: u32, gid: u32) -> std::io::Result<()> {
    rustix::fs::chown(
        path,
        Some(rustix::fs::Uid::from_raw(uid)),
        Some(rustix::fs::Gid::from_raw(gid)),
    )
    .map_err(|e| std::io::Error::other(format!("chown {}: {e}", path.display())))
}

/// Host resources a sandbox holds until it is destroyed.
#[derive(Debug, Default)]
struct Held {
    block: Option<u32>,
    disk: Option<Disk>,
    cgroup: Option<Cgroup>,
}

impl Drop for Held {
    fn drop(&mut self) {
        // The cgroup first (it must be empty: the anchor is gone), then the
        // disk, then the ids, which a new sandbox may then reuse.
        self.cgroup.take();
        self.disk.take();
        if let Some(base) = self.block.take() {
            IdBlocks::global().give_back(base);
        }
    }
}

/// The process holding one sandbox's namespaces.
struct Anchor {
    bwrap: std::process::Child,
    /// Host pid of the `sleep` inside, whose namespaces commands join.
    target: u32,
    /// Its user namespace (`/proc/<target>/ns/user`'s link), to tell it
    /// from a process that got its pid after it died.
    userns: PathBuf,
    /// The sandbox's `/`, opened through the anchor.
    root: Arc<OwnedFd>,
    /// The user-mode network stack, when the sandbox has internet.
    slirp: Option<std::process::Child>,
}

impl Drop for Anchor {
    fn drop(&mut self) {
        // bwrap's pid 1 dies with it (--die-with-parent), and with pid 1
        // everything else in the pid namespace.
        let _ = self.bwrap.kill();
        let _ = self.bwrap.wait();
        if let Some(slirp) = self.slirp.as_mut() {
            let _ = slirp.kill();
            let _ = slirp.wait();
        }
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
    ids: HostIds,
    internet: bool,
    held: Mutex<Option<Held>>,
    anchor: Mutex<Option<Anchor>>,
    /// The template's environment (a host directory bound at its own path).
    template_env: std::sync::OnceLock<PathBuf>,
}

impl SandboxRunner {
    fn new(
        launcher: Launcher,
        paths: SandboxPaths,
        ids: HostIds,
        held: Held,
        internet: bool,
    ) -> Self {
        Self {
            launcher,
            paths,
            ids,
            internet,
            held: Mutex::new(Some(held)),
            anchor: Mutex::new(None),
            template_env: std::sync::OnceLock::new(),
        }
    }

    /// Gives the sandbox `template`'s environment, if the server has one
    /// (`code-interpreter-v1`'s venv): mounted read-only, first on `PATH`.
    /// Must come before the sandbox's first process; false if it has none
    /// or came too late.
    pub fn use_template(&self, template: &str) -> bool {
        let Launcher::Bwrap(iso) = &self.launcher else {
            return false;
        };
        let Some(env) = iso.rootfs.templates().get(template) else {
            return false;
        };
        let started = self.anchor.lock().map_or(true, |a| a.is_some());
        if started {
            tracing::warn!("the sandbox started before its template's environment was set");
            return false;
        }
        self.template_env.set(env.to_path_buf()).is_ok()
    }

    /// The host ids behind this sandbox's users.
    pub fn ids(&self) -> HostIds {
        self.ids
    }

    /// What this sandbox may use.
    pub fn limits(&self) -> Limits {
        self.launcher.limits()
    }

    /// What its processes use now (nothing known without a cgroup), and
    /// its writable filesystem's used and total bytes.
    pub fn usage(&self) -> (Usage, Option<(u64, u64)>) {
        let usage = self
            .held
            .lock()
            .ok()
            .and_then(|h| {
                h.as_ref()
                    .and_then(|h| h.cgroup.as_ref().map(Cgroup::usage))
            })
            .unwrap_or_default();
        let disk = rustix::fs::statvfs(self.paths.root()).ok().map(|s| {
            let block = s.f_frsize.max(1);
            let total = s.f_blocks * block;
            (total.saturating_sub(s.f_bfree * block), total)
        });
        (usage, disk)
    }

    /// The host uid and gid that files the server creates for `who` must
    /// be given, `None` when the server's own are right (it runs as the
    /// sandbox user, or without isolation).
    pub fn host_owner(&self, who: SandboxUser) -> Option<(u32, u32)> {
        match &self.launcher {
            Launcher::Bwrap(iso) if iso.privileged => self.ids.host(who),
            _ => None,
        }
    }

    /// A command running `program args` in the sandbox as `who`, with
    /// working directory `cwd` (a sandbox path), environment `envs` over
    /// the base variables (`PATH`, `HOME`, `USER`, `LOGNAME`), leading its
    /// own process group.
    pub fn command(
        &self,
        program: &str,
        args: &[String],
        cwd: &str,
        envs: &BTreeMap<String, String>,
        who: SandboxUser,
    ) -> Result<tokio::process::Command, LaunchError> {
        let (home, name) = match who {
            SandboxUser::User => (HOME_DIR, "user"),
            SandboxUser::Root => ("/root", "root"),
        };
        let std_cmd = match &self.launcher {
            Launcher::Bwrap(iso) => {
                if self.ids.host(who).is_none() {
                    return Err(LaunchError::NoSuchUser("root"));
                }
                let target = self.anchor_target(iso)?;
                self.join_command(iso, target, program, args, cwd, who)
            }
            Launcher::None => {
                let mut cmd = std::process::Command::new(program);
                cmd.args(args);
                let inside = cwd.trim_start_matches('/');
                let host_cwd = Some(self.paths.root().join(inside))
                    .filter(|p| p.is_dir())
                    .unwrap_or_else(|| self.paths.home());
                cmd.current_dir(host_cwd);
                cmd.process_group(0);
                cmd
            }
        };
        let mut cmd = tokio::process::Command::from(std_cmd);
        cmd.env_clear();
        let home = match self.launcher {
            Launcher::Bwrap(_) => home.to_string(),
            Launcher::None => self.paths.home().to_string_lossy().into_owned(),
        };
        let path = match self.template_env.get() {
            Some(env) => format!("{}:{SANDBOX_PATH}", env.join("bin").display()),
            None => SANDBOX_PATH.to_string(),
        };
        cmd.env("PATH", path)
            .env("HOME", home)
            .env("USER", name)
            .env("LOGNAME", name);
        cmd.envs(envs);
        cmd.kill_on_drop(true);
        Ok(cmd)
    }

    /// `[sh (joins the cgroup)] [prlimit] nsenter … env -C cwd program args`,
    /// run as the sandbox's unprivileged host uid.
    fn join_command(
        &self,
        iso: &Isolated,
        target: u32,
        program: &str,
        args: &[String],
        cwd: &str,
        who: SandboxUser,
    ) -> std::process::Command {
        let mut chain: Vec<std::ffi::OsString> = Vec::new();
        let cgroup_files = self.held.lock().ok().and_then(|h| {
            h.as_ref()
                .and_then(|h| h.cgroup.as_ref().map(Cgroup::procs_files))
        });
        if let Some(files) = cgroup_files {
            // The process moves itself into the sandbox's cgroup before it
            // becomes the command, so nothing it starts escapes the limits.
            let mut script = String::from("for f in");
            for f in &files {
                script.push_str(&format!(" '{}'", f.display()));
            }
            script.push_str("; do echo $$ > \"$f\" || exit 125; done; exec \"$@\"");
            chain.extend([
                iso.sh.clone().into(),
                "-c".into(),
                script.into(),
                "sh".into(),
            ]);
        } else if let Some(prlimit) = &iso.prlimit {
            chain.push(prlimit.clone().into());
            chain.push(format!("--fsize={}", u64::from(iso.limits.disk_mb) << 20).into());
            chain.push("--".into());
        }
        chain.push(iso.nsenter.clone().into());
        chain.extend(self.join_args(target, who));
        chain.push("--".into());
        chain.extend([iso.env.clone().into(), "-C".into(), cwd.into(), "--".into()]);
        chain.push(program.into());
        chain.extend(args.iter().map(Into::into));
        let mut cmd = std::process::Command::new(&chain[0]);
        cmd.args(&chain[1..]);
        cmd.current_dir("/");
        if iso.privileged {
            // Privileges go before any namespace is entered: nsenter runs as
            // the sandbox user's host uid, the owner of its user namespace.
            let (uid, gid) = self.ids.anchor();
            cmd.uid(uid).gid(gid);
        }
        // nsenter forks the program into the pid namespace; one process
        // group holds both for signals.
        cmd.process_group(0);
        cmd
    }

    /// nsenter's arguments joining every namespace of `target` as `who`. An
    /// unprivileged server's sandbox maps only `user` (its own uid), which
    /// joining keeps; otherwise nsenter switches to `who`'s ids inside.
    fn join_args(&self, target: u32, who: SandboxUser) -> Vec<std::ffi::OsString> {
        let mut args: Vec<std::ffi::OsString> = vec!["-t".into(), target.to_string().into()];
        for ns in ["-U", "-m", "-p", "-i", "-n", "-u", "-r", "-w"] {
            args.push(ns.into());
        }
        match self.ids {
            HostIds::Block { .. } => {
                let id = who.inside_id().to_string();
                args.extend(["-S".into(), id.clone().into(), "-G".into(), id.into()]);
            }
            HostIds::Own { .. } => args.push("--preserve-credentials".into()),
        }
        args
    }

    /// The pid that a process [`Self::command`] started has inside the
    /// sandbox, as envd reports pids: the host pid names only its `nsenter`
    /// wrapper, which the sandbox cannot see, so `kill <pid>` in the
    /// sandbox would miss. `None` when the process does not live in the
    /// sandbox's pid namespace (no isolation) or is already gone: the host
    /// pid is then the only stable name.
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

    /// The sandbox's `/` as an `O_PATH` directory: the files API resolves
    /// every path beneath it, inside the sandbox's mount namespace.
    /// Without isolation it is the sandbox's host directory.
    pub fn root_dir(&self) -> Result<Arc<OwnedFd>, LaunchError> {
        match &self.launcher {
            Launcher::Bwrap(iso) => {
                self.anchor_target(iso)?;
                let slot = self.anchor.lock().map_err(|_| poisoned())?;
                slot.as_ref()
                    .map(|a| Arc::clone(&a.root))
                    .ok_or_else(|| LaunchError::Anchor("the sandbox stopped".into()))
            }
            Launcher::None => open_dir(self.paths.root())
                .map(Arc::new)
                .map_err(|e| LaunchError::Anchor(e.to_string())),
        }
    }

    /// A connection to `port` on the sandbox's own loopback.
    pub async fn connect(&self, port: u16) -> std::io::Result<tokio::net::TcpStream> {
        let stream = match &self.launcher {
            Launcher::Bwrap(iso) => {
                let target = self
                    .anchor_target(iso)
                    .map_err(|e| std::io::Error::other(e.to_string()))?;
                if iso.privileged {
                    let netns = PathBuf::from(format!("/proc/{target}/ns/net"));
                    tokio::task::spawn_blocking(move || {
                        network::connect_in(&netns, port, CONNECT_TIMEOUT)
                    })
                    .await
                    .map_err(std::io::Error::other)??
                } else {
                    let mut join = std::process::Command::new(&iso.nsenter);
                    join.args(self.join_args(target, SandboxUser::User))
                        .arg("--");
                    tokio::task::spawn_blocking(move || {
                        network::connect_through(join, port, CONNECT_TIMEOUT)
                    })
                    .await
                    .map_err(std::io::Error::other)??
                }
            }
            Launcher::None => {
                return tokio::net::TcpStream::connect(("127.0.0.1", port)).await;
            }
        };
        stream.set_nonblocking(true)?;
        tokio::net::TcpStream::from_std(stream)
    }

    /// The pid whose namespaces to join, starting the anchor if needed.
    fn anchor_target(&self, iso: &Isolated) -> Result<u32, LaunchError> {
        let mut slot = self.anchor.lock().map_err(|_| poisoned())?;
        if let Some(anchor) = slot.as_mut() {
            // The sandbox's own code can kill its anchor; its pid must not
            // then lead a command into whatever process reuses it.
            let same = std::fs::read_link(format!("/proc/{}/ns/user", anchor.target))
                .is_ok_and(|ns| ns == anchor.userns);
            if same && matches!(anchor.bwrap.try_wait(), Ok(None)) {
                return Ok(anchor.target);
            }
            slot.take();
        }
        let anchor = self.start_anchor(iso).map_err(|e| {
            tracing::warn!("cannot start a sandbox anchor: {e}");
            LaunchError::Anchor(e)
        })?;
        let target = anchor.target;
        *slot = Some(anchor);
        Ok(target)
    }

    fn start_anchor(&self, iso: &Isolated) -> Result<Anchor, String> {
        let mut cmd = std::process::Command::new(&iso.bwrap);
        // bwrap tells the pid of the sandbox's init on stdout, then waits
        // on stdin until the server has written the user namespace's maps.
        // (Left to itself, an unprivileged bwrap nests a second user
        // namespace for --uid, which nsenter then cannot join.)
        cmd.args(["--unshare-user", "--info-fd", "1", "--userns-block-fd", "0"]);
        cmd.args(["--uid", "1000", "--gid", "1000"]);
        iso.rootfs.add_bwrap_args(
            &mut cmd,
            &self.paths,
            self.template_env.get().map(PathBuf::as_path),
        );
        cmd.args([
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-net",
        ]);
        cmd.args(["--hostname", rootfs::HOSTNAME]);
        cmd.args(["--die-with-parent", "--new-session", "--chdir", HOME_DIR]);
        cmd.args(["--", "sleep", "infinity"]);
        cmd.env_clear().env("PATH", SANDBOX_PATH);
        cmd.current_dir("/");
        if iso.privileged {
            let (uid, gid) = self.ids.anchor();
            cmd.uid(uid).gid(gid);
        }
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let bwrap = spawn_from_anchor_thread(cmd).map_err(|e| e.to_string())?;
        let mut anchor = Anchor {
            bwrap,
            target: 0,
            userns: PathBuf::new(),
            root: Arc::new(open_dir(Path::new("/")).map_err(|e| e.to_string())?),
            slirp: None,
        };
        let init = read_child_pid(&mut anchor.bwrap)?;
        let maps = self.ids.maps();
        let write = |file: &str, content: &str| {
            std::fs::write(format!("/proc/{init}/{file}"), content)
                .map_err(|e| format!("writing the sandbox's {file}: {e}"))
        };
        write("uid_map", &maps.uid_map)?;
        if maps.deny_setgroups {
            write("setgroups", "deny\n")?;
        }
        write("gid_map", &maps.gid_map)?;
        if let Ok(held) = self.held.lock() {
            if let Some(cgroup) = held.as_ref().and_then(|h| h.cgroup.as_ref()) {
                cgroup
                    .add(init)
                    .map_err(|e| format!("joining the sandbox's cgroup: {e}"))?;
            }
        }
        // Closing stdin lets bwrap go on (the block fd reads EOF or a byte).
        if let Some(mut stdin) = anchor.bwrap.stdin.take() {
            let _ = stdin.write_all(b"1");
        }
        // bwrap's pid 1 → `sleep infinity`: wait for the grandchild.
        let started = Instant::now();
        while started.elapsed() < ANCHOR_START_TIMEOUT {
            if let Some(target) = first_child(init).filter(|t| running(*t)) {
                anchor.target = target;
                anchor.userns = std::fs::read_link(format!("/proc/{target}/ns/user"))
                    .map_err(|e| format!("reading the sandbox's user namespace: {e}"))?;
                break;
            }
            if !matches!(anchor.bwrap.try_wait(), Ok(None)) {
                let mut err = String::new();
                if let Some(mut stderr) = anchor.bwrap.stderr.take() {
                    let _ = stderr.read_to_string(&mut err);
                }
                return Err(format!("bubblewrap exited: {}", err.trim()));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        if anchor.target == 0 {
            return Err("the sandbox's init did not start its anchor".into());
        }
        anchor.root = Arc::new(
            open_dir(Path::new(&format!("/proc/{}/root", anchor.target)))
                .map_err(|e| format!("opening the sandbox's root: {e}"))?,
        );
        if self.internet {
            match iso.internet.attach(anchor.target, !iso.privileged) {
                Ok(child) => anchor.slirp = Some(child),
                Err(e) => tracing::warn!("sandbox without internet: {e}"),
            }
        }
        Ok(anchor)
    }

    /// Freezes every process of the sandbox in its cgroup (a pause that
    /// keeps memory). False when it cannot: no cgroup freezer here, or the
    /// freeze did not settle (then nothing stays frozen).
    pub fn freeze(&self) -> bool {
        self.with_cgroup(|cgroup| {
            if !cgroup.can_freeze() {
                return false;
            }
            match cgroup.set_frozen(true) {
                Ok(()) => true,
                Err(e) => {
                    tracing::warn!("cannot freeze the sandbox: {e}");
                    let _ = cgroup.set_frozen(false);
                    false
                }
            }
        })
        .unwrap_or(false)
    }

    /// Thaws what [`Self::freeze`] froze (nothing when nothing is frozen).
    pub fn thaw(&self) {
        self.with_cgroup(|cgroup| {
            if cgroup.can_freeze() {
                if let Err(e) = cgroup.set_frozen(false) {
                    tracing::warn!("cannot thaw the sandbox: {e}");
                }
            }
        });
    }

    fn with_cgroup<T>(&self, f: impl FnOnce(&Cgroup) -> T) -> Option<T> {
        let held = self.held.lock().ok()?;
        held.as_ref()?.cgroup.as_ref().map(f)
    }

    /// Stops the anchor: every process still in the sandbox dies. The
    /// sandbox's files, ids, cgroup and disk stay.
    pub fn stop(&self) {
        // Frozen processes would not die (nor the anchor reap them).
        self.thaw();
        let anchor = self.anchor.lock().ok().and_then(|mut s| s.take());
        drop(anchor);
    }

    /// Gives back what the sandbox holds on the host (cgroup, disk, ids);
    /// after [`Self::stop`], before its directory is removed.
    pub fn release(&self) {
        self.stop();
        let held = self.held.lock().ok().and_then(|mut h| h.take());
        drop(held);
    }
}

impl Drop for SandboxRunner {
    fn drop(&mut self) {
        self.release();
    }
}

/// Sends `signal` to the process group `pid` leads (every process the
/// server starts leads its own). Only for children not yet reaped, whose
/// pid cannot have been reused; errors (the group is gone) are ignored.
pub fn signal_group(pid: u32, signal: i32) {
    let pid = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw);
    if let (Some(pid), Some(signal)) = (pid, rustix::process::Signal::from_named_raw(signal)) {
        let _ = rustix::process::kill_process_group(pid, signal);
    }
}

fn poisoned() -> LaunchError {
    LaunchError::Anchor("sandbox state poisoned".into())
}

/// Opens `path` as an `O_PATH` directory handle.
fn open_dir(path: &Path) -> std::io::Result<OwnedFd> {
    use rustix::fs::{Mode, OFlags};
    rustix::fs::open(
        path,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(Into::into)
}

/// Reads `{"child-pid": N, …}` from bwrap's info fd (its stdout).
fn read_child_pid(bwrap: &mut std::process::Child) -> Result<u32, String> {
    let mut out = bwrap.stdout.take().ok_or("bwrap has no stdout")?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 512];
    loop {
        let n = out.read(&mut chunk).map_err(|e| e.to_string())?;
        if n == 0 {
            let mut err = String::new();
            if let Some(mut stderr) = bwrap.stderr.take() {
                let _ = stderr.read_to_string(&mut err);
            }
            return Err(format!("bubblewrap failed: {}", err.trim()));
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Ok(info) = serde_json::from_slice::<serde_json::Value>(&buf) {
            return info["child-pid"]
                .as_u64()
                .and_then(|p| u32::try_from(p).ok())
                .ok_or_else(|| format!("bubblewrap's info has no child-pid: {info}"));
        }
        if buf.len() > 64 << 10 {
            return Err("bubblewrap's info is too long".into());
        }
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
