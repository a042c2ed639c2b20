//! The protocols the component speaks, as pure request builders and
//! answer parsers: E2B's control-plane API ([`api`]), envd's Connect
//! services ([`envd`]), the code interpreter's `/execute` ([`interpreter`],
//! [`long_line`]), and the request type they share ([`request`]). [`http`]
//! sends them over `wasi:http` (wasm only).

pub mod api;
pub mod envd;
#[cfg(target_arch = "wasm32")]
pub mod http;
pub mod interpreter;
pub mod long_line;
pub mod request;
