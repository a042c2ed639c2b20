//! envd's JSON error answer: `{"code": <int>, "message": …}`.

use axum::response::{IntoResponse, Response};
use axum::Json;
use e2b_wire::api::ApiError;
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
