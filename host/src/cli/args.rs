//! Command-line arguments of `e2b-tools`.

use clap::{Args, Parser, Subcommand, ValueEnum};
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
/// handed to the component (only E2B_* variables are); the component may
/// reach only the API and sandbox hosts they name. E2B_TOOLS_LOG (or
/// RUST_LOG) sets the log filter.
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
    /// Exit status: 0 when the result's `success` is true, 1 when it is
    /// false, 2 on usage errors.
    Call(CallArgs),
    /// Run tool calls read as JSON lines from stdin in ONE sandbox.
    ///
    /// Each input line is `{"tool": "run_code", "args": {...}}`; each
    /// output line is that call's result object. A malformed line gives a
    /// `success: false` line and the batch goes on. The sandbox is shut down
    /// at the end of input.
    Batch,
    /// Serve the tools over MCP on stdin/stdout (one sandbox per connection).
    Mcp,
    /// The local E2B-compatible server.
    Local {
        #[command(subcommand)]
        command: LocalCommand,
    },
}

#[derive(Debug, Args)]
pub(crate) struct CallArgs {
    /// The tool: run_code, run_command, write_file, read_file, list_files,
    /// start_background_command.
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
    /// the E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY to use.
    Serve {
        /// Port on 127.0.0.1 (0 picks a free one).
        #[arg(long, default_value_t = 0)]
        port: u16,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum BackendArg {
    /// E2B (or the server E2B_API_URL / E2B_SANDBOX_URL name); needs E2B_API_KEY.
    E2b,
    /// The local server, started in this process.
    Local,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per event (the audit trail for machines).
    Json,
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
    /// Attach to (and resume) this existing sandbox instead of creating one.
    #[arg(long, global = true, value_name = "ID")]
    pub(crate) sandbox_id: Option<String>,
    /// Local backend: run sandbox processes without bubblewrap isolation.
    #[arg(long, global = true)]
    pub(crate) no_isolation: bool,
    /// Local backend and guest clock run this many times faster than real
    /// time (for tests of timeouts and keep-alive).
    #[arg(long, global = true, value_name = "FACTOR", hide = true)]
    pub(crate) time_scale: Option<f64>,
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

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
}
