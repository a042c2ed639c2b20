//! Fault injection for tests: make the next N requests on a route fail,
//! stall, lose their connection mid-body or carry a malformed stream, or make
//! a sandbox expire now.
//!
//! ```no_run
//! # async fn demo(server: &e2b_local::LocalServer) {
//! use e2b_local::{Fault, FaultRule};
//! server.faults().inject(FaultRule {
//!     method: None,
//!     path_prefix: "/process.Process/Start".into(),
//!     times: 1,
//!     fault: Fault::ResetAfter { bytes: 10 },
//! });
//! # }
//! ```

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use e2b_wire::connect::{encode_envelope, EnvelopeDecoder, FLAG_END_STREAM, PREFIX_LEN};
use futures_util::StreamExt;
use http::{HeaderValue, Method, StatusCode};

use crate::http_errors::api_error;
use crate::registry::Registry;

/// What goes wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Answer `status` with JSON `{"code","message"}`, as E2B's API would:
    /// with `Retry-After` and `Should-Retry` only when given (the server's
    /// own errors say `Should-Retry: false`; an injected one is a
    /// transient failure clients may retry).
    Status {
        /// The HTTP status.
        status: u16,
        /// The message.
        message: String,
        /// `Retry-After` seconds, if any.
        retry_after: Option<u32>,
        /// `Should-Retry`, if any.
        should_retry: Option<bool>,
    },
    /// Wait this long, then answer normally.
    Delay(Duration),
    /// Send the real answer but cut the connection after this many body
    /// bytes (0 = right after the headers), without a proper end.
    ResetAfter {
        /// Body bytes sent before the cut.
        bytes: usize,
    },
    /// Connect stream: drop the `end` event and the end-stream envelope, then
    /// close cleanly.
    EndWithoutEndEvent,
    /// Connect stream: finish the body in the middle of the second envelope.
    TruncatedEnvelope,
    /// NDJSON stream: insert an empty line after the first line.
    BlankNdjsonLine,
}

/// Which requests a fault hits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultRule {
    /// Only this method (any when `None`).
    pub method: Option<Method>,
    /// Request paths starting with this, e.g. `/v2/sandboxes`,
    /// `/process.Process/Start`, `/execute`, `/files`; ending in `$`, the
    /// path itself (`/v2/sandboxes$`: creates, not connects).
    pub path_prefix: String,
    /// How many matching requests it hits.
    pub times: usize,
    /// The fault.
    pub fault: Fault,
}

/// The fault-injection handle of a [`crate::LocalServer`]. Cheap to clone.
#[derive(Clone)]
pub struct Faults {
    rules: Arc<Mutex<VecDeque<FaultRule>>>,
    registry: Arc<Registry>,
}

impl Faults {
    pub(crate) fn new(registry: Arc<Registry>) -> Self {
        Self {
            rules: Arc::default(),
            registry,
        }
    }

    /// Adds a rule; rules are tried in insertion order.
    pub fn inject(&self, rule: FaultRule) {
        if rule.times == 0 {
            return;
        }
        if let Ok(mut rules) = self.rules.lock() {
            rules.push_back(rule);
        }
    }

    /// The sandbox reaches its TTL now: it is killed (or paused when created
    /// with autoPause), exactly as on expiry.
    pub fn expire_now(&self, sandbox_id: &str) {
        self.registry.expire(sandbox_id);
    }

    /// Delays each background stop a pause schedules (one without memory,
    /// or at the TTL) by `ms` before it begins, as a loaded machine may.
    pub fn delay_pause_stops(&self, ms: u64) {
        self.registry
            .pause_stop_delay_ms
            .store(ms, std::sync::atomic::Ordering::Relaxed);
    }

    /// Removes every pending rule.
    pub fn clear(&self) {
        if let Ok(mut rules) = self.rules.lock() {
            rules.clear();
        }
    }

    /// Takes one use of the first rule matching the request.
    fn take(&self, method: &Method, path: &str) -> Option<Fault> {
        let mut rules = self.rules.lock().ok()?;
        let idx = rules.iter().position(|r| {
            let path_matches = match r.path_prefix.strip_suffix('$') {
                Some(exact) => path == exact,
                None => path.starts_with(&r.path_prefix),
            };
            r.method.as_ref().is_none_or(|m| m == method) && path_matches
        })?;
        let rule = &mut rules[idx];
        rule.times -= 1;
        let fault = rule.fault.clone();
        if rule.times == 0 {
            rules.remove(idx);
        }
        Some(fault)
    }
}

/// Middleware applying injected faults to every request.
pub(crate) async fn apply(State(faults): State<Faults>, req: Request, next: Next) -> Response {
    let Some(fault) = faults.take(req.method(), req.uri().path()) else {
        return next.run(req).await;
    };
    match fault {
        Fault::Status {
            status,
            message,
            retry_after,
            should_retry,
        } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut resp = api_error(status, message);
            let headers = resp.headers_mut();
            headers.remove("should-retry");
            if let Some(secs) = retry_after {
                headers.insert("retry-after", HeaderValue::from(secs));
            }
            if let Some(retry) = should_retry {
                headers.insert(
                    "should-retry",
                    HeaderValue::from_static(if retry { "true" } else { "false" }),
                );
            }
            resp
        }
        Fault::Delay(d) => {
            tokio::time::sleep(d).await;
            next.run(req).await
        }
        Fault::ResetAfter { bytes } => transform(next.run(req).await, ResetAfter { left: bytes }),
        Fault::EndWithoutEndEvent => transform(
            next.run(req).await,
            DropEnd {
                decoder: EnvelopeDecoder::new(usize::MAX),
            },
        ),
        Fault::TruncatedEnvelope => transform(
            next.run(req).await,
            Truncate {
                decoder: EnvelopeDecoder::new(usize::MAX),
                seen: 0,
            },
        ),
        Fault::BlankNdjsonLine => transform(next.run(req).await, BlankLine { done: false }),
    }
}

/// How long a reset waits for what came before it to be written.
const RESET_GRACE: Duration = Duration::from_millis(20);

/// What a body transformer does with a chunk (or the end).
enum Step {
    /// Send these and go on.
    Emit(Vec<Bytes>),
    /// Send these and end the body cleanly.
    EmitThenEnd(Vec<Bytes>),
    /// Send these and abort the connection.
    EmitThenReset(Vec<Bytes>),
}

trait BodyTransform: Send + 'static {
    fn chunk(&mut self, data: Bytes) -> Step;
    fn end(&mut self) -> Step {
        Step::EmitThenEnd(Vec::new())
    }
}

struct ResetAfter {
    left: usize,
}

impl BodyTransform for ResetAfter {
    fn chunk(&mut self, data: Bytes) -> Step {
        if data.len() < self.left {
            self.left -= data.len();
            return Step::Emit(vec![data]);
        }
        let head = data.slice(..self.left);
        self.left = 0;
        Step::EmitThenReset(vec![head])
    }
    fn end(&mut self) -> Step {
        Step::EmitThenReset(Vec::new())
    }
}

struct DropEnd {
    decoder: EnvelopeDecoder,
}

impl BodyTransform for DropEnd {
    fn chunk(&mut self, data: Bytes) -> Step {
        self.decoder.push(&data);
        let mut out = Vec::new();
        while let Ok(Some(env)) = self.decoder.next_envelope() {
            let is_end_event = serde_json::from_slice::<serde_json::Value>(&env.payload)
                .ok()
                .is_some_and(|v| v.pointer("/event/end").is_some());
            if env.flags & FLAG_END_STREAM != 0 || is_end_event {
                continue;
            }
            out.push(Bytes::from(encode_envelope(env.flags, &env.payload)));
        }
        Step::Emit(out)
    }
}

struct Truncate {
    decoder: EnvelopeDecoder,
    seen: usize,
}

impl BodyTransform for Truncate {
    fn chunk(&mut self, data: Bytes) -> Step {
        self.decoder.push(&data);
        let mut out = Vec::new();
        while let Ok(Some(env)) = self.decoder.next_envelope() {
            self.seen += 1;
            let framed = encode_envelope(env.flags, &env.payload);
            if self.seen == 1 {
                out.push(Bytes::from(framed));
            } else {
                let cut = PREFIX_LEN + env.payload.len() / 2;
                out.push(Bytes::copy_from_slice(&framed[..cut.max(PREFIX_LEN - 2)]));
                return Step::EmitThenEnd(out);
            }
        }
        Step::Emit(out)
    }
}

struct BlankLine {
    done: bool,
}

impl BodyTransform for BlankLine {
    fn chunk(&mut self, data: Bytes) -> Step {
        if self.done {
            return Step::Emit(vec![data]);
        }
        match data.iter().position(|b| *b == b'\n') {
            Some(i) => {
                self.done = true;
                let mut buf = BytesMut::with_capacity(data.len() + 1);
                buf.extend_from_slice(&data[..=i]);
                buf.extend_from_slice(b"\n");
                buf.extend_from_slice(&data[i + 1..]);
                Step::Emit(vec![buf.freeze()])
            }
            None => Step::Emit(vec![data]),
        }
    }
}

/// Rewrites a response body through `t`; the length header goes, since the
/// body changes (and a cut must not look like a complete answer).
fn transform(resp: Response, t: impl BodyTransform) -> Response {
    let (mut parts, body) = resp.into_parts();
    parts.headers.remove(http::header::CONTENT_LENGTH);
    let inner = body.into_data_stream();
    let stream = futures_util::stream::unfold(
        (inner, t, VecDeque::<Bytes>::new(), Phase::Running),
        |(mut inner, mut t, mut queue, mut phase)| async move {
            loop {
                if let Some(b) = queue.pop_front() {
                    return Some((Ok(b), (inner, t, queue, phase)));
                }
                match phase {
                    Phase::Ended => return None,
                    Phase::Reset => {
                        phase = Phase::Ended;
                        // What was sent must reach the client before the
                        // cut: hyper writes the head with the first bytes,
                        // and an error on the next poll drops that write.
                        tokio::time::sleep(RESET_GRACE).await;
                        let err = std::io::Error::new(
                            std::io::ErrorKind::ConnectionReset,
                            "injected fault: connection reset",
                        );
                        return Some((Err(err), (inner, t, queue, phase)));
                    }
                    Phase::Running => {}
                }
                let step = match inner.next().await {
                    Some(Ok(data)) => t.chunk(data),
                    Some(Err(_)) => Step::EmitThenReset(Vec::new()),
                    None => t.end(),
                };
                match step {
                    Step::Emit(v) => queue.extend(v),
                    Step::EmitThenEnd(v) => {
                        queue.extend(v);
                        phase = Phase::Ended;
                    }
                    Step::EmitThenReset(v) => {
                        queue.extend(v);
                        phase = Phase::Reset;
                    }
                }
                queue.retain(|b| !b.is_empty());
            }
        },
    );
    Response::from_parts(parts, Body::from_stream(stream))
}

#[derive(Clone, Copy)]
enum Phase {
    Running,
    Reset,
    Ended,
}
