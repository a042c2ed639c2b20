//! A spinner with elapsed time on stderr for calls that take a while.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

/// Calls shorter than this show no spinner.
const SHOW_AFTER: Duration = Duration::from_secs(1);
const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// Shows `label` with a spinner once a call has run for a second, when
/// stderr is a terminal. Stops (and erases its line) on drop.
pub(crate) struct Spinner {
    task: Option<JoinHandle<()>>,
    /// Set under the stderr lock when stopping, so no frame is drawn after
    /// the line was erased.
    stopped: Arc<AtomicBool>,
}

impl Spinner {
    pub(crate) fn start(label: String) -> Self {
        let stopped = Arc::new(AtomicBool::new(false));
        if !std::io::stderr().is_terminal() {
            return Self {
                task: None,
                stopped,
            };
        }
        let stop_flag = stopped.clone();
        let task = tokio::spawn(async move {
            let started = Instant::now();
            tokio::time::sleep(SHOW_AFTER).await;
            let mut frame = 0;
            loop {
                if !draw(&stop_flag, FRAMES[frame], &label, started.elapsed()) {
                    return;
                }
                frame = (frame + 1) % FRAMES.len();
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        Self {
            task: Some(task),
            stopped,
        }
    }
}

/// Draws one frame unless the spinner was stopped; returns whether it drew.
fn draw(stopped: &AtomicBool, frame: char, label: &str, elapsed: Duration) -> bool {
    let mut err = std::io::stderr().lock();
    if stopped.load(Ordering::SeqCst) {
        return false;
    }
    let _ = write!(
        err,
        "\r\x1b[2K{frame} {label} {:.1}s",
        elapsed.as_secs_f64()
    );
    let _ = err.flush();
    true
}

impl Drop for Spinner {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            let mut err = std::io::stderr().lock();
            self.stopped.store(true, Ordering::SeqCst);
            task.abort();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }
}
