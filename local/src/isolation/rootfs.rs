//! The filesystem a sandbox sees: a minimal root, never the host's `/`.
//!
//! bubblewrap builds it on an empty tmpfs (remounted read-only at the
//! end): the host's runtime (`/usr` and the `/bin`, `/lib*` links or
//! directories) read-only, a curated `/etc` (the host files in
//! [`HOST_ETC`] read-only, plus `passwd`, `group`, `hosts`, `hostname`,
//! `resolv.conf` and `nsswitch.conf` written by the server), the sandbox's
//! own writable `/home/user`, `/root`, `/tmp` and `/var/tmp`, its own `/proc`
//! (its `partitions` emptied: the host's block devices are not its
//! business) and a minimal `/dev`. The server's files are copied into the
//! root (`--file`), not bound, so no mount names a host path of the
//! server's. Nothing else of the host is there: not the host's `/root`, other
//! homes, `/opt`, `/srv`, `/mnt`, `/run`, project directories, sockets or
//! `/etc/shadow`. These two lists are the whole of the host a sandbox can
//! read; change them here and nowhere else. The one addition is a
//! template's environment ([`TemplateEnvs`]): `code-interpreter-v1`
//! sandboxes get its venv, read-only, at the same path as on the host.

use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use e2b_wire::envd_setup::TOOLS_DIR;
use e2b_wire::HOME_DIR;

use super::spawn::HostCommand;
use crate::paths::SandboxPaths;

/// Directories of the root that hold mount points and that every user of
/// the sandbox must be able to cross.
const SHARED_PARENTS: &[&str] = &["/etc", "/etc/ssl", "/home", "/var"];

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
    PROFILE_D,
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

/// Bound script by script, with the server's own beside the host's.
const PROFILE_D: &str = "/etc/profile.d";

/// What the sandbox's `/proc/partitions` says: no block device.
const PARTITIONS: &str = "major minor  #blocks  name\n\n";

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

/// The environment variable naming the directory of template environments.
pub const TEMPLATES_DIR_VAR: &str = "E2B_TOOLS_TEMPLATES_DIR";
/// Where template environments are when [`TEMPLATES_DIR_VAR`] is unset
/// (where `scripts/bootstrap` installs them).
pub const DEFAULT_TEMPLATES_DIR: &str = "/var/lib/e2b-tools/templates";
/// The template whose sandboxes get a Python environment of their own.
pub const CODE_INTERPRETER_TEMPLATE: &str = e2b_wire::api::DEFAULT_TEMPLATE;
/// The file `scripts/bootstrap` writes last into a finished environment.
pub const TEMPLATE_STAMP: &str = ".e2b-template";
/// The `/etc/profile.d` file that puts the environment first on a login
/// shell's `PATH` (Debian's `/etc/profile` resets it).
const PROFILE_SCRIPT: &str = "e2b-template-env.sh";
/// The `/etc/profile.d` file that puts envd's tools (`sudo`) first on a
/// login shell's `PATH`, in every sandbox (sourced after the template's).
const TOOLS_SCRIPT: &str = "e2b-tools.sh";

/// The template environments found at server start: for now the
/// `code-interpreter-v1` venv (numpy, pandas, matplotlib, …), a directory
/// bound read-only at its own host path, so the venv's absolute paths
/// (`#!` lines of `pip` and the other scripts) hold inside.
#[derive(Debug, Clone)]
pub struct TemplateEnvs {
    /// The venv of `code-interpreter-v1`, or why there is none.
    code_interpreter: Result<PathBuf, String>,
}

impl TemplateEnvs {
    /// Looks for the environments under `$E2B_TOOLS_TEMPLATES_DIR` (or
    /// [`DEFAULT_TEMPLATES_DIR`]). `privileged`: sandboxes run as other
    /// host uids, so the venv must be readable by anyone.
    pub fn detect(privileged: bool) -> Self {
        let dir = std::env::var_os(TEMPLATES_DIR_VAR)
            .filter(|d| !d.is_empty())
            .map_or_else(|| PathBuf::from(DEFAULT_TEMPLATES_DIR), PathBuf::from);
        let venv = dir.join(CODE_INTERPRETER_TEMPLATE);
        Self {
            code_interpreter: check_venv(&venv, privileged),
        }
    }

    /// The host directory of `template`'s environment, if it has one.
    pub fn get(&self, template: &str) -> Option<&Path> {
        match template {
            CODE_INTERPRETER_TEMPLATE => self.code_interpreter.as_deref().ok(),
            _ => None,
        }
    }

    /// For the startup line: what `code-interpreter-v1`'s Python is.
    pub fn describe(&self) -> String {
        match &self.code_interpreter {
            Ok(venv) => format!("{CODE_INTERPRETER_TEMPLATE}: the venv {}", venv.display()),
            Err(why) => format!(
                "{CODE_INTERPRETER_TEMPLATE}: the host's python3 ({why}; run scripts/bootstrap \
                 to install numpy, pandas, matplotlib, scipy, scikit-learn and requests)"
            ),
        }
    }
}

/// `venv` as a template environment: a finished venv (the stamp is written
/// last), at a path clear of everything the sandbox root already
/// has, that the sandbox uids can read.
fn check_venv(venv: &Path, privileged: bool) -> Result<PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    let shown = venv.display();
    if !venv.join(TEMPLATE_STAMP).is_file() || !venv.join("bin/python3").exists() {
        return Err(format!("no environment at {shown}"));
    }
    // Symlinks resolved: the sandbox sees it at its real path.
    let canonical = venv.canonicalize().map_err(|e| format!("{shown}: {e}"))?;
    // It goes on PATH and into a shell script as it is.
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._+@-".contains(c);
    if !canonical.to_str().is_some_and(|p| p.chars().all(plain)) {
        return Err(format!(
            "{} has characters other than A-Z a-z 0-9 / . _ + @ -",
            canonical.display()
        ));
    }
    if let Some(part) = overlapped(&canonical) {
        return Err(format!("{shown} overlaps the sandbox's {part}"));
    }
    if privileged {
        for dir in canonical.ancestors() {
            let mode = std::fs::metadata(dir)
                .map_err(|e| format!("{}: {e}", dir.display()))?
                .permissions()
                .mode();
            let need = if dir == canonical { 0o005 } else { 0o001 };
            if mode & need != need {
                return Err(format!(
                    "{} is not {} by the sandboxes' uids",
                    dir.display(),
                    if dir == canonical {
                        "readable"
                    } else {
                        "searchable"
                    }
                ));
            }
        }
    }
    Ok(canonical)
}

/// The part of every sandbox's root that `path`, bound at its own path,
/// would cover or sit inside (`/usr`, `/etc`, the home, `/tmp`, …).
fn overlapped(path: &Path) -> Option<&'static str> {
    let taken = HOST_RUNTIME.iter().chain(&[
        "/etc", HOME_DIR, "/root", "/tmp", "/var/tmp", "/dev", "/proc",
    ]);
    taken
        .copied()
        .find(|part| path.starts_with(part) || Path::new(part).starts_with(path))
}

/// The `/etc/profile.d` script that puts `dir` first on `PATH`, saying
/// what it is.
fn path_script(what: &str, dir: &Path) -> String {
    let dir = dir.display();
    format!(
        "# {what}, first on PATH (written by the local server).\n\
         case \":$PATH:\" in *:{dir}:*) ;; *) PATH=\"{dir}:$PATH\"; export PATH ;; esac\n"
    )
}

/// The server-written part of the root, the same for every sandbox.
#[derive(Debug, Clone)]
pub struct RootFs {
    /// `/etc/profile.d` scripts by name: envd's tools first on `PATH`,
    /// and the template environment's.
    scripts: Vec<(&'static str, String)>,
    /// Template environments.
    templates: TemplateEnvs,
}

impl RootFs {
    /// The server's part of every root, with `templates`.
    pub fn new(templates: TemplateEnvs) -> Self {
        let mut scripts = vec![(
            TOOLS_SCRIPT,
            path_script("envd's tools (sudo)", Path::new(TOOLS_DIR)),
        )];
        if let Ok(venv) = &templates.code_interpreter {
            let script = path_script("The sandbox template's environment", &venv.join("bin"));
            scripts.push((PROFILE_SCRIPT, script));
        }
        Self { scripts, templates }
    }

    /// The template environments.
    pub fn templates(&self) -> &TemplateEnvs {
        &self.templates
    }

    /// Adds bubblewrap's arguments that build the root of the sandbox at
    /// `paths`, with `env` (a directory from [`TemplateEnvs::get`]) bound
    /// read-only at its own path and first on a login shell's `PATH`.
    pub(super) fn add_bwrap_args(
        &self,
        cmd: &mut HostCommand,
        paths: &SandboxPaths,
        env: Option<&Path>,
    ) -> std::io::Result<()> {
        // bubblewrap makes a mount point's missing parents for its own
        // user only (0700), and it runs as the sandbox's root.
        for dir in SHARED_PARENTS {
            cmd.args(["--perms", "0755", "--dir", dir]);
        }
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
            if *path != PROFILE_D {
                cmd.args(["--ro-bind-try", path, path]);
            }
        }
        // /etc/profile.d holds the host's scripts one by one (the directory
        // itself is the sandbox's, on its read-only root), the one putting
        // envd's tools on PATH and, with a template, its environment's.
        cmd.args(["--perms", "0755", "--dir", PROFILE_D]);
        let ours = [TOOLS_SCRIPT, PROFILE_SCRIPT];
        if let Ok(entries) = std::fs::read_dir(PROFILE_D) {
            for entry in entries.flatten() {
                if !ours.iter().any(|name| entry.file_name() == *name) {
                    let path = entry.path();
                    cmd.arg("--ro-bind-try").arg(&path).arg(&path);
                }
            }
        }
        for (name, content) in &self.scripts {
            if *name == PROFILE_SCRIPT && env.is_none() {
                continue;
            }
            add_file(cmd, content, &Path::new(PROFILE_D).join(name))?;
        }
        if let Some(env) = env {
            let mut parents: Vec<&Path> = env.ancestors().skip(1).collect();
            parents.reverse();
            for dir in parents.iter().filter(|d| d.parent().is_some()) {
                cmd.args(["--perms", "0755", "--dir"]).arg(dir);
            }
            cmd.arg("--ro-bind").arg(env).arg(env);
        }
        for (name, content) in synthesized_etc() {
            add_file(cmd, content, &Path::new("/etc").join(name))?;
        }
        cmd.arg("--bind").arg(paths.home()).arg(HOME_DIR);
        cmd.arg("--bind").arg(paths.root_home()).arg("/root");
        cmd.arg("--bind").arg(paths.tmp()).arg("/tmp");
        cmd.arg("--bind").arg(paths.var_tmp()).arg("/var/tmp");
        cmd.args(["--dev", "/dev", "--proc", "/proc"]);
        let partitions = cmd.pass_fd(memfd("partitions", PARTITIONS)?);
        cmd.arg("--ro-bind-data")
            .arg(partitions.to_string())
            .arg("/proc/partitions");
        // Nothing may be written outside the sandbox's own directories.
        cmd.args(["--remount-ro", "/"]);
        Ok(())
    }
}

/// A file of the root, `content` copied into it (`--file`), `0644`.
fn add_file(cmd: &mut HostCommand, content: &str, dest: &Path) -> std::io::Result<()> {
    let name = dest.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let fd = cmd.pass_fd(memfd(name, content)?);
    cmd.args(["--perms", "0644", "--file"])
        .arg(fd.to_string())
        .arg(dest);
    Ok(())
}

/// An anonymous file holding `content`, read from its start (bubblewrap
/// reads it once).
fn memfd(name: &str, content: &str) -> std::io::Result<OwnedFd> {
    let fd = rustix::fs::memfd_create(name, rustix::fs::MemfdFlags::CLOEXEC)?;
    let mut file = std::fs::File::from(fd);
    file.write_all(content.as_bytes())?;
    std::io::Seek::rewind(&mut file)?;
    Ok(file.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A finished-looking venv under the build directory, or, when the
    /// checkout itself lies where a sandbox's root has something (a clone
    /// in /tmp), under /var/lib or /srv: the first place clear of them.
    fn fake_venv(name: &str) -> PathBuf {
        let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target");
        let base = [
            target.canonicalize().unwrap_or(target),
            PathBuf::from("/var/lib/e2b-tools-tests"),
            PathBuf::from("/srv/e2b-tools-tests"),
        ]
        .into_iter()
        .find(|dir| overlapped(dir).is_none() && std::fs::create_dir_all(dir).is_ok())
        .expect("a writable directory clear of the sandbox root's paths");
        let dir = base
            .join(format!(
                "rootfs-test-{}-{}",
                std::process::id(),
                name.replace(' ', "_")
            ))
            .join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        std::os::unix::fs::symlink("/usr/bin/env", dir.join("bin/python3")).unwrap();
        std::fs::write(dir.join(TEMPLATE_STAMP), "x\n").unwrap();
        dir.canonicalize().unwrap()
    }

    #[test]
    fn a_finished_venv_clear_of_the_root_is_used_at_its_real_path() {
        let venv = fake_venv("ok");
        assert_eq!(check_venv(&venv, false), Ok(venv.clone()));
        std::fs::remove_file(venv.join(TEMPLATE_STAMP)).unwrap();
        assert!(check_venv(&venv, false)
            .unwrap_err()
            .contains("no environment"));
        let script = path_script("an environment", &venv.join("bin"));
        assert!(script.contains(&format!("PATH=\"{}/bin:$PATH\"", venv.display())));
        let _ = std::fs::remove_dir_all(venv.parent().unwrap());
    }

    #[test]
    fn venvs_overlapping_the_root_or_oddly_named_are_refused() {
        for (path, part) in [
            ("/", "/usr"),
            ("/usr/lib/venv", "/usr"),
            ("/tmp/venv", "/tmp"),
            ("/var", "/var/tmp"),
            ("/home/user/venv", HOME_DIR),
            ("/home", HOME_DIR),
            ("/etc/x", "/etc"),
        ] {
            assert_eq!(overlapped(Path::new(path)), Some(part), "{path}");
        }
        for path in [
            DEFAULT_TEMPLATES_DIR,
            "/home/alice/templates",
            "/opt/e2b",
            "/var/lib/x",
        ] {
            assert_eq!(overlapped(Path::new(path)), None, "{path}");
        }
        // The checks that apply once it exists.
        let venv = fake_venv("odd name");
        let err = check_venv(&venv, false).unwrap_err();
        assert!(err.contains("characters other than"), "{err}");
        let _ = std::fs::remove_dir_all(venv.parent().unwrap());
    }
}
