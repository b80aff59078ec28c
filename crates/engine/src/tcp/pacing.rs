//! The connection's side of BBR: what each ACK delivered (the rate sample it completes and
//! the model update, [`Connection::on_delivery`]), what each send does to the sampler and
//! the pacing clock ([`Connection::on_sent_model`]), the app-limited mark, and pacing
//! itself: [`Connection::next_segment`](super::Connection::next_segment) holds a segment
//! back until the pacing clock allows it ([`Connection::pace_holds`]) and says when
//! ([`Connection::pacing_deadline`]), so the owner can wake the connection then.
//!
//! The pacing clock is Linux's earliest departure time: each segment sent moves it on by
//! its length at the pacing rate, from now or from where it stood if that is later. A
//! segment may leave up to [`PACING_SLACK_NS`] early, the resolution of the server's
//! timers, so a burst is about that long at the pacing rate (Linux's fq paces to the
//! nanosecond; here a frame's worth of segments goes at once, at most BBR's TSO goal of
//! about a millisecond). CUBIC is not paced.

use super::bbr::{self, Bbr};
use super::conn::Connection;
use super::seq;

/// How early a paced segment may leave: the server's timer resolution (its
/// `TIMER_GRAIN_NS`, the shortest gap between two timer scans).
pub const PACING_SLACK_NS: u64 = 250_000;

impl Connection {
    /// Bytes in flight as the congestion window counts them: RFC 6675's pipe in SACK
    /// recovery, else everything sent and not acknowledged.
    pub(super) fn inflight(&self) -> u32 {
        if self.sack_recovery() {
            self.pipe()
        } else {
            self.flight()
        }
    }

    /// When pacing holds the next segment back: the time it may leave (less
    /// [`PACING_SLACK_NS`]: the owner may send from then on). `None` when the last call
    /// to [`next_segment`](Self::next_segment) was not held back by pacing.
    pub fn pacing_deadline(&self) -> Option<u64> {
        self.paced
            .then(|| self.next_send_ns.saturating_sub(PACING_SLACK_NS))
    }

    /// The pacing clock (ns): when the next segment may leave.
    pub fn next_send_ns(&self) -> u64 {
        self.next_send_ns
    }

    /// The delivery-rate sampler.
    pub fn rate(&self) -> &super::rate::Rate {
        &self.rate
    }

    /// Whether pacing holds a segment back at `now_ns` (and notes it for
    /// [`pacing_deadline`](Self::pacing_deadline)).
    pub(super) fn pace_holds(&mut self, now_ns: u64) -> bool {
        self.paced = self.cc.pacing_rate().is_some()
            && self.next_send_ns > now_ns.saturating_add(PACING_SLACK_NS);
        self.paced
    }

    /// `[seq, end)` (data; `end` past any FIN) went out at `now_ns`, when SND.MAX was
    /// `snd_max` and `idle` nothing was in flight: the rate sampler tracks or voids, the
    /// congestion controller hears of it, and the pacing clock moves on by its length.
    pub(super) fn on_sent_model(
        &mut self,
        seq_n: u32,
        end: u32,
        snd_max: u32,
        idle: bool,
        now_ns: u64,
    ) {
        let len = end.wrapping_sub(seq_n);
        self.rate
            .on_sent(seq_n, end, snd_max, idle, self.mss, now_ns);
        let (app_limited, delivered_us) = (self.rate.is_app_limited(), self.rate.delivered_us());
        self.cc
            .on_sent(len, now_ns, idle, app_limited, self.iss, delivered_us);
        if let Some(rate) = self.cc.pacing_rate() {
            self.next_send_ns = self.next_send_ns.max(now_ns) + Bbr::send_time_ns(len, rate);
        }
    }

    /// The application queues more data: if the sender had run out (less than a segment
    /// left unsent, the window not full, no hole waiting to be repaired), what is in flight
    /// now was sent app-limited (Linux's `tcp_rate_check_app_limited`, on the
    /// application's write).
    pub(super) fn check_app_limited(&mut self) {
        let unsent = if seq::lt(self.snd_nxt, self.send_end) {
            self.send_end.wrapping_sub(self.snd_nxt)
        } else {
            0
        };
        let inflight = self.inflight();
        if unsent < self.mss && inflight < self.cc.cwnd && !self.sack_recovery() {
            self.rate.mark_app_limited(inflight);
        }
    }

    /// An acceptable ACK at `now_ns` newly delivered `delivered` bytes (acknowledged or
    /// SACKed), with `prior_inflight` in flight before it; `lost`: it revealed a loss.
    /// Completes the tracked range's rate sample if it covers it, and gives BBR its
    /// per-ACK update.
    pub(super) fn on_delivery(
        &mut self,
        delivered: u32,
        prior_inflight: u32,
        lost: bool,
        now_ns: u64,
    ) {
        let covered = self.rate.tracked().is_some_and(|(start, end)| {
            let from = if seq::gt(self.snd_una, start) {
                self.snd_una
            } else {
                start
            };
            seq::ge(self.snd_una, end) || self.sb.unsacked_in(from, end) == 0
        });
        let sample = self.rate.on_ack(delivered, covered, now_ns);
        if self.cc.bbr().is_none() {
            return;
        }
        let inflight = self.inflight();
        let a = bbr::Ack {
            now_ns,
            acked_sacked: delivered,
            sample,
            delivered: self.rate.delivered(),
            delivered_us: self.rate.delivered_us(),
            prior_inflight,
            inflight,
            state: self.cc.ca_state(),
            lost,
            mss: self.mss,
            srtt_us: self.rtt.srtt_us,
            next_send_ns: self.next_send_ns,
            seed: self.iss,
        };
        if self.cc.on_ack(&a, self.sack_ok) {
            self.rate.mark_app_limited(inflight);
        }
    }
}
