//! process.Process over Connect JSON.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{json, Value};

use crate::common::{parse_stream, run, start, start_sandbox, stdout_of};

#[tokio::test]
async fn start_streams_start_data_end() {
    let h = start().await;
    let sbx = h
        .create(json!({"templateID": "base", "envVars": {"G": "global", "O": "sandbox"}}))
        .await;
    let (events, end) = h
        .stream(
            &sbx,
            "/process.Process/Start",
            json!({"process": {"cmd": "/bin/bash", "args": ["-l", "-c", "echo $G $O $HOME $USER; pwd; touch /etc/x 2>/dev/null || echo ro"], "envs": {"O": "request"}}, "stdin": false}),
            &[],
        )
        .await;
    assert!(
        events[0].pointer("/event/start/pid").is_some(),
        "{events:?}"
    );
    assert_eq!(
        stdout_of(&events),
        "global request /home/user user\n/home/user\nro\n"
    );
    assert_eq!(
        events.last().unwrap(),
        &json!({"event": {"end": {"exited": true, "status": "exit status 0"}}})
    );
    assert_eq!(end, json!({}));

    let (events, _) = run(&h, &sbx, "echo oops >&2; exit 2").await;
    assert_eq!(
        events.last().unwrap()["event"]["end"],
        json!({"exitCode": 2, "exited": true, "status": "exit status 2", "error": "exit status 2"})
    );
    h.server.shutdown().await;
}

#[tokio::test]
async fn cwd_relative_and_missing() {
    let (h, sbx) = start_sandbox().await;
    run(&h, &sbx, "mkdir -p sub/dir").await;
    let (events, _) = h
        .stream(
            &sbx,
            "/process.Process/Start",
            json!({"process": {"cmd": "pwd", "cwd": "sub/dir"}}),
            &[],
        )
        .await;
    assert_eq!(stdout_of(&events), "/home/user/sub/dir\n");
    let (events, end) = h
        .stream(
            &sbx,
            "/process.Process/Start",
            json!({"process": {"cmd": "pwd", "cwd": "/nope"}}),
            &[],
        )
        .await;
    assert!(events.is_empty());
    assert_eq!(end["error"]["code"], "invalid_argument");
    assert_eq!(end["error"]["message"], "cwd '/nope' does not exist");
    h.server.shutdown().await;
}

#[tokio::test]
async fn deadline_kills_the_process_without_end_event() {
    let (h, sbx) = start_sandbox().await;
    let started = Instant::now();
    let (events, end) = h
        .stream(
            &sbx,
            "/process.Process/Start",
            json!({"process": {"cmd": "/bin/bash", "args": ["-c", "echo begun; sleep 30"]}}),
            &[("connect-timeout-ms", "700")],
        )
        .await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(stdout_of(&events), "begun\n");
    assert!(events.iter().all(|e| e.pointer("/event/end").is_none()));
    assert_eq!(end["error"]["code"], "deadline_exceeded");
    assert_eq!(end["error"]["message"], "context deadline exceeded");
    let (status, list) = h.unary(&sbx, "/process.Process/List", json!({})).await;
    assert_eq!(status, 200);
    assert!(list.get("processes").is_none(), "{list}");
    h.server.shutdown().await;
}

#[tokio::test]
async fn background_survives_disconnect_then_list_connect_signal() {
    let (h, sbx) = start_sandbox().await;
    // Read only the start event, then drop the connection.
    let resp = h
        .start_request(&sbx, json!({"process": {"cmd": "/bin/bash", "args": ["-c", "while true; do sleep 0.2; done"]}, "tag": "bg"}))
        .header("keepalive-ping-interval", "1")
        .send()
        .await
        .unwrap();
    let mut resp = resp;
    let first = resp.chunk().await.unwrap().unwrap();
    let (events, _) = {
        let mut dec = e2b_wire::connect::EnvelopeDecoder::new(1 << 20);
        dec.push(&first);
        let env = dec.next_envelope().unwrap().unwrap();
        (
            vec![serde_json::from_slice::<Value>(&env.payload).unwrap()],
            (),
        )
    };
    let pid = events[0]["event"]["start"]["pid"].as_u64().unwrap();
    drop(resp);
    tokio::time::sleep(Duration::from_millis(300)).await;

    let (_, list) = h.unary(&sbx, "/process.Process/List", json!({})).await;
    let procs = list["processes"].as_array().unwrap();
    assert_eq!(procs.len(), 1);
    assert_eq!(procs[0]["pid"].as_u64(), Some(pid));
    assert_eq!(procs[0]["tag"], "bg");
    assert_eq!(procs[0]["config"]["cmd"], "/bin/bash");

    // The pid is the one the sandbox sees, as envd's are.
    let (events, _) = run(
        &h,
        &sbx,
        &format!("kill -0 {pid} && tr '\\0' ' ' < /proc/{pid}/cmdline"),
    )
    .await;
    assert_eq!(
        stdout_of(&events),
        "/bin/bash -c while true; do sleep 0.2; done ",
        "{events:?}"
    );

    // Connect with a short deadline: keepalives, then deadline_exceeded; the process lives on.
    let (events, end) = h
        .stream(
            &sbx,
            "/process.Process/Connect",
            json!({"process": {"pid": pid}}),
            &[
                ("connect-timeout-ms", "2500"),
                ("keepalive-ping-interval", "1"),
            ],
        )
        .await;
    assert_eq!(events[0]["event"]["start"]["pid"].as_u64(), Some(pid));
    assert!(
        events
            .iter()
            .any(|e| e.pointer("/event/keepalive").is_some()),
        "{events:?}"
    );
    assert_eq!(end["error"]["code"], "deadline_exceeded");

    let (status, _) = h
        .unary(
            &sbx,
            "/process.Process/SendSignal",
            json!({"process": {"pid": pid}, "signal": "SIGNAL_SIGKILL"}),
        )
        .await;
    assert_eq!(status, 200);
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Recently exited: Connect replays start + end.
    let (events, end) = h
        .stream(
            &sbx,
            "/process.Process/Connect",
            json!({"process": {"pid": pid}}),
            &[],
        )
        .await;
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[1]["event"]["end"]["status"], "signal: killed");
    assert_eq!(events[1]["event"]["end"]["exitCode"], -1);
    assert_eq!(end, json!({}));

    let (status, err) = h
        .unary(
            &sbx,
            "/process.Process/SendSignal",
            json!({"process": {"pid": 999999}, "signal": "SIGNAL_SIGTERM"}),
        )
        .await;
    assert_eq!(status, 404);
    assert_eq!(
        err,
        json!({"code": "not_found", "message": "process with pid 999999 not found"})
    );
    h.server.shutdown().await;
}

#[tokio::test]
async fn stdin_send_and_close() {
    let (h, sbx) = start_sandbox().await;
    let resp = h
        .start_process(&sbx, json!({"process": {"cmd": "cat"}, "stdin": true}))
        .await;
    let mut resp = resp;
    let mut buf = Vec::new();
    let mut pid = None;
    while pid.is_none() {
        buf.extend(resp.chunk().await.unwrap().unwrap());
        let mut dec = e2b_wire::connect::EnvelopeDecoder::new(1 << 20);
        dec.push(&buf);
        if let Ok(Some(env)) = dec.next_envelope() {
            let v: Value = serde_json::from_slice(&env.payload).unwrap();
            pid = v["event"]["start"]["pid"].as_u64();
        }
    }
    let pid = pid.unwrap();
    let (status, _) = h
        .unary(
            &sbx,
            "/process.Process/SendInput",
            json!({"process": {"pid": pid}, "input": {"stdin": "aGVsbG8K"}}),
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = h
        .unary(
            &sbx,
            "/process.Process/CloseStdin",
            json!({"process": {"pid": pid}}),
        )
        .await;
    assert_eq!(status, 200);
    while let Some(c) = resp.chunk().await.unwrap() {
        buf.extend(c);
    }
    let (events, end) = parse_stream(&buf);
    assert_eq!(stdout_of(&events), "hello\n");
    assert_eq!(end, json!({}));
    h.server.shutdown().await;
}

#[tokio::test]
async fn output_chunks_are_at_most_32k_and_complete() {
    let (h, sbx) = start_sandbox().await;
    let (events, _) = run(&h, &sbx, "head -c 200000 /dev/zero | tr '\\0' a").await;
    use base64::Engine;
    let mut total = 0;
    for e in &events {
        if let Some(s) = e.pointer("/event/data/stdout").and_then(Value::as_str) {
            let n = base64::engine::general_purpose::STANDARD
                .decode(s)
                .unwrap()
                .len();
            assert!(n <= 32 * 1024);
            total += n;
        }
    }
    assert_eq!(total, 200000);
    h.server.shutdown().await;
}

#[tokio::test]
async fn malformed_requests_get_connect_errors() {
    let (h, sbx) = start_sandbox().await;
    let (status, err) = h.unary(&sbx, "/process.Process/List", json!("x")).await;
    assert_eq!(status, 400);
    assert_eq!(err["code"], "invalid_argument");
    let resp = h
        .sandbox(&sbx, 49983, Method::POST, "/process.Process/List")
        .header("content-type", "application/json")
        .body("{broken")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let (status, err) = h.unary(&sbx, "/process.Process/Nope", json!({})).await;
    assert_eq!(status, 404);
    assert_eq!(err["code"], "unimplemented");
    // A truncated envelope.
    let resp = h
        .sandbox(&sbx, 49983, Method::POST, "/process.Process/Start")
        .header("content-type", "application/connect+json")
        .body(vec![0u8, 0, 0, 0, 50, b'{'])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let (_, end) = parse_stream(&resp.bytes().await.unwrap());
    assert_eq!(end["error"]["code"], "invalid_argument");
    // Oversized body.
    let resp = h
        .sandbox(&sbx, 49983, Method::POST, "/filesystem.Filesystem/Stat")
        .header("content-type", "application/json")
        .body(vec![b' '; 2 << 20])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 429);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["code"], "resource_exhausted");
    h.server.shutdown().await;
}

#[tokio::test]
async fn sandbox_plane_routing_and_auth() {
    let (h, sbx) = start_sandbox().await;
    let resp = h
        .http
        .get(h.url("/health"))
        .header("E2b-Sandbox-Id", &sbx.id)
        .header("E2b-Sandbox-Port", "49983")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 204);
    let resp = h
        .http
        .post(h.url("/process.Process/List"))
        .header("E2b-Sandbox-Id", &sbx.id)
        .header("E2b-Sandbox-Port", "49983")
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(
        v,
        json!({"code": 401, "message": "unauthorized access, please provide a valid access token or method signing if supported"})
    );
    // Host-based routing.
    let resp = h
        .http
        .get(h.url("/health"))
        .header("Host", format!("49983-{}.localhost", sbx.id))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 204);
    let resp = h
        .http
        .get(h.url("/health"))
        .header("E2b-Sandbox-Id", "doesnotexist")
        .header("E2b-Sandbox-Port", "49983")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 502);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(
        v,
        json!({"sandboxId": "doesnotexist", "message": "The sandbox was not found", "code": 502})
    );
    h.server.shutdown().await;
}

#[tokio::test]
async fn other_ports_reach_servers_started_in_the_sandbox() {
    let (h, sbx) = start_sandbox().await;
    let port = crate::common::free_port();
    run(&h, &sbx, "echo served > /home/user/index.txt").await;
    let body = json!({"process": {"cmd": "python3", "args": ["-m", "http.server", port.to_string(), "--bind", "127.0.0.1"]}});
    let mut resp = h.start_process(&sbx, body).await;
    resp.chunk().await.unwrap();
    let mut got = None;
    for _ in 0..50 {
        let r = h
            .http
            .get(h.url("/index.txt"))
            .header("Host", format!("{port}-{}.localhost", sbx.id))
            .send()
            .await
            .unwrap();
        if r.status() == 200 {
            got = Some(r.text().await.unwrap());
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(got.as_deref(), Some("served\n"));
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "the server listens on the sandbox's own loopback, not the host's"
    );
    drop(resp);
    let closed = crate::common::free_port();
    let r = h
        .http
        .get(h.url("/"))
        .header("E2b-Sandbox-Id", &sbx.id)
        .header("E2b-Sandbox-Port", closed.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 502);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["message"], "The sandbox is running but port is not open");
    h.server.shutdown().await;
}

#[tokio::test]
async fn unisolated_mode_runs_in_the_sandbox_home() {
    let h = crate::common::start_with(e2b_local::Options {
        isolation: e2b_local::Isolation::None,
        ..Default::default()
    })
    .await;
    let sbx = h.create_default().await;
    let (events, end) = run(&h, &sbx, "echo hi > a.txt; cat a.txt; echo $USER").await;
    assert_eq!(stdout_of(&events), "hi\nuser\n");
    assert_eq!(end, json!({}));
    let resp = h
        .sandbox_send(&sbx, 49983, Method::GET, "/files?path=a.txt")
        .await;
    assert_eq!(resp.text().await.unwrap(), "hi\n");
    h.server.shutdown().await;
}

#[tokio::test]
async fn pty_requests_get_pty_data() {
    let (h, sbx) = start_sandbox().await;
    let (events, end) = h
        .stream(
            &sbx,
            "/process.Process/Start",
            json!({"process": {"cmd": "/bin/bash", "args": ["-c", "echo out; echo err >&2"]}, "pty": {"size": {"cols": 80, "rows": 24}}}),
            &[],
        )
        .await;
    use base64::Engine;
    let mut pty = Vec::new();
    for e in &events {
        assert!(e.pointer("/event/data/stdout").is_none());
        if let Some(s) = e.pointer("/event/data/pty").and_then(Value::as_str) {
            pty.extend(base64::engine::general_purpose::STANDARD.decode(s).unwrap());
        }
    }
    let text = String::from_utf8(pty).unwrap();
    // A real terminal: both streams on it, newlines as the tty writes them.
    assert!(
        text.contains("out\r\n") && text.contains("err\r\n"),
        "{text}"
    );
    assert_eq!(end, json!({}));
    h.server.shutdown().await;
}

#[tokio::test]
async fn a_dying_sandbox_cuts_its_streams() {
    let (h, sbx) = start_sandbox().await;
    let mut resp = h
        .start_process(&sbx, json!({"process": {"cmd": "sleep", "args": ["30"]}}))
        .await;
    resp.chunk().await.unwrap().unwrap();
    h.server.faults().expire_now(&sbx.id);
    let rest = crate::common::read_until_end(&mut resp).await;
    assert!(rest.is_err(), "the stream must be cut, not ended cleanly");
    h.server.shutdown().await;
}

#[tokio::test]
async fn garbage_to_every_rpc_gets_an_error_and_the_server_lives_on() {
    let (h, sbx) = start_sandbox().await;
    let rpcs = [
        "/process.Process/Start",
        "/process.Process/Connect",
        "/process.Process/List",
        "/process.Process/SendInput",
        "/process.Process/SendSignal",
        "/process.Process/CloseStdin",
        "/process.Process/Update",
        "/filesystem.Filesystem/Stat",
        "/filesystem.Filesystem/ListDir",
        "/filesystem.Filesystem/MakeDir",
        "/filesystem.Filesystem/Move",
        "/filesystem.Filesystem/Remove",
        "/filesystem.Filesystem/WatchDir",
    ];
    let bodies: [&[u8]; 5] = [
        b"",
        b"{",
        b"[1,2]",
        b"{\"process\":{\"pid\":\"x\"}}",
        &[0xff, 0, 0, 0, 1, 0],
    ];
    for path in rpcs {
        for ct in ["application/json", "application/connect+json", "text/plain"] {
            for body in bodies {
                let resp = h
                    .sandbox(&sbx, 49983, Method::POST, path)
                    .header("content-type", ct)
                    .body(body.to_vec())
                    .send()
                    .await
                    .unwrap();
                let status = resp.status().as_u16();
                let bytes = resp.bytes().await.unwrap();
                if status == 200 {
                    if path == "/process.Process/List" && ct == "application/json" {
                        continue; // `{}`-like bodies are valid List requests
                    }
                    let (_, end) = parse_stream(&bytes);
                    assert!(end.get("error").is_some(), "{path} {ct} {body:?}: {end}");
                } else {
                    let v: Value = serde_json::from_slice(&bytes).unwrap();
                    assert!(v["code"].is_string(), "{path} {ct} {body:?}: {v}");
                }
            }
        }
    }
    let resp = h.sandbox_send(&sbx, 49983, Method::GET, "/health").await;
    assert_eq!(resp.status(), 204);
    h.server.shutdown().await;
}
