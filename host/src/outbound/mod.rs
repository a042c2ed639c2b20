//! Outbound HTTP of the component: the one interception point
//! (`WasiHttpHooks::send_request`) where the allow-list is enforced and
//! requests are sent over pooled keep-alive connections.
//!
//! wasmtime-wasi-http's default sender opens a new TCP (and TLS) connection
//! per request; a tool call makes several requests to the same two hosts, so
//! a shared pool saves a handshake on every one of them.

pub(crate) mod handle;

pub use handle::OutboundStats;
use handle::SendFuture;

use crate::policy::OutboundPolicy;
use crate::proxy::{Proxy, ProxyConnector, ProxyFailure, ProxyRules, Route};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use std::error::Error as StdError;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

/// How long an idle pooled connection is kept.
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long establishing a TCP connection may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// Wait for response headers when the guest sets no first-byte timeout
/// (the guest enforces its own, shorter, deadlines).
const DEFAULT_FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(600);

type PlainClient = Client<ProxyConnector, Full<Bytes>>;
type TlsClient = Client<hyper_rustls::HttpsConnector<ProxyConnector>, Full<Bytes>>;

/// Pooled HTTP/1.1 clients for plain HTTP and HTTPS (rustls; Mozilla's and
/// the system's roots), shared by every session of a
/// [`Runtime`](crate::Runtime).
///
/// The HTTPS client is built on the first `https` request: loading the
/// system's trust store costs about half a MiB and a few milliseconds,
/// which a host talking plain HTTP (the local server) never needs.
/// Connections go through a proxy as [`Proxy`](crate::Proxy) says.
#[derive(Clone)]
pub struct OutboundClient {
    plain: PlainClient,
    tls: Arc<OnceLock<Result<TlsClient, String>>>,
    proxy: Arc<ProxyRules>,
    sends: Arc<handle::SendCounts>,
}

impl std::fmt::Debug for OutboundClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutboundClient").finish_non_exhaustive()
    }
}

impl Default for OutboundClient {
    fn default() -> Self {
        Self::new()
    }
}

impl OutboundClient {
    /// Builds a client with empty connection pools that uses the proxies
    /// the environment names; nothing is loaded yet.
    pub fn new() -> Self {
        Self::with_proxy(&Proxy::Environment)
    }

    /// Builds a client with empty connection pools that connects as
    /// `proxy` says.
    pub fn with_proxy(proxy: &Proxy) -> Self {
        let proxy = Arc::new(ProxyRules::new(proxy));
        Self {
            plain: pooled(ProxyConnector::new(tcp_connector(), Arc::clone(&proxy))),
            tls: Arc::new(OnceLock::new()),
            proxy,
            sends: Arc::default(),
        }
    }

    /// How the requests of every session on this client were sent so far.
    pub fn stats(&self) -> OutboundStats {
        self.sends.read()
    }

    fn connector(&self) -> ProxyConnector {
        ProxyConnector::new(tcp_connector(), Arc::clone(&self.proxy))
    }

    /// The HTTPS client, built on first use.
    fn tls(&self) -> Result<&TlsClient, Error> {
        let client = self.tls.get_or_init(|| {
            let config = tls_config().map_err(|err| err.to_string())?;
            let connector = hyper_rustls::HttpsConnectorBuilder::new()
                .with_tls_config(config)
                .https_or_http()
                .enable_http1()
                .wrap_connector(self.connector());
            Ok(pooled(connector))
        });
        client.as_ref().map_err(|err| {
            tracing::warn!(error = %err, "cannot set up TLS");
            Error::TlsProtocolError
        })
    }

    /// Sends `request` over a pooled connection. The request body is read to
    /// its end first (see [`collect_body`]).
    async fn send(
        &self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
    ) -> Result<http::Response<WasiBody>, Error> {
        let (mut parts, body) = request.into_parts();
        let body = collect_body(body).await?;
        if parts.uri.scheme() == Some(&http::uri::Scheme::HTTP) {
            // A forwarding proxy reads its credentials from each request
            // (a tunnel's go once, in the CONNECT).
            if let Route::Proxy {
                auth: Some(auth), ..
            } = self.proxy.route(&parts.uri)
            {
                parts
                    .headers
                    .insert(http::header::PROXY_AUTHORIZATION, auth);
            }
        }
        let request = http::Request::from_parts(parts, Full::new(body));

        let first_byte_timeout = options
            .and_then(|o| o.first_byte_timeout)
            .unwrap_or(DEFAULT_FIRST_BYTE_TIMEOUT);
        let sent = if request.uri().scheme() == Some(&http::uri::Scheme::HTTPS) {
            self.tls()?.request(request)
        } else {
            self.plain.request(request)
        };
        let response = tokio::time::timeout(first_byte_timeout, sent)
            .await
            .map_err(|_| Error::ConnectionReadTimeout)?
            .map_err(|err| classify_client_error(&err))?;

        let between_bytes = options.and_then(|o| o.between_bytes_timeout);
        Ok(response.map(|body| {
            let body = body.map_err(Error::from);
            match between_bytes {
                Some(limit) => BetweenBytesTimeout::new(body, limit).boxed_unsync(),
                None => body.boxed_unsync(),
            }
        }))
    }
}

fn tcp_connector() -> HttpConnector {
    let mut tcp = HttpConnector::new();
    tcp.enforce_http(false);
    tcp.set_nodelay(true);
    tcp.set_connect_timeout(Some(CONNECT_TIMEOUT));
    tcp
}

fn pooled<C>(connector: C) -> Client<C, Full<Bytes>>
where
    C: hyper_util::client::legacy::connect::Connect + Clone,
{
    Client::builder(TokioExecutor::new())
        .pool_timer(TokioTimer::new())
        .pool_idle_timeout(POOL_IDLE_TIMEOUT)
        .build(connector)
}

/// TLS client configuration: the ring provider explicitly (relying on a
/// process-wide default panics if another dependency enables a second
/// rustls backend) and Mozilla's roots plus the system's.
fn tls_config() -> Result<rustls::ClientConfig, io::Error> {
    let mut roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let native = rustls_native_certs::load_native_certs();
    for error in &native.errors {
        tracing::debug!(%error, "skipping part of the system certificate store");
    }
    let (added, ignored) = roots.add_parsable_certificates(native.certs);
    tracing::debug!(added, ignored, "system trust anchors loaded");
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map(|builder| builder.with_root_certificates(roots).with_no_client_auth())
        .map_err(io::Error::other)
}

/// Reads the guest's request body to its end.
///
/// Why: a guest may call `outgoing-handler.handle` before it finishes
/// writing the body (wstd's client does). Streaming that body into hyper
/// lets hyper send a body-less request and drop the receiver, and the guest
/// then sees a reset. Draining it here removes that race; our bodies are
/// small JSON documents and file contents.
async fn collect_body(body: WasiBody) -> Result<Bytes, Error> {
    Ok(body.collect().await?.to_bytes())
}

/// Maps a pooled client's error onto the `wasi:http` error the guest sees.
fn classify_client_error(err: &hyper_util::client::legacy::Error) -> Error {
    tracing::debug!(error = %DisplayChain(err), "outbound request failed");
    let mut source: Option<&(dyn StdError + 'static)> = err.source();
    while let Some(cause) = source {
        if let Some(failure) = cause.downcast_ref::<ProxyFailure>() {
            return Error::InternalError(Some(failure.to_string()));
        }
        if let Some(tls_err) = cause.downcast_ref::<rustls::Error>() {
            return classify_tls_error(tls_err);
        }
        if let Some(io_err) = cause.downcast_ref::<io::Error>() {
            if let Some(inner) = io_err.get_ref() {
                if let Some(tls_err) = inner.downcast_ref::<rustls::Error>() {
                    return classify_tls_error(tls_err);
                }
                // hyper-rustls wraps tokio-rustls's io::Error in another.
                if inner.is::<io::Error>() {
                    source = Some(inner);
                    continue;
                }
            }
            return match io_err.kind() {
                io::ErrorKind::TimedOut => Error::ConnectionTimeout,
                io::ErrorKind::ConnectionRefused => Error::ConnectionRefused,
                // UnexpectedEof: a peer (or a proxy's tunnel) that closed
                // mid-handshake.
                io::ErrorKind::ConnectionReset
                | io::ErrorKind::BrokenPipe
                | io::ErrorKind::UnexpectedEof => Error::ConnectionTerminated,
                _ if err.is_connect() && io_err.to_string().contains("lookup") => Error::DnsError {
                    rcode: Some(io_err.to_string()),
                    info_code: None,
                },
                _ if err.is_connect() => Error::ConnectionRefused,
                _ => Error::Connect(io::Error::new(io_err.kind(), io_err.to_string())),
            };
        }
        if let Some(hyper_err) = cause.downcast_ref::<hyper::Error>() {
            return if hyper_err.is_incomplete_message() || hyper_err.is_closed() {
                Error::HttpResponseIncomplete
            } else if hyper_err.is_timeout() {
                Error::HttpResponseTimeout
            } else {
                Error::HttpProtocolError
            };
        }
        source = cause.source();
    }
    if err.is_connect() {
        Error::ConnectionRefused
    } else {
        Error::HttpProtocolError
    }
}

fn classify_tls_error(err: &rustls::Error) -> Error {
    match err {
        // The reason (expired, another name, an unknown issuer) is what a
        // user needs; the bare `TlsCertificateError` code carries none.
        rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented => {
            Error::InternalError(Some(format!("TLS certificate rejected: {err}")))
        }
        rustls::Error::AlertReceived(alert) => Error::TlsAlertReceived {
            alert_id: Some(u8::from(*alert)),
            alert_message: Some(format!("{alert:?}")),
        },
        _ => Error::TlsProtocolError,
    }
}

/// Formats an error with its chain of causes.
struct DisplayChain<'a>(&'a dyn StdError);

impl std::fmt::Display for DisplayChain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)?;
        let mut source = self.0.source();
        while let Some(cause) = source {
            write!(f, ": {cause}")?;
            source = cause.source();
        }
        Ok(())
    }
}

/// A response body that fails when no frame arrives within `limit`
/// (the guest's `between-bytes-timeout` request option).
struct BetweenBytesTimeout<B> {
    inner: B,
    limit: Duration,
    deadline: Pin<Box<tokio::time::Sleep>>,
}

impl<B> BetweenBytesTimeout<B> {
    fn new(inner: B, limit: Duration) -> Self {
        Self {
            inner,
            limit,
            deadline: Box::pin(tokio::time::sleep(limit)),
        }
    }
}

impl<B> http_body::Body for BetweenBytesTimeout<B>
where
    B: http_body::Body<Data = Bytes, Error = Error> + Unpin,
{
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                let next = tokio::time::Instant::now() + this.limit;
                this.deadline.as_mut().reset(next);
                Poll::Ready(frame)
            }
            Poll::Pending => match this.deadline.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Some(Err(Error::ConnectionReadTimeout))),
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// Cancels a session's current call from outside it: the call's requests
/// fail (in flight, and any it starts later) with
/// [`e2b_wire::host_guest::CANCELLED_BY_HOST`], except those the component marks to
/// run to their end ([`e2b_wire::host_guest::HEADER_FINISH_ON_CANCEL`]: creating or
/// killing a sandbox, killing the cancelled command). The component then
/// stops the work in the sandbox and returns promptly, so its instance is
/// never abandoned mid-call and stays usable.
#[derive(Debug, Default)]
pub(crate) struct CallCancel {
    current: std::sync::Mutex<tokio_util::sync::CancellationToken>,
}

impl CallCancel {
    /// Cancels the call running now (if any).
    pub(crate) fn cancel(&self) {
        if let Ok(token) = self.current.lock() {
            token.cancel();
        }
    }

    /// A new call starts: earlier cancellations do not apply to it.
    pub(crate) fn begin_call(&self) {
        if let Ok(mut token) = self.current.lock() {
            *token = tokio_util::sync::CancellationToken::new();
        }
    }

    fn token(&self) -> tokio_util::sync::CancellationToken {
        self.current.lock().map(|t| t.clone()).unwrap_or_default()
    }
}

fn cancelled_error() -> Error {
    Error::InternalError(Some(e2b_wire::host_guest::CANCELLED_BY_HOST.to_string()))
}

/// A response body that fails once `token` is cancelled.
struct CancellableBody<B> {
    inner: B,
    cancelled: Pin<Box<tokio_util::sync::WaitForCancellationFutureOwned>>,
}

impl<B> http_body::Body for CancellableBody<B>
where
    B: http_body::Body<Data = Bytes, Error = Error> + Unpin,
{
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Error>>> {
        if self.cancelled.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Some(Err(cancelled_error())));
        }
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// The `wasi:http` hooks of one session: the allow-list, cancellation,
/// then the pool.
pub(crate) struct OutboundHooks {
    policy: Arc<OutboundPolicy>,
    client: OutboundClient,
    cancel: Arc<CallCancel>,
}

impl OutboundHooks {
    /// Where `handle` counts how it sent this session's requests.
    pub(crate) fn sends(&self) -> Arc<handle::SendCounts> {
        Arc::clone(&self.client.sends)
    }

    pub(crate) fn new(
        policy: Arc<OutboundPolicy>,
        client: OutboundClient,
        cancel: Arc<CallCancel>,
    ) -> Self {
        Self {
            policy,
            client,
            cancel,
        }
    }
}

impl WasiHttpHooks for OutboundHooks {
    fn send_request(
        &mut self,
        mut request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _response_errors: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> SendFuture {
        let finish = request
            .headers_mut()
            .remove(e2b_wire::host_guest::HEADER_FINISH_ON_CANCEL)
            .is_some();
        if !self.policy.allows(request.uri()) {
            // Host and port only: paths and queries may carry identifiers.
            tracing::warn!(
                target: "e2b_tools::audit",
                method = %request.method(),
                host = request.uri().host().unwrap_or(""),
                port = request.uri().port_u16(),
                allowed = %self.policy,
                "outbound request denied by policy"
            );
            return Box::new(async { Err(Error::HttpRequestDenied) });
        }
        let client = self.client.clone();
        let token = (!finish).then(|| self.cancel.token());
        Box::new(async move {
            let response = match &token {
                None => client.send(request, options).await?,
                Some(token) => tokio::select! {
                    response = client.send(request, options) => response?,
                    () = token.cancelled() => return Err(cancelled_error()),
                },
            };
            let response = match token {
                None => response,
                Some(token) => response.map(|body| {
                    CancellableBody {
                        inner: body,
                        cancelled: Box::pin(token.cancelled_owned()),
                    }
                    .boxed_unsync()
                }),
            };
            // The pool drives the connection itself; nothing is left to poll.
            let io: Box<dyn Future<Output = Result<(), Error>> + Send> = Box::new(async { Ok(()) });
            Ok((response, io))
        })
    }
}
