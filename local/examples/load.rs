//! Many at once: a load generator for the local server, which it drives
//! through E2B's protocol as the SDKs do (create, one command, a file
//! written and read back, kill), the server in a child process so it can
//! be measured from outside and killed with `kill -9`.
//!
//! ```text
//! cargo run --release -p e2b-local --example load -- [--sandboxes N] [--concurrency W]
//!     [--internet on|off]          one round, printed
//! cargo run --release -p e2b-local --example load -- --report [--quick] [OUT]
//!     the load table (concurrency 1, 8, 32; internet on and off), the churn
//!     and crash soak and the idle scale, written into local/BENCHMARKS.md
//! ```
//!
//! A round prints what was served and what failed (by error), p50 and p99
//! of the create and of the first command, and the server's RSS, open
//! descriptors and threads before, at peak and after. The soak counts what
//! is left on the host afterwards ([`e2b_local::leftovers`]: sandbox
//! processes, mounts, loop devices, cgroups), the server's descriptors and
//! RSS against where they started, and the files in its state directory
//! beyond what it keeps by design. Its own crate would have been the bench
//! crate's, but that one builds wasmtime: this measures the server alone.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use e2b_wire::connect::encode_envelope;
use serde_json::{json, Value};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The hidden flag that makes this program the child server.
const SERVE: &str = "--serve-child";

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(SERVE) {
        return serve_child(&args[1..]).await;
    }
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    if args.iter().any(|a| a == "--report") {
        let quick = args.iter().any(|a| a == "--quick");
        let out = args
            .iter()
            .rev()
            .find(|a| !a.starts_with("--"))
            .filter(|a| a.ends_with(".md"))
            .map_or_else(|| PathBuf::from("local/BENCHMARKS.md"), PathBuf::from);
        return report(quick, &out).await;
    }
    let sandboxes = flag("--sandboxes").map_or(Ok(64), |s| s.parse())?;
    let concurrency = flag("--concurrency").map_or(Ok(8), |s| s.parse())?;
    let internet = flag("--internet").is_none_or(|i| i != "off");
    let state = tempfile::Builder::new().prefix("e2b-load-").tempdir()?;
    let server = Server::start(state.path(), 256)?;
    eprintln!("{}", server.isolation);
    let round = run_round(&server.endpoint, sandboxes, concurrency, internet, None).await;
    server.stop();
    println!("{}", Round::header());
    println!("{}", round.row());
    for (error, n) in &round.failures {
        println!("- {n} × {error}");
    }
    Ok(())
}

/// The child: a persistent server on the state directory it is given,
/// with room for `max` sandboxes, until SIGTERM.
async fn serve_child(args: &[String]) -> Result<(), Error> {
    let state = args.first().ok_or("the child needs a state directory")?;
    let max = args.get(1).map_or(Ok(100), |m| m.parse())?;
    let opts = e2b_local::Options {
        state_dir: Some(state.into()),
        max_sandboxes: max,
        ..Default::default()
    };
    e2b_local::serve_forever(opts, |server| {
        println!("ISOLATION {}", server.isolation());
        println!("SERVING {} {}", server.url(), server.api_key());
    })
    .await?;
    Ok(())
}

/// Where the server answers, and a client for it.
#[derive(Clone)]
struct Endpoint {
    url: String,
    key: String,
    /// The server's process (its figures are read from `/proc`).
    pid: u32,
    http: reqwest::Client,
}

impl Endpoint {
    fn api(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.url))
            .header("X-API-KEY", &self.key)
    }

    fn sandbox(
        &self,
        sandbox: &Sandbox,
        method: reqwest::Method,
        path: &str,
    ) -> reqwest::RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.url))
            .header("E2b-Sandbox-Id", &sandbox.id)
            .header("E2b-Sandbox-Port", "49983")
            .header("X-Access-Token", &sandbox.token)
    }
}

/// The server, a child process.
struct Server {
    child: Child,
    endpoint: Endpoint,
    isolation: String,
}

impl Server {
    fn start(state: &Path, max: usize) -> Result<Server, Error> {
        let mut child = Command::new(std::env::current_exe()?)
            .arg(SERVE)
            .arg(state)
            .arg(max.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let mut out = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let mut isolation = String::new();
        let mut line = String::new();
        loop {
            line.clear();
            if out.read_line(&mut line)? == 0 {
                return Err("the server did not start".into());
            }
            if let Some(rest) = line.trim().strip_prefix("ISOLATION ") {
                isolation = rest.to_string();
            }
            if let Some(rest) = line.trim().strip_prefix("SERVING ") {
                let (url, key) = rest.split_once(' ').ok_or("a bad SERVING line")?;
                let http = reqwest::Client::builder()
                    .no_proxy()
                    .pool_max_idle_per_host(64)
                    .build()?;
                let endpoint = Endpoint {
                    url: url.into(),
                    key: key.into(),
                    pid: child.id(),
                    http,
                };
                return Ok(Server {
                    child,
                    endpoint,
                    isolation,
                });
            }
        }
    }

    fn kill_9(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, and the wait for its clean stop.
    fn stop(mut self) {
        if let Some(pid) = rustix::process::Pid::from_raw(self.child.id() as i32) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        let _ = self.child.wait();
    }
}

struct Sandbox {
    id: String,
    token: String,
}

/// How long one sandbox's create and first command took.
struct Life {
    create: Duration,
    first: Duration,
}

/// One sandbox's life, as an SDK user lives it; what failed, if anything.
async fn one_life(server: &Endpoint, n: usize, internet: bool) -> Result<Life, String> {
    let started = Instant::now();
    let resp = server
        .api(reqwest::Method::POST, "/v2/sandboxes")
        .json(&json!({"templateID": "base", "allow_internet_access": internet, "timeout": 300}))
        .send()
        .await
        .map_err(|e| format!("create: {}", error_chain(&e)))?;
    let status = resp.status();
    let body: Value = resp.json().await.map_err(|e| format!("create: {e}"))?;
    if status != 201 {
        return Err(format!("create: {status} {}", body["message"]));
    }
    let create = started.elapsed();
    let sandbox = Sandbox {
        id: body["sandboxID"].as_str().unwrap_or_default().into(),
        token: body["envdAccessToken"].as_str().unwrap_or_default().into(),
    };
    let started = Instant::now();
    let command = json!({"process": {"cmd": "/bin/sh", "args": ["-c", format!("echo {n}")]}});
    let resp = server
        .sandbox(&sandbox, reqwest::Method::POST, "/process.Process/Start")
        .header("content-type", "application/connect+json")
        .body(encode_envelope(0, command.to_string().as_bytes()))
        .send()
        .await
        .map_err(|e| format!("command: {}", error_chain(&e)))?;
    let status = resp.status();
    let bytes = resp.bytes().await.map_err(|e| format!("command: {e}"))?;
    if status != 200 || !String::from_utf8_lossy(&bytes).contains("\"end\"") {
        return Err(format!(
            "command: {status} {}",
            String::from_utf8_lossy(&bytes)
        ));
    }
    let first = started.elapsed();
    let path = format!("/files?path=/home/user/{n}.txt");
    let written = server
        .sandbox(&sandbox, reqwest::Method::POST, &path)
        .header("content-type", "application/octet-stream")
        .body("round trip")
        .send()
        .await
        .map_err(|e| format!("write: {}", error_chain(&e)))?;
    if !written.status().is_success() {
        return Err(format!("write: {}", written.status()));
    }
    let read = server
        .sandbox(&sandbox, reqwest::Method::GET, &path)
        .send()
        .await
        .map_err(|e| format!("read: {}", error_chain(&e)))?;
    if read.text().await.unwrap_or_default() != "round trip" {
        return Err("read: not what was written".into());
    }
    let killed = server
        .api(
            reqwest::Method::DELETE,
            &format!("/sandboxes/{}", sandbox.id),
        )
        .send()
        .await
        .map_err(|e| format!("kill: {}", error_chain(&e)))?;
    if killed.status() != 204 {
        return Err(format!("kill: {}", killed.status()));
    }
    Ok(Life { create, first })
}

/// An error with its causes, for the failure table.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// Sandbox ids and numbers out of a message, so the same failure groups.
fn failure_kind(message: &str) -> String {
    message
        .split(' ')
        .map(|w| {
            if w.chars().any(|c| c.is_ascii_digit()) && w.len() > 3 {
                "…"
            } else {
                w
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(160)
        .collect()
}

/// The server process's resident memory (KiB), descriptors and threads.
#[derive(Debug, Clone, Copy, Default)]
struct ProcStats {
    rss_kib: u64,
    fds: u64,
    threads: u64,
}

fn proc_stats(pid: u32) -> ProcStats {
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
struct Round {
    sandboxes: usize,
    concurrency: usize,
    internet: bool,
    served: usize,
    failures: BTreeMap<String, usize>,
    create: Vec<Duration>,
    first: Vec<Duration>,
    before: ProcStats,
    peak: ProcStats,
    after: ProcStats,
    wall: Duration,
}

impl Round {
    fn header() -> String {
        "| concurrency | internet | served | failed | create p50 / p99 | first command p50 / p99 | server RSS before / peak / after | descriptors before / peak / after | threads before / peak / after | wall |\n|---|---|---|---|---|---|---|---|---|---|".into()
    }

    fn row(&self) -> String {
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

fn percentile(samples: &[Duration], p: usize) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() * p).div_ceil(100))
        .saturating_sub(1)
        .min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Runs `sandboxes` lives, `concurrency` at a time. `kill_at`: after that
/// many creates began, the server is killed with `kill -9` (the round's
/// other lives fail, and are not counted as the server's failures).
async fn run_round(
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
    // Teardowns run in the background: the server's figures after them.
    tokio::time::sleep(Duration::from_secs(2)).await;
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

/// Files in the state directory beyond what a server keeps by design (its
/// lock, envd's binary, the snapshots', records' and disks' directories,
/// each empty of anything but what it keeps).
fn stray_files(state: &Path) -> Vec<String> {
    let by_design = [".lock", ".envd", ".snapshots", ".records", ".disks"];
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
struct Soak {
    label: String,
    rounds: Vec<Round>,
    leftovers: e2b_local::Leftovers,
    stray: Vec<String>,
    fds: (u64, u64),
    rss: (u64, u64),
}

/// `lives` sandboxes at `concurrency`; with `crash`, the server is killed
/// with `kill -9` half-way and a new one started on the same state
/// directory serves the second half.
async fn soak(lives: usize, concurrency: usize, crash: bool) -> Result<Soak, Error> {
    let state = tempfile::Builder::new().prefix("e2b-soak-").tempdir()?;
    let first = Server::start(state.path(), 256)?;
    // Warm: the first sandbox's start pays for envd's pages.
    let _ = one_life(&first.endpoint, 0, true).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let start = proc_stats(first.endpoint.pid);
    let mut rounds = Vec::new();
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
            format!("{lives} sandboxes at concurrency {concurrency}, `kill -9` of the server half-way, a restart on the same state directory")
        } else {
            format!("{lives} sandboxes at concurrency {concurrency}")
        },
        rounds,
        leftovers,
        stray,
        fds: (start.fds, end.fds),
        rss: (start.rss_kib, end.rss_kib),
    })
}

/// Idle scale: `count` sandboxes alive at once (each has run a command),
/// the PSS of their host processes per sandbox, and a new sandbox's create
/// and first command meanwhile.
struct Idle {
    count: usize,
    pss_per_sandbox_kib: u64,
    processes_per_sandbox: f64,
    create: Vec<Duration>,
    first: Vec<Duration>,
    server_rss_kib: u64,
}

async fn idle(count: usize) -> Result<Idle, Error> {
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
fn sandbox_pss(server: u32) -> (u64, usize) {
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

/// The load table, the soak and the idle scale, written as the `## Many
/// at once` section of `out` (replacing the last one).
async fn report(quick: bool, out: &Path) -> Result<(), Error> {
    let (per_round, soak_lives, idle_count) = if quick {
        (24, 100, 40)
    } else {
        (128, 1000, 200)
    };
    let mut text = String::new();
    use std::fmt::Write as _;
    let state = tempfile::Builder::new().prefix("e2b-load-").tempdir()?;
    let server = Server::start(state.path(), 256)?;
    let isolation = server.isolation.clone();
    let mut rounds = Vec::new();
    for internet in [true, false] {
        for concurrency in [1, 8, 32] {
            let n = if concurrency == 1 {
                per_round / 4
            } else {
                per_round
            };
            eprintln!("load: {n} sandboxes at concurrency {concurrency}, internet {internet}");
            rounds.push(run_round(&server.endpoint, n, concurrency, internet, None).await);
        }
    }
    server.stop();
    eprintln!("load: soak");
    let churn = soak(soak_lives, 16, false).await?;
    eprintln!("load: crash soak");
    let crash = soak(soak_lives, 32, true).await?;
    eprintln!("load: {idle_count} idle sandboxes");
    let idle = idle(idle_count).await?;

    writeln!(text, "## Many at once\n")?;
    writeln!(
        text,
        "Generated by `cargo run --release -p e2b-local --example load -- --report{}`, one run, on {} cores (load average {} when it started). The server is a child process (a persistent server on a state directory of its own, `max_sandboxes` 256); each sandbox lives as an SDK user's does: `POST /v2/sandboxes`, one command (`Process/Start` to its end), a file written and read back through `/files`, `DELETE`. **create** is the create call (it returns once envd answers, and with internet once slirp4netns is up); **first command** the first `Process/Start`. Layers: {isolation}.\n",
        if quick { " --quick" } else { "" },
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        std::fs::read_to_string("/proc/loadavg").unwrap_or_default().split(' ').next().unwrap_or("?"),
    )?;
    writeln!(text, "{}", Round::header())?;
    for round in &rounds {
        writeln!(text, "{}", round.row())?;
    }
    let failures: Vec<String> = rounds
        .iter()
        .flat_map(|r| r.failures.iter().map(|(e, n)| format!("- {n} × {e}")))
        .collect();
    if !failures.is_empty() {
        writeln!(text, "\nFailures:\n{}", failures.join("\n"))?;
    }
    let p50_at_1 = rounds
        .iter()
        .find(|r| r.concurrency == 1 && r.internet)
        .map(|r| percentile(&r.create, 50))
        .unwrap_or_default();
    let p99_at_8 = rounds
        .iter()
        .find(|r| r.concurrency == 8 && r.internet)
        .map(|r| percentile(&r.create, 99))
        .unwrap_or_default();
    let failed: usize = rounds
        .iter()
        .map(|r| r.failures.values().sum::<usize>())
        .sum();
    writeln!(
        text,
        "\n| target | measured | |\n|---|---|---|\n| 0 failures at concurrency 1, 8 and 32, internet on and off | {failed} | {} |\n| p99 create at concurrency 8 ≤ 3× p50 at concurrency 1 (internet on) | {} against {} ({:.2}×) | {} |",
        if failed == 0 { "met" } else { "missed" },
        ms(p99_at_8),
        ms(p50_at_1),
        p99_at_8.as_secs_f64() / p50_at_1.as_secs_f64().max(1e-9),
        if p99_at_8 <= p50_at_1 * 3 { "met" } else { "missed" },
    )?;
    writeln!(text, "\n### Churn and crash soak\n")?;
    writeln!(text, "What is left afterwards ([`e2b_local::leftovers`]): the sandboxes' host processes (`bwrap`, envd, `slirp4netns`), mounts and loop devices under the state directory, sandbox cgroups and dead servers' groups; files in the state directory beyond its lock, envd's binary and the snapshots' directory; the server's descriptors and RSS against where they were after one warm-up sandbox.\n")?;
    writeln!(text, "| soak | served | leftovers | stray files | server descriptors start → end | server RSS start → end |\n|---|---|---|---|---|---|")?;
    for s in [&churn, &crash] {
        let served: usize = s.rounds.iter().map(|r| r.served).sum();
        let total: usize = s.rounds.iter().map(|r| r.sandboxes).sum();
        writeln!(
            text,
            "| {} | {served}/{total} | {} ({}) | {} | {} → {} | {:.1} → {:.1} MiB ({:+.1}%) |",
            s.label,
            s.leftovers.count(),
            s.leftovers,
            s.stray.len(),
            s.fds.0,
            s.fds.1,
            mib(s.rss.0),
            mib(s.rss.1),
            (s.rss.1 as f64 / s.rss.0.max(1) as f64 - 1.0) * 100.0,
        )?;
    }
    writeln!(text, "\nIn the crash soak the lives under way when the server was killed fail (connection refused or reset): they are counted in its first round below, not as the server's failures.\n")?;
    writeln!(text, "{}", Round::header())?;
    for s in [&churn, &crash] {
        for r in &s.rounds {
            writeln!(text, "{}", r.row())?;
        }
    }
    writeln!(text, "\n### Idle scale\n")?;
    writeln!(
        text,
        "{} sandboxes alive at once, each after one command, with internet: **{:.2} MiB PSS per idle sandbox** (the PSS of every process descending from the server, {:.1} a sandbox: bubblewrap, its init, envd, slirp4netns; shared pages split between them), the server's own RSS {:.1} MiB. A new sandbox meanwhile: create p50 {}, first command p50 {} ({} samples).",
        idle.count,
        mib(idle.pss_per_sandbox_kib),
        idle.processes_per_sandbox,
        mib(idle.server_rss_kib),
        ms(percentile(&idle.create, 50)),
        ms(percentile(&idle.first, 50)),
        idle.create.len(),
    )?;
    print!("{text}");
    let old = std::fs::read_to_string(out).unwrap_or_default();
    let section = "## Many at once";
    let new = match old.find(section) {
        Some(at) => {
            let rest = &old[at + section.len()..];
            let end = rest
                .find("\n## ")
                .map_or(old.len(), |i| at + section.len() + i + 1);
            format!("{}{text}{}", &old[..at], &old[end..])
        }
        None => format!("{}\n{text}", old.trim_end()),
    };
    std::fs::write(out, new)?;
    eprintln!("load: wrote {}", out.display());
    Ok(())
}
