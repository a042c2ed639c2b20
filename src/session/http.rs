//! Sends an [`HttpRequest`] through the host's `wasi:http` outgoing handler
//! and streams the answer.
//!
//! The request body is written and finished *before* `handle()` whenever
//! the host accepts it without blocking (always for our small bodies):
//! `wstd::http::Client` calls `handle()` first, and on some hosts the
//! request then leaves without its body (docs/TOOLCHAIN.md, "The
//! request-body race"). Only a body too large for the host's buffer is
//! streamed after `handle()`.

use wasip2::http::outgoing_handler;
use wasip2::http::types::{
    ErrorCode, Fields, IncomingBody, IncomingResponse, Method as WasiMethod, OutgoingBody,
    OutgoingRequest, RequestOptions, Scheme,
};
use wasip2::io::streams::{InputStream, StreamError};
use wstd::io::{AsyncOutputStream, AsyncPollable};

use super::platform::{Platform, Response, ResponseBody, READ_HEADERS};
use super::report::Report;
use crate::errors::{ErrorKind, Failure};
use crate::protocol::request::{split_url, HttpRequest, Method};

/// Size of one read from a response body.
const READ_CHUNK: usize = 64 * 1024;
/// Pause after a read that found no data although the stream polled ready.
const EMPTY_READ_BACKOFF: std::time::Duration = std::time::Duration::from_millis(5);

/// The component's platform: the host's `wasi:http` outgoing handler and
/// `wasi:clocks`, and how its world reports events (an import of the
/// embedding world, stdout lines in the stateless one: the exports' choice,
/// so this layer needs neither's bindings).
#[derive(Clone, Copy)]
pub struct Wasi {
    /// Tells the host of one event.
    pub report: fn(Report),
}

impl Platform for Wasi {
    type Body = BodyReader;

    async fn send(
        &self,
        req: &HttpRequest,
        timeout_ms: u32,
    ) -> Result<Response<BodyReader>, Failure> {
        send(req, timeout_ms).await
    }

    fn now_ns(&self) -> u64 {
        wasip2::clocks::monotonic_clock::now()
    }

    fn wall_ns(&self) -> u64 {
        let t = wasip2::clocks::wall_clock::now();
        t.seconds
            .saturating_mul(1_000_000_000)
            .saturating_add(u64::from(t.nanoseconds))
    }

    async fn sleep_ns(&self, ns: u64) {
        wstd::task::sleep(std::time::Duration::from_nanos(ns).into()).await;
    }

    fn random_u64(&self) -> u64 {
        wasip2::random::random::get_random_u64()
    }

    fn report(&self, event: Report) {
        (self.report)(event)
    }

    fn progress(&self, event: &str) {
        use std::io::Write as _;
        // A host that cannot take it loses the event, never the call.
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{event}").and_then(|()| out.flush());
    }
}

/// A response whose body is read as it arrives.
pub type HttpResponse = Response<BodyReader>;

/// A response body. Fields drop in declaration order, children before
/// parents, as WASI resources require.
pub struct BodyReader {
    /// The body stream and its readiness pollable (the pollable drops first).
    stream: Option<(AsyncPollable, InputStream)>,
    _body: Option<IncomingBody>,
    _response: IncomingResponse,
}

impl ResponseBody for BodyReader {
    /// The next chunk, `None` at the end of the body.
    ///
    /// Reads before waiting: a small answer is usually buffered by the time
    /// its headers are, and its end is known right after, so the common
    /// case costs two reads and no waits.
    async fn chunk(&mut self) -> Result<Option<Vec<u8>>, Failure> {
        let mut waited = false;
        loop {
            let Some((ready, stream)) = &self.stream else {
                return Ok(None);
            };
            match stream.read(READ_CHUNK as u64) {
                Ok(bytes) if bytes.is_empty() => {
                    if waited {
                        // Some hosts (jco's preview2-shim) report a body
                        // stream ready before data has arrived. Waiting
                        // again at once never yields, which starves the
                        // heartbeat and deadline timers racing this read:
                        // back off on the reactor instead.
                        wstd::task::sleep(EMPTY_READ_BACKOFF.into()).await;
                    }
                    ready.wait_for().await;
                    waited = true;
                }
                Ok(bytes) => return Ok(Some(bytes)),
                Err(StreamError::Closed) => {
                    self.stream = None;
                    return Ok(None);
                }
                Err(StreamError::LastOperationFailed(e)) => {
                    self.stream = None;
                    let text = e.to_debug_string();
                    return Err(cancellation(&text).unwrap_or_else(|| {
                        Failure::transient(format!(
                            "the connection closed while reading the answer: {}",
                            first_line(&text)
                        ))
                    }));
                }
            }
        }
    }
}

/// The cancellation failure, if `host_error` is the host cancelling the
/// call ([`e2b_wire::host_guest::CANCELLED_BY_HOST`]).
fn cancellation(host_error: &str) -> Option<Failure> {
    host_error
        .contains(e2b_wire::host_guest::CANCELLED_BY_HOST)
        .then(|| Failure::new(ErrorKind::Cancelled, "cancelled by the client"))
}

fn internal(msg: &str) -> Failure {
    Failure::new(ErrorKind::Internal, msg.to_string())
}

/// Maps a wasi:http error to a failure; a connection that failed or broke
/// is transient (a refusal by the host's policy is not).
fn transport_error(host: &str, e: &ErrorCode) -> Failure {
    if matches!(e, ErrorCode::HttpRequestDenied) {
        return Failure::new(ErrorKind::Network, denied(host));
    }
    if let Some(cancelled) = cancellation(&format!("{e:?}")) {
        return cancelled;
    }
    let message = format!("request to {host} failed: {}", describe(host, e));
    match e {
        ErrorCode::ConnectionReadTimeout
        | ErrorCode::ConnectionWriteTimeout
        | ErrorCode::ConnectionTimeout => Failure::new(ErrorKind::Timeout, message),
        ErrorCode::ConnectionRefused
        | ErrorCode::DestinationUnavailable
        | ErrorCode::ConnectionTerminated
        | ErrorCode::ConnectionLimitReached
        | ErrorCode::HttpProtocolError
        | ErrorCode::HttpResponseIncomplete => Failure::transient(message),
        _ => Failure::new(ErrorKind::Network, message),
    }
}

/// A transport failure in words, with what usually fixes it (the common
/// ones; the rest as the host named them).
fn describe(host: &str, e: &ErrorCode) -> String {
    match e {
        ErrorCode::ConnectionRefused => format!(
            "connection refused: nothing listens at {host}. Is the server running? For a \
             local server start `e2b-tools local serve` and use the E2B_API_URL and \
             E2B_SANDBOX_URL it prints; else check E2B_API_URL / E2B_DOMAIN"
        ),
        ErrorCode::DnsError(payload) => format!(
            "{host} could not be resolved (DNS{}): check E2B_DOMAIN or E2B_API_URL, and \
             this machine's network",
            payload
                .rcode
                .as_deref()
                .map(|rcode| format!(": {rcode}"))
                .unwrap_or_default()
        ),
        ErrorCode::TlsProtocolError
        | ErrorCode::TlsCertificateError
        | ErrorCode::TlsAlertReceived(_) => {
            format!(
                "the TLS handshake with {host} failed ({}): the server does not speak HTTPS \
                 there, or its certificate is not trusted (a local server is plain \
                 http://: check the scheme of E2B_API_URL / E2B_SANDBOX_URL)",
                tls_reason(e)
            )
        }
        ErrorCode::ConnectionTimeout => {
            format!("{host} did not accept the connection in time")
        }
        ErrorCode::ConnectionTerminated => {
            format!("the connection to {host} closed before the answer")
        }
        ErrorCode::DestinationUnavailable => {
            format!("{host} cannot be reached from this machine")
        }
        other => format!("{other:?}"),
    }
}

fn tls_reason(e: &ErrorCode) -> &'static str {
    match e {
        ErrorCode::TlsCertificateError => "certificate not trusted",
        ErrorCode::TlsAlertReceived(_) => "the server sent an alert",
        _ => "protocol error",
    }
}

/// What a refusal by the host's outbound policy says: the host to allow,
/// and how in a plugin host such as wassette (whose operator grants it).
fn denied(host: &str) -> String {
    let name = host.rsplit_once(':').map_or(host, |(name, _port)| name);
    format!(
        "request to {host} failed: HttpRequestDenied: {name} is not in the host's allow-list \
         (in wassette: `wassette permission grant network <component-id> {name}`)"
    )
}

/// Sends `req`; `connect_timeout_ms` (0: none) bounds connecting.
pub async fn send(req: &HttpRequest, connect_timeout_ms: u32) -> Result<HttpResponse, Failure> {
    let url = split_url(&req.url).ok_or_else(|| {
        Failure::new(
            ErrorKind::InvalidArgument,
            format!("invalid URL '{}'", req.url),
        )
    })?;
    let mut entries: Vec<(String, Vec<u8>)> = req
        .headers
        .iter()
        .map(|(k, v)| (k.clone(), v.as_bytes().to_vec()))
        .collect();
    if !req.body.is_empty() {
        entries.push((
            "content-length".into(),
            req.body.len().to_string().into_bytes(),
        ));
    }
    let headers = Fields::from_list(&entries).map_err(|e| {
        Failure::new(
            ErrorKind::InvalidArgument,
            format!("invalid request header: {e:?}"),
        )
    })?;
    let outgoing = OutgoingRequest::new(headers);
    let method = match req.method {
        Method::Get => WasiMethod::Get,
        Method::Post => WasiMethod::Post,
        Method::Delete => WasiMethod::Delete,
    };
    let scheme = if url.https {
        Scheme::Https
    } else {
        Scheme::Http
    };
    outgoing
        .set_method(&method)
        .map_err(|()| internal("invalid method"))?;
    outgoing
        .set_scheme(Some(&scheme))
        .map_err(|()| internal("invalid scheme"))?;
    outgoing.set_authority(Some(&url.authority)).map_err(|()| {
        Failure::new(
            ErrorKind::InvalidArgument,
            format!("invalid host '{}'", url.authority),
        )
    })?;
    outgoing
        .set_path_with_query(Some(&url.path_and_query))
        .map_err(|()| Failure::new(ErrorKind::InvalidArgument, "invalid URL path"))?;
    let options = (connect_timeout_ms > 0).then(|| {
        let options = RequestOptions::new();
        // Not every host supports it; the callers' deadlines still apply.
        let _ = options.set_connect_timeout(Some(u64::from(connect_timeout_ms) * 1_000_000));
        options
    });
    let body = outgoing
        .body()
        .map_err(|()| internal("request body unavailable"))?;
    let stream = body
        .write()
        .map_err(|()| internal("request body stream unavailable"))?;

    // Write what the host takes without blocking.
    let mut written = 0;
    while written < req.body.len() {
        let room = stream
            .check_write()
            .map_err(|e| stream_failure(&url.authority, e))? as usize;
        if room == 0 {
            break;
        }
        let end = req.body.len().min(written.saturating_add(room));
        stream
            .write(&req.body[written..end])
            .map_err(|e| stream_failure(&url.authority, e))?;
        written = end;
    }

    let future = if written == req.body.len() {
        drop(stream);
        OutgoingBody::finish(body, None).map_err(|e| transport_error(&url.authority, &e))?;
        outgoing_handler::handle(outgoing, options)
            .map_err(|e| transport_error(&url.authority, &e))?
    } else {
        // A body larger than the host buffers: send the head, then stream.
        let future = outgoing_handler::handle(outgoing, options)
            .map_err(|e| transport_error(&url.authority, &e))?;
        let stream = AsyncOutputStream::new(stream);
        stream.write_all(&req.body[written..]).await.map_err(|e| {
            Failure::new(
                ErrorKind::Network,
                format!("request to {} failed while sending: {e}", url.authority),
            )
        })?;
        let _ = stream.flush().await;
        drop(stream);
        OutgoingBody::finish(body, None).map_err(|e| transport_error(&url.authority, &e))?;
        future
    };

    {
        let pollable = AsyncPollable::new(future.subscribe());
        pollable.wait_for().await;
    }
    let response = match future.get() {
        Some(Ok(Ok(response))) => response,
        Some(Ok(Err(e))) => return Err(transport_error(&url.authority, &e)),
        Some(Err(())) | None => return Err(internal("the HTTP response was not available")),
    };
    drop(future);
    let status = response.status();
    let headers = read_headers(&response);
    let incoming: IncomingBody = response
        .consume()
        .map_err(|()| internal("the response body was not available"))?;
    let input = incoming
        .stream()
        .map_err(|()| internal("the response body stream was not available"))?;
    Ok(HttpResponse {
        status,
        headers,
        body: BodyReader {
            stream: Some((AsyncPollable::new(input.subscribe()), input)),
            _body: Some(incoming),
            _response: response,
        },
    })
}

/// The response headers the orchestration reads ([`READ_HEADERS`]).
fn read_headers(response: &IncomingResponse) -> Vec<(String, String)> {
    let fields = response.headers();
    READ_HEADERS
        .iter()
        .filter_map(|name| {
            let values = fields.get(name);
            let value = values.first()?;
            Some((
                name.to_string(),
                String::from_utf8_lossy(value).into_owned(),
            ))
        })
        .collect()
}

fn stream_failure(host: &str, e: StreamError) -> Failure {
    Failure::transient(match e {
        StreamError::LastOperationFailed(err) => format!(
            "request to {host} failed while sending: {}",
            first_line(&err.to_debug_string())
        ),
        StreamError::Closed => {
            format!("request to {host} failed: the connection closed while sending")
        }
    })
}

/// The first line of a host error text (wasmtime appends a backtrace).
fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("").trim_end()
}
