//! `wasi:http/outgoing-handler.handle`, in place of wasmtime-wasi-http's:
//! a request whose body the guest has written is sent from the calling
//! task, and an answer that comes within [`INLINE_BUDGET`] is handed to
//! the guest ready.
//!
//! Why: wasmtime-wasi-http's `handle` spawns a task for every request
//! (and a second for its connection), so each request's answer crosses
//! from that task to the one running the call, and every spawn may wake a
//! parked worker thread that finds nothing to do. On a loopback server
//! that was half the per-call cost above the native floor (BENCHMARKS.md
//! §1). Sending from the calling task makes a request cost what a native
//! client's does. A request still waiting after the budget (a slow server,
//! a long first byte) goes on in a task of its own, as before, so the
//! guest is never held for longer than the budget: its timers and other
//! requests go on. A body the guest is still writing (a large upload,
//! streamed after `handle`) takes the spawned path at once: waiting for it
//! here would wait for the guest itself.
//!
//! The request is built as wasmtime-wasi-http builds it (method, scheme,
//! authority, path, `Host`, headers, body), then goes to the session's
//! [`WasiHttpHooks`](wasmtime_wasi_http::WasiHttpHooks) like any other.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body as _, Frame};
use http_body_util::{BodyExt, Empty};
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::runtime::{spawn, AbortOnDropJoinHandle};
use wasmtime_wasi_http::p2::bindings::http::types::{ErrorCode, Method, Scheme};
use wasmtime_wasi_http::p2::types::{HostFutureIncomingResponse, HostOutgoingRequest};
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpView};

/// The interface this replaces the `handle` of, as wasmtime-wasi-http
/// 48 defines it (a guest's older 0.2 import resolves to it).
pub(crate) const INTERFACE: &str = "wasi:http/outgoing-handler@0.2.12";

/// The longest the guest waits in `handle` for an answer's headers before
/// the request goes on in a task of its own. Loopback answers take well
/// under a millisecond; the guest's own deadlines are seconds long.
const INLINE_BUDGET: Duration = Duration::from_millis(20);

/// Defines `handle` in `linker`, over wasmtime-wasi-http's; `sends` finds
/// where a store's requests are counted.
pub(crate) fn add_to_linker<T: WasiHttpView + 'static>(
    linker: &mut Linker<T>,
    sends: fn(&T) -> Arc<SendCounts>,
) -> wasmtime::Result<()> {
    linker.instance(INTERFACE)?.func_wrap_async(
        "handle",
        move |mut store,
              (request, options): (
            Resource<HostOutgoingRequest>,
            Option<Resource<RequestOptions>>,
        )| {
            Box::new(async move {
                let stats = sends(store.data());
                let view = store.data_mut().http();
                let options = match options {
                    Some(options) => view.table.get(&options).ok().cloned(),
                    None => None,
                };
                let request = view.table.delete(request)?;
                let request = match build(request) {
                    Ok(request) => request,
                    Err(code) => return Ok((Err(code),)),
                };
                let (request, written) = written_body(request);
                let sent: Sent = Pin::from(view.hooks.send_request(
                    request,
                    options,
                    Box::new(async { Ok(()) }),
                ));
                // (Outside a tokio runtime, as wasmtime-wasi-http does:
                // its spawn finds one.)
                let response = match written && tokio::runtime::Handle::try_current().is_ok() {
                    true => inline(sent, &stats).await,
                    false => {
                        stats.in_task.fetch_add(1, Ordering::Relaxed);
                        HostFutureIncomingResponse::Pending(in_task(sent))
                    }
                };
                let future = store.data_mut().http().table.push(response)?;
                Ok((Ok(future),))
            })
        },
    )
}

/// How a client's requests were sent, counted by `handle`.
#[derive(Debug, Default)]
pub(crate) struct SendCounts {
    inline: AtomicU64,
    in_task: AtomicU64,
}

impl SendCounts {
    pub(crate) fn read(&self) -> OutboundStats {
        OutboundStats {
            answered_inline: self.inline.load(Ordering::Relaxed),
            in_task: self.in_task.load(Ordering::Relaxed),
        }
    }
}

/// How the component's requests were sent so far, for tests and
/// benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OutboundStats {
    /// Requests sent from the calling task and answered within its budget.
    pub answered_inline: u64,
    /// Requests that went on in a task of their own: a body still being
    /// written, or no answer within the budget.
    pub in_task: u64,
}

/// What a session's hooks make of a request: the answer, and the
/// connection's own future.
pub(crate) type SendFuture = Box<
    dyn Future<
            Output = Result<
                (
                    http::Response<WasiBody>,
                    Box<dyn Future<Output = Result<(), Error>> + Send>,
                ),
                Error,
            >,
        > + Send,
>;

type Sent = Pin<SendFuture>;

/// What a response future of wasmtime-wasi-http holds.
type Answer = Result<(http::Response<WasiBody>, AbortOnDropJoinHandle<()>), Error>;

/// Waits up to [`INLINE_BUDGET`] for the answer on this task; after that,
/// it goes on in a task of its own.
async fn inline(mut sent: Sent, stats: &SendCounts) -> HostFutureIncomingResponse {
    match tokio::time::timeout(INLINE_BUDGET, &mut sent).await {
        Ok(answer) => {
            stats.inline.fetch_add(1, Ordering::Relaxed);
            HostFutureIncomingResponse::Ready(
                answer.map(|(response, io)| (response, connection(io))),
            )
        }
        Err(_) => {
            stats.in_task.fetch_add(1, Ordering::Relaxed);
            HostFutureIncomingResponse::Pending(in_task(sent))
        }
    }
}

/// The rest of a request in a task of its own, as wasmtime-wasi-http runs
/// every request.
fn in_task(sent: Sent) -> AbortOnDropJoinHandle<Answer> {
    spawn(async move { sent.await.map(|(response, io)| (response, connection(io))) })
}

/// The task that drives a response's connection, which the response holds
/// (the session's hooks drive theirs in the pool: it ends at once).
fn connection(io: Box<dyn Future<Output = Result<(), Error>> + Send>) -> AbortOnDropJoinHandle<()> {
    spawn(async move {
        if let Err(err) = Pin::from(io).await {
            tracing::warn!("dropping error {err}");
        }
    })
}

/// The `http::Request` wasmtime-wasi-http would send for `request`.
fn build(request: HostOutgoingRequest) -> Result<http::Request<WasiBody>, ErrorCode> {
    let HostOutgoingRequest {
        method,
        scheme,
        authority,
        path_with_query,
        headers,
        body,
    } = request;
    // A declared length with no body would never reach the wire framed.
    let declared = headers.get(http::header::CONTENT_LENGTH);
    if body.is_none() && declared.is_some_and(|v| v.as_bytes() != b"0") {
        return Err(ErrorCode::HttpRequestBodySize(Some(0)));
    }
    let method = match method {
        Method::Get => http::Method::GET,
        Method::Head => http::Method::HEAD,
        Method::Post => http::Method::POST,
        Method::Put => http::Method::PUT,
        Method::Delete => http::Method::DELETE,
        Method::Connect => http::Method::CONNECT,
        Method::Options => http::Method::OPTIONS,
        Method::Trace => http::Method::TRACE,
        Method::Patch => http::Method::PATCH,
        Method::Other(other) => http::Method::from_bytes(other.as_bytes())
            .map_err(|_| ErrorCode::HttpRequestMethodInvalid)?,
    };
    // The hooks' defaults: http and https only, and a scheme required.
    let scheme = match scheme {
        Some(Scheme::Http) => http::uri::Scheme::HTTP,
        Some(Scheme::Https) => http::uri::Scheme::HTTPS,
        Some(Scheme::Other(_)) | None => return Err(ErrorCode::HttpProtocolError),
    };
    let authority = authority.unwrap_or_default();
    let mut uri = http::Uri::builder()
        .scheme(scheme)
        .authority(authority.as_str());
    if let Some(path) = path_with_query {
        uri = uri.path_and_query(path);
    }
    let uri = uri.build().map_err(|_| ErrorCode::HttpRequestUriInvalid)?;
    let mut builder = http::Request::builder()
        .method(method)
        .uri(uri)
        .header(http::header::HOST, authority.as_str());
    for (name, value) in headers.iter() {
        builder = builder.header(name, value);
    }
    let body = body.unwrap_or_else(|| Empty::new().map_err(|never| match never {}).boxed_unsync());
    builder
        .body(body)
        .map_err(|err| ErrorCode::InternalError(Some(err.to_string())))
}

/// `request` with what the guest has written of its body read ahead and
/// kept in front of the rest, and whether that was all of it.
fn written_body(request: http::Request<WasiBody>) -> (http::Request<WasiBody>, bool) {
    let (parts, mut body) = request.into_parts();
    let mut context = Context::from_waker(std::task::Waker::noop());
    let mut frames = VecDeque::new();
    let written = loop {
        match Pin::new(&mut body).poll_frame(&mut context) {
            Poll::Ready(Some(Ok(frame))) => {
                // Trailers end what can be read ahead (none of ours).
                let trailers = frame.is_trailers();
                frames.push_back(frame);
                if trailers {
                    break false;
                }
            }
            Poll::Ready(None) => break true,
            Poll::Ready(Some(Err(err))) => {
                return (
                    http::Request::from_parts(parts, Failed(Some(err)).boxed_unsync()),
                    false,
                )
            }
            Poll::Pending => break false,
        }
    };
    let rest = match written {
        // Ended: not polled again.
        true => Empty::new().map_err(|never| match never {}).boxed_unsync(),
        false => body,
    };
    let body = Prefixed { frames, rest }.boxed_unsync();
    (http::Request::from_parts(parts, body), written)
}

/// A body of frames already read, then the rest of the body they came from.
struct Prefixed {
    frames: VecDeque<Frame<Bytes>>,
    rest: WasiBody,
}

impl http_body::Body for Prefixed {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        if let Some(frame) = self.frames.pop_front() {
            return Poll::Ready(Some(Ok(frame)));
        }
        Pin::new(&mut self.rest).poll_frame(cx)
    }
}

/// A body that failed while it was read ahead.
struct Failed(Option<Error>);

impl http_body::Body for Failed {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        Poll::Ready(self.0.take().map(Err))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::channel::Channel;

    fn post(body: WasiBody) -> http::Request<WasiBody> {
        http::Request::post("http://127.0.0.1/").body(body).unwrap()
    }

    async fn bytes(body: WasiBody) -> Bytes {
        body.collect().await.unwrap().to_bytes()
    }

    #[tokio::test]
    async fn a_written_body_is_read_ahead_and_a_body_being_written_keeps_its_order() {
        let (mut tx, body) = Channel::<Bytes, Error>::new(4);
        tx.send_data(Bytes::from_static(b"ab")).await.unwrap();
        tx.send_data(Bytes::from_static(b"cd")).await.unwrap();
        drop(tx);
        let (request, written) = written_body(post(body.boxed_unsync()));
        assert!(written);
        assert_eq!(bytes(request.into_body()).await, "abcd");

        // Still being written: what came first stays first.
        let (mut tx, body) = Channel::<Bytes, Error>::new(4);
        tx.send_data(Bytes::from_static(b"ab")).await.unwrap();
        let (request, written) = written_body(post(body.boxed_unsync()));
        assert!(!written);
        let rest = tokio::spawn(async move {
            tx.send_data(Bytes::from_static(b"cd")).await.unwrap();
        });
        assert_eq!(bytes(request.into_body()).await, "abcd");
        rest.await.unwrap();
    }

    #[test]
    fn requests_are_built_as_wasmtime_builds_them() {
        let fields = || wasmtime_wasi_http::FieldMap::new_mutable(1 << 16);
        let mut headers = fields();
        let value = http::HeaderValue::from_static("1");
        headers
            .append_raw(http::HeaderName::from_static("x-a"), value)
            .unwrap();
        let built = build(HostOutgoingRequest {
            method: Method::Get,
            scheme: Some(Scheme::Http),
            authority: Some("127.0.0.1:3000".into()),
            path_with_query: Some("/files?path=a".into()),
            headers,
            body: None,
        })
        .unwrap();
        assert_eq!(built.uri(), "http://127.0.0.1:3000/files?path=a");
        assert_eq!(built.headers()["host"], "127.0.0.1:3000");
        assert_eq!(built.headers()["x-a"], "1");
        let no_scheme = HostOutgoingRequest {
            method: Method::Get,
            scheme: None,
            authority: None,
            path_with_query: None,
            headers: fields(),
            body: None,
        };
        assert!(matches!(
            build(no_scheme),
            Err(ErrorCode::HttpProtocolError)
        ));
    }
}
