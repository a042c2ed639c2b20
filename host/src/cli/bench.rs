//! `e2b-tools bench`: the component side by side with e2b-adk 0.1.2 and a
//! native HTTP floor, against ONE local server started in this process.
//! Prints a markdown table and writes it to `BENCHMARKS.md`.
//!
//! Measured (see issue 6): client cost per trivial call, control-plane
//! requests per call, cold start, memory under big output, idle sessions per
//! process, and the size of the component.

use super::args::BenchArgs;
use super::Failure;
use bytes::Bytes;
use e2b_local::{LocalServer, Stats};
use e2b_tools_host::{
    e2b_env, ComponentSource, Runtime, SandboxConfig, Session, SessionOptions, EMBEDDED_COMPONENT,
};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// The e2b-adk side, driven over stdin/stdout.
const ADK_SCRIPT: &str = include_str!("../../../bench/adk_bench.py");

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
                big_outputs: vec![100 * MIB],
                adk_big_output: 100 * MIB,
                session_counts: vec![1_000],
            }
        } else {
            Self {
                latency_samples: 300,
                cold_runs: 7,
                big_outputs: vec![100 * MIB, 1024 * MIB],
                adk_big_output: 100 * MIB,
                session_counts: vec![1_000, 10_000],
            }
        }
    }
}

/// Back-to-back calls of the control-plane count.
const COUNTED_CALLS: usize = 100;

/// Runs `e2b-tools bench`, or its memory probe child.
pub(super) async fn bench(no_isolation: bool, args: BenchArgs) -> Result<u8, Failure> {
    if let Some(bytes) = args.probe_output_bytes {
        return probe_big_output(bytes).await;
    }
    let plan = Plan::new(args.quick);
    let python = args
        .python
        .clone()
        .or_else(|| std::env::var_os("E2B_TOOLS_PYTHON").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("target/pyenv/bin/python"));

    eprintln!("bench: loading the component");
    let runtime = tokio::task::spawn_blocking(|| Runtime::load(ComponentSource::Embedded))
        .await
        .map_err(Failure::host)?
        .map_err(Failure::host)?;
    let server = LocalServer::start(e2b_local::Options {
        isolation: if no_isolation {
            e2b_local::Isolation::None
        } else {
            e2b_local::Isolation::Bwrap
        },
        ..e2b_local::Options::default()
    })
    .await
    .map_err(Failure::host)?;
    let env = server_env(&server);

    let outcome = run_all(&plan, &runtime, &server, &env, &python).await;
    server.shutdown().await;
    let report = outcome?;

    let text = report.markdown(args.quick);
    super::print_stdout(&text)?;
    std::fs::write(&args.output, &text)
        .map_err(|err| Failure::host(format!("cannot write {}: {err}", args.output.display())))?;
    eprintln!("bench: wrote {}", args.output.display());
    Ok(0)
}

async fn run_all(
    plan: &Plan,
    runtime: &Runtime,
    server: &LocalServer,
    env: &BTreeMap<String, String>,
    python: &Path,
) -> Result<Report, Failure> {
    let mut report = Report::default();

    eprintln!("bench: component latency and control-plane count");
    component_latency(plan, runtime, server, env, &mut report).await?;
    eprintln!("bench: native floor");
    floor_latency(plan, server, &mut report).await?;
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
    .map_err(Failure::host)
}

/// Calls a tool and fails the benchmark unless it succeeded.
async fn call_ok(session: &Session, tool: &str, args: &Value) -> Result<Value, Failure> {
    let result = session.call_json(tool, args).await.map_err(Failure::host)?;
    check_success(tool, result)
}

fn check_success(tool: &str, result: Value) -> Result<Value, Failure> {
    if result.get("success").and_then(Value::as_bool) == Some(true) {
        Ok(result)
    } else {
        Err(Failure::host(format!("{tool} failed: {result}")))
    }
}

fn read_args() -> Value {
    json!({"path": BENCH_FILE})
}

fn list_args() -> Value {
    json!({"path": "/home/user"})
}

/// (b): the component through the host library, and its control-plane count.
async fn component_latency(
    plan: &Plan,
    runtime: &Runtime,
    server: &LocalServer,
    env: &BTreeMap<String, String>,
    report: &mut Report,
) -> Result<(), Failure> {
    let session = open_session(runtime, env).await?;
    let outcome = async {
        call_ok(
            &session,
            "write_file",
            &json!({"path": BENCH_FILE, "content": TEN_BYTES}),
        )
        .await?;
        for (tool, args, slot) in [
            ("read_file", read_args(), 0),
            ("list_files", list_args(), 1),
        ] {
            for _ in 0..plan.latency_samples / 10 + 1 {
                call_ok(&session, tool, &args).await?;
            }
            let mut samples = Vec::with_capacity(plan.latency_samples);
            for _ in 0..plan.latency_samples {
                let started = Instant::now();
                let result = session.call_json(tool, &args).await;
                samples.push(started.elapsed());
                check_success(tool, result.map_err(Failure::host)?)?;
            }
            report.latency[slot].component = Percentiles::of(samples);
        }
        let before = server.stats();
        for _ in 0..COUNTED_CALLS {
            call_ok(&session, "read_file", &read_args()).await?;
        }
        report.requests.component = RequestCounts::between(&before, &server.stats());
        Ok(())
    }
    .await;
    let _ = session.shutdown().await;
    outcome
}

type FloorClient = Client<HttpConnector, Full<Bytes>>;

/// (c): the least a native client must send for the same two calls, over a
/// pooled keep-alive connection, in a sandbox of its own.
async fn floor_latency(
    plan: &Plan,
    server: &LocalServer,
    report: &mut Report,
) -> Result<(), Failure> {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    let client: FloorClient = Client::builder(TokioExecutor::new()).build(connector);
    let url = server.url();
    let key = server.api_key().to_string();

    let create = e2b_wire::api::NewSandbox {
        template_id: e2b_wire::api::DEFAULT_TEMPLATE.into(),
        timeout: Some(300),
        secure: Some(true),
        ..Default::default()
    };
    let body = serde_json::to_vec(&create).map_err(Failure::host)?;
    let request = http::Request::post(format!("{url}/v2/sandboxes"))
        .header(e2b_wire::HEADER_API_KEY, &key)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .map_err(Failure::host)?;
    let (status, body) = exchange(&client, request).await?;
    if status != 201 && status != 200 {
        return Err(Failure::host(format!(
            "floor: creating a sandbox answered {status}: {}",
            String::from_utf8_lossy(&body)
        )));
    }
    let sandbox: e2b_wire::api::Sandbox = serde_json::from_slice(&body).map_err(Failure::host)?;
    let token = sandbox.envd_access_token.clone().unwrap_or_default();
    let envd = |builder: http::request::Builder| {
        builder
            .header(e2b_wire::HEADER_SANDBOX_ID, &sandbox.sandbox_id)
            .header(
                e2b_wire::HEADER_SANDBOX_PORT,
                e2b_wire::ENVD_PORT.to_string(),
            )
            .header(e2b_wire::HEADER_ACCESS_TOKEN, &token)
    };

    let upload = envd(http::Request::post(format!(
        "{url}/files?path={BENCH_FILE}"
    )))
    .header("content-type", "application/octet-stream")
    .body(Full::new(Bytes::from_static(TEN_BYTES.as_bytes())))
    .map_err(Failure::host)?;
    let (status, body) = exchange(&client, upload).await?;
    if status != 200 {
        return Err(Failure::host(format!(
            "floor: upload answered {status}: {}",
            String::from_utf8_lossy(&body)
        )));
    }

    let read = || {
        envd(http::Request::get(format!("{url}/files?path={BENCH_FILE}")))
            .body(Full::new(Bytes::new()))
    };
    let list_body = serde_json::to_vec(&e2b_wire::filesystem::ListDirRequest {
        path: "/home/user".into(),
        depth: 1,
    })
    .map_err(Failure::host)?;
    let list = || {
        envd(http::Request::post(format!(
            "{url}{}",
            e2b_wire::filesystem::LIST_DIR_PATH
        )))
        .header("content-type", e2b_wire::connect::CONTENT_TYPE_UNARY)
        .header("connect-protocol-version", "1")
        .body(Full::new(Bytes::from(list_body.clone())))
    };
    for slot in 0..2 {
        let make = |slot: usize| if slot == 0 { read() } else { list() };
        let mut samples = Vec::with_capacity(plan.latency_samples);
        for round in 0..plan.latency_samples + plan.latency_samples / 10 + 1 {
            let request = make(slot).map_err(Failure::host)?;
            let started = Instant::now();
            let (status, body) = exchange(&client, request).await?;
            let elapsed = started.elapsed();
            if status != 200 || (slot == 0 && body.as_ref() != TEN_BYTES.as_bytes()) {
                return Err(Failure::host(format!("floor: request answered {status}")));
            }
            if round > plan.latency_samples / 10 {
                samples.push(elapsed);
            }
        }
        report.latency[slot].floor = Percentiles::of(samples);
    }

    let kill = http::Request::delete(format!("{url}/sandboxes/{}", sandbox.sandbox_id))
        .header(e2b_wire::HEADER_API_KEY, &key)
        .body(Full::new(Bytes::new()))
        .map_err(Failure::host)?;
    exchange(&client, kill).await?;
    Ok(())
}

async fn exchange(
    client: &FloorClient,
    request: http::Request<Full<Bytes>>,
) -> Result<(u16, Bytes), Failure> {
    let response = client.request(request).await.map_err(Failure::host)?;
    let status = response.status().as_u16();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(Failure::host)?
        .to_bytes();
    Ok((status, body))
}

/// The e2b-adk process of the benchmark.
struct Adk {
    child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl Adk {
    fn spawn(python: &Path, env: &BTreeMap<String, String>) -> Result<Self, Failure> {
        let mut child = Command::new(python)
            .arg("-c")
            .arg(ADK_SCRIPT)
            .envs(env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|err| {
                Failure::host(format!(
                    "cannot run {} (set --python or E2B_TOOLS_PYTHON to a venv with e2b-adk 0.1.2): {err}",
                    python.display()
                ))
            })?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| Failure::host("no stdin"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| Failure::host("no stdout"))?;
        Ok(Self {
            child,
            stdin,
            stdout: BufReader::new(stdout).lines(),
        })
    }

    async fn ask(&mut self, command: Value) -> Result<Value, Failure> {
        self.stdin
            .write_all(format!("{command}\n").as_bytes())
            .await
            .map_err(Failure::host)?;
        self.stdin.flush().await.map_err(Failure::host)?;
        let line = self
            .stdout
            .next_line()
            .await
            .map_err(Failure::host)?
            .ok_or_else(|| Failure::host("the e2b-adk process ended early"))?;
        serde_json::from_str(&line).map_err(Failure::host)
    }

    async fn call_ok(&mut self, tool: &str, args: Value) -> Result<Value, Failure> {
        let answer = self
            .ask(json!({"op": "call", "tool": tool, "args": args}))
            .await?;
        check_success(tool, answer["result"].clone())
    }

    async fn time(&mut self, tool: &str, args: Value, n: usize) -> Result<Vec<Duration>, Failure> {
        let answer = self
            .ask(json!({"op": "time", "tool": tool, "args": args, "n": n}))
            .await?;
        let samples = answer["ns"]
            .as_array()
            .ok_or_else(|| Failure::host(format!("e2b-adk: unexpected answer {answer}")))?;
        Ok(samples
            .iter()
            .filter_map(Value::as_u64)
            .map(Duration::from_nanos)
            .collect())
    }

    async fn memory(&mut self) -> Result<(u64, u64), Failure> {
        let answer = self.ask(json!({"op": "rss"})).await?;
        Ok((
            answer["rss_kib"].as_u64().unwrap_or(0),
            answer["peak_kib"].as_u64().unwrap_or(0),
        ))
    }

    async fn close(mut self) -> Result<(), Failure> {
        let _ = self.ask(json!({"op": "close"})).await;
        let _ = tokio::time::timeout(Duration::from_secs(30), self.child.wait()).await;
        Ok(())
    }
}

/// (a): e2b-adk's tools called directly; its control-plane count and its
/// memory under big output.
async fn adk_side(
    plan: &Plan,
    server: &LocalServer,
    env: &BTreeMap<String, String>,
    python: &Path,
    report: &mut Report,
) -> Result<(), Failure> {
    let mut adk = Adk::spawn(python, env)?;
    let outcome = async {
        adk.call_ok(
            "write_file",
            json!({"path": BENCH_FILE, "content": TEN_BYTES}),
        )
        .await?;
        for (tool, args, slot) in [
            ("read_file", read_args(), 0),
            ("list_files", list_args(), 1),
        ] {
            adk.time(tool, args.clone(), plan.latency_samples / 10 + 1)
                .await?;
            let samples = adk.time(tool, args, plan.latency_samples).await?;
            report.latency[slot].adk = Percentiles::of(samples);
        }
        let before = server.stats();
        adk.time("read_file", read_args(), COUNTED_CALLS).await?;
        report.requests.adk = RequestCounts::between(&before, &server.stats());

        adk.ask(json!({"op": "reset_peak"})).await?;
        let (baseline, _) = adk.memory().await?;
        let started = Instant::now();
        let result = adk
            .call_ok(
                "run_command",
                json!({"command": big_command(plan.adk_big_output), "timeout": 600}),
            )
            .await?;
        let elapsed = started.elapsed();
        let (_, peak) = adk.memory().await?;
        report.adk_big_output = Some(BigOutput {
            baseline_kib: baseline,
            peak_kib: peak,
            linear_memory_bytes: None,
            returned_bytes: result["stdout"].as_str().map_or(0, str::len) as u64,
            elapsed,
        });
        Ok(())
    }
    .await;
    adk.close().await?;
    outcome
}

fn big_command(bytes: u64) -> String {
    format!("head -c {bytes} /dev/zero | tr '\\0' a")
}

/// (3): a fresh process to the first tool result, for `e2b-tools call` and
/// for `python -c` with e2b-adk; peak RSS from `/usr/bin/time`.
async fn cold_start(
    plan: &Plan,
    env: &BTreeMap<String, String>,
    python: &Path,
    report: &mut Report,
) -> Result<(), Failure> {
    // A 10-byte file every fresh sandbox sees (the local sandboxes see the
    // host's root read-only, except /tmp and the home directory).
    let dir = std::env::current_dir()
        .map_err(Failure::host)?
        .join("target")
        .join("bench");
    std::fs::create_dir_all(&dir).map_err(Failure::host)?;
    let file = dir.join("ten-bytes.txt");
    std::fs::write(&file, TEN_BYTES).map_err(Failure::host)?;
    let args = json!({"path": file.to_string_lossy()}).to_string();
    let exe = std::env::current_exe().map_err(Failure::host)?;

    let component = {
        let mut cmd = Command::new(&exe);
        cmd.args(["--backend", "e2b", "call", "read_file", &args, "--json"]);
        cmd
    };
    let adk_code = format!(
        "import asyncio, json\n\
         from e2b_adk import E2BPlugin\n\
         async def main():\n\
         \x20   plugin = E2BPlugin()\n\
         \x20   tools = {{t.name: t for t in plugin.get_tools()}}\n\
         \x20   result = await tools['read_file'].run_async(args=json.loads({args:?}), tool_context=None)\n\
         \x20   print(json.dumps(result), flush=True)\n\
         \x20   await plugin.close()\n\
         asyncio.run(main())\n"
    );
    let adk = {
        let mut cmd = Command::new(python);
        cmd.arg("-c").arg(&adk_code);
        cmd
    };
    // One unmeasured run each: the compilation cache and the page cache.
    for (slot, template) in [(0, component), (1, adk)] {
        let mut runs = Vec::new();
        for round in 0..=plan.cold_runs {
            let run = timed_process(&template, env).await?;
            if round > 0 {
                runs.push(run);
            }
        }
        report.cold[slot] = Some(ColdStart::of(runs));
    }
    Ok(())
}

/// One process run: time to its first stdout line, and its peak RSS.
struct ProcessRun {
    first_result: Duration,
    peak_kib: u64,
}

async fn timed_process(
    template: &Command,
    env: &BTreeMap<String, String>,
) -> Result<ProcessRun, Failure> {
    let std_cmd = template.as_std();
    let rss_file = tempfile_path("bench-rss");
    let mut cmd = Command::new("/usr/bin/time");
    cmd.arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(&rss_file)
        .arg(std_cmd.get_program())
        .args(std_cmd.get_args())
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|err| Failure::host(format!("cannot run /usr/bin/time: {err}")))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| Failure::host("no stdout"))?;
    let mut lines = BufReader::new(stdout).lines();
    let first = lines.next_line().await.map_err(Failure::host)?;
    let first_result = started.elapsed();
    let output = child.wait_with_output().await.map_err(Failure::host)?;
    let line = first.unwrap_or_default();
    let result: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
    if result.get("success").and_then(Value::as_bool) != Some(true) {
        return Err(Failure::host(format!(
            "cold start of {:?} failed: {line} {}",
            std_cmd.get_program(),
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    let peak_kib = std::fs::read_to_string(&rss_file)
        .ok()
        .and_then(|text| text.lines().last().and_then(|l| l.trim().parse().ok()))
        .unwrap_or(0);
    let _ = std::fs::remove_file(&rss_file);
    Ok(ProcessRun {
        first_result,
        peak_kib,
    })
}

fn tempfile_path(prefix: &str) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    std::env::temp_dir().join(format!("{prefix}-{}-{n}", std::process::id()))
}

/// (4): runs this binary's probe in a child process, so the RSS measured
/// is the host's and the component's alone (not the server's).
async fn run_probe(env: &BTreeMap<String, String>, bytes: u64) -> Result<BigOutput, Failure> {
    let exe = std::env::current_exe().map_err(Failure::host)?;
    let output = Command::new(exe)
        .args(["bench", "--probe-output-bytes", &bytes.to_string()])
        .envs(env)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(Failure::host)?;
    let text = String::from_utf8_lossy(&output.stdout);
    let value: Value = serde_json::from_str(text.trim())
        .map_err(|err| Failure::host(format!("the memory probe answered {text:?}: {err}")))?;
    if let Some(error) = value.get("error") {
        return Err(Failure::host(format!("memory probe: {error}")));
    }
    Ok(BigOutput {
        baseline_kib: value["baseline_kib"].as_u64().unwrap_or(0),
        peak_kib: value["peak_kib"].as_u64().unwrap_or(0),
        linear_memory_bytes: Some((
            value["linear_before"].as_u64().unwrap_or(0),
            value["linear_after"].as_u64().unwrap_or(0),
        )),
        returned_bytes: value["returned_bytes"].as_u64().unwrap_or(0),
        elapsed: Duration::from_millis(value["elapsed_ms"].as_u64().unwrap_or(0)),
    })
}

/// The probe child: one session, a warm-up call that creates the sandbox,
/// then the big `run_command`; prints one JSON line.
async fn probe_big_output(bytes: u64) -> Result<u8, Failure> {
    let runtime = tokio::task::spawn_blocking(|| Runtime::load(ComponentSource::Embedded))
        .await
        .map_err(Failure::host)?
        .map_err(Failure::host)?;
    let session = Session::open(
        &runtime,
        SessionOptions {
            env: e2b_env(std::env::vars()),
            config: SandboxConfig::default(),
            ..SessionOptions::default()
        },
    )
    .await
    .map_err(Failure::host)?;
    let outcome: Result<Value, Failure> = async {
        call_ok(&session, "run_command", &json!({"command": "true"})).await?;
        let linear_before = session.linear_memory_bytes().await;
        reset_peak_rss();
        let baseline_kib = memory_kib().0;
        let started = Instant::now();
        let result = call_ok(
            &session,
            "run_command",
            &json!({"command": big_command(bytes), "timeout": 600}),
        )
        .await?;
        let elapsed = started.elapsed();
        let peak_kib = memory_kib().1;
        Ok(json!({
            "baseline_kib": baseline_kib,
            "peak_kib": peak_kib,
            "linear_before": linear_before,
            "linear_after": session.linear_memory_bytes().await,
            "returned_bytes": result["stdout"].as_str().map_or(0, str::len),
            "elapsed_ms": elapsed.as_millis() as u64,
        }))
    }
    .await;
    let _ = session.shutdown().await;
    let line = match outcome {
        Ok(value) => value,
        Err(failure) => json!({"error": failure.message}),
    };
    super::print_stdout(&format!("{line}\n"))?;
    Ok(0)
}

/// (5): opens `count` idle sessions (no sandbox) and keeps them all.
async fn idle_sessions(
    runtime: &Runtime,
    env: &BTreeMap<String, String>,
    count: usize,
) -> Result<SessionsRow, Failure> {
    let before = memory_kib().0;
    let private_before = private_kib();
    let started = Instant::now();
    let mut sessions = Vec::with_capacity(count);
    let mut failure = None;
    for _ in 0..count {
        match open_session(runtime, env).await {
            Ok(session) => sessions.push(session),
            // Reported in the table, with how many opened before it.
            Err(err) => {
                failure = Some(err.message);
                break;
            }
        }
    }
    let opened = sessions.len();
    let elapsed = started.elapsed();
    let after = memory_kib().0;
    let private_after = private_kib();
    let linear = match sessions.first() {
        Some(session) => session.linear_memory_bytes().await,
        None => 0,
    };
    drop(sessions);
    Ok(SessionsRow {
        count,
        opened,
        failure,
        per_instance: elapsed / opened.max(1) as u32,
        rss_per_session_kib: after.saturating_sub(before) as f64 / opened.max(1) as f64,
        private_per_session_kib: private_after.saturating_sub(private_before) as f64
            / opened.max(1) as f64,
        linear_memory_bytes: linear,
    })
}

/// VmRSS and VmHWM of this process, in KiB.
fn memory_kib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Private (unshared) resident memory of this process, in KiB: RSS less
/// the page-cache pages it maps, such as the compiled component's memory
/// image, which every instance maps and RSS counts once per mapping.
fn private_kib() -> u64 {
    let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
    rollup
        .lines()
        .filter(|line| line.starts_with("Private_Clean:") || line.starts_with("Private_Dirty:"))
        .filter_map(|line| line.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum()
}

/// Resets VmHWM to the current RSS (Linux: `5` into `clear_refs`).
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

#[derive(Default, Clone)]
struct Percentiles {
    p50: Duration,
    p95: Duration,
    samples: usize,
}

impl Percentiles {
    fn of(mut samples: Vec<Duration>) -> Self {
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
struct LatencyRow {
    adk: Percentiles,
    component: Percentiles,
    floor: Percentiles,
}

#[derive(Default)]
struct RequestCounts {
    control_plane: u64,
    all: u64,
    routes: BTreeMap<String, u64>,
}

impl RequestCounts {
    fn between(before: &Stats, after: &Stats) -> Self {
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

    fn per_call(&self) -> f64 {
        self.control_plane as f64 / COUNTED_CALLS as f64
    }

    fn routes_text(&self) -> String {
        self.routes
            .iter()
            .map(|(k, n)| format!("`{k}` ×{n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Control-plane routes (`"<METHOD> <pattern>"` keys of [`Stats`]).
fn is_control_plane(key: &str) -> bool {
    let path = key.split_once(' ').map_or(key, |(_, path)| path);
    ["/sandboxes", "/v2/sandboxes", "/v3/sandboxes", "/templates"]
        .iter()
        .any(|prefix| path.starts_with(prefix))
}

#[derive(Default)]
struct Requests {
    adk: RequestCounts,
    component: RequestCounts,
}

struct ColdStart {
    p50: Duration,
    max: Duration,
    peak_kib: u64,
    runs: usize,
}

impl ColdStart {
    fn of(runs: Vec<ProcessRun>) -> Self {
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

struct BigOutput {
    baseline_kib: u64,
    peak_kib: u64,
    /// Before and after the big call (component only).
    linear_memory_bytes: Option<(u64, u64)>,
    returned_bytes: u64,
    elapsed: Duration,
}

struct SessionsRow {
    count: usize,
    /// How many opened (fewer than `count` when one failed).
    opened: usize,
    /// Why opening stopped early.
    failure: Option<String>,
    per_instance: Duration,
    rss_per_session_kib: f64,
    private_per_session_kib: f64,
    linear_memory_bytes: usize,
}

#[derive(Default)]
struct Report {
    /// read_file, list_files.
    latency: [LatencyRow; 2],
    requests: Requests,
    /// e2b-tools call, python -c.
    cold: [Option<ColdStart>; 2],
    big_output: Vec<(u64, BigOutput)>,
    adk_big_output: Option<BigOutput>,
    sessions: Vec<SessionsRow>,
    wasm_bytes: u64,
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

fn ratio(a: Duration, b: Duration) -> f64 {
    if b.is_zero() {
        f64::NAN
    } else {
        a.as_secs_f64() / b.as_secs_f64()
    }
}

fn verdict(met: bool) -> &'static str {
    if met {
        "met"
    } else {
        "**missed**"
    }
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / KIB)
}

impl Report {
    fn markdown(&self, quick: bool) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# Benchmarks: the e2b-tools component vs e2b-adk 0.1.2\n"
        );
        let _ = writeln!(
            out,
            "Generated by `e2b-tools bench{}` against one local server (`e2b-local`, \
             bubblewrap sandboxes) started in the benchmark's process; every number below \
             comes from the same run. What the local server's isolation costs (sandbox \
             creation, a trivial command) is in [local/BENCHMARKS.md](local/BENCHMARKS.md).\n",
            if quick { " --quick" } else { "" }
        );
        let _ = writeln!(out, "{}\n", machine_note());

        let _ = writeln!(out, "## 1. Client cost per trivial tool call\n");
        let _ = writeln!(
            out,
            "(a) e2b-adk's tools called directly (`await tool.run_async(...)`, timed inside \
             Python); (b) the component through the host library (`Session::call_json`); \
             (c) a native Rust client (hyper-util, pooled) sending only the essential request \
             (`GET /files?path=…`; the `ListDir` Connect unary call). {} samples each after \
             a warm-up.\n",
            self.latency[0].component.samples
        );
        let _ = writeln!(
            out,
            "| call | (a) e2b-adk p50 / p95 | (b) component p50 / p95 | (c) floor p50 / p95 | (a)/(b) p50 | (b)/(c) p50 |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|---|");
        for (name, row) in ["read_file (10 B)", "list_files"].iter().zip(&self.latency) {
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
             10-byte file; a fresh sandbox each time, so sandbox creation is included), \
             against the already running server; the compiled component is cached. Peak RSS \
             from `/usr/bin/time`.\n"
        );
        let _ = writeln!(out, "| command | p50 | max | peak RSS | runs |");
        let _ = writeln!(out, "|---|---|---|---|---|");
        for (name, cold) in [
            ("`e2b-tools --backend e2b call read_file`", &self.cold[0]),
            ("`python -c` (import e2b_adk, same call)", &self.cold[1]),
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
             one copy in the page cache; the private column leaves them out.\n"
        );
        let _ = writeln!(
            out,
            "| sessions | time per instance | RSS per session | private per session | guest linear memory each |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|");
        for row in &self.sessions {
            let _ = writeln!(
                out,
                "| {} | {} | {:.1} KiB | {:.1} KiB | {:.0} KiB |",
                match &row.failure {
                    None => row.count.to_string(),
                    Some(why) => format!("{} (**only {} opened**: {why})", row.count, row.opened),
                },
                ms(row.per_instance),
                row.rss_per_session_kib,
                row.private_per_session_kib,
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

        let _ = writeln!(out, "## Targets\n");
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
                "| (1) {name}: (b)/(c) ≤ 3 | {bc:.2} | {} |",
                verdict(bc <= 3.0)
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
                "| (3) cold start ≤ 30 ms | {} | {} |",
                ms(c.p50),
                verdict(c.p50 <= Duration::from_millis(30))
            );
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
                "| (5) ≤ 100 KiB per idle session | {:.1} KiB at {} (worst row) | {} |",
                row.rss_per_session_kib,
                row.opened,
                verdict(met)
            );
        }
        let _ = writeln!(
            out,
            "| (6) release .wasm ≤ 1 MiB | {:.0} KiB | {} |",
            self.wasm_bytes as f64 / KIB,
            verdict(self.wasm_bytes <= MIB)
        );
        out
    }
}

/// Cores, CPU model and date, for the report's header.
fn machine_note() -> String {
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
    format!("Machine: {cores} cores (`nproc`), {cpu}; run on {date}. Release build.")
}
