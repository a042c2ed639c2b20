//! (8) The MCP server: one tool call over stdio and over streamable HTTP
//! (the release `e2b-tools` binary, driven with raw JSON-RPC, samples
//! interleaved), and many HTTP sessions in one server process, with the
//! server's RSS per session: sessions that only initialized (no instance, no
//! sandbox yet) and sessions that made a call (an instance and a sandbox).

use super::*;

/// One run's figures.
#[derive(Default)]
pub(crate) struct McpRow {
    pub(crate) stdio: Percentiles,
    pub(crate) http: Percentiles,
    pub(crate) idle_sessions: usize,
    pub(crate) idle_kib_per_session: f64,
    pub(crate) busy_sessions: usize,
    pub(crate) busy_kib_per_session: f64,
    pub(crate) base_rss_kib: u64,
}

/// Sessions that only initialize.
const IDLE_SESSIONS: usize = 200;
/// Sessions that each run a call (an instance and a sandbox each).
const BUSY_SESSIONS: usize = 50;
const TOKEN: &str = "bench-token";

fn binary() -> Result<PathBuf, Failure> {
    let exe = std::env::current_exe().map_err(host)?;
    let bin = exe.with_file_name("e2b-tools");
    if bin.is_file() {
        Ok(bin)
    } else {
        Err(host(format!(
            "{} is missing: cargo build --release -p e2b-tools first",
            bin.display()
        )))
    }
}

fn server_command(env: &BTreeMap<String, String>, args: &[&str]) -> Result<Command, Failure> {
    let mut command = Command::new(binary()?);
    command
        .args(["--backend", "e2b"])
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(env)
        .env("E2B_TOOLS_MCP_TOKEN", TOKEN)
        .kill_on_drop(true);
    Ok(command)
}

fn request(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn initialize() -> Value {
    request(
        1,
        "initialize",
        json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"},
        }),
    )
}

pub(crate) fn tool_call(id: u64, name: &str, arguments: Value) -> Value {
    request(
        id,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    )
}

/// A tools/call answer whose result says `success: true`.
pub(crate) fn check_call(answer: &Value) -> Result<(), Failure> {
    match answer["result"]["structuredContent"]["success"].as_bool() {
        Some(true) => Ok(()),
        _ => Err(host(format!("MCP call failed: {answer}"))),
    }
}

/// `e2b-tools mcp` on stdio.
pub(crate) struct StdioServer {
    child: Child,
    input: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

impl StdioServer {
    pub(crate) async fn start(env: &BTreeMap<String, String>) -> Result<Self, Failure> {
        let mut child = server_command(env, &["mcp"])?
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(host)?;
        let input = child.stdin.take().ok_or_else(|| host("no stdin"))?;
        let output = child.stdout.take().ok_or_else(|| host("no stdout"))?;
        let mut this = Self {
            child,
            input,
            lines: BufReader::new(output).lines(),
        };
        this.ask(&initialize()).await?;
        this.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await?;
        Ok(this)
    }

    async fn send(&mut self, message: &Value) -> Result<(), Failure> {
        self.input
            .write_all(format!("{message}\n").as_bytes())
            .await
            .map_err(host)
    }

    pub(crate) async fn ask(&mut self, message: &Value) -> Result<Value, Failure> {
        self.send(message).await?;
        loop {
            let line = self
                .lines
                .next_line()
                .await
                .map_err(host)?
                .ok_or_else(|| host("the stdio server closed"))?;
            let answer: Value = serde_json::from_str(&line).map_err(host)?;
            if answer.get("id") == message.get("id") {
                return Ok(answer);
            }
        }
    }

    /// The server's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id().unwrap_or(0)
    }

    pub(crate) async fn stop(mut self) {
        drop(self.input);
        let _ = tokio::time::timeout(Duration::from_secs(30), self.child.wait()).await;
    }
}

/// `e2b-tools mcp --http`, and a client of it.
pub(crate) struct HttpServer {
    child: Child,
    url: String,
    client: Client<HttpConnector, Full<Bytes>>,
}

impl HttpServer {
    /// The server's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id().unwrap_or(0)
    }

    pub(crate) async fn start(env: &BTreeMap<String, String>) -> Result<Self, Failure> {
        Self::start_with(env, &[]).await
    }

    /// A server started with `extra` flags (`--warm-pool N`) before `mcp`.
    pub(crate) async fn start_with(
        env: &BTreeMap<String, String>,
        extra: &[&str],
    ) -> Result<Self, Failure> {
        let sessions = (IDLE_SESSIONS + BUSY_SESSIONS + 8).to_string();
        let mut args = extra.to_vec();
        args.extend(["mcp", "--http", "0", "--max-sessions", &sessions]);
        let mut child = server_command(env, &args)?
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(host)?;
        let stderr = child.stderr.take().ok_or_else(|| host("no stderr"))?;
        let mut lines = BufReader::new(stderr).lines();
        let url = loop {
            let line = lines
                .next_line()
                .await
                .map_err(host)?
                .ok_or_else(|| host("the HTTP server exited before it listened"))?;
            if let Some(url) = line.trim().strip_prefix("e2b-tools: MCP over HTTP at ") {
                break url.to_string();
            }
        };
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(Self {
            child,
            url,
            client: Client::builder(TokioExecutor::new()).build_http(),
        })
    }

    /// POSTs `message` in `session` (none: a new one); the answer's
    /// session id and JSON-RPC message (from JSON or the SSE stream).
    async fn post(
        &self,
        session: Option<&str>,
        message: &Value,
    ) -> Result<(Option<String>, Option<Value>), Failure> {
        let mut builder = http::Request::post(&self.url)
            .header("authorization", format!("Bearer {TOKEN}"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(id) = session {
            builder = builder
                .header("mcp-session-id", id)
                .header("mcp-protocol-version", "2025-11-25");
        }
        let request = builder
            .body(Full::new(Bytes::from(message.to_string())))
            .map_err(host)?;
        let response = self.client.request(request).await.map_err(host)?;
        let id = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let status = response.status();
        let body = body_bytes(response).await?;
        if !status.is_success() {
            return Err(host(format!(
                "HTTP {status}: {}",
                String::from_utf8_lossy(&body)
            )));
        }
        let text = String::from_utf8_lossy(&body);
        let answer = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .chain(std::iter::once(text.as_ref()))
            .filter_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
            .find(|v| v.get("id") == message.get("id") && v.get("id").is_some());
        Ok((id, answer))
    }

    /// A new initialized session's id.
    pub(crate) async fn session(&self) -> Result<String, Failure> {
        let (id, _) = self.post(None, &initialize()).await?;
        let id = id.ok_or_else(|| host("no mcp-session-id"))?;
        let notification = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        self.post(Some(&id), &notification).await?;
        Ok(id)
    }

    pub(crate) async fn call(&self, session: &str, message: &Value) -> Result<(), Failure> {
        let (_, answer) = self.post(Some(session), message).await?;
        check_call(&answer.ok_or_else(|| host("no answer"))?)
    }

    fn rss_kib(&self) -> u64 {
        let pid = self.child.id().unwrap_or(0);
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }

    /// SIGTERM: the server kills every session's sandbox, then exits.
    pub(crate) async fn stop(mut self) {
        if let Some(pid) = self.child.id() {
            let _ = std::process::Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status();
        }
        let _ = tokio::time::timeout(Duration::from_secs(60), self.child.wait()).await;
    }
}

pub(crate) async fn mcp_cost(
    plan: &Plan,
    env: &BTreeMap<String, String>,
    report: &mut Report,
) -> Result<(), Failure> {
    let (mut stdio, http) = (
        StdioServer::start(env).await?,
        HttpServer::start(env).await?,
    );
    let outcome = async {
        let session = write_bench_file_over_mcp(&mut stdio, &http).await?;
        let read = |id| tool_call(id, "read_file", json!({"path": BENCH_FILE}));
        for i in 0..(plan.latency_samples / 10 + 1) as u64 {
            check_call(&stdio.ask(&read(10 + i)).await?)?;
            http.call(&session, &read(10 + i)).await?;
        }
        let (mut over_stdio, mut over_http) = (Vec::new(), Vec::new());
        for i in 0..plan.latency_samples as u64 {
            let message = read(1_000 + i);
            let started = Instant::now();
            check_call(&stdio.ask(&message).await?)?;
            over_stdio.push(started.elapsed());
            let started = Instant::now();
            http.call(&session, &message).await?;
            over_http.push(started.elapsed());
        }
        let mut row = McpRow {
            stdio: Percentiles::of(over_stdio),
            http: Percentiles::of(over_http),
            base_rss_kib: http.rss_kib(),
            ..McpRow::default()
        };
        let before = http.rss_kib();
        for _ in 0..IDLE_SESSIONS {
            http.session().await?;
        }
        let idle = http.rss_kib();
        row.idle_sessions = IDLE_SESSIONS;
        row.idle_kib_per_session = idle.saturating_sub(before) as f64 / IDLE_SESSIONS as f64;
        let mut busy = Vec::with_capacity(BUSY_SESSIONS);
        for _ in 0..BUSY_SESSIONS {
            busy.push(http.session().await?);
        }
        let before = http.rss_kib();
        for (i, session) in busy.iter().enumerate() {
            let call = tool_call(5_000 + i as u64, "run_command", json!({"command": "true"}));
            http.call(session, &call).await?;
        }
        let after = http.rss_kib();
        row.busy_sessions = BUSY_SESSIONS;
        row.busy_kib_per_session = after.saturating_sub(before) as f64 / BUSY_SESSIONS as f64;
        report.mcp = Some(row);
        Ok(())
    }
    .await;
    stdio.stop().await;
    http.stop().await;
    outcome
}

/// Writes the ten-byte file through both servers (a session of the HTTP
/// one, whose id is returned).
pub(crate) async fn write_bench_file_over_mcp(
    stdio: &mut StdioServer,
    http: &HttpServer,
) -> Result<String, Failure> {
    let session = http.session().await?;
    let content = json!({"path": BENCH_FILE, "content": TEN_BYTES});
    let write = tool_call(2, "write_file", content);
    check_call(&stdio.ask(&write).await?)?;
    http.call(&session, &write).await?;
    Ok(session)
}

impl McpRow {
    pub(crate) fn markdown(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "\n## 8. The MCP server\n\n`read_file` of a 10-byte file through `e2b-tools mcp` \
             (the release binary, driven with raw JSON-RPC; the call's result comes back as \
             text and `structuredContent`), over stdio and over streamable HTTP \
             (`--http`, an SSE answer per request), samples interleaved, {} each.\n",
            self.stdio.samples
        );
        let _ = writeln!(out, "| transport | p50 / p95 |");
        let _ = writeln!(out, "|---|---|");
        for (name, latency) in [("stdio", &self.stdio), ("streamable HTTP", &self.http)] {
            let _ = writeln!(
                out,
                "| {name} | {} / {} |",
                ms(latency.p50),
                ms(latency.p95)
            );
        }
        let _ = writeln!(
            out,
            "\nSessions in one HTTP server process (its RSS was {:.1} MiB with one session \
             after the calls above; the sandboxes run in the local server, not in it):\n",
            self.base_rss_kib as f64 / KIB
        );
        let _ = writeln!(
            out,
            "| sessions | what each holds | server RSS per session |"
        );
        let _ = writeln!(out, "|---|---|---|");
        let _ = writeln!(
            out,
            "| {} | initialized only: no instance, no sandbox yet | {:.0} KiB |",
            self.idle_sessions, self.idle_kib_per_session
        );
        let _ = writeln!(
            out,
            "| {} | one call made: a component instance and a sandbox | {:.0} KiB |",
            self.busy_sessions, self.busy_kib_per_session
        );
    }
}
