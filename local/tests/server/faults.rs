//! Fault injection.

use std::time::{Duration, Instant};

use e2b_local::{Fault, FaultRule};
use reqwest::Method;
use serde_json::{json, Value};

use crate::common::{parse_stream, start, start_sandbox};

fn rule(prefix: &str, times: usize, fault: Fault) -> FaultRule {
    FaultRule {
        method: None,
        path_prefix: prefix.into(),
        times,
        fault,
    }
}

#[tokio::test]
async fn status_and_delay() {
    let h = start().await;
    h.server.faults().inject(FaultRule {
        method: Some(Method::POST),
        ..rule(
            "/v2/sandboxes",
            1,
            Fault::Status {
                status: 503,
                message: "busy".into(),
                retry_after: Some(2),
                should_retry: None,
            },
        )
    });
    let resp = h.try_create(json!({"templateID": "base"})).await;
    assert_eq!(resp.status(), 503);
    assert_eq!(resp.headers()["retry-after"], "2");
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v, json!({"code": 503, "message": "busy"}));
    // Only once.
    let sbx = h.create_default().await;
    h.server.faults().inject(rule(
        "/sandboxes/",
        1,
        Fault::Delay(Duration::from_millis(400)),
    ));
    let t = Instant::now();
    let resp = h
        .api_send(Method::GET, &format!("/sandboxes/{}", sbx.id))
        .await;
    assert_eq!(resp.status(), 200);
    assert!(t.elapsed() >= Duration::from_millis(400));
    h.server
        .faults()
        .inject(rule("/sandboxes/", 5, Fault::Delay(Duration::from_secs(5))));
    h.server.faults().clear();
    let t = Instant::now();
    h.api_send(Method::GET, &format!("/sandboxes/{}", sbx.id))
        .await;
    assert!(t.elapsed() < Duration::from_secs(4));
    h.server.shutdown().await;
}

#[tokio::test]
async fn reset_and_malformed_streams() {
    let (h, sbx) = start_sandbox().await;
    let start_body = || {
        e2b_wire::connect::encode_envelope(
            0,
            json!({"process": {"cmd": "/bin/bash", "args": ["-c", "echo one; sleep 0.2; echo two"]}})
                .to_string()
                .as_bytes(),
        )
    };
    let send = || {
        h.sandbox(&sbx, 49983, Method::POST, "/process.Process/Start")
            .header("content-type", "application/connect+json")
            .body(start_body())
            .send()
    };

    h.server.faults().inject(rule(
        "/process.Process/Start",
        1,
        Fault::ResetAfter { bytes: 10 },
    ));
    let resp = send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(
        resp.bytes().await.is_err(),
        "the body must fail, not end cleanly"
    );

    h.server
        .faults()
        .inject(rule("/process.Process/Start", 1, Fault::EndWithoutEndEvent));
    let bytes = send().await.unwrap().bytes().await.unwrap();
    let (events, end) = parse_stream(&bytes);
    assert!(events.iter().all(|e| e.pointer("/event/end").is_none()));
    assert!(events.iter().any(|e| e.pointer("/event/data").is_some()));
    assert!(end.is_null());

    h.server
        .faults()
        .inject(rule("/process.Process/Start", 1, Fault::TruncatedEnvelope));
    let bytes = send().await.unwrap().bytes().await.unwrap();
    let mut dec = e2b_wire::connect::EnvelopeDecoder::new(1 << 20);
    dec.push(&bytes);
    assert!(dec.next_envelope().unwrap().is_some());
    assert!(dec.next_envelope().unwrap().is_none());
    assert!(dec.finish().is_err());

    // Unaffected afterwards.
    let bytes = send().await.unwrap().bytes().await.unwrap();
    let (_, end) = parse_stream(&bytes);
    assert_eq!(end, json!({}));

    h.server
        .faults()
        .inject(rule("/files", 1, Fault::BlankNdjsonLine));
    let resp = h.upload(&sbx, "l.txt", "a\nb\n").await;
    assert_eq!(resp.status(), 200);
    let resp = h
        .sandbox_send(&sbx, 49983, Method::GET, "/files?path=l.txt")
        .await;
    h.server
        .faults()
        .inject(rule("/files", 1, Fault::BlankNdjsonLine));
    let resp2 = h
        .sandbox_send(&sbx, 49983, Method::GET, "/files?path=l.txt")
        .await;
    assert_eq!(resp.text().await.unwrap(), "a\nb\n");
    assert_eq!(resp2.text().await.unwrap(), "a\n\nb\n");
    h.server.shutdown().await;
}

#[tokio::test]
async fn expire_now_makes_the_sandbox_gone() {
    let (h, sbx) = start_sandbox().await;
    h.server.faults().expire_now(&sbx.id);
    let resp = h.sandbox_send(&sbx, 49983, Method::GET, "/health").await;
    assert_eq!(resp.status(), 502);
    let resp = h
        .api_send(Method::GET, &format!("/sandboxes/{}", sbx.id))
        .await;
    assert_eq!(resp.status(), 404);
    h.server.shutdown().await;
}

#[tokio::test]
async fn expiry_cuts_a_running_execution() {
    let (h, sbx) = start_sandbox().await;
    let mut resp = h
        .sandbox(&sbx, 49999, Method::POST, "/execute")
        .json(&json!({"code": "import time\nprint('begun', flush=True)\ntime.sleep(30)"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let mut seen = String::new();
    while !seen.contains("begun") {
        let chunk = resp.chunk().await.unwrap().expect("output before the end");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    h.server.faults().expire_now(&sbx.id);
    let rest = crate::common::read_until_end(&mut resp).await;
    assert!(rest.is_err(), "the execution stream must be cut");
    h.server.shutdown().await;
}
