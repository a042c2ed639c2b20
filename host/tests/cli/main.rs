//! Tests of the host's own responsibilities, through the real component
//! (embedded by build.rs) and the real local server: the CLI subcommands,
//! the backend default, the outbound allow-list, the memory cap and MCP
//! with the official Python client. One test binary keeps link time down.

mod binary;
mod calls;
mod catalog;
mod clock;
mod flags;
mod limits;
mod mcp;
mod pool;
mod production;
mod session;
mod stateless;
