//! MCP over streamable HTTP (rmcp's transport, at `/mcp`): one MCP session
//! is one component instance and one sandbox, both made by the session's
//! first tool call and shut down when the session ends (the client's
//! DELETE, or idle past [`HttpOptions::idle_timeout`]) or the server stops.
//!
//! In front of rmcp: a bearer token on every request (compared in
//! constant time), a cap on live sessions (a clear JSON-RPC error past it),
//! a bound on request bodies (rmcp's own raised to it), a `DELETE` of a
//! session that is not live answered 404, as the transport specification
//! says (rmcp answers 202), and the JSON-RPC batches of revision 2025-03-26
//! (`batch.rs`), which rmcp refuses. rmcp checks `Host` and `Origin` against
//! DNS rebinding, as the specification requires.
//!
//! ```no_run
//! # async fn example(runtime: e2b_tools_host::Runtime) -> anyhow::Result<()> {
//! use e2b_tools_cli::mcp::http::{HttpOptions, McpHttpServer};
//! use e2b_tools_host::SessionOptions;
//! let options = HttpOptions::new("127.0.0.1:0".parse()?, "secret".into());
//! let server = McpHttpServer::bind(runtime, SessionOptions::default(), options).await?;
//! println!("serving at {}", server.url());
//! server.serve(async { let _ = tokio::signal::ctrl_c().await; }).await?;
//! # Ok(())
//! # }
//! ```

use std::cell::Cell;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::batch;
use super::catalog::{Catalog, StatelessTools};
use super::error::McpError;
use super::server::{McpServer, SessionOpener};
use e2b_tools_host::{Runtime, Session, SessionOptions, WarmPool};

/// The endpoint path.
pub const PATH: &str = "/mcp";
/// The largest request body accepted: the largest tool arguments
/// (`write_file`'s 32 MiB in base64) with room for the JSON-RPC envelope.
pub const MAX_BODY_BYTES: usize = e2b_wire::host_guest::MAX_ARGUMENTS_BYTES + (1 << 20);
/// How long shutdown waits for sandboxes to be killed.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// Options of the HTTP server.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Where to listen (port 0: any free one).
    pub addr: SocketAddr,
    /// The bearer token every request must carry.
    pub token: String,
    /// Live sessions at most; an `initialize` past it is refused.
    pub max_sessions: usize,
    /// A session idle this long ends (and its sandbox is killed).
    pub idle_timeout: Duration,
    /// Browser origins allowed besides loopback ones (`http://localhost:*`
    /// and `http://127.0.0.1:*` always are).
    pub allowed_origins: Vec<String>,
    /// Sandboxes made ahead for new sessions (`--warm-pool N`; 0: none),
    /// and as many for calls of the stateless revision that name no
    /// sandbox, from the first such call on.
    pub warm_pool: usize,
}

impl HttpOptions {
    /// Defaults for `addr` and `token`: 64 sessions, 10 minutes idle.
    pub fn new(addr: SocketAddr, token: String) -> Self {
        Self {
            addr,
            token,
            max_sessions: 64,
            idle_timeout: Duration::from_secs(600),
            allowed_origins: Vec::new(),
            warm_pool: 0,
        }
    }
}

/// A place under the session cap, held by a session's handler (or, until
/// rmcp makes one, by the request that may make it); freed when dropped.
struct LiveSession(Arc<AtomicUsize>);

impl LiveSession {
    /// Takes a place if fewer than `max` are taken: the check and the
    /// count are one atomic step, so concurrent requests cannot all pass
    /// the check before any of them is counted.
    fn reserve(live: &Arc<AtomicUsize>, max: usize) -> Option<Self> {
        live.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
            (n < max).then_some(n + 1)
        })
        .ok()
        .map(|_| Self(live.clone()))
    }

    /// Counts a handler made without a reservation, whatever the cap.
    fn count(live: &Arc<AtomicUsize>) -> Self {
        live.fetch_add(1, Ordering::SeqCst);
        Self(live.clone())
    }
}

tokio::task_local! {
    /// The place [`guard`] reserved for the request it is running: rmcp
    /// calls the session factory while handling that request, on the same
    /// task, and the factory takes the place over. A place left untaken
    /// (the request made no handler) is freed when the request ends.
    static RESERVED: Cell<Option<LiveSession>>;
}

impl Drop for LiveSession {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A bound, not yet serving, MCP HTTP server.
pub struct McpHttpServer {
    listener: tokio::net::TcpListener,
    router: axum::Router,
    cancel: CancellationToken,
    cleanup: TaskTracker,
    live: Arc<AtomicUsize>,
    url: String,
    pool: Option<WarmPool>,
    stateless: StatelessTools,
}

#[derive(Clone)]
struct Gate {
    token: Arc<str>,
    live: Arc<AtomicUsize>,
    max_sessions: usize,
    sessions: Arc<LocalSessionManager>,
    /// rmcp's service itself, for the messages of a batch.
    service: StreamableHttpService<McpServer, LocalSessionManager>,
}

impl McpHttpServer {
    /// Reads the catalog once (from an instance that never opens a
    /// sandbox) and binds `options.addr`.
    pub async fn bind(
        runtime: Runtime,
        session_options: SessionOptions,
        options: HttpOptions,
    ) -> Result<Self, McpError> {
        let probe = Session::open(&runtime, session_options.clone()).await?;
        let catalog = Catalog::read(&probe).await?;
        drop(probe);
        let options_for_stateless = e2b_tools_host::RuntimeOptions {
            proxy: runtime.proxy().clone(),
            ..e2b_tools_host::RuntimeOptions::default()
        };
        let stateless_runtime = tokio::task::spawn_blocking(move || {
            e2b_tools_host::StatelessRuntime::load_with(
                e2b_tools_host::ComponentSource::EmbeddedStateless,
                options_for_stateless,
            )
        })
        .await
        .map_err(McpError::transport)?
        .map_err(McpError::Stateless)?;
        let stateless = StatelessTools::new(
            stateless_runtime,
            e2b_tools_host::StatelessOptions::for_session(&session_options),
            &catalog,
        )
        .with_pool(options.warm_pool);
        let listener = tokio::net::TcpListener::bind(options.addr)
            .await
            .map_err(|source| McpError::Bind {
                addr: options.addr,
                source,
            })?;
        let local = listener.local_addr().map_err(McpError::transport)?;
        let cancel = CancellationToken::new();
        let cleanup = TaskTracker::new();
        let live = Arc::new(AtomicUsize::new(0));

        let pool = match options.warm_pool {
            0 => None,
            size => Some(WarmPool::start(&runtime, session_options.clone(), size)?),
        };
        let open: SessionOpener = match pool.clone() {
            // A new session's first call finds its sandbox made.
            Some(pool) => Arc::new(move || {
                let pool = pool.clone();
                Box::pin(async move { pool.session().await })
            }),
            None => Arc::new(move || {
                let (runtime, options) = (runtime.clone(), session_options.clone());
                Box::pin(async move { Session::open(&runtime, options).await })
            }),
        };
        let factory = {
            let (live, cleanup) = (live.clone(), cleanup.clone());
            let stateless_tools = stateless.clone();
            move || {
                let counted = RESERVED
                    .try_with(Cell::take)
                    .ok()
                    .flatten()
                    .unwrap_or_else(|| LiveSession::count(&live));
                Ok(McpServer::lazy(
                    catalog.clone(),
                    stateless_tools.clone(),
                    open.clone(),
                    cleanup.clone(),
                    counted,
                ))
            }
        };
        let mut sessions = LocalSessionManager::default();
        sessions.session_config.keep_alive = Some(options.idle_timeout);
        let mut origins = vec![
            "http://localhost:*".to_string(),
            "http://127.0.0.1:*".to_string(),
            "https://localhost:*".to_string(),
        ];
        origins.extend(options.allowed_origins.iter().cloned());
        let mut hosts = vec!["localhost".to_string(), "127.0.0.1".to_string()];
        hosts.push(local.to_string());
        hosts.push(local.ip().to_string());
        let config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(hosts)
            .with_allowed_origins(origins)
            .with_max_request_body_bytes(MAX_BODY_BYTES)
            .with_cancellation_token(cancel.child_token());
        let sessions = Arc::new(sessions);
        let service = StreamableHttpService::new(factory, sessions.clone(), config);
        let gate = Gate {
            token: options.token.into(),
            live: live.clone(),
            max_sessions: options.max_sessions,
            sessions,
            service: service.clone(),
        };
        let router = axum::Router::new()
            .route_service(PATH, service)
            .layer(axum::middleware::from_fn_with_state(gate, guard));
        Ok(Self {
            listener,
            router,
            cancel,
            cleanup,
            live,
            url: format!("http://{local}{PATH}"),
            pool,
            stateless,
        })
    }

    /// The warm pool new sessions take their sandboxes from, if any.
    pub fn pool(&self) -> Option<&WarmPool> {
        self.pool.as_ref()
    }

    /// The endpoint's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Serves until `shutdown` completes, then ends every session and
    /// waits (up to 30 s) for their sandboxes to be shut down.
    pub async fn serve(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), McpError> {
        let cancel = self.cancel.clone();
        use axum::serve::ListenerExt as _;
        // Small JSON-RPC answers: without TCP_NODELAY each waits ~40 ms
        // for the client's delayed ACK.
        let listener = self.listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let served = axum::serve(listener, self.router)
            .with_graceful_shutdown(async move {
                shutdown.await;
                cancel.cancel();
            })
            .await
            .map_err(McpError::transport);
        self.cancel.cancel();
        if let Some(pool) = &self.pool {
            pool.close().await;
        }
        self.stateless.close().await;
        // rmcp drops each session's handler as it winds the session down;
        // the handler's drop hands its sandbox to `cleanup`. Wait for every
        // handler to go before waiting for the shutdowns it started.
        let live = self.live.clone();
        let drained = tokio::time::timeout(SHUTDOWN_GRACE, async move {
            while live.load(Ordering::SeqCst) > 0 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            self.cleanup.close();
            self.cleanup.wait().await;
        })
        .await;
        if drained.is_err() {
            tracing::warn!("some sandboxes were still being shut down when the server stopped");
        }
        served
    }
}

/// The checks before rmcp: token, body size, session cap.
async fn guard(State(gate): State<Gate>, request: Request, next: Next) -> Response {
    if !authorized(&request, &gate.token) {
        let mut response =
            (StatusCode::UNAUTHORIZED, "missing or wrong bearer token\n").into_response();
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return response;
    }
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES) {
        return (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("request body over {MAX_BODY_BYTES} bytes\n"),
        )
            .into_response();
    }
    if request.method() == axum::http::Method::DELETE {
        if let Some(id) = session_id(&request) {
            use rmcp::transport::streamable_http_server::SessionManager as _;
            if !gate.sessions.has_session(&id.into()).await.unwrap_or(true) {
                return (StatusCode::NOT_FOUND, "no such session\n").into_response();
            }
        }
    }
    let new_session = request.method() == axum::http::Method::POST
        && !request.headers().contains_key("mcp-session-id");
    // Reserved before rmcp sees the request, so the cap holds however many
    // `initialize`s arrive at once.
    let reserved = if new_session {
        match LiveSession::reserve(&gate.live, gate.max_sessions) {
            Some(place) => Some(place),
            None => return over_the_cap(gate.max_sessions),
        }
    } else {
        None
    };
    // A body without a length is bounded as it is read.
    let (parts, body) = request.into_parts();
    let body = Body::new(http_body_util::Limited::new(body, MAX_BODY_BYTES));
    // A session's message may be a batch: read, to look.
    if parts.method == axum::http::Method::POST && parts.headers.contains_key("mcp-session-id") {
        let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY_BYTES).await else {
            return (
                StatusCode::PAYLOAD_TOO_LARGE,
                "request body too large or cut\n",
            )
                .into_response();
        };
        if batch::is_batch(&bytes) {
            let revision = parts
                .headers
                .get("mcp-protocol-version")
                .and_then(|v| v.to_str().ok());
            let send = |message| send_one(gate.service.clone(), &parts, message);
            return batch::answer(&bytes, revision, send).await;
        }
        let request = Request::from_parts(parts, Body::from(bytes));
        return next.run(request).await;
    }
    let request = Request::from_parts(parts, body);
    RESERVED.scope(Cell::new(reserved), next.run(request)).await
}

/// One message of a batch sent to rmcp as a POST of its own, with the
/// batch's headers; its answer read whole.
async fn send_one(
    service: StreamableHttpService<McpServer, LocalSessionManager>,
    head: &axum::http::request::Parts,
    message: axum::body::Bytes,
) -> batch::Answer {
    use http_body_util::BodyExt as _;
    use tower_service::Service as _;
    let mut request = Request::new(Body::from(message.clone()));
    *request.method_mut() = head.method.clone();
    *request.uri_mut() = head.uri.clone();
    *request.headers_mut() = head.headers.clone();
    request
        .headers_mut()
        .insert(header::CONTENT_LENGTH, HeaderValue::from(message.len()));
    let mut service = service;
    let Ok(response) = service.call(request).await;
    let (parts, body) = response.into_parts();
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    batch::Answer {
        status: parts.status,
        content_type,
        body,
    }
}

/// The request's `Mcp-Session-Id`, if it has one.
fn session_id(request: &Request) -> Option<String> {
    request
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// The answer to a new session past the cap: a JSON-RPC error, 503.
fn over_the_cap(max_sessions: usize) -> Response {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {
            "code": -32000,
            "message": format!(
                "this server already has {max_sessions} live sessions, its limit: end one or retry later",
            ),
        },
    });
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// Whether the request carries `Authorization: Bearer <token>`.
fn authorized(request: &Request, token: &str) -> bool {
    let Some(given) = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return false;
    };
    constant_time_eq(given.trim().as_bytes(), token.as_bytes())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A random token for when none is configured: 32 hex digits.
pub fn generate_token() -> String {
    use rand::Rng;
    let bytes: [u8; 16] = rand::rng().random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_taken_up_to_the_cap_and_freed_when_dropped() {
        let live = Arc::new(AtomicUsize::new(0));
        let taken: Vec<_> = (0..3)
            .map(|_| LiveSession::reserve(&live, 3).expect("under the cap"))
            .collect();
        assert!(LiveSession::reserve(&live, 3).is_none());
        assert_eq!(live.load(Ordering::SeqCst), 3);
        drop(taken);
        assert_eq!(live.load(Ordering::SeqCst), 0);
        // From many threads at once, still never past the cap.
        let barrier = Arc::new(std::sync::Barrier::new(16));
        let threads: Vec<_> = (0..16)
            .map(|_| {
                let (live, barrier) = (live.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    LiveSession::reserve(&live, 5)
                        .map(std::mem::forget)
                        .is_some()
                })
            })
            .collect();
        let got = threads
            .into_iter()
            .map(|t| t.join().unwrap())
            .filter(|&took| took)
            .count();
        assert_eq!((got, live.load(Ordering::SeqCst)), (5, 5));
    }

    #[test]
    fn tokens_compare_exactly() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
        let token = generate_token();
        assert_eq!(token.len(), 32);
        assert_ne!(token, generate_token());
    }
}
