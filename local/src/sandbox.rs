//! One sandbox as the orchestrator keeps it: its settings, its host side
//! ([`SandboxRunner`]) and its lifetime (running until a deadline, or
//! paused). What runs inside is envd's.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use e2b_wire::api::{NewSandbox, Sandbox as SandboxBody, SandboxDetail};
use e2b_wire::ENVD_VERSION;

use crate::isolation::{Limits, SandboxRunner};
use crate::paths::SandboxPaths;

/// Running or paused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    Running,
    Paused,
}

struct Life {
    state: State,
    /// Paused with its processes frozen in their cgroup (memory kept),
    /// rather than stopped.
    frozen: bool,
    /// When it expires (wall clock, scaled by the server's time scale).
    deadline: Instant,
    /// The nominal expiry shown to clients.
    end_at: SystemTime,
}

/// A live sandbox.
pub(crate) struct Sandbox {
    pub id: String,
    pub access_token: String,
    pub request: NewSandbox,
    pub started_at: SystemTime,
    pub paths: SandboxPaths,
    pub runner: Arc<SandboxRunner>,
    /// What it may use (enforced by the runner's cgroup and disk).
    pub limits: Limits,
    time_scale: f64,
    life: Mutex<Life>,
    /// True while paused or after death: open responses are cut.
    gone: tokio::sync::watch::Sender<bool>,
    /// Held by a pause's stop of its processes and by a resume, so they
    /// take turns (see [`Sandbox::turn`]).
    turn: tokio::sync::Mutex<()>,
    /// The previous metrics sample's time and CPU time (ns), for the CPU
    /// use between samples.
    last_cpu: Mutex<(Instant, u64)>,
}

impl Sandbox {
    pub fn new(
        id: String,
        access_token: String,
        request: NewSandbox,
        timeout_secs: u64,
        paths: SandboxPaths,
        runner: SandboxRunner,
        time_scale: f64,
    ) -> Self {
        let now = SystemTime::now();
        Self {
            id,
            access_token,
            request,
            started_at: now,
            limits: runner.limits(),
            runner: Arc::new(runner),
            paths,
            time_scale,
            life: Mutex::new(Life {
                state: State::Running,
                frozen: false,
                deadline: Instant::now() + scaled(timeout_secs, time_scale),
                end_at: now + Duration::from_secs(timeout_secs),
            }),
            last_cpu: Mutex::new((Instant::now(), 0)),
            gone: tokio::sync::watch::Sender::new(false),
            turn: tokio::sync::Mutex::new(()),
        }
    }

    /// Its turn to stop processes for a pause or to resume: a stop a pause
    /// scheduled in the background (the one at the TTL, or the pause
    /// answer's own) never lands on the sandbox a resume booted after it.
    pub async fn turn(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.turn.lock().await
    }

    /// Stops its processes for a pause that keeps no memory, in its turn,
    /// unless it was resumed meanwhile.
    pub async fn stop_for_pause(&self) {
        let _turn = self.turn().await;
        if self.state() == State::Paused && !self.memory_kept() {
            self.stop_processes().await;
        }
    }

    /// The same sandbox as it was kept paused by a server that stopped:
    /// paused, its processes gone (it cold-boots when it resumes).
    pub fn restored(mut self, started_at: SystemTime, end_at: SystemTime) -> Self {
        self.started_at = started_at;
        if let Ok(life) = self.life.get_mut() {
            life.state = State::Paused;
            life.frozen = false;
            life.end_at = end_at;
        }
        self.gone.send_replace(true);
        self
    }

    /// The expiry shown to clients.
    pub fn end_at(&self) -> SystemTime {
        self.life
            .lock()
            .map(|l| l.end_at)
            .unwrap_or_else(|_| SystemTime::now())
    }

    /// Copies its disk to `dest` with its processes frozen for the copy
    /// (the freezer where there is one; the copy itself freezes the
    /// filesystem), as E2B pauses the VM for a snapshot; it runs on
    /// afterwards. Only a running sandbox: `Ok(false)` when it is paused.
    /// `durable`: the copy is on disk before this returns.
    pub fn snapshot_disk(&self, dest: &std::path::Path, durable: bool) -> std::io::Result<bool> {
        let froze = match self.life.lock() {
            Ok(l) if l.state == State::Running => self.runner.freeze(),
            _ => return Ok(false),
        };
        let copied = self.runner.copy_disk(dest);
        // Unless it was paused meanwhile (and stays frozen for that).
        if let Ok(l) = self.life.lock() {
            if froze && l.state == State::Running {
                self.runner.thaw();
            }
        }
        copied?;
        // Flushed once the sandbox runs again: it need not wait for that.
        if durable {
            std::fs::File::open(dest)?.sync_all()?;
        }
        Ok(true)
    }

    pub fn state(&self) -> State {
        self.life.lock().map(|l| l.state).unwrap_or(State::Paused)
    }

    /// Whether it is running and past its deadline.
    pub fn expired(&self, now: Instant) -> bool {
        self.life
            .lock()
            .map(|l| l.state == State::Running && l.deadline <= now)
            .unwrap_or(false)
    }

    /// The sandbox expires `secs` from now (shortening or extending).
    pub fn set_timeout(&self, secs: u64) {
        if let Ok(mut l) = self.life.lock() {
            l.deadline = Instant::now() + scaled(secs, self.time_scale);
            l.end_at = SystemTime::now() + Duration::from_secs(secs);
        }
    }

    /// Extends the TTL to `secs` from now unless it already lasts longer.
    pub fn extend_timeout(&self, secs: u64) {
        if let Ok(mut l) = self.life.lock() {
            let deadline = Instant::now() + scaled(secs, self.time_scale);
            if deadline > l.deadline {
                l.deadline = deadline;
                l.end_at = SystemTime::now() + Duration::from_secs(secs);
            }
        }
    }

    /// Pauses it: open responses are cut, and, `keep_memory`, its
    /// processes are frozen in their cgroup, so memory survives (a
    /// background server, the kernel's variables), as E2B's pause keeps the
    /// VM's. `None` if it was not running; `Some(false)` when it was not
    /// frozen (a filesystem-only pause, or no freezer): the caller then
    /// stops its processes, and the resume boots it anew.
    pub fn pause(&self, keep_memory: bool) -> Option<bool> {
        match self.life.lock() {
            Ok(mut l) if l.state == State::Running => {
                l.state = State::Paused;
                self.gone.send_replace(true);
                // Under the lock: a resume waits for the freeze to settle.
                l.frozen = keep_memory && self.runner.freeze();
                Some(l.frozen)
            }
            _ => None,
        }
    }

    /// Whether its memory is kept while it is paused (it is frozen).
    pub fn memory_kept(&self) -> bool {
        self.life.lock().is_ok_and(|l| l.frozen)
    }

    /// Resumes a paused sandbox with a fresh TTL; false if it was running.
    pub fn resume(&self, secs: u64) -> bool {
        match self.life.lock() {
            Ok(mut l) if l.state == State::Paused => {
                if std::mem::take(&mut l.frozen) {
                    self.runner.thaw();
                }
                self.gone.send_replace(false);
                l.state = State::Running;
                l.deadline = Instant::now() + scaled(secs, self.time_scale);
                l.end_at = SystemTime::now() + Duration::from_secs(secs);
                true
            }
            _ => false,
        }
    }

    /// Marks it dead: responses still streaming from it are cut.
    pub fn mark_dead(&self) {
        self.gone.send_replace(true);
    }

    /// Watches for the sandbox going away (pause or death).
    pub fn gone(&self) -> tokio::sync::watch::Receiver<bool> {
        self.gone.subscribe()
    }

    pub fn auto_pause(&self) -> bool {
        self.request.auto_pause.unwrap_or(false)
    }

    /// Whether its pause at the TTL keeps memory (`autoPauseMemory`, by
    /// default yes).
    pub fn auto_pause_memory(&self) -> bool {
        self.request.auto_pause_memory.unwrap_or(true)
    }

    pub fn auto_resume(&self) -> bool {
        self.auto_pause() && self.request.auto_resume.is_some_and(|a| a.enabled)
    }

    /// Stops every process (kill, and pause without a freezer): the
    /// sandbox, envd and all, is gone until its next connection.
    pub async fn stop_processes(&self) {
        let runner = Arc::clone(&self.runner);
        let _ = tokio::task::spawn_blocking(move || runner.stop()).await;
    }

    /// Removes the sandbox from the host for good: its processes must be
    /// stopped; then its cgroup, disk, ids and directory go.
    pub fn destroy_root(&self) {
        self.runner.release();
        let _ = std::fs::remove_dir_all(self.paths.root());
    }

    /// The create/connect answer.
    pub fn body(&self) -> SandboxBody {
        SandboxBody {
            template_id: self.request.template_id.clone(),
            sandbox_id: self.id.clone(),
            client_id: "local".into(),
            envd_version: ENVD_VERSION.into(),
            alias: Some(self.request.template_id.clone()),
            envd_access_token: Some(self.access_token.clone()),
            traffic_access_token: None,
            domain: None,
        }
    }

    /// The `GET /sandboxes/{id}` answer (without the token: a list entry).
    pub fn detail(&self, with_token: bool) -> SandboxDetail {
        let (state, end_at) = self
            .life
            .lock()
            .map(|l| (l.state, l.end_at))
            .unwrap_or((State::Paused, SystemTime::now()));
        let auto_pause = self.auto_pause();
        SandboxDetail {
            template_id: self.request.template_id.clone(),
            sandbox_id: self.id.clone(),
            client_id: "local".into(),
            started_at: rfc3339(self.started_at),
            end_at: rfc3339(end_at),
            envd_version: ENVD_VERSION.into(),
            cpu_count: self.limits.cpu_count,
            memory_mb: self.limits.memory_mb,
            disk_size_mb: self.limits.disk_mb,
            state: match state {
                State::Running => "running".into(),
                State::Paused => "paused".into(),
            },
            alias: Some(self.request.template_id.clone()),
            envd_access_token: with_token.then(|| self.access_token.clone()),
            // What it has, not only what it asked for.
            allow_internet_access: match self.runner.no_internet() {
                Some(_) => Some(false),
                None => self.request.allow_internet_access,
            },
            domain: None,
            metadata: Some(self.request.metadata.clone()),
            network: self.request.network.clone(),
            lifecycle: Some(serde_json::json!({
                "autoResume": self.auto_resume(),
                "onTimeout": if auto_pause { "pause" } else { "kill" },
            })),
            volume_mounts: self.request.volume_mounts.clone(),
        }
    }
}

/// RFC 3339 with second precision, UTC.
pub(crate) fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()
}

fn scaled(secs: u64, time_scale: f64) -> Duration {
    Duration::from_secs_f64(secs as f64 / time_scale)
}

impl Sandbox {
    /// A metrics sample now, from the sandbox's cgroup and filesystem: CPU
    /// use since the previous sample (or the start), memory and disk. What
    /// the server cannot know (no cgroup: an unprivileged server) is 0.
    pub fn metric(&self) -> e2b_wire::api::SandboxMetric {
        let (usage, disk) = self.runner.usage();
        let now = Instant::now();
        let cpu_ns = usage.cpu_ns.unwrap_or(0);
        let cpu_used_pct = match self.last_cpu.lock() {
            Ok(mut last) => {
                let (then, before) = *last;
                *last = (now, cpu_ns);
                let wall = now.duration_since(then).as_nanos() as f64;
                let cpus = f64::from(self.limits.cpu_count.max(1));
                if wall > 0.0 {
                    (cpu_ns.saturating_sub(before) as f64 / wall / cpus * 100.0).min(100.0)
                } else {
                    0.0
                }
            }
            Err(_) => 0.0,
        };
        let wall = SystemTime::now();
        let unix = wall
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        let (disk_used, disk_total) = disk.unwrap_or((0, 0));
        e2b_wire::api::SandboxMetric {
            timestamp: humantime::format_rfc3339_seconds(wall).to_string(),
            timestamp_unix: unix,
            cpu_count: self.limits.cpu_count,
            cpu_used_pct: (cpu_used_pct * 100.0).round() / 100.0,
            mem_used: usage.memory.unwrap_or(0),
            mem_total: u64::from(self.limits.memory_mb) << 20,
            mem_cache: usage.cache.unwrap_or(0),
            disk_used,
            disk_total,
        }
    }
}
