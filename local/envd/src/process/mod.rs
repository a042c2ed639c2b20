//! `process.Process`: starting programs as the acting user, their output,
//! input, signals and terminals.

pub mod pty;
pub mod rpc;
pub mod table;

/// Makes the child `cmd` starts begin clean: the default action for
/// every signal, and no descriptor but its stdin, stdout and stderr.
///
/// An ignored signal stays ignored across exec, and a server started in
/// the background by a shell ignores SIGINT and SIGQUIT: without the
/// reset, nothing in its sandboxes could be interrupted (bash cannot even
/// trap an inherited ignore), and a kernel's interrupt would become a
/// restart. The descriptors: envd's own are close-on-exec, but a
/// command must not depend on that (one opened without the flag would
/// reach every later command).
pub fn start_clean(cmd: &mut tokio::process::Command) {
    // SAFETY: the closure runs in the child between fork and exec, where
    // only async-signal-safe calls are allowed; signal(2) and fcntl(2)
    // are, and nothing here touches memory of the parent's.
    #[allow(unsafe_code)]
    unsafe {
        cmd.pre_exec(|| {
            for signal in 1..32 {
                if signal != libc::SIGKILL && signal != libc::SIGSTOP {
                    libc::signal(signal, libc::SIG_DFL);
                }
            }
            crate::descriptors::close_on_exec_from(3);
            Ok(())
        });
    }
}

/// Sends `signal` to the process group `pid` leads (every process envd
/// starts leads its own). Only for children not yet reaped, whose pid
/// cannot have been reused; errors (the group is gone) are ignored.
pub fn signal_group(pid: u32, signal: i32) {
    let pid = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw);
    if let (Some(pid), Some(signal)) = (pid, rustix::process::Signal::from_named_raw(signal)) {
        let _ = rustix::process::kill_process_group(pid, signal);
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::OwnedFd;

    /// A descriptor envd holds without close-on-exec (as one bubblewrap
    /// handed it would be) reaches no child.
    #[tokio::test]
    async fn a_child_starts_with_its_stdio_only() {
        let (reader, _writer) = std::io::pipe().unwrap();
        let leaked = OwnedFd::from(reader);
        rustix::io::fcntl_setfd(&leaked, rustix::io::FdFlags::empty()).unwrap();
        let mut cmd = tokio::process::Command::new("ls");
        cmd.arg("/proc/self/fd");
        super::start_clean(&mut cmd);
        let out = cmd.output().await.unwrap();
        // ls's own: stdin, stdout, stderr and the directory it lists.
        assert_eq!(String::from_utf8_lossy(&out.stdout), "0\n1\n2\n3\n");
    }
}
