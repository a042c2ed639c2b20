//! What the session reports as it happens (WIT `events`), through real
//! tool calls on the fake platform: the order a host sees, the sandbox id
//! on the first call's start, forks and snapshots, a dead sandbox reported
//! once.

use crate::errors::ErrorKind;
use crate::session::platform::fake::{run, Answer, FakePlatform};
use crate::session::report::{Origin, Report, StopReason};
use crate::session::Ctx;
use crate::testing::*;
use crate::tools::{execute_admitted, parse_enabled_call, refused, ToolOutput, ToolSet};

fn call(
    ctx: &Ctx<FakePlatform>,
    name: &str,
    args: &str,
) -> Result<ToolOutput, crate::errors::ToolError> {
    match parse_enabled_call(name, args, ToolSet::ALL) {
        Ok(admitted) => run(&ctx.platform.clock, execute_admitted(ctx, admitted)),
        Err(err) => Err(refused(ctx, name, err)),
    }
}

fn taken(ctx: &Ctx<FakePlatform>) -> Vec<Report> {
    std::mem::take(&mut *ctx.platform.reports.borrow_mut())
}

fn started(tool: &str, sandbox: Option<&str>) -> Report {
    Report::ExecStarted {
        tool: tool.into(),
        sandbox_id: sandbox.map(Into::into),
    }
}

fn ended(tool: &str, sandbox: Option<&str>, error: Option<ErrorKind>) -> Report {
    Report::ExecEnded {
        tool: tool.into(),
        sandbox_id: sandbox.map(Into::into),
        duration_ms: 0,
        error_kind: error.map(|kind| kind.as_str().to_string()),
    }
}

fn stopped(id: &str, reason: StopReason) -> Report {
    Report::SandboxStopped {
        sandbox_id: id.into(),
        reason,
    }
}

#[test]
fn a_sessions_life_is_reported_as_it_happens() {
    let ctx = ctx(300);
    ctx.platform
        .route(START, vec![Answer::steps(200, exited(0))]);
    ctx.platform.route(
        "Post http://api.test/sandboxes/sbx1/fork",
        vec![Answer::new(
            201,
            r#"[{"sandbox": {"sandboxID": "f1", "templateID": "t", "clientID": "c", "envdVersion": "0.6.13"}},
                {"sandbox": {"sandboxID": "f2", "templateID": "t", "clientID": "c", "envdVersion": "0.6.13"}}]"#,
        )],
    );
    ctx.platform.route(
        "Post http://api.test/sandboxes/sbx1/snapshots",
        vec![Answer::new(
            201,
            r#"{"snapshotID":"snap:default","names":[]}"#,
        )],
    );
    ctx.platform.route(
        "Delete http://api.test/sandboxes/",
        vec![Answer::new(204, "")],
    );

    // The call that creates the sandbox reports it before its own start,
    // which carries its id.
    call(&ctx, "run_command", r#"{"command": "true"}"#).unwrap();
    assert_eq!(
        taken(&ctx),
        [
            Report::SandboxStarted {
                sandbox_id: "sbx1".into(),
                template: "code-interpreter-v1".into(),
                origin: Origin::Created,
                owned: true,
                source: None,
            },
            started("run_command", Some("sbx1")),
            ended("run_command", Some("sbx1"), None),
        ]
    );

    // Forks, one handed on (not the host's to kill), and a snapshot.
    call(&ctx, "fork_sandbox", r#"{"count": 2}"#).unwrap();
    let reports = taken(&ctx);
    assert_eq!(reports[0], started("fork_sandbox", Some("sbx1")));
    assert!(matches!(
        &reports[1],
        Report::SandboxStarted { sandbox_id, origin: Origin::Forked, owned: true, source: Some(source), .. }
            if sandbox_id == "f1" && source == "sbx1"
    ));
    assert!(matches!(&reports[2], Report::SandboxStarted { sandbox_id, .. } if sandbox_id == "f2"));
    assert_eq!(reports[3], ended("fork_sandbox", Some("sbx1"), None));
    call(&ctx, "create_snapshot", "{}").unwrap();
    assert_eq!(
        taken(&ctx)[2..],
        [Report::SnapshotCreated {
            sandbox_id: "sbx1".into(),
            snapshot_id: "snap:default".into(),
        }]
    );

    // A call refused before any sandbox: begun and ended at once.
    call(&ctx, "no_such_tool", "{}").unwrap_err();
    assert_eq!(
        taken(&ctx),
        [
            started("no_such_tool", None),
            ended("no_such_tool", None, Some(ErrorKind::InvalidArgument)),
        ]
    );

    // A model's name is bounded and printable before it is reported.
    call(&ctx, &format!("evil\nname{}", "x".repeat(1000)), "{}").unwrap_err();
    let reports = taken(&ctx);
    let Report::ExecStarted { tool, .. } = &reports[0] else {
        panic!("{reports:?}")
    };
    assert_eq!(tool.len(), 64);
    assert!(tool.starts_with("evil?name"), "{tool}");

    // The end: forks first, then the session's own.
    run(&ctx.platform.clock, ctx.shutdown()).unwrap();
    assert_eq!(
        taken(&ctx),
        [
            stopped("f1", StopReason::Killed),
            stopped("f2", StopReason::Killed),
            stopped("sbx1", StopReason::Killed),
        ]
    );
}

#[test]
fn a_sandbox_killed_elsewhere_is_reported_gone_once() {
    let ctx = ctx(300);
    ctx.platform
        .route(START, vec![Answer::steps(200, exited(0))]);
    call(&ctx, "run_command", r#"{"command": "true"}"#).unwrap();
    taken(&ctx);
    // Killed behind the session's back: its refresh finds it gone, at
    // every later call, but the host hears it once.
    ctx.platform.route(
        REFRESH,
        vec![Answer::new(404, r#"{"code":404,"message":"gone"}"#)],
    );
    for _ in 0..2 {
        let err = run(&ctx.platform.clock, ctx.prepare(None)).unwrap_err();
        assert_eq!(err.kind, ErrorKind::SandboxExpired);
    }
    assert_eq!(taken(&ctx), [stopped("sbx1", StopReason::Gone)]);
    // Its kill at the end finds nothing more to report.
    ctx.platform.route(
        "Delete http://api.test/sandboxes/",
        vec![Answer::new(404, r#"{"code":404,"message":"gone"}"#)],
    );
    run(&ctx.platform.clock, ctx.shutdown()).unwrap();
    assert_eq!(taken(&ctx), []);
}

#[test]
fn an_attached_sandbox_is_not_the_hosts_to_kill_and_a_paused_one_is_released() {
    let ctx = ctx_with(crate::config::ConfigInput {
        sandbox_id: Some("sbx1".into()),
        on_timeout: Some(crate::config::OnTimeout::Pause),
        ..Default::default()
    });
    ctx.platform.route(
        "Post http://api.test/v2/sandboxes/sbx1/connect",
        vec![Answer::new(201, CREATED)],
    );
    ctx.platform
        .route(START, vec![Answer::steps(200, exited(0))]);
    call(&ctx, "run_command", r#"{"command": "true"}"#).unwrap();
    assert!(matches!(
        &taken(&ctx)[0],
        Report::SandboxStarted { origin: Origin::Attached, owned: false, template, .. } if template.is_empty()
    ));
    run(&ctx.platform.clock, ctx.shutdown()).unwrap();
    assert_eq!(taken(&ctx), [stopped("sbx1", StopReason::Released)]);
}
