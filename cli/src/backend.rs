//! Where sandboxes come from: real E2B (or any E2B-compatible server named
//! by `E2B_API_URL` / `E2B_SANDBOX_URL`), or the local server started
//! in-process.

use std::collections::BTreeMap;

/// Which sandbox provider a session talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    /// E2B itself, or whatever `E2B_API_URL` / `E2B_SANDBOX_URL` name.
    /// Needs `E2B_API_KEY`.
    E2b,
    /// The local E2B-compatible server (crate `e2b-local`), started in this
    /// process on `127.0.0.1` with a fresh key. It keeps nothing: its
    /// sandboxes and snapshots go with the process (`e2b-tools local
    /// serve` is the server that keeps them, in its state directory).
    Local,
}

/// The backend to use when none is asked for: `e2b` when `E2B_API_KEY` is
/// set (non-empty) in `env`, else `local`. The second value is a one-line
/// notice for the user when the local backend was picked implicitly (and
/// why an `E2B_API_URL` without a key is not used).
pub fn default_backend(env: &BTreeMap<String, String>) -> (BackendKind, Option<String>) {
    let set = |name: &str| env.get(name).is_some_and(|v| !v.trim().is_empty());
    if set("E2B_API_KEY") {
        return (BackendKind::E2b, None);
    }
    let notice = match set("E2B_API_URL") {
        true => {
            "e2b-tools: E2B_API_URL is set but E2B_API_KEY is not: using the local backend \
                 instead (set E2B_API_KEY to use that server)"
        }
        false => "e2b-tools: no E2B_API_KEY: using the local backend (--backend e2b for E2B)",
    };
    (BackendKind::Local, Some(notice.to_string()))
}

/// Options of the in-process local server.
#[derive(Debug, Clone)]
pub struct LocalBackendOptions {
    /// Port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// Run sandbox processes without bubblewrap isolation.
    pub no_isolation: bool,
    /// Sandbox timeouts run this many times faster than wall time.
    pub time_scale: f64,
}

impl Default for LocalBackendOptions {
    fn default() -> Self {
        Self {
            port: 0,
            no_isolation: false,
            time_scale: 1.0,
        }
    }
}

/// Why a backend could not be started.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The e2b backend needs an API key.
    #[error("the e2b backend needs E2B_API_KEY (or use --backend local)")]
    MissingApiKey,
    /// The local server did not start.
    #[error("cannot start the local server: {0}")]
    Local(#[from] e2b_local::StartError),
}

/// A started backend. Keep it alive while sessions use it, then call
/// [`Backend::shutdown`].
pub enum Backend {
    /// Real E2B: nothing runs locally.
    E2b,
    /// The in-process local server.
    Local(e2b_local::LocalServer),
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Backend::E2b => f.write_str("Backend::E2b"),
            Backend::Local(server) => write!(f, "Backend::Local({})", server.url()),
        }
    }
}

impl Backend {
    /// Starts the backend. `env` is checked for `E2B_API_KEY` (e2b backend).
    pub async fn start(
        kind: BackendKind,
        env: &BTreeMap<String, String>,
        local: &LocalBackendOptions,
    ) -> Result<Backend, BackendError> {
        match kind {
            BackendKind::E2b => {
                if env.get("E2B_API_KEY").is_none_or(|k| k.trim().is_empty()) {
                    return Err(BackendError::MissingApiKey);
                }
                Ok(Backend::E2b)
            }
            BackendKind::Local => {
                let options = e2b_local::Options {
                    port: local.port,
                    isolation: if local.no_isolation {
                        e2b_local::Isolation::None
                    } else {
                        e2b_local::Isolation::Bwrap
                    },
                    time_scale: local.time_scale,
                    ..e2b_local::Options::default()
                };
                let server = e2b_local::LocalServer::start(options).await?;
                crate::audit::local_server_started(&server.url(), !local.no_isolation);
                Ok(Backend::Local(server))
            }
        }
    }

    /// The environment sessions of this backend get: `env` itself for e2b;
    /// for local, `env` with `E2B_API_URL`, `E2B_SANDBOX_URL` and
    /// `E2B_API_KEY` pointing at the local server (so the allow-list follows).
    pub fn session_env(&self, env: &BTreeMap<String, String>) -> BTreeMap<String, String> {
        let mut env = env.clone();
        if let Backend::Local(server) = self {
            env.insert("E2B_API_URL".into(), server.url());
            env.insert("E2B_SANDBOX_URL".into(), server.url());
            env.insert("E2B_API_KEY".into(), server.api_key().to_string());
            env.insert(
                e2b_wire::host_guest::env::LANGUAGES.into(),
                e2b_local::interpreter::LANGUAGES.join(","),
            );
        }
        env
    }

    /// Stops the local server (killing its sandboxes); nothing for e2b.
    pub async fn shutdown(self) {
        if let Backend::Local(server) = self {
            server.shutdown().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_local_without_a_key_and_says_so() {
        let (kind, notice) = default_backend(&BTreeMap::new());
        assert_eq!(kind, BackendKind::Local);
        assert!(notice.unwrap().contains("E2B_API_KEY"));

        let blank = BTreeMap::from([("E2B_API_KEY".to_string(), " ".to_string())]);
        assert_eq!(default_backend(&blank).0, BackendKind::Local);
        // A server named without a key: not silently ignored.
        let url = BTreeMap::from([("E2B_API_URL".to_string(), "http://h".to_string())]);
        let (kind, notice) = default_backend(&url);
        assert_eq!(kind, BackendKind::Local);
        assert!(notice
            .unwrap()
            .contains("E2B_API_URL is set but E2B_API_KEY is not"));
    }

    #[test]
    fn default_is_e2b_with_a_key() {
        let env = BTreeMap::from([("E2B_API_KEY".to_string(), "e2b_x".to_string())]);
        assert_eq!(default_backend(&env), (BackendKind::E2b, None));
    }
}
