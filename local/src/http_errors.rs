//! The JSON error answers E2B's REST surfaces give: the control plane's and
//! envd's `{"code": <int>, "message": …}` and the edge proxy's 502.

use axum::response::{IntoResponse, Response};
use axum::Json;
use e2b_wire::api::{ApiError, ProxyError, SANDBOX_NOT_FOUND_MESSAGE};
use http::{HeaderValue, StatusCode};

/// `{"code": status, "message": message}` with `Should-Retry: false`, so the
/// SDK's retrying transport fails fast instead of backing off.
pub fn api_error(status: StatusCode, message: impl Into<String>) -> Response {
    let body = ApiError {
        code: status.as_u16(),
        message: message.into(),
    };
    let mut resp = (status, Json(body)).into_response();
    resp.headers_mut()
        .insert("should-retry", HeaderValue::from_static("false"));
    resp
}

/// The edge proxy's answer for a sandbox that does not exist (any more).
pub fn sandbox_not_found(sandbox_id: &str) -> Response {
    proxy_error(sandbox_id, SANDBOX_NOT_FOUND_MESSAGE)
}

/// A 502 from the edge proxy with `message`.
pub fn proxy_error(sandbox_id: &str, message: &str) -> Response {
    let body = ProxyError {
        sandbox_id: sandbox_id.to_string(),
        message: message.to_string(),
        code: 502,
    };
    let mut resp = (StatusCode::BAD_GATEWAY, Json(body)).into_response();
    resp.headers_mut()
        .insert("should-retry", HeaderValue::from_static("false"));
    resp
}
