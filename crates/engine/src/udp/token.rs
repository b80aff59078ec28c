//! Address-validation tokens (docs/udp-protocol.md §6): proof that a source address
//! receives what the server sends to it, without keeping anything per client. A token is
//! a period number and a keyed MAC of the address and that period, keyed like the TCP ISNs
//! and SYN cookies (SipHash-2-4 with the server's secret), so it cannot be forged or
//! carried to another address, and it expires by itself: it is accepted during the period
//! it was made in and the next one (64 to 128 s).
//!
//! ```text
//!  octet 0: period mod 256 │ octets 1–7: SipHash-2-4(key; "bwudp-token", address, period)
//! ```

use core::hash::Hasher;

use siphasher::sip::SipHasher24;

use super::wire::TOKEN_LEN;

/// Length of one token period.
pub const PERIOD_NS: u64 = 64_000_000_000;

/// Makes and checks tokens with a secret key.
#[derive(Clone, Copy)]
pub struct Tokens {
    key: [u8; 16],
}

impl core::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Tokens { key: (secret) }")
    }
}

impl Tokens {
    /// Tokens keyed by `key` (the server's ISN secret).
    pub fn new(key: [u8; 16]) -> Tokens {
        Tokens { key }
    }

    fn mac(&self, ip: &[u8], period: u64) -> [u8; 8] {
        let mut h = SipHasher24::new_with_key(&self.key);
        h.write(b"bwudp-token");
        h.write(ip);
        h.write(&period.to_be_bytes());
        h.finish().to_be_bytes()
    }

    /// The token for address `ip` (4 octets of IPv4, 16 of IPv6; the length is hashed
    /// too, so the two never share a token) at monotonic time `now_ns`.
    pub fn make(&self, ip: &[u8], now_ns: u64) -> [u8; TOKEN_LEN] {
        let period = now_ns / PERIOD_NS;
        let mac = self.mac(ip, period);
        let mut t = [0u8; TOKEN_LEN];
        t[0] = period as u8;
        t[1..].copy_from_slice(&mac[..TOKEN_LEN - 1]);
        t
    }

    /// Whether `token` was made for `ip` in this period or the previous one.
    pub fn check(&self, ip: &[u8], token: &[u8; TOKEN_LEN], now_ns: u64) -> bool {
        let now = now_ns / PERIOD_NS;
        let period = if token[0] == now as u8 {
            now
        } else if now > 0 && token[0] == (now - 1) as u8 {
            now - 1
        } else {
            return false;
        };
        // Constant-time compare: a timing difference must not reveal MAC bytes.
        let mac = self.mac(ip, period);
        let diff = mac[..TOKEN_LEN - 1]
            .iter()
            .zip(&token[1..])
            .fold(0u8, |d, (a, b)| d | (a ^ b));
        diff == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IP: &[u8] = &[10, 0, 0, 1];

    #[test]
    fn valid_for_its_period_and_the_next() {
        let t = Tokens::new([7; 16]);
        let now = 5 * PERIOD_NS + 123;
        let tok = t.make(IP, now);
        assert!(t.check(IP, &tok, now));
        assert!(t.check(IP, &tok, 6 * PERIOD_NS + PERIOD_NS - 1));
        assert!(!t.check(IP, &tok, 7 * PERIOD_NS));
        assert!(!t.check(IP, &tok, 4 * PERIOD_NS), "not before it was made");
    }

    #[test]
    fn bound_to_address_and_key() {
        let t = Tokens::new([7; 16]);
        let tok = t.make(IP, 0);
        assert!(!t.check(&[10, 0, 0, 2], &tok, 0));
        assert!(!Tokens::new([8; 16]).check(IP, &tok, 0));
        for i in 1..TOKEN_LEN {
            let mut bad = tok;
            bad[i] ^= 1;
            assert!(!t.check(IP, &bad, 0), "octet {i}");
        }
        let mut other_period = tok;
        other_period[0] = other_period[0].wrapping_add(1);
        assert!(!t.check(IP, &other_period, PERIOD_NS));
    }

    #[test]
    fn an_ipv6_token_is_bound_to_the_whole_address() {
        let t = Tokens::new([7; 16]);
        let mut a = [0u8; 16];
        a[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        a[15] = 1;
        let tok = t.make(&a, 0);
        assert!(t.check(&a, &tok, 0));
        // Another host in the same /64, or the IPv4 address its first octets spell: no.
        let mut b = a;
        b[15] = 2;
        assert!(!t.check(&b, &tok, 0));
        assert!(!t.check(&a[..4], &tok, 0));
    }
}
