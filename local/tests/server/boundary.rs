//! The boundary invariant: nothing on the host side takes its environment,
//! a path to follow, a mount or a privilege from the sandbox. Each test is
//! an attack that once worked (issue 25) or the property that stops it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{json, Value};

use crate::common::{run, start, start_sandbox, stderr_of, stdout_of, Harness, Sbx};

/// `tests/fixtures/preload_marker.c` built to mark `marker` (an absolute
/// path): wherever it is loaded, that file appears in that process's
/// filesystem. It is also an audit library, so `LD_AUDIT` loads it too.
fn marking_library(dir: &Path, marker: &str) -> Vec<u8> {
    let library = dir.join("mark.so");
    let status = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&library)
        .arg(format!("-DMARKER=\"{marker}\""))
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/preload_marker.c"
        ))
        .status()
        .expect("a C compiler (cc) for the test library");
    assert!(status.success());
    std::fs::read(library).unwrap()
}

/// A path no other test uses, for a marker file.
fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("/tmp/{prefix}-{}-{nanos:x}", std::process::id())
}

async fn upload(h: &Harness, sbx: &Sbx, path: &str, user: &str, body: Vec<u8>) -> (u16, String) {
    let resp = h
        .sandbox(
            sbx,
            49983,
            Method::POST,
            &format!("/files?path={path}&username={user}"),
        )
        .header("content-type", "application/octet-stream")
        .body(body)
        .send()
        .await
        .unwrap();
    (
        resp.status().as_u16(),
        resp.text().await.unwrap_or_default(),
    )
}

/// A command with `envs` for that command only.
async fn run_with(h: &Harness, sbx: &Sbx, cmd: &str, envs: Value) -> (Vec<Value>, Value) {
    h.stream(
        sbx,
        "/process.Process/Start",
        json!({"process": {"cmd": "/bin/bash", "args": ["-c", cmd], "envs": envs}}),
        &[],
    )
    .await
}

/// The host pid of the process of this server whose command line is
/// exactly `argv` (a sandbox's process, as the host sees it).
fn host_pid_of(argv: &[&str]) -> Option<u32> {
    let want: Vec<u8> = argv
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        (std::fs::read(e.path().join("cmdline")).ok()? == want).then_some(pid)
    })
}

/// [`host_pid_of`], waiting for a job a command started in the background
/// to have become that program.
async fn wait_for_host_pid(argv: &[&str]) -> u32 {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(pid) = host_pid_of(argv) {
            return pid;
        }
        assert!(Instant::now() < until, "{argv:?} never showed on the host");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `LD_PRELOAD` and `LD_AUDIT` from a sandbox (a command's `envs`, the
/// sandbox's `envVars`) name a library the sandbox wrote, also through
/// `/proc/<host pid>/root`, the path a host process would follow: the
/// library loads in the sandbox's commands, never in a host process.
#[tokio::test]
async fn preload_libraries_from_a_sandbox_load_only_inside_it() {
    let dir = tempfile::tempdir().unwrap();
    let marker = unique("e2b-boundary-preload");
    let library = marking_library(dir.path(), &marker);
    let h = start().await;
    let a = h.create_default().await;
    assert_eq!(
        upload(&h, &a, "/home/user/e.so", "user", library.clone())
            .await
            .0,
        200
    );
    let (_, end) = run(&h, &a, "sleep 987601 > /dev/null 2>&1 &").await;
    assert_eq!(end, json!({}));
    let pid = wait_for_host_pid(&["sleep", "987601"]).await;
    let through_host = format!("/proc/{pid}/root/home/user/e.so");
    let inside = "/home/user/e.so";

    // A command's envs, both variables, both paths.
    for var in ["LD_PRELOAD", "LD_AUDIT"] {
        for path in [inside, through_host.as_str()] {
            let (events, end) = run_with(&h, &a, "true", json!({ var: path })).await;
            assert_eq!(end, json!({}), "{var}={path}: {}", stderr_of(&events));
            assert!(
                !Path::new(&marker).exists(),
                "{var}={path} from a command's envs loaded on the host"
            );
        }
    }
    // It did load inside, for the command that asked: the sandbox's /tmp.
    let (events, _) = run(&h, &a, &format!("cat {marker}")).await;
    assert!(
        stdout_of(&events).contains("loaded"),
        "the library never loaded in the sandbox: {}",
        stderr_of(&events)
    );

    // A sandbox's envVars, naming the first sandbox's library through
    // the host's /proc: what starts that sandbox must not load it.
    let b = h
        .create(json!({
            "templateID": "base",
            "envVars": {"LD_PRELOAD": through_host, "LD_AUDIT": through_host},
        }))
        .await;
    let (events, end) = run(&h, &b, "echo ran").await;
    assert_eq!(stdout_of(&events), "ran\n", "{end} {}", stderr_of(&events));
    assert!(
        !Path::new(&marker).exists(),
        "a sandbox's envVars loaded a library on the host"
    );
    // envVars do reach the sandbox's own commands.
    let c = h
        .create(json!({"templateID": "base", "envVars": {"LD_PRELOAD": inside}}))
        .await;
    assert_eq!(upload(&h, &c, inside, "user", library).await.0, 200);
    let (events, _) = run(&h, &c, &format!("cat {marker}")).await;
    assert!(
        stdout_of(&events).contains("loaded"),
        "{}",
        stderr_of(&events)
    );
    assert!(!Path::new(&marker).exists());
    h.server.shutdown().await;
}

/// Sandbox root cannot remount `/usr` (it has no `CAP_SYS_ADMIN`:
/// bubblewrap's binds are not locked in the sandbox's own user namespace),
/// and what it and the files API (as root, directly or through a symlink)
/// write to a host file's path lands on the sandbox's own copy-on-write
/// root (or fails, where roots are read-only), never on the host's file:
/// the file's owner is not mapped in the sandbox's user namespace, and
/// envd acts only inside it.
#[tokio::test]
async fn sandbox_root_can_neither_remount_usr_nor_change_host_files() {
    if !rustix::process::getuid().is_root() {
        eprintln!("skipped: sandboxes have a root only on a server run as root");
        return;
    }
    let host_dir = PathBuf::from("/usr/local/share");
    std::fs::create_dir_all(&host_dir).unwrap();
    let name = format!("e2b-boundary-{}", std::process::id());
    let host_file = host_dir.join(&name);
    std::fs::write(&host_file, "host\n").unwrap();
    let guard = RemoveOnDrop(host_file.clone());
    let inside = format!("/usr/local/share/{name}");

    let (h, sbx) = start_sandbox().await;
    let (events, end) = h
        .stream(
            &sbx,
            "/process.Process/Start",
            json!({"process": {"cmd": "/bin/bash", "args": ["-c", format!(
                "mount -o remount,bind,rw /usr && echo remounted; \
                 echo pwned > {inside}; echo pwned >> {inside}; \
                 ln -s {inside} /home/user/link; cat {inside}"
            )]}}),
            &[("authorization", "Basic cm9vdDo=")],
        )
        .await;
    assert!(
        !stdout_of(&events).contains("remounted"),
        "sandbox root remounted /usr writable: {end} {}",
        stderr_of(&events)
    );
    let cow = h.server.isolation().contains("root: copy-on-write");
    let seen = if cow { "pwned\npwned\n" } else { "host\n" };
    assert_eq!(stdout_of(&events), seen, "{}", stderr_of(&events));

    for path in [inside.as_str(), "/home/user/link"] {
        let (status, body) = upload(&h, &sbx, path, "root", b"pwned\n".to_vec()).await;
        if cow {
            assert_eq!(status, 200, "the sandbox's own copy of {path}: {body}");
        } else {
            assert!(status >= 400, "the files API wrote {path}: {status} {body}");
        }
    }
    assert_eq!(std::fs::read_to_string(&host_file).unwrap(), "host\n");
    h.server.shutdown().await;
    drop(guard);
}

struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// envd reaps what it starts: a killed process is gone, not a zombie that
/// `kill -0` still finds.
#[tokio::test]
async fn a_killed_process_is_reaped() {
    let (h, sbx) = start_sandbox().await;
    let mut resp = h
        .start_process(
            &sbx,
            json!({"process": {"cmd": "sleep", "args": ["987603"]}}),
        )
        .await;
    let first = resp.chunk().await.unwrap().unwrap();
    let (start_events, _) = crate::common::parse_stream(&first);
    let pid = start_events[0]["event"]["start"]["pid"].as_u64().unwrap();
    let (status, v) = h
        .unary(
            &sbx,
            "/process.Process/SendSignal",
            json!({"process": {"pid": pid}, "signal": "SIGNAL_SIGKILL"}),
        )
        .await;
    assert_eq!(status, 200, "{v}");
    drop(resp);
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let (events, _) = run(
            &h,
            &sbx,
            &format!("kill -0 {pid} 2>/dev/null && echo alive || echo gone"),
        )
        .await;
        if stdout_of(&events) == "gone\n" {
            break;
        }
        assert!(
            Instant::now() < until,
            "pid {pid} still answers kill -0 after SIGKILL (a zombie nobody reaped)"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    h.server.shutdown().await;
}

/// A cgroup v2 hierarchy, mounted for the test where the machine has
/// none; unmounted when dropped.
struct CgroupV2Mount(tempfile::TempDir);

impl CgroupV2Mount {
    fn new() -> Option<Self> {
        let dir = tempfile::tempdir().ok()?;
        let status = std::process::Command::new("mount")
            .args(["-t", "cgroup2", "none"])
            .arg(dir.path())
            .status()
            .ok()?;
        status.success().then_some(Self(dir))
    }
}

impl Drop for CgroupV2Mount {
    fn drop(&mut self) {
        // The server's groups go first (a group holding groups stays).
        let group = self.0.path().join("e2b-local");
        if let Ok(servers) = std::fs::read_dir(&group) {
            for server in servers.flatten() {
                if let Ok(sandboxes) = std::fs::read_dir(server.path()) {
                    for sandbox in sandboxes.flatten() {
                        let _ = std::fs::remove_dir(sandbox.path());
                    }
                }
                let _ = std::fs::remove_dir(server.path());
            }
        }
        let _ = std::fs::remove_dir(&group);
        let _ = std::process::Command::new("umount")
            .arg(self.0.path())
            .status();
    }
}

/// On a cgroup v2 hierarchy, with the server as root, commands run (none
/// moves itself into the group, which v2 would refuse to the sandbox's
/// uid: envd is in it from the start, and every process inherits it), the
/// group holds the sandbox's processes, and pause freezes them.
#[tokio::test]
async fn commands_run_in_the_sandbox_group_on_cgroup_v2() {
    if !rustix::process::getuid().is_root() {
        eprintln!("skipped: cgroups need a server run as root");
        return;
    }
    let Some(mount) = CgroupV2Mount::new() else {
        eprintln!("skipped: cannot mount a cgroup v2 hierarchy here");
        return;
    };
    let h = crate::common::start_with(e2b_local::Options {
        cgroup_parent: Some(mount.0.path().to_path_buf()),
        ..Default::default()
    })
    .await;
    let sbx = h.create_default().await;
    let (events, end) = run(&h, &sbx, "sleep 987604 > /dev/null 2>&1 & echo ok").await;
    assert_eq!(stdout_of(&events), "ok\n", "{end} {}", stderr_of(&events));
    let group = mount
        .0
        .path()
        .join("e2b-local")
        .join(std::process::id().to_string())
        .join(&sbx.id);
    let procs = std::fs::read_to_string(group.join("cgroup.procs")).unwrap();
    let sleep = wait_for_host_pid(&["sleep", "987604"]).await;
    assert!(
        procs.lines().any(|p| p == sleep.to_string()),
        "the job is not in the sandbox's group: {procs}"
    );
    let resp = h.pause(&sbx).await;
    assert_eq!(resp.status(), 204);
    let events = std::fs::read_to_string(group.join("cgroup.events")).unwrap();
    assert!(events.contains("frozen 1"), "{events}");
    let resp = h.connect(&sbx, 60).await;
    assert!(resp.status().is_success());
    let (events, _) = run(&h, &sbx, "pgrep -x sleep").await;
    assert!(
        !stdout_of(&events).is_empty(),
        "the job did not survive the pause"
    );
    h.server.shutdown().await;
    drop(mount);
}

/// The same attacks through the official Python SDK, as a model's code
/// would make them (`tests/conformance/boundary.py`).
#[tokio::test]
async fn official_sdk_boundary_attacks_fail() {
    // scripts/test sets it (not for its run as nobody), as for escape.rs.
    let Ok(python) = std::env::var("E2B_TOOLS_PYTHON") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let marker = unique("e2b-boundary-sdk");
    let library = dir.path().join("e.so");
    std::fs::write(&library, marking_library(dir.path(), &marker)).unwrap();
    let host_file = rustix::process::getuid().is_root().then(|| {
        let path = PathBuf::from(format!(
            "/usr/local/share/e2b-boundary-sdk-{}",
            std::process::id()
        ));
        std::fs::create_dir_all("/usr/local/share").unwrap();
        std::fs::write(&path, "host\n").unwrap();
        RemoveOnDrop(path)
    });
    let h = start().await;
    let args = [
        library.display().to_string(),
        marker.clone(),
        host_file
            .as_ref()
            .map_or("-".into(), |f| f.0.display().to_string()),
    ];
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance/boundary.py");
    crate::conformance::run_python(&h, &python, script, &args, "boundary scenario passed").await;
    assert!(!Path::new(&marker).exists());
    h.server.shutdown().await;
}

/// slirp4netns, which parses the sandbox's packets, runs as the sandbox's
/// root uid (in its user namespace), never as host root. Where the
/// sandboxes have no internet (the startup line says why) there is no
/// slirp4netns to check.
#[tokio::test]
async fn slirp4netns_runs_as_the_sandbox_uid() {
    let h = start().await;
    if !h
        .server
        .isolation()
        .contains("internet through slirp4netns")
    {
        eprintln!("skipped: {}", h.server.isolation());
        return;
    }
    let sbx = h.create_default().await;
    let (events, _) = run(&h, &sbx, "grep -o eth0 /proc/net/dev").await;
    assert_eq!(
        stdout_of(&events),
        "eth0
",
        "{}",
        stderr_of(&events)
    );
    let slirp_uids: Vec<u32> = crate::common::children_named(std::process::id(), &["slirp4netns"])
        .into_iter()
        .map(|p| p.uid)
        .collect();
    assert!(!slirp_uids.is_empty(), "no slirp4netns of this server");
    assert!(
        slirp_uids.iter().all(|uid| *uid != 0),
        "slirp4netns as host root: {slirp_uids:?}"
    );
    h.server.shutdown().await;
}

/// A terminal's descriptors are close-on-exec from their creation: while
/// one process runs on a PTY, another command inherits neither end.
#[tokio::test]
async fn pty_descriptors_are_not_inherited_by_other_commands() {
    let (h, sbx) = start_sandbox().await;
    let mut pty = h
        .start_process(
            &sbx,
            json!({
                "process": {"cmd": "/bin/bash", "args": ["-i", "-c", "sleep 30"]},
                "pty": {"size": {"cols": 80, "rows": 24}},
            }),
        )
        .await;
    let first = pty.chunk().await.unwrap().unwrap();
    let (events, _) = crate::common::parse_stream(&first);
    assert!(events[0]["event"]["start"]["pid"].is_u64(), "{events:?}");
    let (events, _) = run(
        &h,
        &sbx,
        "ls -l /proc/self/fd/ | grep -c -e ptmx -e /dev/pts || true",
    )
    .await;
    assert_eq!(stdout_of(&events), "0\n", "{}", stderr_of(&events));
    drop(pty);
    h.server.shutdown().await;
}

/// `sudo` in a sandbox is the sandbox's own root (uid 0 of its user
/// namespace, mapped to an unprivileged host uid), never the host's: host
/// files stay unwritable, a loader variable handed through it loads only
/// inside, and its socket is not reachable from the host. A server run as
/// an ordinary user has no root to give, and its `sudo` says so.
#[tokio::test]
async fn sudo_is_the_sandbox_root_never_the_hosts() {
    let dir = tempfile::tempdir().unwrap();
    let marker = unique("e2b-boundary-sudo");
    let library = marking_library(dir.path(), &marker);
    let (h, sbx) = start_sandbox().await;
    let (events, end) = run(&h, &sbx, "sudo id -u; echo rc=$?").await;
    if !rustix::process::getuid().is_root() {
        assert_eq!(stdout_of(&events), "rc=1\n", "{end}");
        assert!(
            stderr_of(&events).contains("'root' is not available"),
            "{}",
            stderr_of(&events)
        );
        h.server.shutdown().await;
        return;
    }
    assert_eq!(stdout_of(&events), "0\nrc=0\n", "{}", stderr_of(&events));
    let (events, _) = run(&h, &sbx, "sudo cat /proc/self/uid_map").await;
    let map: Vec<String> = stdout_of(&events)
        .split_whitespace()
        .map(String::from)
        .collect();
    assert_eq!(map[0], "0", "{map:?}");
    assert_ne!(map[1], "0", "sandbox root is host root: {map:?}");
    let (events, _) = run(
        &h,
        &sbx,
        "sudo touch /usr/e2b-sudo-probe 2>/dev/null && echo wrote || echo refused",
    )
    .await;
    // Its own copy-on-write /usr, or a read-only one: never the host's.
    let cow = h.server.isolation().contains("root: copy-on-write");
    assert_eq!(
        stdout_of(&events),
        if cow { "wrote\n" } else { "refused\n" }
    );
    assert!(!Path::new("/usr/e2b-sudo-probe").exists());
    assert_eq!(
        upload(&h, &sbx, "/home/user/e.so", "user", library).await.0,
        200
    );
    let (events, _) = run(
        &h,
        &sbx,
        &format!("LD_PRELOAD=/home/user/e.so sudo -E true; sudo test -e {marker} && echo inside"),
    )
    .await;
    assert_eq!(stdout_of(&events), "inside\n", "{}", stderr_of(&events));
    assert!(!Path::new(&marker).exists(), "loaded on the host: {marker}");
    // The socket lives in the sandbox's network namespace only.
    let socket = rustix::net::socket(
        rustix::net::AddressFamily::UNIX,
        rustix::net::SocketType::SEQPACKET,
        None,
    )
    .unwrap();
    let address = rustix::net::SocketAddrUnix::new_abstract_name(b"e2b-envd-sudo").unwrap();
    assert!(rustix::net::connect(&socket, &address).is_err());
    h.server.shutdown().await;
}
