//! The host clock: `CLOCK_MONOTONIC` through `Instant`, wall time through `SystemTime`.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use bareweb_engine::nic::Clock;

/// Monotonic and wall clocks of the OS. Clones share the monotonic zero, so every core's
/// times are comparable.
#[derive(Debug, Clone, Copy)]
pub struct SystemClock {
    start: Instant,
}

impl SystemClock {
    /// A clock whose monotonic zero is now.
    pub fn new() -> SystemClock {
        SystemClock {
            start: Instant::now(),
        }
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for SystemClock {
    fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    fn unix_secs(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
    }
}
