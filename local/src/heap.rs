//! Gives the heap that sandboxes' teardowns freed back to the system.
//!
//! glibc keeps freed memory in its arenas (one per thread that allocated,
//! up to eight per core), and a churn of sandboxes spreads allocations over
//! every runtime and blocking thread: after a round of a thousand sandboxes
//! a server held a few MiB of freed memory it would never return. Once the
//! teardowns of a burst are over, a trim a second later returns it; while
//! teardowns keep coming, no trim runs more than once a second.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// How long after the last teardown of a burst the trim runs.
const QUIET: Duration = Duration::from_secs(1);

static UNDER_WAY: AtomicUsize = AtomicUsize::new(0);
static SCHEDULED: AtomicBool = AtomicBool::new(false);

/// Counts a teardown as under way until the guard drops.
pub(crate) fn teardown_under_way() -> TeardownGuard {
    UNDER_WAY.fetch_add(1, Ordering::SeqCst);
    TeardownGuard
}

/// A teardown under way; its drop may schedule a trim.
pub(crate) struct TeardownGuard;

impl Drop for TeardownGuard {
    fn drop(&mut self) {
        if UNDER_WAY.fetch_sub(1, Ordering::SeqCst) != 1 {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if SCHEDULED.swap(true, Ordering::SeqCst) {
            return;
        }
        runtime.spawn(async {
            tokio::time::sleep(QUIET).await;
            SCHEDULED.store(false, Ordering::SeqCst);
            if UNDER_WAY.load(Ordering::SeqCst) == 0 {
                let _ = tokio::task::spawn_blocking(trim).await;
            }
        });
    }
}

/// Returns free memory at the top of glibc's arenas (and free pages
/// inside them) to the system.
fn trim() {
    // SAFETY: malloc_trim takes no pointer; it only walks the allocator's
    // own free lists, under the allocator's locks.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)]
    unsafe {
        libc::malloc_trim(0);
    }
}
