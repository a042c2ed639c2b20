//! Tests of the front-ends, through the real component (embedded by the
//! host's build.rs) and the real local server: the CLI subcommands, the
//! backend default, sessions on the local backend, the scaled clock, the
//! production path and MCP with the official Python and TypeScript
//! clients. One test binary keeps link time down.

mod binary;
mod calls;
mod catalog;
mod clock;
mod flags;
mod inventory;
mod mcp;
mod mistakes;
mod production;
mod session;
mod signals;
mod stateless;
