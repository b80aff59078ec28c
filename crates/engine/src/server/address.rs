//! The server's own address, told to the link: an ARP announcement (RFC 5227 §2.3) when
//! the server starts serving on an address, so neighbours need not ask first.

use super::Server;
use crate::nic::{Nic, TxRing};
use crate::resource::Lookup;

impl<L: Lookup<'static>> Server<L> {
    /// Broadcasts an ARP announcement of the server's address on `nic` and flushes it.
    /// Returns whether it was sent (false: no transmit slot free).
    pub fn announce<N: Nic>(&mut self, nic: &mut N) -> bool {
        let (_, tx) = nic.split();
        let sent = self.egress.arp_announce(tx);
        tx.flush();
        let ok = matches!(sent, crate::iface::Sent::Frame);
        self.count_sent(sent);
        ok
    }
}

#[cfg(test)]
mod tests {
    use crate::fake::FakeNic;
    use crate::resource::{Found, Lookup};
    use crate::server::{Config, Server};
    use crate::wire::Ipv4Address;
    use crate::wire::{
        ArpOperation, ArpPacket, ArpRepr, EtherType, EthernetAddress, EthernetFrame,
    };

    #[derive(Clone, Copy)]
    struct Nothing;
    impl Lookup<'static> for Nothing {
        fn lookup(&self, _: &[u8]) -> Found<'static> {
            Found::NotFound
        }
    }

    #[test]
    fn announcement_is_a_broadcast_request_for_our_own_address() {
        let mac = EthernetAddress([2, 0, 0, 0, 0, 9]);
        let ip = Ipv4Address([10, 0, 2, 15]);
        let mut s = Server::new(Config::new(ip, 24, [1; 16]), Nothing, mac);
        let mut nic = FakeNic::new(mac);
        assert!(s.announce(&mut nic));
        let f = nic.tx.outbox.remove(0);
        let eth = EthernetFrame::new_checked(&f[..]).unwrap();
        assert_eq!(eth.dst_addr(), EthernetAddress::BROADCAST);
        assert_eq!(eth.ethertype(), EtherType::Arp);
        let arp = ArpRepr::parse(&ArpPacket::new_checked(eth.payload()).unwrap()).unwrap();
        assert_eq!(arp.operation, ArpOperation::Request);
        assert_eq!(
            (arp.source_hardware_addr, arp.source_protocol_addr),
            (mac, ip)
        );
        assert_eq!(arp.target_protocol_addr, ip);
        assert_eq!(s.stats().tx_frames, 1);
    }
}
