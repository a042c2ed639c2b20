//! filesystem.Filesystem over Connect JSON.

use serde_json::{json, Value};

use crate::common::{run, start, start_sandbox};

#[tokio::test]
async fn stat_list_make_move_remove() {
    let (h, sbx) = start_sandbox().await;
    run(
        &h,
        &sbx,
        "mkdir -p d/e && echo hello > d/a.txt && echo x > d/e/f && ln -s /tmp t",
    )
    .await;

    let (status, v) = h.filesystem(&sbx, "Stat", json!({"path": "d/a.txt"})).await;
    assert_eq!(status, 200);
    let e = &v["entry"];
    assert_eq!(e["name"], "a.txt");
    assert_eq!(e["type"], "FILE_TYPE_FILE");
    assert_eq!(e["path"], "/home/user/d/a.txt");
    assert_eq!(e["size"], "6");
    assert_eq!(e["permissions"], "-rw-r--r--");
    assert_eq!(e["owner"], "user");
    assert!(e["modifiedTime"].as_str().unwrap().ends_with('Z'));

    let (_, v) = h
        .filesystem(&sbx, "ListDir", json!({"path": "/home/user/d", "depth": 1}))
        .await;
    let names: Vec<&str> = v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a.txt", "e"]);
    assert_eq!(v["entries"][1]["type"], "FILE_TYPE_DIRECTORY");
    // Permission bits only, as the SDK expects (no Go type bits).
    assert_eq!(v["entries"][1]["mode"], 0o755);
    let (_, v) = h
        .filesystem(&sbx, "ListDir", json!({"path": "d", "depth": 2}))
        .await;
    let paths: Vec<&str> = v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        ["/home/user/d/a.txt", "/home/user/d/e", "/home/user/d/e/f"]
    );
    let (_, v) = h
        .filesystem(&sbx, "ListDir", json!({"path": "/home/user"}))
        .await;
    let t = v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "t")
        .unwrap()
        .clone();
    assert_eq!(t["type"], "FILE_TYPE_DIRECTORY");
    assert_eq!(t["symlinkTarget"], "/tmp");

    let (status, v) = h
        .filesystem(&sbx, "ListDir", json!({"path": "/nope"}))
        .await;
    assert_eq!(status, 404);
    assert_eq!(v["code"], "not_found");
    assert!(v["message"]
        .as_str()
        .unwrap()
        .starts_with("directory not found: "));
    let (status, v) = h
        .filesystem(&sbx, "ListDir", json!({"path": "d/a.txt"}))
        .await;
    assert_eq!(status, 400);
    assert_eq!(
        v,
        json!({"code": "invalid_argument", "message": "path is not a directory: /home/user/d/a.txt"})
    );
    let (status, v) = h.filesystem(&sbx, "Stat", json!({"path": "missing"})).await;
    assert_eq!(status, 404);
    assert_eq!(v["code"], "not_found");

    let (status, v) = h
        .filesystem(&sbx, "MakeDir", json!({"path": "new/deep"}))
        .await;
    assert_eq!(status, 200);
    assert_eq!(v["entry"]["path"], "/home/user/new/deep");
    let (status, v) = h
        .filesystem(&sbx, "MakeDir", json!({"path": "new/deep"}))
        .await;
    assert_eq!(status, 409);
    assert_eq!(v["code"], "already_exists");
    let (status, v) = h
        .filesystem(&sbx, "MakeDir", json!({"path": "/etc/newdir"}))
        .await;
    assert_eq!(status, 403, "{v}");

    let (status, v) = h
        .filesystem(
            &sbx,
            "Move",
            json!({"source": "d/a.txt", "destination": "/tmp/moved/b.txt"}),
        )
        .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["entry"]["path"], "/tmp/moved/b.txt");
    let (events, _) = run(&h, &sbx, "cat /tmp/moved/b.txt").await;
    assert_eq!(crate::common::stdout_of(&events), "hello\n");
    let (status, _) = h
        .filesystem(&sbx, "Move", json!({"source": "gone", "destination": "x"}))
        .await;
    assert_eq!(status, 404);

    let (status, _) = h.filesystem(&sbx, "Remove", json!({"path": "d"})).await;
    assert_eq!(status, 200);
    let (status, _) = h.filesystem(&sbx, "Stat", json!({"path": "d"})).await;
    assert_eq!(status, 404);
    let (status, _) = h
        .filesystem(&sbx, "Remove", json!({"path": "/etc/hostname"}))
        .await;
    assert_eq!(status, 403);
    h.server.shutdown().await;
}

#[tokio::test]
async fn sandboxes_do_not_see_each_other() {
    let h = start().await;
    let a = h.create_default().await;
    let b = h.create_default().await;
    run(
        &h,
        &a,
        "echo secret > /home/user/s.txt; echo t > /tmp/t.txt",
    )
    .await;
    let (events, _) = run(&h, &b, "ls /home/user /tmp; ls /home").await;
    assert_eq!(
        crate::common::stdout_of(&events),
        "/home/user:\n\n/tmp:\nuser\n"
    );
    let (status, v): (u16, Value) = h
        .filesystem(&b, "Stat", json!({"path": "/home/user/s.txt"}))
        .await;
    assert_eq!(status, 404, "{v}");
    h.server.shutdown().await;
}
