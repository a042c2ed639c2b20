//! `filesystem.Filesystem` RPCs: Stat, ListDir, MakeDir, Move, Remove, on
//! the sandbox's view of the filesystem ([`crate::paths`]).

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use axum::Extension;
use e2b_wire::connect::{Code, ConnectError};
use e2b_wire::filesystem::{
    EntryInfo, EntryResponse, ListDirRequest, ListDirResponse, MoveRequest, PathRequest,
};
use http::HeaderMap;

use super::entry::entry_info;
use super::rpc;
use crate::paths::{PathError, Resolved};
use crate::sandbox::Sandbox;

type Sbx = Extension<Arc<Sandbox>>;

/// Sandbox paths that are mount points and cannot be removed or moved.
const MOUNT_POINTS: [&str; 3] = ["/", "/home/user", "/tmp"];
/// Deepest ListDir recursion honoured.
const MAX_DEPTH: u32 = 64;

fn resolve(sandbox: &Sandbox, path: &str, follow_last: bool) -> Result<Resolved, ConnectError> {
    sandbox
        .paths
        .resolve(path, follow_last)
        .map_err(|e: PathError| ConnectError::new(Code::InvalidArgument, format!("{path}: {e}")))
}

fn read_only(op: &str, path: &str) -> ConnectError {
    ConnectError::new(
        Code::PermissionDenied,
        format!("{op} {path}: read-only file system"),
    )
}

fn io_error(op: &str, path: &str, e: &std::io::Error) -> ConnectError {
    let code = match e.kind() {
        std::io::ErrorKind::NotFound => Code::NotFound,
        std::io::ErrorKind::PermissionDenied => Code::PermissionDenied,
        std::io::ErrorKind::AlreadyExists => Code::AlreadyExists,
        _ => Code::Internal,
    };
    ConnectError::new(code, format!("{op} {path}: {e}"))
}

fn describe(r: &Resolved) -> Result<EntryInfo, ConnectError> {
    let meta = std::fs::symlink_metadata(&r.host).map_err(|e| io_error("stat", &r.sandbox, &e))?;
    Ok(entry_info(&r.sandbox, &r.host, &meta, r.writable))
}

/// `Stat`.
pub async fn stat(Extension(sandbox): Sbx, headers: HeaderMap, body: Body) -> Response {
    rpc::unary(
        async {
            let req: PathRequest = rpc::read_unary(&headers, body).await?;
            let r = resolve(&sandbox, &req.path, false)?;
            match std::fs::symlink_metadata(&r.host) {
                Ok(meta) => Ok(EntryResponse {
                    entry: Some(entry_info(&r.sandbox, &r.host, &meta, r.writable)),
                }),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(ConnectError::new(
                    Code::NotFound,
                    format!(
                        "file not found: stat {}: no such file or directory",
                        r.sandbox
                    ),
                )),
                Err(e) => Err(io_error("stat", &r.sandbox, &e)),
            }
        }
        .await,
    )
}

/// `ListDir` (depth 0 means 1).
pub async fn list_dir(Extension(sandbox): Sbx, headers: HeaderMap, body: Body) -> Response {
    rpc::unary(
        async {
            let req: ListDirRequest = rpc::read_unary(&headers, body).await?;
            let r = resolve(&sandbox, &req.path, true)?;
            let meta = std::fs::metadata(&r.host).map_err(|_| {
                ConnectError::new(
                    Code::NotFound,
                    format!(
                        "directory not found: stat {}: no such file or directory",
                        r.sandbox
                    ),
                )
            })?;
            if !meta.is_dir() {
                return Err(ConnectError::new(
                    Code::InvalidArgument,
                    format!("path is not a directory: {}", r.sandbox),
                ));
            }
            let depth = req.depth.clamp(1, MAX_DEPTH);
            let mut entries = Vec::new();
            walk(&sandbox, &r.sandbox, depth, &mut entries)?;
            Ok(ListDirResponse { entries })
        }
        .await,
    )
}

fn walk(
    sandbox: &Sandbox,
    dir: &str,
    depth: u32,
    out: &mut Vec<EntryInfo>,
) -> Result<(), ConnectError> {
    let r = resolve(sandbox, dir, true)?;
    let read = std::fs::read_dir(&r.host).map_err(|e| io_error("open", dir, &e))?;
    let mut names: Vec<String> = read
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for name in names {
        let child = if dir == "/" {
            format!("/{name}")
        } else {
            format!("{dir}/{name}")
        };
        let Ok(cr) = resolve(sandbox, &child, false) else {
            continue;
        };
        let Ok(meta) = std::fs::symlink_metadata(&cr.host) else {
            continue;
        };
        out.push(entry_info(&cr.sandbox, &cr.host, &meta, cr.writable));
        if depth > 1 && meta.is_dir() {
            walk(sandbox, &cr.sandbox, depth - 1, out)?;
        }
    }
    Ok(())
}

/// `MakeDir` (with parents); an existing directory is `already_exists`.
pub async fn make_dir(Extension(sandbox): Sbx, headers: HeaderMap, body: Body) -> Response {
    rpc::unary(
        async {
            let req: PathRequest = rpc::read_unary(&headers, body).await?;
            let r = resolve(&sandbox, &req.path, true)?;
            if let Ok(meta) = std::fs::metadata(&r.host) {
                return Err(if meta.is_dir() {
                    ConnectError::new(
                        Code::AlreadyExists,
                        format!("directory already exists: {}", r.sandbox),
                    )
                } else {
                    ConnectError::new(
                        Code::InvalidArgument,
                        format!(
                            "path already exists but it is not a directory: {}",
                            r.sandbox
                        ),
                    )
                });
            }
            if !r.writable {
                return Err(read_only("mkdir", &r.sandbox));
            }
            std::fs::create_dir_all(&r.host).map_err(|e| io_error("mkdir", &r.sandbox, &e))?;
            Ok(EntryResponse {
                entry: Some(describe(&r)?),
            })
        }
        .await,
    )
}

/// `Move` (rename), creating the destination's parents.
pub async fn move_entry(Extension(sandbox): Sbx, headers: HeaderMap, body: Body) -> Response {
    rpc::unary(
        async {
            let req: MoveRequest = rpc::read_unary(&headers, body).await?;
            let src = resolve(&sandbox, &req.source, false)?;
            let dst = resolve(&sandbox, &req.destination, false)?;
            if std::fs::symlink_metadata(&src.host).is_err() {
                return Err(ConnectError::new(
                    Code::NotFound,
                    format!("source file not found: {}", src.sandbox),
                ));
            }
            for r in [&src, &dst] {
                if !r.writable || MOUNT_POINTS.contains(&r.sandbox.as_str()) {
                    return Err(read_only("rename", &r.sandbox));
                }
            }
            if let Some(parent) = dst.host.parent() {
                std::fs::create_dir_all(parent).map_err(|e| io_error("mkdir", &dst.sandbox, &e))?;
            }
            std::fs::rename(&src.host, &dst.host)
                .map_err(|e| io_error("rename", &src.sandbox, &e))?;
            Ok(EntryResponse {
                entry: Some(describe(&dst)?),
            })
        }
        .await,
    )
}

/// `Remove` (recursive for directories).
pub async fn remove(Extension(sandbox): Sbx, headers: HeaderMap, body: Body) -> Response {
    rpc::unary(
        async {
            let req: PathRequest = rpc::read_unary(&headers, body).await?;
            let r = resolve(&sandbox, &req.path, false)?;
            let meta = std::fs::symlink_metadata(&r.host).map_err(|_| {
                ConnectError::new(
                    Code::NotFound,
                    format!(
                        "file not found: stat {}: no such file or directory",
                        r.sandbox
                    ),
                )
            })?;
            if !r.writable || MOUNT_POINTS.contains(&r.sandbox.as_str()) {
                return Err(read_only("remove", &r.sandbox));
            }
            let result = if meta.is_dir() {
                std::fs::remove_dir_all(&r.host)
            } else {
                std::fs::remove_file(&r.host)
            };
            result.map_err(|e| io_error("remove", &r.sandbox, &e))?;
            Ok(serde_json::json!({}))
        }
        .await,
    )
}
