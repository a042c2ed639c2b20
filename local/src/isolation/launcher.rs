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
}

/// Why isolation cannot be set up.
#[derive(Debug)]
pub struct IsolationUnavailable(pub String);

/// What a new sandbox is made of.
pub struct Provision<'a> {
    /// Its id.
    pub id: &'a str,
    /// Its host directories.
    pub paths: SandboxPaths,
    /// Whether it may reach the internet.
    pub internet: bool,
    /// Its template (`code-interpreter-v1` brings its environment).
    pub template: &'a str,
    /// Its global environment variables (create's `envVars`).
    pub env_vars: BTreeMap<String, String>,
}

impl Launcher {
    /// Removes what [`Launcher::detect`] and [`Launcher::provision`] left
    /// in `data_dir` beside the sandbox roots (at shutdown).
    pub fn clean_up(data_dir: &Path) {
        for dir in [DISKS_DIR, rootfs::ROOTFS_DIR, envd::ENVD_DIR] {
            let _ = std::fs::remove_dir_all(data_dir.join(dir));
        }
    }

    /// One line saying which layers are in force, for the startup log.
    pub fn describe(&self) -> String {
        match self {
            Launcher::None { .. } => "isolation: NONE (--no-isolation)".into(),
            Launcher::Bwrap(i) => format!(
                "isolation: bubblewrap, envd inside; users: {}; limits: {}; disk: {}; network: {}; {}; {}",
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
