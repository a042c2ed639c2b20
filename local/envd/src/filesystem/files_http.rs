//! envd's `/files` REST route: raw downloads and uploads (multipart or
//! octet-stream), on the sandbox's view of the filesystem. Never gzipped.

use std::io::Read;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::RawQuery;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use axum::Json;
use e2b_wire::filesystem::WriteInfo;
use http::{header, HeaderMap, HeaderValue, StatusCode};
use serde::Deserialize;

use super::entry::Written;
use super::metadata::{self, Metadata};
use super::sandbox_fs::{FsError, FsErrorKind, Op, SandboxFs};
use crate::context::Envd;
use crate::http_errors::api_error;
use e2b_wire::envd_setup::SandboxUser;

/// Largest upload accepted.
pub const FILES_BODY_LIMIT: usize = 64 << 20;

/// Files up to this size are read and written on the request's own task.
const INLINE_IO_LIMIT: u64 = 64 << 10;

/// `?path=…&username=…`.
#[derive(Debug, Deserialize)]
pub struct FileQuery {
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    username: Option<String>,
}

/// Parses the query; the error becomes envd's JSON 400.
fn parse_query(query: Option<&str>) -> Result<FileQuery, String> {
    serde_urlencoded::from_str(query.unwrap_or("")).map_err(|e| format!("invalid query: {e}"))
}

/// The sandbox's filesystem as `?username=` (`user` when absent; another
/// name is envd's 401).
fn open_fs(sandbox: &Envd, q: &FileQuery) -> Result<SandboxFs, Box<Response>> {
    let name = q.username.as_deref().unwrap_or("");
    let user = SandboxUser::from_name(name).ok_or_else(|| {
        Box::new(api_error(
            StatusCode::UNAUTHORIZED,
            format!("invalid username: '{name}'"),
        ))
    })?;
    Ok(sandbox.fs(user))
}

/// Which way a `/files` request goes: the answers differ as envd's do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transfer {
    Download,
    Upload,
}

/// envd's answer for a failed transfer of the client's path `given`
/// (shown as `shown`).
fn fs_error(e: &FsError, transfer: Transfer, given: &str, shown: &str) -> Response {
    use FsErrorKind as K;
    use Transfer::{Download, Upload};
    let kind = &e.kind;
    let (status, message) = match (kind, transfer) {
        (K::IsADirectory, _) => (
            StatusCode::BAD_REQUEST,
            format!("path '{shown}' is a directory"),
        ),
        (K::NotRegular, _) => (
            StatusCode::BAD_REQUEST,
            format!("path '{shown}' is not a regular file"),
        ),
        (K::PseudoFs(fs), Download) => (
            StatusCode::BAD_REQUEST,
            format!("path '{shown}' is on the kernel pseudo-filesystem {fs}, which the files API does not read or write"),
        ),
        // ELOOP is also how the kernel refuses a `/proc/<pid>/root`-style
        // magic link: for a download, there is nothing reachable there.
        (K::TooManySymlinks, Download) => (
            StatusCode::NOT_FOUND,
            format!("path '{shown}' does not exist: {kind} (or a /proc link, which the files API does not follow)"),
        ),
        (K::TooManySymlinks | K::InvalidPath(_), _) => (
            StatusCode::BAD_REQUEST,
            format!("invalid path '{given}': {kind}"),
        ),
        (K::NoSpace, _) => (
            StatusCode::INSUFFICIENT_STORAGE,
            format!("error writing file: open {shown}: {kind}"),
        ),
        (K::NotFound, Download) => (
            StatusCode::NOT_FOUND,
            format!("path '{shown}' does not exist"),
        ),
        (_, Download) if e.op == Op::Read => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("error reading file '{shown}': {kind}"),
        ),
        (_, Download) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("error checking path '{shown}': {kind}"),
        ),
        // A read-only mount, a forbidden directory or a pseudo-filesystem
        // anywhere on the way is envd's failed open.
        (K::ReadOnly | K::PermissionDenied | K::PseudoFs(_), Upload) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("error opening file: open {shown}: {kind}"),
        ),
        (_, Upload) if e.op == Op::Mkdir => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("error creating parent directories of '{shown}': {kind}"),
        ),
        (_, Upload) if e.op == Op::Write => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("error writing file: open {shown}: {kind}"),
        ),
        (_, Upload) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("error opening file: open {shown}: {kind}"),
        ),
    };
    api_error(status, message)
}

/// `GET /files?path=`: the file's bytes.
pub async fn download(
    Extension(sandbox): Extension<Arc<Envd>>,
    RawQuery(query): RawQuery,
) -> Response {
    let q = match parse_query(query.as_deref()) {
        Ok(q) => q,
        Err(msg) => return api_error(StatusCode::BAD_REQUEST, msg),
    };
    let fs = match open_fs(&sandbox, &q) {
        Ok(fs) => fs,
        Err(resp) => return *resp,
    };
    let given = q.path.unwrap_or_default();
    let clean = fs.absolute(&given);
    let shown = if given.is_empty() {
        clean.clone()
    } else {
        given.clone()
    };
    let opened = match fs.open_read(&clean) {
        Ok(f) => f,
        Err(e) => return fs_error(&e, Transfer::Download, &given, &shown),
    };
    // Small reads take microseconds, less than a hop to the blocking pool
    // and back; big files stream from the pool.
    let body = if opened.size <= INLINE_IO_LIMIT {
        let mut buf = Vec::with_capacity(usize::try_from(opened.size).unwrap_or(0));
        // At most the size it had when opened: the sandbox may be appending.
        match (&opened.file).take(opened.size).read_to_end(&mut buf) {
            Ok(_) => Body::from(buf),
            Err(e) => {
                let e = FsError::from_io(e, Op::Read, &clean);
                return fs_error(&e, Transfer::Download, &given, &shown);
            }
        }
    } else {
        use tokio::io::AsyncReadExt;
        let file = tokio::fs::File::from_std(opened.file).take(opened.size);
        Body::from_stream(tokio_util::io::ReaderStream::new(file))
    };
    let name = clean.rsplit('/').next().unwrap_or("file").replace('"', "");
    let mut resp = (StatusCode::OK, body).into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    if let Ok(v) = HeaderValue::from_str(&format!("inline; filename=\"{name}\"")) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    resp
}

/// `POST /files?path=`: writes one file (octet-stream) or every `file`
/// part (multipart), creating parent directories.
pub async fn upload(
    Extension(sandbox): Extension<Arc<Envd>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let q = match parse_query(query.as_deref()) {
        Ok(q) => q,
        Err(msg) => return api_error(StatusCode::BAD_REQUEST, msg),
    };
    let fs = match open_fs(&sandbox, &q) {
        Ok(fs) => fs,
        Err(resp) => return *resp,
    };
    // `X-Metadata-*`: the same map for every file of the upload, as envd.
    let md = match metadata::from_headers(&headers) {
        Ok(md) => md,
        Err(msg) => return api_error(StatusCode::BAD_REQUEST, format!("invalid metadata: {msg}")),
    };
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let encoding = headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("identity")
        .trim()
        .to_ascii_lowercase();
    if encoding != "identity" && encoding != "gzip" {
        return api_error(
            StatusCode::BAD_REQUEST,
            format!("unsupported Content-Encoding '{encoding}': use gzip or none"),
        );
    }
    let bytes = match axum::body::to_bytes(body, FILES_BODY_LIMIT).await {
        Ok(b) => b,
        Err(e) => {
            return api_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "request body too large or unreadable (limit {FILES_BODY_LIMIT} bytes): {e}"
                ),
            )
        }
    };
    let bytes = if encoding == "gzip" {
        match gunzip(&bytes) {
            Ok(b) => b,
            Err(msg) => return api_error(StatusCode::BAD_REQUEST, msg),
        }
    } else {
        bytes
    };
    let path = q.path.filter(|p| !p.is_empty());
    let mime = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let files: Vec<(String, Bytes)> = match mime.as_str() {
        "multipart/form-data" => match parse_multipart(&ct, bytes, path.as_deref()).await {
            Ok(f) => f,
            Err(resp) => return resp,
        },
        "application/octet-stream" => match path {
            Some(p) => vec![(p, bytes)],
            None => {
                return api_error(
                    StatusCode::BAD_REQUEST,
                    "the path query parameter is required for application/octet-stream uploads",
                )
            }
        },
        _ => {
            return api_error(
                StatusCode::BAD_REQUEST,
                format!("unsupported content type '{ct}': use multipart/form-data or application/octet-stream"),
            )
        }
    };
    if files.is_empty() {
        return api_error(
            StatusCode::BAD_REQUEST,
            "no file part named 'file' in the upload",
        );
    }
    let mut written = Vec::new();
    for (path, data) in files {
        match write_file(&fs, &path, data, &md).await {
            Ok(info) => written.push(info),
            Err(resp) => return resp,
        }
    }
    Json(written).into_response()
}

/// Decompresses a gzip upload, refusing more than [`FILES_BODY_LIMIT`] bytes.
fn gunzip(data: &[u8]) -> Result<Bytes, String> {
    use std::io::Read;
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(data)
        .take(FILES_BODY_LIMIT as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| format!("invalid gzip body: {e}"))?;
    if out.len() > FILES_BODY_LIMIT {
        return Err(format!(
            "decompressed upload larger than {FILES_BODY_LIMIT} bytes"
        ));
    }
    Ok(Bytes::from(out))
}

async fn parse_multipart(
    content_type: &str,
    bytes: Bytes,
    path: Option<&str>,
) -> Result<Vec<(String, Bytes)>, Response> {
    let bad = |msg: String| api_error(StatusCode::BAD_REQUEST, msg);
    let boundary = multer::parse_boundary(content_type)
        .map_err(|e| bad(format!("invalid multipart content type: {e}")))?;
    let stream = futures_util::stream::once(async move { Ok::<_, std::io::Error>(bytes) });
    let mut mp = multer::Multipart::new(stream, boundary);
    let mut files = Vec::new();
    while let Some(field) = mp
        .next_field()
        .await
        .map_err(|e| bad(format!("invalid multipart body: {e}")))?
    {
        if field.name() != Some("file") {
            continue;
        }
        let dest = match (path, field.file_name()) {
            (Some(p), _) => p.to_string(),
            (None, Some(f)) if !f.is_empty() => f.to_string(),
            _ => {
                return Err(bad(
                    "a file part needs a filename when no path query parameter is given".into(),
                ))
            }
        };
        let data = field
            .bytes()
            .await
            .map_err(|e| bad(format!("invalid multipart body: {e}")))?;
        files.push((dest, data));
    }
    Ok(files)
}

/// Writes one uploaded file; big ones on the blocking pool.
async fn write_file(
    fs: &SandboxFs,
    given: &str,
    data: Bytes,
    md: &Metadata,
) -> Result<Written, Response> {
    let shown = fs.absolute(given);
    let written = if data.len() as u64 <= INLINE_IO_LIMIT {
        fs.write_with_metadata(&shown, &data, md)
    } else {
        let (fs, path, md) = (fs.clone(), shown.clone(), md.clone());
        tokio::task::spawn_blocking(move || fs.write_with_metadata(&path, &data, &md))
            .await
            .unwrap_or_else(|e| {
                Err(FsError::from_io(
                    std::io::Error::other(e),
                    Op::Write,
                    &shown,
                ))
            })
    };
    let metadata = written.map_err(|e| fs_error(&e, Transfer::Upload, given, &shown))?;
    Ok(Written {
        info: WriteInfo {
            name: shown.rsplit('/').next().unwrap_or("").to_string(),
            path: shown,
            file_type: Some("file".into()),
        },
        metadata,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn answer(kind: FsErrorKind, op: Op, transfer: Transfer, path: &str) -> (u16, String) {
        let e = FsError {
            kind,
            op,
            path: path.into(),
        };
        let resp = fs_error(&e, transfer, path, path);
        let status = resp.status().as_u16();
        let body = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        (status, v["message"].as_str().unwrap().to_string())
    }

    #[tokio::test]
    async fn failures_answer_as_envd() {
        use Transfer::{Download, Upload};
        let cases = [
            (FsErrorKind::NotFound, Op::Open, Download, "/tmp/missing.txt", 404, "path '/tmp/missing.txt' does not exist"),
            (FsErrorKind::IsADirectory, Op::Open, Download, "/tmp", 400, "path '/tmp' is a directory"),
            (FsErrorKind::NotRegular, Op::Open, Download, "/tmp/fifo", 400, "path '/tmp/fifo' is not a regular file"),
            (FsErrorKind::PseudoFs("proc"), Op::Open, Download, "/proc/kcore", 400, "path '/proc/kcore' is on the kernel pseudo-filesystem proc, which the files API does not read or write"),
            (FsErrorKind::ReadOnly, Op::Mkdir, Upload, "/etc/x.txt", 500, "error opening file: open /etc/x.txt: read-only file system"),
            (FsErrorKind::PseudoFs("proc"), Op::Open, Upload, "/proc/x", 500, "error opening file: open /proc/x: on the kernel pseudo-filesystem proc, which the files API does not touch"),
            (FsErrorKind::NoSpace, Op::Write, Upload, "/tmp/big", 507, "error writing file: open /tmp/big: no space left on device"),
            (FsErrorKind::NotADirectory, Op::Mkdir, Upload, "/home/user/a/b", 500, "error creating parent directories of '/home/user/a/b': not a directory"),
            (FsErrorKind::TooManySymlinks, Op::Open, Upload, "loop", 400, "invalid path 'loop': too many levels of symbolic links"),
            (FsErrorKind::TooManySymlinks, Op::Open, Download, "/home/user/viaproc", 404, "path '/home/user/viaproc' does not exist: too many levels of symbolic links (or a /proc link, which the files API does not follow)"),
        ];
        for (kind, op, transfer, path, status, message) in cases {
            assert_eq!(
                answer(kind, op, transfer, path).await,
                (status, message.to_string())
            );
        }
    }
}
