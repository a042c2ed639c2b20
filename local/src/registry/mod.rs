//! The live sandboxes: creation under a cap, lookup, kill, pause/resume and
//! the reaper that enforces TTLs; on a persistent server, the records
//! that keep paused sandboxes across restarts ([`restore`]); snapshots
//! and forks ([`snapshot`]).

mod restore;
mod snapshot;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use e2b_wire::api::NewSandbox;

use crate::isolation::{DiskSource, Launcher, Provision};
use crate::names::random_id;
use crate::paths::SandboxPaths;
use crate::sandbox::{Sandbox, State};
use crate::snapshots::{Snapshots, StoreError};
use crate::state::{unix_ms, PausedRecord, StateDir, SNAPSHOTS_DIR};
use crate::stats::{Counters, Stats};

/// How often the reaper looks for expired sandboxes.
const REAP_INTERVAL: Duration = Duration::from_millis(20);

/// Why a sandbox could not be created.
#[derive(Debug)]
pub(crate) enum CreateError {
    /// The cap on live sandboxes is reached.
    TooMany(usize),
    /// Its root could not be made.
    Io(std::io::Error),
    /// It asks for something the local backend cannot enforce.
    Unsupported(String),
    /// It was made but did not start (what failed, in words).
    Start(String),
}

/// Why a snapshot (or a fork) was not taken.
#[derive(Debug)]
pub(crate) enum SnapshotError {
    /// The server keeps no disk images.
    Unsupported,
    /// The sandbox is paused.
    Paused,
    /// The snapshot storage refused it.
    Store(StoreError),
    /// Copying failed.
    Io(std::io::Error),
}

/// What a new sandbox is made from: the template it runs on, and what
/// its files start as.
pub(crate) struct Origin {
    /// `base` or `code-interpreter-v1`.
    pub template: String,
    /// Empty, or a snapshot's disk.
    pub disk: DiskSource,
}

impl Origin {
    /// A new sandbox of `template`, with empty directories.
    pub fn template(template: &str) -> Self {
        Origin {
            template: template.to_string(),
            disk: DiskSource::Fresh,
        }
    }
}

/// The sandboxes alive, and the ids of those being made (they count
/// against the cap while their disks are made, outside the lock).
#[derive(Default)]
struct Slots {
    live: HashMap<String, Arc<Sandbox>>,
    making: HashSet<String>,
}

pub(crate) struct Registry {
    slots: Mutex<Slots>,
    data_dir: PathBuf,
    launcher: Arc<Launcher>,
    max_sandboxes: usize,
    time_scale: f64,
    pub counters: Counters,
    /// A persistent server's state directory.
    state: Option<StateDir>,
    pub snapshots: Snapshots,
    reaper: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Teardowns under way, awaited by a shutdown so roots are gone after it.
    teardowns: Mutex<Vec<Teardown>>,
    /// How long a pause's background stop waits before it begins (ms): a
    /// loaded machine's delay, on demand (`Faults::delay_pause_stops`).
    #[cfg(feature = "faults")]
    pub pause_stop_delay_ms: std::sync::atomic::AtomicU64,
}

/// What a registry is made with.
pub(crate) struct RegistryParts {
    pub data_dir: PathBuf,
    pub launcher: Arc<Launcher>,
    pub max_sandboxes: usize,
    pub time_scale: f64,
    pub counters: Counters,
    pub state: Option<StateDir>,
    pub snapshots: Snapshots,
}

impl Registry {
    pub fn new(parts: RegistryParts) -> Arc<Self> {
        Arc::new(Self {
            slots: Mutex::default(),
            data_dir: parts.data_dir,
            launcher: parts.launcher,
            max_sandboxes: parts.max_sandboxes,
            time_scale: parts.time_scale,
            counters: parts.counters,
            state: parts.state,
            snapshots: parts.snapshots,
            reaper: Mutex::new(None),
            teardowns: Mutex::default(),
            #[cfg(feature = "faults")]
            pause_stop_delay_ms: Default::default(),
        })
    }

    /// Whether sandboxes live on disk images (snapshots and forks need them).
    pub fn has_disks(&self) -> bool {
        self.launcher.has_disks()
    }

    pub fn spawn_reaper(self: Arc<Self>) {
        let weak = Arc::downgrade(&self);
        let task = tokio::spawn(async move {
            loop {
                tokio::time::sleep(REAP_INTERVAL).await;
                let Some(reg) = weak.upgrade() else { return };
                let now = Instant::now();
                let expired: Vec<String> = reg
                    .all()
                    .into_iter()
                    .filter(|s| s.expired(now))
                    .map(|s| s.id.clone())
                    .collect();
                for id in expired {
                    reg.expire(&id);
                }
            }
        });
        if let Ok(mut r) = self.reaper.lock() {
            *r = Some(task);
        }
    }

    /// Makes a sandbox of `request` from `origin`: its place under the cap
    /// is taken at once, its host side made off the runtime's threads (a
    /// snapshot's disk is copied).
    pub async fn create(
        &self,
        request: NewSandbox,
        timeout_secs: u64,
        origin: Origin,
    ) -> Result<Arc<Sandbox>, CreateError> {
        let internet = network_policy(&request).map_err(CreateError::Unsupported)?;
        let id = {
            let mut slots = self
                .slots
                .lock()
                .map_err(|_| CreateError::Io(std::io::Error::other("registry poisoned")))?;
            if slots.live.len() + slots.making.len() >= self.max_sandboxes {
                return Err(CreateError::TooMany(self.max_sandboxes));
            }
            let id = loop {
                let id = random_id(20);
                if !slots.live.contains_key(&id) && !slots.making.contains(&id) {
                    break id;
                }
            };
            slots.making.insert(id.clone());
            id
        };
        let paths = SandboxPaths::new(self.data_dir.join(&id), self.data_dir.clone());
        let provision = Provision {
            id: id.clone(),
            paths: paths.clone(),
            internet,
            template: origin.template,
            env_vars: request.env_vars.clone(),
            disk: origin.disk,
            id_block: None,
        };
        let launcher = Arc::clone(&self.launcher);
        let root = paths.root().to_path_buf();
        let made = tokio::task::spawn_blocking(move || {
            launcher.provision(provision).inspect_err(|_| {
                let _ = std::fs::remove_dir_all(&root);
            })
        })
        .await
        .map_err(std::io::Error::other)
        .and_then(|made| made);
        // A sandbox a create reports is serving: envd answers (and its
        // network is up) before the create does.
        let started = match made {
            Ok(runner) => match runner.ensure_running().await {
                Ok(_) => Ok(runner),
                Err(e) => {
                    let root = paths.root().to_path_buf();
                    let _ = tokio::task::spawn_blocking(move || {
                        drop(runner);
                        let _ = std::fs::remove_dir_all(&root);
                    })
                    .await;
                    Err(CreateError::Start(e.to_string()))
                }
            },
            Err(e) => Err(match e.kind() {
                std::io::ErrorKind::Unsupported => CreateError::Unsupported(e.to_string()),
                _ => CreateError::Io(e),
            }),
        };
        let mut slots = self
            .slots
            .lock()
            .map_err(|_| CreateError::Io(std::io::Error::other("registry poisoned")))?;
        slots.making.remove(&id);
        let runner = started?;
        if let Some(why) = runner.no_internet() {
            tracing::warn!("sandbox {id} has no internet access: {why}");
        }
        let sandbox = Arc::new(Sandbox::new(
            id.clone(),
            format!("envd_{}", random_id(32)),
            request,
            timeout_secs,
            paths,
            runner,
            self.time_scale,
        ));
        slots.live.insert(id, Arc::clone(&sandbox));
        self.counters.created();
        Ok(sandbox)
    }

    pub fn get(&self, id: &str) -> Option<Arc<Sandbox>> {
        self.slots.lock().ok()?.live.get(id).cloned()
    }

    pub fn all(&self) -> Vec<Arc<Sandbox>> {
        self.slots
            .lock()
            .map(|m| m.live.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Removes a sandbox at once (later requests get 404/502) and tears it
    /// down in the background. False if unknown.
    pub fn kill(&self, id: &str) -> bool {
        let removed = self.slots.lock().ok().and_then(|mut m| m.live.remove(id));
        match removed {
            Some(sandbox) => {
                self.counters.killed();
                sandbox.mark_dead();
                if let Some(state) = &self.state {
                    state.forget(id);
                }
                self.spawn_or_run_now(sandbox, false);
                true
            }
            None => false,
        }
    }

    /// What happens at the TTL: pause with autoPause, else kill.
    pub fn expire(&self, id: &str) {
        let Some(sandbox) = self.get(id) else { return };
        if sandbox.auto_pause() {
            let keep_memory = sandbox.auto_pause_memory();
            if let Err(e) = self.pause(&sandbox, keep_memory) {
                // Paused all the same: killing it would lose more.
                tracing::error!(
                    "sandbox {id} paused at its timeout, but not recorded (it will not outlive the server): {e}"
                );
                self.freeze(&sandbox, keep_memory);
            }
        } else {
            self.kill(id);
        }
    }

    /// Pauses: processes are frozen when `keep_memory` (and there is a
    /// freezer), else stopped, and the filesystem stays. `Ok(false)` if
    /// already paused. A persistent server records the pause first, so a
    /// pause it could not record does not happen.
    pub fn pause(&self, sandbox: &Arc<Sandbox>, keep_memory: bool) -> std::io::Result<bool> {
        if sandbox.state() == State::Paused {
            return Ok(false);
        }
        if let Some(state) = &self.state {
            state.save_paused(&paused_record(sandbox))?;
        }
        let paused = self.freeze(sandbox, keep_memory);
        if paused && self.state.is_some() {
            sandbox.runner.sync_disk();
        }
        Ok(paused)
    }

    /// The pause itself: frozen, or stopped. False if it was paused
    /// already.
    fn freeze(&self, sandbox: &Arc<Sandbox>, keep_memory: bool) -> bool {
        match sandbox.pause(keep_memory) {
            None => false,
            Some(frozen) => {
                if !frozen {
                    self.spawn_or_run_now(Arc::clone(sandbox), true);
                }
                true
            }
        }
    }

    /// Resumes a paused sandbox with a fresh TTL of `secs`; false if it
    /// was running. The caller holds the sandbox's [`Sandbox::turn`].
    pub fn resume(&self, sandbox: &Sandbox, secs: u64) -> bool {
        let resumed = sandbox.resume(secs);
        if resumed {
            if let Some(state) = &self.state {
                state.forget(&sandbox.id);
            }
        }
        resumed
    }

    pub fn stats(&self) -> Stats {
        let live = self.slots.lock().map(|m| m.live.len()).unwrap_or(0);
        self.counters.snapshot(live)
    }

    fn drain(&self) -> Vec<Arc<Sandbox>> {
        if let Ok(mut r) = self.reaper.lock() {
            if let Some(t) = r.take() {
                t.abort();
            }
        }
        self.slots
            .lock()
            .map(|mut m| m.live.drain().map(|(_, s)| s).collect())
            .unwrap_or_default()
    }

    /// Whether a sandbox outlives the server: a persistent server keeps
    /// the paused ones (their disks and records).
    fn kept(&self, sandbox: &Sandbox) -> bool {
        self.state.is_some() && sandbox.state() == State::Paused
    }

    pub async fn shutdown_all(&self) {
        for s in self.drain() {
            if self.kept(&s) {
                s.stop_processes().await;
                let _ = tokio::task::spawn_blocking(move || s.runner.detach()).await;
            } else {
                if let Some(state) = &self.state {
                    state.forget(&s.id);
                }
                teardown(s).await;
            }
        }
        for t in self.take_teardowns() {
            let _ = t.task.await;
        }
        self.clean_up();
    }

    /// Removes the server's files beside the sandbox roots, but what a
    /// persistent server keeps (disks, snapshots, records).
    fn clean_up(&self) {
        self.launcher.clean_up(&self.data_dir, self.state.is_some());
        if self.state.is_none() {
            let _ = std::fs::remove_dir_all(self.data_dir.join(SNAPSHOTS_DIR));
        }
    }

    /// The background teardowns, taken from the list.
    fn take_teardowns(&self) -> Vec<Teardown> {
        self.teardowns
            .lock()
            .map(|mut t| std::mem::take(&mut *t))
            .unwrap_or_default()
    }

    pub fn shutdown_all_now(&self) {
        // Teardowns still under way would be dropped with the runtime,
        // halfway: finish them here (a killed sandbox's root would stay).
        for t in self.take_teardowns() {
            if !t.task.is_finished() {
                t.task.abort();
                t.sandbox.runner.stop();
                if !t.keep_root {
                    t.sandbox.destroy_root();
                }
            }
        }
        for s in self.drain() {
            if self.kept(&s) {
                s.runner.detach();
            } else {
                if let Some(state) = &self.state {
                    state.forget(&s.id);
                }
                s.destroy_root();
            }
        }
        self.clean_up();
    }
}

/// What a paused sandbox needs to resume after a restart.
fn paused_record(sandbox: &Sandbox) -> PausedRecord {
    PausedRecord {
        id: sandbox.id.clone(),
        access_token: sandbox.access_token.clone(),
        request: sandbox.request.clone(),
        template: sandbox.runner.template().to_string(),
        started_at_ms: unix_ms(sandbox.started_at),
        end_at_ms: unix_ms(sandbox.end_at()),
        id_block: sandbox.runner.id_block(),
        disk_image: sandbox.runner.has_disk(),
    }
}

impl Registry {
    /// Stops a sandbox's processes (and removes its root unless
    /// `keep_root`) in the background; outside a runtime, kills right away.
    fn spawn_or_run_now(&self, sandbox: Arc<Sandbox>, keep_root: bool) {
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                let torn = Arc::clone(&sandbox);
                let under_way = crate::heap::teardown_under_way();
                #[cfg(feature = "faults")]
                let delay = self
                    .pause_stop_delay_ms
                    .load(std::sync::atomic::Ordering::Relaxed);
                let task = handle.spawn(async move {
                    let _under_way = under_way;
                    if keep_root {
                        #[cfg(feature = "faults")]
                        tokio::time::sleep(std::time::Duration::from_millis(delay)).await;
                        torn.stop_for_pause().await;
                    } else {
                        teardown(torn).await;
                    }
                });
                if let Ok(mut t) = self.teardowns.lock() {
                    t.retain(|t| !t.task.is_finished());
                    t.push(Teardown {
                        task,
                        sandbox,
                        keep_root,
                    });
                }
            }
            Err(_) => {
                sandbox.runner.stop();
                if !keep_root {
                    sandbox.destroy_root();
                }
            }
        }
    }
}

/// A sandbox being torn down in the background.
struct Teardown {
    task: tokio::task::JoinHandle<()>,
    sandbox: Arc<Sandbox>,
    /// Only its processes stop (a pause without a freezer).
    keep_root: bool,
}

async fn teardown(sandbox: Arc<Sandbox>) {
    sandbox.stop_processes().await;
    let _ = tokio::task::spawn_blocking(move || sandbox.destroy_root()).await;
}

/// Whether a sandbox asking for `request` gets internet access. E2B's
/// `allow_internet_access: false` and a `network.denyOut` of `0.0.0.0/0`
/// without `allowOut` cut it; finer rules (allow or deny lists of hosts
/// and CIDRs) cannot be enforced by the local backend's network stack and
/// are refused rather than ignored.
fn network_policy(request: &NewSandbox) -> Result<bool, String> {
    let list = |key: &str, snake: &str| -> Vec<String> {
        let Some(net) = request.network.as_ref() else {
            return Vec::new();
        };
        net.get(key)
            .or_else(|| net.get(snake))
            .and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let allow = list("allowOut", "allow_out");
    let deny = list("denyOut", "deny_out");
    let denies_all = deny.iter().any(|d| d == "0.0.0.0/0");
    if !allow.is_empty() || deny.iter().any(|d| d != "0.0.0.0/0") {
        return Err(format!(
            "network allowOut/denyOut rules other than denying all (\"0.0.0.0/0\") are not supported by the local backend (allowOut {allow:?}, denyOut {deny:?})"
        ));
    }
    Ok(request.allow_internet_access != Some(false) && !denies_all)
}
