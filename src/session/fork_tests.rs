//! Forks as a session owns them, through real tool calls on the fake
//! platform: made by `fork_sandbox`, addressed by `sandbox_id`, kept alive
//! on their own TTL, killed with the session unless handed on.

use crate::errors::ErrorKind;
use crate::session::platform::fake::{run, Answer};
use crate::testing::*;
use crate::tools::{self, execute_admitted, parse_enabled_call, ToolOutput, ToolSet};

const FORK: &str = "Post http://api.test/sandboxes/sbx1/fork";
const SNAPSHOT: &str = "Post http://api.test/sandboxes/sbx1/snapshots";

fn forks_answer(ids: &[&str], failed: Option<(u16, &str)>) -> Answer {
    let mut entries: Vec<serde_json::Value> = ids
        .iter()
        .map(|id| {
            serde_json::json!({"sandbox": {"sandboxID": id, "templateID": "t", "clientID": "c",
                "envdVersion": "0.6.13", "envdAccessToken": format!("tok-{id}")}})
        })
        .collect();
    if let Some((code, message)) = failed {
        entries.push(serde_json::json!({"error": {"code": code, "message": message}}));
    }
    Answer::new(201, serde_json::to_vec(&entries).unwrap())
}

/// `call-tool` with every tool enabled.
fn call(
    ctx: &crate::session::Ctx<crate::session::platform::fake::FakePlatform>,
    name: &str,
    args: &str,
) -> Result<ToolOutput, crate::errors::ToolError> {
    let admitted = parse_enabled_call(name, args, ToolSet::ALL)?;
    run(&ctx.platform.clock, execute_admitted(ctx, admitted))
}

#[test]
fn forks_are_addressed_by_id_and_killed_with_the_session() {
    let ctx = ctx(300);
    ctx.platform
        .route(START, vec![Answer::steps(200, exited(0))]);
    ctx.platform.route(
        FORK,
        vec![forks_answer(
            &["f1", "f2"],
            Some((429, "too many sandboxes")),
        )],
    );
    ctx.platform.route(
        "Delete http://api.test/sandboxes/",
        vec![Answer::new(204, "")],
    );
    call(&ctx, "run_command", r#"{"command": "true"}"#).unwrap();
    let ToolOutput::ForkSandbox(forks) =
        call(&ctx, "fork_sandbox", r#"{"count": 3, "timeout": 120}"#).unwrap()
    else {
        panic!()
    };
    assert_eq!(forks.sandbox_ids, ["f1", "f2"]);
    assert_eq!(forks.errors.len(), 1);
    assert_eq!(forks.errors[0].kind, ErrorKind::RateLimited);
    let body: serde_json::Value = serde_json::from_str(&ctx.platform.bodies(FORK)[0]).unwrap();
    assert_eq!(body, serde_json::json!({"count": 3, "timeout": 120}));
    // Its answer must arrive even if the call is cancelled.
    assert_eq!(
        ctx.platform
            .header_values(FORK, e2b_wire::host_guest::HEADER_FINISH_ON_CANCEL),
        [Some("1".to_string())]
    );
    // The forks' tokens are secrets too.
    assert!(ctx.secrets().as_slice().contains(&"tok-f2".to_string()));

    // A call naming a fork goes to the fork, with its token.
    call(
        &ctx,
        "run_command",
        r#"{"command": "true", "sandbox_id": "f2"}"#,
    )
    .unwrap();
    let ids = ctx.platform.header_values(START, "e2b-sandbox-id");
    assert_eq!(ids, [Some("sbx1".to_string()), Some("f2".to_string())]);
    let tokens = ctx.platform.header_values(START, "x-access-token");
    assert_eq!(tokens[1].as_deref(), Some("tok-f2"));
    // Its own id, or none, is the session's own sandbox.
    call(
        &ctx,
        "run_command",
        r#"{"command": "true", "sandbox_id": "sbx1"}"#,
    )
    .unwrap();
    call(
        &ctx,
        "run_command",
        r#"{"command": "true", "sandbox_id": ""}"#,
    )
    .unwrap();
    let ids = ctx.platform.header_values(START, "e2b-sandbox-id");
    assert_eq!(
        ids[2..],
        [Some("sbx1".to_string()), Some("sbx1".to_string())]
    );

    // Any other id is refused before anything is sent.
    let sent = ctx.platform.sent.borrow().len();
    let err = call(
        &ctx,
        "run_command",
        r#"{"command": "true", "sandbox_id": "zzz"}"#,
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument);
    assert!(
        err.message
            .contains("Sandbox zzz is not one of this session's"),
        "{}",
        err.message
    );
    assert_eq!(ctx.platform.sent.borrow().len(), sent);
    let err = call(
        &ctx,
        "run_command",
        r#"{"command": "true", "sandbox_id": 7}"#,
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument);

    // The end of the session kills the forks, then its own sandbox.
    assert!(run(&ctx.platform.clock, ctx.shutdown()).unwrap());
    let killed: Vec<String> = ctx
        .platform
        .sent
        .borrow()
        .iter()
        .filter(|(_, r)| r.starts_with("Delete"))
        .map(|(_, r)| r.rsplit('/').next().unwrap().to_string())
        .collect();
    assert_eq!(killed, ["f1", "f2", "sbx1"]);
    assert!(ctx.snapshot().forks.is_empty());
}

#[test]
fn forks_handed_on_outlive_the_session_and_keep_their_own_ttl() {
    let ctx = ctx(300);
    ctx.platform
        .route(START, vec![Answer::steps(200, exited(0))]);
    ctx.platform.route(FORK, vec![forks_answer(&["f1"], None)]);
    ctx.platform.route(
        "Delete http://api.test/sandboxes/",
        vec![Answer::new(204, "")],
    );
    ctx.platform.route(
        "Post http://api.test/sandboxes/f1/timeout",
        vec![Answer::new(204, "")],
    );
    call(&ctx, "run_command", r#"{"command": "true"}"#).unwrap();
    call(&ctx, "fork_sandbox", r#"{"keep": true, "timeout": 60}"#).unwrap();
    // 31 s later, less than half of the fork's 60 s is left: a call in it
    // refreshes it with its own TTL first (the session's own needs none).
    ctx.platform.clock.advance_ms(31_000);
    call(
        &ctx,
        "run_command",
        r#"{"command": "true", "sandbox_id": "f1"}"#,
    )
    .unwrap();
    let refresh = "Post http://api.test/sandboxes/f1/timeout";
    let body: serde_json::Value = serde_json::from_str(&ctx.platform.bodies(refresh)[0]).unwrap();
    assert_eq!(body, serde_json::json!({"timeout": 60}));
    assert!(ctx.platform.sent_ms(REFRESH).is_empty());
    run(&ctx.platform.clock, ctx.shutdown()).unwrap();
    let deletes: Vec<String> = ctx
        .platform
        .sent
        .borrow()
        .iter()
        .filter(|(_, r)| r.starts_with("Delete"))
        .map(|(_, r)| r.clone())
        .collect();
    assert_eq!(deletes, ["Delete http://api.test/sandboxes/sbx1"]);
}

#[test]
fn a_fork_where_none_started_fails_and_snapshots_answer_their_id() {
    let ctx = ctx(300);
    ctx.platform
        .route(START, vec![Answer::steps(200, exited(0))]);
    ctx.platform
        .route(FORK, vec![forks_answer(&[], Some((429, "busy")))]);
    ctx.platform.route(
        SNAPSHOT,
        vec![Answer::new(
            201,
            r#"{"snapshotID":"local/try:default","names":["local/try:default"]}"#,
        )],
    );
    call(&ctx, "run_command", r#"{"command": "true"}"#).unwrap();
    let err = call(&ctx, "fork_sandbox", "{}").unwrap_err();
    assert_eq!(err.kind, ErrorKind::RateLimited);
    assert!(
        err.message.starts_with("Failed to fork sandbox: 429"),
        "{}",
        err.message
    );
    assert!(ctx.snapshot().forks.is_empty());
    let ToolOutput::CreateSnapshot(snap) =
        call(&ctx, "create_snapshot", r#"{"name": "try"}"#).unwrap()
    else {
        panic!()
    };
    assert_eq!(snap.snapshot_id, "local/try:default");
    assert_eq!(ctx.platform.bodies(SNAPSHOT), [r#"{"name":"try"}"#]);
    let dict: serde_json::Value = serde_json::from_str(&tools::success_json(
        &ToolOutput::CreateSnapshot(snap),
        false,
    ))
    .unwrap();
    assert_eq!(
        dict,
        serde_json::json!({"snapshot_id": "local/try:default", "names": ["local/try:default"], "success": true})
    );
}
