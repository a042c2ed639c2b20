//! (b)–(c) client cost per trivial call, side by side: the component through
//! the host library, and the least a native client must send for the same
//! calls, one sample of each in turn so both see the same machine.

use super::*;

/// The trivial calls of section 1, in the report's order.
pub(crate) const LATENCY_CALLS: [&str; 3] = ["read_file", "list_files", "run_command"];

/// The command of the `run_command` row.
const TRIVIAL_COMMAND: &str = "true";

/// The arguments of each call of [`LATENCY_CALLS`].
pub(crate) fn latency_args(slot: usize) -> Value {
    match slot {
        0 => read_args(),
        1 => list_args(),
        _ => json!({"command": TRIVIAL_COMMAND}),
    }
}

/// (b) and (c), interleaved, and the component's control-plane count.
pub(crate) async fn side_by_side_latency(
    plan: &Plan,
    runtime: &Runtime,
    server: &LocalServer,
    env: &BTreeMap<String, String>,
    report: &mut Report,
) -> Result<(), Failure> {
    let session = open_session(runtime, env).await?;
    let floor = Floor::open(server).await;
    let outcome = async {
        let floor = floor.as_ref().map_err(|err| host(format!("{err:#}")))?;
        write_bench_file(&session).await?;
        for (slot, tool) in LATENCY_CALLS.iter().enumerate() {
            let args = latency_args(slot);
            let warm_up = plan.latency_samples / 10 + 1;
            let mut component = Vec::with_capacity(plan.latency_samples);
            let mut native = Vec::with_capacity(plan.latency_samples);
            for round in 0..warm_up + plan.latency_samples {
                let started = Instant::now();
                let result = session.call_json(tool, &args).await;
                let took = started.elapsed();
                check_success(tool, result.map_err(host)?)?;
                let floor_took = floor.call(slot).await?;
                if round >= warm_up {
                    component.push(took);
                    native.push(floor_took);
                }
            }
            report.latency[slot].component = Percentiles::of(component);
            report.latency[slot].floor = Percentiles::of(native);
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
    if let Ok(floor) = floor {
        floor.close().await;
    }
    outcome
}

/// `e2b-tools-bench --profile SECONDS`: `read_file` through the host library
/// in a loop, for a profiler attached to this process (`perf record -p`).
pub(crate) async fn profile_loop(
    runtime: &Runtime,
    env: &BTreeMap<String, String>,
    tool: &str,
    seconds: u64,
) -> Result<(), Failure> {
    let session = open_session(runtime, env).await?;
    let outcome = async {
        write_bench_file(&session).await?;
        let args = latency_args(slot_of(tool)?);
        call_for(tool, seconds, async || {
            call_ok(&session, tool, &args).await?;
            Ok(())
        })
        .await
    }
    .await;
    let _ = session.shutdown().await;
    outcome
}

/// `e2b-tools-bench --profile SECONDS --profile-floor`: the native floor's
/// request for `tool` in a loop, the other side of the same profile.
pub(crate) async fn profile_floor_loop(
    server: &LocalServer,
    tool: &str,
    seconds: u64,
) -> Result<(), Failure> {
    let slot = slot_of(tool)?;
    let floor = Floor::open(server).await?;
    let outcome = call_for(tool, seconds, async || floor.call(slot).await.map(drop)).await;
    floor.close().await;
    outcome
}

/// The slot in [`LATENCY_CALLS`] of `tool`.
fn slot_of(tool: &str) -> Result<usize, Failure> {
    LATENCY_CALLS
        .iter()
        .position(|name| *name == tool)
        .ok_or_else(|| host(format!("--profile-tool: one of {LATENCY_CALLS:?}")))
}

/// Runs `call` in a loop for `seconds`, saying how long each took.
async fn call_for(
    tool: &str,
    seconds: u64,
    mut call: impl AsyncFnMut() -> Result<(), Failure>,
) -> Result<(), Failure> {
    let until = Instant::now() + Duration::from_secs(seconds);
    let mut calls = 0u64;
    eprintln!(
        "bench: calling {tool} in a loop for {seconds} s (pid {})",
        std::process::id()
    );
    while Instant::now() < until {
        call().await?;
        calls += 1;
    }
    eprintln!(
        "bench: {calls} calls, {:.3} ms each",
        seconds as f64 * 1000.0 / calls as f64
    );
    Ok(())
}

pub(crate) type FloorClient = Client<HttpConnector, Full<Bytes>>;

/// (c): the least a native client must send for the same calls, over a
/// pooled keep-alive connection, in a sandbox of its own.
pub(crate) struct Floor {
    client: FloorClient,
    url: String,
    key: String,
    sandbox_id: String,
    token: String,
    list_body: Bytes,
    run_body: Bytes,
}

impl Floor {
    async fn open(server: &LocalServer) -> Result<Self, Failure> {
        Self::open_at(server.url(), server.api_key().to_string()).await
    }

    /// A floor client of the server at `url`, with its sandbox made and
    /// the ten-byte file written.
    pub(crate) async fn open_at(url: String, key: String) -> Result<Self, Failure> {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let client: FloorClient = Client::builder(TokioExecutor::new()).build(connector);

        let create = e2b_wire::api::NewSandbox {
            template_id: e2b_wire::api::DEFAULT_TEMPLATE.into(),
            timeout: Some(300),
            secure: Some(true),
            ..Default::default()
        };
        let body = serde_json::to_vec(&create).map_err(host)?;
        let request = http::Request::post(format!("{url}/v2/sandboxes"))
            .header(e2b_wire::HEADER_API_KEY, &key)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(host)?;
        let (status, body) = exchange(&client, request).await?;
        if status != 201 && status != 200 {
            return Err(host(format!(
                "floor: creating a sandbox answered {status}: {}",
                String::from_utf8_lossy(&body)
            )));
        }
        let sandbox: e2b_wire::api::Sandbox = serde_json::from_slice(&body).map_err(host)?;
        let list_body = serde_json::to_vec(&e2b_wire::filesystem::ListDirRequest {
            path: "/home/user".into(),
            depth: 1,
        })
        .map_err(host)?;
        let start = e2b_wire::process::StartRequest {
            process: e2b_wire::process::ProcessConfig {
                cmd: "/bin/bash".into(),
                args: vec!["-l".into(), "-c".into(), TRIVIAL_COMMAND.into()],
                ..Default::default()
            },
            stdin: Some(false),
            ..Default::default()
        };
        let start = serde_json::to_vec(&start).map_err(host)?;
        let floor = Self {
            client,
            url,
            key,
            token: sandbox.envd_access_token.clone().unwrap_or_default(),
            sandbox_id: sandbox.sandbox_id,
            list_body: Bytes::from(list_body),
            run_body: Bytes::from(e2b_wire::connect::encode_envelope(0, &start)),
        };
        let upload = floor
            .envd(http::Request::post(format!(
                "{}/files?path={BENCH_FILE}",
                floor.url
            )))
            .header("content-type", "application/octet-stream")
            .body(Full::new(Bytes::from_static(TEN_BYTES.as_bytes())))
            .map_err(host)?;
        let (status, body) = exchange(&floor.client, upload).await?;
        if status != 200 {
            return Err(host(format!(
                "floor: upload answered {status}: {}",
                String::from_utf8_lossy(&body)
            )));
        }
        Ok(floor)
    }

    /// A request to envd in the floor's sandbox.
    fn envd(&self, builder: http::request::Builder) -> http::request::Builder {
        builder
            .header(e2b_wire::HEADER_SANDBOX_ID, &self.sandbox_id)
            .header(
                e2b_wire::HEADER_SANDBOX_PORT,
                e2b_wire::ENVD_PORT.to_string(),
            )
            .header(e2b_wire::HEADER_ACCESS_TOKEN, &self.token)
    }

    /// A Connect call to envd's `path` with `body`.
    fn connect(
        &self,
        path: &str,
        content_type: &str,
        body: &Bytes,
    ) -> http::Result<http::Request<Full<Bytes>>> {
        self.envd(http::Request::post(format!("{}{path}", self.url)))
            .header("content-type", content_type)
            .header("connect-protocol-version", "1")
            .body(Full::new(body.clone()))
    }

    /// The essential request of call `slot`, timed, its answer checked.
    pub(crate) async fn call(&self, slot: usize) -> Result<Duration, Failure> {
        let request = match slot {
            0 => self
                .envd(http::Request::get(format!(
                    "{}/files?path={BENCH_FILE}",
                    self.url
                )))
                .body(Full::new(Bytes::new())),
            1 => self.connect(
                e2b_wire::filesystem::LIST_DIR_PATH,
                e2b_wire::connect::CONTENT_TYPE_UNARY,
                &self.list_body,
            ),
            _ => self.connect(
                e2b_wire::process::START_PATH,
                e2b_wire::connect::CONTENT_TYPE_STREAM,
                &self.run_body,
            ),
        }
        .map_err(host)?;
        let started = Instant::now();
        let (status, body) = exchange(&self.client, request).await?;
        let took = started.elapsed();
        let answered = match slot {
            0 => body.as_ref() == TEN_BYTES.as_bytes(),
            1 => true,
            // The stream's last envelope is its end (flags 0x02).
            _ => ends_with_end_of_stream(&body),
        };
        if status != 200 || !answered {
            return Err(host(format!(
                "floor: {} answered {status}: {}",
                LATENCY_CALLS[slot],
                String::from_utf8_lossy(&body)
            )));
        }
        Ok(took)
    }

    pub(crate) async fn close(self) {
        if let Ok(kill) =
            http::Request::delete(format!("{}/sandboxes/{}", self.url, self.sandbox_id))
                .header(e2b_wire::HEADER_API_KEY, &self.key)
                .body(Full::new(Bytes::new()))
        {
            let _ = exchange(&self.client, kill).await;
        }
    }
}

/// Whether a Connect stream's body ends with its end-of-stream envelope.
fn ends_with_end_of_stream(body: &[u8]) -> bool {
    let mut decoder = e2b_wire::connect::EnvelopeDecoder::new(1 << 20);
    decoder.push(body);
    let mut last = None;
    while let Ok(Some(envelope)) = decoder.next_envelope() {
        last = Some(envelope.is_end_stream());
    }
    last == Some(true)
}

pub(crate) async fn exchange(
    client: &FloorClient,
    request: http::Request<Full<Bytes>>,
) -> Result<(u16, Bytes), Failure> {
    let response = client.request(request).await.map_err(host)?;
    let status = response.status().as_u16();
    Ok((status, body_bytes(response).await?))
}

/// A response's whole body.
pub(crate) async fn body_bytes(
    response: http::Response<hyper::body::Incoming>,
) -> Result<Bytes, Failure> {
    Ok(response
        .into_body()
        .collect()
        .await
        .map_err(host)?
        .to_bytes())
}

/// Writes the ten-byte file the read benchmarks read.
pub(crate) async fn write_bench_file(session: &Session) -> Result<(), Failure> {
    call_ok(
        session,
        "write_file",
        &json!({"path": BENCH_FILE, "content": TEN_BYTES}),
    )
    .await?;
    Ok(())
}
