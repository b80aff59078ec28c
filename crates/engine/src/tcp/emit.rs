//! Segment emission, written once for every owner of a connection table (the server and
//! the fetcher): the send loop that asks the state machine for its next segment within
//! the windows, posts it and tells the machine it went; the retransmission at snd_una;
//! the ACK owed. The owner says, through [`Sender`], how a segment becomes a frame (its
//! payload, its interface, its counters); everything about which segment and when is
//! here and in [`Connection`].

use super::conn::Connection;
use super::output::Segment;

/// A table's owner as the send loop sees it (with its transmit ring, for one call).
pub trait Sender {
    /// The TCP state machine of connection `id`.
    fn conn(&mut self, id: u32) -> &mut Connection;
    /// The most bytes the next segment of `id` may carry in one frame (0: one MSS, no
    /// segmentation offload).
    fn frame_max(&mut self, id: u32) -> u32;
    /// Builds and posts `seg` of connection `id`; false when it did not go (the ring had
    /// no slot, no next hop is known, the payload is gone).
    fn emit(&mut self, id: u32, seg: &Segment) -> bool;
}

/// What one [`send`] round did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Round {
    /// A segment did not go ([`Sender::emit`] said no): the connection has more to send.
    pub blocked: bool,
    /// Segments sent below snd_nxt: holes the peer's SACKs showed (only recovery goes
    /// back).
    pub holes: u32,
}

/// Sends what the state machine of `id` allows now: holes in recovery, new data within
/// the windows, the FIN on the last segment when the connection is closing; each segment
/// carries the owed ACK. Stops at the FIN or at the first segment that does not go.
#[inline]
pub fn send<S: Sender>(s: &mut S, id: u32, now: u64) -> Round {
    let mut round = Round::default();
    loop {
        let frame_max = s.frame_max(id);
        let Some(seg) = s.conn(id).next_segment(now, frame_max) else {
            return round;
        };
        if !s.emit(id, &seg) {
            round.blocked = true;
            return round;
        }
        let c = s.conn(id);
        if seg.seq != c.snd_nxt() {
            round.holes += 1;
        }
        c.on_sent(&seg, now);
        if seg.fin {
            return round;
        }
    }
}

/// Sends `seg`, a segment the state machine chose outside the send loop (a window or
/// loss probe, a retransmission), and tells the machine it went; returns whether it did.
#[inline]
pub fn once<S: Sender>(s: &mut S, id: u32, seg: &Segment, now: u64) -> bool {
    let sent = s.emit(id, seg);
    if sent {
        s.conn(id).on_sent(seg, now);
    }
    sent
}

/// Retransmits one segment at snd_una (fast retransmit, a partial ACK, a lost
/// retransmission), if the state machine has one; returns whether it had.
#[inline]
pub fn retransmit_una<S: Sender>(s: &mut S, id: u32, now: u64) -> bool {
    let Some(seg) = s.conn(id).retransmit_segment() else {
        return false;
    };
    once(s, id, &seg, now);
    true
}

/// Sends a bare ACK of connection `id`; returns whether it went.
#[inline]
pub fn ack<S: Sender>(s: &mut S, id: u32) -> bool {
    let seg = s.conn(id).ack_segment();
    s.emit(id, &seg)
}

/// Sends the ACK connection `id` owes, if no segment carried it.
#[inline]
pub fn ack_owed<S: Sender>(s: &mut S, id: u32) {
    if s.conn(id).ack_pending() {
        ack(s, id);
    }
}
