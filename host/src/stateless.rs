//! The stateless component (world `e2b-tools-stateless`) run the way a
//! plugin marketplace runs it: a fresh instance for every call, the
//! sandbox named only by the `sandbox-id` argument, arguments and results
//! converted from and to JSON by the exported functions' own types (as
//! wassette does), so this host tests exactly what such hosts see.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use e2b_wire::host_guest;
use serde_json::Value;
use wasmtime::component::{types::ComponentItem, InstancePre, Type, Val};

use crate::emitter::Emitter;
use crate::error::{SessionError, WasmError};
use crate::events::{EventKind, Subscriber, Subscribers, Subscription};
use crate::loader::{self, ComponentSource, RuntimeError, RuntimeOptions};
use crate::outbound::OutboundClient;
use crate::policy::OutboundPolicy;
use crate::sandboxes::Tracker;
use crate::session::{
    e2b_env, new_store, policy_for, StoreLimits, DEFAULT_FUEL_PER_CALL, DEFAULT_MEMORY_LIMIT,
};
use crate::state::SessionState;
use crate::{ClockMode, SandboxConfig};

/// One exported tool: its name and its parameters' names and types.
#[derive(Debug, Clone)]
pub struct StatelessTool {
    /// The export name, e.g. `e2b-run-code`.
    pub name: String,
    /// Parameter names (kebab-case) and WIT types, in order.
    pub params: Vec<(String, Type)>,
}

/// Options of every call of a [`StatelessRuntime`].
#[derive(Debug, Clone)]
pub struct StatelessOptions {
    /// The environment the component sees; only `E2B_*` variables are
    /// passed (the API key, the endpoints, the `E2B_TOOLS_*` settings).
    pub env: BTreeMap<String, String>,
    /// Outbound allow-list; by default the endpoints in `env`.
    pub policy: Option<OutboundPolicy>,
    /// The instance's memory cap in bytes.
    pub memory_limit: usize,
    /// The CPU budget of a call.
    pub fuel_per_call: u64,
}

impl Default for StatelessOptions {
    fn default() -> Self {
        Self {
            env: BTreeMap::new(),
            policy: None,
            memory_limit: DEFAULT_MEMORY_LIMIT,
            fuel_per_call: DEFAULT_FUEL_PER_CALL,
        }
    }
}

impl StatelessOptions {
    /// The stateless counterpart of a session's options: the same
    /// environment, cap and budget, and the `config` options the stateless
    /// world takes as its `E2B_TOOLS_*` variables (template, timeout,
    /// output bound, on-timeout, tools); the rest it does not have.
    pub fn for_session(options: &crate::SessionOptions) -> Self {
        let config = &options.config;
        let mut env = options.env.clone();
        let vars = [
            (host_guest::env::TEMPLATE, config.template.clone()),
            (
                host_guest::env::TIMEOUT,
                config.timeout_seconds.map(|t| t.to_string()),
            ),
            (
                host_guest::env::MAX_OUTPUT_BYTES,
                config.max_output_bytes.map(|n| n.to_string()),
            ),
            (
                host_guest::env::ON_TIMEOUT,
                config.on_timeout.map(|t| match t {
                    crate::OnTimeout::Kill => "kill".to_string(),
                    crate::OnTimeout::Pause => "pause".to_string(),
                }),
            ),
            (
                host_guest::env::ENABLED,
                config.tools.as_ref().map(|t| t.join(",")),
            ),
            ("E2B_DOMAIN", config.domain.clone()),
            ("E2B_API_URL", config.api_url.clone()),
            ("E2B_SANDBOX_URL", config.sandbox_url.clone()),
        ];
        for (name, value) in vars {
            if let Some(value) = value {
                env.insert(name.to_string(), value);
            }
        }
        Self {
            env,
            policy: options.policy.clone(),
            memory_limit: options.memory_limit,
            fuel_per_call: options.fuel_per_call,
        }
    }
}

/// The stateless component, compiled once; every [`call`](Self::call)
/// instantiates it afresh.
#[derive(Clone)]
pub struct StatelessRuntime {
    inner: Arc<Inner>,
}

struct Inner {
    pre: InstancePre<SessionState>,
    client: OutboundClient,
    tools: Vec<StatelessTool>,
    subscribers: Arc<Subscribers>,
}

static NEXT_CALL_ID: AtomicU64 = AtomicU64::new(1);

/// The parameter that names the sandbox, first in every stateless export.
pub(crate) const SANDBOX_ID: &str = "sandbox-id";

/// The export that closes a sandbox.
pub(crate) const CLOSE_SANDBOX: &str = "e2b-close-sandbox";

/// How long a stopped call may take to return, and then to close the
/// sandbox it made.
const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// On whose behalf a stateless call runs.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Caller<'a> {
    /// The embedder's call, in the sandbox its arguments name.
    Embedder,
    /// The embedder's call, whose arguments named no sandbox, in sandbox
    /// `id` from a [`StatelessPool`](crate::StatelessPool).
    Pooled(&'a str),
    /// The pool itself, making, refreshing or closing a waiting sandbox:
    /// no call is told of, only the sandbox's start and stop.
    Pool,
}

impl StatelessRuntime {
    /// Loads a component of the `e2b-tools-stateless` world.
    pub fn load(source: ComponentSource) -> Result<Self, RuntimeError> {
        Self::load_with(source, RuntimeOptions::default())
    }

    /// Loads a component of the `e2b-tools-stateless` world with `options`.
    pub fn load_with(
        source: ComponentSource,
        options: RuntimeOptions,
    ) -> Result<Self, RuntimeError> {
        let loaded = loader::load(source, options)?;
        let engine = loaded.component.engine();
        let tools: Vec<StatelessTool> = loaded
            .component
            .component_type()
            .exports(engine)
            .filter_map(|(name, item)| match item.ty {
                ComponentItem::ComponentFunc(func) => Some(StatelessTool {
                    name: name.to_string(),
                    params: func
                        .params()
                        .map(|(name, ty)| (name.to_string(), ty))
                        .collect(),
                }),
                _ => None,
            })
            .collect();
        if tools.is_empty() {
            return Err(RuntimeError::NoExports);
        }
        let pre = loaded.instantiate_pre()?;
        loaded.finish();
        Ok(Self {
            inner: Arc::new(Inner {
                pre,
                client: loaded.client,
                tools,
                subscribers: Arc::default(),
            }),
        })
    }

    /// Registers `subscriber` for the [lifecycle events](crate::events) of
    /// every call (each call is a session of its own): exec start and end,
    /// a sandbox start when a call without a `sandbox-id` made one, a
    /// sandbox stop when `close_sandbox` closed one.
    pub fn subscribe(&self, subscriber: impl Subscriber) -> std::io::Result<Subscription> {
        self.inner.subscribers.subscribe(Arc::new(subscriber))
    }

    /// How the requests of this runtime's calls were sent so far.
    pub fn outbound_stats(&self) -> crate::OutboundStats {
        self.inner.client.stats()
    }

    /// The exported tools.
    pub fn tools(&self) -> &[StatelessTool] {
        &self.inner.tools
    }

    /// Calls `tool` (`e2b-run-code`, or e2b-adk's `run_code`) in a fresh
    /// instance with the JSON object `args` (keys in kebab- or snake-case;
    /// a missing or null key is the default, "" or 0) and returns the
    /// result object.
    pub async fn call(
        &self,
        options: &StatelessOptions,
        tool: &str,
        args: &Value,
    ) -> Result<Value, SessionError> {
        self.call_as(options, tool, args, Caller::Embedder).await
    }

    /// [`StatelessRuntime::call`], unless `stop` resolves first (a stop
    /// signal): then the call is cancelled (what it runs in the sandbox
    /// stops) and a sandbox it created, which no answer will name, is
    /// closed; `Ok(None)`. A sandbox it was given stays. Bounded by about
    /// 4 s after `stop`.
    pub async fn call_until(
        &self,
        options: &StatelessOptions,
        tool: &str,
        args: &Value,
        stop: impl std::future::Future<Output = ()>,
    ) -> Result<Option<Value>, SessionError> {
        self.run_call(options, tool, args, Caller::Embedder, stop)
            .await
    }

    /// [`StatelessRuntime::call`] on behalf of `caller`, which decides the
    /// sandbox and what the subscribers are told.
    pub(crate) async fn call_as(
        &self,
        options: &StatelessOptions,
        tool: &str,
        args: &Value,
        caller: Caller<'_>,
    ) -> Result<Value, SessionError> {
        let never = std::future::pending();
        let answer = self.run_call(options, tool, args, caller, never).await?;
        Ok(answer.unwrap_or_default())
    }

    /// One call, stopped by `stop` (see [`StatelessRuntime::call_until`]).
    async fn run_call(
        &self,
        options: &StatelessOptions,
        tool: &str,
        args: &Value,
        caller: Caller<'_>,
        stop: impl std::future::Future<Output = ()>,
    ) -> Result<Option<Value>, SessionError> {
        let name = export_name(tool);
        let spec = self
            .inner
            .tools
            .iter()
            .find(|t| t.name == name)
            .ok_or_else(|| {
                let names: Vec<&str> = self.inner.tools.iter().map(|t| t.name.as_str()).collect();
                SessionError::InvalidArguments(format!(
                    "unknown tool {tool}; the component has {}",
                    names.join(", ")
                ))
            })?;
        let pooled = match caller {
            Caller::Pooled(id) => Some(Value::String(id.to_string())),
            _ => None,
        };
        let params = spec
            .params
            .iter()
            .map(|(name, ty)| match (&pooled, name.as_str()) {
                (Some(id), SANDBOX_ID) => to_val(Some(id), ty, name),
                _ => to_val(lookup(args, name), ty, name),
            })
            .collect::<Result<Vec<Val>, String>>()
            .map_err(SessionError::InvalidArguments)?;

        let id = NEXT_CALL_ID.fetch_add(1, Ordering::Relaxed);
        let mut env = e2b_env(options.env.clone());
        // The component reports its lifecycle on stdout, as it happens.
        env.insert(host_guest::env::EVENTS.to_string(), "stdout".to_string());
        let policy = match &options.policy {
            Some(policy) => policy.clone(),
            None => policy_for(&SandboxConfig::default(), &env)?,
        };
        let events = Emitter::new(id, self.inner.subscribers.clone());
        // Every call attaches to the sandbox it names: the caller's, told
        // of when it was created. The pool's own calls are no one's.
        let tracker = Tracker::new(events.clone())
            .without_attached_starts()
            .without_calls(matches!(caller, Caller::Pool));
        let tracker = Arc::new(tracker);
        let (mut store, _progress) = new_store(
            self.inner.pre.engine(),
            &self.inner.client,
            &env,
            policy,
            StoreLimits {
                memory: options.memory_limit,
                fuel_per_call: options.fuel_per_call,
            },
            ClockMode::Real,
            tracker.clone(),
        )?;
        let cancel = store.data().cancel.clone();
        let result = {
            let call = self.call_instance(&mut store, &name, &params);
            tokio::pin!(call);
            tokio::select! {
                result = &mut call => result.map(Some),
                () = stop => {
                    // The call's requests fail at once (a create still
                    // finishes, and is reported); its answer is no one's.
                    cancel.cancel();
                    let _ = tokio::time::timeout(STOP_GRACE, &mut call).await;
                    Ok(None)
                }
            }
        };
        if matches!(result, Ok(None)) {
            for sandbox in tracker.owned() {
                let close = Value::Object(
                    [(SANDBOX_ID.to_string(), sandbox.into())]
                        .into_iter()
                        .collect(),
                );
                let closed = self.call_as(options, CLOSE_SANDBOX, &close, Caller::Pool);
                let _ = tokio::time::timeout(STOP_GRACE, Box::pin(closed)).await;
            }
        }
        if let Err(err) = &result {
            let asked = match caller {
                Caller::Pooled(id) => Some(id.to_string()),
                _ => lookup(args, SANDBOX_ID)
                    .and_then(Value::as_str)
                    .filter(|id| !id.is_empty())
                    .map(str::to_string),
            };
            let mut error = events.event(EventKind::Error).sandbox(asked.as_deref());
            error.error_kind = Some(
                if matches!(err, SessionError::Trapped(_)) {
                    "trapped"
                } else {
                    "session"
                }
                .to_string(),
            );
            events.emit(error.detail(err.to_string()));
        }
        result
    }

    /// One call in a fresh instance in `store`.
    async fn call_instance(
        &self,
        store: &mut wasmtime::Store<SessionState>,
        name: &str,
        params: &[Val],
    ) -> Result<Value, SessionError> {
        let instance = self
            .inner
            .pre
            .instantiate_async(&mut *store)
            .await
            .map_err(|err| SessionError::Instantiate(WasmError::new(err)))?;
        let func = instance.get_func(&mut *store, name).ok_or_else(|| {
            SessionError::Instantiate(WasmError::new(wasmtime::Error::msg(format!(
                "no export {name}"
            ))))
        })?;
        let mut results = [Val::Bool(false)];
        func.call_async(&mut *store, params, &mut results)
            .await
            .map_err(|err| SessionError::Trapped(WasmError::new(err)))?;
        let Val::String(text) = &results[0] else {
            return Err(SessionError::NotAString {
                export: name.to_string(),
                got: format!("{:?}", results[0]),
            });
        };
        Ok(serde_json::from_str(text)?)
    }
}

/// `run_code` → `e2b-run-code`; export names are kept.
pub(crate) fn export_name(tool: &str) -> String {
    if tool.starts_with("e2b-") {
        tool.to_string()
    } else {
        format!("e2b-{}", tool.replace('_', "-"))
    }
}

/// The argument for parameter `name` (kebab-case), also found under its
/// snake-case spelling.
pub(crate) fn lookup<'a>(args: &'a Value, name: &str) -> Option<&'a Value> {
    args.get(name)
        .or_else(|| args.get(name.replace('-', "_")))
        .filter(|v| !v.is_null())
}

/// A JSON argument as the parameter's type; absent: "" or 0.
fn to_val(arg: Option<&Value>, ty: &Type, name: &str) -> Result<Val, String> {
    let wrong = |want: &str| {
        format!(
            "argument {name}: expected {want}, got {}",
            arg.map_or("nothing".into(), Value::to_string)
        )
    };
    let number = |max: u64| -> Result<u64, String> {
        match arg {
            None => Ok(0),
            Some(v) => v
                .as_u64()
                .filter(|n| *n <= max)
                .ok_or_else(|| wrong(&format!("a whole number up to {max}"))),
        }
    };
    Ok(match ty {
        Type::String => match arg {
            None => Val::String(String::new()),
            Some(Value::String(s)) => Val::String(s.clone()),
            Some(_) => return Err(wrong("a string")),
        },
        Type::Bool => match arg {
            None => Val::Bool(false),
            Some(Value::Bool(b)) => Val::Bool(*b),
            Some(_) => return Err(wrong("true or false")),
        },
        Type::U16 => Val::U16(number(u64::from(u16::MAX))? as u16),
        Type::U32 => Val::U32(number(u64::from(u32::MAX))? as u32),
        other => return Err(format!("argument {name}: unsupported type {other:?}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_take_either_spelling_and_default_when_absent() {
        let args = json!({"sandbox_id": "s1", "timeout-seconds": 5, "cwd": null});
        assert_eq!(lookup(&args, "sandbox-id"), Some(&json!("s1")));
        assert_eq!(lookup(&args, "cwd"), None);
        assert!(matches!(to_val(None, &Type::String, "cwd"), Ok(Val::String(s)) if s.is_empty()));
        assert!(matches!(
            to_val(lookup(&args, "timeout-seconds"), &Type::U32, "t"),
            Ok(Val::U32(5))
        ));
        let err = to_val(Some(&json!(70_000)), &Type::U16, "port").unwrap_err();
        assert!(
            err.contains("argument port: expected a whole number up to 65535"),
            "{err}"
        );
        assert!(to_val(Some(&json!(1)), &Type::String, "code").is_err());
        assert_eq!(export_name("run_code"), "e2b-run-code");
        assert_eq!(export_name("e2b-close-sandbox"), "e2b-close-sandbox");
    }
}
