//! How the files API names owners: ids as the sandbox sees them.

use e2b_wire::envd_setup::USER_ID;

/// The id an unmapped host id shows as inside a user namespace.
const OVERFLOW_ID: u32 = 65_534;

/// One line of a user namespace's `uid_map`/`gid_map`: `count` ids from
/// `inside` are the host ids from `host`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IdMap {
    /// First id inside the sandbox.
    pub inside: u32,
    /// The host id it is.
    pub host: u32,
    /// How many ids follow.
    pub count: u32,
}

impl IdMap {
    /// The id inside that `host_id` is, `None` when it is not mapped.
    pub(super) fn inside_of(self, host_id: u32) -> Option<u32> {
        host_id
            .checked_sub(self.host)
            .filter(|offset| *offset < self.count)
            .map(|offset| self.inside + offset)
    }
}

/// How `EntryInfo.owner`/`group` name the host ids the server sees: by
/// the name the id has inside the sandbox (`root`, `user`, else its
/// number; `nobody` when unmapped, as the kernel shows it inside).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OwnerNames {
    /// The sandbox's uid map.
    pub uids: IdMap,
    /// The sandbox's gid map.
    pub gids: IdMap,
}

impl OwnerNames {
    /// Names as envd sees ids inside its sandbox: each id is itself.
    pub fn inside() -> Self {
        let all = IdMap {
            inside: 0,
            host: 0,
            count: u32::MAX,
        };
        Self {
            uids: all,
            gids: all,
        }
    }

    /// Only host `uid`/`gid` are mapped, as `user`.
    pub fn single_user(uid: u32, gid: u32) -> Self {
        let one = |host| IdMap {
            inside: USER_ID,
            host,
            count: 1,
        };
        Self {
            uids: one(uid),
            gids: one(gid),
        }
    }

    /// The owner name of host uid `uid`.
    pub fn owner(&self, uid: u32) -> String {
        inside_name(self.uids.inside_of(uid))
    }

    /// The group name of host gid `gid`.
    pub fn group(&self, gid: u32) -> String {
        inside_name(self.gids.inside_of(gid))
    }
}

fn inside_name(id: Option<u32>) -> String {
    match id {
        Some(0) => "root".into(),
        Some(USER_ID) => "user".into(),
        // The kernel's overflow id: a host id the sandbox does not map.
        Some(OVERFLOW_ID) | None => "nobody".into(),
        Some(id) => id.to_string(),
    }
}
