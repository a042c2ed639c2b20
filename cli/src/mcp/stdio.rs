//! MCP over stdio (or any byte transport): one connection, one session.

use super::error::McpError;
use super::server::McpServer;
use rmcp::ServiceExt;

impl McpServer {
    /// Serves MCP on stdin/stdout until the client closes the connection,
    /// then shuts the sandbox down.
    pub async fn serve_stdio(self) -> Result<(), McpError> {
        self.serve(rmcp::transport::stdio()).await
    }

    /// Serves MCP on any byte transport (for example an in-memory duplex in
    /// tests) until it closes, then shuts the sandbox down.
    pub async fn serve<R, W>(self, (reader, writer): (R, W)) -> Result<(), McpError>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let slot = self.session.clone();
        let served = async {
            let running = ServiceExt::serve(self, (reader, writer))
                .await
                .map_err(McpError::transport)?;
            running.waiting().await.map_err(McpError::transport)?;
            Ok::<(), McpError>(())
        }
        .await;
        if let Some(session) = slot.cell.get() {
            // A failure is an error event in the library's audit trail.
            let _ = session.shutdown().await;
        }
        served
    }
}
