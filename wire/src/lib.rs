//! E2B's wire types, written once and used by both sides: the guest
//! component (client) and the local server (`e2b-local`).
//!
//! - [`api`]: control-plane REST bodies (`/v2/sandboxes`, …).
//! - [`connect`]: the Connect protocol's envelope codec and error shapes.
//! - [`process`] and [`filesystem`]: envd's proto3-JSON messages.
//! - [`interpreter`]: the code interpreter's `/execute` request and NDJSON lines.
//! - [`envd_setup`]: how the local server starts envd inside a sandbox.
//!
//! Everything here is pure data and parsing; it compiles for
//! `wasm32-wasip2` and natively.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod api;
pub mod connect;
pub mod envd_setup;
pub mod filesystem;
pub mod interpreter;
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

/// The most `write_file` takes in one call, in bytes: 32 MiB. Sized for the
/// hosts' default 256 MiB guest memory cap, so that a write never ends the
/// instance (the content, the JSON it came in and the request can be in
/// memory at once). Guest and host both refuse more, the host before it
/// copies anything into the guest.
pub const MAX_WRITE_BYTES: usize = 32 << 20;

/// A request header the component sets on requests that must run to their
/// end even when the host cancels the call (creating, connecting to and
/// killing a sandbox, stopping a process): cutting them could leave a
/// sandbox or a process behind. The host removes it before sending.
pub const HEADER_FINISH_ON_CANCEL: &str = "x-e2b-tools-finish";

/// The text of the `wasi:http` error (`internal-error`) with which the host
/// fails a cancelled call's requests, so the component can tell a
/// cancellation from a broken connection.
pub const CANCELLED_BY_HOST: &str = "e2b-tools: the call was cancelled by the host";

/// The most JSON a `call-tool` takes, in bytes: room for the largest
/// `write_file` content escaped.
pub const MAX_ARGUMENTS_BYTES: usize = 2 * MAX_WRITE_BYTES;

const SPLIT_ADVICE: &str =
    "Write large files in parts (append with run_command), or generate them inside the sandbox.";

/// The error for `write_file` content of `len` bytes, over [`MAX_WRITE_BYTES`].
pub fn write_too_large(len: usize) -> String {
    format!(
        "Failed to write file: the content is {len} bytes; write_file takes at most {MAX_WRITE_BYTES} bytes ({} MiB) per call. {SPLIT_ADVICE}",
        MAX_WRITE_BYTES >> 20
    )
}

/// The error for `len` bytes of arguments, over [`MAX_ARGUMENTS_BYTES`].
pub fn arguments_too_large(len: usize) -> String {
    format!(
        "Invalid arguments: {len} bytes of JSON; a tool call takes at most {MAX_ARGUMENTS_BYTES} bytes ({} MiB), and write_file at most {MAX_WRITE_BYTES} bytes of content. {SPLIT_ADVICE}",
        MAX_ARGUMENTS_BYTES >> 20
    )
}
