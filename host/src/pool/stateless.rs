//! [`StatelessPool`]: sandboxes made ahead for the stateless world's calls
//! that name none, so such a call (every first call of a plugin host's or
//! a stateless MCP client's conversation) does not wait for a sandbox.
//!
//! The pool keeps sandbox ids, not instances: a stateless call is a fresh
//! instance anyway. It makes each sandbox with a stateless call of its own
//! (`list_files` on a new sandbox, on [`WAITING_TIMEOUT`]: the sandbox is
//! created the way the caller's call would have created it, tagged and
//! configured alike, and started), refreshes it with the same call by id,
//! and closes it with `close_sandbox`. A caller's call without a
//! `sandbox_id` then runs by the id of a waiting sandbox: its connect gives
//! the sandbox the configured timeout, and the result names it, as if the
//! call had made it. A sandbox gone meanwhile (killed, expired) fails that
//! connect before anything runs; the pool sees the answer
//! ([`e2b_wire::host_guest::sandbox_not_found`]) and takes the next.

use serde_json::{json, Value};

use super::filler::{Pool, PoolError, PoolStats, Stock, WAITING_TIMEOUT};
use crate::error::SessionError;
use crate::stateless::{
    export_name, lookup, Caller, StatelessOptions, StatelessRuntime, CLOSE_SANDBOX, SANDBOX_ID,
};
use e2b_wire::host_guest::{self, env};

/// The export the pool makes and refreshes its sandboxes with: cheap, and
/// it proves envd answers.
const PROBE: &str = "e2b-list-files";
/// The export that warms a sandbox the pool made: a cell that does
/// nothing (`pass`: the tool takes no empty code), so a
/// first `run_code` does not wait for kernels that start with the sandbox
/// (the local server's); best effort, as a template may have no
/// interpreter.
const WARM_UP: &str = "e2b-run-code";

/// Sandboxes made ahead for stateless calls of one set of options.
/// Cheap to clone; every clone is the same pool, closed when the last one
/// is dropped (its waiting sandboxes are then closed in the background).
#[derive(Clone)]
pub struct StatelessPool {
    pool: Pool<Sandboxes>,
}

/// Sandbox ids made by stateless calls of one set of options.
struct Sandboxes {
    runtime: StatelessRuntime,
    /// The caller's options, for the calls the pool hands out.
    options: StatelessOptions,
    /// The options of the pool's own calls: the caller's, on the waiting
    /// timeout, with the probe enabled.
    waiting: StatelessOptions,
    key: String,
}

impl Sandboxes {
    /// The pool's own call of `tool` with `args`: its result, if it
    /// succeeded.
    async fn own_call(&self, options: &StatelessOptions, tool: &str, args: Value) -> Option<Value> {
        let result = self
            .runtime
            .call_as(options, tool, &args, Caller::Pool)
            .await
            .ok()?;
        crate::results::succeeded(&result).then_some(result)
    }
}

impl Stock for Sandboxes {
    type Item = String;

    async fn make(&self) -> Option<String> {
        let made = self.own_call(&self.waiting, PROBE, json!({})).await?;
        let id = made
            .get("sandbox_id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())?
            .to_string();
        let cell = json!({ "code": "pass", SANDBOX_ID: id });
        let _ = self.own_call(&self.waiting, WARM_UP, cell).await;
        Some(id)
    }

    async fn refresh(&self, id: &String) -> bool {
        let args = json!({ SANDBOX_ID: id });
        self.own_call(&self.waiting, PROBE, args).await.is_some()
    }

    async fn kill(&self, id: String) {
        let args = json!({ SANDBOX_ID: id });
        let _ = self.own_call(&self.options, CLOSE_SANDBOX, args).await;
    }
}

impl std::fmt::Debug for StatelessPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatelessPool")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl StatelessPool {
    /// Starts a pool of `size` sandboxes for calls of `runtime` with
    /// `options`, filling on a task of the current tokio runtime.
    pub fn start(
        runtime: &StatelessRuntime,
        options: StatelessOptions,
        size: usize,
    ) -> Result<Self, PoolError> {
        let mut waiting = options.clone();
        waiting
            .env
            .insert(env::TIMEOUT.to_string(), WAITING_TIMEOUT.to_string());
        // The probe and the warm-up answer whatever tools the caller enabled.
        waiting
            .env
            .insert(env::ENABLED.to_string(), "list_files,run_code".to_string());
        let stock = Sandboxes {
            runtime: runtime.clone(),
            key: key(&options),
            options,
            waiting,
        };
        Ok(Self {
            pool: Pool::start(stock, size)?,
        })
    }

    /// Whether calls with `options` may take their sandboxes from this
    /// pool: the same environment, policy and limits.
    pub fn serves(&self, options: &StatelessOptions) -> bool {
        key(options) == self.pool.stock().key
    }

    /// [`StatelessRuntime::call`] with the pool's options. A call that
    /// names no sandbox (no `sandbox_id`, or an empty one) runs in a
    /// waiting sandbox, whose id its result carries; with none waiting
    /// it creates one, as without a pool. `close_sandbox` and calls that
    /// name a sandbox or a snapshot pass through.
    pub async fn call(&self, tool: &str, args: &Value) -> Result<Value, SessionError> {
        let stock = self.pool.stock();
        let named = lookup(args, SANDBOX_ID)
            .and_then(Value::as_str)
            .is_some_and(|id| !id.trim().is_empty());
        if named || export_name(tool) == CLOSE_SANDBOX {
            return stock.runtime.call(&stock.options, tool, args).await;
        }
        while let Some(id) = self.pool.take().await {
            let result = stock
                .runtime
                .call_as(&stock.options, tool, args, Caller::Pooled(&id))
                .await;
            match &result {
                Ok(answer) if gone(answer, &id) => {
                    self.pool.discarded();
                    continue;
                }
                Ok(answer) if refused(answer) => {
                    // Its arguments were refused before it ran: the
                    // sandbox is as it was, and the answer names none, as
                    // without a pool.
                    self.pool.put_back(id).await;
                    return result.map(|mut answer| {
                        answer["sandbox_id"] = json!("");
                        answer
                    });
                }
                // Refused by the host (an unknown tool, an argument of the
                // wrong type) before an instance was made.
                Err(SessionError::InvalidArguments(_)) => {
                    self.pool.put_back(id).await;
                    return result;
                }
                // The instance failed (a trap): its answer, and with it
                // the sandbox's id, never reaches the caller.
                Err(_) => {
                    stock.kill(id).await;
                    return result;
                }
                Ok(_) => {
                    self.pool.handed_out();
                    return result;
                }
            }
        }
        stock.runtime.call(&stock.options, tool, args).await
    }

    /// What the pool did so far.
    pub fn stats(&self) -> PoolStats {
        self.pool.stats()
    }

    /// Stops filling and closes every waiting sandbox (those handed out
    /// are their callers'). Later calls create their own sandboxes.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// Whether `answer` says pooled sandbox `id` was gone before the call ran.
fn gone(answer: &Value, id: &str) -> bool {
    !crate::results::succeeded(answer)
        && answer.get("kind").and_then(Value::as_str) == Some("not-found")
        && answer
            .get("error")
            .and_then(Value::as_str)
            .is_some_and(|error| error.ends_with(&host_guest::sandbox_not_found(id)))
}

/// Whether `answer` refused the call's arguments (nothing ran).
fn refused(answer: &Value) -> bool {
    !crate::results::succeeded(answer)
        && answer.get("kind").and_then(Value::as_str) == Some("invalid-argument")
}

/// What makes two calls' options the same for a pool. It holds the
/// environment (with the API key): compared, never shown.
fn key(options: &StatelessOptions) -> String {
    format!(
        "{:?}|{:?}|{}|{}",
        options.env, options.policy, options.memory_limit, options.fuel_per_call
    )
}
