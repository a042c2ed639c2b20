//! The code interpreter of one sandbox (port 49999: `/execute`,
//! `/contexts`, `/health`), compatible with E2B's code-interpreter server
//! as the official SDKs use it.
//!
//! How it works:
//! 1. Each context is one persistent kernel process started through the
//!    sandbox's [`KernelSpawner`] (so it runs isolated, in the sandbox's
//!    filesystem): for Python, a bridge to IPython's real kernel
//!    (`jupyter_bridge.py`, through `jupyter_client`) where the sandbox's
//!    Python has Jupyter, else a fallback driver (`python_kernel.py`), both
//!    run with `python3 -u -c`; a Node driver (`javascript_kernel.js`,
//!    `node -e`) or a bash driver (`bash_kernel.sh`, `bash -c`). Default
//!    contexts (one per language) start with the sandbox where its template
//!    says so, else on first use; `POST /contexts` makes more.
//! 2. The server writes requests to the kernel's stdin, one line each (JSON
//!    for Python/Node, a self-contained shell line for bash). Drivers read
//!    stdin on their own thread/process, so an interrupt line arrives while
//!    code runs and becomes SIGINT for the running code only.
//! 3. Drivers answer on stdout with lines starting with a magic prefix
//!    (`pipe_parser`): output chunks, results (MIME bundles), an error, and
//!    `done`; plus a `mark` on stderr. Everything else on the kernel's
//!    stdout/stderr (child processes) is passed on as raw output.
//! 4. `execution` turns that into the NDJSON lines of `/execute`
//!    (`ndjson`), adds keepalives after 5 s of silence, and interrupts the
//!    kernel when the client goes away; a kernel that does not stop within
//!    3 s is killed and restarted (without its state) on the next use.

mod context;
mod contexts;
mod execution;
mod kernel;
mod language;
mod ndjson;
mod pipe_parser;
mod routes;

pub use contexts::Interpreter;
pub use kernel::KernelSpawner;
pub use routes::router;

#[cfg(test)]
mod tests;
