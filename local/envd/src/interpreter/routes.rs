//! HTTP routes of one sandbox's code interpreter.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::Path;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::Extension;
use axum::{Json, Router};
use e2b_wire::interpreter::{CreateContextRequest, ExecuteRequest};
use tokio::sync::mpsc;

use super::contexts::{ContextError, Interpreter};
use super::execution;

/// Answer lines buffered between the execution and the client.
const LINE_BUFFER: usize = 16;

/// Serves `/execute`, `/contexts…` and `/health`, built once for every
/// sandbox: the request carries its sandbox's `Extension<Arc<Interpreter>>`
/// (auth and routing to the sandbox happen before).
pub fn router() -> Router {
    Router::new()
        .route("/execute", post(execute))
        .route("/contexts", post(create_context).get(list_contexts))
        .route("/contexts/{id}/restart", post(restart_context))
        .route("/contexts/{id}", delete(delete_context))
        .route("/health", get(health))
}

fn text(status: StatusCode, body: impl Into<String>) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body.into(),
    )
        .into_response()
}

impl IntoResponse for ContextError {
    fn into_response(self) -> Response {
        match self {
            ContextError::NotFound(message) => text(StatusCode::NOT_FOUND, message),
            ContextError::Unavailable(message) => text(StatusCode::BAD_REQUEST, message),
            ContextError::Failed(message) => text(StatusCode::INTERNAL_SERVER_ERROR, message),
        }
    }
}

/// Parses a JSON body; an empty body is the type's default. The error is
/// the 400 answer's text.
fn parse_body<T: serde::de::DeserializeOwned + Default>(body: &[u8]) -> Result<T, String> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    serde_json::from_slice(body).map_err(|e| format!("Invalid request body: {e}"))
}

async fn execute(Extension(interp): Extension<Arc<Interpreter>>, body: Bytes) -> Response {
    if body.iter().all(u8::is_ascii_whitespace) {
        return text(
            StatusCode::BAD_REQUEST,
            "Invalid request body: missing JSON",
        );
    }
    let request: ExecuteRequest = match parse_body(&body) {
        Ok(request) => request,
        Err(message) => return text(StatusCode::BAD_REQUEST, message),
    };
    let context = match (&request.context_id, &request.language) {
        (Some(_), Some(_)) => {
            return text(
                StatusCode::BAD_REQUEST,
                "Only one of context_id or language can be provided",
            )
        }
        (Some(id), None) => interp.find(id),
        (None, language) => interp.default_context(language.as_deref()).await,
    };
    let context = match context {
        Ok(context) => context,
        Err(e) => return e.into_response(),
    };
    let (tx, mut rx) = mpsc::channel::<Bytes>(LINE_BUFFER);
    tokio::spawn(execution::run(
        context,
        request.code,
        request.env_vars.unwrap_or_default(),
        tx,
    ));
    // Dropping the body (client gone) drops `rx`; the execution sees its
    // sender closed and interrupts the kernel.
    let lines = futures_util::stream::poll_fn(move |cx| {
        rx.poll_recv(cx).map(|line| line.map(Ok::<_, Infallible>))
    });
    Response::new(Body::from_stream(lines))
}

async fn create_context(Extension(interp): Extension<Arc<Interpreter>>, body: Bytes) -> Response {
    let request: CreateContextRequest = match parse_body(&body) {
        Ok(request) => request,
        Err(message) => return text(StatusCode::BAD_REQUEST, message),
    };
    match interp
        .create(request.language.as_deref(), request.cwd.as_deref())
        .await
    {
        Ok(context) => Json(context.info.clone()).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn list_contexts(Extension(interp): Extension<Arc<Interpreter>>) -> Response {
    Json(interp.list()).into_response()
}

async fn restart_context(
    Extension(interp): Extension<Arc<Interpreter>>,
    Path(id): Path<String>,
) -> Response {
    let context = match interp.find(&id) {
        Ok(context) => context,
        Err(e) => return e.into_response(),
    };
    match context.restart().await {
        Ok(()) => Json(serde_json::Value::Null).into_response(),
        Err(e) => ContextError::Failed(e).into_response(),
    }
}

async fn delete_context(
    Extension(interp): Extension<Arc<Interpreter>>,
    Path(id): Path<String>,
) -> Response {
    match interp.remove(&id).await {
        Ok(()) => Json(serde_json::Value::Null).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn health() -> Response {
    Json("OK").into_response()
}
