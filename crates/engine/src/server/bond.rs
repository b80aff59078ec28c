//! The server's side of bonding (the bonding paper): the send-id of each connection,
//! the NIC every frame leaves from, and what a failover asks of the server.
//!
//! - **The send-id.** [`Server::bond_assign`] gives a new connection its send NIC (the
//!   set's policy, [`Chooser`]) when its TCB is made; it stays in the TCB (`Tcb::send`).
//! - **Every frame names its NIC** ([`Server::via`]): before a frame is built the transmit
//!   ring is told the NIC (`TxRing::select`) and the egress writes that NIC's MAC as the
//!   source. A connection's frames go to its send-id (under the `size` policy, frames
//!   without payload to the control NIC); ARP replies and gratuitous ARPs to the receive
//!   NIC; frames of no connection (RSTs, SYN-cookie SYN-ACKs, ICMP echo replies) to the
//!   control NIC; IPv6's link frames (advertisements, solicitations, reports, echo
//!   replies) to the receive NIC, whose MAC the link speaks with.
//! - **Failover** ([`Server::bond_sync`], once per round): when the set's live word has
//!   moved, the server takes the new receive NIC's MAC as its own (ARP, ingress), moves
//!   the connections of NICs that no longer send to others (counted in `moved_off`; what
//!   was lost on the dead link TCP retransmits), and, on the announcing core, sends a
//!   gratuitous ARP for each one the monitor asked for.
//! - **Datagrams** ([`Server::via_datagram`]): the seam for a protocol without
//!   connections: the UDP protocol's server (`server/udp.rs`) asks it for every packet of an
//!   answer, a send NIC per datagram by the same policy.
//!
//! Without a set (`Config::bond` is `None`) every function here returns at its first line.

use crate::tcp::per_ip::limit_key;
use alloc::vec::Vec;

use super::Server;
use crate::bond::{BondRole, Chooser, Links, NicCounts, Part, Policy, MAX_NICS};
use crate::nic::TxRing;
use crate::resource::Lookup;
use crate::tcp::{seq, Connection, Segment};

/// A server's bonding state.
pub(super) struct ServerBond {
    role: BondRole,
    /// The live word as last applied.
    seen: Links,
    chooser: Chooser,
    /// The server's part of the per-NIC counters (`conns` is the chooser's).
    counts: [NicCounts; MAX_NICS],
    dirty: bool,
    /// Gratuitous ARPs asked for and not yet sent (a full transmit ring defers them).
    garps_due: u8,
    /// The connections moved in this round (room for every TCB, allocated at start).
    moved: Vec<u32>,
}

impl ServerBond {
    pub(super) fn new(role: BondRole, tcbs: usize) -> ServerBond {
        let b = role.bond;
        let seen = b.links();
        ServerBond {
            role,
            seen,
            chooser: Chooser::new(b.policy(), b.count(), b.senders(seen), seen.receive),
            counts: Default::default(),
            dirty: true,
            garps_due: 0,
            moved: Vec::with_capacity(tcbs),
        }
    }

    /// The MAC ARP gives for our address now (the receive NIC's).
    pub(super) fn receive_mac(&self) -> crate::wire::EthernetAddress {
        self.role.bond.mac(usize::from(self.seen.receive))
    }
}

/// Linux bonding's `_simple_hash` of an address: its bytes xor-ed.
fn client_hash(ip: [u8; 4]) -> u32 {
    u32::from(ip[0] ^ ip[1] ^ ip[2] ^ ip[3])
}

impl<L: Lookup<'static>> Server<L> {
    /// Frames built from now on leave from NIC `k`: the ring is told, and the egress writes
    /// `k`'s MAC as their source.
    pub(super) fn via<T: TxRing>(&mut self, k: u8, tx: &mut T) {
        if let Some(b) = &self.bond {
            tx.select(k);
            self.egress.set_mac(b.role.bond.mac(usize::from(k)));
        }
    }

    /// The next frame is connection `id`'s (with payload or not).
    pub(super) fn via_conn<T: TxRing>(&mut self, id: u32, has_payload: bool, tx: &mut T) {
        if let Some(b) = &self.bond {
            let k = b
                .chooser
                .frame_nic(self.conns[id as usize].send, has_payload);
            self.via(k, tx);
        }
    }

    /// The next frame is an ARP (it leaves from the receive NIC, with its MAC).
    pub(super) fn via_receive<T: TxRing>(&mut self, tx: &mut T) {
        if let Some(b) = &self.bond {
            let k = b.seen.receive;
            self.via(k, tx);
        }
    }

    /// The next frame belongs to no connection.
    pub(super) fn via_stateless<T: TxRing>(&mut self, tx: &mut T) {
        if let Some(b) = &self.bond {
            let k = b.chooser.stateless();
            self.via(k, tx);
        }
    }

    /// The seam for a protocol without connections (the UDP protocol's server): chooses the
    /// send NIC for one datagram of `len` payload bytes to `client` by the set's policy
    /// (per client: one NIC per client address; by size; least queued) and selects it, so
    /// the frame built next on `tx` with `self.egress` leaves from it with its MAC. Without
    /// a NIC set it does nothing.
    pub(super) fn via_datagram<T: TxRing>(&mut self, client: [u8; 16], len: usize, tx: &mut T) {
        if let Some(b) = &self.bond {
            // An IPv4 client by its address's bytes (Linux's hash), an IPv6 one by its
            // /64's (one host owns them all).
            let hash = match crate::tcp::port_table::v4_of(&client) {
                Some(v4) => client_hash(v4),
                None => {
                    // Every octet of the key: a link-local client's is its whole address.
                    let k = limit_key(&client);
                    let mut w = [0u8; 4];
                    for (i, b) in k.iter().enumerate() {
                        w[i % 4] ^= b;
                    }
                    client_hash(w)
                }
            };
            let k = b.chooser.datagram(hash, len);
            self.via(k, tx);
        }
    }

    /// Gives the new connection in TCB `id` (from `ip`, already counted in the per-address
    /// table) its send NIC.
    pub(super) fn bond_assign(&mut self, id: u32, ip: [u8; 16]) {
        let Some(b) = self.bond.as_mut() else { return };
        // The tag lives with the address's count: an IPv6 client's /64.
        let ip = limit_key(&ip);
        let client = self.per_ip.tag(ip);
        let k = b.chooser.pick(client);
        if b.role.bond.policy() == Policy::PerClient {
            self.per_ip.set_tag(ip, k);
        }
        b.chooser.opened(k);
        b.counts[usize::from(k)].assigned += 1;
        b.dirty = true;
        self.conns[id as usize].send = k;
    }

    /// Connection `id` ends (before its TCB is cleared).
    pub(super) fn bond_release(&mut self, id: u32) {
        let Some(b) = self.bond.as_mut() else { return };
        let t = &self.conns[id as usize];
        b.chooser.closed(t.send);
        if let Some(r) = t.app.resp {
            b.chooser.acked(t.send, r.wire_len());
        }
        b.dirty = true;
    }

    /// A response of `bytes` was queued on connection `id`.
    pub(super) fn bond_queued(&mut self, id: u32, bytes: u32) {
        if let Some(b) = self.bond.as_mut() {
            b.chooser.queued(self.conns[id as usize].send, bytes);
        }
    }

    /// Connection `id`'s response of `bytes` is acknowledged whole.
    pub(super) fn bond_acked(&mut self, id: u32, bytes: u32) {
        if let Some(b) = self.bond.as_mut() {
            b.chooser.acked(self.conns[id as usize].send, bytes);
        }
    }

    /// Applies what the link monitor published since the last round (see the module
    /// doc), and sends the gratuitous ARPs still due.
    pub(super) fn bond_sync<T: TxRing>(&mut self, tx: &mut T) {
        let Some(b) = self.bond.as_mut() else { return };
        let now = b.role.bond.links();
        if now != b.seen {
            let old = core::mem::replace(&mut b.seen, now);
            let senders = b.role.bond.senders(now);
            let moved = senders != b.chooser.senders() || now.receive != old.receive;
            b.chooser.set_senders(senders, now.receive);
            if b.role.announcer {
                // One gratuitous ARP per step of the counter (several readings may pass
                // during one long round; the monitor asks for at most ANNOUNCES in a row).
                let asked = now.announce.wrapping_sub(old.announce);
                b.garps_due = b
                    .garps_due
                    .saturating_add(asked)
                    .min(crate::bond::monitor::ANNOUNCES);
            }
            let elected = now.receive != old.receive;
            self.iface.mac = b.receive_mac();
            if let Some(l) = self.ipv6.as_mut() {
                l.set_mac(self.iface.mac);
            }
            if moved {
                self.bond_move();
            }
            self.bond_announce(tx);
            self.bond_kick(elected, tx);
        } else {
            self.bond_announce(tx);
        }
    }

    /// After a failover, for every connection with data in flight that the failure
    /// touched — those moved off a dead NIC (what was in flight there is lost), and after
    /// an election every connection (the client's ACKs went to the dead MAC until the
    /// gratuitous ARP, sent just before) — two segments now, on its (new) NIC: the one at
    /// SND.UNA, then the last one in flight as a tail loss probe sends it (RFC 8985 §7.3),
    /// or, when that is the same segment, it again. The first alone is in order and the
    /// client may delay its ACK (Linux did, 40 ms, measured by bench/bond.py); the second
    /// is out of order or a duplicate, which a TCP answers at once (RFC 9293 §3.10.7.4,
    /// RFC 5681 §4.2), and that ACK's SACK shows what the dead link lost. So the flow
    /// restarts one round trip after the failover is seen, instead of after the loss
    /// probe or the retransmission timer (200 ms or more). A segment the client already
    /// had costs a duplicate.
    fn bond_kick<T: TxRing>(&mut self, elected: bool, tx: &mut T) {
        let Some(b) = self.bond.as_mut() else { return };
        let mut ids = core::mem::take(&mut b.moved);
        if elected {
            ids.clear();
            ids.extend((0..self.conns.made() as u32).filter(|&i| self.conns[i as usize].in_use()));
        }
        for &id in &ids {
            let c = &self.conns[id as usize].tcp;
            if c.state().is_synchronized() && c.flight() > 0 {
                let tail = tail_segment(c);
                self.retransmit_una(id, tx);
                match tail {
                    Some(seg) => {
                        self.send_once(id, &seg, tx);
                    }
                    None => self.retransmit_una(id, tx),
                }
            }
        }
        ids.clear();
        if let Some(b) = self.bond.as_mut() {
            b.moved = ids;
        }
    }

    /// Sends the gratuitous ARPs due, on the receive NIC; one the ring has no slot for
    /// stays due for the next round.
    fn bond_announce<T: TxRing>(&mut self, tx: &mut T) {
        while self.bond.as_ref().is_some_and(|b| b.garps_due > 0) {
            self.via_receive(tx);
            let sent = self.egress.gratuitous_arp(tx);
            self.count_sent(sent);
            if !sent.done() {
                return;
            }
            // IPv6's announcement of the same MAC: an unsolicited neighbour
            // advertisement for each address in use (best effort, as each step is one of
            // several).
            let mac = self.egress.mac();
            self.ipv6_announce(mac, tx);
            let Some(b) = self.bond.as_mut() else { return };
            b.garps_due -= 1;
            b.counts[usize::from(b.seen.receive)].garps += 1;
            b.dirty = true;
        }
    }

    /// Moves every connection whose NIC no longer sends to one that does. A client's
    /// connections move together under the per-client policy (the first one moved picks
    /// the client's new NIC).
    fn bond_move(&mut self) {
        let Some(b) = self.bond.as_mut() else { return };
        let per_client = b.role.bond.policy() == Policy::PerClient;
        for id in 0..self.conns.made() {
            let t = &self.conns[id];
            if !t.in_use() || b.chooser.sends(t.send) {
                continue;
            }
            let (old, ip, resp) = (t.send, limit_key(&t.peer.ip), t.app.resp);
            let client = self.per_ip.tag(ip).filter(|&k| b.chooser.sends(k));
            let k = b.chooser.pick(client);
            if per_client {
                self.per_ip.set_tag(ip, k);
            }
            b.chooser.closed(old);
            b.chooser.opened(k);
            if let Some(r) = resp {
                b.chooser.acked(old, r.wire_len());
                b.chooser.queued(k, r.wire_len());
            }
            b.counts[usize::from(old)].moved_off += 1;
            b.counts[usize::from(k)].assigned += 1;
            b.dirty = true;
            if b.moved.len() < b.moved.capacity() {
                b.moved.push(id as u32);
            }
            self.conns[id].send = k;
        }
    }

    /// Publishes the server's per-NIC counters if they changed (end of a round).
    pub(super) fn bond_publish(&mut self) {
        let Some(b) = self.bond.as_mut() else { return };
        if !core::mem::take(&mut b.dirty) {
            return;
        }
        for k in 0..MAX_NICS {
            b.counts[k].conns = u64::from(b.chooser.conns(k));
        }
        b.role
            .bond
            .publish_counts(b.role.core, Part::Server, &b.counts);
    }

    /// The send NIC of connection `id` (for tests and the platform's reports).
    pub fn send_nic(&self, id: u32) -> Option<u8> {
        let t = self.conns.tcbs().get(id as usize)?;
        (self.bond.is_some() && t.in_use()).then_some(t.send)
    }
}

/// The last segment in flight, as a tail loss probe sends it (RFC 8985 §7.3, the last
/// case of `tcp::output`'s loss probe), when it starts past the segment at SND.UNA.
fn tail_segment(c: &Connection) -> Option<Segment> {
    let fin = c.state().fin_sent() && seq::gt(c.snd_max(), c.send_end());
    let data_end = if fin { c.send_end() } else { c.snd_max() };
    let len = data_end.wrapping_sub(c.snd_una()).min(c.mss());
    let start = data_end.wrapping_sub(len);
    let una_end = c.snd_una().wrapping_add(c.mss());
    (len > 0 && !seq::lt(start, una_end)).then_some(Segment {
        seq: start,
        len,
        syn: false,
        fin,
        probe: false,
    })
}
