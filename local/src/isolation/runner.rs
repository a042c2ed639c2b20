//! One sandbox as the orchestrator holds it: its host resources, and its
//! envd, started once (a create waits for it) and again if it died, and
//! reached only through connections the server hands it.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use e2b_wire::envd_setup::{EnvdConfig, SandboxUser, Users, ENVD_PATH, PORT_OPEN, TOOLS_DIR};
use e2b_wire::HOME_DIR;
use tokio::io::AsyncReadExt;

use super::anchor::{self, Anchor};
use super::disk::Disk;
use super::ids::{HostIds, IdBlocks, UserNsMaps};
use super::launcher::{Launcher, Provision, SANDBOX_PATH};
use super::limits::{Cgroup, Limits, Usage};
use super::network::Internet;
use super::slot::{Outcome, Slot, Turn};
use super::spawn::HostCommand;
use super::{rootfs, seccomp};
use crate::paths::SandboxPaths;

/// How long envd may take to take a connection (it starts in
/// milliseconds; this bounds a sandbox that stopped serving).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The contexts a template with a code-interpreter environment starts with
/// (E2B's code-interpreter template starts the same two).
const DEFAULT_CONTEXTS: [&str; 2] = ["python", "javascript"];

/// Host resources a sandbox holds until it is destroyed.
#[derive(Debug, Default)]
pub(super) struct Held {
    pub block: Option<u32>,
    pub disk: Option<Disk>,
    pub cgroup: Option<Cgroup>,
}

impl Drop for Held {
    fn drop(&mut self) {
        // The cgroup first (it must be empty: the sandbox is gone), then
        // the disk, then the ids, which a new sandbox may then reuse.
        self.cgroup.take();
        self.disk.take();
        if let Some(base) = self.block.take() {
            IdBlocks::global().give_back(base);
        }
    }
}

/// Why a connection into a sandbox was not made.
#[derive(Debug, thiserror::Error)]
pub enum PortError {
    /// Nothing listens on that port inside.
    #[error("the port is not open")]
    Closed,
    /// The sandbox cannot be started, or its envd does not serve.
    #[error("{0}")]
    Unavailable(String),
}

/// How one try at a connection failed.
enum Attempt {
    /// The envd that start `generation` ran is gone (it closed the
    /// connection unanswered, or its control socket): worth one more try
    /// on a fresh sandbox.
    EnvdGone { generation: u64, why: String },
    /// Anything else.
    Failed(PortError),
}

impl Attempt {
    fn into_error(self) -> PortError {
        match self {
            Attempt::EnvdGone { why, .. } => PortError::Unavailable(why),
            Attempt::Failed(e) => e,
        }
    }
}

/// One sandbox: its host side, and its envd once started.
pub struct SandboxRunner {
    launcher: Launcher,
    paths: SandboxPaths,
    /// The host ids of its users (`None` without isolation).
    ids: Option<HostIds>,
    /// Whether it gets a network of its own (slirp4netns).
    internet: bool,
    /// Why it has no internet though it asked for it.
    no_internet: Option<String>,
    template_env: Option<PathBuf>,
    config: EnvdConfig,
    /// The template it runs on.
    template: String,
    /// Its cgroup and ids (its disk is apart: a copy of it holds the
    /// disk's lock, not the cgroup's).
    held: Mutex<Option<Held>>,
    disk: Mutex<Option<Disk>>,
    /// Whether it runs, and its envd's anchor when it does.
    slot: Mutex<Slot>,
}

impl SandboxRunner {
    pub(super) fn new(
        launcher: Launcher,
        p: Provision,
        mut held: Held,
        ids: Option<HostIds>,
    ) -> Self {
        let wanted = p.internet;
        let (template_env, internet, config) = match &launcher {
            Launcher::Bwrap(iso) => {
                let env = iso.rootfs.templates().get(&p.template).map(PathBuf::from);
                // envd's tools (sudo) first, then the template's environment.
                let path = match &env {
                    Some(env) => {
                        format!("{TOOLS_DIR}:{}:{SANDBOX_PATH}", env.join("bin").display())
                    }
                    None => format!("{TOOLS_DIR}:{SANDBOX_PATH}"),
                };
                let config = EnvdConfig {
                    sandbox_id: p.id.clone(),
                    root: "/".into(),
                    home: HOME_DIR.into(),
                    path,
                    env_vars: p.env_vars,
                    users: if iso.privileged {
                        Users::Both
                    } else {
                        Users::UserOnly
                    },
                    max_file_size: (!iso.disks).then(|| u64::from(iso.limits.disk_mb) << 20),
                    // The code interpreter's template starts its kernels.
                    default_contexts: if env.is_some() {
                        DEFAULT_CONTEXTS.map(str::to_string).to_vec()
                    } else {
                        Vec::new()
                    },
                };
                let internet = p.internet && matches!(iso.internet, Internet::Slirp(_));
                (env, internet, config)
            }
            Launcher::None { .. } => {
                let config = EnvdConfig {
                    sandbox_id: p.id.clone(),
                    root: p.paths.root().to_string_lossy().into_owned(),
                    home: p.paths.home().to_string_lossy().into_owned(),
                    path: SANDBOX_PATH.into(),
                    env_vars: p.env_vars,
                    users: Users::Host,
                    max_file_size: None,
                    default_contexts: Vec::new(),
                };
                // The host's own network: nothing to set up.
                (None, false, config)
            }
        };
        let no_internet = match &launcher {
            Launcher::Bwrap(iso) if wanted && !internet => {
                iso.internet.missing().map(str::to_string)
            }
            _ => None,
        };
        Self {
            launcher,
            paths: p.paths,
            ids,
            internet,
            no_internet,
            template_env,
            config,
            template: p.template,
            disk: Mutex::new(held.disk.take()),
            held: Mutex::new(Some(held)),
            slot: Mutex::default(),
        }
    }

    /// Why the sandbox has no internet though it asked for it (this
    /// machine or server gives none).
    pub fn no_internet(&self) -> Option<&str> {
        self.no_internet.as_deref()
    }

    /// The template it runs on (`base`, `code-interpreter-v1`).
    pub fn template(&self) -> &str {
        &self.template
    }

    /// The uid block its users are, on a server run as root.
    pub fn id_block(&self) -> Option<u32> {
        match self.ids {
            Some(HostIds::Block { base }) => Some(base),
            _ => None,
        }
    }

    /// Whether its files are on a disk image.
    pub fn has_disk(&self) -> bool {
        self.disk.lock().is_ok_and(|d| d.is_some())
    }

    /// Readies its disk for a copy (see [`Disk::ready_for_copy`]) and
    /// says how many bytes its image then takes (allocated blocks), 0
    /// without one.
    pub fn ready_disk_for_copy(&self) -> u64 {
        let Ok(disk) = self.disk.lock() else {
            return 0;
        };
        disk.as_ref().map_or(0, |disk| {
            disk.ready_for_copy();
            super::disk::allocated(disk.image())
        })
    }

    /// Copies its disk image to the new file `dest`, consistently (see
    /// [`Disk::copy_to`]; its processes should be frozen). The disk stays
    /// while the copy runs: a kill meanwhile waits for it.
    pub fn copy_disk(&self, dest: &std::path::Path) -> std::io::Result<()> {
        let disk = self
            .disk
            .lock()
            .map_err(|_| std::io::Error::other("disk state poisoned"))?;
        match disk.as_ref() {
            Some(disk) => disk.copy_to(dest),
            None => Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "the sandbox has no disk image",
            )),
        }
    }

    /// Flushes its disk to its image (a pause kept across restarts).
    pub fn sync_disk(&self) {
        if let Ok(disk) = self.disk.lock() {
            if let Some(Err(e)) = disk.as_ref().map(Disk::sync) {
                tracing::warn!("cannot flush a sandbox's disk: {e}");
            }
        }
    }

    /// What this sandbox may use.
    pub fn limits(&self) -> Limits {
        self.launcher.limits()
    }

    /// What its processes use now (nothing known without a cgroup), and
    /// its writable filesystem's used and total bytes.
    pub fn usage(&self) -> (Usage, Option<(u64, u64)>) {
        let usage = self.with_cgroup(Cgroup::usage).unwrap_or_default();
        let disk = rustix::fs::statvfs(self.paths.root()).ok().map(|s| {
            let block = s.f_frsize.max(1);
            let total = s.f_blocks * block;
            (total.saturating_sub(s.f_bfree * block), total)
        });
        (usage, disk)
    }

    /// A connection to `port` inside the sandbox (envd's own, the code
    /// interpreter's, or a program's on its loopback), starting the
    /// sandbox if needed. What comes back is a socket the server made;
    /// envd holds the other end.
    pub async fn open_port(&self, port: u16) -> Result<tokio::net::UnixStream, PortError> {
        match self.try_open_port(port).await {
            // envd died (its own root may kill it) and bubblewrap has not
            // exited yet: stop what is left of that start, and only of it,
            // and start the sandbox again.
            Err(Attempt::EnvdGone { generation, .. }) => {
                let stale = self
                    .slot
                    .lock()
                    .ok()
                    .and_then(|mut s| s.stop_if(generation));
                drop(stale);
                self.try_open_port(port).await.map_err(Attempt::into_error)
            }
            other => other.map_err(Attempt::into_error),
        }
    }

    async fn try_open_port(&self, port: u16) -> Result<tokio::net::UnixStream, Attempt> {
        let failed = |e: std::io::Error| Attempt::Failed(PortError::Unavailable(e.to_string()));
        let generation = self.ensure_running().await.map_err(Attempt::Failed)?;
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().map_err(failed)?;
        {
            let slot = self.slot.lock().map_err(|_| Attempt::Failed(poisoned()))?;
            let anchor = slot.running(generation).ok_or_else(|| {
                Attempt::Failed(PortError::Unavailable("the sandbox was stopped".into()))
            })?;
            anchor
                .send_connection(port, &theirs)
                .map_err(|e| Attempt::EnvdGone {
                    generation,
                    why: format!("envd does not take connections: {e}"),
                })?;
        }
        drop(theirs);
        match answer(ours).await {
            Ok(Some(stream)) => Ok(stream),
            Ok(None) => Err(Attempt::Failed(PortError::Closed)),
            Err(AnswerError::Gone) => Err(Attempt::EnvdGone {
                generation,
                why: "the sandbox's envd is not running".into(),
            }),
            Err(AnswerError::Silent) => Err(Attempt::Failed(PortError::Unavailable(
                "the sandbox's envd did not answer".into(),
            ))),
            Err(AnswerError::Io(e)) => Err(failed(e)),
        }
    }

    /// Starts the sandbox unless it runs (or another caller is starting
    /// it: then its outcome is this one's); the generation that runs it.
    /// A sandbox a create reports serves: the create waits here.
    pub async fn ensure_running(&self) -> Result<u64, PortError> {
        loop {
            let (turn, dead) = self.slot.lock().map_err(|_| poisoned())?.turn();
            drop(dead);
            match turn {
                Turn::Use(generation) => return Ok(generation),
                Turn::Wait(mut done) => {
                    let outcome = done
                        .wait_for(Option::is_some)
                        .await
                        .map(|o| o.clone())
                        .unwrap_or(Some(Err("the sandbox's start was abandoned".into())));
                    if let Some(Err(why)) = outcome {
                        return Err(PortError::Unavailable(why));
                    }
                }
                Turn::Start { generation, done } => {
                    let mut guard = StartGuard {
                        slot: &self.slot,
                        generation,
                        done: Some(done),
                    };
                    let started = self.start().await.map_err(|e| {
                        tracing::warn!("cannot start sandbox {}: {e}", self.config.sandbox_id);
                        format!("the sandbox could not be started: {e}")
                    });
                    return guard
                        .finish(started)
                        .map(|()| generation)
                        .map_err(PortError::Unavailable);
                }
            }
        }
    }

    /// Starts the sandbox: bubblewrap and envd, then, once envd answers
    /// (bubblewrap's set-up of the namespaces, its loopback included, is
    /// over), its network. A start that fails says what failed: envd's
    /// exit and bubblewrap's last words, or the network's set-up.
    async fn start(&self) -> Result<Anchor, String> {
        let overlays = self
            .mount_overlays()
            .await
            .map_err(|e| format!("cannot mount the sandbox's root: {e}"))?;
        let (cmd, bwrap, maps) = self.command(overlays.as_deref())?;
        let config = self.config.clone();
        let mut anchor = tokio::task::spawn_blocking(move || {
            Anchor::start(cmd, &config, bwrap, |init| match maps {
                Some(maps) => write_maps(init, &maps),
                None => Ok(()),
            })
        })
        .await
        .map_err(|e| e.to_string())??;
        if let Err(e) = probe(&anchor).await {
            let failure = tokio::task::spawn_blocking(move || anchor.failure())
                .await
                .unwrap_or_default();
            return Err(match failure {
                Some(failure) => failure,
                None => format!("envd did not serve: {e}"),
            });
        }
        anchor.serving();
        if self.internet {
            anchor.slirp = Some(self.attach_network(anchor.init).await?);
        }
        Ok(anchor)
    }

    /// The sandbox's network (slirp4netns) for its init `pid`, tried twice.
    async fn attach_network(&self, pid: u32) -> Result<super::network::Slirp, String> {
        let Launcher::Bwrap(iso) = &self.launcher else {
            return Err("no network without isolation".into());
        };
        let owner = self
            .ids
            .and_then(|ids| ids.host(SandboxUser::Root))
            .ok_or("internet for a sandbox without root")?;
        let procs = self.with_cgroup(Cgroup::procs_files).unwrap_or_default();
        let mut last = String::new();
        for _ in 0..2 {
            let (iso, procs) = (Arc::clone(iso), procs.clone());
            let attached =
                tokio::task::spawn_blocking(move || iso.internet.attach(pid, owner, procs)).await;
            match attached {
                Ok(Ok(slirp)) => return Ok(slirp),
                Ok(Err(e)) => last = e.to_string(),
                Err(e) => last = e.to_string(),
            }
        }
        Err(format!("its network could not be set up: {last}"))
    }

    /// The command that starts the sandbox, whether it is bubblewrap, and
    /// the user namespace's maps the server writes while bubblewrap waits.
    fn command(
        &self,
        overlays: Option<&[(PathBuf, PathBuf)]>,
    ) -> Result<(HostCommand, bool, Option<UserNsMaps>), String> {
        let iso = match &self.launcher {
            Launcher::Bwrap(iso) => iso,
            Launcher::None { envd } => {
                let mut cmd = HostCommand::new(envd);
                cmd.env("PATH", SANDBOX_PATH).current_dir(self.paths.root());
                std::os::unix::process::CommandExt::process_group(&mut *cmd, 0);
                return Ok((cmd, false, None));
            }
        };
        let mut cmd = HostCommand::new(&iso.bwrap);
        // The copy-on-write root first: every other mount goes on it.
        if let Some((root, _)) = overlays.and_then(|o| o.first()) {
            cmd.arg("--bind").arg(root).arg("/");
        }
        anchor::bwrap_prefix(&mut cmd, &iso.envd, iso.privileged);
        seccomp::add_to_bwrap(&mut cmd)
            .map_err(|e| format!("cannot set up the seccomp filter: {e}"))?;
        iso.rootfs
            .add_bwrap_args(
                &mut cmd,
                &self.paths,
                self.template_env.as_deref(),
                overlays,
            )
            .map_err(|e| format!("cannot write the sandbox's root: {e}"))?;
        cmd.args([
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-net",
            // Its cgroup is its root: /proc/self/cgroup names no host path.
            "--unshare-cgroup",
        ]);
        cmd.args(["--hostname", rootfs::HOSTNAME]);
        cmd.args(["--die-with-parent", "--new-session", "--chdir", "/"]);
        cmd.args(["--", ENVD_PATH]);
        cmd.env("PATH", SANDBOX_PATH).current_dir("/");
        let ids = self.ids.ok_or("a sandbox without ids")?;
        if iso.privileged {
            // bubblewrap starts in the sandbox's cgroup, so every process
            // of the sandbox is in it from its first instant and the
            // cgroup namespace bubblewrap makes has it as its root.
            let procs = self.with_cgroup(Cgroup::procs_files).unwrap_or_default();
            cmd.join_cgroup(procs)
                .map_err(|e| format!("joining the sandbox's cgroup: {e}"))?;
            // bubblewrap, and so envd, runs as the block's first id: the
            // sandbox's root, never a host id with any privilege.
            let (uid, gid) = ids.host(SandboxUser::Root).unwrap_or(ids.anchor());
            cmd.run_as(uid, gid);
        }
        Ok((cmd, true, Some(ids.maps())))
    }

    /// Mounts the overlays of its copy-on-write root on its disk, when
    /// roots are copy-on-write and it has a disk (on the blocking pool:
    /// helpers and mounts).
    async fn mount_overlays(&self) -> std::io::Result<Option<Vec<(PathBuf, PathBuf)>>> {
        let Launcher::Bwrap(iso) = &self.launcher else {
            return Ok(None);
        };
        let Some(layers) = iso.rootfs.layers(self.template_env.as_deref()) else {
            return Ok(None);
        };
        let root = self.ids.and_then(|ids| ids.host(SandboxUser::Root));
        let Some((base, _)) = root.filter(|_| self.has_disk()) else {
            return Ok(None);
        };
        let disk = self.paths.root().to_path_buf();
        tokio::task::spawn_blocking(move || super::overlay::mount(&disk, base, &layers))
            .await
            .map_err(std::io::Error::other)?
            .map(Some)
    }

    /// Runs `script` with `sh -c` as `user` and says whether it exited 0
    /// (the server's self-test).
    pub async fn run_once(&self, script: &str) -> Result<bool, String> {
        use e2b_wire::connect::{encode_envelope, EnvelopeDecoder};
        use e2b_wire::process::{ProcessEvent, ProcessEventMessage};
        use http_body_util::BodyExt;
        let stream = self
            .open_port(e2b_wire::ENVD_PORT)
            .await
            .map_err(|e| e.to_string())?;
        let (mut sender, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .map_err(|e| e.to_string())?;
        tokio::spawn(conn);
        let start = serde_json::json!({
            "process": {"cmd": "/bin/sh", "args": ["-c", script]},
        });
        let body = encode_envelope(0, start.to_string().as_bytes());
        let request = http::Request::post(e2b_wire::process::START_PATH)
            .header(http::header::HOST, "envd")
            .header(
                http::header::CONTENT_TYPE,
                e2b_wire::connect::CONTENT_TYPE_STREAM,
            )
            .body(http_body_util::Full::new(bytes::Bytes::from(body)))
            .map_err(|e| e.to_string())?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| e.to_string())?;
        let bytes = tokio::time::timeout(Duration::from_secs(30), response.into_body().collect())
            .await
            .map_err(|_| "the command did not finish".to_string())?
            .map_err(|e| e.to_string())?
            .to_bytes();
        let mut decoder = EnvelopeDecoder::new(1 << 20);
        decoder.push(&bytes);
        while let Ok(Some(envelope)) = decoder.next_envelope() {
            if let Ok(ProcessEventMessage {
                event: ProcessEvent::End(end),
            }) = serde_json::from_slice(&envelope.payload)
            {
                return Ok(end.exited && end.exit_code == 0);
            }
        }
        Err(format!(
            "envd's answer has no end: {}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(512)])
        ))
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

    /// Stops the sandbox: envd and every process die. Its files, ids,
    /// cgroup and disk stay; the next connection starts it anew.
    pub fn stop(&self) {
        // Frozen processes would not die.
        self.thaw();
        let anchor = self.slot.lock().ok().and_then(|mut s| s.stop());
        drop(anchor);
    }

    /// Gives back what the sandbox holds on the host (cgroup, disk, ids);
    /// before its directory is removed.
    pub fn release(&self) {
        self.give_back(false);
    }

    /// Gives back what the sandbox holds on the host but its disk image,
    /// which stays (a paused sandbox at a persistent server's shutdown).
    pub fn detach(&self) {
        self.give_back(true);
    }

    fn give_back(&self, keep_image: bool) {
        self.stop();
        let mut held = self.held.lock().ok().and_then(|mut h| h.take());
        // The cgroup first (empty now), then the disk, then the ids.
        if let Some(held) = held.as_mut() {
            held.cgroup.take();
        }
        let disk = self.disk.lock().ok().and_then(|mut d| d.take());
        match disk {
            Some(disk) if keep_image => disk.detach(),
            other => drop(other),
        }
        drop(held);
    }
}

impl Drop for SandboxRunner {
    fn drop(&mut self) {
        self.release();
    }
}

fn poisoned() -> PortError {
    PortError::Unavailable("sandbox state poisoned".into())
}

/// A start under way: however the starting caller ends (its future may be
/// dropped, a client gone), the slot learns the outcome and so do those
/// waiting for it.
struct StartGuard<'a> {
    slot: &'a Mutex<Slot>,
    generation: u64,
    done: Option<tokio::sync::watch::Sender<Outcome>>,
}

impl StartGuard<'_> {
    fn finish(&mut self, started: Result<Anchor, String>) -> Result<(), String> {
        let (outcome, stale) = match self.slot.lock() {
            Ok(mut slot) => slot.finish(self.generation, started),
            Err(_) => (Err("sandbox state poisoned".into()), started.ok()),
        };
        drop(stale);
        if let Some(done) = self.done.take() {
            done.send_replace(Some(outcome.clone()));
        }
        outcome
    }
}

impl Drop for StartGuard<'_> {
    fn drop(&mut self) {
        if self.done.is_some() {
            let _ = self.finish(Err("the sandbox's start was abandoned".into()));
        }
    }
}

/// Why a connection got no status byte.
enum AnswerError {
    /// envd closed it unanswered: it is gone.
    Gone,
    /// envd did not answer in time.
    Silent,
    Io(std::io::Error),
}

/// envd's status byte on the server's end of a connection it was handed:
/// the stream when the port is open, `None` when it is not.
async fn answer(
    ours: std::os::unix::net::UnixStream,
) -> Result<Option<tokio::net::UnixStream>, AnswerError> {
    ours.set_nonblocking(true).map_err(AnswerError::Io)?;
    let mut ours = tokio::net::UnixStream::from_std(ours).map_err(AnswerError::Io)?;
    let mut status = [0u8; 1];
    match tokio::time::timeout(CONNECT_TIMEOUT, ours.read_exact(&mut status)).await {
        Ok(Ok(_)) if status[0] == PORT_OPEN => Ok(Some(ours)),
        Ok(Ok(_)) => Ok(None),
        Ok(Err(_)) => Err(AnswerError::Gone),
        Err(_) => Err(AnswerError::Silent),
    }
}

/// Whether the freshly started `anchor`'s envd serves: a connection to
/// its own port, answered.
async fn probe(anchor: &Anchor) -> Result<(), String> {
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().map_err(|e| e.to_string())?;
    anchor
        .send_connection(e2b_wire::ENVD_PORT, &theirs)
        .map_err(|e| format!("envd takes no connection: {e}"))?;
    drop(theirs);
    match answer(ours).await {
        Ok(Some(_)) => Ok(()),
        Ok(None) => Err("envd refused its own port".into()),
        Err(AnswerError::Gone) => Err("envd closed the connection".into()),
        Err(AnswerError::Silent) => Err(format!("envd did not answer in {CONNECT_TIMEOUT:?}")),
        Err(AnswerError::Io(e)) => Err(e.to_string()),
    }
}

/// Writes the user namespace's maps of bubblewrap's init `pid`.
fn write_maps(pid: u32, maps: &UserNsMaps) -> Result<(), String> {
    let write = |file: &str, content: &str| {
        std::fs::write(format!("/proc/{pid}/{file}"), content)
            .map_err(|e| format!("writing the sandbox's {file}: {e}"))
    };
    write("uid_map", &maps.uid_map)?;
    if maps.deny_setgroups {
        write("setgroups", "deny\n")?;
    }
    write("gid_map", &maps.gid_map)
}
