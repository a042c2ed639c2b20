//! The `code-interpreter-v1` template's Python environment: its sandboxes
//! (and only theirs) get the venv `scripts/bootstrap` installs, read-only,
//! first on `PATH`, so a first data-analysis snippet runs.
//!
//! The venv comes from `E2B_TOOLS_TEMPLATES_DIR` (the server reads the same
//! variable). Unset is a failure, not a skip: `scripts/bootstrap` installs
//! it (default `/var/lib/e2b-tools/templates`) and `scripts/test` exports it.

use reqwest::Method;
use serde_json::{json, Value};

use crate::common::{run, start, start_sandbox, stderr_of, stdout_of, Harness, Sbx};

/// The host directory of the `code-interpreter-v1` venv, checked installed.
fn template_venv() -> String {
    let dir = std::env::var("E2B_TOOLS_TEMPLATES_DIR").unwrap_or_else(|_| {
        panic!(
            "E2B_TOOLS_TEMPLATES_DIR is not set: run scripts/bootstrap (it installs the \
             code-interpreter-v1 template's Python stack in /var/lib/e2b-tools/templates) \
             and export E2B_TOOLS_TEMPLATES_DIR=/var/lib/e2b-tools/templates, as scripts/test does"
        )
    });
    let venv = std::path::Path::new(&dir)
        .join("code-interpreter-v1")
        .canonicalize()
        .unwrap_or_else(|e| panic!("{dir}/code-interpreter-v1: {e}: run scripts/bootstrap"));
    assert!(
        venv.join(".e2b-template").is_file(),
        "{} is not a finished template environment: run scripts/bootstrap",
        venv.display()
    );
    venv.to_str().expect("a UTF-8 path").to_string()
}

/// The version of `package` the template's requirements pin.
fn pinned(package: &str) -> &'static str {
    let reqs = include_str!("../../templates/code-interpreter-v1/requirements.txt");
    let prefix = format!("{package}==");
    reqs.lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .unwrap_or_else(|| panic!("{package} is not pinned"))
}

/// Runs `code` in the Python kernel: the answer's NDJSON lines.
async fn execute(h: &Harness, sbx: &Sbx, code: &str) -> Vec<Value> {
    let resp = h
        .sandbox(sbx, 49999, Method::POST, "/execute")
        .json(&json!({ "code": code }))
        .send()
        .await
        .unwrap();
    let status = resp.status();
    let text = resp.text().await.unwrap();
    assert_eq!(status, 200, "{text}");
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn of_type<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["type"] == kind).collect()
}

/// Stdout of a shell command run as `bash -l -c`, as the SDKs send it
/// (a login shell: Debian's /etc/profile resets PATH).
async fn login_shell(h: &Harness, sbx: &Sbx, cmd: &str) -> (String, String, Value) {
    let (events, end) = h
        .stream(
            sbx,
            "/process.Process/Start",
            json!({"process": {"cmd": "/bin/bash", "args": ["-l", "-c", cmd]}, "stdin": false}),
            &[],
        )
        .await;
    (stdout_of(&events), stderr_of(&events), end)
}

#[tokio::test]
async fn code_interpreter_sandboxes_have_the_data_stack() {
    let venv = template_venv();
    let h = start().await;
    let sbx = h.create(json!({"templateID": "code-interpreter-v1"})).await;

    let lines = execute(
        &h,
        &sbx,
        "import sys, pandas as pd, numpy as np, matplotlib, scipy, sklearn, requests\n\
         print(sys.prefix)\n\
         int(pd.DataFrame({'a': np.arange(1, 4)}).a.sum())",
    )
    .await;
    assert!(of_type(&lines, "error").is_empty(), "{lines:?}");
    let stdout: String = of_type(&lines, "stdout")
        .iter()
        .filter_map(|l| l["text"].as_str())
        .collect();
    assert_eq!(stdout.trim(), venv, "the kernel runs the template's python");
    let results = of_type(&lines, "result");
    assert_eq!(results.len(), 1, "{lines:?}");
    assert_eq!(results[0]["text"], "6");

    // A chart comes back as a PNG display, as from E2B's Jupyter kernel.
    let lines = execute(
        &h,
        &sbx,
        "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()",
    )
    .await;
    assert!(of_type(&lines, "error").is_empty(), "{lines:?}");
    let pngs: Vec<&str> = of_type(&lines, "result")
        .iter()
        .filter_map(|r| r["png"].as_str())
        .collect();
    assert_eq!(pngs.len(), 1, "{lines:?}");
    assert!(pngs[0].starts_with("iVBORw0KGgo"), "{}", &pngs[0][..20]);

    // Commands find the same python3 and pip, in login and plain shells.
    let (out, err, end) = login_shell(
        &h,
        &sbx,
        "command -v python3 pip; python3 -c 'import pandas, matplotlib; print(pandas.__version__)'",
    )
    .await;
    assert_eq!(end, json!({}), "{err}");
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            format!("{venv}/bin/python3").as_str(),
            &format!("{venv}/bin/pip"),
            pinned("pandas")
        ],
        "{err}"
    );
    let (events, _) = run(&h, &sbx, "pip --version").await;
    assert!(
        stdout_of(&events).contains(&format!("{venv}/lib/")),
        "{}",
        stderr_of(&events)
    );

    // The sandbox's own: writable on a copy-on-write root (by `user`, as
    // `pip install` needs), read-only on another; the host's never changes.
    let cow = h.server.isolation().contains("root: copy-on-write");
    let (events, _) = run(
        &h,
        &sbx,
        &format!("touch {venv}/x 2>&1; rm -f {venv}/bin/python3 2>&1; test -e {venv}/bin/python3 && echo kept"),
    )
    .await;
    let out = stdout_of(&events);
    if cow {
        assert_eq!(out, "", "{}", stderr_of(&events));
    } else {
        assert!(out.contains("Read-only file system"), "{out}");
        assert!(out.ends_with("kept\n"), "{out}");
    }
    let resp = h
        .sandbox(&sbx, 49983, Method::POST, &format!("/files?path={venv}/y"))
        .multipart(reqwest::multipart::Form::new().part(
            "file",
            reqwest::multipart::Part::bytes(b"x".to_vec()).file_name("x"),
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().is_success(), cow, "{}", resp.status());
    for name in ["x", "y"] {
        assert!(!std::path::Path::new(&venv).join(name).exists());
    }
    assert!(std::path::Path::new(&venv).join("bin/python3").exists());
    h.server.shutdown().await;
}

#[tokio::test]
async fn base_sandboxes_do_not_see_the_template_environment() {
    let venv = template_venv();
    let (h, sbx) = start_sandbox().await;
    let (out, err, end) = login_shell(
        &h,
        &sbx,
        &format!(
            "test -e {venv} && echo visible; ls /etc/profile.d; echo \"$PATH\"; \
             python3 -c 'import sys; print(sys.prefix)'"
        ),
    )
    .await;
    assert_eq!(end, json!({}), "{err}");
    assert!(!out.contains("visible"), "{out}");
    assert!(!out.contains(&venv), "{out}");
    assert!(!out.contains("e2b-template"), "{out}");
    assert!(out.ends_with("/usr\n"), "the host's python3: {out}");
    let (status, _) = h
        .filesystem(&sbx, "Stat", json!({"path": format!("{venv}/bin/python3")}))
        .await;
    assert_eq!(status, 404);
    // Its kernel is the host's python3 too.
    let lines = execute(&h, &sbx, "import sys\nsys.prefix").await;
    assert_eq!(of_type(&lines, "result")[0]["text"], "/usr", "{lines:?}");
    h.server.shutdown().await;
}
