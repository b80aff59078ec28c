//! The ACK step of a connection's input (RFC 9293 §3.10.7.4 "fifth"): completing the
//! passive handshake, accepting or refusing an acknowledgment (RFC 5961 §5.2's blind-ACK
//! check), RTT samples (the timed segment or the timestamp echo, RFC 7323 §4), the SACK
//! scoreboard and loss detection from it (RFC 6675, RFC 8985), the congestion
//! controller's per-ACK events (duplicate ACKs, recovery, PRR, the delivery-rate sample)
//! and the send-window update (SND.WL1/WL2). [`super::conn`] owns the rest of the input
//! function (acceptability, RST, SYN, PAWS, text, FIN) and calls [`Connection::input_ack`]
//! between them.

use super::congestion::Verdict;
use super::conn::{Connection, Outcome, Reply, TS_TICK_NS};
use super::seq;
use super::state::State;
use super::timer::Timer;
use crate::wire::tcp::ParsedRepr as TcpRepr;

impl Connection {
    /// Processes the acknowledgment `ack` of an acceptable, non-RST segment `seg` whose
    /// timestamps (if in use) are `seg_ts`. Returns false when the segment stops here
    /// (its reply, if any, is in `out`); true when its text and FIN are to be processed.
    pub(super) fn input_ack(
        &mut self,
        seg: &TcpRepr<'_>,
        ack: u32,
        seg_ts: Option<(u32, u32)>,
        now_ns: u64,
        out: &mut Outcome,
    ) -> bool {
        out.ack_seen = true;
        if self.state == State::SynReceived {
            if !(seq::lt(self.snd_una, ack) && seq::le(ack, self.snd_max)) {
                out.reply = Reply::Reset { seq: ack };
                return false;
            }
            self.state = State::Established;
            self.snd_una = ack;
            self.snd_wnd = u32::from(seg.window_len) << self.snd_shift;
            self.max_snd_wnd = self.max_snd_wnd.max(self.snd_wnd);
            self.handshake_done(seg.seq_number, ack, seg_ts, now_ns);
            out.established = true;
        }
        if seq::gt(ack, self.snd_max) {
            // Acknowledges something not yet sent.
            out.reply = Reply::Ack;
            return false;
        }
        if seq::lt(ack, self.snd_una.wrapping_sub(self.max_snd_wnd)) {
            // RFC 5961 §5.2 (and RFC 9293 §3.10.7.4): an ACK older than any window the
            // peer could have acknowledged from is a blind injection attempt. Discard the
            // segment, data and all, and answer with an ACK.
            out.bad_ack = true;
            out.reply = self.challenge_reply(now_ns, out);
            return false;
        }
        let new_wnd = u32::from(seg.window_len) << self.snd_shift;
        let was_in_recovery = self.cc.in_recovery;
        let sacked_before = self.sb.sacked();
        let prior_inflight = self.inflight();
        let rxt_arrived;
        if seq::gt(ack, self.snd_una) {
            let acked = ack.wrapping_sub(self.snd_una);
            out.acked = acked;
            if !self.rtt.on_ack(ack, now_ns) {
                self.ts_rtt_sample(seg_ts, now_ns);
            }
            self.snd_una = ack;
            self.sb.advance(ack);
            self.probes = 0;
            if self.rto_recovery && seq::ge(ack, self.cc.recover) {
                self.rto_recovery = false;
            }
            if seq::lt(self.snd_nxt, self.snd_una) {
                self.snd_nxt = self.snd_una;
            }
            rxt_arrived = self.take_sack(seg);
            let verdict = self.cc.on_new_ack(
                acked,
                ack,
                self.flight(),
                self.mss,
                self.sack_ok,
                now_ns,
                self.rtt.srtt_us,
            );
            out.retransmit = verdict == Verdict::Retransmit;
            self.retries = 0;
            self.last_heard_ns = now_ns;
            if self.state.fin_sent() && seq::gt(ack, self.send_end) {
                self.state = self.state.after_fin_acked();
            }
        } else {
            rxt_arrived = self.take_sack(seg);
            if ack == self.snd_una
                && seg.payload.is_empty()
                && !seg.flags.fin
                && new_wnd == self.snd_wnd
                && new_wnd != 0
                && self.flight() > 0
            {
                // RFC 5681 §2 duplicate ACK. One that advertises a zero window answers a
                // window probe or reports a full receiver, not a loss: retransmitting into a
                // closed window would be wasted, so it is not counted.
                let verdict =
                    self.cc
                        .on_dup_ack(ack, self.flight(), self.snd_max, self.mss, self.sack_ok);
                out.retransmit = verdict == Verdict::Retransmit;
            }
        }
        if self.sack_ok && !self.sb.is_empty() {
            self.sack_loss(ack, rxt_arrived, out);
        }
        // RFC 6937's DeliveredData: what this ACK says arrived (acknowledged, plus newly
        // SACKed, less what was SACKed before and is now acknowledged).
        let delivered = (u64::from(out.acked) + u64::from(self.sb.sacked()))
            .saturating_sub(u64::from(sacked_before))
            .min(u64::from(u32::MAX)) as u32;
        if self.sack_ok && self.cc.in_recovery {
            // PRR: it paces what recovery sends (CUBIC).
            let pipe = self.pipe();
            self.cc.on_recovery_ack(delivered, pipe, self.mss);
        }
        if self.cc.in_recovery && !was_in_recovery {
            // Recovery begins: the segment at SND.UNA goes now (`out.retransmit`), the
            // other holes as the pipe allows; its ACK will be ambiguous (Karn).
            self.high_rxt = self.snd_una;
            self.rxt_fence = self.snd_max;
            self.probes = 0;
            self.rtt.stop();
            if self.sack_ok {
                self.timer = self.data_timer(now_ns); // the recovery probe (output.rs)
            }
        }
        // The rate sample this ACK completes, and BBR's model, pacing rate and window.
        let lost = out.retransmit || out.lost_retransmit;
        self.on_delivery(delivered, prior_inflight, lost, now_ns);
        if out.acked > 0 {
            // Progress: restart the timer (RFC 6298 §5.3), as a tail loss probe where one
            // applies.
            self.timer = if self.flight() > 0 {
                self.data_timer(now_ns)
            } else {
                Timer::Idle
            };
        }
        // Window update (RFC 9293 §3.10.7.4, SND.WL1/WL2 rule).
        if seq::lt(self.snd_wl1, seg.seq_number)
            || (self.snd_wl1 == seg.seq_number && seq::le(self.snd_wl2, ack))
        {
            self.snd_wnd = new_wnd;
            self.snd_wl1 = seg.seq_number;
            self.snd_wl2 = ack;
            self.max_snd_wnd = self.max_snd_wnd.max(new_wnd);
        }
        true
    }

    /// What both opens do when the handshake completes (the peer's ACK of our SYN-ACK in
    /// SYN-RECEIVED, the SYN-ACK in SYN-SENT), after the send window is set: the window
    /// update's marks (SND.WL1/WL2), the first RTT sample (our timed SYN or SYN-ACK, else
    /// the timestamp echo), the congestion controller's start from it, and RFC 6298 §5.7.
    #[inline(always)]
    pub(super) fn handshake_done(
        &mut self,
        seg_seq: u32,
        ack: u32,
        seg_ts: Option<(u32, u32)>,
        now_ns: u64,
    ) {
        self.snd_wl1 = seg_seq;
        self.snd_wl2 = ack;
        self.timer = Timer::Idle;
        let timed = self.rtt.on_ack(ack, now_ns);
        if !timed {
            self.ts_rtt_sample(seg_ts, now_ns);
        }
        // (The timed segment's is the first sample: SRTT is it, in µs.)
        let srtt = self.rtt.srtt_us;
        self.cc.on_established(srtt, timed.then_some(srtt), now_ns);
        if self.retries > 0 {
            // RFC 6298 §5.7: the handshake timed out, so the RTO is re-initialised to 3 s
            // when data transmission begins (no sample came: Karn).
            self.rtt.reset_after_handshake_timeout();
        }
        self.retries = 0;
        self.last_heard_ns = now_ns;
    }

    /// An RTT sample from the TSecr of an ACK of new data (RFC 7323 §4): on every such
    /// ACK, retransmissions included (the echoed TSval says which transmission it answers,
    /// so Karn's ambiguity does not arise), with the gains divided by the samples expected
    /// per round trip (Appendix G). Used when the timed segment gave no sample: that one is
    /// measured in µs, the timestamp clock in ms.
    pub(super) fn ts_rtt_sample(&mut self, seg_ts: Option<(u32, u32)>, now_ns: u64) {
        let Some((_, tsecr)) = seg_ts else {
            return;
        };
        let ticks = self.ts_now(now_ns).wrapping_sub(tsecr);
        // An echo from the future or older than the longest RTO is no sample.
        if tsecr == 0 || ticks as i32 > (super::rtt::RTO_MAX_MS as i32) || (ticks as i32) < 0 {
            return;
        }
        let per_rtt = (self.flight() / (2 * self.mss.max(1))).max(1);
        let us = (u64::from(ticks) * TS_TICK_NS / 1000).min(u64::from(u32::MAX)) as u32;
        self.rtt.sample_scaled(us, per_rtt);
    }

    /// Takes in the SACK blocks of an acceptable ACK. Returns the highest end of what they
    /// newly reported below HighRxt in SACK recovery: retransmitted data that arrived.
    fn take_sack(&mut self, seg: &TcpRepr<'_>) -> Option<u32> {
        if !self.sack_ok {
            return None;
        }
        let mut rxt_arrived = None;
        for (l, r) in seg.options.sack.iter() {
            if self.sb.add(self.snd_una, self.snd_max, l, r)
                && seq::le(r, self.high_rxt)
                && rxt_arrived.is_none_or(|e| seq::gt(r, e))
            {
                rxt_arrived = Some(r);
            }
        }
        rxt_arrived.filter(|_| self.sack_recovery())
    }

    /// Loss detection from the scoreboard (RFC 8985's rule that data sent later and
    /// delivered makes earlier data lost, with no reordering window): outside recovery,
    /// enter it on any SACK above SND.UNA. In recovery, a
    /// retransmission is lost when data sent after it arrived — new data sent after the last
    /// retransmission (above the fence), or a retransmission that went later in the same
    /// pass (`rxt_arrived`) — and the holes go again.
    fn sack_loss(&mut self, ack: u32, rxt_arrived: Option<u32>, out: &mut Outcome) {
        if self.cc.in_recovery || self.rto_recovery {
            let Some(high) = self.sb.highest() else {
                return;
            };
            let sent_later = if seq::gt(high, self.rxt_fence) {
                Some(self.high_rxt)
            } else {
                rxt_arrived
            };
            if let Some(upto) = sent_later {
                if seq::gt(self.high_rxt, self.snd_una)
                    && self.sb.unsacked_in(self.snd_una, upto) > 0
                {
                    self.high_rxt = self.snd_una;
                    out.lost_retransmit = true;
                }
            }
            return;
        }
        // RFC 8985 marks a segment lost once a segment sent after it is SACKed and a
        // reordering window (a quarter of the minimum RTT) has passed; this TCP keeps no
        // per-segment send times and its timers tick every 10 ms, so the window is zero:
        // the first SACK above SND.UNA starts recovery (docs/design/tcp.md: the cost of
        // reordering).
        if self
            .cc
            .enter_recovery(ack, self.flight(), self.snd_max, self.mss, true)
        {
            out.retransmit = true;
        }
    }
}
