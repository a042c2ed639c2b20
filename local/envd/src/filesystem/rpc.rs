//! `filesystem.Filesystem` RPCs: Stat, ListDir, MakeDir, Move, Remove, on
//! the sandbox's own filesystem ([`super::sandbox_fs`]), and the directory
//! watchers ([`super::watch`]).

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use axum::Extension;
use e2b_wire::connect::{Code, ConnectError};
use e2b_wire::filesystem::{ListDirRequest, MoveRequest, PathRequest};
use http::HeaderMap;

use super::entry::{EntryResponse, ListDirResponse};
use super::sandbox_fs::{connect_error, FsError, FsErrorKind, SandboxFs};
use super::watch::{self, Live, Tree, WatchRequest};
use crate::connect_rpc as rpc;
use crate::context::Envd;

type Sbx = Extension<Arc<Envd>>;

/// Deepest ListDir recursion honoured.
const MAX_DEPTH: u32 = 64;

/// The sandbox's filesystem as the RPC's user.
pub(crate) fn open_fs(sandbox: &Envd, headers: &HeaderMap) -> Result<SandboxFs, ConnectError> {
    let user = rpc::user_from_headers(headers)?;
    Ok(sandbox.fs(user))
}

/// Runs an operation that may walk a whole tree on the blocking pool.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, FsError> + Send + 'static,
) -> Result<Result<T, FsError>, ConnectError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ConnectError::new(Code::Internal, format!("file operation failed: {e}")))
}

/// envd's `not_found` for a missing `path`.
fn not_found(what: &str, path: &str) -> ConnectError {
    ConnectError::new(
        Code::NotFound,
        format!("{what} not found: stat {path}: no such file or directory"),
    )
}

/// `Stat` (of a symlink itself, not its target).
pub async fn stat(Extension(sandbox): Sbx, headers: HeaderMap, body: Body) -> Response {
    rpc::unary(
        async {
            let req: PathRequest = rpc::read_unary(&headers, body).await?;
            let fs = open_fs(&sandbox, &headers)?;
            match fs.stat(&req.path) {
                Ok(entry) => Ok(EntryResponse { entry }),
                Err(e) if matches!(e.kind, FsErrorKind::NotFound) => {
                    Err(not_found("file", &e.path))
                }
                Err(e) => Err(connect_error(e)),
            }
        }
        .await,
    )
}

/// `ListDir` (depth 0 means 1), following a symlink in the path itself.
pub async fn list_dir(Extension(sandbox): Sbx, headers: HeaderMap, body: Body) -> Response {
    rpc::unary(
        async {
            let req: ListDirRequest = rpc::read_unary(&headers, body).await?;
            let fs = open_fs(&sandbox, &headers)?;
            let depth = req.depth.clamp(1, MAX_DEPTH);
            let path = fs.absolute(&req.path);
            let dir = path.clone();
            match blocking(move || fs.list_dir(&dir, depth)).await? {
                Ok(entries) => Ok(ListDirResponse { entries }),
                Err(e) if e.path == path => Err(match e.kind {
                    FsErrorKind::NotFound => not_found("directory", &path),
                    FsErrorKind::NotADirectory => ConnectError::new(
                        Code::InvalidArgument,
                        format!("path is not a directory: {path}"),
                    ),
                    _ => connect_error(e),
                }),
                Err(e) => Err(connect_error(e)),
            }
        }
        .await,
    )
}

/// `MakeDir` (with parents); an existing directory is `already_exists`.
pub async fn make_dir(Extension(sandbox): Sbx, headers: HeaderMap, body: Body) -> Response {
    rpc::unary(
        async {
            let req: PathRequest = rpc::read_unary(&headers, body).await?;
            let fs = open_fs(&sandbox, &headers)?;
            match fs.make_dir(&req.path) {
                Ok(entry) => Ok(EntryResponse { entry }),
                Err(e) => Err(match e.kind {
                    FsErrorKind::AlreadyExists => ConnectError::new(
                        Code::AlreadyExists,
                        format!("directory already exists: {}", e.path),
                    ),
                    // The path, or one of its parents, is something else.
                    FsErrorKind::NotADirectory => ConnectError::new(
                        Code::InvalidArgument,
                        format!("path already exists but it is not a directory: {}", e.path),
                    ),
                    _ => connect_error(e),
                }),
            }
        }
        .await,
    )
}

/// `Move` (rename; a symlink itself, not its target), creating the
/// destination's parents.
pub async fn move_entry(Extension(sandbox): Sbx, headers: HeaderMap, body: Body) -> Response {
    rpc::unary(
        async {
            let req: MoveRequest = rpc::read_unary(&headers, body).await?;
            let fs = open_fs(&sandbox, &headers)?;
            let source = fs.absolute(&req.source);
            let src = source.clone();
            match blocking(move || fs.rename(&src, &req.destination)).await? {
                Ok(entry) => Ok(EntryResponse { entry }),
                Err(e) if matches!(e.kind, FsErrorKind::NotFound) && e.path == source => Err(
                    ConnectError::new(Code::NotFound, format!("source file not found: {source}")),
                ),
                Err(e) => Err(connect_error(e)),
            }
        }
        .await,
    )
}

/// `Remove` (recursive for directories; a symlink itself, not its target).
pub async fn remove(Extension(sandbox): Sbx, headers: HeaderMap, body: Body) -> Response {
    rpc::unary(
        async {
            let req: PathRequest = rpc::read_unary(&headers, body).await?;
            let fs = open_fs(&sandbox, &headers)?;
            let path = fs.absolute(&req.path);
            let target = path.clone();
            match blocking(move || fs.remove(&target)).await? {
                Ok(()) => Ok(serde_json::json!({})),
                Err(e) if matches!(e.kind, FsErrorKind::NotFound) && e.path == path => {
                    Err(not_found("file", &path))
                }
                Err(e) => Err(connect_error(e)),
            }
        }
        .await,
    )
}

/// A watcher over `req.path`, on the reactor (the tree is walked on the
/// blocking pool).
async fn start_watcher(
    sandbox: &Arc<Envd>,
    headers: &HeaderMap,
    req: WatchRequest,
) -> Result<Live, ConnectError> {
    let fs = open_fs(sandbox, headers)?;
    let id = sandbox.id().to_string();
    let tree = tokio::task::spawn_blocking(move || Tree::open(fs, &req, &id))
        .await
        .map_err(|e| ConnectError::new(Code::Internal, format!("error creating watcher: {e}")))??;
    Live::new(tree)
        .map_err(|e| ConnectError::new(Code::Internal, format!("error creating watcher: {e}")))
}

/// `WatchDir`: `start`, then the directory's events until the client goes.
pub async fn watch_dir(Extension(sandbox): Sbx, headers: HeaderMap, body: Body) -> Response {
    let req: WatchRequest = match rpc::read_stream_request(&headers, body).await {
        Ok(r) => r,
        Err(e) => return rpc::stream_error(e),
    };
    let live = match start_watcher(&sandbox, &headers, req).await {
        Ok(l) => l,
        Err(e) => return rpc::stream_error(e),
    };
    let (writer, resp) = rpc::stream_response();
    tokio::spawn(watch::stream(
        live,
        writer,
        sandbox.gone(),
        rpc::keepalive_header(&headers),
        rpc::timeout_header(&headers),
    ));
    resp
}

/// `CreateWatcherResponse`.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct CreateWatcherResponse {
    watcher_id: String,
}

/// `GetWatcherEventsRequest`, `RemoveWatcherRequest`.
#[derive(serde::Deserialize)]
struct WatcherRequest {
    #[serde(default, rename = "watcherId", alias = "watcher_id")]
    watcher_id: String,
}

/// `CreateWatcher`: a watcher polled with `GetWatcherEvents`.
pub async fn create_watcher(Extension(sandbox): Sbx, headers: HeaderMap, body: Body) -> Response {
    rpc::unary(
        async {
            let req: WatchRequest = rpc::read_unary(&headers, body).await?;
            let live = start_watcher(&sandbox, &headers, req).await?;
            let watcher_id = watch::create(live, sandbox.id(), sandbox.gone());
            Ok(CreateWatcherResponse { watcher_id })
        }
        .await,
    )
}

/// `GetWatcherEvents`: the events since the previous call.
pub async fn get_watcher_events(
    Extension(sandbox): Sbx,
    headers: HeaderMap,
    body: Body,
) -> Response {
    rpc::unary(
        async {
            let req: WatcherRequest = rpc::read_unary(&headers, body).await?;
            let events = watch::take_events(sandbox.id(), &req.watcher_id)?;
            Ok(serde_json::json!({ "events": events }))
        }
        .await,
    )
}

/// `RemoveWatcher`.
pub async fn remove_watcher(Extension(sandbox): Sbx, headers: HeaderMap, body: Body) -> Response {
    rpc::unary(
        async {
            let req: WatcherRequest = rpc::read_unary(&headers, body).await?;
            watch::remove(sandbox.id(), &req.watcher_id)?;
            Ok(serde_json::json!({}))
        }
        .await,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_have_envds_codes() {
        let e = |kind| FsError {
            kind,
            op: crate::filesystem::sandbox_fs::Op::Remove,
            path: "/etc/hostname".into(),
        };
        let ro = connect_error(e(FsErrorKind::ReadOnly));
        assert_eq!(ro.code, Code::PermissionDenied);
        assert_eq!(ro.message, "remove /etc/hostname: read-only file system");
        assert_eq!(
            connect_error(e(FsErrorKind::PseudoFs("sysfs"))).code,
            Code::PermissionDenied
        );
        assert_eq!(
            connect_error(e(FsErrorKind::NotRegular)).code,
            Code::InvalidArgument
        );
        assert_eq!(connect_error(e(FsErrorKind::NotFound)).code, Code::NotFound);
        assert_eq!(
            connect_error(e(FsErrorKind::AlreadyExists)).code,
            Code::AlreadyExists
        );
    }
}
