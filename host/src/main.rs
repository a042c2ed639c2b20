//! `e2b-tools`: run the E2B tools component from the command line, as an
//! MCP server, or run the local E2B-compatible server. See `--help`.

mod cli;

use clap::Parser;
use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = cli::args::Cli::parse();
    let audit = cli.global.verbose || cli.global.log_format == cli::args::LogFormat::Json;
    cli::logging::init(cli.global.log_format, audit);
    cli::run(cli).await
}
