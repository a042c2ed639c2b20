//! The guest's monotonic clock, real or scaled.
//!
//! The component's keep-alive logic reads `wasi:clocks/monotonic-clock`
//! (`now`, and sleeps through `subscribe-duration` / `subscribe-instant`).
//! Tests of that logic would take minutes of real time, so a session may run
//! on a scaled clock: guest time passes `scale` times faster than real time,
//! and a guest sleep of `d` lasts `d / scale`. The wall clock stays real.
//!
//! wasmtime-wasi's own clock hook (`HostMonotonicClock`) only changes
//! `now()`; its sleeps still follow tokio's clock. So the host shadows the
//! whole `monotonic-clock` interface in the linker with this module's
//! implementation, which serves both modes.

use std::pin::Pin;
use std::time::{Duration, Instant};
use wasmtime::component::{HasData, Resource, ResourceTable};
use wasmtime_wasi::p2::bindings::clocks::monotonic_clock;
use wasmtime_wasi::p2::{subscribe, DynPollable, Pollable};

/// How the guest's monotonic clock relates to real time.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum ClockMode {
    /// Real time (the default).
    #[default]
    Real,
    /// Guest time runs this many times faster than real time (`> 0`,
    /// finite): `Scaled(60.0)` turns a guest minute into a real second.
    Scaled(f64),
}

impl ClockMode {
    /// The factor guest time runs faster than real time.
    pub fn scale(self) -> f64 {
        match self {
            ClockMode::Real => 1.0,
            ClockMode::Scaled(scale) => scale,
        }
    }

    /// Whether the scale is usable (positive and finite).
    pub fn is_valid(self) -> bool {
        let scale = self.scale();
        scale.is_finite() && scale > 0.0
    }
}

/// One session's monotonic clock.
#[derive(Debug, Clone)]
pub(crate) struct SessionClock {
    scale: f64,
    origin: Instant,
}

impl SessionClock {
    pub(crate) fn new(mode: ClockMode) -> Self {
        Self {
            scale: mode.scale(),
            origin: Instant::now(),
        }
    }

    /// Guest nanoseconds since the session started.
    fn now_nanos(&self) -> u64 {
        let real = self.origin.elapsed().as_nanos() as f64;
        (real * self.scale).min(u64::MAX as f64) as u64
    }

    /// Real time a guest wait of `guest_nanos` takes.
    fn real_duration(&self, guest_nanos: u64) -> Option<Duration> {
        let real = guest_nanos as f64 / self.scale;
        Duration::try_from_secs_f64(real / 1e9).ok()
    }
}

/// The data the linker hands our `monotonic-clock` implementation.
pub(crate) struct ScaledClockView<'a> {
    pub(crate) clock: &'a SessionClock,
    pub(crate) table: &'a mut ResourceTable,
}

/// Marker naming [`ScaledClockView`] for `add_to_linker`.
pub(crate) struct ScaledClock;

impl HasData for ScaledClock {
    type Data<'a> = ScaledClockView<'a>;
}

impl ScaledClockView<'_> {
    fn subscribe_guest_nanos(
        &mut self,
        guest_nanos: u64,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        let deadline = if guest_nanos == 0 {
            Deadline::Past { yielded: false }
        } else {
            match self
                .clock
                .real_duration(guest_nanos)
                .and_then(|d| tokio::time::Instant::now().checked_add(d))
            {
                Some(at) => Deadline::At { at, sleep: None },
                // Further than can be represented: wait forever rather than trap.
                None => Deadline::Never,
            }
        };
        let resource = self.table.push(deadline)?;
        subscribe(self.table, resource)
    }
}

impl monotonic_clock::Host for ScaledClockView<'_> {
    fn now(&mut self) -> wasmtime::Result<monotonic_clock::Instant> {
        Ok(self.clock.now_nanos())
    }

    fn resolution(&mut self) -> wasmtime::Result<monotonic_clock::Duration> {
        Ok(1)
    }

    fn subscribe_instant(
        &mut self,
        when: monotonic_clock::Instant,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        let now = self.clock.now_nanos();
        self.subscribe_guest_nanos(when.saturating_sub(now))
    }

    fn subscribe_duration(
        &mut self,
        duration: monotonic_clock::Duration,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        self.subscribe_guest_nanos(duration)
    }
}

/// What a guest's clock pollable waits for.
enum Deadline {
    /// Already due; yields to tokio once so a busy-polling guest cannot
    /// starve the I/O driver.
    Past { yielded: bool },
    /// Due at this real instant. The timer is registered on the first
    /// wait and kept: a guest waits on the same pollable many times (every
    /// `poll` of its reactor lists its pending timers), and re-registering
    /// a tokio timer each time showed up in call latency.
    At {
        at: tokio::time::Instant,
        sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    },
    /// Never due.
    Never,
}

#[wasmtime_wasi::async_trait]
impl Pollable for Deadline {
    async fn ready(&mut self) {
        match self {
            Deadline::Past { yielded: true } => {}
            Deadline::Past { yielded } => {
                *yielded = true;
                tokio::task::yield_now().await;
            }
            Deadline::At { at, sleep } => {
                sleep
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(*at)))
                    .as_mut()
                    .await
            }
            Deadline::Never => std::future::pending().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaled_time_runs_faster_and_sleeps_shorter() {
        let clock = SessionClock::new(ClockMode::Scaled(100.0));
        std::thread::sleep(Duration::from_millis(20));
        let guest = clock.now_nanos();
        assert!(guest >= 2_000_000_000, "guest saw only {guest} ns");
        assert_eq!(
            clock.real_duration(10_000_000_000),
            Some(Duration::from_millis(100))
        );
    }

    #[test]
    fn real_time_is_unscaled() {
        let clock = SessionClock::new(ClockMode::Real);
        assert_eq!(
            clock.real_duration(1_000),
            Some(Duration::from_nanos(1_000))
        );
    }

    #[test]
    fn invalid_scales_are_detected() {
        assert!(ClockMode::Real.is_valid());
        assert!(ClockMode::Scaled(0.5).is_valid());
        assert!(!ClockMode::Scaled(0.0).is_valid());
        assert!(!ClockMode::Scaled(-1.0).is_valid());
        assert!(!ClockMode::Scaled(f64::NAN).is_valid());
        assert!(!ClockMode::Scaled(f64::INFINITY).is_valid());
    }
}
