//! Sessions through the library: calls on one session are serialized.

use e2b_tools_cli::{Backend, BackendKind, LocalBackendOptions};
use e2b_tools_host::{e2b_env, ComponentSource, Runtime, Session, SessionOptions};
use serde_json::json;

#[tokio::test]
async fn concurrent_calls_on_one_session_wait_their_turn() {
    let runtime = Runtime::load(ComponentSource::Embedded).expect("component loads");
    let backend = Backend::start(
        BackendKind::Local,
        &Default::default(),
        &LocalBackendOptions::default(),
    )
    .await
    .expect("local server starts");
    let session = Session::open(
        &runtime,
        SessionOptions {
            env: backend.session_env(&e2b_env(std::iter::empty())),
            ..SessionOptions::default()
        },
    )
    .await
    .expect("session opens");

    // The second call starts while the first sleeps; it must run after it.
    let slow = json!({"code": "import time\ntime.sleep(1)\ny = 1"});
    let dependent = json!({"code": "y + 1"});
    let (first, second) = tokio::join!(
        session.call_json("run_code", &slow),
        session.call_json("run_code", &dependent),
    );
    let (first, second) = (first.unwrap(), second.unwrap());
    assert_eq!(first["success"], true, "{first}");
    assert_eq!(second["text"], "2", "{second}");

    assert!(session.shutdown().await.expect("shutdown"));
    backend.shutdown().await;
}
