//! Deterministic stand-ins for the platform, for tests, the fuzz target and benchmarks
//! only (feature `testing`): NOT random, never for a real server.

use core::sync::atomic::{AtomicU64, Ordering};

use rustls::crypto::{GetRandomFailed, SecureRandom};
use rustls::pki_types::UnixTime;
use rustls::time_provider::TimeProvider;

/// A ChaCha-free, predictable byte stream (SplitMix64): reproducible runs.
#[derive(Debug)]
pub struct TestRandom(AtomicU64);

impl TestRandom {
    /// A stream from `seed`.
    pub const fn new(seed: u64) -> Self {
        Self(AtomicU64::new(seed))
    }
}

impl SecureRandom for TestRandom {
    fn fill(&self, buf: &mut [u8]) -> Result<(), GetRandomFailed> {
        for chunk in buf.chunks_mut(8) {
            let mut z = self.0.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed);
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
        }
        Ok(())
    }
}

/// A clock that says what the test sets.
#[derive(Debug)]
pub struct FixedTime {
    /// Seconds since the Unix epoch.
    pub secs: AtomicU64,
}

impl FixedTime {
    /// A clock at `secs`.
    pub const fn new(secs: u64) -> Self {
        Self {
            secs: AtomicU64::new(secs),
        }
    }
}

impl TimeProvider for FixedTime {
    fn current_time(&self) -> Option<UnixTime> {
        Some(UnixTime::since_unix_epoch(core::time::Duration::from_secs(
            self.secs.load(Ordering::Relaxed),
        )))
    }
}
