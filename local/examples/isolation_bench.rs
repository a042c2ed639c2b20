//! What isolation costs: sandbox creation, a trivial command and the
//! memory a sandbox takes on the host, on a server without isolation and on
//! one with every layer (with and without internet), side by side in one
//! run. Prints the tables and writes `local/BENCHMARKS.md` (or `OUT`),
//! keeping the hand-written `## ` sections that follow the generated part:
//! `cargo run --release -p e2b-local --example isolation_bench [-- RUNS [OUT]]`.
//!
//! Memory per sandbox is read once per sandbox, right after its first
//! command (which starts it), while it is the only sandbox alive: its host
//! processes are the children of this process (the server runs in it) that
//! appeared since just before the sandbox was created and are `bwrap`,
//! `envd`/`e2b-envd` or `slirp4netns`, plus all their descendants (bwrap's
//! init, `sleep` in the old design). Helpers the server runs and that end
//! (`mkfs.ext4`, `mount`, a previous sandbox's `umount`) are not counted;
//! neither is what the server itself holds for the sandbox. For each process
//! `Pss`, `Rss` and `Anonymous` come from `/proc/<pid>/smaps_rollup` and are
//! summed; envd's own `Rss` is reported apart. Each column is the median over
//! the sandboxes. With one sandbox alive at a time, PSS charges the sandbox
//! the whole of the file pages its processes share with nobody else (envd's
//! binary among them); with many sandboxes alive those would be split
//! between them. `Anonymous` (heap, stacks) is what no other sandbox shares.

// Its arguments only: it writes the head of the file, not a section.
#[path = "common/bench_file.rs"]
#[allow(dead_code)]
mod bench_file;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use bench_file::percentile;

use e2b_local::{Isolation, LocalServer, Options};
use e2b_wire::connect::encode_envelope;
use serde_json::{json, Value};

struct Setup {
    name: &'static str,
    isolation: Isolation,
    internet: bool,
    /// The root as it was before it became copy-on-write.
    read_only_root: bool,
}

#[derive(Default)]
struct Samples {
    create: Vec<Duration>,
    first: Vec<Duration>,
    command: Vec<Duration>,
    kill: Vec<Duration>,
    /// Per sandbox, in KiB: PSS and RSS summed over its host processes,
    /// envd's RSS (when there is an envd process).
    pss: Vec<u64>,
    rss: Vec<u64>,
    anon: Vec<u64>,
    envd_rss: Vec<u64>,
    /// The names of each sandbox's host processes (distinct lists).
    processes: Vec<String>,
}

/// The host processes a sandbox starts: their memory is its memory.
const SANDBOX_ROOTS: &[&str] = &["bwrap", "envd", "e2b-envd", "slirp4netns"];

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (runs, out) = bench_file::runs_and_out(30)?;
    let setups = [
        Setup {
            name: "no isolation (`--no-isolation`)",
            isolation: Isolation::None,
            internet: false,
            read_only_root: false,
        },
        Setup {
            name: "isolated, no internet, read-only root (`Options::read_only_root`)",
            isolation: Isolation::Bwrap,
            internet: false,
            read_only_root: true,
        },
        Setup {
            name: "isolated, no internet",
            isolation: Isolation::Bwrap,
            internet: false,
            read_only_root: false,
        },
        Setup {
            name: "isolated, internet (slirp4netns)",
            isolation: Isolation::Bwrap,
            internet: true,
            read_only_root: false,
        },
    ];
    let http = reqwest::Client::builder().no_proxy().build()?;
    let mut rows = Vec::new();
    let mut layers = String::new();
    for setup in &setups {
        let server = LocalServer::start(Options {
            isolation: setup.isolation,
            read_only_root: setup.read_only_root,
            ..Options::default()
        })
        .await?;
        if setup.isolation == Isolation::Bwrap && !setup.read_only_root {
            layers = server.isolation().to_string();
        }
        let mut s = Samples::default();
        // Rounds interleave nothing else; the first sandbox warms caches.
        for round in 0..=runs {
            let before = pids()?;
            let t = Instant::now();
            let created: Value = http
                .post(format!("{}/v2/sandboxes", server.url()))
                .header("X-API-KEY", server.api_key())
                .json(&json!({"templateID": "base", "allow_internet_access": setup.internet}))
                .send()
                .await?
                .error_for_status()?
                .json()
                .await?;
            let create = t.elapsed();
            let id = created["sandboxID"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let token = created["envdAccessToken"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let run = || async {
                let t = Instant::now();
                let body = json!({"process": {"cmd": "/bin/true", "args": []}, "stdin": false});
                let resp = http
                    .post(format!("{}/process.Process/Start", server.url()))
                    .header("E2b-Sandbox-Id", &id)
                    .header("E2b-Sandbox-Port", "49983")
                    .header("X-Access-Token", &token)
                    .header("content-type", "application/connect+json")
                    .body(encode_envelope(0, body.to_string().as_bytes()))
                    .send()
                    .await?
                    .error_for_status()?;
                let bytes = resp.bytes().await?;
                assert!(
                    String::from_utf8_lossy(&bytes).contains("exited"),
                    "the command ran"
                );
                Ok::<_, reqwest::Error>(t.elapsed())
            };
            let first = run().await?;
            let memory = sandbox_memory(&before)?;
            let mut commands = Vec::new();
            for _ in 0..5 {
                commands.push(run().await?);
            }
            let t = Instant::now();
            http.delete(format!("{}/sandboxes/{id}", server.url()))
                .header("X-API-KEY", server.api_key())
                .send()
                .await?
                .error_for_status()?;
            let kill = t.elapsed();
            if round > 0 {
                s.create.push(create);
                s.first.push(first);
                s.command.extend(commands);
                s.kill.push(kill);
                s.pss.push(memory.pss);
                s.rss.push(memory.rss);
                s.anon.push(memory.anon);
                s.envd_rss.extend(memory.envd_rss);
                if !s.processes.contains(&memory.names) {
                    s.processes.push(memory.names);
                }
            }
        }
        server.shutdown().await;
        rows.push((setup, s));
    }
    let mut md = String::from(
        "# What isolation costs (local server)\n\n\
         Generated by `cargo run --release -p e2b-local --example isolation_bench`; \
         every number below comes from the same run, the four servers one after the \
         other in one process.\n\n",
    );
    md.push_str(&format!(
        "Machine: {} cores; {runs} sandboxes per row (after one warm-up), 5 commands each. Layers in force: {layers}.\n\n",
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0)
    ));
    md.push_str(
        "- **create**: `POST /v2/sandboxes`: the host side (uid block, cgroup, disk image, directories), then the sandbox started (its namespaces, envd, with internet slirp4netns): a create returns once envd answers.\n\
         - **first command**: the first `Process/Start` of `/bin/true` to its end.\n\
         - **command**: later `/bin/true` runs, start to end.\n\
         - **kill**: `DELETE /sandboxes/{id}` (teardown finishes in the background).\n\n\
         | server | create p50 / p95 | first command p50 / p95 | command p50 / p95 | kill p50 |\n|---|---|---|---|---|\n",
    );
    for (setup, s) in &mut rows {
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            setup.name,
            p50_p95(&mut s.create),
            p50_p95(&mut s.first),
            p50_p95(&mut s.command),
            ms(percentile(&mut s.kill, 0.5))
        ));
    }
    md.push_str(
        "\n**Memory per sandbox** (host side), read right after a sandbox's first command, \
         while it is the only one alive: the children of the server that appeared for it \
         and are `bwrap`, envd or `slirp4netns`, with all their descendants; `Pss` and `Rss` \
         from `/proc/<pid>/smaps_rollup`, summed over them. Helpers that end (`mkfs.ext4`, \
         `mount`) and what the server itself keeps for the sandbox are not counted. PSS splits \
         shared pages between the processes mapping them (with one sandbox alive, envd's \
         binary is charged whole to it); RSS counts them in full; anonymous memory (heap, \
         stacks) is the part no other sandbox shares. Medians over the sandboxes.\n\n\
         | server | host processes | PSS p50 | RSS p50 | anonymous p50 | envd RSS p50 |\n\
         |---|---|---|---|---|---|\n",
    );
    let mut offline = Vec::new();
    for (setup, s) in &mut rows {
        if setup.internet && !s.processes.iter().any(|p| p.contains("slirp4netns")) {
            offline.push(setup.name);
        }
        let processes = if s.processes.iter().all(|p| p.is_empty()) {
            "none".to_string()
        } else {
            s.processes.join(" / ")
        };
        let envd = if s.envd_rss.is_empty() {
            "—".to_string()
        } else {
            mib(percentile(&mut s.envd_rss, 0.5))
        };
        md.push_str(&format!(
            "| {} | {processes} | {} | {} | {} | {envd} |\n",
            setup.name,
            mib(percentile(&mut s.pss, 0.5)),
            mib(percentile(&mut s.rss, 0.5)),
            mib(percentile(&mut s.anon, 0.5)),
        ));
    }
    for name in offline {
        md.push_str(&format!(
            "\n**Warning**: no `slirp4netns` ran for the sandboxes of \"{name}\" \
             (it did not come up): they had no internet, and that row measures \
             a failed attempt, not slirp4netns.\n"
        ));
    }
    // Rows: none, read-only root, copy-on-write root, with internet.
    let base = percentile(&mut rows[0].1.command, 0.5);
    let isolated = percentile(&mut rows[2].1.command, 0.5);
    md.push_str(&format!(
        "\nIsolation adds {} per command at the median ({} vs {}).\n",
        ms(isolated.saturating_sub(base)),
        ms(isolated),
        ms(base)
    ));
    let create = |row: &mut Samples| percentile(&mut row.create, 0.5);
    let (read_only, cow) = (create(&mut rows[1].1), create(&mut rows[2].1));
    md.push_str(&format!(
        "\nThe copy-on-write root makes a create {:.2}x the read-only root's ({} vs {}).\n",
        cow.as_secs_f64() / read_only.as_secs_f64().max(1e-9),
        ms(cow),
        ms(read_only)
    ));
    print!("{md}");
    // The hand-written history after the generated part stays.
    let previous = std::fs::read_to_string(&out).unwrap_or_default();
    if let Some(at) = previous.find("\n## ") {
        md.push_str(&previous[at..]);
    }
    std::fs::write(&out, md)?;
    Ok(())
}

/// Every pid on the host now.
fn pids() -> std::io::Result<HashSet<u32>> {
    let mut pids = HashSet::new();
    for entry in std::fs::read_dir("/proc")? {
        if let Some(pid) = entry?.file_name().to_str().and_then(|n| n.parse().ok()) {
            pids.insert(pid);
        }
    }
    Ok(pids)
}

struct Memory {
    pss: u64,
    rss: u64,
    anon: u64,
    envd_rss: Option<u64>,
    names: String,
}

/// The memory of the sandbox's host processes: this process's children
/// that are not in `before` and are one of [`SANDBOX_ROOTS`], and all their
/// descendants.
fn sandbox_memory(before: &HashSet<u32>) -> Result<Memory, Box<dyn std::error::Error>> {
    // (pid, parent, name) of every process.
    let mut procs = Vec::new();
    for pid in pids()? {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue; // gone meanwhile
        };
        // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let name = stat[open + 1..close].to_string();
        let ppid: u32 = stat[close + 1..]
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        procs.push((pid, ppid, name));
    }
    let me = std::process::id();
    let mut ours: Vec<(u32, String)> = procs
        .iter()
        .filter(|(pid, ppid, name)| {
            *ppid == me && !before.contains(pid) && SANDBOX_ROOTS.contains(&name.as_str())
        })
        .map(|(pid, _, name)| (*pid, name.clone()))
        .collect();
    let mut i = 0;
    while i < ours.len() {
        let parent = ours[i].0;
        for (pid, ppid, name) in &procs {
            if *ppid == parent {
                ours.push((*pid, name.clone()));
            }
        }
        i += 1;
    }
    let mut memory = Memory {
        pss: 0,
        rss: 0,
        anon: 0,
        envd_rss: None,
        names: String::new(),
    };
    for (pid, name) in &ours {
        let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
            .map_err(|e| format!("reading the memory of {name} ({pid}): {e}"))?;
        let field = |key: &str| {
            rollup
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                .unwrap_or(0)
        };
        let rss = field("Rss:");
        memory.pss += field("Pss:");
        memory.rss += rss;
        memory.anon += field("Anonymous:");
        if name == "envd" || name == "e2b-envd" {
            *memory.envd_rss.get_or_insert(0) += rss;
        }
    }
    let mut names: Vec<&str> = ours.iter().map(|(_, n)| n.as_str()).collect();
    names.sort();
    memory.names = names.join(", ");
    Ok(memory)
}

fn p50_p95(v: &mut [Duration]) -> String {
    format!("{} / {}", ms(percentile(v, 0.5)), ms(percentile(v, 0.95)))
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn mib(kib: u64) -> String {
    format!("{:.2} MiB", kib as f64 / 1024.0)
}
