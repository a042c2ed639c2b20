//! What the guest's orchestration needs from where it runs: HTTP requests
//! with streamed answers, and a monotonic clock with sleeps.
//!
//! The component's are `wasi:http` and `wasi:clocks` ([`crate::http`],
//! the only wasm-only code besides the export glue); native tests drive the
//! same orchestration ([`crate::session`], [`crate::tools`]) with canned
//! answers on a virtual clock. Static generics, not trait objects: the
//! component compiles one copy, as before.

use crate::errors::{ErrorKind, Failure};
use crate::request::HttpRequest;

/// An answer whose body is read as it arrives.
pub struct Response<B> {
    /// HTTP status.
    pub status: u16,
    /// The body.
    pub body: B,
}

/// A response body, read chunk by chunk.
// Single-threaded guest: no `Send` bound is wanted on these futures.
#[allow(async_fn_in_trait)]
pub trait ResponseBody {
    /// The next chunk, `None` at the end of the body.
    async fn chunk(&mut self) -> Result<Option<Vec<u8>>, Failure>;

    /// The whole body, failing past `max` bytes (error bodies and small
    /// JSON answers only).
    async fn read_to_end(&mut self, max: usize) -> Result<Vec<u8>, Failure> {
        let mut out = Vec::new();
        while let Some(chunk) = self.chunk().await? {
            if out.len() + chunk.len() > max {
                return Err(Failure::new(
                    ErrorKind::Internal,
                    format!("the answer is larger than {max} bytes"),
                ));
            }
            out.extend_from_slice(&chunk);
        }
        Ok(out)
    }
}

/// HTTP and clocks.
#[allow(async_fn_in_trait)]
pub trait Platform {
    /// What [`Platform::send`] answers with.
    type Body: ResponseBody;

    /// Sends `req`; `timeout_ms` bounds connecting and the first byte of
    /// the answer (0: none). Its body then streams.
    async fn send(
        &self,
        req: &HttpRequest,
        timeout_ms: u32,
    ) -> Result<Response<Self::Body>, Failure>;

    /// The monotonic clock, in nanoseconds.
    fn now_ns(&self) -> u64;

    /// Sleeps `ns` nanoseconds.
    async fn sleep_ns(&self, ns: u64);
}
