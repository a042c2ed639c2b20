//! Why a session call failed, as opposed to a tool reporting a failure
//! (which is a normal result): [`SessionError`], and the wasmtime errors
//! it keeps whole ([`WasmError`]).

use crate::bindings::ToolError;
use crate::policy::PolicyError;
use std::sync::Arc;

/// A wasmtime error (a trap, or a failure to set up, instantiate or link),
/// kept whole as the [source](std::error::Error::source), with the text
/// people read: the error's chain, and running out of fuel named for what
/// it is. Cheap to clone: a session that trapped hands the same error to
/// every later call.
#[derive(Debug, Clone)]
pub struct WasmError {
    reason: String,
    error: Arc<wasmtime::Error>,
}

impl WasmError {
    pub(crate) fn new(error: wasmtime::Error) -> Self {
        let reason = if Self::out_of_fuel(&error) {
            "the component used up its CPU budget for one call (fuel_per_call) and was stopped"
                .to_string()
        } else {
            format!("{error:#}")
        };
        Self {
            reason,
            error: Arc::new(error),
        }
    }

    /// wasmtime's error.
    pub fn error(&self) -> &wasmtime::Error {
        &self.error
    }

    /// Whether the guest was stopped for spending its CPU budget
    /// ([`SessionOptions::fuel_per_call`](crate::SessionOptions::fuel_per_call)).
    pub fn is_out_of_fuel(&self) -> bool {
        Self::out_of_fuel(&self.error)
    }

    fn out_of_fuel(error: &wasmtime::Error) -> bool {
        error.downcast_ref::<wasmtime::Trap>() == Some(&wasmtime::Trap::OutOfFuel)
    }
}

/// The text people read, as a `&str`: a `WasmError` reads like the
/// reason string `SessionError::Trapped` held before it kept the error.
impl std::ops::Deref for WasmError {
    type Target = str;

    fn deref(&self) -> &str {
        &self.reason
    }
}

impl std::fmt::Display for WasmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for WasmError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        let error: &(dyn std::error::Error + Send + Sync + 'static) = (*self.error).as_ref();
        Some(error)
    }
}

/// Why a session's options are unusable.
#[derive(Debug, thiserror::Error)]
pub enum OptionsError {
    /// An endpoint (config or `E2B_*` environment) is not a usable URL.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// [`ClockMode::Scaled`](crate::ClockMode::Scaled) with a scale that is
    /// not positive and finite.
    #[error("clock scale must be positive and finite, got {0}")]
    ClockScale(f64),
}

/// Why a session call failed (as opposed to a tool reporting a failure,
/// which is a normal result).
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The options are unusable (a malformed URL, a bad clock scale).
    #[error("invalid session options: {0}")]
    InvalidOptions(#[from] OptionsError),
    /// The component could not be instantiated.
    #[error("cannot instantiate the component: {0}")]
    Instantiate(#[source] WasmError),
    /// The component rejected the configuration.
    #[error("the component rejected the configuration: {}", .0.message)]
    Configure(ToolError),
    /// The component trapped (for example it ran out of its memory cap).
    /// The session is now dead; the host is unaffected.
    #[error("the component trapped and the session is closed: {0}")]
    Trapped(#[source] WasmError),
    /// An earlier call trapped (the trap is the source); open a new
    /// session.
    #[error("the session is closed after an earlier trap: {0}")]
    Dead(#[source] WasmError),
    /// A lifecycle call (`shutdown`) failed.
    #[error("{}", .0.message)]
    Lifecycle(ToolError),
    /// The component returned something that is not JSON from `call-tool`.
    #[error("the component returned invalid JSON: {0}")]
    InvalidJson(#[from] serde_json::Error),
    /// A stateless export returned something other than a string.
    #[error("the component returned invalid JSON: {export} returned {got}, not a string")]
    NotAString {
        /// The export.
        export: String,
        /// What it returned instead.
        got: String,
    },
    /// A stateless call's tool or arguments do not fit the component's
    /// exports.
    #[error("{0}")]
    InvalidArguments(String),
}

impl From<PolicyError> for SessionError {
    fn from(err: PolicyError) -> Self {
        SessionError::InvalidOptions(err.into())
    }
}
