//! E2B's edge, offline (feature `edge`): a test CA and certificates for
//! E2B's names, the server's TLS face with them, and a CONNECT proxy that
//! sends every tunnel to that face, as a corporate proxy would send it to
//! E2B. For tests and benchmarks of clients on their production path
//! (default URLs, TLS, a proxy, the system trust store).

use crate::{LocalServer, Options, TlsIdentity};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The names E2B serves: the API, the shared sandbox host and the
/// `{port}-{id}` hosts.
pub const E2B_NAMES: [&str; 3] = ["api.e2b.app", "sandbox.e2b.app", "*.e2b.app"];

/// A CA a client is told to trust (`SSL_CERT_FILE`) and leaf
/// certificates it signs. Generated afresh: nothing outside the process
/// trusts it.
pub struct TestCa {
    cert: rcgen::Certificate,
    key: KeyPair,
    dir: tempfile::TempDir,
}

/// How a leaf certificate is wrong, if it is.
#[derive(Clone, Copy)]
pub enum Leaf {
    /// Valid for [`E2B_NAMES`].
    Valid,
    /// Valid, but for another name only.
    WrongName,
    /// For the right names, expired in 2020.
    Expired,
}

impl Default for TestCa {
    fn default() -> Self {
        Self::new()
    }
}

impl TestCa {
    /// A new CA, its certificate written to a temporary file.
    ///
    /// # Panics
    /// If key generation or the temporary file fails (test set-up).
    pub fn new() -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "e2b-tools test CA");
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let key = KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ca.pem"), cert.pem()).unwrap();
        Self { cert, key, dir }
    }

    /// The CA certificate's file, for `SSL_CERT_FILE`.
    pub fn file(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// A leaf certificate and key signed by this CA.
    ///
    /// # Panics
    /// If signing fails (test set-up).
    pub fn leaf(&self, leaf: Leaf) -> TlsIdentity {
        let names: Vec<String> = match leaf {
            Leaf::WrongName => vec!["elsewhere.example".into()],
            Leaf::Valid | Leaf::Expired => E2B_NAMES.iter().map(|n| n.to_string()).collect(),
        };
        let mut params = CertificateParams::new(names).unwrap();
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        if let Leaf::Expired = leaf {
            params.not_before = rcgen::date_time_ymd(2019, 1, 1);
            params.not_after = rcgen::date_time_ymd(2020, 1, 1);
        }
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.cert, &self.key).unwrap();
        TlsIdentity {
            cert_chain_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }
}

/// A local server speaking HTTPS with `leaf`, recording requests.
///
/// # Panics
/// If the server does not start.
pub async fn tls_server(ca: &TestCa, leaf: Leaf, time_scale: f64) -> LocalServer {
    LocalServer::start(Options {
        tls: Some(ca.leaf(leaf)),
        record_requests: true,
        time_scale,
        ..Options::default()
    })
    .await
    .expect("the local server starts with TLS")
}

/// What the proxy does with a CONNECT.
#[derive(Clone, Copy)]
pub enum ProxyMode {
    /// Opens the tunnel to this address, whatever the target.
    Forward(SocketAddr),
    /// Answers 403.
    Refuse,
    /// Answers 200, then closes the tunnel at once.
    DropTunnel,
    /// A forwarding proxy for `http` targets: passes absolute-form requests
    /// (and the rest of their connection) to this plain-HTTP address.
    ForwardPlain(SocketAddr),
}

/// One CONNECT (or first forwarded request) the proxy saw.
#[derive(Debug, Clone)]
pub struct Connect {
    /// `host:port` asked for (a forwarded request's absolute URL).
    pub target: String,
    /// Its `Proxy-Authorization` header, if any.
    pub authorization: Option<String>,
}

/// A CONNECT-only proxy on 127.0.0.1.
pub struct TunnelProxy {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Connect>>>,
    task: tokio::task::JoinHandle<()>,
}

impl TunnelProxy {
    /// Listens on a free port of 127.0.0.1.
    ///
    /// # Panics
    /// If it cannot bind.
    pub async fn start(mode: ProxyMode) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let log = Arc::clone(&log);
                tokio::spawn(async move {
                    let _ = tunnel(client, mode, log).await;
                });
            }
        });
        Self { addr, seen, task }
    }

    /// `http://127.0.0.1:<port>`, for `HTTPS_PROXY`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The CONNECTs so far.
    pub fn connects(&self) -> Vec<Connect> {
        self.seen
            .lock()
            .map(|seen| seen.clone())
            .unwrap_or_default()
    }
}

impl Drop for TunnelProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn tunnel(
    mut client: TcpStream,
    mode: ProxyMode,
    log: Arc<Mutex<Vec<Connect>>>,
) -> std::io::Result<()> {
    // The request head, byte by byte up to the blank line: the tunnel's
    // first bytes (the TLS ClientHello) must stay unread.
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() > 16 * 1024 || client.read_u8().await.map(|b| head.push(b)).is_err() {
            return Ok(());
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let authorization = lines
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.eq_ignore_ascii_case("proxy-authorization"))
        .map(|(_, value)| value.trim().to_string());
    if let Ok(mut log) = log.lock() {
        log.push(Connect {
            target: target.to_string(),
            authorization,
        });
    }
    match (method, mode) {
        ("CONNECT", _) => {}
        (_, ProxyMode::ForwardPlain(upstream)) => {
            let mut server = TcpStream::connect(upstream).await?;
            server.write_all(head.as_bytes()).await?;
            tokio::io::copy_bidirectional(&mut client, &mut server).await?;
            return Ok(());
        }
        _ => {
            return client
                .write_all(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
                .await;
        }
    }
    match mode {
        ProxyMode::Refuse => {
            client
                .write_all(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
                .await
        }
        ProxyMode::DropTunnel => {
            client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await
        }
        ProxyMode::ForwardPlain(_) => {
            client
                .write_all(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
                .await
        }
        ProxyMode::Forward(upstream) => {
            let mut server = TcpStream::connect(upstream).await?;
            client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await?;
            tokio::io::copy_bidirectional(&mut client, &mut server).await?;
            Ok(())
        }
    }
}
