//! Nothing of the host reaches a sandbox but the bytes the edge forwards:
//! no host network path (raw packets or sockets to the host's loopback),
//! no host descriptor (the server's inherited ones, envd's control
//! socket), no host identifier it does not need. Each attack runs as the
//! sandbox's root where it has one (a server run as root), else as
//! `user`; `scripts/test` runs them again with the server as `nobody`.

use std::net::{TcpListener, UdpSocket};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use crate::common::{start, stderr_of, stdout_of, Harness, Sbx};

/// `Basic root:`: envd runs the command as the sandbox's root.
const AS_ROOT: (&str, &str) = ("authorization", "Basic cm9vdDo=");

fn server_is_root() -> bool {
    rustix::process::getuid().is_root()
}

/// Runs `cmd` with bash as the sandbox's root (on a server run as root)
/// or as `user`: stdout, stderr.
async fn run_privileged(h: &Harness, sbx: &Sbx, cmd: &str) -> (String, String) {
    let headers: &[(&str, &str)] = if server_is_root() { &[AS_ROOT] } else { &[] };
    let (events, _) = h
        .stream(
            sbx,
            "/process.Process/Start",
            json!({"process": {"cmd": "/bin/bash", "args": ["-c", cmd]}, "stdin": false}),
            headers,
        )
        .await;
    (stdout_of(&events), stderr_of(&events))
}

/// Listeners on the host's loopback (TCP and UDP, IPv4 and IPv6) that
/// note whatever reaches them.
struct LoopbackListeners {
    /// TCP v4, TCP v6, UDP v4, UDP v6 (0 where the host has no `::1`).
    ports: [u16; 4],
    seen: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl LoopbackListeners {
    fn start() -> Self {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        let mut ports = [0u16; 4];
        for (i, addr) in ["127.0.0.1:0", "[::1]:0"].into_iter().enumerate() {
            let Ok(tcp) = TcpListener::bind(addr) else {
                continue;
            };
            ports[i] = tcp.local_addr().unwrap().port();
            tcp.set_nonblocking(true).unwrap();
            let (seen, stop) = (Arc::clone(&seen), Arc::clone(&stop));
            threads.push(std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if let Ok((_, from)) = tcp.accept() {
                        seen.lock().unwrap().push(format!("tcp {addr} from {from}"));
                    }
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
            }));
        }
        for (i, addr) in ["127.0.0.1:0", "[::1]:0"].into_iter().enumerate() {
            let Ok(udp) = UdpSocket::bind(addr) else {
                continue;
            };
            ports[2 + i] = udp.local_addr().unwrap().port();
            udp.set_nonblocking(true).unwrap();
            let (seen, stop) = (Arc::clone(&seen), Arc::clone(&stop));
            threads.push(std::thread::spawn(move || {
                let mut buf = [0u8; 64];
                while !stop.load(Ordering::Relaxed) {
                    if let Ok((_, from)) = udp.recv_from(&mut buf) {
                        seen.lock().unwrap().push(format!("udp {addr} from {from}"));
                    }
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
            }));
        }
        Self {
            ports,
            seen,
            stop,
            threads,
        }
    }

    /// What reached them, once they stopped.
    fn finish(self) -> Vec<String> {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads {
            t.join().unwrap();
        }
        Arc::try_unwrap(self.seen).unwrap().into_inner().unwrap()
    }
}

/// The bounding set of the sandbox's root: Podman's default capabilities
/// (CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL, SETGID, SETUID, SETPCAP,
/// NET_BIND_SERVICE, SETFCAP), without NET_RAW (13).
const ROOT_BOUNDING_SET: u64 = 0x8000_05fb;
const CAP_NET_RAW: u64 = 1 << 13;

#[tokio::test]
async fn raw_packets_and_sockets_never_reach_the_host_loopback() {
    let h = start().await;
    let internet = h
        .server
        .isolation()
        .contains("internet through slirp4netns");
    if server_is_root() {
        assert!(
            internet,
            "a server run as root gives internet: {}",
            h.server.isolation()
        );
    }
    let sbx = h.create_default().await;
    let listeners = LoopbackListeners::start();
    let resp = h
        .upload(
            &sbx,
            "/home/user/raw_packets.py",
            include_str!("raw_packets.py"),
        )
        .await;
    assert!(resp.status().is_success());
    let [tcp4, tcp6, udp4, udp6] = listeners.ports;
    let (out, err) = run_privileged(
        &h,
        &sbx,
        &format!(
            "grep -c eth0 /proc/net/dev; python3 /home/user/raw_packets.py {tcp4} {tcp6} {udp4} {udp6}"
        ),
    )
    .await;
    // slirp4netns answers a forged SYN with a connect of its own at once;
    // give a datagram time to arrive too.
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    let seen = listeners.finish();
    let mut lines = out.lines();
    let interfaces = lines.next().unwrap_or_default();
    assert_eq!(interfaces, if internet { "1" } else { "0" }, "{out}{err}");
    let report: Value = serde_json::from_str(lines.next().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    assert!(
        seen.is_empty(),
        "the host's loopback was reached: {seen:?} ({report})"
    );
    let bounding = u64::from_str_radix(report["CapBnd"].as_str().unwrap(), 16).unwrap();
    assert_eq!(bounding & CAP_NET_RAW, 0, "{report}");
    if server_is_root() {
        assert_eq!(bounding, ROOT_BOUNDING_SET, "{report}");
    }
    for socket in ["raw4", "raw6", "packet"] {
        assert_eq!(report[socket], json!(libc::EPERM), "{socket}: {report}");
    }
    for (key, value) in report.as_object().unwrap() {
        assert_ne!(value, "CONNECTED", "{key}: {report}");
    }
    // The server and the sandbox go on serving.
    let (out, _) = run_privileged(&h, &sbx, "echo still").await;
    assert_eq!(out, "still\n");
    h.server.shutdown().await;
}

/// A directory opened without `O_CLOEXEC`, as a shell or supervisor
/// leaks one to the server it starts.
fn leaked_directory(dir: &std::path::Path) -> OwnedFd {
    // rustix passes the flags as they are: no O_CLOEXEC added.
    rustix::fs::open(
        dir,
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY,
        rustix::fs::Mode::empty(),
    )
    .unwrap()
}

/// The host processes of this test process's sandboxes (bubblewrap,
/// slirp4netns) whose descriptors lead to `canary`.
fn host_holders(canary: &str) -> Vec<String> {
    let mut holders = Vec::new();
    let ours = crate::common::children_named(std::process::id(), &["bwrap", "slirp4netns"]);
    for process in ours {
        let fds = std::fs::read_dir(format!("/proc/{}/fd", process.pid));
        for fd in fds.into_iter().flatten().flatten() {
            let target = std::fs::read_link(fd.path()).unwrap_or_default();
            if target.to_string_lossy().contains(canary) {
                holders.push(format!(
                    "{} {}: {}",
                    process.name,
                    fd.path().display(),
                    target.display()
                ));
            }
        }
    }
    holders
}

#[tokio::test]
async fn descriptors_the_server_inherited_reach_no_sandbox_process() {
    let dir = tempfile::Builder::new()
        .prefix("e2b-inherited-canary-")
        .tempdir_in(std::env::current_dir().unwrap())
        .unwrap();
    std::fs::write(dir.path().join("secret"), "host secret\n").unwrap();
    let canary = dir
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let leaked = leaked_directory(dir.path());
    let n = leaked.as_raw_fd();
    let h = start().await;
    let sbx = h.create_default().await;
    let script = format!(
        "for p in /proc/[0-9]*; do for f in $p/fd/*; do l=$(readlink $f); \
         case $l in *{canary}*) echo \"$f -> $l\";; esac; done; done 2>/dev/null; \
         cat /proc/self/fd/{n}/secret /proc/1/fd/{n}/secret 2>/dev/null; \
         ls /proc/[0-9]*/fd/ >/dev/null 2>&1 && echo listed"
    );
    let (out, err) = run_privileged(&h, &sbx, &script).await;
    assert_eq!(
        out, "listed\n",
        "a sandbox process holds the host directory: {out}{err}"
    );
    let holders = host_holders(&canary);
    assert!(holders.is_empty(), "{holders:?}");
    h.server.shutdown().await;
    drop(leaked);
}

#[tokio::test]
async fn envd_control_socket_reaches_no_command() {
    let h = start().await;
    let sbx = h.create_default().await;
    let list = "python3 -c \"import os; print(sorted(os.listdir('/proc/self/fd'), key=int))\"";
    // As user, and as root (`sudo`, and envd's own root) where there is one.
    let only_stdio = "['0', '1', '2', '3']\n";
    let (events, _) = crate::common::run(&h, &sbx, list).await;
    assert_eq!(stdout_of(&events), only_stdio, "{}", stderr_of(&events));
    if server_is_root() {
        let (out, err) = run_privileged(&h, &sbx, list).await;
        assert_eq!(out, only_stdio, "{err}");
        let (events, _) = crate::common::run(&h, &sbx, &format!("sudo {list}")).await;
        assert_eq!(stdout_of(&events), only_stdio, "{}", stderr_of(&events));
    }
    // envd's own descriptors: stdin and stdout are /dev/null, and every
    // other is close-on-exec, its control socket first.
    let script = "for p in /proc/[0-9]*; do \
        [ \"$(readlink $p/exe)\" = /opt/e2b/envd ] && pid=${p#/proc/} && break; done; \
        readlink /proc/$pid/fd/0 /proc/$pid/fd/1; \
        for f in /proc/$pid/fdinfo/*; do n=${f##*/}; [ $n -lt 3 ] && continue; \
        flags=$(awk '/^flags:/ {print $2}' $f); \
        [ $(( 0$flags & 02000000 )) -eq 0 ] && echo \"fd $n inherited: $(readlink /proc/$pid/fd/$n)\"; done; echo checked";
    let (out, err) = run_privileged(&h, &sbx, script).await;
    assert_eq!(out, "/dev/null\n/dev/null\nchecked\n", "{err}");
    h.server.shutdown().await;
}

#[tokio::test]
async fn host_facts_are_not_the_sandboxes_business() {
    let h = start().await;
    let sbx = h.create_default().await;
    let (out, err) = run_privileged(
        &h,
        &sbx,
        "cut -d: -f3 /proc/self/cgroup | sort -u; echo ---; cat /proc/partitions; echo ---; \
         cat /proc/self/mountinfo",
    )
    .await;
    let parts: Vec<&str> = out.split("---\n").collect();
    assert_eq!(parts.len(), 3, "{out}{err}");
    assert_eq!(parts[0], "/\n", "its cgroup is its root: {out}");
    assert_eq!(
        parts[1].lines().filter(|l| !l.trim().is_empty()).count(),
        1,
        "no block device of the host: {}",
        parts[1]
    );
    let mountinfo = parts[2];
    // The server's files are copied into the root, not bound.
    assert!(!mountinfo.contains(" /etc/passwd "), "{mountinfo}");
    // With disk images, no mount names the sandbox's host directory.
    if h.server.isolation().contains("ext4 image per sandbox") {
        assert!(!mountinfo.contains(&sbx.id), "{mountinfo}");
    }
    h.server.shutdown().await;
}
