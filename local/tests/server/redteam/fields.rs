//! Attempts through the API's fields: paths to other sandboxes and the
//! host, users and working directories, headers, ports, creation fields,
//! and envd killed again and again.

use super::*;

/// Another sandbox's files, by every path: its host path (the test knows
/// the data directory), `/proc/*/root`, `..`, symlinks to them, the routing
/// headers with the wrong token, and a race flipping a directory and a
/// symlink under uploads. Nothing of the other sandbox or of the host is
/// read or written.
#[tokio::test]
async fn other_sandboxes_and_host_files_by_every_path() {
    let data = tempfile::tempdir().unwrap();
    let host = host_dir();
    let secret = format!("host-secret-{}", std::process::id());
    std::fs::write(host.path().join("canary"), &secret).unwrap();
    let h = server(data.path()).await;
    let a = h.create_default().await;
    let b = h.create_default().await;
    let a_secret = format!("sandbox-a-secret-{}", a.id);
    let (events, _) = run(
        &h,
        &a,
        &format!(
            "echo {a_secret} > /home/user/secret; echo {a_secret} > /tmp/secret; echo {a_secret} > /dev/shm/secret 2>/dev/null; \
             (sleep 300 </dev/null >/dev/null 2>&1 &); echo ok"
        ),
    )
    .await;
    assert_eq!(stdout_of(&events), "ok\n", "{}", stderr_of(&events));
    let a_root = data.path().join(&a.id);
    let hostp = host.path().display().to_string();
    let candidates: Vec<String> = vec![
        a_root.join("home/user/secret").display().to_string(),
        a_root.join("tmp/secret").display().to_string(),
        format!("/proc/1/root{}", a_root.join("home/user/secret").display()),
        "/proc/1/root/home/user/secret".into(),
        format!("{hostp}/canary"),
        format!("/proc/1/root{hostp}/canary"),
        format!("/proc/self/root{hostp}/canary"),
        format!("/proc/2/root{hostp}/canary"),
        format!("/proc/1/cwd/../../../../..{hostp}/canary"),
        format!("../../../../../../..{hostp}/canary"),
        format!("/home/user/../../..{hostp}/canary"),
        "/home/user/link-abs/canary".into(),
        "/home/user/link-proc/canary".into(),
        "/home/user/link-a/secret".into(),
        "/home/user/link-rel/canary".into(),
        "/dev/shm/secret".into(),
    ];
    let (events, _) = run(
        &h,
        &b,
        &format!(
            "ln -s {hostp} /home/user/link-abs; ln -s /proc/1/root{hostp} /home/user/link-proc; \
             ln -s {a} /home/user/link-a; ln -s ../../../../../../../..{hostp} /home/user/link-rel; echo ok",
            a = a_root.join("home/user").display()
        ),
    )
    .await;
    assert_eq!(stdout_of(&events), "ok\n");
    let users: &[&str] = if privileged() {
        &["user", "root"]
    } else {
        &["user"]
    };
    let mut seen = String::new();
    for path in &candidates {
        for user in users {
            let (status, body) = download(&h, &b, path, user).await;
            seen.push_str(&format!("{path} as {user}: {status} {body}\n"));
            let st = h.filesystem(&b, "Stat", json!({"path": path})).await;
            seen.push_str(&format!("{}\n", st.1));
            let ls = h
                .filesystem(&b, "ListDir", json!({"path": path, "depth": 2}))
                .await;
            seen.push_str(&format!("{}\n", ls.1));
        }
    }
    // The same from commands, as root where there is one.
    let cat_all = format!(
        "for p in {}; do cat \"$p\"; done 2>/dev/null; cat /proc/[0-9]*/root/home/user/secret 2>/dev/null; \
         ls /proc/[0-9]*/root{hostp} 2>/dev/null; ipcs 2>/dev/null; echo end",
        candidates.iter().map(|c| shell_quote(c)).collect::<Vec<_>>().join(" ")
    );
    for user in users {
        let ran = sh(&h, &b, user, &cat_all, json!({}), "").await;
        seen.push_str(&ran.stdout);
        assert!(ran.stdout.contains("end"), "{ran:?}");
    }
    // Another sandbox's id with this one's token, or odd spellings of it.
    for (id_header, host_header) in [
        (Some(a.id.clone()), None),
        (Some(format!(" {} ", a.id)), None),
        (Some(format!("{}\t", a.id)), None),
        (None, Some(format!("49983-{}.localhost", a.id))),
        (None, Some(format!("49983-{}.e2b.app", a.id))),
    ] {
        let mut req = h
            .http
            .get(h.url("/files?path=%2Fhome%2Fuser%2Fsecret"))
            .header("X-Access-Token", &b.token);
        if let Some(id) = &id_header {
            req = req
                .header("E2b-Sandbox-Id", id.as_str())
                .header("E2b-Sandbox-Port", "49983");
        }
        if let Some(host) = &host_header {
            req = req.header("Host", host.as_str());
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let body = resp.text().await.unwrap_or_default();
        assert_eq!(status, 401, "{id_header:?} {host_header:?}: {body}");
        seen.push_str(&body);
    }
    assert!(!seen.contains(&a_secret), "another sandbox's file: {seen}");
    assert!(!seen.contains(&secret), "a host file: {seen}");
    // A race: a directory flipping with a symlink to the host directory
    // (absolute, and through /proc/1/root) while files go up and down.
    let flip = format!(
        "end=$((SECONDS+4)); while [ $SECONDS -lt $end ]; do rm -rf /home/user/d; mkdir /home/user/d; \
         rm -rf /home/user/d; ln -s {hostp} /home/user/d; rm -f /home/user/d; ln -s /proc/1/root{hostp} /home/user/d; done; echo flipped"
    );
    let flipper = {
        let (h2, b2) = (&h, &b);
        async move { run(h2, b2, &flip).await }
    };
    let hammer = async {
        let mut got = String::new();
        for i in 0..60 {
            let _ = upload(
                &h,
                &b,
                &format!("/home/user/d/pwn-{i}"),
                "user",
                b"pwn".to_vec(),
            )
            .await;
            let (_, body) = download(&h, &b, "/home/user/d/canary", "user").await;
            got.push_str(&body);
        }
        got
    };
    let ((events, _), got) = tokio::join!(flipper, hammer);
    assert!(stdout_of(&events).contains("flipped"));
    assert!(
        !got.contains(&secret),
        "a host file through the race: {got}"
    );
    let names: Vec<String> = std::fs::read_dir(host.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["canary"], "a file landed on the host");
    // A's file is intact and still A's only.
    let (events, _) = run(&h, &a, "cat /home/user/secret").await;
    assert_eq!(stdout_of(&events), format!("{a_secret}\n"));
    still_serving(&h, &b).await;
    h.server.shutdown().await;
}

/// `user` (Basic and `?username=`) and `cwd` with odd values: only
/// `user` and, on a root server, `root` (the sandbox's) act; every cwd
/// resolves inside the sandbox.
#[tokio::test]
async fn odd_users_and_working_directories() {
    let data = tempfile::tempdir().unwrap();
    let host = host_dir();
    let secret = format!("host-cwd-secret-{}", std::process::id());
    std::fs::write(host.path().join("canary"), &secret).unwrap();
    let h = server(data.path()).await;
    let sbx = h.create_default().await;
    let probe = "id -u; cat /proc/self/uid_map; echo cwd=$(pwd -P)";
    for name in [
        "root",
        "user",
        "nobody",
        "0",
        "../root",
        "root\u{0}",
        "ROOT",
        " root",
        "root ",
        "",
        ":",
        "root:root",
        "user:x",
        "daemon",
        "1000",
    ] {
        let ran = sh(&h, &sbx, name, probe, json!({}), "").await;
        let uid = ran.stdout.lines().next().unwrap_or("");
        let allowed = match uid {
            "" => true,
            "1000" => true,
            "0" => privileged() && name.split(':').next() == Some("root"),
            _ => false,
        };
        assert!(allowed, "user {name:?} ran as {uid}: {ran:?}");
        for line in ran
            .stdout
            .lines()
            .skip(1)
            .take_while(|l| !l.starts_with("cwd="))
        {
            let host_id = line.split_whitespace().nth(1).unwrap_or("");
            assert_ne!(host_id, "0", "{name:?}: host root inside: {ran:?}");
        }
    }
    // A garbage Authorization header.
    for value in ["Basic !!!", "Bearer root", "Basic cm9vdA", "basic cm9vdDo="] {
        let ran = start_raw(
            &h,
            &sbx,
            json!({"process": {"cmd": "/bin/sh", "args": ["-c", "id -u"]}}),
            &[("authorization", value.to_string())],
        )
        .await;
        assert!(
            ran.stdout.is_empty()
                || ran.stdout == "1000\n"
                || (privileged() && ran.stdout == "0\n"),
            "{value}: {ran:?}"
        );
    }
    for user in ["nobody", "0", "..", "root\u{0}", "%00"] {
        let (status, body) = download(&h, &sbx, "/etc/hostname", user).await;
        assert!(status != 200 || body == "e2b\n", "{user}: {status} {body}");
    }
    let hostp = host.path().display().to_string();
    for cwd in [
        "/proc/1/root".to_string(),
        "/proc/self/root/..".into(),
        "/proc/1/cwd".into(),
        "/proc/2/root/../..".into(),
        "../../../../..".into(),
        hostp.clone(),
        format!("/proc/1/root{hostp}"),
        "/opt/e2b".into(),
        "/root".into(),
        "/dev/shm".into(),
        "/proc/self/fd".into(),
        "~/../../..".into(),
    ] {
        for user in ["user", "root"] {
            let ran = sh(
                &h,
                &sbx,
                user,
                "pwd -P; cat canary ../canary 2>/dev/null; ls",
                json!({}),
                &cwd,
            )
            .await;
            assert!(!ran.stdout.contains(&secret), "{cwd} as {user}: {ran:?}");
        }
    }
    still_serving(&h, &sbx).await;
    h.server.shutdown().await;
}

/// The routing and envd headers with odd values, a port that is a host
/// loopback service or the control plane, and the template, metadata and
/// envVars of creation: clean refusals, never the host, never a hang.
#[tokio::test]
async fn odd_headers_ports_and_creation_fields() {
    let data = tempfile::tempdir().unwrap();
    let h = server(data.path()).await;
    let sbx = h.create_default().await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let host_port = listener.local_addr().unwrap().port();
    let listener6 = std::net::TcpListener::bind("[::1]:0").ok();
    let api_port = h.server.addr().port();
    // Ports: a host loopback service, the control plane, nonsense.
    for port in [
        host_port.to_string(),
        api_port.to_string(),
        "0".into(),
        "65535".into(),
        "65536".into(),
        "-1".into(),
        "99999999999".into(),
        "+49983".into(),
        "0x1".into(),
        "49983abc".into(),
        String::new(),
    ] {
        let resp = tokio::time::timeout(
            CALL,
            h.http
                .get(h.url("/"))
                .header("E2b-Sandbox-Id", &sbx.id)
                .header("E2b-Sandbox-Port", port.as_str())
                .header("X-Access-Token", &sbx.token)
                .send(),
        )
        .await
        .unwrap_or_else(|_| panic!("port {port} hung"))
        .unwrap();
        let status = resp.status().as_u16();
        let body = resp.text().await.unwrap_or_default();
        assert!(
            matches!(status, 400 | 404 | 502) || (port == "+49983" && status < 500),
            "port {port:?}: {status} {body}"
        );
        assert!(
            !body.contains("sandboxID"),
            "port {port}: the control plane: {body}"
        );
    }
    for host in [
        format!("{host_port}-{}.localhost", sbx.id),
        format!("{api_port}-{}.localhost", sbx.id),
        format!("{host_port}-{}.127.0.0.1", sbx.id),
    ] {
        let resp = h
            .http
            .get(h.url("/sandboxes"))
            .header("Host", host.as_str())
            .send()
            .await
            .unwrap();
        assert!(matches!(resp.status().as_u16(), 502 | 404), "{host}");
    }
    // Odd sandbox ids.
    let long = "a".repeat(10_000);
    for id in ["..", "../sandboxes", "%2e%2e", long.as_str(), "*", "\u{7f}"] {
        if let Ok(resp) = h
            .http
            .get(h.url("/files?path=%2Fetc%2Fhostname"))
            .header("E2b-Sandbox-Id", id)
            .header("E2b-Sandbox-Port", "49983")
            .header("X-Access-Token", &sbx.token)
            .send()
            .await
        {
            // 502 is E2B's edge's "sandbox not found".
            assert!(
                matches!(resp.status().as_u16(), 400 | 404 | 431 | 502),
                "{id:.20}: {}",
                resp.status()
            );
            assert!(!resp.text().await.unwrap_or_default().contains("e2b\n"));
        }
    }
    // From inside: the host services and an abstract socket of the host.
    let abstract_name = format!("e2b-redteam-{}", std::process::id());
    let _abstract = {
        use std::os::linux::net::SocketAddrExt;
        let addr =
            std::os::unix::net::SocketAddr::from_abstract_name(abstract_name.as_bytes()).unwrap();
        std::os::unix::net::UnixListener::bind_addr(&addr).unwrap()
    };
    let port6 = listener6
        .as_ref()
        .map(|l| l.local_addr().unwrap().port())
        .unwrap_or(1);
    let script = format!(
        r#"import socket
for fam, addr in [(socket.AF_INET, ('127.0.0.1', {host_port})), (socket.AF_INET, ('127.0.0.1', {api_port})), (socket.AF_INET6, ('::1', {port6})), (socket.AF_INET, ('10.0.2.2', {api_port})), (socket.AF_INET, ('0.0.0.0', {api_port}))]:
    s = socket.socket(fam); s.settimeout(3)
    try:
        s.connect(addr); print('CONNECTED', addr)
    except OSError:
        print('refused', addr)
u = socket.socket(socket.AF_UNIX)
try:
    u.connect('\0{abstract_name}'); print('CONNECTED abstract')
except OSError:
    print('refused abstract')
"#
    );
    let ran = as_sandbox_root(&h, &sbx, &format!("python3 -c {}", shell_quote(&script))).await;
    assert!(!ran.stdout.contains("CONNECTED"), "{ran:?}");
    assert_eq!(ran.stdout.lines().count(), 6, "{ran:?}");
    assert!(
        listener.accept().is_err(),
        "the host listener got a connection"
    );
    // envd's headers with odd values: every call ends.
    for (name, value) in [
        ("connect-timeout-ms", "0"),
        ("connect-timeout-ms", "-1"),
        ("connect-timeout-ms", "18446744073709551615"),
        ("connect-timeout-ms", "18446744073709551616"),
        ("connect-timeout-ms", "1"),
        ("keepalive-ping-interval", "0"),
        ("keepalive-ping-interval", "-5"),
        ("keepalive-ping-interval", "18446744073709551615"),
        ("keepalive-ping-interval", "1"),
    ] {
        let ran = start_raw(
            &h,
            &sbx,
            json!({"process": {"cmd": "/bin/sh", "args": ["-c", "echo hi"]}}),
            &[(name, value.to_string())],
        )
        .await;
        assert!(ran.status < 500, "{name}: {value}: {ran:?}");
    }
    // PTY sizes at the edges, and resizing to them.
    for (cols, rows) in [(0, 0), (65535, 65535), (1, 65535), (65535, 0)] {
        let ran = start_raw(
            &h,
            &sbx,
            json!({"process": {"cmd": "/bin/sh", "args": ["-c", "stty size; echo done"]}, "pty": {"size": {"cols": cols, "rows": rows}}}),
            &[],
        )
        .await;
        assert!(ran.status < 500, "{cols}x{rows}: {ran:?}");
    }
    // Signals to pids that are not envd's commands: pid 1, envd, huge.
    for pid in [
        json!(0),
        json!(1),
        json!(2),
        json!(3),
        json!(4_294_967_295u64),
        json!(-1),
        json!(1e300),
        json!("1"),
    ] {
        for signal in ["SIGNAL_SIGKILL", "SIGNAL_SIGTERM"] {
            let (status, _) = tokio::time::timeout(
                CALL,
                h.unary(
                    &sbx,
                    "/process.Process/SendSignal",
                    json!({"process": {"pid": pid}, "signal": signal}),
                ),
            )
            .await
            .expect("SendSignal hung");
            assert!(status < 500 || status == 501, "{pid} {signal}: {status}");
        }
        let (status, _) = h
            .unary(
                &sbx,
                "/process.Process/Update",
                json!({"process": {"pid": pid}, "pty": {"size": {"cols": 65535, "rows": 0}}}),
            )
            .await;
        assert!(status < 500, "update {pid}: {status}");
    }
    // Watches on pseudo-filesystems, magic links and the host's paths.
    for path in [
        "/proc",
        "/proc/1/root",
        "/proc/self/fd",
        "/sys",
        "/dev",
        "/",
        "/opt/e2b",
    ] {
        let (status, body) = tokio::time::timeout(
            CALL,
            h.filesystem(
                &sbx,
                "CreateWatcher",
                json!({"path": path, "recursive": true}),
            ),
        )
        .await
        .unwrap_or_else(|_| panic!("watching {path} hung"));
        assert!(status < 500, "watch {path}: {status} {body}");
        if let Some(id) = body["watcherId"].as_str() {
            let _ = h
                .filesystem(&sbx, "RemoveWatcher", json!({"watcherId": id}))
                .await;
        }
    }
    // Creation fields.
    for template in [
        "../base",
        "base/../../etc",
        "/etc/passwd",
        "code-interpreter-v1/..",
        "",
        "base\u{0}",
        &"b".repeat(5000),
    ] {
        let resp = h
            .api(Method::POST, "/v2/sandboxes")
            .json(&json!({"templateID": template}))
            .send()
            .await
            .unwrap();
        assert!(
            matches!(resp.status().as_u16(), 400 | 404),
            "{template:.20}: {}",
            resp.status()
        );
    }
    let big = "x".repeat(1 << 20);
    for body in [
        json!({"templateID": "base", "metadata": {"../../etc": "x", "k": big.clone()}}),
        json!({"templateID": "base", "envVars": {"A\u{0}B": "x", "C": "a\u{0}b", "D=E": "f"}}),
        json!({"templateID": "base", "envVars": {"BIG": big.clone(), "BIG2": big}}),
    ] {
        let resp = tokio::time::timeout(
            CALL,
            h.api(Method::POST, "/v2/sandboxes").json(&body).send(),
        )
        .await
        .expect("create hung")
        .unwrap();
        let status = resp.status().as_u16();
        assert!(status < 500, "{status}");
        if status == 201 {
            let v: Value = resp.json().await.unwrap();
            let odd = Sbx {
                id: v["sandboxID"].as_str().unwrap().into(),
                token: v["envdAccessToken"].as_str().unwrap().into(),
            };
            let ran = sh(&h, &odd, "user", "echo fine", json!({}), "").await;
            assert!(ran.status < 600, "{ran:?}");
        }
    }
    drop(listener6);
    still_serving(&h, &sbx).await;
    h.server.shutdown().await;
}

/// The sandbox's root kills envd (on an ordinary user's server, `user`
/// kills everything), round after round: the sandbox comes back within
/// two seconds, with its files, never the host.
#[tokio::test]
async fn killing_envd_again_and_again_gets_the_sandbox_back() {
    let data = tempfile::tempdir().unwrap();
    let h = server(data.path()).await;
    let sbx = h.create_default().await;
    let other = h.create_default().await;
    for round in 0..4 {
        let _ = as_sandbox_root(
            &h,
            &sbx,
            &format!("echo {round} > /home/user/round; kill -9 -1; sleep 1"),
        )
        .await;
        let ran = sh_after_restart(
            &h,
            &sbx,
            "user",
            "cat /home/user/round; test -e /etc/shadow || echo sandboxed",
            json!({}),
            "",
        )
        .await;
        assert_eq!(
            ran.stdout,
            format!("{round}\nsandboxed\n"),
            "round {round}: {ran:?}"
        );
        let (events, _) = run(&h, &other, "echo other").await;
        assert_eq!(stdout_of(&events), "other\n");
    }
    h.server.shutdown().await;
}
