//! Fixtures of the native orchestration tests: a session on the
//! [`FakePlatform`] against `http://api.test` and `http://sbx.test`, and
//! envd process streams step by step.

use std::cell::RefCell;
use std::rc::Rc;

use e2b_wire::connect::{encode_envelope, FLAG_END_STREAM};
use e2b_wire::process::{end_event, DataEvent, ProcessEvent, ProcessEventMessage, StartEvent};

use crate::config::{ConfigInput, Settings};
use crate::session::platform::fake::{Answer, FakePlatform, Step};
use crate::session::{Ctx, Session};
use crate::tools::background::start::BackgroundArgs;
use crate::tools::run_code::RunCodeArgs;
use crate::tools::run_command::RunCommandArgs;
use crate::tools::ToolCall;

/// The environment of every fixture session.
pub fn env(name: &str) -> Option<String> {
    match name {
        "E2B_API_KEY" => Some("e2b_key".to_string()),
        "E2B_API_URL" => Some("http://api.test".to_string()),
        "E2B_SANDBOX_URL" => Some("http://sbx.test".to_string()),
        _ => None,
    }
}

/// The create answer for sandbox `sbx1`.
pub const CREATED: &str = r#"{"sandboxID":"sbx1","templateID":"t","clientID":"c","envdVersion":"0.6.13","envdAccessToken":"tok"}"#;

/// The create request.
pub const CREATE: &str = "Post http://api.test/v2/sandboxes";
/// `sbx1`'s set-timeout request.
pub const REFRESH: &str = "Post http://api.test/sandboxes/sbx1/timeout";
/// A process start.
pub const START: &str = "Post http://sbx.test/process.Process/Start";

/// A session with a `ttl_seconds` TTL whose sandbox is created on the
/// first call.
pub fn ctx(ttl_seconds: u32) -> Ctx<FakePlatform> {
    ctx_with(ConfigInput {
        timeout_seconds: Some(ttl_seconds),
        ..Default::default()
    })
}

/// A session configured by `input`, whose sandbox `sbx1` is created
/// (or attached) on the first call.
pub fn ctx_with(input: ConfigInput) -> Ctx<FakePlatform> {
    let settings = Settings::resolve(input, env).unwrap();
    let ctx = Ctx {
        platform: FakePlatform::default(),
        session: Rc::new(RefCell::new(Session::new(settings))),
    };
    ctx.platform.route(CREATE, vec![Answer::new(201, CREATED)]);
    ctx.platform.route(REFRESH, vec![Answer::new(204, "")]);
    ctx
}

/// A command that starts, prints nothing for `ms`, and exits 0.
pub fn lasting(ms: u64) -> Answer {
    let mut steps = vec![started(7), Step::Wait(ms)];
    steps.extend(exited(0));
    Answer::steps(200, steps)
}

pub fn event(ev: ProcessEvent) -> Step {
    let msg = serde_json::to_vec(&ProcessEventMessage { event: ev }).unwrap();
    Step::Bytes(encode_envelope(0, &msg))
}

pub fn started(pid: u32) -> Step {
    event(ProcessEvent::Start(StartEvent { pid }))
}

pub fn stdout(text: &str) -> Step {
    event(ProcessEvent::Data(DataEvent {
        stdout: Some(text.as_bytes().to_vec()),
        ..Default::default()
    }))
}

pub fn exited(code: i32) -> Vec<Step> {
    vec![
        event(ProcessEvent::End(end_event(Some(code), None))),
        Step::Bytes(encode_envelope(FLAG_END_STREAM, b"{}")),
    ]
}

pub fn command(command: &str, timeout_ms: Option<u64>) -> ToolCall {
    ToolCall::RunCommand(RunCommandArgs {
        command: command.into(),
        cwd: None,
        envs: Default::default(),
        timeout_ms,
    })
}

pub fn python(code: &str) -> ToolCall {
    ToolCall::RunCode(RunCodeArgs {
        code: code.into(),
        language: "python".into(),
        envs: Default::default(),
        timeout_ms: None,
    })
}

pub fn background(command: &str, port: Option<u16>) -> ToolCall {
    ToolCall::StartBackgroundCommand(BackgroundArgs {
        command: command.into(),
        port,
        cwd: None,
        envs: Default::default(),
        timeout_ms: None,
    })
}
