//! Bonding (the bonding paper): one server on a set of NICs that receives on one and
//! sends on several, and survives a NIC failing.
//!
//! The paper's design, which Linux's bonding driver calls `balance-tlb`:
//!
//! - **One receive NIC.** ARP replies and gratuitous ARPs give the server's address with
//!   the receive NIC's MAC only, so the gateway and local clients send every frame to it;
//!   no switch configuration is needed. Frames that arrive on another NIC of the set are
//!   dropped and counted (as Linux drops them on inactive slaves).
//! - **Several send NICs.** Every frame leaves with the server's IP and the MAC of the NIC
//!   it leaves from, so a switch learns each MAC on its own port and the client's
//!   neighbour table keeps the receive NIC's MAC.
//! - **The send-id.** The send NIC is chosen per connection when its SYN arrives and kept
//!   in its TCB ([`choose`]: the paper's per-client policy, by size, or least queued).
//! - **Failover** (beyond the paper; Linux's link monitor): [`monitor::Monitor`] reads each
//!   NIC's link every `--bond-monitor-ms`; a send NIC that goes down has its connections
//!   moved to the others (TCP retransmits what was lost); when the receive NIC goes down
//!   another is elected and announced by gratuitous ARP with its own MAC; a NIC whose link
//!   returns rejoins the send set.
//!
//! This module holds what every core shares about the set, [`Bond`]: the NICs' MACs, the
//! configuration, the live [`Links`] word the monitor publishes and the other cores read
//! (one atomic load per poll round), and the per-NIC counters each core publishes for the
//! stats page. [`nic::BondNic`] is the set as one queue pair (the `Nic` a server polls);
//! the server's side (send-ids, moving connections, announcing) is in `server/bond.rs`.
//! Nothing here allocates after start, locks, or reads a frame.

use alloc::boxed::Box;
use core::fmt;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::wire::EthernetAddress;

pub mod choose;
pub mod monitor;
pub mod nic;

pub use choose::Chooser;
pub use monitor::Monitor;
pub use nic::{BondNic, BondRx, BondTx, LinkWatch};

/// Most NICs in a set (the live word keeps one bit per NIC in a byte; four is plenty for
/// the paper's two and its "more than two").
pub const MAX_NICS: usize = 4;

/// How the NICs of a set are used (`--bond`, the paper's configurations).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// One NIC receives and sends (the paper's single NIC); others are not used.
    #[default]
    Off,
    /// One NIC only receives (and answers ARP), the others only send.
    Split,
    /// One NIC receives, every NIC sends.
    Spread,
}

impl Mode {
    /// The name used on the command line and the stats page.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Off => "off",
            Mode::Split => "split",
            Mode::Spread => "spread",
        }
    }
}

/// How a connection's send NIC is chosen at its SYN (`--bond-policy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Policy {
    /// The paper's: each client gets one send NIC for all its connections while it has
    /// any, the NIC with the fewest connections (n/2 connections each).
    #[default]
    PerClient,
    /// Frames without payload (SYN-ACK, ACKs, RSTs) on one NIC, data on the others.
    Size,
    /// The NIC with the fewest response bytes waiting to be acknowledged.
    LeastQueued,
}

impl Policy {
    /// The name used on the command line and the stats page.
    pub fn name(self) -> &'static str {
        match self {
            Policy::PerClient => "per-client",
            Policy::Size => "size",
            Policy::LeastQueued => "least-queued",
        }
    }
}

/// A server's place in a NIC set (`server::Config::bond`).
#[derive(Debug, Clone, Copy)]
pub struct BondRole {
    /// The set.
    pub bond: &'static Bond,
    /// The core the server runs on (its counters' slot).
    pub core: usize,
    /// Whether this server sends the gratuitous ARPs (one server per set: core 0's).
    pub announcer: bool,
}

/// The live state of the set, as one word: which NIC receives, whose links are up, and
/// counters that tell the cores something happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Links {
    /// The receive NIC.
    pub receive: u8,
    /// Bit k: NIC k's link is up.
    pub up: u8,
    /// Gratuitous ARPs asked for so far (mod 256): the announcing core sends one for each
    /// step it sees.
    pub announce: u8,
    /// Bumped at every change, so a core that compares whole words sees every change.
    pub epoch: u8,
}

impl Links {
    /// Every NIC of `n` up, NIC 0 receiving, nothing announced yet.
    pub fn start(n: usize) -> Links {
        Links {
            receive: 0,
            up: all(n),
            announce: 0,
            epoch: 0,
        }
    }

    fn pack(self) -> u32 {
        u32::from_le_bytes([self.receive, self.up, self.announce, self.epoch])
    }

    fn unpack(w: u32) -> Links {
        let [receive, up, announce, epoch] = w.to_le_bytes();
        Links {
            receive,
            up,
            announce,
            epoch,
        }
    }

    /// Whether NIC `k`'s link is up.
    pub fn is_up(self, k: usize) -> bool {
        k < 8 && self.up & (1 << k) != 0
    }
}

/// Bits of the first `n` NICs.
pub fn all(n: usize) -> u8 {
    if n >= 8 {
        0xFF
    } else {
        ((1u16 << n) - 1) as u8
    }
}

/// The NICs that send now (bit k: NIC k), for `n` NICs in `mode` with `links`:
/// `spread` every NIC whose link is up, `split` every one but the receive NIC, `off` the
/// receive NIC. With none left (every link down, or only the receive NIC up in `split`),
/// the receive NIC sends.
pub fn senders(mode: Mode, n: usize, links: Links) -> u8 {
    let rx = 1u8 << (links.receive & 7);
    let up = links.up & all(n);
    let set = match mode {
        Mode::Off => rx,
        Mode::Spread => up,
        Mode::Split => up & !rx,
    };
    if set == 0 {
        rx
    } else {
        set
    }
}

/// Counters of one NIC as one core saw it (summed over cores on the stats page).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NicCounts {
    /// Frames sent on the NIC.
    pub tx_frames: u64,
    /// Bytes sent on the NIC (Ethernet frames without FCS; an offloaded frame counts
    /// whole).
    pub tx_bytes: u64,
    /// Frames received on the NIC while it was the receive NIC.
    pub rx_frames: u64,
    /// Frames that arrived on the NIC while it was not the receive NIC (dropped).
    pub rx_ignored: u64,
    /// Connections whose send-id is this NIC now.
    pub conns: u64,
    /// Connections given this NIC at their SYN (or moved to it), since start.
    pub assigned: u64,
    /// Connections moved off this NIC because its link went down.
    pub moved_off: u64,
    /// Gratuitous ARPs sent on this NIC.
    pub garps: u64,
}

/// Number of fields in [`NicCounts`].
const COUNTS: usize = 8;

impl NicCounts {
    /// Names and values, in the order the stats page shows them.
    pub fn fields(&self) -> [(&'static str, u64); COUNTS] {
        [
            ("tx_frames", self.tx_frames),
            ("tx_bytes", self.tx_bytes),
            ("rx_frames", self.rx_frames),
            ("rx_ignored", self.rx_ignored),
            ("conns", self.conns),
            ("assigned", self.assigned),
            ("moved_off", self.moved_off),
            ("garps", self.garps),
        ]
    }

    fn add(&mut self, o: &NicCounts) {
        self.tx_frames += o.tx_frames;
        self.tx_bytes += o.tx_bytes;
        self.rx_frames += o.rx_frames;
        self.rx_ignored += o.rx_ignored;
        self.conns += o.conns;
        self.assigned += o.assigned;
        self.moved_off += o.moved_off;
        self.garps += o.garps;
    }
}

/// Which part of a core's [`NicCounts`] a publisher owns: each part of each core's slot
/// has exactly one writer (the core's `BondTx`, its `BondRx`, its server).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// `tx_frames`, `tx_bytes`.
    Tx,
    /// `rx_frames`, `rx_ignored`.
    Rx,
    /// `conns`, `assigned`, `moved_off`, `garps`.
    Server,
}

/// One core's published counters, per NIC.
struct Slot {
    words: [[AtomicU64; COUNTS]; MAX_NICS],
}

/// What every core shares about a NIC set. Made once at start (and leaked: it lives as
/// long as the program, like the stats board).
pub struct Bond {
    macs: [EthernetAddress; MAX_NICS],
    n: u8,
    mode: Mode,
    policy: Policy,
    monitor_ms: u32,
    word: AtomicU32,
    /// Per NIC: link-down and link-up events seen by the monitor; elections.
    downs: [AtomicU64; MAX_NICS],
    ups: [AtomicU64; MAX_NICS],
    elections: AtomicU64,
    slots: Box<[Slot]>,
}

impl fmt::Debug for Bond {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bond")
            .field("macs", &&self.macs[..self.count()])
            .field("mode", &self.mode)
            .field("policy", &self.policy)
            .field("links", &self.links())
            .finish()
    }
}

/// Why a NIC set cannot be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BondError {
    /// No NIC, or more than [`MAX_NICS`].
    Count(usize),
    /// `split` or `spread` needs two NICs or more.
    NeedsTwo(Mode),
    /// Two NICs have the same MAC (a switch could not tell their ports apart).
    SameMac(EthernetAddress),
}

impl fmt::Display for BondError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BondError::Count(n) => write!(f, "{n} NICs: a set holds 1 to {MAX_NICS}"),
            BondError::NeedsTwo(m) => {
                write!(f, "--bond {} needs two NICs or more", m.name())
            }
            BondError::SameMac(m) => write!(f, "two NICs have the same MAC {m}"),
        }
    }
}

impl Bond {
    /// The set of NICs with addresses `macs` (NIC k is `macs[k]`), used as `mode` with
    /// send NICs chosen by `policy`, links read every `monitor_ms`, counters kept for
    /// `cores` cores. Every link starts up, NIC 0 receiving.
    pub fn new(
        mode: Mode,
        policy: Policy,
        macs: &[EthernetAddress],
        monitor_ms: u32,
        cores: usize,
    ) -> Result<Bond, BondError> {
        if macs.is_empty() || macs.len() > MAX_NICS {
            return Err(BondError::Count(macs.len()));
        }
        if mode != Mode::Off && macs.len() < 2 {
            return Err(BondError::NeedsTwo(mode));
        }
        for (i, m) in macs.iter().enumerate() {
            if macs[..i].contains(m) {
                return Err(BondError::SameMac(*m));
            }
        }
        let mut all_macs = [EthernetAddress([0; 6]); MAX_NICS];
        all_macs[..macs.len()].copy_from_slice(macs);
        // `off` uses one NIC: the others are not part of the set.
        let n = if mode == Mode::Off { 1 } else { macs.len() };
        Ok(Bond {
            macs: all_macs,
            n: n as u8,
            mode,
            policy,
            monitor_ms: monitor_ms.max(1),
            word: AtomicU32::new(Links::start(n).pack()),
            downs: Default::default(),
            ups: Default::default(),
            elections: AtomicU64::new(0),
            slots: (0..cores.max(1))
                .map(|_| Slot {
                    words: Default::default(),
                })
                .collect(),
        })
    }

    /// The set for the life of the program.
    pub fn leak(self) -> &'static Bond {
        Box::leak(Box::new(self))
    }

    /// NICs in the set (1 with `--bond off`, whatever was given).
    pub fn count(&self) -> usize {
        usize::from(self.n)
    }

    /// The configuration.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The send-NIC policy.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// The link check interval in milliseconds.
    pub fn monitor_ms(&self) -> u32 {
        self.monitor_ms
    }

    /// NIC `k`'s MAC (NIC 0's for an index outside the set).
    pub fn mac(&self, k: usize) -> EthernetAddress {
        self.macs[if k < self.count() { k } else { 0 }]
    }

    /// The live state (what the monitor last published).
    pub fn links(&self) -> Links {
        Links::unpack(self.word.load(Ordering::Acquire))
    }

    /// The NICs that send under `links`.
    pub fn senders(&self, links: Links) -> u8 {
        senders(self.mode, self.count(), links)
    }

    /// Publishes a new state. Only the monitoring core calls it.
    pub fn publish(&self, links: Links) {
        self.word.store(links.pack(), Ordering::Release);
    }

    /// Counts what the monitor saw (the monitoring core only).
    pub fn count_events(&self, r: &monitor::Report) {
        for k in 0..self.count() {
            if r.down & (1 << k) != 0 {
                self.downs[k].fetch_add(1, Ordering::Relaxed);
            }
            if r.up & (1 << k) != 0 {
                self.ups[k].fetch_add(1, Ordering::Relaxed);
            }
        }
        if r.elected.is_some() {
            self.elections.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Link-down and link-up events of NIC `k`, and elections of a new receive NIC.
    pub fn events(&self, k: usize) -> (u64, u64, u64) {
        let k = k.min(MAX_NICS - 1);
        (
            self.downs[k].load(Ordering::Relaxed),
            self.ups[k].load(Ordering::Relaxed),
            self.elections.load(Ordering::Relaxed),
        )
    }

    /// Cores that publish counters.
    pub fn cores(&self) -> usize {
        self.slots.len()
    }

    /// Publishes core `core`'s `part` of its counters for every NIC (its only writer).
    pub fn publish_counts(&self, core: usize, part: Part, counts: &[NicCounts]) {
        let Some(slot) = self.slots.get(core) else {
            return;
        };
        let fields = match part {
            Part::Tx => 0..2,
            Part::Rx => 2..4,
            Part::Server => 4..COUNTS,
        };
        for (words, c) in slot.words.iter().zip(counts) {
            let values = c.fields();
            for i in fields.clone() {
                words[i].store(values[i].1, Ordering::Relaxed);
            }
        }
    }

    /// Writes the stats page's `bond` object: the configuration, the live state and every
    /// NIC's counters summed over the cores.
    pub fn write_json(&self, w: &mut dyn fmt::Write) -> fmt::Result {
        let links = self.links();
        let send = self.senders(links);
        let (_, _, elections) = self.events(0);
        write!(
            w,
            "{{\"mode\":\"{}\",\"policy\":\"{}\",\"monitor_ms\":{},\"receive\":{},\
             \"elections\":{elections},\"nics\":[",
            self.mode.name(),
            self.policy.name(),
            self.monitor_ms,
            links.receive
        )?;
        for k in 0..self.count() {
            if k > 0 {
                w.write_str(",")?;
            }
            let role = match (usize::from(links.receive) == k, send & (1 << k) != 0) {
                (true, true) => "receive+send",
                (true, false) => "receive",
                (false, true) => "send",
                (false, false) => "idle",
            };
            let (downs, ups, _) = self.events(k);
            write!(
                w,
                "{{\"nic\":{k},\"mac\":\"{}\",\"link\":\"{}\",\"role\":\"{role}\",\
                 \"link_downs\":{downs},\"link_ups\":{ups}",
                self.mac(k),
                if links.is_up(k) { "up" } else { "down" },
            )?;
            let c = self.counts(k);
            for (name, v) in c.fields() {
                write!(w, ",\"{name}\":{v}")?;
            }
            w.write_str("}")?;
        }
        w.write_str("]}")
    }

    /// NIC `k`'s counters summed over every core (no allocation: the stats page renders
    /// them with the kernel's heap sealed).
    pub fn counts(&self, k: usize) -> NicCounts {
        let mut total = NicCounts::default();
        for slot in self.slots.iter() {
            let Some(w) = slot.words.get(k) else { break };
            let v = |i: usize| w[i].load(Ordering::Relaxed);
            total.add(&NicCounts {
                tx_frames: v(0),
                tx_bytes: v(1),
                rx_frames: v(2),
                rx_ignored: v(3),
                conns: v(4),
                assigned: v(5),
                moved_off: v(6),
                garps: v(7),
            });
        }
        total
    }
}

#[cfg(test)]
mod tests;
