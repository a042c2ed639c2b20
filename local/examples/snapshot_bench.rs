//! What snapshots and forks cost: the time of a snapshot, a fork and a
//! create from a snapshot for a sandbox with 100 MiB written, and the disk
//! each copy takes (allocated blocks against its apparent size). Prints the
//! table and writes it as the `## Snapshots and forks` section of
//! `local/BENCHMARKS.md` (or `OUT`), keeping the rest of the file:
//! `cargo run --release -p e2b-local --example snapshot_bench [-- RUNS [OUT]]`.
//!
//! Needs a server with disk images (run as root, with loop devices).

#[path = "common/bench_file.rs"]
mod bench_file;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bench_file::percentile;

use e2b_local::{LocalServer, Options};
use e2b_wire::connect::encode_envelope;
use serde_json::{json, Value};

const SECTION: &str = "## Snapshots and forks";

struct Bench {
    server: LocalServer,
    http: reqwest::Client,
    dir: PathBuf,
}

impl Bench {
    async fn start(
        persistent: bool,
        read_only_root: bool,
    ) -> Result<(Bench, tempfile::TempDir), Box<dyn std::error::Error>> {
        let dir = tempfile::Builder::new()
            .prefix("e2b-snapshot-bench-")
            .tempdir_in("/var/tmp")?;
        let mut opts = Options {
            read_only_root,
            ..Options::default()
        };
        if persistent {
            opts.state_dir = Some(dir.path().to_path_buf());
        } else {
            opts.data_dir = Some(dir.path().to_path_buf());
        }
        let server = LocalServer::start(opts).await?;
        let http = reqwest::Client::builder().no_proxy().build()?;
        let dir_path = dir.path().to_path_buf();
        Ok((
            Bench {
                server,
                http,
                dir: dir_path,
            },
            dir,
        ))
    }

    async fn post(
        &self,
        path: &str,
        body: Value,
    ) -> Result<(Value, Duration), Box<dyn std::error::Error>> {
        let t = Instant::now();
        let v = self
            .http
            .post(format!("{}{path}", self.server.url()))
            .header("X-API-KEY", self.server.api_key())
            .json(&body)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        Ok((v, t.elapsed()))
    }

    async fn run(&self, sandbox: &Value, script: &str) -> Result<(), Box<dyn std::error::Error>> {
        let body = json!({"process": {"cmd": "/bin/bash", "args": ["-c", script]}, "stdin": false});
        let bytes = self
            .http
            .post(format!("{}/process.Process/Start", self.server.url()))
            .header(
                "E2b-Sandbox-Id",
                sandbox["sandboxID"].as_str().unwrap_or_default(),
            )
            .header("E2b-Sandbox-Port", "49983")
            .header(
                "X-Access-Token",
                sandbox["envdAccessToken"].as_str().unwrap_or_default(),
            )
            .header("content-type", "application/connect+json")
            .body(encode_envelope(0, body.to_string().as_bytes()))
            .send()
            .await?
            .error_for_status()?
            .bytes()
            .await?;
        assert!(String::from_utf8_lossy(&bytes).contains("exited"));
        Ok(())
    }

    /// Starts a command in `sandbox` that prints a line every 2 ms, and
    /// records when each piece of its output arrives: the longest gap is
    /// how long the sandbox stood still.
    async fn ticker(
        &self,
        sandbox: &Value,
    ) -> Result<(tokio::task::JoinHandle<()>, Arc<Mutex<Vec<Instant>>>), Box<dyn std::error::Error>>
    {
        let body = json!({"process": {"cmd": "/bin/bash", "args": ["-c", "while :; do echo; sleep 0.002; done"]}, "stdin": false});
        let mut resp = self
            .http
            .post(format!("{}/process.Process/Start", self.server.url()))
            .header(
                "E2b-Sandbox-Id",
                sandbox["sandboxID"].as_str().unwrap_or_default(),
            )
            .header("E2b-Sandbox-Port", "49983")
            .header(
                "X-Access-Token",
                sandbox["envdAccessToken"].as_str().unwrap_or_default(),
            )
            .header("content-type", "application/connect+json")
            .body(encode_envelope(0, body.to_string().as_bytes()))
            .send()
            .await?
            .error_for_status()?;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&seen);
        let task = tokio::spawn(async move {
            while let Ok(Some(_)) = resp.chunk().await {
                if let Ok(mut seen) = record.lock() {
                    seen.push(Instant::now());
                }
            }
        });
        Ok((task, seen))
    }

    async fn kill(&self, sandbox: &Value) -> Result<(), Box<dyn std::error::Error>> {
        let id = sandbox["sandboxID"].as_str().unwrap_or_default();
        self.http
            .delete(format!("{}/sandboxes/{id}", self.server.url()))
            .header("X-API-KEY", self.server.api_key())
            .send()
            .await?
            .error_for_status()?;
        Ok(())
    }

    async fn delete_snapshot(&self, info: &Value) -> Result<(), Box<dyn std::error::Error>> {
        let id = info["snapshotID"]
            .as_str()
            .unwrap_or_default()
            .replace(':', "%3A");
        self.http
            .delete(format!("{}/templates/{id}", self.server.url()))
            .header("X-API-KEY", self.server.api_key())
            .send()
            .await?
            .error_for_status()?;
        Ok(())
    }

    fn snapshot_image(&self, info: &Value) -> PathBuf {
        let raw = info["snapshotID"]
            .as_str()
            .unwrap_or_default()
            .trim_end_matches(":default");
        self.dir.join(".snapshots").join(format!("{raw}.img"))
    }

    fn disk(&self, sandbox: &Value) -> PathBuf {
        let id = sandbox["sandboxID"].as_str().unwrap_or_default();
        self.dir.join(".disks").join(format!("{id}.img"))
    }
}

/// Allocated and apparent bytes of `path`.
fn sizes(path: &Path) -> (u64, u64) {
    std::fs::metadata(path).map_or((0, 0), |m| (m.blocks() * 512, m.len()))
}

#[derive(Default)]
struct Row {
    times: Vec<Duration>,
    allocated: Vec<u64>,
    apparent: u64,
    /// How long the source stood still (its longest output gap).
    still: Vec<Duration>,
}

impl Row {
    fn add(&mut self, t: Duration, (allocated, apparent): (u64, u64)) {
        self.times.push(t);
        self.allocated.push(allocated);
        self.apparent = apparent;
    }
}

/// One round: a sandbox with `mib` MiB written, snapshotted, forked once
/// and three times, and started from its snapshot.
async fn round(b: &Bench, mib: u32, rows: &mut [Row; 5]) -> Result<(), Box<dyn std::error::Error>> {
    let (source, _) = b
        .post("/v2/sandboxes", json!({"templateID": "base"}))
        .await?;
    let id = source["sandboxID"].as_str().unwrap_or_default().to_string();
    if mib > 0 {
        b.run(
            &source,
            &format!("head -c {mib}M /dev/urandom > /home/user/data"),
        )
        .await?;
    } else {
        b.run(&source, "true").await?;
    }
    let (ticker, seen) = b.ticker(&source).await?;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    let (info, t) = b
        .post(&format!("/sandboxes/{id}/snapshots"), json!({}))
        .await?;
    tokio::time::sleep(Duration::from_millis(50)).await;
    ticker.abort();
    let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
    let longest = seen
        .windows(2)
        .filter(|w| w[1] >= started)
        .map(|w| w[1] - w[0])
        .max()
        .unwrap_or_default();
    rows[0].still.push(longest);
    rows[0].add(t, sizes(&b.snapshot_image(&info)));
    // After the snapshot's freeze, what was written is on the image.
    rows[4].add(Duration::ZERO, sizes(&b.disk(&source)));
    for (count, row) in [(1u32, 1usize), (3, 2)] {
        let (forks, t) = b
            .post(&format!("/sandboxes/{id}/fork"), json!({"count": count}))
            .await?;
        let forks: Vec<Value> = forks
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .map(|f| f["sandbox"].clone())
            .collect();
        rows[row].add(t, sizes(&b.disk(&forks[0])));
        for fork in &forks {
            b.kill(fork).await?;
        }
    }
    let (started, t) = b
        .post("/v2/sandboxes", json!({"templateID": info["snapshotID"]}))
        .await?;
    rows[3].add(t, sizes(&b.disk(&started)));
    b.kill(&started).await?;
    b.kill(&source).await?;
    b.delete_snapshot(&info).await?;
    Ok(())
}

fn p(times: &mut [Duration], q: f64) -> String {
    format!("{:.1} ms", percentile(times, q).as_secs_f64() * 1e3)
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1u32 << 20))
}

fn median(values: &mut [u64]) -> u64 {
    percentile(values, 0.5)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (runs, out) = bench_file::runs_and_out(5)?;
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "unknown".into());
    let mut table = String::new();
    let mut layers = String::new();
    let setups = [
        (false, 100, false),
        (false, 100, true),
        (false, 0, false),
        (false, 0, true),
        (true, 100, false),
    ];
    for (persistent, mib_written, read_only_root) in setups {
        let (b, _dir) = Bench::start(persistent, read_only_root).await?;
        if !b.server.isolation().contains("ext4 image") {
            return Err("snapshots need disk images: run this as root, with loop devices".into());
        }
        if !read_only_root {
            layers = b.server.isolation().to_string();
        }
        let mut rows: [Row; 5] = Default::default();
        // The first round warms caches.
        let mut warm: [Row; 5] = Default::default();
        round(&b, mib_written, &mut warm).await?;
        for _ in 0..runs {
            round(&b, mib_written, &mut rows).await?;
        }
        b.server.shutdown().await;
        let server = match (persistent, read_only_root) {
            (true, _) => "persistent server (`state_dir`: the snapshot is flushed to disk)",
            (false, true) => "server without state, read-only root (`Options::read_only_root`)",
            (false, false) => "server without state",
        };
        let names = [
            "snapshot (`POST /sandboxes/{id}/snapshots`)",
            "fork, count 1",
            "fork, count 3 (frozen once, three copies)",
            "create from the snapshot",
        ];
        let source = median(&mut rows[4].allocated);
        for (name, row) in names.iter().zip(rows.iter_mut()) {
            // A persistent server's forks and creates are the same work.
            if persistent && !name.starts_with("snapshot") {
                continue;
            }
            let still = if row.still.is_empty() {
                String::new()
            } else {
                p(&mut row.still, 0.5)
            };
            table.push_str(&format!(
                "| {mib_written} MiB | {server} | {name} | {} / {} | {still} | {} of {} |\n",
                p(&mut row.times, 0.5),
                p(&mut row.times, 0.95),
                mib(median(&mut row.allocated)),
                mib(row.apparent),
            ));
        }
        table.push_str(&format!(
            "| {mib_written} MiB | {server} | (the source's own disk) | | | {} of {} |\n",
            mib(source),
            mib(rows[4].apparent)
        ));
    }
    let md = format!(
        "{SECTION}\n\n\
         Generated by `cargo run --release -p e2b-local --example snapshot_bench`; \
         {runs} rounds per row after one warm-up, on {} cores (load average {load} \
         when it started). Each round: a `base` \
         sandbox writes its data (`head -c 100M /dev/urandom` into `/home/user`), \
         then it is snapshotted, forked once, forked three times, and a sandbox is \
         started from the snapshot. A snapshot or fork freezes the sandbox's cgroup, \
         trims its disk's free blocks, freezes its filesystem (`FIFREEZE`) and copies \
         the image file, data extents only (ext4 here: no reflinks); a fork or a \
         create from a snapshot then mounts its own copy. Times are the API call's, \
         p50 / p95; **source still** is how long the snapshotted sandbox stood \
         still meanwhile (the longest gap in the output of a command printing every \
         2 ms in it, p50); the disk is each copy's allocated blocks (median) of its \
         apparent size (the sandbox's 1 GiB disk). The snapshot is the first copy \
         after the data was written: its freeze also puts that data on the image \
         (forks after it find nothing left to flush). Layers: {layers}.\n\n\
         | written | server | operation | p50 / p95 | source still | disk allocated |\n|---|---|---|---|---|---|\n{table}\n",
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0)
    );
    print!("{md}");
    bench_file::write_section(&out, SECTION, &md)?;
    Ok(())
}
