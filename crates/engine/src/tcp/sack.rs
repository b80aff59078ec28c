//! The sender's SACK scoreboard (RFC 2018, RFC 6675 §3): the ranges above SND.UNA the
//! peer has reported holding, kept as a few disjoint blocks in the TCB. Loss recovery
//! reads it to find the holes to retransmit and to estimate what is still in flight
//! ("pipe"); go-back-N after a timeout reads it to skip what the peer already has.
//!
//! Fixed size: [`BLOCKS`] ranges. When the peer reports more disjoint ranges than fit, the
//! highest is forgotten: data forgotten as SACKed counts as in flight (not as lost), so
//! the worst outcome is a retransmission of something the peer had, never a hole left
//! unrepaired.

use super::seq;

/// Ranges the scoreboard keeps (a SACK option carries at most four; holes between them
/// are what recovery repairs).
pub const BLOCKS: usize = 6;

/// Disjoint, ascending `[left, right)` sequence ranges the peer holds above SND.UNA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scoreboard {
    blocks: [(u32, u32); BLOCKS],
    len: u8,
}

impl Default for Scoreboard {
    fn default() -> Self {
        Scoreboard::new()
    }
}

impl Scoreboard {
    /// Nothing SACKed.
    pub const fn new() -> Scoreboard {
        Scoreboard {
            blocks: [(0, 0); BLOCKS],
            len: 0,
        }
    }

    /// The ranges, lowest first.
    pub fn blocks(&self) -> &[(u32, u32)] {
        &self.blocks[..usize::from(self.len)]
    }

    /// Whether nothing is SACKed.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Forgets everything (after repeated timeouts: a receiver may renege, RFC 2018 §8).
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// SND.UNA moved to `una`: drops what it covers.
    pub fn advance(&mut self, una: u32) {
        let mut kept = 0;
        for i in 0..usize::from(self.len) {
            let (l, r) = self.blocks[i];
            if seq::gt(r, una) {
                self.blocks[kept] = (if seq::lt(l, una) { una } else { l }, r);
                kept += 1;
            }
        }
        self.len = kept as u8;
    }

    /// Takes in a block the peer reported, `[left, right)`, if it lies within
    /// `(una, max]` (a block below SND.UNA is a D-SACK or stale; one past SND.MAX or empty
    /// is bogus: both are ignored). Returns whether it told something new.
    pub fn add(&mut self, una: u32, max: u32, left: u32, right: u32) -> bool {
        if !seq::lt(left, right) || seq::gt(right, max) || !seq::gt(right, una) {
            return false;
        }
        // Only seq::lt comparisons within (una, max] follow, a window below 2^31.
        let left = if seq::lt(left, una) { una } else { left };
        if self.covers(left, right) {
            return false;
        }
        // Merge every block that overlaps or touches [left, right) into it.
        let (mut l, mut r) = (left, right);
        let mut out = [(0u32, 0u32); BLOCKS + 1];
        let mut n = 0;
        let mut placed = false;
        for &(bl, br) in self.blocks() {
            if seq::lt(br, l) {
                out[n] = (bl, br);
                n += 1;
            } else if seq::lt(r, bl) {
                if !placed {
                    out[n] = (l, r);
                    n += 1;
                    placed = true;
                }
                out[n] = (bl, br);
                n += 1;
            } else {
                l = if seq::lt(bl, l) { bl } else { l };
                r = if seq::gt(br, r) { br } else { r };
            }
        }
        if !placed {
            out[n] = (l, r);
            n += 1;
        }
        // Too many: forget the highest (it then counts as in flight, see the module doc).
        let n = n.min(BLOCKS);
        self.blocks[..n].copy_from_slice(&out[..n]);
        self.len = n as u8;
        true
    }

    /// Whether `[left, right)` is within one block.
    fn covers(&self, left: u32, right: u32) -> bool {
        self.blocks()
            .iter()
            .any(|&(l, r)| seq::le(l, left) && seq::le(right, r))
    }

    /// Bytes SACKed.
    pub fn sacked(&self) -> u32 {
        self.blocks()
            .iter()
            .fold(0u32, |n, &(l, r)| n.saturating_add(r.wrapping_sub(l)))
    }

    /// One past the highest SACKed byte.
    pub fn highest(&self) -> Option<u32> {
        self.blocks().last().map(|&(_, r)| r)
    }

    /// The end of the block holding `s`, if one does.
    pub fn block_end_at(&self, s: u32) -> Option<u32> {
        self.blocks()
            .iter()
            .find(|&&(l, r)| seq::le(l, s) && seq::lt(s, r))
            .map(|&(_, r)| r)
    }

    /// The start of the first block above `s`.
    pub fn next_block_after(&self, s: u32) -> Option<u32> {
        self.blocks()
            .iter()
            .find(|&&(l, _)| seq::gt(l, s))
            .map(|&(l, _)| l)
    }

    /// The first range not SACKed that begins at or after `from` and ends by `end`.
    pub fn next_hole(&self, from: u32, end: u32) -> Option<(u32, u32)> {
        let mut at = from;
        for &(l, r) in self.blocks() {
            if !seq::lt(at, end) {
                return None;
            }
            if seq::lt(at, l) {
                let stop = if seq::lt(l, end) { l } else { end };
                return Some((at, stop));
            }
            if seq::lt(at, r) {
                at = r;
            }
        }
        seq::lt(at, end).then_some((at, end))
    }

    /// Bytes of `[from, end)` not SACKed.
    pub fn unsacked_in(&self, from: u32, end: u32) -> u32 {
        if !seq::lt(from, end) {
            return 0;
        }
        let mut n = end.wrapping_sub(from);
        for &(l, r) in self.blocks() {
            let lo = if seq::lt(l, from) { from } else { l };
            let hi = if seq::gt(r, end) { end } else { r };
            if seq::lt(lo, hi) {
                n -= hi.wrapping_sub(lo);
            }
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board(blocks: &[(u32, u32)]) -> Scoreboard {
        let mut s = Scoreboard::new();
        for &(l, r) in blocks {
            assert!(s.add(1000, 100_000, l, r));
        }
        s
    }

    #[test]
    fn blocks_merge_and_stay_sorted() {
        let mut s = board(&[(5000, 6000), (2000, 3000)]);
        assert_eq!(s.blocks(), &[(2000, 3000), (5000, 6000)]);
        assert!(!s.add(1000, 100_000, 2000, 2500), "nothing new");
        assert!(s.add(1000, 100_000, 3000, 4000), "touching merges");
        assert_eq!(s.blocks(), &[(2000, 4000), (5000, 6000)]);
        assert!(s.add(1000, 100_000, 3500, 5500), "bridging merges both");
        assert_eq!(s.blocks(), &[(2000, 6000)]);
        assert_eq!(s.sacked(), 4000);
        assert_eq!(s.highest(), Some(6000));
    }

    #[test]
    fn bogus_blocks_are_ignored() {
        let mut s = Scoreboard::new();
        assert!(!s.add(1000, 9000, 3000, 3000), "empty");
        assert!(!s.add(1000, 9000, 4000, 3000), "reversed");
        assert!(
            !s.add(1000, 9000, 500, 1000),
            "at or below SND.UNA (D-SACK)"
        );
        assert!(!s.add(1000, 9000, 8000, 9001), "past SND.MAX");
        assert!(s.is_empty());
        assert!(s.add(1000, 9000, 500, 1500), "straddling SND.UNA: trimmed");
        assert_eq!(s.blocks(), &[(1000, 1500)]);
    }

    #[test]
    fn too_many_blocks_forget_the_highest() {
        let mut s = Scoreboard::new();
        for i in 0..BLOCKS as u32 + 2 {
            s.add(0, 100_000, 1000 + i * 2000, 2000 + i * 2000);
        }
        assert_eq!(s.blocks().len(), BLOCKS);
        assert_eq!(s.blocks()[0], (1000, 2000));
        assert_eq!(s.highest(), Some(2000 + (BLOCKS as u32 - 1) * 2000));
        // A low block still gets in, pushing the highest out.
        s.add(0, 100_000, 100, 200);
        assert_eq!(s.blocks()[0], (100, 200));
        assert_eq!(s.highest(), Some(2000 + (BLOCKS as u32 - 2) * 2000));
    }

    #[test]
    fn advance_drops_and_trims() {
        let mut s = board(&[(2000, 3000), (5000, 6000)]);
        s.advance(2500);
        assert_eq!(s.blocks(), &[(2500, 3000), (5000, 6000)]);
        s.advance(5000);
        assert_eq!(s.blocks(), &[(5000, 6000)]);
        s.advance(6000);
        assert!(s.is_empty());
    }

    #[test]
    fn holes() {
        let s = board(&[(2000, 3000), (5000, 6000)]);
        assert_eq!(s.next_hole(1000, 6000), Some((1000, 2000)));
        assert_eq!(s.next_hole(1500, 6000), Some((1500, 2000)));
        assert_eq!(s.next_hole(2000, 6000), Some((3000, 5000)));
        assert_eq!(s.next_hole(3000, 4000), Some((3000, 4000)));
        assert_eq!(s.next_hole(5000, 6000), None);
        assert_eq!(s.next_hole(5500, 8000), Some((6000, 8000)));
        assert_eq!(s.unsacked_in(1000, 6000), 3000);
        assert_eq!(s.unsacked_in(2500, 5500), 2000);
        assert_eq!(s.unsacked_in(6000, 6000), 0);
        assert_eq!(s.block_end_at(2500), Some(3000));
        assert_eq!(s.block_end_at(3000), None);
        assert_eq!(s.next_block_after(3000), Some(5000));
        assert_eq!(s.next_block_after(5000), None);
    }

    #[test]
    fn wraps_around_zero() {
        let una = u32::MAX - 1000;
        let mut s = Scoreboard::new();
        assert!(s.add(una, 5000, 1000, 2000));
        assert!(s.add(una, 5000, u32::MAX - 500, 100));
        assert_eq!(s.blocks(), &[(u32::MAX - 500, 100), (1000, 2000)]);
        assert_eq!(s.next_hole(una, 2000), Some((una, u32::MAX - 500)));
        assert_eq!(s.unsacked_in(una, 2000), 500 + 900);
    }
}
