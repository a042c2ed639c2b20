//! End to end: the real component, in the real host library, against the real
//! local server. One test binary (each links wasmtime, so fewer is faster).
//!
//! - `parity`: `call-tool` gives e2b-adk 0.1.2's dicts for the same calls,
//!   with e2b-adk itself run against the same server.
//! - `background`: background process control and tool selection.
//! - `tools`: every tool's success and failure paths, typed and by JSON.
//! - `lifecycle`: lazy creation, keep-alive on a scaled clock, expiry,
//!   resume, shutdown.
//! - `events`: lifecycle events in order, bad subscribers, the per-call
//!   span, the sandbox of a dropped session or runtime killed.
//! - `faults`: server faults injected through the local server's handle.
//! - `matrix`: the remaining fault-matrix cells, one test each.
//! - `shutdown`: a refused kill retried, shutdown during the creating call.
//! - `security`: the allow-list, secrets, the memory cap, server auth and
//!   sandbox isolation.
//! - `soak`: 2,000 sequential calls and 50 concurrent sessions.
//! - `snapshots`: snapshots and forks, addressed by id in both worlds.
//! - `stateless`: the stateless component, a fresh instance per call: state
//!   as the sandbox id, no sandbox left behind.
//! - `wassette`: the stateless component in the real wassette 0.8.
//! - `warm_pool`: sessions with their sandboxes made ahead.

mod background;
mod events;
mod faults;
mod harness;
mod lifecycle;
mod matrix;
mod parity;
mod security;
mod shutdown;
mod snapshots;
mod soak;
mod stateless;
mod tools;
mod warm_pool;
mod wassette;
