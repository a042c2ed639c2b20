//! Snapshots and forks on the control plane, with the official SDK's
//! shapes: `POST /sandboxes/{id}/snapshots`, `GET /snapshots`,
//! `DELETE /templates/{snapshotID}`, `POST /sandboxes/{id}/fork`, and a
//! snapshot as the `templateID` of a create.
//!
//! A snapshot holds the sandbox's filesystem only: memory (running
//! processes, a kernel's variables) cannot be carried here, so
//! `memory: true` is served as a filesystem snapshot (local/README.md).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use e2b_wire::api::{
    ApiError, ForkRequest, ForkResult, NewSandbox, SnapshotRequest, DEFAULT_FORK_TIMEOUT,
};
use http::StatusCode;

use super::{check_timeout, create_error, not_found, parse, Api, Rejection};
use crate::http_errors::api_error;
use crate::isolation::DiskSource;
use crate::registry::{Origin, Registry, SnapshotError};
use crate::snapshots::{check_name, StoreError};
use crate::templates::TEMPLATES;

/// The most forks one request may ask for (E2B's API).
const MAX_FORKS: u32 = 100;
/// The most snapshots one listing page holds (and the default).
const MAX_LIST_LIMIT: usize = 100;

/// `POST /sandboxes/{id}/snapshots`: 201 `SnapshotInfo`.
pub(super) async fn create(
    State(api): State<Api>,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    let Some(sandbox) = api.registry.get(&id) else {
        return not_found(&id);
    };
    let request: SnapshotRequest = match parse(&body) {
        Ok(r) => r,
        Err(rejection) => return rejection.into_response(),
    };
    let name = match request
        .name
        .as_deref()
        .filter(|n| !n.is_empty())
        .map(check_name)
    {
        Some(Err(message)) => return api_error(StatusCode::BAD_REQUEST, message),
        Some(Ok(name)) => Some(name),
        None => None,
    };
    match api.registry.snapshot(&sandbox, name).await {
        Ok(record) => (StatusCode::CREATED, Json(record.info())).into_response(),
        Err(e) => snapshot_error(&id, e),
    }
}

/// `POST /sandboxes/{id}/fork`: 201 with one `SandboxForkResult` per fork.
pub(super) async fn fork(State(api): State<Api>, Path(id): Path<String>, body: Bytes) -> Response {
    let Some(source) = api.registry.get(&id) else {
        return not_found(&id);
    };
    let request: ForkRequest = match parse(&body) {
        Ok(r) => r,
        Err(rejection) => return rejection.into_response(),
    };
    let count = request.count.unwrap_or(1);
    if !(1..=MAX_FORKS).contains(&count) {
        return api_error(
            StatusCode::BAD_REQUEST,
            format!("count must be between 1 and {MAX_FORKS}, got {count}"),
        );
    }
    let timeout = match check_timeout(request.timeout.unwrap_or(i64::from(DEFAULT_FORK_TIMEOUT))) {
        Ok(t) => t,
        Err(rejection) => return rejection.into_response(),
    };
    match api.registry.fork(&source, count, timeout).await {
        Ok(forks) => {
            let results: Vec<ForkResult> = forks
                .into_iter()
                .map(|fork| match fork {
                    Ok(sandbox) => ForkResult {
                        sandbox: Some(sandbox.body()),
                        error: None,
                    },
                    Err(e) => {
                        let (status, message) = create_error(e);
                        ForkResult {
                            sandbox: None,
                            error: Some(ApiError {
                                code: status.as_u16(),
                                message,
                            }),
                        }
                    }
                })
                .collect();
            (StatusCode::CREATED, Json(results)).into_response()
        }
        Err(e) => snapshot_error(&id, e),
    }
}

fn snapshot_error(id: &str, e: SnapshotError) -> Response {
    match e {
        SnapshotError::Unsupported => api_error(
            StatusCode::NOT_IMPLEMENTED,
            "snapshots and forks copy a sandbox's disk image, and this server keeps sandboxes as directories: disk images need a server run as root, with loop devices (local/README.md, Known differences)",
        ),
        SnapshotError::Paused => api_error(
            StatusCode::CONFLICT,
            format!("Sandbox {id} is paused: resume it (connect) to snapshot or fork it"),
        ),
        SnapshotError::Store(full @ StoreError::Full { .. }) => {
            api_error(StatusCode::INSUFFICIENT_STORAGE, full.to_string())
        }
        SnapshotError::Store(e) => api_error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        SnapshotError::Io(e) => api_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot copy the disk of sandbox {id}: {e}"),
        ),
    }
}

/// `GET /snapshots?sandboxID=&name=&limit=&nextToken=`: newest first,
/// pages joined by the `x-next-token` header.
pub(super) async fn list(State(api): State<Api>, RawQuery(query): RawQuery) -> Response {
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(query.as_deref().unwrap_or("")).unwrap_or_default();
    let (mut sandbox, mut name, mut after) = (None, None, None);
    let mut limit = MAX_LIST_LIMIT;
    for (key, value) in &pairs {
        match key.as_str() {
            "sandboxID" => sandbox = Some(value.as_str()),
            "name" => name = Some(value.as_str()),
            "nextToken" => after = Some(value.as_str()),
            "limit" => match value.parse::<usize>() {
                Ok(n) if (1..=MAX_LIST_LIMIT).contains(&n) => limit = n,
                _ => {
                    return api_error(
                        StatusCode::BAD_REQUEST,
                        format!("invalid limit '{value}': expected 1 to {MAX_LIST_LIMIT}"),
                    )
                }
            },
            _ => {}
        }
    }
    // Newest first; the token is a page's last position.
    let position =
        |r: &crate::snapshots::SnapshotRecord| format!("{:020}.{}", r.created_at_ns, r.id);
    let matching: Vec<_> = api
        .registry
        .snapshots
        .all()
        .into_iter()
        .filter(|r| sandbox.is_none_or(|s| r.sandbox_id == s))
        .filter(|r| name.is_none_or(|n| r.answers_to(n)))
        .filter(|r| after.is_none_or(|token| position(r).as_str() < token))
        .collect();
    let page = &matching[..matching.len().min(limit)];
    let mut response = Json(page.iter().map(|r| r.info()).collect::<Vec<_>>()).into_response();
    if matching.len() > page.len() {
        if let Some(token) = page
            .last()
            .and_then(|r| http::HeaderValue::from_str(&position(r)).ok())
        {
            response.headers_mut().insert("x-next-token", token);
        }
    }
    response
}

/// `DELETE /templates/{snapshotID}` (the SDK percent-encodes the id):
/// 204, or 404 for a snapshot there is not.
pub(super) async fn delete(State(api): State<Api>, Path(id): Path<String>) -> Response {
    if TEMPLATES.contains(&id.as_str()) {
        return api_error(
            StatusCode::BAD_REQUEST,
            format!("template '{id}' is built in and cannot be deleted"),
        );
    }
    if api.registry.snapshots.delete(&id) {
        StatusCode::NO_CONTENT.into_response()
    } else {
        api_error(StatusCode::NOT_FOUND, format!("snapshot '{id}' not found"))
    }
}

/// What a create's `templateID` starts the sandbox from: a built-in
/// template, or a snapshot (a copy of its disk, its environment variables
/// under the request's own). Unknown: 404, as E2B answers.
pub(super) fn origin(
    registry: &Arc<Registry>,
    request: &mut NewSandbox,
) -> Result<Origin, Rejection> {
    let template = request.template_id.as_str();
    if TEMPLATES.contains(&template) {
        return Ok(Origin::template(template));
    }
    let Some(snapshot) = registry.snapshots.find(template) else {
        return Err(Rejection(
            StatusCode::NOT_FOUND,
            format!(
                "template '{template}' not found (this local server has {} and its snapshots)",
                TEMPLATES.join(", ")
            ),
        ));
    };
    let mut env = snapshot.env_vars.clone();
    env.append(&mut request.env_vars);
    request.env_vars = env;
    Ok(Origin {
        template: snapshot.template.clone(),
        disk: DiskSource::CopyOf(registry.snapshots.image(&snapshot.id)),
    })
}
