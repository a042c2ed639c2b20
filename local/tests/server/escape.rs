//! Escape attempts from inside a sandbox: each must fail, and the server
//! must go on serving. They run through the real server's two faces a
//! model reaches: commands (envd `Process/Start`) and the files API
//! (`/files`, `Filesystem` RPCs). With the server as root (CI) the
//! sandbox's users are unprivileged host uids; as an ordinary user they
//! are the server's own uid, and the same attempts must fail.

use reqwest::Method;
use serde_json::{json, Value};

use crate::common::{run, start, start_sandbox, stderr_of, stdout_of, Harness, Sbx};

/// A variable that is in the server's environment (cargo sets it for
/// every test process) and in no sandbox's.
const HOST_ONLY_VAR: &str = "CARGO_PKG_NAME";

/// `path` through the files API as the sandbox's root, who sees all of it.
async fn download(h: &Harness, sbx: &Sbx, path: &str) -> (u16, String) {
    let q = serde_urlencoded::to_string([("path", path), ("username", "root")]).unwrap();
    let resp = h
        .sandbox_send(sbx, 49983, Method::GET, &format!("/files?{q}"))
        .await;
    let status = resp.status().as_u16();
    (status, resp.text().await.unwrap_or_default())
}

/// The exit code of a finished command's end event (0 when it succeeded).
fn exit_code(events: &[Value]) -> i64 {
    events
        .iter()
        .find_map(|e| e.pointer("/event/end/exitCode").and_then(Value::as_i64))
        .unwrap_or(0)
}

#[tokio::test]
async fn the_server_environment_is_out_of_reach() {
    assert!(std::env::var(HOST_ONLY_VAR).is_ok(), "the canary is set");
    let (h, sbx) = start_sandbox().await;
    for path in [
        "/proc/self/environ",
        "/proc/1/environ",
        "/proc/thread-self/environ",
    ] {
        let (status, body) = download(&h, &sbx, path).await;
        assert!(!body.contains(HOST_ONLY_VAR), "{path}: {status} {body}");
    }
    let (status, _) = download(&h, &sbx, "/proc/self/environ").await;
    assert_ne!(
        status, 200,
        "the server is not in the sandbox's pid namespace"
    );
    let (events, _) = run(&h, &sbx, "cat /proc/*/environ | tr '\\0' '\\n'").await;
    let seen = stdout_of(&events);
    assert!(!seen.contains(HOST_ONLY_VAR), "{seen}");
    assert!(
        seen.contains("PATH="),
        "the sandbox's own environments: {seen}"
    );
    h.server.shutdown().await;
}

#[tokio::test]
async fn host_files_are_not_there() {
    let (h, sbx) = start_sandbox().await;
    // A host file the server can read: the project's, or, where the server
    // cannot read it (run as another user), one the test makes in the
    // working directory.
    let project_file = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let (project_file, _host_dir) = if std::fs::read(project_file).is_ok() {
        (project_file.to_string(), None)
    } else {
        let dir = tempfile::Builder::new()
            .prefix("e2b-escape-")
            .tempdir_in(std::env::current_dir().unwrap())
            .unwrap();
        let own = dir.path().join("host-secret.txt");
        std::fs::write(&own, "host secret").unwrap();
        (own.display().to_string(), Some(dir))
    };
    let project_file = project_file.as_str();
    // By path, through the files API and from a command.
    for path in [
        project_file,
        "/etc/shadow",
        "/root/.bashrc",
        "/etc/hostname",
    ] {
        let (status, body) = download(&h, &sbx, path).await;
        if path == "/etc/hostname" {
            assert_eq!((status, body.as_str()), (200, "e2b\n"), "the sandbox's own");
        } else {
            assert_eq!(status, 404, "{path}: {body}");
        }
    }
    let (events, _) = run(&h, &sbx, &format!("cat {project_file} /etc/shadow")).await;
    assert_eq!(stdout_of(&events), "");
    assert_ne!(exit_code(&events), 0);
    // Through symlinks the sandbox makes (absolute, relative, via /proc).
    let (events, _) = run(
        &h,
        &sbx,
        &format!(
            "ln -s {project_file} /home/user/abs; ln -s ../../../../../../{project_file} /home/user/rel; \
             ln -s /proc/1/root/etc/shadow /home/user/viaproc; ln -s /proc/self/cwd /home/user/cwd; echo ok"
        ),
    )
    .await;
    assert_eq!(stdout_of(&events), "ok\n");
    for link in ["abs", "rel", "viaproc"] {
        let (status, body) = download(&h, &sbx, &format!("/home/user/{link}")).await;
        assert_eq!(status, 404, "{link}: {body}");
    }
    // Listing the host's private directories shows nothing of the host.
    let (events, _) = run(&h, &sbx, "sudo ls -A /root").await;
    assert_eq!(stdout_of(&events), "", "{}", stderr_of(&events));
    for dir in ["/home"] {
        let (status, v) = h
            .filesystem(&sbx, "ListDir", json!({"path": dir, "depth": 1}))
            .await;
        assert_eq!(status, 200, "{v}");
        let names: Vec<&str> = v["entries"]
            .as_array()
            .map(|a| a.iter().filter_map(|e| e["name"].as_str()).collect())
            .unwrap_or_default();
        let expected: &[&str] = if dir == "/home" { &["user"] } else { &[] };
        assert_eq!(names, expected, "{dir}");
    }
    let parent = std::path::Path::new(project_file).parent().unwrap();
    let (status, v) = h
        .filesystem(&sbx, "ListDir", json!({"path": parent.to_str().unwrap()}))
        .await;
    assert_eq!(status, 404, "{v}");
    let (events, _) = run(&h, &sbx, "ls -A /").await;
    // A copy-on-write root has a Debian system's other directories, empty.
    let (empty, _) = run(&h, &sbx, "ls -A /media /mnt /run /srv /sys 2>/dev/null").await;
    let listed = stdout_of(&empty);
    let entries = listed
        .lines()
        .filter(|l| !l.is_empty() && !l.ends_with(':'));
    assert_eq!(entries.count(), 0, "{listed}");
    let allowed = [
        "bin", "dev", "etc", "home", "lib", "lib32", "lib64", "libx32", "media", "mnt", "opt",
        "proc", "root", "run", "sbin", "srv", "sys", "tmp", "usr", "var",
    ];
    let listing = stdout_of(&events);
    for name in listing.lines() {
        assert!(
            allowed.contains(&name),
            "{name} in the sandbox's root: {listing}"
        );
    }
    h.server.shutdown().await;
}

#[tokio::test]
async fn device_files_and_fifos_are_refused_without_hanging() {
    let (h, sbx) = start_sandbox().await;
    let (events, _) = run(&h, &sbx, "mkfifo /tmp/fifo && echo ok").await;
    assert_eq!(stdout_of(&events), "ok\n");
    for path in [
        "/dev/zero",
        "/dev/urandom",
        "/tmp/fifo",
        "/proc/kcore",
        "/proc/sys/kernel/hostname",
    ] {
        let (status, body) =
            tokio::time::timeout(std::time::Duration::from_secs(5), download(&h, &sbx, path))
                .await
                .unwrap_or_else(|_| panic!("{path} hung"));
        assert!(
            matches!(status, 400 | 403 | 404),
            "{path}: {status} {}",
            &body[..body.len().min(200)]
        );
    }
    // Writing through the API into /proc or /dev changes nothing of the host.
    let resp = h
        .sandbox(
            &sbx,
            49983,
            Method::POST,
            "/files?path=%2Fproc%2Fsys%2Fkernel%2Fhostname",
        )
        .header("content-type", "application/octet-stream")
        .body("pwned")
        .send()
        .await
        .unwrap();
    assert!(!resp.status().is_success());
    assert_ne!(
        std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap(),
        "pwned"
    );
    // The server goes on serving.
    let (events, _) = run(&h, &sbx, "echo still").await;
    assert_eq!(stdout_of(&events), "still\n");
    h.server.shutdown().await;
}

#[tokio::test]
async fn host_loopback_and_sockets_are_unreachable() {
    let (h, sbx) = start_sandbox().await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let host_port = listener.local_addr().unwrap().port();
    let api_port = h.server.addr().port();
    let socket_dir = tempfile::tempdir().unwrap();
    let socket_path = socket_dir.path().join("root-only.sock");
    let _unix = std::os::unix::net::UnixListener::bind(&socket_path).unwrap();
    // 10.0.2.2 is slirp4netns' virtual gateway, answered inside
    // slirp4netns itself (its host-loopback mapping is disabled).
    let script = format!(
        "import socket\n\
         for host, port in [('127.0.0.1', {host_port}), ('127.0.0.1', {api_port}), ('10.0.2.2', {host_port}), ('10.0.2.2', {api_port})]:\n\
         \x20   s = socket.socket(); s.settimeout(3)\n\
         \x20   try:\n\
         \x20       s.connect((host, port)); print('CONNECTED', host, port)\n\
         \x20   except OSError as e:\n\
         \x20       print('refused', host, port)\n\
         u = socket.socket(socket.AF_UNIX)\n\
         try:\n\
         \x20   u.connect({path:?}); print('CONNECTED unix')\n\
         except OSError as e:\n\
         \x20   print('refused unix')\n",
        path = socket_path.to_str().unwrap()
    );
    let (events, _) = run(
        &h,
        &sbx,
        &format!("python3 -c \"$(cat <<'EOF'\n{script}EOF\n)\""),
    )
    .await;
    let out = stdout_of(&events);
    assert!(!out.contains("CONNECTED"), "{out}{}", stderr_of(&events));
    assert_eq!(out.lines().count(), 5, "{out}{}", stderr_of(&events));
    h.server.shutdown().await;
}

#[tokio::test]
async fn nothing_inside_is_host_root() {
    let (h, sbx) = start_sandbox().await;
    let (events, _) = run(&h, &sbx, "whoami; id -u; cat /proc/self/uid_map").await;
    let out = stdout_of(&events);
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some("user"));
    assert_eq!(lines.next(), Some("1000"));
    // Every uid inside maps to a host uid other than root.
    for line in lines {
        let fields: Vec<u64> = line
            .split_whitespace()
            .map(|f| f.parse().unwrap())
            .collect();
        assert_ne!(fields[1], 0, "uid {} inside is host root: {out}", fields[0]);
    }
    // E2B's `user: "root"` is root inside the sandbox only.
    let basic = {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode("root:")
    };
    let (events, _) = h
        .stream(
            &sbx,
            "/process.Process/Start",
            json!({"process": {"cmd": "/bin/sh", "args": ["-c", "id -u; touch /etc/x 2>&1 | head -c 0; cat /proc/self/uid_map"]}, "stdin": false}),
            &[("authorization", format!("Basic {basic}").as_str())],
        )
        .await;
    let out = stdout_of(&events);
    let (first, map) = out.split_once('\n').unwrap_or((&out, ""));
    if rustix::process::getuid().is_root() {
        assert_eq!(first, "0", "{out}");
        assert!(
            !map.trim().starts_with("0 0 "),
            "root inside is not host root: {map}"
        );
        // The files API's `username=root` writes as root inside, `user` as user.
        for (user, expected) in [("root", "root"), ("user", "user")] {
            let resp = h
                .sandbox(
                    &sbx,
                    49983,
                    Method::POST,
                    &format!("/files?path=%2Ftmp%2Fby-{user}&username={user}"),
                )
                .header("content-type", "application/octet-stream")
                .body("x")
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status(), 200);
            let (events, _) = run(&h, &sbx, &format!("stat -c %U:%G /tmp/by-{user}")).await;
            assert_eq!(stdout_of(&events), format!("{expected}:{expected}\n"));
        }
    } else {
        // No root exists in an ordinary user's sandbox: a root command is refused.
        assert_eq!(out, "", "a root command ran");
    }
    h.server.shutdown().await;
}

#[tokio::test]
async fn processes_memory_and_disk_are_bounded() {
    if !rustix::process::getuid().is_root() {
        // An ordinary user's server has no cgroup or disk image to give.
        return;
    }
    let (h, sbx) = start_sandbox().await;
    // A fork bomb, bounded in the test: 3,000 forks against a cap of 1,024.
    let script = crate::common::fork_probe(3000, 60);
    let (events, _) = run(&h, &sbx, &format!("python3 -c '{script}'")).await;
    let out = stdout_of(&events);
    let counts: Vec<u32> = out
        .split_whitespace()
        .filter_map(|n| n.parse().ok())
        .collect();
    assert!(
        matches!(counts[..], [started, failed] if started < 1024 && failed > 1900),
        "forks beyond the cap must fail: {out}{}",
        stderr_of(&events)
    );
    // More memory than the limit (512 MiB): the hog dies, the sandbox lives.
    let (events, _) = run(
        &h,
        &sbx,
        "python3 -c 'x = bytearray(800 << 20); print(len(x))'",
    )
    .await;
    assert_ne!(exit_code(&events), 0, "{}", stdout_of(&events));
    assert_eq!(stdout_of(&events), "");
    // Filling the disk (1 GiB): a clean ENOSPC inside.
    let (events, _) = run(
        &h,
        &sbx,
        "dd if=/dev/zero of=/tmp/fill bs=1M count=1500 2>&1 | tail -c 300; rm -f /tmp/fill",
    )
    .await;
    assert!(
        stdout_of(&events).contains("No space left on device"),
        "{}",
        stdout_of(&events)
    );
    // And the host and the server carry on.
    let (events, _) = run(&h, &sbx, "echo fine").await;
    assert_eq!(stdout_of(&events), "fine\n");
    let other = h.create_default().await;
    let (events, _) = run(&h, &other, "echo other").await;
    assert_eq!(stdout_of(&events), "other\n");
    h.server.shutdown().await;
}

#[tokio::test]
async fn finer_network_rules_are_refused_not_ignored() {
    let h = start().await;
    let resp = h
        .api_json(Method::POST, "/v2/sandboxes", &json!({"templateID": "base", "network": {"allowOut": ["1.1.1.1"], "denyOut": ["0.0.0.0/0"]}}))
        .await;
    assert_eq!(resp.status(), 400);
    assert!(resp.text().await.unwrap().contains("not supported"));
    let sbx = h
        .create(json!({"templateID": "base", "allow_internet_access": false}))
        .await;
    let (events, _) = run(&h, &sbx, "ip -br link | cut -d' ' -f1 | tr '\\n' ' '").await;
    assert_eq!(stdout_of(&events), "lo ", "no interface but loopback");
    h.server.shutdown().await;
}

#[tokio::test]
async fn sandbox_ports_are_reached_inside_its_namespace_only() {
    let (h, sbx) = start_sandbox().await;
    let port = crate::common::free_port();
    run(
        &h,
        &sbx,
        &format!("echo inside > /tmp/page.txt; cd /tmp && nohup python3 -m http.server {port} --bind 127.0.0.1 >/dev/null 2>&1 &"),
    )
    .await;
    let mut body = String::new();
    for _ in 0..100 {
        let resp = h.sandbox_send(&sbx, port, Method::GET, "/page.txt").await;
        if resp.status() == 200 {
            body = resp.text().await.unwrap();
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(
        body, "inside\n",
        "the sandbox plane reaches the sandbox's own loopback"
    );
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "the server listens on the sandbox's loopback, not the host's"
    );
    h.server.shutdown().await;
}

/// The same attempts through the official Python SDK (`E2B_TOOLS_PYTHON`;
/// skipped without it, as in the run as an ordinary user).
#[tokio::test]
async fn official_sdk_escape_attempts_fail() {
    let Ok(python) = std::env::var("E2B_TOOLS_PYTHON") else {
        return;
    };
    let h = start().await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let args = [
        HOST_ONLY_VAR.to_string(),
        concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml").to_string(),
        listener.local_addr().unwrap().port().to_string(),
        h.server.addr().port().to_string(),
    ];
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance/escape.py");
    crate::conformance::run_python(&h, &python, script, &args, "escape scenario passed").await;
    h.server.shutdown().await;
}

#[tokio::test]
async fn a_sandbox_that_kills_its_anchor_stays_a_sandbox() {
    let (h, sbx) = start_sandbox().await;
    // On a server run as an ordinary user envd is `user` too, so this kills
    // it, and the sandbox with it: the answer may be cut.
    let resp = h
        .start_request(&sbx, json!({"process": {"cmd": "/bin/bash", "args": ["-c", "echo kept > /home/user/k; kill -9 -1; sleep 1"]}}))
        .send()
        .await
        .unwrap();
    let _ = resp.bytes().await;
    // Every process of the sandbox died (with its namespaces, when envd
    // did); the next command gets a sandbox again, never the host.
    let (events, _) = run(
        &h,
        &sbx,
        "whoami; cat /home/user/k; ls /root | wc -l; test -e /etc/shadow || echo no-shadow",
    )
    .await;
    assert_eq!(
        stdout_of(&events),
        "user\nkept\n0\nno-shadow\n",
        "{}",
        stderr_of(&events)
    );
    h.server.shutdown().await;
}
