//! Frames for the server's own client connection (its ACME client to the CA, with its DNS
//! lookups), handed over rather than answered: TCP segments to a reserved range of local
//! ports, UDP datagrams to the resolver's ports, and ARP replies (the client learns its
//! next hop itself). Every core posts what it receives for them into one [`Divert`] (a
//! [`Mailbox`]), which the core that runs the client empties (`Divert::take`).
//!
//! Nothing here is on the request path: a TCP segment is looked at only once it is known
//! not to be for a port the server serves (where it would otherwise get a RST), a UDP
//! datagram only once it is known not to be the UDP protocol's, an ARP reply only once
//! the server has learnt from it.

use crate::mailbox::{Mailbox, MAIL_MAX};

/// Frames the mailbox holds: a client connection's receive window (32 KiB) of full
/// segments, with room to spare.
pub const SLOTS: usize = 48;

/// The shared hand-over (leaked at start, one for every core).
#[derive(Debug)]
pub struct Divert {
    tcp: (u16, u16),
    udp: (u16, u16),
    mail: Mailbox<SLOTS>,
    /// Set by a post, cleared by a take: the one load the owner's loop makes.
    waiting: core::sync::atomic::AtomicBool,
}

impl Divert {
    /// Hands over TCP segments to local ports `tcp` (first, last) and UDP datagrams to
    /// local ports `udp` (first, last).
    pub fn new(tcp: (u16, u16), udp: (u16, u16)) -> Divert {
        Divert {
            tcp,
            udp,
            mail: Mailbox::new(),
            waiting: core::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Whether a TCP segment to local port `port` is the client's.
    pub fn takes_tcp(&self, port: u16) -> bool {
        (self.tcp.0..=self.tcp.1).contains(&port)
    }

    /// Whether `frame` is an IPv4 UDP datagram to one of the client's ports, sent to our
    /// MAC and address (the header fields only; the owner checks the rest): flooded or
    /// broadcast datagrams for others never fill the mailbox.
    pub fn takes_udp(&self, frame: &[u8], mac: [u8; 6], ip: [u8; 4]) -> bool {
        if frame.len() < 42 || frame[12..14] != [8, 0] || frame[23] != 17 {
            return false;
        }
        if frame[..6] != mac || frame[30..34] != ip {
            return false;
        }
        let at = 14 + usize::from(frame[14] & 0xf) * 4;
        match frame.get(at + 2..at + 4) {
            Some(p) => (self.udp.0..=self.udp.1).contains(&u16::from_be_bytes([p[0], p[1]])),
            None => false,
        }
    }

    /// Posts a copy of `frame` for the client (false: dropped, the mailbox full).
    pub fn post(&self, frame: &[u8]) -> bool {
        let posted = self.mail.post(frame);
        if posted {
            self.waiting
                .store(true, core::sync::atomic::Ordering::Release);
        }
        posted
    }

    /// Whether a frame waits for the client (one load).
    pub fn pending(&self) -> bool {
        self.waiting.load(core::sync::atomic::Ordering::Relaxed)
    }

    /// Frames dropped because the mailbox was full.
    pub fn dropped(&self) -> u64 {
        self.mail
            .dropped
            .load(core::sync::atomic::Ordering::Relaxed)
    }

    /// Takes each frame posted (the client's owner alone), handing it to `f` in `buf`.
    pub fn take(&self, buf: &mut [u8; MAIL_MAX], f: impl FnMut(&[u8])) {
        // Cleared first: a post racing the take sets it again for the next round.
        self.waiting
            .store(false, core::sync::atomic::Ordering::Relaxed);
        core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
        self.mail.take(buf, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ranges_are_what_is_taken() {
        let d = Divert::new((40_000, 40_015), (49_152, 65_535));
        assert!(d.takes_tcp(40_000) && d.takes_tcp(40_015));
        assert!(!d.takes_tcp(39_999) && !d.takes_tcp(80));
        let (mac, ip) = ([2, 0, 0, 0, 0, 2], [10, 0, 0, 2]);
        let mut f = [0u8; 42];
        f[..6].copy_from_slice(&mac);
        f[30..34].copy_from_slice(&ip);
        f[12..14].copy_from_slice(&[8, 0]);
        f[14] = 0x45;
        f[23] = 17;
        f[36..38].copy_from_slice(&50_000u16.to_be_bytes());
        assert!(d.takes_udp(&f, mac, ip));
        f[36..38].copy_from_slice(&53u16.to_be_bytes());
        assert!(!d.takes_udp(&f, mac, ip));
        f[36..38].copy_from_slice(&50_000u16.to_be_bytes());
        f[23] = 6;
        assert!(!d.takes_udp(&f, mac, ip), "TCP is not UDP");
        assert!(!d.takes_udp(&f[..41], mac, ip), "too short");
        f[23] = 17;
        assert!(!d.takes_udp(&f, [0xff; 6], ip), "another MAC's");
        assert!(!d.takes_udp(&f, mac, [10, 0, 0, 3]), "another address's");
    }
}
