//! Builds the guest components (the workspace's root package) for
//! `wasm32-wasip2`, the embedding world and the stateless one, and hands
//! their paths to the host crate as `E2B_TOOLS_EMBEDDED_COMPONENT` and
//! `E2B_TOOLS_EMBEDDED_STATELESS`, so the `e2b-tools` binary embeds them and
//! is self-contained.
//!
//! Precautions (docs/TOOLCHAIN.md, "Building the guest from
//! `host/build.rs`"):
//! - the nested cargo gets its own `--target-dir`: sharing the outer one
//!   deadlocks on the build-directory lock;
//! - `CARGO_*` (except `CARGO_HOME` and `CARGO_MAKEFLAGS`), `RUSTFLAGS` and
//!   the wrappers clippy installs are removed from its environment, or the
//!   host's flags leak into the wasm build;
//! - `CARGO_MAKEFLAGS` is kept so the nested build joins the jobserver.
//!
//! Set `E2B_TOOLS_GUEST_WASM=/path/to/component.wasm` (and
//! `E2B_TOOLS_GUEST_STATELESS_WASM` for the stateless one) to embed a
//! prebuilt component instead of building one.
//!
//! Packaged (`cargo package`, `cargo install`), the crate has no guest source
//! beside it: it embeds the release components scripts/dist built from the
//! source and shipped in `prebuilt/`, checked against their sums.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

use e2b_build_support::{outer_target_dir, scrub_environment, shipped};

const GUEST_PACKAGE: &str = "e2b-tools-component";
const GUEST_ARTIFACT: &str = "e2b_tools.wasm";
const WASM_TARGET: &str = "wasm32-wasip2";

fn main() {
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let workspace = manifest_dir
        .parent()
        .expect("host/ lives inside the workspace")
        .to_path_buf();

    // The guest's source is there in the repository, not in a packaged crate.
    let in_repository = workspace.join("wit").is_dir() && workspace.join("src").is_dir();
    if in_repository {
        for input in [
            "src",
            "wit",
            "build.rs",
            "wire/src",
            "wire/Cargo.toml",
            "Cargo.toml",
            "Cargo.lock",
        ] {
            println!("cargo:rerun-if-changed={}", workspace.join(input).display());
        }
    }
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_DIR");
    let target_dir = outer_target_dir(&workspace);
    // The embedding world, and the stateless one (`--features stateless`);
    // shipped under the names scripts/dist gives them in dist/.
    for (var, rustc_env, features, dir, shipped_name) in [
        (
            "E2B_TOOLS_GUEST_WASM",
            "E2B_TOOLS_EMBEDDED_COMPONENT",
            None,
            "guest",
            "e2b_tools.wasm",
        ),
        (
            "E2B_TOOLS_GUEST_STATELESS_WASM",
            "E2B_TOOLS_EMBEDDED_STATELESS",
            Some("stateless"),
            "guest-stateless",
            "e2b_tools_stateless.wasm",
        ),
    ] {
        println!("cargo:rerun-if-env-changed={var}");
        let wasm = match env::var_os(var) {
            Some(prebuilt) => {
                let prebuilt = PathBuf::from(prebuilt);
                println!("cargo:rerun-if-changed={}", prebuilt.display());
                prebuilt
            }
            None if in_repository => build_guest(&workspace, features, &target_dir.join(dir)),
            None => shipped(&manifest_dir, shipped_name),
        };
        embed(rustc_env, &wasm);
    }
}

/// Builds the guest with `features` into `target_dir`; its component path.
fn build_guest(workspace: &Path, features: Option<&str>, target_dir: &Path) -> PathBuf {
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(cargo);
    build
        .current_dir(workspace)
        .args([
            "build",
            "--release",
            "-p",
            GUEST_PACKAGE,
            "--target",
            WASM_TARGET,
        ])
        .arg("--target-dir")
        .arg(target_dir);
    if let Some(features) = features {
        build.args(["--features", features]);
    }
    scrub_environment(&mut build);

    let status = build
        .status()
        .unwrap_or_else(|err| panic!("could not run cargo to build the guest component: {err}"));
    if !status.success() {
        panic!(
            "building the guest component failed ({status}); \
             is the target installed? `rustup target add {WASM_TARGET}`"
        );
    }
    target_dir
        .join(WASM_TARGET)
        .join("release")
        .join(GUEST_ARTIFACT)
}

fn embed(rustc_env: &str, wasm: &Path) {
    if !wasm.is_file() {
        panic!("guest component not found at {}", wasm.display());
    }
    println!("cargo:rustc-env={rustc_env}={}", wasm.display());
}
