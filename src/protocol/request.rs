//! A plain description of one HTTP request, built by the pure clients
//! (`api`, `envd`, `interpreter`) and sent by the wasm-only `http` glue, so
//! what goes on the wire is unit-tested natively.

/// The User-Agent of every request: an integration tag, as e2b-adk adds
/// `e2b-adk/<version>` to the SDK's.
pub const USER_AGENT: &str = concat!("e2b-tools-wasm/", env!("CARGO_PKG_VERSION"));

/// HTTP methods the clients use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// GET.
    Get,
    /// POST.
    Post,
    /// DELETE.
    Delete,
}

/// One request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    /// Method.
    pub method: Method,
    /// Absolute `http://` or `https://` URL.
    pub url: String,
    /// Header names (lowercase) and values.
    pub headers: Vec<(String, String)>,
    /// Body (empty: none).
    pub body: Vec<u8>,
}

impl HttpRequest {
    /// A request with the User-Agent header.
    pub fn new(method: Method, url: String) -> Self {
        Self {
            method,
            url,
            headers: vec![("user-agent".into(), USER_AGENT.into())],
            body: Vec::new(),
        }
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.push((name.to_ascii_lowercase(), value.into()));
        self
    }

    /// Sets a JSON body.
    pub fn json(self, body: &impl serde::Serialize) -> Self {
        let bytes = serde_json::to_vec(body).unwrap_or_else(|_| b"{}".to_vec());
        self.header("content-type", "application/json")
            .raw_body(bytes)
    }

    /// Sets a body as is.
    pub fn raw_body(mut self, body: Vec<u8>) -> Self {
        self.body = body;
        self
    }

    /// The value of a header, if set.
    pub fn header_value(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The parts of an absolute URL the wasi:http request needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlParts {
    /// `true` for https.
    pub https: bool,
    /// `host[:port]`.
    pub authority: String,
    /// `/path?query`.
    pub path_and_query: String,
}

/// Splits `url`; `None` if it is not an absolute http(s) URL.
pub fn split_url(url: &str) -> Option<UrlParts> {
    let (https, rest) = if let Some(rest) = url.strip_prefix("https://") {
        (true, rest)
    } else if let Some(rest) = url.strip_prefix("http://") {
        (false, rest)
    } else {
        return None;
    };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_string()),
        Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
        None => (rest, "/".to_string()),
    };
    if authority.is_empty() {
        return None;
    }
    Some(UrlParts {
        https,
        authority: authority.to_string(),
        path_and_query: path,
    })
}

/// Percent-encodes a query value (everything but unreserved characters,
/// so `/` becomes `%2F` as the SDK sends it).
pub fn query_escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Percent-encodes one path segment (a sandbox id in a URL).
pub fn path_escape(segment: &str) -> String {
    query_escape(segment)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split() {
        let p = split_url("http://127.0.0.1:4000").unwrap();
        assert_eq!(
            (p.https, p.authority.as_str(), p.path_and_query.as_str()),
            (false, "127.0.0.1:4000", "/")
        );
        let p = split_url("https://api.e2b.app/v2/sandboxes?x=1").unwrap();
        assert!(p.https);
        assert_eq!(p.path_and_query, "/v2/sandboxes?x=1");
        let p = split_url("http://h?x=1").unwrap();
        assert_eq!(p.path_and_query, "/?x=1");
        assert!(split_url("ftp://x").is_none());
        assert!(split_url("http:///x").is_none());
    }

    #[test]
    fn query_values_are_escaped_like_the_sdk() {
        assert_eq!(query_escape("/tmp/a b.txt"), "%2Ftmp%2Fa%20b.txt");
        assert_eq!(query_escape("é"), "%C3%A9");
    }
}
