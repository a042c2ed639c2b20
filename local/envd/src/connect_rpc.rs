//! The Connect protocol with the JSON codec, server side: reading unary and
//! streaming requests (chunked bodies too, with a size cap), answering unary
//! calls and writing envelope streams that always end with one end-stream
//! envelope.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::response::{IntoResponse, Response};
use e2b_wire::connect::{
    encode_envelope, Code, ConnectError, EndStream, EnvelopeDecoder, CONTENT_TYPE_STREAM,
    CONTENT_TYPE_UNARY, FLAG_COMPRESSED, FLAG_END_STREAM,
};
use http::{header, HeaderMap, HeaderValue, StatusCode};
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::sync::mpsc;

use e2b_wire::envd_setup::SandboxUser;

/// Largest RPC request body accepted.
pub const RPC_BODY_LIMIT: usize = 1 << 20;
/// A client that never finishes its request body is given up on.
const BODY_READ_TIMEOUT: Duration = Duration::from_secs(60);
/// envd's keepalive interval when the client sends none.
const DEFAULT_KEEPALIVE: Duration = Duration::from_secs(90);

/// The user an RPC acts as: envd's `Authorization: Basic base64("<user>:")`,
/// `user` when absent; an unknown name is `unauthenticated`, as in envd.
pub fn user_from_headers(headers: &HeaderMap) -> Result<SandboxUser, ConnectError> {
    use base64::Engine;
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Ok(SandboxUser::User);
    };
    let name = value
        .to_str()
        .ok()
        .and_then(|v| v.strip_prefix("Basic "))
        .and_then(|b| {
            base64::engine::general_purpose::STANDARD
                .decode(b.trim())
                .ok()
        })
        .and_then(|raw| String::from_utf8(raw).ok())
        .map(|cred| cred.split(':').next().unwrap_or("").to_string())
        .unwrap_or_default();
    SandboxUser::from_name(&name).ok_or_else(|| {
        ConnectError::new(Code::Unauthenticated, format!("invalid username: '{name}'"))
    })
}

/// A unary error answer.
pub fn unary_error(err: ConnectError) -> Response {
    let status =
        StatusCode::from_u16(err.code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = serde_json::to_vec(&err).unwrap_or_default();
    let mut resp = (status, body).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(CONTENT_TYPE_UNARY),
    );
    resp
}

/// A unary success answer.
pub fn unary_ok<T: Serialize>(msg: &T) -> Response {
    match serde_json::to_vec(msg) {
        Ok(body) => {
            let mut resp = (StatusCode::OK, body).into_response();
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(CONTENT_TYPE_UNARY),
            );
            resp
        }
        Err(e) => unary_error(ConnectError::new(Code::Internal, e.to_string())),
    }
}

/// The result of a unary handler.
pub fn unary<T: Serialize>(result: Result<T, ConnectError>) -> Response {
    match result {
        Ok(msg) => unary_ok(&msg),
        Err(e) => unary_error(e),
    }
}

fn content_type(headers: &HeaderMap) -> String {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default()
}

async fn read_body(body: Body) -> Result<Bytes, ConnectError> {
    let read = tokio::time::timeout(
        BODY_READ_TIMEOUT,
        axum::body::to_bytes(body, RPC_BODY_LIMIT),
    );
    let Ok(result) = read.await else {
        return Err(ConnectError::new(
            Code::DeadlineExceeded,
            "timed out reading the request body",
        ));
    };
    result.map_err(|e| {
        let too_large = std::error::Error::source(&e)
            .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
        if too_large {
            ConnectError::new(
                Code::ResourceExhausted,
                format!("request body larger than {RPC_BODY_LIMIT} bytes"),
            )
        } else {
            ConnectError::new(Code::Canceled, format!("reading the request body: {e}"))
        }
    })
}

/// Decodes one message's JSON payload.
pub fn decode_message<T: DeserializeOwned>(payload: &[u8]) -> Result<T, ConnectError> {
    decode(payload)
}

/// Checks that a request is a streaming one (`application/connect+json`).
pub fn require_stream(headers: &HeaderMap) -> Result<(), ConnectError> {
    let ct = content_type(headers);
    if ct != CONTENT_TYPE_STREAM {
        return Err(ConnectError::new(
            Code::InvalidArgument,
            format!("unsupported content type '{ct}': streaming calls need {CONTENT_TYPE_STREAM}"),
        ));
    }
    Ok(())
}

fn decode<T: DeserializeOwned>(payload: &[u8]) -> Result<T, ConnectError> {
    serde_json::from_slice(payload)
        .map_err(|e| ConnectError::new(Code::InvalidArgument, format!("unmarshal message: {e}")))
}

/// Reads a unary request (`application/json`, bare JSON body).
pub async fn read_unary<T: DeserializeOwned>(
    headers: &HeaderMap,
    body: Body,
) -> Result<T, ConnectError> {
    let ct = content_type(headers);
    if ct != CONTENT_TYPE_UNARY {
        return Err(ConnectError::new(
            Code::InvalidArgument,
            format!("unsupported content type '{ct}': this server speaks Connect with {CONTENT_TYPE_UNARY}"),
        ));
    }
    let bytes = read_body(body).await?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return decode(b"{}");
    }
    decode(&bytes)
}

/// Reads a server-streaming request: exactly one envelope.
pub async fn read_stream_request<T: DeserializeOwned>(
    headers: &HeaderMap,
    body: Body,
) -> Result<T, ConnectError> {
    require_stream(headers)?;
    let bytes = read_body(body).await?;
    let mut decoder = EnvelopeDecoder::new(RPC_BODY_LIMIT);
    decoder.push(&bytes);
    let env = decoder
        .next_envelope()
        .map_err(|e| ConnectError::new(Code::InvalidArgument, e.to_string()))?
        .ok_or_else(|| {
            ConnectError::new(
                Code::InvalidArgument,
                if bytes.is_empty() {
                    "missing request message".to_string()
                } else {
                    format!("stream ended inside an envelope ({} bytes)", bytes.len())
                },
            )
        })?;
    if env.flags & FLAG_COMPRESSED != 0 {
        return Err(ConnectError::new(
            Code::Unimplemented,
            "compressed messages are not supported",
        ));
    }
    if env.flags & FLAG_END_STREAM != 0 {
        return Err(ConnectError::new(
            Code::InvalidArgument,
            "unexpected end-stream envelope in the request",
        ));
    }
    decode(&env.payload)
}

/// `Connect-Timeout-Ms` as a duration (absent or invalid: none).
pub fn timeout_header(headers: &HeaderMap) -> Option<Duration> {
    let ms: u64 = headers
        .get(e2b_wire::HEADER_CONNECT_TIMEOUT)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    (ms > 0).then(|| Duration::from_millis(ms))
}

/// `Keepalive-Ping-Interval` seconds (envd's 90 s default when absent/invalid).
pub fn keepalive_header(headers: &HeaderMap) -> Duration {
    headers
        .get(e2b_wire::HEADER_KEEPALIVE_INTERVAL)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|s| *s > 0)
        .map(Duration::from_secs)
        .unwrap_or(DEFAULT_KEEPALIVE)
}

/// The writing end of a streaming answer.
pub struct StreamWriter {
    tx: mpsc::Sender<std::io::Result<Bytes>>,
}

impl StreamWriter {
    /// Sends one message; false once the client is gone.
    pub async fn send<T: Serialize>(&self, msg: &T) -> bool {
        let Ok(payload) = serde_json::to_vec(msg) else {
            return false;
        };
        self.tx
            .send(Ok(Bytes::from(encode_envelope(0, &payload))))
            .await
            .is_ok()
    }

    /// Resolves once the client is gone (the response body was dropped).
    pub async fn closed(&self) {
        self.tx.closed().await;
    }

    /// Cuts the connection without ending the stream, as E2B's proxy does
    /// when the sandbox behind it dies.
    pub async fn abort(self) {
        let err = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "the sandbox is gone");
        let _ = self.tx.send(Err(err)).await;
    }

    /// Ends the stream with `{}` or `{"error": …}`.
    pub async fn end(self, error: Option<ConnectError>) {
        let end = EndStream {
            error,
            metadata: None,
        };
        let payload = serde_json::to_vec(&end).unwrap_or_else(|_| b"{}".to_vec());
        let _ = self
            .tx
            .send(Ok(Bytes::from(encode_envelope(FLAG_END_STREAM, &payload))))
            .await;
    }
}

/// A `200 application/connect+json` answer and the writer feeding it.
pub fn stream_response() -> (StreamWriter, Response) {
    let (tx, rx) = mpsc::channel::<std::io::Result<Bytes>>(16);
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    let mut resp = Response::new(Body::from_stream(stream));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(CONTENT_TYPE_STREAM),
    );
    (StreamWriter { tx }, resp)
}

/// A stream that fails at once: connect-go answers 200 + end-stream error.
pub fn stream_error(err: ConnectError) -> Response {
    let (writer, resp) = stream_response();
    tokio::spawn(writer.end(Some(err)));
    resp
}
