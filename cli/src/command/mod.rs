//! The `e2b-tools` command line: argument handling and the subcommands.

pub(crate) mod args;
mod inventory;
pub(crate) mod logging;
mod once;
mod render;
mod rich_files;
mod signals;
mod spinner;

use args::{BackendArg, CallArgs, Cli, Command, GlobalArgs, LocalCommand, McpArgs, OnTimeoutArg};
use e2b_tools_cli::mcp::http::{self as mcp_http, McpHttpServer};
use e2b_tools_cli::mcp::{Catalog, McpError, McpServer, SessionOpener};
use e2b_tools_cli::{default_backend, Backend, BackendKind, LocalBackendOptions};
use e2b_tools_host::{
    e2b_env, failure_result, succeeded, ClockMode, ComponentSource, KeyValue, NetworkRules,
    OnTimeout, Proxy, Runtime, RuntimeOptions, SandboxConfig, Session, SessionError,
    SessionOptions, StatelessOptions, StatelessRuntime, VolumeMount, WarmPool,
};
use rich_files::RichFiles;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, BufReader};

/// Exit status of a call whose tool failed (`success: false`, a command's
/// non-zero `exit_code`, code that raised), or of a failure of the host
/// itself.
const EXIT_FAILURE: u8 = 1;
/// Exit status of a usage error.
const EXIT_USAGE: u8 = 2;

/// An error that ends the command, with the exit status to use.
struct CliFailure {
    code: u8,
    message: String,
}

impl CliFailure {
    fn usage(message: impl Into<String>) -> Self {
        Self {
            code: EXIT_USAGE,
            message: message.into(),
        }
    }

    fn host(err: impl std::fmt::Display) -> Self {
        Self {
            code: EXIT_FAILURE,
            message: err.to_string(),
        }
    }
}

/// Runs the parsed command line and returns the process's exit status
/// (or, stopped by a signal, ends the process by it once cleaned up).
pub(crate) async fn run(cli: Cli) -> ExitCode {
    // The commands that make sandboxes catch the stop signals from the
    // start (SIGHUP too on stdio, where it means the client went away).
    let hangup = match &cli.command {
        Command::Call(_) | Command::Batch => Some(false),
        Command::Mcp(args) => Some(args.http.is_none()),
        Command::Tools
        | Command::Local { .. }
        | Command::Sandbox { .. }
        | Command::Snapshot { .. } => None,
    };
    if let Some(hangup) = hangup {
        if let Err(err) = signals::listen(hangup) {
            eprintln!("e2b-tools: cannot catch stop signals: {err}");
            return ExitCode::from(EXIT_FAILURE);
        }
    }
    let result = match cli.command {
        Command::Tools => tools(&cli.global).await,
        Command::Call(call_args) => call(&cli.global, call_args).await,
        Command::Batch => batch(&cli.global).await,
        Command::Mcp(args) => match args.http {
            Some(addr) => mcp_http(&cli.global, &args, addr).await,
            None => mcp(&cli.global).await,
        },
        Command::Local {
            command:
                LocalCommand::Serve {
                    port,
                    state_dir,
                    api_key,
                    ephemeral,
                    stop_at_eof,
                },
        } => {
            let state_dir = match ephemeral {
                true => None,
                false => state_dir.or_else(e2b_local::default_state_dir),
            };
            local_serve(&cli.global, port, state_dir, api_key, stop_at_eof).await
        }
        Command::Sandbox { command } => inventory::sandbox(&cli.global, command).await,
        Command::Snapshot { command } => inventory::snapshot(&cli.global, command).await,
    };
    // Everything is cleaned up by now (sessions, backend, runtime).
    signals::end_if_stopped();
    match result {
        Ok(code) => ExitCode::from(code),
        Err(failure) => {
            eprintln!("e2b-tools: {}", failure.message);
            ExitCode::from(failure.code)
        }
    }
}

/// `tools`: the catalog needs no sandbox and no backend.
async fn tools(global: &GlobalArgs) -> Result<u8, CliFailure> {
    let runtime = load_runtime(global).await?;
    let session = open_session(&runtime, global, e2b_env(std::env::vars())).await?;
    let specs = session.list_tools().await.map_err(CliFailure::host)?;
    let mut catalog = Vec::with_capacity(specs.len());
    for spec in specs {
        let parameters: Value = serde_json::from_str(&spec.parameters_schema).map_err(|err| {
            CliFailure::host(format!("tool {} has an invalid schema: {err}", spec.name))
        })?;
        catalog.push(json!({
            "name": spec.name,
            "description": spec.description,
            "parameters": parameters,
        }));
    }
    print_stdout(&format!("{}\n", pretty(&Value::Array(catalog))))?;
    Ok(0)
}

/// `call TOOL [ARGS]`: one call in a fresh sandbox.
async fn call(global: &GlobalArgs, call_args: CallArgs) -> Result<u8, CliFailure> {
    let args: Value = match &call_args.args {
        None => json!({}),
        Some(text) => serde_json::from_str(text)
            .map_err(|err| CliFailure::usage(format!("ARGS is not valid JSON: {err}")))?,
    };
    if !args.is_object() {
        return Err(CliFailure::usage("ARGS must be a JSON object"));
    }
    if global.warm_pool.is_some() {
        return Err(CliFailure::usage(
            "--warm-pool serves mcp, mcp --http and batch: one call makes one sandbox",
        ));
    }
    if global.stateless {
        return call_stateless(global, call_args, args).await;
    }
    let runtime = load_runtime(global).await?;
    let (backend, env) = start_backend(global).await?;
    let outcome = async {
        let session = open_session(&runtime, global, env).await?;
        let result = {
            let _spinner = spinner::Spinner::start(format!("{} running", call_args.tool));
            until_stopped(&session, session.call_json(&call_args.tool, &args)).await
        };
        finish_session(&session, global).await;
        let result = result?.map_err(CliFailure::host)?;
        // The component checks the name (before any sandbox exists); its
        // refusal of one it does not offer is a usage error here.
        if let Some(tools) = unknown_tool(&call_args.tool, &result) {
            return Err(CliFailure::usage(format!(
                "unknown tool {:?}; the tools are: {tools}",
                call_args.tool
            )));
        }
        Ok(result)
    }
    .await;
    backend.shutdown().await;
    let result = outcome?;

    if call_args.json {
        print_stdout(&format!("{result}\n"))?;
    } else {
        let saved = RichFiles::new(global.output_dir.clone()).save(&result);
        let stdout = std::io::stdout();
        let stderr = std::io::stderr();
        render::render(
            &call_args.tool,
            &result,
            &saved,
            &mut stdout.lock(),
            &mut stderr.lock(),
        )
        .map_err(CliFailure::host)?;
    }
    Ok(exit_status(&call_args.tool, &result))
}

/// `--stateless call TOOL [ARGS]`: one call of the stateless component in
/// a fresh instance; the sandbox outlives it.
async fn call_stateless(
    global: &GlobalArgs,
    call_args: CallArgs,
    mut args: Value,
) -> Result<u8, CliFailure> {
    let source = match &global.component {
        Some(path) => ComponentSource::File(path.clone()),
        None => ComponentSource::EmbeddedStateless,
    };
    let options = runtime_options(global);
    let runtime = tokio::task::spawn_blocking(move || StatelessRuntime::load_with(source, options))
        .await
        .map_err(CliFailure::host)?
        .map_err(CliFailure::host)?;
    if let (Some(id), Some(map)) = (&global.sandbox_id, args.as_object_mut()) {
        map.entry("sandbox_id").or_insert_with(|| json!(id));
    }
    let (backend, env) = start_backend(global).await?;
    // The stateless world has no configure(): the flags travel as its
    // documented variables.
    let options = StatelessOptions::for_session(&session_options(global, env));
    let result = {
        let _spinner = spinner::Spinner::start(format!("{} running", call_args.tool));
        // A stop cancels the call and closes the sandbox it was making.
        let stop = async {
            signals::stopped().await;
        };
        runtime
            .call_until(&options, &call_args.tool, &args, stop)
            .await
    };
    backend.shutdown().await;
    let result = result.map_err(|err| match err {
        SessionError::InvalidArguments(_) => CliFailure::usage(err.to_string()),
        _ => CliFailure::host(err),
    })?;
    let Some(result) = result else {
        let stop = signals::received().unwrap_or(signals::Stop::Interrupt);
        return Err(stopped_failure(stop));
    };
    print_stdout(&format!(
        "{}\n",
        if call_args.json {
            result.to_string()
        } else {
            pretty(&result)
        }
    ))?;
    Ok(exit_status(&call_args.tool, &result))
}

/// `batch`: JSON lines in, one result line out per call, one sandbox.
async fn batch(global: &GlobalArgs) -> Result<u8, CliFailure> {
    let runtime = load_runtime(global).await?;
    let (backend, env) = start_backend(global).await?;
    let outcome = async {
        let options = session_options(global, env);
        // With a pool the sandbox is made while the first line is read.
        let pool = match global.warm_pool {
            Some(size) => Some(
                WarmPool::start(&runtime, options.clone(), size)
                    .map_err(|err| CliFailure::usage(err.to_string()))?,
            ),
            None => None,
        };
        let session = match &pool {
            Some(pool) => pool.session().await.map_err(CliFailure::host)?,
            None => open_session_with(&runtime, options).await?,
        };
        let files = RichFiles::new(global.output_dir.clone());
        let result = until_stopped(&session, run_batch_lines(&session, files)).await;
        finish_session(&session, global).await;
        if let Some(pool) = pool {
            pool.close().await;
        }
        result?
    }
    .await;
    backend.shutdown().await;
    outcome
}

async fn run_batch_lines(session: &Session, mut files: RichFiles) -> Result<u8, CliFailure> {
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let stdout = std::io::stdout();
    let mut number = 0usize;
    let mut all_succeeded = true;
    while let Some(line) = lines.next_line().await.map_err(CliFailure::host)? {
        number += 1;
        if INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst) {
            break;
        }
        if line.trim().is_empty() {
            continue;
        }
        let (tool, mut result) = match parse_batch_line(&line) {
            Ok((tool, args)) => match session.call_json(&tool, &args).await {
                Ok(result) => (tool, result),
                // The session is gone (trap): say so for this and every later line.
                Err(err) => (tool, failure_result(err)),
            },
            Err(reason) => (
                String::new(),
                failure_result(format!("malformed batch line {number}: {reason}")),
            ),
        };
        all_succeeded &= exit_status(&tool, &result) == 0;
        let saved = files.save(&result);
        RichFiles::annotate(&mut result, &saved);
        // Written in place: a line is small, and tokio's stdout would hop
        // to a blocking thread and back for every one.
        let mut out = stdout.lock();
        writeln!(out, "{result}")
            .and_then(|()| out.flush())
            .map_err(CliFailure::host)?;
    }
    Ok(if all_succeeded { 0 } else { EXIT_FAILURE })
}

/// A result's exit status, so `&&` in a script can tell: 0 when the tool
/// did what was asked, [`EXIT_FAILURE`] when it failed, `run_command`'s
/// command exited non-zero (`exit_code`), or `run_code`'s code raised
/// (`error`). (A background process's `exit_code` is its own, not the
/// tool's.)
fn exit_status(tool: &str, result: &Value) -> u8 {
    // The stateless world's export names too (`e2b-run-command`).
    let tool = tool.trim_start_matches("e2b-").replace('-', "_");
    let text = |key| result.get(key).and_then(Value::as_str);
    let exited_non_zero = tool == "run_command"
        && result
            .get("exit_code")
            .and_then(Value::as_i64)
            .is_some_and(|code| code != 0);
    let raised = tool == "run_code" && text("error").is_some_and(|error| !error.is_empty());
    if !succeeded(result) || exited_non_zero || raised {
        EXIT_FAILURE
    } else {
        0
    }
}

/// Parses `{"tool": "...", "args": {...}}` (`args` optional).
fn parse_batch_line(line: &str) -> Result<(String, Value), String> {
    let value: Value = serde_json::from_str(line).map_err(|err| format!("invalid JSON: {err}"))?;
    let tool = value
        .get("tool")
        .and_then(Value::as_str)
        .ok_or("expected {\"tool\": \"<name>\", \"args\": {...}}")?;
    let args = match value.get("args") {
        None | Some(Value::Null) => json!({}),
        Some(args @ Value::Object(_)) => args.clone(),
        Some(_) => return Err("\"args\" must be a JSON object".into()),
    };
    Ok((tool.to_string(), args))
}

/// The tools the component offers, when `result` is its refusal of
/// `tool` as unknown (or not enabled): e2b-adk's `Unknown tool: <tool>.
/// Available tools: <names>`.
fn unknown_tool<'a>(tool: &str, result: &'a Value) -> Option<&'a str> {
    if succeeded(result) {
        return None;
    }
    let error = result.get("error").and_then(Value::as_str)?;
    error
        .strip_prefix("Unknown tool: ")?
        .strip_prefix(tool)?
        .strip_prefix(". Available tools: ")
}

/// `mcp --http ADDR`: streamable HTTP, one session (and sandbox) per MCP
/// session, until Ctrl-C or SIGTERM; then every sandbox is shut down.
async fn mcp_http(
    global: &GlobalArgs,
    args: &McpArgs,
    addr: std::net::SocketAddr,
) -> Result<u8, CliFailure> {
    let runtime = load_runtime(global).await?;
    let (backend, env) = start_backend(global).await?;
    let outcome = async {
        let token = match std::env::var("E2B_TOOLS_MCP_TOKEN") {
            Ok(token) if !token.trim().is_empty() => token.trim().to_string(),
            _ => {
                let token = mcp_http::generate_token();
                eprintln!("e2b-tools: E2B_TOOLS_MCP_TOKEN is not set; the bearer token is {token}");
                token
            }
        };
        let options = mcp_http::HttpOptions {
            max_sessions: args.max_sessions,
            warm_pool: global.warm_pool.unwrap_or(0),
            idle_timeout: std::time::Duration::from_secs(args.idle_timeout.max(1)),
            allowed_origins: args.allow_origin.clone(),
            ..mcp_http::HttpOptions::new(addr, token)
        };
        let mut sessions = session_options(global, env);
        // MCP relays the component's progress to clients that ask for it.
        sessions.config.progress = Some(true);
        let server = McpHttpServer::bind(runtime, sessions, options)
            .await
            .map_err(|err| match err {
                McpError::Session(SessionError::Configure(_) | SessionError::InvalidOptions(_)) => {
                    CliFailure::usage(err.to_string())
                }
                _ => CliFailure::host(err),
            })?;
        eprintln!("e2b-tools: MCP over HTTP at {}", server.url());
        server
            .serve(async {
                signals::stopped().await;
            })
            .await
            .map_err(CliFailure::host)
    }
    .await;
    backend.shutdown().await;
    outcome.map(|()| 0)
}

/// `mcp`: an MCP server on stdio, one session for the connection.
async fn mcp(global: &GlobalArgs) -> Result<u8, CliFailure> {
    let runtime = load_runtime(global).await?;
    let (backend, env) = start_backend(global).await?;
    let outcome = async {
        let mut options = session_options(global, env);
        // MCP relays the component's progress to clients that ask for it.
        options.config.progress = Some(true);
        let Some(size) = global.warm_pool else {
            let session = open_session_with(&runtime, options).await?;
            let server = McpServer::new(session).await.map_err(CliFailure::host)?;
            return server
                .kill_attached_on_exit(global.kill_on_exit)
                .serve_stdio_until(stopped_quietly())
                .await
                .map_err(CliFailure::host);
        };
        // The catalog from a probe; the connection's session, on its first
        // call, from the pool, whose sandbox is made meanwhile.
        let probe = open_session_with(&runtime, options.clone()).await?;
        let catalog = Catalog::read(&probe).await.map_err(CliFailure::host)?;
        drop(probe);
        let pool = WarmPool::start(&runtime, options, size)
            .map_err(|err| CliFailure::usage(err.to_string()))?;
        let opener: SessionOpener = {
            let pool = pool.clone();
            Arc::new(move || {
                let pool = pool.clone();
                Box::pin(async move { pool.session().await })
            })
        };
        let served = McpServer::opened_by(catalog, opener)
            .kill_attached_on_exit(global.kill_on_exit)
            .serve_stdio_until(stopped_quietly())
            .await;
        pool.close().await;
        served.map_err(CliFailure::host)
    }
    .await;
    backend.shutdown().await;
    outcome.map(|()| 0)
}

/// `local serve`: the local server alone, for the official SDKs.
async fn local_serve(
    global: &GlobalArgs,
    port: u16,
    state_dir: Option<std::path::PathBuf>,
    api_key: Option<String>,
    stop_at_eof: bool,
) -> Result<u8, CliFailure> {
    let command = e2b_local::serve_command::ServeCommand {
        port,
        state_dir,
        api_key,
        stop_at_eof,
        isolation: if global.no_isolation {
            e2b_local::Isolation::None
        } else {
            e2b_local::Isolation::Bwrap
        },
        time_scale: global.time_scale.unwrap_or(1.0),
    };
    e2b_local::serve_command::run(command, "e2b-tools")
        .await
        .map_err(CliFailure::host)?;
    Ok(0)
}

/// The runtime options the flags give (`--proxy`).
fn runtime_options(global: &GlobalArgs) -> RuntimeOptions {
    RuntimeOptions {
        proxy: match &global.proxy {
            Some(url) => Proxy::Url(url.clone()),
            None => Proxy::Environment,
        },
        ..RuntimeOptions::default()
    }
}

async fn load_runtime(global: &GlobalArgs) -> Result<Runtime, CliFailure> {
    let source = match &global.component {
        Some(path) => ComponentSource::File(path.clone()),
        None => ComponentSource::Embedded,
    };
    let options = runtime_options(global);
    // Compiling is CPU-bound (seconds on a cache miss): keep it off the
    // async workers.
    tokio::task::spawn_blocking(move || Runtime::load_with(source, options))
        .await
        .map_err(CliFailure::host)?
        .map_err(CliFailure::host)
}

/// Starts the chosen backend; returns it and the environment sessions get.
async fn start_backend(
    global: &GlobalArgs,
) -> Result<(Backend, BTreeMap<String, String>), CliFailure> {
    let env = e2b_env(std::env::vars());
    let (kind, notice) = match global.backend {
        Some(BackendArg::E2b) => (BackendKind::E2b, None),
        Some(BackendArg::Local) => (BackendKind::Local, None),
        None => default_backend(&env),
    };
    if kind == BackendKind::Local {
        // The local backend points the session at its own server; an
        // endpoint flag would send the requests (and its key) elsewhere.
        if let Some(flag) = endpoint_flag(global) {
            return Err(CliFailure::usage(format!(
                "{flag} names an E2B endpoint, so it needs the e2b backend: pass --backend e2b \
                 and set E2B_API_KEY to that server's key"
            )));
        }
    }
    if kind == BackendKind::E2b && env.get("E2B_API_KEY").is_none_or(|key| key.is_empty()) {
        return Err(CliFailure::usage(
            "the e2b backend needs an API key: export E2B_API_KEY=e2b_... (from \
             https://e2b.dev/dashboard), or leave out --backend e2b to run sandboxes locally",
        ));
    }
    if let Some(notice) = notice {
        if global.verbose || once::first_in_session("backend") {
            eprintln!("{notice}");
        }
    }
    let local = LocalBackendOptions {
        port: 0,
        no_isolation: global.no_isolation,
        time_scale: global.time_scale.unwrap_or(1.0),
    };
    let backend = Backend::start(kind, &env, &local)
        .await
        .map_err(CliFailure::host)?;
    let session_env = backend.session_env(&env);
    Ok((backend, session_env))
}

async fn open_session(
    runtime: &Runtime,
    global: &GlobalArgs,
    env: BTreeMap<String, String>,
) -> Result<Session, CliFailure> {
    open_session_with(runtime, session_options(global, env)).await
}

/// Opens a session with `options`; options the component rejects are a
/// usage error.
async fn open_session_with(
    runtime: &Runtime,
    options: SessionOptions,
) -> Result<Session, CliFailure> {
    Session::open(runtime, options)
        .await
        .map_err(|err| match err {
            // The component checked the options the flags gave it.
            SessionError::Configure(_) | SessionError::InvalidOptions(_) => {
                CliFailure::usage(err.to_string())
            }
            _ => CliFailure::host(err),
        })
}

/// The options of every session the flags describe.
fn session_options(global: &GlobalArgs, env: BTreeMap<String, String>) -> SessionOptions {
    SessionOptions {
        config: sandbox_config(global),
        env,
        memory_limit: global.memory_limit_mib.saturating_mul(1 << 20),
        clock: global.time_scale.map_or(ClockMode::Real, ClockMode::Scaled),
        policy: None,
        ..SessionOptions::default()
    }
}

/// The first endpoint flag given, if any.
fn endpoint_flag(global: &GlobalArgs) -> Option<&'static str> {
    [
        (global.domain.is_some(), "--domain"),
        (global.api_url.is_some(), "--api-url"),
        (global.sandbox_url.is_some(), "--sandbox-url"),
    ]
    .into_iter()
    .find_map(|(given, flag)| given.then_some(flag))
}

/// The WIT `config` record the flags describe. Unset flags stay unset, so
/// the component falls back to the `E2B_*` environment, then to E2B's
/// defaults; a flag that is set wins over its variable.
fn sandbox_config(global: &GlobalArgs) -> SandboxConfig {
    let network_given = !global.allow_out.is_empty()
        || !global.deny_out.is_empty()
        || global.allow_public_traffic.is_some()
        || global.mask_request_host.is_some();
    SandboxConfig {
        template: global.template.clone(),
        timeout_seconds: global.timeout,
        metadata: KeyValue::pairs(&global.metadata),
        envs: KeyValue::pairs(&global.envs),
        max_output_bytes: global.max_output_bytes,
        rich_results: global.rich_results.then_some(true),
        sandbox_id: global.sandbox_id.clone(),
        tools: (!global.tools.is_empty()).then(|| global.tools.clone()),
        domain: global.domain.clone(),
        api_url: global.api_url.clone(),
        sandbox_url: global.sandbox_url.clone(),
        request_timeout_ms: global.request_timeout_ms,
        readiness_timeout_ms: global.readiness_timeout_ms,
        allow_internet_access: global.allow_internet_access,
        network: network_given.then(|| NetworkRules {
            allow_out: global.allow_out.clone(),
            deny_out: global.deny_out.clone(),
            allow_public_traffic: global.allow_public_traffic,
            mask_request_host: global.mask_request_host.clone(),
        }),
        on_timeout: global.on_timeout.map(|action| match action {
            OnTimeoutArg::Kill => OnTimeout::Kill,
            OnTimeoutArg::Pause => OnTimeout::Pause,
        }),
        auto_resume: global.auto_resume.then_some(true),
        volume_mounts: global
            .volume_mounts
            .iter()
            .map(|(name, path)| VolumeMount {
                name: name.clone(),
                path: path.clone(),
            })
            .collect(),
        ..SandboxConfig::default()
    }
}

/// The end of a command's session: it kills the sandboxes the session
/// owns (created, or forked), and leaves one it attached to
/// (`--sandbox-id`) as it found it, unless `--kill-on-exit`. Errors are
/// reported, not fatal.
async fn finish_session(session: &Session, global: &GlobalArgs) {
    if global.kill_on_exit {
        if let Err(err) = session.shutdown().await {
            eprintln!("e2b-tools: could not shut the sandbox down: {err}");
        }
    }
    session.kill_owned(STOP_GRACE).await;
}

/// Runs `work` (calls on `session`) unless a stop signal comes first:
/// then the call running is cancelled and every sandbox the session owns
/// is killed (the call that is creating one included), within
/// [`STOP_GRACE`], and the command fails; the process then ends by the
/// signal.
async fn until_stopped<T>(
    session: &Session,
    work: impl std::future::Future<Output = T>,
) -> Result<T, CliFailure> {
    tokio::pin!(work);
    tokio::select! {
        result = &mut work => Ok(result),
        stop = signals::stopped() => {
            eprintln!("e2b-tools: {}: stopping the call and killing its sandboxes", stop.name());
            INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst);
            // The work goes on being polled, so the cancelled call can
            // return and hand the instance to the kills.
            let bounded = tokio::time::timeout(STOP_GRACE, &mut work);
            let _ = tokio::join!(bounded, session.kill_owned(STOP_GRACE));
            Err(stopped_failure(stop))
        }
    }
}

/// A stop signal, for an MCP server: it stops serving and cleans up.
async fn stopped_quietly() {
    let stop = signals::stopped().await;
    eprintln!(
        "e2b-tools: {}: stopping the server and killing its sandboxes",
        stop.name()
    );
}

/// The failure a stop signal makes of a command (the process ends by the
/// signal anyway; the status is what a shell would show).
fn stopped_failure(stop: signals::Stop) -> CliFailure {
    CliFailure {
        code: stop.status(),
        message: format!("stopped by {}", stop.name()),
    }
}

/// Set by a stop signal: a batch starts no further call.
static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// How long a stopped command may take to kill its sandboxes (half of it
/// waiting for the cancelled call to hand its instance back), so the
/// process ends within 5 s of the signal.
const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(4);

fn print_stdout(text: &str) -> Result<(), CliFailure> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(CliFailure::host)
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_lines_need_a_tool_and_an_object_of_args() {
        let (tool, args) = parse_batch_line(r#"{"tool":"run_code","args":{"code":"1"}}"#).unwrap();
        assert_eq!(tool, "run_code");
        assert_eq!(args, json!({"code": "1"}));
        assert_eq!(
            parse_batch_line(r#"{"tool":"list_files"}"#).unwrap().1,
            json!({})
        );
        assert!(parse_batch_line("not json").is_err());
        assert!(parse_batch_line(r#"{"args":{}}"#).is_err());
        assert!(parse_batch_line(r#"{"tool":"x","args":[1]}"#).is_err());
    }

    #[test]
    fn the_component_s_refusal_of_an_unknown_tool_names_the_tools() {
        let refusal =
            failure_result("Unknown tool: write_file. Available tools: read_file, list_files");
        assert_eq!(
            unknown_tool("write_file", &refusal),
            Some("read_file, list_files")
        );
        assert_eq!(unknown_tool("read_file", &refusal), None);
        let other = failure_result("Failed to read file: nope");
        assert_eq!(unknown_tool("read_file", &other), None);
    }
}
