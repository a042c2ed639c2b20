//! What the build scripts that run a nested cargo share (`host/build.rs`
//! builds the guest components, `local/build.rs` builds envd): where the
//! outer build's target directory is, and an environment scrubbed of the
//! outer build's settings (docs/TOOLCHAIN.md, "Building the guest from
//! `host/build.rs`"). Included with `#[path]`: build scripts have no crate
//! to share.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The target directory of the outer build, so a nested build's lands
/// beside it.
pub fn outer_target_dir(workspace: &Path) -> PathBuf {
    match env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() {
                dir
            } else {
                workspace.join(dir)
            }
        }
        None => workspace.join("target"),
    }
}

/// Removes what the outer cargo set for this build script and would
/// otherwise steer the nested build.
pub fn scrub_environment(build: &mut Command) {
    for (key, _) in env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        let leaks_from_outer_build =
            (key.starts_with("CARGO_") && key != "CARGO_HOME" && key != "CARGO_MAKEFLAGS")
                || matches!(
                    key,
                    "RUSTFLAGS"
                        | "RUSTC_WRAPPER"
                        | "RUSTC_WORKSPACE_WRAPPER"
                        | "TARGET"
                        | "HOST"
                        | "OUT_DIR"
                        | "OPT_LEVEL"
                        | "PROFILE"
                        | "DEBUG"
                        | "NUM_JOBS"
                );
        if leaks_from_outer_build {
            build.env_remove(key);
        }
    }
}
