//! Attempts on the host itself: loader and interpreter variables, the
//! read-only binds and envd's binary, cgroup and sysctl files.

use super::*;

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
    // The one server file bound into the sandbox (its /etc is copied in).
    let envd = data.path().join(".envd/e2b-envd");
    if weaken {
        std::fs::set_permissions(&envd, std::fs::Permissions::from_mode(0o777)).unwrap();
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
    let watched: Vec<PathBuf> = [envd.clone(), "/usr/bin/env".into()]
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
        let probe = &crate::common::fork_probe(1200, 30);
        let ran = sh(
            &h,
            &sbx,
            "user",
            &format!("python3 -c {}", shell_quote(probe)),
            json!({}),
            "",
        )
        .await;
        let started: u32 = ran
            .stdout
            .split_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(u32::MAX);
        assert!(started < 1024, "the pids limit still holds: {ran:?}");
    }
    still_serving(&h, &sbx).await;
    h.server.shutdown().await;
}
