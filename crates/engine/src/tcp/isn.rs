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
        h.write(&local.0);
        h.write(&local.1.to_be_bytes());
        h.write(&remote.0);
        h.write(&remote.1.to_be_bytes());
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
        h.write(b"ts");
        h.write(&local.0);
        h.write(&local.1.to_be_bytes());
        h.write(&remote.0);
        h.write(&remote.1.to_be_bytes());
        h.finish() as u32
    }
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
        let other = IsnGenerator::new([8; 16]);
        assert_ne!(other.isn(([10, 0, 0, 2], 80), ([10, 0, 0, 1], 40000), 0), a);
    }
}
