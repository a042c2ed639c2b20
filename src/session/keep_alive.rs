//! When a sandbox's TTL needs refreshing: less than half of it left.

/// When the TTL needs refreshing, on a monotonic clock in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeepAlive {
    ttl_ns: u64,
    expires_ns: Option<u64>,
}

impl KeepAlive {
    /// A policy for a TTL of `ttl_seconds`, with no sandbox yet.
    pub fn new(ttl_seconds: u32) -> Self {
        Self {
            ttl_ns: u64::from(ttl_seconds) * 1_000_000_000,
            expires_ns: None,
        }
    }

    /// The TTL a refresh sets, in seconds.
    pub fn ttl_seconds(&self) -> u32 {
        u32::try_from(self.ttl_ns / 1_000_000_000).unwrap_or(u32::MAX)
    }

    /// Records a successful refresh (or creation) at `now_ns`: the
    /// sandbox now ends a full TTL later.
    pub fn refreshed(&mut self, now_ns: u64) {
        self.expires_ns = Some(now_ns.saturating_add(self.ttl_ns));
    }

    /// Records that the sandbox is known to live until `expires_ns`, if
    /// that is later than what we knew.
    pub fn lives_until(&mut self, expires_ns: u64) {
        self.expires_ns = Some(self.expires_ns.map_or(expires_ns, |e| e.max(expires_ns)));
    }

    /// When less than half of the TTL will be left (`0`: now).
    pub fn due_at(&self) -> u64 {
        self.expires_ns
            .map_or(0, |e| e.saturating_sub(self.ttl_ns / 2))
    }

    /// Whether less than half of the TTL is left at `now_ns`.
    pub fn due(&self, now_ns: u64) -> bool {
        now_ns > self.due_at() || self.expires_ns.is_none()
    }

    /// How long to wait after a failed heartbeat before the next try:
    /// a tenth of the TTL, at least 100 ms.
    pub fn retry_ns(&self) -> u64 {
        (self.ttl_ns / 10).max(100_000_000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn refresh_only_when_less_than_half_is_left() {
        let mut k = KeepAlive::new(300);
        assert!(k.due(0));
        k.refreshed(10 * S);
        assert!(!k.due(10 * S));
        assert!(!k.due(160 * S));
        assert!(k.due(161 * S));
        assert_eq!(k.due_at(), 160 * S);
        assert_eq!(KeepAlive::new(0).retry_ns(), 100_000_000);
    }

    #[test]
    fn a_longer_known_life_is_kept_and_a_shorter_one_ignored() {
        let mut k = KeepAlive::new(300);
        k.refreshed(0);
        k.lives_until(3_600 * S);
        assert_eq!(k.due_at(), 3_450 * S);
        k.lives_until(100 * S);
        assert_eq!(k.due_at(), 3_450 * S);
    }
}
