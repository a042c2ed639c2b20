//! Warm pools: sandboxes made ahead, so a first call does not wait for one
//! (on E2B, 400 ms at the median and a second at the tail).
//!
//! [`WarmPool`] keeps sessions of the embedding world with their sandboxes
//! made, and [`StatelessPool`] keeps sandbox ids for the stateless world's
//! calls that name none; both fill through one [`filler`].

mod filler;
mod sessions;
mod stateless;

pub use filler::{PoolError, PoolStats, MAX_POOL_SIZE, WAITING_TIMEOUT};
pub use sessions::WarmPool;
pub use stateless::StatelessPool;
