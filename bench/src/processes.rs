//! Figures that need a fresh process: cold start, and memory under big
//! output (this binary re-run as a probe).

use super::*;

pub(crate) fn big_command(bytes: u64) -> String {
    format!("head -c {bytes} /dev/zero | tr '\\0' a")
}

/// (3): a fresh process to the first tool result, for `e2b-tools call` and
/// for `python -c` with e2b-adk; peak RSS from `/usr/bin/time`.
pub(crate) async fn cold_start(
    plan: &Plan,
    env: &BTreeMap<String, String>,
    python: &Path,
    report: &mut Report,
) -> Result<(), Failure> {
    // A small file every fresh sandbox has (local sandboxes see nothing of
    // the host's files): its synthesized /etc/hostname.
    let args = json!({"path": "/etc/hostname"}).to_string();
    // The shipped CLI, built beside this binary (same target directory).
    let exe = std::env::current_exe()
        .map_err(host)?
        .with_file_name("e2b-tools");
    if !exe.exists() {
        return Err(host(format!(
            "{} is missing: build it first (cargo build --release -p e2b-tools)",
            exe.display()
        )));
    }

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
    // A sandbox left alive by a stateless call, for the path that
    // attaches to an existing one.
    let made = {
        let mut cmd = Command::new(&exe);
        cmd.args(["--backend", "e2b", "--stateless", "call", "run_command"])
            .arg(json!({"command": "true"}).to_string())
            .arg("--json")
            .envs(env);
        json_child(cmd, "making the cold start's sandbox").await?
    };
    let sandbox_id = made["sandbox_id"]
        .as_str()
        .ok_or_else(|| host(format!("no sandbox_id in {made}")))?
        .to_string();
    let attached = {
        let mut cmd = Command::new(&exe);
        cmd.args(["--backend", "e2b", "--sandbox-id", &sandbox_id])
            .args(["call", "read_file", &args, "--json"]);
        cmd
    };
    // One unmeasured run each: the compilation cache and the page cache.
    let outcome = async {
        for (slot, template) in [(0, component), (1, adk), (2, attached)] {
            let mut runs = Vec::new();
            for round in 0..=plan.cold_runs {
                let run = timed_process(&template, env).await?;
                if round > 0 {
                    runs.push(run);
                }
            }
            report.cold[slot] = Some(ColdStart::of(runs));
        }
        Ok::<(), Failure>(())
    }
    .await;
    // Killed whatever happened: nothing else would before its timeout.
    let mut kill = Command::new(&exe);
    kill.args(["--backend", "e2b", "sandbox", "kill", &sandbox_id])
        .envs(env)
        .stdout(Stdio::null())
        .kill_on_drop(true);
    let killed = kill.status().await.map_err(host);
    outcome.and(killed.map(drop))
}

/// One process run: time to its first stdout line, and its peak RSS.
pub(crate) struct ProcessRun {
    pub(crate) first_result: Duration,
    pub(crate) peak_kib: u64,
}

pub(crate) async fn timed_process(
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
        .map_err(|err| host(format!("cannot run /usr/bin/time: {err}")))?;
    let stdout = child.stdout.take().ok_or_else(|| host("no stdout"))?;
    let mut lines = BufReader::new(stdout).lines();
    let first = lines.next_line().await.map_err(host)?;
    let first_result = started.elapsed();
    let output = child.wait_with_output().await.map_err(host)?;
    let line = first.unwrap_or_default();
    let result: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
    if result.get("success").and_then(Value::as_bool) != Some(true) {
        return Err(host(format!(
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

pub(crate) fn tempfile_path(prefix: &str) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    std::env::temp_dir().join(format!("{prefix}-{}-{n}", std::process::id()))
}

/// (4): runs this binary's probe in a child process, so the RSS measured
/// is the host's and the component's alone (not the server's).
pub(crate) async fn run_probe(
    env: &BTreeMap<String, String>,
    bytes: u64,
) -> Result<BigOutput, Failure> {
    let exe = std::env::current_exe().map_err(host)?;
    let mut probe = Command::new(exe);
    probe
        .args(["--probe-output-bytes", &bytes.to_string()])
        .envs(env);
    let value = json_child(probe, "the memory probe").await?;
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

/// Runs `command` (stdin closed, stderr shown) and parses the one JSON
/// line it prints; an `{"error": …}` answer is a failure.
pub(crate) async fn json_child(mut command: Command, what: &str) -> Result<Value, Failure> {
    let output = command
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(host)?;
    let text = String::from_utf8_lossy(&output.stdout);
    let value: Value = serde_json::from_str(text.trim()).map_err(|err| {
        host(format!(
            "{what} answered {text:?} ({}): {err}",
            output.status
        ))
    })?;
    if let Some(error) = value.get("error") {
        return Err(host(format!("{what}: {error}")));
    }
    Ok(value)
}

/// The probe child: one session, a warm-up call that creates the sandbox,
/// then the big `run_command`; prints one JSON line.
pub(crate) async fn probe_big_output(bytes: u64) -> Result<u8, Failure> {
    let runtime = tokio::task::spawn_blocking(|| Runtime::load(ComponentSource::Embedded))
        .await
        .map_err(host)?
        .map_err(host)?;
    let session = Session::open(
        &runtime,
        SessionOptions {
            env: e2b_env(std::env::vars()),
            config: SandboxConfig::default(),
            ..SessionOptions::default()
        },
    )
    .await
    .map_err(host)?;
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
        Err(failure) => json!({"error": failure.to_string()}),
    };
    print_stdout(&format!("{line}\n"))?;
    Ok(0)
}
