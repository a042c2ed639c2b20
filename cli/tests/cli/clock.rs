//! The scaled guest clock: with the local server's TTLs and the guest's
//! clock both running 10x fast, the guest's heartbeat (every TTL/2 of guest
//! time) keeps a sandbox alive through a call longer than its real TTL. On
//! a real clock the same heartbeat comes too late and the sandbox dies.

use e2b_tools_cli::{Backend, BackendKind, LocalBackendOptions};
use e2b_tools_host::{
    e2b_env, ClockMode, ComponentSource, ErrorKind, RunCodeArgs, RunCodeOutput, Runtime,
    SandboxConfig, Session, SessionOptions, ToolError,
};

const SCALE: f64 = 10.0;

/// Runs a 3 s sleep in a sandbox whose 10 s TTL lasts 1 s of real time.
async fn long_call_with_clock(clock: ClockMode) -> Result<RunCodeOutput, ToolError> {
    let runtime = Runtime::load(ComponentSource::Embedded).expect("component loads");
    let local = LocalBackendOptions {
        time_scale: SCALE,
        ..LocalBackendOptions::default()
    };
    let backend = Backend::start(BackendKind::Local, &Default::default(), &local)
        .await
        .expect("local server starts");
    let session = Session::open(
        &runtime,
        SessionOptions {
            config: SandboxConfig {
                timeout_seconds: Some(10),
                ..SandboxConfig::default()
            },
            env: backend.session_env(&e2b_env(std::iter::empty())),
            clock,
            ..SessionOptions::default()
        },
    )
    .await
    .expect("session opens");
    let result = session
        .run_code(&RunCodeArgs {
            code: "import time\ntime.sleep(3)\nprint('done')".into(),
            language: None,
            envs: vec![],
            timeout_seconds: None,
        })
        .await
        .expect("the call returns");
    let _ = session.shutdown().await;
    backend.shutdown().await;
    result
}

#[tokio::test]
async fn a_scaled_clock_drives_the_heartbeat_at_scaled_speed() {
    let out = long_call_with_clock(ClockMode::Scaled(SCALE))
        .await
        .expect("the sandbox outlives the call");
    assert_eq!(out.stdout, "done\n", "{out:?}");
}

#[tokio::test]
async fn on_a_real_clock_the_same_heartbeat_is_too_slow() {
    let err = long_call_with_clock(ClockMode::Real)
        .await
        .expect_err("the sandbox dies during the call");
    // Killed by its TTL mid-call, not failing some other way: the guest
    // confirms through `/health` that the sandbox is gone.
    assert_eq!(err.kind, ErrorKind::SandboxExpired, "{err:?}");
    assert!(
        err.message.starts_with(
            "Failed to run code: The sandbox was killed while the request was in progress."
        ),
        "{}",
        err.message
    );
}
