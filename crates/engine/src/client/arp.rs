//! The client's neighbour: ARP for the next hop (the server, or the router for a server off
//! the link) until it answers, every 200 ms, and answers to ARP requests for our address.

use super::Client;
use crate::nic::TxRing;
use crate::wire::{
    arp, ethernet, ArpOperation, ArpPacket, ArpRepr, EtherType, EthernetAddress, EthernetFrame,
    Ipv4Address,
};

impl Client {
    pub(super) fn next_hop(&self) -> Ipv4Address {
        match self.cfg.gateway {
            Some(g) if !self.cfg.server.in_subnet(self.cfg.ip, self.cfg.prefix_len) => g,
            _ => self.cfg.server,
        }
    }

    pub(super) fn arp_request<T: TxRing>(&mut self, tx: &mut T) {
        let req = ArpRepr {
            operation: ArpOperation::Request,
            source_hardware_addr: self.cfg.mac,
            source_protocol_addr: self.cfg.ip,
            target_hardware_addr: EthernetAddress([0; 6]),
            target_protocol_addr: self.next_hop(),
        };
        if self.arp_frame(tx, EthernetAddress::BROADCAST, &req) {
            self.counters.arp_requests += 1;
        }
    }

    fn arp_frame<T: TxRing>(&mut self, tx: &mut T, dst: EthernetAddress, r: &ArpRepr) -> bool {
        let Some(buf) = tx.slot() else {
            self.counters.tx_full += 1;
            return false;
        };
        let len = ethernet::HEADER_LEN + arp::BUFFER_LEN;
        let mut frame = EthernetFrame::new_unchecked(&mut buf[..len]);
        ethernet::Repr {
            src_addr: self.cfg.mac,
            dst_addr: dst,
            ethertype: EtherType::Arp,
        }
        .emit(&mut frame);
        r.emit(&mut ArpPacket::new_unchecked(frame.payload_mut()));
        let ok = tx.post(len, &[]).is_ok();
        if ok {
            self.counters.tx += 1;
        }
        ok
    }

    pub(super) fn arp<T: TxRing>(&mut self, payload: &[u8], tx: &mut T) {
        let Some(r) = ArpPacket::new_checked(payload)
            .ok()
            .and_then(|p| ArpRepr::parse(&p).ok())
        else {
            self.counters.ignored += 1;
            return;
        };
        if r.source_protocol_addr == self.next_hop() && r.operation == ArpOperation::Reply {
            self.next_hop_mac = Some(r.source_hardware_addr);
        }
        if r.operation == ArpOperation::Request && r.target_protocol_addr == self.cfg.ip {
            let sent = self.egress.arp_reply(tx, r.source_hardware_addr, &r);
            self.count(sent);
        }
    }
}
