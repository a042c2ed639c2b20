//! Tests of the library's own responsibilities, through the real component
//! (embedded by build.rs): the memory cap, the outbound allow-list and the
//! connection pool. The tests that need a sandbox (the local backend) and
//! those of the CLI and MCP are the `e2b-tools` crate's (`cli/tests`).

mod limits;
mod pool;
