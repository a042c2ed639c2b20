//! The instance's options: `configure()`'s record merged with the `E2B_*`
//! environment variables the official SDK reads, and the URLs they imply
//! (docs/PROTOCOL.md §2.1, §3.2).

use std::collections::BTreeMap;

pub use tool_set::{ToolName, ToolSet};

use e2b_wire::host_guest::env as vars;

use crate::errors::ToolError;

mod tool_set;

/// E2B's default domain.
pub const DEFAULT_DOMAIN: &str = "e2b.app";
/// Sandbox TTL when none is configured (the SDK's `default_sandbox_timeout`).
pub const DEFAULT_TTL_SECONDS: u32 = 300;
/// e2b-adk's default bound for one output field, in bytes.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 10_000;
/// Timeout of non-execution requests (the SDK's `request_timeout`).
pub const DEFAULT_REQUEST_TIMEOUT_MS: u32 = 60_000;
/// How long `start_background_command` waits for its port.
pub const DEFAULT_READINESS_TIMEOUT_MS: u32 = 10_000;

/// Domains whose sandboxes are reached through the shared `sandbox.<domain>`
/// host with routing headers (Python SDK 2.63's list).
const OFFICIAL_DOMAINS: &[&str] = &[
    "e2b.app",
    "e2b.dev",
    "e2b.pro",
    "e2b-staging.dev",
    "e2b-tango.dev",
    "e2b-juliett.dev",
    "foxtrot-2.e2b.dev",
];

/// Outbound network rules, passed through to E2B.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetworkRules {
    /// Allowed CIDRs or domains.
    pub allow_out: Vec<String>,
    /// Denied CIDRs.
    pub deny_out: Vec<String>,
    /// Preview URLs reachable without the traffic token.
    pub allow_public_traffic: Option<bool>,
    /// Host header for the sandbox's services.
    pub mask_request_host: Option<String>,
}

/// What happens to the sandbox at its timeout (the WIT `on-timeout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnTimeout {
    /// It is killed, its files gone (E2B's default).
    Kill,
    /// It is paused; connecting to it by id resumes it.
    Pause,
}

/// `configure()`'s argument, every field optional (mirrors the WIT record).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigInput {
    /// API key.
    pub api_key: Option<String>,
    /// Template.
    pub template: Option<String>,
    /// Metadata.
    pub metadata: Vec<(String, String)>,
    /// Sandbox-global environment variables.
    pub envs: Vec<(String, String)>,
    /// Sandbox TTL in seconds.
    pub timeout_seconds: Option<u32>,
    /// E2B domain.
    pub domain: Option<String>,
    /// Control-plane URL.
    pub api_url: Option<String>,
    /// One URL for all sandbox traffic.
    pub sandbox_url: Option<String>,
    /// Request timeout in ms (0: none).
    pub request_timeout_ms: Option<u32>,
    /// Internet access.
    pub allow_internet_access: Option<bool>,
    /// Network rules.
    pub network: Option<NetworkRules>,
    /// What happens at the timeout; `None`: E2B's default (kill).
    pub on_timeout: Option<OnTimeout>,
    /// Resume automatically when paused.
    pub auto_resume: Option<bool>,
    /// Volume mounts `(name, path)`.
    pub volume_mounts: Vec<(String, String)>,
    /// Bytes kept per output field.
    pub max_output_bytes: Option<u32>,
    /// Rich results from run_code.
    pub rich_results: Option<bool>,
    /// Readiness wait in ms.
    pub readiness_timeout_ms: Option<u32>,
    /// Attach to this sandbox.
    pub sandbox_id: Option<String>,
    /// The enabled tools' names (`default`, `all` allowed). Default:
    /// `E2B_TOOLS_ENABLED` ([`vars::ENABLED`]), then e2b-adk's six.
    pub tools: Option<Vec<String>>,
    /// Report progress events while calls run.
    pub progress: Option<bool>,
}

/// The resolved options of the instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// API key, if any (checked when a sandbox is needed).
    pub api_key: Option<String>,
    /// Template of new sandboxes.
    pub template: String,
    /// Metadata of new sandboxes.
    pub metadata: BTreeMap<String, String>,
    /// Environment of new sandboxes.
    pub envs: BTreeMap<String, String>,
    /// The TTL as configured (sent at create only when set).
    pub configured_ttl: Option<u32>,
    /// E2B domain.
    pub domain: String,
    /// Control-plane base URL, without a trailing slash.
    pub api_url: String,
    /// Shared sandbox URL, without a trailing slash.
    pub sandbox_url: Option<String>,
    /// Timeout of non-execution requests in ms; 0 = none.
    pub request_timeout_ms: u32,
    /// Internet access.
    pub allow_internet_access: Option<bool>,
    /// Network rules.
    pub network: Option<NetworkRules>,
    /// What happens at the timeout; `None`: E2B's default (kill).
    pub on_timeout: Option<OnTimeout>,
    /// Auto-resume.
    pub auto_resume: Option<bool>,
    /// Volume mounts `(name, path)`.
    pub volume_mounts: Vec<(String, String)>,
    /// Bytes kept per output field.
    pub max_output_bytes: usize,
    /// Rich results from run_code.
    pub rich_results: bool,
    /// Readiness wait in ms.
    pub readiness_timeout_ms: u32,
    /// Sandbox to attach to.
    pub attach_sandbox_id: Option<String>,
    /// The `run_code` languages the backend has, when the host knows them
    /// (`E2B_TOOLS_LANGUAGES`, comma-separated; the reference host sets it
    /// for its local server). `None`: E2B's code interpreter's.
    pub languages: Option<Vec<String>>,
    /// The tools offered.
    pub tools: ToolSet,
    /// Whether run_code and run_command report their latest output line
    /// as progress events ([`crate::output::progress`]).
    pub progress: bool,
}

/// The languages E2B's `code-interpreter-v1` template runs.
pub const E2B_LANGUAGES: [&str; 6] = ["python", "javascript", "typescript", "r", "java", "bash"];

impl Settings {
    /// Whether sandboxes pause at their timeout (and at the end of the
    /// session) instead of dying.
    pub fn pauses(&self) -> bool {
        self.on_timeout == Some(OnTimeout::Pause)
    }

    /// The languages `run_code` can use on this backend.
    pub fn run_code_languages(&self) -> Vec<&str> {
        match &self.languages {
            Some(list) => list.iter().map(String::as_str).collect(),
            None => E2B_LANGUAGES.to_vec(),
        }
    }

    /// Refuses a `run_code` language the backend is known not to have.
    pub fn check_language(&self, language: &str) -> Result<(), ToolError> {
        // The aliases E2B's code interpreter takes.
        let language = match language {
            "js" => "javascript",
            "ts" => "typescript",
            other => other,
        };
        match &self.languages {
            Some(list) if !list.iter().any(|l| l == language) => Err(ToolError::invalid(format!(
                "Failed to run code: language '{language}' is not available on this backend (available: {})",
                list.join(", ")
            ))),
            _ => Ok(()),
        }
    }

    /// Resolves `input`, falling back to the variables `env` returns.
    pub fn resolve(
        input: ConfigInput,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ToolError> {
        Self::resolve_with(input, env, true)
    }

    fn resolve_with(
        input: ConfigInput,
        env: impl Fn(&str) -> Option<String>,
        validate: bool,
    ) -> Result<Self, ToolError> {
        let non_empty = |v: Option<String>| v.filter(|s| !s.trim().is_empty());
        let domain = non_empty(input.domain)
            .or_else(|| non_empty(env("E2B_DOMAIN")))
            .unwrap_or_else(|| DEFAULT_DOMAIN.to_string());
        let api_url = non_empty(input.api_url)
            .or_else(|| non_empty(env("E2B_API_URL")))
            .unwrap_or_else(|| format!("https://api.{domain}"));
        let sandbox_url =
            non_empty(input.sandbox_url).or_else(|| non_empty(env("E2B_SANDBOX_URL")));
        for url in std::iter::once(&api_url).chain(sandbox_url.as_ref()) {
            if validate && !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(ToolError::invalid(format!(
                    "Invalid URL '{url}': expected http:// or https://"
                )));
            }
        }
        if input.auto_resume == Some(true) && input.on_timeout != Some(OnTimeout::Pause) {
            return Err(ToolError::invalid("auto-resume requires on-timeout: pause"));
        }
        let tools = match input.tools.or_else(|| {
            non_empty(env(vars::ENABLED)).map(|v| v.split(',').map(str::to_string).collect())
        }) {
            None => ToolSet::DEFAULT,
            Some(names) => match ToolSet::parse(&names) {
                Ok(set) => set,
                Err(e) if validate => {
                    return Err(ToolError::invalid(format!("Invalid tools: {e}")))
                }
                Err(_) => ToolSet::DEFAULT,
            },
        };
        if input.timeout_seconds == Some(0) {
            return Err(ToolError::invalid(
                "Invalid timeout: the sandbox timeout must be greater than 0",
            ));
        }
        Ok(Self {
            api_key: non_empty(input.api_key).or_else(|| non_empty(env("E2B_API_KEY"))),
            template: non_empty(input.template)
                .unwrap_or_else(|| e2b_wire::api::DEFAULT_TEMPLATE.to_string()),
            metadata: input.metadata.into_iter().collect(),
            envs: input.envs.into_iter().collect(),
            configured_ttl: input.timeout_seconds,
            domain,
            api_url: api_url.trim_end_matches('/').to_string(),
            sandbox_url: sandbox_url.map(|u| u.trim_end_matches('/').to_string()),
            request_timeout_ms: input
                .request_timeout_ms
                .unwrap_or(DEFAULT_REQUEST_TIMEOUT_MS),
            allow_internet_access: input.allow_internet_access,
            network: input.network,
            on_timeout: input.on_timeout,
            auto_resume: input.auto_resume,
            volume_mounts: input.volume_mounts,
            max_output_bytes: input
                .max_output_bytes
                .map(|n| n as usize)
                .unwrap_or(DEFAULT_MAX_OUTPUT_BYTES),
            rich_results: input.rich_results.unwrap_or(false),
            readiness_timeout_ms: input
                .readiness_timeout_ms
                .unwrap_or(DEFAULT_READINESS_TIMEOUT_MS),
            attach_sandbox_id: non_empty(input.sandbox_id),
            languages: non_empty(env(vars::LANGUAGES)).map(|list| {
                list.split(',')
                    .map(|l| l.trim().to_ascii_lowercase())
                    .filter(|l| !l.is_empty())
                    .collect()
            }),
            tools,
            progress: input.progress.unwrap_or(false),
        })
    }

    /// Settings from the environment alone (before any `configure`). A
    /// malformed `E2B_API_URL` / `E2B_SANDBOX_URL` is kept, so the first
    /// request reports it instead of silently going elsewhere.
    pub fn from_env(env: impl Fn(&str) -> Option<String>) -> Self {
        match Self::resolve_with(ConfigInput::default(), env, false) {
            Ok(settings) => settings,
            // Only URL checks can fail, and they are off here.
            Err(_) => Self::resolve_with(ConfigInput::default(), |_| None, false)
                .unwrap_or_else(|_| builtin_defaults()),
        }
    }

    /// The sandbox TTL the keep-alive maintains.
    pub fn ttl_seconds(&self) -> u32 {
        self.configured_ttl.unwrap_or(DEFAULT_TTL_SECONDS)
    }

    /// Base URL of a sandbox port. Routing headers are sent in every case.
    pub fn sandbox_base(
        &self,
        sandbox_id: &str,
        port: u16,
        sandbox_domain: Option<&str>,
    ) -> String {
        if let Some(url) = &self.sandbox_url {
            return url.clone();
        }
        let domain = sandbox_domain.unwrap_or(&self.domain);
        if OFFICIAL_DOMAINS.contains(&domain) {
            format!("https://sandbox.{domain}")
        } else {
            format!("https://{port}-{sandbox_id}.{domain}")
        }
    }

    /// The preview URL of a port (the SDK's `"https://" + get_host(port)`;
    /// like the SDK it ignores `sandbox_url`), but for a local server:
    /// with `sandbox_url` on loopback and no domain of E2B's given, the
    /// URL that server routes by its `Host` (`http://8000-<id>.localhost:
    /// <its port>`; `*.localhost` is loopback to browsers and curl), where
    /// E2B's would name a host that does not exist.
    pub fn preview_url(&self, sandbox_id: &str, port: u16, sandbox_domain: Option<&str>) -> String {
        let domain = sandbox_domain.unwrap_or(&self.domain);
        let local = self.sandbox_url.as_deref().and_then(loopback);
        match local {
            Some((scheme, listen)) if domain == DEFAULT_DOMAIN => {
                format!("{scheme}://{port}-{sandbox_id}.localhost:{listen}")
            }
            _ => format!("https://{port}-{sandbox_id}.{domain}"),
        }
    }
}

/// The scheme and port of a loopback `url` (`http://127.0.0.1:3000/`).
fn loopback(url: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?']).next()?;
    let (host, port) = authority.rsplit_once(':')?;
    let is_loopback = host == "localhost" || host == "[::1]" || host.starts_with("127.");
    (is_loopback && matches!(scheme, "http" | "https") && !port.is_empty())
        .then_some((scheme, port))
}

/// E2B's defaults, with nothing from the environment.
fn builtin_defaults() -> Settings {
    Settings {
        api_key: None,
        template: e2b_wire::api::DEFAULT_TEMPLATE.to_string(),
        metadata: BTreeMap::new(),
        envs: BTreeMap::new(),
        configured_ttl: None,
        domain: DEFAULT_DOMAIN.to_string(),
        api_url: format!("https://api.{DEFAULT_DOMAIN}"),
        sandbox_url: None,
        request_timeout_ms: DEFAULT_REQUEST_TIMEOUT_MS,
        allow_internet_access: None,
        network: None,
        on_timeout: None,
        auto_resume: None,
        volume_mounts: Vec::new(),
        max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
        rich_results: false,
        readiness_timeout_ms: DEFAULT_READINESS_TIMEOUT_MS,
        attach_sandbox_id: None,
        languages: None,
        tools: ToolSet::DEFAULT,
        progress: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn defaults_follow_the_sdk() {
        let s = Settings::from_env(env_of(&[]));
        assert_eq!(s.api_url, "https://api.e2b.app");
        assert_eq!(s.template, "code-interpreter-v1");
        assert_eq!(s.ttl_seconds(), 300);
        assert_eq!(s.configured_ttl, None);
        assert_eq!(s.max_output_bytes, 10_000);
        assert_eq!(
            s.sandbox_base("sbx1", 49983, None),
            "https://sandbox.e2b.app"
        );
        assert_eq!(
            s.preview_url("sbx1", 3000, None),
            "https://3000-sbx1.e2b.app"
        );
    }

    #[test]
    fn environment_fallbacks_and_explicit_options() {
        let env = env_of(&[
            ("E2B_API_KEY", "e2b_abc"),
            ("E2B_DOMAIN", "my.local:8443"),
            ("E2B_SANDBOX_URL", "http://127.0.0.1:4000/"),
        ]);
        let s = Settings::resolve(ConfigInput::default(), &env).unwrap();
        assert_eq!(s.api_key.as_deref(), Some("e2b_abc"));
        assert_eq!(s.api_url, "https://api.my.local:8443");
        assert_eq!(s.sandbox_base("sbx1", 49999, None), "http://127.0.0.1:4000");
        assert_eq!(
            s.preview_url("sbx1", 8000, None),
            "https://8000-sbx1.my.local:8443"
        );
        // A local server (sandbox traffic on loopback, no domain given):
        // the URL it routes by Host.
        let env = env_of(&[("E2B_SANDBOX_URL", "http://127.0.0.1:4000/")]);
        let s = Settings::resolve(ConfigInput::default(), &env).unwrap();
        assert_eq!(
            s.preview_url("sbx1", 8000, None),
            "http://8000-sbx1.localhost:4000"
        );
        let env = env_of(&[("E2B_SANDBOX_URL", "https://proxy.example:443")]);
        let s = Settings::resolve(ConfigInput::default(), &env).unwrap();
        assert_eq!(
            s.preview_url("sbx1", 8000, None),
            "https://8000-sbx1.e2b.app"
        );
        let s = Settings::resolve(
            ConfigInput {
                api_key: Some("e2b_explicit".into()),
                domain: Some("example.org".into()),
                api_url: Some("http://127.0.0.1:3000/".into()),
                ..Default::default()
            },
            env_of(&[("E2B_API_KEY", "e2b_env")]),
        )
        .unwrap();
        assert_eq!(s.api_key.as_deref(), Some("e2b_explicit"));
        assert_eq!(s.api_url, "http://127.0.0.1:3000");
        assert_eq!(
            s.sandbox_base("sbx1", 49983, None),
            "https://49983-sbx1.example.org"
        );
        assert_eq!(
            s.sandbox_base("sbx1", 49983, Some("e2b.dev")),
            "https://sandbox.e2b.dev"
        );
    }

    #[test]
    fn bad_options_are_refused() {
        let bad_url = ConfigInput {
            api_url: Some("ftp://x".into()),
            ..Default::default()
        };
        assert!(Settings::resolve(bad_url, env_of(&[])).is_err());
        let resume_without_pause = ConfigInput {
            auto_resume: Some(true),
            ..Default::default()
        };
        assert!(Settings::resolve(resume_without_pause, env_of(&[])).is_err());
        let s = Settings::from_env(env_of(&[("E2B_API_URL", "nonsense")]));
        assert_eq!(s.api_url, "nonsense");
    }
}
