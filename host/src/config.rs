//! [`SandboxConfig`]: the component's lifecycle `config` record as a plain
//! Rust struct with a `Default`, so callers set only what they need.

use crate::bindings;

/// What happens to the sandbox when its timeout passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnTimeout {
    /// The sandbox and its files are destroyed (E2B's default).
    Kill,
    /// The sandbox is paused; a later `sandbox_id` resume reconnects to it.
    Pause,
}

/// Outbound network rules of the sandbox, passed to E2B as given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetworkRules {
    /// CIDRs or domains the sandbox may reach even when denied below.
    pub allow_out: Vec<String>,
    /// CIDRs the sandbox may not reach (`0.0.0.0/0` denies all).
    pub deny_out: Vec<String>,
    /// Whether preview URLs are reachable without the traffic token.
    pub allow_public_traffic: Option<bool>,
    /// Host header sent to the sandbox's services (`${PORT}` is replaced).
    pub mask_request_host: Option<String>,
}

/// Options of a session's sandbox. Every field is optional; an unset one
/// falls back to the `E2B_*` environment variable the official SDK reads,
/// then to E2B's default (see `wit/lifecycle.wit`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxConfig {
    /// E2B API key. Default: `E2B_API_KEY`.
    pub api_key: Option<String>,
    /// Sandbox template. Default: `code-interpreter-v1`.
    pub template: Option<String>,
    /// Metadata attached to the sandbox.
    pub metadata: Vec<(String, String)>,
    /// Environment variables of every process in the sandbox.
    pub envs: Vec<(String, String)>,
    /// Sandbox timeout in seconds after the last activity. Default: 300.
    pub timeout_seconds: Option<u32>,
    /// E2B domain. Default: `E2B_DOMAIN`, then `e2b.app`.
    pub domain: Option<String>,
    /// Control-plane URL. Default: `E2B_API_URL`, then `https://api.<domain>`.
    pub api_url: Option<String>,
    /// One URL for all sandbox traffic. Default: `E2B_SANDBOX_URL`.
    pub sandbox_url: Option<String>,
    /// Timeout of each non-execution HTTP request in ms; 0 disables it.
    pub request_timeout_ms: Option<u32>,
    /// Whether the sandbox may reach the internet.
    pub allow_internet_access: Option<bool>,
    /// Outbound network rules of the sandbox.
    pub network: Option<NetworkRules>,
    /// What happens at the timeout.
    pub on_timeout: Option<OnTimeout>,
    /// Resume a paused sandbox automatically when it is used again.
    pub auto_resume: Option<bool>,
    /// Volumes to mount: (name, path).
    pub volume_mounts: Vec<(String, String)>,
    /// Bytes kept of each output field before the truncation marker.
    pub max_output_bytes: Option<u32>,
    /// Return images, HTML and JSON from `run_code` as well as text.
    pub rich_results: Option<bool>,
    /// How long `start_background_command` waits for its port, in ms.
    pub readiness_timeout_ms: Option<u32>,
    /// Attach to (and resume) this existing sandbox instead of creating one.
    pub sandbox_id: Option<String>,
}

fn key_values(pairs: &[(String, String)]) -> Vec<bindings::KeyValue> {
    pairs
        .iter()
        .map(|(key, value)| bindings::KeyValue {
            key: key.clone(),
            value: value.clone(),
        })
        .collect()
}

impl From<&SandboxConfig> for bindings::Config {
    fn from(c: &SandboxConfig) -> Self {
        bindings::Config {
            api_key: c.api_key.clone(),
            template: c.template.clone(),
            metadata: key_values(&c.metadata),
            envs: key_values(&c.envs),
            timeout_seconds: c.timeout_seconds,
            domain: c.domain.clone(),
            api_url: c.api_url.clone(),
            sandbox_url: c.sandbox_url.clone(),
            request_timeout_ms: c.request_timeout_ms,
            allow_internet_access: c.allow_internet_access,
            network: c.network.as_ref().map(|n| bindings::NetworkRules {
                allow_out: n.allow_out.clone(),
                deny_out: n.deny_out.clone(),
                allow_public_traffic: n.allow_public_traffic,
                mask_request_host: n.mask_request_host.clone(),
            }),
            on_timeout: c.on_timeout.map(|o| match o {
                OnTimeout::Kill => bindings::OnTimeout::Kill,
                OnTimeout::Pause => bindings::OnTimeout::Pause,
            }),
            auto_resume: c.auto_resume,
            volume_mounts: c
                .volume_mounts
                .iter()
                .map(|(name, path)| bindings::VolumeMount {
                    name: name.clone(),
                    path: path.clone(),
                })
                .collect(),
            max_output_bytes: c.max_output_bytes,
            rich_results: c.rich_results,
            readiness_timeout_ms: c.readiness_timeout_ms,
            sandbox_id: c.sandbox_id.clone(),
        }
    }
}
