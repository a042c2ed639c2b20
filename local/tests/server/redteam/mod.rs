//! Red-team attempts to get out of a sandbox through every field of every
//! API, with envd inside the sandbox and the server only orchestrating.
//! Each asserts the attempt fails, on the host side where it can (a marker
//! file a host-side process would have made, a host file's bytes, the
//! sandbox's cgroup limits as the host reads them), and that the server and
//! the other sandboxes keep serving. Run as root (uid blocks, cgroups,
//! disks) and as an ordinary user (`scripts/test` runs the binary as
//! `nobody`); what needs root is skipped cleanly without it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine;
use e2b_local::Options;
use reqwest::Method;
use serde_json::{json, Value};

use crate::common::{parse_stream, run, start_with, stderr_of, stdout_of, Harness, Sbx};

/// Long enough for any single call here; a call that takes longer hangs.
const CALL: Duration = Duration::from_secs(60);

fn privileged() -> bool {
    rustix::process::getuid().is_root()
}

/// A server with its data directory where the test can look at it.
async fn server(data: &Path) -> Harness {
    start_with(Options {
        data_dir: Some(data.to_path_buf()),
        ..Options::default()
    })
    .await
}

/// A host directory no sandbox has at that path, writable by every uid
/// (so a host-side process running as a sandbox's uid could leave a mark).
fn host_dir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new()
        .prefix("e2b-redteam-")
        .tempdir_in(std::env::current_dir().unwrap())
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    dir
}

fn bytes_of(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| format!("unreadable: {e}").into_bytes())
}

fn basic(user: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(user)
    )
}

/// What one started command did.
#[derive(Debug)]
struct Ran {
    status: u16,
    stdout: String,
    stderr: String,
    /// Read through `Debug` in failure messages.
    #[allow(dead_code)]
    end: Value,
}

/// `Process/Start` with a raw body and headers; never panics on an error
/// answer, times out (a hang) after [`CALL`].
async fn start_raw(h: &Harness, sbx: &Sbx, body: Value, headers: &[(&str, String)]) -> Ran {
    let mut req = h
        .sandbox(sbx, 49983, Method::POST, "/process.Process/Start")
        .header("content-type", "application/connect+json")
        .body(e2b_wire::connect::encode_envelope(
            0,
            body.to_string().as_bytes(),
        ));
    for (k, v) in headers {
        req = req.header(*k, v.as_str());
    }
    let done = tokio::time::timeout(CALL, async {
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let bytes = resp.bytes().await.unwrap_or_default();
        (status, bytes)
    })
    .await
    .unwrap_or_else(|_| panic!("Process/Start hung: {body}"));
    let (status, bytes) = done;
    let (events, end) = if status == 200 {
        std::panic::catch_unwind(|| parse_stream(&bytes)).unwrap_or_default()
    } else {
        (
            Vec::new(),
            Value::String(String::from_utf8_lossy(&bytes).into()),
        )
    };
    Ran {
        status,
        stdout: stdout_of(&events),
        stderr: stderr_of(&events),
        end,
    }
}

/// `bash -c script` as `user` with `envs` in `cwd`.
async fn sh(h: &Harness, sbx: &Sbx, user: &str, script: &str, envs: Value, cwd: &str) -> Ran {
    let mut process = json!({"cmd": "/bin/bash", "args": ["-c", script], "envs": envs});
    if !cwd.is_empty() {
        process["cwd"] = json!(cwd);
    }
    start_raw(
        h,
        sbx,
        json!({"process": process, "stdin": false}),
        &[("authorization", basic(user))],
    )
    .await
}

/// As the sandbox's most privileged user: `root` where a root exists (the
/// server is root), else `user` (a nested user namespace that would make
/// it root of its own is refused by the seccomp filter).
async fn as_sandbox_root(h: &Harness, sbx: &Sbx, script: &str) -> Ran {
    let who = if privileged() { "root" } else { "user" };
    sh(h, sbx, who, script, json!({}), "").await
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// [`sh`] right after envd died: a request that meets envd dead but
/// bubblewrap not yet gone is answered 502 (see the report); the sandbox
/// must be back within two seconds.
async fn sh_after_restart(
    h: &Harness,
    sbx: &Sbx,
    user: &str,
    script: &str,
    envs: Value,
    cwd: &str,
) -> Ran {
    let mut ran = sh(h, sbx, user, script, envs.clone(), cwd).await;
    for _ in 0..20 {
        if ran.status != 502 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        ran = sh(h, sbx, user, script, envs.clone(), cwd).await;
    }
    ran
}

/// The server serves `sbx` and a brand-new sandbox, promptly.
async fn still_serving(h: &Harness, sbx: &Sbx) {
    for s in [sbx.clone(), h.create_default().await] {
        let ran = tokio::time::timeout(CALL, run(h, &s, "echo alive"))
            .await
            .expect("a command after the attempts hung");
        assert_eq!(stdout_of(&ran.0), "alive\n", "{}", stderr_of(&ran.0));
    }
}

async fn download(h: &Harness, sbx: &Sbx, path: &str, user: &str) -> (u16, String) {
    let q = serde_urlencoded::to_string([("path", path), ("username", user)]).unwrap();
    let resp = tokio::time::timeout(
        CALL,
        h.sandbox_send(sbx, 49983, Method::GET, &format!("/files?{q}")),
    )
    .await
    .unwrap_or_else(|_| panic!("download of {path} hung"));
    let status = resp.status().as_u16();
    (status, resp.text().await.unwrap_or_default())
}

async fn upload(h: &Harness, sbx: &Sbx, path: &str, user: &str, body: Vec<u8>) -> u16 {
    let q = serde_urlencoded::to_string([("path", path), ("username", user)]).unwrap();
    let resp = tokio::time::timeout(
        CALL,
        h.sandbox(sbx, 49983, Method::POST, &format!("/files?{q}"))
            .header("content-type", "application/octet-stream")
            .body(body)
            .send(),
    )
    .await
    .unwrap_or_else(|_| panic!("upload of {path} hung"))
    .unwrap();
    resp.status().as_u16()
}

/// A shared library whose constructor appends to `host_marker` (a host
/// path no sandbox has) and to `/tmp/preload-ran` (the sandbox's), also
/// usable as an `LD_AUDIT` module and a gconv module. `None` without `cc`.
fn evil_library(dir: &Path, host_marker: &Path) -> Option<PathBuf> {
    let src = dir.join("evil.c");
    let lib = dir.join("evil.so");
    std::fs::write(
        &src,
        format!(
            r#"#include <fcntl.h>
#include <unistd.h>
static void mark(const char *path) {{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0666);
    if (fd >= 0) {{ write(fd, "ran\n", 4); close(fd); }}
}}
__attribute__((constructor)) static void evil(void) {{
    mark("{host}");
    mark("/tmp/preload-ran");
}}
unsigned int la_version(unsigned int v) {{ return v; }}
int gconv_init(void *s) {{ return 0; }}
int gconv(void *s) {{ return 0; }}
"#,
            host = host_marker.display()
        ),
    )
    .ok()?;
    let built = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(&src)
        .status()
        .ok()?;
    if !built.success() {
        return None;
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o755)).ok()?;
    Some(lib)
}

/// Loader, shell, Python, Node and iconv variables in a command's `envs`
/// and in the sandbox's `envVars` act inside the sandbox only: a library
/// they name runs there (its sandbox marker appears) and never in a host
/// process (its host marker does not), through commands, the code
/// interpreter, a restart of envd and a second sandbox.
mod fields;
mod host_side;
