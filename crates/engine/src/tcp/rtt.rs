//! Round-trip time estimation and the retransmission timeout (RFC 6298), with Karn's rule:
//! one segment is timed at a time, and never a retransmitted one.

/// Lower bound of the retransmission timeout (Linux's 200 ms rather than RFC 6298's 1 s,
/// which is a SHOULD; documented in docs/design/tcp.md).
pub const RTO_MIN_MS: u32 = 200;
/// Upper bound of the retransmission timeout.
pub const RTO_MAX_MS: u32 = 60_000;
/// Initial RTO before any sample (RFC 6298 §2.1).
pub const RTO_INITIAL_MS: u32 = 1_000;

/// SRTT, RTTVAR, the RTO and the one timed segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RttEstimator {
    /// Smoothed RTT in µs (0: no sample yet).
    pub srtt_us: u32,
    /// RTT variance in µs.
    pub rttvar_us: u32,
    /// Current RTO in ms (backed off).
    pub rto_ms: u32,
    /// The sequence number whose acknowledgment ends the timing, if a segment is timed.
    timed: Option<(u32, u64)>,
}

impl Default for RttEstimator {
    fn default() -> Self {
        RttEstimator::new()
    }
}

impl RttEstimator {
    /// No sample yet: the initial RTO.
    pub const fn new() -> RttEstimator {
        RttEstimator {
            srtt_us: 0,
            rttvar_us: 0,
            rto_ms: RTO_INITIAL_MS,
            timed: None,
        }
    }

    /// The RTO in nanoseconds.
    pub fn rto_ns(&self) -> u64 {
        u64::from(self.rto_ms) * 1_000_000
    }

    /// Whether a segment is being timed.
    pub fn timing(&self) -> bool {
        self.timed.is_some()
    }

    /// Starts timing: the ACK that covers `until` ends the sample begun at `now_ns`.
    pub fn start(&mut self, until: u32, now_ns: u64) {
        self.timed = Some((until, now_ns));
    }

    /// A retransmission of octets from `from` on went out: if it covers timed octets, the
    /// ACK that ends the timing is ambiguous and the timing stops (Karn).
    pub fn retransmitted(&mut self, from: u32) {
        if self
            .timed
            .is_some_and(|(until, _)| super::seq::lt(from, until))
        {
            self.timed = None;
        }
    }

    /// Forgets the timed segment (Karn: after a retransmission its ACK is ambiguous).
    pub fn stop(&mut self) {
        self.timed = None;
    }

    /// An acknowledgment of `ack` arrived at `now_ns`: ends the timing if it covers the
    /// timed octets, and feeds the sample. Returns whether it did.
    pub fn on_ack(&mut self, ack: u32, now_ns: u64) -> bool {
        if let Some((until, start)) = self.timed {
            if super::seq::ge(ack, until) {
                let us = (now_ns.saturating_sub(start) / 1000).min(u64::from(u32::MAX)) as u32;
                self.sample(us);
                self.timed = None;
                return true;
            }
        }
        false
    }

    /// Feeds one of about `per_rtt` samples expected per round trip (timestamps give one
    /// per ACK): RFC 7323 Appendix G divides the gains α = 1/8 and β = 1/4 by that count,
    /// so a window's worth of samples moves SRTT and RTTVAR as one sample per RTT would.
    pub fn sample_scaled(&mut self, rtt_us: u32, per_rtt: u32) {
        let k = per_rtt.max(1);
        if self.srtt_us == 0 || k == 1 {
            return self.sample(rtt_us);
        }
        self.smooth(rtt_us, k);
    }

    /// SRTT ← SRTT + (R − SRTT)/(8k), RTTVAR ← RTTVAR + (|SRTT − R| − RTTVAR)/(4k), in
    /// 64 bits and rounded to nearest: in whole µs with truncation, samples under 8 µs
    /// (a timestamp echo within the same millisecond tick is 0 ms) drove SRTT to 0, which
    /// means "no sample" and turned the loss probes off.
    fn smooth(&mut self, rtt_us: u32, k: u32) {
        let (k, r) = (u64::from(k), u64::from(rtt_us.max(1)));
        let (srtt, var) = (u64::from(self.srtt_us), u64::from(self.rttvar_us));
        let diff = srtt.abs_diff(r);
        let var = ((4 * k - 1) * var + diff + 2 * k) / (4 * k);
        let srtt = ((8 * k - 1) * srtt + r + 4 * k) / (8 * k);
        self.rttvar_us = var.min(u64::from(u32::MAX)) as u32;
        self.srtt_us = srtt.clamp(1, u64::from(u32::MAX)) as u32;
        self.update_rto();
    }

    /// Feeds an RTT sample (RFC 6298 §2.2–2.3) and recomputes the RTO.
    pub fn sample(&mut self, rtt_us: u32) {
        let rtt = rtt_us.max(1);
        if self.srtt_us == 0 {
            self.srtt_us = rtt;
            self.rttvar_us = rtt / 2;
            self.update_rto();
        } else {
            self.smooth(rtt, 1);
        }
    }

    fn update_rto(&mut self) {
        // G (clock granularity) is 1 µs here.
        let rto_us = self.srtt_us.saturating_add(4 * self.rttvar_us.max(1));
        self.rto_ms = (rto_us / 1000).clamp(RTO_MIN_MS, RTO_MAX_MS);
    }

    /// RFC 6298 §5.7: after the handshake's segment timed out, an RTO below 3 s becomes 3 s
    /// when data transmission begins.
    pub fn reset_after_handshake_timeout(&mut self) {
        if self.srtt_us == 0 {
            self.rto_ms = self.rto_ms.max(3_000);
        }
    }

    /// Doubles the RTO after a timeout (RFC 6298 §5.5).
    pub fn backoff(&mut self) {
        self.rto_ms = self.rto_ms.saturating_mul(2).min(RTO_MAX_MS);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rto_follows_rfc6298() {
        let mut t = RttEstimator::default();
        assert_eq!(t.rto_ms, RTO_INITIAL_MS);
        t.sample(100_000); // 100 ms: srtt 100, rttvar 50, rto = 100 + 200 = 300 ms
        assert_eq!((t.srtt_us, t.rttvar_us, t.rto_ms), (100_000, 50_000, 300));
        t.sample(100_000); // rttvar = 3/4*50 + 1/4*0 = 37.5, rto = 100 + 150 = 250
        assert_eq!(t.rto_ms, 250);
        for _ in 0..50 {
            t.sample(50); // tiny RTTs clamp at the minimum eventually
        }
        assert_eq!(t.rto_ms, RTO_MIN_MS);
        for _ in 0..20 {
            t.backoff();
        }
        assert_eq!(t.rto_ms, RTO_MAX_MS);
    }

    #[test]
    fn smoothing_rounds_to_nearest_and_never_reaches_zero() {
        let mut t = RttEstimator::default();
        t.sample(100);
        assert_eq!((t.srtt_us, t.rttvar_us), (100, 50));
        // 0 is taken as 1 µs: SRTT 100 + (1 − 100)/8 = 87.625, RTTVAR 50 + (99 − 50)/4 =
        // 62.25.
        t.sample(0);
        assert_eq!((t.srtt_us, t.rttvar_us), (88, 62));
        // Truncating 7/8 of a few µs would reach 0, which means "no sample". Rounded, SRTT
        // stops where a step is half a µs (5 + (1 − 5)/8 = 4.5, rounded up).
        for _ in 0..100 {
            t.sample(0);
        }
        assert_eq!(t.srtt_us, 5);
        // Timestamp samples, k per RTT, divide the gains by k (RFC 7323 Appendix G):
        // SRTT 8000 + (1 − 8000)/80 = 7900.0125, RTTVAR 4000 + (7999 − 4000)/40 = 4099.975.
        let mut t = RttEstimator::default();
        t.sample(8000);
        t.sample_scaled(0, 10);
        assert_eq!((t.srtt_us, t.rttvar_us), (7900, 4100));
        for _ in 0..10_000 {
            t.sample_scaled(0, 10);
        }
        assert!(t.srtt_us > 0);
        assert_eq!(t.rto_ms, RTO_MIN_MS);
    }

    #[test]
    fn a_timed_segment_ends_with_the_ack_that_covers_it() {
        let mut t = RttEstimator::default();
        t.start(1000, 5_000_000);
        t.on_ack(999, 6_000_000);
        assert!(t.timing(), "an ACK short of the timed octets ends nothing");
        t.on_ack(1000, 45_000_000); // 40 ms
        assert!(!t.timing());
        assert_eq!(t.srtt_us, 40_000);
        t.start(2000, 50_000_000);
        t.stop();
        t.on_ack(2000, 90_000_000);
        assert_eq!(t.srtt_us, 40_000, "a stopped timing gives no sample (Karn)");
    }
}
