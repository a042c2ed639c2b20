//! The sandbox-option flags (docs/configuration.md's table) reach the
//! component and, through it, the server; bad values are clap's usage
//! errors. And `local serve` prints lines a shell can source.

use crate::binary::{e2b_tools, run, Run};
use e2b_local::{LocalServer, Options};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A key for servers that never check it.
const ANY_KEY: &str = "e2b_0123456789abcdef";

async fn local_server() -> LocalServer {
    LocalServer::start(Options::default())
        .await
        .expect("the local server starts")
}

/// `e2b-tools --backend e2b ARGS` with `E2B_API_KEY` as the only `E2B_*`
/// variable.
fn e2b_backend(key: &str, args: &[&str]) -> Command {
    let mut all = vec!["--backend", "e2b"];
    all.extend_from_slice(args);
    let mut command = e2b_tools(&all);
    command.env("E2B_API_KEY", key);
    command
}

/// Runs the binary off the async workers, so an in-test server keeps serving.
async fn run_async(command: Command) -> Run {
    tokio::task::spawn_blocking(move || run(command, ""))
        .await
        .expect("the run finishes")
}

/// Runs the binary, killing it (and failing) if it is not done by `deadline`.
fn run_with_deadline(mut command: Command, deadline: Duration) -> (Run, Duration) {
    let started = Instant::now();
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("e2b-tools starts");
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait works") {
            break status;
        }
        if started.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("e2b-tools still ran after {deadline:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let elapsed = started.elapsed();
    let mut stdout = String::new();
    let mut stderr = String::new();
    let _ = child.stdout.take().unwrap().read_to_string(&mut stdout);
    let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
    let run = Run {
        status: status.code().unwrap_or(-1),
        stdout,
        stderr,
    };
    (run, elapsed)
}

/// `GET path` on the server's control plane, the answer's body as JSON.
fn api_get(server: &LocalServer, path: &str) -> Value {
    let mut stream = TcpStream::connect(server.addr()).expect("the server accepts");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {}\r\nX-API-Key: {}\r\nConnection: close\r\n\r\n",
        server.addr(),
        server.api_key()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").expect("an HTTP answer");
    assert!(head.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        !head.to_ascii_lowercase().contains("chunked"),
        "expected a sized body: {answer}"
    );
    serde_json::from_str(body).unwrap_or_else(|err| panic!("not JSON ({err}): {answer}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn api_and_sandbox_url_flags_name_the_server_and_win_over_the_environment() {
    let server = local_server().await;
    let url = server.url();
    let code = json!({"code": "print(6 * 7)"}).to_string();
    let args = [
        "--api-url",
        &url,
        "--sandbox-url",
        &url,
        "call",
        "--json",
        "run_code",
        &code,
    ];

    // No E2B_API_URL or E2B_SANDBOX_URL: the flags alone name the server.
    // (The unresolvable domain keeps a flag that is lost from reaching E2B.)
    let mut command = e2b_backend(server.api_key(), &args);
    command.env("E2B_DOMAIN", "e2b-tools-test.invalid");
    let out = run_async(command).await;
    assert_eq!(out.status, 0, "{out:?}");
    assert_eq!(out.json()["stdout"], "42\n", "{out:?}");

    // The variables name a closed port: the flags win over them.
    let closed = "http://127.0.0.1:1";
    let mut command = e2b_backend(server.api_key(), &args);
    command
        .env("E2B_API_URL", closed)
        .env("E2B_SANDBOX_URL", closed);
    let out = run_async(command).await;
    assert_eq!(out.status, 0, "{out:?}");
    assert_eq!(out.json()["stdout"], "42\n", "{out:?}");

    server.shutdown().await;
}

#[test]
fn endpoint_flags_need_the_e2b_backend_and_absolute_urls() {
    // Implicitly local (no key) and explicitly local: the local server's
    // URLs and key would be overridden, so the flags are refused.
    for args in [
        &["--api-url", "http://127.0.0.1:1", "call", "run_code", "{}"][..],
        &[
            "--backend",
            "local",
            "--sandbox-url",
            "http://127.0.0.1:1",
            "call",
            "run_code",
            "{}",
        ],
        &["--backend", "local", "--domain", "example.test", "batch"],
    ] {
        let out = run(e2b_tools(args), "");
        assert_eq!(out.status, 2, "{args:?}: {out:?}");
        assert!(
            out.stderr
                .contains("names an E2B endpoint, so it needs the e2b backend"),
            "{args:?}: {out:?}"
        );
    }

    let out = run(e2b_tools(&["--api-url", "127.0.0.1:3000", "tools"]), "");
    assert_eq!(out.status, 2, "{out:?}");
    assert!(
        out.stderr.contains("expected an http:// or https:// URL"),
        "{out:?}"
    );
}

/// A server that accepts connections and never answers.
fn silent_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    url
}

#[test]
fn request_timeout_ms_bounds_each_request() {
    let url = silent_server();
    let command = e2b_backend(
        ANY_KEY,
        &[
            "--api-url",
            &url,
            "--sandbox-url",
            &url,
            "--request-timeout-ms",
            "500",
            "call",
            "--json",
            "run_code",
            r#"{"code": "1"}"#,
        ],
    );
    // The default (60 s) would outlast the deadline.
    let (out, elapsed) = run_with_deadline(command, Duration::from_secs(30));
    assert_eq!(out.status, 1, "{out:?}");
    let result = out.json();
    assert_eq!(result["success"], false, "{out:?}");
    assert!(
        result["error"]
            .as_str()
            .is_some_and(|e| e.contains("Request timed out")),
        "{out:?}"
    );
    assert!(elapsed < Duration::from_secs(30), "{elapsed:?}");
}

#[test]
fn bad_option_values_are_usage_errors() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--request-timeout-ms", "soon"],
            "invalid value 'soon' for '--request-timeout-ms <MS>'",
        ),
        (
            &["--request-timeout-ms=-1"],
            "invalid value '-1' for '--request-timeout-ms <MS>'",
        ),
        (
            &["--readiness-timeout-ms", "1.5"],
            "invalid value '1.5' for '--readiness-timeout-ms <MS>'",
        ),
        (&["--on-timeout", "sleep"], "[possible values: kill, pause]"),
        (
            &["--allow-internet-access", "maybe"],
            "[possible values: true, false]",
        ),
        (&["--volume-mount", "data"], "expected NAME=PATH"),
        // clap requires --on-timeout; the component requires it to be pause.
        (&["--auto-resume"], "--on-timeout <ACTION>"),
        (
            &["--on-timeout", "kill", "--auto-resume"],
            "auto-resume requires on-timeout: pause",
        ),
    ];
    for (flags, message) in cases {
        let mut args = flags.to_vec();
        args.push("tools");
        let out = run(e2b_tools(&args), "");
        assert_eq!(out.status, 2, "{args:?}: {out:?}");
        assert!(out.stderr.contains(message), "{args:?}: {out:?}");
        assert!(out.stdout.is_empty(), "{args:?}: {out:?}");
    }
}

#[test]
fn a_bad_proxy_flag_is_a_usage_error_that_shows_no_credentials() {
    for (url, reason) in [
        (
            "http://alice:pw@PART@proxy.corp:3128",
            "more than one '@' before the host",
        ),
        ("http://alice:pw@:3128", "no host"),
        ("socks5://alice:pw@proxy.corp:1080", "SOCKS"),
    ] {
        let out = run(e2b_tools(&["--proxy", url, "tools"]), "");
        assert_eq!(out.status, 2, "{url}: {out:?}");
        assert!(
            out.stderr.contains("--proxy is not a usable proxy") && out.stderr.contains(reason),
            "{url}: {out:?}"
        );
        for part in ["pw", "PART", "alice"] {
            assert!(!out.stderr.contains(part), "{url}: {part} leaked: {out:?}");
        }
        assert!(out.stdout.is_empty(), "{url}: {out:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sandbox_option_flags_reach_the_server() {
    let server = local_server().await;
    let url = server.url();
    let endpoints = ["--api-url", url.as_str(), "--sandbox-url", url.as_str()];
    let options = [
        "--on-timeout",
        "pause",
        "--auto-resume",
        "--allow-internet-access",
        "false",
        "--deny-out",
        "0.0.0.0/0",
        "--allow-public-traffic",
        "true",
        "--mask-request-host",
        "localhost:${PORT}",
        "--volume-mount",
        "data=/mnt/data",
        "--volume-mount",
        "cache=/mnt/cache",
        "--metadata",
        "test=flags",
    ];
    let call = ["call", "--json", "run_command", r#"{"command": "true"}"#];
    let out = run_async(e2b_backend(
        server.api_key(),
        &[&endpoints[..], &options, &call].concat(),
    ))
    .await;
    assert_eq!(out.status, 0, "{out:?}");

    // With on-timeout pause the CLI leaves the sandbox to pause instead of
    // killing it, so the server still has it, as it was created.
    let listed = api_get(&server, "/sandboxes");
    let listed = listed.as_array().expect("a list");
    assert_eq!(listed.len(), 1, "{listed:?}");
    let id = listed[0]["sandboxID"].as_str().expect("an id");
    let detail = api_get(&server, &format!("/sandboxes/{id}"));
    assert_eq!(
        detail["lifecycle"],
        json!({"autoResume": true, "onTimeout": "pause"}),
        "{detail}"
    );
    assert_eq!(detail["allowInternetAccess"], false, "{detail}");
    assert_eq!(
        detail["network"],
        json!({
            "denyOut": ["0.0.0.0/0"],
            "allowPublicTraffic": true,
            "maskRequestHost": "localhost:${PORT}",
        }),
        "{detail}"
    );
    assert_eq!(
        detail["volumeMounts"],
        json!([{"name": "data", "path": "/mnt/data"}, {"name": "cache", "path": "/mnt/cache"}]),
        "{detail}"
    );
    assert_eq!(detail["metadata"], json!({"test": "flags"}), "{detail}");

    // An allow rule reaches the server too, which refuses what it cannot
    // enforce.
    let out = run_async(e2b_backend(
        server.api_key(),
        &[&endpoints[..], &["--allow-out", "pypi.org"], &call].concat(),
    ))
    .await;
    assert_eq!(out.status, 1, "{out:?}");
    assert!(
        out.json()["error"]
            .as_str()
            .is_some_and(|e| e.contains(r#"allowOut ["pypi.org"]"#)),
        "{out:?}"
    );

    server.shutdown().await;
}

#[test]
fn readiness_timeout_ms_sets_how_long_a_port_is_waited_for() {
    // The port opens after 12 s: past the default wait of 10 s, within 20 s.
    let args = json!({
        "command": "sleep 12 && exec python3 -m http.server 8765 --bind 127.0.0.1",
        "port": 8765,
    })
    .to_string();
    let out = run(
        e2b_tools(&[
            "--readiness-timeout-ms",
            "20000",
            "call",
            "--json",
            "start_background_command",
            &args,
        ]),
        "",
    );
    assert_eq!(out.status, 0, "{out:?}");
    assert_eq!(out.json()["readiness"], "ready", "{out:?}");
}

#[test]
fn local_serve_prints_export_lines_a_shell_can_source() {
    let state = tempfile::tempdir().unwrap();
    let state_dir = state.path().to_str().unwrap();
    let mut server = e2b_tools(&["local", "serve", "--port", "0", "--state-dir", state_dir])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("e2b-tools local serve starts");
    let mut stdout = BufReader::new(server.stdout.take().unwrap());
    let mut lines = Vec::new();
    for _ in 0..3 {
        let mut line = String::new();
        stdout.read_line(&mut line).expect("stdout is readable");
        lines.push(line);
    }
    let names: Vec<&str> = lines
        .iter()
        .map(|line| {
            line.strip_prefix("export ")
                .and_then(|rest| rest.split_once('='))
                .map_or("", |(name, _)| name)
        })
        .collect();
    assert_eq!(
        names,
        ["E2B_API_URL", "E2B_SANDBOX_URL", "E2B_API_KEY"],
        "{lines:?}"
    );

    // A shell sources the lines; a call in that shell uses the server.
    let script = format!(
        "{}exec \"$0\" --backend e2b call --json run_code '{{\"code\": \"print(6 * 7)\"}}'",
        lines.concat()
    );
    let mut shell = Command::new("sh");
    shell.args(["-c", &script, env!("CARGO_BIN_EXE_e2b-tools")]);
    for (key, _) in std::env::vars().filter(|(key, _)| key.starts_with("E2B_")) {
        shell.env_remove(key);
    }
    let out = run(shell, "");

    // Ctrl-C stops the server (it kills its sandboxes first).
    let stopped = Command::new("kill")
        .args(["-INT", &server.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(stopped.success());
    let status = server.wait().expect("the server exits");
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();

    assert_eq!(out.status, 0, "{out:?}");
    assert_eq!(out.json()["stdout"], "42\n", "{out:?}");
    assert!(status.success(), "{status:?}");
    assert_eq!(rest, "", "only the export lines go to stdout");
}

#[test]
fn local_serve_keeps_its_api_key_across_restarts_unless_given_one() {
    let state = tempfile::tempdir().unwrap();
    let key_of = |extra: &[&str]| {
        let (mut server, env) = crate::mcp::local_serve_with(state.path(), extra);
        let _ = Command::new("kill")
            .args(["-TERM", &server.id().to_string()])
            .status();
        let _ = server.wait();
        env["E2B_API_KEY"].clone()
    };
    let first = key_of(&[]);
    assert!(first.starts_with("e2b_"), "{first}");
    assert_eq!(key_of(&[]), first, "the same key after a restart");
    let kept = state.path().join(".api-key");
    let mode = std::fs::metadata(&kept).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "only its owner reads it");
    assert_eq!(key_of(&["--api-key", "e2b_chosen"]), "e2b_chosen");
    assert_eq!(
        key_of(&[]),
        first,
        "a chosen key does not replace the kept one"
    );
}

/// `local serve --ephemeral --stop-at-eof`: a server for one program's
/// life. It keeps nothing, and when its input ends (the program that
/// started it exited, however it exited) it stops, killing its sandboxes.
#[test]
fn an_ephemeral_server_stops_when_its_input_ends() {
    let mut server = e2b_tools(&["local", "serve", "--ephemeral", "--stop-at-eof"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("e2b-tools local serve starts");
    let mut stdout = BufReader::new(server.stdout.take().unwrap());
    let mut env = std::collections::BTreeMap::new();
    for _ in 0..3 {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let (name, value) = line
            .trim()
            .trim_start_matches("export ")
            .split_once('=')
            .unwrap();
        env.insert(name.to_string(), value.to_string());
    }
    // A sandbox alive when the input ends.
    let addr = env["E2B_API_URL"].trim_start_matches("http://").to_string();
    let body = r#"{"templateID": "base"}"#;
    let mut tcp = TcpStream::connect(&addr).unwrap();
    write!(
        tcp,
        "POST /v2/sandboxes HTTP/1.1\r\nHost: {addr}\r\nX-API-KEY: {}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        env["E2B_API_KEY"],
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    tcp.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");

    let id = answer
        .split("\"sandboxID\":\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a sandbox id")
        .to_string();
    let alive = || {
        let out = Command::new("pgrep").args(["-f", &id]).output().unwrap();
        !out.stdout.is_empty()
    };
    assert!(alive(), "the sandbox's processes name its id");

    drop(server.stdin.take());
    let deadline = Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(status) = server.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = server.kill();
            panic!("the server did not stop when its input ended");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    let mut pipe = server.stderr.take().unwrap();
    pipe.read_to_string(&mut stderr).unwrap();
    assert!(status.success(), "{status:?}\n{stderr}");
    assert!(stderr.contains("state: none (nothing is kept)"), "{stderr}");
    assert!(!alive(), "its sandbox outlived it");
}
