//! The seccomp filter every sandbox process runs under: a deny-list after
//! Docker's default profile, compiled by firecracker's `seccompiler`.
//!
//! **What it blocks** ([`DENIED`], the one table of the policy, with the
//! reason for each): making a user namespace (`unshare` or `clone` with
//! `CLONE_NEWUSER`), so `user` never gets the full capabilities a new one
//! gives; the kernel's riskiest interfaces (eBPF, perf events,
//! userfaultfd, io_uring, the key rings, `AF_ALG` and `AF_VSOCK` sockets,
//! file handles, the new mount API); and what acts on the host as a whole
//! (modules, kexec, reboot, swap, accounting, the clock, the kernel log,
//! quotas, I/O ports, odd personalities). A denied call fails with `EPERM`,
//! as under Docker, except where the kernel has an older call that this
//! filter controls: `clone3` (its flags sit in a struct seccomp cannot
//! read) and the new mount API answer `ENOSYS`, so glibc falls back to
//! `clone` and libmount to `mount(2)`. Docker does the same for `clone3`.
//!
//! **What it does not block**: what the kernel already confines to the
//! sandbox's own namespaces. The sandbox's `root` keeps every capability
//! *inside* them: it may `mount`, `umount2` and `pivot_root` in its own
//! mount namespace, make other namespaces (mount, network, IPC, UTS, pid,
//! cgroup, time; never a user namespace), configure its own network
//! (netfilter included) and `setns` into its own namespaces. `ptrace` and
//! its kin (`process_vm_readv`/`writev`, `kcmp`, `pidfd_getfd`,
//! `process_madvise`) stay, as under Docker since Linux 4.8 (before it a
//! tracer could change a syscall after seccomp checked it), so gdb and
//! strace work: the pid namespace shows only the sandbox's processes, and
//! each of them runs under this same filter (bwrap applies it to its own
//! pid 1 too; commands that join a sandbox get it from [`confine`]), so
//! tracing one cannot borrow an unfiltered process. A kernel bug in what
//! stays allowed still escapes: the filter narrows the kernel's attack
//! surface, it does not make the sandbox a VM.
//!
//! **Architectures**: x86_64 and aarch64, with the build's own syscall
//! numbers. A syscall of another ABI (32-bit x86 or arm) kills the process
//! (seccompiler's fixed answer to a foreign architecture), so 32-bit
//! programs do not run and `vm86` and its like are out of reach; on x86_64
//! every rule also covers its x32 number, since x32 calls carry the 64-bit
//! architecture's tag.
//!
//! **Use**: [`add_to_bwrap`] hands the programs to `bwrap`
//! (`--add-seccomp-fd`), which applies them after its own setup, just
//! before it execs the sandbox's first process (and in its pid 1);
//! [`confine`] puts a command that joins a running sandbox (`nsenter`)
//! under the same filter.

// Until the launcher (`isolation/mod.rs`, being rewritten) calls
// `add_to_bwrap` in `start_anchor` and `confine` on its joins.
#![cfg_attr(not(test), allow(dead_code))]

use std::collections::BTreeMap;
use std::io::{self, Seek, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::process::Command;
use std::sync::OnceLock;

use command_fds::CommandFdExt;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// One denied syscall: when, with which errno, and why.
#[derive(Debug, Clone, Copy)]
pub struct Denied {
    /// The syscall's name (as in `man 2`).
    pub syscall: &'static str,
    /// For which arguments.
    pub when: When,
    /// What the call fails with.
    pub errno: i32,
    /// Why it is denied.
    pub why: &'static str,
}

/// Which calls of a [`Denied`] syscall fail. Arguments are compared on
/// their low 32 bits: every one compared here is an `int`, or flags that
/// live there.
#[derive(Debug, Clone, Copy)]
pub enum When {
    /// Every call.
    Always,
    /// Calls whose argument `arg` (from 0) has every bit of `flags`.
    FlagsSet {
        /// The argument's index.
        arg: u8,
        /// The bits.
        flags: u32,
    },
    /// Calls whose argument `arg` is one of `values`.
    ArgIs {
        /// The argument's index.
        arg: u8,
        /// The values.
        values: &'static [u32],
    },
    /// Calls whose argument `arg` is none of `values`.
    ArgNotIn {
        /// The argument's index.
        arg: u8,
        /// The values let through.
        values: &'static [u32],
    },
}

// personality(2) values Docker lets through (linux/personality.h).
const PER_LINUX: u32 = 0;
const PER_LINUX32: u32 = 0x0008;
const UNAME26: u32 = 0x0020000;
const PERSONALITY_QUERY: u32 = 0xffff_ffff;

const fn eperm(syscall: &'static str, why: &'static str) -> Denied {
    Denied {
        syscall,
        when: When::Always,
        errno: libc::EPERM,
        why,
    }
}

const fn enosys(syscall: &'static str, why: &'static str) -> Denied {
    Denied {
        errno: libc::ENOSYS,
        ..eperm(syscall, why)
    }
}

/// The policy: every syscall a sandbox process may not make, and why.
pub const DENIED: &[Denied] = &[
    // A new user namespace: full capabilities inside it.
    Denied {
        syscall: "unshare",
        when: When::FlagsSet {
            arg: 0,
            flags: libc::CLONE_NEWUSER as u32,
        },
        errno: libc::EPERM,
        why: "CLONE_NEWUSER: a new user namespace gives its creator every capability in it, \
              the entry to namespaced kernel code (netfilter, more filesystems) that most \
              kernel privilege escalations go through",
    },
    Denied {
        syscall: "clone",
        when: When::FlagsSet {
            arg: 0,
            flags: libc::CLONE_NEWUSER as u32,
        },
        errno: libc::EPERM,
        why: "CLONE_NEWUSER, as for unshare (the flags are argument 0 on x86_64 and aarch64)",
    },
    Denied {
        syscall: "clone3",
        when: When::Always,
        errno: libc::ENOSYS,
        why: "its flags sit in a struct seccomp cannot read: ENOSYS makes glibc fall back to \
              clone, whose flags are checked (Docker does the same)",
    },
    // Kernel code, the running kernel.
    eperm("init_module", "loads kernel code"),
    eperm("finit_module", "loads kernel code"),
    eperm("delete_module", "unloads kernel code"),
    eperm("kexec_load", "replaces the running kernel"),
    eperm("kexec_file_load", "replaces the running kernel"),
    // The kernel's riskiest interfaces.
    eperm(
        "bpf",
        "eBPF programs run in the kernel; the verifier is a steady source of escalations",
    ),
    eperm(
        "perf_event_open",
        "kernel address leaks and a long CVE record; Docker wants CAP_PERFMON",
    ),
    eperm(
        "userfaultfd",
        "stalls the kernel mid-copy on a page fault: the usual tool for winning kernel races",
    ),
    eperm(
        "io_uring_setup",
        "a long CVE record, and its operations (sockets, opens) bypass seccomp; Docker denies it",
    ),
    eperm("io_uring_enter", "see io_uring_setup"),
    eperm("io_uring_register", "see io_uring_setup"),
    eperm(
        "keyctl",
        "kernel key rings are not namespaced: keys belong to host uids (an unprivileged \
         server's sandboxes share its uid)",
    ),
    eperm("add_key", "see keyctl"),
    eperm("request_key", "see keyctl"),
    Denied {
        syscall: "socket",
        when: When::ArgIs {
            arg: 0,
            values: &[libc::AF_ALG as u32, libc::AF_VSOCK as u32],
        },
        errno: libc::EPERM,
        why: "AF_ALG: the kernel crypto API, CVE-2026-31431 (Copy Fail) writes into the page \
              cache of any readable file, such as the host's /usr; AF_VSOCK: reaches the \
              hypervisor when the host is a VM. Docker denies both",
    },
    // The new mount API. ENOSYS: libmount (util-linux 2.39+) then falls
    // back to mount(2), which stays (see the module's doc); on EPERM it
    // gives up, and `mount` would fail in the sandbox.
    enosys(
        "fsconfig",
        "new mount API: CVE-2022-0185 was a heap overflow here, reachable from a user \
         namespace; mount(2) does the same under this filter",
    ),
    enosys("fsopen", "new mount API, see fsconfig"),
    enosys("fsmount", "new mount API, see fsconfig"),
    enosys("fspick", "new mount API, see fsconfig"),
    enosys("open_tree", "new mount API, see fsconfig"),
    enosys("open_tree_attr", "new mount API, see fsconfig"),
    enosys("move_mount", "new mount API, see fsconfig"),
    enosys("mount_setattr", "new mount API, see fsconfig"),
    // Files by handle: around every mount.
    eperm(
        "open_by_handle_at",
        "opens any file of a filesystem by its handle, around the sandbox's mounts \
         (the 'shocker' container escape)",
    ),
    eperm(
        "name_to_handle_at",
        "makes the handles open_by_handle_at opens",
    ),
    // The host as a whole.
    eperm(
        "reboot",
        "restarts the host (in the sandbox's pid namespace: kills its init)",
    ),
    eperm("swapon", "the host's swap"),
    eperm("swapoff", "the host's swap"),
    eperm("acct", "the host's process accounting"),
    eperm("settimeofday", "sets the host's clock (not namespaced)"),
    eperm("clock_settime", "sets the host's clock (not namespaced)"),
    eperm(
        "syslog",
        "the kernel log: addresses and messages that help exploits",
    ),
    eperm("quotactl", "the host's disk quotas"),
    eperm("quotactl_fd", "the host's disk quotas"),
    eperm(
        "lookup_dcookie",
        "profiler cookies to kernel paths; obsolete",
    ),
    eperm("nfsservctl", "the kernel NFS server; obsolete"),
    eperm("uselib", "the a.out library loader; obsolete (x86 only)"),
    eperm("iopl", "raw I/O ports (x86 only)"),
    eperm("ioperm", "raw I/O ports (x86 only)"),
    Denied {
        syscall: "personality",
        when: When::ArgNotIn {
            arg: 0,
            values: &[
                PER_LINUX,
                PER_LINUX32,
                UNAME26,
                UNAME26 | PER_LINUX32,
                PERSONALITY_QUERY,
            ],
        },
        errno: libc::EPERM,
        why: "other personas turn off ASLR (ADDR_NO_RANDOMIZE) or make data executable \
              (READ_IMPLIES_EXEC); the values let through are Docker's",
    },
];

/// A syscall's number in this build, if it has one here.
enum Number {
    Here(i64),
    #[cfg(not(target_arch = "x86_64"))]
    NotOnThisArch,
}

/// Linux 6.15's `open_tree_attr`, not yet in libc: numbers from 424 on
/// are the same on every architecture.
const SYS_OPEN_TREE_ATTR: i64 = 467;

/// The number of a syscall of [`DENIED`]; `None` for a name it does not know.
fn number(name: &str) -> Option<Number> {
    use Number::Here;
    Some(match name {
        "unshare" => Here(libc::SYS_unshare),
        "clone" => Here(libc::SYS_clone),
        "clone3" => Here(libc::SYS_clone3),
        "init_module" => Here(libc::SYS_init_module),
        "finit_module" => Here(libc::SYS_finit_module),
        "delete_module" => Here(libc::SYS_delete_module),
        "kexec_load" => Here(libc::SYS_kexec_load),
        "kexec_file_load" => Here(libc::SYS_kexec_file_load),
        "bpf" => Here(libc::SYS_bpf),
        "perf_event_open" => Here(libc::SYS_perf_event_open),
        "userfaultfd" => Here(libc::SYS_userfaultfd),
        "io_uring_setup" => Here(libc::SYS_io_uring_setup),
        "io_uring_enter" => Here(libc::SYS_io_uring_enter),
        "io_uring_register" => Here(libc::SYS_io_uring_register),
        "keyctl" => Here(libc::SYS_keyctl),
        "add_key" => Here(libc::SYS_add_key),
        "request_key" => Here(libc::SYS_request_key),
        "socket" => Here(libc::SYS_socket),
        "fsconfig" => Here(libc::SYS_fsconfig),
        "fsopen" => Here(libc::SYS_fsopen),
        "fsmount" => Here(libc::SYS_fsmount),
        "fspick" => Here(libc::SYS_fspick),
        "open_tree" => Here(libc::SYS_open_tree),
        "open_tree_attr" => Here(SYS_OPEN_TREE_ATTR),
        "move_mount" => Here(libc::SYS_move_mount),
        "mount_setattr" => Here(libc::SYS_mount_setattr),
        "open_by_handle_at" => Here(libc::SYS_open_by_handle_at),
        "name_to_handle_at" => Here(libc::SYS_name_to_handle_at),
        "reboot" => Here(libc::SYS_reboot),
        "swapon" => Here(libc::SYS_swapon),
        "swapoff" => Here(libc::SYS_swapoff),
        "acct" => Here(libc::SYS_acct),
        "settimeofday" => Here(libc::SYS_settimeofday),
        "clock_settime" => Here(libc::SYS_clock_settime),
        "syslog" => Here(libc::SYS_syslog),
        "quotactl" => Here(libc::SYS_quotactl),
        "quotactl_fd" => Here(libc::SYS_quotactl_fd),
        "lookup_dcookie" => Here(libc::SYS_lookup_dcookie),
        "nfsservctl" => Here(libc::SYS_nfsservctl),
        "personality" => Here(libc::SYS_personality),
        #[cfg(target_arch = "x86_64")]
        "uselib" => Here(libc::SYS_uselib),
        #[cfg(target_arch = "x86_64")]
        "iopl" => Here(libc::SYS_iopl),
        #[cfg(target_arch = "x86_64")]
        "ioperm" => Here(libc::SYS_ioperm),
        #[cfg(not(target_arch = "x86_64"))]
        "uselib" | "iopl" | "ioperm" => Number::NotOnThisArch,
        _ => return None,
    })
}

/// The numbers a rule covers: the syscall's, and on x86_64 its x32 one
/// (bit 30 set; x32's `kexec_load` has a number of its own).
fn numbers(name: &str, nr: i64) -> Vec<i64> {
    #[cfg(target_arch = "x86_64")]
    {
        const X32: i64 = 0x4000_0000;
        let x32 = if name == "kexec_load" { 528 } else { nr };
        vec![nr, X32 | x32]
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = name;
        vec![nr]
    }
}

/// The filters, built once.
struct Compiled {
    /// As seccompiler installs them ([`confine`]).
    filters: Vec<BpfProgram>,
    /// As bwrap reads them: `struct sock_filter` after `struct sock_filter`.
    bytes: Vec<Vec<u8>>,
    /// Rules in force here, and how many of them look at an argument.
    denied: usize,
    conditional: usize,
}

fn compiled() -> io::Result<&'static Compiled> {
    static COMPILED: OnceLock<Result<Compiled, String>> = OnceLock::new();
    COMPILED
        .get_or_init(|| compile(DENIED, None).map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| io::Error::other(format!("the seccomp filter: {e}")))
}

/// Compiles `rules` into one filter per errno (seccompiler gives a filter
/// a single action for a match); `errno` replaces every rule's own (tests
/// tell the filter's answers from the kernel's by it).
fn compile(rules: &[Denied], errno: Option<i32>) -> io::Result<Compiled> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|e| io::Error::other(e.to_string()))?;
    let invalid = |e: seccompiler::BackendError| io::Error::other(e.to_string());
    let mut by_errno: BTreeMap<i32, BTreeMap<i64, Vec<SeccompRule>>> = BTreeMap::new();
    let (mut denied, mut conditional) = (0, 0);
    for rule in rules {
        let nr = match number(rule.syscall) {
            Some(Number::Here(nr)) => nr,
            #[cfg(not(target_arch = "x86_64"))]
            Some(Number::NotOnThisArch) => continue,
            None => {
                return Err(io::Error::other(format!(
                    "unknown syscall {}",
                    rule.syscall
                )))
            }
        };
        let cond = |arg: u8, op: SeccompCmpOp, value: u32| {
            SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value.into())
        };
        // No rule at all for a syscall number means: every call.
        let chain = match rule.when {
            When::Always => vec![],
            When::FlagsSet { arg, flags } => {
                vec![SeccompRule::new(vec![
                    cond(arg, SeccompCmpOp::MaskedEq(flags.into()), flags).map_err(invalid)?
                ])
                .map_err(invalid)?]
            }
            When::ArgIs { arg, values } => values
                .iter()
                .map(|v| SeccompRule::new(vec![cond(arg, SeccompCmpOp::Eq, *v)?]))
                .collect::<Result<_, _>>()
                .map_err(invalid)?,
            When::ArgNotIn { arg, values } => vec![SeccompRule::new(
                values
                    .iter()
                    .map(|v| cond(arg, SeccompCmpOp::Ne, *v))
                    .collect::<Result<_, _>>()
                    .map_err(invalid)?,
            )
            .map_err(invalid)?],
        };
        let filter = by_errno.entry(errno.unwrap_or(rule.errno)).or_default();
        for nr in numbers(rule.syscall, nr) {
            if filter.insert(nr, chain.clone()).is_some() {
                return Err(io::Error::other(format!("{} twice", rule.syscall)));
            }
        }
        denied += 1;
        conditional += usize::from(!matches!(rule.when, When::Always));
    }
    let mut filters = Vec::new();
    for (errno, syscalls) in by_errno {
        let errno = u32::try_from(errno).map_err(io::Error::other)?;
        let filter = SeccompFilter::new(
            syscalls,
            SeccompAction::Allow,
            SeccompAction::Errno(errno),
            arch,
        )
        .map_err(invalid)?;
        filters.push(BpfProgram::try_from(filter).map_err(invalid)?);
    }
    let bytes = filters
        .iter()
        .map(|program| {
            program
                .iter()
                .flat_map(|i| {
                    let mut b = [0u8; 8];
                    b[..2].copy_from_slice(&i.code.to_ne_bytes());
                    b[2] = i.jt;
                    b[3] = i.jf;
                    b[4..].copy_from_slice(&i.k.to_ne_bytes());
                    b
                })
                .collect()
        })
        .collect();
    Ok(Compiled {
        filters,
        bytes,
        denied,
        conditional,
    })
}

/// The filter as raw BPF programs, each an array of `struct sock_filter`
/// (8 bytes, native endian) as `bwrap --add-seccomp-fd FD` reads it. There
/// are two, as seccompiler gives a program a single errno (one answers
/// `EPERM`, the other `ENOSYS`): pass every one, each with its own
/// `--add-seccomp-fd` (`--seccomp` takes only one). [`add_to_bwrap`] does.
pub fn programs() -> io::Result<&'static [Vec<u8>]> {
    Ok(&compiled()?.bytes)
}

/// Adds `--add-seccomp-fd N` to a bwrap command for each of [`programs`],
/// `N` a memfd holding it that the child inherits (and bwrap reads and
/// closes). Call it where bwrap's options go, before `--`; the fds are
/// read once, so spawn the command once.
pub fn add_to_bwrap(cmd: &mut Command) -> io::Result<()> {
    add_programs(cmd, programs()?)
}

fn add_programs(cmd: &mut Command, programs: &[Vec<u8>]) -> io::Result<()> {
    for program in programs {
        let fd = rustix::fs::memfd_create("e2b-seccomp", rustix::fs::MemfdFlags::CLOEXEC)?;
        let mut file = std::fs::File::from(fd);
        file.write_all(program)?;
        file.rewind()?;
        let n = pass_fd(cmd, file.into());
        cmd.arg("--add-seccomp-fd").arg(n.to_string());
    }
    Ok(())
}

/// Hands `fd` to the child `cmd` starts, at the same number (returned),
/// without letting any other child inherit it: the parent's copy keeps
/// `FD_CLOEXEC`, the child's loses it between fork and exec. The command
/// owns the fd until it is dropped.
pub fn pass_fd(cmd: &mut Command, fd: OwnedFd) -> RawFd {
    let n = fd.as_raw_fd();
    cmd.preserved_fds(vec![fd]);
    n
}

/// Puts the process `cmd` starts, and all it execs and forks, under the
/// filter, from before it execs: for every command that joins a running
/// sandbox (`nsenter`), which is the server's child, not bwrap's, so
/// bwrap's filter does not reach it. Any process left unfiltered in the
/// sandbox's pid namespace (a command, the port helper) could be traced
/// from inside and made to call what the filter denies. `setns` is not
/// denied, so nsenter still joins the sandbox's namespaces under it. The
/// filter comes after `Command::uid`/`gid` take effect and sets
/// `no_new_privs`, as bwrap does.
#[allow(unsafe_code)]
pub fn confine(cmd: &mut Command) -> io::Result<()> {
    let filters: &'static [BpfProgram] = &compiled()?.filters;
    // SAFETY: the closure runs in the child between fork and exec, where
    // only async-signal-safe work is sound: it allocates nothing and takes
    // no lock. `apply_filter` makes two syscalls (prctl(NO_NEW_PRIVS) and
    // seccomp) on programs built before the fork and kept in a static; its
    // errors carry the raw OS error, which converts without allocating.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(move || {
            for filter in filters {
                seccompiler::apply_filter(filter).map_err(|e| match e {
                    seccompiler::Error::Prctl(e) | seccompiler::Error::Seccomp(e) => e,
                    _ => io::Error::from_raw_os_error(libc::EINVAL),
                })?;
            }
            Ok(())
        });
    }
    Ok(())
}

/// For the server's startup log.
pub fn describe() -> String {
    match compiled() {
        Ok(c) => format!(
            "seccomp: {} syscalls denied ({} of them for some arguments only)",
            c.denied, c.conditional
        ),
        Err(e) => format!("seccomp: unavailable ({e})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader};
    use std::process::{Output, Stdio};

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
        let mut c = Command::new("bwrap");
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
        let native: Vec<_> = refused
            .into_iter()
            .filter(|c| !c.0.starts_with("x32-"))
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
            let mut c = Command::new("bwrap");
            c.args(["--unshare-user", "--uid", "0", "--dev-bind", "/", "/"]);
            for (i, program) in programs().unwrap().iter().enumerate() {
                let path = dir.path().join(format!("{i}.bpf"));
                std::fs::write(&path, program).unwrap();
                let n = pass_fd(&mut c, std::fs::File::open(&path).unwrap().into());
                c.arg("--add-seccomp-fd").arg(n.to_string());
            }
            let out = c.arg("--").args(cmd).output().unwrap();
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
            let mut c = Command::new("bwrap");
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
            c.arg(
                "grep -h Seccomp: /proc/1/status /proc/self/status; unshare -U true && echo made",
            );
            c.env_clear().env("PATH", "/usr/bin:/bin").current_dir("/");
            if rustix::process::getuid().is_root() {
                use std::os::unix::process::CommandExt;
                c.uid(65534).gid(65534);
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

    /// A command joining a running sandbox with nsenter is the server's
    /// child, not bwrap's: bwrap's filter does not reach it, `confine`
    /// does, and nsenter still joins (setns into the user namespace).
    #[test]
    fn joined_commands_need_confine() {
        let mut anchor = Command::new("bwrap");
        anchor.args([
            "--unshare-user",
            "--uid",
            "0",
            "--unshare-pid",
            "--unshare-net",
        ]);
        anchor.args([
            "--dev-bind",
            "/",
            "/",
            "--proc",
            "/proc",
            "--die-with-parent",
        ]);
        add_to_bwrap(&mut anchor).unwrap();
        anchor
            .args(["--", "sh", "-c", "echo ready; exec sleep infinity"])
            .stdout(Stdio::piped());
        let mut anchor = anchor.spawn().unwrap();
        // `ready` once the sandbox is set up; its pid 1 is bwrap's child.
        let mut line = String::new();
        BufReader::new(anchor.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line, "ready\n");
        let children =
            std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", anchor.id())).unwrap();
        let pid = children.split_whitespace().next().expect("bwrap's child");
        let join = |confined: bool| {
            let mut c = Command::new("nsenter");
            c.args(["-t", pid, "-U", "-m", "-p", "-n", "--"]);
            c.args([
                "sh",
                "-c",
                "grep Seccomp: /proc/self/status; unshare -U true && echo made",
            ]);
            if confined {
                confine(&mut c).unwrap();
            }
            c.output().unwrap()
        };
        let free = join(false);
        let confined = join(true);
        let _ = anchor.kill();
        let _ = anchor.wait();
        assert_eq!(
            String::from_utf8_lossy(&free.stdout),
            "Seccomp:\t0\nmade\n",
            "{}",
            text(&free)
        );
        assert_eq!(
            String::from_utf8_lossy(&confined.stdout),
            "Seccomp:\t2\n",
            "{}",
            text(&confined)
        );
        assert!(String::from_utf8_lossy(&confined.stderr).contains("Operation not permitted"));
    }
}
