//! An address from DHCP (`Config::dhcp`): the glue between a server and the
//! engine's DHCP client ([`crate::dhcp`]).
//!
//! One core's server owns the client ([`Server::own_dhcp`]): it feeds it every DHCP reply
//! it receives and those other cores hand over through the shared mailbox, runs its
//! timeouts in every round, sends what it asks on its own queue, and publishes the address
//! acquired, renewed or lost. Every server (the owner too) applies the published address
//! at the start of a round: its interface, its frames' source, its SYN cookies; while no
//! address is held it answers nothing but DHCP. A reply reaching another core's server is
//! posted to the owner. The cost on the request path is one atomic load per round.

use alloc::boxed::Box;

use super::Server;
use crate::dhcp::shared::Event;
use crate::dhcp::wire::{CLIENT_PORT, SERVER_PORT};
use crate::dhcp::{Actions, Change, Client};
use crate::iface::{Egress, Sent};
use crate::nic::TxRing;
use crate::resource::Lookup;
use crate::wire::Ipv4Address;

/// Whether `b` looks like a DHCP reply (IPv4, UDP from 67 to 68): the cheap test made on
/// every frame when DHCP is on; the client checks the rest.
fn is_dhcp_reply(b: &[u8]) -> bool {
    if b.len() < 42 || b[12..14] != [8, 0] || b[23] != 17 {
        return false;
    }
    let at = 14 + usize::from(b[14] & 0xf) * 4;
    let [s0, s1] = SERVER_PORT.to_be_bytes();
    let [c0, c1] = CLIENT_PORT.to_be_bytes();
    b.get(at..at + 4) == Some(&[s0, s1, c0, c1][..])
}

impl<L: Lookup<'static>> Server<L> {
    /// Makes this server the one that runs the DHCP client (`Config::dhcp` must be set).
    /// Its first timeout (DISCOVER, or a REQUEST to renew a lease acquired before
    /// serving) comes at the client's deadline.
    pub fn own_dhcp(&mut self, client: Client) {
        self.dhcp_client = Some(Box::new(client));
    }

    /// The DHCP client this server runs, if any.
    pub fn dhcp_client(&self) -> Option<&Client> {
        self.dhcp_client.as_deref()
    }

    /// Whether the address changed since the last call (a platform's dispatcher that
    /// classifies frames by address must follow: `CoreQueue::set_address`).
    pub fn take_address_change(&mut self) -> bool {
        core::mem::take(&mut self.address_changed)
    }

    /// Our address now (0.0.0.0 while DHCP holds none), its prefix, whether a router is set.
    pub fn address(&self) -> (Ipv4Address, u8, bool) {
        (self.iface.ip, self.iface.prefix_len, self.iface.gateway)
    }

    /// When the DHCP client next has work (`u64::MAX`: no client here).
    pub(super) fn dhcp_deadline(&self) -> u64 {
        self.dhcp_client.as_ref().map_or(u64::MAX, |c| c.deadline())
    }

    /// A received frame: if it is a DHCP reply, the client's (here, or posted to the
    /// owner) and true; else false.
    pub(super) fn dhcp_frame<T: TxRing>(&mut self, bytes: &[u8], tx: &mut T) -> bool {
        if !is_dhcp_reply(bytes) {
            return false;
        }
        let now = self.now_ns;
        match self.dhcp_client.as_mut() {
            Some(c) => {
                if let Some(a) = c.on_frame(bytes, now) {
                    self.dhcp_actions(a, tx);
                } else {
                    self.stats.drop_malformed += 1;
                }
            }
            None => {
                if let Some(shared) = self.cfg.dhcp {
                    shared.post(bytes);
                }
            }
        }
        true
    }

    /// Once per round: the owner takes posted replies and runs the client's timeout; every
    /// server applies a newly published address. Returns whether anything was sent.
    pub(super) fn dhcp_round<T: TxRing>(&mut self, tx: &mut T) -> bool {
        let Some(shared) = self.cfg.dhcp else {
            return false;
        };
        let mut worked = false;
        if let Some(mut c) = self.dhcp_client.take() {
            let now = self.now_ns;
            let mut buf = [0u8; crate::dhcp::shared::MAIL_MAX];
            let mut got: [Option<Actions>; 4] = [None; 4];
            let mut n = 0;
            shared.take(&mut buf, |f| {
                if let (Some(a), Some(slot)) = (c.on_frame(f, now), got.get_mut(n)) {
                    *slot = Some(a);
                    n += 1;
                }
            });
            let timeout = (now >= c.deadline()).then(|| c.on_timeout(now));
            self.dhcp_client = Some(c);
            for a in got.into_iter().flatten().chain(timeout) {
                worked |= a.send.is_some();
                self.dhcp_actions(a, tx);
            }
        }
        let g = shared.generation();
        if g != self.dhcp_seen {
            self.dhcp_seen = g;
            self.apply_address(shared.address());
        }
        worked
    }

    /// Sends what the client asks and publishes a change of address.
    fn dhcp_actions<T: TxRing>(&mut self, a: Actions, tx: &mut T) {
        let Some(c) = self.dhcp_client.take() else {
            return;
        };
        self.dhcp_apply(&c, a, tx);
        self.dhcp_client = Some(c);
    }

    fn dhcp_apply<T: TxRing>(&mut self, c: &Client, a: Actions, tx: &mut T) {
        if let Some(t) = a.send {
            let sent = match tx.slot() {
                Some(slot) => {
                    let n = c.frame(&t, slot);
                    match tx.post(n, &[]) {
                        Ok(()) => Sent::Frame,
                        Err(_) => Sent::Refused,
                    }
                }
                None => Sent::NoSlot,
            };
            self.count_sent(sent);
        }
        let Some(shared) = self.cfg.dhcp else {
            return;
        };
        match &a.change {
            Some(ch @ (Change::Acquired(l) | Change::Renewed(l))) => {
                shared.publish(Some(l), c.lease_end_ns(), Event::of(ch));
            }
            Some(ch @ Change::Lost(..)) => shared.publish(None, u64::MAX, Event::of(ch)),
            None => {}
        }
        shared.record(c.state(), &c.counts);
        if matches!(a.change, Some(Change::Acquired(_))) {
            // Serve on it at once, and tell the link.
            self.dhcp_seen = shared.generation();
            self.apply_address(shared.address());
            let sent = self.egress.arp_announce(tx);
            self.count_sent(sent);
        }
    }

    /// Serves on `a` from now on (`None`: on nothing).
    fn apply_address(&mut self, a: crate::dhcp::shared::Address) {
        let (ip, prefix_len, router) = a.unwrap_or((Ipv4Address::UNSPECIFIED, 32, None));
        self.iface.ip = ip;
        self.iface.prefix_len = prefix_len;
        self.iface.gateway = router.is_some();
        self.cfg.ip = ip;
        self.cfg.prefix_len = prefix_len;
        self.cfg.gateway = router;
        let mac = self.egress.mac();
        self.egress = Egress::new(&self.iface);
        self.egress.set_mac(mac);
        self.address_changed = true;
    }
}

#[cfg(test)]
mod tests;
