//! E2B sandbox tools for AI agents, as a `wasm32-wasip2` component.
//!
//! The component exports the WIT world `e2b:tools/e2b-tools`
//! (`wit/*.wit`): six tools with e2b-adk 0.1.2's result contract, their
//! catalog, and the lifecycle of the one sandbox each instance owns. It
//! talks to E2B (or any E2B-compatible server) only through `wasi:http`.
//!
//! Pure logic (truncation, argument validation, result shaping, request
//! building, stream parsing, keep-alive policy) compiles natively and is
//! unit-tested with `cargo test`; only the glue that sends requests and the
//! wit-bindgen exports are wasm-only.
//!
//! The folders are the layers; an arrow only points down:
//!
//! - [`exports`]: the WIT worlds' glue (wasm only) and the stateless
//!   world's per-call entry; uses everything below.
//! - [`tools`]: one file per tool (its spec, arguments, orchestration and
//!   result dict) and the catalog derived from them; uses session,
//!   protocol, output.
//! - [`session`]: the sandbox a session holds, keep-alive, retries and the
//!   platform seam (with its `wasi:http` implementation); uses protocol,
//!   output.
//! - [`protocol`]: E2B's control plane, envd and the code interpreter:
//!   request builders and answer parsers; uses output.
//! - [`output`]: truncation, redaction, progress lines and result dicts.
//! - [`config`] and [`errors`]: the resolved options and the failure
//!   types every layer shares.
#![deny(unsafe_code)]

pub mod config;
pub mod errors;
pub mod exports;
pub mod output;
pub mod protocol;
pub mod session;
#[cfg(test)]
mod testing;
pub mod tools;
