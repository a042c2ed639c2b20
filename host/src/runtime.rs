//! [`Runtime`]: the component compiled once, linked with WASI and
//! `wasi:http`, ready to instantiate cheaply for each session.

use crate::artifact_cache;
use crate::bindings::E2bToolsPre;
use crate::clock::{ScaledClock, ScaledClockView};
use crate::outbound::OutboundClient;
use crate::state::SessionState;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Engine};

/// The guest component built by `host/build.rs` from this workspace.
pub const EMBEDDED_COMPONENT: &[u8] = include_bytes!(env!("E2B_TOOLS_EMBEDDED_COMPONENT"));

/// The stateless guest component (world `e2b-tools-stateless`), for
/// [`StatelessRuntime`](crate::StatelessRuntime).
pub const EMBEDDED_STATELESS: &[u8] = include_bytes!(env!("E2B_TOOLS_EMBEDDED_STATELESS"));

/// Where the component comes from.
#[derive(Debug, Clone)]
pub enum ComponentSource {
    /// The component embedded in this crate ([`EMBEDDED_COMPONENT`]).
    Embedded,
    /// The stateless component embedded in this crate
    /// ([`EMBEDDED_STATELESS`]).
    EmbeddedStateless,
    /// A `.wasm` component file (or a `.wat` text).
    File(PathBuf),
    /// Component bytes (binary or `.wat` text).
    Bytes(Vec<u8>),
}

/// Where compiled machine code is cached between processes.
#[derive(Debug, Clone, Default)]
pub enum CompileCache {
    /// `$XDG_CACHE_HOME/e2b-tools` (else `~/.cache/e2b-tools`).
    #[default]
    Default,
    /// This directory.
    Directory(PathBuf),
    /// No cache: every load compiles.
    Disabled,
}

/// Options of [`Runtime::load_with`].
#[derive(Debug, Clone, Default)]
pub struct RuntimeOptions {
    /// The compilation cache. A debug build compiles the component in
    /// seconds; with the cache a second process start takes milliseconds.
    pub cache: CompileCache,
    /// Where outbound connections go: the environment's `HTTPS_PROXY` /
    /// `HTTP_PROXY` / `NO_PROXY` by default.
    pub proxy: crate::Proxy,
}

/// Why the component could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The component file could not be read.
    #[error("cannot read component {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// wasmtime's engine or cache could not be set up.
    #[error("cannot set up wasmtime: {0}")]
    Engine(String),
    /// The bytes are not a valid component.
    #[error("cannot compile the component: {0}")]
    Compile(String),
    /// The component does not fit this host: it imports something the host
    /// does not provide, or does not export the `e2b-tools` world.
    #[error("the component does not match the e2b-tools world: {0}")]
    Link(String),
}

/// The loaded component. Cheap to clone; share one per process and open
/// [`Session`](crate::Session)s from it.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<RuntimeInner>,
}

struct RuntimeInner {
    pre: E2bToolsPre<SessionState>,
    client: OutboundClient,
    proxy: crate::Proxy,
    load_time: Duration,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("load_time", &self.inner.load_time)
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// Loads a component with the default options (compilation cache on).
    /// Blocking: compiling takes up to seconds on a cache miss.
    pub fn load(source: ComponentSource) -> Result<Self, RuntimeError> {
        Self::load_with(source, RuntimeOptions::default())
    }

    /// Loads a component. Blocking: compiling takes up to seconds on a
    /// cache miss.
    pub fn load_with(
        source: ComponentSource,
        options: RuntimeOptions,
    ) -> Result<Self, RuntimeError> {
        let started = Instant::now();
        let client = OutboundClient::with_proxy(&options.proxy);
        let proxy = options.proxy.clone();
        let (component, linker) = compile(source, options)?;
        let pre = linker
            .instantiate_pre(&component)
            .and_then(E2bToolsPre::new)
            .map_err(|err| RuntimeError::Link(format!("{err:#}")))?;
        let load_time = started.elapsed();
        tracing::debug!(load_ms = load_time.as_millis() as u64, "component loaded");
        Ok(Self {
            inner: Arc::new(RuntimeInner {
                pre,
                client,
                proxy,
                load_time,
            }),
        })
    }

    /// How long loading (compiling or reading the cache, linking) took.
    pub fn load_time(&self) -> Duration {
        self.inner.load_time
    }

    /// Where its sessions' connections go.
    pub fn proxy(&self) -> &crate::Proxy {
        &self.inner.proxy
    }

    pub(crate) fn pre(&self) -> &E2bToolsPre<SessionState> {
        &self.inner.pre
    }

    pub(crate) fn client(&self) -> &OutboundClient {
        &self.inner.client
    }
}

/// The component of `source`, compiled (or read from the cache), and the
/// linker every instance of it is made with.
pub(crate) fn compile(
    source: ComponentSource,
    options: RuntimeOptions,
) -> Result<(Component, Linker<SessionState>), RuntimeError> {
    let engine = build_engine()?;
    let bytes: std::borrow::Cow<'_, [u8]> = match source {
        ComponentSource::Embedded => EMBEDDED_COMPONENT.into(),
        ComponentSource::EmbeddedStateless => EMBEDDED_STATELESS.into(),
        ComponentSource::Bytes(bytes) => bytes.into(),
        ComponentSource::File(path) => std::fs::read(&path)
            .map_err(|source| RuntimeError::Read {
                path: path.clone(),
                source,
            })?
            .into(),
    };
    let cache_dir = match options.cache {
        CompileCache::Default => artifact_cache::default_dir(),
        CompileCache::Directory(dir) => Some(dir),
        CompileCache::Disabled => None,
    };
    let artifact = cache_dir.map(|dir| artifact_cache::artifact_path(&dir, &engine, &bytes));
    let component = match artifact
        .as_deref()
        .and_then(|path| artifact_cache::load(&engine, path))
    {
        Some(component) => component,
        None => {
            let component = Component::new(&engine, &bytes)
                .map_err(|err| RuntimeError::Compile(format!("{err:#}")))?;
            if let Some(path) = &artifact {
                artifact_cache::store(&component, path);
            }
            component
        }
    };
    let linker = build_linker(&engine).map_err(|err| RuntimeError::Link(format!("{err:#}")))?;
    Ok((component, linker))
}

fn build_engine() -> Result<Engine, RuntimeError> {
    let mut config = Config::new();
    config.wasm_component_model(true);
    // A CPU budget per call (see `SessionOptions::fuel_per_call`): fuel
    // counts only the guest's own instructions, not time spent waiting on
    // HTTP or timers, unlike an epoch deadline.
    config.consume_fuel(true);
    // An idle session holds its memory's mappings and a cached fiber stack:
    // 7 mappings with the guard region below linear memory, 6 without. At
    // 7, Linux's default `vm.max_map_count` (65,530) stops a process at
    // about 9,300 sessions. The guard *after* memory, which bounds checks
    // rely on, stays; the one before is only a second line of defence
    // against a Cranelift bug.
    config.guard_before_linear_memory(false);
    Engine::new(&config).map_err(|err| RuntimeError::Engine(format!("{err:#}")))
}

/// WASI p2 (no preopens, no sockets: see [`SessionState`]), `wasi:http`
/// through our hooks, and our monotonic clock shadowing wasmtime-wasi's.
fn build_linker(engine: &Engine) -> wasmtime::Result<Linker<SessionState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
    linker.allow_shadowing(true);
    wasmtime_wasi::p2::bindings::clocks::monotonic_clock::add_to_linker::<_, ScaledClock>(
        &mut linker,
        |state: &mut SessionState| ScaledClockView {
            clock: &state.clock,
            table: &mut state.table,
        },
    )?;
    linker.allow_shadowing(false);
    Ok(linker)
}
