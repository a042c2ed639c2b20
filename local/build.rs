//! Builds envd (`local/envd`, the agent each sandbox runs as its first
//! process) and hands its path to the crate as `E2B_LOCAL_ENVD_BINARY`, so
//! every program embedding the local server carries the envd it starts.
//!
//! The same precautions as `host/build.rs` (docs/TOOLCHAIN.md): the nested
//! cargo gets its own `--target-dir` (sharing the outer one deadlocks on
//! the build directory's lock) and none of the outer build's `CARGO_*`,
//! `RUSTFLAGS` or wrappers; `CARGO_MAKEFLAGS` stays, so it joins the
//! jobserver.
//!
//! `E2B_LOCAL_ENVD=/path/to/e2b-envd` embeds a prebuilt envd instead.
//!
//! Packaged (`cargo package`, `cargo install`), the crate has no envd source
//! beside it: it embeds the release envd scripts/dist built for x86-64 Linux
//! and shipped in `prebuilt/`, checked against its sum.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

use e2b_build_support::{outer_target_dir, scrub_environment, shipped};

/// The target the envd a packaged crate ships runs on.
const PREBUILT_TARGET: &str = "x86_64-unknown-linux-gnu";

fn main() {
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let workspace = manifest_dir
        .parent()
        .expect("local/ lives inside the workspace")
        .to_path_buf();
    println!("cargo:rerun-if-env-changed=E2B_LOCAL_ENVD");
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_DIR");
    let binary = match env::var_os("E2B_LOCAL_ENVD") {
        Some(prebuilt) => PathBuf::from(prebuilt),
        None if workspace.join("local/envd/Cargo.toml").is_file() => {
            for input in [
                "local/envd/src",
                "local/envd/Cargo.toml",
                "wire/src",
                "Cargo.lock",
            ] {
                println!("cargo:rerun-if-changed={}", workspace.join(input).display());
            }
            build_envd(&workspace, &outer_target_dir(&workspace).join("envd"))
        }
        None => {
            let target = env::var("TARGET").unwrap_or_default();
            if target != PREBUILT_TARGET {
                panic!(
                    "this packaged e2b-local ships envd for {PREBUILT_TARGET} only, not {target}: \
                     build from the repository, or set E2B_LOCAL_ENVD to an envd built for it"
                );
            }
            shipped(&manifest_dir, "e2b-envd")
        }
    };
    println!("cargo:rerun-if-changed={}", binary.display());
    if !binary.is_file() {
        panic!("envd not found at {}", binary.display());
    }
    println!("cargo:rustc-env=E2B_LOCAL_ENVD_BINARY={}", binary.display());
}

/// Builds envd in release mode into `target_dir`; the binary's path.
fn build_envd(workspace: &Path, target_dir: &Path) -> PathBuf {
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(cargo);
    build
        .current_dir(workspace)
        .args(["build", "--release", "--locked", "-p", "e2b-envd"])
        .arg("--target-dir")
        .arg(target_dir);
    scrub_environment(&mut build);
    let status = build
        .status()
        .unwrap_or_else(|err| panic!("could not run cargo to build envd: {err}"));
    if !status.success() {
        panic!("building envd failed ({status})");
    }
    target_dir.join("release").join("e2b-envd")
}
