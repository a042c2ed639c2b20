//! The reference host of the E2B tools component, as a library: wasmtime
//! embedding, sessions, the stateless runtime, outbound policy and audit
//! trail.
//!
//! The component (`wasm32-wasip2`, world `e2b-tools` in `wit/`) holds all
//! the tool logic; this crate gives it what it needs — `wasi:http` for its
//! requests to E2B, clocks for the keep-alive heartbeat, the `E2B_*`
//! environment — and nothing else: no filesystem, no sockets, no other
//! hosts. It has no front-end of its own: the `e2b-tools` command line, the
//! MCP server and the in-process local backend are the crate `e2b-tools`
//! (library `e2b_tools_cli`), built on this one.
//!
//! # Tutorial
//!
//! 1. **Load the component once.** [`Runtime::load`] compiles it (or reads
//!    its compilation cache, an uncompressed artifact it maps) and links it; keep the `Runtime` for the
//!    life of the process.
//! 2. **Pick a backend** through the environment: with `E2B_API_KEY`
//!    sessions talk to E2B; `E2B_API_URL` and `E2B_SANDBOX_URL` name any
//!    E2B-compatible server instead, such as the local one (`e2b-tools
//!    local serve`, or `e2b_tools_cli::Backend` in-process). [`e2b_env`]
//!    keeps the `E2B_*` variables of the process.
//! 3. **Open a session.** [`Session::open`] instantiates the component in
//!    its own `Store` (memory-capped) and configures it. One session owns at
//!    most one sandbox, created by the first tool call.
//! 4. **Call tools**, typed ([`Session::run_code`], …) or by JSON
//!    ([`Session::call_json`]) as a model would.
//! 5. **Shut down** the sandbox with [`Session::shutdown`].
//!
//! ```no_run
//! use e2b_tools_host::{ComponentSource, Runtime, Session, SessionOptions};
//! use serde_json::json;
//!
//! # async fn example() -> anyhow::Result<()> {
//! let runtime = Runtime::load(ComponentSource::Embedded)?;
//! // E2B_API_KEY (and any endpoint variables) from the process.
//! let env = e2b_tools_host::e2b_env(std::env::vars());
//!
//! let session = Session::open(&runtime, SessionOptions { env, ..SessionOptions::default() }).await?;
//! let result = session.call_json("run_code", &json!({"code": "print(6 * 7)"})).await?;
//! assert_eq!(result["stdout"], "42\n");
//!
//! session.shutdown().await?;
//! # Ok(())
//! # }
//! ```
//!
//! # Failures
//!
//! A tool that could not run is a normal result (`success: false`, or a
//! [`ToolError`] from the typed calls). A [`SessionError`] means the session
//! itself failed: most importantly [`SessionError::Trapped`] when the
//! component traps (for example by growing past its memory cap, see
//! [`SessionOptions::memory_limit`]). The host survives; the session is
//! closed and later calls return [`SessionError::Dead`].
//!
//! # Outbound policy
//!
//! Every request of the component passes one hook, where the
//! [`OutboundPolicy`] allows only the configured E2B API host and sandbox
//! hosts (from `E2B_API_URL`, `E2B_SANDBOX_URL`, `E2B_DOMAIN` or the
//! config); anything else is refused with `HttpRequestDenied` and logged.
//! Allowed requests reuse pooled keep-alive connections.
//!
//! # Audit trail
//!
//! Events are `tracing` events with target [`AUDIT_TARGET`]: session
//! opened, sandbox created / resumed / shut down, each tool call's start
//! and end with duration and success, traps and denied requests. Argument
//! values and the API key are never logged.

#![deny(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

mod artifact_cache;
mod audit;
pub mod bindings;
mod clock;
mod config;
mod emitter;
mod error;
pub mod events;
mod inventory;
mod limits;
mod loader;
mod outbound;
mod policy;
mod pool;
pub mod progress;
mod proxy;
mod reaper;
mod results;
mod runtime;
mod sandboxes;
mod session;
mod state;
mod stateless;
mod typed;

pub use audit::AUDIT_TARGET;
pub use bindings::{
    BackgroundArgs, BackgroundProcess, CommandOutput, DirEntry, EntryType, ErrorKind, ForkArgs,
    ForkFailure, Forks, KeyValue, OutputOffsets, ProcessOutput, ProcessState, Readiness,
    RichResult, RunCodeArgs, RunCodeOutput, RunCommandArgs, Snapshot, StopSignal, StoppedProcess,
    ToolError, ToolSpec,
};
pub use bindings::{ListedSandbox, ListedSnapshot, NetworkRules, OnTimeout, VolumeMount};
pub use clock::ClockMode;
pub use config::SandboxConfig;
pub use error::{OptionsError, SessionError, WasmError};
pub use events::{Event, EventKind, Subscriber, Subscription};
pub use loader::{
    CompileCache, ComponentSource, RuntimeError, RuntimeOptions, EMBEDDED_COMPONENT,
    EMBEDDED_STATELESS,
};
pub use outbound::{OutboundClient, OutboundStats};
pub use policy::{OutboundPolicy, PolicyError, DEFAULT_DOMAIN};
pub use pool::{PoolError, PoolStats, StatelessPool, WarmPool, MAX_POOL_SIZE, WAITING_TIMEOUT};
pub use proxy::{check_proxy_url, Proxy, ProxyError};
pub use reaper::KILL_TIMEOUT;
pub use results::{failure_result, succeeded};
pub use runtime::Runtime;
pub use session::{e2b_env, Session, SessionOptions, DEFAULT_FUEL_PER_CALL, DEFAULT_MEMORY_LIMIT};
pub use stateless::{StatelessOptions, StatelessRuntime, StatelessTool};
