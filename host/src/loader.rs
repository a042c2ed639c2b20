//! Loading a component, the one way both runtimes do it: the bytes from
//! their source, the engine, the compiled code (from the artifact cache
//! when it has it), the linker with WASI, `wasi:http` and our clock, and
//! the pooled outbound client. [`Runtime`](crate::Runtime) and
//! [`StatelessRuntime`](crate::StatelessRuntime) differ only in what they
//! make of the result.

use crate::artifact_cache;
use crate::clock::{ScaledClock, ScaledClockView};
use crate::error::WasmError;
use crate::outbound::OutboundClient;
use crate::proxy::Proxy;
use crate::state::SessionState;
use std::borrow::Cow;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use wasmtime::component::{Component, InstancePre, Linker};
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

/// Options of [`Runtime::load_with`](crate::Runtime::load_with) and
/// [`StatelessRuntime::load_with`](crate::StatelessRuntime::load_with).
#[derive(Debug, Clone, Default)]
pub struct RuntimeOptions {
    /// The compilation cache. A debug build compiles the component in
    /// seconds; with the cache a second process start takes milliseconds.
    pub cache: CompileCache,
    /// Where outbound connections go: the environment's `HTTPS_PROXY` /
    /// `HTTP_PROXY` / `NO_PROXY` by default.
    pub proxy: Proxy,
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
    Engine(#[source] WasmError),
    /// The bytes are not a valid component.
    #[error("cannot compile the component: {0}")]
    Compile(#[source] WasmError),
    /// The component does not fit this host: it imports something the host
    /// does not provide, or does not export the `e2b-tools` world.
    #[error("the component does not match the e2b-tools world: {0}")]
    Link(#[source] WasmError),
    /// A component loaded as the stateless world exports no functions.
    #[error(
        "the component does not match the e2b-tools world: the component exports no \
         functions: is it the e2b-tools-stateless world?"
    )]
    NoExports,
}

/// A compiled component, its linker and the outbound client its
/// instances share.
pub(crate) struct Loaded {
    pub(crate) component: Component,
    pub(crate) linker: Linker<SessionState>,
    pub(crate) client: OutboundClient,
    pub(crate) proxy: Proxy,
    started: Instant,
}

impl Loaded {
    /// Pre-instantiates the component: every import resolved once.
    pub(crate) fn instantiate_pre(&self) -> Result<InstancePre<SessionState>, RuntimeError> {
        self.linker
            .instantiate_pre(&self.component)
            .map_err(|err| RuntimeError::Link(WasmError::new(err)))
    }

    /// How long loading has taken so far; logged.
    pub(crate) fn finish(&self) -> Duration {
        let load_time = self.started.elapsed();
        tracing::debug!(load_ms = load_time.as_millis() as u64, "component loaded");
        load_time
    }
}

/// The component of `source`, compiled (or read from the cache), and the
/// linker every instance of it is made with. Blocking: compiling takes up
/// to seconds on a cache miss.
pub(crate) fn load(
    source: ComponentSource,
    options: RuntimeOptions,
) -> Result<Loaded, RuntimeError> {
    let started = Instant::now();
    let client = OutboundClient::with_proxy(&options.proxy);
    let engine = build_engine()?;
    let bytes = read(source)?;
    let component = compile(&engine, &bytes, &options.cache)?;
    let linker = build_linker(&engine).map_err(|err| RuntimeError::Link(WasmError::new(err)))?;
    Ok(Loaded {
        component,
        linker,
        client,
        proxy: options.proxy,
        started,
    })
}

fn read(source: ComponentSource) -> Result<Cow<'static, [u8]>, RuntimeError> {
    Ok(match source {
        ComponentSource::Embedded => EMBEDDED_COMPONENT.into(),
        ComponentSource::EmbeddedStateless => EMBEDDED_STATELESS.into(),
        ComponentSource::Bytes(bytes) => bytes.into(),
        ComponentSource::File(path) => std::fs::read(&path)
            .map_err(|source| RuntimeError::Read { path, source })?
            .into(),
    })
}

/// The compiled component: the cached artifact if there is a usable one,
/// else compiled now (and cached).
fn compile(engine: &Engine, bytes: &[u8], cache: &CompileCache) -> Result<Component, RuntimeError> {
    let cache_dir = match cache {
        CompileCache::Default => artifact_cache::default_dir(),
        CompileCache::Directory(dir) => Some(dir.clone()),
        CompileCache::Disabled => None,
    };
    let artifact = cache_dir.map(|dir| artifact_cache::artifact_path(&dir, engine, bytes));
    if let Some(component) = artifact
        .as_deref()
        .and_then(|path| artifact_cache::load(engine, path))
    {
        return Ok(component);
    }
    let component =
        Component::new(engine, bytes).map_err(|err| RuntimeError::Compile(WasmError::new(err)))?;
    if let Some(path) = &artifact {
        artifact_cache::store(&component, path);
    }
    Ok(component)
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
    Engine::new(&config).map_err(|err| RuntimeError::Engine(WasmError::new(err)))
}

/// WASI p2 (no preopens, no sockets: see [`SessionState`]), `wasi:http`
/// through our hooks, our monotonic clock and `outgoing-handler.handle`
/// shadowing wasmtime's, and the guest's `events` reports.
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
    crate::outbound::handle::add_to_linker(&mut linker, |state: &SessionState| {
        state.hooks.sends()
    })?;
    linker.allow_shadowing(false);
    crate::bindings::e2b::tools::events::add_to_linker::<_, wasmtime::component::HasSelf<_>>(
        &mut linker,
        |state: &mut SessionState| state,
    )?;
    Ok(linker)
}
