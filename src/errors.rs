//! Failures and their classes: the mapping of HTTP statuses and Connect
//! codes to error kinds and to the texts the Python SDK's exceptions carry
//! (docs/PROTOCOL.md §2.7, §3.4, §4.12, §5.4).

use e2b_wire::connect::Code;

/// The class of a failure (the WIT `error-kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Arguments missing, of the wrong type or out of range.
    InvalidArgument,
    /// The sandbox could not be created or reached.
    SandboxUnavailable,
    /// The sandbox expired or was killed.
    SandboxExpired,
    /// The operation ran past its timeout.
    Timeout,
    /// A named file, directory, process or sandbox does not exist.
    NotFound,
    /// The sandbox refused the operation.
    PermissionDenied,
    /// Rate-limited.
    RateLimited,
    /// Missing or rejected credentials.
    Auth,
    /// The request could not be sent or its answer not read.
    Network,
    /// The host cancelled the call (its client asked to); the work in the
    /// sandbox was stopped.
    Cancelled,
    /// Anything else.
    Internal,
}

impl ErrorKind {
    /// The WIT `error-kind` case name, e.g. `sandbox-expired`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::InvalidArgument => "invalid-argument",
            ErrorKind::SandboxUnavailable => "sandbox-unavailable",
            ErrorKind::SandboxExpired => "sandbox-expired",
            ErrorKind::Timeout => "timeout",
            ErrorKind::NotFound => "not-found",
            ErrorKind::PermissionDenied => "permission-denied",
            ErrorKind::RateLimited => "rate-limited",
            ErrorKind::Auth => "auth",
            ErrorKind::Network => "network",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Internal => "internal",
        }
    }
}

/// A failure of one operation against E2B, before a tool adds its prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Its class.
    pub kind: ErrorKind,
    /// The text, as the SDK exception's `str()` would be where reasonable.
    pub message: String,
    /// A connection that failed or broke in a way the next attempt may
    /// not (refused, reset, closed early): an idempotent request is retried.
    pub transient: bool,
}

impl Failure {
    /// A failure of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            transient: false,
        }
    }

    /// A [`ErrorKind::Network`] failure that may not happen again.
    pub fn transient(message: impl Into<String>) -> Self {
        Self {
            transient: true,
            ..Self::new(ErrorKind::Network, message)
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// A failed tool call as the WIT `tool-error` carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    /// Its class.
    pub kind: ErrorKind,
    /// The prefixed message (`Failed to run command: …`).
    pub message: String,
    /// Output captured before the failure, truncated.
    pub partial_output: String,
    /// The echoed path.
    pub path: Option<String>,
    /// The echoed command.
    pub command: Option<String>,
}

impl ToolError {
    /// An invalid-argument error (nothing was sent).
    pub fn invalid(message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::InvalidArgument,
            message: message.into(),
            partial_output: String::new(),
            path: None,
            command: None,
        }
    }

    /// `failure` with a tool's prefix.
    pub fn from_failure(prefix: &str, failure: Failure) -> Self {
        Self {
            kind: failure.kind,
            message: format!("{prefix}{}", failure.message),
            partial_output: String::new(),
            path: None,
            command: None,
        }
    }

    /// Echoes `path`.
    pub fn with_path(mut self, path: impl Into<String>) -> Self {
        self.path = Some(path.into());
        self
    }

    /// Echoes `command`.
    pub fn with_command(mut self, command: impl Into<String>) -> Self {
        self.command = Some(command.into());
        self
    }

    /// Attaches output captured before the failure.
    pub fn with_partial_output(mut self, partial: String) -> Self {
        self.partial_output = partial;
        self
    }
}

/// The SDK's suffix for a Connect `deadline_exceeded`.
pub const DEADLINE_SUFFIX: &str = ": This error is likely due to exceeding 'timeout' — the total time a long running request (like process or directory watch) can be active — or 'request_timeout'. You can modify these by passing 'timeout' or 'request_timeout' when making the request. Use '0' to disable the timeout.";

/// The code interpreter SDK's text for an execution past its timeout.
pub const EXECUTION_TIMEOUT: &str =
    "Execution timed out — the 'timeout' option can be used to increase this timeout";

/// The SDK's text for a request past `request_timeout`.
pub const REQUEST_TIMEOUT: &str =
    "Request timed out — the 'request_timeout' option can be used to increase this timeout";

const NOT_RUNNING_SUFFIX: &str = ": The sandbox was killed or reached its timeout. You can modify the sandbox timeout by passing 'timeout' when starting the sandbox or calling '.set_timeout' on the sandbox with the desired timeout.";
const PORT_NOT_OPEN_SUFFIX: &str = ": The sandbox is running but envd inside it could not be reached (e.g. its network is down). Check the sandbox state with 'Sandbox.get_info()'.";
const UNREACHABLE_SUFFIX: &str = ": The sandbox could not be reached and its state is unknown — it may have been killed or reached its timeout, or the connection to it was lost. Check the sandbox state with 'Sandbox.get_info()'.";

/// The message of an error body: the JSON `message` if there is one, else
/// the raw text (as the SDK's `get_message`).
pub fn body_message(body: &[u8]) -> String {
    if let Ok(serde_json::Value::Object(map)) = serde_json::from_slice::<serde_json::Value>(body) {
        if let Some(serde_json::Value::String(msg)) = map.get("message") {
            return msg.clone();
        }
    }
    String::from_utf8_lossy(body).into_owned()
}

/// A 502/`unavailable` from the proxy in front of a sandbox: gone (expired),
/// or unreachable.
pub fn sandbox_unavailable(message: &str) -> Failure {
    if message.contains("was not found") {
        Failure::new(
            ErrorKind::SandboxExpired,
            format!("{message}{NOT_RUNNING_SUFFIX}"),
        )
    } else if message.contains("port is not open") {
        Failure::new(
            ErrorKind::SandboxUnavailable,
            format!("{message}{PORT_NOT_OPEN_SUFFIX}"),
        )
    } else {
        Failure::new(
            ErrorKind::SandboxUnavailable,
            format!("{message}{UNREACHABLE_SUFFIX}"),
        )
    }
}

/// A control-plane error answer (`e2b.api.handle_api_exception`).
pub fn from_api_status(status: u16, body: &[u8]) -> Failure {
    let message = body_message(body);
    match status {
        401 => Failure::new(
            ErrorKind::Auth,
            format!("401: Unauthorized, please check your credentials. - {message}"),
        ),
        403 => Failure::new(ErrorKind::Auth, format!("403: {message}")),
        429 => Failure::new(
            ErrorKind::RateLimited,
            format!("429: Rate limit exceeded, please try again later. - {message}"),
        ),
        503 => Failure::new(
            ErrorKind::SandboxUnavailable,
            format!("503: Service temporarily unavailable, please retry. - {message}"),
        ),
        404 => Failure::new(ErrorKind::NotFound, format!("404: {message}")),
        502 | 504 => Failure::new(
            ErrorKind::SandboxUnavailable,
            format!("{status}: {message}"),
        ),
        400 | 422 => Failure::new(ErrorKind::InvalidArgument, format!("{status}: {message}")),
        _ => Failure::new(ErrorKind::Internal, format!("{status}: {message}")),
    }
}

/// A Connect error (unary error body or end-of-stream error), mapped as
/// `e2b/envd/rpc.py` maps it.
pub fn from_connect(code: Code, message: &str) -> Failure {
    match code {
        Code::InvalidArgument | Code::FailedPrecondition | Code::OutOfRange => {
            Failure::new(ErrorKind::InvalidArgument, message)
        }
        Code::Unauthenticated => Failure::new(ErrorKind::Auth, message),
        Code::PermissionDenied => Failure::new(ErrorKind::PermissionDenied, message),
        Code::NotFound => Failure::new(ErrorKind::NotFound, message),
        Code::Unavailable => sandbox_unavailable(message),
        Code::ResourceExhausted => Failure::new(
            ErrorKind::RateLimited,
            format!("{message}: Rate limit exceeded, please try again later."),
        ),
        Code::Canceled => Failure::new(
            ErrorKind::Timeout,
            format!("{message}: The request was cancelled by the server or a proxy while it was in flight — for example when the sandbox is paused or shut down."),
        ),
        Code::DeadlineExceeded => {
            Failure::new(ErrorKind::Timeout, format!("{message}{DEADLINE_SUFFIX}"))
        }
        other => Failure::new(
            ErrorKind::Internal,
            format!("Code.{}: {message}", other.as_str().to_ascii_uppercase()),
        ),
    }
}

/// A non-200 answer to a Connect call: a Connect error body if it is one,
/// else the HTTP status (an integer `code` in a JSON body wins).
pub fn from_connect_http(status: u16, body: &[u8]) -> Failure {
    if let Ok(err) = serde_json::from_slice::<e2b_wire::connect::ConnectError>(body) {
        if !err.message.trim().is_empty() {
            return from_connect(err.code, &err.message);
        }
        return from_connect(err.code, &format!("{status} {}", reason(status)));
    }
    let mut code = status;
    if let Ok(serde_json::Value::Object(map)) = serde_json::from_slice::<serde_json::Value>(body) {
        if let Some(c) = map.get("code").and_then(|c| c.as_u64()) {
            code = u16::try_from(c).unwrap_or(status);
        }
    }
    from_connect(
        Code::from_http_status(code),
        &message_or_status(body, status),
    )
}

/// [`body_message`], or the status and its reason phrase when the body says
/// nothing (a proxy's bare 403), so an error never reads as blank.
fn message_or_status(body: &[u8], status: u16) -> String {
    let message = body_message(body);
    if message.trim().is_empty() {
        format!("{status} {}", reason(status))
    } else {
        message
    }
}

/// An error answer from envd's REST API (`/files`), as `format_envd_api_exception`.
pub fn from_envd_http(status: u16, body: &[u8]) -> Failure {
    let message = message_or_status(body, status);
    match status {
        400 => Failure::new(ErrorKind::InvalidArgument, message),
        401 => Failure::new(ErrorKind::Auth, message),
        403 => Failure::new(ErrorKind::PermissionDenied, message),
        404 => Failure::new(ErrorKind::NotFound, message),
        429 => Failure::new(
            ErrorKind::RateLimited,
            format!("{message}: The requests are being rate limited."),
        ),
        502 => sandbox_unavailable(&message),
        507 => Failure::new(ErrorKind::Internal, message),
        503 | 504 => Failure::new(
            ErrorKind::SandboxUnavailable,
            format!("{status}: {message}"),
        ),
        _ => Failure::new(ErrorKind::Internal, format!("{status}: {message}")),
    }
}

/// An error answer from the code interpreter's `/execute`.
pub fn from_interpreter_http(status: u16, body: &[u8]) -> Failure {
    let text = String::from_utf8_lossy(body).into_owned();
    match status {
        404 if text.trim().is_empty() => {
            Failure::new(ErrorKind::NotFound, format!("{status} {}", reason(status)))
        }
        404 => Failure::new(ErrorKind::NotFound, text),
        // The proxy's "sandbox was not found" means the sandbox is gone,
        // as the SDK says; any other 502 blames no timeout that did not
        // happen (the SDK's words would send the user the wrong way).
        502 if text.contains("was not found") => Failure::new(
            ErrorKind::SandboxExpired,
            format!("{text}: This error is likely due to sandbox timeout. You can modify the sandbox timeout by passing 'timeout' when starting the sandbox or calling '.set_timeout' on the sandbox with the desired timeout."),
        ),
        502 => sandbox_unavailable(&body_message(body)),
        401 => Failure::new(
            ErrorKind::Auth,
            format!("{status} {}: {text}", reason(status)),
        ),
        429 => Failure::new(
            ErrorKind::RateLimited,
            format!("{status} {}: {text}", reason(status)),
        ),
        503 | 504 => Failure::new(
            ErrorKind::SandboxUnavailable,
            format!("{status} {}: {text}", reason(status)),
        ),
        400 => Failure::new(
            ErrorKind::InvalidArgument,
            format!("{status} {}: {text}", reason(status)),
        ),
        _ => Failure::new(
            ErrorKind::Internal,
            format!("{status} {}: {text}", reason(status)),
        ),
    }
}

/// The standard reason phrase of the statuses we may meet.
fn reason(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        409 => "Conflict",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_error_bodies_still_give_a_message() {
        // Found by fuzz/server_answers: a bare 403 gave an empty message.
        let err = from_envd_http(403, b"");
        assert_eq!(err.kind, ErrorKind::PermissionDenied);
        assert_eq!(err.message, "403 Forbidden");
        let err = from_connect_http(400, b"  ");
        assert_eq!(err.kind, ErrorKind::InvalidArgument);
        assert_eq!(err.message, "400 Bad Request");
        assert_eq!(
            from_envd_http(404, br#"{"message":"no such file"}"#).message,
            "no such file"
        );
    }

    #[test]
    fn proxy_not_found_is_expiry() {
        let f = from_envd_http(
            502,
            br#"{"sandboxId":"x","message":"The sandbox was not found","code":502}"#,
        );
        assert_eq!(f.kind, ErrorKind::SandboxExpired);
        assert!(f
            .message
            .starts_with("The sandbox was not found: The sandbox was killed"));
        let f = from_connect_http(502, b"<html>bad gateway</html>");
        assert_eq!(f.kind, ErrorKind::SandboxUnavailable);
    }

    #[test]
    fn connect_codes_map_like_the_sdk() {
        let f = from_connect(Code::DeadlineExceeded, "context deadline exceeded");
        assert_eq!(f.kind, ErrorKind::Timeout);
        assert!(f.message.starts_with(
            "context deadline exceeded: This error is likely due to exceeding 'timeout' — "
        ));
        assert!(f.message.ends_with("Use '0' to disable the timeout."));
        let f = from_connect_http(
            404,
            br#"{"code":"not_found","message":"directory not found: stat /nope: no such file or directory"}"#,
        );
        assert_eq!(f.kind, ErrorKind::NotFound);
        assert_eq!(
            f.message,
            "directory not found: stat /nope: no such file or directory"
        );
        let f = from_connect_http(200, br#"{"code":401,"message":"unauthorized access"}"#);
        assert_eq!(f.kind, ErrorKind::Auth);
        assert_eq!(
            from_connect(Code::Internal, "x").message,
            "Code.INTERNAL: x"
        );
        assert_eq!(
            from_connect(Code::ResourceExhausted, "m").kind,
            ErrorKind::RateLimited
        );
    }

    #[test]
    fn api_statuses_map_like_the_sdk() {
        let f = from_api_status(401, br#"{"code":401,"message":"Invalid API key"}"#);
        assert_eq!(f.kind, ErrorKind::Auth);
        assert_eq!(
            f.message,
            "401: Unauthorized, please check your credentials. - Invalid API key"
        );
        assert_eq!(from_api_status(429, b"{}").kind, ErrorKind::RateLimited);
        assert_eq!(from_api_status(500, b"oops").message, "500: oops");
        assert_eq!(
            from_api_status(503, b"").kind,
            ErrorKind::SandboxUnavailable
        );
    }

    #[test]
    fn envd_file_errors() {
        let f = from_envd_http(404, br#"{"code":404,"message":"path '/x' does not exist"}"#);
        assert_eq!(f.kind, ErrorKind::NotFound);
        assert_eq!(f.message, "path '/x' does not exist");
        assert_eq!(
            from_envd_http(500, b"error opening file").message,
            "500: error opening file"
        );
    }
}
