//! A context: one kernel with its state, its execution counter and the
//! lock that runs its executions one at a time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use e2b_wire::interpreter::Context;
use tokio::sync::{watch, Mutex, MutexGuard};

use super::kernel::KernelProcess;
use super::kernel::KernelSpawner;
use super::language::Language;

/// The mutable part of a context, held by the running execution.
pub(crate) struct KernelState {
    /// The kernel, `None` until started or after it died.
    pub(crate) process: Option<KernelProcess>,
    /// Executions so far (Jupyter's `execution_count`).
    pub(crate) execution_count: u64,
}

/// One context of a sandbox.
pub(crate) struct ContextKernel {
    /// What `/contexts` reports.
    pub(crate) info: Context,
    /// Its language.
    pub(crate) language: Language,
    spawner: Arc<dyn KernelSpawner>,
    state: Mutex<KernelState>,
    /// Bumped by restart/delete/shutdown: a running execution ends at once.
    abort: watch::Sender<u64>,
    /// Set once deleted or shut down: the kernel is never started again.
    closed: AtomicBool,
}

impl ContextKernel {
    /// A context whose kernel is not started yet.
    pub(crate) fn new(
        id: String,
        language: Language,
        cwd: String,
        spawner: Arc<dyn KernelSpawner>,
    ) -> Arc<Self> {
        Arc::new(ContextKernel {
            info: Context {
                id,
                language: language.name().to_string(),
                cwd,
            },
            language,
            spawner,
            state: Mutex::new(KernelState {
                process: None,
                execution_count: 0,
            }),
            abort: watch::channel(0).0,
            closed: AtomicBool::new(false),
        })
    }

    /// Waits for the context to be free and takes it.
    pub(crate) async fn lock(&self) -> MutexGuard<'_, KernelState> {
        self.state.lock().await
    }

    /// A receiver that changes when the context is restarted or removed.
    pub(crate) fn abort_signal(&self) -> watch::Receiver<u64> {
        self.abort.subscribe()
    }

    /// Starts the kernel if it is not running.
    pub(crate) async fn ensure_started(&self, state: &mut KernelState) -> Result<(), String> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(format!("Context {} was removed", self.info.id));
        }
        if state.process.is_none() {
            let process =
                KernelProcess::start(self.spawner.as_ref(), self.language, &self.info.cwd).await?;
            state.process = Some(process);
        }
        Ok(())
    }

    /// Kills the kernel (ending a running execution) and starts a fresh one.
    pub(crate) async fn restart(&self) -> Result<(), String> {
        self.abort.send_modify(|n| *n += 1);
        let mut state = self.state.lock().await;
        if let Some(mut process) = state.process.take() {
            process.kill();
        }
        state.execution_count = 0;
        self.ensure_started(&mut state).await
    }

    /// Kills the kernel for good (ending a running execution).
    pub(crate) async fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.abort.send_modify(|n| *n += 1);
        let mut state = self.state.lock().await;
        if let Some(mut process) = state.process.take() {
            process.kill();
        }
    }
}
