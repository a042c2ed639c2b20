//! A cache of compiled components that a later process maps instead of
//! reading.
//!
//! Why not only wasmtime's own cache: it stores zstd-compressed artifacts,
//! so every process start decompresses the whole machine code into the heap
//! and copies it again into executable memory — most of a short-lived CLI
//! call's time and peak RSS. Here the artifact is stored uncompressed and
//! loaded with `Component::deserialize_file`, which maps the file: pages are
//! read lazily and shared with the page cache.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use wasmtime::component::Component;
use wasmtime::Engine;

/// The cache file for `bytes` compiled by `engine`, in `dir`: the name
/// hashes the component, this crate's version and the engine's settings,
/// so a change of any of them is a miss, never a wrong artifact.
pub(crate) fn artifact_path(dir: &Path, engine: &Engine, bytes: &[u8]) -> PathBuf {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    env!("CARGO_PKG_VERSION").hash(&mut hasher);
    engine.precompile_compatibility_hash().hash(&mut hasher);
    bytes.len().hash(&mut hasher);
    bytes.hash(&mut hasher);
    dir.join(format!("component-{:016x}.cwasm", hasher.finish()))
}

/// The default cache directory: `$XDG_CACHE_HOME/e2b-tools`, else
/// `$HOME/.cache/e2b-tools`.
pub(crate) fn default_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|home| PathBuf::from(home).join(".cache"))
        })?;
    Some(base.join("e2b-tools"))
}

/// Loads the artifact at `path` if there is a usable one.
pub(crate) fn load(engine: &Engine, path: &Path) -> Option<Component> {
    if !path.is_file() {
        return None;
    }
    // SAFETY: the file is one this module wrote (`store`, atomically, under
    // the user's own cache directory) for this exact engine configuration
    // and component: the same trust wasmtime's own cache places in its
    // directory. wasmtime still checks the header and the engine
    // compatibility and fails (a miss here) on a mismatch.
    #[allow(unsafe_code)]
    let loaded = unsafe { Component::deserialize_file(engine, path) };
    match loaded {
        Ok(component) => Some(component),
        Err(err) => {
            tracing::debug!(path = %path.display(), error = %err, "compiled component not reusable");
            None
        }
    }
}

/// Stores `component`'s artifact at `path` (best effort: a failure only
/// costs the next process a compile).
pub(crate) fn store(component: &Component, path: &Path) {
    let result = (|| -> std::io::Result<()> {
        let bytes = component.serialize().map_err(std::io::Error::other)?;
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        // Write then rename: a concurrent process never maps half a file.
        let temp = dir.join(format!(
            ".{}.{}.tmp",
            path.file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("artifact"),
            std::process::id()
        ));
        std::fs::write(&temp, bytes)?;
        std::fs::rename(&temp, path)
    })();
    if let Err(err) = result {
        tracing::debug!(path = %path.display(), error = %err, "cannot cache the compiled component");
    }
}
