//! Tests over real captured bytes: `testdata/session.pcap` was recorded with
//! `tcpdump -i bw0 -w session.pcap` on the TAP of `bareweb serve` while these talked to
//! it from Linux 6.1 (Debian 12): `ping -c 2 -s 48`, `curl 7.88.1` (GET /, GET /style.css
//! with gzip), `wget 1.21.3` (GET /docs/), Python 3.11 `http.client` (GET and HEAD on one
//! keep-alive connection) and a UDP DNS query to port 53. The kernel's own IPv6 router
//! solicitations and MLDv2 reports are in it too; `testdata/ipv6.pcap` holds Linux's
//! neighbour discovery, MLD and ping between two network namespaces.
//!
//! Every frame, from both sides, must parse through the wire views with its checksums
//! verified (for the server's frames that checks the block-sum checksums of the send
//! path), every client request must parse as HTTP, and every captured SYN replayed into
//! a fresh server must get a correct SYN-ACK.

use std::vec::Vec;

use crate::fake::FakeNic;
use crate::http::{self, Parse};
use crate::nic::Clock;
use crate::resource::{Found, Lookup};
use crate::server::{Config, NoLog, Server};
use crate::wire::{
    ArpOperation, ArpPacket, ArpRepr, EtherType, EthernetAddress, EthernetFrame, IcmpPacket,
    IcmpRepr, IpProtocol, Ipv4Address, Ipv4Packet, Ipv4Repr, TcpPacket, TcpRepr, UdpPacket,
    UdpRepr,
};

use crate::wire::{icmpv6, ipv6, Icmpv6Packet, Icmpv6Repr, Ipv6Packet, Ipv6Repr};

static PCAP: &[u8] = include_bytes!("../testdata/session.pcap");

/// Recorded with `tcpdump -i veth -w ipv6.pcap` in one of two network namespaces joined by
/// a veth pair (Linux 6.1): the kernel's DAD (with RFC 7527 nonces), MLDv2 reports and
/// router solicitations as both ends came up, then `ping -6 -c 2 -s 48` to the peer's
/// link-local address and to 2001:db8::b (NS/NA first), and one to an absent 2001:db8::c.
pub(crate) static PCAP_V6: &[u8] = include_bytes!("../testdata/ipv6.pcap");

/// Parses an IPv6 frame through every view: fixed header, extension-header walk, the
/// ICMPv6 message with its checksum and Neighbor Discovery checks, and an emit of the
/// same message that must give back the captured bytes.
fn parse_ipv6_frame(i: usize, frame: &'static [u8]) -> Icmpv6Repr<'static> {
    let eth = EthernetFrame::new_checked(frame).unwrap();
    let ip = Ipv6Packet::new_checked(eth.payload()).unwrap_or_else(|e| panic!("frame {i}: {e:?}"));
    let repr = Ipv6Repr::parse(&ip).unwrap();
    let up = ip.walk().unwrap_or_else(|e| panic!("frame {i}: {e:?}"));
    assert_eq!(up.protocol, ipv6::NextHeader::Icmpv6, "frame {i}");
    // MLD goes behind a hop-by-hop Router Alert with hop limit 1 (RFC 3810 §5).
    assert_eq!(up.router_alert, repr.hop_limit == 1, "frame {i}");
    let body = &frame[14 + up.offset..14 + up.offset + up.len];
    assert_eq!(body, ip.upper_payload(&up));
    let p = Icmpv6Packet::new_checked(body).unwrap();
    assert!(p.verify_checksum(repr.src_addr, repr.dst_addr), "frame {i}");
    let r = Icmpv6Repr::parse(&p, repr.src_addr, repr.dst_addr, repr.hop_limit)
        .unwrap_or_else(|e| panic!("frame {i}: {e:?}"));
    let mut out = std::vec![0u8; r.buffer_len()];
    r.emit(
        &mut Icmpv6Packet::new_unchecked(&mut out[..]),
        repr.src_addr,
        repr.dst_addr,
    );
    assert_eq!(&out[..], body, "frame {i}: emit gives the captured bytes");
    // The frame goes to the Ethernet group of its IPv6 group (RFC 2464 §7).
    if repr.dst_addr.is_multicast() {
        assert_eq!(
            eth.dst_addr(),
            repr.dst_addr.multicast_ethernet(),
            "frame {i}"
        );
    }
    r
}

const SERVER_MAC: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 2]);
const SERVER: Ipv4Address = Ipv4Address::new(10, 0, 0, 2);
const CLIENT: Ipv4Address = Ipv4Address::new(10, 0, 0, 1);

/// The frames of a classic pcap file (little-endian, microsecond stamps, Ethernet).
pub(crate) fn frames(pcap: &[u8]) -> Vec<&[u8]> {
    assert_eq!(&pcap[..4], &[0xd4, 0xc3, 0xb2, 0xa1], "little-endian pcap");
    assert_eq!(
        u32::from_le_bytes(pcap[20..24].try_into().unwrap()),
        1,
        "LINKTYPE_ETHERNET"
    );
    let mut out = Vec::new();
    let mut rest = &pcap[24..];
    while !rest.is_empty() {
        let incl = u32::from_le_bytes(rest[8..12].try_into().unwrap()) as usize;
        let orig = u32::from_le_bytes(rest[12..16].try_into().unwrap()) as usize;
        assert_eq!(incl, orig, "captured whole (-s 0)");
        out.push(&rest[16..16 + incl]);
        rest = &rest[16 + incl..];
    }
    out
}

#[derive(Default, Debug, PartialEq, Eq)]
struct Seen {
    arp_requests: usize,
    arp_replies: usize,
    echo_requests: usize,
    echo_replies: usize,
    tcp_from_client: usize,
    tcp_from_server: usize,
    udp: usize,
    ipv6: usize,
}

#[test]
fn every_captured_ipv6_frame_parses() {
    let frames = frames(PCAP_V6);
    assert_eq!(frames.len(), 30);
    let (mut dad, mut mld, mut rs, mut ns, mut na, mut echo) = (0, 0, 0, 0, 0, 0);
    for (i, f) in frames.iter().enumerate() {
        let eth = EthernetFrame::new_checked(*f).unwrap();
        assert_eq!(eth.ethertype(), EtherType::Ipv6, "frame {i}");
        let ip = Ipv6Packet::new_checked(eth.payload()).unwrap();
        let (src, dst) = (ip.src_addr(), ip.dst_addr());
        match parse_ipv6_frame(i, f) {
            Icmpv6Repr::NeighborSolicit { target, nonce, .. } if src.is_unspecified() => {
                // DAD: to the target's solicited-node group, with a nonce.
                assert_eq!(dst, target.solicited_node());
                assert!(nonce.is_some());
                dad += 1;
            }
            Icmpv6Repr::NeighborSolicit {
                target,
                source_lladdr,
                ..
            } => {
                assert_eq!(dst, target.solicited_node());
                assert_eq!(source_lladdr, Some(eth.src_addr()));
                ns += 1;
            }
            Icmpv6Repr::NeighborAdvert {
                solicited,
                target,
                target_lladdr,
                ..
            } => {
                assert!(solicited);
                assert_eq!(target, src);
                assert_eq!(target_lladdr, Some(eth.src_addr()));
                na += 1;
            }
            Icmpv6Repr::MldReport { records } => {
                assert_eq!(dst, ipv6::Address::ALL_MLDV2_ROUTERS);
                // Each host joins the solicited-node groups of its two addresses.
                for r in records.iter() {
                    assert_eq!(r.record_type, icmpv6::RecordType::ChangeToExclude);
                    assert!(r.group.is_solicited_node_multicast());
                }
                assert_eq!(records.len(), 2);
                mld += 1;
            }
            Icmpv6Repr::RouterSolicit { source_lladdr } => {
                assert_eq!(dst, ipv6::Address::ALL_ROUTERS);
                assert!(src.is_link_local());
                assert_eq!(source_lladdr, Some(eth.src_addr()));
                rs += 1;
            }
            Icmpv6Repr::EchoRequest { data, .. } | Icmpv6Repr::EchoReply { data, .. } => {
                assert_eq!(data.len(), 48);
                echo += 1;
            }
            other => panic!("frame {i}: {other:?}"),
        }
    }
    assert_eq!((dad, mld, rs, ns, na, echo), (4, 8, 4, 4, 2, 8));
}

#[test]
fn every_captured_frame_parses_with_valid_checksums() {
    let frames = frames(PCAP);
    assert_eq!(frames.len(), 50);
    let mut seen = Seen::default();
    let mut requests = Vec::new();
    for (i, f) in frames.iter().enumerate() {
        let eth = EthernetFrame::new_checked(*f).unwrap_or_else(|e| panic!("frame {i}: {e:?}"));
        match eth.ethertype() {
            EtherType::Arp => {
                let arp = ArpRepr::parse(&ArpPacket::new_checked(eth.payload()).unwrap()).unwrap();
                match arp.operation {
                    ArpOperation::Request => {
                        assert_eq!(arp.target_protocol_addr, SERVER);
                        seen.arp_requests += 1;
                    }
                    ArpOperation::Reply => {
                        assert_eq!(arp.source_hardware_addr, SERVER_MAC);
                        assert_eq!(arp.source_protocol_addr, SERVER);
                        seen.arp_replies += 1;
                    }
                    other => panic!("frame {i}: ARP {other:?}"),
                }
            }
            EtherType::Ipv4 => {
                let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
                assert!(ip.verify_checksum(), "frame {i}: IPv4 checksum");
                let repr = Ipv4Repr::parse(&ip).unwrap();
                let from_server = repr.src_addr == SERVER;
                assert_eq!(eth.src_addr() == SERVER_MAC, from_server, "frame {i}");
                match repr.next_header {
                    IpProtocol::Icmp => {
                        let p = IcmpPacket::new_checked(ip.payload()).unwrap();
                        match IcmpRepr::parse(&p).unwrap() {
                            IcmpRepr::EchoRequest { data, .. } => {
                                assert_eq!(data.len(), 48);
                                seen.echo_requests += 1;
                            }
                            IcmpRepr::EchoReply { data, .. } => {
                                assert!(from_server);
                                assert_eq!(data.len(), 48);
                                seen.echo_replies += 1;
                            }
                            other => panic!("frame {i}: {other:?}"),
                        }
                    }
                    IpProtocol::Tcp => {
                        let p = TcpPacket::new_checked(ip.payload()).unwrap();
                        assert!(
                            p.verify_checksum(repr.src_addr, repr.dst_addr),
                            "frame {i}: TCP checksum (from server: {from_server})"
                        );
                        let t = TcpRepr::parse(&p).unwrap();
                        if from_server {
                            seen.tcp_from_server += 1;
                            assert_eq!(t.src_port, 80);
                        } else {
                            seen.tcp_from_client += 1;
                            assert_eq!(t.dst_port, 80);
                            if t.flags.syn {
                                // Linux's SYN: MSS 1460, SACK permitted, timestamps, WS.
                                assert_eq!(t.options.mss, Some(1460));
                                assert!(t.options.window_scale.is_some());
                            }
                            if !t.payload.is_empty() {
                                requests.push(t.payload.to_vec());
                            }
                        }
                    }
                    IpProtocol::Udp => {
                        let p = UdpPacket::new_checked(ip.payload()).unwrap();
                        let u = UdpRepr::parse(&p, repr.src_addr, repr.dst_addr).unwrap();
                        assert_eq!(u.dst_port, 53);
                        seen.udp += 1;
                    }
                    other => panic!("frame {i}: protocol {other:?}"),
                }
            }
            EtherType::Ipv6 => {
                // The Linux client's own MLDv2 reports and router solicitation.
                match parse_ipv6_frame(i, f) {
                    Icmpv6Repr::MldReport { records } => assert_eq!(records.len(), 1),
                    Icmpv6Repr::RouterSolicit { source_lladdr } => {
                        assert_eq!(source_lladdr, Some(eth.src_addr()))
                    }
                    other => panic!("frame {i}: {other:?}"),
                }
                seen.ipv6 += 1;
            }
            other => panic!("frame {i}: ethertype {other:?}"),
        }
    }
    assert_eq!(
        seen,
        Seen {
            arp_requests: 1,
            arp_replies: 1,
            echo_requests: 2,
            echo_replies: 2,
            tcp_from_client: 26,
            tcp_from_server: 14,
            udp: 1,
            ipv6: 3,
        }
    );
    // The requests of curl, wget and Python, each one whole in its segment.
    let mut lines = Vec::new();
    for r in &requests {
        let Parse::Complete { request, len } = http::parse(r) else {
            panic!("not a complete request: {:?}", String::from_utf8_lossy(r));
        };
        assert_eq!(len, r.len());
        assert_eq!(request.host, Some(&b"10.0.0.2"[..]));
        lines.push((request.method, request.target));
    }
    use http::Method::{Get, Head};
    assert_eq!(
        lines,
        [
            (Get, &b"/"[..]),
            (Get, b"/style.css"),
            (Get, b"/docs/"),
            (Get, b"/robots.txt"),
            (Head, b"/files/4k.html"),
        ]
    );
}

struct NoSite;

impl Lookup<'static> for NoSite {
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

#[test]
fn captured_syns_replayed_get_syn_acks() {
    let mut server = Server::new(Config::new(SERVER, 24, [0x42; 16]), NoSite, SERVER_MAC);
    let mut nic = FakeNic::new(SERVER_MAC);
    let mut syns = 0;
    for f in frames(PCAP) {
        let eth = EthernetFrame::new_checked(f).unwrap();
        let Ok(ip) = Ipv4Packet::new_checked(eth.payload()) else {
            continue;
        };
        let Ok(tcp) = TcpPacket::new_checked(ip.payload()) else {
            continue;
        };
        if !tcp.syn() || tcp.ack() {
            continue;
        }
        syns += 1;
        nic.rx.inbox.push_back(f.to_vec());
        server.poll(&mut nic, &At(syns * 1_000_000), &mut NoLog);
        let out = nic.tx.outbox.pop().expect("a SYN-ACK");
        let oe = EthernetFrame::new_checked(&out[..]).unwrap();
        assert_eq!(oe.dst_addr(), eth.src_addr());
        let oip = Ipv4Packet::new_checked(oe.payload()).unwrap();
        assert!(oip.verify_checksum());
        let ot = TcpPacket::new_checked(oip.payload()).unwrap();
        assert!(ot.verify_checksum(SERVER, CLIENT));
        let r = TcpRepr::parse(&ot).unwrap();
        assert!(r.flags.syn && r.flags.ack);
        assert_eq!(r.ack_number, Some(tcp.seq_number().wrapping_add(1)));
        assert_eq!((r.src_port, r.dst_port), (80, tcp.src_port()));
        assert_eq!(r.options.mss, Some(1460));
        assert_eq!(r.options.window_scale, Some(0));
    }
    assert_eq!(syns, 4);
    assert_eq!(server.active(), 4);
}
