//! Control-plane REST bodies (`/v2/sandboxes`, `/sandboxes/{id}/…`).
//!
//! Key spellings follow E2B exactly: camelCase except the create body's
//! `allow_internet_access`, and `SandboxDetail`'s `allowInternetAccess`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The template of the code-interpreter sandbox class.
pub const DEFAULT_TEMPLATE: &str = "code-interpreter-v1";
/// The v2 create endpoint's default timeout when none is sent.
pub const DEFAULT_TIMEOUT_V2: u32 = 300;
/// The v1 create endpoint's default timeout when none is sent.
pub const DEFAULT_TIMEOUT_V1: u32 = 15;

/// `POST /v2/sandboxes` and `POST /sandboxes` body (`NewSandbox`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSandbox {
    /// Template ID or alias.
    #[serde(rename = "templateID")]
    pub template_id: String,
    /// TTL in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<i64>,
    /// Metadata.
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    /// Sandbox-global environment variables.
    #[serde(default)]
    pub env_vars: BTreeMap<String, String>,
    /// v1 only: issue an access token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secure: Option<bool>,
    /// Internet access (snake_case on the wire).
    #[serde(
        rename = "allow_internet_access",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub allow_internet_access: Option<bool>,
    /// Pause instead of kill at the timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_pause: Option<bool>,
    /// Keep memory when pausing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_pause_memory: Option<bool>,
    /// `{"enabled": bool}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_resume: Option<AutoResume>,
    /// Network rules (stored and echoed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<serde_json::Value>,
    /// MCP gateway config (stored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp: Option<serde_json::Value>,
    /// IAM tokens (stored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iam: Option<serde_json::Value>,
    /// Volumes to mount (stored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_mounts: Option<Vec<VolumeMount>>,
}

/// `{"enabled": bool}`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AutoResume {
    /// Whether a paused sandbox resumes on use.
    pub enabled: bool,
}

/// A volume mount.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VolumeMount {
    /// Volume name.
    pub name: String,
    /// Mount path.
    pub path: String,
}

/// `Sandbox`: the answer to create and connect.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Sandbox {
    /// Template ID.
    #[serde(rename = "templateID")]
    pub template_id: String,
    /// Sandbox ID (lowercase alphanumeric).
    #[serde(rename = "sandboxID")]
    pub sandbox_id: String,
    /// Legacy client ID.
    #[serde(rename = "clientID")]
    pub client_id: String,
    /// envd version (PEP 440).
    pub envd_version: String,
    /// Template alias.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alias: Option<String>,
    /// Token for `X-Access-Token` on sandbox requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envd_access_token: Option<String>,
    /// Token for preview traffic when public traffic is off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traffic_access_token: Option<String>,
    /// Base domain of sandbox URLs; null means the client's.
    #[serde(default)]
    pub domain: Option<String>,
}

/// One sample of `GET /sandboxes/{id}/metrics` (`SandboxMetric`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxMetric {
    /// When it was taken (RFC 3339).
    pub timestamp: String,
    /// The same, in seconds since the Unix epoch.
    pub timestamp_unix: i64,
    /// CPUs the sandbox may use.
    pub cpu_count: u32,
    /// CPU use since the previous sample, in percent of those CPUs.
    pub cpu_used_pct: f64,
    /// Memory in use, in bytes.
    pub mem_used: u64,
    /// Memory the sandbox may use, in bytes.
    pub mem_total: u64,
    /// Of `mem_used`, page cache, in bytes.
    pub mem_cache: u64,
    /// Disk in use, in bytes.
    pub disk_used: u64,
    /// Disk size, in bytes.
    pub disk_total: u64,
}

/// `GET /sandboxes/metrics`: the latest metric of each sandbox asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SandboxesWithMetrics {
    /// By sandbox id.
    pub sandboxes: std::collections::BTreeMap<String, SandboxMetric>,
}

/// `SandboxDetail` (`GET /sandboxes/{id}`) and, without the token,
/// `ListedSandbox` (`GET /v2/sandboxes`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxDetail {
    /// Template ID.
    #[serde(rename = "templateID")]
    pub template_id: String,
    /// Sandbox ID.
    #[serde(rename = "sandboxID")]
    pub sandbox_id: String,
    /// Legacy client ID.
    #[serde(rename = "clientID")]
    pub client_id: String,
    /// RFC 3339 start time.
    pub started_at: String,
    /// RFC 3339 expiry time.
    pub end_at: String,
    /// envd version.
    pub envd_version: String,
    /// CPUs.
    pub cpu_count: u32,
    /// Memory.
    #[serde(rename = "memoryMB")]
    pub memory_mb: u32,
    /// Disk.
    #[serde(rename = "diskSizeMB")]
    pub disk_size_mb: u32,
    /// `running` or `paused`.
    pub state: String,
    /// Template alias.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alias: Option<String>,
    /// Access token (detail only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envd_access_token: Option<String>,
    /// Internet access.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_internet_access: Option<bool>,
    /// Domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// Metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<BTreeMap<String, String>>,
    /// Network rules as created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<serde_json::Value>,
    /// `{"autoResume": bool, "onTimeout": "kill"|"pause"}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<serde_json::Value>,
    /// Volumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_mounts: Option<Vec<VolumeMount>>,
}

/// `POST /sandboxes/{id}/timeout` body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetTimeout {
    /// New TTL from now, in seconds.
    pub timeout: i64,
}

/// `POST [/v2]/sandboxes/{id}/connect` body.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectSandbox {
    /// TTL in seconds (never shortens a running sandbox's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<i64>,
    /// Resume with memory (false = reboot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<bool>,
}

/// `POST /sandboxes/{id}/pause` body (`SandboxPauseRequest`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PauseRequest {
    /// Keep memory (the default); false keeps only the filesystem, and the
    /// resume cold-boots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<bool>,
}

/// `POST /sandboxes/{id}/snapshots` body (`SandboxSnapshotRequest`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotRequest {
    /// A name for the snapshot (its names then carry it); none gives an
    /// id alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Whether memory is captured too (`false`: the filesystem only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<bool>,
}

/// A snapshot (`SnapshotInfo`): the answer to a snapshot, and each entry
/// of `GET /snapshots`. Its id is a template id: `POST /v2/sandboxes`
/// with it as `templateID` starts a sandbox from it, and
/// `DELETE /templates/{id}` deletes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotInfo {
    /// The snapshot's id, tag included (`abc123:default`, or
    /// `<team>/<name>:default` when named).
    #[serde(rename = "snapshotID")]
    pub snapshot_id: String,
    /// Its full names (team, name and tag), empty when unnamed.
    #[serde(default)]
    pub names: Vec<String>,
}

/// `POST /sandboxes/{id}/fork` body (`SandboxForkRequest`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForkRequest {
    /// The forks' TTL in seconds (E2B's default: 15).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<i64>,
    /// How many forks (1 to 100 on the API; one snapshot for all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
}

/// One fork's outcome (`SandboxForkResult`): exactly one of the two is set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForkResult {
    /// The fork, started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<Sandbox>,
    /// Why this fork did not start (the others may have).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ApiError>,
}

/// The header of create's idempotency key (1–255 of `[a-z0-9-]`): a create
/// repeated with the same key answers the sandbox the first one made, so
/// a create whose connection broke can be retried.
pub const IDEMPOTENCY_KEY_HEADER: &str = "Idempotency-Key";

/// The fork's default TTL when none is sent (E2B's).
pub const DEFAULT_FORK_TIMEOUT: u32 = 15;

/// Every control-plane error body (and envd's REST errors).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiError {
    /// The HTTP status as an integer.
    pub code: u16,
    /// What went wrong.
    pub message: String,
}

/// The edge proxy's answer for an unknown, killed or expired sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProxyError {
    /// The sandbox asked for.
    pub sandbox_id: String,
    /// `The sandbox was not found`.
    pub message: String,
    /// 502.
    pub code: u16,
}

/// The proxy's message for a sandbox that is gone.
pub const SANDBOX_NOT_FOUND_MESSAGE: &str = "The sandbox was not found";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_body_matches_captured_sdk_body() {
        let captured = r#"{"templateID":"code-interpreter-v1","timeout":600,"metadata":{"purpose":"x"},"envVars":{"A":"1"}}"#;
        let body: NewSandbox = serde_json::from_str(captured).unwrap();
        assert_eq!(body.timeout, Some(600));
        assert_eq!(serde_json::to_string(&body).unwrap(), captured);
        let snake: NewSandbox = serde_json::from_str(
            r#"{"templateID":"t","allow_internet_access":false,"autoResume":{"enabled":true}}"#,
        )
        .unwrap();
        assert_eq!(snake.allow_internet_access, Some(false));
        assert_eq!(snake.auto_resume, Some(AutoResume { enabled: true }));
    }

    #[test]
    fn snapshot_and_fork_bodies_match_the_api() {
        let info: SnapshotInfo =
            serde_json::from_str(r#"{"snapshotID":"t/n:default","names":["t/n:default"]}"#)
                .unwrap();
        assert_eq!(info.snapshot_id, "t/n:default");
        assert_eq!(
            serde_json::to_string(&ForkRequest {
                timeout: None,
                count: Some(2)
            })
            .unwrap(),
            r#"{"count":2}"#
        );
        assert_eq!(
            serde_json::to_string(&SnapshotRequest::default()).unwrap(),
            "{}"
        );
        let failed: ForkResult =
            serde_json::from_str(r#"{"error":{"code":429,"message":"busy"}}"#).unwrap();
        assert_eq!(failed.error.map(|e| e.code), Some(429));
        assert!(failed.sandbox.is_none());
    }

    #[test]
    fn sandbox_has_the_keys_the_sdk_requires() {
        let s = Sandbox {
            template_id: "t".into(),
            sandbox_id: "abc".into(),
            client_id: "local".into(),
            envd_version: "0.6.13".into(),
            alias: None,
            envd_access_token: Some("tok".into()),
            traffic_access_token: None,
            domain: None,
        };
        let v: serde_json::Value = serde_json::to_value(&s).unwrap();
        for key in [
            "templateID",
            "sandboxID",
            "clientID",
            "envdVersion",
            "envdAccessToken",
        ] {
            assert!(v.get(key).is_some(), "{key}");
        }
        assert!(v.get("domain").unwrap().is_null());
    }
}
