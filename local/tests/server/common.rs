//! A started server plus a small client speaking both planes.

use e2b_local::{LocalServer, Options};
use e2b_wire::connect::{encode_envelope, EnvelopeDecoder};
use serde_json::{json, Value};

/// A server and an HTTP client for it.
pub struct Harness {
    pub server: LocalServer,
    pub http: reqwest::Client,
}

/// A created sandbox's id and access token.
#[derive(Clone)]
pub struct Sbx {
    pub id: String,
    pub token: String,
}

pub async fn start() -> Harness {
    start_with(Options::default()).await
}

/// A server with one sandbox of the base template.
pub async fn start_sandbox() -> (Harness, Sbx) {
    let h = start().await;
    let sbx = h.create_default().await;
    (h, sbx)
}

pub async fn start_with(opts: Options) -> Harness {
    let server = LocalServer::start(opts).await.expect("server starts");
    let http = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    Harness { server, http }
}

impl Harness {
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.server.url(), path)
    }

    /// A control-plane request with the API key.
    pub fn api(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, self.url(path))
            .header("X-API-KEY", self.server.api_key())
    }

    /// `POST /v2/sandboxes` with `body`, whatever it answers.
    pub async fn try_create(&self, body: Value) -> reqwest::Response {
        self.api_json(reqwest::Method::POST, "/v2/sandboxes", &body)
            .await
    }

    pub async fn create(&self, body: Value) -> Sbx {
        let resp = self.try_create(body).await;
        let status = resp.status();
        let v: Value = resp.json().await.unwrap();
        assert_eq!(status, 201, "{v}");
        Sbx {
            id: v["sandboxID"].as_str().unwrap().to_string(),
            token: v["envdAccessToken"].as_str().unwrap().to_string(),
        }
    }

    /// Sends a control-plane request without a body.
    pub async fn api_send(&self, method: reqwest::Method, path: &str) -> reqwest::Response {
        self.api(method, path).send().await.unwrap()
    }

    /// Sends a sandbox-plane request without a body.
    pub async fn sandbox_send(
        &self,
        sbx: &Sbx,
        port: u16,
        method: reqwest::Method,
        path: &str,
    ) -> reqwest::Response {
        self.sandbox(sbx, port, method, path).send().await.unwrap()
    }

    /// `GET /sandboxes/{id}`'s JSON.
    pub async fn detail(&self, sbx: &Sbx) -> Value {
        self.api(reqwest::Method::GET, &format!("/sandboxes/{}", sbx.id))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    pub async fn create_default(&self) -> Sbx {
        self.create(json!({"templateID": "base"})).await
    }

    /// A sandbox-plane request to `port` of `sbx`, with its token.
    pub fn sandbox(
        &self,
        sbx: &Sbx,
        port: u16,
        method: reqwest::Method,
        path: &str,
    ) -> reqwest::RequestBuilder {
        self.http
            .request(method, self.url(path))
            .header("E2b-Sandbox-Id", &sbx.id)
            .header("E2b-Sandbox-Port", port.to_string())
            .header("X-Access-Token", &sbx.token)
    }

    /// A unary Connect call to envd: (status, JSON body).
    pub async fn unary(&self, sbx: &Sbx, path: &str, body: Value) -> (u16, Value) {
        let resp = self
            .sandbox(sbx, 49983, reqwest::Method::POST, path)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// A `filesystem.Filesystem` RPC (`Stat`, `ListDir`, `MakeDir`, …).
    pub async fn filesystem(&self, sbx: &Sbx, method: &str, body: Value) -> (u16, Value) {
        self.unary(sbx, &format!("/filesystem.Filesystem/{method}"), body)
            .await
    }

    /// A `process.Process/Start` request with `body`, not sent yet.
    pub fn start_request(&self, sbx: &Sbx, body: Value) -> reqwest::RequestBuilder {
        self.sandbox(sbx, 49983, reqwest::Method::POST, "/process.Process/Start")
            .header("content-type", "application/connect+json")
            .body(encode_envelope(0, body.to_string().as_bytes()))
    }

    /// `process.Process/Start` with `body`, its answer left streaming.
    pub async fn start_process(&self, sbx: &Sbx, body: Value) -> reqwest::Response {
        let resp = self.start_request(sbx, body).send().await.unwrap();
        assert_eq!(resp.status(), 200);
        resp
    }

    /// A control-plane request with a JSON body, sent.
    pub async fn api_json(
        &self,
        method: reqwest::Method,
        path: &str,
        body: &Value,
    ) -> reqwest::Response {
        self.api(method, path).json(body).send().await.unwrap()
    }

    /// `POST /sandboxes/{id}/pause`.
    pub async fn pause(&self, sbx: &Sbx) -> reqwest::Response {
        self.api_send(
            reqwest::Method::POST,
            &format!("/sandboxes/{}/pause", sbx.id),
        )
        .await
    }

    /// `POST /v2/sandboxes/{id}/connect` with a timeout in seconds.
    pub async fn connect(&self, sbx: &Sbx, timeout: u64) -> reqwest::Response {
        self.api_json(
            reqwest::Method::POST,
            &format!("/v2/sandboxes/{}/connect", sbx.id),
            &json!({ "timeout": timeout }),
        )
        .await
    }

    /// Writes `body` to `path` through envd's files API (`path` may carry
    /// more of the query, e.g. `&username=root`).
    pub async fn upload(&self, sbx: &Sbx, path: &str, body: &'static str) -> reqwest::Response {
        self.sandbox(
            sbx,
            49983,
            reqwest::Method::POST,
            &format!("/files?path={path}"),
        )
        .header("content-type", "application/octet-stream")
        .body(body)
        .send()
        .await
        .unwrap()
    }

    /// A server-streaming Connect call: every message, then the end-stream payload.
    pub async fn stream(
        &self,
        sbx: &Sbx,
        path: &str,
        body: Value,
        headers: &[(&str, &str)],
    ) -> (Vec<Value>, Value) {
        let mut req = self
            .sandbox(sbx, 49983, reqwest::Method::POST, path)
            .header("content-type", "application/connect+json")
            .body(encode_envelope(0, body.to_string().as_bytes()));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["content-type"], "application/connect+json");
        let bytes = resp.bytes().await.unwrap();
        parse_stream(&bytes)
    }
}

/// Splits an envelope stream into messages and the end-stream payload.
pub fn parse_stream(bytes: &[u8]) -> (Vec<Value>, Value) {
    let mut dec = EnvelopeDecoder::new(1 << 24);
    dec.push(bytes);
    let mut msgs = Vec::new();
    let mut end = Value::Null;
    while let Some(env) = dec.next_envelope().unwrap() {
        let v: Value = serde_json::from_slice(&env.payload).unwrap();
        if env.is_end_stream() {
            end = v;
        } else {
            msgs.push(v);
        }
    }
    dec.finish().unwrap();
    (msgs, end)
}

/// Concatenated, base64-decoded stdout of process events.
pub fn stdout_of(events: &[Value]) -> String {
    output_of(events, "stdout")
}

/// Concatenated, base64-decoded stderr of process events.
pub fn stderr_of(events: &[Value]) -> String {
    output_of(events, "stderr")
}

fn output_of(events: &[Value], stream: &str) -> String {
    use base64::Engine;
    let pointer = format!("/event/data/{stream}");
    let mut out = Vec::new();
    for e in events {
        if let Some(s) = e.pointer(&pointer).and_then(Value::as_str) {
            out.extend(base64::engine::general_purpose::STANDARD.decode(s).unwrap());
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Runs a shell command to completion; returns its events and end-stream payload.
pub async fn run(h: &Harness, sbx: &Sbx, cmd: &str) -> (Vec<Value>, Value) {
    h.stream(
        sbx,
        "/process.Process/Start",
        json!({"process": {"cmd": "/bin/bash", "args": ["-c", cmd]}, "stdin": false}),
        &[],
    )
    .await
}

/// A port free on the host's loopback (bound, then let go).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Python that forks `forks` children sleeping `sleep_secs` each (counting
/// the forks the kernel refuses), then kills and reaps them and prints
/// `CHILDREN REFUSED`: a fork bomb bounded by the test.
pub fn fork_probe(forks: u32, sleep_secs: u32) -> String {
    format!(
        "import os, time\n\
         pids, fails = [], 0\n\
         for i in range({forks}):\n\
         \x20   try:\n\
         \x20       pid = os.fork()\n\
         \x20   except OSError:\n\
         \x20       fails += 1\n\
         \x20       continue\n\
         \x20   if pid == 0:\n\
         \x20       time.sleep({sleep_secs})\n\
         \x20       os._exit(0)\n\
         \x20   pids.append(pid)\n\
         for p in pids:\n\
         \x20   os.kill(p, 9)\n\
         \x20   os.waitpid(p, 0)\n\
         print(len(pids), fails)\n"
    )
}

/// Reads a streaming answer to its end within 10 s: `Ok` when it ended
/// cleanly, the error when it was cut.
pub async fn read_until_end(resp: &mut reqwest::Response) -> Result<(), reqwest::Error> {
    tokio::time::timeout(std::time::Duration::from_secs(10), async {
        while resp.chunk().await?.is_some() {}
        Ok(())
    })
    .await
    .expect("the stream ends promptly")
}

/// A multipart form with one `file` part per (file name, content).
pub fn files_form(files: &[(&str, &[u8])]) -> reqwest::multipart::Form {
    files
        .iter()
        .fold(reqwest::multipart::Form::new(), |form, (name, bytes)| {
            form.part(
                "file",
                reqwest::multipart::Part::bytes(bytes.to_vec()).file_name(name.to_string()),
            )
        })
}

/// A host process, as `/proc/<pid>/status` tells it.
pub struct HostProcess {
    pub pid: u32,
    pub name: String,
    pub uid: u32,
}

/// The processes named one of `names` whose parent is `parent`.
pub fn children_named(parent: u32, names: &[&str]) -> Vec<HostProcess> {
    let parent = parent.to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let status = std::fs::read_to_string(entry.path().join("status")).ok()?;
            let field = |key: &str| {
                status
                    .lines()
                    .find_map(|l| l.strip_prefix(key))
                    .and_then(|v| v.split_whitespace().next())
                    .map(str::to_string)
            };
            let name = field("Name:")?;
            (names.contains(&name.as_str()) && field("PPid:")? == parent).then_some(())?;
            Some(HostProcess {
                pid: entry.file_name().to_str()?.parse().ok()?,
                uid: field("Uid:")?.parse().ok()?,
                name,
            })
        })
        .collect()
}
