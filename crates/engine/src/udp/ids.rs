//! The request-id stack (the UDP paper §5): ids 1..=N pushed at start; one is popped when a
//! request arrives and pushed back when its answer is all handed to the transmit side. The
//! most ids out at once is the paper's "max parallel". Fixed size, allocated at start.

use alloc::vec::Vec;

/// A stack of request ids.
pub struct IdStack {
    free: Vec<u16>,
    /// Bit `id` set while the id is out.
    out: Vec<u64>,
    size: usize,
    /// Most ids out at once.
    pub high: usize,
}

impl IdStack {
    /// Ids 1..=`n` (at least 1), 1 on top.
    pub fn new(n: u16) -> IdStack {
        let n = n.max(1);
        IdStack {
            free: (1..=n).rev().collect(),
            out: alloc::vec![0; usize::from(n) / 64 + 1],
            size: usize::from(n),
            high: 0,
        }
    }

    /// Takes an id, if any is free.
    pub fn pop(&mut self) -> Option<u16> {
        let id = self.free.pop()?;
        self.out[usize::from(id) / 64] |= 1 << (id % 64);
        self.high = self.high.max(self.out());
        Some(id)
    }

    /// Gives an id back. An id that is not out (0, too large, already free) is ignored, so
    /// the stack never holds one twice.
    pub fn push(&mut self, id: u16) {
        let (word, bit) = (usize::from(id) / 64, 1u64 << (id % 64));
        if id == 0 || usize::from(id) > self.size || self.out[word] & bit == 0 {
            return;
        }
        self.out[word] &= !bit;
        self.free.push(id);
    }

    /// Ids out now.
    pub fn out(&self) -> usize {
        self.size - self.free.len()
    }

    /// Ids in all.
    pub fn size(&self) -> usize {
        self.size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifo_and_high_water() {
        let mut s = IdStack::new(3);
        assert_eq!(s.pop(), Some(1));
        assert_eq!(s.pop(), Some(2));
        s.push(2);
        assert_eq!(s.pop(), Some(2));
        assert_eq!(s.pop(), Some(3));
        assert_eq!(s.pop(), None);
        assert_eq!(s.high, 3);
        for id in [1, 2, 3] {
            s.push(id);
        }
        assert_eq!(s.out(), 0);
        // Bogus pushes change nothing.
        for id in [0, 4, 1] {
            s.push(id);
        }
        assert_eq!(s.out(), 0);
        assert_eq!(s.size(), 3);
    }
}
