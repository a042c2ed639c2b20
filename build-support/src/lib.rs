//! What the build scripts that embed an artifact share (`host/build.rs`
//! embeds the guest components, `local/build.rs` embeds envd):
//!
//! - in the repository, a nested cargo builds the artifact from source: where
//!   the outer build's target directory is, and an environment scrubbed of
//!   the outer build's settings (docs/TOOLCHAIN.md, "Building the guest from
//!   `host/build.rs`");
//! - in a packaged crate (`cargo package`, `cargo install`), where that
//!   source is not, the crate ships the artifact scripts/dist built from it
//!   in `prebuilt/`, with a `SHA256SUMS` that [`shipped`] checks.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

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

/// Where a packaged crate keeps the artifacts scripts/dist built for it.
pub const PREBUILT_DIR: &str = "prebuilt";

/// The prebuilt `name` that the crate at `manifest_dir` ships, after
/// checking it against the crate's `prebuilt/SHA256SUMS` (the sums
/// scripts/dist wrote when it built the artifact from source).
///
/// # Panics
///
/// With a message naming what is missing or changed, as a build script
/// reports errors.
pub fn shipped(manifest_dir: &Path, name: &str) -> PathBuf {
    let dir = manifest_dir.join(PREBUILT_DIR);
    let sums_path = dir.join("SHA256SUMS");
    println!("cargo:rerun-if-changed={}", dir.display());
    let sums = std::fs::read_to_string(&sums_path).unwrap_or_else(|err| {
        panic!(
            "{} is not in this crate ({err}): outside the repository it ships its \
             artifacts in {PREBUILT_DIR}/, which scripts/dist writes before packaging",
            sums_path.display()
        )
    });
    let expected = sums
        .lines()
        .filter_map(|line| line.split_once("  "))
        .find(|(_, file)| *file == name)
        .map(|(sum, _)| sum.to_owned())
        .unwrap_or_else(|| panic!("{} names no {name}", sums_path.display()));
    let path = dir.join(name);
    let bytes =
        std::fs::read(&path).unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()));
    let actual = hex(&Sha256::digest(&bytes));
    if actual != expected {
        panic!(
            "{} does not match {} (sha256 {actual}, expected {expected})",
            path.display(),
            sums_path.display()
        );
    }
    path
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}
