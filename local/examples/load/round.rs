//! One round of lives at a given concurrency, and what it measured.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::{failure_kind, one_life, Endpoint, Server, SETTLE};

/// The server process's resident memory (KiB), descriptors and threads.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ProcStats {
    pub(crate) rss_kib: u64,
    pub(crate) fds: u64,
    pub(crate) threads: u64,
}

pub(crate) fn proc_stats(pid: u32) -> ProcStats {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    ProcStats {
        rss_kib: field("VmRSS:"),
        threads: field("Threads:"),
        fds: std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count() as u64),
    }
}

/// One round: its settings and what it measured.
pub(crate) struct Round {
    pub(crate) sandboxes: usize,
    pub(crate) concurrency: usize,
    pub(crate) internet: bool,
    pub(crate) served: usize,
    pub(crate) failures: BTreeMap<String, usize>,
    pub(crate) create: Vec<Duration>,
    pub(crate) first: Vec<Duration>,
    pub(crate) before: ProcStats,
    pub(crate) peak: ProcStats,
    pub(crate) after: ProcStats,
    pub(crate) wall: Duration,
}

impl Round {
    pub(crate) fn header() -> String {
        "| concurrency | internet | served | failed | create p50 / p99 | first command p50 / p99 | server RSS before / peak / after | descriptors before / peak / after | threads before / peak / after | wall |\n|---|---|---|---|---|---|---|---|---|---|".into()
    }

    pub(crate) fn row(&self) -> String {
        let failed: usize = self.failures.values().sum();
        format!(
            "| {} | {} | {}/{} | {} | {} / {} | {} / {} | {:.1} / {:.1} / {:.1} MiB | {} / {} / {} | {} / {} / {} | {:.1} s |",
            self.concurrency,
            if self.internet { "on" } else { "off" },
            self.served,
            self.sandboxes,
            failed,
            ms(percentile(&self.create, 50)),
            ms(percentile(&self.create, 99)),
            ms(percentile(&self.first, 50)),
            ms(percentile(&self.first, 99)),
            mib(self.before.rss_kib),
            mib(self.peak.rss_kib),
            mib(self.after.rss_kib),
            self.before.fds,
            self.peak.fds,
            self.after.fds,
            self.before.threads,
            self.peak.threads,
            self.after.threads,
            self.wall.as_secs_f64(),
        )
    }
}

pub(crate) fn percentile(samples: &[Duration], p: usize) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() * p).div_ceil(100))
        .saturating_sub(1)
        .min(sorted.len() - 1)]
}

pub(crate) fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

pub(crate) fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Runs `sandboxes` lives, `concurrency` at a time. `kill_at`: after that
/// many creates began, the server is killed with `kill -9` (the round's
/// other lives fail, and are not counted as the server's failures).
pub(crate) async fn run_round(
    server: &Endpoint,
    sandboxes: usize,
    concurrency: usize,
    internet: bool,
    kill_at: Option<(usize, Arc<Mutex<Option<Server>>>)>,
) -> Round {
    let pid = server.pid;
    let before = proc_stats(pid);
    let peak = Arc::new(Mutex::new(before));
    let sampling = {
        let peak = Arc::clone(&peak);
        tokio::spawn(async move {
            loop {
                let now = proc_stats(pid);
                if let Ok(mut p) = peak.lock() {
                    p.rss_kib = p.rss_kib.max(now.rss_kib);
                    p.fds = p.fds.max(now.fds);
                    p.threads = p.threads.max(now.threads);
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };
    let next = AtomicUsize::new(0);
    let results = Mutex::new(Vec::new());
    let started = Instant::now();
    let worker = || async {
        loop {
            let n = next.fetch_add(1, Ordering::Relaxed);
            if n >= sandboxes {
                return;
            }
            if let Some((at, slot)) = &kill_at {
                if n == *at {
                    if let Some(s) = slot.lock().ok().and_then(|mut s| s.take()) {
                        s.kill_9();
                    }
                }
            }
            let outcome = one_life(server, n, internet).await;
            if let Ok(mut r) = results.lock() {
                r.push(outcome);
            }
        }
    };
    futures_util::future::join_all((0..concurrency).map(|_| worker())).await;
    let wall = started.elapsed();
    // Teardowns run in the background, and the runtime's blocking threads
    // (the starts' and teardowns') idle out after 10 s: the server's
    // figures after both.
    tokio::time::sleep(SETTLE).await;
    sampling.abort();
    let after = proc_stats(pid);
    let mut round = Round {
        sandboxes,
        concurrency,
        internet,
        served: 0,
        failures: BTreeMap::new(),
        create: Vec::new(),
        first: Vec::new(),
        before,
        peak: peak.lock().map(|p| *p).unwrap_or_default(),
        after,
        wall,
    };
    for outcome in results.into_inner().unwrap_or_default() {
        match outcome {
            Ok(life) => {
                round.served += 1;
                round.create.push(life.create);
                round.first.push(life.first);
            }
            Err(e) => *round.failures.entry(failure_kind(&e)).or_default() += 1,
        }
    }
    round
}
