//! The one listener's front door, playing E2B's edge: a request with
//! `E2b-Sandbox-Id` + `E2b-Sandbox-Port` headers (or a `{port}-{id}.…`
//! Host) is checked (the sandbox's access token, or a signed `/files`
//! URL) and forwarded into that sandbox by the [`EdgeProxy`], anything
//! else goes to the control plane. Request counting and fault injection
//! wrap both.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use axum::Router;
use e2b_wire::{
    ENVD_PORT, HEADER_ACCESS_TOKEN, HEADER_SANDBOX_ID, HEADER_SANDBOX_PORT, INTERPRETER_PORT,
};
use http::{Method, StatusCode};
use tower::ServiceExt;

use crate::control_plane;
use crate::edge_proxy::EdgeProxy;
#[cfg(feature = "faults")]
use crate::faults::{self, Faults};
use crate::http_errors::{api_error, sandbox_not_found};
use crate::registry::Registry;
use crate::sandbox::{Sandbox, State as LifeState};
use crate::signature;

#[derive(Clone)]
struct Front {
    registry: Arc<Registry>,
    control: Router,
    proxy: EdgeProxy,
}

/// The whole server as one router.
pub(crate) fn app(
    registry: Arc<Registry>,
    #[cfg(feature = "faults")] faults: Faults,
    api_key: String,
    time_scale: f64,
) -> Router {
    let front = Front {
        control: control_plane::router(Arc::clone(&registry), api_key, time_scale),
        proxy: EdgeProxy::new(Arc::clone(&registry)),
        registry: Arc::clone(&registry),
    };
    let router = Router::new().fallback(route).with_state(front);
    // Test hooks, only in a server built for tests.
    #[cfg(feature = "faults")]
    let router = router.layer(axum::middleware::from_fn_with_state(faults, faults::apply));
    router.layer(axum::middleware::from_fn_with_state(registry, count))
}

async fn count(State(registry): State<Arc<Registry>>, req: Request, next: Next) -> Response {
    registry
        .counters
        .request(req.method().as_str(), req.uri().path());
    let (parts, body) = req.into_parts();
    registry.counters.record(&parts);
    next.run(Request::from_parts(parts, body)).await
}

/// Where a sandbox-plane request goes.
#[derive(Debug, PartialEq, Eq)]
struct Target {
    sandbox_id: String,
    port: u16,
}

/// The routing headers (both present), else a `{port}-{id}.…` Host.
fn target(req: &Request) -> Result<Option<Target>, String> {
    let h = req.headers();
    let id = h.get(HEADER_SANDBOX_ID).and_then(|v| v.to_str().ok());
    let port = h.get(HEADER_SANDBOX_PORT).and_then(|v| v.to_str().ok());
    match (id, port) {
        (Some(id), Some(port)) => {
            let port = port
                .trim()
                .parse()
                .map_err(|_| format!("Invalid header: E2b-Sandbox-Port '{port}'"))?;
            return Ok(Some(Target {
                sandbox_id: id.trim().to_string(),
                port,
            }));
        }
        (Some(_), None) => return Err("Missing header: E2b-Sandbox-Port".into()),
        (None, Some(_)) => return Err("Missing header: E2b-Sandbox-Id".into()),
        (None, None) => {}
    }
    let host = h
        .get(http::header::HOST)
        .and_then(|v| v.to_str().ok())
        .or_else(|| req.uri().host())
        .unwrap_or("");
    Ok(host_target(host))
}

/// Parses `{port}-{id}.{domain}`.
fn host_target(host: &str) -> Option<Target> {
    let label = host.split('.').next()?;
    if label.len() == host.len() {
        return None;
    }
    let (port, id) = label.split_once('-')?;
    let port: u16 = port.parse().ok()?;
    if id.is_empty()
        || !id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    {
        return None;
    }
    Some(Target {
        sandbox_id: id.to_string(),
        port,
    })
}

async fn route(State(front): State<Front>, req: Request) -> Response {
    match target(&req) {
        Ok(Some(t)) => sandbox_plane(&front, t, req).await,
        Ok(None) if req.uri().path() == "/files" && signature::is_signed(req.uri().query()) => {
            signed_on_shared_host(&front, req).await
        }
        Ok(None) => match front.control.oneshot(req).await {
            Ok(resp) => resp,
            Err(never) => match never {},
        },
        Err(msg) => api_error(StatusCode::BAD_REQUEST, msg),
    }
}

/// A signed `/files` URL on the shared host (the SDKs' `download_url` and
/// `upload_url` with `E2B_SANDBOX_URL` set) names no sandbox: the sandbox
/// is the one whose access token made the signature.
async fn signed_on_shared_host(front: &Front, req: Request) -> Response {
    let signer = front.registry.all().into_iter().find(|sandbox| {
        signature::verify(req.method(), req.uri().query(), &sandbox.access_token)
            != signature::Signed::Invalid
    });
    match signer {
        Some(sandbox) => {
            let t = Target {
                sandbox_id: sandbox.id.clone(),
                port: ENVD_PORT,
            };
            sandbox_plane(front, t, req).await
        }
        None => envd_unauthorized(),
    }
}

async fn sandbox_plane(front: &Front, t: Target, mut req: Request) -> Response {
    let Some(sandbox) = front.registry.get(&t.sandbox_id) else {
        return sandbox_not_found(&t.sandbox_id);
    };
    if sandbox.state() == LifeState::Paused {
        // A paused sandbox is unreachable unless it resumes on traffic.
        if !sandbox.auto_resume() {
            return sandbox_not_found(&t.sandbox_id);
        }
        let _turn = sandbox.turn().await;
        front.registry.resume(&sandbox, resume_timeout(&sandbox));
    }
    let authorized = match t.port {
        ENVD_PORT => {
            let path = req.uri().path();
            let public = req.method() == Method::GET && path == "/health";
            let signed = if path == "/files" && req.headers().get(HEADER_ACCESS_TOKEN).is_none() {
                signature::verify(req.method(), req.uri().query(), &sandbox.access_token)
            } else {
                signature::Signed::Absent
            };
            if signed == signature::Signed::Expired {
                return api_error(StatusCode::UNAUTHORIZED, "signature is already expired");
            }
            public || signed == signature::Signed::Valid || token_ok(&sandbox, &req, true)
        }
        // The SDK sends the token only on /execute; check it where given.
        INTERPRETER_PORT => {
            let required = req.uri().path() == e2b_wire::interpreter::EXECUTE_PATH;
            token_ok(&sandbox, &req, required)
        }
        // A program's own server: its clients are its business, as on E2B.
        port => return front.proxy.forward(&sandbox, port, req).await,
    };
    if !authorized {
        return envd_unauthorized();
    }
    // The token stays at the edge: nothing inside the sandbox needs it.
    req.headers_mut().remove(HEADER_ACCESS_TOKEN);
    let gone = sandbox.gone();
    cut_when_gone(front.proxy.forward(&sandbox, t.port, req).await, gone)
}

/// Cuts a response body still streaming when its sandbox pauses or dies,
/// the way E2B's proxy loses the connection to a sandbox that went away.
///
/// A body already complete in memory passes through as it is: there is
/// nothing left to cut, and it keeps its `content-length`.
fn cut_when_gone(resp: Response, gone: tokio::sync::watch::Receiver<bool>) -> Response {
    use axum::body::HttpBody;
    use futures_util::StreamExt;
    if resp.body().size_hint().exact().is_some() {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    let inner = body.into_data_stream();
    let stream = futures_util::stream::unfold(Some((inner, gone)), |state| async move {
        let (mut inner, mut gone) = state?;
        // None: the sandbox went away first.
        let next = tokio::select! {
            biased;
            _ = gone.wait_for(|g| *g) => None,
            item = inner.next() => Some(item),
        };
        match next {
            Some(item) => {
                let item = item?.map_err(std::io::Error::other);
                Some((item, Some((inner, gone))))
            }
            None => {
                let err =
                    std::io::Error::new(std::io::ErrorKind::ConnectionReset, "the sandbox is gone");
                Some((Err(err), None))
            }
        }
    });
    Response::from_parts(parts, axum::body::Body::from_stream(stream))
}

fn resume_timeout(sandbox: &Sandbox) -> u64 {
    sandbox
        .request
        .timeout
        .filter(|t| *t > 0)
        .map(|t| t as u64)
        .unwrap_or(u64::from(e2b_wire::api::DEFAULT_TIMEOUT_V2))
}

/// The token matches; an absent token passes only when not `required`.
fn token_ok(sandbox: &Sandbox, req: &Request, required: bool) -> bool {
    match req.headers().get(HEADER_ACCESS_TOKEN) {
        Some(v) => signature::constant_time_eq(v.as_bytes(), sandbox.access_token.as_bytes()),
        None => !required,
    }
}

fn envd_unauthorized() -> Response {
    api_error(
        StatusCode::UNAUTHORIZED,
        "unauthorized access, please provide a valid access token or method signing if supported",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_routing() {
        assert_eq!(
            host_target("49983-abc123.localhost:8080"),
            Some(Target {
                sandbox_id: "abc123".into(),
                port: 49983
            })
        );
        assert_eq!(host_target("127.0.0.1:8080"), None);
        assert_eq!(host_target("localhost"), None);
        assert_eq!(host_target("api.e2b.app"), None);
    }
}
