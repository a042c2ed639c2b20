//! (a)–(c) client cost per trivial call: the component through the host
//! library, and the least a native client must send for the same calls.

use super::*;

/// (b): the component through the host library, and its control-plane count.
pub(crate) async fn component_latency(
    plan: &Plan,
    runtime: &Runtime,
    server: &LocalServer,
    env: &BTreeMap<String, String>,
    report: &mut Report,
) -> Result<(), Failure> {
    let session = open_session(runtime, env).await?;
    let outcome = async {
        write_bench_file(&session).await?;
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
                check_success(tool, result.map_err(host)?)?;
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

pub(crate) type FloorClient = Client<HttpConnector, Full<Bytes>>;

/// (c): the least a native client must send for the same two calls, over a
/// pooled keep-alive connection, in a sandbox of its own.
pub(crate) async fn floor_latency(
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
    .map_err(host)?;
    let (status, body) = exchange(&client, upload).await?;
    if status != 200 {
        return Err(host(format!(
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
    .map_err(host)?;
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
            let request = make(slot).map_err(host)?;
            let started = Instant::now();
            let (status, body) = exchange(&client, request).await?;
            let elapsed = started.elapsed();
            if status != 200 || (slot == 0 && body.as_ref() != TEN_BYTES.as_bytes()) {
                return Err(host(format!("floor: request answered {status}")));
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
        .map_err(host)?;
    exchange(&client, kill).await?;
    Ok(())
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
