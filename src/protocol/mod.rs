//! The protocols the component speaks, as pure request builders and
//! answer parsers: E2B's control-plane API ([`api`]), envd's Connect
//! services ([`envd`]), the code interpreter's `/execute` ([`interpreter`],
//! [`long_line`]), and the request type they share ([`request`]). Sending
//! them is the session's platform's job
//! ([`Platform`](crate::session::platform::Platform)).

pub mod api;
pub mod envd;
pub mod interpreter;
pub mod long_line;
pub mod request;
