//! The filesystem a sandbox sees: a minimal root, never the host's `/`.
//!
//! bubblewrap builds it on an empty tmpfs (remounted read-only at the
//! end): the host's runtime (`/usr` and the `/bin`, `/lib*` links or
//! directories) read-only, a curated `/etc` (the host files in
//! [`HOST_ETC`] read-only, plus `passwd`, `group`, `hosts`, `hostname`,
//! `resolv.conf` and `nsswitch.conf` written by the server), the sandbox's
//! own writable `/home/user`, `/tmp` and `/var/tmp`, its own `/proc` and a
//! minimal `/dev`. Nothing else of the host is there: no `/root`, other
//! homes, `/opt`, `/srv`, `/mnt`, `/run`, project directories, sockets or
//! `/etc/shadow`. These two lists are the whole of the host a sandbox can
//! read; change them here and nowhere else.

use std::path::{Path, PathBuf};
use std::process::Command;

use e2b_wire::HOME_DIR;

use crate::paths::SandboxPaths;

/// Host paths bound read-only at the same place (a host symlink, as
/// `/bin -> usr/bin` on merged-/usr systems, is recreated as that link).
pub const HOST_RUNTIME: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];

/// Host files and directories of `/etc` that programs need (the dynamic
/// loader, TLS roots, time zone, shells, Python, alternatives), bound
/// read-only where they exist. None holds secrets.
pub const HOST_ETC: &[&str] = &[
    "/etc/alternatives",
    "/etc/bash.bashrc",
    "/etc/ca-certificates",
    "/etc/ca-certificates.conf",
    "/etc/debian_version",
    "/etc/fonts",
    "/etc/gai.conf",
    "/etc/host.conf",
    "/etc/inputrc",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/magic",
    "/etc/mime.types",
    "/etc/os-release",
    "/etc/profile",
    "/etc/profile.d",
    "/etc/protocols",
    "/etc/python3",
    "/etc/python3.11",
    "/etc/services",
    "/etc/skel",
    "/etc/ssl/certs",
    "/etc/ssl/openssl.cnf",
    "/etc/terminfo",
    "/etc/timezone",
];

/// Under the data directory: the server-written part of every root.
pub const ROOTFS_DIR: &str = ".rootfs";

/// The sandbox's host name, as in its `/etc/hostname`.
pub const HOSTNAME: &str = "e2b";

/// Files of `/etc` the server writes, with their contents.
fn synthesized_etc() -> [(&'static str, &'static str); 6] {
    [
        (
            "passwd",
            "root:x:0:0:root:/root:/bin/bash\n\
             user:x:1000:1000:user:/home/user:/bin/bash\n\
             nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
        ),
        ("group", "root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n"),
        (
            "hosts",
            "127.0.0.1\tlocalhost e2b\n::1\tlocalhost ip6-localhost ip6-loopback\n",
        ),
        ("hostname", "e2b\n"),
        // slirp4netns' DNS forwarder.
        ("resolv.conf", "nameserver 10.0.2.3\n"),
        (
            "nsswitch.conf",
            "passwd: files\ngroup: files\nhosts: files dns\nnetworks: files\n",
        ),
    ]
}

/// The server-written part of the root, shared by every sandbox.
#[derive(Debug, Clone)]
pub struct RootFs {
    /// Holds the synthesized `/etc` files.
    etc: PathBuf,
}

impl RootFs {
    /// Writes the synthesized `/etc` under `data_dir` (readable by the
    /// sandboxes' unprivileged host uids).
    pub fn create(data_dir: &Path) -> std::io::Result<Self> {
        use std::os::unix::fs::PermissionsExt;
        let etc = data_dir.join(ROOTFS_DIR).join("etc");
        std::fs::create_dir_all(&etc)?;
        for dir in [data_dir.join(ROOTFS_DIR), etc.clone()] {
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))?;
        }
        for (name, content) in synthesized_etc() {
            let path = etc.join(name);
            std::fs::write(&path, content)?;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))?;
        }
        Ok(Self { etc })
    }

    /// Adds bubblewrap's arguments that build the root of the sandbox at `paths`.
    pub fn add_bwrap_args(&self, cmd: &mut Command, paths: &SandboxPaths) {
        for path in HOST_RUNTIME {
            match std::fs::symlink_metadata(path) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    if let Ok(target) = std::fs::read_link(path) {
                        cmd.arg("--symlink").arg(target).arg(path);
                    }
                }
                Ok(meta) if meta.is_dir() => {
                    cmd.args(["--ro-bind", path, path]);
                }
                _ => {}
            }
        }
        for path in HOST_ETC {
            cmd.args(["--ro-bind-try", path, path]);
        }
        for (name, _) in synthesized_etc() {
            cmd.arg("--ro-bind")
                .arg(self.etc.join(name))
                .arg(format!("/etc/{name}"));
        }
        cmd.arg("--bind").arg(paths.home()).arg(HOME_DIR);
        cmd.arg("--bind").arg(paths.tmp()).arg("/tmp");
        cmd.arg("--bind").arg(paths.var_tmp()).arg("/var/tmp");
        cmd.args(["--dir", "/root", "--dev", "/dev", "--proc", "/proc"]);
        // Nothing may be written outside the sandbox's own directories.
        cmd.args(["--remount-ro", "/"]);
    }
}
