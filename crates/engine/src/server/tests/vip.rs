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

/// The TCP frames the server sent (`sent`); the rest must be ARP requests for the next
/// hop of a VIP connection (`wire`).
fn tcp_only(nic: &mut FakeNic) -> Vec<(Ipv4Address, u32, bool, Vec<u8>)> {
    let w = wire(nic);
    assert!(w.arp_asked.iter().all(|&a| a == CLIENT_IP), "{w:?}");
    w.tcp
        .into_iter()
        .map(|(_, src, seq, syn, p)| (src, seq, syn, p))
        .collect()
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
    let out = tcp_only(&mut nic);
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
    let out = tcp_only(&mut nic);
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
    let out = tcp_only(&mut nic);
    assert_eq!(out.len(), 1);
    assert!(out[0].2 && out[0].0 == SERVER_IP);
    // A segment to the VIP that opens nothing is reset from the VIP.
    nic.rx
        .inbox
        .push_back(to(VIP, 6003, 7000, Some(1234), false, b"x"));
    s.poll(&mut nic, &clock, &mut NoLog);
    let out = tcp_only(&mut nic);
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

// The reply's MAC behind a direct-routing balancer (`iface::neigh`): the balancer
// ("director") forwards the client's frames with its own source MAC; a VIP connection
// answers to the client's next hop as ARP resolved it, never to the director.

const GW: Ipv4Address = Ipv4Address([10, 0, 0, 254]);
const GW_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0xFE]);
const DIRECTOR_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0xDD]);
const FORGED_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x66]);
const FAR: Ipv4Address = Ipv4Address([192, 0, 2, 9]);

fn routed_vip_server() -> Server<TestSite> {
    let mut cfg = Config::new(SERVER_IP, 24, [0x42; 16]);
    cfg.tcbs = 8;
    cfg.max_per_ip = Some(8);
    cfg.syn_backlog = Some(8);
    cfg.gateway = Some(GW);
    assert!(cfg.vips.add(VIP));
    Server::new(cfg, TestSite::new(), SERVER_MAC)
}

/// A TCP frame `src`:`sport` → `dst`:80 in a frame from `src_mac` to the server.
#[allow(clippy::too_many_arguments)]
fn via(
    src_mac: EthernetAddress,
    src: Ipv4Address,
    dst: Ipv4Address,
    sport: u16,
    seq: u32,
    ack: Option<u32>,
    syn: bool,
    p: &[u8],
) -> Vec<u8> {
    let mut f = to(dst, sport, seq, ack, syn, p);
    let hl = f.len() - L2L3 - p.len();
    write_l2l3(
        &mut f,
        src_mac,
        SERVER_MAC,
        src,
        dst,
        IpProtocol::Tcp,
        hl + p.len(),
    );
    let mut t = TcpPacket::new_unchecked(&mut f[L2L3..]);
    t.set_checksum(0);
    t.fill_checksum(src, dst);
    f
}

/// An ARP reply "`ip` is at `mac`" in a frame to `frame_dst`, for our address.
fn arp_reply(ip: Ipv4Address, mac: EthernetAddress, frame_dst: EthernetAddress) -> Vec<u8> {
    let a = ArpRepr {
        operation: ArpOperation::Reply,
        source_hardware_addr: mac,
        source_protocol_addr: ip,
        target_hardware_addr: SERVER_MAC,
        target_protocol_addr: SERVER_IP,
    };
    let mut f = vec![0u8; 14 + a.buffer_len()];
    let mut eth = EthernetFrame::new_unchecked(&mut f[..]);
    EthernetRepr {
        src_addr: mac,
        dst_addr: frame_dst,
        ethertype: EtherType::Arp,
    }
    .emit(&mut eth);
    a.emit(&mut ArpPacket::new_unchecked(eth.payload_mut()));
    f
}

/// What the server sent: ARP requests as (target), TCP frames as (destination MAC,
/// source address, seq, syn, payload).
#[derive(Debug, Default)]
struct Wire {
    arp_asked: Vec<Ipv4Address>,
    tcp: Vec<(EthernetAddress, Ipv4Address, u32, bool, Vec<u8>)>,
}

fn wire(nic: &mut FakeNic) -> Wire {
    let mut w = Wire::default();
    for f in nic.tx.outbox.drain(..) {
        let eth = EthernetFrame::new_checked(&f[..]).unwrap();
        if eth.ethertype() == EtherType::Arp {
            let a = ArpRepr::parse(&ArpPacket::new_checked(eth.payload()).unwrap()).unwrap();
            assert_eq!(a.operation, ArpOperation::Request);
            assert_eq!(eth.dst_addr(), EthernetAddress::BROADCAST);
            // Asked from our own address, never from the VIP.
            assert_eq!(a.source_protocol_addr, SERVER_IP);
            w.arp_asked.push(a.target_protocol_addr);
        } else {
            let (src, seq, syn, p) = sent(&f);
            w.tcp.push((eth.dst_addr(), src, seq, syn, p));
        }
    }
    w
}

#[test]
fn a_vip_connection_answers_to_the_gateway_not_to_the_director() {
    let mut s = routed_vip_server();
    let mut nic = FakeNic::new(SERVER_MAC);
    let clock = ManualClock(1_000_000);
    // An unsolicited reply (gratuitous, or a forger's) for the gateway teaches nothing.
    nic.rx
        .inbox
        .push_back(arp_reply(GW, FORGED_MAC, SERVER_MAC));
    s.poll(&mut nic, &clock, &mut NoLog);
    assert!(nic.tx.outbox.is_empty());
    assert_eq!(s.stats().drop_not_for_us, 1);
    // A SYN to the VIP from an off-link client, in a frame from the director: the
    // gateway is asked for first; until it answers, the SYN-ACK goes where the frame
    // came from (what every connection did before).
    nic.rx
        .inbox
        .push_back(via(DIRECTOR_MAC, FAR, VIP, 7001, 1000, None, true, &[]));
    s.poll(&mut nic, &clock, &mut NoLog);
    let w = wire(&mut nic);
    assert_eq!(w.arp_asked, vec![GW]);
    assert_eq!(w.tcp.len(), 1);
    let (dst, src, iss, syn, _) = w.tcp[0].clone();
    assert!(syn && src == VIP && dst == DIRECTOR_MAC, "{w:?}");
    // The gateway's reply, broadcast: not learned. Unicast to us: learned; a second
    // reply to the same request (a forger racing it) is not.
    nic.rx
        .inbox
        .push_back(arp_reply(GW, FORGED_MAC, EthernetAddress::BROADCAST));
    nic.rx.inbox.push_back(arp_reply(GW, GW_MAC, SERVER_MAC));
    nic.rx
        .inbox
        .push_back(arp_reply(GW, FORGED_MAC, SERVER_MAC));
    s.poll(&mut nic, &clock, &mut NoLog);
    assert!(nic.tx.outbox.is_empty());
    assert_eq!(s.stats().drop_not_for_us, 3);
    // The handshake's end and a request, still from the director: every answer goes to
    // the gateway's MAC, from the VIP, and nothing more is asked.
    let req = b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n";
    for p in [&[][..], &req[..]] {
        nic.rx.inbox.push_back(via(
            DIRECTOR_MAC,
            FAR,
            VIP,
            7001,
            1001,
            Some(iss + 1),
            false,
            p,
        ));
    }
    s.poll(&mut nic, &clock, &mut NoLog);
    let w = wire(&mut nic);
    assert!(w.arp_asked.is_empty(), "{w:?}");
    assert!(w.tcp.iter().any(|t| !t.4.is_empty()), "a response: {w:?}");
    assert!(w.tcp.iter().all(|t| t.0 == GW_MAC && t.1 == VIP), "{w:?}");
    // A new client's SYN-ACK goes straight to the gateway.
    nic.rx.inbox.push_back(via(
        DIRECTOR_MAC,
        Ipv4Address([198, 51, 100, 7]),
        VIP,
        7002,
        50,
        None,
        true,
        &[],
    ));
    s.poll(&mut nic, &clock, &mut NoLog);
    let w = wire(&mut nic);
    assert!(w.arp_asked.is_empty());
    assert_eq!(w.tcp.len(), 1);
    assert!(w.tcp[0].3 && w.tcp[0].0 == GW_MAC, "{w:?}");
    // Our own address answers the frame's source as always, with no ARP.
    nic.rx
        .inbox
        .push_back(via(DIRECTOR_MAC, FAR, SERVER_IP, 7003, 9, None, true, &[]));
    s.poll(&mut nic, &clock, &mut NoLog);
    let w = wire(&mut nic);
    assert!(w.arp_asked.is_empty());
    assert_eq!(w.tcp.len(), 1);
    assert!(
        w.tcp[0].3 && w.tcp[0].0 == DIRECTOR_MAC && w.tcp[0].1 == SERVER_IP,
        "{w:?}"
    );
}

#[test]
fn a_vip_connection_answers_an_on_link_client_at_its_own_mac() {
    let mut s = routed_vip_server();
    let mut nic = FakeNic::new(SERVER_MAC);
    let clock = ManualClock(1_000_000);
    nic.rx.inbox.push_back(via(
        DIRECTOR_MAC,
        CLIENT_IP,
        VIP,
        7101,
        1000,
        None,
        true,
        &[],
    ));
    s.poll(&mut nic, &clock, &mut NoLog);
    let w = wire(&mut nic);
    // The client itself is asked for, not the gateway.
    assert_eq!(w.arp_asked, vec![CLIENT_IP]);
    let iss = w.tcp[0].2;
    // A reply from another on-link host, unasked, is not taken.
    nic.rx.inbox.push_back(arp_reply(
        Ipv4Address([10, 0, 0, 66]),
        FORGED_MAC,
        SERVER_MAC,
    ));
    nic.rx
        .inbox
        .push_back(arp_reply(CLIENT_IP, CLIENT_MAC, SERVER_MAC));
    s.poll(&mut nic, &clock, &mut NoLog);
    assert_eq!(s.stats().drop_not_for_us, 1);
    let req = b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n";
    nic.rx.inbox.push_back(via(
        DIRECTOR_MAC,
        CLIENT_IP,
        VIP,
        7101,
        1001,
        Some(iss + 1),
        false,
        req,
    ));
    s.poll(&mut nic, &clock, &mut NoLog);
    let w = wire(&mut nic);
    assert!(w.arp_asked.is_empty());
    assert!(w.tcp.iter().any(|t| !t.4.is_empty()), "{w:?}");
    assert!(w.tcp.iter().all(|t| t.0 == CLIENT_MAC), "{w:?}");
}
