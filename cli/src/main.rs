//! `e2b-tools`: run the E2B tools component from the command line, as an
//! MCP server, or run the local E2B-compatible server. See `--help`.

mod command;

use clap::{CommandFactory, FromArgMatches};
use std::process::ExitCode;

fn main() -> ExitCode {
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
    let runtime = match runtime_for(&cli.command) {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("e2b-tools: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(command::run(cli))
}

/// The servers of many clients (`mcp --http`, `local serve`) get a thread
/// per core. Every other command serves one caller, one call at a time, on
/// this thread alone: with worker threads each call's wake-ups hop between
/// them, which cost more CPU than the call itself (BENCHMARKS.md).
fn runtime_for(command: &command::args::Command) -> std::io::Result<tokio::runtime::Runtime> {
    use command::args::Command;
    // Every command named: a new one must choose.
    let many_clients = match command {
        Command::Mcp(args) => args.http.is_some(),
        Command::Local { .. } => true,
        Command::Tools
        | Command::Call(_)
        | Command::Batch
        | Command::Sandbox { .. }
        | Command::Snapshot { .. } => false,
    };
    let mut builder = match many_clients {
        true => tokio::runtime::Builder::new_multi_thread(),
        false => tokio::runtime::Builder::new_current_thread(),
    };
    builder.enable_all().build()
}
