//! The production path, offline: the CLI with only `E2B_API_KEY` set (no
//! `E2B_API_URL`, no `E2B_SANDBOX_URL`), so it talks to
//! `https://api.e2b.app` and `https://sandbox.e2b.app` exactly as against
//! E2B, through `HTTPS_PROXY` (a CONNECT proxy that sends every tunnel to
//! the local server's TLS face) and trusting the test CA by
//! `SSL_CERT_FILE`. What only E2B itself can show: its real certificates,
//! its edge's own behaviour, and the network between.

use crate::binary::{e2b_tools, run, Run};
use e2b_local::edge::{tls_server, Leaf, ProxyMode, TestCa, TunnelProxy};
use e2b_local::{Fault, FaultRule, LocalServer, RecordedRequest};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

/// Proxy variables the test machine may have: the tests set their own.
const PROXY_VARIABLES: [&str; 8] = [
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
];

/// `e2b-tools ARGS` as a user on E2B runs it: the key, a proxy, a CA file.
fn production(key: &str, https_proxy: &str, ca: &TestCa, args: &[&str]) -> Command {
    let mut command = e2b_tools(args);
    for name in PROXY_VARIABLES {
        command.env_remove(name);
    }
    command
        .env_remove("SSL_CERT_DIR")
        .env("E2B_API_KEY", key)
        .env("HTTPS_PROXY", https_proxy)
        .env("SSL_CERT_FILE", ca.file());
    command
}

/// Runs `command` with `stdin` off the async workers (the server and the
/// proxy run on them).
async fn run_async(command: Command, stdin: &str) -> (Run, Duration) {
    let stdin = stdin.to_string();
    let started = Instant::now();
    let run = tokio::task::spawn_blocking(move || run(command, &stdin))
        .await
        .expect("the run finishes");
    (run, started.elapsed())
}

/// Runs `command` with no input; it must exit 0.
async fn run_ok(command: Command) -> Run {
    run_ok_as(command, "the run").await
}

/// [`run_ok`], naming what ran in the failure.
async fn run_ok_as(command: Command, what: &str) -> Run {
    let (out, _) = run_async(command, "").await;
    assert_eq!(out.status, 0, "{what}: {out:?}");
    out
}

fn batch_lines(out: &Run) -> Vec<Value> {
    out.stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {out:?}")))
        .collect()
}

/// The `Host` header of a recorded request.
fn host_of(request: &e2b_local::RecordedRequest) -> &str {
    request
        .headers
        .iter()
        .find(|(name, _)| name == "host")
        .map_or("", |(_, value)| value.as_str())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tools_work_over_tls_through_a_proxy_with_only_the_key_set() {
    let ca = TestCa::new();
    let server = tls_server(&ca, Leaf::Valid, 1.0).await;
    let proxy = TunnelProxy::start(ProxyMode::Forward(server.addr())).await;
    let input = [
        json!({"tool": "run_code", "args": {"code": "x = 41"}}),
        json!({"tool": "run_code", "args": {"code": "x + 1"}}),
        json!({"tool": "write_file", "args": {"path": "/home/user/a.txt", "content": "over TLS"}}),
        json!({"tool": "read_file", "args": {"path": "/home/user/a.txt"}}),
        json!({"tool": "list_files", "args": {"path": "/home/user"}}),
        json!({"tool": "run_command", "args": {"command": "echo $((6 * 7))"}}),
        json!({"tool": "start_background_command", "args": {
            "command": "python3 -m http.server 8000", "port": 8000}}),
        json!({"tool": "run_command", "args": {
            "command": "curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:8000/"}}),
    ]
    .map(|line| line.to_string())
    .join("\n");
    let (out, _) = run_async(
        production(server.api_key(), &proxy.url(), &ca, &["batch"]),
        &input,
    )
    .await;
    let lines = batch_lines(&out);
    assert_eq!(lines.len(), 8, "{out:?}");
    for line in &lines {
        assert_eq!(line["success"], true, "{line}\n{out:?}");
    }
    assert_eq!(lines[1]["text"], "42");
    assert_eq!(lines[3]["content"], "over TLS");
    assert!(
        lines[4]["entries"].to_string().contains("a.txt"),
        "{}",
        lines[4]
    );
    assert_eq!(lines[5]["stdout"], "42\n");
    assert!(lines[6]["pid"].as_u64().is_some(), "{}", lines[6]);
    assert_eq!(lines[7]["stdout"], "200");

    // The CLI killed its sandbox at the end, over the same path.
    assert_eq!(server.stats().live_sandboxes, 0, "{out:?}");
    let requests = server.take_requests();
    let hosts: std::collections::BTreeSet<&str> = requests.iter().map(host_of).collect();
    assert_eq!(
        hosts,
        ["api.e2b.app", "sandbox.e2b.app"].into(),
        "the default hosts, nothing else"
    );
    for request in &requests {
        let routed = request.headers.iter().any(|(n, _)| n == "e2b-sandbox-id");
        assert_eq!(
            routed,
            host_of(request) == "sandbox.e2b.app",
            "sandbox traffic, and only it, is routed by header: {request:?}"
        );
    }
    assert!(requests
        .iter()
        .any(|r| r.method == "DELETE" && r.path.starts_with("/sandboxes/")));

    // Every tunnel went to one of the two hosts, and the pool reused them:
    // far fewer tunnels than requests.
    let connects = proxy.connects();
    for connect in &connects {
        assert!(
            ["api.e2b.app:443", "sandbox.e2b.app:443"].contains(&connect.target.as_str()),
            "{connect:?}"
        );
        assert!(connect.authorization.is_none(), "no credentials were given");
    }
    assert!(
        connects.len() <= 6 && connects.len() * 3 < requests.len(),
        "{} tunnels for {} requests",
        connects.len(),
        requests.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_by_id_the_heartbeat_and_retried_faults_work_through_the_proxy() {
    const SCALE: f64 = 10.0;
    let ca = TestCa::new();
    let server = tls_server(&ca, Leaf::Valid, SCALE).await;
    let proxy = TunnelProxy::start(ProxyMode::Forward(server.addr())).await;
    let key = server.api_key().to_string();
    let url = proxy.url();
    let cli = |args: &[&str]| production(&key, &url, &ca, args);

    // A 429 on create, then a reset and a 503 of the read, are retried.
    let once = |method: http::Method, path: &str, fault: Fault| FaultRule {
        method: Some(method),
        path_prefix: path.into(),
        times: 1,
        fault,
    };
    server.faults().inject(once(
        http::Method::POST,
        "/v2/sandboxes",
        Fault::Status {
            status: 429,
            message: "injected 429".into(),
            retry_after: None,
            should_retry: None,
        },
    ));
    server.faults().inject(once(
        http::Method::GET,
        "/files",
        Fault::ResetAfter { bytes: 0 },
    ));
    server.faults().inject(once(
        http::Method::GET,
        "/files",
        Fault::Status {
            status: 503,
            message: "injected 503".into(),
            retry_after: None,
            should_retry: None,
        },
    ));
    // The stateless call leaves its sandbox alive, its id in the result.
    let out = run_ok(cli(&[
        "--stateless",
        "--timeout",
        "10",
        "call",
        "--json",
        "write_file",
        r#"{"path": "/home/user/kept.txt", "content": "resumed"}"#,
    ]))
    .await;
    let id = out.json()["sandbox_id"].as_str().unwrap().to_string();
    let out = run_ok(cli(&[
        "--stateless",
        "--sandbox-id",
        &id,
        "call",
        "--json",
        "read_file",
        r#"{"path": "/home/user/kept.txt"}"#,
    ]))
    .await;
    assert_eq!(out.json()["content"], "resumed", "{out:?}");
    let stats = server.stats();
    assert_eq!(stats.sandboxes_created, 1, "resumed, not recreated");
    assert_eq!(stats.count("POST /v2/sandboxes"), 2, "429, then created");
    assert_eq!(stats.count("GET /files"), 3, "reset, 503, then read");
    assert!(
        stats.count("POST /v2/sandboxes/{id}/connect") >= 1,
        "{stats:?}"
    );

    // The heartbeat: a 10 s TTL lasts 1 s here; a 3 s call outlives it only
    // if the guest's refreshes get through.
    let out = run_ok(cli(&[
        "--time-scale",
        "10",
        "--timeout",
        "10",
        "call",
        "--json",
        "run_code",
        r#"{"code": "import time\ntime.sleep(3)\nprint('alive')"}"#,
    ]))
    .await;
    assert_eq!(out.json()["stdout"], "alive\n", "{out:?}");
    assert!(
        server.stats().count("POST /sandboxes/{id}/timeout") >= 2,
        "{:?}",
        server.stats()
    );
    let close = [
        "--stateless",
        "--sandbox-id",
        &id,
        "call",
        "close_sandbox",
        "{}",
    ];
    run_ok(cli(&close)).await;
    assert_eq!(server.stats().live_sandboxes, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_targets_go_to_a_forwarding_proxy_in_absolute_form_with_credentials() {
    let server = LocalServer::start(Default::default()).await.unwrap();
    let proxy = TunnelProxy::start(ProxyMode::ForwardPlain(server.addr())).await;
    // Names that never resolve (`.test` is reserved): only the proxy can
    // reach them. The flag wins over the environment's (broken) setting.
    let with_credentials = format!(
        "http://user:hunter2@{}",
        proxy.url().trim_start_matches("http://")
    );
    let mut command = e2b_tools(&[
        "--backend",
        "e2b",
        "--api-url",
        "http://api.e2b.test",
        "--sandbox-url",
        "http://sandbox.e2b.test",
        "--proxy",
        &with_credentials,
        "call",
        "--json",
        "run_command",
        r#"{"command": "echo forwarded"}"#,
    ]);
    for name in PROXY_VARIABLES {
        command.env_remove(name);
    }
    command
        .env("E2B_API_KEY", server.api_key())
        .env("HTTP_PROXY", "socks5://broken:1");
    let out = run_ok(command).await;
    assert_eq!(out.json()["stdout"], "forwarded\n", "{out:?}");
    let seen = proxy.connects();
    assert!(!seen.is_empty());
    for request in &seen {
        assert!(
            request.target.starts_with("http://api.e2b.test/")
                || request.target.starts_with("http://sandbox.e2b.test/"),
            "absolute form: {request:?}"
        );
        assert_eq!(
            request.authorization.as_deref(),
            Some("Basic dXNlcjpodW50ZXIy")
        );
    }
    assert!(!out.stderr.contains("hunter2"), "{out:?}");
}

/// One call that cannot get through; its failure and how long it took.
async fn failing_call(command: Command) -> (String, Duration) {
    let (out, elapsed) = run_async(command, "").await;
    assert_ne!(out.status, 0, "{out:?}");
    let result = out.json();
    assert_eq!(result["success"], false, "{out:?}");
    assert_eq!(result["kind"], "network", "{out:?}");
    let error = result["error"].as_str().unwrap().to_string();
    (format!("{error}\n{}", out.stderr), elapsed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_proxy_or_certificate_is_a_clear_network_failure_without_secrets() {
    let ca = TestCa::new();
    let good = tls_server(&ca, Leaf::Valid, 1.0).await;
    let wrong_name = tls_server(&ca, Leaf::WrongName, 1.0).await;
    let expired = tls_server(&ca, Leaf::Expired, 1.0).await;
    let key = good.api_key().to_string();
    // Stateless results carry the failure's kind.
    let call = [
        "--stateless",
        "--request-timeout-ms",
        "5000",
        "call",
        "--json",
        "run_command",
        r#"{"command": "true"}"#,
    ];
    let refusing = TunnelProxy::start(ProxyMode::Refuse).await;
    let dropping = TunnelProxy::start(ProxyMode::DropTunnel).await;
    let to_wrong_name = TunnelProxy::start(ProxyMode::Forward(wrong_name.addr())).await;
    let to_expired = TunnelProxy::start(ProxyMode::Forward(expired.addr())).await;
    let credentials = format!(
        "http://user:hunter2@{}",
        refusing.url().trim_start_matches("http://")
    );
    // A raw `@` in the password: hyper-util would take `PART@127.0.0.1`
    // for the host, and errors named it.
    let raw_at = format!(
        "http://alice:hunter2@PART@{}",
        refusing.url().trim_start_matches("http://")
    );
    let cases: [(&str, String, &[&str]); 7] = [
        (
            "a malformed proxy URL",
            "http://user:hunter2@:3128".into(),
            &["HTTPS_PROXY is not a usable proxy", "no host"],
        ),
        (
            "a raw '@' in the password",
            raw_at,
            &[
                "HTTPS_PROXY is not a usable proxy",
                "more than one '@' before the host",
            ],
        ),
        (
            "a SOCKS proxy",
            "socks5://user:hunter2@127.0.0.1:1080".into(),
            &["SOCKS proxies are not supported"],
        ),
        (
            "a proxy that refuses CONNECT",
            credentials,
            &["did not open a tunnel to api.e2b.app:443", "unsuccessful"],
        ),
        (
            "a proxy that drops the tunnel",
            dropping.url(),
            &["api.e2b.app"],
        ),
        (
            "a certificate for another name",
            to_wrong_name.url(),
            &[
                "TLS certificate rejected",
                "not valid for name \\\"api.e2b.app",
            ],
        ),
        (
            "an expired certificate",
            to_expired.url(),
            &["TLS certificate rejected", "expired"],
        ),
    ];
    for (case, proxy_url, expected) in cases {
        let (error, elapsed) = failing_call(production(&key, &proxy_url, &ca, &call)).await;
        for part in expected {
            assert!(error.contains(part), "{case}: {error:?} lacks {part:?}");
        }
        for part in ["hunter2", "PART"] {
            assert!(
                !error.contains(part),
                "{case}: the password leaked ({part}): {error}"
            );
        }
        assert!(!error.contains(&key), "{case}: the key leaked: {error}");
        // Retries included, well inside the budget of a few request timeouts.
        assert!(
            elapsed < Duration::from_secs(60),
            "{case}: took {elapsed:?}"
        );
    }
    // The refusing proxy got the credentials, as Proxy-Authorization.
    assert!(refusing
        .connects()
        .iter()
        .all(|c| c.authorization.as_deref() == Some("Basic dXNlcjpodW50ZXIy")));
    assert!(!refusing.connects().is_empty());
    // No request reached a server through a broken path.
    assert_eq!(
        wrong_name.stats().sandboxes_created + expired.stats().sandboxes_created,
        0
    );
}

/// One kind of request: method and path, the sandbox id replaced.
fn kind_of(request: &RecordedRequest, ids: &[String]) -> String {
    format!("{} {}", request.method, anonymize(&request.path, ids))
}

fn anonymize(text: &str, ids: &[String]) -> String {
    ids.iter().fold(text.to_string(), |text, id| {
        text.replace(id.as_str(), "{id}")
    })
}

/// The sandbox ids seen in `requests` (routing headers).
fn sandbox_ids(requests: &[RecordedRequest]) -> Vec<String> {
    let mut ids: Vec<String> = requests
        .iter()
        .flat_map(|r| r.headers.iter())
        .filter(|(name, _)| name == "e2b-sandbox-id")
        .map(|(_, value)| value.clone())
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

/// The first request of each kind, its query and headers with ids and
/// tokens replaced: kind → (query, header name → value).
fn first_of_each_kind(
    requests: &[RecordedRequest],
) -> BTreeMap<String, (Option<String>, BTreeMap<String, String>)> {
    let ids = sandbox_ids(requests);
    let mut kinds = BTreeMap::new();
    for request in requests {
        kinds.entry(kind_of(request, &ids)).or_insert_with(|| {
            let headers = request
                .headers
                .iter()
                .map(|(name, value)| {
                    let value = match name.as_str() {
                        "x-access-token" | "x-api-key" => "{secret}".to_string(),
                        _ => anonymize(value, &ids),
                    };
                    (name.clone(), value)
                })
                .collect();
            (request.query.as_ref().map(|q| anonymize(q, &ids)), headers)
        });
    }
    kinds
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_component_sends_what_the_official_sdk_sends() {
    let python = std::env::var("E2B_TOOLS_PYTHON").expect(
        "set E2B_TOOLS_PYTHON to a Python with the `e2b-code-interpreter` package \
         (`scripts/bootstrap --test` makes target/pyenv)",
    );
    let ca = TestCa::new();
    let server = tls_server(&ca, Leaf::Valid, 1.0).await;
    let proxy = TunnelProxy::start(ProxyMode::Forward(server.addr())).await;

    // The SDK, with its own `proxy` option.
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cli/sdk_production.py");
    let mut sdk = Command::new(python);
    sdk.arg(script).arg(proxy.url());
    for name in PROXY_VARIABLES {
        sdk.env_remove(name);
    }
    for (name, _) in std::env::vars() {
        if name.starts_with("E2B_") {
            sdk.env_remove(name);
        }
    }
    sdk.env("E2B_API_KEY", server.api_key())
        .env("SSL_CERT_FILE", ca.file());
    run_ok(sdk).await;
    let sdk_requests = server.take_requests();

    // The component, through HTTPS_PROXY.
    let key = server.api_key().to_string();
    let url = proxy.url();
    let cli = |args: &[&str]| production(&key, &url, &ca, args);
    let out = run_ok(cli(&[
        "--stateless",
        "call",
        "--json",
        "run_command",
        r#"{"command": "echo $((6 * 7))"}"#,
    ]))
    .await;
    let id = out.json()["sandbox_id"].as_str().unwrap().to_string();
    for (tool, args) in [
        ("start_background_command", r#"{"command": "sleep 30"}"#),
        (
            "write_file",
            r#"{"path": "/home/user/a.txt", "content": "over TLS"}"#,
        ),
        ("read_file", r#"{"path": "/home/user/a.txt"}"#),
        ("list_files", r#"{"path": "/home/user"}"#),
        ("run_code", r#"{"code": "x = 41\nx + 1"}"#),
    ] {
        run_ok_as(
            cli(&[
                "--stateless",
                "--sandbox-id",
                &id,
                "call",
                "--json",
                tool,
                args,
            ]),
            tool,
        )
        .await;
    }
    // The heartbeat sets the timeout: a clock 200x fast makes it come
    // within a 2 s call.
    run_ok(cli(&[
        "--sandbox-id",
        &id,
        "--time-scale",
        "200",
        "call",
        "--json",
        "run_command",
        r#"{"command": "sleep 2", "timeout": 3600}"#,
    ]))
    .await;
    run_ok(cli(&[
        "--stateless",
        "--sandbox-id",
        &id,
        "call",
        "close_sandbox",
        "{}",
    ]))
    .await;
    let ours = server.take_requests();

    let sdk_kinds = first_of_each_kind(&sdk_requests);
    let our_kinds = first_of_each_kind(&ours);
    let mut differences = Vec::new();
    for (kind, (sdk_query, sdk_headers)) in &sdk_kinds {
        let Some((our_query, our_headers)) = our_kinds.get(kind) else {
            differences.push(format!("{kind}: the SDK sends it, we never do"));
            continue;
        };
        if sdk_query != our_query {
            differences.push(format!("{kind}: query {sdk_query:?} vs ours {our_query:?}"));
        }
        let names: std::collections::BTreeSet<&String> =
            sdk_headers.keys().chain(our_headers.keys()).collect();
        for name in names {
            let (theirs, ours) = (sdk_headers.get(name), our_headers.get(name));
            if theirs != ours && !may_differ(kind, name) {
                differences.push(format!("{kind}: {name}: SDK {theirs:?}, ours {ours:?}"));
            }
        }
    }
    for kind in our_kinds.keys() {
        if !sdk_kinds.contains_key(kind) && !OURS_ONLY.contains(&kind.as_str()) {
            differences.push(format!("{kind}: we send it, the SDK never does"));
        }
    }
    assert!(
        differences.is_empty(),
        "requests that differ from the SDK's:\n{}",
        differences.join("\n")
    );
}

/// Requests we make that the SDK's operations do not.
const OURS_ONLY: [&str; 1] = [
    // Before attaching to a sandbox by id we read its `endAt`, so the
    // heartbeat never shortens a life someone else set longer (the SDK's
    // `connect` sets the timeout blindly).
    "GET /sandboxes/{id}",
];

/// Headers whose values (or presence) may differ from the SDK's, and why.
fn may_differ(kind: &str, header: &str) -> bool {
    match header {
        // Each client names itself: e2b-python-sdk/2.63.0, connectrpc or
        // python-httpx there, e2b-tools-wasm here.
        "user-agent" => true,
        // The Python SDK's telemetry about its own language and version; we
        // are not that SDK and do not claim to be.
        "lang" | "lang_version" | "package_version" | "publisher" | "sdk_runtime" | "system" => {
            true
        }
        // httpx's default `*/*`; no Accept means the same (RFC 9110 12.5.1).
        "accept" => true,
        // We never decompress, so we ask for identity; the SDK accepts
        // gzip/deflate (REST) or zstd/gzip/br (streams). A server honours both.
        "accept-encoding" => true,
        // Framing: we send the length of a body written whole, the SDK
        // streams Connect requests chunked. Bodies are not compared: they
        // differ in optional fields (our create names the template and
        // metadata, our connect sends the timeout).
        "content-length" | "transfer-encoding" => true,
        // Uploads: octet-stream on envd 0.5.7 and later (as the SDK itself
        // does for streamed data, `use_octet_stream`), its multipart default
        // for strings otherwise.
        "content-type" => kind == "POST /files",
        // Our creates carry a key (the SDK's only when the caller gives
        // one, `idempotency_key=`), so a create whose answer was lost is
        // retried into the same sandbox.
        "idempotency-key" => kind == "POST /v2/sandboxes",
        _ => false,
    }
}
