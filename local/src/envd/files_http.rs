//! envd's `/files` REST route: raw downloads and uploads (multipart or
//! octet-stream), on the sandbox's view of the filesystem. Never gzipped.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::RawQuery;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use axum::Json;
use e2b_wire::filesystem::WriteInfo;
use http::{header, HeaderMap, HeaderValue, StatusCode};
use serde::Deserialize;

use crate::http_errors::api_error;
use crate::paths;
use crate::sandbox::Sandbox;

/// Largest upload accepted.
pub const FILES_BODY_LIMIT: usize = 64 << 20;

/// Files up to this size are read and written on the request's own task.
const INLINE_IO_LIMIT: u64 = 64 << 10;

/// `?path=…&username=…`.
#[derive(Debug, Deserialize)]
pub struct FileQuery {
    #[serde(default)]
    path: Option<String>,
}

/// Parses the query; the error becomes envd's JSON 400.
fn parse_query(query: Option<&str>) -> Result<FileQuery, String> {
    serde_urlencoded::from_str(query.unwrap_or("")).map_err(|e| format!("invalid query: {e}"))
}

/// `GET /files?path=`: the file's bytes.
pub async fn download(
    Extension(sandbox): Extension<Arc<Sandbox>>,
    RawQuery(query): RawQuery,
) -> Response {
    let q = match parse_query(query.as_deref()) {
        Ok(q) => q,
        Err(msg) => return api_error(StatusCode::BAD_REQUEST, msg),
    };
    let given = q.path.unwrap_or_default();
    let r = match sandbox.paths.resolve(&given, true) {
        Ok(r) => r,
        Err(e) => {
            return api_error(
                StatusCode::BAD_REQUEST,
                format!("invalid path '{given}': {e}"),
            )
        }
    };
    let shown = if given.is_empty() {
        r.sandbox.clone()
    } else {
        given.clone()
    };
    // Local-disk metadata and small reads take microseconds, less than a
    // hop to the blocking pool and back; big files stream from the pool.
    let meta = match std::fs::metadata(&r.host) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return api_error(
                StatusCode::NOT_FOUND,
                format!("path '{shown}' does not exist"),
            )
        }
        Err(e) => {
            return api_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("error checking path '{shown}': {e}"),
            )
        }
    };
    if meta.is_dir() {
        return api_error(
            StatusCode::BAD_REQUEST,
            format!("path '{shown}' is a directory"),
        );
    }
    let body = if meta.len() <= INLINE_IO_LIMIT {
        std::fs::read(&r.host).map(Body::from)
    } else {
        tokio::fs::File::open(&r.host)
            .await
            .map(|file| Body::from_stream(tokio_util::io::ReaderStream::new(file)))
    };
    match body {
        Ok(body) => {
            let name = r
                .sandbox
                .rsplit('/')
                .next()
                .unwrap_or("file")
                .replace('"', "");
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
        Err(e) => api_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("error reading file '{shown}': {e}"),
        ),
    }
}

/// `POST /files?path=`: writes one file (octet-stream) or every `file`
/// part (multipart), creating parent directories.
pub async fn upload(
    Extension(sandbox): Extension<Arc<Sandbox>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let q = match parse_query(query.as_deref()) {
        Ok(q) => q,
        Err(msg) => return api_error(StatusCode::BAD_REQUEST, msg),
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
        match write_file(&sandbox, &path, &data).await {
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

async fn write_file(sandbox: &Sandbox, given: &str, data: &[u8]) -> Result<WriteInfo, Response> {
    let r = sandbox.paths.resolve(given, true).map_err(|e| {
        api_error(
            StatusCode::BAD_REQUEST,
            format!("invalid path '{given}': {e}"),
        )
    })?;
    let shown = paths::clean(&paths::absolutize(given));
    if r.host.is_dir() {
        return Err(api_error(
            StatusCode::BAD_REQUEST,
            format!("path '{shown}' is a directory"),
        ));
    }
    if !r.writable {
        return Err(api_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("error opening file: open {shown}: read-only file system"),
        ));
    }
    if let Some(parent) = r.host.parent().filter(|p| !p.is_dir()) {
        tokio::fs::create_dir_all(parent).await.map_err(|e| {
            api_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("error creating parent directories of '{shown}': {e}"),
            )
        })?;
    }
    let written = if data.len() as u64 <= INLINE_IO_LIMIT {
        std::fs::write(&r.host, data)
    } else {
        tokio::fs::write(&r.host, data).await
    };
    written.map_err(|e| {
        let status = if e.raw_os_error() == Some(libc::ENOSPC) {
            StatusCode::INSUFFICIENT_STORAGE
        } else {
            StatusCode::INTERNAL_SERVER_ERROR
        };
        api_error(status, format!("error writing file: open {shown}: {e}"))
    })?;
    Ok(WriteInfo {
        name: r.sandbox.rsplit('/').next().unwrap_or("").to_string(),
        path: r.sandbox,
        file_type: Some("file".into()),
    })
}
