//! A server on an address from DHCP: discovery before the address, serving on it, the
//! address followed by a second core's server, replies handed over from it, and the
//! address lost at the lease's end.

use std::boxed::Box;
use std::vec::Vec;

use crate::dhcp::shared::Shared;
use crate::dhcp::testing::{frame, Srv, ACK, ADDR, MAC as CLIENT_MAC, OFFER, SRV};
use crate::dhcp::{Client, State, Timing};
use crate::fake::FakeNic;
use crate::nic::Clock;
use crate::resource::{Found, Lookup};
use crate::server::{Config, NoLog, Server};
use crate::wire::{
    ArpOperation, ArpPacket, ArpRepr, EtherType, EthernetAddress, EthernetFrame, Ipv4Address,
};

#[derive(Clone, Copy)]
struct Nothing;
impl Lookup<'static> for Nothing {
    fn lookup(&self, _: &[u8]) -> Found<'static> {
        Found::NotFound
    }
}

struct At(u64);
impl Clock for At {
    fn now_ns(&self) -> u64 {
        self.0
    }
    fn unix_secs(&self) -> u64 {
        1_700_000_000
    }
}

const SEC: u64 = 1_000_000_000;
const PEER_MAC: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 0x55]);

fn server(shared: &'static Shared) -> Server<Nothing> {
    let mut cfg = Config::new(Ipv4Address::UNSPECIFIED, 32, [3; 16]);
    cfg.dhcp = Some(shared);
    Server::new(cfg, Nothing, CLIENT_MAC)
}

/// An ARP request from 10.0.0.99 for `ip`.
fn who_has(ip: Ipv4Address) -> Vec<u8> {
    let mut f = vec![0u8; 42];
    let mut e = EthernetFrame::new_unchecked(&mut f[..]);
    e.set_dst_addr(EthernetAddress::BROADCAST);
    e.set_src_addr(PEER_MAC);
    e.set_ethertype(EtherType::Arp);
    ArpRepr {
        operation: ArpOperation::Request,
        source_hardware_addr: PEER_MAC,
        source_protocol_addr: Ipv4Address([10, 0, 0, 99]),
        target_hardware_addr: EthernetAddress([0; 6]),
        target_protocol_addr: ip,
    }
    .emit(&mut ArpPacket::new_unchecked(e.payload_mut()));
    f
}

/// The frames sent, as (UDP destination port or 0, ARP operation if ARP).
fn sent(nic: &mut FakeNic) -> Vec<(u16, Option<ArpOperation>)> {
    nic.tx
        .outbox
        .drain(..)
        .map(|f| {
            let e = EthernetFrame::new_checked(&f[..]).unwrap();
            match e.ethertype() {
                EtherType::Arp => {
                    let a = ArpRepr::parse(&ArpPacket::new_checked(e.payload()).unwrap()).unwrap();
                    (0, Some(a.operation))
                }
                _ => (u16::from_be_bytes([f[36], f[37]]), None),
            }
        })
        .collect()
}

#[test]
fn discover_serve_follow_hand_over_and_lose() {
    let shared: &'static Shared = Box::leak(Box::default());
    let mut owner = server(shared);
    owner.own_dhcp(Client::new(CLIENT_MAC, 5, Timing::default()));
    let mut other = server(shared);
    let mut nic = FakeNic::new(CLIENT_MAC);
    let mut nic2 = FakeNic::new(CLIENT_MAC);
    let mut t = At(0);
    // No address: no answer to ARP; a DISCOVER goes out.
    nic.rx.inbox.push_back(who_has(ADDR));
    owner.poll(&mut nic, &t, &mut NoLog);
    assert_eq!(sent(&mut nic), [(67, None)]);
    assert_eq!(owner.address().0, Ipv4Address::UNSPECIFIED);
    let xid = owner.dhcp_client().unwrap().xid();
    // The OFFER reaches the other core's queue: handed over, answered by the owner.
    nic2.rx
        .inbox
        .push_back(frame(&Srv::new(OFFER, xid).bytes(), Ipv4Address::BROADCAST));
    t.0 = SEC / 10;
    other.poll(&mut nic2, &t, &mut NoLog);
    assert!(sent(&mut nic2).is_empty());
    owner.poll(&mut nic, &t, &mut NoLog);
    assert_eq!(sent(&mut nic), [(67, None)], "the REQUEST");
    assert_eq!(owner.dhcp_client().unwrap().state(), State::Requesting);
    // The ACK: the owner serves on the address at once and announces it.
    nic.rx
        .inbox
        .push_back(frame(&Srv::new(ACK, xid).bytes(), ADDR));
    owner.poll(&mut nic, &t, &mut NoLog);
    assert_eq!(sent(&mut nic), [(0, Some(ArpOperation::Request))]);
    assert_eq!(owner.address(), (ADDR, 24, true));
    assert!(owner.take_address_change());
    assert_eq!(shared.address(), Some((ADDR, 24, Some(SRV))));
    nic.rx.inbox.push_back(who_has(ADDR));
    owner.poll(&mut nic, &t, &mut NoLog);
    assert_eq!(sent(&mut nic), [(0, Some(ArpOperation::Reply))]);
    // The other core follows at its next round.
    nic2.rx.inbox.push_back(who_has(ADDR));
    other.poll(&mut nic2, &t, &mut NoLog);
    assert_eq!(sent(&mut nic2), [(0, Some(ArpOperation::Reply))]);
    assert_eq!(other.address(), (ADDR, 24, true));
    // Idle, the owner wakes for T1 (1800 s after the grant).
    assert_eq!(owner.next_deadline_ns(), SEC / 10 + 1800 * SEC);
    // Past the lease's end with no server answering: the address is lost, discovery again.
    t.0 = SEC / 10 + 3600 * SEC;
    owner.poll(&mut nic, &t, &mut NoLog);
    assert_eq!(sent(&mut nic), [(67, None)]);
    assert_eq!(owner.address().0, Ipv4Address::UNSPECIFIED);
    assert_eq!(shared.address(), None);
    nic.rx.inbox.push_back(who_has(ADDR));
    owner.poll(&mut nic, &t, &mut NoLog);
    assert!(sent(&mut nic).is_empty(), "no answer on the old address");
    other.poll(&mut nic2, &t, &mut NoLog);
    assert_eq!(other.address().0, Ipv4Address::UNSPECIFIED);
    let c = owner.dhcp_client().unwrap();
    assert_eq!((c.state(), c.counts.expired), (State::Selecting, 1));
}
