//! The host directories behind one sandbox's filesystem ([`SandboxPaths`]).

use std::path::{Path, PathBuf};

/// The host directories behind one sandbox's filesystem.
#[derive(Debug, Clone)]
pub struct SandboxPaths {
    /// `<root>`, holding `home/user`, `root`, `tmp` and `var/tmp`.
    root: PathBuf,
    /// The server's data directory, holding every sandbox's root.
    hidden: PathBuf,
}

impl SandboxPaths {
    /// Paths of the sandbox rooted at `root`; `hidden` is the server's data
    /// directory.
    pub fn new(root: PathBuf, hidden: PathBuf) -> Self {
        Self { root, hidden }
    }

    /// The host directory mounted as `/home/user`.
    pub fn home(&self) -> PathBuf {
        self.root.join("home").join("user")
    }

    /// The host directory mounted as `/root`, the home of the sandbox's
    /// root (`sudo -i`, `user="root"`).
    pub fn root_home(&self) -> PathBuf {
        self.root.join("root")
    }

    /// The host directory mounted as `/tmp`.
    pub fn tmp(&self) -> PathBuf {
        self.root.join("tmp")
    }

    /// The server's data directory, which holds every sandbox's root.
    pub fn data_dir(&self) -> &Path {
        &self.hidden
    }

    /// The host directory mounted as `/var/tmp`.
    pub fn var_tmp(&self) -> PathBuf {
        self.root.join("var").join("tmp")
    }

    /// The sandbox root (holds `home/user`, `root`, `tmp` and `var/tmp`).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Creates the directory layout.
    pub fn create(&self) -> std::io::Result<()> {
        std::fs::create_dir_all(self.home())?;
        std::fs::create_dir_all(self.root_home())?;
        std::fs::create_dir_all(self.tmp())?;
        std::fs::create_dir_all(self.var_tmp())?;
        // /tmp and /var/tmp are world-writable with the sticky bit, as on any Linux.
        use std::os::unix::fs::PermissionsExt;
        for dir in [self.tmp(), self.var_tmp()] {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o1777))?;
        }
        // root's home is root's alone, as on any Linux.
        std::fs::set_permissions(self.root_home(), std::fs::Permissions::from_mode(0o700))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_has_sticky_tmp_dirs() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let paths = SandboxPaths::new(dir.path().join("sbx"), dir.path().to_path_buf());
        paths.create().unwrap();
        assert!(paths.home().is_dir());
        for tmp in [paths.tmp(), paths.var_tmp()] {
            let mode = std::fs::metadata(&tmp).unwrap().permissions().mode();
            assert_eq!(mode & 0o7777, 0o1777, "{}", tmp.display());
        }
    }
}
