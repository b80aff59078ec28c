//! The end of a run: closing the connections kept for slots, then resetting whatever is
//! still open, so the server is left holding nothing of a client that is gone.

use super::{Fetcher, NONE};
use crate::nic::TxRing;

impl Fetcher {
    /// Closes every connection kept open for a slot (the run is over): the FINs go now,
    /// [`poll`](Self::poll) carries the closes on; [`open_connections`](Self::open_connections)
    /// says when they are done.
    pub fn close_all<T: TxRing>(&mut self, now: u64, tx: &mut T) {
        for slot in 0..self.slots.len() {
            let idx = self.slots[slot].tcb;
            if idx != NONE && !self.slots[slot].busy {
                self.detach(idx);
                self.output(idx, now, tx);
            }
        }
    }

    /// Resets every connection still open — fetches in flight when the run ended, closes
    /// not done — with a RST at its next sequence number (in the server's window in every
    /// state, SYN-RECEIVED included) and frees its TCB; returns how many. A fetcher process
    /// that ends keeps no TCP state; without the RST the server would hold each of these
    /// connections until its own timers give up, and a later run's SYN on the same
    /// 4-tuple would meet it: a challenge ACK, our RST, and the SYN's 1 s retransmission
    /// (one stalled slot per leftover connection, seen in the bench as runs of a
    /// connection per fetch with 15 retransmissions and a third of the rate). Fetches in
    /// flight end without a call to the handler: the run they belonged to is over.
    pub fn abort_all<T: TxRing>(&mut self, tx: &mut T) -> usize {
        for s in &mut self.slots {
            s.busy = false;
            s.pending = 0;
        }
        let mut n = 0;
        for idx in self.conns.ids().rev() {
            let t = &self.conns[idx as usize];
            if !t.in_use() {
                continue;
            }
            let seq = t.tcp.snd_nxt();
            self.reset(idx, seq, tx);
            self.free_tcb(idx);
            n += 1;
        }
        tx.flush();
        n
    }
}
