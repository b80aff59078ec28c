//! Delivery-rate sampling (draft-cheng-iccrg-delivery-rate-estimation; Linux's
//! `net/ipv4/tcp_rate.c`), the measurement BBR's model is made of: how many bytes the
//! peer received between the moment a range of ours was sent and the moment it was
//! acknowledged, over how long, and whether the sender was short of data meanwhile.
//!
//! Linux snapshots the connection's delivery state into every packet it sends. This TCP
//! keeps no retransmission queue (a response is regenerated from the site image on
//! demand), so it tracks ONE range at a time, as RFC 6298's RTT sampling times one
//! segment: when new data goes out and nothing is tracked, up to one MSS of its new
//! octets is tracked with the connection's `delivered` count, the time it last grew, the
//! send time of the last range sampled and the app-limited mark; the ACK or SACK that
//! covers it gives a [`RateSample`], and the next new data sent is tracked. A
//! retransmission of the tracked range voids it (its ACK would be ambiguous: Karn), so a
//! sample's RTT is never from a retransmission. One sample per round trip or so, where
//! Linux has one per ACK: BBR's filters keep the maximum over ten rounds and the minimum
//! over ten seconds, and one sample per round is what their round counting needs.
//!
//! Byte units; times from the caller's clock in ns, kept as wrapping µs in `u32` (a
//! sample spans less than the 71 minutes that wrap).

use super::seq;

/// What one tracked range told when its ACK came (Linux's `struct rate_sample`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateSample {
    /// Bytes delivered (acknowledged or SACKed) from the tracked range's send to its ACK.
    pub delivered: u32,
    /// Over how long: the longer of the send phase (from the send of the range sampled
    /// before it to its own send) and the ACK phase (from the delivery before its send to
    /// now), µs.
    pub interval_us: u32,
    /// The tracked range's round-trip time, µs (never a retransmission's).
    pub rtt_us: u32,
    /// The connection's `delivered` when the range was sent: BBR's rounds count from it.
    pub prior_delivered: u32,
    /// The sender ran out of data to send at some point while the range was in flight
    /// (the rate says more about the application than about the path).
    pub app_limited: bool,
}

/// The range being tracked and the delivery state when it was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Tracked {
    start: u32,
    end: u32,
    sent_us: u32,
    delivered: u32,
    delivered_us: u32,
    first_tx_us: u32,
    app_limited: bool,
}

/// A connection's delivery accounting and its one tracked range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Bytes the peer received (acknowledged or SACKed) since the connection began,
    /// wrapping.
    delivered: u32,
    /// When `delivered` last grew (µs, wrapping).
    delivered_us: u32,
    /// The send time of the last range sampled (Linux's `first_tx_mstamp`): the send
    /// phase of the next sample starts there.
    first_tx_us: u32,
    /// Non-zero: the connection ran out of data when `delivered` was below this; samples
    /// of ranges sent before delivery passes it are app-limited (Linux's `app_limited`).
    app_limited: u32,
    tracked: Option<Tracked>,
}

impl Default for Rate {
    fn default() -> Self {
        Rate::new()
    }
}

/// The caller's ns clock as wrapping µs.
pub fn us(now_ns: u64) -> u32 {
    (now_ns / 1000) as u32
}

impl Rate {
    /// Nothing delivered, nothing tracked.
    pub const fn new() -> Rate {
        Rate {
            delivered: 0,
            delivered_us: 0,
            first_tx_us: 0,
            app_limited: 0,
            tracked: None,
        }
    }

    /// Bytes delivered so far (wrapping).
    pub fn delivered(&self) -> u32 {
        self.delivered
    }

    /// When delivery last grew (µs, wrapping).
    pub fn delivered_us(&self) -> u32 {
        self.delivered_us
    }

    /// The range being tracked, `[start, end)`.
    pub fn tracked(&self) -> Option<(u32, u32)> {
        self.tracked.map(|t| (t.start, t.end))
    }

    /// Whether the connection is marked application-limited now.
    pub fn is_app_limited(&self) -> bool {
        self.app_limited != 0
    }

    /// The sender has nothing more to send with `inflight` bytes in the network: ranges
    /// sent until what is in flight now has been delivered are app-limited (Linux's
    /// `tcp_rate_check_app_limited`: `delivered + inflight`, 1 when that is 0).
    pub fn mark_app_limited(&mut self, inflight: u32) {
        self.app_limited = self.delivered.wrapping_add(inflight).max(1);
    }

    /// Octets `[seq, end)` went out at `now_ns`, when SND.MAX was `snd_max`; `idle`:
    /// nothing was in flight before. A send that overlaps the tracked range is a
    /// retransmission of it and voids it; new octets (at or beyond SND.MAX) are tracked
    /// when nothing is, up to `mss` of them.
    pub fn on_sent(
        &mut self,
        seq_n: u32,
        end: u32,
        snd_max: u32,
        idle: bool,
        mss: u32,
        now_ns: u64,
    ) {
        let now = us(now_ns);
        if idle {
            // Nothing in flight: the intervals of what is sent now start now (Linux
            // resets both stamps when packets_out is 0).
            self.first_tx_us = now;
            self.delivered_us = now;
        }
        if let Some(t) = self.tracked {
            if seq::lt(seq_n, t.end) && seq::lt(t.start, end) {
                self.tracked = None;
            }
        }
        if self.tracked.is_none() && seq::gt(end, snd_max) {
            let start = if seq::gt(snd_max, seq_n) {
                snd_max
            } else {
                seq_n
            };
            self.tracked = Some(Tracked {
                start,
                end: start.wrapping_add(end.wrapping_sub(start).min(mss.max(1))),
                sent_us: now,
                delivered: self.delivered,
                delivered_us: self.delivered_us,
                first_tx_us: self.first_tx_us,
                app_limited: self.app_limited != 0,
            });
        }
    }

    /// An ACK at `now_ns` newly delivered `newly` bytes (acknowledged plus newly SACKed,
    /// RFC 6937's DeliveredData), and `covered` says whether the tracked range is now all
    /// acknowledged or SACKed: returns the sample it completes, if any (Linux's
    /// `tcp_rate_gen`).
    pub fn on_ack(&mut self, newly: u32, covered: bool, now_ns: u64) -> Option<RateSample> {
        let now = us(now_ns);
        self.delivered = self.delivered.wrapping_add(newly);
        if newly > 0 {
            self.delivered_us = now;
        }
        // The app-limited bubble is over once what was in flight then is delivered.
        if self.app_limited != 0 && seq::gt(self.delivered, self.app_limited) {
            self.app_limited = 0;
        }
        let t = self.tracked.filter(|_| covered)?;
        self.tracked = None;
        self.first_tx_us = t.sent_us;
        let send_us = t.sent_us.wrapping_sub(t.first_tx_us);
        let ack_us = now.wrapping_sub(t.delivered_us);
        Some(RateSample {
            delivered: self.delivered.wrapping_sub(t.delivered),
            interval_us: send_us.max(ack_us),
            rtt_us: now.wrapping_sub(t.sent_us),
            prior_delivered: t.delivered,
            app_limited: t.app_limited,
        })
    }

    /// Forgets the tracked range (the scoreboard was cleared: what it said was SACKed
    /// may not be).
    pub fn void(&mut self) {
        self.tracked = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: u64 = 1000;
    const M: u32 = 1000;

    #[test]
    fn the_first_new_octets_are_tracked_and_their_ack_samples() {
        let mut r = Rate::new();
        r.on_sent(100, 100 + 4 * M, 100, true, M, 10 * US);
        assert_eq!(r.tracked(), Some((100, 100 + M)));
        // The rest of the window goes out; the tracked range stays.
        r.on_sent(100 + 4 * M, 100 + 8 * M, 100 + 4 * M, false, M, 20 * US);
        assert_eq!(r.tracked(), Some((100, 100 + M)));
        // An ACK that does not cover it: no sample, delivery counted.
        assert_eq!(r.on_ack(500, false, 100 * US), None);
        let s = r.on_ack(M, true, 110 * US).expect("a sample");
        assert_eq!(
            s,
            RateSample {
                delivered: 1500,
                interval_us: 100, // the ACK phase: from the (idle) start at 10 µs
                rtt_us: 100,
                prior_delivered: 0,
                app_limited: false,
            }
        );
        assert_eq!((r.delivered(), r.delivered_us()), (1500, 110));
        assert_eq!(r.tracked(), None);
    }

    #[test]
    fn the_next_range_is_tracked_from_the_next_new_send() {
        let mut r = Rate::new();
        r.on_sent(0, M, 0, true, M, 0);
        r.on_ack(M, true, 50 * US).unwrap();
        // A retransmission of old data is not tracked; new data is.
        r.on_sent(0, M, M, false, M, 60 * US);
        assert_eq!(r.tracked(), None);
        r.on_sent(M, 3 * M, M, false, M, 60 * US);
        assert_eq!(r.tracked(), Some((M, 2 * M)));
        let s = r.on_ack(2 * M, true, 130 * US).unwrap();
        // Send phase: 60 − 0 (the last sampled range went at 0); ACK phase: 130 − 50.
        assert_eq!((s.delivered, s.interval_us, s.rtt_us), (2 * M, 80, 70));
        assert_eq!(s.prior_delivered, M);
    }

    #[test]
    fn the_send_phase_counts_when_acks_come_compressed() {
        let mut r = Rate::new();
        r.on_sent(0, M, 0, true, M, 0);
        r.on_ack(M, true, 100 * US).unwrap(); // first_tx = 0
        r.on_sent(M, 2 * M, M, false, M, 400 * US);
        // Sent 400 µs after the range sampled before it, acknowledged 350 µs after the
        // delivery before its send: the ACKs came faster than the data went.
        let s = r.on_ack(M, true, 450 * US).unwrap();
        assert_eq!(s.interval_us, 400, "send phase 400 µs > ACK phase 350 µs");
    }

    #[test]
    fn a_retransmission_of_the_tracked_range_voids_it() {
        let mut r = Rate::new();
        r.on_sent(0, 4 * M, 0, true, M, 0);
        r.on_sent(500, 1500, 4 * M, false, M, 10 * US);
        assert_eq!(r.tracked(), None);
        assert_eq!(r.on_ack(4 * M, true, 100 * US), None, "nothing to sample");
        // A send that is partly old and partly new tracks its new octets.
        r.on_sent(3 * M, 6 * M, 4 * M, false, M, 110 * US);
        assert_eq!(r.tracked(), Some((4 * M, 5 * M)));
    }

    #[test]
    fn app_limited_marks_samples_until_the_bubble_is_delivered() {
        let mut r = Rate::new();
        r.mark_app_limited(0);
        assert!(r.is_app_limited());
        r.on_sent(0, 2 * M, 0, true, M, 0);
        let s = r.on_ack(2 * M, true, 100 * US).unwrap();
        assert!(s.app_limited);
        assert!(!r.is_app_limited(), "delivery passed the mark (1)");
        r.on_sent(2 * M, 3 * M, 2 * M, true, M, 100 * US);
        let s = r.on_ack(M, true, 200 * US).unwrap();
        assert!(!s.app_limited);
        // Marked with 5000 bytes in flight: cleared once delivery passes 3000 + 5000.
        r.mark_app_limited(5 * M);
        r.on_ack(5 * M, false, 300 * US);
        assert!(r.is_app_limited());
        r.on_ack(1, false, 300 * US);
        assert!(!r.is_app_limited());
    }

    #[test]
    fn wraps_around_zero() {
        let mut r = Rate::new();
        let base = u32::MAX - 500;
        r.on_sent(
            base,
            base.wrapping_add(2 * M),
            base,
            true,
            M,
            u64::from(u32::MAX) * US,
        );
        assert_eq!(r.tracked(), Some((base, base.wrapping_add(M))));
        let s = r.on_ack(M, true, (u64::from(u32::MAX) + 40) * US).unwrap();
        assert_eq!((s.rtt_us, s.interval_us, s.delivered), (40, 40, M));
    }
}
