//! Initial sequence numbers per RFC 6528: `ISN = M + F(localip, localport, remoteip,
//! remoteport, secretkey)`, where M is a timer ticking every 4 µs and F is SipHash-2-4
//! keyed with a secret chosen at start. Off-path attackers cannot predict it; a reused
//! 4-tuple still gets a fresh, increasing ISN.
//!
//! The same hash gives the connection's timestamp offset (RFC 7323 §7.1): one
//! SipHash-2-4-128 of the 4-tuple, whose first 64-bit half gives F and whose second gives
//! the offset. The halves of a keyed PRF's output are as unrelated as two keyed hashes of
//! different inputs (what Linux computes, with two SipHash calls), at the cost of one hash
//! and SipHash-128's longer finalisation instead of two whole hashes, per connection.

use core::hash::Hasher;

use siphasher::sip128::{Hasher128, SipHasher24};

use super::port_table::v4_of;

/// Computes ISNs for one server.
#[derive(Clone)]
pub struct IsnGenerator {
    key: [u8; 16],
}

impl IsnGenerator {
    /// A generator with a 128-bit secret (from the platform's entropy at start).
    pub fn new(key: [u8; 16]) -> IsnGenerator {
        IsnGenerator { key }
    }

    /// The ISN for a connection at monotonic time `now_ns`.
    pub fn isn(&self, local: End, remote: End, now_ns: u64) -> u32 {
        self.isn_and_ts_offset(local, remote, now_ns).0
    }

    /// The offset added to a connection's timestamp clock (RFC 7323 §7.1, as Linux's
    /// `secure_tcp_ts_off`): keyed and per connection, unrelated to its ISN, so TSvals
    /// reveal neither the machine's uptime nor anything of other connections.
    pub fn ts_offset(&self, local: End, remote: End) -> u32 {
        self.hash(local, remote).1
    }

    /// [`isn`](Self::isn) and [`ts_offset`](Self::ts_offset) of a connection, from one
    /// hash (what a new connection needs).
    pub fn isn_and_ts_offset(&self, local: End, remote: End, now_ns: u64) -> (u32, u32) {
        let (f, ts_offset) = self.hash(local, remote);
        // Fuzzing builds use F = 0, so the fuzzer can complete handshakes (as smoltcp
        // skips checksums under cfg(fuzzing)).
        let f = if cfg!(fuzzing) { 0 } else { f };
        let m = (now_ns / 4000) as u32;
        (m.wrapping_add(f), ts_offset)
    }

    /// F and the timestamp offset: the low 32 bits of each half of SipHash-2-4-128 of the
    /// 4-tuple, written in one piece (one trip through the hasher's tail buffer).
    fn hash(&self, local: End, remote: End) -> (u32, u32) {
        let mut h = SipHasher24::new_with_key(&self.key);
        let (b, n) = tuple_bytes(local, remote);
        h.write(&b[..n]);
        let out = h.finish128();
        (out.h1 as u32, out.h2 as u32)
    }
}

/// One end of a connection: an address (IPv4-mapped for IPv4, [`mapped`]) and a port.
///
/// [`mapped`]: super::port_table::mapped
pub type End = ([u8; 16], u16);

/// The local address and port, then the remote ones, ports big-endian: an IPv4 4-tuple
/// as its twelve bytes, an IPv6 one as its thirty-six.
fn tuple_bytes(local: End, remote: End) -> ([u8; 36], usize) {
    let mut b = [0u8; 36];
    if let (Some(l), Some(r)) = (v4_of(&local.0), v4_of(&remote.0)) {
        b[..4].copy_from_slice(&l);
        b[4..6].copy_from_slice(&local.1.to_be_bytes());
        b[6..10].copy_from_slice(&r);
        b[10..12].copy_from_slice(&remote.1.to_be_bytes());
        return (b, 12);
    }
    b[..16].copy_from_slice(&local.0);
    b[16..18].copy_from_slice(&local.1.to_be_bytes());
    b[18..34].copy_from_slice(&remote.0);
    b[34..].copy_from_slice(&remote.1.to_be_bytes());
    (b, 36)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::port_table::mapped;

    fn a6(last: u8) -> [u8; 16] {
        let mut a = [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        a[15] = last;
        a
    }

    #[test]
    fn keyed_distinct_and_ticking() {
        let g = IsnGenerator::new([7; 16]);
        let a = g.isn(
            (mapped([10, 0, 0, 2]), 80),
            (mapped([10, 0, 0, 1]), 40000),
            0,
        );
        let b = g.isn(
            (mapped([10, 0, 0, 2]), 80),
            (mapped([10, 0, 0, 1]), 40001),
            0,
        );
        assert_ne!(a, b);
        assert_eq!(
            g.isn(
                (mapped([10, 0, 0, 2]), 80),
                (mapped([10, 0, 0, 1]), 40000),
                4_000_000
            ),
            a.wrapping_add(1000)
        );
        let (l, r) = ((mapped([10, 0, 0, 2]), 80), (mapped([10, 0, 0, 1]), 40000));
        assert_eq!(g.ts_offset(l, r), g.ts_offset(l, r));
        assert_ne!(
            g.ts_offset(l, r),
            g.ts_offset(l, (mapped([10, 0, 0, 1]), 40001))
        );
        assert_ne!(g.ts_offset(l, r), a, "not the ISN's hash");
        assert_eq!(g.isn_and_ts_offset(l, r, 0), (a, g.ts_offset(l, r)));
        // The values of hashing the parts one write at a time: both halves of one
        // SipHash-2-4-128 of the 4-tuple (before, two SipHash-2-4-64 hashes, the offset's
        // with a "ts" prefix: the values changed, keyed and per 4-tuple as before).
        let mut h = SipHasher24::new_with_key(&[7; 16]);
        h.write(&[10, 0, 0, 2]);
        h.write(&80u16.to_be_bytes());
        h.write(&[10, 0, 0, 1]);
        h.write(&40000u16.to_be_bytes());
        let parts = h.finish128();
        assert_eq!(a, parts.h1 as u32);
        assert_eq!(g.ts_offset(l, r), parts.h2 as u32);
        // An IPv6 4-tuple: its thirty-six bytes.
        let (l6, r6) = ((a6(2), 80), (a6(1), 40000));
        let mut h = SipHasher24::new_with_key(&[7; 16]);
        h.write(&a6(2));
        h.write(&80u16.to_be_bytes());
        h.write(&a6(1));
        h.write(&40000u16.to_be_bytes());
        assert_eq!(g.isn(l6, r6, 0), h.finish128().h1 as u32);
        let other = IsnGenerator::new([8; 16]);
        assert_ne!(
            other.isn(
                (mapped([10, 0, 0, 2]), 80),
                (mapped([10, 0, 0, 1]), 40000),
                0
            ),
            a
        );
    }
}
