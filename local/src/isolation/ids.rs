//! Which host uids a sandbox's users are.
//!
//! A server running as root gives every sandbox its own block of 65,536
//! subordinate host ids (`root` inside is the block's first id, `user`
//! (1000) the block's id 1000), written into the sandbox's user namespace
//! by the server. So nothing in a sandbox is host root, and no two
//! sandboxes share a host uid: one that escapes its mount namespace can
//! touch neither the host's files nor another sandbox's. A server running
//! as an ordinary user has one id to give: bubblewrap maps the server's
//! uid to `user`, and `root` does not exist inside.

use std::collections::BTreeSet;
use std::sync::Mutex;

pub use e2b_wire::envd_setup::{SandboxUser, USER_ID};

/// First host uid of the first block; far above the ids distributions
/// hand out to people and system services.
const SUBID_BASE: u32 = 0x2000_0000;
/// Ids per sandbox: a full 16-bit range, as container runtimes map.
pub const SUBID_COUNT: u32 = 65_536;
/// Blocks available (sandboxes alive at once, with room to spare).
pub const SLOTS: u32 = 4_096;

/// The host ids behind one sandbox's users.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostIds {
    /// A block of subordinate ids starting at `base` (server is root).
    Block {
        /// Host uid and gid of `root` inside.
        base: u32,
    },
    /// The server's own uid and gid are `user`; there is no `root`.
    Own {
        /// The server's uid.
        uid: u32,
        /// The server's gid.
        gid: u32,
    },
}

impl HostIds {
    /// The host uid and gid of `who`, `None` when it has none.
    pub fn host(self, who: SandboxUser) -> Option<(u32, u32)> {
        match self {
            HostIds::Block { base } => {
                let id = base + who.inside_id();
                Some((id, id))
            }
            HostIds::Own { uid, gid } => (who == SandboxUser::User).then_some((uid, gid)),
        }
    }

    /// The user (and its host ids) processes of the sandbox's anchor and
    /// joiners run as on the host: the sandbox user's.
    pub fn anchor(self) -> (u32, u32) {
        match self {
            HostIds::Block { base } => (base + USER_ID, base + USER_ID),
            HostIds::Own { uid, gid } => (uid, gid),
        }
    }

    /// The user namespace's maps, which the server writes while bubblewrap
    /// waits: the whole block, or only `user` (an unprivileged process may
    /// map just its own ids, and only once `setgroups` is denied).
    pub fn maps(self) -> UserNsMaps {
        match self {
            HostIds::Block { base } => {
                let line = format!("0 {base} {SUBID_COUNT}\n");
                UserNsMaps {
                    uid_map: line.clone(),
                    gid_map: line,
                    deny_setgroups: false,
                }
            }
            HostIds::Own { uid, gid } => UserNsMaps {
                uid_map: format!("{USER_ID} {uid} 1\n"),
                gid_map: format!("{USER_ID} {gid} 1\n"),
                deny_setgroups: true,
            },
        }
    }
}

/// What goes into `/proc/<pid>/{uid_map,setgroups,gid_map}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserNsMaps {
    /// `uid_map`.
    pub uid_map: String,
    /// `gid_map`.
    pub gid_map: String,
    /// Whether `setgroups` must be denied first.
    pub deny_setgroups: bool,
}

/// Hands out id blocks to live sandboxes. One per process ([`IdBlocks::global`]),
/// so servers sharing a process never share a block; each process starts
/// at a random slot, so two servers on one machine rarely do.
#[derive(Debug)]
pub struct IdBlocks {
    used: Mutex<BTreeSet<u32>>,
    first: u32,
}

impl IdBlocks {
    /// The process's allocator.
    pub fn global() -> &'static IdBlocks {
        static BLOCKS: std::sync::OnceLock<IdBlocks> = std::sync::OnceLock::new();
        BLOCKS.get_or_init(|| IdBlocks {
            used: Mutex::default(),
            first: rand::random_range(0..SLOTS),
        })
    }

    /// A free block's base, `None` when all are in use.
    pub fn take(&self) -> Option<u32> {
        let mut used = self.used.lock().ok()?;
        let slot = (0..SLOTS)
            .map(|i| (self.first + i) % SLOTS)
            .find(|s| !used.contains(s))?;
        used.insert(slot);
        Some(SUBID_BASE + slot * SUBID_COUNT)
    }

    /// The block at `base` if it is free (a sandbox whose files belong to
    /// it resuming after a restart).
    pub fn take_exact(&self, base: u32) -> Option<u32> {
        let offset = base.checked_sub(SUBID_BASE)?;
        let slot = offset / SUBID_COUNT;
        if offset % SUBID_COUNT != 0 || slot >= SLOTS {
            return None;
        }
        self.used.lock().ok()?.insert(slot).then_some(base)
    }

    /// Returns a block taken with [`IdBlocks::take`].
    pub fn give_back(&self, base: u32) {
        if let Ok(mut used) = self.used.lock() {
            used.remove(&((base - SUBID_BASE) / SUBID_COUNT));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_map_root_and_user_apart_from_the_host() {
        let blocks = IdBlocks::global();
        let a = blocks.take().unwrap();
        let b = blocks.take().unwrap();
        assert_ne!(a, b);
        blocks.give_back(b);
        let ids = HostIds::Block { base: a };
        assert_eq!(ids.host(SandboxUser::Root), Some((a, a)));
        assert_eq!(ids.host(SandboxUser::User), Some((a + 1000, a + 1000)));
        assert_eq!(ids.maps().uid_map, format!("0 {a} 65536\n"));
        assert!(!ids.maps().deny_setgroups);
        assert_eq!(blocks.take_exact(a), None, "in use");
        assert_eq!(blocks.take_exact(a + 1), None, "not a block");
        blocks.give_back(a);
        assert_eq!(blocks.take_exact(a), Some(a));
        blocks.give_back(a);
    }

    #[test]
    fn an_unprivileged_server_has_no_root_inside() {
        let ids = HostIds::Own { uid: 1234, gid: 99 };
        assert_eq!(ids.host(SandboxUser::User), Some((1234, 99)));
        assert_eq!(ids.host(SandboxUser::Root), None);
        let maps = ids.maps();
        assert_eq!(
            (maps.uid_map.as_str(), maps.gid_map.as_str()),
            ("1000 1234 1\n", "1000 99 1\n")
        );
        assert!(maps.deny_setgroups);
        assert_eq!(SandboxUser::from_name("nobody"), None);
    }
}
