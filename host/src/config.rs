//! [`SandboxConfig`]: the component's lifecycle `config` record exactly as
//! generated from `wit/lifecycle.wit` (one definition of every option and
//! its documentation), with a `Default` that leaves every option unset, so
//! callers set only what they need.

use crate::bindings::{self, KeyValue};

/// Options of a session's sandbox: the WIT `config` record. Every field is
/// optional; an unset one falls back to the `E2B_*` environment variable
/// the official SDK reads, then to E2B's default (see `wit/lifecycle.wit`).
pub type SandboxConfig = bindings::Config;

// bindgen gives derives to every generated type at once (its enums cannot
// derive `Default`), so this one is written out.
#[allow(clippy::derivable_impls)]
impl Default for SandboxConfig {
    fn default() -> Self {
        Self {
            api_key: None,
            template: None,
            metadata: Vec::new(),
            envs: Vec::new(),
            timeout_seconds: None,
            domain: None,
            api_url: None,
            sandbox_url: None,
            request_timeout_ms: None,
            allow_internet_access: None,
            network: None,
            on_timeout: None,
            auto_resume: None,
            volume_mounts: Vec::new(),
            max_output_bytes: None,
            rich_results: None,
            readiness_timeout_ms: None,
            sandbox_id: None,
            tools: None,
            progress: None,
        }
    }
}

impl KeyValue {
    /// A `key=value` pair (metadata, environment variables).
    pub fn new(key: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            value: value.into(),
        }
    }

    /// Pairs as the record holds them.
    pub fn pairs(pairs: &[(String, String)]) -> Vec<KeyValue> {
        pairs.iter().map(|(k, v)| KeyValue::new(k, v)).collect()
    }
}
