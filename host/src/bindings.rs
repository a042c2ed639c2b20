//! Rust bindings generated from `wit/` — the same WIT the guest implements,
//! so the contract has one source of truth.
//!
//! Exports are `async` because the host runs wasmtime with async support:
//! a guest waiting on HTTP or a timer yields to tokio instead of blocking a
//! thread.

#[allow(missing_docs)]
mod generated {
    wasmtime::component::bindgen!({
        // host/wit links to the workspace's wit/, so a packaged crate ships it.
        path: "wit",
        world: "e2b-tools",
        exports: { default: async },
    });
}

pub use generated::*;

pub use exports::e2b::tools::catalog::ToolSpec;
pub use exports::e2b::tools::lifecycle::{Config, NetworkRules, OnTimeout, VolumeMount};
// `Config` is public as `SandboxConfig` (crate::config), its one name for hosts.
pub use exports::e2b::tools::sandboxes::{ListedSandbox, ListedSnapshot};
pub use exports::e2b::tools::tools::{
    BackgroundArgs, BackgroundProcess, CommandOutput, DirEntry, EntryType, ForkArgs, ForkFailure,
    Forks, OutputOffsets, ProcessOutput, ProcessState, Readiness, RichResult, RunCodeArgs,
    RunCodeOutput, RunCommandArgs, Snapshot, StopSignal, StoppedProcess,
};
pub use exports::e2b::tools::types::{ErrorKind, KeyValue, ToolError};
