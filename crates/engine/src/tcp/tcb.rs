//! The transmission control block: everything one connection owns, in a fixed array slot.
//!
//! A TCB never points at memory outside the site image and its own slabs: the request bytes
//! live in the connection's receive slab, the response head in its head slab, and the body
//! is a slice of the site image. Because a response is immutable, any sequence range of it
//! can be regenerated for retransmission; there is no retransmission queue.
//!
//! Also owned here: RTT estimation and the retransmission timeout (RFC 6298) and the
//! NewReno congestion window arithmetic (RFC 5681, RFC 6582).

use super::port_table::{Peer, NONE};
use crate::resource::Body;
use crate::wire::EthernetAddress;

/// Connection states (RFC 9293 §3.3.2). The server never opens actively, and it frees a
/// TCB as soon as both FINs are acknowledged: no TIME-WAIT is held (see docs/tcp.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Slot unused.
    Free,
    /// SYN received, SYN-ACK sent.
    SynReceived,
    /// Synchronized: ESTABLISHED, and the closing states told apart by `fin_sent`,
    /// `fin_acked` and `peer_fin`.
    Synchronized,
}

/// Lower bound of the retransmission timeout (Linux's 200 ms rather than RFC 6298's 1 s,
/// which is a SHOULD; documented in docs/tcp.md).
pub const RTO_MIN_MS: u32 = 200;
/// Upper bound of the retransmission timeout.
pub const RTO_MAX_MS: u32 = 60_000;
/// Initial RTO before any sample (RFC 6298 §2.1).
pub const RTO_INITIAL_MS: u32 = 1_000;

/// The response being sent on a connection.
#[derive(Debug, Clone, Copy)]
pub struct Response {
    /// Sequence number of the first byte of the head.
    pub start: u32,
    /// Bytes of head in the head slab.
    pub head_len: u32,
    /// The body bytes that follow the head (a slice of the site image).
    pub body: &'static [u8],
    /// The body's stored sums, and where `body` starts within it.
    pub sums: Body<'static>,
    /// Offset of `body` within `sums.data`.
    pub sums_offset: u32,
}

impl Response {
    /// Total bytes of the response on the wire.
    pub fn wire_len(&self) -> u32 {
        self.head_len + self.body.len() as u32
    }

    /// Sequence number just after the response.
    pub fn end(&self) -> u32 {
        self.start.wrapping_add(self.wire_len())
    }
}

/// One connection.
#[derive(Debug, Clone)]
pub struct Tcb {
    /// State.
    pub state: State,
    /// Client address and port (the port-table key).
    pub peer: Peer,
    /// MAC to send to (the sender of the SYN: the client, or the gateway).
    pub peer_mac: EthernetAddress,
    /// Port-table overflow chain link.
    pub chain: u32,
    /// Initial send sequence number.
    pub iss: u32,
    /// Oldest unacknowledged sequence number.
    pub snd_una: u32,
    /// Next sequence number to send.
    pub snd_nxt: u32,
    /// Highest sequence number sent (snd_nxt can go back after a timeout).
    pub snd_max: u32,
    /// Peer's receive window in bytes (scaled).
    pub snd_wnd: u32,
    /// Segment sequence number of the last window update.
    pub snd_wl1: u32,
    /// Segment ack number of the last window update.
    pub snd_wl2: u32,
    /// Peer's window scale shift (0 when it sent none).
    pub snd_shift: u8,
    /// Next sequence number expected from the peer.
    pub rcv_nxt: u32,
    /// Effective send MSS.
    pub mss: u32,
    /// Congestion window.
    pub cwnd: u32,
    /// Slow-start threshold.
    pub ssthresh: u32,
    /// Duplicate ACKs in a row.
    pub dupacks: u8,
    /// In NewReno fast recovery.
    pub in_recovery: bool,
    /// snd_max when recovery started (RFC 6582 "recover").
    pub recover: u32,
    /// Smoothed RTT in µs (0: no sample yet).
    pub srtt_us: u32,
    /// RTT variance in µs.
    pub rttvar_us: u32,
    /// Current RTO in ms (backed off).
    pub rto_ms: u32,
    /// Whether a segment is being timed (Karn: never a retransmitted one).
    pub timing: bool,
    /// The sequence number whose acknowledgment ends the timing.
    pub rtt_seq: u32,
    /// When the timed segment was sent.
    pub rtt_start_ns: u64,
    /// Retransmission (or persist) deadline; 0 when not armed.
    pub rto_deadline_ns: u64,
    /// Consecutive timeouts without progress.
    pub retries: u8,
    /// Last time the peer made progress (sent something acceptable).
    pub last_heard_ns: u64,
    /// When the first byte of the request being received arrived (0: none pending).
    pub request_start_ns: u64,
    /// Bytes in the receive slab.
    pub rx_len: u32,
    /// The response in flight, if any.
    pub resp: Option<Response>,
    /// The connection closes after the current response (FIN rides its last segment).
    pub closing: bool,
    /// Our FIN has been sent (it is at `fin_seq`).
    pub fin_sent: bool,
    /// Sequence number of our FIN, once closing is decided and the stream end is known.
    pub fin_seq: u32,
    /// Our FIN has been acknowledged.
    pub fin_acked: bool,
    /// The peer's FIN has been received.
    pub peer_fin: bool,
    /// An ACK is owed to the peer.
    pub ack_pending: bool,
    /// On the run list.
    pub queued: bool,
    /// When the first request on this connection arrived complete (0: none yet); the
    /// stay time runs from here to the client's final ACK (issue 4).
    pub stay_start_ns: u64,
    /// The server's dynamic-response buffer this connection's response head lives in
    /// (the stats JSON), or [`NO_DYN`] for the head slab.
    pub dyn_slot: u8,
}

/// [`Tcb::dyn_slot`] when the response head is in the head slab.
pub const NO_DYN: u8 = u8::MAX;

impl Tcb {
    /// An unused slot.
    pub const fn free() -> Tcb {
        Tcb {
            state: State::Free,
            peer: Peer {
                ip: [0; 4],
                port: 0,
            },
            peer_mac: EthernetAddress([0; 6]),
            chain: NONE,
            iss: 0,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            snd_wnd: 0,
            snd_wl1: 0,
            snd_wl2: 0,
            snd_shift: 0,
            rcv_nxt: 0,
            mss: 536,
            cwnd: 0,
            ssthresh: u32::MAX,
            dupacks: 0,
            in_recovery: false,
            recover: 0,
            srtt_us: 0,
            rttvar_us: 0,
            rto_ms: RTO_INITIAL_MS,
            timing: false,
            rtt_seq: 0,
            rtt_start_ns: 0,
            rto_deadline_ns: 0,
            retries: 0,
            last_heard_ns: 0,
            request_start_ns: 0,
            rx_len: 0,
            resp: None,
            closing: false,
            fin_sent: false,
            fin_seq: 0,
            fin_acked: false,
            peer_fin: false,
            ack_pending: false,
            queued: false,
            stay_start_ns: 0,
            dyn_slot: NO_DYN,
        }
    }

    /// Bytes sent and not yet acknowledged.
    pub fn flight(&self) -> u32 {
        self.snd_nxt.wrapping_sub(self.snd_una)
    }

    /// Initial congestion window (RFC 5681 §3.1).
    pub fn initial_cwnd(mss: u32) -> u32 {
        if mss > 2190 {
            2 * mss
        } else if mss > 1095 {
            3 * mss
        } else {
            4 * mss
        }
    }

    /// Feeds an RTT sample (RFC 6298 §2.2–2.3) and recomputes the RTO.
    pub fn rtt_sample(&mut self, rtt_us: u32) {
        let rtt = rtt_us.max(1);
        if self.srtt_us == 0 {
            self.srtt_us = rtt;
            self.rttvar_us = rtt / 2;
        } else {
            let diff = self.srtt_us.abs_diff(rtt);
            self.rttvar_us = (3 * (self.rttvar_us / 4)).saturating_add(diff / 4);
            self.srtt_us = (7 * (self.srtt_us / 8)).saturating_add(rtt / 8);
        }
        // G (clock granularity) is 1 µs here.
        let rto_us = self.srtt_us.saturating_add(4 * self.rttvar_us.max(1));
        self.rto_ms = (rto_us / 1000).clamp(RTO_MIN_MS, RTO_MAX_MS);
    }

    /// Doubles the RTO after a timeout (RFC 6298 §5.5).
    pub fn backoff(&mut self) {
        self.rto_ms = self.rto_ms.saturating_mul(2).min(RTO_MAX_MS);
    }

    /// Congestion response to a loss (RFC 5681 eqn. 4).
    pub fn loss_ssthresh(&self) -> u32 {
        (self.flight() / 2).max(2 * self.mss)
    }

    /// Window growth on an ACK of `acked` new bytes outside recovery (RFC 5681 §3.1).
    pub fn grow_cwnd(&mut self, acked: u32) {
        if self.cwnd < self.ssthresh {
            self.cwnd = self.cwnd.saturating_add(acked.min(self.mss));
        } else {
            let inc = (self.mss as u64 * self.mss as u64 / self.cwnd.max(1) as u64).max(1);
            self.cwnd = self.cwnd.saturating_add(inc as u32);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rto_follows_rfc6298() {
        let mut t = Tcb::free();
        assert_eq!(t.rto_ms, RTO_INITIAL_MS);
        t.rtt_sample(100_000); // 100 ms: srtt 100, rttvar 50, rto = 100 + 200 = 300 ms
        assert_eq!((t.srtt_us, t.rttvar_us, t.rto_ms), (100_000, 50_000, 300));
        t.rtt_sample(100_000); // rttvar = 3/4*50 + 1/4*0 = 37.5, rto = 100 + 150 = 250
        assert_eq!(t.rto_ms, 250);
        t.rtt_sample(50); // tiny RTTs clamp at the minimum eventually
        for _ in 0..50 {
            t.rtt_sample(50);
        }
        assert_eq!(t.rto_ms, RTO_MIN_MS);
        for _ in 0..20 {
            t.backoff();
        }
        assert_eq!(t.rto_ms, RTO_MAX_MS);
    }

    #[test]
    fn cwnd_slow_start_then_avoidance() {
        let mut t = Tcb::free();
        t.mss = 1000;
        t.cwnd = Tcb::initial_cwnd(1000);
        assert_eq!(t.cwnd, 4000);
        t.ssthresh = 6000;
        t.grow_cwnd(5000);
        assert_eq!(t.cwnd, 5000); // at most one MSS per ACK
        t.grow_cwnd(1000);
        assert_eq!(t.cwnd, 6000); // reached ssthresh
        t.grow_cwnd(1000); // avoidance: mss*mss/cwnd = 166
        assert_eq!(t.cwnd, 6166);
        t.grow_cwnd(1000); // 1_000_000 / 6166 = 162
        assert_eq!(t.cwnd, 6328);
        t.snd_una = 0;
        t.snd_nxt = 10_000;
        assert_eq!(t.loss_ssthresh(), 5000);
        t.snd_nxt = 1000;
        assert_eq!(t.loss_ssthresh(), 2000);
    }
}
