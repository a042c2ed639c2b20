//! The outbound allow-list: which hosts the component may reach.
//!
//! The component talks to exactly two kinds of endpoints: the E2B control
//! plane (`E2B_API_URL`, default `https://api.<domain>`) and the sandboxes
//! (`E2B_SANDBOX_URL`, default `https://<port>-<id>.<domain>`). Everything
//! else is refused, so a compromised or buggy component cannot send the API
//! key, or anything else, elsewhere.

use http::Uri;
use std::fmt;

/// E2B's public domain, used when neither the config nor `E2B_DOMAIN` names one.
pub const DEFAULT_DOMAIN: &str = "e2b.app";

/// One endpoint or family of endpoints the component may reach.
#[derive(Debug, Clone, PartialEq, Eq)]
enum AllowRule {
    /// One scheme, host and port, from an explicit URL.
    Exact {
        https: bool,
        host: String,
        port: u16,
    },
    /// Any HTTPS host under `domain` on port 443 (sandbox hosts look like
    /// `49983-<sandbox-id>.<domain>`).
    HttpsSubdomainsOf { domain: String },
}

/// Why a URL given for the allow-list was rejected.
#[derive(Debug, thiserror::Error)]
#[error("{setting} is not an absolute http(s) URL: {value:?}")]
pub struct PolicyError {
    /// Which setting held the URL (`E2B_API_URL`, `E2B_SANDBOX_URL`).
    pub setting: &'static str,
    /// The rejected value.
    pub value: String,
}

/// The hosts a session's component may send requests to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboundPolicy {
    rules: Vec<AllowRule>,
}

impl OutboundPolicy {
    /// Derives the allow-list from the effective E2B endpoints: the API URL
    /// and sandbox URL if set, otherwise `api.<domain>` and the HTTPS hosts
    /// under `<domain>`.
    pub fn for_endpoints(
        api_url: Option<&str>,
        sandbox_url: Option<&str>,
        domain: Option<&str>,
    ) -> Result<Self, PolicyError> {
        let domain = domain
            .map(|d| d.trim().trim_end_matches('.').to_ascii_lowercase())
            .filter(|d| !d.is_empty())
            .unwrap_or_else(|| DEFAULT_DOMAIN.to_string());
        let mut rules = Vec::new();
        match api_url {
            Some(url) => rules.push(exact_rule("E2B_API_URL", url)?),
            None => rules.push(AllowRule::Exact {
                https: true,
                host: format!("api.{domain}"),
                port: 443,
            }),
        }
        let sandbox_rule = match sandbox_url {
            Some(url) => exact_rule("E2B_SANDBOX_URL", url)?,
            None => AllowRule::HttpsSubdomainsOf { domain },
        };
        // One server often serves both (the local backend does).
        if !rules.contains(&sandbox_rule) {
            rules.push(sandbox_rule);
        }
        Ok(Self { rules })
    }

    /// Whether a request to `uri` may leave the host.
    pub fn allows(&self, uri: &Uri) -> bool {
        let Some(host) = uri.host() else {
            return false;
        };
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return false,
        };
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        self.rules.iter().any(|rule| match rule {
            AllowRule::Exact {
                https: rule_https,
                host: rule_host,
                port: rule_port,
            } => *rule_https == https && *rule_host == host && *rule_port == port,
            AllowRule::HttpsSubdomainsOf { domain } => {
                https
                    && port == 443
                    && host.len() > domain.len() + 1
                    && host.ends_with(domain.as_str())
                    && host.as_bytes()[host.len() - domain.len() - 1] == b'.'
            }
        })
    }
}

impl fmt::Display for OutboundPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, rule) in self.rules.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            match rule {
                AllowRule::Exact { https, host, port } => {
                    let scheme = if *https { "https" } else { "http" };
                    write!(f, "{scheme}://{host}:{port}")?;
                }
                AllowRule::HttpsSubdomainsOf { domain } => write!(f, "https://*.{domain}:443")?,
            }
        }
        Ok(())
    }
}

fn exact_rule(setting: &'static str, url: &str) -> Result<AllowRule, PolicyError> {
    let error = || PolicyError {
        setting,
        value: url.to_string(),
    };
    let uri: Uri = url.trim().parse().map_err(|_| error())?;
    let https = match uri.scheme_str() {
        Some("https") => true,
        Some("http") => false,
        _ => return Err(error()),
    };
    let host = uri.host().filter(|h| !h.is_empty()).ok_or_else(error)?;
    Ok(AllowRule::Exact {
        https,
        host: host.trim_end_matches('.').to_ascii_lowercase(),
        port: uri.port_u16().unwrap_or(if https { 443 } else { 80 }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allows(policy: &OutboundPolicy, url: &str) -> bool {
        policy.allows(&url.parse().unwrap())
    }

    #[test]
    fn defaults_allow_the_api_and_sandbox_hosts_of_e2b() {
        let policy = OutboundPolicy::for_endpoints(None, None, None).unwrap();
        assert!(allows(&policy, "https://api.e2b.app/sandboxes"));
        assert!(allows(&policy, "https://49983-abc123.e2b.app/execute"));
        assert!(allows(&policy, "https://API.E2B.APP:443/"));
        assert!(!allows(&policy, "http://api.e2b.app/sandboxes"));
        assert!(!allows(&policy, "https://api.e2b.app:8443/"));
        assert!(!allows(&policy, "https://e2b.app/"));
        assert!(!allows(&policy, "https://evil-e2b.app/"));
        assert!(!allows(&policy, "https://e2b.app.evil.com/"));
        assert!(!allows(&policy, "https://example.com/"));
    }

    #[test]
    fn a_custom_domain_moves_both_families() {
        let policy = OutboundPolicy::for_endpoints(None, None, Some("Sandbox.Example.")).unwrap();
        assert!(allows(&policy, "https://api.sandbox.example/"));
        assert!(allows(&policy, "https://8080-xyz.sandbox.example/"));
        assert!(!allows(&policy, "https://api.e2b.app/"));
    }

    #[test]
    fn explicit_urls_allow_exactly_their_origin() {
        let policy = OutboundPolicy::for_endpoints(
            Some("http://127.0.0.1:3000"),
            Some("http://127.0.0.1:3000/"),
            None,
        )
        .unwrap();
        assert!(allows(&policy, "http://127.0.0.1:3000/sandboxes"));
        assert!(!allows(&policy, "http://127.0.0.1:3001/sandboxes"));
        assert!(!allows(&policy, "https://127.0.0.1:3000/"));
        assert!(!allows(&policy, "http://localhost:3000/"));
        // No wildcard once the sandbox URL is explicit.
        assert!(!allows(&policy, "https://49983-abc.e2b.app/"));
        assert!(!allows(&policy, "https://api.e2b.app/"));
    }

    #[test]
    fn an_explicit_api_url_keeps_default_sandbox_hosts() {
        let policy =
            OutboundPolicy::for_endpoints(Some("https://api.internal:8443"), None, None).unwrap();
        assert!(allows(&policy, "https://api.internal:8443/x"));
        assert!(allows(&policy, "https://49983-abc.e2b.app/"));
        assert!(!allows(&policy, "https://api.internal/x"));
        assert!(!allows(&policy, "https://example.com/"));
    }

    #[test]
    fn malformed_urls_are_rejected() {
        let err = OutboundPolicy::for_endpoints(Some("not a url"), None, None).unwrap_err();
        assert_eq!(err.setting, "E2B_API_URL");
        assert!(OutboundPolicy::for_endpoints(None, Some("ftp://x"), None).is_err());
        assert!(OutboundPolicy::for_endpoints(None, Some("/relative"), None).is_err());
    }

    #[test]
    fn requests_without_scheme_or_host_are_refused() {
        let policy = OutboundPolicy::for_endpoints(None, None, None).unwrap();
        assert!(!allows(&policy, "/sandboxes"));
        assert!(!policy.allows(&"ws://api.e2b.app/".parse().unwrap()));
    }

    #[test]
    fn display_lists_the_rules_once() {
        let policy = OutboundPolicy::for_endpoints(None, None, None).unwrap();
        assert_eq!(
            policy.to_string(),
            "https://api.e2b.app:443, https://*.e2b.app:443"
        );
        let local = "http://127.0.0.1:3000";
        let policy = OutboundPolicy::for_endpoints(Some(local), Some(local), None).unwrap();
        assert_eq!(policy.to_string(), "http://127.0.0.1:3000");
    }
}
