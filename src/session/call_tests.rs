//! The session's keep-alive and retries, driven through real tool calls
//! on a virtual clock: canned answers, in milliseconds, with no server and
//! no wasm. (Test-only: the session itself never imports the tools.)

use crate::config::ConfigInput;
use crate::session::platform::fake::{run, Answer, Step, WALL_START_NS};
use crate::session::platform::Platform;
use crate::testing::*;
use crate::tools::{execute, ToolCall, ToolOutput};

#[test]
fn the_heartbeat_refreshes_every_half_ttl_while_a_call_runs() {
    let ctx = ctx(300);
    let mut steps = vec![started(7), Step::Wait(400_000), stdout("done\n")];
    steps.extend(exited(0));
    ctx.platform.route(START, vec![Answer::steps(200, steps)]);
    let out = run(&ctx.platform.clock, execute(&ctx, command("make", Some(0)))).unwrap();
    let ToolOutput::RunCommand(out) = out else {
        panic!("{out:?}")
    };
    assert_eq!((out.stdout.as_str(), out.exit_code), ("done\n", 0));
    assert_eq!(ctx.platform.sent_ms(REFRESH), vec![150_000, 300_000]);
    // The last beat counts as the last refresh: the next call at 401 s
    // (101 s after it) needs none.
    assert!(!ctx.snapshot().keep_alive.due(401_000_000_000));
}

#[test]
fn a_long_call_started_just_before_half_the_ttl_is_refreshed_at_half_the_ttl() {
    let ctx = ctx(300);
    ctx.platform
        .route(START, vec![lasting(1), lasting(200_000)]);
    run(&ctx.platform.clock, execute(&ctx, command("true", None))).unwrap();
    // 149 s after the creation no refresh is due yet; the long call
    // that starts then must be refreshed at 150 s (half a TTL of
    // margin), not half a TTL after its own start (299 s, 1 s before
    // the sandbox would expire).
    run(&ctx.platform.clock, async {
        ctx.platform.sleep_ns(149_000_000_000).await;
        execute(&ctx, command("make", Some(0))).await
    })
    .unwrap();
    assert_eq!(ctx.platform.sent_ms(REFRESH), vec![150_000, 300_000]);
}

#[test]
fn attaching_to_a_sandbox_with_longer_left_never_shortens_it() {
    let ctx = ctx_with(ConfigInput {
        timeout_seconds: Some(300),
        sandbox_id: Some("sbx1".into()),
        ..Default::default()
    });
    // It has an hour left; our TTL is five minutes.
    let end = humantime::format_rfc3339(
        std::time::UNIX_EPOCH + std::time::Duration::from_nanos(WALL_START_NS + 3_600_000_000_000),
    );
    ctx.platform.route(
        "Get http://api.test/sandboxes/sbx1",
        vec![Answer::new(
            200,
            format!(r#"{{"sandboxID":"sbx1","state":"running","endAt":"{end}"}}"#),
        )],
    );
    ctx.platform.route(
        "Post http://api.test/v2/sandboxes/sbx1/connect",
        vec![Answer::new(
            200,
            r#"{"sandboxID":"sbx1","templateID":"t","clientID":"c","envdVersion":"0.6.13"}"#,
        )],
    );
    ctx.platform.route(START, vec![lasting(400_000)]);
    run(&ctx.platform.clock, execute(&ctx, command("make", Some(0)))).unwrap();
    // A refresh to 300 s from now would have cut its hour short.
    assert!(ctx.platform.sent_ms(REFRESH).is_empty());
    assert!(!ctx.snapshot().keep_alive.due(3_449_000_000_000));
    assert!(ctx.snapshot().keep_alive.due(3_451_000_000_000));
}

#[test]
fn a_call_between_refreshes_refreshes_only_when_less_than_half_is_left() {
    let ctx = ctx(300);
    let mut steps = vec![started(7)];
    steps.extend(exited(0));
    ctx.platform.route(START, vec![Answer::steps(200, steps)]);
    run(&ctx.platform.clock, execute(&ctx, command("true", None))).unwrap();
    assert_eq!(ctx.platform.sent_ms(CREATE), vec![0]);
    assert!(ctx.platform.sent_ms(REFRESH).is_empty());
    // 149 s later: still more than half left.
    run(&ctx.platform.clock, async {
        ctx.platform.sleep_ns(149_000_000_000).await;
        execute(&ctx, command("true", None)).await
    })
    .unwrap();
    assert!(ctx.platform.sent_ms(REFRESH).is_empty());
    // 151 s after the creation: refreshed before the call.
    run(&ctx.platform.clock, async {
        ctx.platform.sleep_ns(2_000_000_000).await;
        execute(&ctx, command("true", None)).await
    })
    .unwrap();
    assert_eq!(ctx.platform.sent_ms(REFRESH), vec![151_000]);
}

#[test]
fn a_busy_api_and_a_reset_listing_are_retried_with_backoff() {
    let ctx = ctx(300);
    ctx.platform.route(
        CREATE,
        vec![
            Answer::new(503, r#"{"code":503,"message":"busy"}"#),
            Answer::new(429, r#"{"code":429,"message":"slow down"}"#).header("retry-after", "2"),
            Answer::new(
                201,
                r#"{"sandboxID":"sbx1","templateID":"t","clientID":"c","envdVersion":"0.6.13"}"#,
            ),
        ],
    );
    let list = "Post http://sbx.test/filesystem.Filesystem/ListDir";
    ctx.platform.route(
        list,
        vec![Answer::reset(), Answer::new(200, r#"{"entries":[]}"#)],
    );
    let call = ToolCall::ListFiles(crate::tools::list_files::ListFilesArgs {
        path: "/".into(),
        depth: 1,
    });
    run(&ctx.platform.clock, execute(&ctx, call)).unwrap();
    // 50 ms of backoff (the jitter is 0 here), then the Retry-After.
    assert_eq!(ctx.platform.sent_ms(CREATE), vec![0, 50, 2_050]);
    assert_eq!(ctx.platform.sent_ms(list), vec![2_050, 2_100]);
}

#[test]
fn a_create_that_may_have_made_a_sandbox_is_retried_with_its_idempotency_key() {
    let ctx = ctx(300);
    let made = r#"{"sandboxID":"sbx1","templateID":"t","clientID":"c","envdVersion":"0.6.13"}"#;
    ctx.platform.route(
        CREATE,
        vec![
            Answer::new(502, "bad gateway"),
            Answer::reset(),
            Answer::new(201, made),
        ],
    );
    ctx.platform
        .route(START, vec![Answer::steps(200, exited(0))]);
    run(&ctx.platform.clock, execute(&ctx, command("true", None))).unwrap();
    assert_eq!(ctx.platform.sent_ms(CREATE).len(), 3);
    // One key for the three attempts: E2B answers a repeat with the
    // sandbox the first made, so a retry never makes a second one.
    let keys = ctx.platform.header_values(CREATE, "idempotency-key");
    assert!(
        keys[0]
            .as_deref()
            .is_some_and(|k| k.starts_with("e2b-tools-")),
        "{keys:?}"
    );
    assert!(keys.iter().all(|k| *k == keys[0]), "{keys:?}");
    assert_eq!(
        ctx.snapshot().sandbox.map(|h| h.id).as_deref(),
        Some("sbx1")
    );
}

#[test]
fn a_prepared_sandbox_waits_on_a_short_ttl_and_gets_the_configured_one_when_handed_out() {
    let ctx = ctx(300);
    let health = "Get http://sbx.test/health";
    ctx.platform.route(health, vec![Answer::new(204, "")]);
    let mut process = vec![started(1)];
    process.extend(exited(0));
    ctx.platform.route(START, vec![Answer::steps(200, process)]);
    let id = run(&ctx.platform.clock, ctx.prepare(Some(60))).unwrap();
    assert_eq!(id, "sbx1");
    // Its envd asked once: a sandbox that starts on first use starts now;
    // and one process run, so the first call's is not the sandbox's first.
    assert_eq!(ctx.platform.sent_ms(health).len(), 1);
    let sent = &ctx.platform.bodies(START)[0];
    let warm_up: serde_json::Value =
        serde_json::from_str(&sent[sent.find('{').unwrap()..]).unwrap();
    assert_eq!(
        warm_up["process"]["args"],
        serde_json::json!(["-l", "-c", "true"])
    );
    // And an empty cell, so a first `run_code` finds its kernel started.
    let cells = ctx.platform.bodies("/execute");
    assert_eq!(cells.len(), 1, "{cells:?}");
    assert!(cells[0].contains(r#""code":"""#), "{cells:?}");
    let body: serde_json::Value = serde_json::from_str(&ctx.platform.bodies(CREATE)[0]).unwrap();
    assert_eq!(body["timeout"], 60, "created on the pool's TTL");
    assert_eq!(
        ctx.snapshot().settings.configured_ttl,
        Some(300),
        "the configuration kept"
    );
    assert!(
        ctx.snapshot().keep_alive.due(31_000_000_000),
        "due at half of 60 s"
    );
    // Handed out: a refresh to the configured TTL, which is also the probe.
    run(&ctx.platform.clock, ctx.prepare(None)).unwrap();
    assert_eq!(ctx.platform.bodies(REFRESH), [r#"{"timeout":300}"#]);
    assert!(!ctx.snapshot().keep_alive.due(149_000_000_000));
    // A sandbox that died while it waited is found out, not handed on.
    ctx.platform.route(
        REFRESH,
        vec![Answer::new(404, r#"{"code":404,"message":"gone"}"#)],
    );
    let err = run(&ctx.platform.clock, ctx.prepare(None)).unwrap_err();
    assert_eq!(err.kind, crate::errors::ErrorKind::SandboxExpired);
    assert_eq!(ctx.platform.sent_ms(CREATE).len(), 1);
    // Only a new sandbox is warmed.
    assert_eq!(ctx.platform.sent_ms(START).len(), 1);
}
