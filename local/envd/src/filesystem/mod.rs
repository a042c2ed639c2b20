//! `filesystem.Filesystem` and `/files`: the sandbox's files as the acting
//! user, resolved beneath the sandbox's root, with metadata and watchers.

pub mod entry;
pub mod files_http;
pub mod metadata;
pub mod owners;
pub mod rpc;
pub mod sandbox_fs;
pub mod watch;
