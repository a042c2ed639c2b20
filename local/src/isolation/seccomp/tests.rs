//! The filter against the kernel: every rule refuses its calls and only
//! those, through real bwrap sandboxes.

use super::*;
use crate::isolation::spawn::HostCommand;
use std::process::Output;

/// The host's own Python (the interpreter the sandboxes get).
const PYTHON: &str = "/usr/bin/python3";
/// An errno no syscall returns: a filter compiled with it tells its
/// own answers from the kernel's.
const MARKER: i32 = 4095;

const NEWUSER: i64 = libc::CLONE_NEWUSER as i64;
const NEWNS: i64 = libc::CLONE_NEWNS as i64;
const SIGCHLD: i64 = libc::SIGCHLD as i64;
const AT_FDCWD: i64 = libc::AT_FDCWD as i64;

/// Calls each rule of [`DENIED`] must refuse. Their arguments are
/// harmless should one get through (bad pointers and fds, queries).
const REFUSED: &[(&str, &[i64])] = &[
    ("unshare", &[NEWUSER]),
    ("unshare", &[NEWUSER | NEWNS]),
    ("clone", &[NEWUSER | SIGCHLD, 0, 0, 0, 0]),
    ("clone3", &[0, 0]),
    ("init_module", &[0, 0, 0]),
    ("finit_module", &[-1, 0, 0]),
    ("delete_module", &[0, 0]),
    ("kexec_load", &[0, 0, 0, 0]),
    ("kexec_file_load", &[-1, -1, 0, 0, 0]),
    ("bpf", &[0x7fff_ffff, 0, 0]),
    ("perf_event_open", &[0, 0, -1, -1, 0]),
    // UFFD_USER_MODE_ONLY: allowed without privileges.
    ("userfaultfd", &[1 | libc::O_CLOEXEC as i64]),
    ("io_uring_setup", &[0, 0]),
    ("io_uring_enter", &[-1, 0, 0, 0, 0, 0]),
    ("io_uring_register", &[-1, 0, 0, 0]),
    // KEYCTL_GET_KEYRING_ID of the session keyring.
    ("keyctl", &[0, -3, 0]),
    ("add_key", &[0, 0, 0, 0, 0]),
    ("request_key", &[0, 0, 0, 0]),
    (
        "socket",
        &[libc::AF_ALG as i64, libc::SOCK_SEQPACKET as i64, 0],
    ),
    (
        "socket",
        &[libc::AF_VSOCK as i64, libc::SOCK_STREAM as i64, 0],
    ),
    (
        "socket",
        &[libc::AF_PACKET as i64, libc::SOCK_RAW as i64, 0x300],
    ),
    (
        "socket",
        &[
            libc::AF_INET as i64,
            (libc::SOCK_RAW | libc::SOCK_CLOEXEC) as i64,
            libc::IPPROTO_TCP as i64,
        ],
    ),
    (
        "socket",
        &[
            libc::AF_INET6 as i64,
            libc::SOCK_RAW as i64,
            libc::IPPROTO_UDP as i64,
        ],
    ),
    ("socket", &[libc::AF_INET as i64, SOCK_PACKET as i64, 0x300]),
    ("fsconfig", &[-1, 0, 0, 0, 0]),
    ("fsopen", &[0, 0]),
    ("fsmount", &[-1, 0, 0]),
    ("fspick", &[-1, 0, 0]),
    ("open_tree", &[AT_FDCWD, 0, 0]),
    ("open_tree_attr", &[AT_FDCWD, 0, 0, 0, 0]),
    ("move_mount", &[-1, 0, -1, 0, 0]),
    ("mount_setattr", &[-1, 0, 0, 0, 0]),
    ("open_by_handle_at", &[-1, 0, 0]),
    ("name_to_handle_at", &[AT_FDCWD, 0, 0, 0, 0]),
    ("reboot", &[0, 0, 0, 0]),
    ("swapon", &[0, 0]),
    ("swapoff", &[0]),
    ("acct", &[0]),
    ("settimeofday", &[1, 0]),
    ("clock_settime", &[0, 0]),
    // SYSLOG_ACTION_SIZE_BUFFER
    ("syslog", &[10, 0, 0]),
    ("quotactl", &[0, 0, 0, 0]),
    ("quotactl_fd", &[-1, 0, 0, 0]),
    ("lookup_dcookie", &[0, 0, 0]),
    ("nfsservctl", &[0, 0, 0]),
    ("uselib", &[0]),
    ("iopl", &[0]),
    ("ioperm", &[0, 0, 0]),
    ("personality", &[libc::ADDR_NO_RANDOMIZE as i64]),
    ("personality", &[libc::READ_IMPLIES_EXEC as i64]),
];

/// Calls the rules that look at an argument must let through.
const LET_THROUGH: &[(&str, &[i64])] = &[
    ("unshare", &[0]),
    ("unshare", &[NEWNS]),
    ("clone", &[SIGCHLD, 0, 0, 0, 0]),
    (
        "socket",
        &[libc::AF_UNIX as i64, libc::SOCK_STREAM as i64, 0],
    ),
    (
        "socket",
        &[libc::AF_INET as i64, libc::SOCK_STREAM as i64, 0],
    ),
    (
        "socket",
        &[
            libc::AF_INET6 as i64,
            (libc::SOCK_DGRAM | libc::SOCK_NONBLOCK) as i64,
            0,
        ],
    ),
    ("personality", &[PERSONALITY_QUERY as i64]),
    ("personality", &[PER_LINUX as i64]),
];

/// Makes each call (ctypes `syscall`) in a child of its own, so none
/// sees what another changed (a namespace, the persona), and prints
/// its errno (0: success). A `clone` child leaves at once.
const PROBE: &str = r#"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
for spec in sys.argv[1:]:
    label, *args = spec.split(",")
    pid = os.fork()
    if pid == 0:
        ctypes.set_errno(0)
        r = libc.syscall(*[ctypes.c_long(int(a)) for a in args])
        if label.startswith("clone") and r == 0:
            os._exit(0)
        if label.startswith("clone") and r > 0:
            os.waitpid(r, 0)
        print(label, ctypes.get_errno() if r == -1 else 0, flush=True)
        os._exit(0)
    os.waitpid(pid, 0)
"#;

fn nr(name: &str) -> i64 {
    match number(name) {
        Some(Number::Here(nr)) => nr,
        _ => panic!("{name} has no number here"),
    }
}

fn here(name: &str) -> bool {
    matches!(number(name), Some(Number::Here(_)))
}

/// bwrap as root of a fresh user namespace over the host's tree, with
/// `programs` (none: no filter) and `extra` options, running `cmd`.
fn bwrap(programs: Option<&[Vec<u8>]>, extra: &[&str], cmd: &[&str]) -> Output {
    let mut c = HostCommand::new("bwrap");
    c.env("PATH", "/usr/bin:/bin");
    c.args(["--unshare-user", "--uid", "0", "--dev-bind", "/", "/"]);
    c.args(extra);
    if let Some(programs) = programs {
        add_programs(&mut c, programs).unwrap();
    }
    c.arg("--").args(cmd);
    c.output().expect("bwrap runs (apt-get install bubblewrap)")
}

fn filtered(cmd: &[&str]) -> Output {
    bwrap(Some(programs().unwrap()), &[], cmd)
}

fn text(out: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}stderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Makes `calls` (label, number, arguments) in one sandboxed Python;
/// the errno of each, by label.
fn probe(programs: Option<&[Vec<u8>]>, calls: &[(String, i64, &[i64])]) -> Vec<(String, i32)> {
    let specs: Vec<String> = calls
        .iter()
        .map(|(label, nr, args)| {
            let mut spec = format!("{label},{nr}");
            for a in *args {
                spec.push_str(&format!(",{a}"));
            }
            spec
        })
        .collect();
    let mut cmd = vec![PYTHON, "-c", PROBE];
    cmd.extend(specs.iter().map(String::as_str));
    let out = bwrap(programs, &["--unshare-pid", "--proc", "/proc"], &cmd);
    assert!(out.status.success(), "{}", text(&out));
    let results: Vec<(String, i32)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| {
            let (label, errno) = line.split_once(' ').expect("label errno");
            (label.to_string(), errno.parse().expect("errno"))
        })
        .collect();
    assert_eq!(results.len(), calls.len(), "{}", text(&out));
    results
}

/// The calls of `table` this architecture has, labelled `name#i`, and
/// on x86_64 the same through their x32 numbers (`x32-name#i`: bit 30
/// set; x32's kexec_load is 528, from the kernel's syscall_64.tbl).
fn calls(table: &[(&'static str, &'static [i64])]) -> Vec<(String, i64, &'static [i64])> {
    let mut calls = Vec::new();
    for (i, (name, args)) in table.iter().enumerate() {
        if !here(name) {
            continue;
        }
        calls.push((format!("{name}#{i}"), nr(name), *args));
        if cfg!(target_arch = "x86_64") {
            let x32 = if *name == "kexec_load" { 528 } else { nr(name) };
            calls.push((format!("x32-{name}#{i}"), 0x4000_0000 | x32, *args));
        }
    }
    calls
}

fn name_of(label: &str) -> &str {
    let label = label.strip_prefix("x32-").unwrap_or(label);
    label.split('#').next().unwrap_or(label)
}

#[test]
fn the_table_is_whole() {
    let mut names: Vec<&str> = DENIED.iter().map(|d| d.syscall).collect();
    names.sort_unstable();
    let count = names.len();
    names.dedup();
    assert_eq!(names.len(), count, "a syscall twice in DENIED");
    // EPERM, as under Docker, but where a fallback this filter
    // controls exists.
    let enosys = [
        "clone3",
        "fsconfig",
        "fsopen",
        "fsmount",
        "fspick",
        "open_tree",
        "open_tree_attr",
        "move_mount",
        "mount_setattr",
    ];
    for d in DENIED {
        assert!(number(d.syscall).is_some(), "unknown syscall {}", d.syscall);
        assert!(!d.why.is_empty(), "{} without a reason", d.syscall);
        let errno = if enosys.contains(&d.syscall) {
            libc::ENOSYS
        } else {
            libc::EPERM
        };
        assert_eq!(d.errno, errno, "{}", d.syscall);
        assert!(
            REFUSED.iter().any(|(name, _)| *name == d.syscall),
            "{} has no probe in REFUSED",
            d.syscall
        );
    }
    let programs = programs().unwrap();
    assert_eq!(programs.len(), 2, "one program for EPERM, one for ENOSYS");
    assert!(programs.iter().all(|p| !p.is_empty() && p.len() % 8 == 0));
    let here = DENIED.iter().filter(|d| here(d.syscall)).count();
    assert!(
        describe().starts_with(&format!("seccomp: {here} syscalls denied")),
        "{}",
        describe()
    );
}

/// Every rule catches its calls (the filter, not the kernel, answers:
/// the marker errno), on x86_64 through x32 numbers too, and the rules
/// that look at an argument let the other calls through. Removing any
/// rule fails this test.
#[test]
fn every_rule_refuses_its_calls_and_only_those() {
    let marked = compile(DENIED, Some(MARKER)).unwrap().bytes;
    for (label, errno) in probe(Some(&marked), &calls(REFUSED)) {
        assert_eq!(errno, MARKER, "{label} got through the filter");
    }
    for (label, errno) in probe(Some(&marked), &calls(LET_THROUGH)) {
        assert_ne!(errno, MARKER, "{label} was refused");
    }
}

/// The real filter answers each rule's errno (EPERM; ENOSYS for
/// clone3 and the new mount API) and lets the other calls succeed;
/// without it the kernel would have allowed them or answered otherwise.
#[test]
fn denied_calls_fail_with_the_tables_errno() {
    let errno_of = |name: &str| DENIED.iter().find(|d| d.syscall == name).unwrap().errno;
    let refused = calls(REFUSED);
    for (label, errno) in probe(Some(programs().unwrap()), &refused) {
        assert_eq!(errno, errno_of(name_of(&label)), "{label}");
    }
    for (label, errno) in probe(Some(programs().unwrap()), &calls(LET_THROUGH)) {
        if !label.starts_with("x32-") {
            assert_eq!(errno, 0, "{label} failed");
        }
    }
    // Without the filter the kernel lets these through or refuses them
    // otherwise, on any host (others depend on its configuration: see
    // the marker test for those), so the answers above are the filter's.
    // Raw and packet sockets the kernel refuses itself outside a network
    // namespace of the caller's own, as the capability set does inside.
    let kernel_refuses = |c: &(String, i64, &[i64])| {
        name_of(&c.0) == "socket"
            && [libc::AF_PACKET, libc::AF_INET, libc::AF_INET6]
                .map(i64::from)
                .contains(&c.2[0])
    };
    let native: Vec<_> = refused
        .into_iter()
        .filter(|c| !c.0.starts_with("x32-") && !kernel_refuses(c))
        .collect();
    let free = probe(None, &native);
    eprintln!("without the filter: {free:?}");
    for (label, errno) in free {
        let name = name_of(&label);
        if [
            "unshare",
            "clone",
            "clone3",
            "keyctl",
            "userfaultfd",
            "socket",
            "open_tree",
            "personality",
        ]
        .contains(&name)
        {
            assert_ne!(
                errno,
                errno_of(name),
                "{label}: the kernel answers so itself"
            );
        }
    }
}

/// The way bwrap's manual gives: each program in a file, opened on an
/// fd the child inherits.
#[test]
fn user_namespaces_cannot_be_made() {
    for cmd in [
        &["unshare", "-U", "true"][..],
        &["unshare", "-r", "true"],
        &["unshare", "-Urm", "true"],
    ] {
        let free = bwrap(None, &[], cmd);
        assert!(free.status.success(), "without the filter: {}", text(&free));

        let dir = tempfile::tempdir().unwrap();
        let mut c = HostCommand::new("bwrap");
        c.env("PATH", "/usr/bin:/bin");
        c.args(["--unshare-user", "--uid", "0", "--dev-bind", "/", "/"]);
        for (i, program) in programs().unwrap().iter().enumerate() {
            let path = dir.path().join(format!("{i}.bpf"));
            std::fs::write(&path, program).unwrap();
            let n = c.pass_fd(std::fs::File::open(&path).unwrap().into());
            c.arg("--add-seccomp-fd").arg(n.to_string());
        }
        c.arg("--").args(cmd);
        let out = c.output().unwrap();
        assert!(!out.status.success(), "{cmd:?}: {}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("Operation not permitted"),
            "{cmd:?}: {}",
            text(&out)
        );
    }
}

#[test]
fn ordinary_programs_run() {
    let out = filtered(&["sh", "-c", "echo ok; ls / >/dev/null && echo ls"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "ok\nls\n",
        "{}",
        text(&out)
    );
    // Threads go through clone3 first (glibc falls back on ENOSYS),
    // fork and subprocess through clone and vfork.
    let script = r#"
import os, subprocess, threading
seen = []
t = threading.Thread(target=lambda: seen.append("thread"))
t.start(); t.join()
pid = os.fork()
if pid == 0:
    os._exit(7)
_, status = os.waitpid(pid, 0)
seen.append(f"fork {os.waitstatus_to_exitcode(status)}")
seen.append(subprocess.run(["echo", "sub"], capture_output=True, text=True).stdout.strip())
seen.append([l.split()[1] for l in open("/proc/self/status") if l.startswith("Seccomp:")][0])
print(" ".join(seen))
"#;
    let out = filtered(&[PYTHON, "-c", script]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "thread fork 7 sub 2\n",
        "{}",
        text(&out)
    );
}

/// Root of the sandbox keeps what the kernel confines to its own
/// namespaces: mounts, other namespaces, setns back, ptrace.
#[test]
fn the_sandbox_keeps_its_namespaces_mounts_and_ptrace() {
    // libmount (util-linux 2.39+) tries the new mount API first and
    // goes back to mount(2) only when it answers ENOSYS, as here.
    let script = format!(
        "import ctypes; l = ctypes.CDLL(None, use_errno=True); \
             r = l.syscall({}, None, 1); print(r, ctypes.get_errno())",
        libc::SYS_fsopen
    );
    let out = filtered(&[PYTHON, "-c", &script]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("-1 {}\n", libc::ENOSYS),
        "{}",
        text(&out)
    );
    for cmd in [
        &[
            "unshare",
            "-m",
            "sh",
            "-c",
            "mount -t tmpfs none /tmp && touch /tmp/x && umount /tmp",
        ][..],
        &["unshare", "-n", "true"],
        &["unshare", "-i", "-u", "true"],
        &["unshare", "-p", "-f", "true"],
        &["unshare", "-C", "true"],
    ] {
        let out = filtered(cmd);
        assert!(out.status.success(), "{cmd:?}: {}", text(&out));
    }
    let script = r#"
import ctypes, os, signal, time
libc = ctypes.CDLL(None, use_errno=True)
net = os.open("/proc/self/ns/net", os.O_RDONLY)
r = libc.unshare(0x40000000)
s = libc.setns(net, 0x40000000)
print("setns", r, s, ctypes.get_errno())
pid = os.fork()
if pid == 0:
    time.sleep(60)
    os._exit(0)
p = libc.ptrace(16, pid, None, None)
e = ctypes.get_errno()
os.kill(pid, signal.SIGKILL)
os.waitpid(pid, 0)
print("ptrace", p, e)
"#;
    let out = bwrap(
        Some(programs().unwrap()),
        &["--unshare-net"],
        &[PYTHON, "-c", script],
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "setns 0 0 0\nptrace 0 0\n",
        "{}",
        text(&out)
    );
}

/// A sandbox built like the server's (unprivileged bwrap, every
/// namespace, a minimal read-only root) starts under the filter, and
/// every process in it runs under it, bwrap's own pid 1 included.
#[test]
fn a_server_like_sandbox_starts_with_every_process_filtered() {
    let sandbox = |filter: bool| {
        let mut c = HostCommand::new("bwrap");
        c.args(["--unshare-user", "--uid", "1000", "--gid", "1000"]);
        for path in ["/usr", "/bin", "/sbin", "/lib", "/lib64"] {
            match std::fs::symlink_metadata(path) {
                Ok(m) if m.file_type().is_symlink() => {
                    c.arg("--symlink")
                        .arg(std::fs::read_link(path).unwrap())
                        .arg(path);
                }
                Ok(m) if m.is_dir() => {
                    c.args(["--ro-bind", path, path]);
                }
                _ => {}
            }
        }
        c.args([
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-net",
        ]);
        c.args(["--hostname", "e2b", "--dev", "/dev", "--proc", "/proc"]);
        c.args(["--tmpfs", "/tmp", "--remount-ro", "/"]);
        c.args(["--die-with-parent", "--new-session", "--chdir", "/"]);
        if filter {
            add_to_bwrap(&mut c).unwrap();
        }
        c.args(["--", "sh", "-c"]);
        c.arg("grep -h Seccomp: /proc/1/status /proc/self/status; unshare -U true && echo made");
        c.env("PATH", "/usr/bin:/bin").current_dir("/");
        if rustix::process::getuid().is_root() {
            c.run_as(65534, 65534);
        }
        c.output().unwrap()
    };
    let free = sandbox(false);
    assert_eq!(
        String::from_utf8_lossy(&free.stdout),
        "Seccomp:\t0\nSeccomp:\t0\nmade\n",
        "{}",
        text(&free)
    );
    let out = sandbox(true);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "Seccomp:\t2\nSeccomp:\t2\n",
        "{}",
        text(&out)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("Operation not permitted"));
}
