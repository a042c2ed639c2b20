//! What the guest tells its host as it happens (WIT `events`; the types
//! are the host-guest contract's, [`e2b_wire::lifecycle`]). Reported
//! through [`Platform::report`] before the call that caused it returns, so
//! a host knows every sandbox it answers for while a call still runs.
//!
//! [`Platform::report`]: super::platform::Platform::report

pub use e2b_wire::lifecycle::{Origin, Report, StopReason};
