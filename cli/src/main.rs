//! `e2b-tools`: run the E2B tools component from the command line, as an
//! MCP server, or run the local E2B-compatible server. See `--help`.

mod command;

use clap::Parser;
use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = command::args::Cli::parse();
    let audit = cli.global.verbose || cli.global.log_format == command::args::LogFormat::Json;
    command::logging::init(cli.global.log_format, audit);
    command::run(cli).await
}
