//! Why an MCP server could not start or stopped.

use e2b_tools_host::SessionError;

/// Why the MCP server stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The session failed while reading the catalog.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// A tool's parameters schema from the component is not a JSON object.
    #[error("the schema of tool {tool} is not a JSON object: {reason}")]
    BadSchema {
        /// The tool.
        tool: String,
        /// What is wrong.
        reason: String,
    },
    /// The MCP transport failed.
    #[error("MCP transport: {0}")]
    Transport(String),
}
