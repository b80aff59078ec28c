//! The host's platform for TLS: randomness from the OS (getrandom) and the system clock.

use alloc::sync::Arc;

use rustls::crypto::{GetRandomFailed, SecureRandom};
use rustls::time_provider::DefaultTimeProvider;

use crate::server::Platform;

/// The OS's cryptographic randomness (`getrandom(2)` on Linux).
#[derive(Debug)]
pub struct HostRandom;

impl SecureRandom for HostRandom {
    fn fill(&self, buf: &mut [u8]) -> Result<(), GetRandomFailed> {
        getrandom::fill(buf).map_err(|_| GetRandomFailed)
    }
}

/// The host's randomness and clock.
pub fn platform() -> Platform {
    static RANDOM: HostRandom = HostRandom;
    Platform {
        random: &RANDOM,
        time: Arc::new(DefaultTimeProvider),
    }
}
