//! What servers can leave on the host once their sandboxes are gone: the
//! sandboxes' host processes (bubblewrap, envd, slirp4netns), mounts and
//! loop devices under a data directory, and cgroups. A clean stop leaves
//! none of them and a server's start sweeps what a killed one left; this
//! is the check that says so (the load generator's soak, tests).

use std::path::Path;

/// The host processes of a sandbox, by their kernel names.
const SANDBOX_PROCESSES: &[&str] = &["bwrap", "envd", "e2b-envd", "slirp4netns"];

/// The roots under which servers make their cgroups.
const CGROUP_ROOTS: &[&str] = &[
    "/sys/fs/cgroup/memory/e2b-local",
    "/sys/fs/cgroup/pids/e2b-local",
    "/sys/fs/cgroup/cpu/e2b-local",
    "/sys/fs/cgroup/cpuacct/e2b-local",
    "/sys/fs/cgroup/freezer/e2b-local",
    "/sys/fs/cgroup/e2b-local",
];

/// What is left, each entry saying what and where.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Leftovers {
    /// Sandbox processes still running (`pid name`).
    pub processes: Vec<String>,
    /// Mount points under the data directory.
    pub mounts: Vec<String>,
    /// Loop devices backed by files under the data directory.
    pub loop_devices: Vec<String>,
    /// Sandbox cgroups (any server's), and groups of servers that are gone.
    pub cgroups: Vec<String>,
}

impl Leftovers {
    /// How many things are left.
    pub fn count(&self) -> usize {
        self.processes.len() + self.mounts.len() + self.loop_devices.len() + self.cgroups.len()
    }
}

impl std::fmt::Display for Leftovers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} processes, {} mounts, {} loop devices, {} cgroups",
            self.processes.len(),
            self.mounts.len(),
            self.loop_devices.len(),
            self.cgroups.len()
        )
    }
}

/// What is left on the host of sandboxes: processes named as a sandbox's
/// whose command line (or their parent's) names `data_dir`, or that sit
/// in a server's cgroup; mounts and loop devices under `data_dir`; and
/// every sandbox cgroup of every server on the machine, with the groups
/// of servers whose process is gone. Call it when no sandbox should exist.
pub fn leftovers(data_dir: &Path) -> Leftovers {
    let dir = data_dir.to_string_lossy().into_owned();
    let mut left = Leftovers::default();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let proc = entry.path();
        let Ok(name) = std::fs::read_to_string(proc.join("comm")) else {
            continue;
        };
        let name = name.trim();
        if !SANDBOX_PROCESSES.contains(&name) {
            continue;
        }
        let cmdline = |p: &Path| std::fs::read(p.join("cmdline")).unwrap_or_default();
        let parent = crate::procfs::stat_fields(&proc)
            .and_then(|mut fields| (fields.len() > 1).then(|| fields.swap_remove(1)))
            .map(|ppid| Path::new("/proc").join(ppid));
        let names_dir = |bytes: Vec<u8>| String::from_utf8_lossy(&bytes).contains(&dir);
        let ours = names_dir(cmdline(&proc))
            || parent.is_some_and(|p| names_dir(cmdline(&p)))
            || std::fs::read_to_string(proc.join("cgroup"))
                .is_ok_and(|c| c.contains("/e2b-local/"));
        if ours {
            left.processes
                .push(format!("{} {name}", entry.file_name().to_string_lossy()));
        }
    }
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    for line in mountinfo.lines() {
        if let Some(point) = line.split(' ').nth(4) {
            if point.starts_with(&dir) {
                left.mounts.push(point.to_string());
            }
        }
    }
    for entry in std::fs::read_dir("/sys/block")
        .into_iter()
        .flatten()
        .flatten()
    {
        let backing = std::fs::read_to_string(entry.path().join("loop/backing_file"));
        if let Ok(file) = backing {
            if file.trim().starts_with(&dir) {
                let device = entry.file_name().to_string_lossy().into_owned();
                left.loop_devices.push(format!("{device}: {}", file.trim()));
            }
        }
    }
    for root in CGROUP_ROOTS {
        for server in std::fs::read_dir(root).into_iter().flatten().flatten() {
            if !server.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let alive = Path::new("/proc").join(server.file_name()).exists();
            let mut sandboxes = 0;
            for sandbox in std::fs::read_dir(server.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                if sandbox.file_type().is_ok_and(|t| t.is_dir()) {
                    sandboxes += 1;
                    left.cgroups.push(sandbox.path().display().to_string());
                }
            }
            if !alive && sandboxes == 0 {
                left.cgroups.push(server.path().display().to_string());
            }
        }
    }
    left
}
