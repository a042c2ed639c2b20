//! A persistent server killed with `kill -9` and started again on its
//! state directory: the paused sandbox comes back and resumes with its
//! files, a snapshot still starts sandboxes, and a sandbox that was running
//! is gone, its disk with it. An ephemeral server killed so: the next
//! one's start removes what it left.
//!
//! The server runs as a child process: this test binary again, running
//! only [`child_server`] (ignored otherwise), which serves on the state
//! directory its environment names, or keeping nothing.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use e2b_local::Options;
use reqwest::Method;
use serde_json::{json, Value};

use crate::common::Sbx;

/// The variable that makes [`child_server`] serve, on the directory it
/// names (empty: an ephemeral server).
const STATE_DIR_VAR: &str = "E2B_LOCAL_TEST_STATE_DIR";

/// Not a test on its own: the restart test's server, in a child process.
#[tokio::test]
#[ignore = "the restart test runs it in a child process"]
async fn child_server() {
    let Some(dir) = std::env::var_os(STATE_DIR_VAR) else {
        return;
    };
    let opts = Options {
        state_dir: (!dir.is_empty()).then(|| dir.into()),
        ..Default::default()
    };
    e2b_local::serve_forever(opts, |server| {
        println!("SERVING {} {}", server.url(), server.api_key());
    })
    .await
    .expect("the child server runs");
}

/// A child server on `state`: the process, its URL and API key.
struct ChildServer {
    child: Child,
    url: String,
    key: String,
    http: reqwest::Client,
}

impl ChildServer {
    fn start(state: &Path) -> ChildServer {
        Self::spawn(state, None)
    }

    /// An ephemeral server, its temporary directory `tmp`.
    fn ephemeral(tmp: &Path) -> ChildServer {
        Self::spawn(Path::new(""), Some(tmp))
    }

    fn spawn(state: &Path, tmp: Option<&Path>) -> ChildServer {
        let mut command = Command::new(std::env::current_exe().unwrap());
        if let Some(tmp) = tmp {
            command.env("TMPDIR", tmp);
        }
        let mut child = command
            .args([
                "--exact",
                "restart::child_server",
                "--ignored",
                "--nocapture",
            ])
            .env(STATE_DIR_VAR, state)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        let (url, key) = loop {
            line.clear();
            assert!(
                out.read_line(&mut line).unwrap() > 0,
                "the child server did not start"
            );
            if let Some(rest) = line.trim().strip_prefix("SERVING ") {
                let (url, key) = rest.split_once(' ').unwrap();
                break (url.to_string(), key.to_string());
            }
        };
        let http = reqwest::Client::builder().no_proxy().build().unwrap();
        ChildServer {
            child,
            url,
            key,
            http,
        }
    }

    fn api(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.url))
            .header("X-API-KEY", &self.key)
    }

    async fn create(&self, body: Value) -> Sbx {
        let resp = self
            .api(Method::POST, "/v2/sandboxes")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 201);
        let v: Value = resp.json().await.unwrap();
        Sbx {
            id: v["sandboxID"].as_str().unwrap().into(),
            token: v["envdAccessToken"].as_str().unwrap().into(),
        }
    }

    /// Writes `content` to `path` in `sbx` (envd's files API).
    async fn write(&self, sbx: &Sbx, path: &str, content: &'static str) {
        let resp = self
            .envd(sbx, Method::POST, &format!("/files?path={path}"))
            .header("content-type", "application/octet-stream")
            .body(content)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
    }

    /// `path` in `sbx`: the status and the content.
    async fn read(&self, sbx: &Sbx, path: &str) -> (u16, String) {
        let resp = self
            .envd(sbx, Method::GET, &format!("/files?path={path}"))
            .send()
            .await
            .unwrap();
        (resp.status().as_u16(), resp.text().await.unwrap())
    }

    fn envd(&self, sbx: &Sbx, method: Method, path: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.url))
            .header("E2b-Sandbox-Id", &sbx.id)
            .header("E2b-Sandbox-Port", "49983")
            .header("X-Access-Token", &sbx.token)
    }

    async fn status(&self, method: Method, path: &str) -> u16 {
        self.api(method, path)
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    }

    fn kill_9(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// SIGTERM: a clean stop.
    fn stop(self) {
        drop(self);
    }
}

impl Drop for ChildServer {
    /// Stops the child cleanly (it unmounts its disks) unless it is gone,
    /// also when the test failed, before its state directory is removed.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            if let Some(pid) = rustix::process::Pid::from_raw(self.child.id() as i32) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            }
            let _ = self.child.wait();
        }
    }
}

#[tokio::test]
async fn paused_sandboxes_and_snapshots_survive_kill_9() {
    let state = tempfile::Builder::new()
        .prefix("e2b-restart-test-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let first = ChildServer::start(state.path());
    let paused = first
        .create(json!({"templateID": "base", "metadata": {"kept": "yes"}}))
        .await;
    first
        .write(&paused, "/home/user/paused.txt", "paused data")
        .await;
    assert_eq!(
        first
            .status(Method::POST, &format!("/sandboxes/{}/pause", paused.id))
            .await,
        204
    );
    let running = first.create(json!({"templateID": "base"})).await;
    first
        .write(&running, "/home/user/running.txt", "running data")
        .await;
    let disks = state.path().join(".disks");
    let snapshot = if disks.join(format!("{}.img", running.id)).is_file() {
        let resp = first
            .api(
                Method::POST,
                &format!("/sandboxes/{}/snapshots", running.id),
            )
            .json(&json!({"name": "kept"}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 201);
        Some(resp.json::<Value>().await.unwrap()["snapshotID"].clone())
    } else {
        // A server without disk images has no snapshots; the rest holds.
        None
    };
    first.kill_9();

    let second = ChildServer::start(state.path());
    let listed: Vec<Value> = second
        .api(Method::GET, "/v2/sandboxes?state=paused")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["sandboxID"], paused.id.as_str());
    assert_eq!(listed[0]["state"], "paused");
    assert_eq!(listed[0]["metadata"]["kept"], "yes");
    // Running at the kill: gone, never half-restored, and its files too.
    let gone = format!("/sandboxes/{}", running.id);
    assert_eq!(second.status(Method::GET, &gone).await, 404);
    assert!(!state.path().join(&running.id).exists());
    assert!(!disks.join(format!("{}.img", running.id)).exists());
    // The paused one resumes (cold: on its disk) with its files.
    let resume = second
        .api(
            Method::POST,
            &format!("/v2/sandboxes/{}/connect", paused.id),
        )
        .json(&json!({"timeout": 60}))
        .send()
        .await
        .unwrap();
    assert_eq!(resume.status(), 201);
    assert_eq!(
        second.read(&paused, "/home/user/paused.txt").await,
        (200, "paused data".to_string())
    );
    if let Some(id) = snapshot {
        let listed: Vec<Value> = second
            .api(Method::GET, "/snapshots")
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(
            listed,
            [json!({"snapshotID": "local/kept:default", "names": ["local/kept:default"]})]
        );
        let from = second.create(json!({ "templateID": id })).await;
        assert_eq!(
            second.read(&from, "/home/user/running.txt").await,
            (200, "running data".to_string())
        );
    }
    second.stop();
}

/// The slirp4netns processes whose parent is `pid`.
fn slirps_of(pid: u32) -> Vec<u32> {
    crate::common::children_named(pid, &["slirp4netns"])
        .into_iter()
        .map(|p| p.pid)
        .collect()
}

/// Whether process `pid` still runs (a zombie does not).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| !matches!(stat.rsplit(')').next().map(str::trim_start), Some(s) if s.starts_with('Z')))
}

/// A server killed with `kill -9` leaves no network helper behind: each
/// sandbox's slirp4netns reads the end of a pipe only the server held,
/// and dies with it, within 5 s; a restart finds none either.
#[tokio::test]
async fn network_helpers_die_with_a_killed_server() {
    if !rustix::process::getuid().is_root() {
        // An ordinary user's server gives no internet, so runs none.
        return;
    }
    let state = tempfile::Builder::new()
        .prefix("e2b-restart-test-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let first = ChildServer::start(state.path());
    let pid = first.child.id();
    for _ in 0..2 {
        let sbx = first.create(json!({"templateID": "base"})).await;
        first.write(&sbx, "/home/user/up.txt", "up").await;
    }
    let slirps = slirps_of(pid);
    assert_eq!(slirps.len(), 2, "one slirp4netns a sandbox: {slirps:?}");
    first.kill_9();
    let started = std::time::Instant::now();
    while slirps.iter().any(|p| running(*p)) {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "slirp4netns outlived its server by 5 s: {slirps:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let second = ChildServer::start(state.path());
    assert!(slirps.iter().all(|p| !running(*p)));
    assert_eq!(
        second.status(Method::GET, "/v2/sandboxes").await,
        200,
        "the restart serves"
    );
    second.stop();
}

/// What a dead server left in its cgroups (a process still running in a
/// sandbox's group) is swept by the next server's start: the process
/// killed, the groups removed.
#[tokio::test]
async fn a_dead_servers_leftovers_are_swept_at_start() {
    let v1 = std::path::Path::new("/sys/fs/cgroup/pids");
    let root = if v1.join("cgroup.procs").exists() {
        v1.to_path_buf()
    } else {
        std::path::PathBuf::from("/sys/fs/cgroup")
    };
    if !rustix::process::getuid().is_root()
        || rustix::fs::access(&root, rustix::fs::Access::WRITE_OK).is_err()
    {
        return;
    }
    // A pid no process has: a child that exited and was reaped.
    let dead = {
        let mut gone = Command::new("true").spawn().unwrap();
        gone.wait().unwrap();
        gone.id()
    };
    let group = root
        .join("e2b-local")
        .join(dead.to_string())
        .join("planted");
    std::fs::create_dir_all(&group).unwrap();
    let mut leftover = Command::new("sleep").arg("300").spawn().unwrap();
    std::fs::write(group.join("cgroup.procs"), leftover.id().to_string()).unwrap();
    let state = tempfile::Builder::new()
        .prefix("e2b-restart-test-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let server = ChildServer::start(state.path());
    let started = std::time::Instant::now();
    while leftover.try_wait().unwrap().is_none() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "the planted process outlived the sweep"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(!group.exists(), "{} is left", group.display());
    assert!(!group.parent().unwrap().exists());
    server.stop();
}

/// The leftovers check (`e2b_local::leftovers`, the soak's) finds what
/// is planted: a mount under the data directory and a stray
/// `slirp4netns` in a server's cgroup.
#[tokio::test]
async fn the_leftovers_check_finds_a_planted_mount_and_process() {
    let pids = std::path::Path::new("/sys/fs/cgroup/pids");
    if !rustix::process::getuid().is_root() || !pids.join("cgroup.procs").exists() {
        return;
    }
    let data = tempfile::Builder::new()
        .prefix("e2b-leftovers-")
        .tempdir_in("/var/tmp")
        .unwrap();
    assert_eq!(
        e2b_local::leftovers(data.path()).mounts,
        Vec::<String>::new()
    );
    let point = data.path().join("mounted");
    std::fs::create_dir(&point).unwrap();
    rustix::mount::mount(
        "tmpfs",
        &point,
        "tmpfs",
        rustix::mount::MountFlags::empty(),
        None::<&std::ffi::CStr>,
    )
    .unwrap();
    // A program the kernel names slirp4netns, in a sandbox's cgroup.
    let stray = data.path().join("slirp4netns");
    std::fs::copy("/bin/sleep", &stray).unwrap();
    let mut process = Command::new(&stray).arg("300").spawn().unwrap();
    // Under a "server" group of its own pid, which no server of this test
    // binary shares (their shutdowns end every group under their pid) and
    // no server's start sweeps (it runs).
    let group = pids
        .join("e2b-local")
        .join(process.id().to_string())
        .join("planted-leftover");
    std::fs::create_dir_all(&group).unwrap();
    std::fs::write(group.join("cgroup.procs"), process.id().to_string()).unwrap();
    let found = e2b_local::leftovers(data.path());
    let _ = process.kill();
    let _ = process.wait();
    let _ = std::fs::remove_dir(&group);
    let _ = std::fs::remove_dir(group.parent().unwrap());
    let _ = rustix::mount::unmount(&point, rustix::mount::UnmountFlags::DETACH);
    assert_eq!(found.mounts, [point.display().to_string()], "{found:?}");
    assert!(
        found
            .processes
            .contains(&format!("{} slirp4netns", process.id())),
        "{found:?}"
    );
    assert!(
        found.cgroups.contains(&group.display().to_string()),
        "{found:?}"
    );
}

/// An ephemeral server killed with `kill -9` leaves its directory in the
/// temporary directory (its sandbox's disk mounted there, as root); the
/// next ephemeral server's start unmounts and removes it, and leaves what
/// it cannot prove a dead server's of this user: a directory without an
/// owner file, a live process's, another user's.
#[tokio::test]
async fn an_ephemeral_servers_leftovers_are_removed_by_the_next_ones_start() {
    let tmp = tempfile::Builder::new()
        .prefix("e2b-ephemeral-test-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let ephemeral_dirs = || -> Vec<std::path::PathBuf> {
        let mut dirs: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("e2b-local-")
            })
            .collect();
        dirs.sort();
        dirs
    };
    let first = ChildServer::ephemeral(tmp.path());
    let sbx = first.create(json!({"templateID": "base"})).await;
    first.write(&sbx, "/home/user/kept.txt", "data").await;
    let [left] = <[_; 1]>::try_from(ephemeral_dirs()).unwrap();
    let owner = std::fs::read_to_string(left.join(".owner")).unwrap();
    first.kill_9();
    let root = rustix::process::getuid().is_root();
    if root {
        assert!(
            mounts_under(&left) > 0,
            "the killed server's disk is not mounted"
        );
    }
    // What must stay: a server's still starting (no owner file), this live
    // process's, and (as root) another user's with a dead owner.
    let plant = |name: &str, owner: Option<String>| {
        let dir = tmp.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        if let Some(owner) = owner {
            std::fs::write(dir.join(".owner"), owner).unwrap();
        }
        dir
    };
    let unowned = plant("e2b-local-starting", None);
    let namespace = |line: &str| line.split_whitespace().nth(2).unwrap().to_string();
    let me = std::fs::read_to_string("/proc/self/stat").unwrap();
    let me_started = me
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .nth(19)
        .unwrap()
        .to_string();
    let live = plant(
        "e2b-local-live",
        Some(format!(
            "{} {me_started} {}\n",
            std::process::id(),
            namespace(&owner)
        )),
    );
    let foreign = root.then(|| {
        let dir = plant("e2b-local-foreign", Some(owner.clone()));
        for path in [dir.join(".owner"), dir.clone()] {
            rustix::fs::chown(&path, Some(rustix::fs::Uid::from_raw(65534)), None).unwrap();
        }
        dir
    });
    let second = ChildServer::ephemeral(tmp.path());
    assert!(!left.exists(), "{} is left", left.display());
    assert_eq!(mounts_under(&left), 0);
    assert!(unowned.exists() && live.exists());
    assert!(foreign.as_ref().is_none_or(|dir| dir.exists()));
    second.stop();
}

/// How many mounts there are at or under `dir`.
fn mounts_under(dir: &Path) -> usize {
    let prefix = dir.to_string_lossy().into_owned();
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter(|line| {
            line.split(' ')
                .nth(4)
                .is_some_and(|point| point.starts_with(&prefix))
        })
        .count()
}
