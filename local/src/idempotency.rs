//! Create's `Idempotency-Key` (E2B SDK 2.63): a create repeated with the
//! same key within the window answers what the first one made (the same
//! sandbox, the same body) instead of making another, so a create whose
//! answer was lost can be retried. A repeat that arrives while the first
//! is still being made waits for it; a create that failed is not
//! remembered (the next one tries again).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// How long a key is remembered (scaled by the server's time scale).
pub(crate) const WINDOW: Duration = Duration::from_secs(600);
/// The most keys remembered at once; past it the oldest are forgotten.
const MAX_KEYS: usize = 10_000;

/// Why a key is refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum KeyError {
    /// Not 1 to 255 of `[a-z0-9-]`.
    Invalid(String),
    /// Used already with another request.
    Mismatch(String),
}

impl std::fmt::Display for KeyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyError::Invalid(key) => write!(
                f,
                "invalid Idempotency-Key '{}': expected 1 to 255 lowercase letters, digits and hyphens",
                key.chars().take(64).collect::<String>()
            ),
            KeyError::Mismatch(key) => write!(
                f,
                "Idempotency-Key '{key}' was already used with a different request"
            ),
        }
    }
}

/// Checks a key as E2B does: 1 to 255 of `[a-z0-9-]`.
pub(crate) fn check_key(key: &[u8]) -> Result<String, KeyError> {
    let ok = (1..=255).contains(&key.len())
        && key
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-');
    if ok {
        Ok(String::from_utf8_lossy(key).into_owned())
    } else {
        Err(KeyError::Invalid(String::from_utf8_lossy(key).into_owned()))
    }
}

struct Entry<T> {
    /// What the request was (its route and body).
    fingerprint: [u8; 32],
    since: Instant,
    answer: tokio::sync::OnceCell<T>,
}

/// The keys of recent creates and what they made.
pub(crate) struct Idempotency<T> {
    window: Duration,
    entries: Mutex<HashMap<String, Arc<Entry<T>>>>,
}

impl<T: Clone> Idempotency<T> {
    /// Remembers keys for `window`.
    pub fn new(window: Duration) -> Self {
        Self {
            window,
            entries: Mutex::default(),
        }
    }

    /// Runs `make` for the first request with `key` (or again, when the
    /// first failed), and answers each repeat of the same request with
    /// what it made; `request` identifies the request (its route and
    /// body).
    pub async fn run<E, F, Fut>(
        &self,
        key: &str,
        request: &[&[u8]],
        make: F,
    ) -> Result<T, RunError<E>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let mut hash = Sha256::new();
        for part in request {
            hash.update((part.len() as u64).to_le_bytes());
            hash.update(part);
        }
        let fingerprint: [u8; 32] = hash.finalize().into();
        let entry = {
            let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
            let now = Instant::now();
            entries.retain(|_, e| now.duration_since(e.since) < self.window);
            if entries.len() >= MAX_KEYS && !entries.contains_key(key) {
                if let Some(oldest) = entries
                    .iter()
                    .min_by_key(|(_, e)| e.since)
                    .map(|(k, _)| k.clone())
                {
                    entries.remove(&oldest);
                }
            }
            let entry = entries.entry(key.to_string()).or_insert_with(|| {
                Arc::new(Entry {
                    fingerprint,
                    since: now,
                    answer: tokio::sync::OnceCell::new(),
                })
            });
            if entry.fingerprint != fingerprint {
                return Err(RunError::Key(KeyError::Mismatch(key.to_string())));
            }
            Arc::clone(entry)
        };
        entry
            .answer
            .get_or_try_init(make)
            .await
            .cloned()
            .map_err(RunError::Failed)
    }
}

/// Why [`Idempotency::run`] gave no answer.
#[derive(Debug)]
pub(crate) enum RunError<E> {
    /// The key was refused.
    Key(KeyError),
    /// Making failed (nothing is remembered).
    Failed(E),
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[test]
    fn keys_as_e2b_checks_them() {
        assert!(check_key(b"retry-1").is_ok());
        assert!(check_key(&[b'a'; 255]).is_ok());
        for bad in [
            &b""[..],
            &[b'a'; 256],
            b"Upper",
            b"under_score",
            b"sp ace",
            b"\xff",
        ] {
            assert!(
                matches!(check_key(bad), Err(KeyError::Invalid(_))),
                "{bad:?}"
            );
        }
    }

    #[tokio::test]
    async fn one_answer_per_key_failures_forgotten_and_the_window_ends() {
        let made = AtomicU32::new(0);
        let keys = Idempotency::<u32>::new(Duration::from_millis(200));
        let make = || async { Ok::<u32, ()>(made.fetch_add(1, Ordering::SeqCst)) };
        let fail = || async { Err::<u32, ()>(()) };
        assert!(matches!(
            keys.run("k", &[b"a"], fail).await,
            Err(RunError::Failed(()))
        ));
        // Concurrent repeats: one is made, both get it.
        let (a, b) = tokio::join!(keys.run("k", &[b"a"], make), keys.run("k", &[b"a"], make));
        assert_eq!((a.unwrap(), b.unwrap()), (0, 0));
        assert_eq!(keys.run("k", &[b"a"], make).await.unwrap(), 0);
        assert!(matches!(
            keys.run("k", &[b"b"], make).await,
            Err(RunError::Key(KeyError::Mismatch(_)))
        ));
        assert_eq!(keys.run("other", &[b"a"], make).await.unwrap(), 1);
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert_eq!(keys.run("k", &[b"a"], make).await.unwrap(), 2);
    }
}
