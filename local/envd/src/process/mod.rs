//! `process.Process`: starting programs as the acting user, their output,
//! input, signals and terminals.

pub mod pty;
pub mod rpc;
pub mod table;

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
