//! The per-source rate limit (docs/udp-protocol.md §6): a fixed table of token buckets
//! indexed by a keyed hash of the source address (so an attacker cannot aim addresses at
//! one bucket), allocated at start and never grown. Addresses that share a bucket share
//! its budget, which errs on the side of answering less. Two budgets per bucket: requests
//! from a source that has not proved its address (small: a client needs one to get a
//! token), and requests carrying a valid token.

use alloc::vec;
use alloc::vec::Vec;
use core::hash::Hasher;

use siphasher::sip::SipHasher13;

/// Buckets in the table.
pub const BUCKETS: usize = 4096;
/// Requests per second a source that has not proved its address may have answered.
pub const UNPROVEN_RATE: u32 = 16;

/// One bucket: tokens of both budgets in thousandths, and when they were last refilled.
#[derive(Debug, Clone, Copy, Default)]
struct Bucket {
    stamp_ms: u32,
    unproven_milli: u32,
    proven_milli: u32,
}

/// The table.
pub struct RateLimit {
    buckets: Vec<Bucket>,
    key: [u8; 16],
    /// Proven requests per second per bucket (0: unlimited).
    rate: u32,
}

/// Burst of a budget of `rate` per second: a tenth of a second's worth, at least 16.
fn burst(rate: u32) -> u32 {
    (rate / 10).max(16)
}

impl RateLimit {
    /// A table allowing `rate` proven requests per second per source (0: no limit on
    /// them; unproven ones are always limited to [`UNPROVEN_RATE`]).
    pub fn new(rate: u32, key: [u8; 16]) -> RateLimit {
        let full = Bucket {
            stamp_ms: 0,
            unproven_milli: burst(UNPROVEN_RATE) * 1000,
            proven_milli: burst(rate).saturating_mul(1000),
        };
        RateLimit {
            buckets: vec![full; BUCKETS],
            key,
            rate,
        }
    }

    fn index(&self, ip: &[u8]) -> usize {
        let mut h = SipHasher13::new_with_key(&self.key);
        h.write(b"bwudp-rate");
        h.write(ip);
        h.finish() as usize % BUCKETS
    }

    /// Whether a request from `ip` (`proven`: with a valid token) may be answered at
    /// monotonic time `now_ns`; takes one token from its budget if so. `ip` is an IPv4
    /// address's 4 octets, or the 16 of an IPv6 source's key (its /64 off the link:
    /// `tcp::per_ip::limit_key`, one host owns them all).
    pub fn allow(&mut self, ip: &[u8], proven: bool, now_ns: u64) -> bool {
        if proven && self.rate == 0 {
            return true;
        }
        let rate = self.rate;
        let i = self.index(ip);
        let b = &mut self.buckets[i];
        let now_ms = (now_ns / 1_000_000) as u32;
        let elapsed = u64::from(now_ms.wrapping_sub(b.stamp_ms).min(60_000));
        b.stamp_ms = now_ms;
        // Refill: `rate` per second is `rate` thousandths per millisecond.
        let refill = |milli: u32, rate: u32| -> u32 {
            let cap = u64::from(burst(rate)) * 1000;
            (u64::from(milli) + elapsed * u64::from(rate)).min(cap) as u32
        };
        b.unproven_milli = refill(b.unproven_milli, UNPROVEN_RATE);
        b.proven_milli = refill(b.proven_milli, rate);
        let budget = if proven {
            &mut b.proven_milli
        } else {
            &mut b.unproven_milli
        };
        if *budget >= 1000 {
            *budget -= 1000;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IP: &[u8] = &[192, 0, 2, 1];

    #[test]
    fn unproven_burst_then_rate() {
        let mut l = RateLimit::new(1000, [1; 16]);
        let t0 = 10_000_000_000;
        let n = (0..100).filter(|_| l.allow(IP, false, t0)).count();
        assert_eq!(n, 16, "the burst");
        // One second later: 16 more.
        let n = (0..100)
            .filter(|_| l.allow(IP, false, t0 + 1_000_000_000))
            .count();
        assert_eq!(n, 16);
        // Proven requests have their own budget: 100 (a tenth of 1000/s) at once.
        let n = (0..1000)
            .filter(|_| l.allow(IP, true, t0 + 1_000_000_000))
            .count();
        assert_eq!(n, 100);
        let n = (0..1000)
            .filter(|_| l.allow(IP, true, t0 + 1_050_000_000))
            .count();
        assert_eq!(n, 50, "50 ms at 1000/s");
    }

    #[test]
    fn unlimited_proven_and_other_sources() {
        let mut l = RateLimit::new(0, [1; 16]);
        assert!((0..100_000).all(|_| l.allow(IP, true, 0)));
        let n = (0..100).filter(|_| l.allow(IP, false, 0)).count();
        assert_eq!(n, 16);
        // Another address, another bucket (these two do not collide under this key).
        assert_ne!(l.index(IP), l.index(&[192, 0, 2, 2]));
        assert!(l.allow(&[192, 0, 2, 2], false, 0));
    }

    #[test]
    fn clock_wrap_and_long_silence_are_safe() {
        let mut l = RateLimit::new(100, [1; 16]);
        assert!(l.allow(IP, true, u64::MAX));
        assert!(l.allow(IP, true, 0));
        assert!(l.allow(IP, true, 5_000_000_000_000));
    }
}
