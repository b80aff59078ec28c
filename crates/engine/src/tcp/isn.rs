//! Initial sequence numbers per RFC 6528: `ISN = M + F(localip, localport, remoteip,
//! remoteport, secretkey)`, where M is a timer ticking every 4 µs and F is SipHash-2-4
//! keyed with a secret chosen at start. Off-path attackers cannot predict it; a reused
//! 4-tuple still gets a fresh, increasing ISN.

use core::hash::Hasher;

use siphasher::sip::SipHasher24;

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
    pub fn isn(&self, local: ([u8; 4], u16), remote: ([u8; 4], u16), now_ns: u64) -> u32 {
        let mut h = SipHasher24::new_with_key(&self.key);
        // One write of the whole 4-tuple: the hash is of the byte stream, so this is the
        // value four writes of its parts give, without three more trips through the
        // hasher's tail buffer (a per-connection cost, issue 18).
        let (b, n) = tuple_bytes(b"", local, remote);
        h.write(&b[..n]);
        // Fuzzing builds use F = 0, so the fuzzer can complete handshakes (as smoltcp
        // skips checksums under cfg(fuzzing)).
        let f = if cfg!(fuzzing) { 0 } else { h.finish() as u32 };
        let m = (now_ns / 4000) as u32;
        m.wrapping_add(f)
    }

    /// The offset added to a connection's timestamp clock (RFC 7323 §7.1, as Linux's
    /// `secure_tcp_ts_off`): keyed and per connection, unrelated to its ISN, so TSvals
    /// reveal neither the machine's uptime nor anything of other connections.
    pub fn ts_offset(&self, local: ([u8; 4], u16), remote: ([u8; 4], u16)) -> u32 {
        let mut h = SipHasher24::new_with_key(&self.key);
        let (b, n) = tuple_bytes(b"ts", local, remote);
        h.write(&b[..n]);
        h.finish() as u32
    }
}

/// `prefix` (at most 2 bytes), then the local address and port and the remote ones, ports
/// big-endian; and how many bytes of the array that is.
fn tuple_bytes(prefix: &[u8], local: ([u8; 4], u16), remote: ([u8; 4], u16)) -> ([u8; 14], usize) {
    let mut b = [0u8; 14];
    let p = prefix.len().min(2);
    b[..p].copy_from_slice(&prefix[..p]);
    b[p..p + 4].copy_from_slice(&local.0);
    b[p + 4..p + 6].copy_from_slice(&local.1.to_be_bytes());
    b[p + 6..p + 10].copy_from_slice(&remote.0);
    b[p + 10..p + 12].copy_from_slice(&remote.1.to_be_bytes());
    (b, p + 12)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyed_distinct_and_ticking() {
        let g = IsnGenerator::new([7; 16]);
        let a = g.isn(([10, 0, 0, 2], 80), ([10, 0, 0, 1], 40000), 0);
        let b = g.isn(([10, 0, 0, 2], 80), ([10, 0, 0, 1], 40001), 0);
        assert_ne!(a, b);
        assert_eq!(
            g.isn(([10, 0, 0, 2], 80), ([10, 0, 0, 1], 40000), 4_000_000),
            a.wrapping_add(1000)
        );
        let (l, r) = (([10, 0, 0, 2], 80), ([10, 0, 0, 1], 40000));
        assert_eq!(g.ts_offset(l, r), g.ts_offset(l, r));
        assert_ne!(g.ts_offset(l, r), g.ts_offset(l, ([10, 0, 0, 1], 40001)));
        assert_ne!(g.ts_offset(l, r), a, "not the ISN's hash");
        // The values of hashing the parts one write at a time (as before issue 18).
        let parts = |prefix: &[u8]| {
            let mut h = SipHasher24::new_with_key(&[7; 16]);
            h.write(prefix);
            h.write(&[10, 0, 0, 2]);
            h.write(&80u16.to_be_bytes());
            h.write(&[10, 0, 0, 1]);
            h.write(&40000u16.to_be_bytes());
            h.finish() as u32
        };
        assert_eq!(a, parts(b""));
        assert_eq!(g.ts_offset(l, r), parts(b"ts"));
        let other = IsnGenerator::new([8; 16]);
        assert_ne!(other.isn(([10, 0, 0, 2], 80), ([10, 0, 0, 1], 40000), 0), a);
    }
}
