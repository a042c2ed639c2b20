//! The figures collected, and the markdown report written from them.

use super::*;

#[derive(Default, Clone)]
pub(crate) struct Percentiles {
    pub(crate) p50: Duration,
    pub(crate) p95: Duration,
    pub(crate) samples: usize,
}

impl Percentiles {
    pub(crate) fn of(mut samples: Vec<Duration>) -> Self {
        samples.sort();
        let at = |pct: usize| {
            samples
                .get((samples.len() * pct / 100).min(samples.len().saturating_sub(1)))
                .copied()
                .unwrap_or_default()
        };
        Self {
            p50: at(50),
            p95: at(95),
            samples: samples.len(),
        }
    }
}

#[derive(Default)]
pub(crate) struct LatencyRow {
    pub(crate) adk: Percentiles,
    pub(crate) component: Percentiles,
    pub(crate) floor: Percentiles,
}

#[derive(Default)]
pub(crate) struct RequestCounts {
    pub(crate) control_plane: u64,
    pub(crate) all: u64,
    pub(crate) routes: BTreeMap<String, u64>,
}

impl RequestCounts {
    pub(crate) fn between(before: &Stats, after: &Stats) -> Self {
        let mut counts = Self::default();
        for (key, &n) in &after.requests {
            let delta = n.saturating_sub(before.count(key));
            if delta == 0 {
                continue;
            }
            counts.all += delta;
            if is_control_plane(key) {
                counts.control_plane += delta;
            }
            counts.routes.insert(key.clone(), delta);
        }
        counts
    }

    pub(crate) fn per_call(&self) -> f64 {
        self.control_plane as f64 / COUNTED_CALLS as f64
    }

    pub(crate) fn routes_text(&self) -> String {
        self.routes
            .iter()
            .map(|(k, n)| format!("`{k}` ×{n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Control-plane routes (`"<METHOD> <pattern>"` keys of [`Stats`]).
pub(crate) fn is_control_plane(key: &str) -> bool {
    let path = key.split_once(' ').map_or(key, |(_, path)| path);
    ["/sandboxes", "/v2/sandboxes", "/v3/sandboxes", "/templates"]
        .iter()
        .any(|prefix| path.starts_with(prefix))
}

#[derive(Default)]
pub(crate) struct Requests {
    pub(crate) adk: RequestCounts,
    pub(crate) component: RequestCounts,
}

pub(crate) struct ColdStart {
    pub(crate) p50: Duration,
    pub(crate) max: Duration,
    pub(crate) peak_kib: u64,
    pub(crate) runs: usize,
}

impl ColdStart {
    pub(crate) fn of(runs: Vec<ProcessRun>) -> Self {
        let peak_kib = runs.iter().map(|r| r.peak_kib).max().unwrap_or(0);
        let n = runs.len();
        let times = Percentiles::of(runs.iter().map(|r| r.first_result).collect());
        let max = runs
            .iter()
            .map(|r| r.first_result)
            .max()
            .unwrap_or_default();
        Self {
            p50: times.p50,
            max,
            peak_kib,
            runs: n,
        }
    }
}

pub(crate) struct BigOutput {
    pub(crate) baseline_kib: u64,
    pub(crate) peak_kib: u64,
    /// Before and after the big call (component only).
    pub(crate) linear_memory_bytes: Option<(u64, u64)>,
    pub(crate) returned_bytes: u64,
    pub(crate) elapsed: Duration,
}

pub(crate) struct SessionsRow {
    pub(crate) count: usize,
    /// How many opened (fewer than `count` when one failed).
    pub(crate) opened: usize,
    /// Why opening stopped early.
    pub(crate) failure: Option<String>,
    pub(crate) per_instance: Duration,
    pub(crate) rss_per_session_kib: f64,
    pub(crate) private_per_session_kib: f64,
    pub(crate) pss_per_session_kib: f64,
    pub(crate) linear_memory_bytes: usize,
}

#[derive(Default)]
pub(crate) struct Report {
    /// read_file, list_files, run_command ([`LATENCY_CALLS`]).
    pub(crate) latency: [LatencyRow; 3],
    pub(crate) requests: Requests,
    /// e2b-tools call, python -c, e2b-tools call on an existing sandbox.
    pub(crate) cold: [Option<ColdStart>; 3],
    pub(crate) big_output: Vec<(u64, BigOutput)>,
    pub(crate) adk_big_output: Option<BigOutput>,
    pub(crate) sessions: Vec<SessionsRow>,
    pub(crate) wasm_bytes: u64,
    pub(crate) stateless: Option<StatelessRow>,
    pub(crate) mcp: Option<McpRow>,
    pub(crate) tls: Option<TlsRow>,
    pub(crate) python_package: Option<PythonPackageRow>,
    pub(crate) pool: Option<PoolRow>,
    /// Section 12, a row per client.
    pub(crate) cpu: Vec<CpuRow>,
}

pub(crate) fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

pub(crate) fn ratio(a: Duration, b: Duration) -> f64 {
    if b.is_zero() {
        f64::NAN
    } else {
        a.as_secs_f64() / b.as_secs_f64()
    }
}

pub(crate) fn verdict(met: bool) -> &'static str {
    if met {
        "met"
    } else {
        "**missed**"
    }
}

pub(crate) fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / KIB)
}

impl Report {
    /// Section 1: the client cost per trivial call.
    pub(crate) fn latency_table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "## 1. Client cost per trivial tool call\n");
        let _ = writeln!(
            out,
            "(a) e2b-adk's tools called directly (`await tool.run_async(...)`, timed inside \
             Python); (b) the component through the host library (`Session::call_json`); \
             (c) a native Rust client (hyper-util, pooled) sending only the essential request \
             (`GET /files?path=…`; the `ListDir` Connect unary call; the `Start` stream of \
             `/bin/bash -l -c true`, read to its end). (b) and (c) alternate, one call of each \
             in turn, {} samples each after a warm-up.\n",
            self.latency[0].component.samples
        );
        let _ = writeln!(
            out,
            "| call | (a) e2b-adk p50 / p95 | (b) component p50 / p95 | (c) floor p50 / p95 | (a)/(b) p50 | (b)/(c) p50 |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|---|");
        for (name, row) in ["read_file (10 B)", "list_files", "run_command (`true`)"]
            .iter()
            .zip(&self.latency)
        {
            let _ = writeln!(
                out,
                "| {name} | {} / {} | {} / {} | {} / {} | {:.1} | {:.2} |",
                ms(row.adk.p50),
                ms(row.adk.p95),
                ms(row.component.p50),
                ms(row.component.p95),
                ms(row.floor.p50),
                ms(row.floor.p95),
                ratio(row.adk.p50, row.component.p50),
                ratio(row.component.p50, row.floor.p50),
            );
        }
        out
    }

    pub(crate) fn markdown(&self, quick: bool) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# Benchmarks: the e2b-tools component vs e2b-adk 0.1.2\n"
        );
        let _ = writeln!(
            out,
            "Generated by `e2b-tools-bench{}` against one local server (`e2b-local`, \
             bubblewrap sandboxes) started in the benchmark's process; every number below \
             comes from the same run. What the local server's isolation costs (sandbox \
             creation, a trivial command) is in [local/BENCHMARKS.md](local/BENCHMARKS.md).\n",
            if quick { " --quick" } else { "" }
        );
        let _ = writeln!(out, "{}\n", machine_note());

        out.push_str(&self.latency_table());
        let _ = writeln!(
            out,
            "\n## 2. Control-plane requests per tool call\n\n{COUNTED_CALLS} back-to-back \
             `read_file` calls on an open sandbox, counted by the server.\n"
        );
        let _ = writeln!(
            out,
            "| client | control-plane requests / call | all requests in the run |"
        );
        let _ = writeln!(out, "|---|---|---|");
        for (name, counts) in [
            ("(a) e2b-adk", &self.requests.adk),
            ("(b) component", &self.requests.component),
        ] {
            let _ = writeln!(
                out,
                "| {name} | {:.2} | {} |",
                counts.per_call(),
                counts.routes_text()
            );
        }

        let _ = writeln!(
            out,
            "\n## 3. Cold start\n\nProcess start to the first tool result (`read_file` of a \
             small file every sandbox has, `/etc/hostname`), against the already running \
             server; the compiled component is cached. The first two make a fresh sandbox \
             each time, so its creation is included; the last attaches to one that exists \
             (`--sandbox-id`, left running). Peak RSS from `/usr/bin/time`.\n"
        );
        let _ = writeln!(out, "| command | p50 | max | peak RSS | runs |");
        let _ = writeln!(out, "|---|---|---|---|---|");
        for (name, cold) in [
            ("`e2b-tools --backend e2b call read_file`", &self.cold[0]),
            ("`python -c` (import e2b_adk, same call)", &self.cold[1]),
            (
                "`e2b-tools --backend e2b --sandbox-id <id> call read_file`",
                &self.cold[2],
            ),
        ] {
            if let Some(c) = cold {
                let _ = writeln!(
                    out,
                    "| {name} | {} | {} | {} | {} |",
                    ms(c.p50),
                    ms(c.max),
                    mib(c.peak_kib),
                    c.runs
                );
            }
        }

        let _ = writeln!(
            out,
            "\n## 4. Memory under big output\n\n`run_command` of `head -c N /dev/zero | tr \
             '\\0' a`, returning the truncated 10 KB. Component: a child process \
             (host + component, not the server); RSS before the call vs peak during it; guest \
             linear memory as the host's store limiter counts it.\n"
        );
        let _ = writeln!(
            out,
            "| client | stdout | RSS before | peak RSS | peak − before | guest linear memory (before → after) | returned | time |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|---|---|---|");
        for (bytes, b) in &self.big_output {
            let linear = b.linear_memory_bytes.map_or("–".into(), |(before, after)| {
                format!(
                    "{:.2} → {:.2} MiB",
                    before as f64 / MIB as f64,
                    after as f64 / MIB as f64
                )
            });
            let _ = writeln!(
                out,
                "| (b) component | {} MiB | {} | {} | {} | {linear} | {} B | {:.1} s |",
                bytes / MIB,
                mib(b.baseline_kib),
                mib(b.peak_kib),
                mib(b.peak_kib.saturating_sub(b.baseline_kib)),
                b.returned_bytes,
                b.elapsed.as_secs_f64()
            );
        }
        if let Some(b) = &self.adk_big_output {
            let _ = writeln!(
                out,
                "| (a) e2b-adk | 100 MiB | {} | {} | {} | – | {} B | {:.1} s |",
                mib(b.baseline_kib),
                mib(b.peak_kib),
                mib(b.peak_kib.saturating_sub(b.baseline_kib)),
                b.returned_bytes,
                b.elapsed.as_secs_f64()
            );
        }

        let _ = writeln!(
            out,
            "\n## 5. Idle sessions per process\n\n`Session::open` (instantiate + configure, \
             no sandbox) N times in one process, all kept alive. RSS counts the pages of \
             the compiled component's memory image once per session although they are \
             one copy in the page cache: an instance reads a few pages of its 100 KiB data \
             image, and Linux maps the page-cache pages around each read fault with it \
             (fault-around, 64 KiB windows), clean and shared. The private column leaves \
             them out; PSS divides each shared page among the sessions mapping it.\n"
        );
        let _ = writeln!(
            out,
            "| sessions | time per instance | RSS per session | private per session | PSS per session | guest linear memory each |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|---|");
        for row in &self.sessions {
            let _ = writeln!(
                out,
                "| {} | {} | {:.1} KiB | {:.1} KiB | {:.1} KiB | {:.0} KiB |",
                match &row.failure {
                    None => row.count.to_string(),
                    Some(why) => format!("{} (**only {} opened**: {why})", row.count, row.opened),
                },
                ms(row.per_instance),
                row.rss_per_session_kib,
                row.private_per_session_kib,
                row.pss_per_session_kib,
                row.linear_memory_bytes as f64 / KIB
            );
        }

        let _ = writeln!(
            out,
            "\n## 6. Component size\n\nRelease `e2b_tools.wasm` (the component embedded in \
             this binary): {} bytes ({:.0} KiB).\n",
            self.wasm_bytes,
            self.wasm_bytes as f64 / KIB
        );

        if let Some(row) = &self.stateless {
            row.markdown(&mut out);
            out.push('\n');
        }
        if let Some(row) = &self.mcp {
            row.markdown(&mut out);
            out.push('\n');
        }
        if let Some(row) = &self.tls {
            row.markdown(&mut out);
            out.push('\n');
        }
        if let Some(row) = &self.python_package {
            row.markdown(&mut out);
            out.push('\n');
        }
        if let Some(row) = &self.pool {
            row.markdown(&mut out);
            out.push('\n');
        }
        self.cpu_markdown(&mut out);
        let _ = writeln!(out, "\n## Targets\n");
        let _ = writeln!(out, "| target | measured | verdict |");
        let _ = writeln!(out, "|---|---|---|");
        for (name, row) in ["read_file", "list_files"].iter().zip(&self.latency) {
            let ab = ratio(row.adk.p50, row.component.p50);
            let bc = ratio(row.component.p50, row.floor.p50);
            let _ = writeln!(
                out,
                "| (1) {name}: (a)/(b) ≥ 30 | {ab:.1} | {} |",
                verdict(ab >= 30.0)
            );
            let _ = writeln!(
                out,
                "| (1) {name}: (b)/(c) ≤ 1.5 (issue 28) | {bc:.2} | {} |",
                verdict(bc <= 1.5)
            );
        }
        let per_call = self.requests.component.per_call();
        let _ = writeln!(
            out,
            "| (2) component control-plane requests / call ≤ 0.05 | {per_call:.2} (e2b-adk {:.2}) | {} |",
            self.requests.adk.per_call(),
            verdict(per_call <= 0.05)
        );
        if let Some(c) = &self.cold[0] {
            let _ = writeln!(
                out,
                "| (3) cold start, a fresh sandbox made (issue 6) ≤ 30 ms | {} | {} |",
                ms(c.p50),
                verdict(c.p50 <= Duration::from_millis(30))
            );
            if let Some(attached) = &self.cold[2] {
                let _ = writeln!(
                    out,
                    "| (3) cold start on an existing sandbox (issue 44) ≤ 30 ms | {} | {} |",
                    ms(attached.p50),
                    verdict(attached.p50 <= Duration::from_millis(30))
                );
            }
            let _ = writeln!(
                out,
                "| (3) cold-start peak RSS ≤ 20 MiB | {} | {} |",
                mib(c.peak_kib),
                verdict(c.peak_kib <= 20 * 1024)
            );
        }
        if let Some((bytes, b)) = self.big_output.iter().max_by_key(|(bytes, _)| *bytes) {
            let growth = b.peak_kib.saturating_sub(b.baseline_kib);
            let _ = writeln!(
                out,
                "| (4) peak RSS growth ≤ +8 MiB at 1 GiB | {} at {} MiB | {} |",
                mib(growth),
                bytes / MIB,
                if *bytes >= 1024 * MIB {
                    verdict(growth <= 8 * 1024)
                } else {
                    "not run (quick)"
                }
            );
        }
        // Every row must pass: the worst one is reported.
        if let Some(row) = self
            .sessions
            .iter()
            .max_by(|a, b| a.rss_per_session_kib.total_cmp(&b.rss_per_session_kib))
        {
            let met = self
                .sessions
                .iter()
                .all(|r| r.failure.is_none() && r.rss_per_session_kib <= 100.0);
            let _ = writeln!(
                out,
                "| (5) ≤ 100 KiB RSS per idle session | {:.1} KiB at {} (worst row; PSS {:.1} KiB) | {} |",
                row.rss_per_session_kib,
                row.opened,
                row.pss_per_session_kib,
                verdict(met)
            );
        }
        let _ = writeln!(
            out,
            "| (6) release .wasm ≤ 1 MiB | {:.0} KiB | {} |",
            self.wasm_bytes as f64 / KIB,
            verdict(self.wasm_bytes <= MIB)
        );
        if let Some(pool) = &self.pool {
            for (client, pooled_over_warm) in pool.ratios() {
                let _ = writeln!(
                    out,
                    "| (7) {client}: first call with a warm pool ≤ 1.5× a warm call (issue 28) | {pooled_over_warm:.2} | {} |",
                    verdict(pooled_over_warm <= 1.5)
                );
            }
        }
        self.cpu_targets(&mut out);
        out
    }

    /// Issue 44's: the client's CPU per call against e2b-adk's.
    fn cpu_targets(&self, out: &mut String) {
        let Some(adk) = self.cpu_of(ADK) else {
            return;
        };
        for (client, times) in [(LIBRARY, 30.0), (BATCH, 30.0), (PYTHON, 10.0)] {
            if let Some(cpu) = self.cpu_of(client) {
                let measured = ratio(adk, cpu);
                let _ = writeln!(
                    out,
                    "| (12) {client}: client CPU per call ≥ {times:.0}× below e2b-adk's | {measured:.1}× ({} against {}) | {} |",
                    ms(cpu),
                    ms(adk),
                    verdict(measured >= times)
                );
            }
        }
        if let Some(cpu) = self.cpu_of(LIBRARY) {
            let _ = writeln!(
                out,
                "| (12) host library: client CPU per call ≤ 0.1 ms | {} | {} |",
                ms(cpu),
                verdict(cpu <= Duration::from_micros(100))
            );
        }
        let wall = |client| self.cpu.iter().find(|row| row.client == client);
        if let (Some(floor), Some(library)) = (wall(FLOOR), wall(LIBRARY)) {
            let (floor, library) = (floor.wall_per_call(), library.wall_per_call());
            let _ = writeln!(
                out,
                "| (12) the local server's `read_file` floor (wall, its client in a process of its own) ≤ 0.2 ms | {} | {} |",
                ms(floor),
                verdict(floor <= Duration::from_micros(200))
            );
            let times = ratio(library, floor);
            let _ = writeln!(
                out,
                "| (12) host library: wall per call ≤ 1.3× the floor's | {times:.2} ({} against {}) | {} |",
                ms(library),
                ms(floor),
                verdict(times <= 1.3)
            );
        }
    }
}

/// Cores, CPU model and date, for the report's header.
pub(crate) fn machine_note() -> String {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|rest| rest.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let date = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let build = if cfg!(debug_assertions) {
        "Debug build: not for quoting"
    } else {
        "Release build"
    };
    format!("Machine: {cores} cores (`nproc`), {cpu}; run on {date}. {build}.")
}
