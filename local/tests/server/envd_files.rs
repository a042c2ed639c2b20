//! envd's /files REST route.

use reqwest::Method;
use serde_json::{json, Value};

use crate::common::{run, start_sandbox, stdout_of};

#[tokio::test]
async fn upload_download_roundtrip() {
    let (h, sbx) = start_sandbox().await;
    // multipart with the path in the query
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes("héllo".as_bytes().to_vec())
            .file_name("/home/user/x/a.txt"),
    );
    let resp = h
        .sandbox(
            &sbx,
            49983,
            Method::POST,
            "/files?path=%2Fhome%2Fuser%2Fx%2Fa.txt",
        )
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(
        v,
        json!([{"path": "/home/user/x/a.txt", "name": "a.txt", "type": "file"}])
    );
    // multipart without a path: the filenames carry them
    let form = crate::common::files_form(&[("/tmp/one.txt", b"one"), ("rel/two.txt", b"two")]);
    let v: Value = h
        .sandbox(&sbx, 49983, Method::POST, "/files")
        .multipart(form)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v[0]["path"], "/tmp/one.txt");
    assert_eq!(v[1]["path"], "/home/user/rel/two.txt");
    // octet-stream
    let resp = h
        .sandbox(&sbx, 49983, Method::POST, "/files?path=bin.dat")
        .header("content-type", "application/octet-stream")
        .body(vec![0u8, 255, 1])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let resp = h
        .sandbox_send(
            &sbx,
            49983,
            Method::GET,
            "/files?path=%2Fhome%2Fuser%2Fbin.dat",
        )
        .await;
    assert_eq!(resp.status(), 200);
    assert!(resp.headers().get("content-encoding").is_none());
    assert_eq!(resp.bytes().await.unwrap().as_ref(), &[0u8, 255, 1]);

    // what the API wrote, commands see; what commands write, the API reads
    let (events, _) = run(
        &h,
        &sbx,
        "cat /home/user/x/a.txt /tmp/one.txt rel/two.txt; echo made > /tmp/by-cmd.txt",
    )
    .await;
    assert_eq!(stdout_of(&events), "hélloonetwo");
    let resp = h
        .sandbox_send(&sbx, 49983, Method::GET, "/files?path=/tmp/by-cmd.txt")
        .await;
    assert_eq!(resp.text().await.unwrap(), "made\n");
    h.server.shutdown().await;
}

#[tokio::test]
async fn files_errors() {
    let (h, sbx) = start_sandbox().await;
    let resp = h
        .sandbox_send(&sbx, 49983, Method::GET, "/files?path=/tmp/missing.txt")
        .await;
    assert_eq!(resp.status(), 404);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(
        v,
        json!({"code": 404, "message": "path '/tmp/missing.txt' does not exist"})
    );
    let resp = h
        .sandbox_send(&sbx, 49983, Method::GET, "/files?path=/tmp")
        .await;
    assert_eq!(resp.status(), 400);
    for path in ["/proc/forbidden.txt", "/etc/x.txt"] {
        let resp = h
            .sandbox(&sbx, 49983, Method::POST, &format!("/files?path={path}"))
            .header("content-type", "application/octet-stream")
            .body("x")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 500, "{path}");
        let v: Value = resp.json().await.unwrap();
        assert!(
            v["message"]
                .as_str()
                .unwrap()
                .starts_with("error opening file"),
            "{v}"
        );
    }
    assert!(!std::path::Path::new("/etc/x.txt").exists());
    let resp = h
        .sandbox(&sbx, 49983, Method::POST, "/files")
        .header("content-type", "application/octet-stream")
        .body("x")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let resp = h
        .sandbox(&sbx, 49983, Method::POST, "/files?path=a")
        .header("content-type", "text/plain")
        .body("x")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    // Writing through a symlink that points outside stays inside the sandbox view.
    run(&h, &sbx, "ln -s /etc/passwd /home/user/pw").await;
    let resp = h.upload(&sbx, "pw", "x").await;
    assert_eq!(resp.status(), 500);
    h.server.shutdown().await;
}

#[tokio::test]
async fn gzip_octet_stream_upload() {
    use std::io::Write;
    let (h, sbx) = start_sandbox().await;
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(b"compressed text").unwrap();
    let gz = enc.finish().unwrap();
    let resp = h
        .sandbox(&sbx, 49983, Method::POST, "/files?path=z.txt")
        .header("content-type", "application/octet-stream")
        .header("content-encoding", "gzip")
        .body(gz)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let resp = h
        .sandbox_send(&sbx, 49983, Method::GET, "/files?path=z.txt")
        .await;
    assert_eq!(resp.text().await.unwrap(), "compressed text");
    let resp = h
        .sandbox(&sbx, 49983, Method::POST, "/files?path=bad.txt")
        .header("content-type", "application/octet-stream")
        .header("content-encoding", "gzip")
        .body("not gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let resp = h
        .sandbox(&sbx, 49983, Method::POST, "/files?path=bad.txt")
        .header("content-type", "application/octet-stream")
        .header("content-encoding", "br")
        .body("x")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    h.server.shutdown().await;
}

/// This process's resident memory in KiB (the server runs in it).
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

#[tokio::test]
async fn a_file_larger_than_memory_limits_streams_without_the_server_growing() {
    use futures_util::StreamExt;
    const SIZE: u64 = 1 << 30;
    let (h, sbx) = start_sandbox().await;
    // Sparse: 1 GiB of zeros (twice the memory limit) that take no disk.
    let (events, _) = run(&h, &sbx, &format!("truncate -s {SIZE} /tmp/big && echo ok")).await;
    assert_eq!(stdout_of(&events), "ok\n");
    let before = rss_kib();
    let resp = h
        .sandbox_send(&sbx, 49983, Method::GET, "/files?path=%2Ftmp%2Fbig")
        .await;
    assert_eq!(resp.status(), 200);
    let mut body = resp.bytes_stream();
    let (mut seen, mut peak) = (0u64, before);
    while let Some(chunk) = body.next().await {
        let chunk = chunk.unwrap();
        if seen / (64 << 20) != (seen + chunk.len() as u64) / (64 << 20) {
            peak = peak.max(rss_kib());
        }
        seen += chunk.len() as u64;
    }
    assert_eq!(seen, SIZE);
    // The other tests of this binary run their servers in this process at
    // the same time (CI saw 76 MiB from them): a quarter of the file still
    // tells a stream from a server that holds the file.
    assert!(
        peak - before < 256 << 10,
        "memory grew by {} KiB while streaming 1 GiB",
        peak - before
    );
    h.server.shutdown().await;
}
