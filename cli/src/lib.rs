//! The front-ends of the E2B tools component: the `e2b-tools` command line
//! (its binary), the MCP server over stdio and streamable HTTP
//! ([`mcp`]), and the [`Backend`] that starts the local E2B-compatible
//! server (crate `e2b-local`) in-process.
//!
//! The embedding itself (loading the component, sessions, the outbound
//! policy, the audit trail) is the library [`e2b_tools_host`], which
//! depends on none of this: a Rust agent that embeds the component needs
//! only that crate. This one adds what a program *around* it needs.
//!
//! # Sessions on the local backend
//!
//! [`Backend::start`] with [`BackendKind::Local`] starts the local server
//! in-process; with [`BackendKind::E2b`] sessions talk to E2B (needs
//! `E2B_API_KEY`). [`Backend::session_env`] gives the environment a
//! session needs; shut the backend down after its sessions.
//!
//! ```no_run
//! use e2b_tools_cli::{Backend, BackendKind, LocalBackendOptions};
//! use e2b_tools_host::{ComponentSource, Runtime, Session, SessionOptions};
//! use serde_json::json;
//!
//! # async fn example() -> anyhow::Result<()> {
//! let runtime = Runtime::load(ComponentSource::Embedded)?;
//! let env = e2b_tools_host::e2b_env(std::env::vars());
//! let backend = Backend::start(BackendKind::Local, &env, &LocalBackendOptions::default()).await?;
//!
//! let session = Session::open(
//!     &runtime,
//!     SessionOptions { env: backend.session_env(&env), ..SessionOptions::default() },
//! )
//! .await?;
//! let result = session.call_json("run_code", &json!({"code": "print(6 * 7)"})).await?;
//! assert_eq!(result["stdout"], "42\n");
//!
//! session.shutdown().await?;
//! backend.shutdown().await;
//! # Ok(())
//! # }
//! ```

#![deny(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

mod audit;
mod backend;
pub mod mcp;

pub use backend::{default_backend, Backend, BackendError, BackendKind, LocalBackendOptions};
