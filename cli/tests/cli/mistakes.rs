//! Five mistakes a new user makes, each answered by a message that names
//! its fix (never a Rust debug dump): no server running, a wrong domain,
//! the wrong scheme, a garbage key, an unknown tool, arguments that are
//! not JSON.

use crate::binary::{e2b_tools, run, Run};
use crate::mcp::{local_serve, Stop};

fn call_with(env: &[(&str, &str)], args: &[&str]) -> Run {
    let mut all = vec!["--backend", "e2b", "call"];
    all.extend_from_slice(args);
    let mut command = e2b_tools(&all);
    command.envs(env.iter().copied());
    run(command, "")
}

fn says(out: &Run, words: &[&str]) {
    for word in words {
        assert!(out.stderr.contains(word), "{word:?} missing: {out:?}");
    }
    assert!(!out.stderr.contains("ErrorCode::"), "a debug dump: {out:?}");
}

#[test]
fn each_mistake_is_answered_with_its_fix() {
    let code = r#"{"code": "1"}"#;
    // No server at the URL.
    let nothing = [
        ("E2B_API_KEY", "e2b_x"),
        ("E2B_API_URL", "http://127.0.0.1:1"),
        ("E2B_SANDBOX_URL", "http://127.0.0.1:1"),
    ];
    let out = call_with(&nothing, &["run_code", code]);
    assert_eq!(out.status, 1, "{out:?}");
    says(
        &out,
        &[
            "nothing listens at 127.0.0.1:1",
            "e2b-tools local serve",
            "E2B_API_URL",
        ],
    );
    // A domain that does not resolve.
    let out = call_with(
        &[("E2B_API_KEY", "e2b_x"), ("E2B_DOMAIN", "nowhere.invalid")],
        &["run_code", code],
    );
    says(&out, &["could not be resolved", "E2B_DOMAIN"]);

    let state = tempfile::tempdir().unwrap();
    let (local, env) = local_serve(state.path());
    let _local = Stop(local);
    // https:// for a plain-HTTP server.
    let https = env["E2B_API_URL"].replace("http://", "https://");
    let out = call_with(
        &[
            ("E2B_API_KEY", env["E2B_API_KEY"].as_str()),
            ("E2B_API_URL", https.as_str()),
            ("E2B_SANDBOX_URL", env["E2B_SANDBOX_URL"].as_str()),
        ],
        &["run_code", code],
    );
    says(&out, &["TLS handshake", "check the scheme of E2B_API_URL"]);
    // A key the server does not know.
    let out = call_with(
        &[
            ("E2B_API_KEY", "e2b_garbage"),
            ("E2B_API_URL", env["E2B_API_URL"].as_str()),
            ("E2B_SANDBOX_URL", env["E2B_SANDBOX_URL"].as_str()),
        ],
        &["run_code", code],
    );
    says(&out, &["401", "check your credentials"]);

    // An unknown tool, and arguments that are not JSON: usage errors.
    let out = run(e2b_tools(&["call", "run_kode", code]), "");
    assert_eq!(out.status, 2, "{out:?}");
    says(&out, &["unknown tool", "the tools are: run_code"]);
    let out = run(e2b_tools(&["call", "run_code", "{code: 1}"]), "");
    assert_eq!(out.status, 2, "{out:?}");
    says(&out, &["ARGS is not valid JSON"]);
}
