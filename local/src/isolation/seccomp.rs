//! The seccomp filter every sandbox process runs under: a deny-list after
//! Docker's default profile, compiled by firecracker's `seccompiler`.
//!
//! **What it blocks** ([`DENIED`], the one table of the policy, with the
//! reason for each): making a user namespace (`unshare` or `clone` with
//! `CLONE_NEWUSER`), so `user` never gets the full capabilities a new one
//! gives; the kernel's riskiest interfaces (eBPF, perf events,
//! userfaultfd, io_uring, the key rings, `AF_ALG` and `AF_VSOCK` sockets,
//! file handles, the new mount API); raw IP and packet sockets, whose
//! forged packets slirp4netns would carry to the host's loopback; and what acts on the host as a whole
//! (modules, kexec, reboot, swap, accounting, the clock, the kernel log,
//! quotas, I/O ports, odd personalities). A denied call fails with `EPERM`,
//! as under Docker, except where the kernel has an older call that this
//! filter controls: `clone3` (its flags sit in a struct seccomp cannot
//! read) and the new mount API answer `ENOSYS`, so glibc falls back to
//! `clone` and libmount to `mount(2)`. Docker does the same for `clone3`.
//!
//! **What it does not block**: what the kernel already confines to the
//! sandbox's own namespaces, and what the capability set (Podman's
//! default, without `CAP_SYS_ADMIN`: see `anchor.rs`) already withholds.
//! `mount`, `umount2`, `pivot_root`, `setns` and making other namespaces
//! stay allowed here, so a sandbox given those capabilities would keep
//! them inside its own namespaces; today its root holds none of them.
//! `ptrace` and its kin (`process_vm_readv`/`writev`, `kcmp`,
//! `pidfd_getfd`, `process_madvise`) stay, as under Docker since Linux 4.8
//! (before it a tracer could change a syscall after seccomp checked it),
//! so gdb and strace work: the pid namespace shows only the sandbox's
//! processes, and each of them runs under this same filter (bwrap applies
//! it to its own pid 1 too, and every process descends from envd), so
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
//! before it execs envd, the sandbox's first process (and in its pid 1);
//! every other process of the sandbox is envd's descendant.

use std::collections::BTreeMap;
use std::io::{self, Seek, Write};
use std::sync::OnceLock;

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
    #[cfg_attr(not(test), allow(dead_code))] // For readers, and the table's test.
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
    /// Calls whose argument `arg` is none of `values`.
    ArgNotIn {
        /// The argument's index.
        arg: u8,
        /// The values let through.
        values: &'static [u32],
    },
    /// Calls that pass every test of one of these lists.
    AnyOf(&'static [&'static [ArgTest]]),
}

/// A test of one argument.
#[derive(Debug, Clone, Copy)]
pub struct ArgTest {
    /// The argument's index.
    pub arg: u8,
    /// The bits compared.
    pub mask: u32,
    /// What they must be.
    pub value: u32,
}

/// Argument `arg` is `value`.
const fn arg_is(arg: u8, value: u32) -> ArgTest {
    ArgTest {
        arg,
        mask: u32::MAX,
        value,
    }
}

/// `SOCK_PACKET`: Linux 2.0's packet socket type (libc deprecates the
/// name; the kernel still takes it, with `CAP_NET_RAW`).
pub const SOCK_PACKET: i32 = 10;

/// `socket`'s type, without `SOCK_NONBLOCK` and `SOCK_CLOEXEC`, is `ty`.
const fn socket_type_is(ty: i32) -> ArgTest {
    ArgTest {
        arg: 1,
        mask: 0xf,
        value: ty as u32,
    }
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
        when: When::AnyOf(&[
            &[arg_is(0, libc::AF_ALG as u32)],
            &[arg_is(0, libc::AF_VSOCK as u32)],
            &[arg_is(0, libc::AF_PACKET as u32)],
            &[
                arg_is(0, libc::AF_INET as u32),
                socket_type_is(libc::SOCK_RAW),
            ],
            &[
                arg_is(0, libc::AF_INET6 as u32),
                socket_type_is(libc::SOCK_RAW),
            ],
            &[arg_is(0, libc::AF_INET as u32), socket_type_is(SOCK_PACKET)],
        ]),
        errno: libc::EPERM,
        why: "AF_ALG: the kernel crypto API, CVE-2026-31431 (Copy Fail) writes into the page \
              cache of any readable file, such as the host's /usr; AF_VSOCK: reaches the \
              hypervisor when the host is a VM (Docker denies both); raw IP and packet \
              sockets: a forged packet to 127.0.0.1 or ::1 leaves through slirp4netns for the \
              host's loopback. The capability set withholds CAP_NET_RAW too; this holds if a \
              capability comes back",
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
            When::ArgNotIn { arg, values } => vec![SeccompRule::new(
                values
                    .iter()
                    .map(|v| cond(arg, SeccompCmpOp::Ne, *v))
                    .collect::<Result<_, _>>()
                    .map_err(invalid)?,
            )
            .map_err(invalid)?],
            When::AnyOf(lists) => lists
                .iter()
                .map(|tests| {
                    let conditions = tests
                        .iter()
                        .map(|t| cond(t.arg, SeccompCmpOp::MaskedEq(t.mask.into()), t.value))
                        .collect::<Result<_, _>>()?;
                    SeccompRule::new(conditions)
                })
                .collect::<Result<_, _>>()
                .map_err(invalid)?,
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
pub(super) fn add_to_bwrap(cmd: &mut super::spawn::HostCommand) -> io::Result<()> {
    add_programs(cmd, programs()?)
}

fn add_programs(cmd: &mut super::spawn::HostCommand, programs: &[Vec<u8>]) -> io::Result<()> {
    for program in programs {
        let fd = rustix::fs::memfd_create("e2b-seccomp", rustix::fs::MemfdFlags::CLOEXEC)?;
        let mut file = std::fs::File::from(fd);
        file.write_all(program)?;
        file.rewind()?;
        let n = cmd.pass_fd(file.into());
        cmd.arg("--add-seccomp-fd").arg(n.to_string());
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
mod tests;
