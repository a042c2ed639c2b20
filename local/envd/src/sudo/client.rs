//! The `sudo` command inside a sandbox (envd's binary called `sudo`): it
//! parses the command line, hands the request and its own stdin, stdout
//! and stderr to envd, forwards the signals it gets (Ctrl-C on a terminal
//! reaches it, as the terminal's foreground job), and ends as the command
//! ended.

use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::process::ExitCode;

use rustix::net::{AddressFamily, RecvFlags, SocketFlags, SocketType};
use tokio::signal::unix::{signal, SignalKind};

use super::invocation::{self, Forward, Invocation, Reply};

/// The signals passed on to the command.
const FORWARDED: [i32; 7] = [
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGWINCH,
];

/// `sudo`'s exit code for its own failures.
const FAILED: u8 = 1;

/// Runs `sudo` with the process's arguments.
pub fn main() -> ExitCode {
    let Some(args) = std::env::args_os()
        .skip(1)
        .map(|a| a.into_string().ok())
        .collect::<Option<Vec<String>>>()
    else {
        return fail("sudo: arguments must be UTF-8");
    };
    let mut req = match invocation::parse(&args) {
        Ok(Invocation::Run(req)) => req,
        Ok(Invocation::Print(text)) => {
            let _ = std::io::stdout().write_all(text.as_bytes());
            return ExitCode::SUCCESS;
        }
        Ok(Invocation::Nothing) => return ExitCode::SUCCESS,
        Err(message) => return fail(&message),
    };
    req.cwd = std::env::current_dir()
        .ok()
        .and_then(|d| d.into_os_string().into_string().ok())
        .unwrap_or_else(|| "/".into());
    req.env = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    let conn = match connect() {
        Ok(conn) => conn,
        Err(e) => return fail(&format!("sudo: cannot reach envd: {e}")),
    };
    let stdio = match stdio() {
        Ok(stdio) => stdio,
        Err(e) => return fail(&format!("sudo: {e}")),
    };
    let fds: Vec<BorrowedFd<'_>> = stdio.iter().map(Stdio::as_fd).collect();
    if let Err(e) = super::send(&conn, &req, &fds) {
        return fail(&format!("sudo: {e}"));
    }
    drop(stdio);
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(&format!("sudo: {e}")),
    };
    match runtime.block_on(wait(conn)) {
        Ok(Reply::Exited(code)) => ExitCode::from(u8::try_from(code & 0xff).unwrap_or(FAILED)),
        Ok(Reply::Signaled(signal)) => die_of(signal),
        Ok(Reply::Failed(message)) => fail(&message),
        Err(e) => fail(&format!("sudo: {e}")),
    }
}

fn fail(message: &str) -> ExitCode {
    let _ = writeln!(std::io::stderr(), "{message}");
    ExitCode::from(FAILED)
}

fn connect() -> std::io::Result<OwnedFd> {
    let fd = rustix::net::socket_with(
        AddressFamily::UNIX,
        SocketType::SEQPACKET,
        SocketFlags::CLOEXEC,
        None,
    )?;
    rustix::net::connect(&fd, &super::address()?)?;
    Ok(fd)
}

/// This process's stdin, stdout and stderr, or `/dev/null` where one is
/// closed (the command gets three either way).
enum Stdio {
    Inherited(BorrowedFd<'static>),
    Null(OwnedFd),
}

impl Stdio {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Stdio::Inherited(fd) => *fd,
            Stdio::Null(fd) => fd.as_fd(),
        }
    }
}

fn stdio() -> std::io::Result<Vec<Stdio>> {
    [
        rustix::stdio::stdin(),
        rustix::stdio::stdout(),
        rustix::stdio::stderr(),
    ]
    .into_iter()
    .map(|fd| match rustix::io::fcntl_getfd(fd) {
        Ok(_) => Ok(Stdio::Inherited(fd)),
        Err(_) => Ok(Stdio::Null(
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open("/dev/null")?
                .into(),
        )),
    })
    .collect()
}

/// Forwards signals until envd answers.
async fn wait(conn: OwnedFd) -> std::io::Result<Reply> {
    rustix::io::ioctl_fionbio(&conn, true)?;
    let conn = crate::control::register(conn)?;
    let (tx, mut signals) = tokio::sync::mpsc::unbounded_channel();
    for number in FORWARDED {
        let mut stream = signal(SignalKind::from_raw(number))?;
        let tx = tx.clone();
        tokio::spawn(async move {
            while stream.recv().await.is_some() {
                if tx.send(number).is_err() {
                    return;
                }
            }
        });
    }
    loop {
        tokio::select! {
            ready = conn.readable() => {
                let mut ready = ready?;
                match ready.try_io(|fd| super::receive::<Reply>(fd, RecvFlags::DONTWAIT)) {
                    Ok(Ok(Some((reply, _)))) => return Ok(reply),
                    Ok(Ok(None)) => return Err(std::io::Error::other("envd closed the connection")),
                    Ok(Err(e)) => return Err(e),
                    Err(_would_block) => {}
                }
            }
            Some(signal) = signals.recv() => {
                super::send(conn.get_ref(), &Forward { signal }, &[])?;
            }
        }
    }
}

/// Ends this process by `signal`, as the command ended (a shell then
/// reports it the same way); exit code 128 + `signal` where that fails.
fn die_of(signal: i32) -> ExitCode {
    #[allow(unsafe_code)]
    // SAFETY: restoring a signal's default action and raising it are
    // async-signal-safe and touch no memory of ours; the tokio handlers
    // installed for forwarding are replaced, which is what is wanted.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
    ExitCode::from(u8::try_from(128 + signal.clamp(0, 127)).unwrap_or(FAILED))
}
