//! Tests over real captured bytes: `testdata/session.pcap` was recorded with
//! `tcpdump -i bw0 -w session.pcap` on the TAP of `bareweb serve` while these talked to
//! it from Linux 6.1 (Debian 12): `ping -c 2 -s 48`, `curl 7.88.1` (GET /, GET /style.css
//! with gzip), `wget 1.21.3` (GET /docs/), Python 3.11 `http.client` (GET and HEAD on one
//! keep-alive connection) and a UDP DNS query to port 53. The kernel's own IPv6 router
//! solicitations are in it too.
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

static PCAP: &[u8] = include_bytes!("../testdata/session.pcap");

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
            EtherType::Ipv6 => seen.ipv6 += 1,
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
