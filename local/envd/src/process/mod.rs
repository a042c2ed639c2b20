//! `process.Process`: starting programs as the acting user, their output,
//! input, signals and terminals.

pub mod pty;
pub mod rpc;
pub mod table;

/// Gives the child `cmd` starts the default action for every signal. An
/// ignored signal stays ignored across exec, and a server started in the
/// background by a shell ignores SIGINT and SIGQUIT: without this, nothing
/// in its sandboxes could be interrupted (bash cannot even trap an
/// inherited ignore), and a kernel's interrupt would become a restart.
pub fn default_signals(cmd: &mut tokio::process::Command) {
    // SAFETY: the closure runs in the child between fork and exec, where
    // only async-signal-safe calls are allowed; signal(2) is one, and it
    // touches no memory of the parent's.
    #[allow(unsafe_code)]
    unsafe {
        cmd.pre_exec(|| {
            for signal in 1..32 {
                if signal != libc::SIGKILL && signal != libc::SIGSTOP {
                    libc::signal(signal, libc::SIG_DFL);
                }
            }
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
