//! The second contract, between the host and the guest, not E2B's: what
//! a host that embeds the component and the component itself both rely on.
//! E2B's own wire types are the other modules of this crate; nothing here
//! is ever sent to E2B.
//!
//! - the size limits both sides enforce ([`MAX_WRITE_BYTES`],
//!   [`MAX_ARGUMENTS_BYTES`]) and their messages;
//! - cancellation ([`HEADER_FINISH_ON_CANCEL`], [`CANCELLED_BY_HOST`]);
//! - the error of a sandbox gone before a call attached to it
//!   ([`sandbox_not_found`]), which a warm pool recognises;
//! - the environment variables a host sets and the guest reads ([`mod@env`]).

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

/// The error of a call that attaches to sandbox `id` when it no longer
/// exists (the words of E2B's SDK). A host that gave a stateless call a
/// sandbox from its warm pool takes another when the answer ends with it:
/// nothing ran.
pub fn sandbox_not_found(id: &str) -> String {
    format!("Paused sandbox {id} not found")
}

/// The `E2B_TOOLS_*` environment variables a host sets and the guest
/// reads (beside E2B's own `E2B_API_KEY`, `E2B_DOMAIN`, …).
pub mod env {
    /// The sandbox template of the stateless world (default
    /// `code-interpreter-v1`).
    pub const TEMPLATE: &str = "E2B_TOOLS_TEMPLATE";
    /// The stateless world's sandbox timeout in seconds, counted from each
    /// call (default 300).
    pub const TIMEOUT: &str = "E2B_TOOLS_TIMEOUT";
    /// The stateless world's byte bound of each output field (default
    /// 10000).
    pub const MAX_OUTPUT_BYTES: &str = "E2B_TOOLS_MAX_OUTPUT_BYTES";
    /// `kill` (default) or `pause`: what a stateless sandbox does at its
    /// timeout, and what closing it does.
    pub const ON_TIMEOUT: &str = "E2B_TOOLS_ON_TIMEOUT";
    /// The enabled tools, comma-separated, when the configuration names
    /// none (both worlds).
    pub const ENABLED: &str = "E2B_TOOLS_ENABLED";
    /// The `run_code` languages the backend has, comma-separated (the
    /// reference host sets it for its local server; unset: E2B's).
    pub const LANGUAGES: &str = "E2B_TOOLS_LANGUAGES";
    /// Set (to `stdout`) by a host of the stateless world that reads its
    /// lifecycle events: the component then writes each, as it happens, to
    /// its stdout as one line `{"event": {...}}` (the embedding world
    /// reports through its `events` import instead). Unset, stdout stays
    /// silent: a marketplace may pass it on to its own stdio.
    pub const EVENTS: &str = "E2B_TOOLS_EVENTS";
}
