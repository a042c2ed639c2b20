//! The processes of one sandbox, as envd keeps them: started detached from
//! the request that started them, killed at their deadline, their output
//! fanned out to every attached stream, and remembered for a while after
//! they exit so a late `Connect` still gets `start` + `end`.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use e2b_wire::process::{end_event, DataEvent, EndEvent, ProcessConfig, ProcessInfo};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::process::Child;

use super::pty::{self, PtySize};
use tokio::sync::mpsc;

/// Output is read in chunks of at most this size, as envd does.
pub const READ_CHUNK: usize = 32 * 1024;
/// How long an exited process can still be attached to.
const RETENTION: Duration = Duration::from_secs(30);
/// How long to wait for output pipes after the process exited: a job it
/// left in the background without redirecting its output holds them open
/// (envd would wait for it forever; here the stream ends after this).
const PIPE_GRACE: Duration = Duration::from_secs(2);
/// Events buffered per attached stream before the reader waits.
const STREAM_BUFFER: usize = 64;

/// How a process finished.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// It exited or was killed by a signal: the `end` event to send.
    Ended(EndEvent),
    /// Its lifetime (`Connect-Timeout-Ms` of Start) ran out and it was killed.
    DeadlineExceeded,
    /// It was killed because its sandbox died or paused: streams are cut,
    /// not ended.
    SandboxGone,
}

/// One item of an attached stream.
#[derive(Debug, Clone)]
pub enum StreamItem {
    /// Output.
    Data(DataEvent),
    /// The process finished; nothing follows.
    Finished(Outcome),
}

/// One running (or recently exited) process.
pub struct ManagedProcess {
    /// Its pid as the sandbox sees it, leading its process group.
    pub pid: u32,
    /// How it was started.
    pub config: ProcessConfig,
    /// Its tag.
    pub tag: Option<String>,
    /// Its stdin: the pipe, or the terminal's master for a PTY process.
    stdin: tokio::sync::Mutex<Option<Box<dyn AsyncWrite + Send + Unpin>>>,
    /// A PTY process's terminal (the server's end).
    pty: Option<OwnedFd>,
    attached: Mutex<Attached>,
    signals: mpsc::UnboundedSender<i32>,
}

#[derive(Default)]
struct Attached {
    streams: Vec<mpsc::Sender<StreamItem>>,
    outcome: Option<Outcome>,
}

/// Why an input operation failed.
#[derive(Debug)]
pub enum InputError {
    /// The process was started without stdin, or it was closed.
    StdinClosed,
    /// Writing failed.
    Io(std::io::Error),
}

impl ManagedProcess {
    /// Attaches a stream: it receives output from now on, then the outcome.
    /// For a process that already finished it receives just the outcome.
    pub fn attach(&self) -> mpsc::Receiver<StreamItem> {
        let (tx, rx) = mpsc::channel(STREAM_BUFFER);
        if let Ok(mut a) = self.attached.lock() {
            match &a.outcome {
                Some(outcome) => {
                    let _ = tx.try_send(StreamItem::Finished(outcome.clone()));
                }
                None => a.streams.push(tx),
            }
        }
        rx
    }

    /// Whether it has finished.
    pub fn finished(&self) -> bool {
        self.attached
            .lock()
            .map(|a| a.outcome.is_some())
            .unwrap_or(true)
    }

    /// Sends a signal (as a number) to the process and everything it started.
    pub fn signal(&self, signal: i32) {
        let _ = self.signals.send(signal);
    }

    /// Writes to its stdin.
    pub async fn write_stdin(&self, data: &[u8]) -> Result<(), InputError> {
        let mut guard = self.stdin.lock().await;
        let stdin = guard.as_mut().ok_or(InputError::StdinClosed)?;
        stdin.write_all(data).await.map_err(InputError::Io)?;
        stdin.flush().await.map_err(InputError::Io)
    }

    /// Closes its stdin (EOF for the process). A terminal stays open:
    /// closing it would hang the process up.
    pub async fn close_stdin(&self) {
        if self.pty.is_none() {
            self.stdin.lock().await.take();
        }
    }

    /// Resizes its terminal; `None` when it has none.
    pub fn resize(&self, size: PtySize) -> Option<std::io::Result<()>> {
        self.pty.as_ref().map(|master| pty::resize(master, size))
    }

    /// Its `List` entry.
    pub fn info(&self) -> ProcessInfo {
        ProcessInfo {
            config: self.config.clone(),
            pid: self.pid,
            tag: self.tag.clone(),
        }
    }

    async fn broadcast(&self, item: StreamItem) {
        let streams: Vec<_> = match self.attached.lock() {
            Ok(a) => a.streams.clone(),
            Err(_) => return,
        };
        let mut gone = Vec::new();
        for (i, s) in streams.iter().enumerate() {
            if s.send(item.clone()).await.is_err() {
                gone.push(i);
            }
        }
        if !gone.is_empty() {
            if let Ok(mut a) = self.attached.lock() {
                a.streams.retain(|s| !s.is_closed());
            }
        }
    }

    async fn finish(&self, outcome: Outcome) {
        let streams = match self.attached.lock() {
            Ok(mut a) => {
                a.outcome = Some(outcome.clone());
                std::mem::take(&mut a.streams)
            }
            Err(_) => return,
        };
        for s in streams {
            let _ = s.send(StreamItem::Finished(outcome.clone())).await;
        }
    }
}

/// All processes of one sandbox.
#[derive(Default)]
pub struct ProcessTable {
    inner: Mutex<Tables>,
}

#[derive(Default)]
struct Tables {
    running: HashMap<u32, Arc<ManagedProcess>>,
    exited: HashMap<u32, (Instant, Arc<ManagedProcess>)>,
    supervisors: Vec<tokio::task::JoinHandle<()>>,
    /// Set once envd shuts down: a process that slips in (spawned just
    /// before) is killed at once.
    closed: bool,
}

impl ProcessTable {
    /// Takes over a spawned child: supervises it until it exits or
    /// `deadline` passes (then SIGKILL). The returned receiver is attached
    /// before any output is read, so it misses nothing. `pty`: the master
    /// of the terminal the child runs on (its output, input and size).
    pub fn adopt(
        self: &Arc<Self>,
        mut child: Child,
        pid: u32,
        config: ProcessConfig,
        tag: Option<String>,
        deadline: Option<Instant>,
        pty: Option<OwnedFd>,
    ) -> (Arc<ManagedProcess>, mpsc::Receiver<StreamItem>) {
        let (sig_tx, mut sig_rx) = mpsc::unbounded_channel::<i32>();
        // A terminal's master is read for output and written for input,
        // each through its own descriptor (reads block in their own task).
        let terminal = pty.as_ref().and_then(|master| {
            let reader = master.try_clone().ok()?;
            let writer = master.try_clone().ok()?;
            Some((
                tokio::fs::File::from_std(std::fs::File::from(reader)),
                tokio::fs::File::from_std(std::fs::File::from(writer)),
            ))
        });
        let (pty_output, stdin): (_, Option<Box<dyn AsyncWrite + Send + Unpin>>) = match terminal {
            Some((reader, writer)) => (Some(reader), Some(Box::new(writer))),
            None => (
                None,
                child
                    .stdin
                    .take()
                    .map(|s| Box::new(s) as Box<dyn AsyncWrite + Send + Unpin>),
            ),
        };
        let session = pty.as_ref().and_then(|master| master.try_clone().ok());
        let proc = Arc::new(ManagedProcess {
            pid,
            config,
            tag,
            stdin: tokio::sync::Mutex::new(stdin),
            pty,
            attached: Mutex::new(Attached::default()),
            signals: sig_tx,
        });
        let first = proc.attach();
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let closed = match self.inner.lock() {
            Ok(mut t) => {
                t.running.insert(pid, Arc::clone(&proc));
                t.closed
            }
            Err(_) => true,
        };
        if closed {
            proc.signal(libc::SIGKILL);
        }
        let table = Arc::clone(self);
        let p = Arc::clone(&proc);
        let supervisor = tokio::spawn(async move {
            let out_task = match pty_output {
                Some(master) => Some(tokio::spawn(pump(master, Arc::clone(&p), Output::Pty))),
                None => stdout.map(|s| tokio::spawn(pump(s, Arc::clone(&p), Output::Stdout))),
            };
            let err_task = stderr.map(|s| tokio::spawn(pump(s, Arc::clone(&p), Output::Stderr)));
            let signal = |child: &Child, sig: i32| {
                if let Some(master) = &session {
                    pty::signal_session(master, sig);
                }
                send_signal(child, sig);
            };
            let deadline_sleep = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::pin!(deadline_sleep);
            let mut timed_out = false;
            let status: Option<ExitStatus> = loop {
                tokio::select! {
                    status = child.wait() => break status.ok(),
                    Some(sig) = sig_rx.recv() => signal(&child, sig),
                    _ = &mut deadline_sleep, if !timed_out => {
                        timed_out = true;
                        signal(&child, libc::SIGKILL);
                    }
                }
            };
            for task in [out_task, err_task].into_iter().flatten() {
                let abort = task.abort_handle();
                if tokio::time::timeout(PIPE_GRACE, task).await.is_err() {
                    abort.abort();
                }
            }
            let outcome = if table.is_closed() {
                Outcome::SandboxGone
            } else if timed_out {
                Outcome::DeadlineExceeded
            } else {
                Outcome::Ended(end_event_for(status))
            };
            p.finish(outcome).await;
            table.retire(p.pid);
        });
        if let Ok(mut t) = self.inner.lock() {
            t.supervisors.retain(|s| !s.is_finished());
            t.supervisors.push(supervisor);
        }
        (proc, first)
    }

    fn retire(&self, pid: u32) {
        if let Ok(mut t) = self.inner.lock() {
            if let Some(p) = t.running.remove(&pid) {
                t.exited.insert(pid, (Instant::now(), p));
            }
            t.exited.retain(|_, (at, _)| at.elapsed() < RETENTION);
        }
    }

    /// A running or recently exited process by pid.
    pub fn by_pid(&self, pid: u32) -> Option<Arc<ManagedProcess>> {
        let t = self.inner.lock().ok()?;
        t.running
            .get(&pid)
            .cloned()
            .or_else(|| t.exited.get(&pid).map(|(_, p)| Arc::clone(p)))
    }

    /// A running (or else recently exited) process by tag.
    pub fn by_tag(&self, tag: &str) -> Option<Arc<ManagedProcess>> {
        let t = self.inner.lock().ok()?;
        let matches = |p: &&Arc<ManagedProcess>| p.tag.as_deref() == Some(tag);
        t.running
            .values()
            .find(matches)
            .cloned()
            .or_else(|| t.exited.values().map(|(_, p)| p).find(matches).cloned())
    }

    /// The running processes, by pid.
    pub fn list(&self) -> Vec<Arc<ManagedProcess>> {
        let mut v: Vec<_> = self
            .inner
            .lock()
            .map(|t| t.running.values().cloned().collect())
            .unwrap_or_default();
        v.sort_by_key(|p| p.pid);
        v
    }

    fn is_closed(&self) -> bool {
        self.inner.lock().map(|t| t.closed).unwrap_or(true)
    }

    /// Kills every process, refuses new ones, and waits (briefly) until
    /// they are reaped.
    pub async fn kill_all(&self) {
        let (procs, supervisors) = match self.inner.lock() {
            Ok(mut t) => (
                t.running.values().cloned().collect::<Vec<_>>(),
                std::mem::take(&mut t.supervisors),
            ),
            Err(_) => return,
        };
        if let Ok(mut t) = self.inner.lock() {
            t.closed = true;
        }
        for p in &procs {
            p.signal(libc::SIGKILL);
        }
        for s in supervisors {
            let abort = s.abort_handle();
            if tokio::time::timeout(Duration::from_secs(5), s)
                .await
                .is_err()
            {
                abort.abort();
            }
        }
    }
}

/// Signals the child's process group (every process leads its own). Only called while the child is not yet reaped, so
/// the pid cannot have been reused.
fn send_signal(child: &Child, sig: i32) {
    if let Some(pid) = child.id() {
        super::signal_group(pid, sig);
    }
}

/// Which `DataEvent` field a pipe's output goes to.
#[derive(Debug, Clone, Copy)]
enum Output {
    Stdout,
    Stderr,
    /// The terminal of a process started with a PTY request.
    Pty,
}

async fn pump(mut pipe: impl AsyncRead + Unpin, proc: Arc<ManagedProcess>, output: Output) {
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let chunk = buf[..n].to_vec();
                let mut data = DataEvent::default();
                match output {
                    Output::Stdout => data.stdout = Some(chunk),
                    Output::Stderr => data.stderr = Some(chunk),
                    Output::Pty => data.pty = Some(chunk),
                }
                proc.broadcast(StreamItem::Data(data)).await;
            }
        }
    }
}

/// The `end` event for an exit status, worded as Go's `ProcessState`.
fn end_event_for(status: Option<ExitStatus>) -> EndEvent {
    use std::os::unix::process::ExitStatusExt;
    let Some(status) = status else {
        return end_event(None, Some("killed"));
    };
    if let Some(code) = status.code() {
        // bwrap reports a child killed by signal N as exit 128+N.
        return end_event(Some(code), None);
    }
    let name = match status.signal() {
        Some(libc::SIGKILL) => "killed".to_string(),
        Some(libc::SIGTERM) => "terminated".to_string(),
        Some(libc::SIGINT) => "interrupt".to_string(),
        Some(libc::SIGHUP) => "hangup".to_string(),
        Some(libc::SIGPIPE) => "broken pipe".to_string(),
        Some(libc::SIGSEGV) => "segmentation fault".to_string(),
        Some(n) => format!("signal {n}"),
        None => "killed".to_string(),
    };
    end_event(None, Some(&name))
}
