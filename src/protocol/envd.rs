//! The envd client (port 49983), as pure request builders and answer
//! parsers: `process.Process/Start` (a Connect server stream, parsed
//! incrementally into truncating sinks), `filesystem.Filesystem/ListDir`
//! and the `/files` REST API (docs/PROTOCOL.md §4).

use std::collections::BTreeMap;

use e2b_wire::connect::{
    encode_envelope, EndStream, EnvelopeDecoder, CONTENT_TYPE_STREAM, CONTENT_TYPE_UNARY,
};
use e2b_wire::filesystem::{EntryInfo, FileType, ListDirRequest, LIST_DIR_PATH};
use e2b_wire::process::{
    EndEvent, ProcessConfig, ProcessEvent, ProcessEventMessage, StartRequest, START_PATH,
};
use e2b_wire::{ENVD_PORT, HEADER_ACCESS_TOKEN, HEADER_SANDBOX_ID, HEADER_SANDBOX_PORT};
use serde::Deserialize;

use crate::config::Settings;
use crate::errors::{from_connect, from_connect_http, ErrorKind, Failure};
use crate::output::progress::LatestLine;
use crate::output::redact::Secrets;
use crate::output::truncate::Outputs;
use crate::protocol::api::SandboxHandle;
use crate::protocol::request::{query_escape, HttpRequest, Method};

/// Largest Start event accepted (envd sends ≤ 32 KiB of output per event,
/// base64-encoded).
const MAX_EVENT_BYTES: usize = 4 << 20;

/// The routing and auth headers of a sandbox request to `port`.
pub fn sandbox_request(
    settings: &Settings,
    sandbox: &SandboxHandle,
    port: u16,
    method: Method,
    path_and_query: &str,
) -> HttpRequest {
    let base = settings.sandbox_base(&sandbox.id, port, sandbox.domain.as_deref());
    let mut req = HttpRequest::new(method, format!("{base}{path_and_query}"))
        .header(HEADER_SANDBOX_ID, sandbox.id.clone())
        .header(HEADER_SANDBOX_PORT, port.to_string());
    if let Some(token) = &sandbox.access_token {
        req = req.header(HEADER_ACCESS_TOKEN, token.clone());
    }
    req
}

/// What to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartSpec {
    /// The shell command (`/bin/bash -l -c <command>`).
    pub command: String,
    /// Working directory.
    pub cwd: Option<String>,
    /// Extra environment.
    pub envs: BTreeMap<String, String>,
    /// `Connect-Timeout-Ms`: the process's lifetime; `None` = unlimited.
    pub timeout_ms: Option<u64>,
}

/// `POST /process.Process/Start`, one envelope, as the SDK sends it.
pub fn start_request(
    settings: &Settings,
    sandbox: &SandboxHandle,
    spec: &StartSpec,
) -> HttpRequest {
    let body = StartRequest {
        process: ProcessConfig {
            cmd: "/bin/bash".into(),
            args: vec!["-l".into(), "-c".into(), spec.command.clone()],
            envs: spec.envs.clone(),
            cwd: spec.cwd.clone(),
        },
        pty: None,
        tag: None,
        stdin: Some(false),
    };
    let payload = serde_json::to_vec(&body).unwrap_or_default();
    let mut req = sandbox_request(settings, sandbox, ENVD_PORT, Method::Post, START_PATH)
        .header("content-type", CONTENT_TYPE_STREAM)
        .header("connect-protocol-version", "1")
        .header("connect-content-encoding", "identity")
        .header("connect-accept-encoding", "identity")
        .header("accept-encoding", "identity")
        .header(e2b_wire::HEADER_KEEPALIVE_INTERVAL, "50");
    if let Some(ms) = spec.timeout_ms.filter(|ms| *ms > 0) {
        req = req.header(e2b_wire::HEADER_CONNECT_TIMEOUT, ms.to_string());
    }
    req.raw_body(encode_envelope(0, &payload))
}

/// The state of one Start stream, fed with body chunks as they arrive.
#[derive(Debug)]
pub struct ProcessStream {
    decoder: EnvelopeDecoder,
    /// The pid from the `start` event.
    pub pid: Option<u32>,
    /// The `end` event, once seen.
    pub end: Option<EndEvent>,
    /// The end-of-stream error, once seen.
    pub stream_error: Option<Failure>,
    /// Whether the end-of-stream envelope arrived.
    pub stream_ended: bool,
    /// stdout and stderr so far (truncated).
    pub out: Outputs,
    /// The latest output line, followed for progress events when set.
    pub latest: Option<LatestLine>,
}

impl ProcessStream {
    /// A stream whose outputs keep `limit` bytes each.
    pub fn new(limit: usize) -> Self {
        Self {
            decoder: EnvelopeDecoder::new(MAX_EVENT_BYTES),
            pid: None,
            end: None,
            stream_error: None,
            stream_ended: false,
            out: Outputs::new(limit),
            latest: None,
        }
    }

    /// The same stream, redacting `secrets` from its outputs before
    /// truncating them.
    pub fn redacting(mut self, secrets: &Secrets) -> Self {
        self.out = self.out.redacting(secrets);
        self
    }

    /// Takes a chunk of the response body.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), Failure> {
        self.decoder.push(chunk);
        loop {
            let envelope = self.decoder.next_envelope().map_err(|e| {
                Failure::new(
                    ErrorKind::Internal,
                    format!("malformed stream from envd: {e}"),
                )
            })?;
            let Some(envelope) = envelope else {
                return Ok(());
            };
            if envelope.is_end_stream() {
                let end: EndStream = serde_json::from_slice(&envelope.payload).map_err(|e| {
                    Failure::new(
                        ErrorKind::Internal,
                        format!("malformed end of stream from envd: {e}"),
                    )
                })?;
                self.stream_ended = true;
                if let Some(err) = end.error {
                    self.stream_error = Some(from_connect(err.code, &err.message));
                }
                continue;
            }
            let message: ProcessEventMessage =
                serde_json::from_slice(&envelope.payload).map_err(|e| {
                    Failure::new(
                        ErrorKind::Internal,
                        format!("malformed process event from envd: {e}"),
                    )
                })?;
            match message.event {
                ProcessEvent::Start(start) => self.pid = Some(start.pid),
                ProcessEvent::Data(data) => {
                    if self.pid.is_none() {
                        return Err(Failure::new(
                            ErrorKind::Internal,
                            "Failed to start process: expected start event, got data",
                        ));
                    }
                    if let Some(bytes) = data.stdout.as_deref().or(data.pty.as_deref()) {
                        if let Some(latest) = self.latest.as_mut() {
                            latest.feed(bytes);
                        }
                        self.out.stdout.push_bytes(bytes);
                    }
                    if let Some(bytes) = data.stderr {
                        if let Some(latest) = self.latest.as_mut() {
                            latest.feed(&bytes);
                        }
                        self.out.stderr.push_bytes(&bytes);
                    }
                }
                ProcessEvent::End(end) => self.end = Some(end),
                ProcessEvent::Keepalive(_) => {}
            }
        }
    }

    /// Call at the end of the body.
    pub fn finish_body(&self) -> Result<(), Failure> {
        self.decoder.finish().map_err(|e| {
            Failure::new(
                ErrorKind::Network,
                format!("the connection to envd closed mid-stream: {e}"),
            )
        })
    }

    /// Whether nothing more is expected (the process ended or the stream did).
    pub fn is_done(&self) -> bool {
        self.stream_ended || self.stream_error.is_some()
    }

    /// The result of a foreground run once the body is over.
    pub fn outcome(&self) -> Result<i32, Failure> {
        if let Some(err) = &self.stream_error {
            return Err(err.clone());
        }
        match &self.end {
            Some(end) => Ok(end.exit_code),
            None if self.pid.is_none() => Err(Failure::new(
                ErrorKind::Internal,
                "Failed to start process: expected start event, got nothing",
            )),
            None => Err(Failure::new(
                ErrorKind::Network,
                "Command ended without an end event",
            )),
        }
    }

    /// stdout and stderr so far, for `partial_output`.
    pub fn partial_output(&self) -> String {
        self.out.partial_output()
    }
}

/// `POST /filesystem.Filesystem/ListDir`, depth 1.
pub fn list_dir_request(
    settings: &Settings,
    sandbox: &SandboxHandle,
    path: &str,
    depth: u32,
) -> HttpRequest {
    let body = ListDirRequest {
        path: path.to_string(),
        depth,
    };
    // The headers connect-python sends for a unary call.
    let mut req = sandbox_request(settings, sandbox, ENVD_PORT, Method::Post, LIST_DIR_PATH)
        .header("connect-protocol-version", "1")
        .header("content-encoding", "identity")
        .header("accept-encoding", "identity")
        .json(&body);
    if settings.request_timeout_ms > 0 {
        req = req.header(
            e2b_wire::HEADER_CONNECT_TIMEOUT,
            settings.request_timeout_ms.to_string(),
        );
    }
    // `json` set the content type; it is also Connect's unary one.
    debug_assert_eq!(req.header_value("content-type"), Some(CONTENT_TYPE_UNARY));
    req
}

/// `POST /process.Process/SendSignal`: SIGKILL to `pid` (a cancelled
/// command's process), run to its end even when the call is cancelled.
pub fn kill_process_request(settings: &Settings, sandbox: &SandboxHandle, pid: u32) -> HttpRequest {
    let body = e2b_wire::process::SendSignalRequest {
        process: e2b_wire::process::ProcessSelector::Pid(pid),
        signal: e2b_wire::process::Signal::Sigkill,
    };
    sandbox_request(
        settings,
        sandbox,
        ENVD_PORT,
        Method::Post,
        e2b_wire::process::SEND_SIGNAL_PATH,
    )
    .header("connect-protocol-version", "1")
    .header(e2b_wire::host_guest::HEADER_FINISH_ON_CANCEL, "1")
    .json(&body)
}

/// The most entries a listing returns; the rest are counted.
pub const MAX_LIST_ENTRIES: usize = 1_000;

/// A directory entry as the tools report it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedEntry {
    /// Base name.
    pub name: String,
    /// Its path in the sandbox.
    pub path: String,
    /// `file`, `dir`, `symlink` or `unknown`.
    pub kind: EntryKind,
}

/// The type of a listed entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// Regular file.
    File,
    /// Directory.
    Dir,
    /// Symbolic link.
    Symlink,
    /// Anything else.
    Unknown,
}

impl EntryKind {
    /// The e2b-adk string.
    pub fn as_str(self) -> &'static str {
        match self {
            EntryKind::File => "file",
            EntryKind::Dir => "dir",
            EntryKind::Symlink => "symlink",
            EntryKind::Unknown => "unknown",
        }
    }
}

/// An entry with the SDK 2.63 `isSymlink` flag the shared type lacks.
#[derive(Deserialize)]
struct ListedInfo {
    #[serde(flatten)]
    info: EntryInfo,
    #[serde(default, rename = "isSymlink")]
    is_symlink: bool,
}

#[derive(Deserialize)]
struct ListDirAnswer {
    #[serde(default)]
    entries: Vec<ListedInfo>,
}

/// The answer to ListDir, mapped as `files.list`: unspecified entries
/// dropped, `isSymlink` wins.
pub fn parse_list_dir(status: u16, body: &[u8]) -> Result<Vec<ListedEntry>, Failure> {
    if status != 200 {
        return Err(from_connect_http(status, body));
    }
    let answer: ListDirAnswer = serde_json::from_slice(body).map_err(|e| {
        Failure::new(
            ErrorKind::Internal,
            format!("malformed ListDir answer from envd: {e}"),
        )
    })?;
    Ok(answer
        .entries
        .into_iter()
        .filter_map(|e| {
            let kind = match (e.is_symlink, e.info.file_type) {
                (_, FileType::Unspecified) => return None,
                (true, _) | (_, FileType::Symlink) => EntryKind::Symlink,
                (_, FileType::File) => EntryKind::File,
                (_, FileType::Directory) => EntryKind::Dir,
            };
            Some(ListedEntry {
                name: e.info.name,
                path: e.info.path,
                kind,
            })
        })
        .collect())
}

/// `GET /files?path=…` (uncompressed).
pub fn read_file_request(settings: &Settings, sandbox: &SandboxHandle, path: &str) -> HttpRequest {
    sandbox_request(
        settings,
        sandbox,
        ENVD_PORT,
        Method::Get,
        &format!("/files?path={}", query_escape(path)),
    )
    .header("accept-encoding", "identity")
}

/// `POST /files?path=…`: octet-stream when envd supports it, else multipart
/// with one part named `file`.
pub fn write_file_request(
    settings: &Settings,
    sandbox: &SandboxHandle,
    path: &str,
    content: Vec<u8>,
) -> HttpRequest {
    let req = sandbox_request(
        settings,
        sandbox,
        ENVD_PORT,
        Method::Post,
        &format!("/files?path={}", query_escape(path)),
    )
    .header("accept-encoding", "identity");
    if sandbox.supports_octet_stream() {
        return req
            .header("content-type", "application/octet-stream")
            .raw_body(content);
    }
    let boundary = "e2b-tools-wasm-boundary-7d41c9";
    let filename: String = path
        .chars()
        .map(|c| {
            if c == '"' || c == '\r' || c == '\n' {
                '_'
            } else {
                c
            }
        })
        .collect();
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
    )
    .into_bytes();
    // Old envd only: the framing costs one copy of the content.
    body.reserve_exact(content.len() + boundary.len() + 8);
    body.extend_from_slice(&content);
    drop(content);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    req.header(
        "content-type",
        format!("multipart/form-data; boundary={boundary}"),
    )
    .raw_body(body)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::config::ConfigInput;
    use e2b_wire::connect::FLAG_END_STREAM;
    use e2b_wire::process::{end_event, DataEvent, StartEvent};

    /// Settings with one sandbox URL, and an open sandbox `sbx1`.
    pub(crate) fn fixture() -> (Settings, SandboxHandle) {
        let settings = Settings::resolve(
            ConfigInput {
                sandbox_url: Some("http://127.0.0.1:4000".into()),
                ..Default::default()
            },
            |_| None,
        )
        .unwrap();
        let handle = SandboxHandle {
            id: "sbx1".into(),
            access_token: Some("tok-envd".into()),
            traffic_token: None,
            domain: None,
            envd_version: "0.6.13".into(),
        };
        (settings, handle)
    }

    fn event(ev: ProcessEvent) -> Vec<u8> {
        encode_envelope(
            0,
            &serde_json::to_vec(&ProcessEventMessage { event: ev }).unwrap(),
        )
    }

    #[test]
    fn start_request_matches_the_sdk() {
        let (s, h) = fixture();
        let spec = StartSpec {
            command: "echo hi".into(),
            cwd: Some("/tmp".into()),
            envs: BTreeMap::new(),
            timeout_ms: Some(60_000),
        };
        let req = start_request(&s, &h, &spec);
        assert_eq!(req.url, "http://127.0.0.1:4000/process.Process/Start");
        assert_eq!(req.header_value("e2b-sandbox-id"), Some("sbx1"));
        assert_eq!(req.header_value("e2b-sandbox-port"), Some("49983"));
        assert_eq!(req.header_value("x-access-token"), Some("tok-envd"));
        assert_eq!(req.header_value("connect-timeout-ms"), Some("60000"));
        assert_eq!(req.header_value("keepalive-ping-interval"), Some("50"));
        let mut dec = EnvelopeDecoder::new(1 << 20);
        dec.push(&req.body);
        let env = dec.next_envelope().unwrap().unwrap();
        assert_eq!(
            env.payload,
            br#"{"process":{"cmd":"/bin/bash","args":["-l","-c","echo hi"],"cwd":"/tmp"},"stdin":false}"#
        );
        let no_timeout = StartSpec {
            timeout_ms: None,
            ..spec
        };
        assert_eq!(
            start_request(&s, &h, &no_timeout).header_value("connect-timeout-ms"),
            None
        );
    }

    #[test]
    fn stream_collects_output_exit_code_and_errors() {
        let mut wire = event(ProcessEvent::Start(StartEvent { pid: 7 }));
        wire.extend(event(ProcessEvent::Data(DataEvent {
            stdout: Some(b"h\xc3".to_vec()),
            ..Default::default()
        })));
        wire.extend(event(ProcessEvent::Data(DataEvent {
            stdout: Some(b"\xa9\n".to_vec()),
            stderr: Some(b"boom\n".to_vec()),
            ..Default::default()
        })));
        wire.extend(event(ProcessEvent::End(end_event(Some(2), None))));
        wire.extend(encode_envelope(FLAG_END_STREAM, b"{}"));
        for chunk in [1, 3, 7, wire.len()] {
            let mut s = ProcessStream::new(100);
            for part in wire.chunks(chunk) {
                s.feed(part).unwrap();
            }
            s.finish_body().unwrap();
            assert_eq!(s.pid, Some(7));
            assert_eq!(s.outcome(), Ok(2));
            assert_eq!(s.out.stdout.snapshot(), "hé\n");
            assert_eq!(s.out.stderr.snapshot(), "boom\n");
        }
    }

    #[test]
    fn deadline_and_truncated_streams_fail_with_partial_output() {
        let mut s = ProcessStream::new(100);
        s.feed(&event(ProcessEvent::Start(StartEvent { pid: 1 })))
            .unwrap();
        s.feed(&event(ProcessEvent::Data(DataEvent {
            stdout: Some(b"tick\n".to_vec()),
            ..Default::default()
        })))
        .unwrap();
        s.feed(&encode_envelope(
            FLAG_END_STREAM,
            br#"{"error":{"code":"deadline_exceeded","message":"context deadline exceeded"}}"#,
        ))
        .unwrap();
        let err = s.outcome().unwrap_err();
        assert_eq!(err.kind, ErrorKind::Timeout);
        assert!(err
            .message
            .starts_with("context deadline exceeded: This error"));
        assert_eq!(s.partial_output(), "tick\n");

        let mut s = ProcessStream::new(100);
        s.feed(&[0, 0, 0, 0, 50, b'{']).unwrap();
        assert_eq!(s.finish_body().unwrap_err().kind, ErrorKind::Network);
        let mut s = ProcessStream::new(100);
        assert!(s.feed(&encode_envelope(0, b"not json")).is_err());
        assert!(s.feed(&[0, 0xff, 0xff, 0xff, 0xff]).is_err());
    }

    #[test]
    fn list_dir_maps_types() {
        let body = br#"{"entries":[
            {"name":"a.txt","type":"FILE_TYPE_FILE","path":"/tmp/a.txt","size":"5"},
            {"name":"d","type":"FILE_TYPE_DIRECTORY"},
            {"name":"l","type":"FILE_TYPE_FILE","isSymlink":true},
            {"name":"s","type":"FILE_TYPE_SYMLINK"},
            {"name":"u"}]}"#;
        let entries = parse_list_dir(200, body).unwrap();
        let kinds: Vec<_> = entries
            .iter()
            .map(|e| (e.name.as_str(), e.kind.as_str()))
            .collect();
        assert_eq!(
            kinds,
            [
                ("a.txt", "file"),
                ("d", "dir"),
                ("l", "symlink"),
                ("s", "symlink")
            ]
        );
        let err = parse_list_dir(
            404,
            br#"{"code":"not_found","message":"directory not found: stat /nope: no such file or directory"}"#,
        )
        .unwrap_err();
        assert_eq!(err.kind, ErrorKind::NotFound);
    }

    #[test]
    fn file_requests() {
        let (s, h) = fixture();
        let req = read_file_request(&s, &h, "/tmp/a.txt");
        assert_eq!(req.url, "http://127.0.0.1:4000/files?path=%2Ftmp%2Fa.txt");
        assert_eq!(req.header_value("accept-encoding"), Some("identity"));
        let req = write_file_request(&s, &h, "/tmp/a.txt", b"hello".to_vec());
        assert_eq!(
            req.header_value("content-type"),
            Some("application/octet-stream")
        );
        assert_eq!(req.body, b"hello");
        let old = SandboxHandle {
            envd_version: "0.4.0".into(),
            ..h
        };
        let req = write_file_request(&s, &old, "/tmp/a.txt", b"hello".to_vec());
        assert!(req
            .header_value("content-type")
            .unwrap()
            .starts_with("multipart/form-data"));
        assert!(String::from_utf8_lossy(&req.body).contains("filename=\"/tmp/a.txt\""));
    }
}
