//! A mailbox of frames between cores: `N` slots of a frame each, any core posting, one
//! owner taking. For what a core's queue received but another core's owner must handle
//! (a DHCP reply, a segment of the server's own client connection), never for the request
//! path. Lock-free: a slot is claimed with one compare-and-swap, filled word by word,
//! published with a Release store and emptied the same way; a post that finds every slot
//! full drops the frame and counts it (the protocol above retransmits). Slots are taken
//! in index order, so frames of one burst usually keep their order; a late post may land
//! in a slot already passed and come in the next take.

use core::sync::atomic::{AtomicU16, AtomicU64, AtomicU8, Ordering};

/// Octets a slot holds (a full Ethernet frame without FCS).
pub const MAIL_MAX: usize = 1514;
const WORDS: usize = MAIL_MAX.div_ceil(8);

const EMPTY: u8 = 0;
const BUSY: u8 = 1;
const FULL: u8 = 2;

struct Slot {
    state: AtomicU8,
    len: AtomicU16,
    words: [AtomicU64; WORDS],
}

/// `N` frames' worth of mailbox.
pub struct Mailbox<const N: usize> {
    slots: [Slot; N],
    /// Frames dropped: every slot was full, or the frame too long.
    pub dropped: AtomicU64,
}

impl<const N: usize> Default for Mailbox<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> core::fmt::Debug for Mailbox<N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Mailbox")
            .field("slots", &N)
            .field("dropped", &self.dropped.load(Ordering::Relaxed))
            .finish()
    }
}

impl<const N: usize> Mailbox<N> {
    /// An empty mailbox.
    pub fn new() -> Self {
        Mailbox {
            slots: core::array::from_fn(|_| Slot {
                state: AtomicU8::new(EMPTY),
                len: AtomicU16::new(0),
                words: core::array::from_fn(|_| AtomicU64::new(0)),
            }),
            dropped: AtomicU64::new(0),
        }
    }

    /// Posts a copy of `frame`. Returns false (counted in [`Mailbox::dropped`]) if every
    /// slot was full or it is longer than [`MAIL_MAX`].
    pub fn post(&self, frame: &[u8]) -> bool {
        if frame.len() > MAIL_MAX {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        for s in &self.slots {
            if s.state
                .compare_exchange(EMPTY, BUSY, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
            {
                continue;
            }
            for (w, chunk) in s.words.iter().zip(frame.chunks(8)) {
                let mut b = [0u8; 8];
                b[..chunk.len()].copy_from_slice(chunk);
                w.store(u64::from_le_bytes(b), Ordering::Relaxed);
            }
            s.len.store(frame.len() as u16, Ordering::Relaxed);
            s.state.store(FULL, Ordering::Release);
            return true;
        }
        self.dropped.fetch_add(1, Ordering::Relaxed);
        false
    }

    /// Whether a frame waits (one load per slot).
    pub fn pending(&self) -> bool {
        self.slots
            .iter()
            .any(|s| s.state.load(Ordering::Relaxed) == FULL)
    }

    /// Takes each frame posted (the owner alone), handing it to `f` in `buf`.
    pub fn take(&self, buf: &mut [u8; MAIL_MAX], mut f: impl FnMut(&[u8])) {
        for s in &self.slots {
            if s.state.load(Ordering::Acquire) != FULL {
                continue;
            }
            let len = usize::from(s.len.load(Ordering::Relaxed)).min(MAIL_MAX);
            for (w, chunk) in s.words.iter().zip(buf[..len].chunks_mut(8)) {
                let b = w.load(Ordering::Relaxed).to_le_bytes();
                chunk.copy_from_slice(&b[..chunk.len()]);
            }
            s.state.store(EMPTY, Ordering::Release);
            f(&buf[..len]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    #[test]
    fn frames_come_out_whole_in_order_and_a_full_box_drops() {
        let m: Mailbox<3> = Mailbox::new();
        assert!(!m.pending());
        for i in 0..3u8 {
            assert!(m.post(&[i; 100 + 7]));
        }
        assert!(!m.post(&[9]));
        assert!(!m.post(&[0; MAIL_MAX + 1]));
        assert_eq!(m.dropped.load(Ordering::Relaxed), 2);
        assert!(m.pending());
        let mut buf = [0; MAIL_MAX];
        let mut got = Vec::new();
        m.take(&mut buf, |f| got.push(f.to_vec()));
        assert_eq!(got, (0..3u8).map(|i| vec![i; 107]).collect::<Vec<_>>());
        assert!(!m.pending());
        assert!(m.post(&[1; MAIL_MAX]));
        m.take(&mut buf, |f| assert_eq!(f, &[1; MAIL_MAX][..]));
    }

    #[test]
    fn posts_from_threads_all_arrive_or_are_counted() {
        let m: &'static Mailbox<8> = std::boxed::Box::leak(std::boxed::Box::new(Mailbox::new()));
        let posted = std::sync::atomic::AtomicU64::new(0);
        let mut got = 0u64;
        std::thread::scope(|s| {
            for t in 0..4u8 {
                let posted = &posted;
                s.spawn(move || {
                    for i in 0..500u16 {
                        let mut f = [t; 64];
                        f[..2].copy_from_slice(&i.to_be_bytes());
                        if m.post(&f) {
                            posted.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
            let mut buf = [0; MAIL_MAX];
            for _ in 0..20_000 {
                m.take(&mut buf, |f| {
                    assert_eq!(f.len(), 64);
                    assert!(f[2..].iter().all(|&b| b == f[2]), "a frame whole");
                    got += 1;
                });
            }
        });
        let mut buf = [0; MAIL_MAX];
        m.take(&mut buf, |_| got += 1);
        assert_eq!(got, posted.load(Ordering::Relaxed));
        assert_eq!(got + m.dropped.load(Ordering::Relaxed), 2000);
    }
}
