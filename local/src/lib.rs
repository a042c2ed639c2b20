//! A local E2B-compatible sandbox server.
//!
//! One listener on `127.0.0.1` serves both of E2B's planes, so the official
//! SDKs work unchanged with `E2B_API_URL` and `E2B_SANDBOX_URL` both set to
//! [`LocalServer::url`] and `E2B_API_KEY` set to [`LocalServer::api_key`]:
//!
//! - the control plane (`/v2/sandboxes`, `/sandboxes/{id}/…`);
//! - the sandbox plane, routed like E2B's edge proxy by the
//!   `E2b-Sandbox-Id` + `E2b-Sandbox-Port` headers (or a `{port}-{id}.…`
//!   Host): envd on 49983 (Connect JSON `process.Process` and
//!   `filesystem.Filesystem`, `/files`) and the code interpreter on 49999
//!   ([`interpreter`]); any other port is forwarded to a server a sandboxed
//!   command listens on.
//!
//! Commands and code really run, each sandbox in its own root under
//! bubblewrap, all its processes in one set of namespaces. Tests can read
//! request counters ([`Stats`]) and, in a server built with the `faults`
//! feature, inject faults (`Faults`).
//!
//! ```no_run
//! # async fn demo() -> Result<(), e2b_local::StartError> {
//! let server = e2b_local::LocalServer::start(e2b_local::Options::default()).await?;
//! println!("E2B_API_URL={} E2B_API_KEY={}", server.url(), server.api_key());
//! server.shutdown().await;
//! # Ok(()) }
//! ```
#![deny(unsafe_code)]
#![warn(missing_docs)]

mod control_plane;
mod dispatch;
#[cfg(feature = "edge")]
pub mod edge;
mod edge_proxy;
mod ephemeral;
#[cfg(feature = "faults")]
pub mod faults;
mod heap;
mod http_errors;
mod idempotency;
mod isolation;
mod leftovers;
mod names;
mod paths;
mod procfs;
mod registry;
mod sandbox;
pub mod serve_command;
mod signature;
mod snapshots;
mod state;
mod stats;
mod templates;
mod tls;

/// The code interpreter envd runs in each sandbox.
pub mod interpreter {
    /// The languages it has kernels for.
    pub use e2b_wire::interpreter::LOCAL_LANGUAGES as LANGUAGES;
}

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

#[cfg(feature = "faults")]
pub use faults::{Fault, FaultRule, Faults};
pub use isolation::Limits;
pub use leftovers::{leftovers, Leftovers};
pub use stats::{RecordedRequest, Stats};
pub use tls::TlsIdentity;

use crate::isolation::Launcher;
use crate::registry::Registry;

/// How processes are isolated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Isolation {
    /// bubblewrap mount + pid namespaces (the default; required unless opted out).
    #[default]
    Bwrap,
    /// No isolation at all: commands run directly on the host. Explicit opt-out only.
    None,
}

/// Server options.
#[derive(Debug, Clone)]
pub struct Options {
    /// Port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// The API key clients must send as `X-API-KEY`.
    pub api_key: String,
    /// Most sandboxes alive (running or paused) at once; over it, create answers 429.
    pub max_sandboxes: usize,
    /// How processes are isolated.
    pub isolation: Isolation,
    /// Where sandbox roots live; `None` = a fresh temporary directory removed on shutdown.
    /// Everything in it but paused sandboxes' and snapshots' goes at shutdown.
    pub data_dir: Option<PathBuf>,
    /// Keep sandboxes and snapshots in this directory across restarts
    /// (instead of `data_dir`, which must then be `None`): paused
    /// sandboxes come back paused (their processes gone: they cold-boot
    /// on their disks when resumed), snapshots stay; sandboxes running
    /// when the server stopped, even by `kill -9`, are gone. One server
    /// at a time may use it. [`default_state_dir`] is the standalone
    /// server's default; `None` (the default here) keeps nothing.
    pub state_dir: Option<PathBuf>,
    /// The most bytes snapshots and live forks may take together (their
    /// disk images' allocated blocks); a snapshot or fork past it is
    /// refused with 507, deleting nothing.
    pub snapshot_budget: u64,
    /// Sandbox TTLs run this many times faster than wall time (a TTL of `T`
    /// seconds lasts `T / time_scale` real seconds), for tests on a scaled clock.
    pub time_scale: f64,
    /// What each sandbox may use (CPU, memory, disk, processes).
    pub limits: Limits,
    /// A cgroup v2 directory to make the sandboxes' groups in (a delegated
    /// subtree), instead of the machine's hierarchy found at
    /// `/sys/fs/cgroup`; the limits of the controllers it does not have are
    /// not enforced. Needs a server run as root.
    pub cgroup_parent: Option<PathBuf>,
    /// Serve HTTPS with this certificate instead of plain HTTP (the one
    /// listener either way).
    pub tls: Option<TlsIdentity>,
    /// Record every request ([`LocalServer::take_requests`]).
    pub record_requests: bool,
    /// Keep sandbox roots read-only but for the homes, `/tmp` and
    /// `/var/tmp`, even where they could be copy-on-write (a server run as
    /// root with disk images): the benchmark's comparison.
    pub read_only_root: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            port: 0,
            api_key: generate_api_key(),
            max_sandboxes: 100,
            isolation: Isolation::Bwrap,
            data_dir: None,
            state_dir: None,
            snapshot_budget: DEFAULT_SNAPSHOT_BUDGET,
            time_scale: 1.0,
            limits: Limits::default(),
            cgroup_parent: None,
            tls: None,
            read_only_root: false,
            record_requests: false,
        }
    }
}

pub use names::generate_api_key;
pub use state::stored_api_key;

/// [`Options::snapshot_budget`]'s default: 10 GiB.
pub const DEFAULT_SNAPSHOT_BUDGET: u64 = 10 << 30;

/// Where a standalone server keeps its state unless told otherwise:
/// `/var/lib/e2b-tools/local` for root, else
/// `$XDG_STATE_HOME/e2b-tools/local` or `~/.local/state/e2b-tools/local`;
/// `None` without a home.
pub fn default_state_dir() -> Option<PathBuf> {
    if rustix::process::getuid().is_root() {
        return Some(PathBuf::from("/var/lib/e2b-tools/local"));
    }
    let absolute = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    let base = std::env::var_os("XDG_STATE_HOME")
        .and_then(absolute)
        .or_else(|| {
            std::env::var_os("HOME")
                .and_then(absolute)
                .map(|h| h.join(".local/state"))
        })?;
    Some(base.join("e2b-tools").join("local"))
}

/// Why the server did not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Isolation is required but cannot be set up.
    #[error("{0}")]
    Isolation(String),
    /// The port could not be bound.
    #[error("cannot listen on 127.0.0.1:{port}: {source}")]
    Bind {
        /// The port asked for.
        port: u16,
        /// The OS error.
        source: std::io::Error,
    },
    /// The data directory could not be created.
    #[error("cannot create the data directory {path}: {source}")]
    DataDir {
        /// The directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// Invalid options.
    #[error("invalid options: {0}")]
    Options(String),
    /// The state directory cannot be used (or another server uses it).
    #[error("{0}")]
    StateDir(String),
}

/// A running server. Dropping it stops it best-effort; prefer [`LocalServer::shutdown`].
pub struct LocalServer {
    addr: SocketAddr,
    https: bool,
    api_key: String,
    registry: Arc<Registry>,
    #[cfg(feature = "faults")]
    faults: Faults,
    isolation: String,
    state_dir: Option<PathBuf>,
    shutdown_tx: Option<tokio::sync::oneshot::Sender<()>>,
    serve_task: Option<tokio::task::JoinHandle<()>>,
    _temp_dir: Option<tempfile::TempDir>,
}

impl LocalServer {
    /// Binds `127.0.0.1:<port>`, checks isolation and starts serving.
    pub async fn start(opts: Options) -> Result<LocalServer, StartError> {
        if !(opts.time_scale.is_finite() && opts.time_scale > 0.0) {
            return Err(StartError::Options(format!(
                "time_scale must be a positive number, got {}",
                opts.time_scale
            )));
        }
        if opts.api_key.is_empty() {
            return Err(StartError::Options("api_key must not be empty".into()));
        }
        if opts.state_dir.is_some() && opts.data_dir.is_some() {
            return Err(StartError::Options(
                "set data_dir or state_dir, not both".into(),
            ));
        }
        let state = opts
            .state_dir
            .as_deref()
            .map(state::StateDir::open)
            .transpose()
            .map_err(StartError::StateDir)?;
        let (temp_dir, data_dir) = match opts.state_dir.as_ref().or(opts.data_dir.as_ref()) {
            Some(dir) => {
                std::fs::create_dir_all(dir).map_err(|source| StartError::DataDir {
                    path: dir.clone(),
                    source,
                })?;
                (None, dir.clone())
            }
            None => {
                let tmp = ephemeral::create().map_err(|source| StartError::DataDir {
                    path: std::env::temp_dir(),
                    source,
                })?;
                let path = tmp.path().to_path_buf();
                (Some(tmp), path)
            }
        };
        let data_dir = data_dir
            .canonicalize()
            .map_err(|source| StartError::DataDir {
                path: data_dir.clone(),
                source,
            })?;
        let acceptor = opts
            .tls
            .as_ref()
            .map(tls::acceptor)
            .transpose()
            .map_err(StartError::Options)?;
        let launcher = Launcher::detect(
            &opts.isolation,
            &data_dir,
            opts.limits,
            opts.cgroup_parent.as_deref(),
            !opts.read_only_root,
        )
        .await
        .map_err(|e| StartError::Isolation(e.0))?;
        let isolation = launcher.describe();
        tracing::info!("{isolation}");
        let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, opts.port))
            .await
            .map_err(|source| StartError::Bind {
                port: opts.port,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| StartError::Bind {
            port: opts.port,
            source,
        })?;
        if state.is_none() {
            // What a server that keeps nothing left there when it died.
            let _ = std::fs::remove_dir_all(data_dir.join(state::SNAPSHOTS_DIR));
        }
        let snapshots =
            snapshots::Snapshots::open(&data_dir.join(state::SNAPSHOTS_DIR), opts.snapshot_budget)
                .map_err(|source| StartError::DataDir {
                    path: data_dir.join(state::SNAPSHOTS_DIR),
                    source,
                })?;
        let registry = Registry::new(registry::RegistryParts {
            data_dir,
            launcher: Arc::new(launcher),
            max_sandboxes: opts.max_sandboxes,
            time_scale: opts.time_scale,
            counters: if opts.record_requests {
                stats::Counters::recording()
            } else {
                stats::Counters::default()
            },
            state,
            snapshots,
        });
        let restoring = Arc::clone(&registry);
        let restored = tokio::task::spawn_blocking(move || restoring.restore())
            .await
            .unwrap_or(0);
        if restored > 0 {
            tracing::info!("{restored} paused sandboxes restored");
        }
        registry.clone().spawn_reaper();
        #[cfg(feature = "faults")]
        let faults = Faults::new(registry.clone());
        let app = dispatch::app(
            registry.clone(),
            #[cfg(feature = "faults")]
            faults.clone(),
            opts.api_key.clone(),
            opts.time_scale,
        );
        let (shutdown_tx, shutdown_rx) = tokio::sync::oneshot::channel::<()>();
        let shutdown = async move {
            let _ = shutdown_rx.await;
        };
        let serve_task = match acceptor {
            Some(acceptor) => {
                let listener = tls::TlsListener::new(listener, acceptor).map_err(|source| {
                    StartError::Bind {
                        port: opts.port,
                        source,
                    }
                })?;
                tokio::spawn(serve(listener, app, shutdown))
            }
            None => {
                // Streamed answers (a command's events) go out in small
                // writes; with Nagle each waited for the client's delayed
                // ACK (40 ms).
                let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
                    if let Err(e) = tcp.set_nodelay(true) {
                        tracing::debug!("TCP_NODELAY: {e}");
                    }
                });
                tokio::spawn(serve(listener, app, shutdown))
            }
        };
        Ok(LocalServer {
            addr,
            https: opts.tls.is_some(),
            api_key: opts.api_key,
            registry,
            #[cfg(feature = "faults")]
            faults,
            isolation,
            state_dir: opts.state_dir.clone(),
            shutdown_tx: Some(shutdown_tx),
            serve_task: Some(serve_task),
            _temp_dir: temp_dir,
        })
    }

    /// `http://127.0.0.1:<port>` (`https://` with [`Options::tls`]): both
    /// `E2B_API_URL` and `E2B_SANDBOX_URL`.
    pub fn url(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// The requests recorded since the last call, oldest first (empty
    /// unless [`Options::record_requests`]).
    pub fn take_requests(&self) -> Vec<RecordedRequest> {
        self.registry.counters.take_recorded()
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The API key clients must send.
    pub fn api_key(&self) -> &str {
        &self.api_key
    }

    /// Which isolation layers are in force, in one line (for a startup
    /// message): users, limits, disk and network.
    pub fn isolation(&self) -> &str {
        &self.isolation
    }

    /// The state directory paused sandboxes and snapshots are kept in
    /// across restarts ([`Options::state_dir`]); `None`: nothing is kept.
    pub fn state_dir(&self) -> Option<&std::path::Path> {
        self.state_dir.as_deref()
    }

    /// The fault-injection handle (feature `faults`: a server built for
    /// tests).
    #[cfg(feature = "faults")]
    pub fn faults(&self) -> &Faults {
        &self.faults
    }

    /// A snapshot of the request and sandbox counters.
    pub fn stats(&self) -> Stats {
        self.registry.stats()
    }

    /// Stops serving, kills every sandbox's processes and removes the roots.
    pub async fn shutdown(mut self) {
        if let Some(tx) = self.shutdown_tx.take() {
            let _ = tx.send(());
        }
        self.registry.shutdown_all().await;
        if let Some(task) = self.serve_task.take() {
            // Streams still open (a background command's) would keep graceful
            // shutdown waiting; their processes are dead, so stop waiting.
            task.abort();
            let _ = task.await;
        }
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown_tx.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.serve_task.take() {
            task.abort();
        }
        self.registry.shutdown_all_now();
    }
}

async fn serve<L>(
    listener: L,
    app: axum::Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) where
    L: axum::serve::Listener,
    L::Addr: std::fmt::Debug,
{
    let result = axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await;
    if let Err(e) = result {
        tracing::error!("local server stopped: {e}");
    }
}

/// Runs a server until the process is interrupted (Ctrl-C / SIGTERM), then
/// shuts it down. Prints nothing; `on_ready` gets the started server first
/// (to print its URL and key).
pub async fn serve_forever(
    opts: Options,
    on_ready: impl FnOnce(&LocalServer),
) -> Result<(), StartError> {
    serve_until(opts, std::future::pending(), on_ready).await
}

/// [`serve_forever`], stopping also when `stop` completes.
pub async fn serve_until(
    opts: Options,
    stop: impl std::future::Future<Output = ()>,
    on_ready: impl FnOnce(&LocalServer),
) -> Result<(), StartError> {
    let server = LocalServer::start(opts).await?;
    on_ready(&server);
    tokio::select! {
        _ = wait_for_stop_signal() => {}
        _ = stop => {}
    }
    server.shutdown().await;
    Ok(())
}

async fn wait_for_stop_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
