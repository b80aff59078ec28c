//! The Internet checksum (RFC 1071) and its incremental update (RFC 1624).
//!
//! Sums are kept unfolded in a `u32`/`u64` accumulator and folded once at the end, so a
//! data segment whose payload sum was stored in the site image costs a few additions.

/// Adds `data` to a running one's-complement sum, treating it as big-endian 16-bit words
/// that start at an even offset. An odd trailing byte is padded with zero (RFC 1071).
///
/// The words are summed in the machine's own byte order and the folded sum swapped once
/// at the end: the one's-complement sum is independent of byte order (RFC 1071 §2(B)).
/// Summing 32-bit halves of 64-bit loads into a 64-bit accumulator needs no byte
/// shuffles and no carry chain, so the loop vectorises with plain SSE2 (the kernel's
/// target has no SSSE3 `pshufb`, and a big-endian load per word cost most of the time
/// the receive path spent checking a full segment).
#[inline]
pub fn accumulate(acc: u64, data: &[u8]) -> u64 {
    let mut native: u64 = 0;
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        let w = u64::from_ne_bytes(w);
        // Two 32-bit halves, each two native 16-bit words; the u64 cannot overflow for
        // any buffer shorter than 2^34 bytes.
        native += (w & 0xffff_ffff) + (w >> 32);
    }
    // The last 0-7 bytes: a 4-byte word, a 2-byte word, a byte, each if there (no loop).
    let mut rest = chunks.remainder();
    if let [a, b, c, d, more @ ..] = rest {
        let w = u32::from_ne_bytes([*a, *b, *c, *d]);
        native += u64::from(w & 0xffff) + u64::from(w >> 16);
        rest = more;
    }
    if let [a, b, more @ ..] = rest {
        native += u64::from(u16::from_ne_bytes([*a, *b]));
        rest = more;
    }
    if let [last] = rest {
        // The zero pad goes after the byte, whatever the machine's byte order.
        native += u64::from(u16::from_ne_bytes([*last, 0]));
    }
    acc + u64::from(u16::from_be(fold(native)))
}

/// Folds an accumulator into a 16-bit one's-complement sum (not yet inverted).
#[inline]
pub fn fold(acc: u64) -> u16 {
    // Two one's-complement additions with end-around carry (64 -> 32 -> 16 bits), no
    // data-dependent loop: 2^32 and 2^16 are both 1 modulo 0xffff, and such an addition
    // gives 0 only from two zeros, so this is RFC 1071's loop, value and zero alike.
    let (s, c) = (acc as u32).overflowing_add((acc >> 32) as u32);
    let s = s + u32::from(c); // at most 0xfffffffe + 1
    let (t, c) = (s as u16).overflowing_add((s >> 16) as u16);
    t + u16::from(c) // at most 0xfffe + 1
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
    // The four address words, unfolded (the caller folds): a few additions, where two
    // `accumulate` calls on four bytes each cost a loop set-up and a fold apiece.
    let (s, d) = (u32::from_be_bytes(src), u32::from_be_bytes(dst));
    u64::from(s >> 16)
        + u64::from(s & 0xffff)
        + u64::from(d >> 16)
        + u64::from(d & 0xffff)
        + u64::from(protocol)
        + u64::from(length)
}

/// The sum of the upper-layer pseudo-header for IPv6 (RFC 8200 §8.1), for TCP, UDP and
/// ICMPv6 alike: source, destination, the 32-bit upper-layer length, three zero octets
/// and the next header (the upper layer's, not the first extension header's).
#[inline]
pub fn pseudo_header_v6(src: &[u8; 16], dst: &[u8; 16], next_header: u8, length: u32) -> u64 {
    // The addresses as native 16-bit words, summed four at a time in 64-bit words (the
    // one's-complement sum is the same in either byte order, RFC 1071 §2(B)), then turned
    // into network order once: a few instructions where sixteen big-endian loads were
    // ~50, on every IPv6 segment in and out.
    let words = |b: &[u8; 16]| {
        let x = u128::from_ne_bytes(*b);
        let (lo, hi) = (x as u64, (x >> 64) as u64);
        (lo & 0xffff_ffff) + (lo >> 32) + (hi & 0xffff_ffff) + (hi >> 32)
    };
    let addrs = u64::from(u16::from_be(fold(words(src) + words(dst))));
    addrs + u64::from(length >> 16) + u64::from(length & 0xffff) + u64::from(next_header)
}

/// RFC 1624 eqn. 3: the new checksum field after a 16-bit word changed from `old` to `new`.
#[inline]
pub fn update(check: u16, old: u16, new: u16) -> u16 {
    !fold(u64::from(!check) + u64::from(!old) + u64::from(new))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The word-at-a-time pseudo-header sum folds to the same as RFC 8200 §8.1's
    /// definition, big-endian word by word, over addresses of every byte pattern.
    #[test]
    fn pseudo_header_v6_is_the_sum_of_its_words() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..10_000 {
            let mut a = [0u8; 32];
            for b in a.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *b = x as u8;
            }
            if x & 7 == 0 {
                a[..16].fill(0xff); // all ones: the carries
            }
            let (src, dst) = (a[..16].try_into().unwrap(), a[16..].try_into().unwrap());
            let (nh, len) = (x as u8, (x >> 8) as u32);
            let mut want = u64::from(len >> 16) + u64::from(len & 0xffff) + u64::from(nh);
            for i in 0..16 {
                want += u64::from(u16::from_be_bytes([a[2 * i], a[2 * i + 1]]));
            }
            assert_eq!(fold(pseudo_header_v6(&src, &dst, nh, len)), fold(want));
        }
    }

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

    /// The word-at-a-time definition of RFC 1071, for comparison.
    fn reference(data: &[u8]) -> u16 {
        let mut acc: u64 = 0;
        for pair in data.chunks(2) {
            acc += u64::from(u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]));
        }
        fold(acc)
    }

    #[test]
    fn matches_the_word_at_a_time_sum_for_every_length() {
        let data: [u8; 301] =
            core::array::from_fn(|i| (i as u8).wrapping_mul(151).wrapping_add(0xf7));
        for start in 0..9 {
            for end in start..=data.len() {
                let d = &data[start..end];
                assert_eq!(sum(d), reference(d), "bytes {start}..{end}");
            }
        }
        // All ones: the sums that carry most.
        let ff = [0xffu8; 1500];
        for len in [0, 1, 2, 7, 8, 9, 1499, 1500] {
            assert_eq!(sum(&ff[..len]), reference(&ff[..len]), "len {len}");
        }
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

    /// The loop of RFC 1071 that `fold` replaces.
    fn fold_loop(mut acc: u64) -> u16 {
        while acc > 0xffff {
            acc = (acc & 0xffff) + (acc >> 16);
        }
        acc as u16
    }

    #[test]
    fn fold_matches_the_carry_loop() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let edges = [
            0,
            1,
            0xffff,
            0x1_0000,
            0x1_fffe,
            0xffff_ffff,
            0x1_0000_0000,
            u64::MAX,
        ];
        for v in edges {
            assert_eq!(fold(v), fold_loop(v), "{v:#x}");
        }
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            for v in [x, x >> 16, x >> 32, x >> 40, x >> 47] {
                assert_eq!(fold(v), fold_loop(v), "{v:#x}");
            }
        }
    }

    #[test]
    fn pseudo_header_matches_the_summed_bytes() {
        let cases = [
            ([10, 0, 0, 1], [10, 0, 0, 2], 6, 40u16),
            ([255, 255, 255, 255], [255, 255, 255, 254], 17, 0xffff),
            ([0, 0, 0, 0], [192, 168, 1, 77], 6, 1460),
        ];
        for (src, dst, proto, len) in cases {
            let mut bytes = [0u8; 12];
            bytes[..4].copy_from_slice(&src);
            bytes[4..8].copy_from_slice(&dst);
            bytes[9] = proto;
            bytes[10..].copy_from_slice(&len.to_be_bytes());
            assert_eq!(fold(pseudo_header_v4(src, dst, proto, len)), sum(&bytes));
        }
    }

    #[test]
    fn pseudo_header_v6_matches_the_summed_bytes() {
        let mut a = [0u8; 16];
        a[0] = 0xfe;
        a[1] = 0x80;
        a[15] = 0x0a;
        let b = [0xffu8; 16];
        for (src, dst, nh, len) in [
            (a, b, 58u8, 32u32),
            (b, b, 6, 0x0001_0004),
            ([0; 16], a, 17, 65_535),
        ] {
            // RFC 8200 §8.1's layout: src, dst, length (32), 3 zeros, next header.
            let mut bytes = [0u8; 40];
            bytes[..16].copy_from_slice(&src);
            bytes[16..32].copy_from_slice(&dst);
            bytes[32..36].copy_from_slice(&len.to_be_bytes());
            bytes[39] = nh;
            assert_eq!(fold(pseudo_header_v6(&src, &dst, nh, len)), sum(&bytes));
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
