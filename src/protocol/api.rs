//! The control-plane client, as pure request builders and answer parsers:
//! create (`POST /v2/sandboxes`), connect/resume
//! (`POST /v2/sandboxes/{id}/connect`), set-timeout and kill (docs/PROTOCOL.md §2),
//! snapshots (`POST /sandboxes/{id}/snapshots`) and forks
//! (`POST /sandboxes/{id}/fork`).

use e2b_wire::api::{
    AutoResume, ConnectSandbox, ForkRequest, ForkResult, NewSandbox, Sandbox, SandboxDetail,
    SetTimeout, SnapshotInfo, SnapshotRequest, VolumeMount, IDEMPOTENCY_KEY_HEADER,
};

use crate::config::{OnTimeout, Settings};
use crate::errors::{from_api_status, ErrorKind, Failure};
use crate::protocol::request::{path_escape, query_escape, HttpRequest, Method};

/// The SDK's text when no API key is configured.
pub const MISSING_API_KEY: &str = "API key is required, please visit the Team tab at https://e2b.dev/dashboard to get your API key. You can either set the environment variable `E2B_API_KEY` or you can pass it directly to the sandbox like Sandbox(api_key=\"e2b_...\")";

/// What the guest keeps of a sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxHandle {
    /// Its ID.
    pub id: String,
    /// Token for `X-Access-Token`.
    pub access_token: Option<String>,
    /// Token for preview/interpreter traffic when public traffic is off.
    pub traffic_token: Option<String>,
    /// Domain of its URLs, if the API named one.
    pub domain: Option<String>,
    /// envd's version (gates octet-stream uploads).
    pub envd_version: String,
}

impl SandboxHandle {
    /// Whether envd accepts `application/octet-stream` uploads (≥ 0.5.7).
    pub fn supports_octet_stream(&self) -> bool {
        version_at_least(&self.envd_version, (0, 5, 7))
    }
}

/// Compares a dotted version with `min`; unparsable versions count as new.
fn version_at_least(version: &str, min: (u64, u64, u64)) -> bool {
    let mut parts = version
        .trim_start_matches('v')
        .split(['.', '-', '+'])
        .map(|p| p.parse::<u64>().ok());
    let mut next = || parts.next().flatten();
    match (next(), next(), next()) {
        (Some(a), b, c) => (a, b.unwrap_or(0), c.unwrap_or(0)) >= min,
        _ => true,
    }
}

fn authed(settings: &Settings, method: Method, path: &str) -> Result<HttpRequest, Failure> {
    let key = settings
        .api_key
        .as_deref()
        .ok_or_else(|| Failure::new(ErrorKind::Auth, MISSING_API_KEY))?;
    // We never decompress: say so, as an absent Accept-Encoding allows any.
    Ok(
        HttpRequest::new(method, format!("{}{path}", settings.api_url))
            .header("x-api-key", key)
            .header("accept-encoding", "identity"),
    )
}

/// The create body the settings imply (only set keys, as SDK 2.63).
pub fn new_sandbox_body(settings: &Settings) -> NewSandbox {
    let network = settings.network.as_ref().map(|n| {
        let mut map = serde_json::Map::new();
        if !n.allow_out.is_empty() {
            map.insert("allowOut".into(), n.allow_out.clone().into());
        }
        if !n.deny_out.is_empty() {
            map.insert("denyOut".into(), n.deny_out.clone().into());
        }
        if let Some(v) = n.allow_public_traffic {
            map.insert("allowPublicTraffic".into(), v.into());
        }
        if let Some(v) = &n.mask_request_host {
            map.insert("maskRequestHost".into(), v.clone().into());
        }
        serde_json::Value::Object(map)
    });
    NewSandbox {
        template_id: settings.template.clone(),
        timeout: settings.configured_ttl.map(i64::from),
        metadata: settings.metadata.clone(),
        env_vars: settings.envs.clone(),
        allow_internet_access: settings.allow_internet_access,
        auto_pause: settings.on_timeout.map(|t| t == OnTimeout::Pause),
        auto_resume: settings.auto_resume.map(|enabled| AutoResume { enabled }),
        network,
        volume_mounts: (!settings.volume_mounts.is_empty()).then(|| {
            settings
                .volume_mounts
                .iter()
                .map(|(name, path)| VolumeMount {
                    name: name.clone(),
                    path: path.clone(),
                })
                .collect()
        }),
        ..Default::default()
    }
}

/// `POST /v2/sandboxes`, with `idempotency_key` (the same for every
/// attempt of one create: a repeat answers the sandbox the first made).
pub fn create_request(settings: &Settings, idempotency_key: &str) -> Result<HttpRequest, Failure> {
    Ok(authed(settings, Method::Post, "/v2/sandboxes")?
        .header(IDEMPOTENCY_KEY_HEADER, idempotency_key)
        .json(&new_sandbox_body(settings)))
}

/// A create's idempotency key from a random number: `e2b-tools-` and 16
/// hex digits, within E2B's rule (1-255 of `[a-z0-9-]`).
pub fn idempotency_key(random: u64) -> String {
    format!("e2b-tools-{random:016x}")
}

/// Whether `id` names a snapshot rather than a sandbox: snapshot ids carry
/// a tag (`abc123:default`) or a team (`team/name`), sandbox ids are
/// lowercase letters and digits only.
pub fn is_snapshot_id(id: &str) -> bool {
    id.contains(':') || id.contains('/')
}

/// `POST /sandboxes/{id}/snapshots`.
pub fn snapshot_request(
    settings: &Settings,
    id: &str,
    name: Option<&str>,
) -> Result<HttpRequest, Failure> {
    let body = SnapshotRequest {
        name: name.map(str::to_string),
        memory: None,
    };
    Ok(authed(
        settings,
        Method::Post,
        &format!("/sandboxes/{}/snapshots", path_escape(id)),
    )?
    .json(&body))
}

/// The answer to a snapshot.
pub fn parse_snapshot(status: u16, body: &[u8], id: &str) -> Result<SnapshotInfo, Failure> {
    succeeded_on(status, body, id)?;
    serde_json::from_slice(body).map_err(|e| unexpected(status, "snapshot", e))
}

/// `POST /sandboxes/{id}/fork`: `count` forks living `timeout_s` seconds.
pub fn fork_request(
    settings: &Settings,
    id: &str,
    count: u32,
    timeout_s: u32,
) -> Result<HttpRequest, Failure> {
    let body = ForkRequest {
        timeout: Some(i64::from(timeout_s)),
        count: Some(count),
    };
    Ok(authed(
        settings,
        Method::Post,
        &format!("/sandboxes/{}/fork", path_escape(id)),
    )?
    .json(&body))
}

/// The answer to a fork: each fork started, or why it did not (as E2B
/// reports it: each fork succeeds or fails on its own).
pub fn parse_fork(
    status: u16,
    body: &[u8],
    id: &str,
) -> Result<Vec<Result<SandboxHandle, Failure>>, Failure> {
    succeeded_on(status, body, id)?;
    let results: Vec<ForkResult> =
        serde_json::from_slice(body).map_err(|e| unexpected(status, "fork", e))?;
    Ok(results
        .into_iter()
        .map(|r| match (r.sandbox, r.error) {
            (Some(sandbox), None) => handle(status, sandbox),
            (_, Some(e)) => Err(from_api_status(e.code, e.message.as_bytes())),
            (None, None) => Err(Failure::new(
                ErrorKind::Internal,
                "Failed to start forked sandbox",
            )),
        })
        .collect())
}

/// `Ok` for a 2xx answer about sandbox `id`; a 404 says it is not there.
fn succeeded_on(status: u16, body: &[u8], id: &str) -> Result<(), Failure> {
    match status {
        200..=299 => Ok(()),
        404 => Err(Failure::new(
            ErrorKind::NotFound,
            format!("Sandbox {id} not found"),
        )),
        _ => Err(from_api_status(status, body)),
    }
}

fn unexpected(status: u16, what: &str, e: serde_json::Error) -> Failure {
    Failure::new(
        ErrorKind::Internal,
        format!("{status}: unexpected {what} answer from the API: {e}"),
    )
}

/// `POST /v2/sandboxes/{id}/connect` with the configured TTL (which E2B
/// only ever extends for a running sandbox).
pub fn connect_request(settings: &Settings, id: &str) -> Result<HttpRequest, Failure> {
    let body = ConnectSandbox {
        timeout: Some(i64::from(settings.ttl_seconds())),
        memory: None,
    };
    Ok(authed(
        settings,
        Method::Post,
        &format!("/v2/sandboxes/{}/connect", path_escape(id)),
    )?
    .json(&body))
}

/// `POST /sandboxes/{id}/timeout`: `ttl_seconds` from now.
pub fn set_timeout_request(
    settings: &Settings,
    id: &str,
    ttl_seconds: u32,
) -> Result<HttpRequest, Failure> {
    let body = SetTimeout {
        timeout: i64::from(ttl_seconds),
    };
    Ok(authed(
        settings,
        Method::Post,
        &format!("/sandboxes/{}/timeout", path_escape(id)),
    )?
    .json(&body))
}

/// `GET /sandboxes/{id}`: read before attaching, for the sandbox's end time.
pub fn detail_request(settings: &Settings, id: &str) -> Result<HttpRequest, Failure> {
    authed(
        settings,
        Method::Get,
        &format!("/sandboxes/{}", path_escape(id)),
    )
}

/// How long a running sandbox has left, in nanoseconds, from its detail's
/// `endAt` and the wall clock (`None` when unknown: not running, or an
/// answer we cannot read; the caller then assumes only its own TTL).
pub fn parse_time_left(status: u16, body: &[u8], wall_now_ns: u64) -> Option<u64> {
    // Only two fields of `SandboxDetail`: a detail we cannot fully parse
    // must not stop an attach.
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Expiry {
        end_at: String,
        state: String,
    }
    if status != 200 {
        return None;
    }
    let expiry: Expiry = serde_json::from_slice(body).ok()?;
    if expiry.state != "running" {
        return None;
    }
    let end = humantime::parse_rfc3339_weak(&expiry.end_at).ok()?;
    let end_ns = end.duration_since(std::time::UNIX_EPOCH).ok()?.as_nanos();
    u64::try_from(end_ns).ok()?.checked_sub(wall_now_ns)
}

/// `DELETE /sandboxes/{id}`.
pub fn kill_request(settings: &Settings, id: &str) -> Result<HttpRequest, Failure> {
    authed(
        settings,
        Method::Delete,
        &format!("/sandboxes/{}", path_escape(id)),
    )
}

/// `POST /sandboxes/{id}/pause`.
pub fn pause_request(settings: &Settings, id: &str) -> Result<HttpRequest, Failure> {
    authed(
        settings,
        Method::Post,
        &format!("/sandboxes/{}/pause", path_escape(id)),
    )
}

/// The answer to pause: `true` if paused, `false` if it already was
/// (409); a 404 means it is gone.
pub fn parse_pause(status: u16, body: &[u8], id: &str) -> Result<bool, Failure> {
    match status {
        200..=299 => Ok(true),
        409 => Ok(false),
        _ => parse_set_timeout(status, body, id).map(|()| false),
    }
}

/// Whether a sandbox's detail says it pauses at its timeout
/// (`lifecycle.onTimeout == "pause"`); `None` when it does not say.
pub fn parse_pauses_on_timeout(body: &[u8]) -> Option<bool> {
    let detail: serde_json::Value = serde_json::from_slice(body).ok()?;
    let on_timeout = detail.get("lifecycle")?.get("onTimeout")?.as_str()?;
    Some(on_timeout == "pause")
}

/// The answer to create or connect.
pub fn parse_sandbox(
    status: u16,
    body: &[u8],
    attach_id: Option<&str>,
) -> Result<SandboxHandle, Failure> {
    if status == 404 {
        if let Some(id) = attach_id {
            return Err(Failure::new(
                ErrorKind::NotFound,
                e2b_wire::host_guest::sandbox_not_found(id),
            ));
        }
    }
    if !(200..300).contains(&status) {
        return Err(from_api_status(status, body));
    }
    let sandbox: Sandbox = serde_json::from_slice(body).map_err(|e| {
        Failure::new(
            ErrorKind::Internal,
            format!("{status}: unexpected sandbox description from the API: {e}"),
        )
    })?;
    handle(status, sandbox)
}

/// What the guest keeps of a sandbox the API described.
fn handle(status: u16, sandbox: Sandbox) -> Result<SandboxHandle, Failure> {
    if sandbox.sandbox_id.is_empty() {
        return Err(Failure::new(
            ErrorKind::Internal,
            format!("{status}: the API returned an empty sandbox ID"),
        ));
    }
    Ok(SandboxHandle {
        id: sandbox.sandbox_id,
        access_token: sandbox.envd_access_token,
        traffic_token: sandbox.traffic_access_token,
        domain: sandbox.domain.filter(|d| !d.is_empty()),
        envd_version: sandbox.envd_version,
    })
}

/// The answer to set-timeout: a 404 means the sandbox is gone.
pub fn parse_set_timeout(status: u16, body: &[u8], id: &str) -> Result<(), Failure> {
    match status {
        200..=299 => Ok(()),
        404 => Err(Failure::new(
            ErrorKind::SandboxExpired,
            format!("Sandbox {id} not found: it expired or was killed. Shut down and call a tool again to start a new sandbox."),
        )),
        _ => Err(from_api_status(status, body)),
    }
}

/// The answer to kill: `true` if killed, `false` if E2B no longer knew it.
pub fn parse_kill(status: u16, body: &[u8]) -> Result<bool, Failure> {
    match status {
        200..=299 => Ok(true),
        404 => Ok(false),
        _ => Err(from_api_status(status, body)),
    }
}

/// Sandboxes a page of `GET /v2/sandboxes` lists at most.
pub const LIST_PAGE: u32 = 100;

/// `GET /v2/sandboxes`: running and paused, one page from `next_token`.
pub fn list_request(settings: &Settings, next_token: Option<&str>) -> Result<HttpRequest, Failure> {
    page_request(
        settings,
        "/v2/sandboxes?state=running%2Cpaused&",
        next_token,
    )
}

/// `GET /snapshots`: one page from `next_token`.
pub fn snapshots_request(
    settings: &Settings,
    next_token: Option<&str>,
) -> Result<HttpRequest, Failure> {
    page_request(settings, "/snapshots?", next_token)
}

/// A listing's page: `query` (the path and `?`, or its first pairs and
/// `&`), then the page size and the token.
fn page_request(
    settings: &Settings,
    query: &str,
    next_token: Option<&str>,
) -> Result<HttpRequest, Failure> {
    let mut path = format!("{query}limit={LIST_PAGE}");
    if let Some(token) = next_token {
        path.push_str(&format!("&nextToken={}", query_escape(token)));
    }
    authed(settings, Method::Get, &path)
}

/// One page of a sandbox list.
pub fn parse_list(status: u16, body: &[u8]) -> Result<Vec<SandboxDetail>, Failure> {
    parse_page(status, body, "sandbox")
}

/// One page of a snapshot list.
pub fn parse_snapshots(status: u16, body: &[u8]) -> Result<Vec<SnapshotInfo>, Failure> {
    parse_page(status, body, "snapshot")
}

fn parse_page<T: serde::de::DeserializeOwned>(
    status: u16,
    body: &[u8],
    what: &str,
) -> Result<Vec<T>, Failure> {
    match status {
        200 => serde_json::from_slice(body).map_err(|e| {
            Failure::new(
                ErrorKind::Internal,
                format!("the {what} list could not be read: {e}"),
            )
        }),
        _ => Err(from_api_status(status, body)),
    }
}

/// `DELETE /templates/{snapshotID}` (a snapshot is a template).
pub fn delete_snapshot_request(settings: &Settings, id: &str) -> Result<HttpRequest, Failure> {
    authed(
        settings,
        Method::Delete,
        &format!("/templates/{}", path_escape(id)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ConfigInput, NetworkRules};

    fn settings(input: ConfigInput) -> Settings {
        Settings::resolve(
            ConfigInput {
                api_key: Some("e2b_0123456789".into()),
                api_url: Some("http://127.0.0.1:3000".into()),
                ..input
            },
            |_| None,
        )
        .unwrap()
    }

    #[test]
    fn create_body_is_what_the_sdk_sends() {
        let s = settings(ConfigInput {
            metadata: vec![("purpose".into(), "x".into())],
            envs: vec![("A".into(), "1".into())],
            timeout_seconds: Some(600),
            ..Default::default()
        });
        let req = create_request(&s, "k").unwrap();
        assert_eq!(req.url, "http://127.0.0.1:3000/v2/sandboxes");
        assert_eq!(req.header_value("x-api-key"), Some("e2b_0123456789"));
        assert!(req
            .header_value("user-agent")
            .unwrap()
            .starts_with("e2b-tools-wasm/"));
        assert_eq!(
            String::from_utf8(req.body).unwrap(),
            r#"{"templateID":"code-interpreter-v1","timeout":600,"metadata":{"purpose":"x"},"envVars":{"A":"1"}}"#
        );
        let s = settings(ConfigInput {
            template: Some("my-tpl".into()),
            on_timeout: Some(OnTimeout::Pause),
            auto_resume: Some(true),
            allow_internet_access: Some(false),
            network: Some(NetworkRules {
                allow_out: vec!["1.1.1.1".into()],
                deny_out: vec!["0.0.0.0/0".into()],
                allow_public_traffic: Some(false),
                mask_request_host: None,
            }),
            volume_mounts: vec![("vol1".into(), "/mnt/data".into())],
            ..Default::default()
        });
        let body: serde_json::Value =
            serde_json::from_slice(&create_request(&s, "k").unwrap().body).unwrap();
        assert_eq!(body["autoPause"], true);
        assert_eq!(body["autoResume"]["enabled"], true);
        assert_eq!(body["allow_internet_access"], false);
        assert_eq!(body["network"]["denyOut"][0], "0.0.0.0/0");
        assert_eq!(body["volumeMounts"][0]["path"], "/mnt/data");
        assert!(body.get("timeout").is_none());
    }

    #[test]
    fn missing_key_fails_before_sending() {
        let s = Settings::resolve(ConfigInput::default(), |_| None).unwrap();
        let err = create_request(&s, "k").unwrap_err();
        assert_eq!(err.kind, ErrorKind::Auth);
        assert!(err.message.starts_with("API key is required"));
    }

    #[test]
    fn lifecycle_requests_and_answers() {
        let s = settings(ConfigInput::default());
        let req = set_timeout_request(&s, "sbx1", s.ttl_seconds()).unwrap();
        assert_eq!(req.url, "http://127.0.0.1:3000/sandboxes/sbx1/timeout");
        assert_eq!(req.body, br#"{"timeout":300}"#);
        let req = connect_request(&s, "sbx1").unwrap();
        assert_eq!(req.url, "http://127.0.0.1:3000/v2/sandboxes/sbx1/connect");
        assert_eq!(kill_request(&s, "sbx1").unwrap().method, Method::Delete);
        assert_eq!(parse_kill(204, b""), Ok(true));
        assert_eq!(parse_kill(404, b""), Ok(false));
        assert_eq!(parse_kill(500, b"x").unwrap_err().kind, ErrorKind::Internal);
        assert_eq!(
            parse_set_timeout(404, b"", "sbx1").unwrap_err().kind,
            ErrorKind::SandboxExpired
        );
        let h = parse_sandbox(
            201,
            br#"{"templateID":"t","sandboxID":"abc","clientID":"c","envdVersion":"0.6.13","envdAccessToken":"tok","domain":null}"#,
            None,
        )
        .unwrap();
        assert_eq!(h.id, "abc");
        assert!(h.supports_octet_stream());
        assert_eq!(
            parse_sandbox(201, b"nope", None).unwrap_err().kind,
            ErrorKind::Internal
        );
        assert_eq!(
            parse_sandbox(404, b"{}", Some("old")).unwrap_err().message,
            "Paused sandbox old not found"
        );
    }

    #[test]
    fn envd_versions() {
        assert!(version_at_least("0.5.7", (0, 5, 7)));
        assert!(!version_at_least("0.5.6", (0, 5, 7)));
        assert!(version_at_least("1.0", (0, 5, 7)));
        assert!(version_at_least("weird", (0, 5, 7)));
    }
}
