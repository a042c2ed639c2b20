//! The stateless tools (world `e2b-tools-stateless`), for hosts that make a
//! fresh instance for every call (plugin marketplaces such as wassette, MCP
//! gateways): nothing survives in instance memory, so the sandbox travels
//! as an id. A call without one creates a sandbox (tagged
//! [`STATELESS_TAG`] in its metadata, so it can be found and cleaned up); a
//! call with one connects to it (E2B's connect: resumes a paused sandbox,
//! extends its timeout, hands back the access token). Either way the call
//! then runs exactly as in the embedding world ([`crate::tools::execute`]),
//! and its result dict carries the sandbox id. An id that no longer exists
//! fails (`not-found`): it never silently becomes a new sandbox.
//!
//! Configuration comes only from the environment the host grants:
//! `E2B_API_KEY`, `E2B_DOMAIN` / `E2B_API_URL` / `E2B_SANDBOX_URL`, and
//! the `E2B_TOOLS_*` variables of [`e2b_wire::host_guest::env`].

use std::cell::RefCell;
use std::rc::Rc;

use crate::protocol::api;
use e2b_wire::host_guest::env as vars;

use crate::config::{ConfigInput, OnTimeout, Settings};
use crate::errors::{ErrorKind, ToolError};
use crate::output::results;
use crate::session::platform::Platform;
use crate::session::report::StopReason;
use crate::session::retry::Retry;
use crate::session::{Ctx, Session};
use crate::tools::{self, ToolCall, ToolName, ToolOutput};

/// Metadata key and value of every sandbox a stateless call creates.
pub const STATELESS_TAG: (&str, &str) = ("e2b-tools", "stateless");

/// The settings of one stateless call on `sandbox_id` ("": a new sandbox;
/// a snapshot id: a new sandbox from that snapshot), from the environment
/// alone.
pub fn settings(
    env: &impl Fn(&str) -> Option<String>,
    sandbox_id: &str,
) -> Result<Settings, ToolError> {
    let number = |name: &str| -> Result<Option<u32>, ToolError> {
        match env(name).filter(|v| !v.trim().is_empty()) {
            None => Ok(None),
            Some(v) => v.trim().parse().map(Some).map_err(|_| {
                ToolError::invalid(format!("{name} must be a whole number, got '{v}'"))
            }),
        }
    };
    let on_timeout = match env(vars::ON_TIMEOUT).as_deref().map(str::trim) {
        None | Some("") | Some("kill") => None,
        Some("pause") => Some(OnTimeout::Pause),
        Some(other) => {
            return Err(ToolError::invalid(format!(
                "{} must be kill or pause, got '{other}'",
                vars::ON_TIMEOUT
            )))
        }
    };
    let id = sandbox_id.trim();
    let (template, attach) = match api::is_snapshot_id(id) {
        true => (Some(id.to_string()), String::new()),
        false => (env(vars::TEMPLATE), id.to_string()),
    };
    let input = ConfigInput {
        template,
        timeout_seconds: number(vars::TIMEOUT)?,
        max_output_bytes: number(vars::MAX_OUTPUT_BYTES)?,
        on_timeout,
        metadata: vec![(STATELESS_TAG.0.into(), STATELESS_TAG.1.into())],
        sandbox_id: Some(attach),
        // Every tool is exported (and listed by plugin hosts) here.
        tools: Some(match env(vars::ENABLED) {
            Some(list) if !list.trim().is_empty() => list.split(',').map(str::to_string).collect(),
            _ => vec!["all".to_string()],
        }),
        ..ConfigInput::default()
    };
    Settings::resolve(input, env)
}

/// A fresh session for one call.
fn ctx<P: Platform>(platform: P, settings: Settings) -> Ctx<P> {
    Ctx {
        platform,
        session: Rc::new(RefCell::new(Session::new(settings))),
    }
}

/// Runs `call` in sandbox `sandbox_id` ("": a new one) and answers with
/// e2b-adk's result dict plus `sandbox_id` (and `kind` on failure); a call
/// refused while parsing comes with its tool's name, for its events.
pub async fn call<P: Platform>(
    platform: P,
    env: impl Fn(&str) -> Option<String>,
    sandbox_id: &str,
    call: Result<ToolCall, (ToolName, ToolError)>,
) -> String {
    let settings = match settings(&env, sandbox_id) {
        Ok(settings) => settings,
        Err(err) => return failure_json(&err, &attached_id(sandbox_id)),
    };
    let rich = settings.rich_results;
    let ctx = ctx(platform, settings);
    let call = match call {
        Ok(call) => call,
        Err((tool, err)) => {
            let err = tools::refused(&ctx, tool.as_str(), err);
            return failure_json(&err, &attached_id(sandbox_id));
        }
    };
    let result = tools::execute(&ctx, call).await;
    // The sandbox the call ran in, created by it if none was named.
    let id = ctx
        .snapshot()
        .sandbox
        .map(|h| h.id)
        .unwrap_or_else(|| attached_id(sandbox_id));
    match result {
        Ok(output) => success_json(&output, rich, &id),
        Err(err) => failure_json(&err, &id),
    }
}

/// The sandbox a call named: none when it named a snapshot to start from.
fn attached_id(sandbox_id: &str) -> String {
    let id = sandbox_id.trim();
    match api::is_snapshot_id(id) {
        true => String::new(),
        false => id.to_string(),
    }
}

/// How a sandbox was closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closed {
    /// Killed: its files are gone.
    Killed,
    /// Paused (its lifecycle says so): connecting to it by id resumes it.
    Paused,
    /// It no longer existed.
    Gone,
}

impl Closed {
    /// The name results use.
    pub fn as_str(self) -> &'static str {
        match self {
            Closed::Killed => "killed",
            Closed::Paused => "paused",
            Closed::Gone => "gone",
        }
    }

    /// As a lifecycle event tells it.
    fn stop_reason(self) -> StopReason {
        match self {
            Closed::Killed => StopReason::Killed,
            Closed::Paused => StopReason::Released,
            Closed::Gone => StopReason::Gone,
        }
    }
}

/// Closes sandbox `sandbox_id`: pauses it if its lifecycle pauses at the
/// timeout, else kills it.
pub async fn close<P: Platform>(
    platform: P,
    env: impl Fn(&str) -> Option<String>,
    sandbox_id: &str,
) -> String {
    let id = sandbox_id.trim();
    if id.is_empty() {
        let err = ToolError::invalid("Missing or invalid required argument: sandbox_id");
        return failure_json(&err, "");
    }
    let closed = match settings(&env, id) {
        Ok(settings) => {
            let ctx = ctx(platform, settings.clone());
            let closed = close_with(&ctx, &settings, id).await;
            if let Ok(closed) = closed {
                ctx.stopped(id, closed.stop_reason());
            }
            closed
        }
        Err(err) => Err(err),
    };
    match closed {
        Ok(closed) => results::OrderedObject::default()
            .put("sandbox_id", id.to_string())
            .put("closed", closed.as_str())
            .put("success", true)
            .to_json(),
        Err(err) => failure_json(&err, id),
    }
}

async fn close_with<P: Platform>(
    ctx: &Ctx<P>,
    settings: &Settings,
    id: &str,
) -> Result<Closed, ToolError> {
    let fail = |f| ToolError::from_failure("Failed to close the sandbox: ", f);
    let req = api::detail_request(settings, id).map_err(fail)?;
    let (status, body) = ctx
        .exchange_retrying(settings, &req, Retry::Idempotent)
        .await
        .map_err(fail)?;
    if status == 404 {
        return Ok(Closed::Gone);
    }
    let pauses = api::parse_pauses_on_timeout(&body).unwrap_or(settings.pauses());
    if pauses {
        let req = api::pause_request(settings, id).map_err(fail)?;
        let (status, body) = ctx
            .exchange_retrying(settings, &req, Retry::Idempotent)
            .await
            .map_err(fail)?;
        return match api::parse_pause(status, &body, id) {
            Ok(_) => Ok(Closed::Paused),
            Err(f) if f.kind == ErrorKind::SandboxExpired => Ok(Closed::Gone),
            Err(f) => Err(fail(f)),
        };
    }
    let req = api::kill_request(settings, id).map_err(fail)?;
    let (status, body) = ctx
        .exchange_retrying(settings, &req, Retry::Idempotent)
        .await
        .map_err(fail)?;
    match api::parse_kill(status, &body).map_err(fail)? {
        true => Ok(Closed::Killed),
        false => Ok(Closed::Gone),
    }
}

fn success_json(output: &ToolOutput, rich: bool, sandbox_id: &str) -> String {
    tools::success_object(output, rich)
        .put("sandbox_id", sandbox_id.to_string())
        .put("success", true)
        .to_json()
}

fn failure_json(err: &ToolError, sandbox_id: &str) -> String {
    results::failure_object(err)
        .put("kind", err.kind.as_str())
        .put("sandbox_id", sandbox_id.to_string())
        .to_json()
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::session::platform::fake::{run, Answer, FakePlatform};
    use crate::testing::{command, exited, started, stdout, CREATE, CREATED, START};

    const CONNECT: &str = "Post http://api.test/v2/sandboxes/sbx1/connect";
    const DETAIL: &str = "Get http://api.test/sandboxes/sbx1";
    const KILL: &str = "Delete http://api.test/sandboxes/sbx1";

    fn platform() -> FakePlatform {
        let platform = FakePlatform::default();
        // Before CREATE, whose URL is a prefix of CONNECT's.
        platform.route(CONNECT, vec![Answer::new(200, CREATED)]);
        platform.route(CREATE, vec![Answer::new(201, CREATED)]);
        let mut steps = vec![started(7), stdout("hi\n")];
        steps.extend(exited(0));
        platform.route(START, vec![Answer::steps(200, steps)]);
        platform
    }

    /// How many sandboxes were created.
    fn creates(p: &FakePlatform) -> usize {
        p.sent.borrow().iter().filter(|(_, r)| r == CREATE).count()
    }

    fn parse(text: &str) -> Value {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn without_an_id_a_tagged_sandbox_is_created_and_its_id_returned() {
        let p = platform();
        let clock = p.clock.clone();
        let out = run(
            &clock,
            call(&p, crate::testing::env, "", Ok(command("echo hi", None))),
        );
        let out = parse(&out);
        assert_eq!(out["stdout"], "hi\n");
        assert_eq!(out["sandbox_id"], "sbx1");
        assert_eq!(out["success"], true);
        assert_eq!(creates(&p), 1);
        assert_eq!(p.sent_ms(CONNECT).len(), 0);
        assert!(p.bodies(CREATE)[0].contains(r#""metadata":{"e2b-tools":"stateless"}"#));
    }

    #[test]
    fn with_an_id_the_sandbox_is_connected_to_and_none_created() {
        let p = platform();
        let clock = p.clock.clone();
        let out = parse(&run(
            &clock,
            call(
                &p,
                crate::testing::env,
                " sbx1 ",
                Ok(command("echo hi", None)),
            ),
        ));
        assert_eq!(
            (out["stdout"].as_str(), out["sandbox_id"].as_str()),
            (Some("hi\n"), Some("sbx1"))
        );
        assert_eq!(p.sent_ms(CONNECT).len(), 1);
        assert_eq!(creates(&p), 0);
    }

    #[test]
    fn an_id_that_is_gone_fails_and_never_becomes_a_new_sandbox() {
        let p = platform();
        p.route(
            CONNECT,
            vec![Answer::new(404, r#"{"code":404,"message":"not found"}"#)],
        );
        let clock = p.clock.clone();
        let out = parse(&run(
            &clock,
            call(&p, crate::testing::env, "sbx1", Ok(command("true", None))),
        ));
        assert_eq!(out["success"], false);
        assert_eq!(out["kind"], "not-found");
        assert_eq!(out["sandbox_id"], "sbx1");
        assert!(
            out["error"].as_str().unwrap().contains("sbx1 not found"),
            "{out}"
        );
        assert_eq!(creates(&p), 0);
    }

    #[test]
    fn close_kills_or_pauses_as_the_sandbox_lifecycle_says() {
        let p = platform();
        p.route(
            DETAIL,
            vec![Answer::new(200, r#"{"lifecycle":{"onTimeout":"kill"}}"#)],
        );
        p.route(KILL, vec![Answer::new(204, "")]);
        let clock = p.clock.clone();
        let out = parse(&run(&clock, close(&p, crate::testing::env, "sbx1")));
        assert_eq!(
            (out["closed"].as_str(), out["success"].as_bool()),
            (Some("killed"), Some(true))
        );

        let p = platform();
        p.route(
            DETAIL,
            vec![Answer::new(200, r#"{"lifecycle":{"onTimeout":"pause"}}"#)],
        );
        p.route(
            "Post http://api.test/sandboxes/sbx1/pause",
            vec![Answer::new(204, "")],
        );
        let out = parse(&run(&clock, close(&p, crate::testing::env, "sbx1")));
        assert_eq!(out["closed"], "paused");
        assert!(p.sent_ms(KILL).is_empty());

        let p = platform();
        p.route(DETAIL, vec![Answer::new(404, "")]);
        let out = parse(&run(&clock, close(&p, crate::testing::env, "sbx1")));
        assert_eq!(out["closed"], "gone");
        let out = parse(&run(&clock, close(&p, crate::testing::env, "")));
        assert_eq!(
            (out["success"].as_bool(), out["kind"].as_str()),
            (Some(false), Some("invalid-argument"))
        );
    }

    #[test]
    fn the_environment_configures_each_call() {
        let env = |name: &str| match name {
            vars::TEMPLATE => Some("base".to_string()),
            vars::TIMEOUT => Some("600".to_string()),
            vars::MAX_OUTPUT_BYTES => Some("20".to_string()),
            vars::ON_TIMEOUT => Some("pause".to_string()),
            other => crate::testing::env(other),
        };
        let s = settings(&env, "").unwrap();
        assert_eq!(
            (s.template.as_str(), s.ttl_seconds(), s.max_output_bytes),
            ("base", 600, 20)
        );
        assert_eq!(s.on_timeout, Some(OnTimeout::Pause));
        assert_eq!(s.attach_sandbox_id, None);
        let bad = |name: &'static str, value: &'static str| {
            move |n: &str| {
                (n == name)
                    .then(|| value.to_string())
                    .or_else(|| crate::testing::env(n))
            }
        };
        assert!(settings(&bad(vars::TIMEOUT, "soon"), "")
            .unwrap_err()
            .message
            .contains("E2B_TOOLS_TIMEOUT"));
        assert!(settings(&bad(vars::ON_TIMEOUT, "nap"), "").is_err());
    }
}
