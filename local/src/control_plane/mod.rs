//! The control plane (E2B's REST API): create, connect, set-timeout, get,
//! list, pause and kill sandboxes; snapshots and forks ([`snapshots`]).
//! Both endpoint generations are served: `POST /v2/sandboxes` (SDK ≥
//! 2.51, default TTL 300 s) and `POST /sandboxes` (older SDKs, default TTL
//! 15 s), with E2B's `Idempotency-Key` ([`crate::idempotency`]).

mod snapshots;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use e2b_wire::api::{
    ConnectSandbox, NewSandbox, PauseRequest, Sandbox as SandboxBody, SetTimeout,
    DEFAULT_TIMEOUT_V1, DEFAULT_TIMEOUT_V2, IDEMPOTENCY_KEY_HEADER,
};
use http::HeaderMap;
use http::StatusCode;
use serde::de::DeserializeOwned;

use crate::http_errors::api_error;
use crate::idempotency::{check_key, Idempotency, RunError};
use crate::registry::{CreateError, Registry};
use crate::sandbox::State as LifeState;

/// The longest TTL accepted, as on E2B's Pro tier.
const MAX_TIMEOUT_SECS: i64 = 24 * 3600;
/// The TTL a connect without one gives.
const CONNECT_DEFAULT_TIMEOUT: i64 = 300;
/// The most a sandbox's `envVars` (names and values) may hold.
const MAX_ENV_VARS_BYTES: usize = 64 << 10;

#[derive(Clone)]
struct Api {
    registry: Arc<Registry>,
    /// Recent creates' idempotency keys and the sandboxes they made.
    keys: Arc<Idempotency<SandboxBody>>,
}

/// The control-plane router; every route requires `X-API-KEY: api_key`.
/// Idempotency keys are remembered for [`crate::idempotency::WINDOW`]
/// divided by `time_scale`.
pub(crate) fn router(registry: Arc<Registry>, api_key: String, time_scale: f64) -> Router {
    let window = crate::idempotency::WINDOW.div_f64(time_scale);
    let api = Api {
        registry,
        keys: Arc::new(Idempotency::new(window)),
    };
    let key = Arc::new(api_key);
    Router::new()
        .route("/v2/sandboxes", post(create_v2).get(list))
        .route("/sandboxes", post(create_v1).get(list))
        .route("/sandboxes/{id}", get(detail).delete(kill))
        .route("/sandboxes/{id}/metrics", get(metrics))
        .route("/sandboxes/metrics", get(many_metrics))
        .route("/sandboxes/{id}/timeout", post(set_timeout))
        .route("/sandboxes/{id}/connect", post(connect))
        .route("/v2/sandboxes/{id}/connect", post(connect))
        .route("/sandboxes/{id}/resume", post(connect))
        .route("/sandboxes/{id}/pause", post(pause))
        .route("/sandboxes/{id}/snapshots", post(snapshots::create))
        .route("/sandboxes/{id}/fork", post(snapshots::fork))
        .route("/snapshots", get(snapshots::list))
        .route("/templates/{id}", axum::routing::delete(snapshots::delete))
        .fallback(|| async { api_error(StatusCode::NOT_FOUND, "Not found") })
        .method_not_allowed_fallback(|| async {
            api_error(StatusCode::METHOD_NOT_ALLOWED, "Method not allowed")
        })
        .with_state(api)
        .layer(axum::middleware::from_fn(
            move |req: Request, next: Next| {
                let key = Arc::clone(&key);
                async move {
                    let ok = req
                        .headers()
                        .get(e2b_wire::HEADER_API_KEY)
                        .is_some_and(|v| v.as_bytes() == key.as_bytes());
                    if ok {
                        next.run(req).await
                    } else {
                        api_error(StatusCode::UNAUTHORIZED, "Invalid API key")
                    }
                }
            },
        ))
}

/// A refused request: becomes the API's JSON error.
struct Rejection(StatusCode, String);

impl IntoResponse for Rejection {
    fn into_response(self) -> Response {
        api_error(self.0, self.1)
    }
}

/// Parses a JSON body into `T` (empty = default), or the 400 the API gives.
fn parse<T: DeserializeOwned + Default>(body: &[u8]) -> Result<T, Rejection> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    serde_json::from_slice(body).map_err(|e| {
        Rejection(
            StatusCode::BAD_REQUEST,
            format!("invalid request body: {e}"),
        )
    })
}

fn not_found(id: &str) -> Response {
    api_error(StatusCode::NOT_FOUND, format!("Sandbox {id} not found"))
}

/// Validates a TTL the way the infra server does.
fn check_timeout(secs: i64) -> Result<u64, Rejection> {
    if secs <= 0 {
        return Err(Rejection(
            StatusCode::BAD_REQUEST,
            "Timeout must be greater than 0".into(),
        ));
    }
    if secs > MAX_TIMEOUT_SECS {
        return Err(Rejection(
            StatusCode::BAD_REQUEST,
            format!(
                "Timeout cannot be greater than {} hours",
                MAX_TIMEOUT_SECS / 3600
            ),
        ));
    }
    Ok(secs as u64)
}

async fn create_v2(State(api): State<Api>, headers: HeaderMap, body: Bytes) -> Response {
    create(api, &headers, &body, DEFAULT_TIMEOUT_V2).await
}

async fn create_v1(State(api): State<Api>, headers: HeaderMap, body: Bytes) -> Response {
    create(api, &headers, &body, DEFAULT_TIMEOUT_V1).await
}

/// A create, answered once per idempotency key.
async fn create(api: Api, headers: &HeaderMap, body: &[u8], default_timeout: u32) -> Response {
    let made = match headers.get(IDEMPOTENCY_KEY_HEADER) {
        None => create_sandbox(&api, body, default_timeout).await,
        Some(key) => match check_key(key.as_bytes()) {
            Err(e) => return api_error(StatusCode::BAD_REQUEST, e.to_string()),
            Ok(key) => {
                // The route counts: a v1 and a v2 create differ in defaults.
                let route = default_timeout.to_le_bytes();
                let keys = Arc::clone(&api.keys);
                let made = keys
                    .run(&key, &[&route, body], || {
                        create_sandbox(&api, body, default_timeout)
                    })
                    .await;
                match made {
                    Ok(body) => Ok(body),
                    Err(RunError::Failed(response)) => Err(response),
                    Err(RunError::Key(e)) => Err(api_error(StatusCode::CONFLICT, e.to_string())),
                }
            }
        },
    };
    match made {
        Ok(sandbox) => (StatusCode::CREATED, Json(sandbox)).into_response(),
        Err(response) => response,
    }
}

/// Makes the sandbox a create body asks for; the answer's body, or the
/// error response.
async fn create_sandbox(
    api: &Api,
    body: &[u8],
    default_timeout: u32,
) -> Result<SandboxBody, Response> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(api_error(
            StatusCode::BAD_REQUEST,
            "request body is required",
        ));
    }
    let mut request: NewSandbox = parse(body).map_err(IntoResponse::into_response)?;
    if request.template_id.trim().is_empty() {
        return Err(api_error(StatusCode::BAD_REQUEST, "templateID is required"));
    }
    let origin =
        snapshots::origin(&api.registry, &mut request).map_err(IntoResponse::into_response)?;
    // They travel to envd in one control message.
    let env_size: usize = request
        .env_vars
        .iter()
        .map(|(k, v)| k.len() + v.len())
        .sum();
    if env_size > MAX_ENV_VARS_BYTES {
        return Err(api_error(
            StatusCode::BAD_REQUEST,
            format!("envVars are too large ({env_size} bytes, at most {MAX_ENV_VARS_BYTES})"),
        ));
    }
    let timeout = check_timeout(request.timeout.unwrap_or(i64::from(default_timeout)))
        .map_err(IntoResponse::into_response)?;
    match api.registry.create(request, timeout, origin).await {
        Ok(sandbox) => Ok(sandbox.body()),
        Err(e) => {
            let (status, message) = create_error(e);
            Err(api_error(status, message))
        }
    }
}

/// The status and message of a create that failed.
fn create_error(e: CreateError) -> (StatusCode, String) {
    match e {
        CreateError::TooMany(max) => (
            StatusCode::TOO_MANY_REQUESTS,
            format!("you have reached the maximum number of concurrent sandboxes ({max})"),
        ),
        // What the machine holds, said as such: a create storm meets a
        // 507 or a 429 naming the limit, never a half-made sandbox.
        CreateError::Io(e) if e.kind() == std::io::ErrorKind::StorageFull => (
            StatusCode::INSUFFICIENT_STORAGE,
            format!("the local server's data directory has no room for a new sandbox's disk: {e}"),
        ),
        CreateError::Io(e) if e.kind() == std::io::ErrorKind::QuotaExceeded => {
            (StatusCode::TOO_MANY_REQUESTS, e.to_string())
        }
        CreateError::Io(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot create the sandbox's filesystem: {e}"),
        ),
        CreateError::Unsupported(msg) => (StatusCode::BAD_REQUEST, msg),
        CreateError::Start(why) => (StatusCode::INTERNAL_SERVER_ERROR, why),
    }
}

async fn detail(State(api): State<Api>, Path(id): Path<String>) -> Response {
    match api.registry.get(&id) {
        Some(s) => Json(s.detail(true)).into_response(),
        None => not_found(&id),
    }
}

/// `GET /sandboxes/{id}/metrics?start=&end=` (Unix seconds, both
/// optional): one sample, now, when the window reaches into the sandbox's
/// life so far, else none (E2B keeps a series sampled every few seconds
/// and answers the samples in the window; this server takes the sample
/// when asked).
async fn metrics(
    State(api): State<Api>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    let Some(s) = api.registry.get(&id) else {
        return not_found(&id);
    };
    let window = match MetricsWindow::parse(query.as_deref().unwrap_or("")) {
        Ok(window) => window,
        Err(msg) => return api_error(StatusCode::BAD_REQUEST, msg),
    };
    let lived = (unix_secs(s.started_at), unix_secs(SystemTime::now()));
    if window.meets(lived) {
        Json(vec![s.metric()]).into_response()
    } else {
        Json(Vec::<e2b_wire::api::SandboxMetric>::new()).into_response()
    }
}

/// A metrics query's window, in Unix seconds.
#[derive(Debug, Default, PartialEq)]
struct MetricsWindow {
    start: Option<u64>,
    end: Option<u64>,
}

impl MetricsWindow {
    fn parse(query: &str) -> Result<Self, String> {
        let pairs: Vec<(String, String)> =
            serde_urlencoded::from_str(query).map_err(|e| format!("invalid query: {e}"))?;
        let mut window = Self::default();
        for (key, value) in pairs {
            let slot = match key.as_str() {
                "start" => &mut window.start,
                "end" => &mut window.end,
                _ => continue,
            };
            *slot = Some(
                value
                    .parse()
                    .map_err(|_| format!("{key} must be a Unix time in seconds, not '{value}'"))?,
            );
        }
        Ok(window)
    }

    /// Whether the window meets `(from, to)`, both ends included.
    fn meets(&self, (from, to): (u64, u64)) -> bool {
        self.start.is_none_or(|start| start <= to) && self.end.is_none_or(|end| end >= from)
    }
}

fn unix_secs(at: SystemTime) -> u64 {
    at.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `GET /sandboxes/metrics?sandbox_ids=a,b`: the latest sample of each
/// sandbox named that exists.
async fn many_metrics(State(api): State<Api>, RawQuery(query): RawQuery) -> Response {
    let mut sandboxes = BTreeMap::new();
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(query.as_deref().unwrap_or("")).unwrap_or_default();
    for (key, value) in pairs {
        if key != "sandbox_ids" {
            continue;
        }
        for id in value.split(',').map(str::trim).filter(|id| !id.is_empty()) {
            if let Some(s) = api.registry.get(id) {
                sandboxes.insert(id.to_string(), s.metric());
            }
        }
    }
    Json(e2b_wire::api::SandboxesWithMetrics { sandboxes }).into_response()
}

async fn kill(State(api): State<Api>, Path(id): Path<String>) -> Response {
    if api.registry.kill(&id) {
        StatusCode::NO_CONTENT.into_response()
    } else {
        not_found(&id)
    }
}

async fn set_timeout(State(api): State<Api>, Path(id): Path<String>, body: Bytes) -> Response {
    let Some(sandbox) = api.registry.get(&id) else {
        return not_found(&id);
    };
    let req: SetTimeout = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            return api_error(
                StatusCode::BAD_REQUEST,
                format!("invalid request body: {e}"),
            )
        }
    };
    if req.timeout > MAX_TIMEOUT_SECS {
        if let Err(rejection) = check_timeout(req.timeout) {
            return rejection.into_response();
        }
    }
    // Negative values count as 0: the sandbox expires now.
    sandbox.set_timeout(req.timeout.max(0) as u64);
    if req.timeout <= 0 {
        api.registry.expire(&id);
    }
    StatusCode::NO_CONTENT.into_response()
}

async fn connect(State(api): State<Api>, Path(id): Path<String>, body: Bytes) -> Response {
    let Some(sandbox) = api.registry.get(&id) else {
        return not_found(&id);
    };
    let req: ConnectSandbox = match parse(&body) {
        Ok(r) => r,
        Err(rejection) => return rejection.into_response(),
    };
    let timeout = match check_timeout(req.timeout.unwrap_or(CONNECT_DEFAULT_TIMEOUT)) {
        Ok(t) => t,
        Err(rejection) => return rejection.into_response(),
    };
    // After a pause's stop still under way, if any.
    let _turn = sandbox.turn().await;
    // A resume without memory boots it anew: what a freeze kept goes.
    if req.memory == Some(false) && sandbox.memory_kept() {
        sandbox.stop_processes().await;
    }
    if api.registry.resume(&sandbox, timeout) {
        (StatusCode::CREATED, Json(sandbox.body())).into_response()
    } else {
        sandbox.extend_timeout(timeout);
        (StatusCode::OK, Json(sandbox.body())).into_response()
    }
}

/// `POST /sandboxes/{id}/pause`, `{"memory": false}` for a filesystem-only
/// pause: answered once its processes are gone, so what follows (a
/// connect) boots it anew.
async fn pause(State(api): State<Api>, Path(id): Path<String>, body: Bytes) -> Response {
    let Some(sandbox) = api.registry.get(&id) else {
        return not_found(&id);
    };
    let req: PauseRequest = match parse(&body) {
        Ok(r) => r,
        Err(rejection) => return rejection.into_response(),
    };
    match api.registry.pause(&sandbox, req.memory.unwrap_or(true)) {
        Ok(true) => {
            sandbox.stop_for_pause().await;
            StatusCode::NO_CONTENT.into_response()
        }
        Ok(false) => api_error(
            StatusCode::CONFLICT,
            format!("Sandbox {id} is already paused"),
        ),
        Err(e) => api_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot record the pause of sandbox {id}: {e}"),
        ),
    }
}

async fn list(State(api): State<Api>, RawQuery(query): RawQuery) -> Response {
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(query.as_deref().unwrap_or("")).unwrap_or_default();
    let mut metadata: BTreeMap<String, String> = BTreeMap::new();
    let mut states: Vec<String> = Vec::new();
    let mut template: Option<&str> = None;
    let mut started_after: Option<std::time::SystemTime> = None;
    let mut limit = MAX_LIST_LIMIT;
    let mut after: Option<&str> = None;
    // E2B's default: newest first.
    let mut descending = true;
    for (key, value) in &pairs {
        match key.as_str() {
            "limit" => match value.parse::<usize>() {
                Ok(n) if (1..=MAX_LIST_LIMIT).contains(&n) => limit = n,
                _ => {
                    return api_error(
                        StatusCode::BAD_REQUEST,
                        format!("invalid limit '{value}': expected 1 to {MAX_LIST_LIMIT}"),
                    )
                }
            },
            "nextToken" => after = Some(value),
            "order" => match value.as_str() {
                "asc" => descending = false,
                "desc" => descending = true,
                _ => {
                    return api_error(
                        StatusCode::BAD_REQUEST,
                        format!("invalid order '{value}': expected asc or desc"),
                    )
                }
            },
            "metadata" => {
                // `k=v&k2=v2`, each part percent-encoded once more.
                let inner: Vec<(String, String)> =
                    serde_urlencoded::from_str(value).unwrap_or_default();
                metadata.extend(inner);
            }
            "state" => states.extend(
                value
                    .split(',')
                    .map(|s| s.trim().to_ascii_lowercase())
                    .filter(|s| !s.is_empty()),
            ),
            "template" => template = Some(value),
            "startedAfter" => match parse_iso8601(value) {
                Some(t) => started_after = Some(t),
                None => {
                    return api_error(
                        StatusCode::BAD_REQUEST,
                        format!("invalid startedAfter '{value}': expected an ISO 8601 time"),
                    )
                }
            },
            _ => {}
        }
    }
    let mut sandboxes = api.registry.all();
    // A total order (start time, then id), so a page's last entry says
    // exactly where the next page starts: the token is its position.
    sandboxes.sort_by(|a, b| (a.started_at, &a.id).cmp(&(b.started_at, &b.id)));
    if descending {
        sandboxes.reverse();
    }
    let position = |s: &crate::sandbox::Sandbox| {
        let nanos = s
            .started_at
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        format!("{nanos:020}.{}", s.id)
    };
    let matching: Vec<_> = sandboxes
        .iter()
        .filter(|s| {
            metadata
                .iter()
                .all(|(k, v)| s.request.metadata.get(k) == Some(v))
        })
        .filter(|s| {
            let state = match s.state() {
                LifeState::Running => "running",
                LifeState::Paused => "paused",
            };
            states.is_empty() || states.iter().any(|x| x == state)
        })
        .filter(|s| template.is_none_or(|t| s.request.template_id == t))
        .filter(|s| started_after.is_none_or(|t| s.started_at >= t))
        .filter(|s| {
            after.is_none_or(|token| {
                let here = position(s);
                if descending {
                    here.as_str() < token
                } else {
                    here.as_str() > token
                }
            })
        })
        .collect();
    let page = &matching[..matching.len().min(limit)];
    let listed: Vec<_> = page.iter().map(|s| s.detail(false)).collect();
    let mut response = Json(listed).into_response();
    if matching.len() > page.len() {
        if let Some(token) = page
            .last()
            .and_then(|s| http::HeaderValue::from_str(&position(s)).ok())
        {
            response.headers_mut().insert("x-next-token", token);
        }
    }
    response
}

/// The most sandboxes one listing page holds (and the default).
const MAX_LIST_LIMIT: usize = 100;

/// ISO 8601 as Python's `isoformat()` writes it: `Z` or a `±HH:MM` offset.
fn parse_iso8601(text: &str) -> Option<std::time::SystemTime> {
    use std::time::Duration;
    let text = text.trim();
    if let Some(naive) = text.strip_suffix('Z') {
        return humantime::parse_rfc3339_weak(naive).ok();
    }
    let split = text.len().checked_sub(6)?;
    let (naive, offset) = (text.get(..split)?, text.get(split..)?);
    let sign = match offset.as_bytes().first() {
        Some(b'+') => 1i64,
        Some(b'-') => -1i64,
        _ => return humantime::parse_rfc3339_weak(text).ok(),
    };
    let (h, m) = offset[1..].split_once(':')?;
    let secs = sign * (h.parse::<i64>().ok()? * 3600 + m.parse::<i64>().ok()? * 60);
    let local = humantime::parse_rfc3339_weak(naive).ok()?;
    // local = utc + offset, so utc = local - offset.
    if secs >= 0 {
        local.checked_sub(Duration::from_secs(secs as u64))
    } else {
        local.checked_add(Duration::from_secs(secs.unsigned_abs()))
    }
}

#[cfg(test)]
mod tests {
    use super::{parse_iso8601, MetricsWindow};
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn a_metrics_window_outside_the_sandboxs_life_has_no_sample() {
        let lived = (1_000, 2_000);
        let window = |q: &str| MetricsWindow::parse(q).unwrap();
        assert!(window("").meets(lived));
        assert!(window("start=1500&end=1600").meets(lived));
        assert!(window("start=2000").meets(lived));
        assert!(window("end=1000").meets(lived));
        assert!(!window("start=10&end=999").meets(lived));
        assert!(!window("start=2001").meets(lived));
        let err = MetricsWindow::parse("start=yesterday").unwrap_err();
        assert!(err.contains("Unix time in seconds"), "{err}");
    }

    #[test]
    fn iso8601_with_offsets() {
        let utc = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(parse_iso8601("2023-11-14T22:13:20Z"), Some(utc));
        assert_eq!(parse_iso8601("2023-11-14T22:13:20+00:00"), Some(utc));
        assert_eq!(parse_iso8601("2023-11-15T00:13:20+02:00"), Some(utc));
        assert_eq!(
            parse_iso8601("2023-11-14T21:13:20.5-01:00"),
            Some(utc + Duration::from_millis(500))
        );
        assert_eq!(parse_iso8601("yesterday"), None);
        assert_eq!(parse_iso8601("2023-11-14T22:13:2ééé"), None);
    }
}
