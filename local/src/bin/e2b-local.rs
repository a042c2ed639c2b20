//! `e2b-local`: the local E2B-compatible server alone, without the
//! component runtime (wasmtime) the `e2b-tools` CLI carries. The Python and
//! Node packages ship it in their Linux x86-64 builds and start it when no
//! E2B server is named (`e2b-local serve --ephemeral --stop-at-eof`); its
//! `serve` is `e2b-tools local serve`'s ([`e2b_local::serve_command`]).
//!
//! Arguments are read by hand: seven flags do not need a parser crate in
//! the server's dependencies.

use std::process::ExitCode;

use e2b_local::serve_command::{self, ServeCommand};

const USAGE: &str = "\
usage: e2b-local serve [--port N] [--state-dir DIR | --ephemeral] [--api-key KEY]
                       [--stop-at-eof] [--no-isolation]

Runs the local E2B-compatible server on 127.0.0.1 and prints the
E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY lines the official SDKs need.

  --port N          port (default: any free one)
  --state-dir DIR   where paused sandboxes, snapshots and the key are kept
                    (default: /var/lib/e2b-tools/local as root, else
                    ~/.local/state/e2b-tools/local)
  --ephemeral       keep nothing, a new key each start
  --api-key KEY     the API key (default: the state directory's)
  --stop-at-eof     stop when standard input ends
  --no-isolation    run commands on the host itself (no sandbox)
";

fn main() -> ExitCode {
    let command = match parse(std::env::args().skip(1)) {
        Ok(Some(command)) => command,
        Ok(None) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("e2b-local: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("e2b-local: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve_command::run(command, "e2b-local")) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("e2b-local: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The command the arguments ask for; `None` for help.
fn parse(mut args: impl Iterator<Item = String>) -> Result<Option<ServeCommand>, String> {
    match args.next().as_deref() {
        Some("serve") => {}
        Some("-h" | "--help" | "help") | None => return Ok(None),
        Some("-V" | "--version") => {
            println!("e2b-local {}", env!("CARGO_PKG_VERSION"));
            std::process::exit(0);
        }
        Some(other) => return Err(format!("unknown command {other:?}")),
    }
    let mut command = ServeCommand::default();
    let mut state_dir = None;
    let mut ephemeral = false;
    while let Some(arg) = args.next() {
        let mut value = |flag: &str| args.next().ok_or(format!("{flag} needs a value"));
        match arg.as_str() {
            "--port" => {
                let port = value("--port")?;
                command.port = port
                    .parse()
                    .map_err(|_| format!("--port {port:?} is not a port"))?;
            }
            "--state-dir" => state_dir = Some(value("--state-dir")?.into()),
            "--ephemeral" => ephemeral = true,
            "--api-key" => command.api_key = Some(value("--api-key")?),
            "--stop-at-eof" => command.stop_at_eof = true,
            "--no-isolation" => command.isolation = e2b_local::Isolation::None,
            "-h" | "--help" => return Ok(None),
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    if ephemeral && state_dir.is_some() {
        return Err("--ephemeral keeps nothing: leave out --state-dir".into());
    }
    command.state_dir = match ephemeral {
        true => None,
        false => state_dir.or_else(e2b_local::default_state_dir),
    };
    Ok(Some(command))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_args(args: &[&str]) -> Result<Option<ServeCommand>, String> {
        parse(args.iter().map(|a| a.to_string()))
    }

    #[test]
    fn serve_takes_the_packages_flags_and_refuses_what_it_does_not_know() {
        let command = parse_args(&["serve", "--ephemeral", "--stop-at-eof", "--port", "3999"])
            .unwrap()
            .unwrap();
        assert!(command.stop_at_eof && command.state_dir.is_none());
        assert_eq!(command.port, 3999);
        let kept = parse_args(&["serve", "--state-dir", "/srv/e2b"])
            .unwrap()
            .unwrap();
        assert_eq!(
            kept.state_dir.as_deref(),
            Some(std::path::Path::new("/srv/e2b"))
        );
        assert!(parse_args(&["serve", "--ephemeral", "--state-dir", "/x"]).is_err());
        assert!(parse_args(&["serve", "--port", "http"]).is_err());
        assert!(parse_args(&["serve", "--port"]).is_err());
        assert!(parse_args(&["serve", "--tools", "all"]).is_err());
        assert!(parse_args(&["start"]).is_err());
        assert!(parse_args(&["--help"]).unwrap().is_none());
    }
}
