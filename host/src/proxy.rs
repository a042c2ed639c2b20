//! Outbound proxies: which connections go through an HTTP proxy, and the
//! connector that opens them.
//!
//! The rules are curl's, through hyper-util's matcher: `HTTPS_PROXY` for
//! `https` targets, `HTTP_PROXY` for `http` ones, `ALL_PROXY` for both,
//! each also lower-case, `NO_PROXY` for the exceptions; or one
//! [`Proxy::Url`] for both (the `--proxy` flag), still with `NO_PROXY`.
//! `https` targets go through a CONNECT tunnel (TLS end to end, the proxy
//! sees only the host name); `http` targets are sent to the proxy in
//! absolute form.
//!
//! Two choices differ from curl, both as Go's `net/http` makes them:
//! - Loopback targets (`localhost`, `127.0.0.0/8`, `::1`) never use a
//!   proxy: the embedded local backend listens there, and a corporate
//!   `HTTP_PROXY` cannot reach this machine's loopback anyway.
//! - A proxy variable that is set but unusable is an error for every
//!   request it would apply to, not silently skipped: connecting directly
//!   where the user asked for a proxy would be a surprise (and a leak).
//!
//! Only `http://` proxies are supported: TLS to the proxy itself and SOCKS
//! are refused with a message saying so. Credentials in a proxy URL go to
//! the proxy as `Proxy-Authorization: Basic`, and never into a log or an
//! error: those name the proxy by host and port only.

use http::{HeaderValue, Uri};
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::TokioIo;
use std::error::Error as StdError;
use std::fmt;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::net::TcpStream;
use tower_service::Service;

/// Where outbound connections go.
#[derive(Clone, Default, PartialEq, Eq)]
pub enum Proxy {
    /// As the environment says: `HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`
    /// (upper or lower case) and `NO_PROXY`; none set: direct.
    #[default]
    Environment,
    /// This proxy for every target not excluded by `NO_PROXY`.
    Url(String),
    /// Always direct, whatever the environment says.
    Direct,
}

impl fmt::Debug for Proxy {
    /// A [`Proxy::Url`] by its host and port only: its URL may hold a
    /// password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Proxy::Environment => f.write_str("Environment"),
            Proxy::Url(url) => f
                .debug_tuple("Url")
                .field(&format_args!("{}", named(url)))
                .finish(),
            Proxy::Direct => f.write_str("Direct"),
        }
    }
}

/// A proxy URL as messages name it: `host:port`, never its credentials.
fn named(value: &str) -> String {
    let value = value.trim();
    let uri = if value.contains("://") {
        value.parse::<Uri>()
    } else {
        format!("http://{value}").parse::<Uri>()
    };
    match uri {
        Ok(uri) => host_and_port(&uri),
        Err(_) => "(not a URL)".to_string(),
    }
}

/// `host:port` of a proxy's URI (80 when it names none). `Uri::host`
/// takes what follows the last `@`, so no part of a user name or password
/// is in it.
fn host_and_port(uri: &Uri) -> String {
    format!(
        "{}:{}",
        uri.host().unwrap_or(""),
        uri.port_u16().unwrap_or(80)
    )
}

/// Why a proxy setting cannot be used. Its text names the setting and
/// never the URL's credentials.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{setting} is not a usable proxy: {reason}")]
pub struct ProxyError {
    setting: String,
    reason: String,
}

/// A proxy URL, checked: `http://[user[:password]@]host[:port]`, the
/// scheme optional (curl's default `http`).
pub fn check_proxy_url(setting: &str, value: &str) -> Result<(), ProxyError> {
    let fail = |reason: &str| ProxyError {
        setting: setting.to_string(),
        reason: reason.to_string(),
    };
    let value = value.trim();
    let with_scheme = if value.contains("://") {
        value.to_string()
    } else {
        format!("http://{value}")
    };
    let uri: Uri = with_scheme
        .parse()
        .map_err(|_| fail("not a URL of the form http://host:port"))?;
    match uri.scheme_str() {
        Some("http") => {}
        Some("https") => {
            return Err(fail(
                "https:// proxies (TLS to the proxy) are not supported; use http://",
            ))
        }
        Some(s) if s.starts_with("socks") => {
            return Err(fail(
                "SOCKS proxies are not supported; use an http:// proxy",
            ))
        }
        _ => return Err(fail("the scheme must be http://")),
    }
    let authority = uri.authority().map(|a| a.as_str()).unwrap_or("");
    // An `@` in a user name or password must be escaped (`%40`). With a
    // raw one the parsers disagree on where the credentials end (`http`
    // takes the host after the last `@`, hyper-util's matcher splits at
    // the first), so part of the password would become the proxy's host
    // and be sent, resolved and named as one.
    if authority.matches('@').count() > 1 {
        return Err(fail(
            "more than one '@' before the host; write an '@' in the user name or password as %40",
        ));
    }
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
    if host_port.is_empty() || host_port.starts_with(':') {
        return Err(fail("no host"));
    }
    if !matches!(uri.path(), "" | "/") || uri.query().is_some() {
        return Err(fail("a proxy URL has no path or query"));
    }
    Ok(())
}

/// The first of `names` set in the environment, with its name.
fn first_env(names: [&'static str; 2]) -> Option<(&'static str, String)> {
    names
        .into_iter()
        .find_map(|name| std::env::var(name).ok().map(|value| (name, value)))
        .filter(|(_, value)| !value.trim().is_empty())
}

/// Which proxy, if any, each target uses.
pub(crate) struct ProxyRules {
    /// The usable proxies; `None`: nothing is proxied.
    matcher: Option<Matcher>,
    /// `NO_PROXY` alone (behind a placeholder proxy): a target it does not
    /// intercept is exempt, even from a broken setting.
    exempt: Matcher,
    /// A setting that applies but cannot be used: the `http` and `https`
    /// targets it covers fail with it.
    broken_http: Option<ProxyError>,
    broken_https: Option<ProxyError>,
}

/// How one connection is made.
#[derive(Debug)]
pub(crate) enum Route {
    Direct,
    /// Through the proxy at `uri` (`http://host:port/`), sending `auth`.
    Proxy {
        uri: Uri,
        auth: Option<HeaderValue>,
    },
    Broken(ProxyError),
}

type Setting = (&'static str, String);

impl ProxyRules {
    /// The rules `proxy` gives, reading the environment now.
    pub(crate) fn new(proxy: &Proxy) -> Self {
        let no_proxy = first_env(["NO_PROXY", "no_proxy"]).map(|(_, v)| v);
        let rules = match proxy {
            Proxy::Direct => Self::build(None, None, None),
            Proxy::Url(url) => {
                let setting = ("--proxy", url.clone());
                Self::build(Some(&setting), Some(&setting), no_proxy)
            }
            // Under CGI, HTTP_PROXY may come from a request's `Proxy:`
            // header ("httpoxy"); curl and hyper-util ignore it there.
            Proxy::Environment if std::env::var_os("REQUEST_METHOD").is_some() => {
                Self::build(None, None, None)
            }
            Proxy::Environment => {
                let all = first_env(["ALL_PROXY", "all_proxy"]);
                let http = first_env(["HTTP_PROXY", "http_proxy"]).or_else(|| all.clone());
                let https = first_env(["HTTPS_PROXY", "https_proxy"]).or(all);
                Self::build(http.as_ref(), https.as_ref(), no_proxy)
            }
        };
        for broken in [&rules.broken_http, &rules.broken_https]
            .into_iter()
            .flatten()
        {
            tracing::warn!(error = %broken, "outbound requests it applies to will fail");
        }
        rules
    }

    fn build(http: Option<&Setting>, https: Option<&Setting>, no_proxy: Option<String>) -> Self {
        let check = |setting: Option<&Setting>| match setting {
            Some((name, value)) => match check_proxy_url(name, value) {
                Ok(()) => (Some(value.trim().to_string()), None),
                Err(err) => (None, Some(err)),
            },
            None => (None, None),
        };
        let (http_url, broken_http) = check(http);
        let (https_url, broken_https) = check(https);
        let no_proxy = no_proxy.unwrap_or_default();
        let matcher = (http_url.is_some() || https_url.is_some()).then(|| {
            Matcher::builder()
                .http(http_url.unwrap_or_default())
                .https(https_url.unwrap_or_default())
                .no(no_proxy.clone())
                .build()
        });
        Self {
            matcher,
            exempt: Matcher::builder()
                .all("http://no-proxy.invalid")
                .no(no_proxy)
                .build(),
            broken_http,
            broken_https,
        }
    }

    /// The route to `dst` (an absolute `http` or `https` URI).
    pub(crate) fn route(&self, dst: &Uri) -> Route {
        if !self.is_active()
            || dst.host().is_some_and(is_loopback)
            || self.exempt.intercept(dst).is_none()
        {
            return Route::Direct;
        }
        let broken = if dst.scheme() == Some(&http::uri::Scheme::HTTPS) {
            &self.broken_https
        } else {
            &self.broken_http
        };
        if let Some(err) = broken {
            return Route::Broken(err.clone());
        }
        match self.matcher.as_ref().and_then(|m| m.intercept(dst)) {
            Some(intercept) => Route::Proxy {
                uri: intercept.uri().clone(),
                auth: intercept.basic_auth().cloned(),
            },
            None => Route::Direct,
        }
    }

    /// Whether any target may use a proxy (or fail for a broken one).
    pub(crate) fn is_active(&self) -> bool {
        self.matcher.is_some() || self.broken_http.is_some() || self.broken_https.is_some()
    }
}

/// `localhost`, `*.localhost` or a loopback address.
fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let lower = host.to_ascii_lowercase();
    if lower == "localhost" || lower.ends_with(".localhost") {
        return true;
    }
    host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}
/// How long opening a connection through a proxy may take: the TCP
/// connection to the proxy and its answer to CONNECT.
const TUNNEL_TIMEOUT: Duration = Duration::from_secs(30);

/// A failure at the proxy: its text names the proxy by host and port only.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct ProxyFailure(String);

/// A pooled connection: to the target, through a CONNECT tunnel, or to the
/// proxy itself for an `http` target (`forward`: requests then go in
/// absolute form, as a forwarding proxy needs them).
pub(crate) struct ProxiedStream {
    io: TokioIo<TcpStream>,
    forward: bool,
}

impl Connection for ProxiedStream {
    fn connected(&self) -> Connected {
        self.io.connected().proxy(self.forward)
    }
}

impl hyper::rt::Read for ProxiedStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for ProxiedStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }
}

/// Opens connections as the [`ProxyRules`] say: the connector under the
/// pooled clients (and under TLS, for `https` targets).
#[derive(Clone)]
pub(crate) struct ProxyConnector {
    tcp: HttpConnector,
    rules: Arc<ProxyRules>,
}

impl ProxyConnector {
    pub(crate) fn new(tcp: HttpConnector, rules: Arc<ProxyRules>) -> Self {
        Self { tcp, rules }
    }
}

type BoxError = Box<dyn StdError + Send + Sync>;

impl Service<Uri> for ProxyConnector {
    type Response = ProxiedStream;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<ProxiedStream, BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        let mut tcp = self.tcp.clone();
        let route = self.rules.route(&dst);
        Box::pin(async move {
            let (proxy_uri, auth) = match route {
                Route::Direct => {
                    let io = tcp.call(dst).await?;
                    return Ok(ProxiedStream { io, forward: false });
                }
                Route::Broken(err) => return Err(ProxyFailure(err.to_string()).into()),
                Route::Proxy { uri, auth } => (uri, auth),
            };
            // Named by host and port only: the matcher drops what it takes
            // for credentials from `uri`, but may misjudge where they end.
            let proxy = host_and_port(&proxy_uri);
            let https = dst.scheme() == Some(&http::uri::Scheme::HTTPS);
            let target = format!(
                "{}:{}",
                dst.host().unwrap_or(""),
                dst.port_u16().unwrap_or(if https { 443 } else { 80 })
            );
            if !https {
                let io = tcp.call(proxy_uri).await.map_err(|err| {
                    ProxyFailure(format!("cannot connect to proxy {proxy}: {}", chain(&err)))
                })?;
                return Ok(ProxiedStream { io, forward: true });
            }
            let mut tunnel = Tunnel::new(proxy_uri, tcp);
            if let Some(auth) = auth {
                tunnel = tunnel.with_auth(auth);
            }
            match tokio::time::timeout(TUNNEL_TIMEOUT, tunnel.call(dst)).await {
                Ok(Ok(io)) => Ok(ProxiedStream { io, forward: false }),
                // hyper-util's error type is private: its text (and
                // causes) is what there is ("unsuccessful" for a refusal,
                // "proxy authorization required" for a 407).
                Ok(Err(err)) => Err(ProxyFailure(format!(
                    "proxy {proxy} did not open a tunnel to {target}: {}",
                    chain(&err)
                ))
                .into()),
                Err(_) => Err(ProxyFailure(format!(
                    "proxy {proxy} did not open a tunnel to {target} within {} s",
                    TUNNEL_TIMEOUT.as_secs()
                ))
                .into()),
            }
        })
    }
}

/// An error and its causes, `: `-separated.
fn chain(err: &(dyn StdError + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

impl fmt::Debug for ProxyRules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The matcher's Debug hides credentials, but say only what is needed.
        f.debug_struct("ProxyRules")
            .field("active", &self.is_active())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setting(value: &str) -> Setting {
        ("HTTPS_PROXY", value.to_string())
    }

    fn route(rules: &ProxyRules, url: &str) -> Route {
        rules.route(&url.parse().unwrap())
    }

    #[test]
    fn proxy_urls_are_http_with_a_host() {
        for good in [
            "http://proxy:3128",
            "proxy:3128",
            "http://user:p%40ss@proxy:3128/",
            " http://10.0.0.1:8080 ",
        ] {
            assert_eq!(check_proxy_url("HTTPS_PROXY", good), Ok(()), "{good}");
        }
        for (bad, reason) in [
            ("https://proxy:3128", "https:// proxies"),
            ("socks5://proxy:1080", "SOCKS"),
            ("ftp://proxy", "scheme"),
            ("http://", "not a URL"),
            ("http://user:secret@:3128", "no host"),
            ("http://proxy:3128/path", "no path"),
            ("http://pro xy:3128", "not a URL"),
        ] {
            let err = check_proxy_url("HTTPS_PROXY", bad).unwrap_err().to_string();
            assert!(
                err.starts_with("HTTPS_PROXY is not a usable proxy"),
                "{err}"
            );
            assert!(err.contains(reason), "{bad}: {err}");
            assert!(!err.contains("secret"), "{err}");
        }
    }

    #[test]
    fn a_raw_at_sign_in_the_credentials_is_refused_without_naming_any_part() {
        for (name, value) in [
            ("--proxy", "http://alice:pw@PART@proxy.corp:3128"),
            ("HTTPS_PROXY", "alice:pw@PART@proxy.corp:3128"),
            ("http_proxy", "http://alice:pw@PART@@proxy.corp"),
        ] {
            let err = check_proxy_url(name, value).unwrap_err().to_string();
            assert!(
                err.starts_with(&format!("{name} is not a usable proxy: more than one '@'")),
                "{err}"
            );
            for part in ["pw", "PART", "alice"] {
                assert!(!err.contains(part), "{value}: {err}");
            }
            // Nor is it used as a proxy whose host is part of the password.
            let rules = ProxyRules::build(Some(&(name, value.into())), None, None);
            let Route::Broken(err) = route(&rules, "http://example.com/") else {
                panic!("{value} must not be used");
            };
            assert!(!err.to_string().contains("PART"), "{err}");
        }
        // Escaped, it is the password, sent to the proxy and named nowhere.
        let escaped = setting("http://alice:pw%40PART@proxy.corp:3128");
        let rules = ProxyRules::build(None, Some(&escaped), None);
        let Route::Proxy { uri, auth } = route(&rules, "https://api.e2b.app/") else {
            panic!("not proxied");
        };
        assert_eq!(host_and_port(&uri), "proxy.corp:3128");
        // base64("alice:pw@PART")
        assert_eq!(auth.unwrap(), "Basic YWxpY2U6cHdAUEFSVA==");
    }

    #[test]
    fn proxies_are_named_by_host_and_port_only() {
        let uri: Uri = "http://PART@proxy.corp/".parse().unwrap();
        assert_eq!(host_and_port(&uri), "proxy.corp:80");
        let url = "http://alice:pw@PART@[::1]:3128".to_string();
        let debug = format!("{:?}", Proxy::Url(url));
        assert_eq!(debug, "Url([::1]:3128)");
        assert_eq!(named("alice:pw@proxy:1"), "proxy:1");
        assert_eq!(named("http://pw@"), "(not a URL)");
    }

    #[tokio::test]
    async fn a_proxy_that_cannot_be_reached_is_named_by_host_and_port() {
        // A closed port on this machine.
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        // Straight into the matcher, past `check_proxy_url`: whatever it
        // takes for the host, the message names host and port alone.
        let url = format!("http://alice:pw@PART@127.0.0.1:{port}");
        let rules = ProxyRules {
            matcher: Some(Matcher::builder().http(url).build()),
            exempt: Matcher::builder().all("http://no-proxy.invalid").build(),
            broken_http: None,
            broken_https: None,
        };
        let mut connector = ProxyConnector::new(HttpConnector::new(), Arc::new(rules));
        let Err(err) = connector.call("http://example.com/".parse().unwrap()).await else {
            panic!("connected to a closed port");
        };
        let err = err.to_string();
        assert!(
            err.starts_with(&format!("cannot connect to proxy 127.0.0.1:{port}: ")),
            "{err}"
        );
        assert!(!err.contains("PART") && !err.contains("pw"), "{err}");
    }

    #[test]
    fn https_targets_tunnel_through_the_proxy_with_its_credentials() {
        let proxy = setting("http://user:secret@proxy.corp:3128");
        let rules = ProxyRules::build(Some(&proxy), Some(&proxy), None);
        let Route::Proxy { uri, auth } = route(&rules, "https://api.e2b.app/sandboxes") else {
            panic!("not proxied");
        };
        assert_eq!(uri.authority().unwrap().as_str(), "proxy.corp:3128");
        // base64("user:secret")
        assert_eq!(auth.unwrap(), "Basic dXNlcjpzZWNyZXQ=");
        assert!(matches!(
            route(&rules, "http://example.com/"),
            Route::Proxy { .. }
        ));
    }

    #[test]
    fn loopback_and_no_proxy_targets_go_direct() {
        let proxy = setting("http://proxy:3128");
        let rules = ProxyRules::build(
            Some(&proxy),
            Some(&proxy),
            Some("internal.corp, 10.0.0.0/8".into()),
        );
        for direct in [
            "http://127.0.0.1:3000/",
            "http://localhost:3000/",
            "http://[::1]:3000/",
            "https://api.internal.corp/",
            "https://10.1.2.3/",
        ] {
            assert!(matches!(route(&rules, direct), Route::Direct), "{direct}");
        }
        assert!(matches!(
            route(&rules, "https://api.e2b.app/"),
            Route::Proxy { .. }
        ));
    }

    #[test]
    fn each_scheme_uses_its_own_setting() {
        let https = setting("http://secure-proxy:3128");
        let rules = ProxyRules::build(None, Some(&https), None);
        assert!(matches!(
            route(&rules, "http://example.com/"),
            Route::Direct
        ));
        let Route::Proxy { uri, auth } = route(&rules, "https://example.com/") else {
            panic!("not proxied");
        };
        assert_eq!(uri.host(), Some("secure-proxy"));
        assert!(auth.is_none());
    }

    #[test]
    fn a_broken_setting_fails_what_it_covers_without_showing_credentials() {
        let broken = setting("https://user:secret@proxy:3128");
        let rules = ProxyRules::build(None, Some(&broken), Some("exempt.corp".into()));
        assert!(rules.is_active());
        let Route::Broken(err) = route(&rules, "https://api.e2b.app/") else {
            panic!("a broken HTTPS_PROXY must not fall back to direct");
        };
        assert!(err.to_string().contains("HTTPS_PROXY"), "{err}");
        assert!(!err.to_string().contains("secret"), "{err}");
        assert!(matches!(
            route(&rules, "http://example.com/"),
            Route::Direct
        ));
        assert!(matches!(
            route(&rules, "https://a.exempt.corp/"),
            Route::Direct
        ));
    }

    #[test]
    fn direct_and_unset_proxy_nothing() {
        let rules = ProxyRules::new(&Proxy::Direct);
        assert!(!rules.is_active());
        assert!(matches!(
            route(&rules, "https://api.e2b.app/"),
            Route::Direct
        ));
        let rules = ProxyRules::build(None, None, Some("*".into()));
        assert!(!rules.is_active());
    }
}
