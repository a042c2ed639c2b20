//! The contract between the local server's orchestrator (host side) and the
//! envd it starts as the first process inside each sandbox.
//!
//! The orchestrator hands envd one `SOCK_SEQPACKET` socket, whose file
//! descriptor number is envd's one argument ([`CONTROL_FD`] without one). Its first message is an [`EnvdConfig`] in
//! JSON; every later message is a [`port`](encode_port) with one stream
//! socket attached (`SCM_RIGHTS`), the sandbox side of a connection the
//! edge opened for a client: envd serves it itself ([`crate::ENVD_PORT`],
//! [`crate::INTERPRETER_PORT`]) or joins it to that port on the sandbox's
//! own loopback. Either way it first writes one status byte on the stream
//! ([`PORT_OPEN`] or [`PORT_CLOSED`]). envd never sends anything on the
//! control socket: the host side takes no fd, path or answer from the
//! sandbox, only bytes on connections it made.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// envd's control socket's file descriptor when envd gets no argument.
pub const CONTROL_FD: i32 = 3;
/// The largest configuration message (one datagram: under the socket's
/// default send buffer).
pub const MAX_CONFIG_BYTES: usize = 128 << 10;
/// Status byte: the connection is served (the port is open).
pub const PORT_OPEN: u8 = 1;
/// Status byte: nothing listens on that port.
pub const PORT_CLOSED: u8 = 0;
/// Where envd's binary is mounted inside a sandbox (read-only).
pub const ENVD_PATH: &str = "/opt/e2b/envd";
/// The directory of envd's tools inside a sandbox, first on every `PATH`.
pub const TOOLS_DIR: &str = "/opt/e2b/bin";
/// envd's binary again, as the sandbox's `sudo` (it acts as a `sudo`
/// client when called by that name): E2B's templates give `user`
/// passwordless `sudo`, here to the sandbox's own root.
pub const SUDO_PATH: &str = "/opt/e2b/bin/sudo";
/// The sandbox user's uid and gid inside.
pub const USER_ID: u32 = 1000;

/// What envd needs to know about its sandbox, sent once at start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvdConfig {
    /// The sandbox's id.
    pub sandbox_id: String,
    /// The sandbox's `/` as envd sees it: `/` inside a sandbox; the
    /// sandbox's directory when the server runs without isolation.
    pub root: String,
    /// `HOME` of `user` as its processes see it.
    pub home: String,
    /// `PATH` of every process.
    pub path: String,
    /// Sandbox-global environment variables (create's `envVars`).
    pub env_vars: BTreeMap<String, String>,
    /// Which users exist and how envd acts as them.
    pub users: Users,
    /// A file-size limit for every process (bytes), where no disk image
    /// bounds what the sandbox writes.
    pub max_file_size: Option<u64>,
    /// The languages whose default code-interpreter context starts with
    /// the sandbox, as E2B's code-interpreter template starts its Python
    /// and JavaScript kernels, so a first `run_code` finds them running.
    #[serde(default)]
    pub default_contexts: Vec<String>,
}

/// The users of a sandbox, as envd can act for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Users {
    /// envd is the sandbox's `root` (a server running as root gave the
    /// sandbox a uid block): it acts as `root` itself and as `user` by
    /// switching to uid 1000 for commands and owning what it creates.
    Both,
    /// envd is `user` (a server running as an ordinary user has one uid
    /// to give): there is no `root`.
    UserOnly,
    /// No isolation: everything runs as the server's own uid, whatever
    /// name is asked for.
    Host,
}

/// Who a command or a file operation acts as inside the sandbox (envd's
/// `user`: the `Authorization: Basic` user of an RPC, `?username=` of `/files`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SandboxUser {
    /// `user`, uid 1000: the default.
    #[default]
    User,
    /// `root`, uid 0 inside the sandbox's user namespace (never host root).
    Root,
}

impl SandboxUser {
    /// Parses envd's user names; `None` for any other name.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "" | "user" => Some(SandboxUser::User),
            "root" => Some(SandboxUser::Root),
            _ => None,
        }
    }

    /// The uid (and gid) inside the sandbox.
    pub fn inside_id(self) -> u32 {
        match self {
            SandboxUser::User => USER_ID,
            SandboxUser::Root => 0,
        }
    }

    /// The user's home directory, where its relative paths start.
    pub fn home(self) -> &'static str {
        match self {
            SandboxUser::User => crate::HOME_DIR,
            SandboxUser::Root => "/root",
        }
    }

    /// The user's name.
    pub fn name(self) -> &'static str {
        match self {
            SandboxUser::User => "user",
            SandboxUser::Root => "root",
        }
    }
}

/// A control message asking for a connection to `port`.
pub fn encode_port(port: u16) -> [u8; 2] {
    port.to_be_bytes()
}

/// The port of a control message; `None` when it is not one.
pub fn decode_port(message: &[u8]) -> Option<u16> {
    <[u8; 2]>::try_from(message).ok().map(u16::from_be_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_round_trip_and_other_messages_are_refused() {
        for port in [0, 1, 8080, crate::ENVD_PORT, u16::MAX] {
            assert_eq!(decode_port(&encode_port(port)), Some(port));
        }
        assert_eq!(decode_port(b""), None);
        assert_eq!(decode_port(b"123"), None);
    }

    #[test]
    fn users_by_name() {
        assert_eq!(SandboxUser::from_name(""), Some(SandboxUser::User));
        assert_eq!(SandboxUser::from_name("root"), Some(SandboxUser::Root));
        assert_eq!(SandboxUser::from_name("admin"), None);
        assert_eq!(SandboxUser::Root.inside_id(), 0);
    }
}
