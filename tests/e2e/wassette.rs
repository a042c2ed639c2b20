//! The stateless component in the real wassette 0.8 (`scripts/wassette`,
//! which `scripts/bootstrap --test` sets up), against the local server:
//! every `tool invoke` is a new wassette process and a fresh instance, as
//! in a plugin marketplace.

use std::path::{Path, PathBuf};
use std::time::Duration;

use e2b_local::LocalServer;
use serde_json::{json, Value};

use crate::harness::server;

/// A private wassette home with the stateless component loaded and the
/// shipped policy granted (its E2B hosts swapped for the local server's).
struct Wassette {
    home: PathBuf,
    env: Vec<(String, String)>,
}

impl Wassette {
    async fn new(server: &LocalServer) -> Wassette {
        let home = std::env::temp_dir().join(format!(
            "e2b-tools-wassette-{}-{}",
            std::process::id(),
            server.addr().port()
        ));
        let _ = std::fs::remove_dir_all(&home);
        std::fs::create_dir_all(&home).unwrap();
        let env = vec![
            ("HOME".to_string(), home.join("home").display().to_string()),
            (
                "XDG_DATA_HOME".into(),
                home.join("data").display().to_string(),
            ),
            (
                "XDG_CONFIG_HOME".into(),
                home.join("config").display().to_string(),
            ),
            ("E2B_API_URL".into(), server.url()),
            ("E2B_SANDBOX_URL".into(), server.url()),
            ("E2B_API_KEY".into(), server.api_key().to_string()),
        ];
        let w = Wassette { home, env };
        let wasm = w.home.join("e2b_tools_stateless.wasm");
        std::fs::write(&wasm, e2b_tools_host::EMBEDDED_STATELESS).unwrap();
        w.run(&["component", "load", &format!("file://{}", wasm.display())])
            .await
            .expect("the component loads");
        let shipped = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("wassette/e2b_tools_stateless.policy.yaml"),
        )
        .unwrap();
        assert!(
            shipped.contains("- host: api.e2b.app") && shipped.contains("- host: sandbox.e2b.app")
        );
        let local = shipped
            .replace("- host: api.e2b.app", "- host: 127.0.0.1")
            .replace("      - host: sandbox.e2b.app\n", "");
        std::fs::write(
            w.home
                .join("data/wassette/components/e2b_tools_stateless.policy.yaml"),
            local,
        )
        .unwrap();
        w
    }

    /// Runs `scripts/wassette ARGS`: its stdout, or its output on failure.
    async fn run(&self, args: &[&str]) -> Result<String, String> {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/wassette");
        let mut command = tokio::process::Command::new(script);
        command
            .args(args)
            .envs(self.env.iter().cloned())
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        let out = tokio::time::timeout(Duration::from_secs(120), command.output())
            .await
            .map_err(|_| format!("wassette {args:?} did not finish in 120 s"))?
            .map_err(|e| format!("cannot run scripts/wassette: {e}"))?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.status.success() {
            Ok(stdout)
        } else {
            Err(format!(
                "{}: {stdout}{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    }

    /// `tool invoke NAME --args ARGS`: the result object.
    async fn invoke(&self, tool: &str, args: Value) -> Value {
        let out = self
            .run(&["tool", "invoke", tool, "--args", &args.to_string()])
            .await
            .unwrap_or_else(|e| panic!("{tool}: {e}"));
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{tool}: {e}: {out}"))
    }
}

impl Drop for Wassette {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.home);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wassette_lists_our_tools_with_our_descriptions_and_state_travels_as_the_id() {
    let server = server().await;
    let w = Wassette::new(&server).await;

    let listed: Value = serde_json::from_str(&w.run(&["tool", "list"]).await.unwrap()).unwrap();
    let tools = listed["tools"].as_array().expect("a tool list");
    let ours: Vec<&Value> = tools
        .iter()
        .filter(|t| !BUILTIN.contains(&t["name"].as_str().unwrap_or_default()))
        .collect();
    let names: Vec<&str> = ours.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, crate::stateless::TOOLS, "{listed}");
    for tool in &ours {
        let description = tool["description"].as_str().unwrap_or_default();
        assert!(
            description.contains("sandbox"),
            "{}: {description:?}",
            tool["name"]
        );
        assert!(!description.starts_with("Auto-generated"), "{description}");
    }
    assert!(ours[0]["description"]
        .as_str()
        .unwrap()
        .starts_with("Run code in an isolated E2B cloud sandbox's stateful kernel"));

    // Each invoke is a new process and a new instance: only the id carries
    // the sandbox from one to the next.
    let r = w
        .invoke(
            "e2b-run-code",
            json!({"sandbox-id": "", "code": "x = 41", "language": "", "timeout-seconds": 0}),
        )
        .await;
    assert_eq!(r["success"], true, "{r}");
    let id = r["sandbox_id"].as_str().unwrap().to_string();
    let r = w
        .invoke(
            "e2b-run-code",
            json!({"sandbox-id": id, "code": "print(x + 1)", "language": "", "timeout-seconds": 0}),
        )
        .await;
    assert_eq!(r["stdout"], "42\n", "{r}");
    let r = w
        .invoke(
            "e2b-write-file",
            json!({"sandbox-id": id, "path": "from-wassette.txt", "content": "written in one call", "encoding": ""}),
        )
        .await;
    assert_eq!(r["success"], true, "{r}");
    let r = w
        .invoke(
            "e2b-read-file",
            json!({"sandbox-id": id, "path": "from-wassette.txt", "encoding": ""}),
        )
        .await;
    assert_eq!(r["content"], "written in one call", "{r}");
    assert_eq!(server.stats().sandboxes_created, 1);

    let r = w
        .invoke("e2b-close-sandbox", json!({"sandbox-id": id}))
        .await;
    assert_eq!(r["closed"], "killed", "{r}");
    assert_eq!(
        server.stats().live_sandboxes,
        0,
        "the close tool leaves no sandbox"
    );
}

/// wassette 0.8's own tools, listed beside a component's.
const BUILTIN: [&str; 13] = [
    "load-component",
    "unload-component",
    "list-components",
    "get-policy",
    "grant-storage-permission",
    "grant-network-permission",
    "grant-environment-variable-permission",
    "revoke-storage-permission",
    "revoke-network-permission",
    "revoke-environment-variable-permission",
    "reset-permission",
    "search-components",
    "grant-memory-permission",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_uses_the_tools_through_wassette_run() {
    let python = std::env::var("E2B_TOOLS_PYTHON").expect(
        "E2B_TOOLS_PYTHON names a Python with the mcp package (scripts/bootstrap --test: target/pyenv)",
    );
    let server = server().await;
    let w = Wassette::new(&server).await;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut command = tokio::process::Command::new(python);
    command
        .arg(root.join("tests/e2e/wassette_mcp.py"))
        .arg(root.join("scripts/wassette"))
        .envs(w.env.iter().cloned())
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(180), command.output())
        .await
        .expect("the MCP client finishes in 180 s")
        .expect("python runs");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let stats = server.stats();
    assert_eq!(
        (stats.sandboxes_created, stats.live_sandboxes),
        (1, 0),
        "{stats:?}"
    );
}
