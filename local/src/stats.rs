//! Request and sandbox counters, for tests that assert what a client sent.

use std::collections::BTreeMap;
use std::sync::Mutex;

/// A snapshot of the server's counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Requests per `"<METHOD> <route pattern>"`, e.g.
    /// `"POST /sandboxes/{id}/timeout"`, `"POST /process.Process/Start"`.
    pub requests: BTreeMap<String, u64>,
    /// Sandboxes alive now (running or paused).
    pub live_sandboxes: usize,
    /// Sandboxes created since start.
    pub sandboxes_created: u64,
    /// Sandboxes that died since start (killed or expired).
    pub sandboxes_killed: u64,
}

impl Stats {
    /// Requests counted for `key` (`"<METHOD> <pattern>"`), 0 if none.
    pub fn count(&self, key: &str) -> u64 {
        self.requests.get(key).copied().unwrap_or(0)
    }
}

/// One request as it arrived, recorded when
/// [`Options::record_requests`](crate::Options::record_requests) is on:
/// for tests that compare what two clients send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedRequest {
    /// `GET`, `POST`, …
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The query string, if any.
    pub query: Option<String>,
    /// Every header, names lower-case, in the order of first appearance
    /// (values not valid UTF-8 are kept lossily).
    pub headers: Vec<(String, String)>,
}

/// The live counters behind [`Stats`].
#[derive(Debug, Default)]
pub(crate) struct Counters {
    inner: Mutex<Stats>,
    /// `Some` when recording.
    recorded: Option<Mutex<Vec<RecordedRequest>>>,
}

impl Counters {
    /// Counters that also record every request.
    pub(crate) fn recording() -> Self {
        Self {
            recorded: Some(Mutex::default()),
            ..Self::default()
        }
    }

    pub(crate) fn record(&self, req: &http::request::Parts) {
        let Some(recorded) = &self.recorded else {
            return;
        };
        let request = RecordedRequest {
            method: req.method.to_string(),
            path: req.uri.path().to_string(),
            query: req.uri.query().map(str::to_string),
            headers: req
                .headers
                .iter()
                .map(|(name, value)| {
                    (
                        name.as_str().to_string(),
                        String::from_utf8_lossy(value.as_bytes()).into_owned(),
                    )
                })
                .collect(),
        };
        if let Ok(mut log) = recorded.lock() {
            log.push(request);
        }
    }

    /// The requests recorded since the last call (empty when not recording).
    pub(crate) fn take_recorded(&self) -> Vec<RecordedRequest> {
        self.recorded
            .as_ref()
            .and_then(|log| log.lock().ok().map(|mut log| std::mem::take(&mut *log)))
            .unwrap_or_default()
    }

    pub(crate) fn request(&self, method: &str, path: &str) {
        let key = format!("{method} {}", route_pattern(path));
        if let Ok(mut s) = self.inner.lock() {
            *s.requests.entry(key).or_default() += 1;
        }
    }

    pub(crate) fn created(&self) {
        if let Ok(mut s) = self.inner.lock() {
            s.sandboxes_created += 1;
        }
    }

    pub(crate) fn killed(&self) {
        if let Ok(mut s) = self.inner.lock() {
            s.sandboxes_killed += 1;
        }
    }

    pub(crate) fn snapshot(&self, live: usize) -> Stats {
        let mut s = self.inner.lock().map(|s| s.clone()).unwrap_or_default();
        s.live_sandboxes = live;
        s
    }
}

/// The route pattern of a request path: the segment after `sandboxes`,
/// `contexts` or `templates` is an id.
pub(crate) fn route_pattern(path: &str) -> String {
    let mut out = Vec::new();
    let mut id_next = false;
    for seg in path.split('/') {
        if id_next && !seg.is_empty() {
            out.push("{id}");
            id_next = false;
            continue;
        }
        id_next = seg == "sandboxes" || seg == "contexts" || seg == "templates";
        out.push(seg);
    }
    out.join("/")
}

#[cfg(test)]
mod tests {
    use super::route_pattern;

    #[test]
    fn patterns() {
        assert_eq!(
            route_pattern("/sandboxes/abc/timeout"),
            "/sandboxes/{id}/timeout"
        );
        assert_eq!(route_pattern("/v2/sandboxes"), "/v2/sandboxes");
        assert_eq!(
            route_pattern("/v2/sandboxes/x/connect"),
            "/v2/sandboxes/{id}/connect"
        );
        assert_eq!(
            route_pattern("/process.Process/Start"),
            "/process.Process/Start"
        );
        assert_eq!(
            route_pattern("/contexts/k1/restart"),
            "/contexts/{id}/restart"
        );
    }
}
