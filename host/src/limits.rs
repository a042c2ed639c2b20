//! [`MemoryLimiter`]: the session's memory cap, plus a record of how much
//! linear memory the component holds, so hosts and benchmarks can report it.

use wasmtime::{ResourceLimiter, StoreLimits};

/// wasmtime's [`StoreLimits`] (the cap), counting the linear memory the
/// instance has grown to. Wasm memories never shrink, so the count is both
/// the current size and the peak.
pub(crate) struct MemoryLimiter {
    limits: StoreLimits,
    linear_memory_bytes: usize,
}

impl MemoryLimiter {
    pub(crate) fn new(limits: StoreLimits) -> Self {
        Self {
            limits,
            linear_memory_bytes: 0,
        }
    }

    /// Bytes of linear memory of all the instance's memories.
    pub(crate) fn linear_memory_bytes(&self) -> usize {
        self.linear_memory_bytes
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let allowed = self.limits.memory_growing(current, desired, maximum)?;
        if allowed {
            // Creating a memory is a growth from 0 to its initial size.
            self.linear_memory_bytes = self
                .linear_memory_bytes
                .saturating_add(desired.saturating_sub(current));
        }
        Ok(allowed)
    }

    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.limits.memory_grow_failed(error)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.limits.table_growing(current, desired, maximum)
    }

    fn table_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.limits.table_grow_failed(error)
    }

    fn instances(&self) -> usize {
        self.limits.instances()
    }

    fn tables(&self) -> usize {
        self.limits.tables()
    }

    fn memories(&self) -> usize {
        self.limits.memories()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmtime::StoreLimitsBuilder;

    #[test]
    fn counts_growth_and_refuses_past_the_cap() {
        let mut limiter =
            MemoryLimiter::new(StoreLimitsBuilder::new().memory_size(1 << 20).build());
        assert!(limiter.memory_growing(0, 65536, None).unwrap());
        assert!(limiter.memory_growing(65536, 131072, None).unwrap());
        assert_eq!(limiter.linear_memory_bytes(), 131072);
        assert!(!limiter.memory_growing(131072, 2 << 20, None).unwrap());
        assert_eq!(limiter.linear_memory_bytes(), 131072);
    }
}
