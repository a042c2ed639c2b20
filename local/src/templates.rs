//! The templates the local server has built in.

/// The templates the local server knows, by E2B's public aliases: `base`
/// (the SDK's default) and `code-interpreter-v1` (the code interpreter's).
/// Both run on the host's own software under the sandbox's isolation;
/// `code-interpreter-v1` adds its Python environment where `scripts/bootstrap`
/// installed it (`isolation::rootfs::TemplateEnvs`, local/README.md).
/// A snapshot's id or name is a template too (`crate::snapshots`).
pub const TEMPLATES: [&str; 2] = ["base", e2b_wire::api::DEFAULT_TEMPLATE];
