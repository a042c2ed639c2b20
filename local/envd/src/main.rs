//! envd for the local E2B server: the agent inside each sandbox.
//!
//! The orchestrator starts it as the first process of a sandbox (under
//! bubblewrap's init, in every namespace of the sandbox, in its cgroup and
//! under its seccomp filter), as the sandbox's own `root` (or as `user`
//! when the server is an ordinary user and the sandbox has no root). It
//! never listens on a port: connections come from the edge over the
//! control socket ([`e2b_wire::envd_setup`]), and it serves envd's
//! protocol ([`api`]) and the code interpreter ([`interpreter`]) on them,
//! or joins them to a port a sandbox program listens on ([`control`]).
//!
//! Everything that touches the sandbox's content happens here, with the
//! sandbox's credentials: processes ([`process`]), files, metadata and
//! watches ([`filesystem`]). A command's `envs` are only ever the
//! environment of that command, and envd reaps what it starts. Called
//! `sudo`, the binary is the sandbox's `sudo` ([`sudo`]).

mod api;
mod connect_rpc;
mod context;
mod control;
mod descriptors;
mod filesystem;
mod http_errors;
mod interpreter;
mod paths;
mod process;
mod sudo;

use std::os::fd::{FromRawFd, OwnedFd};
use std::process::ExitCode;

use e2b_wire::envd_setup::CONTROL_FD;

/// Whether `fd` is an open socket.
fn is_socket(fd: i32) -> bool {
    // SAFETY: borrowed only for this fstat; an fd that is not open fails it.
    #[allow(unsafe_code)]
    let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    fd >= 0
        && rustix::fs::fstat(borrowed).is_ok_and(|st| {
            rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Socket
        })
}

fn main() -> ExitCode {
    // The same binary is the sandbox's `sudo`.
    let called = std::env::args_os().next().unwrap_or_default();
    if std::path::Path::new(&called).file_name() == Some("sudo".as_ref()) {
        return sudo::client::main();
    }
    let fd = std::env::args()
        .nth(1)
        .map_or(Ok(CONTROL_FD), |arg| arg.parse::<i32>());
    let Some(fd) = fd.ok().filter(|fd| is_socket(*fd)) else {
        control::say(&"usage: envd [CONTROL-FD]: the orchestrator's control socket");
        return ExitCode::FAILURE;
    };
    // SAFETY: the orchestrator starts envd with its control socket as this
    // descriptor (checked to be a socket), and nothing else in this process
    // owns it.
    #[allow(unsafe_code)]
    let control = unsafe { OwnedFd::from_raw_fd(fd) };
    // Nothing bubblewrap was handed may reach a command, nor the control
    // socket: a command holding it could take connections meant for envd.
    if let Err(e) = descriptors::keep_only(&control) {
        control::say(&format!("cannot close what it inherited: {e}"));
        return ExitCode::FAILURE;
    }
    let config = match control::read_config(&control) {
        Ok(config) => config,
        Err(e) => {
            control::say(&e);
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = context::prepare_process(&config) {
        control::say(&e);
        return ExitCode::FAILURE;
    }
    // One thread: a sandbox's envd serves one client's calls at a time,
    // mostly waiting on its processes; file I/O goes to the blocking pool.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(8)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            control::say(&format!("cannot start its runtime: {e}"));
            return ExitCode::FAILURE;
        }
    };
    let serving = async {
        let envd = context::Envd::new(config)?;
        // Only inside a sandbox: sudo's abstract socket lives in the
        // sandbox's network namespace, never in the host's.
        if envd.isolated() {
            tokio::spawn(sudo::server::serve(std::sync::Arc::clone(&envd)));
        }
        envd.start_default_contexts();
        control::serve(control, envd).await
    };
    match runtime.block_on(serving) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            control::say(&e);
            ExitCode::FAILURE
        }
    }
}
