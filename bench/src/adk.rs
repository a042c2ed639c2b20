//! The e2b-adk 0.1.2 side, a Python process driven over stdin/stdout.

use super::*;

/// The e2b-adk process of the benchmark.
pub(crate) struct Adk {
    pub(crate) child: Child,
    pub(crate) stdin: ChildStdin,
    pub(crate) stdout: Lines<BufReader<ChildStdout>>,
}

impl Adk {
    pub(crate) fn spawn(python: &Path, env: &BTreeMap<String, String>) -> Result<Self, Failure> {
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
                host(format!(
                    "cannot run {} (set --python or E2B_TOOLS_PYTHON to a venv with e2b-adk 0.1.2): {err}",
                    python.display()
                ))
            })?;
        let stdin = child.stdin.take().ok_or_else(|| host("no stdin"))?;
        let stdout = child.stdout.take().ok_or_else(|| host("no stdout"))?;
        Ok(Self {
            child,
            stdin,
            stdout: BufReader::new(stdout).lines(),
        })
    }

    pub(crate) async fn ask(&mut self, command: Value) -> Result<Value, Failure> {
        self.stdin
            .write_all(format!("{command}\n").as_bytes())
            .await
            .map_err(host)?;
        self.stdin.flush().await.map_err(host)?;
        let line = self
            .stdout
            .next_line()
            .await
            .map_err(host)?
            .ok_or_else(|| host("the e2b-adk process ended early"))?;
        serde_json::from_str(&line).map_err(host)
    }

    pub(crate) async fn call_ok(&mut self, tool: &str, args: Value) -> Result<Value, Failure> {
        let answer = self
            .ask(json!({"op": "call", "tool": tool, "args": args}))
            .await?;
        check_success(tool, answer["result"].clone())
    }

    /// Writes the ten-byte file the read benchmarks read.
    pub(crate) async fn write_bench_file(&mut self) -> Result<(), Failure> {
        let content = json!({"path": BENCH_FILE, "content": TEN_BYTES});
        self.call_ok("write_file", content).await.map(drop)
    }

    pub(crate) async fn time(
        &mut self,
        tool: &str,
        args: Value,
        n: usize,
    ) -> Result<Vec<Duration>, Failure> {
        let answer = self
            .ask(json!({"op": "time", "tool": tool, "args": args, "n": n}))
            .await?;
        let samples = answer["ns"]
            .as_array()
            .ok_or_else(|| host(format!("e2b-adk: unexpected answer {answer}")))?;
        Ok(samples
            .iter()
            .filter_map(Value::as_u64)
            .map(Duration::from_nanos)
            .collect())
    }

    pub(crate) async fn memory(&mut self) -> Result<(u64, u64), Failure> {
        let answer = self.ask(json!({"op": "rss"})).await?;
        Ok((
            answer["rss_kib"].as_u64().unwrap_or(0),
            answer["peak_kib"].as_u64().unwrap_or(0),
        ))
    }

    pub(crate) async fn close(mut self) -> Result<(), Failure> {
        let _ = self.ask(json!({"op": "close"})).await;
        let _ = tokio::time::timeout(Duration::from_secs(30), self.child.wait()).await;
        Ok(())
    }
}

/// (a): e2b-adk's tools called directly; its control-plane count and its
/// memory under big output.
pub(crate) async fn adk_side(
    plan: &Plan,
    server: &LocalServer,
    env: &BTreeMap<String, String>,
    python: &Path,
    report: &mut Report,
) -> Result<(), Failure> {
    let mut adk = Adk::spawn(python, env)?;
    let outcome = async {
        adk.write_bench_file().await?;
        for (slot, tool) in LATENCY_CALLS.iter().enumerate() {
            let args = latency_args(slot);
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
