//! `e2b-tools`: run the E2B tools component from the command line, as an
//! MCP server, or run the local E2B-compatible server. See `--help`.

mod command;

use clap::{CommandFactory, FromArgMatches};
use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = match command::args::Cli::command()
        .try_get_matches_from(std::env::args_os())
        .and_then(|matches| command::args::Cli::from_arg_matches(&matches))
    {
        Ok(cli) => cli,
        // Each subcommand's help shows the options it takes.
        Err(err) if err.kind() == clap::error::ErrorKind::DisplayHelp => {
            let help = err.render().to_string();
            print!(
                "{}",
                command::args::scoped_help(&help, &command::args::global_names())
            );
            return ExitCode::SUCCESS;
        }
        Err(err) => err.exit(),
    };
    let audit = cli.global.verbose || cli.global.log_format == command::args::LogFormat::Json;
    command::logging::init(cli.global.log_format, audit);
    command::run(cli).await
}
