//! The tools as an MCP server (rmcp), one
//! [`Session`](e2b_tools_host::Session) per connection.
//!
//! The catalog comes from the component (`catalog.list-tools`): names,
//! titles, descriptions, input and output JSON Schemas and behaviour hints
//! (MCP tool annotations) are served as they are, and calls go through
//! `catalog.call-tool`, so the MCP tools behave exactly as the JSON tools a
//! model gets elsewhere. A result is the result object twice, as MCP asks:
//! `structuredContent` (matching the tool's `outputSchema`) and a text
//! block holding it as JSON; images produced by `run_code` with rich
//! results become MCP image blocks. `success: false` sets `isError`.
//!
//! The server's pieces, each in its own module and none importing the
//! transports: [`Catalog`] and [`StatelessTools`] (what is listed), the
//! handler [`McpServer`] (`server.rs`), result conversion
//! ([`tool_result`]), then the transports on top: stdio
//! ([`McpServer::serve_stdio`], `stdio.rs`) and streamable HTTP
//! ([`http`], with `batch.rs` for the batches of revision 2025-03-26).
//!
//! ```no_run
//! # async fn example(runtime: e2b_tools_host::Runtime) -> anyhow::Result<()> {
//! use e2b_tools_cli::mcp::McpServer;
//! use e2b_tools_host::{Session, SessionOptions};
//! let session = Session::open(&runtime, SessionOptions::default()).await?;
//! McpServer::new(session).await?.serve_stdio().await?;
//! # Ok(())
//! # }
//! ```

mod batch;
mod catalog;
mod content;
mod error;
pub mod http;
mod server;
mod stdio;

pub use catalog::{Catalog, StatelessTools};
pub use content::tool_result;
pub use error::McpError;
pub use server::{McpServer, SessionOpener};
