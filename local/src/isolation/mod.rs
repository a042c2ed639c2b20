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
pub mod disk;
pub mod envd;
mod idmap;
pub mod ids;
mod launcher;
pub mod limits;
pub mod network;
mod overlay;
pub mod rootfs;
mod runner;
pub mod seccomp;
mod slot;
mod spawn;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use crate::paths::SandboxPaths;
use crate::Isolation;
use disk::Disk;
pub use disk::{allocated, in_use, thaw_stale, unmount};
use ids::{HostIds, IdBlocks};
pub use launcher::{DiskSource, Isolated, IsolationUnavailable, Launcher, Provision, DISKS_DIR};
use limits::Enforcement;
pub use limits::Limits;
use network::Internet;
use rootfs::{RootFs, TemplateEnvs};
pub use runner::{PortError, SandboxRunner};

impl Launcher {
    /// Finds and tries bubblewrap and the other layers (or accepts the
    /// opt-out); roots are copy-on-write where there are disk images and
    /// `copy_on_write`.
    pub async fn detect(
        isolation: &Isolation,
        data_dir: &Path,
        limits: Limits,
        cgroup_parent: Option<&Path>,
        copy_on_write: bool,
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
        let mut rootfs = RootFs::new(TemplateEnvs::detect(privileged));
        let disks = Disk::available(privileged);
        if disks && copy_on_write {
            // Roots are copy-on-write on the sandboxes' disks.
            rootfs.write_base(data_dir).map_err(|e| {
                IsolationUnavailable(format!("cannot write the sandboxes' base root: {e}"))
            })?;
        }
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
            disks,
            internet: Internet::detect(privileged),
            limits,
            groups_released: Default::default(),
        };
        let launcher = Launcher::Bwrap(Arc::new(isolated));
        launcher.self_test(data_dir).await?;
        Ok(launcher)
    }

    /// Makes the host side of a sandbox (its disk, directories, cgroup
    /// and ids) and a runner that starts it ([`SandboxRunner::ensure_running`],
    /// which a create awaits, or the first connection). A sandbox that
    /// cannot be made leaves nothing behind, except what it was to resume
    /// ([`DiskSource::Existing`]), which stays as it was.
    pub fn provision(&self, p: Provision) -> std::io::Result<SandboxRunner> {
        let Launcher::Bwrap(iso) = self else {
            match &p.disk {
                DiskSource::Fresh => p.paths.create()?,
                DiskSource::Existing => {}
                _ => return Err(no_disks()),
            }
            return Ok(SandboxRunner::new(
                self.clone(),
                p,
                runner::Held::default(),
                None,
            ));
        };
        let mut held = runner::Held::default();
        let made = self.make_host_side(iso, &p, &mut held);
        match made {
            Ok(ids) => Ok(SandboxRunner::new(self.clone(), p, held, Some(ids))),
            Err(e) => {
                if p.disk == DiskSource::Existing {
                    if let Some(disk) = held.disk.take() {
                        disk.detach();
                    }
                }
                Err(e)
            }
        }
    }

    fn make_host_side(
        &self,
        iso: &Isolated,
        p: &Provision,
        held: &mut runner::Held,
    ) -> std::io::Result<HostIds> {
        let ids = if iso.privileged {
            // A directory's files keep the block they were made with; a
            // disk is mapped onto whichever block the sandbox gets.
            let wanted = p.id_block.filter(|_| !iso.disks);
            let base = match wanted {
                Some(base) => IdBlocks::global().take_exact(base),
                None => IdBlocks::global().take(),
            }
            .ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::QuotaExceeded,
                    format!(
                        "every uid block is in use ({} sandboxes on this machine's server)",
                        ids::SLOTS
                    ),
                )
            })?;
            held.block = Some(base);
            HostIds::Block { base }
        } else {
            HostIds::Own {
                uid: iso.own_ids.0,
                gid: iso.own_ids.1,
            }
        };
        let root = p.paths.root();
        if iso.disks {
            let base = held.block.unwrap_or(0);
            let disks = p.paths.data_dir().join(DISKS_DIR);
            private_dir(&disks)?;
            room_for_a_disk(&disks)?;
            let image = disks.join(&p.id).with_extension("img");
            held.disk = Some(match &p.disk {
                // The image stores the ids inside: root 0, user 1000.
                DiskSource::Fresh => Disk::create(&image, root, iso.limits.disk_mb, base, || {
                    lay_out(&p.paths, Some(0))
                })?,
                DiskSource::CopyOf(source) => {
                    disk::copy_sparse(source, &image, false)?;
                    attach_new(&image, root, base)?
                }
                DiskSource::Take(source) => {
                    std::fs::rename(source, &image)?;
                    attach_new(&image, root, base)?
                }
                DiskSource::Existing => Disk::attach(&image, root, base)?,
            });
        } else {
            match &p.disk {
                DiskSource::Fresh => lay_out(&p.paths, held.block)?,
                DiskSource::Existing => {}
                _ => return Err(no_disks()),
            }
        }
        held.cgroup = iso.enforcement.create(&p.id, &iso.limits)?;
        Ok(ids)
    }

    /// Runs a command in a throwaway sandbox to prove the set-up works.
    async fn self_test(&self, data_dir: &Path) -> Result<(), IsolationUnavailable> {
        let id = format!("selftest-{}", crate::names::random_id(8));
        let root = data_dir.join(&id);
        let paths = SandboxPaths::new(root.clone(), data_dir.to_path_buf());
        let runner = self
            .provision(Provision {
                id: id.clone(),
                paths: paths.clone(),
                internet: false,
                template: "base".into(),
                env_vars: BTreeMap::new(),
                disk: DiskSource::Fresh,
                id_block: None,
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

/// The least free space a new disk image needs where it goes: its
/// filesystem's metadata, and room for the sandbox to start writing.
const MIN_FREE_FOR_A_DISK: u64 = 64 << 20;

/// Whether the filesystem of `dir` has room for a new disk image; a
/// `StorageFull` error (a create's 507) saying how much it has if not.
fn room_for_a_disk(dir: &Path) -> std::io::Result<()> {
    let stat = rustix::fs::statvfs(dir)?;
    let free = stat.f_bavail.saturating_mul(stat.f_frsize);
    if free < MIN_FREE_FOR_A_DISK {
        return Err(std::io::Error::new(
            std::io::ErrorKind::StorageFull,
            format!(
                "{} has {} MiB free, a sandbox's disk needs {} MiB to start",
                dir.display(),
                free >> 20,
                MIN_FREE_FOR_A_DISK >> 20
            ),
        ));
    }
    Ok(())
}

/// Mounts a new copy of an image; removes it when that fails.
fn attach_new(image: &Path, root: &Path, base: u32) -> std::io::Result<Disk> {
    Disk::attach(image, root, base).inspect_err(|_| {
        let _ = std::fs::remove_file(image);
    })
}

fn no_disks() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "this server keeps no disk images (they need a server run as root, with loop devices)",
    )
}

fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

/// Makes a new sandbox's directories; with `owners`, the block whose ids
/// own them (its `root` at `owners`, `user` 1000 above): the sandbox's
/// root directory is `user`'s, `0700`, the rest root's but `/home/user`.
fn lay_out(paths: &SandboxPaths, owners: Option<u32>) -> std::io::Result<()> {
    paths.create()?;
    let Some(base) = owners else {
        return Ok(());
    };
    let (root_id, user_id) = (base, base + ids::USER_ID);
    let root = paths.root();
    chown(root, user_id, user_id)?;
    chown(&root.join("home"), root_id, root_id)?;
    chown(&paths.home(), user_id, user_id)?;
    chown(&paths.root_home(), root_id, root_id)?;
    chown(&paths.tmp(), root_id, root_id)?;
    chown(&root.join("var"), root_id, root_id)?;
    chown(&paths.var_tmp(), root_id, root_id)?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o700))
}

fn chown(path: &Path, uid: u32, gid: u32) -> std::io::Result<()> {
    rustix::fs::chown(
        path,
        Some(rustix::fs::Uid::from_raw(uid)),
        Some(rustix::fs::Gid::from_raw(gid)),
    )
    .map_err(|e| std::io::Error::other(format!("chown {}: {e}", path.display())))
}
