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

use super::ids;
use super::overlay::Layer;
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
/// loader, TLS roots, time zone, shells, Python, R, Java, alternatives), bound
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
    // R's own configuration (Debian keeps R_HOME/etc here): the R kernel.
    "/etc/R",
    // The JDK's configuration (its conf/ links here): the Java kernel, on
    // Debian 12's JDK and Debian 13's.
    "/etc/java-17-openjdk",
    "/etc/java-21-openjdk",
    "/etc/services",
    "/etc/skel",
    "/etc/ssl/certs",
    "/etc/ssl/openssl.cnf",
    "/etc/terminfo",
    "/etc/timezone",
];

/// Where in the data directory the base of the copy-on-write roots is.
pub const BASE_DIR: &str = ".root-base";

/// The directories of the base root, with their modes (a Debian system's,
/// with apt's and dpkg's working directories; mount points among them).
const BASE_DIRS: &[(&str, u32)] = &[
    ("dev", 0o755),
    ("etc", 0o755),
    ("home", 0o755),
    ("media", 0o755),
    ("mnt", 0o755),
    ("opt", 0o755),
    ("opt/e2b", 0o755),
    ("proc", 0o555),
    ("root", 0o700),
    ("run", 0o755),
    ("srv", 0o755),
    ("sys", 0o555),
    ("tmp", 0o1777),
    ("usr", 0o755),
    ("var", 0o755),
    ("var/backups", 0o755),
    ("var/cache", 0o755),
    ("var/cache/apt", 0o755),
    ("var/cache/apt/archives", 0o755),
    ("var/cache/apt/archives/partial", 0o700),
    ("var/lib", 0o755),
    ("var/lib/apt", 0o755),
    ("var/lib/apt/lists", 0o755),
    ("var/lib/apt/lists/partial", 0o700),
    ("var/lib/dpkg", 0o755),
    ("var/local", 0o2775),
    ("var/log", 0o755),
    ("var/log/apt", 0o755),
    ("var/mail", 0o2775),
    ("var/opt", 0o755),
    ("var/spool", 0o755),
    ("var/tmp", 0o1777),
];

/// Host files of `/etc` a copy-on-write root has besides [`HOST_ETC`]:
/// what dpkg and apt need to install a package. None holds secrets; apt's
/// own configuration is not among them (a host's may name its proxies and
/// credentials): the server writes its sources ([`apt_sources`]).
const BASE_ETC: &[&str] = &[
    "/etc/debconf.conf",
    "/etc/dpkg",
    "/etc/login.defs",
    "/etc/shells",
    "/etc/ucf.conf",
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
    /// The base of the copy-on-write roots ([`RootFs::write_base`]), or
    /// none: roots are read-only.
    base: Option<PathBuf>,
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
        Self {
            scripts,
            templates,
            base: None,
        }
    }

    /// Writes the base of every sandbox's copy-on-write root into
    /// `data_dir` (replacing an earlier server's): the directories of a
    /// Debian system, the links of `/bin` and the others, `/etc` (the
    /// host files of [`HOST_ETC`] copied, the server's written, apt's
    /// sources) and the mount points of the rest; from then on roots are
    /// copy-on-write ([`super::overlay`]).
    pub fn write_base(&mut self, data_dir: &Path) -> std::io::Result<()> {
        let dir = data_dir.join(BASE_DIR);
        let new = data_dir.join(format!("{BASE_DIR}.new"));
        remove_tree(&new)?;
        self.lay_out_base(&new)?;
        remove_tree(&dir)?;
        std::fs::rename(&new, &dir)?;
        self.base = Some(dir);
        Ok(())
    }

    fn lay_out_base(&self, base: &Path) -> std::io::Result<()> {
        let at = |path: &str| base.join(path.trim_start_matches('/'));
        make_dir(base, 0o755)?;
        for (dir, mode) in BASE_DIRS {
            make_dir(&at(dir), *mode)?;
        }
        for dir in [TOOLS_DIR, HOME_DIR] {
            make_dir(&at(dir), 0o755)?;
        }
        for path in HOST_RUNTIME {
            match std::fs::symlink_metadata(path) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    std::os::unix::fs::symlink(std::fs::read_link(path)?, at(path))?;
                }
                Ok(meta) if meta.is_dir() => make_dir(&at(path), 0o755)?,
                _ => {}
            }
        }
        for path in HOST_ETC.iter().chain(BASE_ETC) {
            if *path != PROFILE_D {
                copy_tree(Path::new(path), &at(path))?;
            }
        }
        make_dir(&at(PROFILE_D), 0o755)?;
        let ours = [TOOLS_SCRIPT, PROFILE_SCRIPT];
        if let Ok(entries) = std::fs::read_dir(PROFILE_D) {
            for entry in entries.flatten() {
                if !ours.iter().any(|name| entry.file_name() == *name) {
                    copy_tree(&entry.path(), &at(PROFILE_D).join(entry.file_name()))?;
                }
            }
        }
        // The template environment's script only where it is ([`RootFs::add_bwrap_args`]).
        for (name, content) in self
            .scripts
            .iter()
            .filter(|(name, _)| *name != PROFILE_SCRIPT)
        {
            write_file(&at(PROFILE_D).join(name), content)?;
        }
        for (name, content) in synthesized_etc() {
            let content = match name {
                "passwd" => with_system_accounts(content, "/etc/passwd"),
                "group" => with_system_accounts(content, "/etc/group"),
                _ => content.to_string(),
            };
            write_file(&at("/etc").join(name), &content)?;
        }
        if let Some(sources) =
            apt_sources(&std::fs::read_to_string("/etc/os-release").unwrap_or_default())
        {
            make_dir(&at("/etc/apt"), 0o755)?;
            make_dir(&at("/etc/apt/sources.list.d"), 0o755)?;
            write_file(&at("/etc/apt/sources.list.d/system.sources"), &sources)?;
        }
        Ok(())
    }

    /// Whether roots are copy-on-write ([`RootFs::write_base`] ran).
    pub fn is_copy_on_write(&self) -> bool {
        self.base.is_some()
    }

    /// The layers of a copy-on-write root with `env` (from
    /// [`TemplateEnvs::get`]), the base at `/` first; none when roots are
    /// read-only.
    pub fn layers(&self, env: Option<&Path>) -> Option<Vec<Layer>> {
        let base = self.base.as_ref()?;
        let mut layers = vec![Layer {
            name: "root",
            lower: base.clone(),
            at: PathBuf::from("/"),
            owner: 0,
        }];
        for (name, path) in [("usr", "/usr"), ("dpkg", "/var/lib/dpkg")] {
            let real_dir = std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir());
            if real_dir {
                layers.push(Layer {
                    name,
                    lower: PathBuf::from(path),
                    at: PathBuf::from(path),
                    owner: 0,
                });
            }
        }
        if let Some(env) = env {
            layers.push(Layer {
                name: "template",
                lower: env.to_path_buf(),
                at: env.to_path_buf(),
                owner: ids::USER_ID,
            });
        }
        Some(layers)
    }

    /// The template environments.
    pub fn templates(&self) -> &TemplateEnvs {
        &self.templates
    }

    /// Adds bubblewrap's arguments that build the root of the sandbox at
    /// `paths`, with `env` (a directory from [`TemplateEnvs::get`]) at its
    /// own path and first on a login shell's `PATH`. With `overlays` (each
    /// overlay's mount point and place, from [`super::overlay::mount`]; the one at
    /// `/` is bound before everything else, by the caller), the root is
    /// copy-on-write; without, read-only.
    pub(super) fn add_bwrap_args(
        &self,
        cmd: &mut HostCommand,
        paths: &SandboxPaths,
        env: Option<&Path>,
        overlays: Option<&[(PathBuf, PathBuf)]>,
    ) -> std::io::Result<()> {
        match overlays {
            Some(overlays) => {
                if let Some(env) = env {
                    self.add_template_env_args(cmd, env)?;
                }
                for (point, at) in overlays.iter().filter(|(_, at)| at != Path::new("/")) {
                    cmd.arg("--bind").arg(point).arg(at);
                }
                // A host that keeps /lib and the others apart from /usr.
                for path in HOST_RUNTIME.iter().filter(|p| **p != "/usr") {
                    let dir = std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir());
                    if dir {
                        cmd.args(["--ro-bind", path, path]);
                    }
                }
            }
            None => self.add_read_only_args(cmd, env)?,
        }
        cmd.arg("--bind").arg(paths.home()).arg(HOME_DIR);
        cmd.arg("--bind").arg(paths.root_home()).arg("/root");
        cmd.arg("--bind").arg(paths.tmp()).arg("/tmp");
        cmd.arg("--bind").arg(paths.var_tmp()).arg("/var/tmp");
        cmd.args(["--dev", "/dev", "--proc", "/proc"]);
        let partitions = cmd.pass_fd(memfd("partitions", PARTITIONS)?);
        cmd.args(["--perms", "0444", "--ro-bind-data"])
            .arg(partitions.to_string())
            .arg("/proc/partitions");
        // Each start is a boot of its own, never the host's.
        let boot_id = cmd.pass_fd(memfd("boot_id", &new_boot_id()?)?);
        cmd.args(["--perms", "0444", "--ro-bind-data"])
            .arg(boot_id.to_string())
            .arg("/proc/sys/kernel/random/boot_id");
        if overlays.is_none() {
            // Nothing may be written outside the sandbox's own directories.
            cmd.args(["--remount-ro", "/"]);
        }
        Ok(())
    }

    /// The template environment's mount point `env` and its parents, and
    /// the script that puts it first on `PATH`: only in the sandboxes
    /// that have it.
    fn add_template_env_args(&self, cmd: &mut HostCommand, env: &Path) -> std::io::Result<()> {
        let mut dirs: Vec<&Path> = env.ancestors().collect();
        dirs.reverse();
        for dir in dirs.iter().filter(|d| d.parent().is_some()) {
            cmd.args(["--perms", "0755", "--dir"]).arg(dir);
        }
        if let Some((name, content)) = self
            .scripts
            .iter()
            .find(|(name, _)| *name == PROFILE_SCRIPT)
        {
            add_file(cmd, content, &Path::new(PROFILE_D).join(name))?;
        }
        Ok(())
    }

    /// The read-only root: host paths bound, the server's files copied in.
    fn add_read_only_args(&self, cmd: &mut HostCommand, env: Option<&Path>) -> std::io::Result<()> {
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
        for (name, content) in self
            .scripts
            .iter()
            .filter(|(name, _)| *name != PROFILE_SCRIPT)
        {
            add_file(cmd, content, &Path::new(PROFILE_D).join(name))?;
        }
        if let Some(env) = env {
            self.add_template_env_args(cmd, env)?;
            cmd.arg("--ro-bind").arg(env).arg(env);
        }
        for (name, content) in synthesized_etc() {
            add_file(cmd, content, &Path::new("/etc").join(name))?;
        }
        Ok(())
    }
}

/// Makes `dir` with `mode` (whatever the umask).
fn make_dir(dir: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode))
}

/// Removes the tree at `path`, if there is one.
fn remove_tree(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_dir_all(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// Writes `content` to `path`, `0644`.
fn write_file(path: &Path, content: &str) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, content)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644))
}

/// Copies the host's `src` (a file, a symbolic link as a link, or a
/// directory with what it holds) to `dst`, if it is there; anything else
/// (a socket, a device) is left out.
fn copy_tree(src: &Path, dst: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let Ok(meta) = std::fs::symlink_metadata(src) else {
        return Ok(());
    };
    if let Some(parent) = dst.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let kind = meta.file_type();
    if kind.is_symlink() {
        std::os::unix::fs::symlink(std::fs::read_link(src)?, dst)
    } else if kind.is_dir() {
        make_dir(dst, meta.permissions().mode() & 0o7777)?;
        for entry in std::fs::read_dir(src)?.flatten() {
            copy_tree(&entry.path(), &dst.join(entry.file_name()))?;
        }
        Ok(())
    } else if kind.is_file() {
        std::fs::copy(src, dst).map(drop)
    } else {
        Ok(())
    }
}

/// `ours` (the server's `passwd` or `group`) with the host's system
/// accounts (ids 1 to 999: `_apt`, `messagebus`, …, which packages'
/// scripts expect) from `host_file`, their member lists left out.
fn with_system_accounts(ours: &str, host_file: &str) -> String {
    let host = std::fs::read_to_string(host_file).unwrap_or_default();
    system_accounts(ours, &host)
}

fn system_accounts(ours: &str, host: &str) -> String {
    let mut out = ours.to_string();
    let taken: Vec<&str> = ours.lines().filter_map(|l| l.split(':').next()).collect();
    for line in host.lines() {
        let fields: Vec<&str> = line.split(':').collect();
        let system = fields
            .get(2)
            .and_then(|id| id.parse::<u32>().ok())
            .is_some_and(|id| (1..1000).contains(&id));
        let plain = line.chars().all(|c| c.is_ascii_graphic() || c == ' ');
        if fields.len() < 4 || !system || !plain || taken.contains(&fields[0]) {
            continue;
        }
        if fields.len() == 4 {
            // A group: its name, id and no members.
            out.push_str(&format!("{}:x:{}:\n", fields[0], fields[2]));
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// apt's sources for the system `os_release` describes (Debian's or
/// Ubuntu's own archives, as their images have), or none for another.
fn apt_sources(os_release: &str) -> Option<String> {
    let field = |name: &str| {
        os_release.lines().find_map(|l| {
            l.strip_prefix(name)
                .and_then(|v| v.strip_prefix('='))
                .map(|v| v.trim_matches('"').to_string())
        })
    };
    let codename =
        field("VERSION_CODENAME").filter(|c| c.chars().all(|c| c.is_ascii_alphanumeric()))?;
    let c = codename.as_str();
    let (archive, security, suites, components, keyring) = match field("ID")?.as_str() {
        "debian" => (
            "http://deb.debian.org/debian",
            (
                "http://deb.debian.org/debian-security",
                format!("{c}-security"),
            ),
            format!("{c} {c}-updates"),
            "main",
            "debian-archive-keyring.gpg",
        ),
        "ubuntu" => (
            "http://archive.ubuntu.com/ubuntu",
            ("http://security.ubuntu.com/ubuntu", format!("{c}-security")),
            format!("{c} {c}-updates"),
            "main universe",
            "ubuntu-archive-keyring.gpg",
        ),
        _ => return None,
    };
    let stanza = |uri: &str, suites: &str| {
        format!(
            "Types: deb\nURIs: {uri}\nSuites: {suites}\nComponents: {components}\n\
             Signed-By: /usr/share/keyrings/{keyring}\n"
        )
    };
    Some(format!(
        "# Written by the local server.\n{}\n{}",
        stanza(archive, &suites),
        stanza(security.0, &security.1)
    ))
}

/// A random boot id, as the kernel writes one (a version 4 UUID, a line).
fn new_boot_id() -> std::io::Result<String> {
    use std::io::Read;
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    Ok(format!(
        "{}-{}-{}-{}-{}\n",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    ))
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
