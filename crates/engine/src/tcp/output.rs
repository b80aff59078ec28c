//! What a connection sends, and when its timer fires: [`Connection::next_segment`] and
//! [`Connection::on_sent`] (windows, silly-window avoidance, segmentation offload, Karn's
//! timing, the FIN on the last segment, RFC 6675 SACK recovery: holes first, within the
//! pipe), the segments answering input (ACK, SYN-ACK, fast retransmit) and
//! [`Connection::on_timer`] (RFC 6298 retransmission, RFC 8985 tail loss probe, RFC 9293
//! persist, the stall abort). The owner turns a [`Segment`] into a frame: the header
//! comes from [`Connection::header`], the payload bytes from its own copy of the stream.

use super::conn::Connection;
use super::seq;
use super::state::State;
use super::timer::Timer;
use crate::wire::tcp::{Flags, Repr};

/// One segment to send: which control bits, which sequence range of the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// First sequence number.
    pub seq: u32,
    /// Payload bytes (stream bytes `[seq, seq + len)`).
    pub len: u32,
    /// SYN (with our MSS and, if the peer offered one, window-scale options).
    pub syn: bool,
    /// FIN after the payload.
    pub fin: bool,
    /// A window probe: one octet past a closed window (does not advance SND.NXT).
    pub probe: bool,
}

impl Segment {
    /// An ACK with no data at `seq`.
    pub const fn ack(seq: u32) -> Segment {
        Segment {
            seq,
            len: 0,
            syn: false,
            fin: false,
            probe: false,
        }
    }
}

/// What the timer asks of the owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimerAction {
    /// Nothing due.
    None,
    /// Send the SYN-ACK again ([`Connection::syn_ack`]); in SYN-SENT, our SYN again
    /// ([`Connection::syn`]).
    ResendSynAck,
    /// Retransmission timeout: SND.NXT went back to SND.UNA (or, with SACK, everything
    /// outstanding became holes); send with [`Connection::next_segment`] as usual.
    Retransmit,
    /// Send this window probe, then call [`Connection::on_sent`] if it went out.
    Probe(Segment),
    /// Send this tail loss probe (new data, or the last segment again), then call
    /// [`Connection::on_sent`] if it went out.
    LossProbe(Segment),
    /// Give up: send a RST at this sequence number and free the TCB.
    Abort {
        /// Sequence number of the RST.
        seq: u32,
    },
    /// The handshake never completed: free the TCB silently (in SYN-SENT: the connection
    /// attempt failed).
    Expire,
}

/// SYN-ACK retransmissions before a half-open connection is dropped.
pub const SYN_ACK_RETRIES: u8 = 3;
/// Added to two smoothed RTTs for the loss probe timeout: on a LAN two RTTs are well
/// under a millisecond, and a peer's ACK can be that late for reasons of its own (its
/// scheduler, interrupt coalescing). Linux adds the same (`TCP_TIMEOUT_MIN`, 2 jiffies).
pub const PTO_SLACK_NS: u64 = 2_000_000;
/// The shortest wait before a retransmission in recovery counts as lost: a peer's ACK may
/// be that late for reasons of its own even on a sub-millisecond path (its scheduler,
/// interrupt coalescing, the timestamp clock's 1 ms ticks in SRTT).
pub const RACK_MIN_NS: u64 = 1_000_000;
/// The longest a peer may delay its ACK of a lone segment (RFC 8985 §7.2's WCDelAckT).
pub const DELACK_MAX_NS: u64 = 200_000_000;

impl Connection {
    /// The SYN-ACK (first or again): arms the retransmission timer.
    /// The first one is timed: the ACK that completes the handshake gives the first RTT
    /// sample (as Linux takes one), so the first data already runs under a measured RTO
    /// and may be probed; a SYN-ACK sent again is not (Karn).
    pub fn syn_ack(&mut self, now_ns: u64) -> Segment {
        if self.snd_max == self.iss && self.retries == 0 {
            self.rtt.start(self.iss.wrapping_add(1), now_ns);
        } else {
            self.rtt.stop();
        }
        self.syn_ack_sent(now_ns)
    }

    /// The bookkeeping of a SYN-ACK sent at `now_ns`, untimed: a SYN cookie's TCB is
    /// made when the ACK returns, long after its SYN-ACK went (the ACK's timestamp echo,
    /// if any, gives the sample instead).
    pub fn syn_ack_sent(&mut self, now_ns: u64) -> Segment {
        self.snd_nxt = self.iss.wrapping_add(1);
        self.snd_max = self.snd_nxt;
        self.timer = Timer::retransmit(now_ns, self.rtt.rto_ns());
        Segment {
            seq: self.iss,
            len: 0,
            syn: true,
            fin: false,
            probe: false,
        }
    }

    /// An ACK carrying no data, at SND.NXT.
    pub fn ack_segment(&self) -> Segment {
        Segment::ack(self.snd_nxt)
    }

    /// The header of `seg` from port `local_port`, acknowledging RCV.NXT and advertising
    /// the window of `rx_space` free bytes (scaled by our shift once it is in use), with timestamps (TSval of `now_ns`) when they
    /// are in use. Building it pays the owed ACK.
    pub fn header(
        &mut self,
        seg: &Segment,
        local_port: u16,
        peer_port: u16,
        rx_space: u32,
        now_ns: u64,
    ) -> Repr {
        self.ack_pending = false;
        self.last_ack_sent = self.rcv_nxt;
        // Only the active open's first SYN acknowledges nothing (RFC 9293 §3.10.1).
        let ack = self.state != State::SynSent;
        Repr {
            src_port: local_port,
            dst_port: peer_port,
            seq_number: seg.seq,
            ack_number: ack.then_some(self.rcv_nxt),
            flags: Flags {
                fin: seg.fin,
                syn: seg.syn,
                rst: false,
                psh: seg.fin || seg.len > 0,
                ack,
            },
            // A SYN's window is never scaled (RFC 7323 §2.2).
            window_len: if seg.syn {
                rx_space.min(65_535) as u16
            } else {
                (self.rcv_wnd(rx_space) >> self.rcv_shift) as u16
            },
            max_seg_size: seg.syn.then_some(self.our_mss),
            window_scale: (seg.syn && self.offer_ws).then_some(self.rcv_shift),
            sack_permitted: seg.syn && self.sack_ok,
            timestamps: self.ts_ok.then(|| (self.ts_now(now_ns), self.ts_recent)),
        }
    }

    /// The next segment of new (or gone-back) data the windows allow, with the FIN on the
    /// last one when the application has closed; `None` when nothing may go now. One frame
    /// may carry up to `frame_max` payload bytes when that exceeds the MSS (segmentation
    /// offload: whole segments, cut by the device). Arms the persist timer when a closed
    /// window holds data back. Call [`on_sent`](Self::on_sent) once the segment is out.
    ///
    /// With pacing (BBR), a segment is held back until the pacing clock allows it (less
    /// [`PACING_SLACK_NS`](super::PACING_SLACK_NS)): `None`, and
    /// [`pacing_deadline`](Self::pacing_deadline) says when to ask again; an offloaded
    /// frame carries at most BBR's TSO goal.
    pub fn next_segment(&mut self, now_ns: u64, frame_max: u32) -> Option<Segment> {
        self.paced = false;
        let seg = self.next_segment_unpaced(now_ns, frame_max)?;
        if self.pace_holds(now_ns) {
            return None;
        }
        Some(seg)
    }

    fn next_segment_unpaced(&mut self, now_ns: u64, frame_max: u32) -> Option<Segment> {
        if !self.state.is_synchronized() {
            return None;
        }
        let mss = self.mss;
        let mut seg_max = if frame_max > mss {
            frame_max / mss * mss
        } else {
            mss
        };
        if let Some(goal) = self.cc.tso_goal(mss) {
            seg_max = seg_max.min(goal.max(mss));
        }
        let sack_recovery = self.sack_recovery();
        if sack_recovery {
            // RFC 6675 §5 NextSeg rule 1: the holes first.
            if let Some(s) = self.hole_segment(seg_max) {
                return Some(s);
            }
        } else if seq::lt(self.snd_nxt, self.snd_max) {
            // Going back after a timeout: what the peer SACKed is not sent again.
            if let Some(end) = self.sb.block_end_at(self.snd_nxt) {
                self.snd_nxt = end;
            }
        }
        let end = self.send_end;
        let avail = if seq::lt(self.snd_nxt, end) {
            end.wrapping_sub(self.snd_nxt)
        } else {
            0
        };
        // The FIN is due when the application closed and SND.NXT has not passed it (it
        // goes again after a timeout's go-back).
        let fin_due = self.fin_queued && seq::le(self.snd_nxt, end);
        if avail == 0 && !fin_due {
            return None;
        }
        let flight = self.flight();
        // In SACK recovery the congestion window bounds the pipe, not the flight.
        let used = if sack_recovery { self.pipe() } else { flight };
        let room = self
            .cc
            .cwnd
            .saturating_sub(used)
            .min(self.snd_wnd.saturating_sub(flight));
        if avail > 0 && room == 0 {
            if self.snd_wnd == 0 && !self.timer.is_armed() {
                // Zero window: arm the persist timer (probes go out on the timer path).
                self.timer = Timer::persist(now_ns, self.rtt.rto_ns());
            }
            return None;
        }
        if avail > room && seg_max > mss {
            // More queued than the windows let go: an offloaded frame carries at most a
            // quarter of the window, so one lost frame leaves segments after it to draw the
            // duplicate ACKs and SACKs that repair it without a timeout.
            let quarter = (self.cc.cwnd.min(self.snd_wnd) / 4).max(2 * mss);
            seg_max = seg_max.min(quarter / mss * mss);
        }
        let mut len = avail.min(room).min(seg_max);
        if let Some(b) = self.sb.next_block_after(self.snd_nxt) {
            // Going back: stop at what the peer already holds.
            len = len.min(b.wrapping_sub(self.snd_nxt));
        }
        if len > mss && len < avail {
            // An offloaded frame that does not end the stream carries whole segments
            // only: its tail would be a silly small segment.
            len -= len % mss;
        }
        // Sender-side silly window avoidance (RFC 9293 §3.8.6.2.1): hold back a small
        // segment while data is in flight unless it ends what is queued.
        if len < mss
            && len < avail
            && flight > 0
            && self.sb.next_block_after(self.snd_nxt).is_none()
        {
            return None;
        }
        Some(Segment {
            seq: self.snd_nxt,
            len,
            syn: false,
            fin: fin_due && len == avail,
            probe: false,
        })
    }

    /// The end of the data sent (SND.MAX, less our FIN if it was sent).
    fn data_end(&self) -> u32 {
        if self.state.fin_sent() && seq::gt(self.snd_max, self.send_end) {
            self.send_end
        } else {
            self.snd_max
        }
    }

    /// In SACK recovery, the end of what is deemed lost: every octet not SACKed below the
    /// highest SACKed one (data sent later has arrived; RFC 8985's rule without its
    /// reordering window: see docs/design/tcp.md), and the segment at SND.UNA; after a timeout,
    /// everything that was outstanding (the FIN included).
    fn lost_end(&self) -> u32 {
        let data_end = self.data_end();
        let cap = |x: u32| if seq::lt(x, data_end) { x } else { data_end };
        let mut end = cap(self.snd_una.wrapping_add(self.mss));
        if let Some(h) = self.sb.highest() {
            if seq::gt(cap(h), end) {
                end = cap(h);
            }
        }
        if self.rto_recovery && seq::gt(self.cc.recover, end) {
            end = if seq::lt(self.cc.recover, self.snd_max) {
                self.cc.recover
            } else {
                self.snd_max
            };
        }
        // Only what was sent since the last go-back (a window probe sets SND.NXT back).
        if seq::lt(self.snd_nxt, end) {
            self.snd_nxt
        } else {
            end
        }
    }

    /// RFC 6675 §4's pipe: octets deemed in the network — sent beyond what is lost, plus
    /// the lost ones retransmitted and not yet SACKed.
    pub(super) fn pipe(&self) -> u32 {
        let lost_end = self.lost_end();
        // (A SACKed FIN octet lies beyond the data: not in flight either.)
        let beyond = self.sb.unsacked_in(lost_end, self.snd_max);
        let rxt_to = if seq::lt(self.high_rxt, lost_end) {
            self.high_rxt
        } else {
            lost_end
        };
        beyond.saturating_add(self.sb.unsacked_in(self.snd_una, rxt_to))
    }

    /// The next hole to retransmit in SACK recovery, if the pipe leaves room for it.
    fn hole_segment(&self, seg_max: u32) -> Option<Segment> {
        let from = if seq::gt(self.high_rxt, self.snd_una) {
            self.high_rxt
        } else {
            self.snd_una
        };
        let (start, stop) = self.sb.next_hole(from, self.lost_end())?;
        // Our FIN's octet follows the data: a hole that reaches past it carries the FIN.
        let fin_out = self.state.fin_sent() && seq::gt(self.snd_max, self.send_end);
        let data_stop = if fin_out && seq::gt(stop, self.send_end) {
            self.send_end
        } else {
            stop
        };
        let hole = data_stop.wrapping_sub(start);
        let room = self.cc.cwnd.saturating_sub(self.pipe());
        if room < hole.min(self.mss).max(1) {
            return None;
        }
        let mut len = hole.min(seg_max).min(room.max(self.mss));
        if len > self.mss && len < hole {
            len -= len % self.mss;
        }
        Some(Segment {
            seq: start,
            len,
            syn: false,
            fin: fin_out && start.wrapping_add(len) == self.send_end,
            probe: false,
        })
    }

    /// The loss probe timeout, when one applies: SACK in use and a round-trip sample
    /// taken.
    ///
    /// Outside recovery it is RFC 8985 §7.2's tail loss probe, 2·SRTT + 2 ms as in Linux
    /// (a lone segment allows for the peer's delayed ACK), not after a timeout until
    /// progress.
    ///
    /// In SACK recovery it stands in for RFC 8985's reordering timer, which needs
    /// per-segment send times this TCP does not keep: a peer holding out-of-order data
    /// acknowledges every segment at once (RFC 5681 §4.2), so a retransmission (or new data
    /// sent in recovery) unanswered for SRTT plus RACK's reordering window (SRTT/4; at
    /// least [`RACK_MIN_NS`]) is lost. Waiting two round trips and 2 ms instead cost most of
    /// a lossy download's time (measured at 10% loss: 17 such waits per 1 MiB).
    ///
    /// A probe whose answer was lost (or that was lost itself) is followed by another,
    /// each waiting twice as long, until that would be the RTO's turn: one lost packet of
    /// the probe's round trip then costs milliseconds, not the RTO's 200 and more (at 10%
    /// loss most timeouts came after a single unanswered probe).
    fn pto_ns(&self) -> Option<u64> {
        if !self.sack_ok || self.rtt.srtt_us == 0 {
            return None;
        }
        let recovery = self.sack_recovery();
        if !recovery && self.retries > 0 {
            return None;
        }
        let srtt = u64::from(self.rtt.srtt_us) * 1000;
        let pto = if recovery {
            (srtt + srtt / 4).max(RACK_MIN_NS)
        } else if self.flight() <= self.mss {
            // A lone segment may wait for the peer's delayed ACK.
            (2 * srtt + PTO_SLACK_NS).max(srtt * 3 / 2 + DELACK_MAX_NS)
        } else {
            2 * srtt + PTO_SLACK_NS
        };
        let rto = self.rtt.rto_ns();
        if self.probes == 0 {
            return Some(pto.min(rto));
        }
        let pto = pto << self.probes.min(16);
        (pto < rto).then_some(pto)
    }

    /// The timer for data in flight: a tail loss probe where one applies, else the
    /// retransmission timeout.
    pub(super) fn data_timer(&self, now_ns: u64) -> Timer {
        match self.pto_ns() {
            Some(pto) => Timer::loss_probe(now_ns, pto),
            None => Timer::retransmit(now_ns, self.rtt.rto_ns()),
        }
    }

    /// `seg` (from [`next_segment`](Self::next_segment), [`syn_ack`](Self::syn_ack), a
    /// retransmission or a probe) went out at `now_ns`: advance SND.NXT/SND.MAX, start
    /// timing, arm the retransmission timer, move to FIN-WAIT-1 or LAST-ACK on a FIN.
    pub fn on_sent(&mut self, seg: &Segment, now_ns: u64) {
        if seg.syn {
            return; // `syn_ack` did the bookkeeping
        }
        let idle = self.flight() == 0;
        let seg_end = seg.seq.wrapping_add(seg.len);
        self.on_sent_model(seg.seq, seg_end, self.snd_max, idle, now_ns);
        if seg.probe {
            if seq::gt(seg_end, self.snd_max) {
                self.snd_max = seg_end;
            }
            return;
        }
        if seg.seq != self.snd_nxt {
            // A retransmission of older data (fast retransmit, a hole, a loss probe).
            let end = seg
                .seq
                .wrapping_add(seg.len)
                .wrapping_add(u32::from(seg.fin));
            if seq::gt(end, self.high_rxt) {
                self.high_rxt = end;
            }
            self.rxt_fence = self.snd_max;
            self.rtt.retransmitted(seg.seq);
            if seg.fin {
                self.state = self.state.after_fin_sent();
            }
            // In recovery, or as a loss probe: the next probe runs from this
            // retransmission on (twice the wait after a probe); else the RTO keeps running.
            let probing = self.sack_recovery() || self.probes > 0;
            if let (true, Some(pto)) = (probing, self.pto_ns()) {
                self.timer = Timer::loss_probe(now_ns, pto);
            } else if !self.timer.is_armed() {
                self.timer = Timer::retransmit(now_ns, self.rtt.rto_ns());
            }
            return;
        }
        if !self.rtt.timing() && seg.len > 0 && seq::gt(seg_end, self.snd_max) {
            // Time this segment's first new octets: never sent before, so the ACK that
            // covers them is unambiguous (Karn) even when the segment begins with
            // retransmitted data after a timeout. Up to one MSS of them: an offloaded frame
            // is many segments, and one loss among them would void a sample that waited for
            // all.
            let first_new = if seq::gt(self.snd_max, seg.seq) {
                self.snd_max
            } else {
                seg.seq
            };
            let until = first_new.wrapping_add(seg_end.wrapping_sub(first_new).min(self.mss));
            self.rtt.start(until, now_ns);
        }
        self.snd_nxt = seg_end.wrapping_add(u32::from(seg.fin));
        if seg.fin {
            self.state = self.state.after_fin_sent();
        }
        if seq::gt(self.snd_nxt, self.snd_max) {
            self.snd_max = self.snd_nxt;
        }
        // RFC 6298 §5.1: data in flight runs under the retransmission timer; RFC 8985
        // §7.2: a tail loss probe is rescheduled after each new transmission. A persist
        // timer left from a closed window is replaced: its deadline belongs to the probe.
        if let Some(pto) = self.pto_ns() {
            self.timer = Timer::loss_probe(now_ns, pto);
        } else if !matches!(self.timer, Timer::Retransmit { .. }) {
            self.timer = Timer::retransmit(now_ns, self.rtt.rto_ns());
        }
    }

    /// One segment at SND.UNA (fast retransmit, NewReno partial ACK): up to one MSS of
    /// what is unacknowledged, with the FIN if it was sent and comes next.
    pub fn retransmit_segment(&self) -> Option<Segment> {
        // Only what was sent: up to SND.MAX (less our FIN, which is not data).
        let fin_out = self.state.fin_sent() && seq::gt(self.snd_max, self.send_end);
        let end = if fin_out { self.send_end } else { self.snd_max };
        let avail = if seq::lt(self.snd_una, end) {
            end.wrapping_sub(self.snd_una)
        } else {
            0
        };
        let mut len = avail.min(self.mss);
        if let Some(b) = self.sb.next_block_after(self.snd_una) {
            len = len.min(b.wrapping_sub(self.snd_una)); // not into what the peer holds
        }
        let fin = fin_out && self.snd_una.wrapping_add(len) == self.send_end;
        if len == 0 && !fin {
            return None;
        }
        Some(Segment {
            seq: self.snd_una,
            len,
            syn: false,
            fin,
            probe: false,
        })
    }

    /// The timer at `now_ns`: what is due. `stall_ns` bounds how long a synchronized peer
    /// may make no progress at all; `max_retries` bounds retransmissions of one segment.
    pub fn on_timer(&mut self, now_ns: u64, stall_ns: u64, max_retries: u8) -> TimerAction {
        match self.state {
            State::Closed | State::TimeWait => TimerAction::None,
            State::SynReceived | State::SynSent => {
                let limit = if self.state == State::SynSent {
                    super::active::SYN_RETRIES
                } else {
                    SYN_ACK_RETRIES
                };
                if !self.timer.expired(now_ns) {
                    TimerAction::None
                } else if self.retries >= limit {
                    TimerAction::Expire
                } else {
                    self.retries += 1;
                    self.rtt.backoff();
                    TimerAction::ResendSynAck
                }
            }
            _ => {
                // No progress from the peer at all (zero window, no ACKs, FIN-WAIT-2).
                if now_ns.saturating_sub(self.last_heard_ns) >= stall_ns {
                    return TimerAction::Abort { seq: self.snd_nxt };
                }
                if self.timer.expired(now_ns) {
                    self.expire(now_ns, max_retries)
                } else {
                    TimerAction::None
                }
            }
        }
    }

    /// RTO expiry (RFC 6298 §5.4–5.7) or the persist timer (zero window).
    fn expire(&mut self, now_ns: u64, max_retries: u8) -> TimerAction {
        if self.snd_wnd == 0 && seq::lt(self.snd_una, self.send_end) {
            // Persist (RFC 9293 §3.8.6.1): the peer's window is closed and data waits.
            // Probe it with one octet, the first unacknowledged one, and back off. A probe
            // is not a retransmission: it never counts towards aborting (a peer that keeps
            // its window closed is cut off by the stall timeout instead). SND.NXT goes back
            // to SND.UNA, so whatever was sent beyond the closed window, and the probe octet
            // if the peer refused it, goes out again as full segments once the window
            // opens; if the peer took the octet, its ACK moves SND.UNA past it.
            self.rtt.backoff();
            self.timer = Timer::persist(now_ns, self.rtt.rto_ns());
            self.snd_nxt = self.snd_una;
            self.rto_recovery = false;
            self.rtt.stop();
            return TimerAction::Probe(Segment {
                seq: self.snd_una,
                len: 1,
                syn: false,
                fin: false,
                probe: true,
            });
        }
        if self.flight() == 0 {
            self.timer = Timer::Idle;
            return TimerAction::None;
        }
        if matches!(self.timer, Timer::LossProbe { .. }) {
            return self.loss_probe(now_ns);
        }
        if self.retries >= max_retries {
            return TimerAction::Abort { seq: self.snd_nxt };
        }
        self.retries += 1;
        self.cc.on_timeout(self.flight(), self.snd_max, self.mss);
        self.rtt.stop();
        self.rtt.backoff();
        self.probes = 0;
        if self.retries > 1 {
            // Twice without progress: the peer may have dropped what it SACKed (RFC 2018
            // §8 lets it renege); send everything again.
            self.sb.clear();
        }
        if self.sack_ok {
            // Everything outstanding is lost (RFC 8985 §6.3): it goes again as holes from
            // SND.UNA, skipping what the peer SACKed, within a window that starts at one
            // segment, and the SACKs that follow still find lost retransmissions, where
            // going back to SND.UNA would wait for another (doubled) timeout.
            self.rto_recovery = true;
            self.high_rxt = self.snd_una;
            self.rxt_fence = self.snd_max;
        } else {
            self.snd_nxt = self.snd_una; // go back: resend from the first unacknowledged byte
        }
        self.timer = Timer::retransmit(now_ns, self.rtt.rto_ns());
        TimerAction::Retransmit
    }

    /// The loss probe fired. Outside recovery (RFC 8985 §7.3): one segment of new data if
    /// the peer's window takes it, else the last segment sent again, to draw an ACK whose
    /// SACK shows what was lost. In SACK recovery: the first hole again (see
    /// [`pto_ns`](Self::pto_ns)). The retransmission timer runs behind it.
    fn loss_probe(&mut self, now_ns: u64) -> TimerAction {
        self.probes = self.probes.saturating_add(1);
        self.timer = Timer::retransmit(now_ns, self.rtt.rto_ns());
        if self.sack_recovery() {
            // In recovery: every retransmission still unanswered is lost; the holes go
            // again from SND.UNA, the first one now.
            self.high_rxt = self.snd_una;
            if let Some((start, stop)) = self.sb.next_hole(self.snd_una, self.lost_end()) {
                let fin_out = self.state.fin_sent() && seq::gt(self.snd_max, self.send_end);
                let data_stop = if fin_out && seq::gt(stop, self.send_end) {
                    self.send_end
                } else {
                    stop
                };
                let len = data_stop.wrapping_sub(start).min(self.mss);
                return TimerAction::LossProbe(Segment {
                    seq: start,
                    len,
                    syn: false,
                    fin: fin_out && start.wrapping_add(len) == self.send_end,
                    probe: false,
                });
            }
        }
        let end = self.send_end;
        let avail = if seq::lt(self.snd_nxt, end) {
            end.wrapping_sub(self.snd_nxt)
        } else {
            0
        };
        let wnd_room = self.snd_wnd.saturating_sub(self.flight());
        if avail > 0 && wnd_room > 0 && self.snd_nxt == self.snd_max {
            let len = avail.min(self.mss).min(wnd_room);
            return TimerAction::LossProbe(Segment {
                seq: self.snd_nxt,
                len,
                syn: false,
                fin: self.fin_queued && len == avail,
                probe: false,
            });
        }
        let data_end = self.data_end();
        let fin = self.state.fin_sent() && seq::gt(self.snd_max, self.send_end);
        let len = data_end.wrapping_sub(self.snd_una).min(self.mss);
        if len == 0 && !fin {
            return TimerAction::None;
        }
        TimerAction::LossProbe(Segment {
            seq: data_end.wrapping_sub(len),
            len,
            syn: false,
            fin,
            probe: false,
        })
    }
}
