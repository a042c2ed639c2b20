//! E2B's wire types, written once and used by both sides: the guest
//! component (client) and the local server (`e2b-local`).
//!
//! - [`api`]: control-plane REST bodies (`/v2/sandboxes`, …).
//! - [`connect`]: the Connect protocol's envelope codec and error shapes.
//! - [`process`] and [`filesystem`]: envd's proto3-JSON messages.
//! - [`interpreter`]: the code interpreter's `/execute` request and NDJSON lines.
//! - [`envd_setup`]: how the local server starts envd inside a sandbox.
//! - [`host_guest`]: the second contract, between the host and the guest
//!   component, not E2B's (limits, cancellation, environment variables),
//!   and [`lifecycle`], the events the guest reports.
//!
//! Everything here is pure data and parsing; it compiles for
//! `wasm32-wasip2` and natively.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod api;
pub mod connect;
pub mod envd_setup;
pub mod filesystem;
pub mod host_guest;
pub mod interpreter;
pub mod lifecycle;
pub mod process;
mod proto_json;

/// envd's port inside a sandbox.
pub const ENVD_PORT: u16 = 49983;
/// The code interpreter's port inside a sandbox.
pub const INTERPRETER_PORT: u16 = 49999;
/// The envd version the local server reports and the client expects at least.
pub const ENVD_VERSION: &str = "0.6.13";
/// Routing header naming the sandbox on the shared sandbox host.
pub const HEADER_SANDBOX_ID: &str = "e2b-sandbox-id";
/// Routing header naming the port inside the sandbox.
pub const HEADER_SANDBOX_PORT: &str = "e2b-sandbox-port";
/// The envd access token header.
pub const HEADER_ACCESS_TOKEN: &str = "x-access-token";
/// The control-plane API key header.
pub const HEADER_API_KEY: &str = "x-api-key";
/// Connect's deadline header (milliseconds).
pub const HEADER_CONNECT_TIMEOUT: &str = "connect-timeout-ms";
/// envd's keepalive interval header (seconds).
pub const HEADER_KEEPALIVE_INTERVAL: &str = "keepalive-ping-interval";
/// The home directory and default working directory of user `user`.
pub const HOME_DIR: &str = "/home/user";
