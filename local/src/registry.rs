//! The live sandboxes: creation under a cap, lookup, kill, pause/resume and
//! the reaper that enforces TTLs.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use e2b_wire::api::NewSandbox;

use crate::isolation::{Launcher, Provision};
use crate::names::random_id;
use crate::paths::SandboxPaths;
use crate::sandbox::Sandbox;
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
}

pub(crate) struct Registry {
    sandboxes: Mutex<HashMap<String, Arc<Sandbox>>>,
    data_dir: PathBuf,
    launcher: Arc<Launcher>,
    max_sandboxes: usize,
    time_scale: f64,
    pub counters: Counters,
    reaper: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Teardowns under way, awaited by a shutdown so roots are gone after it.
    teardowns: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl Registry {
    pub fn new(
        data_dir: PathBuf,
        launcher: Arc<Launcher>,
        max_sandboxes: usize,
        time_scale: f64,
        counters: Counters,
    ) -> Arc<Self> {
        Arc::new(Self {
            sandboxes: Mutex::default(),
            data_dir,
            launcher,
            max_sandboxes,
            time_scale,
            counters,
            reaper: Mutex::new(None),
            teardowns: Mutex::default(),
        })
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

    pub fn create(
        &self,
        request: NewSandbox,
        timeout_secs: u64,
    ) -> Result<Arc<Sandbox>, CreateError> {
        let mut map = self
            .sandboxes
            .lock()
            .map_err(|_| CreateError::Io(std::io::Error::other("registry poisoned")))?;
        if map.len() >= self.max_sandboxes {
            return Err(CreateError::TooMany(self.max_sandboxes));
        }
        let id = loop {
            let id = random_id(20);
            if !map.contains_key(&id) {
                break id;
            }
        };
        let internet = network_policy(&request).map_err(CreateError::Unsupported)?;
        let paths = SandboxPaths::new(self.data_dir.join(&id), self.data_dir.clone());
        let runner = self
            .launcher
            .provision(Provision {
                id: &id,
                paths: paths.clone(),
                internet,
                template: &request.template_id,
                env_vars: request.env_vars.clone(),
            })
            .map_err(|e| {
                let _ = std::fs::remove_dir_all(paths.root());
                CreateError::Io(e)
            })?;
        let sandbox = Arc::new(Sandbox::new(
            id.clone(),
            format!("envd_{}", random_id(32)),
            request,
            timeout_secs,
            paths,
            runner,
            self.time_scale,
        ));
        map.insert(id, Arc::clone(&sandbox));
        self.counters.created();
        Ok(sandbox)
    }

    pub fn get(&self, id: &str) -> Option<Arc<Sandbox>> {
        self.sandboxes.lock().ok()?.get(id).cloned()
    }

    pub fn all(&self) -> Vec<Arc<Sandbox>> {
        self.sandboxes
            .lock()
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Removes a sandbox at once (later requests get 404/502) and tears it
    /// down in the background. False if unknown.
    pub fn kill(&self, id: &str) -> bool {
        let removed = self.sandboxes.lock().ok().and_then(|mut m| m.remove(id));
        match removed {
            Some(sandbox) => {
                self.counters.killed();
                sandbox.mark_dead();
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
            self.pause(&sandbox);
        } else {
            self.kill(id);
        }
    }

    /// Pauses: processes are frozen (or, without a freezer, stopped), the
    /// filesystem stays. False if already paused.
    pub fn pause(&self, sandbox: &Arc<Sandbox>) -> bool {
        match sandbox.pause() {
            None => false,
            Some(true) => true,
            Some(false) => {
                self.spawn_or_run_now(Arc::clone(sandbox), true);
                true
            }
        }
    }

    pub fn stats(&self) -> Stats {
        let live = self.sandboxes.lock().map(|m| m.len()).unwrap_or(0);
        self.counters.snapshot(live)
    }

    fn drain(&self) -> Vec<Arc<Sandbox>> {
        if let Ok(mut r) = self.reaper.lock() {
            if let Some(t) = r.take() {
                t.abort();
            }
        }
        self.sandboxes
            .lock()
            .map(|mut m| m.drain().map(|(_, s)| s).collect())
            .unwrap_or_default()
    }

    pub async fn shutdown_all(&self) {
        for s in self.drain() {
            teardown(s).await;
        }
        let pending = self
            .teardowns
            .lock()
            .map(|mut t| std::mem::take(&mut *t))
            .unwrap_or_default();
        for t in pending {
            let _ = t.await;
        }
        Launcher::clean_up(&self.data_dir);
    }

    pub fn shutdown_all_now(&self) {
        for s in self.drain() {
            s.destroy_root();
        }
        Launcher::clean_up(&self.data_dir);
    }
}

impl Registry {
    /// Stops a sandbox's processes (and removes its root unless
    /// `keep_root`) in the background; outside a runtime, kills right away.
    fn spawn_or_run_now(&self, sandbox: Arc<Sandbox>, keep_root: bool) {
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                let task = handle.spawn(async move {
                    if keep_root {
                        sandbox.stop_processes().await;
                    } else {
                        teardown(sandbox).await;
                    }
                });
                if let Ok(mut t) = self.teardowns.lock() {
                    t.retain(|t| !t.is_finished());
                    t.push(task);
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
