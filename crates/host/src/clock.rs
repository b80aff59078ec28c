//! The host clock: `CLOCK_MONOTONIC` through `Instant`, wall time through `SystemTime`.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use bareweb_engine::nic::Clock;

/// Monotonic and wall clocks of the OS. Clones share the monotonic zero, so every core's
/// times are comparable.
#[derive(Debug, Clone, Copy)]
pub struct SystemClock {
    start: Instant,
    /// Nanoseconds the clock read at `start` (0, or the time since boot).
    base_ns: u64,
}

impl SystemClock {
    /// A clock whose monotonic zero is now.
    pub fn new() -> SystemClock {
        SystemClock {
            start: Instant::now(),
            base_ns: 0,
        }
    }

    /// A clock whose zero is `CLOCK_MONOTONIC`'s own (the machine's boot), so the times of
    /// successive processes keep increasing. A TCP client needs that: its initial
    /// sequence numbers (RFC 6528's timer) and timestamps must stay above those of its
    /// earlier runs' connections, which a server may still hold in TIME-WAIT on the same
    /// ports (Linux refuses a SYN with an older timestamp there, and the client waits a
    /// retransmission).
    pub fn since_boot() -> SystemClock {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
        SystemClock {
            start: Instant::now(),
            base_ns: (t.tv_sec as u64)
                .saturating_mul(1_000_000_000)
                .saturating_add(t.tv_nsec as u64),
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
        self.base_ns + self.start.elapsed().as_nanos() as u64
    }

    fn unix_secs(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A clock from boot reads CLOCK_MONOTONIC (well past a fresh clock's zero), and a
    /// later one never reads less.
    #[test]
    fn since_boot_follows_on_across_clocks() {
        let a = SystemClock::since_boot();
        let t1 = a.now_ns();
        let b = SystemClock::since_boot();
        assert!(t1 > 0 && b.now_ns() >= t1);
        assert!(SystemClock::new().now_ns() < 1_000_000_000);
    }
}
