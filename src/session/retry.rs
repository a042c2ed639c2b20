//! When a failed request is tried again, and after how long: the official
//! SDK's rules (docs/PROTOCOL.md §2.7), as a pure policy.
//!
//! - `Should-Retry: false` from the server: never; otherwise an idempotent
//!   request (connect, get info, set timeout, kill, a file read, a listing)
//!   is retried on 429, 502, 503, 504 and on a broken connection.
//! - Creation is retried only when the answer proves nothing was created:
//!   429 and 503 (rejected before a sandbox exists). A 502/504 or a reset
//!   may come after the sandbox was made, and a retry would make another,
//!   unless the create carries an idempotency key (E2B answers a repeat
//!   with the sandbox the first made): then it is retried as an
//!   idempotent request. Snapshots and forks are retried as creation
//!   without a key.
//! - The wait is `Retry-After` (whole seconds) when the server gives one,
//!   else `min(0.1 s × 2^attempt, 10 s)` times a random factor in
//!   [0.5, 1.0); at most [`MAX_RETRIES`] retries, and none that would end
//!   past the budget (the request timeout, 60 s when that is off).

use crate::errors::{body_message, Failure};

/// Retries after the first attempt (the SDK's default).
pub const MAX_RETRIES: u32 = 3;

/// The budget when the request timeout is off, as in the SDK.
pub const DEFAULT_BUDGET_NS: u64 = 60_000_000_000;

/// What kind of request failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// Safe to repeat: its effect does not depend on how often it is sent.
    Idempotent,
    /// Sandbox creation: repeat only if nothing can have been created.
    Create,
    /// Sandbox creation with an idempotency key: a repeat makes nothing
    /// new, so it is as safe as an idempotent request.
    CreateWithKey,
}

/// How an attempt ended, as far as retrying cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt<'a> {
    /// An answer with this status.
    Answer {
        /// The status.
        status: u16,
        /// The body (a 502 that says the sandbox is gone is final).
        body: &'a [u8],
        /// The `Should-Retry` header, when given.
        should_retry: Option<bool>,
        /// The `Retry-After` header in seconds, when given and valid.
        retry_after_s: Option<u64>,
    },
    /// No usable answer: the connection failed or broke.
    Broken {
        /// Whether the failure is a connection that may work next time
        /// (refused, reset, closed early), not a refusal by the host.
        transient: bool,
    },
}

impl<'a> Attempt<'a> {
    /// The attempt an answer was, from its status, headers and body.
    pub fn answer(status: u16, headers: &[(String, String)], body: &'a [u8]) -> Self {
        let header = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        };
        Attempt::Answer {
            status,
            body,
            should_retry: header("should-retry").and_then(parse_should_retry),
            retry_after_s: header("retry-after").and_then(parse_retry_after),
        }
    }

    /// The attempt a transport failure was.
    pub fn broken(failure: &Failure) -> Self {
        Attempt::Broken {
            transient: failure.transient,
        }
    }
}

/// How long to wait before retry number `attempt + 1` (0-based: `attempt`
/// retries were made), or `None` to give up. `random` is any random u64
/// (the jitter), `elapsed_ns` the time since the first attempt started.
pub fn delay_ns(
    retry: Retry,
    attempt: u32,
    outcome: Attempt<'_>,
    random: u64,
    elapsed_ns: u64,
    budget_ns: u64,
) -> Option<u64> {
    if attempt >= MAX_RETRIES {
        return None;
    }
    let retry_after_s = match outcome {
        Attempt::Answer {
            status,
            body,
            should_retry,
            retry_after_s,
        } => {
            let wanted = match (should_retry, retry) {
                (Some(false), _) => false,
                (_, Retry::Create) => matches!(status, 429 | 503),
                (Some(true), Retry::Idempotent | Retry::CreateWithKey) => true,
                (None, Retry::Idempotent | Retry::CreateWithKey) => {
                    matches!(status, 429 | 502 | 503 | 504) && !sandbox_gone(status, body)
                }
            };
            if !wanted {
                return None;
            }
            retry_after_s
        }
        Attempt::Broken { transient: true } if retry != Retry::Create => None,
        Attempt::Broken { .. } => return None,
    };
    let wait = match retry_after_s {
        Some(s) => s.saturating_mul(1_000_000_000),
        None => backoff_ns(attempt, random),
    };
    (elapsed_ns.saturating_add(wait) <= budget_ns).then_some(wait)
}

/// `min(0.1 s × 2^attempt, 10 s) × U[0.5, 1.0)`.
fn backoff_ns(attempt: u32, random: u64) -> u64 {
    let base = 100_000_000u64
        .saturating_mul(1u64 << attempt.min(20))
        .min(10_000_000_000);
    // The top 32 bits of `random` as a fraction in [0, 1), halved, plus ½.
    let half = base / 2;
    half + ((u128::from(half) * u128::from(random >> 32)) >> 32) as u64
}

/// The edge proxy's answer for a sandbox that does not exist: retrying
/// cannot bring it back.
fn sandbox_gone(status: u16, body: &[u8]) -> bool {
    status == 502 && body_message(body).contains("was not found")
}

/// `Retry-After` as the SDK reads it: whole seconds, else ignored.
pub fn parse_retry_after(value: &str) -> Option<u64> {
    value.trim().parse().ok()
}

/// `Should-Retry`: `true` or `false`, else ignored.
pub fn parse_should_retry(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn answer(status: u16) -> Attempt<'static> {
        Attempt::Answer {
            status,
            body: b"",
            should_retry: None,
            retry_after_s: None,
        }
    }

    #[test]
    fn idempotent_requests_retry_the_sdks_statuses_and_resets() {
        for status in [429, 502, 503, 504] {
            assert!(delay_ns(Retry::Idempotent, 0, answer(status), 0, 0, 60 * S).is_some());
        }
        for status in [200, 400, 401, 404, 409, 500] {
            assert_eq!(
                delay_ns(Retry::Idempotent, 0, answer(status), 0, 0, 60 * S),
                None
            );
        }
        let reset = Attempt::Broken { transient: true };
        assert!(delay_ns(Retry::Idempotent, 0, reset, 0, 0, 60 * S).is_some());
        let denied = Attempt::Broken { transient: false };
        assert_eq!(delay_ns(Retry::Idempotent, 0, denied, 0, 0, 60 * S), None);
        let gone = Attempt::Answer {
            status: 502,
            body: br#"{"message":"The sandbox was not found","code":502}"#,
            should_retry: None,
            retry_after_s: None,
        };
        assert_eq!(delay_ns(Retry::Idempotent, 0, gone, 0, 0, 60 * S), None);
    }

    #[test]
    fn creation_retries_only_what_proves_nothing_was_created() {
        assert!(delay_ns(Retry::Create, 0, answer(429), 0, 0, 60 * S).is_some());
        assert!(delay_ns(Retry::Create, 0, answer(503), 0, 0, 60 * S).is_some());
        for status in [500, 502, 504] {
            assert_eq!(
                delay_ns(Retry::Create, 0, answer(status), 0, 0, 60 * S),
                None
            );
        }
        let reset = Attempt::Broken { transient: true };
        assert_eq!(delay_ns(Retry::Create, 0, reset, 0, 0, 60 * S), None);
        // With an idempotency key a repeat makes nothing new.
        assert!(delay_ns(Retry::CreateWithKey, 0, reset, 0, 0, 60 * S).is_some());
        assert!(delay_ns(Retry::CreateWithKey, 0, answer(502), 0, 0, 60 * S).is_some());
        assert_eq!(
            delay_ns(Retry::CreateWithKey, 0, answer(500), 0, 0, 60 * S),
            None
        );
        let refused = Attempt::Broken { transient: false };
        assert_eq!(
            delay_ns(Retry::CreateWithKey, 0, refused, 0, 0, 60 * S),
            None
        );
    }

    #[test]
    fn the_server_has_the_last_word() {
        let never = Attempt::Answer {
            status: 503,
            body: b"",
            should_retry: Some(false),
            retry_after_s: None,
        };
        assert_eq!(delay_ns(Retry::Idempotent, 0, never, 0, 0, 60 * S), None);
        let please = Attempt::Answer {
            status: 500,
            body: b"",
            should_retry: Some(true),
            retry_after_s: Some(2),
        };
        assert_eq!(
            delay_ns(Retry::Idempotent, 0, please, 0, 0, 60 * S),
            Some(2 * S)
        );
        // Not for creation: a 500 may come after the sandbox was made.
        assert_eq!(delay_ns(Retry::Create, 0, please, 0, 0, 60 * S), None);
    }

    #[test]
    fn backoff_grows_with_jitter_and_stays_within_count_and_budget() {
        // Attempt 0: [50, 100) ms; attempt 2: [200, 400) ms.
        assert_eq!(backoff_ns(0, 0), 50_000_000);
        assert!(backoff_ns(0, u64::MAX) < 100_000_000);
        assert_eq!(backoff_ns(2, 0), 200_000_000);
        assert_eq!(backoff_ns(30, 0), 5 * S);
        assert_eq!(
            delay_ns(Retry::Idempotent, 3, answer(503), 0, 0, 60 * S),
            None
        );
        let late = Attempt::Answer {
            status: 429,
            body: b"",
            should_retry: None,
            retry_after_s: Some(30),
        };
        assert_eq!(
            delay_ns(Retry::Idempotent, 0, late, 0, 31 * S, 60 * S),
            None
        );
        assert_eq!(
            delay_ns(Retry::Idempotent, 0, late, 0, 30 * S, 60 * S),
            Some(30 * S)
        );
    }

    #[test]
    fn headers_parse_like_the_sdk() {
        assert_eq!(parse_retry_after(" 7 "), Some(7));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2026 07:28:00 GMT"), None);
        assert_eq!(parse_should_retry("False"), Some(false));
        assert_eq!(parse_should_retry("maybe"), None);
    }
}
