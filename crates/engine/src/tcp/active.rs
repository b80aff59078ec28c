//! The active open (RFC 9293 §3.5, §3.10.7.3): the engine as a TCP client, on the same
//! [`Connection`] as the server's passive open. [`Connection::connect`] makes a connection
//! in SYN-SENT; [`Connection::syn`] is our SYN (MSS 1460, window scale 0 or the shift
//! [`Connection::offer_rcv_shift`] set, SACK-permitted and timestamps offered), timed for the first RTT sample and sent again by the timer
//! (`TimerAction::ResendSynAck` in SYN-SENT, with RFC 6298 backoff: 1 s, 2 s, 4 s) until
//! [`SYN_RETRIES`] are spent (`TimerAction::Expire`: the attempt failed).
//!
//! The segment that answers it is judged by `input_syn_sent`, RFC 9293's "If the state is
//! SYN-SENT" steps:
//! - an ACK that does not acknowledge our SYN (SEG.ACK ≤ ISS or > SND.NXT) is answered with
//!   a RST at SEG.ACK (or dropped if it carries one);
//! - a RST counts only with an acceptable ACK (RFC 5961 §3.2 for SYN-SENT): the peer
//!   refused the connection, the state is Closed and `Outcome::reset` says so;
//! - a SYN-ACK completes the handshake: the peer's MSS (default 536, clamped as for the
//!   server), window scale (used only if it answered our offer), SACK-permitted and
//!   timestamps (in use only if both sides sent them); its window is never scaled (RFC
//!   7323 §2.2). The ACK it is owed is not sent by itself: `ack_pending` is set, so the
//!   request queued before the handshake carries it (an owner with nothing queued sends a
//!   bare ACK). Data or a FIN on the SYN-ACK is not taken (the peer sends it again once
//!   acknowledged; servers do not send it);
//! - a SYN without ACK is a simultaneous open (§3.5 figure 8): the connection moves to
//!   SYN-RECEIVED as if the peer's SYN had reached a LISTEN, and our SYN goes again as a
//!   SYN-ACK (`Reply::SynAck`); the passive side's machinery finishes the handshake.
//!   Anything queued before survives;
//! - anything else is dropped.
//!
//! From ESTABLISHED on, nothing distinguishes the client's connection from the server's:
//! `close` queues the FIN (active close: FIN-WAIT-1, FIN-WAIT-2, TIME-WAIT), or answers
//! the peer's (CLOSE-WAIT, LAST-ACK). TIME-WAIT is not held, as on the server: the owner
//! frees the TCB when both FINs are acknowledged. A client that reuses its ports must then
//! keep a 4-tuple from coming back before the peer's TIME-WAIT for it is over, or rely on
//! the peer accepting a SYN in TIME-WAIT whose ISN is above the old connection's (RFC 1122
//! §4.2.2.13, as Linux does): RFC 6528 ISNs grow with time for a given 4-tuple, so it
//! does. The engine's client (`crate::fetch`) does both: its ports come from a FIFO
//! free-list, so a port is used again only after every other port was.

use super::congestion::{Algorithm, Congestion};
use super::conn::{Connection, Outcome, Reply, DEFAULT_MSS, MIN_MSS, OUR_MSS, TS_OPTION_LEN};
use super::output::Segment;
use super::seq;
use super::state::State;
use super::timer::Timer;
use crate::wire::tcp::ParsedRepr as TcpRepr;

/// SYN retransmissions before a connection attempt fails (the first SYN and three more,
/// 1 + 2 + 4 + 8 s with the RFC 6298 initial RTO: Linux's `tcp_syn_retries` is 6, far
/// longer than a load client should wait).
pub const SYN_RETRIES: u8 = 3;

impl Connection {
    /// A connection in SYN-SENT with our ISS `iss` (active open, RFC 9293 §3.10.1). The
    /// owner sends [`syn`](Self::syn) next; data may be queued at once (it goes when the
    /// handshake completes). Timestamps, SACK and window scaling are offered.
    pub fn connect(iss: u32, now_ns: u64) -> Connection {
        let mut c = Connection::closed();
        c.state = State::SynSent;
        c.iss = iss;
        c.snd_una = iss;
        c.snd_nxt = iss;
        c.snd_max = iss;
        c.send_end = iss.wrapping_add(1);
        c.offer_ws = true;
        c.sack_ok = true;
        c.ts_ok = true;
        c.mss = u32::from(OUR_MSS);
        c.cc = Congestion::new(c.mss, iss, Algorithm::Cubic);
        c.last_heard_ns = now_ns;
        c
    }

    /// Before our SYN: offer `mss` (a path with a larger header, IPv6's:
    /// [`OUR_MSS_V6`](super::conn::OUR_MSS_V6)) and send no larger segment until the
    /// peer's SYN-ACK says.
    pub fn offer_mss(&mut self, mss: u16) {
        if self.state == State::SynSent && self.snd_max == self.iss {
            let mss = mss.max(MIN_MSS as u16);
            self.our_mss = mss;
            self.mss = u32::from(mss);
            self.cc = Congestion::new(self.mss, self.iss, Algorithm::Cubic);
        }
    }

    /// Before our SYN: offer window scale `shift` (RFC 7323 §2; at most 14) instead of
    /// 0, so that a window above 64 KiB can be advertised once the peer's SYN-ACK
    /// answers with the option (if it does not, neither side scales). A receiver of bulk
    /// data wants it: with 64 KiB in flight, a transfer crosses the path's round trip
    /// once per 64 KiB.
    pub fn offer_rcv_shift(&mut self, shift: u8) {
        if self.state == State::SynSent && self.snd_max == self.iss {
            self.rcv_shift = shift.min(14);
        }
    }

    /// Our SYN (first or again): arms the retransmission timer; the first one is timed.
    pub fn syn(&mut self, now_ns: u64) -> Segment {
        self.syn_ack(now_ns)
    }

    /// A segment in SYN-SENT (RFC 9293 §3.10.7.3, "If the state is SYN-SENT").
    pub(super) fn input_syn_sent(&mut self, seg: &TcpRepr<'_>, now_ns: u64) -> Outcome {
        let mut out = Outcome::default();
        let (syn, rst) = (seg.flags.syn, seg.flags.rst);
        // First: the ACK must acknowledge our SYN and nothing beyond it.
        if let Some(ack) = seg.ack_number {
            if !(seq::lt(self.snd_una, ack) && seq::le(ack, self.snd_max)) {
                if !rst {
                    out.bad_ack = true;
                    out.reply = Reply::Reset { seq: ack };
                }
                return out;
            }
        }
        // Second: a RST counts only with an acceptable ACK.
        if rst {
            if seg.ack_number.is_some() {
                self.state = State::Closed;
                self.timer = Timer::Idle;
                out.reset = true;
            }
            return out;
        }
        if !syn {
            return out;
        }
        let Some(ack) = seg.ack_number else {
            return self.simultaneous_open(seg, now_ns);
        };
        // Fourth: SYN-ACK.
        out.ack_seen = true;
        out.established = true;
        self.state = State::Established;
        self.rcv_nxt = seg.seq_number.wrapping_add(1);
        self.last_ack_sent = self.rcv_nxt;
        self.snd_una = ack;
        if seq::lt(self.snd_nxt, ack) {
            self.snd_nxt = ack;
        }
        let o = &seg.options;
        self.offer_ws = o.window_scale.is_some();
        self.snd_shift = o.window_scale.map_or(0, |s| s.min(14));
        if !self.offer_ws {
            self.rcv_shift = 0; // scaling needs both SYNs to carry the option
        }
        self.sack_ok = o.sack_permitted;
        match o.timestamps {
            Some((tsval, _)) => self.ts_recent = tsval,
            None => self.ts_ok = false,
        }
        let mss =
            u32::from(o.mss.unwrap_or(DEFAULT_MSS as u16)).clamp(MIN_MSS, u32::from(self.our_mss));
        self.mss = if self.ts_ok { mss - TS_OPTION_LEN } else { mss };
        self.snd_wnd = u32::from(seg.window_len); // never scaled in a SYN
        self.max_snd_wnd = self.snd_wnd;
        self.cc = Congestion::new(self.mss, self.iss, self.cc.algorithm());
        self.handshake_done(seg.seq_number, ack, o.timestamps, now_ns);
        self.ack_pending = true; // carried by the first data segment, or sent bare
        out
    }

    /// A SYN without ACK in SYN-SENT: both sides opened at once. SYN-RECEIVED, as the
    /// passive open would have it (the options both SYNs offered are in use), the stream
    /// queued so far kept; our SYN goes again with an ACK.
    fn simultaneous_open(&mut self, seg: &TcpRepr<'_>, now_ns: u64) -> Outcome {
        let queued = self.send_end.wrapping_sub(self.iss.wrapping_add(1));
        let fin = self.fin_queued;
        let mut c = Connection::accept_mss(seg, self.iss, now_ns, self.our_mss)
            .with_ts_offset(self.ts_offset)
            .with_congestion(self.cc.algorithm());
        c.send_end = c.send_end.wrapping_add(queued);
        c.fin_queued = fin;
        // Our SYN offered our shift; the SYN-ACK repeats it, and it is in use if the
        // peer's SYN offered scaling too.
        if c.offer_ws {
            c.rcv_shift = self.rcv_shift;
        }
        c.rtt = self.rtt;
        c.retries = self.retries;
        *self = c;
        Outcome {
            reply: Reply::SynAck,
            ..Outcome::default()
        }
    }
}
