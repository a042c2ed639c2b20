//! The snapshots: copies of sandboxes' disks that new sandboxes start
//! from, as E2B's snapshot templates.
//!
//! Each is `<id>.img` (the disk, sparse) and `<id>.json` (its record)
//! under the snapshots directory, which only the server writes.
//!
//! One disk budget holds the copies the server makes of sandboxes'
//! disks: the snapshots' images and the disks of live forks (each a copy
//! of its source's), counted by their allocated blocks as they are now,
//! plus what copies under way were promised. Room is reserved under one
//! lock before a copy is made, so two copies at once cannot both pass on
//! the same room; a copy that would pass the budget is refused, and
//! nothing is deleted to make room.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use e2b_wire::api::SnapshotInfo;
use serde::{Deserialize, Serialize};

use crate::isolation::allocated;
use crate::state::{private_dir, valid_id, write_atomic};

/// The team every local snapshot's name belongs to (E2B names a snapshot
/// `<team>/<name>:<tag>`).
pub const TEAM: &str = "local";
/// The only tag: a snapshot taken again under a name replaces it.
pub const TAG: &str = "default";
/// The longest name a snapshot may have.
const MAX_NAME: usize = 128;

/// One snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SnapshotRecord {
    /// The raw id (its files' names).
    pub id: String,
    /// Its name, when it was given one.
    pub name: Option<String>,
    /// The sandbox it was taken of.
    pub sandbox_id: String,
    /// The template that sandbox ran on (`base`, `code-interpreter-v1`).
    pub template: String,
    /// That sandbox's environment variables: a sandbox started from the
    /// snapshot has them, as one restored from E2B's snapshot has envd's.
    pub env_vars: BTreeMap<String, String>,
    /// When it was taken, in ns since 1970 (the listing's order).
    pub created_at_ns: u64,
}

impl SnapshotRecord {
    /// Its id as E2B spells it: `local/<name>:default`, or `<id>:default`.
    pub fn snapshot_id(&self) -> String {
        match &self.name {
            Some(name) => format!("{TEAM}/{name}:{TAG}"),
            None => format!("{}:{TAG}", self.id),
        }
    }

    /// The API's view of it.
    pub fn info(&self) -> SnapshotInfo {
        SnapshotInfo {
            snapshot_id: self.snapshot_id(),
            names: self.name.iter().map(|_| self.snapshot_id()).collect(),
        }
    }

    /// Whether `reference` (an id or a name, with or without the team
    /// and the tag) names it.
    pub fn answers_to(&self, reference: &str) -> bool {
        let Some(bare) = strip_reference(reference) else {
            return false;
        };
        bare == self.id || self.name.as_deref() == Some(bare)
    }
}

/// `reference` without `local/` and `:default`; `None` for another team
/// or tag.
fn strip_reference(reference: &str) -> Option<&str> {
    let bare = match reference.split_once('/') {
        Some((team, rest)) if team == TEAM => rest,
        Some(_) => return None,
        None => reference,
    };
    match bare.split_once(':') {
        Some((name, tag)) if tag == TAG => Some(name),
        Some(_) => None,
        None => Some(bare),
    }
}

/// Checks a snapshot's name: 1 to 128 of lowercase letters, digits, `-`
/// and `_` (E2B's template names), optionally as `local/<name>` or
/// `<name>:default`; returns the bare name.
pub(crate) fn check_name(name: &str) -> Result<String, String> {
    let bare = strip_reference(name).ok_or_else(|| {
        format!("invalid snapshot name '{name}': a name is of team '{TEAM}' and tag '{TAG}' only")
    })?;
    let ok = (1..=MAX_NAME).contains(&bare.len())
        && bare
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        && !bare.starts_with(['-', '_']);
    if !ok {
        return Err(format!(
            "invalid snapshot name '{name}': use 1 to {MAX_NAME} lowercase letters, digits, '-' and '_', starting with a letter or digit (no '/', '.' or other path characters)"
        ));
    }
    if crate::templates::TEMPLATES.contains(&bare) {
        return Err(format!(
            "invalid snapshot name '{name}': '{bare}' is a built-in template"
        ));
    }
    Ok(bare.to_string())
}

/// Why a snapshot was not stored.
#[derive(Debug)]
pub(crate) enum StoreError {
    /// The budget would be passed.
    Full { used: u64, needed: u64, budget: u64 },
    /// The filesystem failed.
    Io(std::io::Error),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Full {
                used,
                needed,
                budget,
            } => write!(
                f,
                "the disk budget for snapshots and forks is full: they take {} MiB, this copy needs {} MiB more, the budget is {} MiB (delete snapshots or kill forks to make room)",
                mib(*used),
                mib(*needed),
                mib(*budget)
            ),
            StoreError::Io(e) => write!(f, "cannot store the snapshot: {e}"),
        }
    }
}

fn mib(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / f64::from(1u32 << 20))
}

/// The snapshots of one server.
pub(crate) struct Snapshots {
    dir: PathBuf,
    budget: u64,
    index: Mutex<Index>,
}

#[derive(Default)]
struct Index {
    by_id: BTreeMap<String, SnapshotRecord>,
    /// Bytes promised to copies being made.
    reserved: u64,
    /// The disk images of live forks (gone once their sandbox is).
    forks: Vec<PathBuf>,
}

/// Room promised to a copy being made: a snapshot (where its image
/// goes), or forks.
pub(crate) struct Reservation {
    /// Its raw id.
    pub id: String,
    /// Where a snapshot's disk is copied to (renamed into place on commit).
    pub image: PathBuf,
    bytes: u64,
}

impl Snapshots {
    /// The snapshots under `dir` (made if needed): their records read,
    /// and what a crash left half-written removed.
    pub fn open(dir: &Path, budget: u64) -> std::io::Result<Snapshots> {
        private_dir(dir)?;
        let mut by_id = BTreeMap::new();
        let mut files = Vec::new();
        for entry in std::fs::read_dir(dir)?.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            match name.strip_suffix(".json").filter(|id| valid_id(id)) {
                Some(id) => {
                    let record = std::fs::read(entry.path())
                        .ok()
                        .and_then(|b| serde_json::from_slice::<SnapshotRecord>(&b).ok())
                        .filter(|r| r.id == id && dir.join(format!("{id}.img")).is_file());
                    match record {
                        Some(record) => {
                            by_id.insert(id.to_string(), record);
                        }
                        None => tracing::warn!("ignoring the snapshot record {name}"),
                    }
                }
                None => files.push(name),
            }
        }
        // Images without a record (a snapshot not finished), temporaries.
        for name in files {
            let id = name.strip_suffix(".img");
            if id.is_none_or(|id| !by_id.contains_key(id)) {
                let _ = std::fs::remove_file(dir.join(&name));
            }
        }
        Ok(Snapshots {
            dir: dir.to_path_buf(),
            budget,
            index: Mutex::new(Index {
                by_id,
                ..Index::default()
            }),
        })
    }

    /// The image of snapshot `id`.
    pub fn image(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.img"))
    }

    /// Bytes the budget's copies take now, with what is promised; live
    /// forks' images that are gone are forgotten. Read under the lock.
    fn used(&self, index: &mut Index) -> u64 {
        index.forks.retain(|image| image.exists());
        let snapshots: u64 = index
            .by_id
            .keys()
            .map(|id| allocated(&self.image(id)))
            .sum();
        let forks: u64 = index.forks.iter().map(|image| allocated(image)).sum();
        snapshots + forks + index.reserved
    }

    /// Promises `bytes` to a new copy, or says the budget is spent.
    pub fn reserve(&self, bytes: u64) -> Result<Reservation, StoreError> {
        let mut index = self
            .index
            .lock()
            .map_err(|_| StoreError::Io(std::io::Error::other("snapshot index poisoned")))?;
        let taken = self.used(&mut index);
        if taken.saturating_add(bytes) > self.budget {
            return Err(StoreError::Full {
                used: taken,
                needed: bytes,
                budget: self.budget,
            });
        }
        index.reserved += bytes;
        let id = loop {
            let id = crate::names::random_id(20);
            if !index.by_id.contains_key(&id) {
                break id;
            }
        };
        Ok(Reservation {
            image: self.dir.join(format!("{id}.img.tmp")),
            id,
            bytes,
        })
    }

    /// Counts the fork whose disk is `image` in the budget from now on,
    /// in place of `bytes` of `reservation`.
    pub fn add_fork(&self, reservation: &mut Reservation, image: PathBuf, bytes: u64) {
        let bytes = bytes.min(reservation.bytes);
        reservation.bytes -= bytes;
        if let Ok(mut index) = self.index.lock() {
            index.reserved = index.reserved.saturating_sub(bytes);
            index.forks.push(image);
        }
    }

    /// Gives back a reservation whose snapshot was not taken.
    pub fn abandon(&self, reservation: Reservation) {
        let _ = std::fs::remove_file(&reservation.image);
        if let Ok(mut index) = self.index.lock() {
            index.reserved = index.reserved.saturating_sub(reservation.bytes);
        }
    }

    /// Stores the snapshot whose image was copied to `reservation.image`:
    /// checked against the budget with its real size, then renamed into
    /// place and recorded. A snapshot with the same name is replaced (E2B
    /// gives the name's template a new build).
    pub fn commit(
        &self,
        reservation: Reservation,
        mut record: SnapshotRecord,
    ) -> Result<SnapshotRecord, StoreError> {
        record.id = reservation.id.clone();
        let size = allocated(&reservation.image);
        let stored = (|| {
            let mut index = self
                .index
                .lock()
                .map_err(|_| StoreError::Io(std::io::Error::other("snapshot index poisoned")))?;
            index.reserved = index.reserved.saturating_sub(reservation.bytes);
            let used = self.used(&mut index);
            let replaced: Vec<String> = index
                .by_id
                .values()
                .filter(|r| record.name.is_some() && r.name == record.name)
                .map(|r| r.id.clone())
                .collect();
            let freed: u64 = replaced.iter().map(|id| allocated(&self.image(id))).sum();
            if (used + size).saturating_sub(freed) > self.budget {
                return Err(StoreError::Full {
                    used,
                    needed: size,
                    budget: self.budget,
                });
            }
            std::fs::rename(&reservation.image, self.image(&record.id)).map_err(StoreError::Io)?;
            let bytes = serde_json::to_vec_pretty(&record)
                .map_err(|e| StoreError::Io(std::io::Error::other(e)))?;
            if let Err(e) = write_atomic(&self.record_path(&record.id), &bytes) {
                let _ = std::fs::remove_file(self.image(&record.id));
                return Err(StoreError::Io(e));
            }
            index.by_id.insert(record.id.clone(), record.clone());
            for id in &replaced {
                index.by_id.remove(id);
            }
            Ok(replaced)
        })();
        match stored {
            Ok(replaced) => {
                for id in replaced {
                    self.remove_files(&id);
                }
                Ok(record)
            }
            Err(e) => {
                let _ = std::fs::remove_file(&reservation.image);
                Err(e)
            }
        }
    }

    fn record_path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    fn remove_files(&self, id: &str) {
        // The record first: an image without one is swept at the next start.
        let _ = std::fs::remove_file(self.record_path(id));
        let _ = std::fs::remove_file(self.image(id));
    }

    /// The snapshot `reference` names (an id or a name, with or without
    /// team and tag).
    pub fn find(&self, reference: &str) -> Option<SnapshotRecord> {
        let index = self.index.lock().ok()?;
        index
            .by_id
            .values()
            .find(|r| r.answers_to(reference))
            .cloned()
    }

    /// Every snapshot, newest first.
    pub fn all(&self) -> Vec<SnapshotRecord> {
        let mut all: Vec<SnapshotRecord> = self
            .index
            .lock()
            .map(|i| i.by_id.values().cloned().collect())
            .unwrap_or_default();
        all.sort_by(|a, b| (b.created_at_ns, &b.id).cmp(&(a.created_at_ns, &a.id)));
        all
    }

    /// Deletes the snapshot `reference` names; false if there is none.
    /// Sandboxes started from it keep their own copies.
    pub fn delete(&self, reference: &str) -> bool {
        let removed = self.index.lock().ok().and_then(|mut index| {
            let id = index
                .by_id
                .values()
                .find(|r| r.answers_to(reference))?
                .id
                .clone();
            index.by_id.remove(&id)
        });
        match removed {
            Some(record) => {
                self.remove_files(&record.id);
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: Option<&str>) -> SnapshotRecord {
        SnapshotRecord {
            id: String::new(),
            name: name.map(str::to_string),
            sandbox_id: "sbx".into(),
            template: "base".into(),
            env_vars: BTreeMap::new(),
            created_at_ns: 1,
        }
    }

    #[test]
    fn names_and_references() {
        assert_eq!(check_name("my-snap_1").unwrap(), "my-snap_1");
        assert_eq!(check_name("local/my-snap:default").unwrap(), "my-snap");
        for bad in [
            "", "a/b", "../x", "x.y", "other/x", "x:v1", "UP", "-x", "base", "a b",
        ] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
        let mut named = record(Some("n"));
        named.id = "abc".into();
        assert_eq!(named.snapshot_id(), "local/n:default");
        assert_eq!(named.info().names, ["local/n:default"]);
        for reference in [
            "n",
            "local/n",
            "n:default",
            "local/n:default",
            "abc",
            "abc:default",
        ] {
            assert!(named.answers_to(reference), "{reference}");
        }
        for reference in ["m", "team/n", "n:v1", "local/abc:v2"] {
            assert!(!named.answers_to(reference), "{reference}");
        }
        let mut bare = record(None);
        bare.id = "xyz".into();
        assert_eq!(bare.info().snapshot_id, "xyz:default");
        assert!(bare.info().names.is_empty());
    }

    #[test]
    fn the_budget_counts_allocated_blocks_and_a_name_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let store = Snapshots::open(dir.path(), 3 << 20).unwrap();
        let write = |r: &Reservation, mib: usize| {
            std::fs::write(&r.image, vec![1u8; mib << 20]).unwrap();
        };
        let first = store.reserve(1 << 20).unwrap();
        write(&first, 1);
        let first = store.commit(first, record(Some("n"))).unwrap();
        // Reserved room counts: two at once cannot both pass.
        let big = store.reserve(2 << 20).unwrap();
        assert!(matches!(
            store.reserve(1 << 20),
            Err(StoreError::Full { .. })
        ));
        store.abandon(big);
        // The same name replaces the first (its room counts as freed).
        let second = store.reserve(1 << 20).unwrap();
        write(&second, 2);
        let second = store.commit(second, record(Some("n"))).unwrap();
        assert_ne!(first.id, second.id);
        assert_eq!(store.find("local/n:default"), Some(second.clone()));
        assert!(!store.image(&first.id).exists());
        // A real size past the budget is refused at commit, nothing lost.
        let over = store.reserve(1 << 20).unwrap();
        write(&over, 2);
        let err = store.commit(over, record(None)).err().unwrap();
        assert!(
            err.to_string()
                .contains("budget for snapshots and forks is full"),
            "{err}"
        );
        assert_eq!(store.all(), std::slice::from_ref(&second));
        // Reopened: the same snapshots; a leftover temporary is swept.
        std::fs::write(dir.path().join("zzz.img.tmp"), "x").unwrap();
        drop(store);
        let store = Snapshots::open(dir.path(), 3 << 20).unwrap();
        assert_eq!(store.all(), std::slice::from_ref(&second));
        assert!(!dir.path().join("zzz.img.tmp").exists());
        assert!(store.delete("n"));
        assert!(!store.delete("n"));
        assert!(store.all().is_empty());
        // A live fork's disk counts until it is gone, as it is now.
        let mut forks = store.reserve(3 << 20).unwrap();
        let fork = dir.path().join("fork.img");
        std::fs::write(&fork, vec![1u8; 2 << 20]).unwrap();
        store.add_fork(&mut forks, fork.clone(), 1 << 20);
        store.abandon(forks);
        assert!(matches!(
            store.reserve(2 << 20),
            Err(StoreError::Full { .. })
        ));
        std::fs::remove_file(&fork).unwrap();
        assert!(store.reserve(3 << 20).is_ok());
    }
}
