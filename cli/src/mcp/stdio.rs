//! MCP over stdio (or any byte transport): one connection, one session.

use super::error::McpError;
use super::server::McpServer;
use rmcp::ServiceExt;

/// How long the end of a connection may take to kill its sandboxes (half
/// of it waiting for a call still running to be cancelled).
const KILL_WITHIN: std::time::Duration = std::time::Duration::from_secs(4);

impl McpServer {
    /// Serves MCP on stdin/stdout until the client closes the connection,
    /// then kills the sandboxes the session owns.
    pub async fn serve_stdio(self) -> Result<(), McpError> {
        self.serve_stdio_until(std::future::pending()).await
    }

    /// [`McpServer::serve_stdio`], or until `stop` resolves (a stop
    /// signal): then the call running is cancelled and the session's
    /// sandboxes are killed all the same.
    pub async fn serve_stdio_until(
        self,
        stop: impl std::future::Future<Output = ()>,
    ) -> Result<(), McpError> {
        self.serve_until(rmcp::transport::stdio(), stop).await
    }

    /// Serves MCP on any byte transport (for example an in-memory duplex in
    /// tests) until it closes, then kills the sandboxes the session owns.
    pub async fn serve<R, W>(self, transport: (R, W)) -> Result<(), McpError>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        self.serve_until(transport, std::future::pending()).await
    }

    /// Serves until the transport closes or `stop` resolves; either way
    /// the session's sandboxes are killed (with `kill_attached_on_exit`,
    /// the one it attached to too).
    pub async fn serve_until<R, W>(
        self,
        (reader, writer): (R, W),
        stop: impl std::future::Future<Output = ()>,
    ) -> Result<(), McpError>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let slot = self.session.clone();
        let kill_attached = self.kill_attached;
        // The client closing its end means it went away: rmcp would wait
        // for the calls under way (a long one for minutes) before it ends.
        let (reader, closed) = EndOfInput::new(reader);
        let served = async {
            let running = ServiceExt::serve(self, (reader, writer))
                .await
                .map_err(McpError::transport)?;
            // Dropping it (at a stop) cancels the service and the calls
            // it runs.
            running.waiting().await.map_err(McpError::transport)?;
            Ok::<(), McpError>(())
        };
        let served = tokio::select! {
            served = served => served,
            () = stop => Ok(()),
            () = closed.notified() => Ok(()),
        };
        if let Some(session) = slot.cell.get() {
            if kill_attached {
                // A failure is an error event in the library's audit trail.
                let _ = session.shutdown().await;
            }
            session.kill_owned(KILL_WITHIN).await;
        }
        served
    }
}

/// A reader that tells when its input ended (or failed).
struct EndOfInput<R> {
    inner: R,
    ended: std::sync::Arc<tokio::sync::Notify>,
}

impl<R> EndOfInput<R> {
    fn new(inner: R) -> (Self, std::sync::Arc<tokio::sync::Notify>) {
        let ended = std::sync::Arc::new(tokio::sync::Notify::new());
        let reader = Self {
            inner,
            ended: ended.clone(),
        };
        (reader, ended)
    }
}

impl<R: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for EndOfInput<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let room = buf.remaining() > 0;
        let polled = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        let ended = match &polled {
            std::task::Poll::Ready(Ok(())) => room && buf.filled().len() == before,
            std::task::Poll::Ready(Err(_)) => true,
            std::task::Poll::Pending => false,
        };
        if ended {
            // `notify_one` keeps the permit if nobody waits yet.
            self.ended.notify_one();
        }
        polled
    }
}
