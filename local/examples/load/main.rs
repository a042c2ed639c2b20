//! Many at once: a load generator for the local server, which it drives
//! through E2B's protocol as the SDKs do (create, one command, a file
//! written and read back, kill), the server in a child process so it can
//! be measured from outside and killed with `kill -9`.
//!
//! ```text
//! cargo run --release -p e2b-local --example load -- [--sandboxes N] [--concurrency W]
//!     [--internet on|off] [--rounds K]   K rounds on one server, printed
//! cargo run --release -p e2b-local --example load -- --report [--quick] [OUT]
//!     the load table (concurrency 1, 8, 32; internet on and off), the churn
//!     and crash soak and the idle scale, written into local/BENCHMARKS.md
//! ```
//!
//! `LOAD_STDERR=1` shows the server's stderr (its logs) instead of
//! discarding it.
//!
//! A round prints what was served and what failed (by error), p50 and p99
//! of the create and of the first command, and the server's RSS, open
//! descriptors and threads before, at peak and after. The soak counts what
//! is left on the host afterwards ([`e2b_local::leftovers`]: sandbox
//! processes, mounts, loop devices, cgroups), the server's descriptors and
//! RSS against where they started, and the files in its state directory
//! beyond what it keeps by design. Its own crate would have been the bench
//! crate's, but that one builds wasmtime: this measures the server alone.

mod report;
mod round;
mod soak;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use e2b_wire::connect::encode_envelope;
use serde_json::{json, Value};

use report::report;
use round::{run_round, Round};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// How long after a round its "after" figures are read.
const SETTLE: Duration = Duration::from_secs(12);

/// The hidden flag that makes this program the child server.
const SERVE: &str = "--serve-child";

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(SERVE) {
        return serve_child(&args[1..]).await;
    }
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    if args.iter().any(|a| a == "--report") {
        let quick = args.iter().any(|a| a == "--quick");
        let out = args
            .iter()
            .rev()
            .find(|a| !a.starts_with("--"))
            .filter(|a| a.ends_with(".md"))
            .map_or_else(|| PathBuf::from("local/BENCHMARKS.md"), PathBuf::from);
        return report(quick, &out).await;
    }
    let sandboxes = flag("--sandboxes").map_or(Ok(64), |s| s.parse())?;
    let concurrency = flag("--concurrency").map_or(Ok(8), |s| s.parse())?;
    let internet = flag("--internet").is_none_or(|i| i != "off");
    let state = tempfile::Builder::new().prefix("e2b-load-").tempdir()?;
    let server = Server::start(state.path(), 256)?;
    eprintln!("{}", server.isolation);
    let rounds = flag("--rounds").map_or(Ok(1), |s| s.parse())?;
    println!("{}", Round::header());
    for _ in 0..rounds {
        let round = run_round(&server.endpoint, sandboxes, concurrency, internet, None).await;
        println!("{}", round.row());
        for (error, n) in &round.failures {
            println!("- {n} × {error}");
        }
    }
    server.stop();
    Ok(())
}

/// The child: a persistent server on the state directory it is given,
/// with room for `max` sandboxes, until SIGTERM.
async fn serve_child(args: &[String]) -> Result<(), Error> {
    let state = args.first().ok_or("the child needs a state directory")?;
    let max = args.get(1).map_or(Ok(100), |m| m.parse())?;
    let opts = e2b_local::Options {
        state_dir: Some(state.into()),
        max_sandboxes: max,
        ..Default::default()
    };
    e2b_local::serve_forever(opts, |server| {
        println!("ISOLATION {}", server.isolation());
        println!("SERVING {} {}", server.url(), server.api_key());
    })
    .await?;
    Ok(())
}

/// Where the server answers, and a client for it.
#[derive(Clone)]
struct Endpoint {
    url: String,
    key: String,
    /// The server's process (its figures are read from `/proc`).
    pid: u32,
    http: reqwest::Client,
}

impl Endpoint {
    fn api(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.url))
            .header("X-API-KEY", &self.key)
    }

    fn sandbox(
        &self,
        sandbox: &Sandbox,
        method: reqwest::Method,
        path: &str,
    ) -> reqwest::RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.url))
            .header("E2b-Sandbox-Id", &sandbox.id)
            .header("E2b-Sandbox-Port", "49983")
            .header("X-Access-Token", &sandbox.token)
    }
}

/// The server, a child process.
struct Server {
    child: Child,
    endpoint: Endpoint,
    isolation: String,
}

impl Server {
    fn start(state: &Path, max: usize) -> Result<Server, Error> {
        let mut child = Command::new(std::env::current_exe()?)
            .arg(SERVE)
            .arg(state)
            .arg(max.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(if std::env::var_os("LOAD_STDERR").is_some() {
                Stdio::inherit()
            } else {
                Stdio::null()
            })
            .spawn()?;
        let mut out = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let mut isolation = String::new();
        let mut line = String::new();
        loop {
            line.clear();
            if out.read_line(&mut line)? == 0 {
                return Err("the server did not start".into());
            }
            if let Some(rest) = line.trim().strip_prefix("ISOLATION ") {
                isolation = rest.to_string();
            }
            if let Some(rest) = line.trim().strip_prefix("SERVING ") {
                let (url, key) = rest.split_once(' ').ok_or("a bad SERVING line")?;
                let http = reqwest::Client::builder()
                    .no_proxy()
                    .pool_max_idle_per_host(64)
                    .build()?;
                let endpoint = Endpoint {
                    url: url.into(),
                    key: key.into(),
                    pid: child.id(),
                    http,
                };
                return Ok(Server {
                    child,
                    endpoint,
                    isolation,
                });
            }
        }
    }

    fn kill_9(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, and the wait for its clean stop.
    fn stop(mut self) {
        if let Some(pid) = rustix::process::Pid::from_raw(self.child.id() as i32) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        let _ = self.child.wait();
    }
}

struct Sandbox {
    id: String,
    token: String,
}

/// How long one sandbox's create and first command took.
struct Life {
    create: Duration,
    first: Duration,
}

/// One sandbox's life, as an SDK user lives it; what failed, if anything.
async fn one_life(server: &Endpoint, n: usize, internet: bool) -> Result<Life, String> {
    let started = Instant::now();
    let resp = server
        .api(reqwest::Method::POST, "/v2/sandboxes")
        .json(&json!({"templateID": "base", "allow_internet_access": internet, "timeout": 300}))
        .send()
        .await
        .map_err(|e| format!("create: {}", error_chain(&e)))?;
    let status = resp.status();
    let body: Value = resp.json().await.map_err(|e| format!("create: {e}"))?;
    if status != 201 {
        return Err(format!("create: {status} {}", body["message"]));
    }
    let create = started.elapsed();
    let sandbox = Sandbox {
        id: body["sandboxID"].as_str().unwrap_or_default().into(),
        token: body["envdAccessToken"].as_str().unwrap_or_default().into(),
    };
    let started = Instant::now();
    let command = json!({"process": {"cmd": "/bin/sh", "args": ["-c", format!("echo {n}")]}});
    let resp = server
        .sandbox(&sandbox, reqwest::Method::POST, "/process.Process/Start")
        .header("content-type", "application/connect+json")
        .body(encode_envelope(0, command.to_string().as_bytes()))
        .send()
        .await
        .map_err(|e| format!("command: {}", error_chain(&e)))?;
    let status = resp.status();
    let bytes = resp.bytes().await.map_err(|e| format!("command: {e}"))?;
    if status != 200 || !String::from_utf8_lossy(&bytes).contains("\"end\"") {
        return Err(format!(
            "command: {status} {}",
            String::from_utf8_lossy(&bytes)
        ));
    }
    let first = started.elapsed();
    let path = format!("/files?path=/home/user/{n}.txt");
    let written = server
        .sandbox(&sandbox, reqwest::Method::POST, &path)
        .header("content-type", "application/octet-stream")
        .body("round trip")
        .send()
        .await
        .map_err(|e| format!("write: {}", error_chain(&e)))?;
    if !written.status().is_success() {
        return Err(format!("write: {}", written.status()));
    }
    let read = server
        .sandbox(&sandbox, reqwest::Method::GET, &path)
        .send()
        .await
        .map_err(|e| format!("read: {}", error_chain(&e)))?;
    if read.text().await.unwrap_or_default() != "round trip" {
        return Err("read: not what was written".into());
    }
    let killed = server
        .api(
            reqwest::Method::DELETE,
            &format!("/sandboxes/{}", sandbox.id),
        )
        .send()
        .await
        .map_err(|e| format!("kill: {}", error_chain(&e)))?;
    if killed.status() != 204 {
        return Err(format!("kill: {}", killed.status()));
    }
    Ok(Life { create, first })
}

/// An error with its causes, for the failure table.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// Sandbox ids and numbers out of a message, so the same failure groups.
fn failure_kind(message: &str) -> String {
    message
        .split(' ')
        .map(|w| {
            if w.chars().any(|c| c.is_ascii_digit()) && w.len() > 3 {
                "…"
            } else {
                w
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(160)
        .collect()
}
