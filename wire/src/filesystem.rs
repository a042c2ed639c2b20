//! envd's `filesystem.Filesystem` service messages (proto3 JSON) and the
//! `/files` REST answer.

use serde::{Deserialize, Serialize};

use crate::proto_json::{int64, is_default};

/// Path of the Stat RPC.
pub const STAT_PATH: &str = "/filesystem.Filesystem/Stat";
/// Path of the ListDir RPC.
pub const LIST_DIR_PATH: &str = "/filesystem.Filesystem/ListDir";
/// Path of the MakeDir RPC.
pub const MAKE_DIR_PATH: &str = "/filesystem.Filesystem/MakeDir";
/// Path of the Move RPC.
pub const MOVE_PATH: &str = "/filesystem.Filesystem/Move";
/// Path of the Remove RPC.
pub const REMOVE_PATH: &str = "/filesystem.Filesystem/Remove";

/// `FileType`, by enum name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub enum FileType {
    #[default]
    #[serde(rename = "FILE_TYPE_UNSPECIFIED")]
    Unspecified,
    #[serde(rename = "FILE_TYPE_FILE")]
    File,
    #[serde(rename = "FILE_TYPE_DIRECTORY")]
    Directory,
    #[serde(rename = "FILE_TYPE_SYMLINK")]
    Symlink,
}

/// `EntryInfo`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EntryInfo {
    /// Base name.
    pub name: String,
    /// Type.
    #[serde(default, rename = "type", skip_serializing_if = "is_default")]
    pub file_type: FileType,
    /// Absolute path.
    #[serde(default)]
    pub path: String,
    /// Size in bytes (int64: a JSON string).
    #[serde(default, with = "int64", skip_serializing_if = "is_default")]
    pub size: i64,
    /// Unix mode bits, Go-style (directories carry `1 << 31`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub mode: u32,
    /// `ls -l` style permissions, e.g. `-rw-r--r--`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub permissions: String,
    /// Owner name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub owner: String,
    /// Group name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// RFC 3339 modification time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified_time: Option<String>,
    /// Target of a symlink.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symlink_target: Option<String>,
}

/// Requests naming one path (`Stat`, `MakeDir`, `Remove`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathRequest {
    /// The path (relative paths resolve against the home directory).
    pub path: String,
}

/// `ListDirRequest`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListDirRequest {
    /// The directory.
    pub path: String,
    /// Depth; 0 means 1.
    #[serde(default, skip_serializing_if = "is_default")]
    pub depth: u32,
}

/// `ListDirResponse`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ListDirResponse {
    /// The entries.
    #[serde(default)]
    pub entries: Vec<EntryInfo>,
}

/// `MoveRequest`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MoveRequest {
    /// From.
    pub source: String,
    /// To.
    pub destination: String,
}

/// `StatResponse`, `MakeDirResponse`, `MoveResponse`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EntryResponse {
    /// The entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<EntryInfo>,
}

/// One element of the JSON array `POST /files` answers with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteInfo {
    /// Absolute path written.
    pub path: String,
    /// Its base name.
    pub name: String,
    /// Always `file`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub file_type: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_info_size_is_a_string_and_zeros_are_omitted() {
        let e = EntryInfo {
            name: "a.txt".into(),
            file_type: FileType::File,
            path: "/tmp/a.txt".into(),
            size: 5,
            ..Default::default()
        };
        let json = serde_json::to_string(&e).unwrap();
        assert_eq!(
            json,
            r#"{"name":"a.txt","type":"FILE_TYPE_FILE","path":"/tmp/a.txt","size":"5"}"#
        );
        let back: EntryInfo =
            serde_json::from_str(r#"{"name":"d","type":"FILE_TYPE_DIRECTORY","size":4096}"#)
                .unwrap();
        assert_eq!(back.size, 4096);
        assert_eq!(back.file_type, FileType::Directory);
    }
}
