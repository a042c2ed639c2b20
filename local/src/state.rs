//! The state directory of a persistent server ([`crate::Options::state_dir`]):
//! what survives a restart, `kill -9` included.
//!
//! ```text
//! <state>/<id>/               a sandbox's root (its disk's mount point)
//! <state>/.disks/<id>.img     its disk image (a server run as root)
//! <state>/.records/<id>.json  a paused sandbox: what it needs to resume
//! <state>/.snapshots/         snapshots: <id>.img and <id>.json
//! <state>/.lock               held by the server using the directory
//! <state>/.api-key            the key a standalone server keeps (0600)
//! ```
//!
//! Only paused sandboxes have a record, so a restart knows exactly what
//! to bring back: a sandbox running when the server died has none and
//! is removed, never half-restored. Records are written whole (a
//! temporary file, flushed, renamed over); everything here is the
//! server's own: names come from ids it made (checked again when read),
//! never from a sandbox.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use e2b_wire::api::NewSandbox;
use serde::{Deserialize, Serialize};

/// Under the state directory: the paused sandboxes' records.
pub(crate) const RECORDS_DIR: &str = ".records";
/// Under the state directory (or the data directory): the snapshots.
pub(crate) const SNAPSHOTS_DIR: &str = ".snapshots";
const LOCK_FILE: &str = ".lock";
const API_KEY_FILE: &str = ".api-key";

/// The API key kept in state directory `root` (made, readable by its
/// owner only, the first time), so a restarted server answers to the key
/// every shell and config already holds.
pub fn stored_api_key(root: &Path) -> std::io::Result<String> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::create_dir_all(root)?;
    let path = root.join(API_KEY_FILE);
    let fresh = crate::names::generate_api_key();
    let made = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path);
    match made {
        Ok(mut file) => {
            file.write_all(fresh.as_bytes())?;
            file.sync_all()?;
            Ok(fresh)
        }
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
            let kept = std::fs::read_to_string(&path)?;
            let kept = kept.trim();
            let printable = kept.chars().all(|c| c.is_ascii_graphic());
            if kept.is_empty() || !printable || kept.len() > 256 {
                return Err(std::io::Error::other(format!(
                    "{} does not hold an API key (printable ASCII, no spaces): remove it for a new one",
                    path.display()
                )));
            }
            Ok(kept.to_string())
        }
        Err(err) => Err(err),
    }
}

/// What a paused sandbox needs to resume after a restart.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct PausedRecord {
    /// Its id.
    pub id: String,
    /// Its envd access token (clients keep using it).
    pub access_token: String,
    /// Its create request (template, metadata, envVars, lifecycle…), as
    /// the server accepted it.
    pub request: NewSandbox,
    /// The template it runs on (`base` or `code-interpreter-v1`; its
    /// `request.template_id` may name a snapshot).
    pub template: String,
    /// When it started and its expiry shown to clients, in ms since 1970.
    pub started_at_ms: u64,
    pub end_at_ms: u64,
    /// The uid block its files belong to, where they are a directory
    /// rather than a disk image (a disk maps any block).
    pub id_block: Option<u32>,
    /// Whether its files are a disk image (`.disks/<id>.img`).
    pub disk_image: bool,
}

/// A persistent server's state directory, locked while it is in use.
pub(crate) struct StateDir {
    root: PathBuf,
    /// Held (an exclusive `flock`) for the server's life.
    _lock: std::fs::File,
}

impl StateDir {
    /// Opens (making it if needed) and locks `root`; refuses a directory
    /// another server uses.
    pub fn open(root: &Path) -> Result<StateDir, String> {
        let fail = |what: &str, e: std::io::Error| format!("{what} {}: {e}", root.display());
        std::fs::create_dir_all(root).map_err(|e| fail("cannot create", e))?;
        for dir in [RECORDS_DIR, SNAPSHOTS_DIR] {
            private_dir(&root.join(dir)).map_err(|e| fail("cannot create in", e))?;
        }
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(root.join(LOCK_FILE))
            .map_err(|e| fail("cannot open the lock of", e))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(format!(
                    "the state directory {} is in use by another server (give this one another: --state-dir, Options::state_dir)",
                    root.display()
                ))
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(fail("cannot lock", e)),
        }
        Ok(StateDir {
            root: root.to_path_buf(),
            _lock: lock,
        })
    }

    fn record_path(&self, id: &str) -> Option<PathBuf> {
        valid_id(id).then(|| self.root.join(RECORDS_DIR).join(format!("{id}.json")))
    }

    /// Records a sandbox as paused (before it is paused: a pause that
    /// could not be recorded does not happen).
    pub fn save_paused(&self, record: &PausedRecord) -> std::io::Result<()> {
        let path = self
            .record_path(&record.id)
            .ok_or_else(|| std::io::Error::other("invalid sandbox id"))?;
        let bytes = serde_json::to_vec_pretty(record).map_err(std::io::Error::other)?;
        write_atomic(&path, &bytes)
    }

    /// Forgets a sandbox's record (it resumed or died).
    pub fn forget(&self, id: &str) {
        if let Some(path) = self.record_path(id) {
            match std::fs::remove_file(&path) {
                Ok(()) => sync_dir(path.parent()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => tracing::warn!("cannot remove {}: {e}", path.display()),
            }
        }
    }

    /// The paused sandboxes recorded, by id. A record that does not read
    /// is reported and left alone (and its sandbox's files with it).
    pub fn paused(&self) -> (BTreeMap<String, PausedRecord>, Vec<String>) {
        let mut records = BTreeMap::new();
        let mut unreadable = Vec::new();
        let dir = self.root.join(RECORDS_DIR);
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(id) = name.strip_suffix(".json").filter(|id| valid_id(id)) else {
                // A temporary file a crash left mid-write.
                if name.contains(".tmp") {
                    let _ = std::fs::remove_file(entry.path());
                }
                continue;
            };
            let parsed = std::fs::read(entry.path())
                .map_err(|e| e.to_string())
                .and_then(|b| {
                    serde_json::from_slice::<PausedRecord>(&b).map_err(|e| e.to_string())
                });
            match parsed {
                Ok(record) if record.id == id => {
                    records.insert(id.to_string(), record);
                }
                Ok(_) => {
                    tracing::warn!("{}: the record names another sandbox", name);
                    unreadable.push(id.to_string());
                }
                Err(e) => {
                    tracing::warn!("cannot read {}: {e}", entry.path().display());
                    unreadable.push(id.to_string());
                }
            }
        }
        (records, unreadable)
    }
}

/// Writes `bytes` to `path` whole or not at all: a temporary file beside
/// it, flushed, renamed over it, and the directory flushed.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other("no file name"))?
        .to_string_lossy();
    let tmp = path.with_file_name(format!("{name}.tmp-{}", crate::names::random_id(8)));
    let written = (|| {
        let mut file = std::fs::File::create_new(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written?;
    sync_dir(path.parent());
    Ok(())
}

fn sync_dir(dir: Option<&Path>) {
    if let Some(dir) = dir {
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
}

/// Makes `dir` if needed, the server's alone (`0700`).
pub(crate) fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

/// An id the server could have made (lowercase letters and digits), so
/// safe to use as a file name.
pub(crate) fn valid_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// Milliseconds since 1970.
pub(crate) fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The time `ms` milliseconds after 1970.
pub(crate) fn from_unix_ms(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str) -> PausedRecord {
        PausedRecord {
            id: id.into(),
            access_token: "envd_x".into(),
            request: NewSandbox {
                template_id: "base".into(),
                ..NewSandbox::default()
            },
            template: "base".into(),
            started_at_ms: 1,
            end_at_ms: 2,
            id_block: None,
            disk_image: true,
        }
    }

    #[test]
    fn records_round_trip_and_one_server_per_directory() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::open(dir.path()).unwrap();
        let second = StateDir::open(dir.path()).err().unwrap();
        assert!(second.contains("in use by another server"), "{second}");
        state.save_paused(&record("abc")).unwrap();
        state.save_paused(&record("abc")).unwrap();
        assert!(state.save_paused(&record("../x")).is_err());
        std::fs::write(dir.path().join(RECORDS_DIR).join("bad.json"), "{").unwrap();
        let (records, unreadable) = state.paused();
        assert_eq!(records.keys().collect::<Vec<_>>(), ["abc"]);
        assert_eq!(unreadable, ["bad"]);
        state.forget("abc");
        assert!(state.paused().0.is_empty());
        // Only the files it wrote: no temporary left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path().join(RECORDS_DIR))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["bad.json"]);
        drop(state);
        // A child forked by a concurrent test holds a copy of the lock's open
        // file description until its exec closes it (O_CLOEXEC), so the lock
        // is free once that window has passed, not at the drop's instant.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while let Err(e) = StateDir::open(dir.path()) {
            assert!(std::time::Instant::now() < deadline, "never released: {e}");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}
