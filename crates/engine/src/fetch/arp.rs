//! The fetcher's neighbour: ARP for the next hop (the server, or the router for a server off
//! the link) until it answers, every 200 ms, and answers to ARP requests for our address.

use super::Fetcher;
use crate::nic::TxRing;
use crate::wire::Ipv4Address;

impl Fetcher {
    pub(super) fn next_hop(&self) -> Ipv4Address {
        self.cfg.link.next_hop()
    }

    pub(super) fn arp_request<T: TxRing>(&mut self, tx: &mut T) {
        let sent = self.egress.arp_request(tx, self.next_hop());
        if self.count(sent) {
            self.counters.arp_requests += 1;
        }
    }

    pub(super) fn arp<T: TxRing>(&mut self, payload: &[u8], tx: &mut T) {
        let Some(heard) = self.cfg.link.hear_arp(payload) else {
            self.counters.ignored += 1;
            return;
        };
        if heard.next_hop_mac.is_some() {
            self.next_hop_mac = heard.next_hop_mac;
        }
        if let Some(r) = heard.request {
            let sent = self.egress.arp_reply(tx, r.source_hardware_addr, &r);
            self.count(sent);
        }
    }
}
