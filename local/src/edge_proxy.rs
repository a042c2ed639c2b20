//! The edge proxy: a sandbox-plane request goes, as bytes, to a port
//! inside its sandbox (envd's, the code interpreter's, or a program's),
//! over a connection the server made and envd took
//! ([`SandboxRunner::open_port`](crate::isolation::SandboxRunner::open_port)).
//! Connections are pooled per sandbox and port, so a client's calls reuse
//! them as they would E2B's.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};

use crate::http_errors::{api_error, proxy_error};
use crate::isolation::PortError;
use crate::registry::Registry;
use crate::sandbox::Sandbox;

/// Idle connections kept per sandbox and port.
const IDLE_PER_PORT: usize = 8;
/// How long an idle connection is kept. Short: a client calling often
/// keeps its connection warm, and the pool lets go of a killed sandbox's
/// only when this runs out (held 30 s, they kept the server 3 MiB above
/// its level after a churn of 400 sandboxes: local/BENCHMARKS.md).
const IDLE_TIMEOUT: Duration = Duration::from_secs(5);
/// The made-up domain of the pool's keys: `{port}.{sandbox id}.sandbox`.
const POOL_DOMAIN: &str = "sandbox";

/// Forwards requests into sandboxes.
#[derive(Clone)]
pub(crate) struct EdgeProxy {
    client: Client<Connector, Body>,
}

impl EdgeProxy {
    pub fn new(registry: Arc<Registry>) -> Self {
        let client = Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(IDLE_PER_PORT)
            .pool_idle_timeout(IDLE_TIMEOUT)
            // Without a timer the pool never drops what idles out.
            .pool_timer(hyper_util::rt::TokioTimer::new())
            .build(Connector { registry });
        Self { client }
    }

    /// Sends `req` to `port` inside `sandbox` and answers with what comes
    /// back; a 502 when nothing listens there or the sandbox does not serve.
    pub async fn forward(&self, sandbox: &Sandbox, port: u16, mut req: Request) -> Response {
        let path = req
            .uri()
            .path_and_query()
            .map(|p| p.as_str().to_string())
            .unwrap_or_else(|| "/".into());
        let uri = format!("http://{port}.{}.{POOL_DOMAIN}{path}", sandbox.id);
        let Ok(uri) = uri.parse::<http::Uri>() else {
            return api_error(http::StatusCode::BAD_REQUEST, "invalid request path");
        };
        *req.uri_mut() = uri;
        for hop in [
            http::header::CONNECTION,
            http::header::UPGRADE,
            http::header::TE,
        ] {
            req.headers_mut().remove(hop);
        }
        match self.client.request(req).await {
            Ok(resp) => resp.map(Body::new),
            Err(e) => {
                let why = port_error(&e);
                match why {
                    Some(PortError::Unavailable(why)) => {
                        proxy_error(&sandbox.id, &format!("The sandbox is not serving: {why}"))
                    }
                    _ => proxy_error(&sandbox.id, "The sandbox is running but port is not open"),
                }
            }
        }
    }
}

/// The [`PortError`] behind a client error, if that is what it was.
fn port_error(e: &hyper_util::client::legacy::Error) -> Option<&PortError> {
    let mut source = std::error::Error::source(e);
    while let Some(err) = source {
        if let Some(port) = err.downcast_ref::<PortError>() {
            return Some(port);
        }
        source = err.source();
    }
    None
}

/// Opens pooled connections: `{port}.{sandbox id}.sandbox` names where.
#[derive(Clone)]
struct Connector {
    registry: Arc<Registry>,
}

impl tower::Service<http::Uri> for Connector {
    type Response = Upstream;
    type Error = PortError;
    type Future = Pin<Box<dyn Future<Output = Result<Upstream, PortError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), PortError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        let registry = Arc::clone(&self.registry);
        Box::pin(async move {
            let host = uri.host().unwrap_or_default();
            let mut labels = host.split('.');
            let (Some(port), Some(id)) = (labels.next(), labels.next()) else {
                return Err(PortError::Unavailable(format!("no sandbox in {host}")));
            };
            let port: u16 = port
                .parse()
                .map_err(|_| PortError::Unavailable(format!("no port in {host}")))?;
            let sandbox = registry
                .get(id)
                .ok_or_else(|| PortError::Unavailable("the sandbox is gone".into()))?;
            let stream = sandbox.runner.open_port(port).await?;
            Ok(Upstream(TokioIo::new(stream)))
        })
    }
}

/// A connection into a sandbox, as the pool keeps it.
struct Upstream(TokioIo<tokio::net::UnixStream>);

impl Connection for Upstream {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

impl hyper::rt::Read for Upstream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for Upstream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}
