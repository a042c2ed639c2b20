//! envd's protocol (port 49983 of every sandbox): Connect RPC services
//! `process.Process` and `filesystem.Filesystem` (JSON codec), and the REST
//! routes `/health`, `/files` and `/envs`.

use std::sync::Arc;

use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use e2b_wire::connect::{Code, ConnectError};
use e2b_wire::{filesystem as fs, process as pr};
use http::{Method, StatusCode};

use crate::connect_rpc as rpc;
use crate::context::Envd;
use crate::filesystem::{files_http, rpc as filesystem_rpc};
use crate::http_errors::api_error;
use crate::process::rpc as process_rpc;

/// envd's routes; requests carry the sandbox's [`Envd`] as an extension
/// (the edge checked the access token before the request got here).
pub(crate) fn router() -> Router {
    Router::new()
        .route("/health", get(|| async { StatusCode::NO_CONTENT }))
        .route(
            "/envs",
            get(
                |axum::Extension(s): axum::Extension<Arc<Envd>>| async move {
                    Json(s.env_vars().clone())
                },
            ),
        )
        .route("/files", get(files_http::download).post(files_http::upload))
        .route(pr::START_PATH, post(process_rpc::start))
        .route(pr::CONNECT_PATH, post(process_rpc::connect))
        .route(pr::LIST_PATH, post(process_rpc::list))
        .route(pr::SEND_INPUT_PATH, post(process_rpc::send_input))
        .route(pr::SEND_SIGNAL_PATH, post(process_rpc::send_signal))
        .route(pr::CLOSE_STDIN_PATH, post(process_rpc::close_stdin))
        .route("/process.Process/Update", post(process_rpc::update))
        .route(
            "/process.Process/StreamInput",
            post(process_rpc::stream_input),
        )
        .route(fs::STAT_PATH, post(filesystem_rpc::stat))
        .route(fs::LIST_DIR_PATH, post(filesystem_rpc::list_dir))
        .route(fs::MAKE_DIR_PATH, post(filesystem_rpc::make_dir))
        .route(fs::MOVE_PATH, post(filesystem_rpc::move_entry))
        .route(fs::REMOVE_PATH, post(filesystem_rpc::remove))
        .route(
            "/filesystem.Filesystem/WatchDir",
            post(filesystem_rpc::watch_dir),
        )
        .route(
            "/filesystem.Filesystem/CreateWatcher",
            post(filesystem_rpc::create_watcher),
        )
        .route(
            "/filesystem.Filesystem/GetWatcherEvents",
            post(filesystem_rpc::get_watcher_events),
        )
        .route(
            "/filesystem.Filesystem/RemoveWatcher",
            post(filesystem_rpc::remove_watcher),
        )
        .fallback(unknown)
        .method_not_allowed_fallback(|| async {
            api_error(StatusCode::METHOD_NOT_ALLOWED, "method not allowed")
        })
}

/// Unknown Connect procedures are `unimplemented` with HTTP 404, as
/// connect-go's mux answers; other unknown paths a JSON 404.
async fn unknown(req: Request) -> Response {
    let path = req.uri().path();
    let looks_like_rpc = path
        .strip_prefix('/')
        .and_then(|p| p.split_once('/'))
        .is_some_and(|(service, method)| service.contains('.') && !method.is_empty());
    if looks_like_rpc && req.method() == Method::POST {
        let err = ConnectError::new(Code::Unimplemented, format!("{path} is not implemented"));
        let mut resp = rpc::unary_error(err);
        *resp.status_mut() = StatusCode::NOT_FOUND;
        return resp;
    }
    api_error(StatusCode::NOT_FOUND, format!("{path} not found")).into_response()
}
