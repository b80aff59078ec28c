//! Congestion control: slow start and congestion avoidance (RFC 5681) with NewReno fast
//! retransmit and fast recovery (RFC 6582), or, when the peer sends SACK, the window rules
//! of RFC 6675 recovery (no inflation: the connection counts what is in the pipe). Pure
//! window arithmetic: the connection tells it what was acknowledged and it answers whether
//! to retransmit.

use super::seq;

/// What the congestion controller asks of the sender after an ACK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing special: send what the windows allow.
    Continue,
    /// Retransmit the segment at SND.UNA now (fast retransmit or a NewReno partial ACK).
    Retransmit,
}

/// NewReno state of one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewReno {
    /// Congestion window in bytes.
    pub cwnd: u32,
    /// Slow-start threshold.
    pub ssthresh: u32,
    /// Duplicate ACKs in a row.
    pub dupacks: u8,
    /// In fast recovery.
    pub in_recovery: bool,
    /// SND.MAX when recovery started (RFC 6582 "recover").
    pub recover: u32,
}

impl NewReno {
    /// Initial state for a connection with send MSS `mss` whose ISS is `iss`.
    pub fn new(mss: u32, iss: u32) -> NewReno {
        NewReno {
            cwnd: initial_window(mss),
            ssthresh: u32::MAX,
            dupacks: 0,
            in_recovery: false,
            recover: iss,
        }
    }

    /// New data acknowledged: `acked` bytes, up to `ack`; `flight` is what remains in
    /// flight after it (RFC 5681 §3.1, RFC 6582 §3.2 steps 3–5). With `sack`, a partial
    /// acknowledgment changes nothing: the scoreboard says what to resend (RFC 6675).
    pub fn on_new_ack(
        &mut self,
        acked: u32,
        ack: u32,
        flight: u32,
        mss: u32,
        sack: bool,
    ) -> Verdict {
        self.dupacks = 0;
        if self.in_recovery {
            if seq::ge(ack, self.recover) {
                // Full acknowledgment: deflate.
                self.cwnd = self.ssthresh.min(flight.max(mss) + mss);
                self.in_recovery = false;
                Verdict::Continue
            } else if sack {
                Verdict::Continue
            } else {
                // Partial acknowledgment (RFC 6582 §3.2 step 5): retransmit the next hole,
                // deflate by what was acknowledged, and add back one segment if at least
                // one segment's worth was.
                let back = if acked >= mss { mss } else { 0 };
                self.cwnd = self.cwnd.saturating_sub(acked).saturating_add(back);
                Verdict::Retransmit
            }
        } else {
            self.grow(acked, mss);
            // Keep `recover` just behind the ACKs outside recovery: left at the ISS it
            // would fall more than 2^31 behind after 2 GiB and the "ACK above recover"
            // test of a new recovery would fail (no fast retransmit, only timeouts). Moving
            // it up to ACK − 1 changes no decision: every later duplicate is at or above ACK.
            if seq::gt(ack.wrapping_sub(1), self.recover) {
                self.recover = ack.wrapping_sub(1);
            }
            Verdict::Continue
        }
    }

    /// A duplicate ACK of `ack` (RFC 5681 §2 definition, checked by the caller) while
    /// `flight` bytes are outstanding and SND.MAX is `snd_max`. With `sack` the window is
    /// not inflated (RFC 6675 counts the pipe instead).
    pub fn on_dup_ack(
        &mut self,
        ack: u32,
        flight: u32,
        snd_max: u32,
        mss: u32,
        sack: bool,
    ) -> Verdict {
        self.dupacks = self.dupacks.saturating_add(1);
        if self.dupacks == 3 && self.enter_recovery(ack, flight, snd_max, mss, sack) {
            Verdict::Retransmit
        } else {
            if self.in_recovery && !sack {
                self.cwnd = self.cwnd.saturating_add(mss);
            }
            Verdict::Continue
        }
    }

    /// A loss was detected at `ack` (three duplicates, or the SACK scoreboard): enter fast
    /// recovery, unless already in it or the ACK is below `recover` (RFC 6582 §3.2 step 1,
    /// RFC 6675 §5: no second reduction for losses of one window). Returns
    /// whether it entered. NewReno inflates the window by the three duplicates; with
    /// `sack` the window is ssthresh (RFC 6675 §5 step 4.2).
    pub fn enter_recovery(
        &mut self,
        ack: u32,
        flight: u32,
        snd_max: u32,
        mss: u32,
        sack: bool,
    ) -> bool {
        // `recover` is SND.MAX then, one past RFC 6582's "highest sequence number
        // transmitted": an ACK of it covers more than the RFC's recover.
        if self.in_recovery || seq::lt(ack, self.recover) {
            return false;
        }
        self.ssthresh = loss_ssthresh(flight, mss);
        self.recover = snd_max;
        self.cwnd = if sack {
            self.ssthresh
        } else {
            self.ssthresh + 3 * mss
        };
        self.in_recovery = true;
        true
    }

    /// The retransmission timer expired with `flight` bytes outstanding (RFC 5681 §3.1:
    /// loss window of one segment; RFC 6582 §3.2 step 4's `recover`).
    pub fn on_timeout(&mut self, flight: u32, snd_max: u32, mss: u32) {
        self.ssthresh = loss_ssthresh(flight, mss);
        self.cwnd = mss;
        self.in_recovery = false;
        self.dupacks = 0;
        self.recover = snd_max;
    }

    /// Window growth on an ACK of `acked` new bytes outside recovery (RFC 5681 §3.1), with
    /// RFC 3465's byte counting limit L = 2 segments in slow start: a receiver that
    /// acknowledges every other segment (RFC 9293's delayed ACK) still doubles the window
    /// each round trip.
    fn grow(&mut self, acked: u32, mss: u32) {
        if self.cwnd < self.ssthresh {
            self.cwnd = self.cwnd.saturating_add(acked.min(2 * mss));
        } else {
            let inc = (u64::from(mss) * u64::from(mss) / u64::from(self.cwnd.max(1))).max(1);
            self.cwnd = self.cwnd.saturating_add(inc as u32);
        }
    }
}

/// Initial congestion window (RFC 5681 §3.1).
pub fn initial_window(mss: u32) -> u32 {
    if mss > 2190 {
        2 * mss
    } else if mss > 1095 {
        3 * mss
    } else {
        4 * mss
    }
}

/// Congestion response to a loss (RFC 5681 eqn. 4).
pub fn loss_ssthresh(flight: u32, mss: u32) -> u32 {
    (flight / 2).max(2 * mss)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_start_then_avoidance() {
        let mut c = NewReno::new(1000, 0);
        assert_eq!(c.cwnd, 4000);
        c.ssthresh = 6000;
        c.on_new_ack(5000, 5000, 0, 1000, false);
        assert_eq!(c.cwnd, 6000); // at most two MSS per ACK (RFC 3465, L = 2): ssthresh
        c.on_new_ack(1000, 6000, 0, 1000, false); // avoidance: mss*mss/cwnd = 166
        assert_eq!(c.cwnd, 6166);
        c.on_new_ack(1000, 7000, 0, 1000, false); // 1_000_000 / 6166 = 162
        assert_eq!(c.cwnd, 6328);
        assert_eq!(loss_ssthresh(10_000, 1000), 5000);
        assert_eq!(loss_ssthresh(1000, 1000), 2000);
    }

    #[test]
    fn initial_window_by_mss() {
        assert_eq!(initial_window(536), 2144);
        assert_eq!(initial_window(1460), 4380);
        assert_eq!(initial_window(4000), 8000);
    }

    #[test]
    fn three_dup_acks_enter_recovery_once() {
        let mut c = NewReno::new(1000, 0);
        assert_eq!(
            c.on_dup_ack(100, 8000, 8100, 1000, false),
            Verdict::Continue
        );
        assert_eq!(
            c.on_dup_ack(100, 8000, 8100, 1000, false),
            Verdict::Continue
        );
        assert_eq!(
            c.on_dup_ack(100, 8000, 8100, 1000, false),
            Verdict::Retransmit
        );
        assert!(c.in_recovery);
        assert_eq!((c.ssthresh, c.cwnd, c.recover), (4000, 7000, 8100));
        assert_eq!(
            c.on_dup_ack(100, 8000, 8100, 1000, false),
            Verdict::Continue
        );
        assert_eq!(c.cwnd, 8000, "inflation by one MSS per further duplicate");
        // Partial ACK: retransmit, deflate.
        assert_eq!(
            c.on_new_ack(1000, 1100, 7000, 1000, false),
            Verdict::Retransmit
        );
        assert_eq!(c.cwnd, 8000);
        // Full ACK: out of recovery, cwnd = min(ssthresh, flight + mss).
        assert_eq!(c.on_new_ack(7000, 8100, 0, 1000, false), Verdict::Continue);
        assert!(!c.in_recovery);
        assert_eq!(c.cwnd, 2000);
    }

    #[test]
    fn no_recovery_for_acks_below_recover() {
        let mut c = NewReno::new(1000, 0);
        c.on_timeout(8000, 9000, 1000);
        assert_eq!((c.cwnd, c.ssthresh, c.recover), (1000, 4000, 9000));
        for _ in 0..3 {
            assert_eq!(
                c.on_dup_ack(5000, 4000, 9000, 1000, false),
                Verdict::Continue
            );
        }
        assert!(
            !c.in_recovery,
            "RFC 6582: duplicates below recover start no recovery"
        );
    }

    #[test]
    fn sack_recovery_neither_inflates_nor_deflates() {
        let mut c = NewReno::new(1000, 0);
        assert!(c.enter_recovery(100, 8000, 8100, 1000, true));
        assert_eq!((c.ssthresh, c.cwnd, c.recover), (4000, 4000, 8100));
        assert!(
            !c.enter_recovery(100, 8000, 8100, 1000, true),
            "once per window"
        );
        assert_eq!(c.on_dup_ack(100, 8000, 8100, 1000, true), Verdict::Continue);
        assert_eq!(c.cwnd, 4000, "no inflation: the pipe is counted instead");
        assert_eq!(
            c.on_new_ack(1000, 1100, 7000, 1000, true),
            Verdict::Continue
        );
        assert_eq!(
            c.cwnd, 4000,
            "a partial ACK: the scoreboard says what to resend"
        );
        assert_eq!(c.on_new_ack(7000, 8100, 0, 1000, true), Verdict::Continue);
        assert!(!c.in_recovery);
    }
}
