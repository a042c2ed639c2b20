//! What becomes of output on its way to the model: truncated to a byte
//! bound ([`truncate`], [`base64_sink`]), cleared of secrets ([`redact`]),
//! reported as progress lines ([`progress`]), shaped into result dicts
//! ([`results`]).

pub mod base64_sink;
pub mod progress;
pub mod redact;
pub mod results;
pub mod truncate;
