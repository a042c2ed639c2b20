//! [`Session`]: one component instance, owning at most one sandbox.

use crate::audit;
use crate::bindings::{
    BackgroundArgs, BackgroundProcess, CommandOutput, DirEntry, E2bTools, ForkArgs, Forks,
    OutputOffsets, ProcessOutput, RunCodeArgs, RunCodeOutput, RunCommandArgs, Snapshot, StopSignal,
    StoppedProcess, ToolError, ToolSpec,
};
use crate::clock::{ClockMode, SessionClock};
use crate::config::SandboxConfig;
use crate::error::{OptionsError, SessionError, WasmError};
use crate::limits::MemoryLimiter;
use crate::outbound::OutboundHooks;
use crate::policy::{OutboundPolicy, PolicyError};
use crate::results::{failure_result, succeeded, Outcome};
use crate::runtime::Runtime;
use crate::state::SessionState;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::{Mutex, MutexGuard};
use wasmtime::{Store, StoreLimitsBuilder};

/// Default cap on a session's linear memory: 256 MiB.
pub const DEFAULT_MEMORY_LIMIT: usize = 256 << 20;

/// Default CPU budget of one call, in wasmtime fuel units (about one per
/// wasm instruction): minutes of CPU, far more than the guest spends even on
/// gigabytes of output, so only a runaway guest meets it.
pub const DEFAULT_FUEL_PER_CALL: u64 = 500_000_000_000;

/// Fuel between two yields of a running guest to the async executor, so a
/// busy guest cannot hold a worker thread that other sessions need.
const FUEL_YIELD_INTERVAL: u64 = 10_000_000;

/// Options of [`Session::open`].
#[derive(Debug, Clone)]
pub struct SessionOptions {
    /// The sandbox configuration handed to the component's `configure`.
    pub config: SandboxConfig,
    /// The component's environment. Only `E2B_*` variables are passed on;
    /// others are dropped.
    pub env: BTreeMap<String, String>,
    /// Cap on the component's linear memory in bytes; growing past it traps
    /// the instance (the host survives).
    pub memory_limit: usize,
    /// The guest's monotonic clock.
    pub clock: ClockMode,
    /// CPU budget of each call (and of opening the session), in wasmtime
    /// fuel units; spending it traps the instance (the host survives).
    pub fuel_per_call: u64,
    /// The outbound allow-list. `None` (the default) derives it from the
    /// config and `env`: the E2B API host and the sandbox hosts.
    pub policy: Option<OutboundPolicy>,
}

impl Default for SessionOptions {
    fn default() -> Self {
        Self {
            config: SandboxConfig::default(),
            env: BTreeMap::new(),
            memory_limit: DEFAULT_MEMORY_LIMIT,
            clock: ClockMode::Real,
            fuel_per_call: DEFAULT_FUEL_PER_CALL,
            policy: None,
        }
    }
}

impl SessionOptions {
    /// Options whose environment is the `E2B_*` variables of this process.
    pub fn from_process_env(config: SandboxConfig) -> Self {
        Self {
            config,
            env: e2b_env(std::env::vars()),
            ..Self::default()
        }
    }
}

/// Keeps the `E2B_*` variables of `vars`.
pub fn e2b_env(vars: impl IntoIterator<Item = (String, String)>) -> BTreeMap<String, String> {
    vars.into_iter()
        .filter(|(key, _)| key.starts_with("E2B_"))
        .collect()
}

static NEXT_SESSION_ID: AtomicU64 = AtomicU64::new(1);

/// One component instance (one `Store`) and the sandbox it owns.
///
/// Calls are serialized: a call made while another runs waits its turn.
/// Call [`Session::shutdown`] when done; dropping a session does not kill
/// its sandbox (E2B kills it at its timeout).
pub struct Session {
    id: u64,
    instance: Mutex<GuestInstance>,
    progress: tokio::sync::watch::Receiver<crate::progress::Progress>,
    cancel: Arc<crate::outbound::CallCancel>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// One instantiated component in its store, and what the host knows of it.
struct GuestInstance {
    store: Store<SessionState>,
    bindings: E2bTools,
    /// The sandbox the component reported after the last call.
    sandbox_id: Option<String>,
    /// Whether the configuration asked to resume a given sandbox.
    resume_id: Option<String>,
    /// Set when the instance trapped: the trap.
    dead: Option<WasmError>,
    /// The CPU budget each call starts with.
    fuel_per_call: u64,
}

impl Session {
    /// Instantiates the component and configures it. Contacts nobody: the
    /// sandbox is created by the first tool call.
    pub async fn open(runtime: &Runtime, options: SessionOptions) -> Result<Session, SessionError> {
        if !options.clock.is_valid() {
            return Err(OptionsError::ClockScale(options.clock.scale()).into());
        }
        let id = NEXT_SESSION_ID.fetch_add(1, Ordering::Relaxed);
        let env = e2b_env(options.env);
        let config = &options.config;
        let policy = match options.policy {
            Some(policy) => policy,
            None => policy_for(config, &env)?,
        };
        audit::session_opened(id, &policy);
        let (mut store, progress) = new_store(
            runtime.pre().engine(),
            runtime.client(),
            &env,
            policy,
            options.memory_limit,
            options.clock,
            options.fuel_per_call,
        )?;

        let bindings = runtime
            .pre()
            .instantiate_async(&mut store)
            .await
            .map_err(|err| SessionError::Instantiate(WasmError::new(err)))?;
        bindings
            .e2b_tools_lifecycle()
            .call_configure(&mut store, config)
            .await
            .map_err(|err| SessionError::Trapped(WasmError::new(err)))?
            .map_err(SessionError::Configure)?;

        let cancel = store.data().cancel.clone();
        Ok(Session {
            id,
            progress,
            cancel,
            instance: Mutex::new(GuestInstance {
                store,
                bindings,
                sandbox_id: None,
                resume_id: config.sandbox_id.clone(),
                dead: None,
                fuel_per_call: options.fuel_per_call,
            }),
        })
    }

    /// This session's number in the audit trail.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Cancels the call running now, from outside it: the component stops
    /// the work in the sandbox (kills the command's process, interrupts the
    /// code) and the call returns promptly with kind `cancelled`; the
    /// session stays usable. Does nothing between calls.
    pub fn cancel_current_call(&self) {
        self.cancel.cancel();
    }

    /// The latest progress the component reported (with `config.progress`
    /// on): watch it while a call runs.
    pub fn progress(&self) -> tokio::sync::watch::Receiver<crate::progress::Progress> {
        self.progress.clone()
    }

    /// Bytes of linear memory the component instance holds. Wasm memories
    /// never shrink, so this is also the most it has held; compare it with
    /// [`SessionOptions::memory_limit`]. Waits for a running call to end.
    pub async fn linear_memory_bytes(&self) -> usize {
        self.instance
            .lock()
            .await
            .store
            .data()
            .limits
            .linear_memory_bytes()
    }

    /// The tools (names, descriptions, JSON Schemas of their arguments).
    pub async fn list_tools(&self) -> Result<Vec<ToolSpec>, SessionError> {
        let mut guard = self.lock_alive().await?;
        let inst = &mut *guard;
        let result = inst
            .bindings
            .e2b_tools_catalog()
            .call_list_tools(&mut inst.store)
            .await;
        inst.settle(self.id, result)
    }

    /// A system-prompt fragment describing the tools and the sandbox.
    pub async fn instructions(&self) -> Result<String, SessionError> {
        let mut guard = self.lock_alive().await?;
        let inst = &mut *guard;
        let result = inst
            .bindings
            .e2b_tools_catalog()
            .call_instructions(&mut inst.store)
            .await;
        inst.settle(self.id, result)
    }

    /// The ID of this session's sandbox, if one is open.
    pub async fn sandbox_id(&self) -> Result<Option<String>, SessionError> {
        let mut guard = self.lock_alive().await?;
        let inst = &mut *guard;
        let result = inst
            .bindings
            .e2b_tools_lifecycle()
            .call_sandbox_id(&mut inst.store)
            .await;
        inst.settle(self.id, result)
    }

    /// Calls a tool by name with a JSON object of arguments and returns its
    /// result object as e2b-adk returns it (`success` plus fields, or
    /// `success: false` with `error`). An unknown tool or bad arguments is a
    /// `success: false` result, not an `Err`: the component checks the name.
    pub async fn call_json(
        &self,
        tool: &str,
        args: &serde_json::Value,
    ) -> Result<serde_json::Value, SessionError> {
        let args_json = args.to_string();
        if let Some(refusal) = refuse_large_arguments(&args_json) {
            return Ok(refusal);
        }
        // Parsed once: the audit trail reads `success` from the same value.
        self.call_tool(tool, &args_json, |text| {
            let result: serde_json::Value = serde_json::from_str(&text)?;
            let success = succeeded(&result);
            Ok((result, success))
        })
        .await
    }

    /// Like [`Session::call_json`], with the arguments and the result as JSON
    /// text, exactly as the component's `call-tool` takes and returns them
    /// (arguments that are not valid JSON give a `success: false` result).
    pub async fn call_text(&self, tool: &str, args_json: &str) -> Result<String, SessionError> {
        if let Some(refusal) = refuse_large_arguments(args_json) {
            return Ok(refusal.to_string());
        }
        // Only `success` is read here, for the audit trail.
        self.call_tool(tool, args_json, |text| {
            let success = Outcome::succeeded(&text);
            Ok((text, success))
        })
        .await
    }

    /// One `call-tool`: the instance's lock, the audit trail around the
    /// call, and `read` making the caller's value of the result text (and
    /// saying whether it is a success) in one pass.
    async fn call_tool<T>(
        &self,
        tool: &str,
        args_json: &str,
        read: impl FnOnce(String) -> Result<(T, bool), serde_json::Error>,
    ) -> Result<T, SessionError> {
        let mut guard = self.lock_alive().await?;
        let inst = &mut *guard;
        let started = inst.call_started(self.id, tool);
        let result = inst
            .bindings
            .e2b_tools_catalog()
            .call_call_tool(&mut inst.store, tool, args_json)
            .await;
        let read = read(inst.settle(self.id, result)?);
        let success = matches!(read, Ok((_, true)));
        inst.call_finished(self.id, tool, started, success, None)
            .await;
        Ok(read?.0)
    }

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

    /// One typed tool call: the instance's lock, the audit trail around
    /// `call`, and a trap settled into [`SessionError`].
    async fn typed_call<T>(
        &self,
        tool: &'static str,
        call: impl AsyncFnOnce(
            &crate::bindings::exports::e2b::tools::tools::Guest,
            &mut Store<SessionState>,
        ) -> wasmtime::Result<Result<T, ToolError>>,
    ) -> Result<Result<T, ToolError>, SessionError> {
        let mut guard = self.lock_alive().await?;
        let inst = &mut *guard;
        let started = inst.call_started(self.id, tool);
        let result = call(inst.bindings.e2b_tools_tools(), &mut inst.store).await;
        inst.tool_result(self.id, tool, started, result).await
    }

    /// Kills the sandbox (or leaves it to pause, with `on-timeout: pause`).
    /// Returns whether one was killed. The session stays usable: a later
    /// tool call creates a fresh sandbox.
    pub async fn shutdown(&self) -> Result<bool, SessionError> {
        let mut guard = self.lock_alive().await?;
        let inst = &mut *guard;
        let sandbox = inst.sandbox_id.clone();
        let result = inst
            .bindings
            .e2b_tools_lifecycle()
            .call_shutdown(&mut inst.store)
            .await;
        let killed = inst
            .settle(self.id, result)?
            .map_err(SessionError::Lifecycle)?;
        if let Some(sandbox) = sandbox {
            audit::sandbox_shut_down(self.id, &sandbox, killed);
        }
        inst.sandbox_id = None;
        inst.resume_id = None;
        Ok(killed)
    }

    /// Waits for this session's turn, and gives the call its CPU budget.
    async fn lock_alive(&self) -> Result<MutexGuard<'_, GuestInstance>, SessionError> {
        let mut guard = self.instance.lock().await;
        if let Some(trap) = &guard.dead {
            return Err(SessionError::Dead(trap.clone()));
        }
        let fuel = guard.fuel_per_call;
        // Fuel is enabled on every engine this crate builds.
        guard
            .store
            .set_fuel(fuel)
            .map_err(|err| SessionError::Trapped(WasmError::new(err)))?;
        Ok(guard)
    }
}

impl GuestInstance {
    /// Turns a wasmtime error (a trap) into a dead session.
    fn settle<T>(&mut self, session: u64, result: wasmtime::Result<T>) -> Result<T, SessionError> {
        result.map_err(|err| {
            let trap = WasmError::new(err);
            audit::trapped(session, &trap.to_string());
            self.dead = Some(trap.clone());
            SessionError::Trapped(trap)
        })
    }

    fn call_started(&self, session: u64, tool: &str) -> Instant {
        audit::call_started(session, tool);
        // A cancellation of an earlier call does not reach this one.
        self.store.data().cancel.begin_call();
        Instant::now()
    }

    async fn tool_result<T>(
        &mut self,
        session: u64,
        tool: &str,
        started: Instant,
        result: wasmtime::Result<Result<T, ToolError>>,
    ) -> Result<Result<T, ToolError>, SessionError> {
        let result = self.settle(session, result)?;
        let error_kind = result.as_ref().err().map(|e| e.kind);
        self.call_finished(session, tool, started, result.is_ok(), error_kind)
            .await;
        Ok(result)
    }

    /// Logs the end of a call and any change of sandbox it caused.
    async fn call_finished(
        &mut self,
        session: u64,
        tool: &str,
        started: Instant,
        success: bool,
        error_kind: Option<crate::bindings::ErrorKind>,
    ) {
        audit::call_finished(session, tool, started.elapsed(), success, error_kind);
        self.observe_sandbox(session).await;
    }

    /// Asks the component for its sandbox and logs creation, resumption or
    /// loss.
    async fn observe_sandbox(&mut self, session: u64) {
        let result = self
            .bindings
            .e2b_tools_lifecycle()
            .call_sandbox_id(&mut self.store)
            .await;
        let Ok(current) = self.settle(session, result) else {
            return;
        };
        if current == self.sandbox_id {
            return;
        }
        let resumed = current.is_some() && self.resume_id == current;
        audit::sandbox_changed(
            session,
            self.sandbox_id.as_deref(),
            current.as_deref(),
            resumed,
        );
        self.sandbox_id = current;
    }
}

/// The outbound allow-list a configuration implies: its API and sandbox
/// endpoints (the config's, else the environment's), nothing else.
pub(crate) fn policy_for(
    config: &SandboxConfig,
    env: &BTreeMap<String, String>,
) -> Result<OutboundPolicy, PolicyError> {
    let pick = |field: &Option<String>, var: &str| {
        field
            .as_deref()
            .or(env.get(var).map(String::as_str))
            .map(str::to_string)
    };
    OutboundPolicy::for_endpoints(
        pick(&config.api_url, "E2B_API_URL").as_deref(),
        pick(&config.sandbox_url, "E2B_SANDBOX_URL").as_deref(),
        pick(&config.domain, "E2B_DOMAIN").as_deref(),
    )
}

/// A store for one component instance: the guest sees `env`, reaches only
/// what `policy` allows, grows to `memory_limit` and spends at most
/// `fuel_per_call` per call; its progress events come out of the receiver.
pub(crate) fn new_store(
    engine: &wasmtime::Engine,
    client: &crate::outbound::OutboundClient,
    env: &BTreeMap<String, String>,
    policy: OutboundPolicy,
    memory_limit: usize,
    clock: ClockMode,
    fuel_per_call: u64,
) -> Result<(Store<SessionState>, ProgressReceiver), SessionError> {
    let (progress, progress_rx) = tokio::sync::watch::channel(Default::default());
    let cancel = Arc::new(crate::outbound::CallCancel::default());
    let hooks = OutboundHooks::new(Arc::new(policy), client.clone(), cancel.clone());
    let limits = StoreLimitsBuilder::new()
        .memory_size(memory_limit)
        .trap_on_grow_failure(true)
        .build();
    let limits = MemoryLimiter::new(limits);
    let state = SessionState::new(env, hooks, limits, SessionClock::new(clock), progress);
    let mut store = Store::new(engine, state);
    store.data_mut().cancel = cancel;
    store.limiter(|state| &mut state.limits);
    store
        .set_fuel(fuel_per_call)
        .and_then(|()| store.fuel_async_yield_interval(Some(FUEL_YIELD_INTERVAL)))
        .map_err(|err| SessionError::Instantiate(WasmError::new(err)))?;
    Ok((store, progress_rx))
}

/// Where a store's component reports its progress.
pub(crate) type ProgressReceiver = tokio::sync::watch::Receiver<crate::progress::Progress>;

/// The result object refusing arguments over the component's bound,
/// before they are copied into the guest, where more than its memory cap
/// would end the instance.
fn refuse_large_arguments(args_json: &str) -> Option<serde_json::Value> {
    (args_json.len() > e2b_wire::host_guest::MAX_ARGUMENTS_BYTES)
        .then(|| failure_result(e2b_wire::host_guest::arguments_too_large(args_json.len())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_e2b_variables_are_kept() {
        let env = e2b_env([
            ("E2B_API_KEY".to_string(), "k".to_string()),
            ("HOME".to_string(), "/root".to_string()),
            ("AWS_SECRET_ACCESS_KEY".to_string(), "s".to_string()),
            ("XE2B_API_KEY".to_string(), "x".to_string()),
        ]);
        assert_eq!(env.keys().collect::<Vec<_>>(), ["E2B_API_KEY"]);
    }
}
