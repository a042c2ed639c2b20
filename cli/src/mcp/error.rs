//! Why an MCP server could not start or stopped.

use e2b_tools_host::{PoolError, RuntimeError, SessionError};

/// Why the MCP server stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The session failed while reading the catalog.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// A tool's parameters schema from the component is not a JSON object.
    #[error("the schema of tool {tool} is not a JSON object: {source}")]
    BadSchema {
        /// The tool.
        tool: String,
        /// What is wrong.
        source: serde_json::Error,
    },
    /// The MCP transport failed.
    #[error("MCP transport: {0}")]
    Transport(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The HTTP server could not listen.
    #[error("MCP transport: bind {addr}: {source}")]
    Bind {
        /// The address.
        addr: std::net::SocketAddr,
        /// Why not.
        source: std::io::Error,
    },
    /// The warm pool could not start (its size).
    #[error(transparent)]
    Pool(#[from] PoolError),
    /// The stateless component (for clients of the stateless revision)
    /// did not load.
    #[error("MCP transport: loading the stateless component: {0}")]
    Stateless(#[source] RuntimeError),
}

impl McpError {
    /// A transport failure of rmcp, tokio or axum.
    pub(crate) fn transport(err: impl std::error::Error + Send + Sync + 'static) -> Self {
        McpError::Transport(Box::new(err))
    }
}
