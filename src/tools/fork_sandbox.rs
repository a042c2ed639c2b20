//! `fork_sandbox`: new sandboxes branched from this one, each with its
//! state, worked in by id (opt-in). The forks a session makes are its own:
//! killed with it unless handed on (`keep`).

use serde_json::Value;

use super::args::Args;
use super::exec::{plain, OpError};
use super::spec::{Hints, ToolSpec};
use super::tool::Tool;
use crate::config::{Settings, ToolName};
use crate::errors::{Failure, ToolError};
use crate::output::redact::Secrets;
use crate::output::results::OrderedObject;
use crate::protocol::api::{self, SandboxHandle};
use crate::session::platform::Platform;
use crate::session::report::{Origin, Report};
use crate::session::retry::Retry;
use crate::session::{Ctx, Fork, KeepAlive};

/// `fork_sandbox`: new sandboxes branched from this one.
pub struct ForkSandbox;

impl Tool for ForkSandbox {
    const SPEC: ToolSpec = ToolSpec {
        tool: ToolName::ForkSandbox,
        title: "Fork the sandbox",
        hints: Hints {
            read_only: false,
            destructive: false,
            idempotent: false,
            open_world: false,
        },
        description: "Branch the sandbox into count new sandboxes (1 to 8), each starting with its files (and on E2B its memory too: running processes and run_code variables; the local backend copies files only). The sandbox itself keeps running unchanged. Returns sandbox_ids: pass one as sandbox_id to any tool to work in that fork, independently of the others, for example to try two fixes and keep the one whose tests pass. Forks end with this session unless keep is true.",
        parameters_schema: include_str!("../schemas/fork_sandbox.json"),
        result_schema: include_str!("../schemas/results/fork_sandbox.json"),
        failure_prefix: "Failed to fork sandbox: ",
        instruction: "fork_sandbox (branches of the sandbox, each then used by its sandbox_id)",
    };

    type Input = ForkArgs;
    type Output = Forks;

    /// Parses `fork_sandbox`'s arguments.
    fn parse(args: &mut Args) -> Result<ForkArgs, ToolError> {
        let count = match args.get("count") {
            None | Some(Value::Null) => 1,
            Some(v) => v
                .as_u64()
                .filter(|n| (1..=u64::from(MAX_FORKS)).contains(n))
                .map(|n| n as u32)
                .ok_or_else(|| {
                    ToolError::invalid(format!(
                        "Invalid count: expected an integer between 1 and {MAX_FORKS}"
                    ))
                })?,
        };
        let timeout_s = match args.get("timeout") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_u64()
                    .filter(|n| (1..=u64::from(MAX_FORK_TIMEOUT_S)).contains(n))
                    .map(|n| n as u32)
                    .ok_or_else(|| {
                        ToolError::invalid(format!(
                            "Invalid timeout: expected whole seconds between 1 and {MAX_FORK_TIMEOUT_S}"
                        ))
                    })?,
            ),
        };
        let keep = match args.get("keep") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(ToolError::invalid("Invalid keep: expected true or false")),
        };
        Ok(ForkArgs {
            count,
            timeout_s,
            keep,
        })
    }

    /// Forks `sandbox` and records the forks in the session (owned unless
    /// `keep`), so later calls can address them and its end kills them.
    /// Retried only where nothing can have been made (429, 503).
    async fn run<P: Platform>(
        ctx: &Ctx<P>,
        settings: &Settings,
        sandbox: &SandboxHandle,
        a: &mut ForkArgs,
    ) -> Result<Forks, OpError> {
        let ttl = a.timeout_s.unwrap_or_else(|| settings.ttl_seconds());
        let req = api::fork_request(settings, &sandbox.id, a.count, ttl)
            .map_err(plain)?
            // A cut fork may still make sandboxes: its answer must arrive to
            // say which, or nobody would kill them.
            .header(e2b_wire::host_guest::HEADER_FINISH_ON_CANCEL, "1");
        let (status, body) = ctx
            .exchange_retrying(settings, &req, Retry::Create)
            .await
            .map_err(plain)?;
        let results = api::parse_fork(status, &body, &sandbox.id).map_err(plain)?;
        let now = ctx.platform.now_ns();
        let mut forks = Forks {
            sandbox_ids: Vec::new(),
            errors: Vec::new(),
        };
        for result in results {
            match result {
                Ok(handle) => {
                    forks.sandbox_ids.push(handle.id.clone());
                    let mut keep_alive = KeepAlive::new(ttl);
                    keep_alive.refreshed(now);
                    let started = Report::SandboxStarted {
                        sandbox_id: handle.id.clone(),
                        template: settings.template.clone(),
                        origin: Origin::Forked,
                        owned: !a.keep && !settings.pauses(),
                        source: Some(sandbox.id.clone()),
                    };
                    ctx.update(|s| {
                        s.forks.push(Fork {
                            handle,
                            keep_alive,
                            owned: !a.keep,
                        })
                    });
                    ctx.started(started);
                }
                Err(failure) => forks.errors.push(failure),
            }
        }
        if forks.sandbox_ids.is_empty() {
            let first = forks.errors.into_iter().next().unwrap_or_else(|| {
                Failure::new(crate::errors::ErrorKind::Internal, "the API made no fork")
            });
            return Err(plain(first));
        }
        Ok(forks)
    }

    /// Its texts without secrets.
    fn redact(f: Forks, secrets: &Secrets) -> Forks {
        Forks {
            sandbox_ids: f.sandbox_ids,
            errors: f
                .errors
                .into_iter()
                .map(|e| Failure::new(e.kind, secrets.redact(&e.message)))
                .collect(),
        }
    }

    /// The dict's keys: the forks' ids, and each failed fork's error.
    fn dict(f: &Forks, _rich: bool, obj: OrderedObject) -> OrderedObject {
        let errors: Vec<Value> = f
            .errors
            .iter()
            .map(|e| serde_json::json!({"error": e.message, "kind": e.kind.as_str()}))
            .collect();
        obj.put("sandbox_ids", f.sandbox_ids.clone())
            .put("errors", errors)
    }
}

/// The most forks one call makes.
pub const MAX_FORKS: u32 = 8;
/// The longest fork TTL a call may ask for (a day).
pub const MAX_FORK_TIMEOUT_S: u32 = 86_400;

/// What `fork_sandbox` is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForkArgs {
    /// How many forks.
    pub count: u32,
    /// Their TTL in seconds (`None`: the session's).
    pub timeout_s: Option<u32>,
    /// Hand them on: not killed with the session.
    pub keep: bool,
}

/// What `fork_sandbox` made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forks {
    /// The forks that started.
    pub sandbox_ids: Vec<String>,
    /// Why the others did not (each fork starts or fails on its own).
    pub errors: Vec<Failure>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_json(json: Value) -> Result<ForkArgs, ToolError> {
        let Value::Object(mut args) = json else {
            unreachable!()
        };
        ForkSandbox::parse(&mut args)
    }

    #[test]
    fn counts_timeouts_and_keep() {
        let a = parse_json(serde_json::json!({})).unwrap();
        assert_eq!((a.count, a.timeout_s, a.keep), (1, None, false));
        let a = parse_json(serde_json::json!({"count": 8, "timeout": 600, "keep": true})).unwrap();
        assert_eq!((a.count, a.timeout_s, a.keep), (8, Some(600), true));
        for bad in [
            serde_json::json!({"count": 0}),
            serde_json::json!({"count": 9}),
            serde_json::json!({"count": 1.5}),
            serde_json::json!({"count": "2"}),
            serde_json::json!({"timeout": 0}),
            serde_json::json!({"timeout": 86_401}),
            serde_json::json!({"keep": "yes"}),
        ] {
            assert!(parse_json(bad.clone()).is_err(), "{bad}");
        }
    }
}
