//! The churn and crash soak, and the idle scale.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use crate::round::{proc_stats, run_round, Round};
use crate::{encode_envelope, one_life, Error, Sandbox, Server};

/// Files in the state directory beyond what a server keeps by design (its
/// lock, its API key, envd's binary, the sandboxes' root base, the
/// snapshots', records' and disks' directories, each empty of anything but
/// what it keeps).
pub(crate) fn stray_files(state: &Path) -> Vec<String> {
    let by_design = [
        ".lock",
        ".api-key",
        ".envd",
        ".root-base",
        ".snapshots",
        ".records",
        ".disks",
    ];
    let mut stray = Vec::new();
    for entry in std::fs::read_dir(state).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !by_design.contains(&name.as_str()) {
            stray.push(name);
        } else if [".records", ".disks"].contains(&name.as_str()) {
            for inner in std::fs::read_dir(entry.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                stray.push(format!("{name}/{}", inner.file_name().to_string_lossy()));
            }
        }
    }
    stray
}

/// The soak: what it served and what was left.
pub(crate) struct Soak {
    pub(crate) label: String,
    pub(crate) rounds: Vec<Round>,
    pub(crate) leftovers: e2b_local::Leftovers,
    pub(crate) stray: Vec<String>,
    pub(crate) fds: (u64, u64),
    /// After one sandbox, after a first round of 100, at the end.
    pub(crate) rss: (u64, u64, u64),
}

/// `lives` sandboxes at `concurrency`; with `crash`, the server is killed
/// with `kill -9` half-way and a new one started on the same state
/// directory serves the second half.
pub(crate) async fn soak(lives: usize, concurrency: usize, crash: bool) -> Result<Soak, Error> {
    let state = tempfile::Builder::new().prefix("e2b-soak-").tempdir()?;
    let first = Server::start(state.path(), 256)?;
    // Warm: the first sandbox's start pays for envd's pages.
    let _ = one_life(&first.endpoint, 0, true).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let start = proc_stats(first.endpoint.pid);
    // And a first round at the same concurrency: what the server keeps
    // for that many at once (the runtime's and the allocator's high-water
    // marks) is its steady state, against which a leak would show.
    let warm_round = run_round(&first.endpoint, 100, concurrency, true, None).await;
    let warm = warm_round.after;
    let mut rounds = vec![warm_round];
    let last = if crash {
        let half = lives / 2;
        let endpoint = first.endpoint.clone();
        // A worker kills the process half-way through the first half.
        let process = Arc::new(Mutex::new(Some(first)));
        let kill = (half / 2, Arc::clone(&process));
        rounds.push(run_round(&endpoint, half, concurrency, true, Some(kill)).await);
        if let Some(first) = process.lock().ok().and_then(|mut p| p.take()) {
            first.kill_9();
        }
        let second = Server::start(state.path(), 256)?;
        rounds.push(run_round(&second.endpoint, lives - half, concurrency, true, None).await);
        second
    } else {
        rounds.push(run_round(&first.endpoint, lives, concurrency, true, None).await);
        first
    };
    tokio::time::sleep(Duration::from_secs(2)).await;
    let end = proc_stats(last.endpoint.pid);
    let stray = stray_files(state.path());
    let while_up = e2b_local::leftovers(state.path());
    last.stop();
    let mut leftovers = e2b_local::leftovers(state.path());
    // What the live server held with no sandbox, and what its stop left.
    leftovers.processes.extend(while_up.processes);
    leftovers.processes.sort();
    leftovers.processes.dedup();
    leftovers.cgroups.extend(while_up.cgroups);
    leftovers.cgroups.sort();
    leftovers.cgroups.dedup();
    Ok(Soak {
        label: if crash {
            format!("100 + {lives} sandboxes at concurrency {concurrency}, `kill -9` of the server half-way through the {lives}, a restart on the same state directory")
        } else {
            format!("100 + {lives} sandboxes at concurrency {concurrency}")
        },
        rounds,
        leftovers,
        stray,
        fds: (start.fds, end.fds),
        rss: (start.rss_kib, warm.rss_kib, end.rss_kib),
    })
}

/// Idle scale: `count` sandboxes alive at once (each has run a command),
/// the PSS of their host processes per sandbox, and a new sandbox's create
/// and first command meanwhile.
pub(crate) struct Idle {
    pub(crate) count: usize,
    pub(crate) pss_per_sandbox_kib: u64,
    pub(crate) processes_per_sandbox: f64,
    pub(crate) create: Vec<Duration>,
    pub(crate) first: Vec<Duration>,
    pub(crate) server_rss_kib: u64,
}

pub(crate) async fn idle(count: usize) -> Result<Idle, Error> {
    let state = tempfile::Builder::new().prefix("e2b-idle-").tempdir()?;
    let process = Server::start(state.path(), count + 16)?;
    let server = &process.endpoint;
    let made = Mutex::new(Vec::new());
    let next = AtomicUsize::new(0);
    let worker = || async {
        while next.fetch_add(1, Ordering::Relaxed) < count {
            let resp = server
                .api(reqwest::Method::POST, "/v2/sandboxes")
                .json(&json!({"templateID": "base", "timeout": 900}))
                .send()
                .await;
            let Ok(resp) = resp else { continue };
            let Ok(body) = resp.json::<Value>().await else {
                continue;
            };
            let sandbox = Sandbox {
                id: body["sandboxID"].as_str().unwrap_or_default().into(),
                token: body["envdAccessToken"].as_str().unwrap_or_default().into(),
            };
            let command = json!({"process": {"cmd": "/bin/true"}});
            let _ = server
                .sandbox(&sandbox, reqwest::Method::POST, "/process.Process/Start")
                .header("content-type", "application/connect+json")
                .body(encode_envelope(0, command.to_string().as_bytes()))
                .send()
                .await
                .map(|r| r.bytes());
            if let Ok(mut m) = made.lock() {
                m.push(sandbox);
            }
        }
    };
    futures_util::future::join_all((0..8).map(|_| worker())).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (pss, processes) = sandbox_pss(server.pid);
    let alive = made.lock().map(|m| m.len()).unwrap_or(0).max(1);
    let mut create = Vec::new();
    let mut first = Vec::new();
    for n in 0..5 {
        if let Ok(life) = one_life(server, 100_000 + n, true).await {
            create.push(life.create);
            first.push(life.first);
        }
    }
    let server_rss_kib = proc_stats(server.pid).rss_kib;
    process.stop();
    Ok(Idle {
        count: alive,
        pss_per_sandbox_kib: pss / alive as u64,
        processes_per_sandbox: processes as f64 / alive as f64,
        create,
        first,
        server_rss_kib,
    })
}

/// PSS (KiB) of every process descending from `server` but the server,
/// and how many there are: the sandboxes' host processes.
pub(crate) fn sandbox_pss(server: u32) -> (u64, usize) {
    let mut parents: BTreeMap<u32, u32> = BTreeMap::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let ppid = std::fs::read_to_string(entry.path().join("stat"))
            .ok()
            .and_then(|s| {
                s.rsplit(')')
                    .next()?
                    .split_whitespace()
                    .nth(1)?
                    .parse()
                    .ok()
            });
        if let Some(ppid) = ppid {
            parents.insert(pid, ppid);
        }
    }
    let descends = |mut pid: u32| {
        while let Some(&parent) = parents.get(&pid) {
            if parent == server {
                return true;
            }
            if parent <= 1 {
                return false;
            }
            pid = parent;
        }
        false
    };
    let mut total = 0;
    let mut count = 0;
    for &pid in parents.keys() {
        if pid == server || !descends(pid) {
            continue;
        }
        let rollup =
            std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap_or_default();
        let pss: u64 = rollup
            .lines()
            .find_map(|l| l.strip_prefix("Pss:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0);
        total += pss;
        count += 1;
    }
    (total, count)
}
