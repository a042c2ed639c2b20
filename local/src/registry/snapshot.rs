//! Snapshots and forks of running sandboxes: the disk copied once while
//! the sandbox is frozen, then stored as a snapshot, or given to each
//! fork as its own copy.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::isolation::{DiskSource, DISKS_DIR};
use crate::names::random_id;
use crate::sandbox::{Sandbox, State};
use crate::snapshots::SnapshotRecord;

use super::{CreateError, Origin, Registry, SnapshotError};

impl Registry {
    /// Takes a snapshot of `sandbox`'s disk, named `name` (or not).
    pub async fn snapshot(
        &self,
        sandbox: &Arc<Sandbox>,
        name: Option<String>,
    ) -> Result<SnapshotRecord, SnapshotError> {
        self.check_can_copy(sandbox)?;
        let runner = Arc::clone(&sandbox.runner);
        let size = tokio::task::spawn_blocking(move || runner.ready_disk_for_copy())
            .await
            .unwrap_or(0);
        // What the copy should take; its real size is checked again.
        let reservation = self.snapshots.reserve(size).map_err(SnapshotError::Store)?;
        let durable = self.state.is_some();
        if let Err(e) = copy_disk(sandbox, reservation.image.clone(), durable).await {
            self.snapshots.abandon(reservation);
            return Err(e);
        }
        let record = SnapshotRecord {
            id: String::new(),
            name,
            sandbox_id: sandbox.id.clone(),
            template: sandbox.runner.template().to_string(),
            env_vars: sandbox.request.env_vars.clone(),
            created_at_ns: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
        };
        self.snapshots
            .commit(reservation, record)
            .map_err(SnapshotError::Store)
    }

    /// Forks `source` `count` times: its disk copied once (frozen once),
    /// then each fork started on its own copy with `source`'s settings and
    /// a TTL of `timeout_secs`. Each fork succeeds or fails on its own.
    /// The copies count in the disk budget of snapshots and forks, their
    /// room reserved before anything is copied.
    pub async fn fork(
        &self,
        source: &Arc<Sandbox>,
        count: u32,
        timeout_secs: u64,
    ) -> Result<Vec<Result<Arc<Sandbox>, CreateError>>, SnapshotError> {
        self.check_can_copy(source)?;
        let image = self
            .data_dir
            .join(DISKS_DIR)
            .join(format!("fork-{}.img", random_id(20)));
        let runner = Arc::clone(&source.runner);
        let size = tokio::task::spawn_blocking(move || runner.ready_disk_for_copy())
            .await
            .unwrap_or(0);
        let mut reservation = self
            .snapshots
            .reserve(size.saturating_mul(u64::from(count)))
            .map_err(SnapshotError::Store)?;
        if let Err(e) = copy_disk(source, image.clone(), false).await {
            self.snapshots.abandon(reservation);
            return Err(e);
        }
        let mut forks = Vec::new();
        for n in 1..=count {
            // The last fork takes the copy itself.
            let disk = if n == count {
                DiskSource::Take(image.clone())
            } else {
                DiskSource::CopyOf(image.clone())
            };
            let mut request = source.request.clone();
            request.timeout = i64::try_from(timeout_secs).ok();
            let origin = Origin {
                template: source.runner.template().to_string(),
                disk,
            };
            let fork = self.create(request, timeout_secs, origin).await;
            if let Ok(fork) = &fork {
                let disk = self
                    .data_dir
                    .join(DISKS_DIR)
                    .join(format!("{}.img", fork.id));
                self.snapshots.add_fork(&mut reservation, disk, size);
            }
            forks.push(fork);
        }
        let _ = std::fs::remove_file(&image);
        self.snapshots.abandon(reservation);
        Ok(forks)
    }

    fn check_can_copy(&self, sandbox: &Sandbox) -> Result<(), SnapshotError> {
        if !self.has_disks() {
            return Err(SnapshotError::Unsupported);
        }
        if sandbox.state() == State::Paused {
            return Err(SnapshotError::Paused);
        }
        Ok(())
    }
}

/// Copies `sandbox`'s disk to `dest` off the runtime's threads.
async fn copy_disk(
    sandbox: &Arc<Sandbox>,
    dest: std::path::PathBuf,
    durable: bool,
) -> Result<(), SnapshotError> {
    let sandbox = Arc::clone(sandbox);
    let taken = tokio::task::spawn_blocking(move || sandbox.snapshot_disk(&dest, durable))
        .await
        .map_err(|e| SnapshotError::Io(std::io::Error::other(e)))?;
    match taken {
        Ok(true) => Ok(()),
        Ok(false) => Err(SnapshotError::Paused),
        Err(e) => Err(SnapshotError::Io(e)),
    }
}
