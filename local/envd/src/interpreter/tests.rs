//! Tests of the interpreter's HTTP surface with real kernels run directly
//! (no sandbox isolation) in a temporary directory.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;

use super::{router, Interpreter, KernelSpawner};

/// Runs kernels as plain child processes in a temporary directory.
struct DirectSpawner {
    dir: tempfile::TempDir,
    envs: BTreeMap<String, String>,
}

impl KernelSpawner for DirectSpawner {
    fn command(&self, program: &str, args: &[String]) -> Result<tokio::process::Command, String> {
        let mut command = tokio::process::Command::new(program);
        command.args(args).current_dir(self.dir.path());
        Ok(command)
    }

    fn global_envs(&self) -> BTreeMap<String, String> {
        self.envs.clone()
    }
}

fn app() -> (Router, Arc<Interpreter>) {
    let spawner = DirectSpawner {
        dir: tempfile::tempdir().expect("temp dir"),
        envs: BTreeMap::from([("SANDBOX_GLOBAL".to_string(), "global".to_string())]),
    };
    let interp = Interpreter::new(Arc::new(spawner));
    (router().layer(axum::Extension(interp.clone())), interp)
}

fn post(path: &str, body: Value) -> Request<Body> {
    Request::post(path)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .expect("request")
}

async fn call(app: &Router, request: Request<Body>) -> (StatusCode, String) {
    let response = app.clone().oneshot(request).await.expect("response");
    let status = response.status();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    (status, String::from_utf8(bytes.to_vec()).expect("utf-8"))
}

/// Runs an execution to its end; checks the NDJSON framing.
async fn execute(app: &Router, body: Value) -> Vec<Value> {
    let (status, text) = call(app, post("/execute", body)).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(text.ends_with('\n'), "{text:?}");
    let lines: Vec<Value> = text
        .split_terminator('\n')
        .map(|line| {
            assert!(!line.is_empty(), "blank line in {text:?}");
            serde_json::from_str(line).expect("JSON line")
        })
        .collect();
    assert_eq!(lines[0]["type"], "number_of_executions", "{text}");
    assert_eq!(
        lines.last().expect("lines")["type"],
        "end_of_execution",
        "{text}"
    );
    lines
}

fn of_type<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["type"] == kind).collect()
}

fn stdout(lines: &[Value]) -> String {
    of_type(lines, "stdout")
        .iter()
        .map(|l| l["text"].as_str().expect("text"))
        .collect()
}

fn main_text(lines: &[Value]) -> Option<String> {
    of_type(lines, "result")
        .iter()
        .find(|l| l["is_main_result"] == true)
        .and_then(|l| l["text"].as_str().map(str::to_string))
}

#[tokio::test]
async fn python_state_persists_and_last_expression_is_the_main_result() {
    let (app, interp) = app();
    let first = execute(
        &app,
        json!({"code": "x = 6 * 7\nprint('stdout works')\nx", "language": "python"}),
    )
    .await;
    assert_eq!(first[0]["execution_count"], 1);
    // One chunk, as ipykernel sends it (print's text and newline together).
    assert_eq!(of_type(&first, "stdout").len(), 1, "{first:?}");
    assert_eq!(stdout(&first), "stdout works\n");
    assert_eq!(main_text(&first).as_deref(), Some("42"));
    assert!(of_type(&first, "stdout")[0]["timestamp"].is_string());

    let second = execute(&app, json!({"code": "x + 1", "context_id": null})).await;
    assert_eq!(second[0]["execution_count"], 2);
    assert_eq!(main_text(&second).as_deref(), Some("43"));

    let strings = execute(&app, json!({"code": "'abc'"})).await;
    assert_eq!(main_text(&strings).as_deref(), Some("abc"));
    let long = execute(&app, json!({"code": "list(range(30))"})).await;
    let long = main_text(&long).expect("text");
    assert!(
        long.starts_with("[0,\n 1,\n 2,") && long.ends_with("29]"),
        "{long}"
    );
    let none = execute(&app, json!({"code": "None"})).await;
    assert!(of_type(&none, "result").is_empty());
    let global = execute(
        &app,
        json!({"code": "import os; os.environ['SANDBOX_GLOBAL']"}),
    )
    .await;
    assert_eq!(main_text(&global).as_deref(), Some("global"));
    let child = execute(&app, json!({"code": "import os\nprint('a', flush=True)\nos.system('echo from-child')\nprint('b')"})).await;
    assert_eq!(stdout(&child), "a\nfrom-child\nb\n");
    interp.shutdown().await;
}

#[tokio::test]
async fn python_exception_has_name_value_and_traceback() {
    let (app, interp) = app();
    let lines = execute(
        &app,
        json!({"code": "def f():\n    return 1 / 0\nprint('before')\nf()"}),
    )
    .await;
    assert_eq!(stdout(&lines), "before\n");
    let errors = of_type(&lines, "error");
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0]["name"], "ZeroDivisionError");
    assert_eq!(errors[0]["value"], "division by zero");
    let traceback = errors[0]["traceback"].as_str().expect("traceback");
    assert!(traceback.contains("return 1 / 0"), "{traceback}");
    assert!(
        traceback.contains("ZeroDivisionError: division by zero"),
        "{traceback}"
    );

    let syntax = execute(&app, json!({"code": "def ("})).await;
    assert_eq!(of_type(&syntax, "error")[0]["name"], "SyntaxError");
    // The kernel is still usable.
    let after = execute(&app, json!({"code": "1 + 1"})).await;
    assert_eq!(main_text(&after).as_deref(), Some("2"));
    interp.shutdown().await;
}

#[tokio::test]
async fn env_vars_apply_to_one_execution_only() {
    let (app, interp) = app();
    let code = "import os\nos.environ.get('ONLY_ONCE', 'unset')";
    let with = execute(
        &app,
        json!({"code": code, "env_vars": {"ONLY_ONCE": "yes"}}),
    )
    .await;
    assert_eq!(main_text(&with).as_deref(), Some("yes"));
    let without = execute(&app, json!({"code": code})).await;
    assert_eq!(main_text(&without).as_deref(), Some("unset"));

    let bash = "echo ${ONLY_ONCE:-unset}";
    let with = execute(
        &app,
        json!({"code": bash, "language": "bash", "env_vars": {"ONLY_ONCE": "yes"}}),
    )
    .await;
    assert_eq!(stdout(&with), "yes\n");
    let without = execute(&app, json!({"code": bash, "language": "bash"})).await;
    assert_eq!(stdout(&without), "unset\n");

    let js = "process.env.ONLY_ONCE ?? 'unset'";
    let with = execute(
        &app,
        json!({"code": js, "language": "js", "env_vars": {"ONLY_ONCE": "yes"}}),
    )
    .await;
    assert_eq!(main_text(&with).as_deref(), Some("yes"));
    let without = execute(&app, json!({"code": js, "language": "javascript"})).await;
    assert_eq!(main_text(&without).as_deref(), Some("unset"));
    interp.shutdown().await;
}

#[tokio::test]
async fn displays_become_html_and_png_results() {
    let (app, interp) = app();
    let code = "class Page:\n    def _repr_html_(self):\n        return '<b>hi</b>'\n\
                class Picture:\n    def _repr_png_(self):\n        return b'\\x89PNG'\n\
                display(Page())\nPicture()";
    let lines = execute(&app, json!({"code": code})).await;
    let results = of_type(&lines, "result");
    assert_eq!(results.len(), 2, "{lines:?}");
    assert_eq!(results[0]["html"], "<b>hi</b>");
    assert_eq!(results[0]["is_main_result"], false);
    assert_eq!(results[1]["png"], "iVBORw==");
    assert_eq!(results[1]["is_main_result"], true);
    interp.shutdown().await;
}

#[tokio::test]
async fn notebook_idioms_work_without_ipython() {
    let (app, interp) = app();
    let code = "from IPython.display import display, HTML\ndisplay(HTML('<p>x</p>'))";
    let lines = execute(&app, json!({"code": code})).await;
    assert_eq!(
        of_type(&lines, "result")[0]["html"],
        "<p>x</p>",
        "{lines:?}"
    );
    let lines = execute(&app, json!({"code": "!echo from shell\n%cd /\n%pwd"})).await;
    assert_eq!(stdout(&lines), "from shell\n/\n", "{lines:?}");
    assert_eq!(main_text(&lines).as_deref(), Some("/"));
    // A kernel that exits is replaced (without its state) on the next execution.
    let lines = execute(&app, json!({"code": "import os\nos._exit(3)"})).await;
    assert_eq!(of_type(&lines, "error")[0]["name"], "DeadKernelError");
    let lines = execute(
        &app,
        json!({"code": "'fresh' if 'os' not in globals() else 'old'"}),
    )
    .await;
    assert_eq!(main_text(&lines).as_deref(), Some("fresh"));
    assert_eq!(lines[0]["execution_count"], 1);
    let lines = execute(&app, json!({"code": "%nosuchmagic"})).await;
    assert_eq!(of_type(&lines, "error")[0]["name"], "UsageError");
    interp.shutdown().await;
}

#[tokio::test]
async fn javascript_and_bash_kernels_keep_state() {
    let (app, interp) = app();
    let js = execute(
        &app,
        json!({"code": "let n = 40; console.log('js out'); n + 2", "language": "javascript"}),
    )
    .await;
    assert_eq!(stdout(&js), "js out\n");
    assert_eq!(main_text(&js).as_deref(), Some("42"));
    let js = execute(&app, json!({"code": "n * 2", "language": "javascript"})).await;
    assert_eq!(main_text(&js).as_deref(), Some("80"));
    let code = "const later = await new Promise((r) => setTimeout(() => r(20), 50)); later + 1";
    let js = execute(&app, json!({"code": code, "language": "javascript"})).await;
    assert_eq!(main_text(&js).as_deref(), Some("21"), "{js:?}");
    let js = execute(&app, json!({"code": "later * 2", "language": "javascript"})).await;
    assert_eq!(main_text(&js).as_deref(), Some("40"));
    let js_error = execute(&app, json!({"code": "null.x", "language": "javascript"})).await;
    assert_eq!(of_type(&js_error, "error")[0]["name"], "TypeError");
    // `import` statements, as E2B's JavaScript kernel takes them; run twice.
    let code = "\n  import { readFileSync } from 'fs'\n  import path, * as p2 from 'path'\n  \
                console.log(typeof readFileSync, typeof p2.join)\n  path.join('a', 'b')";
    for _ in 0..2 {
        let js = execute(&app, json!({"code": code, "language": "javascript"})).await;
        assert_eq!(stdout(&js), "function function\n", "{js:?}");
        assert_eq!(main_text(&js).as_deref(), Some("a/b"), "{js:?}");
    }

    let bash = execute(
        &app,
        json!({"code": "A=5\necho out; echo err >&2", "language": "bash"}),
    )
    .await;
    assert_eq!(stdout(&bash), "out\n");
    assert_eq!(of_type(&bash, "stderr")[0]["text"], "err\n");
    let bash = execute(
        &app,
        json!({"code": "echo $((A * 2)) 'quote\\'s", "language": "bash"}),
    )
    .await;
    assert_eq!(stdout(&bash), "10 quote\\s\n");
    let failing = execute(&app, json!({"code": "false", "language": "bash"})).await;
    assert_eq!(of_type(&failing, "error")[0]["value"], "1");
    interp.shutdown().await;
}

#[tokio::test]
async fn contexts_can_be_created_listed_restarted_and_deleted() {
    let (app, interp) = app();
    let (status, body) = call(
        &app,
        post("/contexts", json!({"language": "python", "cwd": "/tmp"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let context: Value = serde_json::from_str(&body).expect("context");
    let id = context["id"].as_str().expect("id").to_string();
    assert_eq!(context["language"], "python");
    assert_eq!(context["cwd"], "/tmp");

    let lines = execute(
        &app,
        json!({"code": "import os\ny = 1\nos.getcwd()", "context_id": id}),
    )
    .await;
    assert_eq!(main_text(&lines).as_deref(), Some("/tmp"));

    let (status, body) = call(
        &app,
        Request::get("/contexts").body(Body::empty()).expect("req"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let list: Vec<Value> = serde_json::from_str(&body).expect("list");
    assert!(list.iter().any(|c| c["id"] == id.as_str()));

    let (status, body) = call(&app, post(&format!("/contexts/{id}/restart"), json!(null))).await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "null"));
    let lines = execute(&app, json!({"code": "'y' in globals()", "context_id": id})).await;
    assert_eq!(main_text(&lines).as_deref(), Some("False"));
    assert_eq!(lines[0]["execution_count"], 1);

    let delete = Request::delete(format!("/contexts/{id}"))
        .body(Body::empty())
        .expect("req");
    assert_eq!(call(&app, delete).await.0, StatusCode::OK);
    let (status, body) = call(
        &app,
        post("/execute", json!({"code": "1", "context_id": id})),
    )
    .await;
    assert_eq!(
        (status, body),
        (StatusCode::NOT_FOUND, format!("Context {id} not found"))
    );
    let delete = Request::delete(format!("/contexts/{id}"))
        .body(Body::empty())
        .expect("req");
    assert_eq!(call(&app, delete).await.0, StatusCode::NOT_FOUND);
    let (status, _) = call(&app, post("/contexts/nope/restart", json!(null))).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let (status, body) = call(
        &app,
        post(
            "/execute",
            json!({"code": "1", "context_id": "a", "language": "python"}),
        ),
    )
    .await;
    assert_eq!(
        (status, body.as_str()),
        (
            StatusCode::BAD_REQUEST,
            "Only one of context_id or language can be provided"
        )
    );
    let (status, _) = call(
        &app,
        post("/execute", json!({"code": "1", "language": "cobol"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = call(&app, post("/execute", json!({"nocode": 1}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, body) = call(
        &app,
        Request::get("/health").body(Body::empty()).expect("req"),
    )
    .await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "\"OK\""));
    interp.shutdown().await;
}

#[tokio::test]
async fn output_is_streamed_and_keepalive_follows_silence() {
    let (app, interp) = app();
    let request = post(
        "/execute",
        json!({"code": "import time\nprint('early', flush=True)\ntime.sleep(6)\nprint('late')"}),
    );
    let started = Instant::now();
    let response = app.clone().oneshot(request).await.expect("response");
    let mut body = response.into_body();
    let mut seen: Vec<(Duration, Value)> = Vec::new();
    let mut pending = String::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.expect("frame");
        if let Some(data) = frame.data_ref() {
            pending.push_str(std::str::from_utf8(data).expect("utf-8"));
            while let Some(i) = pending.find('\n') {
                let line: String = pending.drain(..=i).collect();
                seen.push((
                    started.elapsed(),
                    serde_json::from_str(line.trim_end()).expect("json"),
                ));
            }
        }
    }
    let at = |kind: &str, text: Option<&str>| {
        seen.iter()
            .find(|(_, l)| l["type"] == kind && text.is_none_or(|t| l["text"] == t))
            .map(|(t, _)| *t)
            .unwrap_or_else(|| panic!("no {kind} in {seen:?}"))
    };
    assert!(
        at("stdout", Some("early\n")) < Duration::from_secs(3),
        "{seen:?}"
    );
    let keepalive = at("keepalive", None);
    assert!(
        keepalive >= Duration::from_secs(5) && keepalive < at("stdout", Some("late\n")),
        "{seen:?}"
    );
    interp.shutdown().await;
}

/// Starts an execution, reads until `marker` is printed, then hangs up.
async fn hang_up_after(app: &Router, body: Value, marker: &str) {
    let response = app
        .clone()
        .oneshot(post("/execute", body))
        .await
        .expect("response");
    let mut body = response.into_body();
    let mut received = String::new();
    while !received.contains(marker) {
        let frame = body.frame().await.expect("a frame").expect("data");
        if let Some(data) = frame.data_ref() {
            received.push_str(std::str::from_utf8(data).expect("utf-8"));
        }
    }
}

#[tokio::test]
async fn client_disconnect_interrupts_and_the_kernel_keeps_its_state() {
    // As in a server started in the background by a shell: SIGINT ignored,
    // which the kernels must not inherit (bash could not trap it).
    // SAFETY: sets a disposition only; nothing in the tests handles SIGINT.
    #[allow(unsafe_code)]
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
    }
    let (app, interp) = app();
    execute(&app, json!({"code": "kept = 'state'"})).await;
    let code = "import time\nprint('going', flush=True)\nwhile True:\n    time.sleep(0.1)";
    hang_up_after(&app, json!({"code": code}), "going").await;
    let started = Instant::now();
    let after = execute(&app, json!({"code": "kept"})).await;
    assert_eq!(main_text(&after).as_deref(), Some("state"));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );

    // A busy loop in JavaScript is interrupted too, keeping the context's state.
    execute(
        &app,
        json!({"code": "var keptJs = 'js state'", "language": "js"}),
    )
    .await;
    let code = "console.log('going'); while (true) {}";
    hang_up_after(&app, json!({"code": code, "language": "js"}), "going").await;
    let started = Instant::now();
    let after = execute(&app, json!({"code": "keptJs", "language": "js"})).await;
    assert_eq!(main_text(&after).as_deref(), Some("js state"));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );

    // Bash: the running command and a busy loop are interrupted, the shell
    // and its variables survive.
    execute(&app, json!({"code": "KEPT=bash-state", "language": "bash"})).await;
    for code in [
        "echo going; sleep 30; echo not-here",
        "echo going; while :; do :; done",
    ] {
        hang_up_after(&app, json!({"code": code, "language": "bash"}), "going").await;
        let started = Instant::now();
        let after = execute(&app, json!({"code": "echo $KEPT", "language": "bash"})).await;
        assert_eq!(stdout(&after), "bash-state\n", "{code}");
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
    }
    interp.shutdown().await;
}
