//! Sequence-number arithmetic modulo 2^32 (RFC 9293 §3.4).

/// `a < b` in sequence space.
#[inline]
pub fn lt(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// `a <= b` in sequence space.
#[inline]
pub fn le(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) <= 0
}

/// `a > b` in sequence space.
#[inline]
pub fn gt(a: u32, b: u32) -> bool {
    lt(b, a)
}

/// `a >= b` in sequence space.
#[inline]
pub fn ge(a: u32, b: u32) -> bool {
    le(b, a)
}

/// `lo <= x < hi` in sequence space.
#[inline]
pub fn in_range(x: u32, lo: u32, hi: u32) -> bool {
    le(lo, x) && lt(x, hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps() {
        assert!(lt(0xffff_fff0, 0x10));
        assert!(gt(0x10, 0xffff_fff0));
        assert!(le(5, 5) && ge(5, 5) && !lt(5, 5));
        assert!(in_range(0, 0xffff_ffff, 1));
        assert!(!in_range(1, 0xffff_ffff, 1));
    }
}
