//! The orchestrator's side of a sandbox: the layers that isolate it, and
//! the envd it runs.
//!
//! Debian's `bubblewrap` builds each sandbox: a user namespace whose
//! `root` and `user` are unprivileged host uids ([`ids`]), a mount
//! namespace holding a minimal root ([`rootfs`]), and its own pid, IPC,
//! UTS and network namespaces ([`network`]), inside a cgroup with CPU,
//! memory and process limits and on a size-limited disk ([`limits`]),
//! under a seccomp filter ([`seccomp`]). Its first process is envd
//! ([`envd`], the agent of `local/envd`), as the sandbox's own root: every
//! process, file, terminal and watch of the sandbox is envd's work, inside
//! the sandbox, with the sandbox's credentials. The server only makes the
//! sandbox ([`Launcher::provision`]), starts it ([`anchor`]), freezes,
//! stops and removes it, and hands envd connections
//! ([`SandboxRunner::open_port`]): it takes no environment, path, mount or
//! privilege from the sandbox.

mod anchor;
pub mod envd;
pub mod ids;
mod launcher;
pub mod limits;
pub mod network;
pub mod rootfs;
mod runner;
pub mod seccomp;
mod spawn;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use e2b_wire::envd_setup::SandboxUser;

use crate::paths::SandboxPaths;
use crate::Isolation;
use ids::{HostIds, IdBlocks};
pub use launcher::{Isolated, IsolationUnavailable, Launcher, Provision, DISKS_DIR};
pub use limits::Limits;
use limits::{Disk, Enforcement};
use network::Internet;
use rootfs::{RootFs, TemplateEnvs};
pub use runner::{PortError, SandboxRunner};

impl Launcher {
    /// Finds and tries bubblewrap and the other layers (or accepts the opt-out).
    pub async fn detect(
        isolation: &Isolation,
        data_dir: &Path,
        limits: Limits,
        cgroup_parent: Option<&Path>,
    ) -> Result<Self, IsolationUnavailable> {
        let uid = rustix::process::getuid().as_raw();
        let gid = rustix::process::getgid().as_raw();
        let privileged = uid == 0;
        if privileged {
            // The sandboxes' unprivileged uids must reach their own roots.
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(data_dir, std::fs::Permissions::from_mode(0o711))
                .map_err(|e| IsolationUnavailable(format!("{}: {e}", data_dir.display())))?;
        }
        let envd = envd::install(data_dir)
            .map_err(|e| IsolationUnavailable(format!("cannot install envd: {e}")))?;
        if matches!(isolation, Isolation::None) {
            tracing::warn!(
                "running sandboxes WITHOUT isolation: commands can read and write the whole host"
            );
            return Ok(Launcher::None { envd });
        }
        let bwrap = limits::find("bwrap").ok_or_else(|| {
            IsolationUnavailable(
                "bwrap not found: install it (apt-get install bubblewrap) or pass --no-isolation"
                    .into(),
            )
        })?;
        let rootfs = RootFs::create(data_dir, TemplateEnvs::detect(privileged))
            .map_err(|e| IsolationUnavailable(format!("cannot write the sandbox /etc: {e}")))?;
        let isolated = Isolated {
            bwrap,
            envd,
            privileged,
            own_ids: (uid, gid),
            rootfs,
            enforcement: match (privileged, cgroup_parent) {
                (true, Some(dir)) => Enforcement::v2_under(dir)
                    .map_err(|e| IsolationUnavailable(format!("cgroup {}: {e}", dir.display())))?,
                (true, None) => Enforcement::detect(),
                (false, _) => Enforcement::Rlimits,
            },
            disks: Disk::available(privileged),
            internet: Internet::detect(privileged),
            limits,
        };
        let launcher = Launcher::Bwrap(Arc::new(isolated));
        launcher.self_test(data_dir).await?;
        Ok(launcher)
    }

    /// Makes the host side of a sandbox (its disk, directories, cgroup
    /// and ids) and a runner that starts it on first use.
    pub fn provision(&self, p: Provision<'_>) -> std::io::Result<SandboxRunner> {
        let Launcher::Bwrap(iso) = self else {
            p.paths.create()?;
            return Ok(SandboxRunner::new(
                self.clone(),
                p,
                runner::Held::default(),
                None,
            ));
        };
        let mut held = runner::Held::default();
        let ids = if iso.privileged {
            let base = IdBlocks::global()
                .take()
                .ok_or_else(|| std::io::Error::other("no free uid block"))?;
            held.block = Some(base);
            HostIds::Block { base }
        } else {
            HostIds::Own {
                uid: iso.own_ids.0,
                gid: iso.own_ids.1,
            }
        };
        if iso.disks {
            let disks = p.paths.data_dir().join(DISKS_DIR);
            std::fs::create_dir_all(&disks)?;
            let image = disks.join(p.id).with_extension("img");
            held.disk = Some(Disk::create(&image, p.paths.root(), iso.limits.disk_mb)?);
        }
        p.paths.create()?;
        if let Some((uid, gid)) = ids.host(SandboxUser::User).filter(|_| iso.privileged) {
            let (root_uid, root_gid) = ids.host(SandboxUser::Root).unwrap_or((uid, gid));
            let root = p.paths.root();
            chown(root, uid, gid)?;
            chown(&root.join("home"), root_uid, root_gid)?;
            chown(&p.paths.home(), uid, gid)?;
            chown(&p.paths.root_home(), root_uid, root_gid)?;
            chown(&p.paths.tmp(), root_uid, root_gid)?;
            chown(&root.join("var"), root_uid, root_gid)?;
            chown(&p.paths.var_tmp(), root_uid, root_gid)?;
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o700))?;
        }
        held.cgroup = iso.enforcement.create(p.id, &iso.limits)?;
        Ok(SandboxRunner::new(self.clone(), p, held, Some(ids)))
    }

    /// Runs a command in a throwaway sandbox to prove the set-up works.
    async fn self_test(&self, data_dir: &Path) -> Result<(), IsolationUnavailable> {
        let id = format!("selftest-{}", crate::names::random_id(8));
        let root = data_dir.join(&id);
        let paths = SandboxPaths::new(root.clone(), data_dir.to_path_buf());
        let runner = self
            .provision(Provision {
                id: &id,
                paths: paths.clone(),
                internet: false,
                template: "base",
                env_vars: BTreeMap::new(),
            })
            .map_err(|e| IsolationUnavailable(format!("cannot prepare a sandbox: {e}")))?;
        let outcome = runner
            .run_once("touch /home/user/ok && test ! -e /root/.bashrc && test \"$(id -u)\" = 1000")
            .await;
        let made = paths.home().join("ok").exists();
        runner.release();
        let _ = std::fs::remove_dir_all(&root);
        match outcome {
            Ok(true) if made => Ok(()),
            Ok(_) => Err(IsolationUnavailable(
                "a command in a bubblewrap sandbox did not do what it should; fix it or pass --no-isolation".into(),
            )),
            Err(e) => Err(IsolationUnavailable(format!(
                "bubblewrap does not work here: {e}; fix it or pass --no-isolation"
            ))),
        }
    }
}

fn chown(path: &Path, uid: u32, gid: u32) -> std::io::Result<()> {
    rustix::fs::chown(
        path,
        Some(rustix::fs::Uid::from_raw(uid)),
        Some(rustix::fs::Gid::from_raw(gid)),
    )
    .map_err(|e| std::io::Error::other(format!("chown {}: {e}", path.display())))
}
