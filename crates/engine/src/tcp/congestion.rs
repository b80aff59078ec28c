//! Congestion control: the window a connection may have in flight, and how a loss changes
//! it. The loss-recovery state both algorithms share lives here: NewReno fast retransmit
//! and fast recovery (RFC 6582) when the peer has no SACK, RFC 6675 SACK recovery
//! otherwise, the loss window after a timeout, the RFC 6928 initial window. The window
//! itself follows one of two algorithms ([`Algorithm`], the server's `--cc`):
//!
//! - CUBIC (RFC 9438, Linux's default since 2.6.19; this module): slow start counting
//!   every byte acknowledged (RFC 3465's byte counting without its L = 2 limit, as
//!   Linux: stretch ACKs of offloaded receivers), then a multiplicative decrease to 0.7 on a loss and a
//!   window growth that is a cubic function of the time since the last reduction, never
//!   slower than Reno's; SACK recovery paced by RFC 6937's Proportional Rate Reduction,
//!   which ends at ssthresh. Not paced.
//! - BBR v1 ([`super::bbr`]): the window and a pacing rate from a model of the path's
//!   bandwidth and propagation delay, fed by delivery-rate samples ([`super::rate`]); a
//!   random loss does not shrink it.
//!
//! Pure window arithmetic: the connection says what was acknowledged, delivered, sent
//! and when, and this answers with the window and whether to retransmit. Byte units,
//! times in ns; no floating point (the engine runs where there is no FPU state to use).

use super::bbr::{self, Bbr, CaState};
use super::seq;

/// Which congestion control a connection runs (the server's `--cc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Algorithm {
    /// CUBIC with PRR; not paced. The default: on a clean link it is the faster of the
    /// two here (docs/perf/log/2026-11-24-loss-recovery.md).
    #[default]
    Cubic,
    /// BBR v1; paced.
    Bbr,
}

/// What the congestion controller asks of the sender after an ACK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing special: send what the windows allow.
    Continue,
    /// Retransmit the segment at SND.UNA now (fast retransmit or a NewReno partial ACK).
    Retransmit,
}

/// RFC 9438's β_cubic, the window kept on a loss, in thousandths.
const BETA_MILLI: u64 = 700;
/// RFC 9438's α_cubic = 3(1 − β)/(1 + β) in thousandths: the Reno-friendly growth per
/// round trip, in segments, that makes AIMD(α, β) as aggressive as Reno's AIMD(1, 0.5).
const ALPHA_MILLI: u64 = 529;
/// RFC 9438's C = 0.4 segments/s³, as 4/10.
const C_NUM: i128 = 4;
const C_DEN: i128 = 10;

/// CUBIC's state between two congestion events (RFC 9438 §4.1's variables).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Cubic {
    /// W_max: the window just before the last reduction (bytes).
    pub w_max: u32,
    /// cwnd_prior: the window before the last reduction (bytes), for the Reno-friendly
    /// region's α (§4.3).
    pub cwnd_prior: u32,
    /// W_est: the window Reno would have now, in thousandths of a byte (its growth per
    /// ACK is under a byte once the window is a few hundred segments).
    pub w_est_milli: u64,
    /// What the cubic increase left over below one byte: (target − cwnd)·acked, modulo
    /// cwnd (with a large window most ACKs add less than a byte).
    pub carry: u32,
    /// K: when W_cubic reaches W_max again, in ms from the epoch.
    pub k_ms: u32,
    /// Start of the current congestion-avoidance epoch (ns; 0: none yet, the next ACK in
    /// congestion avoidance starts one).
    pub epoch_ns: u64,
    /// When data was last sent (ns): an idle spell shifts the epoch (§5.8: t must not
    /// count the time the application left the window unused).
    pub last_send_ns: u64,
}

/// RFC 6937's counters for one recovery episode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Prr {
    /// Bytes the peer received since recovery began (acknowledged or SACKed).
    pub delivered: u32,
    /// Bytes sent since recovery began (retransmissions and new data).
    pub out: u32,
    /// RecoverFS: the flight when recovery began.
    pub recover_fs: u32,
}

/// The algorithm's own state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algo {
    /// CUBIC's window function and PRR's counters.
    Cubic {
        /// CUBIC's window function.
        cubic: Cubic,
        /// Proportional rate reduction in SACK recovery.
        prr: Prr,
    },
    /// BBR's model and modes.
    Bbr(Bbr),
}

/// Congestion state of one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Congestion {
    /// Congestion window in bytes.
    pub cwnd: u32,
    /// Slow-start threshold (CUBIC; BBR leaves it unbounded, as Linux's).
    pub ssthresh: u32,
    /// Duplicate ACKs in a row.
    pub dupacks: u8,
    /// In fast recovery.
    pub in_recovery: bool,
    /// After a retransmission timeout, until the ACKs reach `recover` (Linux's Loss
    /// state).
    pub in_loss: bool,
    /// SND.MAX when recovery started (RFC 6582 "recover").
    pub recover: u32,
    /// The algorithm's state.
    pub algo: Algo,
}

const NO_CUBIC: Cubic = Cubic {
    w_max: 0,
    cwnd_prior: 0,
    w_est_milli: 0,
    carry: 0,
    k_ms: 0,
    epoch_ns: 0,
    last_send_ns: 0,
};

impl Congestion {
    /// No window (a connection not yet accepted).
    pub const NONE: Congestion = Congestion {
        cwnd: 0,
        ssthresh: u32::MAX,
        dupacks: 0,
        in_recovery: false,
        in_loss: false,
        recover: 0,
        algo: Algo::Cubic {
            cubic: NO_CUBIC,
            prr: Prr {
                delivered: 0,
                out: 0,
                recover_fs: 0,
            },
        },
    };

    /// Initial state for a connection with send MSS `mss` whose ISS is `iss`, running
    /// `algorithm`.
    pub fn new(mss: u32, iss: u32, algorithm: Algorithm) -> Congestion {
        let algo = match algorithm {
            Algorithm::Cubic => Congestion::NONE.algo,
            Algorithm::Bbr => Algo::Bbr(Bbr::new()),
        };
        Congestion {
            cwnd: initial_window(mss),
            recover: iss,
            algo,
            ..Congestion::NONE
        }
    }

    /// The algorithm running.
    pub fn algorithm(&self) -> Algorithm {
        match self.algo {
            Algo::Cubic { .. } => Algorithm::Cubic,
            Algo::Bbr(_) => Algorithm::Bbr,
        }
    }

    /// CUBIC's state, when it runs.
    pub fn cubic(&self) -> Option<&Cubic> {
        match &self.algo {
            Algo::Cubic { cubic, .. } => Some(cubic),
            Algo::Bbr(_) => None,
        }
    }

    /// PRR's counters, when CUBIC runs.
    pub fn prr(&self) -> Option<&Prr> {
        match &self.algo {
            Algo::Cubic { prr, .. } => Some(prr),
            Algo::Bbr(_) => None,
        }
    }

    /// BBR's state, when it runs.
    pub fn bbr(&self) -> Option<&Bbr> {
        match &self.algo {
            Algo::Bbr(b) => Some(b),
            Algo::Cubic { .. } => None,
        }
    }

    /// The recovery state BBR reads.
    pub fn ca_state(&self) -> CaState {
        if self.in_recovery {
            CaState::Recovery
        } else if self.in_loss {
            CaState::Loss
        } else {
            CaState::Open
        }
    }

    /// The pacing rate (BBR's, in [`bbr::BW_SHIFT`] units), or `None`: not paced.
    pub fn pacing_rate(&self) -> Option<u32> {
        match &self.algo {
            Algo::Bbr(b) if b.pacing_rate() > 0 => Some(b.pacing_rate()),
            _ => None,
        }
    }

    /// The most one offloaded frame should carry (BBR's TSO goal), or `None`: no bound
    /// of the algorithm's.
    pub fn tso_goal(&self, mss: u32) -> Option<u32> {
        match &self.algo {
            Algo::Bbr(b) if b.pacing_rate() > 0 => Some(b.tso_goal(mss)),
            _ => None,
        }
    }

    /// The connection is established: BBR takes the handshake's RTT sample (µs, from the
    /// timed SYN-ACK) as its first minimum and sets its first pacing rate from the SRTT.
    pub fn on_established(&mut self, srtt_us: u32, handshake_rtt_us: Option<u32>, now_ns: u64) {
        if let Algo::Bbr(b) = &mut self.algo {
            b.init(self.cwnd, srtt_us, handshake_rtt_us, now_ns);
        }
    }

    /// An ACK was processed (BBR's per-ACK update of its model, pacing rate and, unless
    /// NewReno recovery without SACK holds the window, the window). Returns whether the
    /// connection must be marked application-limited. Nothing for CUBIC, whose window
    /// moves in [`on_new_ack`](Self::on_new_ack) and [`on_recovery_ack`](Self::on_recovery_ack).
    pub fn on_ack(&mut self, a: &bbr::Ack, sack: bool) -> bool {
        let own_cwnd = sack || !self.in_recovery;
        match &mut self.algo {
            Algo::Bbr(b) => b.on_ack(a, &mut self.cwnd, own_cwnd),
            Algo::Cubic { .. } => false,
        }
    }

    /// New data acknowledged: `acked` bytes, up to `ack`, at `now_ns`, with a smoothed
    /// RTT of `srtt_us`; `flight` is what remains in flight after it (RFC 5681 §3.1, RFC
    /// 6582 §3.2 steps 3–5). With `sack`, a partial acknowledgment changes nothing here:
    /// the scoreboard says what to resend and PRR ([`on_recovery_ack`]) the window.
    ///
    /// [`on_recovery_ack`]: Congestion::on_recovery_ack
    #[allow(clippy::too_many_arguments)]
    pub fn on_new_ack(
        &mut self,
        acked: u32,
        ack: u32,
        flight: u32,
        mss: u32,
        sack: bool,
        now_ns: u64,
        srtt_us: u32,
    ) -> Verdict {
        self.dupacks = 0;
        if self.in_recovery {
            if seq::ge(ack, self.recover) {
                // Full acknowledgment: deflate. NewReno takes RFC 6582 step 6's first
                // option (no burst after the inflation); SACK recovery never inflated, and
                // ends at ssthresh as RFC 6937 does: the first option would leave one or
                // two segments after a recovery whose full ACK covered all that was in
                // flight, and a window that small is lost whole by the next two losses
                // (measured at 10% loss: timeouts).
                // BBR restores the window it had before recovery on this ACK
                // (`bbr::Bbr::on_ack`); without SACK, NewReno's inflation is undone first.
                let bbr = matches!(self.algo, Algo::Bbr(_));
                self.cwnd = match (sack, bbr) {
                    (true, false) => self.ssthresh,
                    (false, false) => self.ssthresh.min(flight.max(mss) + mss),
                    (true, true) => self.cwnd,
                    (false, true) => flight.max(mss) + mss,
                };
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
            if self.in_loss && seq::ge(ack, self.recover) {
                self.in_loss = false; // what was outstanding at the timeout is delivered
            }
            if let Algo::Cubic { cubic, .. } = &mut self.algo {
                grow(
                    &mut self.cwnd,
                    self.ssthresh,
                    cubic,
                    acked,
                    mss,
                    now_ns,
                    srtt_us,
                );
            }
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
    /// RFC 6675 §5: no second reduction for losses of one window). Returns whether it
    /// entered. CUBIC reduces the window (§4.6); NewReno then inflates it by the three
    /// duplicates, while SACK recovery starts PRR with RecoverFS = `flight`. BBR saves the
    /// window to restore when recovery ends; with SACK its per-ACK update sets the window
    /// (packet conservation for a round), without SACK it is the flight plus the two
    /// duplicates beyond the one the fast retransmission answers, inflated by each further
    /// duplicate as NewReno's (packet conservation).
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
        match &mut self.algo {
            Algo::Cubic { cubic, prr } => {
                self.ssthresh = reduce(cubic, self.cwnd, flight, mss);
                self.cwnd = if sack {
                    *prr = Prr {
                        delivered: 0,
                        out: 0,
                        recover_fs: flight.max(1),
                    };
                    self.ssthresh
                } else {
                    self.ssthresh + 3 * mss
                };
            }
            Algo::Bbr(b) => {
                b.save_cwnd(self.cwnd);
                if !sack {
                    self.cwnd = flight.saturating_add(2 * mss);
                }
            }
        }
        self.recover = snd_max;
        self.in_recovery = true;
        true
    }

    /// An ACK in SACK recovery delivered `delivered` bytes (newly acknowledged plus newly
    /// SACKed) and left `pipe` bytes in the network: RFC 6937 sets the window so that what
    /// is sent in recovery follows what arrives, in proportion ssthresh/RecoverFS while the
    /// pipe is above ssthresh, and grows back towards ssthresh (slow start, at most one
    /// segment beyond what was delivered: PRR-SSRB) once it is below. CUBIC only (BBR's
    /// per-ACK update sets its window).
    pub fn on_recovery_ack(&mut self, delivered: u32, pipe: u32, mss: u32) {
        let Algo::Cubic { prr: p, .. } = &mut self.algo else {
            return;
        };
        p.delivered = p.delivered.saturating_add(delivered);
        let sndcnt = if pipe > self.ssthresh {
            let due = (u64::from(p.delivered) * u64::from(self.ssthresh))
                .div_ceil(u64::from(p.recover_fs));
            due.saturating_sub(u64::from(p.out))
                .min(u64::from(u32::MAX)) as u32
        } else {
            let limit = p.delivered.saturating_sub(p.out).max(delivered) + mss;
            (self.ssthresh - pipe).min(limit)
        };
        self.cwnd = pipe.saturating_add(sndcnt);
    }

    /// `len` bytes went out at `now_ns`; `idle`: nothing was in flight before. CUBIC: PRR
    /// counts them in recovery, and an idle spell shifts the epoch, as Linux does on
    /// `CA_EVENT_TX_START`. BBR: a restart while `app_limited` (Linux's same event). The
    /// connection's `delivered_us` and `seed` are BBR's gain-cycle stamp and random source.
    pub fn on_sent(
        &mut self,
        len: u32,
        now_ns: u64,
        idle: bool,
        app_limited: bool,
        seed: u32,
        delivered_us: u32,
    ) {
        match &mut self.algo {
            Algo::Cubic { cubic: c, prr } => {
                if self.in_recovery {
                    prr.out = prr.out.saturating_add(len);
                }
                if idle && c.epoch_ns != 0 && c.last_send_ns != 0 {
                    let gap = now_ns.saturating_sub(c.last_send_ns);
                    c.epoch_ns = c.epoch_ns.saturating_add(gap).min(now_ns);
                }
                c.last_send_ns = now_ns;
            }
            Algo::Bbr(b) => {
                if idle && app_limited {
                    b.on_restart(&mut self.cwnd, now_ns, seed, delivered_us);
                }
            }
        }
    }

    /// The retransmission timer expired with `flight` bytes outstanding (RFC 5681 §3.1:
    /// loss window of one segment; CUBIC's ssthresh from β, RFC 9438 §4.8; BBR saves the
    /// window to restore; RFC 6582 §3.2 step 4's `recover`, and the Loss state until the
    /// ACKs reach it).
    pub fn on_timeout(&mut self, flight: u32, snd_max: u32, mss: u32) {
        match &mut self.algo {
            Algo::Cubic { cubic, .. } => {
                if !self.in_recovery {
                    self.ssthresh = reduce(cubic, self.cwnd, flight, mss);
                }
                // After a timeout CUBIC's next epoch starts from the window it then has
                // (§4.8: K = 0, W_max = cwnd at the start of congestion avoidance).
                cubic.w_max = 0;
            }
            Algo::Bbr(b) => b.on_timeout(self.cwnd, self.in_recovery),
        }
        self.cwnd = mss;
        self.in_recovery = false;
        self.in_loss = true;
        self.dupacks = 0;
        self.recover = snd_max;
    }
}

/// A congestion event (RFC 9438 §4.6–4.7) at window `cwnd`: W_max with fast convergence,
/// cwnd_prior, a new epoch to come; returns ssthresh = β · FlightSize (at least two
/// segments).
fn reduce(c: &mut Cubic, cwnd: u32, flight: u32, mss: u32) -> u32 {
    c.w_max = if cwnd < c.w_max {
        // Fast convergence: the saturation point fell; make room for others.
        (u64::from(cwnd) * (1000 + BETA_MILLI) / 2000) as u32
    } else {
        cwnd
    };
    c.cwnd_prior = cwnd;
    c.epoch_ns = 0;
    loss_ssthresh(flight, mss)
}

/// Window growth on an ACK of `acked` new bytes outside recovery: slow start below
/// ssthresh, CUBIC above it. Slow start counts every byte the ACK covers (up to
/// ssthresh), as Linux does since 2015 ("tcp: properly handle stretch acks in slow
/// start"), not RFC 3465's L = 2 segments: a receiver that takes offloaded frames
/// acknowledges many segments at once (the bare client: one ACK per read burst, at least
/// a super-frame of up to 45 segments; Linux with GRO: one per merged packet), and with
/// L = 2 the window grew
/// by two segments per round trip instead of doubling (a 1 MiB response on a new
/// connection to the bare client went in frames of 3–17 KiB over ~40 round trips).
fn grow(
    cwnd: &mut u32,
    ssthresh: u32,
    c: &mut Cubic,
    acked: u32,
    mss: u32,
    now_ns: u64,
    srtt_us: u32,
) {
    if *cwnd < ssthresh {
        *cwnd = cwnd.saturating_add(acked).min(ssthresh);
    } else {
        *cwnd = cubic_grow(*cwnd, c, acked, mss, now_ns, srtt_us);
    }
}

/// RFC 9438 §4.2–4.5 on one ACK in congestion avoidance: the target W_cubic(t + RTT),
/// bounded to [cwnd, 1.5·cwnd], approached by (target − cwnd)/cwnd per segment
/// acknowledged; and never less than W_est, the window Reno would have (α_cubic per
/// round trip, 1 once past cwnd_prior). Returns the new window.
fn cubic_grow(cwnd32: u32, c: &mut Cubic, acked: u32, mss: u32, now_ns: u64, srtt_us: u32) -> u32 {
    let cwnd = u64::from(cwnd32.max(1));
    let mss64 = u64::from(mss.max(1));
    if c.epoch_ns == 0 {
        c.epoch_ns = now_ns.max(1);
        if u64::from(c.w_max) <= cwnd {
            c.w_max = cwnd32;
            c.k_ms = 0;
        } else {
            // K = ∛((W_max − cwnd_epoch)/C) s, in ms: ∛((ΔW/MSS)·10⁹/C).
            let dw = u128::from(u64::from(c.w_max) - cwnd);
            let k3 = dw * 1_000_000_000 * C_DEN as u128 / (C_NUM as u128 * u128::from(mss64));
            c.k_ms = icbrt(k3.min(u128::from(u64::MAX)) as u64).min(u64::from(u32::MAX)) as u32;
        }
        c.w_est_milli = u64::from(cwnd32) * 1000;
        c.carry = 0;
    }
    // W_cubic(t) = C·(t − K)³ + W_max, in bytes, t in ms since the epoch.
    let (w_max, k_ms) = (i128::from(c.w_max), i128::from(c.k_ms));
    let w_cubic = |t_ns: u64| {
        let d = (t_ns / 1_000_000).min(1 << 30) as i128 - k_ms;
        w_max + C_NUM * i128::from(mss) * d * d * d / (C_DEN * 1_000_000_000)
    };
    let t_ns = now_ns.saturating_sub(c.epoch_ns);
    let ahead = w_cubic(t_ns + u64::from(srtt_us) * 1000);
    let target = (ahead.clamp(0, i128::from(u32::MAX)) as u64).clamp(cwnd, cwnd * 3 / 2);
    let grow = (target - cwnd) * u64::from(acked) + u64::from(c.carry);
    let mut next = cwnd + grow / cwnd;
    c.carry = (grow % cwnd) as u32;
    // The Reno-friendly region (§4.3).
    let est = c.w_est_milli / 1000;
    let alpha = if est >= u64::from(c.cwnd_prior) {
        1000
    } else {
        ALPHA_MILLI
    };
    c.w_est_milli = c
        .w_est_milli
        .saturating_add(alpha * mss64 * u64::from(acked) / cwnd);
    let est = c.w_est_milli / 1000;
    if w_cubic(t_ns) < i128::from(est.min(u64::from(u32::MAX))) {
        next = next.max(est);
    }
    next.min(u64::from(u32::MAX)) as u32
}

/// Initial congestion window: RFC 6928's min(10·MSS, max(2·MSS, 14600)), as Linux uses
/// since 2.6.39. RFC 5681's three segments made a 1 MiB download spend more round trips in
/// slow start, and a loss early in it left too few segments behind to draw the SACKs that
/// repair it.
pub fn initial_window(mss: u32) -> u32 {
    (10 * mss).min((2 * mss).max(14_600))
}

/// The slow-start threshold after a loss (RFC 9438 §4.6: β_cubic · FlightSize, at least
/// two segments).
pub fn loss_ssthresh(flight: u32, mss: u32) -> u32 {
    ((u64::from(flight) * BETA_MILLI / 1000) as u32).max(2 * mss)
}

/// The integer cube root of `x` (the largest r with r³ ≤ x), bit by bit.
fn icbrt(x: u64) -> u64 {
    let mut r: u64 = 0;
    let mut rem = x;
    let mut s: i32 = 63;
    while s >= 0 {
        r <<= 1;
        let b = 3 * r * (r + 1) + 1;
        if (rem >> s) >= b {
            rem -= b << s;
            r += 1;
        }
        s -= 3;
    }
    r
}

#[cfg(test)]
mod tests;
