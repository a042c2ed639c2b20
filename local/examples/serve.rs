//! Runs the local server until Ctrl-C and prints how to point the official
//! SDKs at it: `cargo run -p e2b-local --example serve -- [port] [--state-dir DIR]`.
//!
//! Paused sandboxes and snapshots are kept in the state directory across
//! restarts (default: [`e2b_local::default_state_dir`]).

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut port = 0;
    let mut state_dir = e2b_local::default_state_dir();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--state-dir" => {
                state_dir = Some(args.next().ok_or("--state-dir needs a directory")?.into())
            }
            _ => port = arg.parse()?,
        }
    }
    let opts = e2b_local::Options {
        port,
        state_dir,
        ..Default::default()
    };
    e2b_local::serve_forever(opts, |server| {
        println!(
            "export E2B_API_URL={0} E2B_SANDBOX_URL={0} E2B_API_KEY={1}",
            server.url(),
            server.api_key()
        );
        eprintln!("{}", server.isolation());
        match server.state_dir() {
            Some(dir) => eprintln!(
                "state: {} (paused sandboxes and snapshots are kept)",
                dir.display()
            ),
            None => eprintln!("state: none (nothing is kept)"),
        }
    })
    .await?;
    Ok(())
}
