//! Direct server return (`Config::vips`): an ARP request for a virtual address is never
//! answered (the balancer owns it on the link); a TCP connection to it is served, every
//! segment of ours coming from it; a SYN to our own address still opens one from ours; a
//! ping to the virtual address is not answered.

use super::*;
use crate::wire::ethernet::Repr as EthernetRepr;
use crate::wire::{ArpOperation, ArpPacket, ArpRepr};

const VIP: Ipv4Address = Ipv4Address([10, 0, 0, 100]);

fn vip_server() -> Server<TestSite> {
    let mut cfg = Config::new(SERVER_IP, 24, [0x42; 16]);
    cfg.tcbs = 8;
    cfg.max_per_ip = Some(8);
    cfg.syn_backlog = Some(8);
    assert!(cfg.vips.add(VIP));
    Server::new(cfg, TestSite::new(), SERVER_MAC)
}

fn arp_request(target: Ipv4Address) -> Vec<u8> {
    let a = ArpRepr {
        operation: ArpOperation::Request,
        source_hardware_addr: CLIENT_MAC,
        source_protocol_addr: CLIENT_IP,
        target_hardware_addr: EthernetAddress([0; 6]),
        target_protocol_addr: target,
    };
    let mut f = vec![0u8; 14 + a.buffer_len()];
    let mut eth = EthernetFrame::new_unchecked(&mut f[..]);
    EthernetRepr {
        src_addr: CLIENT_MAC,
        dst_addr: EthernetAddress([0xFF; 6]),
        ethertype: EtherType::Arp,
    }
    .emit(&mut eth);
    a.emit(&mut ArpPacket::new_unchecked(eth.payload_mut()));
    f
}

/// A client → `dst` TCP frame on port 80.
fn to(dst: Ipv4Address, sport: u16, seq: u32, ack: Option<u32>, syn: bool, p: &[u8]) -> Vec<u8> {
    let repr = wtcp::Repr {
        src_port: sport,
        dst_port: 80,
        seq_number: seq,
        ack_number: ack,
        flags: flags(syn, ack.is_some(), false, false),
        window_len: 65535,
        max_seg_size: syn.then_some(1460),
        window_scale: None,
        sack_permitted: false,
        timestamps: None,
    };
    let hl = repr.header_len();
    let mut f = vec![0u8; L2L3 + hl + p.len()];
    write_l2l3(
        &mut f,
        CLIENT_MAC,
        SERVER_MAC,
        CLIENT_IP,
        dst,
        IpProtocol::Tcp,
        hl + p.len(),
    );
    repr.emit_header(&mut f[L2L3..]);
    f[L2L3 + hl..].copy_from_slice(p);
    TcpPacket::new_unchecked(&mut f[L2L3..]).fill_checksum(CLIENT_IP, dst);
    f
}

/// (source address, seq, syn, payload) of a TCP frame from the server, its IPv4 and TCP
/// checksums verified against that source.
fn sent(frame: &[u8]) -> (Ipv4Address, u32, bool, Vec<u8>) {
    let eth = EthernetFrame::new_checked(frame).unwrap();
    let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
    assert!(ip.verify_checksum());
    let src = ip.src_addr();
    let t = TcpPacket::new_checked(ip.payload()).unwrap();
    assert!(
        t.verify_checksum(src, ip.dst_addr()),
        "TCP checksum from {src}"
    );
    (src, t.seq_number(), t.syn(), t.payload().to_vec())
}

#[test]
fn arp_for_the_vip_is_never_answered_but_ours_is() {
    let mut s = vip_server();
    let mut nic = FakeNic::new(SERVER_MAC);
    let clock = ManualClock(1_000_000);
    nic.rx.inbox.push_back(arp_request(VIP));
    s.poll(&mut nic, &clock, &mut NoLog);
    assert!(nic.tx.outbox.is_empty(), "ARP for the VIP answered");
    assert_eq!(s.stats().arp_replies, 0);
    assert_eq!(s.stats().drop_not_for_us, 1);
    nic.rx.inbox.push_back(arp_request(SERVER_IP));
    s.poll(&mut nic, &clock, &mut NoLog);
    assert_eq!(nic.tx.outbox.len(), 1);
    assert_eq!(s.stats().arp_replies, 1);
}

#[test]
fn tcp_to_the_vip_is_answered_from_the_vip() {
    let mut s = vip_server();
    let mut nic = FakeNic::new(SERVER_MAC);
    let clock = ManualClock(1_000_000);
    nic.rx.inbox.push_back(to(VIP, 6001, 1000, None, true, &[]));
    s.poll(&mut nic, &clock, &mut NoLog);
    let out: Vec<_> = nic.tx.outbox.drain(..).map(|f| sent(&f)).collect();
    assert_eq!(out.len(), 1);
    let (src, iss, syn, _) = out[0].clone();
    assert!(syn && src == VIP, "{out:?}");
    let req = b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n";
    nic.rx
        .inbox
        .push_back(to(VIP, 6001, 1001, Some(iss + 1), false, &[]));
    nic.rx
        .inbox
        .push_back(to(VIP, 6001, 1001, Some(iss + 1), false, req));
    s.poll(&mut nic, &clock, &mut NoLog);
    let out: Vec<_> = nic.tx.outbox.drain(..).map(|f| sent(&f)).collect();
    let resp = out.iter().find(|o| !o.3.is_empty()).expect("a response");
    assert_eq!(resp.0, VIP);
    let text = String::from_utf8_lossy(&resp.3);
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n") && text.ends_with("<h1>hello</h1>\n"));
    assert!(out.iter().all(|o| o.0 == VIP), "{out:?}");
    // Our own address still serves from our own address.
    nic.rx
        .inbox
        .push_back(to(SERVER_IP, 6002, 5000, None, true, &[]));
    s.poll(&mut nic, &clock, &mut NoLog);
    let out: Vec<_> = nic.tx.outbox.drain(..).map(|f| sent(&f)).collect();
    assert_eq!(out.len(), 1);
    assert!(out[0].2 && out[0].0 == SERVER_IP);
    // A segment to the VIP that opens nothing is reset from the VIP.
    nic.rx
        .inbox
        .push_back(to(VIP, 6003, 7000, Some(1234), false, b"x"));
    s.poll(&mut nic, &clock, &mut NoLog);
    let out: Vec<_> = nic.tx.outbox.drain(..).map(|f| sent(&f)).collect();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0, VIP);
}

#[test]
fn other_protocols_to_the_vip_are_not_ours() {
    let iface = Interface {
        mac: SERVER_MAC,
        ip: SERVER_IP,
        prefix_len: 24,
        gateway: false,
        port: 80,
        udp_port: Some(9000),
        vips: {
            let mut v = crate::iface::Vips::NONE;
            assert!(v.add(VIP) && v.add(VIP));
            v
        },
    };
    assert_eq!(iface.local(SERVER_IP), Some(0));
    assert_eq!(iface.local(VIP), Some(1));
    assert_eq!(iface.local(Ipv4Address([10, 0, 0, 101])), None);
    assert_eq!(iface.vips.as_slice(), &[VIP]);
    let mut full = crate::iface::Vips::NONE;
    for i in 0..crate::iface::MAX_VIPS as u8 {
        assert!(full.add(Ipv4Address([10, 1, 0, i])));
    }
    assert!(!full.add(Ipv4Address([10, 2, 0, 0])));
    // An ICMP echo request to the VIP: dropped, not answered.
    let mut f = vec![0u8; L2L3 + 8];
    write_l2l3(
        &mut f,
        CLIENT_MAC,
        SERVER_MAC,
        CLIENT_IP,
        VIP,
        IpProtocol::Icmp,
        8,
    );
    f[L2L3] = 8; // echo request
    let sum = !crate::wire::checksum::fold(crate::wire::checksum::accumulate(0, &f[L2L3..]));
    f[L2L3 + 2..L2L3 + 4].copy_from_slice(&sum.to_be_bytes());
    assert_eq!(
        crate::iface::classified(&iface, &f).err(),
        Some(crate::iface::Drop::NotForUs)
    );
    // The same frame to our address is an echo.
    let mut g = f.clone();
    write_l2l3(
        &mut g,
        CLIENT_MAC,
        SERVER_MAC,
        CLIENT_IP,
        SERVER_IP,
        IpProtocol::Icmp,
        8,
    );
    assert!(matches!(
        crate::iface::classified(&iface, &g),
        Ok(crate::iface::Ingress::Echo { .. })
    ));
}
