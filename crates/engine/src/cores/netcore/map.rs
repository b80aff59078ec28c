//! Which HTTP core owns which connection: core 0's table, indexed by the client port like
//! the TCBs' port table, entries chained by index; fixed size, allocated once.

use alloc::vec::Vec;

use crate::tcp::port_table::{Links, Peer, PortTable, NONE};

/// One known connection.
#[derive(Clone, Copy)]
pub(super) struct Conn {
    pub(super) peer: Peer,
    pub(super) chain: u32,
    pub(super) core: u16,
    pub(super) used: bool,
    /// Ordinal (in the core's received-frame count) of the last frame forwarded for it.
    pub(super) last_fwd: u64,
    pub(super) last_seen_ns: u64,
}

pub(super) const FREE_CONN: Conn = Conn {
    peer: Peer::v4([0; 4], 0),
    chain: NONE,
    core: 0,
    used: false,
    last_fwd: 0,
    last_seen_ns: 0,
};

pub(super) struct Conns(pub(super) Vec<Conn>);

impl Links for Conns {
    fn count(&self) -> usize {
        self.0.len()
    }
    fn peer(&self, i: u32) -> Peer {
        self.0[i as usize].peer
    }
    fn next(&self, i: u32) -> u32 {
        self.0[i as usize].chain
    }
    fn set_next(&mut self, i: u32, next: u32) {
        self.0[i as usize].chain = next;
    }
}

/// Which core owns which connection, indexed by the client port (the multi-core paper, §IV: the
/// port table), entries chained by index; fixed size.
pub struct ConnMap {
    pub(super) ports: PortTable,
    pub(super) conns: Conns,
    pub(super) free: Vec<u32>,
    pub(super) per_core: Vec<u32>,
    pub(super) high: u64,
    pub(super) expired: u64,
}

impl ConnMap {
    pub(super) fn new(entries: usize, cores: usize) -> ConnMap {
        ConnMap {
            ports: PortTable::new(),
            conns: Conns(alloc::vec![FREE_CONN; entries]),
            free: (0..entries as u32).rev().collect(),
            per_core: alloc::vec![0; cores],
            high: 0,
            expired: 0,
        }
    }

    pub(super) fn find(&self, peer: Peer) -> Option<u32> {
        self.ports.find(&self.conns, peer)
    }

    pub(super) fn insert(&mut self, peer: Peer, core: usize, now: u64) -> Option<u32> {
        let id = self.free.pop()?;
        self.conns.0[id as usize] = Conn {
            peer,
            chain: NONE,
            core: core as u16,
            used: true,
            last_fwd: 0,
            last_seen_ns: now,
        };
        self.ports.insert(&mut self.conns, id);
        self.per_core[core] += 1;
        self.high = self.high.max(self.len() as u64);
        Some(id)
    }

    pub(super) fn remove(&mut self, id: u32) {
        let c = self.conns.0[id as usize];
        if !c.used {
            return;
        }
        self.ports.remove(&mut self.conns, id);
        self.per_core[usize::from(c.core)] -= 1;
        self.conns.0[id as usize] = FREE_CONN;
        self.free.push(id);
    }

    /// Connections known now.
    pub fn len(&self) -> usize {
        self.conns.0.len() - self.free.len()
    }

    /// Whether no connection is known.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Connections known for `core`.
    pub fn on_core(&self, core: usize) -> usize {
        self.per_core.get(core).map_or(0, |&n| n as usize)
    }

    /// The core that owns `peer`'s connection, if known.
    pub fn core_of(&self, peer: Peer) -> Option<usize> {
        self.find(peer)
            .map(|id| usize::from(self.conns.0[id as usize].core))
    }
}
