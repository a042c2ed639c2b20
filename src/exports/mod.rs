//! The component's entry points: the wit-bindgen glue of the embedding
//! world (a default build) or of the stateless world
//! (`--features stateless`), the WIT conversions they share, and the
//! stateless world's per-call entry ([`per_call`], native too, so tested).

pub mod per_call;

// One component per build: the embedding world by default, the stateless
// world with `--features stateless`.
#[cfg(all(target_arch = "wasm32", not(feature = "stateless")))]
mod convert;
#[cfg(all(target_arch = "wasm32", not(feature = "stateless")))]
mod embedding;
#[cfg(all(target_arch = "wasm32", feature = "stateless"))]
mod stateless;
#[cfg(all(target_arch = "wasm32", not(feature = "stateless")))]
mod wit;
