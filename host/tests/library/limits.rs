//! What the host enforces around the component: the memory cap (a trap is
//! a clean error and the host survives) and the outbound allow-list (a
//! request to any other host is refused before it leaves).

use e2b_tools_host::{
    ComponentSource, OutboundPolicy, Runtime, Session, SessionError, SessionOptions,
};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

fn runtime() -> Runtime {
    Runtime::load(ComponentSource::Embedded).expect("the embedded component loads")
}

#[tokio::test]
async fn growing_past_the_memory_cap_traps_cleanly_and_the_host_survives() {
    let runtime = runtime();
    let capped = Session::open(
        &runtime,
        SessionOptions {
            memory_limit: 16 << 20,
            ..SessionOptions::default()
        },
    )
    .await
    .expect("the component starts within 16 MiB");

    // Passing 24 MiB (under write_file's 32 MiB limit, so the host lets it
    // through) makes the component grow its memory past the cap.
    let big = "x".repeat(24 << 20);
    let err = capped
        .write_file("/home/user/big.txt", &big)
        .await
        .expect_err("the call traps");
    assert!(matches!(err, SessionError::Trapped(_)), "{err}");

    let err = capped
        .list_tools()
        .await
        .expect_err("the session is closed");
    assert!(matches!(err, SessionError::Dead(_)), "{err}");

    // The host and the runtime are fine: a new session works.
    let fresh = Session::open(&runtime, SessionOptions::default())
        .await
        .expect("a new session opens");
    assert_eq!(fresh.list_tools().await.expect("catalog").len(), 6);
}

/// A TCP server that counts connections and closes them at once.
async fn counting_server() -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let count = Arc::new(AtomicUsize::new(0));
    let counter = count.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            drop(stream);
        }
    });
    (url, count)
}

fn env_pointing_at(url: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            "E2B_API_KEY".to_string(),
            "e2b_0123456789abcdef".to_string(),
        ),
        ("E2B_API_URL".to_string(), url.to_string()),
        ("E2B_SANDBOX_URL".to_string(), url.to_string()),
    ])
}

#[tokio::test]
async fn requests_outside_the_allow_list_never_leave_the_host() {
    let runtime = runtime();
    let (url, connections) = counting_server().await;

    // The component is told to use our server, but the policy allows only E2B.
    let denied = Session::open(
        &runtime,
        SessionOptions {
            env: env_pointing_at(&url),
            policy: Some(OutboundPolicy::for_endpoints(None, None, None).unwrap()),
            ..SessionOptions::default()
        },
    )
    .await
    .unwrap();
    let result = denied
        .call_json("run_code", &json!({"code": "1"}))
        .await
        .unwrap();
    assert_eq!(result["success"], false, "{result}");
    assert_eq!(connections.load(Ordering::SeqCst), 0, "{result}");

    // With the derived policy the same server is reachable: the refusal
    // above was the policy's, not the network's.
    let allowed = Session::open(
        &runtime,
        SessionOptions {
            env: env_pointing_at(&url),
            ..SessionOptions::default()
        },
    )
    .await
    .unwrap();
    let result = allowed
        .call_json("run_code", &json!({"code": "1"}))
        .await
        .unwrap();
    assert_eq!(
        result["success"], false,
        "the server answers nothing: {result}"
    );
    assert!(connections.load(Ordering::SeqCst) > 0, "{result}");
}

#[tokio::test]
async fn malformed_endpoint_urls_are_refused_when_the_session_opens() {
    let runtime = runtime();
    let err = Session::open(
        &runtime,
        SessionOptions {
            env: BTreeMap::from([("E2B_API_URL".to_string(), "not a url".to_string())]),
            ..SessionOptions::default()
        },
    )
    .await
    .expect_err("a malformed E2B_API_URL is refused");
    assert!(matches!(err, SessionError::InvalidOptions(_)), "{err}");
}
