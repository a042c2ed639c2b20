//! A persistent server's start: the paused sandboxes it recorded come
//! back (paused, their processes gone: they cold-boot on their disks when
//! they resume), and what sandboxes running at a crash left is removed.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::isolation::{in_use, thaw_stale, unmount, DiskSource, Provision, DISKS_DIR};
use crate::paths::SandboxPaths;
use crate::sandbox::Sandbox;
use crate::state::{from_unix_ms, valid_id, PausedRecord};

use super::{network_policy, Registry};

/// The directories a server's self-test makes (and removes, unless it
/// was killed meanwhile).
const SELF_TEST_PREFIX: &str = "selftest-";
/// How long a dead server's sandbox may take to let its disk go.
const IMAGE_RELEASE: Duration = Duration::from_secs(3);

impl Registry {
    /// Brings back the paused sandboxes recorded in the state directory,
    /// then removes every other sandbox's root and disk. A record that
    /// cannot be brought back is reported, and its files kept. Returns
    /// how many came back.
    pub fn restore(&self) -> usize {
        let Some(state) = &self.state else {
            return 0;
        };
        if self.launcher.has_disks() {
            for root in self.stale_roots() {
                thaw_stale(&root);
            }
        }
        let (records, unreadable) = state.paused();
        let mut kept: HashSet<String> = unreadable.into_iter().collect();
        let mut restored = 0;
        for (id, record) in records {
            kept.insert(id.clone());
            match self.restore_one(record) {
                Ok(sandbox) => {
                    if let Ok(mut slots) = self.slots.lock() {
                        slots.live.insert(id, Arc::new(sandbox));
                        restored += 1;
                    }
                }
                Err(e) => {
                    tracing::warn!("paused sandbox {id} not restored (its files are kept): {e}")
                }
            }
        }
        self.sweep(&kept);
        restored
    }

    fn restore_one(&self, record: PausedRecord) -> Result<Sandbox, String> {
        if record.disk_image != self.launcher.has_disks() {
            return Err(format!(
                "its files are {} and this server keeps {}",
                if record.disk_image {
                    "a disk image"
                } else {
                    "a directory"
                },
                if self.launcher.has_disks() {
                    "disk images"
                } else {
                    "directories"
                },
            ));
        }
        let paths = SandboxPaths::new(self.data_dir.join(&record.id), self.data_dir.clone());
        if record.disk_image {
            let image = self
                .data_dir
                .join(DISKS_DIR)
                .join(&record.id)
                .with_extension("img");
            if !image.is_file() {
                return Err("its disk image is gone".into());
            }
            // A server killed with it paused left it mounted, and its
            // processes may take a moment to die and let it go.
            let mut free = unmount(paths.root());
            let started = Instant::now();
            while free && in_use(&image) && started.elapsed() < IMAGE_RELEASE {
                std::thread::sleep(Duration::from_millis(10));
            }
            free = free && !in_use(&image);
            if !free {
                return Err("its disk is still in use by what the previous server left".into());
            }
        } else if !paths.root().is_dir() {
            return Err("its files are gone".into());
        }
        let internet = network_policy(&record.request)?;
        let runner = self
            .launcher
            .provision(Provision {
                id: record.id.clone(),
                paths: paths.clone(),
                internet,
                template: record.template.clone(),
                env_vars: record.request.env_vars.clone(),
                disk: DiskSource::Existing,
                id_block: record.id_block,
            })
            .map_err(|e| e.to_string())?;
        let sandbox = Sandbox::new(
            record.id,
            record.access_token,
            record.request,
            0,
            paths,
            runner,
            self.time_scale,
        );
        Ok(sandbox.restored(
            from_unix_ms(record.started_at_ms),
            from_unix_ms(record.end_at_ms),
        ))
    }

    /// The sandbox roots (and self-test roots) in the data directory.
    fn stale_roots(&self) -> Vec<std::path::PathBuf> {
        std::fs::read_dir(&self.data_dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
                (valid_id(&name) || name.starts_with(SELF_TEST_PREFIX))
                    && entry.file_type().is_ok_and(|t| t.is_dir())
            })
            .map(|entry| entry.path())
            .collect()
    }

    /// Removes the roots and disks of sandboxes not in `kept`: those that
    /// were running when the previous server stopped.
    fn sweep(&self, kept: &HashSet<String>) {
        for root in self.stale_roots() {
            let name = root.file_name().map(|n| n.to_string_lossy().into_owned());
            if name.is_some_and(|n| kept.contains(&n)) {
                continue;
            }
            // Unmounted first: the walk below must not enter a disk.
            unmount(&root);
            if let Err(e) = std::fs::remove_dir_all(&root) {
                tracing::warn!("cannot remove {}: {e}", root.display());
            }
        }
        let disks = self.data_dir.join(DISKS_DIR);
        for entry in std::fs::read_dir(&disks).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let owner = name.strip_suffix(".img").unwrap_or(&name);
            if !kept.contains(owner) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}
