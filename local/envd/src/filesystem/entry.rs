//! `EntryInfo` for a file as envd describes it: permission bits (the SDK's
//! own tests expect a directory's `mode` to be `0o755`, not Go's
//! `os.ModeDir | 0o755`), Go's permission string, owner, RFC 3339
//! modification time.

use std::ops::Deref;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use e2b_wire::filesystem::{EntryInfo, FileType, WriteInfo};
use rustix::fs::{FileType as RawFileType, Statx, StatxAttributes};
use serde::Serialize;

use super::metadata::Metadata;
use super::owners::OwnerNames;

/// `EntryInfo` with its `metadata` map (the file's `user.e2b.*` extended
/// attributes), omitted when empty as proto3 JSON omits an empty map.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct Entry {
    /// Everything else envd says about the entry.
    #[serde(flatten)]
    pub info: EntryInfo,
    /// User metadata.
    #[serde(skip_serializing_if = "Metadata::is_empty")]
    pub metadata: Metadata,
}

impl Deref for Entry {
    type Target = EntryInfo;

    fn deref(&self) -> &EntryInfo {
        &self.info
    }
}

/// `StatResponse`, `MakeDirResponse`, `MoveResponse`.
#[derive(Debug, Serialize)]
pub(crate) struct EntryResponse {
    /// The entry.
    pub entry: Entry,
}

/// `ListDirResponse`.
#[derive(Debug, Serialize)]
pub(crate) struct ListDirResponse {
    /// The entries.
    pub entries: Vec<Entry>,
}

/// One element of `POST /files`'s answer, with the metadata the file has
/// after the write (read back, as envd does).
#[derive(Debug, Serialize)]
pub(crate) struct Written {
    /// Path, name, type.
    #[serde(flatten)]
    pub info: WriteInfo,
    /// User metadata.
    #[serde(skip_serializing_if = "Metadata::is_empty")]
    pub metadata: Metadata,
}

/// Describes the entry at sandbox path `sandbox_path`, lstat'ed as `meta`;
/// for a symlink, `symlink_target` is what it says and `link_to_dir`
/// whether it leads to a directory (inside the sandbox). `names` names the
/// owner's host ids as the sandbox sees them.
pub fn entry_info(
    sandbox_path: &str,
    meta: &Meta,
    symlink_target: Option<String>,
    link_to_dir: bool,
    names: &OwnerNames,
) -> EntryInfo {
    let name = sandbox_path
        .rsplit('/')
        .find(|s| !s.is_empty())
        .unwrap_or("/")
        .to_string();
    let is_link = meta.is_symlink();
    let is_dir = meta.is_dir();
    let (file_type, symlink_target) = if is_link {
        let t = if link_to_dir {
            FileType::Directory
        } else {
            FileType::File
        };
        (t, symlink_target)
    } else if is_dir {
        (FileType::Directory, None)
    } else {
        (FileType::File, None)
    };
    let perm = meta.perm & 0o777;
    let mode = perm;
    EntryInfo {
        name,
        file_type,
        path: sandbox_path.to_string(),
        size: i64::try_from(meta.size).unwrap_or(i64::MAX),
        mode,
        permissions: permissions_string(perm, is_link, is_dir),
        owner: names.owner(meta.uid),
        group: names.group(meta.gid),
        modified_time: meta
            .modified
            .map(|t| humantime::format_rfc3339_seconds(t).to_string()),
        symlink_target,
    }
}

/// Go's `FileMode.String()` for the common cases: `drwxr-xr-x`, `-rw-r--r--`, `Lrwxrwxrwx`.
fn permissions_string(perm: u32, link: bool, dir: bool) -> String {
    let mut s = String::with_capacity(10);
    s.push(if link {
        'L'
    } else if dir {
        'd'
    } else {
        '-'
    });
    for shift in [6, 3, 0] {
        let bits = (perm >> shift) & 7;
        s.push(if bits & 4 != 0 { 'r' } else { '-' });
        s.push(if bits & 2 != 0 { 'w' } else { '-' });
        s.push(if bits & 1 != 0 { 'x' } else { '-' });
    }
    s
}

/// What `statx` says about an entry, as the files API needs it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Meta {
    /// File, directory, symlink, FIFO, …
    pub file_type: RawFileType,
    /// Permission bits (with set-id and sticky bits).
    pub perm: u32,
    /// Host uid of the owner.
    pub uid: u32,
    /// Host gid of the group.
    pub gid: u32,
    /// Size in bytes.
    pub size: u64,
    /// Last modification.
    pub modified: Option<SystemTime>,
    /// Whether it is the root of a mount.
    pub mount_root: bool,
}

impl Meta {
    pub(crate) fn from_statx(s: &Statx) -> Self {
        let mtime = Duration::new(0, s.stx_mtime.tv_nsec);
        let modified = match u64::try_from(s.stx_mtime.tv_sec) {
            Ok(secs) => UNIX_EPOCH.checked_add(Duration::from_secs(secs) + mtime),
            Err(_) => UNIX_EPOCH
                .checked_sub(Duration::from_secs(s.stx_mtime.tv_sec.unsigned_abs()) - mtime),
        };
        let mode = u32::from(s.stx_mode);
        Self {
            file_type: RawFileType::from_raw_mode(mode),
            perm: mode & 0o7777,
            uid: s.stx_uid,
            gid: s.stx_gid,
            size: s.stx_size,
            modified,
            mount_root: s.stx_attributes_mask.contains(StatxAttributes::MOUNT_ROOT)
                && s.stx_attributes.contains(StatxAttributes::MOUNT_ROOT),
        }
    }

    /// A directory (not a symlink to one).
    pub fn is_dir(&self) -> bool {
        self.file_type == RawFileType::Directory
    }

    /// A symlink.
    pub fn is_symlink(&self) -> bool {
        self.file_type == RawFileType::Symlink
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_a_map_beside_the_entry_and_omitted_when_empty() {
        let mut e = Entry {
            info: EntryInfo {
                name: "a".into(),
                size: 5,
                ..Default::default()
            },
            metadata: Metadata::new(),
        };
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            serde_json::json!({"name": "a", "path": "", "size": "5"})
        );
        e.metadata.insert("author".into(), "mish".into());
        assert_eq!(
            serde_json::to_value(&e).unwrap()["metadata"],
            serde_json::json!({"author": "mish"})
        );
    }

    #[test]
    fn go_style_permissions() {
        assert_eq!(permissions_string(0o755, false, true), "drwxr-xr-x");
        assert_eq!(permissions_string(0o644, false, false), "-rw-r--r--");
        assert_eq!(permissions_string(0o777, true, false), "Lrwxrwxrwx");
    }
}
