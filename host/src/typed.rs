//! The typed tools of a [`Session`]: one method per function of the WIT
//! `tools` interface, each through `Session::typed_call` (the lock, the
//! events, a trap settled).

use crate::bindings::{
    BackgroundArgs, BackgroundProcess, CommandOutput, DirEntry, ForkArgs, Forks, OutputOffsets,
    ProcessOutput, RunCodeArgs, RunCodeOutput, RunCommandArgs, Snapshot, StopSignal,
    StoppedProcess, ToolError,
};
use crate::error::SessionError;
use crate::session::Session;

impl Session {
    /// Runs code in the sandbox's stateful kernel.
    pub async fn run_code(
        &self,
        args: &RunCodeArgs,
    ) -> Result<Result<RunCodeOutput, ToolError>, SessionError> {
        self.typed_call("run_code", async |tools, store| {
            tools.call_run_code(store, args).await
        })
        .await
    }

    /// Runs a shell command and waits for it.
    pub async fn run_command(
        &self,
        args: &RunCommandArgs,
    ) -> Result<Result<CommandOutput, ToolError>, SessionError> {
        self.typed_call("run_command", async |tools, store| {
            tools.call_run_command(store, args).await
        })
        .await
    }

    /// Writes a text file, creating parent directories.
    pub async fn write_file(
        &self,
        path: &str,
        content: &str,
    ) -> Result<Result<(), ToolError>, SessionError> {
        // As the guest would, but before the content is copied into it.
        if content.len() > e2b_wire::host_guest::MAX_WRITE_BYTES {
            return Ok(Err(ToolError {
                kind: crate::ErrorKind::InvalidArgument,
                message: e2b_wire::host_guest::write_too_large(content.len()),
                partial_output: String::new(),
                path: Some(path.to_string()),
                command: None,
            }));
        }
        self.typed_call("write_file", async |tools, store| {
            tools.call_write_file(store, path, content).await
        })
        .await
    }

    /// Reads a text file.
    pub async fn read_file(&self, path: &str) -> Result<Result<String, ToolError>, SessionError> {
        self.typed_call("read_file", async |tools, store| {
            tools.call_read_file(store, path).await
        })
        .await
    }

    /// Lists a directory one level deep (default: the home directory).
    pub async fn list_files(
        &self,
        path: Option<&str>,
    ) -> Result<Result<Vec<DirEntry>, ToolError>, SessionError> {
        self.typed_call("list_files", async |tools, store| {
            tools.call_list_files(store, path).await
        })
        .await
    }

    /// Starts a long-running command.
    pub async fn start_background_command(
        &self,
        args: &BackgroundArgs,
    ) -> Result<Result<BackgroundProcess, ToolError>, SessionError> {
        self.typed_call("start_background_command", async |tools, store| {
            tools.call_start_background_command(store, args).await
        })
        .await
    }

    /// What a background process printed from `since`, and its state
    /// (opt-in: `config.tools` must enable it).
    pub async fn get_background_output(
        &self,
        pid: u32,
        since: Option<OutputOffsets>,
    ) -> Result<Result<ProcessOutput, ToolError>, SessionError> {
        self.typed_call("get_background_output", async |tools, store| {
            tools.call_get_background_output(store, pid, since).await
        })
        .await
    }

    /// Stops a background process and what it started (opt-in).
    pub async fn stop_background_command(
        &self,
        pid: u32,
        signal: Option<StopSignal>,
    ) -> Result<Result<StoppedProcess, ToolError>, SessionError> {
        self.typed_call("stop_background_command", async |tools, store| {
            tools.call_stop_background_command(store, pid, signal).await
        })
        .await
    }

    /// Saves the sandbox's state as a snapshot that outlives it (opt-in:
    /// `config.tools` must enable `create_snapshot`).
    pub async fn create_snapshot(
        &self,
        name: Option<&str>,
    ) -> Result<Result<Snapshot, ToolError>, SessionError> {
        self.typed_call("create_snapshot", async |tools, store| {
            tools.call_create_snapshot(store, name).await
        })
        .await
    }

    /// Branches the sandbox into new ones, killed with the session unless
    /// `keep` (opt-in: `config.tools` must enable `fork_sandbox`).
    pub async fn fork_sandbox(
        &self,
        args: ForkArgs,
    ) -> Result<Result<Forks, ToolError>, SessionError> {
        self.typed_call("fork_sandbox", async |tools, store| {
            tools.call_fork_sandbox(store, args).await
        })
        .await
    }
}
