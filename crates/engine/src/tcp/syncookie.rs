//! SYN cookies (RFC 4987 §3.6): when the half-open budget is spent, the SYN-ACK's initial
//! sequence number carries what the connection needs — the peer's MSS (as one of four
//! values), its window-scale shift and SACK-permitted — and a keyed MAC over the
//! connection's addresses, the client's ISN, those bits and a 64-second time counter. No
//! TCB is kept; the TCB is made when an ACK returns the cookie (ACK − 1) intact within
//! two periods.
//!
//! In network-core mode core 0 mints the cookie and an HTTP core checks it, each with its
//! own reading of the clock. Readings are taken after the frames (`Server::poll`), so the
//! checking core's is the later one; but two cores' clocks (each core's TSC) may disagree
//! by a little. A cookie minted just after a period began would then look a period from
//! the future to a core whose clock is still in the last one, and be refused (a RST to a
//! genuine client). So within [`SKEW_NS`] of the next period's start, that period is
//! accepted too. This costs nothing in forgery resistance: a cookie names its period in
//! its top four bits, so a guess is checked against one period's MAC whatever the set of
//! periods accepted — still 2^-21 per guess — and a genuine cookie of a period that has
//! not begun can only come from a core whose clock has begun it. Old cookies live no longer.
//!
//! ```text
//!  31    28 27 26 25    22 21  20                                0
//! ┌────────┬─────┬────────┬───┬──────────────────────────────────┐
//! │ t mod16│ mss │ wscale │ S │ MAC (21 bits, SipHash-2-4, keyed) │
//! └────────┴─────┴────────┴───┴──────────────────────────────────┘
//!   wscale 15 = the peer offered none; S = SACK permitted
//! ```
//!
//! A forged ACK passes with probability 2^-21 per guess (per period tried); the TCB it
//! would buy is reclaimed like any silent connection (the request timeout, eviction).

use core::hash::Hasher;

use siphasher::sip::SipHasher24;

use crate::wire::tcp::Options;

/// The MSS values a cookie can carry (the largest not above the peer's is chosen).
pub const MSS_TABLE: [u16; 4] = [536, 1220, 1440, 1460];
/// Length of one time period.
pub const PERIOD_NS: u64 = 64_000_000_000;
/// How far two cores' clocks may disagree (TSCs of one machine differ by microseconds;
/// this is generous): a cookie from this far in the future is genuine.
pub const SKEW_NS: u64 = 100_000_000;
const MAC_BITS: u32 = 21;
const MAC_MASK: u32 = (1 << MAC_BITS) - 1;
const NO_WS: u32 = 15;

/// What a valid cookie gives back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CookieOptions {
    /// The peer's MSS, rounded down to [`MSS_TABLE`].
    pub mss: u16,
    /// The peer's window-scale shift, if it offered one.
    pub window_scale: Option<u8>,
    /// The peer offered SACK.
    pub sack_permitted: bool,
}

impl CookieOptions {
    /// As the TCP options of the SYN they stand for.
    pub fn options(&self) -> Options {
        Options {
            mss: Some(self.mss),
            window_scale: self.window_scale,
            sack_permitted: self.sack_permitted,
            sack: crate::wire::tcp::SackBlocks::NONE,
            timestamps: None,
        }
    }
}

/// Makes and checks cookies with a secret key (the ISN key).
#[derive(Clone, Copy)]
pub struct SynCookies {
    key: [u8; 16],
}

impl core::fmt::Debug for SynCookies {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("SynCookies { key: (secret) }")
    }
}

/// The two ends of a connection: (our IP, port), (peer IP, port).
pub type Ends = (super::isn::End, super::isn::End);

impl SynCookies {
    /// Cookies keyed by `key`.
    pub fn new(key: [u8; 16]) -> SynCookies {
        SynCookies { key }
    }

    fn mac(&self, ends: Ends, client_isn: u32, bits: u32, period: u64) -> u32 {
        let mut h = SipHasher24::new_with_key(&self.key);
        let ((lip, lport), (rip, rport)) = ends;
        // An IPv4 address as its four bytes, an IPv6 one as its sixteen.
        let bytes = |ip: &[u8; 16]| -> ([u8; 16], usize) {
            match super::port_table::v4_of(ip) {
                Some(v4) => (
                    [
                        v4[0], v4[1], v4[2], v4[3], 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                    ],
                    4,
                ),
                None => (*ip, 16),
            }
        };
        let (l, ln) = bytes(&lip);
        let (r, rn) = bytes(&rip);
        h.write(&l[..ln]);
        h.write(&lport.to_be_bytes());
        h.write(&r[..rn]);
        h.write(&rport.to_be_bytes());
        h.write(&client_isn.to_be_bytes());
        h.write(&bits.to_be_bytes());
        h.write(&period.to_be_bytes());
        // Fuzzing builds use a zero MAC, so the fuzzer can complete cookie handshakes (as
        // ISNs use F = 0 there).
        if cfg!(fuzzing) {
            return 0;
        }
        (h.finish() as u32) & MAC_MASK
    }

    /// The ISS to send in a SYN-ACK for a SYN with `client_isn` and `opts` at `now_ns`.
    pub fn make(&self, ends: Ends, client_isn: u32, opts: &Options, now_ns: u64) -> u32 {
        let period = now_ns / PERIOD_NS;
        let peer_mss = opts.mss.unwrap_or(536);
        let mss_idx = MSS_TABLE.iter().rposition(|&m| m <= peer_mss).unwrap_or(0) as u32;
        let ws = opts.window_scale.map_or(NO_WS, |s| u32::from(s.min(14)));
        let bits = ((period as u32 & 15) << 28)
            | (mss_idx << 26)
            | (ws << 22)
            | (u32::from(opts.sack_permitted) << 21);
        bits | self.mac(ends, client_isn, bits, period)
    }

    /// What the ACK with sequence number `seq` and acknowledgment number `ack` returns, if
    /// it returns a genuine cookie: the cookie is `ack − 1`, the client's ISN `seq − 1`.
    pub fn check_ack(&self, ends: Ends, seq: u32, ack: u32, now_ns: u64) -> Option<CookieOptions> {
        self.check(ends, seq.wrapping_sub(1), ack.wrapping_sub(1), now_ns)
    }

    /// What the cookie `cookie` (the ACK's acknowledgment number − 1) of a connection whose
    /// client ISN was `client_isn` (its sequence number − 1) stands for, if it is genuine and
    /// at most two periods old (or from the next period, when `now_ns` is within
    /// [`SKEW_NS`] of its start: another core's clock may be there already).
    pub fn check(
        &self,
        ends: Ends,
        client_isn: u32,
        cookie: u32,
        now_ns: u64,
    ) -> Option<CookieOptions> {
        let now = now_ns / PERIOD_NS;
        let bits = cookie & !MAC_MASK;
        let t = u64::from(cookie >> 28);
        // The period whose low four bits are t among the one before now, now, and the next
        // if it begins within SKEW_NS: at most three, so t names one.
        let newest = now_ns.saturating_add(SKEW_NS) / PERIOD_NS;
        let period = (now.saturating_sub(1)..=newest).find(|p| p & 15 == t)?;
        if self.mac(ends, client_isn, bits, period) != cookie & MAC_MASK {
            return None;
        }
        let ws = (cookie >> 22) & 15;
        if ws > 14 && ws != NO_WS {
            return None;
        }
        Some(CookieOptions {
            mss: MSS_TABLE[((cookie >> 26) & 3) as usize],
            window_scale: (ws != NO_WS).then_some(ws as u8),
            sack_permitted: cookie & (1 << 21) != 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::port_table::mapped;

    const ENDS: Ends = ((mapped([10, 0, 0, 2]), 80), (mapped([10, 0, 0, 1]), 40000));
    const T0: u64 = 1_000 * PERIOD_NS + 5;

    fn opts(mss: Option<u16>, ws: Option<u8>, sack: bool) -> Options {
        Options {
            mss,
            window_scale: ws,
            sack_permitted: sack,
            sack: crate::wire::tcp::SackBlocks::NONE,
            timestamps: None,
        }
    }

    #[test]
    fn a_cookie_carries_the_options_back() {
        let c = SynCookies::new([9; 16]);
        for (o, want) in [
            (opts(Some(1460), Some(7), true), (1460, Some(7), true)),
            (opts(Some(1400), None, false), (1220, None, false)),
            (opts(None, Some(0), false), (536, Some(0), false)),
            (opts(Some(100), Some(20), true), (536, Some(14), true)),
            (opts(Some(9000), Some(14), false), (1460, Some(14), false)),
        ] {
            let cookie = c.make(ENDS, 777, &o, T0);
            let got = c.check(ENDS, 777, cookie, T0).expect("valid");
            assert_eq!((got.mss, got.window_scale, got.sack_permitted), want);
        }
    }

    #[test]
    fn a_cookie_lives_two_periods() {
        let c = SynCookies::new([9; 16]);
        let o = opts(Some(1460), None, false);
        let cookie = c.make(ENDS, 1, &o, T0);
        assert!(c.check(ENDS, 1, cookie, T0 + PERIOD_NS).is_some());
        assert!(c.check(ENDS, 1, cookie, T0 + 2 * PERIOD_NS).is_none());
        assert!(c.check(ENDS, 1, cookie, T0 + 16 * PERIOD_NS).is_none());
    }

    #[test]
    fn a_cookie_from_a_clock_slightly_ahead_is_genuine() {
        // Minted 0.5 ms into a period by a core whose clock is 3 ms ahead of ours.
        let c = SynCookies::new([9; 16]);
        let o = opts(Some(1460), None, false);
        let minted = 1_000 * PERIOD_NS + 500_000;
        let cookie = c.make(ENDS, 1, &o, minted);
        assert!(c.check(ENDS, 1, cookie, minted - 3_000_000).is_some());
        assert!(c
            .check(ENDS, 1, cookie, minted - SKEW_NS + 400_000)
            .is_some());
        // From further in the future than any core's clock can be: no cookie of ours.
        assert!(c
            .check(ENDS, 1, cookie, minted - SKEW_NS - 600_000)
            .is_none());
        assert!(c.check(ENDS, 1, cookie, minted - PERIOD_NS).is_none());
        // And it still lives two periods, no longer.
        assert!(c.check(ENDS, 1, cookie, minted + PERIOD_NS).is_some());
        assert!(c.check(ENDS, 1, cookie, minted + 2 * PERIOD_NS).is_none());
    }

    #[test]
    fn near_a_boundary_forgeries_rarely_pass() {
        // Three periods are accepted here, but a guess names one: still 2^-21 per guess.
        let c = SynCookies::new([3; 16]);
        let now = 1_001 * PERIOD_NS - SKEW_NS / 2;
        let mut x: u32 = 7;
        let mut passed = 0;
        for _ in 0..1 << 20 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            passed += u32::from(c.check(ENDS, 42, x, now).is_some());
        }
        assert!(passed <= 8, "{passed} forgeries passed");
    }

    #[test]
    fn anything_changed_fails() {
        let c = SynCookies::new([9; 16]);
        let o = opts(Some(1460), Some(7), true);
        let cookie = c.make(ENDS, 5, &o, T0);
        assert!(c.check(ENDS, 6, cookie, T0).is_none(), "client ISN");
        let other = ((mapped([10, 0, 0, 2]), 80), (mapped([10, 0, 0, 1]), 40001));
        assert!(c.check(other, 5, cookie, T0).is_none(), "port");
        assert!(
            SynCookies::new([8; 16])
                .check(ENDS, 5, cookie, T0)
                .is_none(),
            "key"
        );
        for bit in 0..32 {
            assert!(
                c.check(ENDS, 5, cookie ^ (1 << bit), T0).is_none(),
                "bit {bit} flipped"
            );
        }
    }

    #[test]
    fn forgeries_rarely_pass() {
        // 2^-21 per guess and period: of 2^20 random guesses, about one passes.
        let c = SynCookies::new([3; 16]);
        let mut x: u32 = 1;
        let mut passed = 0;
        for _ in 0..1 << 20 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            passed += u32::from(c.check(ENDS, 42, x, T0).is_some());
        }
        assert!(passed <= 8, "{passed} forgeries passed");
    }
}
