//! What the code interpreter costs: a sandbox's first `run_code`, later
//! ones, and the memory its kernels take, for the real kernel
//! (`code-interpreter-v1`: IPython's kernel through the Jupyter bridge,
//! its Python and JavaScript contexts started with the sandbox) beside the
//! hand-written fallback driver (`base`: plain CPython, started on first
//! use), side by side in one run. Prints the table and writes it as the
//! `## The code interpreter` section of `local/BENCHMARKS.md` (or `OUT`):
//! `cargo run --release -p e2b-local --example interpreter_bench [-- RUNS [OUT]]`.
//!
//! Memory is the sandbox's memory cgroup charge (`memory.usage_in_bytes`,
//! what counts against its 512 MiB) and the PSS of its interpreter
//! processes by kind, read once the first `run_code` of a sandbox that had
//! been up for [`SETTLE`] ended. Needs root (cgroup v1 memory controller).

#[path = "common/bench_file.rs"]
mod bench_file;

use std::time::{Duration, Instant};

use bench_file::percentile;

use e2b_local::{LocalServer, Options};
use serde_json::{json, Value};

const SECTION: &str = "## The code interpreter";
/// How long a sandbox stands before its "after start" first `run_code`:
/// long enough for its default contexts' kernels to be up.
const SETTLE: Duration = Duration::from_secs(5);
/// Later executions timed per sandbox.
const LATER: usize = 10;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The interpreter's processes, by what their command line says. A Python
/// context's own process carries both the bridge and the fallback driver
/// in its arguments and runs one: the bridge in `code-interpreter-v1`
/// (its kernel is the IPython one), the driver, which is the kernel, in
/// `base`.
const KINDS: [(&str, &str); 4] = [
    ("IPython kernel", "ipykernel_launcher"),
    (
        "Python context (bridge / fallback)",
        "Jupyter bridge of the local code interpreter",
    ),
    (
        "JavaScript driver",
        "JavaScript kernel driver of the local code interpreter",
    ),
    ("envd", "/opt/e2b/envd"),
];

#[derive(Default)]
struct Samples {
    create: Vec<Duration>,
    first_at_once: Vec<Duration>,
    first_settled: Vec<Duration>,
    later: Vec<Duration>,
    /// KiB.
    charged: Vec<u64>,
    pss: [Vec<u64>; KINDS.len()],
}

struct Bench {
    server: LocalServer,
    http: reqwest::Client,
}

impl Bench {
    async fn create(&self, template: &str) -> Result<(String, String, Duration), Error> {
        let t = Instant::now();
        let created: Value = self
            .http
            .post(format!("{}/v2/sandboxes", self.server.url()))
            .header("X-API-KEY", self.server.api_key())
            .json(&json!({"templateID": template, "timeout": 300}))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        let text = |k: &str| created[k].as_str().unwrap_or_default().to_string();
        Ok((text("sandboxID"), text("envdAccessToken"), t.elapsed()))
    }

    /// One `/execute` of `1 + 1` to its end; fails unless it printed 2.
    async fn run_code(&self, id: &str, token: &str) -> Result<Duration, Error> {
        let t = Instant::now();
        let body = self
            .http
            .post(format!("{}/execute", self.server.url()))
            .header("E2b-Sandbox-Id", id)
            .header("E2b-Sandbox-Port", "49999")
            .header("X-Access-Token", token)
            .json(&json!({"code": "1 + 1"}))
            .send()
            .await?
            .error_for_status()?
            .text()
            .await?;
        if !body.contains(r#""text": "2""#) {
            return Err(format!("run_code did not give 2: {body}").into());
        }
        Ok(t.elapsed())
    }

    async fn kill(&self, id: &str) -> Result<(), Error> {
        self.http
            .delete(format!("{}/sandboxes/{id}", self.server.url()))
            .header("X-API-KEY", self.server.api_key())
            .send()
            .await?
            .error_for_status()?;
        Ok(())
    }

    /// One round: a sandbox whose first `run_code` comes at once, then one
    /// whose first comes after [`SETTLE`], its later ones and its memory.
    async fn round(&self, template: &str, s: &mut Samples) -> Result<(), Error> {
        let (id, token, create) = self.create(template).await?;
        s.create.push(create);
        s.first_at_once.push(self.run_code(&id, &token).await?);
        self.kill(&id).await?;

        let (id, token, create) = self.create(template).await?;
        s.create.push(create);
        tokio::time::sleep(SETTLE).await;
        s.first_settled.push(self.run_code(&id, &token).await?);
        for _ in 0..LATER {
            s.later.push(self.run_code(&id, &token).await?);
        }
        let (charged, pss) = memory(&id)?;
        s.charged.push(charged);
        for (samples, kib) in s.pss.iter_mut().zip(pss) {
            samples.push(kib);
        }
        self.kill(&id).await
    }
}

/// The sandbox's memory cgroup: its charge, and the PSS of its processes
/// of each of [`KINDS`] (KiB).
fn memory(id: &str) -> Result<(u64, [u64; KINDS.len()]), Error> {
    let group = glob_group(id)?;
    let charged: u64 = std::fs::read_to_string(group.join("memory.usage_in_bytes"))?
        .trim()
        .parse::<u64>()?
        >> 10;
    let mut pss = [0; KINDS.len()];
    for pid in std::fs::read_to_string(group.join("cgroup.procs"))?.lines() {
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline);
        let Some(kind) = KINDS.iter().position(|(_, m)| cmdline.contains(m)) else {
            continue;
        };
        let rollup =
            std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap_or_default();
        pss[kind] += rollup
            .lines()
            .find_map(|l| l.strip_prefix("Pss:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap_or(0);
    }
    Ok((charged, pss))
}

/// `/sys/fs/cgroup/memory/e2b-local/<this process>/<id>`.
fn glob_group(id: &str) -> Result<std::path::PathBuf, Error> {
    let group = std::path::Path::new("/sys/fs/cgroup/memory/e2b-local")
        .join(std::process::id().to_string())
        .join(id);
    if group.is_dir() {
        Ok(group)
    } else {
        Err(format!(
            "no memory cgroup at {} (run as root, cgroup v1)",
            group.display()
        )
        .into())
    }
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (runs, out) = bench_file::runs_and_out(5)?;
    let server = LocalServer::start(Options::default()).await?;
    let layers = server.isolation().to_string();
    if !layers.contains("code-interpreter-v1: the venv") {
        return Err(
            format!("no code-interpreter-v1 template (run scripts/bootstrap): {layers}").into(),
        );
    }
    let bench = Bench {
        server,
        http: reqwest::Client::builder().no_proxy().build()?,
    };
    let templates = [
        (
            "code-interpreter-v1",
            "IPython's kernel (Jupyter bridge), contexts started with the sandbox",
        ),
        (
            "base",
            "the fallback driver (plain CPython), started on first use",
        ),
    ];
    let mut rows = Vec::new();
    for (template, what) in templates {
        let mut warm = Samples::default();
        bench.round(template, &mut warm).await?;
        let mut s = Samples::default();
        for _ in 0..runs {
            bench.round(template, &mut s).await?;
        }
        rows.push((template, what, s));
    }
    bench.server.shutdown().await;

    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_default();
    let mut md = format!(
        "{SECTION}\n\n\
         Generated by `cargo run --release -p e2b-local --example interpreter_bench`; \
         {runs} rounds per row after one warm-up, on {} cores (load average {load} when \
         it started), both templates on one server. Each round makes two sandboxes: the \
         first runs `1 + 1` at once after its create (**first run_code at once**: with \
         contexts started with the sandbox, it waits for its kernel's start); the second \
         stands {} s first (**first run_code after {}s**), then runs it {LATER} times more \
         (**later run_code**). Times are p50 / p95. **Charged** is the second sandbox's \
         memory cgroup (what counts against its 512 MiB) after those; then the PSS of its \
         interpreter's processes. Layers: {layers}.\n\n\
         | template | kernel | create | first run_code at once | first run_code after {}s | later run_code |\n\
         |---|---|---|---|---|---|\n",
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        SETTLE.as_secs(),
        SETTLE.as_secs(),
        SETTLE.as_secs(),
    );
    for (template, what, s) in &mut rows {
        md.push_str(&format!(
            "| `{template}` | {what} | {} | {} | {} | {} |\n",
            p50_p95(&mut s.create),
            p50_p95(&mut s.first_at_once),
            p50_p95(&mut s.first_settled),
            p50_p95(&mut s.later),
        ));
    }
    md.push_str("\n| template | charged p50 |");
    for (kind, _) in KINDS {
        md.push_str(&format!(" {kind} PSS p50 |"));
    }
    md.push_str(&format!("\n|---|---|{}\n", "---|".repeat(KINDS.len())));
    for (template, _, s) in &mut rows {
        md.push_str(&format!(
            "| `{template}` | {} |",
            mib(percentile(&mut s.charged, 0.5))
        ));
        for samples in &mut s.pss {
            let kib = percentile(samples, 0.5);
            md.push_str(&if kib == 0 {
                " — |".to_string()
            } else {
                format!(" {} |", mib(kib))
            });
        }
        md.push('\n');
    }
    md.push('\n');
    print!("{md}");
    bench_file::write_section(&out, SECTION, &md)?;
    Ok(())
}

fn p50_p95(v: &mut [Duration]) -> String {
    let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1000.0);
    format!("{} / {}", ms(percentile(v, 0.5)), ms(percentile(v, 0.95)))
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}
