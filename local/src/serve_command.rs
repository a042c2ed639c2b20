//! The `serve` command of both front-ends (`e2b-tools local serve` and the
//! packages' bundled `e2b-local serve`): the API key kept across restarts,
//! the endpoints announced as shell lines, the end of standard input as a
//! stop for a server that belongs to another process.

use std::io::Write;
use std::path::PathBuf;

use crate::{Isolation, Options};

/// What one `serve` asks for.
#[derive(Debug, Clone)]
pub struct ServeCommand {
    /// Port on 127.0.0.1 (0: any free one).
    pub port: u16,
    /// Where paused sandboxes, snapshots and the API key are kept; `None`
    /// keeps nothing (`--ephemeral`).
    pub state_dir: Option<PathBuf>,
    /// The API key to ask for; else the state directory's, else a new one.
    pub api_key: Option<String>,
    /// Stop when standard input ends (its owner's exit closes it).
    pub stop_at_eof: bool,
    /// How sandboxes are isolated.
    pub isolation: Isolation,
    /// Time runs this many times faster (tests).
    pub time_scale: f64,
}

impl Default for ServeCommand {
    fn default() -> Self {
        Self {
            port: 0,
            state_dir: None,
            api_key: None,
            stop_at_eof: false,
            isolation: Isolation::Bwrap,
            time_scale: 1.0,
        }
    }
}

/// Runs the server until Ctrl-C, SIGTERM or (with `stop_at_eof`) the end of
/// standard input. Prints `export E2B_API_URL=…`, `E2B_SANDBOX_URL` and
/// `E2B_API_KEY` lines on stdout (a script sources them, a package reads
/// them) and, on stderr, status lines that start with `program`. The error
/// is a message for people.
pub async fn run(command: ServeCommand, program: &str) -> Result<(), String> {
    let api_key = match (
        command.api_key.filter(|k| !k.trim().is_empty()),
        &command.state_dir,
    ) {
        (Some(key), _) => key.trim().to_string(),
        (None, Some(dir)) => crate::stored_api_key(dir).map_err(|err| {
            format!(
                "cannot keep the API key in {}: {err} (pass --api-key KEY, or --state-dir DIR)",
                dir.display()
            )
        })?,
        (None, None) => crate::generate_api_key(),
    };
    let options = Options {
        port: command.port,
        api_key,
        state_dir: command.state_dir,
        isolation: command.isolation,
        time_scale: command.time_scale,
        ..Options::default()
    };
    let stop_at_eof = command.stop_at_eof;
    let eof = async move {
        if !stop_at_eof {
            return std::future::pending().await;
        }
        let mut stdin = tokio::io::stdin();
        let mut buf = [0u8; 256];
        while matches!(tokio::io::AsyncReadExt::read(&mut stdin, &mut buf).await, Ok(n) if n > 0) {}
    };
    crate::serve_until(options, eof, |server| {
        // The server stays in the foreground: stdout never ends.
        println!("export E2B_API_URL={}", server.url());
        println!("export E2B_SANDBOX_URL={}", server.url());
        println!("export E2B_API_KEY={}", server.api_key());
        let _ = std::io::stdout().flush();
        eprintln!(
            "{program}: local server listening on {}; Ctrl-C stops it",
            server.url()
        );
        eprintln!("{program}: {}", server.isolation());
        match server.state_dir() {
            Some(dir) => eprintln!(
                "{program}: state: {} (paused sandboxes and snapshots are kept)",
                dir.display()
            ),
            None => eprintln!("{program}: state: none (nothing is kept)"),
        }
    })
    .await
    .map_err(|err| err.to_string())
}
