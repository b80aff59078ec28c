//! IPv6 on a machine whose cores each own a queue of the NIC (the per-queue mode): one
//! link, many queues. The device spreads frames over the queues by its own hash, so any
//! core may receive any IPv6 frame, but the link's state (DAD, the neighbour cache,
//! routers, the groups, the DHCPv6 lease) must live in one place. It lives on core 0, the
//! hub; every other core is a spoke that follows it:
//!
//! - the hub publishes its addresses in use, by slot ([`Table`], a sequence lock): a
//!   spoke's link mirrors them and serves TCP and UDP to them, answers echo and a
//!   neighbour solicitation for them (both stateless), and keeps its connections' slots
//!   as the hub numbers them;
//! - a spoke passes the frames that change the link's state (router advertisements,
//!   solicitations for another target, DAD's among them, advertisements, queries,
//!   DHCPv6's answers) up to the hub over a ring, which takes them as if from its own
//!   queue; any other message it drops, as the hub would;
//! - a Packet Too Big concerns whichever core holds the connection: the core that
//!   receives one and does not hold it sends it on (a spoke to the hub, the hub to every
//!   spoke but the one it came from) until the core that does takes it; one goes up only
//!   while the ring is less than half full ([`Share::pass`]'s `bulk`).
//!
//! The rings are the engine's single-producer single-consumer ones, two per spoke, of
//! [`RING_FRAMES`] frames: a flood from one queue fills its ring and is dropped there
//! (counted), never more than a ring's worth of work for the hub per round. Nothing here
//! is on the path of a TCP segment: a spoke looks at the table's generation once per
//! round.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::slaac::MAX_PREFIXES;
use crate::ring::{channel, Consumer, Producer};
use crate::wire::Ipv6Address;

/// Our address slots: the link-local address, then one per prefix slot
/// ([`Link::slot_of`](super::ipv6::Link::slot_of)).
pub const SLOTS: usize = 1 + MAX_PREFIXES;

/// The addresses in use, by slot.
pub type Slots = [Option<Ipv6Address>; SLOTS];

/// Frames a ring holds between two cores.
pub const RING_FRAMES: usize = 16;

/// The longest frame passed (Ethernet's 1514 and a VLAN tag); a longer one is dropped.
pub const MAIL_BYTES: usize = 1518;

/// A frame passed between cores.
#[derive(Clone)]
pub struct Mail {
    len: u16,
    bytes: [u8; MAIL_BYTES],
}

impl Default for Mail {
    fn default() -> Mail {
        Mail {
            len: 0,
            bytes: [0; MAIL_BYTES],
        }
    }
}

impl Mail {
    /// The frame.
    pub fn frame(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// What the hub publishes: its addresses in use by slot, and its router for peers beyond
/// the link ([`Link::router`](super::ipv6::Link::router)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Published {
    /// The addresses in use, by slot.
    pub slots: Slots,
    /// The router.
    pub router: Option<Ipv6Address>,
}

/// Core 0's addresses in use, by slot, and its router, for the other cores: a sequence lock (the writer
/// makes the count odd, writes, makes it even; a reader retries while it is odd or
/// moved). Each address is two atomic words, so a torn read is never undefined, only
/// retried.
#[derive(Debug, Default)]
pub struct Table {
    seq: AtomicU32,
    /// The addresses by slot, then the router.
    words: [[AtomicU64; 2]; SLOTS + 1],
}

impl Table {
    /// Writes `p` (the hub alone writes).
    fn publish(&self, p: &Published) {
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s.wrapping_add(1), Ordering::Relaxed);
        core::sync::atomic::fence(Ordering::Release);
        for (w, a) in self.words.iter().zip(p.slots.iter().chain([&p.router])) {
            let b = a.map_or([0; 16], |a| a.0);
            let hi = u64::from_be_bytes(b[..8].try_into().unwrap_or_default());
            let lo = u64::from_be_bytes(b[8..].try_into().unwrap_or_default());
            w[0].store(hi, Ordering::Relaxed);
            w[1].store(lo, Ordering::Relaxed);
        }
        self.seq.store(s.wrapping_add(2), Ordering::Release);
    }

    /// The generation: changes with every publication.
    fn generation(&self) -> u32 {
        self.seq.load(Ordering::Acquire)
    }

    /// The addresses and their generation, read whole.
    /// `None` while the hub is writing (or wrote meanwhile): the caller tries again at
    /// its next round rather than spin on a writer the host may have preempted.
    fn read(&self) -> Option<(u32, Published)> {
        {
            let s = self.seq.load(Ordering::Acquire);
            if s & 1 == 1 {
                return None;
            }
            let mut out = [None; SLOTS + 1];
            for (o, w) in out.iter_mut().zip(&self.words) {
                let hi = w[0].load(Ordering::Relaxed);
                let lo = w[1].load(Ordering::Relaxed);
                if hi | lo != 0 {
                    let mut b = [0u8; 16];
                    b[..8].copy_from_slice(&hi.to_be_bytes());
                    b[8..].copy_from_slice(&lo.to_be_bytes());
                    *o = Some(Ipv6Address(b));
                }
            }
            core::sync::atomic::fence(Ordering::Acquire);
            let mut slots = [None; SLOTS];
            slots.copy_from_slice(&out[..SLOTS]);
            let published = Published {
                slots,
                router: out[SLOTS],
            };
            (self.seq.load(Ordering::Relaxed) == s).then_some((s, published))
        }
    }
}

/// Puts `frame` on `ring`; false when it is full or the frame too long.
fn post(ring: &mut Producer<Mail>, frame: &[u8]) -> bool {
    let Ok(len) = u16::try_from(frame.len()) else {
        return false;
    };
    if frame.len() > MAIL_BYTES {
        return false;
    }
    ring.with_slot(|m| {
        m.len = len;
        m.bytes[..frame.len()].copy_from_slice(frame);
    })
    .is_some()
        && ring.commit()
}

/// Core 0's end: the table it publishes, and a ring from and to each spoke.
pub struct Hub {
    table: Arc<Table>,
    published: Published,
    /// From spoke `k` at `k - 1`.
    pub up: Vec<Consumer<Mail>>,
    /// To the spokes.
    pub down: Down,
}

impl Hub {
    /// Publishes `slots` and `router` if they changed since the last publication.
    pub fn publish(&mut self, slots: &Slots, router: Option<Ipv6Address>) {
        let now = Published {
            slots: *slots,
            router,
        };
        if now != self.published {
            self.published = now;
            self.table.publish(&now);
        }
    }
}

/// The hub's rings to the spokes (spoke `k` at `k - 1`).
pub struct Down(Vec<Producer<Mail>>);

impl Down {
    /// Sends `frame` to every spoke but core `except`; returns (frames posted, rings
    /// full).
    pub fn to_spokes(&mut self, frame: &[u8], except: Option<usize>) -> (u64, u64) {
        let (mut posted, mut full) = (0, 0);
        for (i, ring) in self.0.iter_mut().enumerate() {
            if Some(i + 1) != except {
                match post(ring, frame) {
                    true => posted += 1,
                    false => full += 1,
                }
            }
        }
        (posted, full)
    }
}

/// Another core's end: the hub's table as last read, and its rings to and from the hub.
pub struct Spoke {
    table: Arc<Table>,
    seen: u32,
    up: Producer<Mail>,
    /// From the hub.
    pub down: Consumer<Mail>,
}

impl Spoke {
    /// The hub's addresses and router, when they changed since the last call (the first
    /// call always gives them).
    pub fn news(&mut self) -> Option<Published> {
        if self.table.generation() == self.seen {
            return None;
        }
        let (g, published) = self.table.read()?;
        self.seen = g;
        Some(published)
    }

    /// Passes `frame` up to the hub; false when the ring is full.
    pub fn to_hub(&mut self, frame: &[u8]) -> bool {
        post(&mut self.up, frame)
    }
}

/// One core's end of the sharing.
pub enum Share {
    /// Core 0's.
    Hub(Hub),
    /// Core `k`'s (`k` > 0).
    Spoke(Spoke),
}

impl Share {
    /// Passes on `frame`, which this core acted on (or, a spoke, could not), received
    /// from its own queue (`from`: `None`) or from core `from`'s ring: a spoke's own goes
    /// up to the hub, the hub's to every spoke but the one it came from; nothing else is
    /// passed (no frame goes round twice). A `bulk` frame (a Packet Too Big, which anyone
    /// may forge) goes up only while the ring is less than half full: the rest is kept for
    /// the link's own frames. Returns (frames posted, rings full).
    pub fn pass(&mut self, frame: &[u8], from: Option<usize>, bulk: bool) -> (u64, u64) {
        match self {
            Share::Spoke(s) if from.is_none() => {
                let room = !bulk || s.up.free() > RING_FRAMES / 2;
                match room && s.to_hub(frame) {
                    true => (1, 0),
                    false => (0, 1),
                }
            }
            Share::Spoke(_) => (0, 0),
            Share::Hub(h) => h.down.to_spokes(frame, from),
        }
    }
}

/// The ends for `cores` cores: the hub's (core 0's) first, then each spoke's in core
/// order. Allocates every ring now.
pub fn share(cores: usize) -> Vec<Share> {
    let table = Arc::new(Table::default());
    // A spoke's first `news` reads the table even before the hub publishes.
    let unseen = u32::MAX;
    let mut hub = Hub {
        table: table.clone(),
        published: Published::default(),
        up: Vec::with_capacity(cores),
        down: Down(Vec::with_capacity(cores)),
    };
    let mut spokes = Vec::with_capacity(cores);
    for _ in 1..cores {
        let (up_p, up_c) = channel(RING_FRAMES);
        let (down_p, down_c) = channel(RING_FRAMES);
        hub.up.push(up_c);
        hub.down.0.push(down_p);
        spokes.push(Share::Spoke(Spoke {
            table: table.clone(),
            seen: unseen,
            up: up_p,
            down: down_c,
        }));
    }
    let mut all = Vec::with_capacity(cores);
    all.push(Share::Hub(hub));
    all.extend(spokes);
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(last: u8) -> Ipv6Address {
        let mut b = [0u8; 16];
        b[0] = 0xfe;
        b[1] = 0x80;
        b[15] = last;
        Ipv6Address(b)
    }

    fn ends(cores: usize) -> (Hub, Vec<Spoke>) {
        let mut it = share(cores).into_iter();
        let Some(Share::Hub(h)) = it.next() else {
            panic!("hub first")
        };
        let s = it
            .map(|s| match s {
                Share::Spoke(s) => s,
                Share::Hub(_) => panic!("one hub"),
            })
            .collect();
        (h, s)
    }

    #[test]
    fn a_spoke_sees_each_publication_once_and_whole() {
        let (mut hub, mut spokes) = ends(3);
        assert_eq!(spokes.len(), 2);
        // Before any publication: nothing in use.
        assert_eq!(spokes[0].news(), Some(Published::default()));
        assert_eq!(spokes[0].news(), None);
        let mut slots = [None; SLOTS];
        slots[0] = Some(addr(1));
        slots[3] = Some(addr(3));
        let router = None;
        hub.publish(&slots, router);
        let p = |slots, router| Some(Published { slots, router });
        assert_eq!(spokes[0].news(), p(slots, router));
        assert_eq!(spokes[1].news(), p(slots, router));
        assert_eq!(spokes[0].news(), None);
        // The same addresses again: no new generation.
        hub.publish(&slots, router);
        assert_eq!(spokes[0].news(), None);
        slots[3] = None;
        hub.publish(&slots, router);
        assert_eq!(spokes[0].news(), p(slots, router));
        // A router alone is news too, and its going.
        hub.publish(&slots, Some(addr(9)));
        assert_eq!(spokes[0].news(), p(slots, Some(addr(9))));
        hub.publish(&slots, None);
        assert_eq!(spokes[0].news(), p(slots, None));
    }

    #[test]
    fn frames_go_up_and_down_and_a_full_ring_refuses() {
        let (mut hub, mut spokes) = ends(3);
        assert!(spokes[1].to_hub(b"from two"));
        assert_eq!(
            hub.up[1].with_front(|m| m.frame().to_vec()),
            Some(b"from two".to_vec())
        );
        assert_eq!(hub.up[0].with_front(|m| m.len), None);
        // To every spoke but core 2.
        assert_eq!(hub.down.to_spokes(b"too big", Some(2)), (1, 0));
        assert_eq!(
            spokes[0].down.with_front(|m| m.frame().to_vec()),
            Some(b"too big".to_vec())
        );
        assert_eq!(spokes[1].down.with_front(|m| m.len), None);
        // A frame longer than a mail is refused, and a ring holds RING_FRAMES.
        assert!(!spokes[0].to_hub(&[0u8; MAIL_BYTES + 1]));
        let mut posted = 0;
        while spokes[0].to_hub(&[1u8; 60]) {
            posted += 1;
        }
        assert_eq!(posted, RING_FRAMES);
    }

    #[test]
    fn readers_on_other_threads_never_see_a_torn_table() {
        use std::sync::atomic::AtomicBool;
        let (mut hub, mut spokes) = ends(2);
        let mut spoke = spokes.pop().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let done = stop.clone();
        let reader = std::thread::spawn(move || {
            let mut seen = 0u32;
            while !done.load(Ordering::Relaxed) {
                if let Some(p) = spoke.news() {
                    // Every publication is a whole one: both slots and the router hold the
                    // same byte.
                    match (p.slots[0], p.slots[1], p.router) {
                        (Some(a), Some(b), Some(r)) => {
                            assert_eq!(a.0[15], b.0[15]);
                            assert_eq!(a.0[15], r.0[15]);
                        }
                        (None, None, None) => {}
                        other => panic!("torn: {other:?}"),
                    }
                    seen += 1;
                }
            }
            seen
        });
        for i in 0..300_000u32 {
            let b = (i % 250) as u8 + 1;
            let mut slots = [None; SLOTS];
            slots[0] = Some(addr(b));
            slots[1] = Some(addr(b));
            hub.publish(&slots, Some(addr(b)));
        }
        stop.store(true, Ordering::Relaxed);
        let seen = reader.join().expect("no torn read");
        assert!(seen >= 1, "the reader saw a publication");
    }
}
