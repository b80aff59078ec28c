//! The Internet checksum (RFC 1071) and its incremental update (RFC 1624).
//!
//! Sums are kept unfolded in a `u32`/`u64` accumulator and folded once at the end, so a
//! data segment whose payload sum was stored in the site image costs a few additions.

/// Adds `data` to a running one's-complement sum, treating it as big-endian 16-bit words
/// that start at an even offset. An odd trailing byte is padded with zero (RFC 1071).
#[inline]
pub fn accumulate(mut acc: u64, data: &[u8]) -> u64 {
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        // Four 16-bit big-endian words at once; the u64 accumulator cannot overflow for
        // any buffer shorter than 2^48 bytes.
        let w = u64::from_be_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        acc += (w >> 48) + ((w >> 32) & 0xffff) + ((w >> 16) & 0xffff) + (w & 0xffff);
    }
    let rest = chunks.remainder();
    let mut pairs = rest.chunks_exact(2);
    for p in &mut pairs {
        acc += u64::from(u16::from_be_bytes([p[0], p[1]]));
    }
    if let [last] = pairs.remainder() {
        acc += u64::from(*last) << 8;
    }
    acc
}

/// Folds an accumulator into a 16-bit one's-complement sum (not yet inverted).
#[inline]
pub fn fold(mut acc: u64) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// One's-complement sum of `data` (folded, not inverted).
#[inline]
pub fn sum(data: &[u8]) -> u16 {
    fold(accumulate(0, data))
}

/// The checksum field value for `data`: the inverted folded sum.
#[inline]
pub fn checksum(data: &[u8]) -> u16 {
    !sum(data)
}

/// Combines two folded sums. `b` is the sum of a chunk that starts `offset` bytes after the
/// start of the chunk summed in `a`; an odd offset swaps the bytes of `b` (RFC 1071 §2(B)).
#[inline]
pub fn combine(a: u16, b: u16, offset: usize) -> u16 {
    let b = if offset % 2 == 1 { b.swap_bytes() } else { b };
    fold(u64::from(a) + u64::from(b))
}

/// The sum of the TCP/UDP pseudo-header for IPv4 (RFC 9293 §3.1): source, destination,
/// zero + protocol, and the transport length.
#[inline]
pub fn pseudo_header_v4(src: [u8; 4], dst: [u8; 4], protocol: u8, length: u16) -> u64 {
    let mut acc = accumulate(0, &src);
    acc = accumulate(acc, &dst);
    acc + u64::from(protocol) + u64::from(length)
}

/// RFC 1624 eqn. 3: the new checksum field after a 16-bit word changed from `old` to `new`.
#[inline]
pub fn update(check: u16, old: u16, new: u16) -> u16 {
    !fold(u64::from(!check) + u64::from(!old) + u64::from(new))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of RFC 1071 §3: bytes 00 01 f2 03 f4 f5 f6 f7 sum to 0xddf2.
    #[test]
    fn rfc1071_example() {
        assert_eq!(
            sum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]),
            0xddf2
        );
    }

    /// An IPv4 header of an ICMP echo request 10.0.0.1 -> 10.0.0.2 (checksum in place); its
    /// sum with the checksum field included must be 0xffff.
    #[test]
    fn ipv4_header_fixture_verifies() {
        let hdr = [
            0x45, 0x00, 0x00, 0x54, 0x3b, 0x5d, 0x40, 0x00, 0x40, 0x01, 0xeb, 0x49, 0x0a, 0x00,
            0x00, 0x01, 0x0a, 0x00, 0x00, 0x02,
        ];
        assert_eq!(sum(&hdr), 0xffff);
        let mut zeroed = hdr;
        zeroed[10] = 0;
        zeroed[11] = 0;
        assert_eq!(checksum(&zeroed), 0xeb49);
    }

    #[test]
    fn odd_length_pads_with_zero() {
        assert_eq!(sum(&[0x12]), 0x1200);
        assert_eq!(sum(&[0x12, 0x34, 0x56]), 0x1234 + 0x5600);
    }

    #[test]
    fn combine_matches_whole_sum_at_any_split() {
        let data: [u8; 37] = core::array::from_fn(|i| (i as u8).wrapping_mul(37).wrapping_add(11));
        for split in 0..=data.len() {
            let (a, b) = data.split_at(split);
            assert_eq!(combine(sum(a), sum(b), split), sum(&data), "split {split}");
        }
    }

    #[test]
    fn incremental_update_matches_recompute() {
        let mut data = [0x45u8, 0x00, 0x00, 0x54, 0x12, 0x34, 0x40, 0x00, 0x40, 0x06];
        let check = checksum(&data);
        let old = u16::from_be_bytes([data[4], data[5]]);
        data[4] = 0xbe;
        data[5] = 0xef;
        assert_eq!(update(check, old, 0xbeef), checksum(&data));
    }
}
