//! The fetcher's local ports: a FIFO free-list over `[first, last]`, allocated once. A
//! port given back goes to the tail, so it is taken again only after every other free
//! port was (the reuse policy of `super`'s docs).

use alloc::vec::Vec;

/// Free local ports, oldest first.
#[derive(Debug, Clone)]
pub struct Ports {
    ring: Vec<u16>,
    head: usize,
    len: usize,
}

impl Ports {
    /// Every port of `[first, last]` free (none if `last < first`), the first taken
    /// `skip` places into the range (a new process does not begin where the last one
    /// did, whose connections a server may still hold).
    pub fn new(first: u16, last: u16, skip: usize) -> Ports {
        let ring: Vec<u16> = (first..=last).collect();
        let len = ring.len();
        Ports {
            head: skip % len.max(1),
            ring,
            len,
        }
    }

    /// The port free longest.
    pub fn take(&mut self) -> Option<u16> {
        if self.len == 0 {
            return None;
        }
        let p = self.ring[self.head];
        self.head = (self.head + 1) % self.ring.len();
        self.len -= 1;
        Some(p)
    }

    /// Gives `port` back (to the tail). A port given back more often than taken is
    /// ignored once the list is full.
    pub fn give(&mut self, port: u16) {
        if self.len == self.ring.len() {
            return;
        }
        let at = (self.head + self.len) % self.ring.len();
        self.ring[at] = port;
        self.len += 1;
    }

    /// Free ports.
    pub fn free(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_reuse_and_exhaustion() {
        let mut p = Ports::new(10, 12, 0);
        assert_eq!((p.take(), p.take()), (Some(10), Some(11)));
        p.give(10);
        assert_eq!(p.take(), Some(12));
        assert_eq!(p.take(), Some(10), "a port comes back after the others");
        assert_eq!(p.take(), None);
        assert_eq!(p.free(), 0);
        p.give(11);
        p.give(10);
        p.give(12);
        p.give(12); // more than taken: ignored
        assert_eq!(p.free(), 3);
        assert_eq!(
            (p.take(), p.take(), p.take()),
            (Some(11), Some(10), Some(12))
        );
        assert_eq!(Ports::new(5, 4, 3).take(), None);
        let mut p = Ports::new(10, 12, 4);
        assert_eq!(
            (p.take(), p.take(), p.take()),
            (Some(11), Some(12), Some(10))
        );
    }
}
