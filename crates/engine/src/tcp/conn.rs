//! The TCP connection as a state machine: the sequence variables, the [`State`], the
//! congestion controller, the RTT estimator and the timer of one connection, and its input
//! function, less its ACK step (in [`super::ack`]). It sees no frame, no buffer and no
//! HTTP: a received segment comes in as a [`TcpRepr`] with the application's free receive
//! space, and an [`Outcome`] says what the owner must do (reply, store payload bytes,
//! retransmit, free the TCB). Output and timers are in [`super::output`].
//!
//! The application's side of the stream is a pair of numbers: how far it has queued data
//! ([`Connection::queue`], the end of the send stream) and whether a FIN follows it
//! ([`Connection::close`]). The bytes themselves stay with the owner, which regenerates
//! any sequence range on demand (there is no retransmission queue: responses are
//! immutable).
//!
//! Heads up! Read RFC 9293 §3.10.7 before changing [`Connection::input`]; its steps are
//! named after the RFC's "first" to "eighth".

use super::congestion::{Algorithm, Congestion};
use super::rate::Rate;
use super::rtt::RttEstimator;
use super::sack::Scoreboard;
use super::seq;
use super::state::State;
use super::timer::Timer;
use crate::wire::tcp::ParsedRepr as TcpRepr;

/// Our receive MSS for a 1500-byte MTU.
pub const OUR_MSS: u16 = 1460;
/// Our MSS over IPv6 on a 1500-byte MTU (its header is 40 bytes, IPv4's 20).
pub const OUR_MSS_V6: u16 = 1440;
/// The send MSS when the peer's SYN offers none (RFC 9293 §3.7.1).
pub const DEFAULT_MSS: u32 = 536;
/// The smallest send MSS we accept from a peer (a smaller one is raised to it).
pub const MIN_MSS: u32 = 64;
/// Bytes the timestamps option takes in every segment once negotiated (NOP, NOP, kind,
/// length, TSval, TSecr): the payload of a full segment is the MSS less these.
pub const TS_OPTION_LEN: u32 = 12;
/// Nanoseconds per tick of the timestamp clock (RFC 7323 §5.4 asks for 1 ms to 1 s).
pub const TS_TICK_NS: u64 = 1_000_000;
/// At most one challenge ACK per connection per this interval (RFC 5961 §7; Linux's
/// `tcp_invalid_ratelimit` default).
pub const CHALLENGE_ACK_INTERVAL_NS: u64 = 500_000_000;

/// What the owner must send in answer to a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reply {
    /// Nothing now (an ACK may be owed: see [`Connection::ack_pending`]).
    #[default]
    None,
    /// An ACK now.
    Ack,
    /// The SYN-ACK again (the peer retransmitted its SYN).
    SynAck,
    /// A bare RST with this sequence number (an unacceptable ACK in SYN-RECEIVED).
    Reset {
        /// Its sequence number.
        seq: u32,
    },
}

/// What a received segment did, for the owner to act on (in this order: store `deliver`,
/// send `reply`, `retransmit`, then free the TCB if `state().is_done()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Outcome {
    /// What to send now.
    pub reply: Reply,
    /// Payload bytes `[start, end)` of the segment to append to the receive buffer: new
    /// in-order data that fits the space the owner gave.
    pub deliver: Option<(usize, usize)>,
    /// Retransmit the segment at SND.UNA (fast retransmit, SACK loss detection or a
    /// NewReno partial ACK).
    pub retransmit: bool,
    /// The handshake completed with this segment.
    pub established: bool,
    /// The peer's FIN arrived with this segment.
    pub fin: bool,
    /// Bytes of our stream this segment acknowledged for the first time.
    pub acked: u32,
    /// The segment's ACK was processed (it passed the sequence, RST and SYN checks): the
    /// owner may learn the peer's link address from it.
    pub ack_seen: bool,
    /// The peer reset the connection (the state is now Closed).
    pub reset: bool,
    /// Its acknowledgment number was too old to be believed (RFC 5961 §5: below
    /// SND.UNA − MAX.SND.WND): discarded, answered with an ACK.
    pub bad_ack: bool,
    /// Counted as out of window (the reply is an ACK unless it carried RST).
    pub out_of_window: bool,
    /// Answered with a challenge ACK (RFC 5961 §3.2, §4).
    pub challenge_ack: bool,
    /// Data not at RCV.NXT, dropped (no reassembly: requests are small).
    pub out_of_order: bool,
    /// In SACK recovery, a retransmission was found lost: the holes go again.
    pub lost_retransmit: bool,
    /// A challenge ACK (or the ACK answering a too-old ACK) was due but withheld: one went
    /// out less than [`CHALLENGE_ACK_INTERVAL_NS`] ago.
    pub challenge_limited: bool,
    /// Dropped by PAWS (RFC 7323 §5.3): its TSval is older than TS.Recent (an old
    /// duplicate, or a forgery); answered with an ACK under the challenge-ACK limit.
    pub paws_rejected: bool,
}

/// One TCP connection's state (the TCP half of a TCB).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Connection {
    pub(super) state: State,
    /// Initial send sequence number.
    pub(super) iss: u32,
    /// Oldest unacknowledged sequence number.
    pub(super) snd_una: u32,
    /// Next sequence number to send.
    pub(super) snd_nxt: u32,
    /// Highest sequence number sent (SND.NXT goes back after a timeout).
    pub(super) snd_max: u32,
    /// Peer's receive window in bytes (scaled).
    pub(super) snd_wnd: u32,
    /// Segment sequence number of the last window update.
    pub(super) snd_wl1: u32,
    /// Segment ack number of the last window update.
    pub(super) snd_wl2: u32,
    /// The largest window the peer has advertised (RFC 5961 §5's MAX.SND.WND).
    pub(super) max_snd_wnd: u32,
    /// Peer's window scale shift (0 when it sent none).
    pub(super) snd_shift: u8,
    /// We send a window-scale option on our SYN or SYN-ACK: on the passive side, the
    /// peer's SYN offered one; on the active side, always (and it stays set only if the
    /// peer's SYN-ACK answered).
    pub(super) offer_ws: bool,
    /// Our window scale shift (RFC 7323 §2.2): the one our SYN offered, in use once the
    /// peer's SYN also carried the option (else 0). The server's is 0 (its receive
    /// buffer is a request's); a client receiving bulk data sets one
    /// ([`offer_rcv_shift`](Connection::offer_rcv_shift)) so that its window can exceed
    /// 64 KiB.
    pub(super) rcv_shift: u8,
    /// SACK is in use: the peer's SYN offered it, our SYN-ACK answers with it.
    pub(super) sack_ok: bool,
    /// Timestamps are in use (RFC 7323): the peer's SYN carried the option; every segment
    /// we send carries one.
    pub(super) ts_ok: bool,
    /// TS.Recent: the TSval to echo.
    pub(super) ts_recent: u32,
    /// Added to the timestamp clock for this connection (keyed per connection, so a TSval
    /// tells the peer nothing of the machine's uptime; RFC 7323 §7.1).
    pub(super) ts_offset: u32,
    /// RCV.NXT when the last ACK went out (RFC 7323's Last.ACK.sent).
    pub(super) last_ack_sent: u32,
    /// Next sequence number expected from the peer.
    pub(super) rcv_nxt: u32,
    /// Effective send MSS.
    pub(super) mss: u32,
    /// The MSS our SYN or SYN-ACK announces, and the most we send: the link MTU less the
    /// IP and TCP headers (IPv6's are 20 bytes longer than IPv4's).
    pub(super) our_mss: u16,
    /// End of the stream the application has queued (one past its last byte).
    pub(super) send_end: u32,
    /// The application closed: a FIN follows the stream at `send_end`.
    pub(super) fin_queued: bool,
    /// Congestion control.
    pub(super) cc: Congestion,
    /// RTT estimation and RTO.
    pub(super) rtt: RttEstimator,
    /// Retransmission or persist timer.
    pub(super) timer: Timer,
    /// Consecutive timeouts without progress.
    pub(super) retries: u8,
    /// Last time the peer made progress (sent something acceptable).
    pub(super) last_heard_ns: u64,
    /// An ACK is owed to the peer.
    pub(super) ack_pending: bool,
    /// What the peer has SACKed above SND.UNA.
    pub(super) sb: Scoreboard,
    /// In SACK recovery: holes below this were retransmitted (RFC 6675 HighRxt).
    pub(super) high_rxt: u32,
    /// SND.MAX when the last retransmission went out: a SACK above it means data sent
    /// after every retransmission arrived, so a hole still below HighRxt was lost again.
    pub(super) rxt_fence: u32,
    /// Loss probes sent since the last progress: each waits twice as long as the one
    /// before, until that would be the RTO (RFC 8985 §7 sends one; see docs/design/tcp.md).
    pub(super) probes: u8,
    /// When the last challenge ACK went out (0: never).
    pub(super) last_challenge_ns: u64,
    /// After a retransmission timeout with SACK: everything outstanding then (up to the
    /// congestion controller's `recover`) is lost and goes again as holes, skipping what
    /// the peer SACKed, until the ACKs pass it (RFC 8985 §6.3; Linux's Loss state).
    pub(super) rto_recovery: bool,
    /// Delivery accounting and the tracked range of rate sampling.
    pub(super) rate: Rate,
    /// The pacing clock: the earliest time the next segment may leave (ns; BBR only).
    pub(super) next_send_ns: u64,
    /// The last [`next_segment`](Connection::next_segment) had a segment to send and
    /// pacing held it back until `next_send_ns`.
    pub(super) paced: bool,
}

impl Default for Connection {
    fn default() -> Self {
        Connection::closed()
    }
}

impl Connection {
    /// No connection (a free TCB).
    pub const fn closed() -> Connection {
        Connection {
            state: State::Closed,
            iss: 0,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            snd_wnd: 0,
            snd_wl1: 0,
            snd_wl2: 0,
            max_snd_wnd: 0,
            snd_shift: 0,
            offer_ws: false,
            rcv_shift: 0,
            sack_ok: false,
            ts_ok: false,
            ts_recent: 0,
            ts_offset: 0,
            last_ack_sent: 0,
            rcv_nxt: 0,
            mss: DEFAULT_MSS,
            send_end: 0,
            fin_queued: false,
            cc: Congestion::NONE,
            rtt: RttEstimator::new(),
            timer: Timer::Idle,
            retries: 0,
            last_heard_ns: 0,
            ack_pending: false,
            sb: Scoreboard::new(),
            high_rxt: 0,
            rxt_fence: 0,
            probes: 0,
            last_challenge_ns: 0,
            rto_recovery: false,
            rate: Rate::new(),
            next_send_ns: 0,
            paced: false,
            our_mss: OUR_MSS,
        }
    }

    /// A connection for an acceptable SYN received in LISTEN (RFC 9293 §3.10.7.2), in
    /// SYN-RECEIVED with our ISS `iss`. The caller has checked that `syn` carries SYN and
    /// neither ACK nor RST, and sends the SYN-ACK ([`Connection::syn_ack`]) next.
    pub fn accept(syn: &TcpRepr<'_>, iss: u32, now_ns: u64) -> Connection {
        Connection::accept_mss(syn, iss, now_ns, OUR_MSS)
    }

    /// [`accept`](Self::accept) on a path whose MSS is `our_mss` (IPv6's: [`OUR_MSS_V6`]):
    /// announced in the SYN-ACK, and the most a segment of ours carries whatever the
    /// peer's SYN offers.
    pub fn accept_mss(syn: &TcpRepr<'_>, iss: u32, now_ns: u64, our_mss: u16) -> Connection {
        let mss = u32::from(syn.options.mss.unwrap_or(DEFAULT_MSS as u16))
            .clamp(MIN_MSS, u32::from(our_mss));
        let mut c = Connection::closed();
        c.our_mss = our_mss;
        c.state = State::SynReceived;
        c.iss = iss;
        c.snd_una = iss;
        c.snd_nxt = iss;
        c.snd_max = iss;
        c.send_end = iss.wrapping_add(1);
        c.rcv_nxt = syn.seq_number.wrapping_add(1);
        // RFC 7323 §2.2: the shift applies only if both sides send the option; we always
        // send ours (shift 0) when the peer offered one.
        c.offer_ws = syn.options.window_scale.is_some();
        c.snd_shift = syn.options.window_scale.map_or(0, |s| s.min(14));
        c.sack_ok = syn.options.sack_permitted;
        if let Some((tsval, _)) = syn.options.timestamps {
            c.ts_ok = true;
            c.ts_recent = tsval;
        }
        c.last_ack_sent = c.rcv_nxt;
        c.snd_wnd = u32::from(syn.window_len); // never scaled in a SYN
        c.max_snd_wnd = c.snd_wnd;
        c.snd_wl1 = syn.seq_number;
        c.snd_wl2 = iss;
        // Every segment carries the timestamps option: a full one has that much less room.
        let mss = if c.ts_ok { mss - TS_OPTION_LEN } else { mss };
        c.mss = mss;
        c.cc = Congestion::new(mss, iss, Algorithm::Cubic);
        c.last_heard_ns = now_ns;
        c
    }

    /// Sets the connection's timestamp offset (the owner derives it from a secret key and
    /// the connection's ends, so the SYN-ACK of a SYN cookie and the TCB made later agree).
    pub fn with_ts_offset(mut self, offset: u32) -> Connection {
        self.ts_offset = offset;
        self
    }

    /// Runs `algorithm` for congestion control (CUBIC unless told; the server's `--cc`).
    pub fn with_congestion(mut self, algorithm: Algorithm) -> Connection {
        self.cc = Congestion::new(self.mss, self.iss, algorithm);
        self
    }

    /// The timestamp clock of this connection at `now_ns` (TSval).
    pub fn ts_now(&self, now_ns: u64) -> u32 {
        ((now_ns / TS_TICK_NS) as u32).wrapping_add(self.ts_offset)
    }

    // ------------------------------------------------------------ reading the state

    /// The RFC 9293 state.
    pub fn state(&self) -> State {
        self.state
    }
    /// SND.UNA.
    pub fn snd_una(&self) -> u32 {
        self.snd_una
    }
    /// SND.NXT.
    pub fn snd_nxt(&self) -> u32 {
        self.snd_nxt
    }
    /// The highest sequence number sent.
    pub fn snd_max(&self) -> u32 {
        self.snd_max
    }
    /// The peer's window (scaled).
    pub fn snd_wnd(&self) -> u32 {
        self.snd_wnd
    }
    /// RCV.NXT.
    pub fn rcv_nxt(&self) -> u32 {
        self.rcv_nxt
    }
    /// Our ISS.
    pub fn iss(&self) -> u32 {
        self.iss
    }
    /// The send MSS.
    pub fn mss(&self) -> u32 {
        self.mss
    }

    /// A Packet Too Big (RFC 8201 §4) quoting a segment of ours that starts at `seq`: the
    /// path takes at most `mss_cap` bytes of TCP payload without options (its MTU less
    /// the IP and TCP headers). Taken only when `seq` is in flight (SND.UNA ≤ seq <
    /// SND.MAX: RFC 5927 §4.1, an attacker must know it) and the MSS goes down; then
    /// everything in flight is sent again from SND.UNA in segments of the new size, as
    /// Linux's `tcp_simple_retransmit` does (the router dropped them; no congestion, so
    /// the window stays). Returns `None` when `seq` is not in flight, else whether the
    /// MSS went down (not when an earlier message for the same path already lowered it:
    /// the router answers each segment sent before).
    pub fn path_mtu(&mut self, seq: u32, mss_cap: u32) -> Option<bool> {
        if !(seq::le(self.snd_una, seq) && seq::lt(seq, self.snd_max)) {
            return None;
        }
        let opts = if self.ts_ok { TS_OPTION_LEN } else { 0 };
        let mss = mss_cap.saturating_sub(opts).max(MIN_MSS);
        if mss >= self.mss {
            return Some(false);
        }
        self.mss = mss;
        self.snd_nxt = self.snd_una;
        self.rto_recovery = false;
        self.rtt.stop();
        Some(true)
    }
    /// The peer's window scale shift.
    pub fn snd_shift(&self) -> u8 {
        self.snd_shift
    }
    /// Whether SACK is in use.
    pub fn sack_ok(&self) -> bool {
        self.sack_ok
    }
    /// Whether timestamps are in use.
    pub fn ts_ok(&self) -> bool {
        self.ts_ok
    }
    /// TS.Recent, the TSval echoed to the peer.
    pub fn ts_recent(&self) -> u32 {
        self.ts_recent
    }
    /// Whether holes are being repaired from the SACK scoreboard: fast recovery, or
    /// recovery after a timeout.
    pub fn sack_recovery(&self) -> bool {
        self.sack_ok && (self.cc.in_recovery || self.rto_recovery)
    }
    /// The SACK scoreboard.
    pub fn scoreboard(&self) -> &Scoreboard {
        &self.sb
    }
    /// The congestion controller.
    pub fn congestion(&self) -> &Congestion {
        &self.cc
    }
    /// The RTT estimator.
    pub fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }
    /// The timer.
    pub fn timer(&self) -> Timer {
        self.timer
    }
    /// Consecutive timeouts without progress.
    pub fn retries(&self) -> u8 {
        self.retries
    }
    /// When the peer last made progress.
    pub fn last_heard_ns(&self) -> u64 {
        self.last_heard_ns
    }
    /// Whether an ACK is owed.
    pub fn ack_pending(&self) -> bool {
        self.ack_pending
    }
    /// Bytes sent and not yet acknowledged.
    pub fn flight(&self) -> u32 {
        self.snd_nxt.wrapping_sub(self.snd_una)
    }
    /// The end of the send stream the application queued.
    pub fn send_end(&self) -> u32 {
        self.send_end
    }
    /// Whether everything queued has been acknowledged.
    pub fn all_acked(&self) -> bool {
        seq::ge(self.snd_una, self.send_end)
    }
    /// Whether the application has closed (a FIN is queued or sent).
    pub fn is_closing(&self) -> bool {
        self.fin_queued
    }

    // ------------------------------------------------------------ the application side

    /// Queues `len` more bytes of stream after what is queued; returns the sequence number
    /// of the first. Nothing is queued after [`close`](Self::close).
    pub fn queue(&mut self, len: u32) -> u32 {
        let start = self.send_end;
        if !self.fin_queued {
            self.check_app_limited();
            self.send_end = self.send_end.wrapping_add(len);
        }
        start
    }

    /// Closes our direction: a FIN follows the queued stream (it rides its last segment).
    pub fn close(&mut self) {
        self.fin_queued = true;
    }

    /// Owe the peer an ACK (sent with the next segment, or by itself at the owner's next
    /// step).
    pub fn owe_ack(&mut self) {
        self.ack_pending = true;
    }

    /// The window (bytes) we advertise for `rx_space` free bytes of receive buffer: at
    /// most 65,535 units of our window scale, and a whole number of them (what the
    /// header's 16 bits can say; with shift 0, as the server uses, `rx_space` up to
    /// 65,535).
    pub fn rcv_wnd(&self, rx_space: u32) -> u32 {
        let s = self.rcv_shift;
        (rx_space.min(65_535 << s) >> s) << s
    }

    /// Our window scale shift while it is in use (see
    /// [`offer_rcv_shift`](Self::offer_rcv_shift)).
    pub fn rcv_shift(&self) -> u8 {
        self.rcv_shift
    }

    // ------------------------------------------------------------ input

    /// Processes a segment of this connection (RFC 9293 §3.10.7.3–4), with `rx_space`
    /// bytes free in the owner's receive buffer. Never panics, whatever the segment.
    pub fn input(&mut self, seg: &TcpRepr<'_>, now_ns: u64, rx_space: u32) -> Outcome {
        let mut out = Outcome::default();
        match self.state {
            State::Closed => return out,
            State::SynSent => return self.input_syn_sent(seg, now_ns), // active.rs
            _ => {}
        }
        let seg_seq = seg.seq_number;
        let payload_len = seg.payload.len() as u32;
        let (syn, fin, rst) = (seg.flags.syn, seg.flags.fin, seg.flags.rst);
        let seg_len = payload_len + u32::from(syn) + u32::from(fin);
        let rcv_wnd = self.rcv_wnd(rx_space);

        if self.state == State::SynReceived
            && syn
            && seg.ack_number.is_none()
            && seg_seq.wrapping_add(1) == self.rcv_nxt
        {
            // Our SYN-ACK was lost: the client retransmitted its SYN. If this one offers
            // window scaling (the first did not), both sides now use it.
            if let Some(shift) = seg.options.window_scale {
                self.offer_ws = true;
                self.snd_shift = shift.min(14);
            }
            self.sack_ok |= seg.options.sack_permitted;
            out.reply = Reply::SynAck;
            return out;
        }

        // A SYN in a synchronized state, whatever its sequence number, gets a challenge
        // ACK (RFC 5961 §4, RFC 9293 §3.10.7.4 "fourth").
        if syn && !rst {
            out.challenge_ack = true;
            out.reply = self.challenge_reply(now_ns, &mut out);
            return out;
        }

        // RFC 7323 §5.3 R1, PAWS: a segment whose TSval is older than TS.Recent is an old
        // duplicate (or forged): dropped, answered with an ACK. (R1's 24-day idle rule
        // cannot apply: the stall timeout ends a connection long before.) A segment
        // without the option is accepted, as Linux does, though §3.2 says SHOULD drop.
        let seg_ts = seg.options.timestamps.filter(|_| self.ts_ok);
        if let Some((tsval, _)) = seg_ts {
            if !rst && (tsval.wrapping_sub(self.ts_recent) as i32) < 0 {
                out.paws_rejected = true;
                out.reply = self.challenge_reply(now_ns, &mut out);
                return out;
            }
        }

        // First: sequence number acceptability.
        let rcv_nxt = self.rcv_nxt;
        let acceptable = match (seg_len, rcv_wnd) {
            (0, 0) => seg_seq == rcv_nxt,
            (0, w) => seq::in_range(seg_seq, rcv_nxt, rcv_nxt.wrapping_add(w)),
            (_, 0) => false,
            (l, w) => {
                let end = rcv_nxt.wrapping_add(w);
                seq::in_range(seg_seq, rcv_nxt, end)
                    || seq::in_range(seg_seq.wrapping_add(l - 1), rcv_nxt, end)
            }
        };
        // RFC 9293 §3.10.7.4: with a zero receive window no text is acceptable, "but
        // special allowance should be made to accept valid ACKs": a segment at RCV.NXT has
        // its ACK processed and its text (and FIN) refused.
        let text_refused = !acceptable && rcv_wnd == 0 && seg_seq == rcv_nxt && !rst;
        if !acceptable && !text_refused {
            out.out_of_window = true;
            if !rst {
                out.reply = Reply::Ack;
            }
            return out;
        }

        // Second: RST (RFC 5961 §3.2).
        if rst {
            if seg_seq == rcv_nxt {
                self.state = State::Closed;
                self.timer = Timer::Idle;
                out.reset = true;
            } else {
                out.challenge_ack = true;
                out.reply = self.challenge_reply(now_ns, &mut out);
            }
            return out;
        }

        // RFC 7323 §4.3 (R4): an acceptable segment starting at or before the last ACK we
        // sent carries the TSval to echo (not newer than it: PAWS took that).
        if let Some((tsval, _)) = seg_ts {
            if seq::le(seg_seq, self.last_ack_sent) {
                self.ts_recent = tsval;
            }
        }

        // Fifth: ACK (ack.rs).
        let Some(ack) = seg.ack_number else {
            return out;
        };
        if !self.input_ack(seg, ack, seg_ts, now_ns, &mut out) {
            return out;
        }

        // Seventh: segment text.
        if text_refused {
            out.reply = Reply::Ack;
            return out;
        }
        if payload_len > 0 || fin {
            self.ack_pending = true;
        }
        let mut fin_in_order = fin;
        if payload_len > 0 {
            if in_order(seg_seq, self.rcv_nxt, payload_len) && !self.state.peer_closed() {
                let skip = self.rcv_nxt.wrapping_sub(seg_seq);
                let take = (payload_len - skip).min(rx_space);
                if take > 0 {
                    out.deliver = Some((skip as usize, (skip + take) as usize));
                }
                self.rcv_nxt = self.rcv_nxt.wrapping_add(take);
                self.last_heard_ns = now_ns;
                if take < payload_len - skip {
                    fin_in_order = false; // the FIN lies beyond what we took
                }
            } else {
                out.out_of_order = true;
                fin_in_order = false;
            }
        }

        // Eighth: FIN.
        if fin_in_order
            && !self.state.peer_closed()
            && seg_seq.wrapping_add(payload_len) == self.rcv_nxt
        {
            self.state = self.state.after_fin_received();
            self.rcv_nxt = self.rcv_nxt.wrapping_add(1);
            self.last_heard_ns = now_ns;
            out.fin = true;
        }
        if self.state.is_done() {
            self.timer = Timer::Idle;
            if self.ack_pending {
                out.reply = Reply::Ack;
            }
        }
        out
    }
}

impl Connection {
    /// The ACK that answers an injection attempt (a challenge ACK, RFC 5961 §3.2 and §4,
    /// or the answer to an ACK too old to believe, §5), at most one per
    /// [`CHALLENGE_ACK_INTERVAL_NS`] per connection (§7; Linux's per-socket limit, which
    /// unlike a global one tells an off-path attacker nothing about other connections).
    pub(super) fn challenge_reply(&mut self, now_ns: u64, out: &mut Outcome) -> Reply {
        if self.last_challenge_ns != 0
            && now_ns.saturating_sub(self.last_challenge_ns) < CHALLENGE_ACK_INTERVAL_NS
        {
            out.challenge_limited = true;
            return Reply::None;
        }
        self.last_challenge_ns = now_ns.max(1);
        Reply::Ack
    }
}

/// Whether a segment with `len` payload bytes starting at `seq_n` has new data at `rcv_nxt`.
fn in_order(seq_n: u32, rcv_nxt: u32, len: u32) -> bool {
    seq::le(seq_n, rcv_nxt) && seq::lt(rcv_nxt, seq_n.wrapping_add(len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::tcp::{Flags, Options};

    fn seg(seq: u32, ack: u32, payload: &[u8]) -> TcpRepr<'_> {
        TcpRepr {
            src_port: 40000,
            dst_port: 80,
            seq_number: seq,
            ack_number: Some(ack),
            flags: Flags {
                ack: true,
                ..Flags::NONE
            },
            window_len: 1000,
            options: Options::default(),
            payload,
        }
    }

    /// ESTABLISHED with 3000 bytes queued and sent, peer window 1000 (largest seen 1000).
    fn sending() -> Connection {
        let syn = TcpRepr {
            ack_number: None,
            flags: Flags::SYN,
            ..seg(100, 0, &[])
        };
        let mut c = Connection::accept(&syn, 5000, 0);
        c.syn_ack(0);
        assert!(c.input(&seg(101, 5001, &[]), 0, 8192).established);
        c.queue(3000);
        c.snd_nxt = 5001 + 1000;
        c.snd_max = c.snd_nxt;
        c.snd_una = 5001 + 500;
        c
    }

    #[test]
    fn an_ack_older_than_the_largest_window_discards_the_segment() {
        let mut c = sending();
        // SND.UNA − MAX.SND.WND = 5501 − 1000 = 4501: one below is refused, data and all.
        let out = c.input(&seg(101, 4500, b"GET"), 1, 8192);
        assert!(out.bad_ack);
        assert_eq!(out.reply, Reply::Ack);
        assert_eq!(out.deliver, None);
        assert_eq!(c.rcv_nxt(), 101);
        // At the bound it is an old duplicate ACK: accepted, the data taken.
        let out = c.input(&seg(101, 4501, b"GET"), 2, 8192);
        assert!(!out.bad_ack);
        assert_eq!(out.deliver, Some((0, 3)));
        assert_eq!(c.rcv_nxt(), 104);
        assert_eq!(c.snd_una(), 5501, "an old ACK moves nothing");
    }

    #[test]
    fn the_largest_window_follows_window_updates() {
        let mut c = sending();
        let bigger = TcpRepr {
            window_len: 60000,
            ..seg(101, 5501, &[])
        };
        c.input(&bigger, 1, 8192);
        // 5501 − 60000 wraps below zero in sequence space: still accepted.
        let out = c.input(&seg(101, 5501u32.wrapping_sub(59000), &[]), 2, 8192);
        assert!(!out.bad_ack);
        let out = c.input(&seg(101, 5501u32.wrapping_sub(61000), &[]), 3, 8192);
        assert!(out.bad_ack);
    }
}
