//! Per-sandbox resource limits: processes, memory, CPU and disk.
//!
//! Where the server may write a cgroup hierarchy (root on these machines:
//! cgroup v1 `memory`, `pids`, `cpu`; or a cgroup v2 tree with those
//! controllers), every sandbox gets its own cgroup; else only a file-size
//! rlimit bounds a sandbox (envd sets it for itself and its processes):
//! nothing limits its processes, memory or CPU. A process cap per uid
//! (`RLIMIT_NPROC`) would count every process of the server's uid, the
//! user's own among them, and an address-space cap breaks runtimes that
//! reserve large ranges (V8, the JVM), so neither is set. The writable directories live on a size-limited ext4 image
//! mounted through a loop device where the server is root
//! ([`super::disk`]), so a disk filler gets `ENOSPC` inside its sandbox;
//! otherwise only the file size is capped. [`Limits`] are what
//! `GET /sandboxes/{id}` reports.

use std::path::{Path, PathBuf};

/// What each sandbox may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// CPUs (a CFS quota of this many CPUs' time).
    pub cpu_count: u32,
    /// Memory in MiB (RAM; there is no swap).
    pub memory_mb: u32,
    /// Disk in MiB for `/home/user`, `/tmp` and `/var/tmp` together.
    pub disk_mb: u32,
    /// Processes and threads alive at once.
    pub max_processes: u32,
}

impl Default for Limits {
    /// What E2B's default sandbox has: 2 CPUs, 512 MiB, 1 GiB of disk.
    fn default() -> Self {
        Self {
            cpu_count: 2,
            memory_mb: 512,
            disk_mb: 1024,
            max_processes: 1024,
        }
    }
}

/// How limits are enforced on this machine, decided once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Enforcement {
    /// cgroup v1 hierarchies: `(controller mount, group under it)`.
    CgroupV1 {
        /// The mounted `memory`, `pids` and `cpu` hierarchies.
        memory: PathBuf,
        /// The `pids` hierarchy.
        pids: PathBuf,
        /// The `cpu` hierarchy.
        cpu: PathBuf,
        /// The `cpuacct` hierarchy when it is mounted apart and writable:
        /// it only counts (the CPU use of metrics), it limits nothing.
        cpuacct: Option<PathBuf>,
        /// The `freezer` hierarchy when it is mounted and writable: pause
        /// freezes a sandbox's processes in it instead of killing them.
        freezer: Option<PathBuf>,
    },
    /// A cgroup v2 directory whose children get the controllers.
    CgroupV2 {
        /// Parent of the per-sandbox groups.
        parent: PathBuf,
    },
    /// No cgroup: only the file-size rlimit envd sets.
    Rlimits,
}

/// The group all sandbox cgroups are made under.
const GROUP: &str = "e2b-local";

/// How many servers of this process use its groups (`e2b-local/<pid>`):
/// they are made by the first and removed by the last, never while
/// another could be making a sandbox's group in them.
static SERVERS: std::sync::Mutex<usize> = std::sync::Mutex::new(0);

impl Enforcement {
    /// The strongest mechanism this process may use. Groups live under
    /// `e2b-local/<server pid>/`, so a server sweeps what killed servers
    /// left behind without touching a live one's (a paused sandbox's group
    /// is empty too).
    pub fn detect() -> Self {
        let mut servers = SERVERS.lock().unwrap_or_else(|p| p.into_inner());
        let enforcement = Self::detect_groups();
        if enforcement != Enforcement::Rlimits {
            *servers += 1;
        }
        enforcement
    }

    fn detect_groups() -> Self {
        let root = Path::new("/sys/fs/cgroup");
        let own = std::process::id().to_string();
        let v1 = |c: &str| {
            let dir = root.join(c);
            is_writable_cgroup(&dir).then(|| dir.join(GROUP))
        };
        if let (Some(memory), Some(pids), Some(cpu)) = (v1("memory"), v1("pids"), v1("cpu")) {
            let mine = [&memory, &pids, &cpu].map(|d| d.join(&own));
            if mine.iter().all(|d| std::fs::create_dir_all(d).is_ok()) {
                let own_group = |d: PathBuf| {
                    std::fs::create_dir_all(d.join(&own)).ok()?;
                    sweep_dead_servers(&d);
                    Some(d.join(&own))
                };
                // Dead servers' frozen sandboxes thaw first, or their
                // processes could not die.
                let freezer = v1("freezer").and_then(own_group);
                for d in [&memory, &pids, &cpu] {
                    sweep_dead_servers(d);
                }
                // Where `cpu` does not count usage itself (cpu and cpuacct
                // mounted apart), the counting group joins the set.
                let cpuacct = (!cpu.join("cpuacct.usage").exists())
                    .then(|| v1("cpuacct"))
                    .flatten()
                    .and_then(own_group);
                let [memory, pids, cpu] = mine;
                return Enforcement::CgroupV1 {
                    memory,
                    pids,
                    cpu,
                    cpuacct,
                    freezer,
                };
            }
        }
        let controllers =
            std::fs::read_to_string(root.join("cgroup.controllers")).unwrap_or_default();
        let has = |c: &str| controllers.split_whitespace().any(|x| x == c);
        if has("memory") && has("pids") && has("cpu") && is_writable_cgroup(root) {
            let group = root.join(GROUP);
            let parent = group.join(&own);
            let enable =
                |d: &Path| std::fs::write(d.join("cgroup.subtree_control"), "+memory +pids +cpu");
            let ok = std::fs::create_dir_all(&parent).is_ok()
                && enable(root).is_ok()
                && enable(&group).is_ok()
                && enable(&parent).is_ok();
            if ok {
                sweep_dead_servers(&group);
                return Enforcement::CgroupV2 { parent };
            }
        }
        Enforcement::Rlimits
    }

    /// Groups under the cgroup v2 directory `dir` (a delegated subtree,
    /// or a hierarchy mounted for the server), with whichever of the
    /// `memory`, `pids` and `cpu` controllers it has.
    pub fn v2_under(dir: &Path) -> std::io::Result<Self> {
        let mut servers = SERVERS.lock().unwrap_or_else(|p| p.into_inner());
        let enforcement = Self::v2_groups_under(dir)?;
        *servers += 1;
        Ok(enforcement)
    }

    fn v2_groups_under(dir: &Path) -> std::io::Result<Self> {
        if !is_writable_cgroup(dir) || !dir.join("cgroup.subtree_control").exists() {
            return Err(std::io::Error::other("not a writable cgroup v2 directory"));
        }
        let group = dir.join(GROUP);
        let parent = group.join(std::process::id().to_string());
        std::fs::create_dir_all(&parent)?;
        let controllers = std::fs::read_to_string(dir.join("cgroup.controllers"))?;
        for controller in controllers
            .split_whitespace()
            .filter(|c| ["memory", "pids", "cpu"].contains(c))
        {
            for d in [dir, &group, &parent] {
                std::fs::write(d.join("cgroup.subtree_control"), format!("+{controller}"))?;
            }
        }
        sweep_dead_servers(&group);
        Ok(Enforcement::CgroupV2 { parent })
    }

    /// For the server's startup line.
    pub fn describe(&self) -> &'static str {
        match self {
            Enforcement::CgroupV1 { freezer: None, .. } => "cgroup v1 (memory, pids, cpu)",
            Enforcement::CgroupV1 { .. } => "cgroup v1 (memory, pids, cpu, freezer)",
            Enforcement::CgroupV2 { .. } => "cgroup v2 (memory, pids, cpu, freeze)",
            Enforcement::Rlimits => {
                "no writable cgroup hierarchy: file sizes capped, processes, memory and CPU unlimited"
            }
        }
    }

    /// One server of this process stops using its groups
    /// (`e2b-local/<pid>`, shared by every server of the process): the
    /// last one removes them. Call once per [`Enforcement::detect`] or
    /// [`Enforcement::v2_under`].
    pub fn release_groups(&self) {
        let mut servers = SERVERS.lock().unwrap_or_else(|p| p.into_inner());
        if *self == Enforcement::Rlimits || *servers == 0 {
            return;
        }
        *servers -= 1;
        if *servers > 0 {
            // Another server may be making a sandbox's group under them.
            return;
        }
        let groups: Vec<&PathBuf> = match self {
            Enforcement::CgroupV1 {
                memory,
                pids,
                cpu,
                cpuacct,
                freezer,
            } => [
                Some(memory),
                Some(pids),
                Some(cpu),
                cpuacct.as_ref(),
                freezer.as_ref(),
            ]
            .into_iter()
            .flatten()
            .collect(),
            Enforcement::CgroupV2 { parent } => vec![parent],
            Enforcement::Rlimits => Vec::new(),
        };
        for group in groups {
            let _ = std::fs::remove_dir(group);
        }
    }

    /// Makes the cgroup of sandbox `id` with `limits`; `None` with rlimits.
    /// Its files stay the server's: only the server moves a process in
    /// (the sandbox's first), and every other inherits the group.
    pub fn create(&self, id: &str, limits: &Limits) -> std::io::Result<Option<Cgroup>> {
        let quota = u64::from(limits.cpu_count) * CPU_PERIOD_US;
        let memory = u64::from(limits.memory_mb) << 20;
        let (dirs, freezer) = match self {
            Enforcement::CgroupV1 {
                memory: m,
                pids,
                cpu,
                cpuacct,
                freezer,
            } => {
                let mut dirs = vec![m.join(id), pids.join(id), cpu.join(id)];
                dirs.extend(cpuacct.as_ref().map(|d| d.join(id)));
                let freezer = freezer.as_ref().map(|d| Freezer::V1(d.join(id)));
                if let Some(Freezer::V1(d)) = &freezer {
                    dirs.push(d.clone());
                }
                for d in &dirs {
                    std::fs::create_dir_all(d)?;
                }
                std::fs::write(dirs[0].join("memory.limit_in_bytes"), memory.to_string())?;
                // Where swap is accounted, none of it either.
                let _ = std::fs::write(
                    dirs[0].join("memory.memsw.limit_in_bytes"),
                    memory.to_string(),
                );
                std::fs::write(dirs[1].join("pids.max"), limits.max_processes.to_string())?;
                std::fs::write(dirs[2].join("cpu.cfs_period_us"), CPU_PERIOD_US.to_string())?;
                std::fs::write(dirs[2].join("cpu.cfs_quota_us"), quota.to_string())?;
                (dirs, freezer)
            }
            Enforcement::CgroupV2 { parent } => {
                let d = parent.join(id);
                std::fs::create_dir_all(&d)?;
                // A limit file exists where its controller is enabled
                // (all three, unless the server was given a directory).
                for (file, value) in [
                    ("memory.max", memory.to_string()),
                    ("pids.max", limits.max_processes.to_string()),
                    ("cpu.max", format!("{quota} {CPU_PERIOD_US}")),
                ] {
                    if d.join(file).exists() {
                        std::fs::write(d.join(file), value)?;
                    }
                }
                let _ = std::fs::write(d.join("memory.swap.max"), "0");
                // cgroup.freeze: Linux 5.2 and later.
                let freezer = d
                    .join("cgroup.freeze")
                    .exists()
                    .then(|| Freezer::V2(d.clone()));
                (vec![d], freezer)
            }
            Enforcement::Rlimits => return Ok(None),
        };
        Ok(Some(Cgroup { dirs, freezer }))
    }
}

/// CFS period: 100 ms, the kernel's default.
const CPU_PERIOD_US: u64 = 100_000;

/// Removes the groups of servers that are gone (`<pid>` directories whose
/// process no longer exists). A server killed with its sandboxes paused
/// leaves them frozen, the kill their death sent them pending: each
/// group is thawed and its processes killed, so their disks can be
/// unmounted and reused, before it is removed.
fn sweep_dead_servers(group: &Path) {
    let Ok(servers) = std::fs::read_dir(group) else {
        return;
    };
    for server in servers.flatten() {
        let name = server.file_name();
        let is_pid = name.to_str().is_some_and(|n| n.parse::<u32>().is_ok());
        if !is_pid || alive(&name) {
            continue;
        }
        if let Ok(sandboxes) = std::fs::read_dir(server.path()) {
            for sandbox in sandboxes.flatten() {
                if sandbox.file_type().is_ok_and(|t| t.is_dir()) {
                    end_group(&sandbox.path());
                }
            }
        }
        let _ = std::fs::remove_dir(server.path());
    }
}

/// Whether process `pid` runs: it exists and is not a zombie (a server
/// killed a moment ago whose parent has not reaped it yet is dead).
fn alive(pid: &std::ffi::OsStr) -> bool {
    crate::procfs::stat_fields(&Path::new("/proc").join(pid))
        .is_some_and(|fields| !matches!(fields.first().map(String::as_str), Some("Z" | "X")))
}

/// Thaws the group `dir`, kills what is in it and removes it once empty
/// (within a second). The pids come from the kernel's `cgroup.procs`.
fn end_group(dir: &Path) {
    let _ = std::fs::write(dir.join("freezer.state"), "THAWED");
    let _ = std::fs::write(dir.join("cgroup.freeze"), "0");
    if std::fs::write(dir.join("cgroup.kill"), "1").is_err() {
        let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
        for pid in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
            if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
    }
    for _ in 0..100 {
        if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Whether `dir` is a cgroup directory this process may create groups in.
fn is_writable_cgroup(dir: &Path) -> bool {
    dir.join("cgroup.procs").exists()
        && rustix::fs::access(dir, rustix::fs::Access::WRITE_OK).is_ok()
}

/// What a sandbox's processes use, as its cgroup counts it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// CPU time, in nanoseconds.
    pub cpu_ns: Option<u64>,
    /// Memory, in bytes.
    pub memory: Option<u64>,
    /// Of which page cache, in bytes.
    pub cache: Option<u64>,
}

/// One sandbox's cgroup (a directory per v1 hierarchy, or one v2 directory).
#[derive(Debug)]
pub struct Cgroup {
    dirs: Vec<PathBuf>,
    freezer: Option<Freezer>,
}

/// Where a group is frozen: v1's `freezer.state`, v2's `cgroup.freeze`.
#[derive(Debug)]
enum Freezer {
    V1(PathBuf),
    V2(PathBuf),
}

/// How long freezing or thawing may take to settle.
const FREEZE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

impl Cgroup {
    /// The `cgroup.procs` files a process writes its pid into to join.
    pub fn procs_files(&self) -> Vec<PathBuf> {
        self.dirs.iter().map(|d| d.join("cgroup.procs")).collect()
    }

    /// What the group's processes use now: CPU time in nanoseconds, memory
    /// and its page cache in bytes (`None` where the hierarchy lacks the
    /// file).
    pub fn usage(&self) -> Usage {
        let read = |name: &str| {
            self.dirs
                .iter()
                .find_map(|d| std::fs::read_to_string(d.join(name)).ok())
        };
        let stat_field = |text: &str, key: &str| {
            text.lines().find_map(|l| {
                l.strip_prefix(key)?
                    .strip_prefix(' ')?
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
        };
        let number = |name: &str| read(name).and_then(|t| t.trim().parse::<u64>().ok());
        // v1: cpuacct.usage (ns), memory.usage_in_bytes, memory.stat cache;
        // v2: cpu.stat usage_usec, memory.current, memory.stat file.
        let cpu_ns = number("cpuacct.usage").or_else(|| {
            read("cpu.stat")
                .and_then(|t| stat_field(&t, "usage_usec"))
                .map(|us| us * 1_000)
        });
        let memory = number("memory.usage_in_bytes").or_else(|| number("memory.current"));
        let cache = read("memory.stat")
            .and_then(|t| stat_field(&t, "cache").or_else(|| stat_field(&t, "file")));
        Usage {
            cpu_ns,
            memory,
            cache,
        }
    }

    /// Whether the group can be frozen.
    pub fn can_freeze(&self) -> bool {
        self.freezer.is_some()
    }

    /// Freezes (or thaws) every process in the group and waits until the
    /// kernel says it is done. A frozen process runs nothing and gets no
    /// signal (not even SIGKILL) until thawed.
    pub fn set_frozen(&self, frozen: bool) -> std::io::Result<()> {
        let (file, value, settled): (PathBuf, &str, fn(&str, bool) -> bool) = match &self.freezer {
            None => return Err(std::io::Error::other("no freezer for this cgroup")),
            Some(Freezer::V1(d)) => (
                d.join("freezer.state"),
                if frozen { "FROZEN" } else { "THAWED" },
                |state, frozen| state.trim() == if frozen { "FROZEN" } else { "THAWED" },
            ),
            Some(Freezer::V2(d)) => (
                d.join("cgroup.freeze"),
                if frozen { "1" } else { "0" },
                |events, frozen| {
                    let want = if frozen { "frozen 1" } else { "frozen 0" };
                    events.lines().any(|l| l.trim() == want)
                },
            ),
        };
        let status = match &self.freezer {
            Some(Freezer::V2(d)) => d.join("cgroup.events"),
            _ => file.clone(),
        };
        let started = std::time::Instant::now();
        loop {
            // v1 may stay FREEZING while a task is busy in the kernel:
            // writing FROZEN again retries it.
            std::fs::write(&file, value)?;
            if settled(&std::fs::read_to_string(&status)?, frozen) {
                return Ok(());
            }
            if started.elapsed() > FREEZE_TIMEOUT {
                return Err(std::io::Error::other(format!(
                    "the cgroup did not settle {} within {FREEZE_TIMEOUT:?}",
                    if frozen { "frozen" } else { "thawed" }
                )));
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        // The processes are dead (the pid namespace went with the anchor),
        // but the kernel may take a moment to empty the group.
        for d in &self.dirs {
            for _ in 0..50 {
                if std::fs::remove_dir(d).is_ok() || !d.exists() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
    }
}

/// `name` in `PATH` or the system directories (`/sbin` is not on every `PATH`).
pub fn find(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_zombie_server_is_dead() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = std::ffi::OsString::from(child.id().to_string());
        // Exited, not reaped yet: a zombie.
        while std::fs::read_to_string(format!("/proc/{}/stat", child.id()))
            .is_ok_and(|s| !s.contains(") Z"))
        {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(!super::alive(&pid));
        child.wait().unwrap();
        assert!(!super::alive(&pid));
        assert!(super::alive(std::ffi::OsStr::new(
            &std::process::id().to_string()
        )));
    }
}
