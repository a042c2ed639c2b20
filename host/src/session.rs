//! [`Session`]: one component instance, owning at most one sandbox.

use crate::bindings::{E2bTools, ToolError, ToolSpec};
use crate::clock::{ClockMode, SessionClock};
use crate::config::SandboxConfig;
use crate::emitter::Emitter;
use crate::error::{OptionsError, SessionError, WasmError};
use crate::events::{EventKind, Subscriber, Subscription};
use crate::limits::MemoryLimiter;
use crate::outbound::OutboundHooks;
use crate::policy::{OutboundPolicy, PolicyError};
use crate::results::{failure_result, succeeded, Outcome};
use crate::runtime::Runtime;
use crate::sandboxes::Tracker;
use crate::state::SessionState;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::{MappedMutexGuard, Mutex, MutexGuard};
use tracing::Instrument;
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
/// Call [`Session::shutdown`] when done. Dropping a session that still has
/// a sandbox it created kills it, on the runtime's reaper thread, within
/// [`KILL_TIMEOUT`](crate::KILL_TIMEOUT) (see [`Runtime`]); a sandbox it
/// attached to (`config.sandbox_id`) is left running.
///
/// Each call runs in a `tracing` span `execute_tool` (OpenTelemetry's
/// GenAI names: `gen_ai.operation.name`, `gen_ai.tool.name`, plus
/// `e2b.session`, `e2b.sandbox_id`, `e2b.success`, `e2b.error_kind`), so an
/// embedder's `tracing-opentelemetry` layer exports every call.
pub struct Session {
    id: u64,
    /// `None` only once [`Drop`] has handed the instance to the reaper.
    instance: Mutex<Option<GuestInstance>>,
    events: Emitter,
    reaper: Arc<crate::reaper::Reaper>,
    progress: tokio::sync::watch::Receiver<crate::progress::Progress>,
    cancel: Arc<crate::outbound::CallCancel>,
    /// The sandboxes the guest reported, readable while a call runs.
    tracker: Arc<Tracker>,
    spare: Arc<Spare>,
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
    /// Set when the instance trapped: the trap.
    dead: Option<WasmError>,
    /// The CPU budget each call starts with.
    fuel_per_call: u64,
    /// Where its events go.
    events: Emitter,
}

/// How to make another instance like the session's (same component,
/// environment, allow-list and configuration): what kills its sandboxes
/// by id while a call still holds its own.
struct Spare {
    /// The runtime's, not the runtime: a dropped session's kill must not
    /// keep its runtime alive (the runtime's drop waits for those kills).
    pre: crate::bindings::E2bToolsPre<SessionState>,
    client: crate::outbound::OutboundClient,
    env: BTreeMap<String, String>,
    policy: OutboundPolicy,
    config: SandboxConfig,
    memory_limit: usize,
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
        crate::audit::session_opened(id, &policy);
        let events = Emitter::new(id, runtime.subscribers().clone());
        let tracker = Arc::new(Tracker::new(events.clone()));
        let spare = Arc::new(Spare {
            pre: runtime.pre().clone(),
            client: runtime.client().clone(),
            env: env.clone(),
            policy: policy.clone(),
            config: config.clone(),
            memory_limit: options.memory_limit,
            fuel_per_call: options.fuel_per_call,
        });
        let (mut store, progress) = new_store(
            runtime.pre().engine(),
            runtime.client(),
            &env,
            policy,
            StoreLimits {
                memory: options.memory_limit,
                fuel_per_call: options.fuel_per_call,
            },
            options.clock,
            tracker.clone(),
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
            events: events.clone(),
            reaper: runtime.reaper().clone(),
            tracker,
            spare,
            instance: Mutex::new(Some(GuestInstance {
                store,
                bindings,
                dead: None,
                fuel_per_call: options.fuel_per_call,
                events,
            })),
        })
    }

    /// Registers `subscriber` for this session's [lifecycle
    /// events](crate::events), as [`Runtime::subscribe`] does for all
    /// sessions.
    pub fn subscribe(&self, subscriber: impl Subscriber) -> std::io::Result<Subscription> {
        self.events.own.subscribe(Arc::new(subscriber))
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
            .as_ref()
            .map_or(0, |inst| inst.store.data().limits.linear_memory_bytes())
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
        inst.settle(result)
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
        inst.settle(result)
    }

    /// The ID of this session's sandbox, if one is open (one found gone is
    /// not): the component reports it the moment it has it, so this
    /// answers at once, even while a call runs (the call that creates it
    /// included).
    pub fn sandbox_id(&self) -> Option<String> {
        self.tracker.current()
    }

    /// The sandboxes that are this session's to kill (the one it created
    /// and its forks, but none it attached to, none left to pause and no
    /// fork made with `keep`), newest first: known while a call runs.
    pub fn owned_sandboxes(&self) -> Vec<String> {
        self.tracker.owned()
    }

    /// Kills every sandbox this session owns ([`Session::owned_sandboxes`])
    /// now, even in the middle of a call: what a host does when it is
    /// told to stop, and at its normal end. The running call is cancelled
    /// (a sandbox it is creating is still reported, and killed); if it has
    /// not given the instance back within half of `within`, the kills go
    /// through a fresh instance instead (by id, the component's `kill`).
    /// All of it is bounded by `within`. Returns how many were killed; a
    /// failure is reported as an `error` event.
    pub async fn kill_owned(&self, within: std::time::Duration) -> usize {
        let grace = within / 2;
        // Even with none known yet: the running call may be creating one
        // (a create runs to its end when cancelled, and reports it).
        self.cancel.cancel();
        let kills = async {
            let mut killed = 0;
            if let Ok(Ok(mut inst)) = tokio::time::timeout(grace, self.lock_alive()).await {
                killed += inst.kill_owned(&self.tracker).await;
            }
            // Busy past the grace, or trapped (before or during the kills):
            // another instance, for what is left.
            if !self.tracker.owned().is_empty() {
                killed += self.spare.kill(&self.tracker).await;
            }
            killed
        };
        tokio::time::timeout(within, kills).await.unwrap_or(0)
    }

    /// Makes the sandbox ready before any tool call (creates or attaches
    /// to it, else refreshes it: the probe that it lives) and returns its
    /// id; `timeout_seconds` overrides the configured timeout for now (the
    /// component's `prepare`). [`WarmPool`](crate::WarmPool) uses it.
    pub async fn prepare(
        &self,
        timeout_seconds: Option<u32>,
    ) -> Result<Result<String, ToolError>, SessionError> {
        let mut guard = self.lock_alive().await?;
        let inst = &mut *guard;
        let result = inst
            .bindings
            .e2b_tools_lifecycle()
            .call_prepare(&mut inst.store, timeout_seconds)
            .await;
        inst.settle(result)
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
        // Parsed once: the span reads `success` from the same value.
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
        // Only `success` is read here, for the span.
        self.call_tool(tool, args_json, |text| {
            let success = Outcome::succeeded(&text);
            Ok((text, success))
        })
        .await
    }

    /// One `call-tool`: the instance's lock, the span around the call (its
    /// events come from the component as they happen), and `read` making
    /// the caller's value of the result text (and saying whether it is a
    /// success) in one pass.
    async fn call_tool<T>(
        &self,
        tool: &str,
        args_json: &str,
        read: impl FnOnce(String) -> Result<(T, bool), serde_json::Error>,
    ) -> Result<T, SessionError> {
        let span = call_span(self.id, tool);
        async {
            let mut guard = self.lock_alive().await?;
            let inst = &mut *guard;
            inst.call_started();
            let result = inst
                .bindings
                .e2b_tools_catalog()
                .call_call_tool(&mut inst.store, tool, args_json)
                .await;
            let read = read(inst.settle(result)?);
            let success = read.as_ref().is_ok_and(|(_, success)| *success);
            self.record_outcome(success, None);
            Ok(read?.0)
        }
        .instrument(span)
        .await
    }

    /// Records a call's outcome on its span.
    fn record_outcome(&self, success: bool, error_kind: Option<crate::bindings::ErrorKind>) {
        let span = tracing::Span::current();
        span.record("e2b.success", success);
        if let Some(sandbox) = self.tracker.current() {
            span.record("e2b.sandbox_id", sandbox.as_str());
        }
        if let Some(kind) = error_kind {
            span.record("e2b.error_kind", crate::events::kind_name(kind));
        }
    }

    /// One typed tool call: the instance's lock, the audit trail around
    /// `call`, and a trap settled into [`SessionError`].
    pub(crate) async fn typed_call<T>(
        &self,
        tool: &'static str,
        call: impl AsyncFnOnce(
            &crate::bindings::exports::e2b::tools::tools::Guest,
            &mut Store<SessionState>,
        ) -> wasmtime::Result<Result<T, ToolError>>,
    ) -> Result<Result<T, ToolError>, SessionError> {
        let span = call_span(self.id, tool);
        async {
            let mut guard = self.lock_alive().await?;
            let inst = &mut *guard;
            inst.call_started();
            let result = call(inst.bindings.e2b_tools_tools(), &mut inst.store).await;
            let result = inst.settle(result)?;
            self.record_outcome(result.is_ok(), result.as_ref().err().map(|e| e.kind));
            Ok(result)
        }
        .instrument(span)
        .await
    }

    /// One call of the component that is not a tool call (the
    /// `sandboxes` interface, `lifecycle.kill`): the instance's lock, a
    /// trap settled into [`SessionError`].
    pub(crate) async fn component_call<T>(
        &self,
        call: impl AsyncFnOnce(&E2bTools, &mut Store<SessionState>) -> wasmtime::Result<T>,
    ) -> Result<T, SessionError> {
        let mut guard = self.lock_alive().await?;
        let inst = &mut *guard;
        inst.call_started();
        let result = call(&inst.bindings, &mut inst.store).await;
        inst.settle(result)
    }

    /// Kills the sandbox (or leaves it to pause, with `on-timeout: pause`).
    /// Returns whether one was killed. The session stays usable: a later
    /// tool call creates a fresh sandbox.
    pub async fn shutdown(&self) -> Result<bool, SessionError> {
        let result = async {
            let mut guard = self.lock_alive().await?;
            guard.shutdown().await
        }
        .await;
        if let Err(err) = &result {
            let error_kind = match err {
                SessionError::Lifecycle(e) => crate::events::kind_name(e.kind),
                _ => "session",
            };
            let mut event = self.events.event(EventKind::Error);
            event.error_kind = Some(error_kind.to_string());
            self.events
                .emit(event.detail(format!("sandbox shutdown failed: {err}")));
        }
        result
    }

    /// Waits for this session's turn, and gives the call its CPU budget.
    async fn lock_alive(&self) -> Result<MappedMutexGuard<'_, GuestInstance>, SessionError> {
        // Only `Drop` takes the instance out.
        let guard = MutexGuard::map(self.instance.lock().await, |slot| {
            slot.as_mut()
                .expect("a session's instance is there until it is dropped")
        });
        let mut guard = guard;
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

impl Drop for Session {
    fn drop(&mut self) {
        let Some(mut inst) = self.instance.get_mut().take() else {
            return;
        };
        // Only the sandboxes this session owns.
        if self.tracker.owned().is_empty() {
            return;
        }
        self.tracker.killing_for("dropped");
        let tracker = self.tracker.clone();
        let spare = self.spare.clone();
        self.reaper.reap(async move {
            let fuel = inst.fuel_per_call;
            if inst.dead.is_none() && inst.store.set_fuel(fuel).is_ok() {
                inst.kill_owned(&tracker).await;
            }
            // A trapped instance (or one whose call was dropped mid-way and
            // traps now): another instance, for what is left.
            if !tracker.owned().is_empty() {
                spare.kill(&tracker).await;
            }
        });
    }
}

/// The span of one tool call; its outcome fields are recorded at the end.
fn call_span(session: u64, tool: &str) -> tracing::Span {
    tracing::info_span!(
        "execute_tool",
        otel.name = format!("execute_tool {tool}"),
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = tool,
        e2b.session = session,
        e2b.sandbox_id = tracing::field::Empty,
        e2b.success = tracing::field::Empty,
        e2b.error_kind = tracing::field::Empty,
    )
}

impl GuestInstance {
    /// Turns a wasmtime error (a trap) into a dead session.
    fn settle<T>(&mut self, result: wasmtime::Result<T>) -> Result<T, SessionError> {
        result.map_err(|err| {
            let trap = WasmError::new(err);
            let mut event = self.events.event(EventKind::Error);
            event.error_kind = Some("trapped".into());
            let current = self.store.data().tracker.current();
            let event = event.sandbox(current.as_deref());
            self.events.emit(event.detail(trap.to_string()));
            self.dead = Some(trap.clone());
            SessionError::Trapped(trap)
        })
    }

    fn call_started(&self) {
        // A cancellation of an earlier call does not reach this one.
        self.store.data().cancel.begin_call();
    }

    /// The component's `shutdown` (its stop events come from it).
    async fn shutdown(&mut self) -> Result<bool, SessionError> {
        let result = self
            .bindings
            .e2b_tools_lifecycle()
            .call_shutdown(&mut self.store)
            .await;
        self.settle(result)?.map_err(SessionError::Lifecycle)
    }

    /// Kills the sandboxes `tracker` says are the host's, by id; returns
    /// how many were killed. Failures are `error` events.
    async fn kill_owned(&mut self, tracker: &Tracker) -> usize {
        let mut killed = 0;
        for id in tracker.owned() {
            self.call_started();
            let result = self
                .bindings
                .e2b_tools_lifecycle()
                .call_kill(&mut self.store, &id)
                .await;
            match self.settle(result) {
                Ok(Ok(was_there)) => {
                    // A spare instance does not report the session's
                    // sandbox stopped: the tracker is told here (once).
                    tracker.killed_elsewhere(&id, was_there);
                    killed += usize::from(was_there);
                }
                Ok(Err(err)) => self.kill_failed(&id, &err.message),
                Err(err) => {
                    self.kill_failed(&id, &err.to_string());
                    break;
                }
            }
        }
        killed
    }

    fn kill_failed(&self, id: &str, why: &str) {
        let mut event = self.events.event(EventKind::Error);
        event.error_kind = Some("session".into());
        let event = event.sandbox(Some(id));
        self.events
            .emit(event.detail(format!("killing sandbox {id} failed: {why}")));
    }
}

impl Spare {
    /// Kills `tracker`'s sandboxes through a fresh instance: the
    /// session's own is busy with a call, or trapped.
    async fn kill(&self, tracker: &Arc<Tracker>) -> usize {
        let events = Emitter::new(0, Default::default());
        let made = async {
            let (mut store, _progress) = new_store(
                self.pre.engine(),
                &self.client,
                &self.env,
                self.policy.clone(),
                StoreLimits {
                    memory: self.memory_limit,
                    fuel_per_call: self.fuel_per_call,
                },
                ClockMode::Real,
                // Its reports are of the session's sandboxes: they go to
                // the session's tracker (and subscribers).
                tracker.clone(),
            )?;
            let bindings = self
                .pre
                .instantiate_async(&mut store)
                .await
                .map_err(|err| SessionError::Instantiate(WasmError::new(err)))?;
            let config = SandboxConfig {
                sandbox_id: None,
                ..self.config.clone()
            };
            bindings
                .e2b_tools_lifecycle()
                .call_configure(&mut store, &config)
                .await
                .map_err(|err| SessionError::Trapped(WasmError::new(err)))?
                .map_err(SessionError::Configure)?;
            Ok::<_, SessionError>(GuestInstance {
                store,
                bindings,
                dead: None,
                fuel_per_call: self.fuel_per_call,
                events: events.clone(),
            })
        };
        match made.await {
            Ok(mut inst) => inst.kill_owned(tracker).await,
            Err(err) => {
                tracing::warn!(target: crate::AUDIT_TARGET, error = %err, "cannot make an instance to kill the session's sandboxes; they end at their timeout");
                0
            }
        }
    }
}

/// A store's caps: linear memory, and the CPU budget of each call.
pub(crate) struct StoreLimits {
    pub(crate) memory: usize,
    pub(crate) fuel_per_call: u64,
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
/// what `policy` allows, stays within `limits`; its progress events come
/// out of the receiver, its lifecycle reports go to `tracker`.
pub(crate) fn new_store(
    engine: &wasmtime::Engine,
    client: &crate::outbound::OutboundClient,
    env: &BTreeMap<String, String>,
    policy: OutboundPolicy,
    limits: StoreLimits,
    clock: ClockMode,
    tracker: Arc<Tracker>,
) -> Result<(Store<SessionState>, ProgressReceiver), SessionError> {
    let StoreLimits {
        memory: memory_limit,
        fuel_per_call,
    } = limits;
    let (progress, progress_rx) = tokio::sync::watch::channel(Default::default());
    let cancel = Arc::new(crate::outbound::CallCancel::default());
    let hooks = OutboundHooks::new(Arc::new(policy), client.clone(), cancel.clone());
    let limits = StoreLimitsBuilder::new()
        .memory_size(memory_limit)
        .trap_on_grow_failure(true)
        .build();
    let limits = MemoryLimiter::new(limits);
    let state = SessionState::new(
        env,
        hooks,
        limits,
        SessionClock::new(clock),
        progress,
        tracker,
    );
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
