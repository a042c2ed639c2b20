//! `EntryInfo` for a file as envd describes it: Go-style mode bits and
//! permission string, owner, RFC 3339 modification time.

use std::fs::Metadata;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use e2b_wire::filesystem::{EntryInfo, FileType};

use crate::isolation::SANDBOX_USER;
use crate::sandbox::rfc3339;

/// Go's `os.ModeDir` and `os.ModeSymlink`.
const GO_MODE_DIR: u32 = 1 << 31;
const GO_MODE_SYMLINK: u32 = 1 << 27;

/// Describes `host` (lstat'ed as `meta`) at sandbox path `sandbox_path`.
pub fn entry_info(sandbox_path: &str, host: &Path, meta: &Metadata, writable: bool) -> EntryInfo {
    let name = sandbox_path
        .rsplit('/')
        .find(|s| !s.is_empty())
        .unwrap_or("/")
        .to_string();
    let is_link = meta.file_type().is_symlink();
    let (file_type, symlink_target) = if is_link {
        let target = std::fs::read_link(host)
            .map(|t| t.to_string_lossy().into_owned())
            .ok();
        let points_to_dir = std::fs::metadata(host).is_ok_and(|m| m.is_dir());
        let t = if points_to_dir {
            FileType::Directory
        } else {
            FileType::File
        };
        (t, target)
    } else if meta.is_dir() {
        (FileType::Directory, None)
    } else {
        (FileType::File, None)
    };
    let perm = meta.permissions().mode() & 0o777;
    let mode = perm
        | if is_link {
            GO_MODE_SYMLINK
        } else if meta.is_dir() {
            GO_MODE_DIR
        } else {
            0
        };
    let owner = if writable {
        SANDBOX_USER.to_string()
    } else if meta.uid() == 0 {
        "root".to_string()
    } else {
        meta.uid().to_string()
    };
    let group = if writable {
        SANDBOX_USER.to_string()
    } else if meta.gid() == 0 {
        "root".to_string()
    } else {
        meta.gid().to_string()
    };
    EntryInfo {
        name,
        file_type,
        path: sandbox_path.to_string(),
        size: i64::try_from(meta.len()).unwrap_or(i64::MAX),
        mode,
        permissions: permissions_string(perm, is_link, meta.is_dir()),
        owner,
        group,
        modified_time: meta.modified().ok().map(rfc3339),
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

#[cfg(test)]
mod tests {
    use super::permissions_string;

    #[test]
    fn go_style_permissions() {
        assert_eq!(permissions_string(0o755, false, true), "drwxr-xr-x");
        assert_eq!(permissions_string(0o644, false, false), "-rw-r--r--");
        assert_eq!(permissions_string(0o777, true, false), "Lrwxrwxrwx");
    }
}
