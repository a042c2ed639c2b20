//! `e2b-tools-bench`: the component side by side with e2b-adk 0.1.2 and a
//! native HTTP floor, against ONE local server started in this process.
//! Prints a markdown table and writes it to `BENCHMARKS.md`. Its own crate,
//! so nothing of it ships in `e2b-tools`:
//! `cargo build --release -p e2b-tools && cargo run --release -p e2b-tools-bench`
//! (the cold-start figure runs the `e2b-tools` binary built beside it).
//!
//! Measured (see issue 6): client cost per trivial call, control-plane
//! requests per call, cold start, memory under big output, idle sessions per
//! process, the size of the component, stateless calls, MCP, the
//! production path (TLS through a proxy), the first call with a warm
//! pool, and the client's own CPU per call.

use bytes::Bytes;
use clap::Parser;

mod adk;
mod client_cpu;
mod latency;
mod mcp;
mod memory;
mod processes;
mod python_package;
mod report;
mod stateless;
mod tls;
mod warm_pool;

use adk::*;
use client_cpu::*;
use e2b_local::{LocalServer, Stats};
use e2b_tools_host::{
    e2b_env, ComponentSource, Runtime, SandboxConfig, Session, SessionOptions, StatelessOptions,
    StatelessRuntime, EMBEDDED_COMPONENT,
};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use latency::*;
use mcp::*;
use memory::*;
use processes::*;
use python_package::*;
use report::*;
use serde_json::{json, Value};
use stateless::*;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tls::*;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use warm_pool::*;

/// The e2b-adk side, driven over stdin/stdout.
const ADK_SCRIPT: &str = include_str!("../adk_bench.py");

/// Benchmark the component against e2b-adk 0.1.2 and a native HTTP client
/// on one local server; writes BENCHMARKS.md.
#[derive(Debug, Parser)]
#[command(name = "e2b-tools-bench")]
struct BenchArgs {
    /// Fewer samples; skips the 1 GiB output and the 10,000 sessions.
    #[arg(long)]
    quick: bool,
    /// Where the markdown report is written.
    #[arg(long, default_value = "BENCHMARKS.md")]
    output: PathBuf,
    /// Python of a venv with e2b-adk 0.1.2. Default: $E2B_TOOLS_PYTHON,
    /// then target/pyenv/bin/python.
    #[arg(long)]
    python: Option<PathBuf>,
    /// Python of a venv with the e2b-tools wheel installed (section 10).
    /// Default: $E2B_TOOLS_PACKAGE_PYTHON, then target/package-venv/bin/python.
    #[arg(long)]
    package_python: Option<PathBuf>,
    /// Run the local server's sandboxes without isolation.
    #[arg(long)]
    no_isolation: bool,
    /// Internal: be the memory probe child (one big run_command).
    #[arg(long, hide = true, value_name = "BYTES")]
    probe_output_bytes: Option<u64>,
    /// Only the warm pool's section (11), printed, not written.
    #[arg(long)]
    only_pool: bool,
    /// Only section 1's component and floor columns, printed, not written.
    #[arg(long)]
    only_latency: bool,
    /// Only the client CPU section (12), printed, not written.
    #[arg(long)]
    only_cpu: bool,
    /// Call one tool through the host library in a loop for this many
    /// seconds, for a profiler attached to the process (`perf record -p`).
    #[arg(long, value_name = "SECONDS")]
    profile: Option<u64>,
    /// The tool `--profile` calls.
    #[arg(long, default_value = "read_file")]
    profile_tool: String,
    /// `--profile` loops the native floor's request for the tool instead,
    /// to profile both sides alike.
    #[arg(long, requires = "profile")]
    profile_floor: bool,
    /// Internal: be the TLS-through-a-proxy child (its plan as JSON).
    #[arg(long, hide = true, value_name = "JSON")]
    probe_tls: Option<String>,
    /// Internal: be a CPU probe child, making `--probe-calls` calls.
    #[arg(long, hide = true, value_enum, value_name = "KIND")]
    probe_cpu: Option<CpuProbe>,
    /// Internal: how many calls the CPU probe makes.
    #[arg(long, hide = true, default_value_t = 1_000)]
    probe_calls: usize,
}

/// Why the benchmark stopped.
type Failure = anyhow::Error;

/// A failure from anything that can be shown.
fn host(err: impl std::fmt::Display) -> Failure {
    anyhow::anyhow!("{err}")
}

fn main() -> std::process::ExitCode {
    let args = BenchArgs::parse();
    // The CPU probe picks its own runtime.
    let outcome = match &args.probe_cpu {
        Some(kind) => probe_cpu(*kind, args.probe_calls),
        None => tokio::runtime::Runtime::new()
            .map_err(host)
            .and_then(|runtime| runtime.block_on(bench(args))),
    };
    match outcome {
        Ok(code) => code.into(),
        Err(err) => {
            eprintln!("e2b-tools-bench: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn print_stdout(text: &str) -> Result<(), Failure> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(host)
}

/// The 10-byte file of the trivial calls.
const TEN_BYTES: &str = "0123456789";
/// Where it lives in the sandbox.
const BENCH_FILE: &str = "/home/user/bench.txt";
const MIB: u64 = 1 << 20;
const KIB: f64 = 1024.0;

/// How much of everything to run.
struct Plan {
    latency_samples: usize,
    cold_runs: usize,
    /// Section 12's call counts are divided by this (quick: 10).
    cpu_calls_divisor: usize,
    big_outputs: Vec<u64>,
    adk_big_output: u64,
    session_counts: Vec<usize>,
}

impl Plan {
    fn new(quick: bool) -> Self {
        if quick {
            Self {
                latency_samples: 30,
                cold_runs: 2,
                cpu_calls_divisor: 10,
                big_outputs: vec![100 * MIB],
                adk_big_output: 100 * MIB,
                session_counts: vec![1_000],
            }
        } else {
            Self {
                latency_samples: 300,
                cold_runs: 7,
                cpu_calls_divisor: 1,
                big_outputs: vec![100 * MIB, 1024 * MIB],
                adk_big_output: 100 * MIB,
                session_counts: vec![1_000, 10_000],
            }
        }
    }
}

/// Back-to-back calls of the control-plane count.
const COUNTED_CALLS: usize = 100;

/// Runs the benchmark, or its memory probe child.
async fn bench(args: BenchArgs) -> Result<u8, Failure> {
    if let Some(bytes) = args.probe_output_bytes {
        return probe_big_output(bytes).await;
    }
    if let Some(probe) = &args.probe_tls {
        return probe_tls(probe).await;
    }
    let plan = Plan::new(args.quick);
    let python = args
        .python
        .clone()
        .or_else(|| std::env::var_os("E2B_TOOLS_PYTHON").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("target/pyenv/bin/python"));

    let package_python = args
        .package_python
        .clone()
        .or_else(|| std::env::var_os("E2B_TOOLS_PACKAGE_PYTHON").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("target/package-venv/bin/python"));

    eprintln!("bench: loading the component");
    let runtime = tokio::task::spawn_blocking(|| Runtime::load(ComponentSource::Embedded))
        .await
        .map_err(host)?
        .map_err(host)?;
    let server = LocalServer::start(e2b_local::Options {
        isolation: if args.no_isolation {
            e2b_local::Isolation::None
        } else {
            e2b_local::Isolation::Bwrap
        },
        ..e2b_local::Options::default()
    })
    .await
    .map_err(host)?;
    let env = server_env(&server);

    if args.only_pool {
        let mut report = Report::default();
        let outcome = pool_cost(&runtime, &server, &env, &mut report).await;
        server.shutdown().await;
        outcome?;
        let mut text = String::new();
        if let Some(row) = &report.pool {
            row.markdown(&mut text);
        }
        print_stdout(&text)?;
        return Ok(0);
    }
    if let Some(seconds) = args.profile {
        let outcome = match args.profile_floor {
            true => profile_floor_loop(&server, &args.profile_tool, seconds).await,
            false => profile_loop(&runtime, &env, &args.profile_tool, seconds).await,
        };
        server.shutdown().await;
        outcome?;
        return Ok(0);
    }
    if args.only_cpu {
        let mut report = Report::default();
        let outcome = client_cpu(&plan, &env, &python, &package_python, &mut report).await;
        server.shutdown().await;
        outcome?;
        let mut text = String::new();
        report.cpu_markdown(&mut text);
        print_stdout(&text)?;
        return Ok(0);
    }
    if args.only_latency {
        let mut report = Report::default();
        let outcome = side_by_side_latency(&plan, &runtime, &server, &env, &mut report).await;
        server.shutdown().await;
        outcome?;
        print_stdout(&report.latency_table())?;
        return Ok(0);
    }
    let outcome = run_all(&plan, &runtime, &server, &env, &python, &package_python).await;
    server.shutdown().await;
    let report = outcome?;

    let text = report.markdown(args.quick);
    print_stdout(&text)?;
    std::fs::write(&args.output, &text)
        .map_err(|err| host(format!("cannot write {}: {err}", args.output.display())))?;
    eprintln!("bench: wrote {}", args.output.display());
    Ok(0)
}

async fn run_all(
    plan: &Plan,
    runtime: &Runtime,
    server: &LocalServer,
    env: &BTreeMap<String, String>,
    python: &Path,
    package_python: &Path,
) -> Result<Report, Failure> {
    let mut report = Report::default();

    eprintln!("bench: component and native floor side by side, control-plane count");
    side_by_side_latency(plan, runtime, server, env, &mut report).await?;
    eprintln!("bench: e2b-adk latency, count and big output");
    adk_side(plan, server, env, python, &mut report).await?;
    eprintln!("bench: cold start");
    cold_start(plan, env, python, &mut report).await?;
    for &bytes in &plan.big_outputs {
        eprintln!("bench: component big output {} MiB", bytes / MIB);
        let probe = run_probe(env, bytes).await?;
        report.big_output.push((bytes, probe));
    }
    for &count in &plan.session_counts {
        eprintln!("bench: {count} idle sessions");
        let row = idle_sessions(runtime, env, count).await?;
        report.sessions.push(row);
    }
    eprintln!("bench: stateless call cost");
    stateless_cost(plan, runtime, server, env, &mut report).await?;
    eprintln!("bench: MCP over stdio and HTTP, and HTTP sessions");
    mcp_cost(plan, env, &mut report).await?;
    eprintln!("bench: the first call, with and without a warm pool");
    pool_cost(runtime, server, env, &mut report).await?;
    eprintln!("bench: TLS through a proxy");
    tls_cost(plan, env, &mut report).await?;
    eprintln!("bench: the client's CPU per call");
    client_cpu(plan, env, python, package_python, &mut report).await?;
    eprintln!("bench: the Python package's cold start");
    python_package_cold_start(plan, env, package_python, python, &mut report).await?;
    report.wasm_bytes = EMBEDDED_COMPONENT.len() as u64;
    Ok(report)
}

fn server_env(server: &LocalServer) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("E2B_API_URL".to_string(), server.url()),
        ("E2B_SANDBOX_URL".to_string(), server.url()),
        ("E2B_API_KEY".to_string(), server.api_key().to_string()),
    ])
}

/// The stateless component, loaded off the async threads, and the options
/// of calls to the local server of `env`.
async fn load_stateless(
    env: &BTreeMap<String, String>,
) -> Result<(StatelessRuntime, StatelessOptions), Failure> {
    let runtime =
        tokio::task::spawn_blocking(|| StatelessRuntime::load(ComponentSource::EmbeddedStateless))
            .await
            .map_err(host)?
            .map_err(host)?;
    let options = StatelessOptions {
        env: env.clone(),
        ..StatelessOptions::default()
    };
    Ok((runtime, options))
}

async fn open_session(
    runtime: &Runtime,
    env: &BTreeMap<String, String>,
) -> Result<Session, Failure> {
    Session::open(
        runtime,
        SessionOptions {
            env: env.clone(),
            ..SessionOptions::default()
        },
    )
    .await
    .map_err(host)
}

/// Calls a tool and fails the benchmark unless it succeeded.
async fn call_ok(session: &Session, tool: &str, args: &Value) -> Result<Value, Failure> {
    let result = session.call_json(tool, args).await.map_err(host)?;
    check_success(tool, result)
}

fn check_success(tool: &str, result: Value) -> Result<Value, Failure> {
    if result.get("success").and_then(Value::as_bool) == Some(true) {
        Ok(result)
    } else {
        Err(host(format!("{tool} failed: {result}")))
    }
}

fn read_args() -> Value {
    json!({"path": BENCH_FILE})
}

fn list_args() -> Value {
    json!({"path": "/home/user"})
}
