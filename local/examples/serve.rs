//! Runs the local server until Ctrl-C and prints how to point the official
//! SDKs at it: `cargo run -p e2b-local --example serve -- [port]`.

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port = std::env::args()
        .nth(1)
        .map(|p| p.parse())
        .transpose()?
        .unwrap_or(0);
    let opts = e2b_local::Options {
        port,
        ..Default::default()
    };
    e2b_local::serve_forever(opts, |server| {
        println!(
            "export E2B_API_URL={0} E2B_SANDBOX_URL={0} E2B_API_KEY={1}",
            server.url(),
            server.api_key()
        );
        eprintln!("{}", server.isolation());
    })
    .await?;
    Ok(())
}
