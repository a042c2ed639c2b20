//! Sandbox paths → host paths, the way a process inside the sandbox sees
//! them: `/home/user/**` is the sandbox's own home, `/tmp/**` its own tmp,
//! `/home` holds only `user`, everything else is the host's filesystem,
//! read-only. Symlinks are followed with the sandbox's view (an absolute
//! target restarts from the sandbox's `/`), so neither `..` nor a symlink
//! can lead into the host's `/tmp`, `/home` or another sandbox's root.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use e2b_wire::HOME_DIR;

/// How many symlinks one resolution may follow (Linux uses 40 too).
const MAX_SYMLINKS: usize = 40;

/// The host directories behind one sandbox's filesystem.
#[derive(Debug, Clone)]
pub struct SandboxPaths {
    /// `<root>`, holding `home/user` and `tmp`.
    root: PathBuf,
    /// The server's data directory: never visible through the host view.
    hidden: PathBuf,
}

/// A resolved path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The clean absolute path as the sandbox sees it.
    pub sandbox: String,
    /// Where it lives on the host.
    pub host: PathBuf,
    /// Whether the sandbox may write there.
    pub writable: bool,
}

/// Why a path cannot be resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathError {
    /// More than [`MAX_SYMLINKS`] symlinks.
    TooManySymlinks,
}

impl std::fmt::Display for PathError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PathError::TooManySymlinks => f.write_str("too many levels of symbolic links"),
        }
    }
}

/// Makes `path` absolute the way envd does: empty → home, `~` → home,
/// relative → joined to home. The result is not yet cleaned.
pub fn absolutize(path: &str) -> String {
    if path.is_empty() || path == "~" {
        HOME_DIR.to_string()
    } else if let Some(rest) = path.strip_prefix("~/") {
        format!("{HOME_DIR}/{rest}")
    } else if path.starts_with('/') {
        path.to_string()
    } else {
        format!("{HOME_DIR}/{path}")
    }
}

/// Cleans an absolute path lexically (`.`/`..`/duplicate slashes).
pub fn clean(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            p => out.push(p),
        }
    }
    format!("/{}", out.join("/"))
}

impl SandboxPaths {
    /// Paths of the sandbox rooted at `root`; `hidden` is never exposed.
    pub fn new(root: PathBuf, hidden: PathBuf) -> Self {
        Self { root, hidden }
    }

    /// The host directory mounted as `/home/user`.
    pub fn home(&self) -> PathBuf {
        self.root.join("home").join("user")
    }

    /// The host directory mounted as `/tmp`.
    pub fn tmp(&self) -> PathBuf {
        self.root.join("tmp")
    }

    /// The sandbox root (holds `home/user` and `tmp`).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Creates the directory layout.
    pub fn create(&self) -> std::io::Result<()> {
        std::fs::create_dir_all(self.home())?;
        std::fs::create_dir_all(self.tmp())?;
        // /tmp is world-writable with the sticky bit, as on any Linux.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(self.tmp(), std::fs::Permissions::from_mode(0o1777))?;
        Ok(())
    }

    /// Where the components of a clean sandbox path live on the host.
    fn map(&self, parts: &[String]) -> (PathBuf, bool) {
        match parts {
            [first, second, rest @ ..] if first == "home" && second == "user" => {
                (join_all(self.home(), rest), true)
            }
            [first] if first == "home" => (self.root.join("home"), false),
            [first, rest @ ..] if first == "home" => {
                (join_all(self.root.join("home"), rest), false)
            }
            [first, rest @ ..] if first == "tmp" => (join_all(self.tmp(), rest), true),
            _ => {
                let host = join_all(PathBuf::from("/"), parts);
                // The data dir (other sandboxes' roots) must stay invisible;
                // point it somewhere that cannot exist.
                if host.starts_with(&self.hidden) {
                    (self.root.join(".hidden-from-sandbox"), false)
                } else {
                    (host, false)
                }
            }
        }
    }

    /// Resolves a client-given path. `follow_last` follows a symlink in the
    /// last component (reads, writes); Remove and Move act on the link.
    pub fn resolve(&self, path: &str, follow_last: bool) -> Result<Resolved, PathError> {
        let mut pending: VecDeque<String> = absolutize(path)
            .split('/')
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect();
        let mut stack: Vec<String> = Vec::new();
        let mut followed = 0;
        while let Some(part) = pending.pop_front() {
            match part.as_str() {
                "." => continue,
                ".." => {
                    stack.pop();
                    continue;
                }
                _ => stack.push(part),
            }
            let is_last = pending.is_empty();
            if is_last && !follow_last {
                break;
            }
            let (host, _) = self.map(&stack);
            let Ok(meta) = std::fs::symlink_metadata(&host) else {
                continue;
            };
            if !meta.file_type().is_symlink() {
                continue;
            }
            followed += 1;
            if followed > MAX_SYMLINKS {
                return Err(PathError::TooManySymlinks);
            }
            let Ok(target) = std::fs::read_link(&host) else {
                continue;
            };
            stack.pop();
            let target = target.to_string_lossy().into_owned();
            if target.starts_with('/') {
                stack.clear();
            }
            for t in target.split('/').filter(|p| !p.is_empty()).rev() {
                pending.push_front(t.to_string());
            }
        }
        let (host, writable) = self.map(&stack);
        Ok(Resolved {
            sandbox: format!("/{}", stack.join("/")),
            host,
            writable,
        })
    }
}

fn join_all(mut base: PathBuf, parts: &[String]) -> PathBuf {
    for p in parts {
        base.push(p);
    }
    base
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, SandboxPaths) {
        let dir = tempfile::tempdir().unwrap();
        let paths = SandboxPaths::new(dir.path().join("sbx"), dir.path().to_path_buf());
        paths.create().unwrap();
        (dir, paths)
    }

    #[test]
    fn home_tmp_and_host_views() {
        let (_d, p) = setup();
        let r = p.resolve("a.txt", true).unwrap();
        assert_eq!(r.sandbox, "/home/user/a.txt");
        assert_eq!(r.host, p.home().join("a.txt"));
        assert!(r.writable);
        let r = p.resolve("/tmp/../tmp/./b", true).unwrap();
        assert_eq!(r.host, p.tmp().join("b"));
        let r = p.resolve("/etc/hostname", true).unwrap();
        assert_eq!(r.host, PathBuf::from("/etc/hostname"));
        assert!(!r.writable);
        let r = p.resolve("/home/user/../../../home/user/x", true).unwrap();
        assert_eq!(r.host, p.home().join("x"));
    }

    #[test]
    fn symlinks_cannot_escape() {
        let (d, p) = setup();
        std::os::unix::fs::symlink(d.path(), p.home().join("escape")).unwrap();
        // The data dir is under /tmp here, so the link leads into the
        // sandbox's own /tmp, never into the host's.
        let r = p.resolve("/home/user/escape/sbx/home/user", true).unwrap();
        assert!(r.host.starts_with(p.root()), "{r:?}");
        // A data dir elsewhere is hidden from the host view.
        let hidden = SandboxPaths::new(p.root().to_path_buf(), PathBuf::from("/usr/lib"));
        std::os::unix::fs::symlink("/usr/lib", p.home().join("lib")).unwrap();
        let r = hidden.resolve("lib/os-release", true).unwrap();
        assert!(!r.host.starts_with("/usr/lib"), "{r:?}");
        assert!(!r.writable);
        std::os::unix::fs::symlink("/tmp", p.home().join("t")).unwrap();
        let r = p.resolve("t/f", true).unwrap();
        assert_eq!(r.host, p.tmp().join("f"));
        let r = p.resolve("t", false).unwrap();
        assert_eq!(r.host, p.home().join("t"));
        std::os::unix::fs::symlink("loop", p.home().join("loop")).unwrap();
        assert_eq!(p.resolve("loop", true), Err(PathError::TooManySymlinks));
    }
}
