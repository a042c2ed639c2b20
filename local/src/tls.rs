//! The server's TLS face: the one listener speaking HTTPS with a
//! certificate the caller provides (tests generate one for `api.e2b.app`,
//! `sandbox.e2b.app` and `*.e2b.app`), so clients can be run exactly as
//! against E2B itself: default URLs, TLS, SNI, the system trust store.
//!
//! Handshakes run in their own tasks and finished streams queue for
//! `axum::serve`: one slow or silent client does not hold up the others.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

/// A certificate chain and its private key, PEM-encoded.
#[derive(Clone)]
pub struct TlsIdentity {
    /// The certificate first, then any intermediates.
    pub cert_chain_pem: String,
    /// The certificate's private key (PKCS#8, PKCS#1 or SEC1).
    pub key_pem: String,
}

impl std::fmt::Debug for TlsIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsIdentity").finish_non_exhaustive()
    }
}

/// How long a client may take to finish its handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Handshakes finished, waiting for `accept`.
const QUEUE: usize = 64;

pub(crate) fn acceptor(identity: &TlsIdentity) -> Result<TlsAcceptor, String> {
    let certs = CertificateDer::pem_slice_iter(identity.cert_chain_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("TLS certificate: {e}"))?;
    if certs.is_empty() {
        return Err("TLS certificate: no certificate in the PEM".into());
    }
    let key = PrivateKeyDer::from_pem_slice(identity.key_pem.as_bytes())
        .map_err(|e| format!("TLS key: {e}"))?;
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| format!("TLS: {e}"))?
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .map_err(|e| format!("TLS: {e}"))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// A listener whose connections are TLS streams (see the module docs).
pub(crate) struct TlsListener {
    local_addr: SocketAddr,
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    accept_task: tokio::task::JoinHandle<()>,
}

impl TlsListener {
    pub(crate) fn new(listener: TcpListener, acceptor: TlsAcceptor) -> io::Result<Self> {
        let local_addr = listener.local_addr()?;
        let (tx, ready) = mpsc::channel(QUEUE);
        let accept_task = tokio::spawn(async move {
            loop {
                let (tcp, peer) = match listener.accept().await {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        tracing::debug!("accept: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = tcp.set_nodelay(true);
                let acceptor = acceptor.clone();
                let tx = tx.clone();
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                        Ok(Ok(tls)) => {
                            let _ = tx.send((tls, peer)).await;
                        }
                        Ok(Err(e)) => tracing::debug!(%peer, "TLS handshake failed: {e}"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                });
            }
        });
        Ok(Self {
            local_addr,
            ready,
            accept_task,
        })
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.accept_task.abort();
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(accepted) => accepted,
            // The accept task ended (it only does on abort): serve nothing more.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(self.local_addr)
    }
}
