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
#![deny(unsafe_code)]

pub mod api;
pub mod args;
pub mod background;
pub mod base64_sink;
pub mod catalog;
pub mod config;
pub mod envd;
pub mod errors;
#[cfg(target_arch = "wasm32")]
pub mod http;
pub mod interpreter;
pub mod long_line;
pub mod platform;
pub mod progress;
pub mod redact;
pub mod request;
pub mod results;
pub mod retry;
pub mod session;
pub mod stateless;
#[cfg(test)]
mod testing;
pub mod tools;
pub mod truncate;

// One component per build: the embedding world by default, the stateless
// world with `--features stateless`.
#[cfg(all(target_arch = "wasm32", not(feature = "stateless")))]
mod exports;
#[cfg(all(target_arch = "wasm32", feature = "stateless"))]
mod stateless_exports;
