//! Every tool through the typed exports and through `call-tool`, including
//! what this project does better than e2b-adk.

use e2b_tools_host::{
    BackgroundArgs, EntryType, ErrorKind, KeyValue, Readiness, RunCodeArgs, RunCommandArgs,
    SandboxConfig,
};
use serde_json::json;

use crate::harness::{call, code, ok, server, session, session_with};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_tools_round_trip_in_one_sandbox() {
    let server = server().await;
    let s = session(&server).await;

    let out = s
        .run_code(&code("x = 41"))
        .await
        .unwrap()
        .expect("run-code");
    assert_eq!(out.text, "");
    let out = s.run_code(&code("x + 1")).await.unwrap().expect("run-code");
    assert_eq!(out.text, "42", "state persists across calls");

    s.write_file("/home/user/data.csv", "a,b\n1,2\n")
        .await
        .unwrap()
        .expect("write");
    let cmd = s
        .run_command(&RunCommandArgs {
            command: "wc -l < data.csv; echo $GREETING >&2; exit 3".into(),
            cwd: None,
            envs: vec![KeyValue {
                key: "GREETING".into(),
                value: "hi".into(),
            }],
            timeout_seconds: None,
        })
        .await
        .unwrap()
        .expect("a non-zero exit is not a failure");
    assert_eq!(
        (cmd.stdout.as_str(), cmd.stderr.as_str(), cmd.exit_code),
        ("2\n", "hi\n", 3)
    );

    let text = s
        .read_file("data.csv")
        .await
        .unwrap()
        .expect("relative paths resolve against /home/user");
    assert_eq!(text, "a,b\n1,2\n");
    let entries = s.list_files(None).await.unwrap().expect("list home");
    let entry = entries
        .iter()
        .find(|e| e.name == "data.csv")
        .expect("data.csv listed");
    assert_eq!(entry.type_, EntryType::File);

    let missing = s
        .read_file("/home/user/nope.txt")
        .await
        .unwrap()
        .expect_err("missing file");
    assert_eq!(missing.kind, ErrorKind::NotFound);
    assert_eq!(missing.path.as_deref(), Some("/home/user/nope.txt"));
    assert!(
        missing.message.starts_with("Failed to read file: "),
        "{}",
        missing.message
    );

    let bad = s
        .run_code(&RunCodeArgs {
            code: String::new(),
            language: None,
            envs: vec![],
            timeout_seconds: None,
        })
        .await
        .unwrap()
        .expect_err("empty code");
    assert_eq!(bad.kind, ErrorKind::InvalidArgument);

    assert!(s.shutdown().await.unwrap(), "the sandbox was killed");
    assert_eq!(server.stats().live_sandboxes, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timed_out_command_keeps_its_partial_output() {
    let server = server().await;
    let s = session(&server).await;
    let err = s
        .run_command(&RunCommandArgs {
            command: "echo before; sleep 30".into(),
            cwd: None,
            envs: vec![],
            timeout_seconds: Some(1),
        })
        .await
        .unwrap()
        .expect_err("the command times out");
    assert_eq!(err.kind, ErrorKind::Timeout);
    assert_eq!(err.partial_output, "before\n");
    assert_eq!(err.command.as_deref(), Some("echo before; sleep 30"));
    // The sandbox is still usable.
    ok(call(&s, "run_command", json!({"command": "echo after"})).await);
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_output_is_truncated_on_the_stream() {
    let server = server().await;
    let s = session(&server).await;
    // 50 MB of stdout; the guest keeps 10,000 bytes of it.
    let r = ok(call(
        &s,
        "run_command",
        json!({"command": "head -c 50000000 /dev/zero | tr '\\0' a"}),
    )
    .await);
    let stdout = r["stdout"].as_str().unwrap();
    assert_eq!(
        stdout,
        format!("{}…[truncated 49,990,000 bytes]", "a".repeat(10_000))
    );
    assert_eq!(r["exit_code"], 0);
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_output_bytes_is_configurable() {
    let server = server().await;
    let config = SandboxConfig {
        max_output_bytes: Some(5),
        ..SandboxConfig::default()
    };
    let s = session_with(&server, config, 1.0).await;
    let r = ok(call(&s, "run_code", json!({"code": "print('abcdefgh')"})).await);
    assert_eq!(r["stdout"], "abcde…[truncated 4 bytes]");
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_command_readiness_is_probed() {
    let server = server().await;
    let s = session(&server).await;
    let port = free_port();

    let started = s
        .start_background_command(&BackgroundArgs {
            command: format!("python3 -m http.server {port} --bind 127.0.0.1"),
            port: Some(port),
            cwd: None,
            envs: vec![],
            timeout_seconds: None,
        })
        .await
        .unwrap()
        .expect("started");
    assert_eq!(started.readiness, Some(Readiness::Ready), "{started:?}");
    assert!(started.pid > 0);
    let sandbox = s.sandbox_id().expect("a sandbox");
    // A local server routes this Host to the sandbox's port.
    assert_eq!(
        started.preview_url.as_deref(),
        Some(format!("http://{port}-{sandbox}.localhost:{}", server.addr().port()).as_str())
    );

    // The server is really up inside the sandbox.
    let r = ok(call(&s, "run_command", json!({"command": format!("curl -s -o /dev/null -w '%{{http_code}}' http://127.0.0.1:{port}/ || python3 -c \"import urllib.request;print(urllib.request.urlopen('http://127.0.0.1:{port}/').status)\"")})).await);
    assert!(r["stdout"].as_str().unwrap().contains("200"), "{r}");

    // A command that dies at once is reported as exited, with its output.
    let died = ok(call(
        &s,
        "start_background_command",
        json!({"command": "echo oops >&2; exit 7", "port": port + 1}),
    )
    .await);
    assert_eq!(died["readiness"], "exited", "{died}");
    assert_eq!(died["exit_code"], 7);
    // And without a port too.
    let died = ok(call(
        &s,
        "start_background_command",
        json!({"command": "no-such-binary-xyz"}),
    )
    .await);
    assert_eq!(died["readiness"], "exited", "{died}");
    assert_eq!(died["exit_code"], 127);

    // A process that never listens is reported as such after the wait.
    let config = SandboxConfig {
        readiness_timeout_ms: Some(1500),
        ..SandboxConfig::default()
    };
    let quick = session_with(&server, config, 1.0).await;
    let silent = ok(call(
        &quick,
        "start_background_command",
        json!({"command": "sleep 60", "port": free_port()}),
    )
    .await);
    assert_eq!(silent["readiness"], "not-listening", "{silent}");
    quick.shutdown().await.unwrap();
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_command_outlives_the_request_timeout() {
    // e2b-adk's background processes die after 60 s: the SDK sends its
    // request timeout as the Start stream's Connect-Timeout-Ms, and envd
    // kills the process at that deadline. Ours send none unless the call
    // asks for a timeout. With a 1 s request timeout, a component that
    // forwarded it would lose the process within the 2.5 s waited here.
    let server = server().await;
    // A first session creates the sandbox and its namespaces with the
    // default timeouts, so the 1 s one below only has quick calls to make
    // however loaded the machine is.
    let warm = session(&server).await;
    ok(call(&warm, "run_command", json!({"command": "true"})).await);
    let id = warm.sandbox_id().expect("a sandbox");
    let config = SandboxConfig {
        request_timeout_ms: Some(1_000),
        sandbox_id: Some(id),
        ..SandboxConfig::default()
    };
    let s = session_with(&server, config, 1.0).await;
    let r = ok(call(
        &s,
        "start_background_command",
        json!({"command": "sleep 300"}),
    )
    .await);
    let pid = r["pid"].as_u64().expect("a pid");
    tokio::time::sleep(std::time::Duration::from_millis(2_500)).await;
    // The pid is the sandbox's: the model can signal it in a command.
    let check = format!("kill -0 {pid} && echo alive");
    let ps = ok(call(&s, "run_command", json!({ "command": check })).await);
    assert_eq!(
        ps["stdout"].as_str().unwrap().trim(),
        "alive",
        "the background process outlived the request timeout: {ps}"
    );
    let stop = format!(
        "kill {pid}; for i in $(seq 50); do kill -0 {pid} 2>/dev/null || {{ echo stopped; exit; }}; sleep 0.1; done"
    );
    let ps = ok(call(&s, "run_command", json!({ "command": stop })).await);
    assert_eq!(ps["stdout"].as_str().unwrap().trim(), "stopped", "{ps}");
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rich_results_when_asked() {
    let server = server().await;
    let code = "class Pic:\n    def _repr_png_(self):\n        return b'\\x89PNG\\r\\n\\x1a\\nfake'\n    def _repr_html_(self):\n        return '<b>hi</b>'\nPic()";
    let plain = session(&server).await;
    let r = ok(call(&plain, "run_code", json!({"code": code})).await);
    assert!(
        r.get("results").is_none(),
        "no rich results by default (e2b-adk's dict): {r}"
    );
    plain.shutdown().await.unwrap();

    let config = SandboxConfig {
        rich_results: Some(true),
        ..SandboxConfig::default()
    };
    let rich = session_with(&server, config, 1.0).await;
    let out = rich
        .run_code(&RunCodeArgs {
            code: code.into(),
            language: None,
            envs: vec![],
            timeout_seconds: None,
        })
        .await
        .unwrap()
        .expect("run-code");
    let mimes: Vec<&str> = out.rich.iter().map(|r| r.mime_type.as_str()).collect();
    assert!(
        mimes.contains(&"image/png") && mimes.contains(&"text/html"),
        "{mimes:?}"
    );
    rich.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_tool_never_fails_on_garbage() {
    let server = server().await;
    let s = session(&server).await;
    for (tool, args, expected) in [
        (
            "no_such_tool",
            json!({}),
            "Unknown tool: no_such_tool. Available tools: run_code, ",
        ),
        (
            "run_code",
            json!(null),
            "Missing or invalid required argument: code",
        ),
        (
            "run_code",
            json!([1, 2]),
            "Invalid arguments: expected a JSON object",
        ),
        (
            "run_command",
            json!({"command": "x".repeat(1 << 20), "timeout": "soon"}),
            "Invalid timeout: expected a non-negative number of seconds",
        ),
        (
            "list_files",
            json!({"path": 7}),
            "invalid path: expected a string",
        ),
    ] {
        let r = call(&s, tool, args).await;
        assert_eq!(r["success"], false, "{tool}: {r}");
        let error = r["error"].as_str().unwrap_or_default();
        assert!(
            error.contains(expected),
            "{tool}: {error:?} lacks {expected:?}"
        );
    }
    let raw = s
        .call_text("run_code", "{not json")
        .await
        .expect("session survives");
    let r: serde_json::Value = serde_json::from_str(&raw).expect("call-tool returns JSON");
    assert_eq!(r["success"], false);
    let error = r["error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("Invalid arguments: expected a JSON object ("),
        "{error:?}"
    );
    // And the session still works.
    let r = ok(call(&s, "run_command", json!({"command": "echo fine"})).await);
    assert_eq!(r["stdout"], "fine\n");
    s.shutdown().await.unwrap();
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_writes_are_refused_and_the_largest_allowed_fits_a_small_guest() {
    let server = server().await;
    // A guest with half the default memory: a write at the limit must not
    // be copied more than the content and its JSON need.
    let s = crate::harness::session_capped(&server, 128 << 20).await;
    let max = e2b_wire::host_guest::MAX_WRITE_BYTES;
    let r = ok(call(
        &s,
        "write_file",
        json!({"path": "big.txt", "content": "x".repeat(max)}),
    )
    .await);
    assert_eq!(r["path"], "big.txt");
    let r = ok(call(&s, "run_command", json!({"command": "wc -c < big.txt"})).await);
    assert_eq!(r["stdout"], format!("{max}\n"));

    // One byte more: refused by the guest, with the path echoed.
    let r = call(
        &s,
        "write_file",
        json!({"path": "big.txt", "content": "x".repeat(max + 1)}),
    )
    .await;
    assert_eq!(r["success"], false, "{}", &r.to_string()[..200]);
    assert_eq!(r["path"], "big.txt");
    let error = r["error"].as_str().unwrap();
    assert!(error.contains(&format!("{} bytes", max + 1)), "{error}");
    assert!(error.contains("at most 33554432 bytes (32 MiB)"), "{error}");
    // Typed, and JSON larger than the guest could take: refused by the host.
    let err = s
        .write_file("big.txt", &"y".repeat(200 << 20))
        .await
        .unwrap()
        .expect_err("refused");
    assert_eq!(err.kind, ErrorKind::InvalidArgument, "{err:?}");
    let r = call(
        &s,
        "write_file",
        json!({"path": "big.txt", "content": "y".repeat(200 << 20)}),
    )
    .await;
    assert_eq!(r["success"], false);
    assert!(r["error"]
        .as_str()
        .unwrap()
        .starts_with("Invalid arguments: "));
    // Nothing was lost: the session and the file are as they were.
    let r = ok(call(&s, "run_command", json!({"command": "wc -c < big.txt"})).await);
    assert_eq!(r["stdout"], format!("{max}\n"));
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_language_the_backend_lacks_is_an_invalid_argument_not_a_crash() {
    let server = server().await;
    let code = |language: &str| RunCodeArgs {
        code: "1".into(),
        language: Some(language.into()),
        envs: vec![],
        timeout_seconds: None,
    };
    // Not told which languages there are: the local server says.
    let s = session(&server).await;
    for language in ["cobol"] {
        let err = s
            .run_code(&code(language))
            .await
            .unwrap()
            .expect_err(language);
        assert_eq!(err.kind, ErrorKind::InvalidArgument, "{err:?}");
        assert!(
            err.message.contains(&format!(
                "language '{language}' is not available on this backend"
            )),
            "{}",
            err.message
        );
    }
    assert!(s
        .instructions()
        .await
        .unwrap()
        .contains("typescript, r, java or bash"));
    s.shutdown().await.unwrap();

    // Told, as the CLI tells it for its local server: refused before any
    // request, and the instructions offer only what there is.
    let mut env = crate::harness::env_for(&server);
    env.insert(
        "E2B_TOOLS_LANGUAGES".into(),
        e2b_local::interpreter::LANGUAGES.join(","),
    );
    let told = e2b_tools_host::Session::open(
        crate::harness::runtime(),
        e2b_tools_host::SessionOptions {
            env,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let before = server.stats().count("POST /execute");
    let r = call(&told, "run_code", json!({"code": "1", "language": "cobol"})).await;
    assert_eq!(r["success"], false);
    assert_eq!(
        r["error"],
        "Failed to run code: language 'cobol' is not available on this backend (available: python, javascript, typescript, r, java, bash)"
    );
    assert_eq!(server.stats().count("POST /execute"), before);
    let text = told.instructions().await.unwrap();
    assert!(
        text.contains("execute python, javascript, typescript, r, java or bash in"),
        "{text}"
    );
    // Every language E2B's template has is here (Java on JJava).
    let r = ok(call(
        &told,
        "run_code",
        json!({"code": "System.out.println(6 * 7);", "language": "Java"}),
    )
    .await);
    assert_eq!(r["stdout"], "42\n");
    let r = ok(call(
        &told,
        "run_code",
        json!({"code": "console.log(6 * 7)", "language": "js"}),
    )
    .await);
    assert_eq!(r["stdout"], "42\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_many_times_the_guests_memory_is_truncated_not_buffered() {
    let server = server().await;
    // 24 MiB of guest memory, 100 MB of output from each tool.
    let s = crate::harness::session_capped(&server, 24 << 20).await;
    let total: u64 = 100_000_000;
    let marker = format!("…[truncated {} bytes]", "99,990,000");
    let r = ok(call(
        &s,
        "run_command",
        json!({"command": format!("head -c {total} /dev/zero | tr '\\0' x"), "timeout": 0}),
    )
    .await);
    let stdout = r["stdout"].as_str().unwrap();
    assert!(
        stdout.ends_with(&marker),
        "{}",
        &stdout[stdout.len() - 60..]
    );
    let r = ok(call(
        &s,
        "run_code",
        json!({"code": format!("import sys\nfor _ in range({}): sys.stdout.write('x' * 1_000_000)", total / 1_000_000)}),
    )
    .await);
    let stdout = r["stdout"].as_str().unwrap();
    assert!(
        stdout.ends_with(&marker),
        "{}",
        &stdout[stdout.len().saturating_sub(60)..]
    );
    ok(call(
        &s,
        "run_command",
        json!({"command": format!("head -c {total} /dev/zero > big")}),
    )
    .await);
    let r = ok(call(&s, "read_file", json!({"path": "big"})).await);
    let content = r["content"].as_str().unwrap();
    assert!(
        content.ends_with(&marker),
        "{}",
        &content[content.len() - 60..]
    );
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_binary_file_round_trips_in_base64_and_text_reads_say_it_is_not_text() {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let server = server().await;
    let config = SandboxConfig {
        max_output_bytes: Some(2 << 20),
        ..SandboxConfig::default()
    };
    let s = session_with(&server, config, 1.0).await;
    // 1 MiB of xorshift noise: every byte value, no valid UTF-8 to speak of.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let data: Vec<u8> = (0..1 << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    ok(call(
        &s,
        "write_file",
        json!({"path": "noise.bin", "content": b64.encode(&data), "encoding": "base64"}),
    )
    .await);
    let r = ok(call(&s, "run_command", json!({"command": "wc -c < noise.bin"})).await);
    assert_eq!(r["stdout"], format!("{}\n", 1 << 20));
    let r = ok(call(
        &s,
        "read_file",
        json!({"path": "noise.bin", "encoding": "base64"}),
    )
    .await);
    assert_eq!(r["encoding"], "base64");
    let back = b64
        .decode(r["content"].as_str().unwrap())
        .expect("whole base64");
    assert!(back == data, "the bytes came back changed");

    let r = ok(call(&s, "read_file", json!({"path": "noise.bin"})).await);
    assert_eq!(r["invalid_utf8"], true);
    assert!(r["content"].as_str().unwrap().contains('\u{FFFD}'));
    ok(call(
        &s,
        "write_file",
        json!({"path": "t.txt", "content": "plain"}),
    )
    .await);
    let r = ok(call(&s, "read_file", json!({"path": "t.txt"})).await);
    assert_eq!(
        r.as_object().unwrap().len(),
        3,
        "e2b-adk's dict for text: {r}"
    );

    let r = call(
        &s,
        "write_file",
        json!({"path": "x", "content": "@@", "encoding": "base64"}),
    )
    .await;
    assert_eq!(r["success"], false);
    assert!(
        r["error"]
            .as_str()
            .unwrap()
            .starts_with("Invalid base64 content"),
        "{r}"
    );
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listings_go_deeper_on_request_and_are_bounded() {
    let server = server().await;
    let s = session(&server).await;
    ok(call(
        &s,
        "run_command",
        json!({"command": "mkdir -p tree/a/b/c && touch tree/top tree/a/mid tree/a/b/low tree/a/b/c/deep && mkdir many && cd many && seq 1 1200 | xargs touch"}),
    )
    .await);
    let r = ok(call(&s, "list_files", json!({"path": "tree"})).await);
    assert_eq!(r["entries"].as_array().unwrap().len(), 2, "{r}");
    assert!(
        r["entries"][0].get("path").is_none(),
        "depth 1 is e2b-adk's shape: {r}"
    );
    let r = ok(call(&s, "list_files", json!({"path": "tree", "depth": 3})).await);
    let mut paths: Vec<&str> = r["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    paths.sort();
    assert_eq!(
        paths,
        [
            "/home/user/tree/a",
            "/home/user/tree/a/b",
            "/home/user/tree/a/b/c",
            "/home/user/tree/a/b/low",
            "/home/user/tree/a/mid",
            "/home/user/tree/top"
        ],
        "three levels, not the fourth: {r}"
    );
    let r = ok(call(&s, "list_files", json!({"path": "many"})).await);
    assert_eq!(r["entries"].as_array().unwrap().len(), 1000);
    assert_eq!(r["omitted_entries"], 200);
    for bad in [0, 10_000] {
        let r = call(&s, "list_files", json!({"path": "tree", "depth": bad})).await;
        assert_eq!(r["success"], false, "{r}");
        assert_eq!(
            r["error"],
            "Invalid depth: expected an integer between 1 and 10"
        );
    }
    s.shutdown().await.unwrap();
}
