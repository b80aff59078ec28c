//! What a connection sends, and when its timer fires: [`Connection::next_segment`] and
//! [`Connection::on_sent`] (windows, silly-window avoidance, segmentation offload, Karn's
//! timing, the FIN on the last segment), the segments answering input (ACK, SYN-ACK,
//! fast retransmit) and [`Connection::on_timer`] (RFC 6298 retransmission, RFC 9293
//! persist, the stall abort). The owner turns a [`Segment`] into a frame: the header
//! comes from [`Connection::header`], the payload bytes from its own copy of the stream.

use super::conn::{Connection, OUR_MSS};
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
    /// Send the SYN-ACK again ([`Connection::syn_ack`]).
    ResendSynAck,
    /// Retransmission timeout: SND.NXT went back to SND.UNA; send with
    /// [`Connection::next_segment`] as usual.
    Retransmit,
    /// Send this window probe, then call [`Connection::on_sent`] if it went out.
    Probe(Segment),
    /// Give up: send a RST at this sequence number and free the TCB.
    Abort {
        /// Sequence number of the RST.
        seq: u32,
    },
    /// The handshake never completed: free the TCB silently.
    Expire,
}

/// SYN-ACK retransmissions before a half-open connection is dropped.
pub const SYN_ACK_RETRIES: u8 = 3;

impl Connection {
    /// The SYN-ACK (first or again): arms the retransmission timer.
    pub fn syn_ack(&mut self, now_ns: u64) -> Segment {
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
    /// the window of `rx_space` free bytes. Building it pays the owed ACK.
    pub fn header(
        &mut self,
        seg: &Segment,
        local_port: u16,
        peer_port: u16,
        rx_space: u32,
    ) -> Repr {
        self.ack_pending = false;
        Repr {
            src_port: local_port,
            dst_port: peer_port,
            seq_number: seg.seq,
            ack_number: Some(self.rcv_nxt),
            flags: Flags {
                fin: seg.fin,
                syn: seg.syn,
                rst: false,
                psh: seg.fin || seg.len > 0,
                ack: true,
            },
            window_len: Connection::rcv_wnd(rx_space) as u16,
            max_seg_size: seg.syn.then_some(OUR_MSS),
            window_scale: (seg.syn && self.offer_ws).then_some(0),
        }
    }

    /// The next segment of new (or gone-back) data the windows allow, with the FIN on the
    /// last one when the application has closed; `None` when nothing may go now. One frame
    /// may carry up to `frame_max` payload bytes when that exceeds the MSS (segmentation
    /// offload: whole segments, cut by the device). Arms the persist timer when a closed
    /// window holds data back. Call [`on_sent`](Self::on_sent) once the segment is out.
    pub fn next_segment(&mut self, now_ns: u64, frame_max: u32) -> Option<Segment> {
        if !self.state.is_synchronized() {
            return None;
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
        let wnd = self.cc.cwnd.min(self.snd_wnd);
        let flight = self.flight();
        if avail > 0 && flight >= wnd {
            if self.snd_wnd == 0 && !self.timer.is_armed() {
                // Zero window: arm the persist timer (probes go out on the timer path).
                self.timer = Timer::persist(now_ns, self.rtt.rto_ns());
            }
            return None;
        }
        let room = wnd.saturating_sub(flight);
        let mss = self.mss;
        let seg_max = if frame_max > mss {
            frame_max / mss * mss
        } else {
            mss
        };
        let mut len = avail.min(room).min(seg_max);
        if len > mss && len < avail {
            // An offloaded frame that does not end the stream carries whole segments
            // only: its tail would be a silly small segment.
            len -= len % mss;
        }
        // Sender-side silly window avoidance (RFC 9293 §3.8.6.2.1): hold back a small
        // segment while data is in flight unless it ends what is queued.
        if len < mss && len < avail && flight > 0 {
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

    /// `seg` (from [`next_segment`](Self::next_segment), [`syn_ack`](Self::syn_ack), a
    /// retransmission or a probe) went out at `now_ns`: advance SND.NXT/SND.MAX, start
    /// timing, arm the retransmission timer, move to FIN-WAIT-1 or LAST-ACK on a FIN.
    pub fn on_sent(&mut self, seg: &Segment, now_ns: u64) {
        if seg.syn {
            return; // `syn_ack` did the bookkeeping
        }
        if seg.probe {
            let probe_end = seg.seq.wrapping_add(seg.len);
            if seq::gt(probe_end, self.snd_max) {
                self.snd_max = probe_end;
            }
            return;
        }
        if seg.seq != self.snd_nxt {
            // A retransmission of older data (fast retransmit at SND.UNA): nothing moves.
            if seg.fin {
                self.state = self.state.after_fin_sent();
            }
            return;
        }
        let seg_end = seg.seq.wrapping_add(seg.len);
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
        // RFC 6298 §5.1: data in flight runs under the retransmission timer. A persist
        // timer left from a closed window is replaced: its deadline belongs to the probe.
        if !matches!(self.timer, Timer::Retransmit { .. }) {
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
        let len = avail.min(self.mss);
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
            State::SynReceived => {
                if !self.timer.expired(now_ns) {
                    TimerAction::None
                } else if self.retries >= SYN_ACK_RETRIES {
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
        if self.retries >= max_retries {
            return TimerAction::Abort { seq: self.snd_nxt };
        }
        self.retries += 1;
        self.cc.on_timeout(self.flight(), self.snd_max, self.mss);
        self.rtt.stop();
        self.rtt.backoff();
        self.snd_nxt = self.snd_una; // go back: resend from the first unacknowledged byte
        self.timer = Timer::retransmit(now_ns, self.rtt.rto_ns());
        TimerAction::Retransmit
    }
}
