//! Outbound connections are pooled: several requests of a session to the
//! same server reuse one keep-alive connection.

use bytes::Bytes;
use e2b_tools_host::{ComponentSource, Runtime, Session, SessionOptions};
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::json;
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// An HTTP/1.1 keep-alive server answering every request with a 503, so
/// each tool call's sandbox creation fails and the next call tries again.
async fn refusing_server() -> (String, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let connections = Arc::new(AtomicUsize::new(0));
    let requests = Arc::new(AtomicUsize::new(0));
    let (conn_count, req_count) = (connections.clone(), requests.clone());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            conn_count.fetch_add(1, Ordering::SeqCst);
            let req_count = req_count.clone();
            tokio::spawn(async move {
                let service = service_fn(move |_request| {
                    req_count.fetch_add(1, Ordering::SeqCst);
                    async {
                        let body = json!({"code": 503, "message": "no capacity"}).to_string();
                        Ok::<_, Infallible>(
                            hyper::Response::builder()
                                .status(503)
                                .header("content-type", "application/json")
                                .body(Full::new(Bytes::from(body)))
                                .unwrap(),
                        )
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .keep_alive(true)
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (url, connections, requests)
}

#[tokio::test]
async fn requests_to_one_server_share_a_connection() {
    let runtime = Runtime::load(ComponentSource::Embedded).expect("component loads");
    let (url, connections, requests) = refusing_server().await;
    let env = BTreeMap::from([
        (
            "E2B_API_KEY".to_string(),
            "e2b_0123456789abcdef".to_string(),
        ),
        ("E2B_API_URL".to_string(), url.clone()),
        ("E2B_SANDBOX_URL".to_string(), url),
    ]);
    let session = Session::open(
        &runtime,
        SessionOptions {
            env,
            ..SessionOptions::default()
        },
    )
    .await
    .unwrap();
    for _ in 0..3 {
        let result = session
            .call_json("run_code", &json!({"code": "1"}))
            .await
            .unwrap();
        assert_eq!(result["success"], false, "{result}");
    }
    assert!(requests.load(Ordering::SeqCst) >= 3);
    assert_eq!(connections.load(Ordering::SeqCst), 1);
}
