//! What sandboxes are made with on this machine, decided once at server
//! start ([`Launcher::detect`]), and what one sandbox is made of. The
//! making itself is the module's ([`Launcher::provision`]); these types
//! sit apart so that the runner, which the making returns, can read them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::envd;
use super::limits::{Enforcement, Limits};
use super::network::Internet;
use super::rootfs::{self, RootFs};
use super::seccomp;
use crate::paths::SandboxPaths;

/// The `PATH` a sandbox process gets.
pub const SANDBOX_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/// Under the data directory: the sandboxes' disk images.
pub const DISKS_DIR: &str = ".disks";

/// How sandboxes are made, decided once at server start.
#[derive(Debug, Clone)]
pub enum Launcher {
    /// In bubblewrap sandboxes.
    Bwrap(Arc<Isolated>),
    /// envd directly on the host (explicit opt-out; no isolation at all).
    None {
        /// envd's binary.
        envd: PathBuf,
    },
}

/// What isolated sandboxes are made with on this machine.
#[derive(Debug)]
pub struct Isolated {
    pub(super) bwrap: PathBuf,
    pub(super) envd: PathBuf,
    /// The server runs as root: sandboxes get id blocks, cgroups, disks.
    pub(super) privileged: bool,
    pub(super) own_ids: (u32, u32),
    pub(super) rootfs: RootFs,
    pub(super) enforcement: Enforcement,
    pub(super) disks: bool,
    pub(super) internet: Internet,
    pub(super) limits: Limits,
    /// Whether this server gave its use of the process's cgroups back.
    pub(super) groups_released: std::sync::atomic::AtomicBool,
}

/// Why isolation cannot be set up.
#[derive(Debug)]
pub struct IsolationUnavailable(pub String);

/// What a new sandbox is made of.
pub struct Provision {
    /// Its id.
    pub id: String,
    /// Its host directories.
    pub paths: SandboxPaths,
    /// Whether it may reach the internet.
    pub internet: bool,
    /// Its template (`code-interpreter-v1` brings its environment).
    pub template: String,
    /// Its global environment variables (create's `envVars`).
    pub env_vars: BTreeMap<String, String>,
    /// What its files start as.
    pub disk: DiskSource,
    /// The uid block its files already belong to (a paused sandbox kept
    /// as a directory, not a disk image, resuming after a restart).
    pub id_block: Option<u32>,
}

/// What a new sandbox's files start as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiskSource {
    /// Empty directories (on a new disk where the server makes disks).
    Fresh,
    /// A copy of this disk image (a snapshot's).
    CopyOf(PathBuf),
    /// This disk image, moved into place (a fork's).
    Take(PathBuf),
    /// What the sandbox had: its image or its directory (a paused
    /// sandbox after a restart).
    Existing,
}

impl Launcher {
    /// Removes what [`Launcher::detect`] and [`Launcher::provision`] left
    /// in `data_dir` beside the sandbox roots (at shutdown); the disks
    /// stay when `keep_disks` (a persistent server's paused sandboxes').
    /// The server's own cgroups go too, unless another server of this
    /// process still has sandboxes in them.
    pub fn clean_up(&self, data_dir: &Path, keep_disks: bool) {
        let dirs: &[&str] = if keep_disks {
            &[envd::ENVD_DIR, rootfs::BASE_DIR]
        } else {
            &[DISKS_DIR, envd::ENVD_DIR, rootfs::BASE_DIR]
        };
        for dir in dirs {
            let _ = std::fs::remove_dir_all(data_dir.join(dir));
        }
        if let Launcher::Bwrap(iso) = self {
            if !iso
                .groups_released
                .swap(true, std::sync::atomic::Ordering::AcqRel)
            {
                iso.enforcement.release_groups();
            }
        }
    }

    /// Whether sandboxes live on disk images, which snapshots and forks
    /// copy (a server run as root with loop devices).
    pub fn has_disks(&self) -> bool {
        matches!(self, Launcher::Bwrap(iso) if iso.disks)
    }

    /// One line saying which layers are in force, for the startup log.
    pub fn describe(&self) -> String {
        match self {
            Launcher::None { .. } => "isolation: NONE (--no-isolation)".into(),
            Launcher::Bwrap(i) => format!(
                "isolation: bubblewrap, envd inside; users: {}; limits: {}; disk: {}; root: {}; network: {}; {}; {}",
                if i.privileged {
                    "a subordinate uid block per sandbox"
                } else {
                    "the server's own uid (no root inside)"
                },
                i.enforcement.describe(),
                if i.disks {
                    format!("{} MiB ext4 image per sandbox", i.limits.disk_mb)
                } else {
                    format!("file size capped at {} MiB, total not", i.limits.disk_mb)
                },
                if i.rootfs.is_copy_on_write() {
                    "copy-on-write (every path writable, changes on the sandbox's disk)"
                } else {
                    "read-only but the homes, /tmp and /var/tmp"
                },
                i.internet.describe(),
                i.rootfs.templates().describe(),
                seccomp::describe(),
            ),
        }
    }

    /// The limits every sandbox gets.
    pub fn limits(&self) -> Limits {
        match self {
            Launcher::Bwrap(i) => i.limits,
            Launcher::None { .. } => Limits::default(),
        }
    }
}
