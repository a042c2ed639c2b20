//! Command-line arguments of `e2b-tools`.

use clap::{ArgAction, Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// E2B sandbox tools for AI agents, run from a WebAssembly component.
///
/// Without E2B_API_KEY the tools run on the embedded local backend: an
/// E2B-compatible server started in this process, whose sandboxes run on
/// this machine, each with its own root, unprivileged uids, network and
/// limits (for development: see local/README.md). With E2B_API_KEY they run
/// in real E2B sandboxes.
///
/// Environment: E2B_API_KEY, E2B_DOMAIN, E2B_API_URL, E2B_SANDBOX_URL are
/// handed to the component (only E2B_* variables are); --domain, --api-url
/// and --sandbox-url win over them. The component may reach only the API
/// and sandbox hosts they name. E2B_TOOLS_LOG (or RUST_LOG) sets the log
/// filter.
#[derive(Debug, Parser)]
#[command(name = "e2b-tools", version, about, long_about)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) global: GlobalArgs,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Print the tool catalog (names, descriptions, JSON Schemas) as JSON.
    Tools,
    /// Run one tool call in a fresh sandbox and print its result.
    ///
    /// Exit status: 0 when the tool did what was asked; 1 when it failed
    /// (`success` false), its command exited non-zero (`run_command`'s
    /// `exit_code`) or its code raised (`run_code`'s `error`); 2 on usage
    /// errors. Stopped by SIGINT or SIGTERM, it kills its sandbox and ends
    /// by the signal.
    Call(CallArgs),
    /// Run tool calls read as JSON lines from stdin in ONE sandbox.
    ///
    /// Each input line is `{"tool": "run_code", "args": {...}}`; each
    /// output line is that call's result object. A malformed line gives a
    /// `success: false` line and the batch goes on. The sandbox is shut down
    /// at the end of input. Exit status: 1 if any line's call failed (as
    /// for `call`), else 0.
    Batch,
    /// Serve the tools over MCP: on stdin/stdout (one sandbox for the
    /// connection), or with --http over streamable HTTP (one sandbox per MCP
    /// session).
    Mcp(McpArgs),
    /// The local E2B-compatible server.
    Local {
        #[command(subcommand)]
        command: LocalCommand,
    },
    /// See and stop the sandboxes (running and paused) the API key reaches,
    /// on E2B or on the server E2B_API_URL names (`local serve`).
    Sandbox {
        #[command(subcommand)]
        command: SandboxCommand,
    },
    /// See and delete the snapshots the API key reaches.
    Snapshot {
        #[command(subcommand)]
        command: SnapshotCommand,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum SandboxCommand {
    /// List them: id, state, template, when each ends.
    List {
        /// Print a JSON array instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Kill sandboxes by id, or all of them.
    Kill {
        /// The sandboxes to kill.
        #[arg(value_name = "ID", required_unless_present = "all")]
        ids: Vec<String>,
        /// Kill every sandbox the key reaches.
        #[arg(long, conflicts_with = "ids")]
        all: bool,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum SnapshotCommand {
    /// List them: id and names.
    List {
        /// Print a JSON array instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Delete snapshots by id.
    Delete {
        /// The snapshots to delete.
        #[arg(value_name = "ID", required = true)]
        ids: Vec<String>,
    },
}

#[derive(Debug, Args)]
pub(crate) struct McpArgs {
    /// Serve streamable HTTP at http://ADDR/mcp instead of stdio: HOST:PORT,
    /// or a PORT on 127.0.0.1 (0: any free one). Every request needs
    /// `Authorization: Bearer $E2B_TOOLS_MCP_TOKEN` (when unset, a token is
    /// generated and printed on stderr).
    #[arg(long, value_name = "ADDR", value_parser = parse_listen_addr)]
    pub(crate) http: Option<std::net::SocketAddr>,
    /// With --http: live MCP sessions at most (each may hold a sandbox).
    #[arg(long, value_name = "N", default_value_t = 64, requires = "http")]
    pub(crate) max_sessions: usize,
    /// With --http: a session idle this long ends and its sandbox is killed.
    #[arg(long, value_name = "SECONDS", default_value_t = 600, requires = "http")]
    pub(crate) idle_timeout: u64,
    /// With --http: a browser origin allowed besides loopback ones, e.g.
    /// https://app.example.com:443 (repeatable).
    #[arg(long, value_name = "ORIGIN", requires = "http")]
    pub(crate) allow_origin: Vec<String>,
}

/// `HOST:PORT`, or a port on 127.0.0.1.
fn parse_listen_addr(text: &str) -> Result<std::net::SocketAddr, String> {
    if let Ok(port) = text.parse::<u16>() {
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    text.parse()
        .map_err(|_| format!("expected HOST:PORT or a port, got '{text}'"))
}

#[derive(Debug, Args)]
pub(crate) struct CallArgs {
    /// The tool: run_code, run_command, write_file, read_file, list_files,
    /// start_background_command (and, with --tools, get_background_output,
    /// stop_background_command).
    pub(crate) tool: String,
    /// The arguments as a JSON object, e.g. '{"code": "print(1)"}'.
    /// Default: {}.
    pub(crate) args: Option<String>,
    /// Print the raw result object as JSON instead of a readable rendering.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum LocalCommand {
    /// Run the local server for the official E2B SDKs until Ctrl-C; prints
    /// `export` lines for the E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY
    /// to use (on stdout; everything else goes to stderr). Paused
    /// sandboxes and snapshots are kept in its state directory across
    /// restarts.
    Serve {
        /// Port on 127.0.0.1 (0 picks a free one).
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// Where paused sandboxes and snapshots are kept (one server at a
        /// time). Default: /var/lib/e2b-tools/local as root, else
        /// $XDG_STATE_HOME/e2b-tools/local or ~/.local/state/e2b-tools/local.
        #[arg(long, value_name = "DIR")]
        state_dir: Option<PathBuf>,
        /// The API key clients must send. Default: $E2B_API_KEY, then the
        /// key kept in the state directory (made the first time), so it
        /// stays the same across restarts.
        #[arg(long, value_name = "KEY", env = "E2B_API_KEY", hide_env_values = true)]
        api_key: Option<String>,
        /// Keep nothing: no state directory, a new API key, every sandbox
        /// and snapshot gone when the server stops (a server for one
        /// program's life).
        #[arg(long, conflicts_with = "state_dir")]
        ephemeral: bool,
        /// Stop (killing every sandbox) when standard input ends: a program
        /// that starts the server with a pipe there takes it along when it
        /// exits, however it exits.
        #[arg(long)]
        stop_at_eof: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum BackendArg {
    /// E2B (or the server E2B_API_URL / E2B_SANDBOX_URL name); needs E2B_API_KEY.
    E2b,
    /// The local server, started in this process.
    Local,
}

/// What happens to the sandbox at its timeout (the WIT `on-timeout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum OnTimeoutArg {
    /// The sandbox and its files are destroyed (E2B's default).
    Kill,
    /// The sandbox is paused; --sandbox-id resumes it later. The CLI then
    /// leaves it running at the end instead of killing it.
    Pause,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per event (the audit trail for machines).
    Json,
}

/// The long names of the options every subcommand takes ([`GlobalArgs`]).
pub(crate) fn global_names() -> Vec<String> {
    use clap::CommandFactory;
    Cli::command()
        .get_arguments()
        .filter(|a| a.is_global_set())
        .filter_map(|a| a.get_long().map(str::to_string))
        .collect()
}

/// Options shared by all subcommands (they may be given before or after
/// the subcommand).
#[derive(Debug, Args)]
pub(crate) struct GlobalArgs {
    /// Where sandboxes run. Default: e2b when E2B_API_KEY is set, else local.
    #[arg(long, global = true, value_enum)]
    pub(crate) backend: Option<BackendArg>,
    /// Load this component (.wasm) instead of the embedded one.
    #[arg(long, global = true, value_name = "PATH")]
    pub(crate) component: Option<PathBuf>,
    /// `call` runs the stateless component (world e2b-tools-stateless), as
    /// plugin hosts such as wassette do: a fresh instance, the sandbox named
    /// by --sandbox-id or a `sandbox_id` argument (none: a new one), left
    /// alive after the call (its id is in the result) until
    /// `call close_sandbox` or its timeout.
    #[arg(long, global = true)]
    pub(crate) stateless: bool,
    /// Sandbox template. Default: code-interpreter-v1.
    #[arg(long, global = true)]
    pub(crate) template: Option<String>,
    /// Sandbox timeout in seconds after the last activity. Default: 300.
    #[arg(long, global = true, value_name = "SECONDS")]
    pub(crate) timeout: Option<u32>,
    /// Metadata attached to the sandbox (repeatable).
    #[arg(long, global = true, value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub(crate) metadata: Vec<(String, String)>,
    /// Environment variable of every process in the sandbox (repeatable).
    #[arg(long = "env", global = true, value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub(crate) envs: Vec<(String, String)>,
    /// Bytes kept of each output field before the truncation marker.
    /// Default: 10000.
    #[arg(long, global = true, value_name = "BYTES")]
    pub(crate) max_output_bytes: Option<u32>,
    /// Return images, HTML and JSON produced by run_code as well as text.
    #[arg(long, global = true)]
    pub(crate) rich_results: bool,
    /// Where `call` and `batch` write images, SVG, HTML and PDF results of
    /// run_code (with --rich-results), as result-N.<ext>. Default: a fresh
    /// e2b-output[-N] directory here, made when the first one arrives.
    #[arg(long, global = true, value_name = "DIR")]
    pub(crate) output_dir: Option<std::path::PathBuf>,
    /// The tools offered, comma-separated: names from `e2b-tools tools`,
    /// `default` (e2b-adk's six) or `all` (with get_background_output and
    /// stop_background_command). Default: $E2B_TOOLS_ENABLED, then default;
    /// with --stateless, all.
    #[arg(long, global = true, value_name = "TOOL,…", value_delimiter = ',')]
    pub(crate) tools: Vec<String>,
    /// Attach to (and resume) this existing sandbox instead of creating one.
    /// It is left running at the end (the next command can attach again)
    /// unless --kill-on-exit; a sandbox the command created is always
    /// killed at its end, and on SIGINT or SIGTERM.
    #[arg(long, global = true, value_name = "ID")]
    pub(crate) sandbox_id: Option<String>,
    /// Kill the sandbox attached to with --sandbox-id at the end too.
    #[arg(long, global = true)]
    pub(crate) kill_on_exit: bool,
    /// E2B domain. Default: $E2B_DOMAIN, then e2b.app. Needs the e2b backend.
    #[arg(long, global = true, value_parser = parse_non_empty)]
    pub(crate) domain: Option<String>,
    /// Control-plane URL. Default: $E2B_API_URL, then https://api.<domain>.
    /// Needs the e2b backend.
    #[arg(long, global = true, value_name = "URL", value_parser = parse_url)]
    pub(crate) api_url: Option<String>,
    /// One URL for all sandbox traffic (routed by headers). Default:
    /// $E2B_SANDBOX_URL, then E2B's sandbox hosts. Needs the e2b backend.
    #[arg(long, global = true, value_name = "URL", value_parser = parse_url)]
    pub(crate) sandbox_url: Option<String>,
    /// HTTP proxy for every outbound request not exempted by $NO_PROXY
    /// (https through a CONNECT tunnel): http://[user:password@]host:port.
    /// Default: $HTTPS_PROXY / $HTTP_PROXY / $ALL_PROXY (or lower case).
    /// Loopback targets never use one.
    #[arg(long, global = true, value_name = "URL", value_parser = ProxyUrl)]
    pub(crate) proxy: Option<String>,
    /// Timeout of each request that is not an execution, in milliseconds;
    /// 0 disables it. Default: 60000.
    #[arg(long, global = true, value_name = "MS")]
    pub(crate) request_timeout_ms: Option<u32>,
    /// How long start_background_command waits for its port to accept
    /// connections, in milliseconds. Default: 10000.
    #[arg(long, global = true, value_name = "MS")]
    pub(crate) readiness_timeout_ms: Option<u32>,
    /// Whether the sandbox may reach the internet. Default: E2B's (true).
    #[arg(long, global = true, value_name = "BOOL", action = ArgAction::Set)]
    pub(crate) allow_internet_access: Option<bool>,
    /// Network rule: a CIDR or domain the sandbox may reach even when
    /// --deny-out denies it (repeatable).
    #[arg(long, global = true, value_name = "CIDR|DOMAIN", value_parser = parse_non_empty)]
    pub(crate) allow_out: Vec<String>,
    /// Network rule: a CIDR the sandbox may not reach; 0.0.0.0/0 denies all
    /// (repeatable).
    #[arg(long, global = true, value_name = "CIDR", value_parser = parse_non_empty)]
    pub(crate) deny_out: Vec<String>,
    /// Network rule: whether preview URLs are reachable without the
    /// traffic token.
    #[arg(long, global = true, value_name = "BOOL", action = ArgAction::Set)]
    pub(crate) allow_public_traffic: Option<bool>,
    /// Network rule: the Host header sent to the sandbox's services
    /// (`${PORT}` is replaced by the port).
    #[arg(long, global = true, value_name = "HOST", value_parser = parse_non_empty)]
    pub(crate) mask_request_host: Option<String>,
    /// What happens to the sandbox at its timeout. Default: E2B's (kill).
    #[arg(long, global = true, value_enum, value_name = "ACTION")]
    pub(crate) on_timeout: Option<OnTimeoutArg>,
    /// Resume the paused sandbox automatically when it is used again
    /// (needs --on-timeout pause).
    #[arg(long, global = true, requires = "on_timeout")]
    pub(crate) auto_resume: bool,
    /// Mount the volume NAME at PATH in the sandbox (repeatable).
    #[arg(long = "volume-mount", global = true, value_name = "NAME=PATH", value_parser = parse_volume_mount)]
    pub(crate) volume_mounts: Vec<(String, String)>,
    /// Local backend: run sandbox processes without bubblewrap isolation.
    #[arg(long, global = true)]
    pub(crate) no_isolation: bool,
    /// Local backend and guest clock run this many times faster than real
    /// time (for tests of timeouts and keep-alive).
    #[arg(long, global = true, value_name = "FACTOR", hide = true)]
    pub(crate) time_scale: Option<f64>,
    /// mcp, mcp --http and batch: keep N sandboxes made ahead (1 to 64), so
    /// a new session's first call does not wait for one; they wait on a
    /// short timeout and are killed when the command ends. mcp --http
    /// keeps N more, from the first call of a client of the stateless
    /// revision on, for its calls that name no sandbox.
    #[arg(long, global = true, value_name = "N", value_parser = parse_pool_size)]
    pub(crate) warm_pool: Option<usize>,
    /// Cap on the component's memory, in MiB.
    #[arg(long, global = true, value_name = "MIB", default_value_t = 256)]
    pub(crate) memory_limit_mib: usize,
    /// Log format on stderr.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub(crate) log_format: LogFormat,
    /// Log the audit trail (sessions, sandboxes, tool calls) on stderr; on
    /// by default with --log-format json.
    #[arg(long, short, global = true)]
    pub(crate) verbose: bool,
}

fn parse_key_value(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_string(), value.to_string())),
        _ => Err(format!("expected KEY=VALUE, got {text:?}")),
    }
}

fn parse_volume_mount(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, path)) if !name.is_empty() && !path.is_empty() => {
            Ok((name.to_string(), path.to_string()))
        }
        _ => Err(format!("expected NAME=PATH, got {text:?}")),
    }
}

/// `--proxy`'s parser: [`e2b_tools_host::check_proxy_url`], failing with
/// its message alone. (A plain parser function's error is shown by clap as
/// "invalid value '<the URL>'", password included.)
#[derive(Clone)]
struct ProxyUrl;

impl clap::builder::TypedValueParser for ProxyUrl {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        let invalid = |reason: String| {
            clap::Error::raw(clap::error::ErrorKind::ValueValidation, reason + "\n").with_cmd(cmd)
        };
        let text = value
            .to_str()
            .ok_or_else(|| invalid("--proxy is not a usable proxy: not UTF-8".into()))?;
        e2b_tools_host::check_proxy_url("--proxy", text).map_err(|err| invalid(err.to_string()))?;
        Ok(text.trim().to_string())
    }
}

fn parse_pool_size(value: &str) -> Result<usize, String> {
    let max = e2b_tools_host::MAX_POOL_SIZE;
    match value.trim().parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(format!("a warm pool holds 1 to {max} sandboxes")),
    }
}

fn parse_non_empty(text: &str) -> Result<String, String> {
    if text.trim().is_empty() {
        Err("must not be empty".into())
    } else {
        Ok(text.to_string())
    }
}

/// An absolute http(s) URL with a host, as the guest and the outbound
/// allow-list need it.
fn parse_url(text: &str) -> Result<String, String> {
    let uri: http::Uri = text
        .trim()
        .parse()
        .map_err(|err| format!("not a URL ({err}): {text:?}"))?;
    let has_host = uri.host().is_some_and(|host| !host.is_empty());
    if !matches!(uri.scheme_str(), Some("http" | "https")) || !has_host {
        return Err(format!("expected an http:// or https:// URL, got {text:?}"));
    }
    Ok(text.trim().to_string())
}

/// The global options a subcommand uses, by the first word of its path
/// (`local` for `local serve`); `None`: every one (`call`, `batch`, `mcp`).
fn globals_used(subcommand: &str) -> Option<&'static [&'static str]> {
    const LOGGING: [&str; 2] = ["log-format", "verbose"];
    match subcommand {
        "tools" => Some(&["component", "stateless", "tools", LOGGING[0], LOGGING[1]]),
        "local" => Some(&["no-isolation", LOGGING[0], LOGGING[1]]),
        "sandbox" | "snapshot" => Some(&[
            "component",
            "domain",
            "api-url",
            "sandbox-url",
            "proxy",
            "request-timeout-ms",
            LOGGING[0],
            LOGGING[1],
        ]),
        _ => None,
    }
}

/// clap's `help` for a subcommand without the global options it does not
/// use (they are accepted anywhere, and ignored there): each subcommand's
/// help shows what it takes. The subcommand is read from the help's
/// `Usage:` line; `globals` are the long names of the global options.
pub(crate) fn scoped_help(help: &str, globals: &[String]) -> String {
    let subcommand = help
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("Usage: e2b-tools "))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or("");
    let Some(used) = globals_used(subcommand) else {
        return help.to_string();
    };
    let dropped = |name: &str| globals.iter().any(|g| g == name) && !used.contains(&name);
    let mut out = String::with_capacity(help.len());
    let mut skipping = false;
    for line in help.split_inclusive('\n') {
        if let Some(name) = option_name(line) {
            skipping = dropped(name);
        } else if !line.starts_with(' ') && !line.trim().is_empty() {
            // A line of its own (a section heading): the entry ended.
            skipping = false;
        }
        if !skipping {
            out.push_str(line);
        }
    }
    out
}

/// The long name of the option whose help entry `line` starts, if it does
/// (`  -v, --verbose …` or `      --port <PORT> …`).
fn option_name(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("  ")?;
    let rest = match rest.strip_prefix('-') {
        Some(short) if !short.starts_with('-') => short.get(1..)?.strip_prefix(", ")?,
        _ => rest.trim_start_matches(' '),
    };
    (line.len() - rest.len() <= 6).then_some(())?;
    let name = rest.strip_prefix("--")?;
    let end = name
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .unwrap_or(name.len());
    Some(&name[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// The help clap prints for `args`, scoped as `main` prints it.
    fn help(args: &[&str]) -> String {
        let err = Cli::command()
            .try_get_matches_from(std::iter::once("e2b-tools").chain(args.iter().copied()))
            .unwrap_err();
        scoped_help(&err.render().to_string(), &global_names())
    }

    #[test]
    fn a_subcommands_help_shows_only_the_global_options_it_uses() {
        let serve = help(&["local", "serve", "--help"]);
        for taken in ["--port", "--state-dir", "--no-isolation", "--help"] {
            assert!(serve.contains(taken), "{taken}:\n{serve}");
        }
        for not_taken in [
            "--warm-pool",
            "--rich-results",
            "--tools",
            "--template",
            "--backend",
        ] {
            assert!(!serve.contains(not_taken), "{not_taken}:\n{serve}");
        }
        assert!(serve.lines().count() < 60, "{serve}");
        let list = help(&["sandbox", "list", "-h"]);
        assert!(
            list.contains("--api-url") && list.contains("--json"),
            "{list}"
        );
        assert!(
            !list.contains("--template") && !list.contains("--sandbox-id"),
            "{list}"
        );
        // call, batch and mcp take them all.
        let call = help(&["call", "--help"]);
        assert!(
            call.contains("--warm-pool") && call.contains("--template"),
            "{call}"
        );
    }

    #[test]
    fn the_cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn key_values_split_at_the_first_equals_sign() {
        assert_eq!(
            parse_key_value("A=b=c").unwrap(),
            ("A".to_string(), "b=c".to_string())
        );
        assert!(parse_key_value("=x").is_err());
        assert!(parse_key_value("novalue").is_err());
    }

    #[test]
    fn volume_mounts_need_a_name_and_a_path() {
        assert_eq!(
            parse_volume_mount("data=/mnt/data").unwrap(),
            ("data".to_string(), "/mnt/data".to_string())
        );
        assert!(parse_volume_mount("data=").is_err());
        assert!(parse_volume_mount("=/mnt").is_err());
        assert!(parse_volume_mount("data").is_err());
    }

    #[test]
    fn a_bad_proxy_flag_is_refused_without_repeating_it() {
        for url in ["http://alice:pw@PART@proxy:3128", "http://alice:pw@:3128"] {
            let err = Cli::try_parse_from(["e2b-tools", "--proxy", url, "tools"]).unwrap_err();
            assert_eq!(err.kind(), clap::error::ErrorKind::ValueValidation);
            let text = err.to_string();
            assert!(text.contains("--proxy is not a usable proxy"), "{text}");
            assert!(!text.contains("pw") && !text.contains("PART"), "{text}");
        }
        let cli = Cli::try_parse_from(["e2b-tools", "--proxy", " proxy:3128 ", "tools"]).unwrap();
        assert_eq!(cli.global.proxy.as_deref(), Some("proxy:3128"));
    }

    #[test]
    fn urls_must_be_absolute_http_or_https() {
        assert_eq!(
            parse_url(" http://127.0.0.1:3000 ").unwrap(),
            "http://127.0.0.1:3000"
        );
        assert!(parse_url("https://api.e2b.app").is_ok());
        assert!(parse_url("api.e2b.app").is_err());
        assert!(parse_url("ftp://x").is_err());
        assert!(parse_url("/relative").is_err());
        assert!(parse_url("").is_err());
    }
}
