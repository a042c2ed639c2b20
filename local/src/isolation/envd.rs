//! The envd binary every sandbox runs as its first process: built from
//! `local/envd` by `build.rs`, embedded here, and written once per server
//! into its data directory, from where bubblewrap binds it read-only into
//! each sandbox at [`ENVD_PATH`](e2b_wire::envd_setup::ENVD_PATH).

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// envd, as `build.rs` built it.
static ENVD: &[u8] = include_bytes!(env!("E2B_LOCAL_ENVD_BINARY"));

/// Under the data directory: envd's binary.
pub const ENVD_DIR: &str = ".envd";

/// Writes envd into `data_dir` (readable and executable by every
/// sandbox's uid, writable by the server alone); its path.
pub fn install(data_dir: &Path) -> std::io::Result<PathBuf> {
    let dir = data_dir.join(ENVD_DIR);
    std::fs::create_dir_all(&dir)?;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))?;
    let path = dir.join("e2b-envd");
    let mut file = tempfile::NamedTempFile::new_in(&dir)?;
    file.write_all(ENVD)?;
    file.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o755))?;
    file.persist(&path).map_err(|e| e.error)?;
    Ok(path)
}
