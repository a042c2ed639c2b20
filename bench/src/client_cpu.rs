//! (12) What a call costs the client: the CPU time (user + system, every
//! thread) of the client's process alone, over many `read_file` calls of
//! the ten-byte file on an open sandbox, after a warm-up. The server runs
//! in the benchmark's process and every client measured here in a child
//! of its own, so none of the server's time is in their figures.

use super::*;

/// `read_file` calls per client whose process this benchmark reads from
/// outside (clock ticks: 10 ms each, so a run of about a second of CPU).
const OUTSIDE_CALLS: usize = 8_000;
/// Calls per client that measures itself (its process CPU clock).
const SELF_CALLS: usize = 2_000;
/// e2b-adk's calls (about 3 ms of CPU each).
const ADK_CALLS: usize = 300;
/// Unmeasured calls first: connections, caches, the allocator's arenas.
const WARM_UP: usize = 50;

/// One client's cost over `calls` calls.
pub(crate) struct CpuRow {
    pub(crate) client: &'static str,
    pub(crate) calls: usize,
    pub(crate) cpu: Duration,
    pub(crate) wall: Duration,
}

impl CpuRow {
    pub(crate) fn cpu_per_call(&self) -> Duration {
        self.cpu / self.calls.max(1) as u32
    }

    pub(crate) fn wall_per_call(&self) -> Duration {
        self.wall / self.calls.max(1) as u32
    }

    fn of(client: &'static str, calls: usize, answer: &Value) -> Self {
        let ns = |key: &str| Duration::from_nanos(answer[key].as_u64().unwrap_or(0));
        Self {
            client,
            calls,
            cpu: ns("cpu_ns"),
            wall: ns("wall_ns"),
        }
    }
}

/// The clients, in the table's order.
pub(crate) const LIBRARY: &str = "host library (`Session::call_json`), current-thread runtime";
pub(crate) const LIBRARY_MULTI: &str =
    "host library (`Session::call_json`), multi-thread runtime (`#[tokio::main]`)";
pub(crate) const BATCH: &str = "`e2b-tools batch` (JSON lines in and out)";
pub(crate) const MCP_STDIO: &str = "`e2b-tools mcp` (stdio)";
pub(crate) const MCP_HTTP: &str = "`e2b-tools mcp --http` (the server process)";
pub(crate) const PYTHON: &str = "Python package (`e2b_tools`, wasmtime-py)";
pub(crate) const FLOOR: &str = "(c) native floor: `GET /files` over a pooled hyper client";
pub(crate) const ADK: &str = "(a) e2b-adk 0.1.2 (`run_async`)";

/// A client of the host library or the floor, run as a probe child.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum CpuProbe {
    /// `Session::call_json` on a current-thread runtime.
    Library,
    /// `Session::call_json` on a multi-thread runtime.
    LibraryMultiThread,
    /// The native floor's `GET /files`.
    Floor,
}

impl CpuProbe {
    /// The row it fills.
    fn client(self) -> &'static str {
        match self {
            Self::Library => LIBRARY,
            Self::LibraryMultiThread => LIBRARY_MULTI,
            Self::Floor => FLOOR,
        }
    }
}

/// Measures every client; a row per client in `report.cpu`.
pub(crate) async fn client_cpu(
    plan: &Plan,
    env: &BTreeMap<String, String>,
    python: &Path,
    package_python: &Path,
    report: &mut Report,
) -> Result<(), Failure> {
    let scale = |calls: usize| calls / plan.cpu_calls_divisor;
    for kind in [
        CpuProbe::Library,
        CpuProbe::LibraryMultiThread,
        CpuProbe::Floor,
    ] {
        let exe = std::env::current_exe().map_err(host)?;
        let name = clap::ValueEnum::to_possible_value(&kind)
            .map(|value| value.get_name().to_string())
            .unwrap_or_default();
        let mut probe = Command::new(exe);
        probe
            .args(["--probe-cpu", &name, "--probe-calls"])
            .arg(scale(SELF_CALLS).to_string())
            .envs(env);
        let answer = json_child(probe, "the CPU probe").await?;
        report
            .cpu
            .push(CpuRow::of(kind.client(), scale(SELF_CALLS), &answer));
    }
    report.cpu.push(batch_cpu(env, scale(OUTSIDE_CALLS)).await?);
    report.cpu.extend(mcp_cpu(env, scale(OUTSIDE_CALLS)).await?);
    report
        .cpu
        .push(python_package_cpu(env, package_python, scale(SELF_CALLS)).await?);
    report
        .cpu
        .push(adk_cpu(env, python, scale(ADK_CALLS)).await?);
    Ok(())
}

/// The probe child (`--probe-cpu`): `calls` reads through the host
/// library (on a current-thread or a multi-thread runtime) or the floor's
/// client, timed by this process's own CPU clock; prints one JSON line.
pub(crate) fn probe_cpu(kind: CpuProbe, calls: usize) -> Result<u8, Failure> {
    let mut builder = match kind {
        CpuProbe::LibraryMultiThread => tokio::runtime::Builder::new_multi_thread(),
        CpuProbe::Library | CpuProbe::Floor => tokio::runtime::Builder::new_current_thread(),
    };
    let runtime = builder.enable_all().build().map_err(host)?;
    let env: BTreeMap<String, String> = e2b_env(std::env::vars());
    let answer = runtime.block_on(async {
        match kind {
            CpuProbe::Floor => {
                let url = env.get("E2B_API_URL").cloned().unwrap_or_default();
                let key = env.get("E2B_API_KEY").cloned().unwrap_or_default();
                let floor = Floor::open_at(url, key).await?;
                let answer = measure(calls, || async { floor.call(0).await.map(drop) }).await;
                floor.close().await;
                answer
            }
            CpuProbe::Library | CpuProbe::LibraryMultiThread => {
                let component =
                    tokio::task::spawn_blocking(|| Runtime::load(ComponentSource::Embedded))
                        .await
                        .map_err(host)?
                        .map_err(host)?;
                let session = open_session(&component, &env).await?;
                write_bench_file(&session).await?;
                let answer = measure(calls, || async {
                    call_ok(&session, "read_file", &read_args()).await.map(drop)
                })
                .await;
                let _ = session.shutdown().await;
                answer
            }
        }
    })?;
    print_stdout(&format!("{answer}\n"))?;
    Ok(0)
}

/// `WARM_UP` calls, then `calls` more between two readings of this
/// process's CPU time.
async fn measure<F, Fut>(calls: usize, mut call: F) -> Result<Value, Failure>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), Failure>>,
{
    for _ in 0..WARM_UP {
        call().await?;
    }
    let (cpu, wall) = (own_cpu(), Instant::now());
    for _ in 0..calls {
        call().await?;
    }
    Ok(json!({
        "cpu_ns": (own_cpu() - cpu).as_nanos() as u64,
        "wall_ns": wall.elapsed().as_nanos() as u64,
    }))
}

/// User + system CPU time of this process, every thread, dead ones too.
fn own_cpu() -> Duration {
    let time = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(time.tv_sec as u64, time.tv_nsec as u32)
}

/// User + system CPU time of process `pid` (every thread, dead ones
/// too), from `/proc/<pid>/stat`, in clock ticks.
fn process_cpu(pid: u32) -> Result<Duration, Failure> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).map_err(host)?;
    // After the command's name in parentheses: field 3 (state) onwards;
    // utime and stime are fields 14 and 15.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .unwrap_or_default();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let per_second = rustix::param::clock_ticks_per_second().max(1);
    Ok(Duration::from_nanos(
        (ticks(11) + ticks(12)) * 1_000_000_000 / per_second,
    ))
}

/// `e2b-tools batch` fed `calls` read lines after its warm-up, read
/// from outside.
async fn batch_cpu(env: &BTreeMap<String, String>, calls: usize) -> Result<CpuRow, Failure> {
    let exe = std::env::current_exe()
        .map_err(host)?
        .with_file_name("e2b-tools");
    let mut child = Command::new(exe)
        .args(["--backend", "e2b", "batch"])
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(host)?;
    let pid = child.id().ok_or_else(|| host("batch ended at once"))?;
    let mut input = child.stdin.take().ok_or_else(|| host("no stdin"))?;
    let output = child.stdout.take().ok_or_else(|| host("no stdout"))?;
    let mut lines = BufReader::new(output).lines();
    let write = json!({"tool": "write_file", "args": {"path": BENCH_FILE, "content": TEN_BYTES}});
    let read = format!("{}\n", json!({"tool": "read_file", "args": read_args()}));
    input
        .write_all(format!("{write}\n{}", read.repeat(WARM_UP)).as_bytes())
        .await
        .map_err(host)?;
    for _ in 0..=WARM_UP {
        expect_success(lines.next_line().await.map_err(host)?, "batch")?;
    }
    let (cpu, wall) = (process_cpu(pid)?, Instant::now());
    // Written while the answers are read: more than a pipe holds.
    let feed = tokio::spawn(async move {
        let all = read.repeat(calls);
        input.write_all(all.as_bytes()).await.map(|()| input)
    });
    for _ in 0..calls {
        expect_success(lines.next_line().await.map_err(host)?, "batch")?;
    }
    let row = CpuRow {
        client: BATCH,
        calls,
        cpu: process_cpu(pid)? - cpu,
        wall: wall.elapsed(),
    };
    drop(feed.await.map_err(host)?.map_err(host)?);
    let _ = tokio::time::timeout(Duration::from_secs(30), child.wait()).await;
    Ok(row)
}

fn expect_success(line: Option<String>, what: &str) -> Result<(), Failure> {
    let line = line.ok_or_else(|| host(format!("{what} ended early")))?;
    let value: Value = serde_json::from_str(&line).map_err(host)?;
    check_success("read_file", value).map(drop)
}

/// `e2b-tools mcp` on stdio and `mcp --http`, one call at a time each,
/// the server processes read from outside.
async fn mcp_cpu(env: &BTreeMap<String, String>, calls: usize) -> Result<Vec<CpuRow>, Failure> {
    let (mut stdio, http) = (
        StdioServer::start(env).await?,
        HttpServer::start(env).await?,
    );
    let outcome = async {
        let session = write_bench_file_over_mcp(&mut stdio, &http).await?;
        let read = |id| tool_call(id, "read_file", read_args());
        for i in 0..WARM_UP as u64 {
            check_call(&stdio.ask(&read(10 + i)).await?)?;
            http.call(&session, &read(10 + i)).await?;
        }
        let (cpu, wall) = (process_cpu(stdio.pid())?, Instant::now());
        for i in 0..calls as u64 {
            check_call(&stdio.ask(&read(1_000 + i)).await?)?;
        }
        let over_stdio = CpuRow {
            client: MCP_STDIO,
            calls,
            cpu: process_cpu(stdio.pid())? - cpu,
            wall: wall.elapsed(),
        };
        let (cpu, wall) = (process_cpu(http.pid())?, Instant::now());
        for i in 0..calls as u64 {
            http.call(&session, &read(1_000 + i)).await?;
        }
        let over_http = CpuRow {
            client: MCP_HTTP,
            calls,
            cpu: process_cpu(http.pid())? - cpu,
            wall: wall.elapsed(),
        };
        Ok(vec![over_stdio, over_http])
    }
    .await;
    stdio.stop().await;
    http.stop().await;
    outcome
}

/// The Python package, measuring itself.
const PYTHON_CPU: &str = r#"
import json, resource, sys, time
import e2b_tools
path, content, warm_up, calls = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
def cpu_ns():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return int((usage.ru_utime + usage.ru_stime) * 1e9)
e2b = e2b_tools.ToolsComponent().instantiate()
assert e2b.call_tool("write_file", {"path": path, "content": content})["success"]
for _ in range(warm_up):
    assert e2b.call_tool("read_file", {"path": path})["success"]
cpu, wall = cpu_ns(), time.perf_counter_ns()
for _ in range(calls):
    assert e2b.call_tool("read_file", {"path": path})["success"]
answer = {"cpu_ns": cpu_ns() - cpu, "wall_ns": time.perf_counter_ns() - wall}
e2b.shutdown()
print(json.dumps(answer))
"#;

async fn python_package_cpu(
    env: &BTreeMap<String, String>,
    package_python: &Path,
    calls: usize,
) -> Result<CpuRow, Failure> {
    let mut command = Command::new(package_python);
    command
        .arg("-c")
        .arg(PYTHON_CPU)
        .args([BENCH_FILE, TEN_BYTES])
        .args([WARM_UP.to_string(), calls.to_string()])
        .envs(env);
    let answer = json_child(command, "the Python package's CPU run").await?;
    Ok(CpuRow::of(PYTHON, calls, &answer))
}

async fn adk_cpu(
    env: &BTreeMap<String, String>,
    python: &Path,
    calls: usize,
) -> Result<CpuRow, Failure> {
    let mut adk = Adk::spawn(python, env)?;
    let outcome = async {
        adk.write_bench_file().await?;
        adk.time("read_file", read_args(), WARM_UP).await?;
        let answer = adk
            .ask(json!({"op": "cpu", "tool": "read_file", "args": read_args(), "n": calls}))
            .await?;
        Ok(CpuRow::of(ADK, calls, &answer))
    }
    .await;
    let _ = adk.close().await;
    outcome
}

impl Report {
    /// Section 12's table.
    pub(crate) fn cpu_markdown(&self, out: &mut String) {
        if self.cpu.is_empty() {
            return;
        }
        let _ = writeln!(
            out,
            "\n## 12. The client's CPU per call\n\n`read_file` of a 10-byte file on an open \
             sandbox: the CPU time (user + system, every thread) of the client's own process \
             over many calls after {WARM_UP} unmeasured ones; the server is another process. \
             The host library, the floor, the Python package and e2b-adk measure themselves \
             (their process CPU clock, `getrusage` in Python); `batch` and the MCP servers are read from outside \
             (`/proc/<pid>/stat`, 10 ms ticks over about a second of CPU). `batch` is fed all \
             its lines at once; the others make one call at a time.\n"
        );
        let adk = self.cpu_of(ADK);
        let _ = writeln!(
            out,
            "| client | calls | CPU per call | wall per call | e2b-adk's CPU per call / this |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|");
        for row in &self.cpu {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                row.client,
                row.calls,
                ms(row.cpu_per_call()),
                ms(row.wall_per_call()),
                adk.map_or("–".into(), |adk| format!(
                    "{:.1}",
                    ratio(adk, row.cpu_per_call())
                ))
            );
        }
    }

    /// The CPU per call of `client`, if it was measured.
    pub(crate) fn cpu_of(&self, client: &str) -> Option<Duration> {
        self.cpu
            .iter()
            .find(|row| row.client == client)
            .map(CpuRow::cpu_per_call)
    }
}
