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
/// server is root), else `user` made root of a nested user namespace.
async fn as_sandbox_root(h: &Harness, sbx: &Sbx, script: &str) -> Ran {
    if privileged() {
        sh(h, sbx, "root", script, json!({}), "").await
    } else {
        let nested = format!(
            "unshare -Urm --propagation private bash -c {}",
            shell_quote(script)
        );
        sh(h, sbx, "user", &nested, json!({}), "").await
    }
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
#[tokio::test]
async fn loader_and_interpreter_variables_never_reach_the_host() {
    let data = tempfile::tempdir().unwrap();
    let host = host_dir();
    let marker = host.path().join("host-marker");
    let Some(lib) = evil_library(host.path(), &marker) else {
        eprintln!("no C compiler: skipped");
        return;
    };
    let lib_bytes = std::fs::read(&lib).unwrap();
    // The library is at the same path on the host (where a host-side
    // process would find it) and in the sandbox's /tmp.
    let preload = format!("/tmp/evil.so {}", lib.display());
    let evil_envs = json!({
        "LD_PRELOAD": preload,
        "LD_AUDIT": format!("/tmp/evil.so:{}", lib.display()),
        "LD_LIBRARY_PATH": format!("/tmp:{}", host.path().display()),
        "PATH": format!("/tmp/bin:{}:/usr/bin:/bin", host.path().display()),
        "BASH_ENV": "/tmp/bash_env",
        "ENV": "/tmp/bash_env",
        "PYTHONSTARTUP": "/tmp/startup.py",
        "PYTHONPATH": "/tmp",
        "PYTHONHOME": host.path().display().to_string(),
        "NODE_OPTIONS": "--require /tmp/evil.js",
        "GCONV_PATH": "/tmp",
        "HOME": host.path().display().to_string(),
        "TMPDIR": host.path().display().to_string(),
    });
    let h = server(data.path()).await;
    let sbx = h
        .create(json!({"templateID": "base", "envVars": evil_envs.clone()}))
        .await;
    for user in ["user", "root"] {
        if user == "root" && !privileged() {
            continue;
        }
        assert_eq!(
            upload(&h, &sbx, "/tmp/evil.so", user, lib_bytes.clone()).await,
            200
        );
    }
    upload(
        &h,
        &sbx,
        "/tmp/bash_env",
        "user",
        format!(
            "echo bash_env >> /tmp/preload-ran; echo x >> {}\n",
            marker.display()
        )
        .into_bytes(),
    )
    .await;
    upload(
        &h,
        &sbx,
        "/tmp/gconv-modules",
        "user",
        b"module INTERNAL EVIL// evil 1\nmodule EVIL// INTERNAL evil 1\n".to_vec(),
    )
    .await;
    let users: &[&str] = if privileged() {
        &["user", "root"]
    } else {
        &["user"]
    };
    for user in users {
        let ran = sh(
            &h,
            &sbx,
            user,
            "echo ran; iconv -f EVIL -t UTF-8 </dev/null; python3 -c 'print(1)'; true",
            evil_envs.clone(),
            "",
        )
        .await;
        assert_eq!(ran.status, 200, "{ran:?}");
        assert!(ran.stdout.contains("ran"), "{ran:?}");
    }
    // The code interpreter, with the same variables per execution.
    let resp = tokio::time::timeout(
        CALL,
        h.sandbox(&sbx, 49999, Method::POST, "/execute")
            .json(&json!({"code": "import os; print(os.environ.get('LD_PRELOAD'))", "env_vars": evil_envs}))
            .send(),
    )
    .await
    .expect("execute hung")
    .unwrap();
    let _ = resp.text().await;
    // envd restarted (its sandbox's root kills it; an ordinary user's
    // sandbox kills everything): the host starts it again from scratch.
    let _ = as_sandbox_root(&h, &sbx, "kill -9 -1; sleep 1").await;
    let ran = sh_after_restart(
        &h,
        &sbx,
        "user",
        "cat /tmp/preload-ran | sort -u",
        json!({}),
        "",
    )
    .await;
    assert!(
        ran.stdout.contains("ran"),
        "the library did run inside the sandbox: {ran:?}"
    );
    // A second sandbox with the same create-time variables.
    let other = h
        .create(json!({"templateID": "base", "envVars": {"LD_PRELOAD": lib.display().to_string()}}))
        .await;
    let (events, _) = run(&h, &other, "echo other").await;
    assert_eq!(stdout_of(&events), "other\n");
    h.server.shutdown().await;
    assert!(
        !marker.exists(),
        "a host-side process ran the sandbox's library: {}",
        std::fs::read_to_string(&marker).unwrap_or_default()
    );
}

/// The sandbox's root (or, without one, `user` as root of a nested user
/// namespace) remounts `/usr`, envd's binary and `/etc` writable and writes
/// them: the host files keep their bytes even when their modes would let
/// anyone write them (only the mounts stand in the way). Binding a fake
/// envd over the real one, killing and ptracing envd, and nested
/// namespaces keep to the sandbox: the next start is the real envd.
#[tokio::test]
async fn remounting_and_replacing_envd_leave_the_host_unchanged() {
    remount_attempts(false).await;
}

/// The red team's finding (server as root): the read-only binds of host
/// paths (`/usr`, `/etc/*`, envd, the template's venv) are bwrap's own
/// remounts, not locked, so a sandbox root holding `CAP_SYS_ADMIN` could
/// remount them writable and change any host file there that its uids may
/// write by mode (world-writable ones; here made so on purpose). The
/// sandbox's root now has Docker's default capabilities, without it.
#[tokio::test]
async fn host_binds_stay_read_only_even_over_world_writable_files() {
    remount_attempts(true).await;
}

/// The attempts; `weaken`: the host files are made writable by anyone
/// first, so that only the read-only mounts protect them.
async fn remount_attempts(weaken: bool) {
    use std::os::unix::fs::PermissionsExt;
    let data = tempfile::tempdir().unwrap();
    let h = server(data.path()).await;
    let sbx = h.create_default().await;
    let envd = data.path().join(".envd/e2b-envd");
    let passwd = data.path().join(".rootfs/etc/passwd");
    if weaken {
        for f in [&envd, &passwd] {
            std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o777)).unwrap();
        }
    }
    // A world-writable host file under /usr, where the test may make one.
    let usr_canary = PathBuf::from(format!(
        "/usr/local/share/e2b-redteam-{}",
        std::process::id()
    ));
    let usr_canary = (weaken
        && std::fs::write(&usr_canary, "host\n")
            .and_then(|()| {
                std::fs::set_permissions(&usr_canary, std::fs::Permissions::from_mode(0o666))
            })
            .is_ok())
    .then_some(usr_canary);
    let watched: Vec<PathBuf> = [envd.clone(), passwd.clone(), "/usr/bin/env".into()]
        .into_iter()
        .chain(usr_canary.clone())
        .collect();
    let before: Vec<Vec<u8>> = watched.iter().map(|p| bytes_of(p)).collect();
    let canary = usr_canary
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "/usr/share/nonexistent".into());
    let script = format!(
        r#"try() {{ if "$@" >/dev/null 2>&1; then echo "did: $*"; else echo "no: $*"; fi; }}
(while [ $SECONDS -lt 3 ]; do :; done; kill -9 -1) >/dev/null 2>&1 &
try mount -o remount,rw /
try mount -o remount,rw,bind /usr
try mount -o remount,rw,bind /opt/e2b/envd
try mount -o remount,rw,bind /etc/passwd
try mount -o remount,rw,bind,suid /usr
try sh -c 'echo pwned >> {canary}'
try sh -c 'echo pwned >> /opt/e2b/envd'
try sh -c 'echo pwned >> /etc/passwd'
try sh -c 'echo pwned >> /usr/bin/env'
try chmod 4777 /opt/e2b/envd
try nsenter -t 1 -a true
try unshare -Umnpf --mount-proc true
try python3 -c 'import ctypes,os; l=ctypes.CDLL(None,use_errno=True); b=ctypes.create_string_buffer(136); m=ctypes.c_int(); import struct; struct.pack_into("I",b,0,128); r=l.name_to_handle_at(-100,b"/home/user",b,ctypes.byref(m),0); fd=os.open("/",os.O_RDONLY); r=l.open_by_handle_at(fd,b,0); assert r>=0'
try sh -c 'mount --make-rshared / && mount --bind /tmp /usr'
try umount -l /usr
try umount -l /opt/e2b/envd
try mount -t tmpfs none /opt/e2b
try cp /bin/true /opt/e2b/envd
echo done
"#
    );
    let ran = as_sandbox_root(&h, &sbx, &script).await;
    eprintln!("attempts: {}{}", ran.stdout, ran.stderr);
    assert!(ran.stdout.contains("done"), "{ran:?}");
    assert!(
        ran.stdout.contains("no: python3"),
        "open_by_handle_at worked inside: {ran:?}"
    );
    // Its own mounts are now wrecked (the root's own business): everything
    // dies, and the next command starts the sandbox from the host again.
    tokio::time::sleep(Duration::from_secs(4)).await;
    // The sandbox's root kills and ptraces envd, or binds a fake over it
    // in its own mount namespace; then envd dies and starts again.
    if privileged() {
        let ran = sh_after_restart(
            &h,
            &sbx,
            "root",
            r#"envd=$(for p in /proc/[0-9]*; do [ "$(readlink $p/exe)" = /opt/e2b/envd ] && basename $p; done | head -1)
python3 -c "import ctypes,sys; l=ctypes.CDLL(None,use_errno=True); p=int(sys.argv[1]); print('ptrace', l.ptrace(16,p,0,0)); import time; time.sleep(0.2); print('detach', l.ptrace(17,p,0,0))" $envd
echo fake > /tmp/fake; mount --bind /tmp/fake /opt/e2b/envd && echo bound
(sleep 0.5; kill -9 $envd) >/dev/null 2>&1 &
echo envd=$envd"#,
            json!({}),
            "",
        )
        .await;
        assert!(ran.stdout.contains("envd="), "{ran:?}");
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let inside = sh_after_restart(
        &h,
        &sbx,
        "user",
        "sha256sum /opt/e2b/envd | cut -c1-64",
        json!({}),
        "",
    )
    .await
    .stdout;
    let host = std::process::Command::new("sha256sum")
        .arg(&envd)
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .chars()
                .take(64)
                .collect::<String>()
        })
        .unwrap();
    assert_eq!(inside.trim(), host, "the real envd runs after the attempts");
    let after: Vec<Vec<u8>> = watched.iter().map(|p| bytes_of(p)).collect();
    if let Some(p) = &usr_canary {
        let _ = std::fs::remove_file(p);
    }
    for ((path, b), a) in watched.iter().zip(&before).zip(&after) {
        assert!(
            a == b,
            "{} changed on the host: {}",
            path.display(),
            String::from_utf8_lossy(&a[a.len().saturating_sub(40)..])
        );
    }
    still_serving(&h, &sbx).await;
    h.server.shutdown().await;
}

/// The host directories of a sandbox's cgroup (`<hierarchy>/…/<id>`).
fn cgroup_dirs(id: &str) -> Vec<PathBuf> {
    fn walk(dir: &Path, id: &str, depth: u32, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                if e.file_name() == id {
                    out.push(e.path());
                } else if depth > 0 {
                    walk(&e.path(), id, depth - 1, out);
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(Path::new("/sys/fs/cgroup"), id, 5, &mut out);
    out
}

fn limit_files(dirs: &[PathBuf]) -> Vec<(PathBuf, String)> {
    let names = [
        "memory.limit_in_bytes",
        "memory.memsw.limit_in_bytes",
        "memory.max",
        "pids.max",
        "cpu.cfs_quota_us",
        "cpu.max",
        "cgroup.procs",
    ];
    let mut out = Vec::new();
    for d in dirs {
        for n in names {
            let p = d.join(n);
            if let Ok(v) = std::fs::read_to_string(&p) {
                let v = if n == "cgroup.procs" {
                    String::new()
                } else {
                    v
                };
                out.push((p, v));
            }
        }
    }
    out
}

/// The sandbox's root mounts cgroup hierarchies (in a cgroup namespace of
/// its own), sysfs and proc, and writes their limits, `release_agent`,
/// `core_pattern` and other host sysctls: the host's view of the
/// sandbox's limits and the host's sysctls are unchanged. Needs root (an
/// ordinary user's server has no cgroups; the sysctl part runs anyway).
#[tokio::test]
async fn cgroup_and_sysctl_writes_change_nothing_on_the_host() {
    let data = tempfile::tempdir().unwrap();
    let h = server(data.path()).await;
    let sbx = h.create_default().await;
    let (events, _) = run(&h, &sbx, "true").await;
    assert!(events.iter().any(|e| e.pointer("/event/end").is_some()));
    let dirs = if privileged() {
        cgroup_dirs(&sbx.id)
    } else {
        Vec::new()
    };
    let limits_before = limit_files(&dirs);
    let sysctls = [
        "/proc/sys/kernel/core_pattern",
        "/proc/sys/kernel/hostname",
        "/proc/sys/kernel/modprobe",
        "/proc/sys/vm/overcommit_memory",
        "/proc/sys/kernel/sysrq",
    ];
    let sysctl_before: Vec<String> = sysctls
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap_or_default())
        .collect();
    let script = r#"try() { if "$@" >/dev/null 2>&1; then echo "did: $*"; else echo "no: $*"; fi; }
mkdir -p /tmp/cg /tmp/cg2 /tmp/sys /tmp/proc2
for c in memory pids cpu,cpuacct freezer devices; do
  try unshare -C sh -c "mount -t cgroup -o $c none /tmp/cg && for f in /tmp/cg/memory.limit_in_bytes /tmp/cg/memory.memsw.limit_in_bytes /tmp/cg/pids.max /tmp/cg/cpu.cfs_quota_us; do [ -e \$f ] && echo -1 > \$f; done; echo \$\$ > /tmp/cg/cgroup.procs; mkdir /tmp/cg/child; echo /bin/sh > /tmp/cg/release_agent; echo 1 > /tmp/cg/notify_on_release; echo THAWED > /tmp/cg/freezer.state; echo a > /tmp/cg/devices.allow; umount /tmp/cg"
done
try unshare -C sh -c 'mount -t cgroup -o none,name=evil none /tmp/cg'
try unshare -C sh -c 'mount -t cgroup2 none /tmp/cg2 && echo max > /tmp/cg2/memory.max && echo max > /tmp/cg2/pids.max && mkdir /tmp/cg2/x'
try mount -t cgroup2 none /tmp/cg2
try sh -c 'mount -t sysfs none /tmp/sys && mount -t cgroup2 none /tmp/sys/fs/cgroup'
try sh -c 'echo "|/bin/sh -c id" > /proc/sys/kernel/core_pattern'
try sh -c 'echo /tmp/evil > /proc/sys/kernel/modprobe'
try sh -c 'echo 1 > /proc/sys/vm/overcommit_memory'
try sh -c 'echo 0 > /proc/sys/kernel/sysrq'
try sh -c 'mount -t proc proc /tmp/proc2 && echo "|/bin/sh" > /tmp/proc2/sys/kernel/core_pattern'
try sh -c 'hostname pwned'
try sh -c 'mknod /tmp/sda b 8 0 && head -c1 /tmp/sda'
try sh -c 'mknod /tmp/mem c 1 1 && head -c1 /tmp/mem'
try sh -c 'insmod /nonexistent.ko || modprobe dummy'
echo done
"#;
    let ran = as_sandbox_root(&h, &sbx, script).await;
    eprintln!("attempts: {}{}", ran.stdout, ran.stderr);
    assert!(ran.stdout.contains("done"), "{ran:?}");
    for forbidden in ["did: sh -c mknod /tmp/sda", "did: sh -c mknod /tmp/mem"] {
        assert!(!ran.stdout.contains(forbidden), "{forbidden}: {ran:?}");
    }
    let sysctl_after: Vec<String> = sysctls
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap_or_default())
        .collect();
    for ((p, b), a) in sysctls.iter().zip(&sysctl_before).zip(&sysctl_after) {
        if a != b {
            // Put it back before failing: this is the host's.
            let _ = std::fs::write(p, b);
        }
        assert_eq!(a, b, "{p} changed on the host: {ran:?}");
    }
    if privileged() {
        assert!(!dirs.is_empty(), "the sandbox has a cgroup");
        assert_eq!(limit_files(&dirs), limits_before, "{ran:?}");
        for d in &dirs {
            assert!(!d.join("child").exists(), "{ran:?}");
        }
        // The limit still holds: more processes than the cap fail.
        let probe = "import os, time\n\
                     pids, fails = [], 0\n\
                     for i in range(1200):\n\
                     \x20   try:\n\
                     \x20       pid = os.fork()\n\
                     \x20   except OSError:\n\
                     \x20       fails += 1\n\
                     \x20       continue\n\
                     \x20   if pid == 0:\n\
                     \x20       time.sleep(30)\n\
                     \x20       os._exit(0)\n\
                     \x20   pids.append(pid)\n\
                     for p in pids:\n\
                     \x20   os.kill(p, 9)\n\
                     \x20   os.waitpid(p, 0)\n\
                     print(len(pids))\n";
        let ran = sh(
            &h,
            &sbx,
            "user",
            &format!("python3 -c {}", shell_quote(probe)),
            json!({}),
            "",
        )
        .await;
        let started: u32 = ran.stdout.trim().parse().unwrap_or(u32::MAX);
        assert!(started < 1024, "the pids limit still holds: {ran:?}");
    }
    still_serving(&h, &sbx).await;
    h.server.shutdown().await;
}

/// Another sandbox's files, by every path: its host path (the test knows
/// the data directory), `/proc/*/root`, `..`, symlinks to them, the routing
/// headers with the wrong token, and a race flipping a directory and a
/// symlink under uploads. Nothing of the other sandbox or of the host is
/// read or written.
#[tokio::test]
async fn other_sandboxes_and_host_files_by_every_path() {
    let data = tempfile::tempdir().unwrap();
    let host = host_dir();
    let secret = format!("host-secret-{}", std::process::id());
    std::fs::write(host.path().join("canary"), &secret).unwrap();
    let h = server(data.path()).await;
    let a = h.create_default().await;
    let b = h.create_default().await;
    let a_secret = format!("sandbox-a-secret-{}", a.id);
    let (events, _) = run(
        &h,
        &a,
        &format!(
            "echo {a_secret} > /home/user/secret; echo {a_secret} > /tmp/secret; echo {a_secret} > /dev/shm/secret 2>/dev/null; \
             (sleep 300 </dev/null >/dev/null 2>&1 &); echo ok"
        ),
    )
    .await;
    assert_eq!(stdout_of(&events), "ok\n", "{}", stderr_of(&events));
    let a_root = data.path().join(&a.id);
    let hostp = host.path().display().to_string();
    let candidates: Vec<String> = vec![
        a_root.join("home/user/secret").display().to_string(),
        a_root.join("tmp/secret").display().to_string(),
        format!("/proc/1/root{}", a_root.join("home/user/secret").display()),
        "/proc/1/root/home/user/secret".into(),
        format!("{hostp}/canary"),
        format!("/proc/1/root{hostp}/canary"),
        format!("/proc/self/root{hostp}/canary"),
        format!("/proc/2/root{hostp}/canary"),
        format!("/proc/1/cwd/../../../../..{hostp}/canary"),
        format!("../../../../../../..{hostp}/canary"),
        format!("/home/user/../../..{hostp}/canary"),
        "/home/user/link-abs/canary".into(),
        "/home/user/link-proc/canary".into(),
        "/home/user/link-a/secret".into(),
        "/home/user/link-rel/canary".into(),
        "/dev/shm/secret".into(),
    ];
    let (events, _) = run(
        &h,
        &b,
        &format!(
            "ln -s {hostp} /home/user/link-abs; ln -s /proc/1/root{hostp} /home/user/link-proc; \
             ln -s {a} /home/user/link-a; ln -s ../../../../../../../..{hostp} /home/user/link-rel; echo ok",
            a = a_root.join("home/user").display()
        ),
    )
    .await;
    assert_eq!(stdout_of(&events), "ok\n");
    let users: &[&str] = if privileged() {
        &["user", "root"]
    } else {
        &["user"]
    };
    let mut seen = String::new();
    for path in &candidates {
        for user in users {
            let (status, body) = download(&h, &b, path, user).await;
            seen.push_str(&format!("{path} as {user}: {status} {body}\n"));
            let st = h.filesystem(&b, "Stat", json!({"path": path})).await;
            seen.push_str(&format!("{}\n", st.1));
            let ls = h
                .filesystem(&b, "ListDir", json!({"path": path, "depth": 2}))
                .await;
            seen.push_str(&format!("{}\n", ls.1));
        }
    }
    // The same from commands, as root where there is one.
    let cat_all = format!(
        "for p in {}; do cat \"$p\"; done 2>/dev/null; cat /proc/[0-9]*/root/home/user/secret 2>/dev/null; \
         ls /proc/[0-9]*/root{hostp} 2>/dev/null; ipcs 2>/dev/null; echo end",
        candidates.iter().map(|c| shell_quote(c)).collect::<Vec<_>>().join(" ")
    );
    for user in users {
        let ran = sh(&h, &b, user, &cat_all, json!({}), "").await;
        seen.push_str(&ran.stdout);
        assert!(ran.stdout.contains("end"), "{ran:?}");
    }
    // Another sandbox's id with this one's token, or odd spellings of it.
    for (id_header, host_header) in [
        (Some(a.id.clone()), None),
        (Some(format!(" {} ", a.id)), None),
        (Some(format!("{}\t", a.id)), None),
        (None, Some(format!("49983-{}.localhost", a.id))),
        (None, Some(format!("49983-{}.e2b.app", a.id))),
    ] {
        let mut req = h
            .http
            .get(h.url("/files?path=%2Fhome%2Fuser%2Fsecret"))
            .header("X-Access-Token", &b.token);
        if let Some(id) = &id_header {
            req = req
                .header("E2b-Sandbox-Id", id.as_str())
                .header("E2b-Sandbox-Port", "49983");
        }
        if let Some(host) = &host_header {
            req = req.header("Host", host.as_str());
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let body = resp.text().await.unwrap_or_default();
        assert_eq!(status, 401, "{id_header:?} {host_header:?}: {body}");
        seen.push_str(&body);
    }
    assert!(!seen.contains(&a_secret), "another sandbox's file: {seen}");
    assert!(!seen.contains(&secret), "a host file: {seen}");
    // A race: a directory flipping with a symlink to the host directory
    // (absolute, and through /proc/1/root) while files go up and down.
    let flip = format!(
        "end=$((SECONDS+4)); while [ $SECONDS -lt $end ]; do rm -rf /home/user/d; mkdir /home/user/d; \
         rm -rf /home/user/d; ln -s {hostp} /home/user/d; rm -f /home/user/d; ln -s /proc/1/root{hostp} /home/user/d; done; echo flipped"
    );
    let flipper = {
        let (h2, b2) = (&h, &b);
        async move { run(h2, b2, &flip).await }
    };
    let hammer = async {
        let mut got = String::new();
        for i in 0..60 {
            let _ = upload(
                &h,
                &b,
                &format!("/home/user/d/pwn-{i}"),
                "user",
                b"pwn".to_vec(),
            )
            .await;
            let (_, body) = download(&h, &b, "/home/user/d/canary", "user").await;
            got.push_str(&body);
        }
        got
    };
    let ((events, _), got) = tokio::join!(flipper, hammer);
    assert!(stdout_of(&events).contains("flipped"));
    assert!(
        !got.contains(&secret),
        "a host file through the race: {got}"
    );
    let names: Vec<String> = std::fs::read_dir(host.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["canary"], "a file landed on the host");
    // A's file is intact and still A's only.
    let (events, _) = run(&h, &a, "cat /home/user/secret").await;
    assert_eq!(stdout_of(&events), format!("{a_secret}\n"));
    still_serving(&h, &b).await;
    h.server.shutdown().await;
}

/// `user` (Basic and `?username=`) and `cwd` with odd values: only
/// `user` and, on a root server, `root` (the sandbox's) act; every cwd
/// resolves inside the sandbox.
#[tokio::test]
async fn odd_users_and_working_directories() {
    let data = tempfile::tempdir().unwrap();
    let host = host_dir();
    let secret = format!("host-cwd-secret-{}", std::process::id());
    std::fs::write(host.path().join("canary"), &secret).unwrap();
    let h = server(data.path()).await;
    let sbx = h.create_default().await;
    let probe = "id -u; cat /proc/self/uid_map; echo cwd=$(pwd -P)";
    for name in [
        "root",
        "user",
        "nobody",
        "0",
        "../root",
        "root\u{0}",
        "ROOT",
        " root",
        "root ",
        "",
        ":",
        "root:root",
        "user:x",
        "daemon",
        "1000",
    ] {
        let ran = sh(&h, &sbx, name, probe, json!({}), "").await;
        let uid = ran.stdout.lines().next().unwrap_or("");
        let allowed = match uid {
            "" => true,
            "1000" => true,
            "0" => privileged() && name.split(':').next() == Some("root"),
            _ => false,
        };
        assert!(allowed, "user {name:?} ran as {uid}: {ran:?}");
        for line in ran
            .stdout
            .lines()
            .skip(1)
            .take_while(|l| !l.starts_with("cwd="))
        {
            let host_id = line.split_whitespace().nth(1).unwrap_or("");
            assert_ne!(host_id, "0", "{name:?}: host root inside: {ran:?}");
        }
    }
    // A garbage Authorization header.
    for value in ["Basic !!!", "Bearer root", "Basic cm9vdA", "basic cm9vdDo="] {
        let ran = start_raw(
            &h,
            &sbx,
            json!({"process": {"cmd": "/bin/sh", "args": ["-c", "id -u"]}}),
            &[("authorization", value.to_string())],
        )
        .await;
        assert!(
            ran.stdout.is_empty()
                || ran.stdout == "1000\n"
                || (privileged() && ran.stdout == "0\n"),
            "{value}: {ran:?}"
        );
    }
    for user in ["nobody", "0", "..", "root\u{0}", "%00"] {
        let (status, body) = download(&h, &sbx, "/etc/hostname", user).await;
        assert!(status != 200 || body == "e2b\n", "{user}: {status} {body}");
    }
    let hostp = host.path().display().to_string();
    for cwd in [
        "/proc/1/root".to_string(),
        "/proc/self/root/..".into(),
        "/proc/1/cwd".into(),
        "/proc/2/root/../..".into(),
        "../../../../..".into(),
        hostp.clone(),
        format!("/proc/1/root{hostp}"),
        "/opt/e2b".into(),
        "/root".into(),
        "/dev/shm".into(),
        "/proc/self/fd".into(),
        "~/../../..".into(),
    ] {
        for user in ["user", "root"] {
            let ran = sh(
                &h,
                &sbx,
                user,
                "pwd -P; cat canary ../canary 2>/dev/null; ls",
                json!({}),
                &cwd,
            )
            .await;
            assert!(!ran.stdout.contains(&secret), "{cwd} as {user}: {ran:?}");
        }
    }
    still_serving(&h, &sbx).await;
    h.server.shutdown().await;
}

/// The routing and envd headers with odd values, a port that is a host
/// loopback service or the control plane, and the template, metadata and
/// envVars of creation: clean refusals, never the host, never a hang.
#[tokio::test]
async fn odd_headers_ports_and_creation_fields() {
    let data = tempfile::tempdir().unwrap();
    let h = server(data.path()).await;
    let sbx = h.create_default().await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let host_port = listener.local_addr().unwrap().port();
    let listener6 = std::net::TcpListener::bind("[::1]:0").ok();
    let api_port = h.server.addr().port();
    // Ports: a host loopback service, the control plane, nonsense.
    for port in [
        host_port.to_string(),
        api_port.to_string(),
        "0".into(),
        "65535".into(),
        "65536".into(),
        "-1".into(),
        "99999999999".into(),
        "+49983".into(),
        "0x1".into(),
        "49983abc".into(),
        String::new(),
    ] {
        let resp = tokio::time::timeout(
            CALL,
            h.http
                .get(h.url("/"))
                .header("E2b-Sandbox-Id", &sbx.id)
                .header("E2b-Sandbox-Port", port.as_str())
                .header("X-Access-Token", &sbx.token)
                .send(),
        )
        .await
        .unwrap_or_else(|_| panic!("port {port} hung"))
        .unwrap();
        let status = resp.status().as_u16();
        let body = resp.text().await.unwrap_or_default();
        assert!(
            matches!(status, 400 | 404 | 502) || (port == "+49983" && status < 500),
            "port {port:?}: {status} {body}"
        );
        assert!(
            !body.contains("sandboxID"),
            "port {port}: the control plane: {body}"
        );
    }
    for host in [
        format!("{host_port}-{}.localhost", sbx.id),
        format!("{api_port}-{}.localhost", sbx.id),
        format!("{host_port}-{}.127.0.0.1", sbx.id),
    ] {
        let resp = h
            .http
            .get(h.url("/sandboxes"))
            .header("Host", host.as_str())
            .send()
            .await
            .unwrap();
        assert!(matches!(resp.status().as_u16(), 502 | 404), "{host}");
    }
    // Odd sandbox ids.
    let long = "a".repeat(10_000);
    for id in ["..", "../sandboxes", "%2e%2e", long.as_str(), "*", "\u{7f}"] {
        if let Ok(resp) = h
            .http
            .get(h.url("/files?path=%2Fetc%2Fhostname"))
            .header("E2b-Sandbox-Id", id)
            .header("E2b-Sandbox-Port", "49983")
            .header("X-Access-Token", &sbx.token)
            .send()
            .await
        {
            // 502 is E2B's edge's "sandbox not found".
            assert!(
                matches!(resp.status().as_u16(), 400 | 404 | 431 | 502),
                "{id:.20}: {}",
                resp.status()
            );
            assert!(!resp.text().await.unwrap_or_default().contains("e2b\n"));
        }
    }
    // From inside: the host services and an abstract socket of the host.
    let abstract_name = format!("e2b-redteam-{}", std::process::id());
    let _abstract = {
        use std::os::linux::net::SocketAddrExt;
        let addr =
            std::os::unix::net::SocketAddr::from_abstract_name(abstract_name.as_bytes()).unwrap();
        std::os::unix::net::UnixListener::bind_addr(&addr).unwrap()
    };
    let port6 = listener6
        .as_ref()
        .map(|l| l.local_addr().unwrap().port())
        .unwrap_or(1);
    let script = format!(
        r#"import socket
for fam, addr in [(socket.AF_INET, ('127.0.0.1', {host_port})), (socket.AF_INET, ('127.0.0.1', {api_port})), (socket.AF_INET6, ('::1', {port6})), (socket.AF_INET, ('10.0.2.2', {api_port})), (socket.AF_INET, ('0.0.0.0', {api_port}))]:
    s = socket.socket(fam); s.settimeout(3)
    try:
        s.connect(addr); print('CONNECTED', addr)
    except OSError:
        print('refused', addr)
u = socket.socket(socket.AF_UNIX)
try:
    u.connect('\0{abstract_name}'); print('CONNECTED abstract')
except OSError:
    print('refused abstract')
"#
    );
    let ran = as_sandbox_root(&h, &sbx, &format!("python3 -c {}", shell_quote(&script))).await;
    assert!(!ran.stdout.contains("CONNECTED"), "{ran:?}");
    assert_eq!(ran.stdout.lines().count(), 6, "{ran:?}");
    assert!(
        listener.accept().is_err(),
        "the host listener got a connection"
    );
    // envd's headers with odd values: every call ends.
    for (name, value) in [
        ("connect-timeout-ms", "0"),
        ("connect-timeout-ms", "-1"),
        ("connect-timeout-ms", "18446744073709551615"),
        ("connect-timeout-ms", "18446744073709551616"),
        ("connect-timeout-ms", "1"),
        ("keepalive-ping-interval", "0"),
        ("keepalive-ping-interval", "-5"),
        ("keepalive-ping-interval", "18446744073709551615"),
        ("keepalive-ping-interval", "1"),
    ] {
        let ran = start_raw(
            &h,
            &sbx,
            json!({"process": {"cmd": "/bin/sh", "args": ["-c", "echo hi"]}}),
            &[(name, value.to_string())],
        )
        .await;
        assert!(ran.status < 500, "{name}: {value}: {ran:?}");
    }
    // PTY sizes at the edges, and resizing to them.
    for (cols, rows) in [(0, 0), (65535, 65535), (1, 65535), (65535, 0)] {
        let ran = start_raw(
            &h,
            &sbx,
            json!({"process": {"cmd": "/bin/sh", "args": ["-c", "stty size; echo done"]}, "pty": {"size": {"cols": cols, "rows": rows}}}),
            &[],
        )
        .await;
        assert!(ran.status < 500, "{cols}x{rows}: {ran:?}");
    }
    // Signals to pids that are not envd's commands: pid 1, envd, huge.
    for pid in [
        json!(0),
        json!(1),
        json!(2),
        json!(3),
        json!(4_294_967_295u64),
        json!(-1),
        json!(1e300),
        json!("1"),
    ] {
        for signal in ["SIGNAL_SIGKILL", "SIGNAL_SIGTERM"] {
            let (status, _) = tokio::time::timeout(
                CALL,
                h.unary(
                    &sbx,
                    "/process.Process/SendSignal",
                    json!({"process": {"pid": pid}, "signal": signal}),
                ),
            )
            .await
            .expect("SendSignal hung");
            assert!(status < 500 || status == 501, "{pid} {signal}: {status}");
        }
        let (status, _) = h
            .unary(
                &sbx,
                "/process.Process/Update",
                json!({"process": {"pid": pid}, "pty": {"size": {"cols": 65535, "rows": 0}}}),
            )
            .await;
        assert!(status < 500, "update {pid}: {status}");
    }
    // Watches on pseudo-filesystems, magic links and the host's paths.
    for path in [
        "/proc",
        "/proc/1/root",
        "/proc/self/fd",
        "/sys",
        "/dev",
        "/",
        "/opt/e2b",
    ] {
        let (status, body) = tokio::time::timeout(
            CALL,
            h.filesystem(
                &sbx,
                "CreateWatcher",
                json!({"path": path, "recursive": true}),
            ),
        )
        .await
        .unwrap_or_else(|_| panic!("watching {path} hung"));
        assert!(status < 500, "watch {path}: {status} {body}");
        if let Some(id) = body["watcherId"].as_str() {
            let _ = h
                .filesystem(&sbx, "RemoveWatcher", json!({"watcherId": id}))
                .await;
        }
    }
    // Creation fields.
    for template in [
        "../base",
        "base/../../etc",
        "/etc/passwd",
        "code-interpreter-v1/..",
        "",
        "base\u{0}",
        &"b".repeat(5000),
    ] {
        let resp = h
            .api(Method::POST, "/v2/sandboxes")
            .json(&json!({"templateID": template}))
            .send()
            .await
            .unwrap();
        assert!(
            matches!(resp.status().as_u16(), 400 | 404),
            "{template:.20}: {}",
            resp.status()
        );
    }
    let big = "x".repeat(1 << 20);
    for body in [
        json!({"templateID": "base", "metadata": {"../../etc": "x", "k": big.clone()}}),
        json!({"templateID": "base", "envVars": {"A\u{0}B": "x", "C": "a\u{0}b", "D=E": "f"}}),
        json!({"templateID": "base", "envVars": {"BIG": big.clone(), "BIG2": big}}),
    ] {
        let resp = tokio::time::timeout(
            CALL,
            h.api(Method::POST, "/v2/sandboxes").json(&body).send(),
        )
        .await
        .expect("create hung")
        .unwrap();
        let status = resp.status().as_u16();
        assert!(status < 500, "{status}");
        if status == 201 {
            let v: Value = resp.json().await.unwrap();
            let odd = Sbx {
                id: v["sandboxID"].as_str().unwrap().into(),
                token: v["envdAccessToken"].as_str().unwrap().into(),
            };
            let ran = sh(&h, &odd, "user", "echo fine", json!({}), "").await;
            assert!(ran.status < 600, "{ran:?}");
        }
    }
    drop(listener6);
    still_serving(&h, &sbx).await;
    h.server.shutdown().await;
}

/// The sandbox's root kills envd (on an ordinary user's server, `user`
/// kills everything), round after round: the sandbox comes back within
/// two seconds, with its files, never the host.
#[tokio::test]
async fn killing_envd_again_and_again_gets_the_sandbox_back() {
    let data = tempfile::tempdir().unwrap();
    let h = server(data.path()).await;
    let sbx = h.create_default().await;
    let other = h.create_default().await;
    for round in 0..4 {
        let _ = as_sandbox_root(
            &h,
            &sbx,
            &format!("echo {round} > /home/user/round; kill -9 -1; sleep 1"),
        )
        .await;
        let ran = sh_after_restart(
            &h,
            &sbx,
            "user",
            "cat /home/user/round; test -e /etc/shadow || echo sandboxed",
            json!({}),
            "",
        )
        .await;
        assert_eq!(
            ran.stdout,
            format!("{round}\nsandboxed\n"),
            "round {round}: {ran:?}"
        );
        let (events, _) = run(&h, &other, "echo other").await;
        assert_eq!(stdout_of(&events), "other\n");
    }
    h.server.shutdown().await;
}
