//! A host told to stop leaves no sandbox: each front-end (`call`, `batch`,
//! `mcp` on stdio, `mcp --http`) stopped by SIGTERM or SIGINT (and `mcp`
//! on stdio by SIGHUP, or by its client closing stdin) in the middle of a
//! long call, whether that call created the sandbox or a later one, kills
//! the sandboxes it made and ends by the signal within 5 s. A sandbox it
//! attached to with `--sandbox-id` is left running (unless
//! `--kill-on-exit`). Against a separate local server, as E2B would be,
//! whose API counts the sandboxes.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::binary::e2b_tools;
use crate::mcp::{api_post, http_server, initialize, live_sandboxes, local_serve, Stop};

pub(crate) type Env = BTreeMap<String, String>;

const SLEEP: &str = r#"{"command": "sleep 60"}"#;
const ECHO: &str = r#"{"command": "echo hi"}"#;

/// How a front-end is stopped.
#[derive(Debug, Clone, Copy)]
enum Stopping {
    /// By this signal.
    Signal(i32),
    /// By its client closing stdin (mcp on stdio).
    StdinClosed,
}

/// The sandboxes the local server of `env` runs.
fn live(env: &Env) -> usize {
    live_sandboxes(&env["E2B_API_URL"], &env["E2B_API_KEY"])
}

/// Waits until `env`'s server runs `n` sandboxes.
fn wait_live(env: &Env, n: usize, within: Duration, what: &str) {
    let until = Instant::now() + within;
    while live(env) != n {
        assert!(
            Instant::now() < until,
            "{what}: expected {n} sandboxes, the server runs {}",
            live(env)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `e2b-tools --backend e2b ARGS`, pointed at `env`'s server, stdin piped.
fn front_end(args: &[&str], env: &Env) -> Child {
    let mut all = vec!["--backend", "e2b"];
    all.extend_from_slice(args);
    e2b_tools(&all)
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("e2b-tools starts")
}

/// Stops `child` as `stopping` says; its exit status, which must come
/// within 5 s.
fn stop(child: &mut Child, stopping: Stopping) -> ExitStatus {
    match stopping {
        Stopping::Signal(signal) => {
            let _ = Command::new("kill")
                .args([format!("-{signal}"), child.id().to_string()])
                .status();
        }
        Stopping::StdinClosed => drop(child.stdin.take()),
    }
    let asked = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if asked.elapsed() > Duration::from_secs(5) {
            let _ = child.kill();
            panic!("{stopping:?}: still running 5 s later");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The process ended by `stopping`'s signal (or exited, when its client
/// went away), and 15 s later the server runs no sandbox.
fn ended_and_left_nothing(status: ExitStatus, stopping: Stopping, env: &Env, what: &str) {
    match stopping {
        Stopping::Signal(signal) => {
            assert_eq!(status.signal(), Some(signal), "{what}: {status:?}")
        }
        Stopping::StdinClosed => assert!(status.code().is_some(), "{what}: {status:?}"),
    }
    wait_live(env, 0, Duration::from_secs(15), what);
}

/// One JSON line to a child's stdin.
fn send(child: &mut Child, line: &str) {
    let stdin = child.stdin.as_mut().expect("stdin is open");
    writeln!(stdin, "{line}").unwrap();
    stdin.flush().unwrap();
}

/// The next line of a child's stdout.
fn read_line(out: &mut impl BufRead) -> String {
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    line
}

/// Waits for the long call to be running in its sandbox (created by it,
/// or by an earlier call).
fn long_call_running(env: &Env, what: &str) {
    wait_live(env, 1, Duration::from_secs(30), what);
    // The command has started by now or is about to: either way it is
    // mid-call.
    std::thread::sleep(Duration::from_millis(500));
}

const SIGNALS: [i32; 2] = [libc_signal::TERM, libc_signal::INT];

mod libc_signal {
    pub const HUP: i32 = 1;
    pub const INT: i32 = 2;
    pub const TERM: i32 = 15;
}

#[test]
fn call_stateless_call_and_batch_stopped_mid_call_kill_their_sandbox_and_end_by_the_signal() {
    let state = tempfile::tempdir().unwrap();
    let (local, env) = local_serve(state.path());
    let _local = Stop(local);
    for signal in SIGNALS {
        let stopping = Stopping::Signal(signal);
        // `call`: its one call creates the sandbox.
        let what = format!("call, signal {signal}");
        let mut call = front_end(&["call", "run_command", SLEEP], &env);
        long_call_running(&env, &what);
        let status = stop(&mut call, stopping);
        ended_and_left_nothing(status, stopping, &env, &what);

        // `--stateless call`: its call creates the sandbox, which no
        // answer will name: closed.
        let what = format!("--stateless call, signal {signal}");
        let mut call = front_end(&["--stateless", "call", "run_command", SLEEP], &env);
        long_call_running(&env, &what);
        let status = stop(&mut call, stopping);
        ended_and_left_nothing(status, stopping, &env, &what);

        // `batch`: the stopped call is the first, then a later one.
        for later in [false, true] {
            let what = format!("batch, signal {signal}, later {later}");
            let mut batch = front_end(&["batch"], &env);
            let mut out = BufReader::new(batch.stdout.take().unwrap());
            if later {
                send(
                    &mut batch,
                    &format!(r#"{{"tool": "run_command", "args": {ECHO}}}"#),
                );
                assert!(read_line(&mut out).contains(r#""stdout":"hi\n""#), "{what}");
            }
            send(
                &mut batch,
                &format!(r#"{{"tool": "run_command", "args": {SLEEP}}}"#),
            );
            long_call_running(&env, &what);
            let status = stop(&mut batch, stopping);
            ended_and_left_nothing(status, stopping, &env, &what);
        }
    }
}

/// The MCP handshake on stdio, then (for `later`) one quick call.
fn mcp_stdio_ready(mcp: &mut Child, out: &mut impl BufRead, later: bool) {
    send(
        mcp,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}"#,
    );
    assert!(read_line(out).contains(r#""id":1"#));
    send(
        mcp,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    if later {
        send(
            mcp,
            &format!(
                r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"run_command","arguments":{ECHO}}}}}"#
            ),
        );
        loop {
            // Progress notifications may come first.
            if read_line(out).contains(r#""id":2"#) {
                break;
            }
        }
    }
}

#[test]
fn mcp_on_stdio_stopped_mid_call_kills_its_sandbox_and_ends_by_the_signal() {
    let state = tempfile::tempdir().unwrap();
    let (local, env) = local_serve(state.path());
    let _local = Stop(local);
    let stoppings = [
        Stopping::Signal(libc_signal::TERM),
        Stopping::Signal(libc_signal::INT),
        Stopping::Signal(libc_signal::HUP),
        Stopping::StdinClosed,
    ];
    for stopping in stoppings {
        for later in [false, true] {
            let what = format!("mcp on stdio, {stopping:?}, later {later}");
            let mut mcp = front_end(&["mcp"], &env);
            let mut out = BufReader::new(mcp.stdout.take().unwrap());
            mcp_stdio_ready(&mut mcp, &mut out, later);
            send(
                &mut mcp,
                &format!(
                    r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"run_command","arguments":{SLEEP}}}}}"#
                ),
            );
            // Keep reading, so the server never blocks on its stdout.
            std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
            long_call_running(&env, &what);
            let status = stop(&mut mcp, stopping);
            ended_and_left_nothing(status, stopping, &env, &what);
        }
    }
}

/// One raw POST of `body` in MCP session `session` at `addr`, left
/// waiting for its answer on a thread of its own.
fn post_in_session(addr: &str, session: &str, body: &str) -> std::thread::JoinHandle<()> {
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer test-token\r\n\
         Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n\
         Mcp-Session-Id: {session}\r\nMcp-Protocol-Version: 2025-06-18\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut tcp = std::net::TcpStream::connect(addr).expect("connect");
    tcp.write_all(head.as_bytes()).unwrap();
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut tcp, &mut std::io::sink());
    })
}

#[test]
fn mcp_over_http_stopped_mid_call_kills_its_sandboxes_and_ends_by_the_signal() {
    let state = tempfile::tempdir().unwrap();
    let (local, env) = local_serve(state.path());
    let _local = Stop(local);
    for signal in SIGNALS {
        for later in [false, true] {
            let what = format!("mcp --http, signal {signal}, later {later}");
            let (mut server, url) = http_server(&["--backend", "e2b", "mcp", "--http", "0"], &env);
            let addr = url
                .trim_start_matches("http://")
                .trim_end_matches("/mcp")
                .to_string();
            let session = initialize(&addr, None)
                .session
                .unwrap_or_else(|| panic!("{what}: no session"));
            post_in_session(
                &addr,
                &session,
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            )
            .join()
            .unwrap();
            if later {
                let call = format!(
                    r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"run_command","arguments":{ECHO}}}}}"#
                );
                post_in_session(&addr, &session, &call).join().unwrap();
            }
            let call = format!(
                r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"run_command","arguments":{SLEEP}}}}}"#
            );
            let _waiting = post_in_session(&addr, &session, &call);
            long_call_running(&env, &what);
            let status = stop(&mut server, Stopping::Signal(signal));
            ended_and_left_nothing(status, Stopping::Signal(signal), &env, &what);
        }
    }
}

/// A sandbox made outside the command, through the server's API.
pub(crate) fn create_sandbox(env: &Env) -> String {
    let made = api_post(
        env,
        "/sandboxes",
        r#"{"templateID":"code-interpreter-v1","timeout":300}"#,
    );
    made["sandboxID"].as_str().expect("an id").to_string()
}

#[test]
fn a_sandbox_attached_to_is_left_running_unless_kill_on_exit() {
    let state = tempfile::tempdir().unwrap();
    let (local, env) = local_serve(state.path());
    let _local = Stop(local);
    let id = create_sandbox(&env);
    let attached = |extra: &[&str]| {
        let mut args = vec!["--backend", "e2b", "--sandbox-id", id.as_str()];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["call", "--json", "run_command", ECHO]);
        let mut command = e2b_tools(&args);
        command.envs(&env);
        crate::binary::run(command, "")
    };
    // Twice in a row: both work, and the sandbox lives on.
    for time in ["first", "second"] {
        let out = attached(&[]);
        assert_eq!(out.status, 0, "{time}: {out:?}");
        assert_eq!(out.json()["stdout"], "hi\n", "{time}: {out:?}");
        assert_eq!(live(&env), 1, "{time}: the attached sandbox lives");
    }
    // Asked to, the command kills it.
    let out = attached(&["--kill-on-exit"]);
    assert_eq!(out.status, 0, "{out:?}");
    wait_live(&env, 0, Duration::from_secs(10), "--kill-on-exit");
}

#[test]
fn stopped_twice_during_its_start_or_while_its_pool_fills_it_still_leaves_nothing() {
    let state = tempfile::tempdir().unwrap();
    let (local, env) = local_serve(state.path());
    let _local = Stop(local);
    let term = Stopping::Signal(libc_signal::TERM);

    // Twice: the second signal, during the cleanup, changes nothing.
    let mut call = front_end(&["call", "run_command", SLEEP], &env);
    long_call_running(&env, "twice");
    let _ = Command::new("kill")
        .args(["-TERM", &call.id().to_string()])
        .status();
    std::thread::sleep(Duration::from_millis(50));
    let status = stop(&mut call, term);
    ended_and_left_nothing(status, term, &env, "twice");

    // During its start: the call never begins.
    for delay in [0, 150] {
        let what = format!("{delay} ms into its start");
        let mut call = front_end(&["call", "run_command", SLEEP], &env);
        std::thread::sleep(Duration::from_millis(delay));
        let status = stop(&mut call, term);
        ended_and_left_nothing(status, term, &env, &what);
    }

    // While its warm pool fills.
    let (mut server, _url) = http_server(
        &["--backend", "e2b", "--warm-pool", "3", "mcp", "--http", "0"],
        &env,
    );
    let status = stop(&mut server, term);
    ended_and_left_nothing(status, term, &env, "while the pool fills");
}
