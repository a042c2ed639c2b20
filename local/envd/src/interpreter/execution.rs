//! One `/execute` call: runs the code in its context and streams the
//! NDJSON lines into the response body.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use e2b_wire::interpreter::OutputLine;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::context::ContextKernel;
use super::ndjson;
use super::pipe_parser::KernelEvent;

/// Silence after which a `keepalive` line is sent.
pub(crate) const KEEPALIVE_AFTER: Duration = Duration::from_secs(5);
/// How long an interrupted kernel may take to finish before it is killed.
const INTERRUPT_GRACE: Duration = Duration::from_secs(3);
/// How long to wait for the stderr end marker once stdout says done.
const MARK_GRACE: Duration = Duration::from_secs(1);

/// The response side of an execution.
struct Sink {
    tx: mpsc::Sender<Bytes>,
    abort: watch::Receiver<u64>,
    aborted: bool,
    last_sent: Instant,
}

impl Sink {
    /// Sends a line; false once the client is gone or the context aborted.
    async fn send(&mut self, line: &OutputLine) -> bool {
        if self.aborted {
            return false;
        }
        let bytes = ndjson::encode(line);
        tokio::select! {
            sent = self.tx.send(bytes) => {
                self.last_sent = Instant::now();
                sent.is_ok()
            }
            _ = self.abort.changed() => {
                self.aborted = true;
                false
            }
        }
    }

    /// Ends the stream with an error line (the context was restarted or removed).
    async fn finish_with_error(&mut self, name: &str, value: &str) {
        self.aborted = false;
        let error = OutputLine::Error {
            name: name.to_string(),
            value: value.to_string(),
            traceback: format!("{name}: {value}"),
        };
        // Best effort: the client may be gone; nothing waits on these.
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            self.send(&error).await;
            self.send(&OutputLine::EndOfExecution).await;
        })
        .await;
    }
}

/// Runs `code` in `context`, writing answer lines to `tx`. A closed `tx`
/// (client gone) interrupts the kernel; the kernel and its state survive.
pub(crate) async fn run(
    context: Arc<ContextKernel>,
    code: String,
    env_vars: BTreeMap<String, String>,
    tx: mpsc::Sender<Bytes>,
) {
    let mut sink = Sink {
        abort: context.abort_signal(),
        tx,
        aborted: false,
        last_sent: Instant::now(),
    };
    let mut abort = context.abort_signal();
    // Executions in one context run one at a time; a queued one keeps its
    // client alive with keepalives while it waits.
    let lock = context.lock();
    tokio::pin!(lock);
    let mut state = loop {
        tokio::select! {
            state = &mut lock => break state,
            _ = sink.tx.closed() => return,
            _ = abort.changed() => {
                sink.finish_with_error("ContextRestarting", "Context was restarted").await;
                return;
            }
            _ = tokio::time::sleep_until(sink.last_sent + KEEPALIVE_AFTER) => {
                if !sink.send(&OutputLine::Keepalive).await {
                    return;
                }
            }
        }
    };
    if state.process.is_none() {
        // A fresh kernel (first use, or the last one died) counts from 1.
        state.execution_count = 0;
    }
    if let Err(e) = context.ensure_started(&mut state).await {
        sink.finish_with_error("KernelStartError", &e).await;
        return;
    }
    state.execution_count += 1;
    let count = state.execution_count;
    let Some(mut process) = state.process.take() else {
        return;
    };
    // A real kernel numbers the execution once it starts it (E2B sends
    // that number); for the others, this context's count is the number.
    if !process.counts()
        && !sink
            .send(&OutputLine::NumberOfExecutions {
                execution_count: count,
            })
            .await
    {
        state.process = Some(process);
        return;
    }
    process.drain_stale();
    if let Err(e) = process.execute(&code, &env_vars, count).await {
        drop(process);
        sink.finish_with_error(
            "DeadKernelError",
            &format!("The kernel is not running: {e}"),
        )
        .await;
        return;
    }

    let mut done_at: Option<Instant> = None;
    let mut mark_seen = false;
    let mut error_sent = false;
    let mut client_gone = false;
    let mut kill_at: Option<Instant> = None;
    loop {
        if done_at.is_some() && mark_seen {
            break;
        }
        let far = Instant::now() + Duration::from_secs(3600);
        let keepalive_at = sink.last_sent + KEEPALIVE_AFTER;
        let mark_deadline = done_at.map(|t| t + MARK_GRACE).unwrap_or(far);
        tokio::select! {
            event = process.next_event() => match event {
                KernelEvent::Count { execution_count } if !client_gone => {
                    client_gone = !sink.send(&OutputLine::NumberOfExecutions { execution_count }).await;
                }
                KernelEvent::Stdout { text } if !client_gone => {
                    let timestamp = Some(ndjson::timestamp());
                    client_gone = !sink.send(&OutputLine::Stdout { text, timestamp }).await;
                }
                KernelEvent::Stderr { text } if !client_gone => {
                    let timestamp = Some(ndjson::timestamp());
                    client_gone = !sink.send(&OutputLine::Stderr { text, timestamp }).await;
                }
                KernelEvent::Result { data, main } if !client_gone => {
                    let result = ndjson::result_from_bundle(data, main);
                    client_gone = !sink.send(&OutputLine::Result(result)).await;
                }
                KernelEvent::Error { name, value, traceback } if !client_gone && !error_sent => {
                    error_sent = true;
                    client_gone = !sink.send(&OutputLine::Error { name, value, traceback }).await;
                }
                KernelEvent::Done { exit_code } => {
                    done_at = Some(Instant::now());
                    // A failing bash execution reports its status like
                    // Jupyter's bash kernel: no name, the status as value.
                    if let Some(code) = exit_code.filter(|c| *c != 0) {
                        if !client_gone && !error_sent {
                            error_sent = true;
                            let line = OutputLine::Error { name: String::new(), value: code.to_string(), traceback: String::new() };
                            client_gone = !sink.send(&line).await;
                        }
                    }
                }
                KernelEvent::Mark => mark_seen = true,
                KernelEvent::Exited => {
                    drop(process);
                    if !client_gone && !sink.aborted {
                        sink.finish_with_error(
                            "DeadKernelError",
                            "The kernel died during the execution; it is restarted (without its state) on the next execution",
                        )
                        .await;
                    }
                    return;
                }
                _ => {}
            },
            _ = tokio::time::sleep_until(keepalive_at), if !client_gone => {
                client_gone = !sink.send(&OutputLine::Keepalive).await;
            }
            _ = sink.tx.closed(), if !client_gone => client_gone = true,
            _ = tokio::time::sleep_until(kill_at.unwrap_or(far)), if kill_at.is_some() => {
                // The interrupt did not end the execution: give up the kernel.
                drop(process);
                return;
            }
            _ = tokio::time::sleep_until(mark_deadline), if done_at.is_some() => mark_seen = true,
            _ = abort.changed() => {
                drop(process);
                sink.finish_with_error("ContextRestarting", "Context was restarted").await;
                return;
            }
        }
        if (client_gone || sink.aborted) && kill_at.is_none() && done_at.is_none() {
            if sink.aborted {
                // Restart/delete is waiting for this lock; it kills the kernel.
                drop(process);
                sink.finish_with_error("ContextRestarting", "Context was restarted")
                    .await;
                return;
            }
            client_gone = true;
            process.interrupt().await;
            kill_at = Some(Instant::now() + INTERRUPT_GRACE);
        }
    }
    state.process = Some(process);
    if !client_gone {
        sink.send(&OutputLine::EndOfExecution).await;
    }
}
