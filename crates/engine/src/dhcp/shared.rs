//! What the cores share about DHCP (one [`Shared`], leaked at start): the address the
//! owning core's client holds, published for every core's server; the client's state and
//! counters for the stats page and the console; and a mailbox through which a core that
//! is not the owner hands over a DHCP reply its queue received (per-queue mode: the NIC
//! may steer a reply to any queue).
//!
//! Lock-free: the address is a sequence-counted record (one writer, the owner; readers
//! retry on a torn read), the mailbox a few slots each claimed with one compare-and-swap.
//! Nothing here is on the request path: a server reads the sequence number once per poll.

use core::fmt::{self, Write};
use core::sync::atomic::{fence, AtomicU32, AtomicU64, AtomicU8, Ordering};

use super::client::{Change, Counts, Lease, Loss, State};
use crate::mailbox::Mailbox;
use crate::nic::Clock;
use crate::wire::Ipv4Address;

/// The last change published.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// Nothing yet.
    None,
    /// A new lease.
    Acquired,
    /// The lease extended.
    Renewed,
    /// The lease ran out.
    Expired,
    /// A server refused to extend it.
    Nak,
}

impl Event {
    /// The event of a change.
    pub fn of(c: &Change) -> Event {
        match c {
            Change::Acquired(_) => Event::Acquired,
            Change::Renewed(_) => Event::Renewed,
            Change::Lost(_, Loss::Expired) => Event::Expired,
            Change::Lost(_, Loss::Nak) => Event::Nak,
        }
    }
}

/// Mailbox slots.
const SLOTS: usize = 4;
pub use crate::mailbox::MAIL_MAX;

fn ip4(v: u32) -> Ipv4Address {
    Ipv4Address(v.to_be_bytes())
}

/// The DHCP state shared by the cores.
pub struct Shared {
    seq: AtomicU32,
    ip: AtomicU32,
    /// Prefix length, and bit 8: a router is set.
    prefix: AtomicU32,
    router: AtomicU32,
    server: AtomicU32,
    lease_s: AtomicU32,
    t1_s: AtomicU32,
    /// The address last lost (for the console).
    lost: AtomicU32,
    event: AtomicU8,
    /// When the lease ends (monotonic ns; `u64::MAX`: infinite or none).
    end_ns: AtomicU64,
    state: AtomicU8,
    counts: [AtomicU64; 9],
    /// Replies a core that is not the owner received, for the owner.
    mail: Mailbox<SLOTS>,
    /// The clock the lease's end is on, for the time left on the pages.
    clock: Option<&'static (dyn Clock + Sync)>,
}

/// The address to serve on: ours, its prefix, and the router (`None` while there is no
/// lease: answer nothing).
pub type Address = Option<(Ipv4Address, u8, Option<Ipv4Address>)>;

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shared")
            .field("address", &self.address())
            .finish_non_exhaustive()
    }
}

impl Default for Shared {
    fn default() -> Self {
        Self::new()
    }
}

impl Shared {
    /// No address yet, state INIT.
    pub fn new() -> Shared {
        Shared {
            seq: AtomicU32::new(0),
            ip: AtomicU32::new(0),
            prefix: AtomicU32::new(0),
            router: AtomicU32::new(0),
            server: AtomicU32::new(0),
            lease_s: AtomicU32::new(0),
            t1_s: AtomicU32::new(0),
            lost: AtomicU32::new(0),
            event: AtomicU8::new(0),
            end_ns: AtomicU64::new(u64::MAX),
            state: AtomicU8::new(0),
            counts: core::array::from_fn(|_| AtomicU64::new(0)),
            mail: Mailbox::new(),
            clock: None,
        }
    }

    /// With `clock` (the one the client runs on) the pages show the lease's time left.
    pub fn with_clock(mut self, clock: &'static (dyn Clock + Sync)) -> Shared {
        self.clock = Some(clock);
        self
    }

    /// The number of the last address published (even when stable): a server compares it
    /// with the one it applied.
    pub fn generation(&self) -> u32 {
        self.seq.load(Ordering::Acquire)
    }

    /// Publishes `lease` (or its loss, `None`) with its end at `end_ns` (owner only), and
    /// what happened.
    pub fn publish(&self, lease: Option<&Lease>, end_ns: u64, event: Event) {
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        let bits = |a: Ipv4Address| a.to_bits();
        match lease {
            Some(l) => {
                self.ip.store(bits(l.address), Ordering::Relaxed);
                let r = u32::from(l.router.is_some()) << 8;
                self.prefix
                    .store(u32::from(l.prefix_len) | r, Ordering::Relaxed);
                self.router
                    .store(l.router.map_or(0, bits), Ordering::Relaxed);
                self.server.store(bits(l.server), Ordering::Relaxed);
                self.lease_s.store(l.lease_s, Ordering::Relaxed);
                self.t1_s.store(l.t1_s, Ordering::Relaxed);
                self.end_ns.store(end_ns, Ordering::Relaxed);
            }
            None => {
                let old = self.ip.swap(0, Ordering::Relaxed);
                if old != 0 {
                    self.lost.store(old, Ordering::Relaxed);
                }
                self.prefix.store(0, Ordering::Relaxed);
                self.end_ns.store(u64::MAX, Ordering::Relaxed);
            }
        }
        self.event.store(event as u8, Ordering::Relaxed);
        self.seq.store(s.wrapping_add(2), Ordering::Release);
    }

    /// What the last publication was.
    pub fn last_event(&self) -> Event {
        match self.event.load(Ordering::Relaxed) {
            1 => Event::Acquired,
            2 => Event::Renewed,
            3 => Event::Expired,
            4 => Event::Nak,
            _ => Event::None,
        }
    }

    /// The address last lost.
    pub fn lost_address(&self) -> Ipv4Address {
        ip4(self.lost.load(Ordering::Relaxed))
    }

    /// The lease published, as far as it is kept here (no DNS; T2 not kept: 0).
    pub fn lease(&self) -> Option<Lease> {
        let (address, prefix_len, router) = self.address()?;
        Some(Lease {
            address,
            prefix_len,
            router,
            server: ip4(self.server.load(Ordering::Relaxed)),
            dns: None,
            lease_s: self.lease_s.load(Ordering::Relaxed),
            t1_s: self.t1_s.load(Ordering::Relaxed),
            t2_s: 0,
        })
    }

    /// The address published, read consistently.
    pub fn address(&self) -> Address {
        loop {
            let s = self.seq.load(Ordering::Acquire);
            if s % 2 == 1 {
                core::hint::spin_loop();
                continue;
            }
            let ip = ip4(self.ip.load(Ordering::Relaxed));
            let p = self.prefix.load(Ordering::Relaxed);
            let router = ip4(self.router.load(Ordering::Relaxed));
            fence(Ordering::Acquire);
            if self.seq.load(Ordering::Relaxed) != s {
                continue;
            }
            if ip.is_unspecified() {
                return None;
            }
            return Some((ip, (p & 0xff) as u8, (p & 0x100 != 0).then_some(router)));
        }
    }

    /// Records the client's state and counters (owner only; for the pages).
    pub fn record(&self, state: State, c: &Counts) {
        self.state.store(state as u8, Ordering::Relaxed);
        let v = [
            c.discovers,
            c.requests,
            c.offers,
            c.acks,
            c.naks,
            c.expired,
            c.retransmits,
            c.refused(),
            c.bad_xid + c.bad_chaddr,
        ];
        for (a, v) in self.counts.iter().zip(v) {
            a.store(v, Ordering::Relaxed);
        }
    }

    /// Hands a received frame to the owner (a core that is not the owner). Returns false
    /// if every slot was full (counted in [`Shared::mail_dropped`]) or it is too long.
    pub fn post(&self, frame: &[u8]) -> bool {
        self.mail.post(frame)
    }

    /// Replies dropped because every slot was full.
    pub fn mail_dropped(&self) -> u64 {
        self.mail.dropped.load(Ordering::Relaxed)
    }

    /// Takes each frame posted (the owner), handing it to `f` in `buf`.
    pub fn take(&self, buf: &mut [u8; MAIL_MAX], f: impl FnMut(&[u8])) {
        self.mail.take(buf, f)
    }

    /// Writes the `dhcp` object of the stats JSON.
    pub fn write_json(&self, w: &mut impl Write) -> fmt::Result {
        const STATES: [&str; 6] = [
            "init",
            "selecting",
            "requesting",
            "bound",
            "renewing",
            "rebinding",
        ];
        let st = STATES
            .get(usize::from(self.state.load(Ordering::Relaxed)))
            .unwrap_or(&"init");
        write!(w, "{{\"state\":\"{st}\"")?;
        match self.address() {
            Some((ip, len, router)) => {
                write!(w, ",\"address\":\"{ip}/{len}\",\"router\":")?;
                match router {
                    Some(r) => write!(w, "\"{r}\"")?,
                    None => w.write_str("null")?,
                }
                let server = ip4(self.server.load(Ordering::Relaxed));
                let end = self.end_ns.load(Ordering::Relaxed);
                write!(
                    w,
                    ",\"server\":\"{server}\",\"lease_s\":{},\"remaining_s\":",
                    self.lease_s.load(Ordering::Relaxed)
                )?;
                match self.clock {
                    Some(c) if end != u64::MAX => {
                        write!(w, "{}", end.saturating_sub(c.now_ns()) / 1_000_000_000)?
                    }
                    _ => w.write_str("null")?,
                }
            }
            None => w.write_str(",\"address\":null")?,
        }
        for (name, v) in self.counters() {
            write!(w, ",\"{name}\":{v}")?;
        }
        w.write_str("}")
    }

    /// The counters by name (also the metrics' `bareweb_dhcp_*`).
    pub fn counters(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        const NAMES: [&str; 10] = [
            "discovers",
            "requests",
            "offers",
            "acks",
            "naks",
            "expired",
            "retransmits",
            "refused",
            "refused_not_ours",
            "mail_dropped",
        ];
        NAMES.into_iter().enumerate().map(|(i, n)| {
            let v = match self.counts.get(i) {
                Some(a) => a.load(Ordering::Relaxed),
                None => self.mail_dropped(),
            };
            (n, v)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::String;

    #[test]
    fn address_published_and_mail_passed() {
        struct One;
        impl Clock for One {
            fn now_ns(&self) -> u64 {
                1_000_000_000
            }
            fn unix_secs(&self) -> u64 {
                0
            }
        }
        let s = Shared::new().with_clock(&One);
        assert_eq!(s.address(), None);
        let g = s.generation();
        let l = Lease {
            address: Ipv4Address([10, 0, 2, 15]),
            prefix_len: 24,
            router: Some(Ipv4Address([10, 0, 2, 2])),
            server: Ipv4Address([10, 0, 2, 2]),
            dns: None,
            lease_s: 86400,
            t1_s: 43200,
            t2_s: 75600,
        };
        s.publish(Some(&l), 86_400_000_000_000, Event::Acquired);
        assert_ne!(s.generation(), g);
        assert_eq!(
            s.address(),
            Some((l.address, 24, Some(Ipv4Address([10, 0, 2, 2]))))
        );
        let mut j = String::new();
        s.record(State::Bound, &Counts::default());
        s.write_json(&mut j).unwrap();
        assert!(
            j.starts_with(
                "{\"state\":\"bound\",\"address\":\"10.0.2.15/24\",\"router\":\"10.0.2.2\",\
                 \"server\":\"10.0.2.2\",\"lease_s\":86400,\"remaining_s\":86399,\"discovers\":0"
            ),
            "{j}"
        );
        s.publish(None, 0, Event::Nak);
        assert_eq!(s.address(), None);
        assert_eq!((s.last_event(), s.lost_address()), (Event::Nak, l.address));
        // The mailbox: four slots, then dropped; taken in full.
        let f: std::vec::Vec<u8> = (0..300u32).map(|i| i as u8).collect();
        for _ in 0..4 {
            assert!(s.post(&f));
        }
        assert!(!s.post(&f));
        assert!(!s.post(&[0; MAIL_MAX + 1]));
        let mut buf = [0; MAIL_MAX];
        let mut n = 0;
        s.take(&mut buf, |b| {
            assert_eq!(b, &f[..]);
            n += 1;
        });
        assert_eq!(n, 4);
        assert_eq!(s.mail_dropped(), 2);
        s.take(&mut buf, |_| panic!("empty"));
    }
}
