//! A thread's transmit batch: the engine builds frames into it while its thread holds the
//! shared `Server`, and the thread writes them to the device after letting go, so the
//! expensive system calls (`writev` on a TAP) of several threads overlap instead of
//! queueing behind the lock.
//!
//! Heads are written into fixed slots allocated once; bodies stay borrowed slices of the
//! site image, as on every other path. A full batch lends no slot, which the engine treats
//! as a full ring (the connection goes back on the ready queue, counted in
//! `tx_ring_full`). Offloaded frames ([`TxRing::post_tso`]) keep their segmentation
//! request and reach the device the same way, so the batch offers whatever the device
//! behind it offers (the runners give the server the TAP's capabilities).

use bareweb_engine::cores::replay::{replay, ReplayError};
use bareweb_engine::nic::{Tso, TxFull, TxRing, TX_HEAD_ROOM};

/// Frames a batch holds: more than one HTTP step sends under any window the engine opens
/// in one go here (an initial window is 3 segments; an ACK opens a few more).
pub const BATCH_FRAMES: usize = 256;

/// Frames built but not yet written.
pub struct TxBatch {
    heads: Vec<[u8; TX_HEAD_ROOM]>,
    /// Head length, body, and the segmentation request of an offloaded frame.
    frames: Vec<(usize, &'static [u8], Option<Tso>)>,
    /// Most frames held at once.
    pub high: usize,
}

impl Default for TxBatch {
    fn default() -> Self {
        Self::new()
    }
}

impl TxBatch {
    /// An empty batch of [`BATCH_FRAMES`] slots (about 512 KiB).
    pub fn new() -> TxBatch {
        TxBatch {
            heads: vec![[0; TX_HEAD_ROOM]; BATCH_FRAMES],
            frames: Vec::with_capacity(BATCH_FRAMES),
            high: 0,
        }
    }

    fn hold(
        &mut self,
        head_len: usize,
        body: &'static [u8],
        tso: Option<Tso>,
    ) -> Result<(), TxFull> {
        if self.frames.len() >= self.heads.len() {
            return Err(TxFull);
        }
        self.frames.push((head_len.min(TX_HEAD_ROOM), body, tso));
        self.high = self.high.max(self.frames.len());
        Ok(())
    }

    /// Frames waiting.
    pub fn len(&self) -> usize {
        self.frames.len()
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Writes every waiting frame to `tx` (the engine's `cores::replay`, as core 0 drains
    /// a DLIST: its head copied into `tx`'s slot, its body posted as the same slice), flushes `tx` once, and empties the batch. Frames `tx`
    /// has no slot for are dropped (TCP retransmits them); returns how many were written.
    pub fn drain_into<T: TxRing>(&mut self, tx: &mut T) -> usize {
        let mut sent = 0;
        for (head, &(len, body, tso)) in self.heads.iter().zip(&self.frames) {
            match replay(tx, &head[..len], body, tso) {
                Ok(()) => sent += 1,
                Err(ReplayError::NoSlot) => break,
                Err(ReplayError::Refused) => {}
            }
        }
        self.frames.clear();
        tx.flush();
        sent
    }
}

impl TxRing for TxBatch {
    fn slot(&mut self) -> Option<&mut [u8]> {
        let i = self.frames.len();
        self.heads.get_mut(i).map(|h| &mut h[..])
    }

    fn post(&mut self, head_len: usize, body: &'static [u8]) -> Result<(), TxFull> {
        self.hold(head_len, body, None)
    }

    fn post_tso(&mut self, head_len: usize, body: &'static [u8], tso: Tso) -> Result<(), TxFull> {
        self.hold(head_len, body, Some(tso))
    }

    fn room(&mut self) -> usize {
        self.heads.len() - self.frames.len()
    }

    fn flush(&mut self) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use bareweb_engine::fake::FakeQueues;

    #[test]
    fn frames_come_out_whole_and_in_order() {
        static BODY: [u8; 5] = *b"world";
        let mut b = TxBatch::new();
        for i in 0..3u8 {
            let s = b.slot().unwrap();
            s[..3].copy_from_slice(&[i, i, i]);
            b.post(3, if i == 1 { &BODY } else { &[] }).unwrap();
        }
        assert_eq!((b.len(), b.high), (3, 3));
        let mut tx = FakeQueues::default();
        assert_eq!(b.drain_into(&mut tx), 3);
        assert!(b.is_empty());
        assert_eq!(
            tx.outbox,
            vec![vec![0, 0, 0], b"\x01\x01\x01world".to_vec(), vec![2, 2, 2]]
        );
    }

    #[test]
    fn a_full_batch_lends_no_slot() {
        let mut b = TxBatch::new();
        for _ in 0..BATCH_FRAMES {
            assert!(b.slot().is_some());
            b.post(60, &[]).unwrap();
        }
        assert!(b.slot().is_none());
        assert_eq!(b.post(60, &[]), Err(TxFull));
        let mut tx = FakeQueues::default();
        assert_eq!(b.drain_into(&mut tx), BATCH_FRAMES);
        assert!(b.slot().is_some(), "usable again once written");
    }
}
