//! Tests of `wire::icmpv6`: the messages Linux 6.1 sent between two network namespaces
//! (`testdata/ipv6.pcap`: DAD, MLDv2, router solicitations, NS/NA, ping) and built ones
//! for what the capture lacks.

use std::vec;
use std::vec::Vec;

use super::*;
use crate::wire::ipv6;

static PCAP: &[u8] = include_bytes!("../../../testdata/ipv6.pcap");

const A: Address = Address::new(0xfe80, 0, 0, 0, 0, 0xff, 0xfe00, 0x060a);
const B: Address = Address::new(0xfe80, 0, 0, 0, 0, 0xff, 0xfe00, 0x060b);
const MAC_A: EthernetAddress = EthernetAddress([2, 0, 0, 0, 6, 0x0a]);
const MAC_B: EthernetAddress = EthernetAddress([2, 0, 0, 0, 6, 0x0b]);

/// (source, destination, hop limit, ICMPv6 bytes) of every frame of the capture.
fn messages() -> Vec<(Address, Address, u8, &'static [u8])> {
    crate::capture_tests::frames(PCAP)
        .into_iter()
        .map(|f| {
            let ip = ipv6::Packet::new_checked(&f[14..]).unwrap();
            let up = ip.walk().unwrap();
            assert_eq!(up.protocol, NextHeader::Icmpv6);
            let body = &f[14 + up.offset..14 + up.offset + up.len];
            (ip.src_addr(), ip.dst_addr(), ip.hop_limit(), body)
        })
        .collect()
}

fn parse(m: &(Address, Address, u8, &'static [u8])) -> Result<Repr<'static>> {
    Repr::parse(&Packet::new_checked(m.3)?, m.0, m.1, m.2)
}

/// Emits `r` and checks the bytes equal `want`.
fn emits_as(r: &Repr<'_>, src: Address, dst: Address, want: &[u8]) {
    assert_eq!(r.buffer_len(), want.len(), "{r:?}");
    let mut out = vec![0xa5u8; r.buffer_len()];
    r.emit(&mut Packet::new_unchecked(&mut out[..]), src, dst);
    assert_eq!(out, want, "{r:?}");
}

#[test]
fn captured_dad_probe_with_nonce() {
    let m = messages();
    // Frame 2: DAD for B's link-local, from ::, to its solicited-node group, a nonce.
    let dad = &m[2];
    assert!(dad.0.is_unspecified());
    assert_eq!(dad.1, B.solicited_node());
    let r = parse(dad).unwrap();
    let Repr::NeighborSolicit {
        target,
        source_lladdr: None,
        nonce: Some(nonce),
    } = r
    else {
        panic!("{r:?}");
    };
    assert_eq!(target, B);
    assert_eq!(nonce, [0x30, 0x6b, 0x43, 0xfe, 0x01, 0x66]);
    emits_as(&r, dad.0, dad.1, dad.3);
}

#[test]
fn captured_ns_na_rs_echo_round_trip() {
    let m = messages();
    let rs = &m[9];
    assert_eq!(
        parse(rs),
        Ok(Repr::RouterSolicit {
            source_lladdr: Some(MAC_B)
        })
    );
    emits_as(&parse(rs).unwrap(), rs.0, rs.1, rs.3);
    let ns = &m[14];
    assert_eq!(
        parse(ns),
        Ok(Repr::NeighborSolicit {
            target: B,
            source_lladdr: Some(MAC_A),
            nonce: None
        })
    );
    emits_as(&parse(ns).unwrap(), ns.0, ns.1, ns.3);
    let na = &m[15];
    assert_eq!(
        parse(na),
        Ok(Repr::NeighborAdvert {
            router: false,
            solicited: true,
            override_: true,
            target: B,
            target_lladdr: Some(MAC_B)
        })
    );
    emits_as(&parse(na).unwrap(), na.0, na.1, na.3);
    // The echo request, and our reply to it equals Linux's reply byte for byte.
    let (req, rep) = (&m[16], &m[17]);
    let Ok(Repr::EchoRequest {
        ident,
        seq_no,
        data,
    }) = parse(req)
    else {
        panic!("not an echo request");
    };
    assert_eq!((ident, seq_no, data.len()), (31070, 1, 48));
    let reply = Repr::EchoReply {
        ident,
        seq_no,
        data,
    };
    assert_eq!(parse(rep), Ok(reply));
    emits_as(&reply, B, A, rep.3);
}

#[test]
fn captured_mld_report_and_ours() {
    let m = messages();
    let rep = &m[0];
    let Ok(Repr::MldReport { records }) = parse(rep) else {
        panic!("not a report");
    };
    let got: Vec<_> = records.iter().collect();
    assert_eq!(
        got,
        [
            MldRecord {
                record_type: RecordType::ChangeToExclude,
                group: A.solicited_node(),
                sources: &[]
            },
            MldRecord {
                record_type: RecordType::ChangeToExclude,
                group: Address::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0xa).solicited_node(),
                sources: &[]
            },
        ]
    );
    // What we emit for the same joins is what Linux sent.
    let records = [
        (RecordType::ChangeToExclude, got[0].group),
        (RecordType::ChangeToExclude, got[1].group),
    ];
    assert_eq!(mld_report_len(2), rep.3.len());
    let mut out = vec![0xa5u8; mld_report_len(2)];
    emit_mld_report(
        &mut Packet::new_unchecked(&mut out[..]),
        rep.0,
        rep.1,
        &records,
    );
    assert_eq!(out, rep.3);
    emits_as(&parse(rep).unwrap(), rep.0, rep.1, rep.3);
}

#[test]
fn every_captured_message_parses() {
    let mut kinds = Vec::new();
    for (i, m) in messages().iter().enumerate() {
        let r = parse(m).unwrap_or_else(|e| panic!("frame {i}: {e:?}"));
        assert!(!matches!(r, Repr::Other { .. }), "frame {i}: {r:?}");
        emits_as(&r, m.0, m.1, m.3);
        kinds.push(Packet::new_unchecked(m.3).msg_type());
    }
    let count = |t| kinds.iter().filter(|k| **k == t).count();
    assert_eq!(kinds.len(), 30);
    assert_eq!(count(Message::MldReport), 8);
    assert_eq!(count(Message::NeighborSolicit), 8);
    assert_eq!(count(Message::NeighborAdvert), 2);
    assert_eq!(count(Message::RouterSolicit), 4);
    assert_eq!(count(Message::EchoRequest), 4);
    assert_eq!(count(Message::EchoReply), 4);
}

fn router_advert_options() -> Vec<u8> {
    let mut o = vec![0u8; 8 + 8 + 32 + 40];
    NdiscOption::SourceLinkLayerAddr(MAC_B).emit(&mut o[0..]);
    NdiscOption::Mtu(1480).emit(&mut o[8..]);
    NdiscOption::PrefixInformation(PrefixInfo {
        prefix_len: 64,
        on_link: true,
        autonomous: true,
        valid_lifetime: 86400,
        preferred_lifetime: 14400,
        prefix: Address::new(0x2001, 0xdb8, 1, 2, 0, 0, 0, 0),
    })
    .emit(&mut o[16..]);
    let servers = [
        Address::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0x53).0,
        Address::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0x54).0,
    ]
    .concat();
    NdiscOption::Rdnss {
        lifetime: 600,
        servers: &servers,
    }
    .emit(&mut o[48..]);
    o
}

#[test]
fn router_advert_with_options() {
    let opts = router_advert_options();
    // The prefix information option as RFC 4861 §4.6.2 lays it out.
    assert_eq!(
        &opts[16..32],
        &[3, 4, 64, 0xc0, 0, 1, 0x51, 0x80, 0, 0, 0x38, 0x40, 0, 0, 0, 0]
    );
    let r = Repr::RouterAdvert {
        hop_limit: 64,
        managed: true,
        other: false,
        router_lifetime: 1800,
        reachable_time: 30000,
        retrans_timer: 1000,
        options: NdiscOptions::parse(&opts).unwrap(),
    };
    let mut out = vec![0u8; r.buffer_len()];
    r.emit(
        &mut Packet::new_unchecked(&mut out[..]),
        B,
        Address::ALL_NODES,
    );
    assert_eq!(&out[4..8], &[64, 0x80, 0x07, 0x08]);
    let p = Packet::new_checked(&out[..]).unwrap();
    assert!(p.ra_managed() && !p.ra_other());
    assert_eq!(p.reachable_time(), 30000);
    assert_eq!(p.retrans_timer(), 1000);
    let back = Repr::parse(&p, B, Address::ALL_NODES, 255).unwrap();
    assert_eq!(back, r);
    let Repr::RouterAdvert { options, .. } = back else {
        unreachable!()
    };
    assert_eq!(options.source_lladdr(), Some(MAC_B));
    assert_eq!(options.mtu(), Some(1480));
    let all: Vec<_> = options.iter().collect();
    assert_eq!(all.len(), 4);
    let NdiscOption::Rdnss { lifetime, servers } = all[3] else {
        panic!("{:?}", all[3]);
    };
    assert_eq!(lifetime, 600);
    let servers: Vec<_> = servers.chunks_exact(16).map(Address::from_bytes).collect();
    assert_eq!(servers[1], Address::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0x54));

    // RFC 4861 §6.1.2: only from a link-local source with hop limit 255.
    let g = Address::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);
    let mut out2 = out.clone();
    Packet::new_unchecked(&mut out2[..]).fill_checksum(g, Address::ALL_NODES);
    let p2 = Packet::new_checked(&out2[..]).unwrap();
    assert_eq!(
        Repr::parse(&p2, g, Address::ALL_NODES, 255),
        Err(Error::Malformed)
    );
    assert_eq!(
        Repr::parse(&p, B, Address::ALL_NODES, 254),
        Err(Error::Malformed)
    );
    assert_eq!(
        Repr::parse(&p, A, Address::ALL_NODES, 255),
        Err(Error::Checksum)
    );
}

#[test]
fn option_iterator_refuses_zero_length_and_overruns() {
    assert_eq!(NdiscOptions::parse(&[]), Ok(NdiscOptions::default()));
    // Zero length: discard (RFC 4861 §4.6), not loop.
    assert_eq!(
        NdiscOptions::parse(&[1, 0, 0, 0, 0, 0, 0, 0]),
        Err(Error::Malformed)
    );
    assert_eq!(
        NdiscOptions::parse(&[99, 1, 0, 0, 0, 0, 0, 0, 1, 0]),
        Err(Error::Malformed)
    );
    // Past the end, or a lone octet.
    assert_eq!(
        NdiscOptions::parse(&[1, 2, 0, 0, 0, 0, 0, 0]),
        Err(Error::Truncated)
    );
    assert_eq!(NdiscOptions::parse(&[1]), Err(Error::Truncated));
    // Known options of the wrong size.
    for bad in [
        &[1u8, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0][..],
        &[5, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        &[25, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    ] {
        assert_eq!(NdiscOptions::parse(bad), Err(Error::Malformed), "{bad:?}");
    }
    let mut pi = [0u8; 32];
    pi[..3].copy_from_slice(&[3, 4, 129]);
    assert_eq!(NdiscOptions::parse(&pi), Err(Error::Malformed));
    // Unknown options are kept and skipped.
    let o = NdiscOptions::parse(&[99, 1, 1, 2, 3, 4, 5, 6]).unwrap();
    assert_eq!(
        o.iter().collect::<Vec<_>>(),
        [NdiscOption::Unknown {
            kind: 99,
            data: &[1, 2, 3, 4, 5, 6]
        }]
    );
    // A message with a zero-length option is refused whole.
    let mut msg = [0u8; 32];
    msg[0] = 135;
    msg[8..24].copy_from_slice(&B.0);
    msg[24] = 1;
    Packet::new_unchecked(&mut msg[..]).fill_checksum(A, B.solicited_node());
    let p = Packet::new_checked(&msg[..]).unwrap();
    assert_eq!(
        Repr::parse(&p, A, B.solicited_node(), 255),
        Err(Error::Malformed)
    );
}

#[test]
fn neighbor_discovery_validity() {
    let ns = |target: Address, lladdr: Option<EthernetAddress>, src, dst| {
        let r = Repr::NeighborSolicit {
            target,
            source_lladdr: lladdr,
            nonce: None,
        };
        let mut out = vec![0u8; r.buffer_len()];
        r.emit(&mut Packet::new_unchecked(&mut out[..]), src, dst);
        let p = Packet::new_checked(&out[..]).unwrap();
        Repr::parse(&p, src, dst, 255).map(|_| ())
    };
    let u = Address::UNSPECIFIED;
    assert_eq!(ns(B, Some(MAC_A), A, B.solicited_node()), Ok(()));
    assert_eq!(ns(B, None, u, B.solicited_node()), Ok(()));
    // DAD with a source link-layer address, or not to a solicited-node group.
    assert_eq!(
        ns(B, Some(MAC_A), u, B.solicited_node()),
        Err(Error::Malformed)
    );
    assert_eq!(ns(B, None, u, Address::ALL_NODES), Err(Error::Malformed));
    assert_eq!(
        ns(Address::ALL_NODES, None, A, B.solicited_node()),
        Err(Error::Malformed)
    );
    // A solicited advertisement to a multicast group.
    let na = Repr::NeighborAdvert {
        router: true,
        solicited: true,
        override_: false,
        target: B,
        target_lladdr: None,
    };
    let mut out = vec![0u8; na.buffer_len()];
    na.emit(
        &mut Packet::new_unchecked(&mut out[..]),
        B,
        Address::ALL_NODES,
    );
    let p = Packet::new_checked(&out[..]).unwrap();
    assert!(p.na_router() && p.na_solicited() && !p.na_override());
    assert_eq!(
        Repr::parse(&p, B, Address::ALL_NODES, 255),
        Err(Error::Malformed)
    );
    // A non-zero code.
    let mut out = vec![0u8; na.buffer_len()];
    na.emit(&mut Packet::new_unchecked(&mut out[..]), B, A);
    let mut p = Packet::new_unchecked(&mut out[..]);
    p.set_msg_code(1);
    p.fill_checksum(B, A);
    let p = Packet::new_checked(&out[..]).unwrap();
    assert_eq!(Repr::parse(&p, B, A, 255), Err(Error::Malformed));
}

#[test]
fn errors_round_trip() {
    let invoking = &messages()[16];
    let quoted = {
        let f = crate::capture_tests::frames(PCAP)[16];
        &f[14..]
    };
    assert_eq!(invoking.3.len() + 40, quoted.len());
    let g = Address::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);
    for r in [
        Repr::DstUnreachable {
            code: unreachable::PORT,
            invoking: quoted,
        },
        Repr::PacketTooBig {
            mtu: 1280,
            invoking: quoted,
        },
        Repr::TimeExceeded {
            code: 0,
            invoking: quoted,
        },
        Repr::ParamProblem {
            code: param_problem::NEXT_HEADER,
            pointer: 6,
            invoking: quoted,
        },
    ] {
        let mut out = vec![0xa5u8; r.buffer_len()];
        r.emit(&mut Packet::new_unchecked(&mut out[..]), g, A);
        let p = Packet::new_checked(&out[..]).unwrap();
        assert!(p.msg_type().is_error());
        assert_eq!(p.data(), quoted);
        assert_eq!(Repr::parse(&p, g, A, 64), Ok(r));
        if let Repr::PacketTooBig { .. } = r {
            assert_eq!(p.mtu(), 1280);
            assert_eq!(&out[..8], &[2, 0, out[2], out[3], 0, 0, 5, 0]);
        }
    }
    assert_eq!(MAX_INVOKING_LEN, 1232);
}

#[test]
fn short_messages_and_accessors_never_panic() {
    // Every type at every length up to its fixed part: checked, and the accessors read
    // zeros instead of panicking on an unchecked one.
    for t in 0..=255u8 {
        for len in 0..48 {
            let mut b = vec![0u8; len];
            if let Some(x) = b.first_mut() {
                *x = t;
            }
            let ok = Packet::new_checked(&b[..]).is_ok();
            assert_eq!(ok, len >= Message::from(t).min_len(), "type {t} len {len}");
            let p = Packet::new_unchecked(&b[..]);
            let _ = (
                p.target_addr(),
                p.redirect_dst_addr(),
                p.retrans_timer(),
                p.mtu(),
                p.options(),
                p.data(),
                p.mld_num_records(),
            );
        }
    }
    for v in 0..=255u8 {
        assert_eq!(u8::from(Message::from(v)), v);
        assert_eq!(u8::from(RecordType::from(v)), v);
    }
}

#[test]
fn mld_records_bounded() {
    // A record claiming sources past the end, and a count past the records.
    let mut rec = vec![4u8, 0, 0, 1];
    rec.extend_from_slice(&Address::ALL_NODES.0);
    assert_eq!(MldRecords::parse(&rec, 1), Err(Error::Truncated));
    rec[3] = 0;
    assert!(MldRecords::parse(&rec, 1).is_ok());
    assert_eq!(MldRecords::parse(&rec, 2), Err(Error::Truncated));
    assert_eq!(MldRecords::parse(&rec, 0), Err(Error::Malformed));
    // Auxiliary data is skipped.
    rec[1] = 1;
    rec.extend_from_slice(&[9, 9, 9, 9]);
    let r = MldRecords::parse(&rec, 1).unwrap();
    assert_eq!(r.iter().next().unwrap().group, Address::ALL_NODES);
}

#[test]
fn mld_queries() {
    let router = Address::new(0xfe80, 0, 0, 0, 0, 0, 0, 1);
    let src = Address::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0x99).0;
    let cases = [
        // A general MLDv2 query, 10 s, QRV 2, QQIC 125 (what Linux's querier sends).
        Repr::MldQuery {
            max_resp_code: 10000,
            group: Address::UNSPECIFIED,
            v2: Some(MldQueryV2 {
                suppress: false,
                qrv: 2,
                qqic: 125,
                sources: &[],
            }),
        },
        // Group-and-source specific.
        Repr::MldQuery {
            max_resp_code: 1000,
            group: A.solicited_node(),
            v2: Some(MldQueryV2 {
                suppress: true,
                qrv: 7,
                qqic: 0,
                sources: &src,
            }),
        },
        // MLDv1.
        Repr::MldQuery {
            max_resp_code: 1000,
            group: Address::UNSPECIFIED,
            v2: None,
        },
    ];
    for r in cases {
        let mut out = vec![0xa5u8; r.buffer_len()];
        r.emit(
            &mut Packet::new_unchecked(&mut out[..]),
            router,
            Address::ALL_NODES,
        );
        let p = Packet::new_checked(&out[..]).unwrap();
        assert_eq!(Repr::parse(&p, router, Address::ALL_NODES, 1), Ok(r));
        // Only from a link-local source.
        let g = Address::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);
        Packet::new_unchecked(&mut out[..]).fill_checksum(g, Address::ALL_NODES);
        let p = Packet::new_checked(&out[..]).unwrap();
        assert_eq!(
            Repr::parse(&p, g, Address::ALL_NODES, 1),
            Err(Error::Malformed)
        );
    }
    // RFC 3810 §8.1: 25-27 octets is neither version; sources past the end.
    let mut q = [0u8; 28];
    q[0] = 130;
    for len in [25, 26, 27] {
        Packet::new_unchecked(&mut q[..len]).fill_checksum(router, Address::ALL_NODES);
        let p = Packet::new_checked(&q[..len]).unwrap();
        assert_eq!(
            Repr::parse(&p, router, Address::ALL_NODES, 1),
            Err(Error::Truncated)
        );
    }
    q[27] = 1;
    Packet::new_unchecked(&mut q[..]).fill_checksum(router, Address::ALL_NODES);
    let p = Packet::new_checked(&q[..]).unwrap();
    assert_eq!(
        Repr::parse(&p, router, Address::ALL_NODES, 1),
        Err(Error::Truncated)
    );
    // RFC 3810 §5.1.3's codes.
    assert_eq!(mld_max_resp_delay_ms(10000), 10000);
    assert_eq!(mld_max_resp_delay_ms(0x7fff), 0x7fff);
    assert_eq!(mld_max_resp_delay_ms(0x8000), 32768);
    assert_eq!(mld_max_resp_delay_ms(0xffff), 0x1fff << 10);
}

/// `testdata/mld.pcap`: a Linux bridge as MLD querier (MLDv2, then MLDv1) and a Linux
/// host in MLDv1 mode (`force_mld_version=1`) beside it, captured on the host's side:
/// every message behind its Router Alert, the queries parsed as such, and our MLDv1
/// report and Router Alert header byte for byte the host's.
#[test]
fn captured_mld_queries_parse_and_our_mldv1_report_is_linuxs() {
    static MLD: &[u8] = include_bytes!("../../../testdata/mld.pcap");
    let frames = crate::capture_tests::frames(MLD);
    assert_eq!(frames.len(), 14);
    let mut queries = Vec::new();
    for f in &frames {
        let ip = ipv6::Packet::new_checked(&f[14..]).unwrap();
        let up = ip.walk().unwrap();
        assert!(up.router_alert, "MLD rides behind a Router Alert");
        assert_eq!(ip.hop_limit(), 1);
        let body = &f[14 + up.offset..14 + up.offset + up.len];
        let p = Packet::new_checked(body).unwrap();
        let r = Repr::parse(&p, ip.src_addr(), ip.dst_addr(), 1).unwrap();
        if let Repr::MldQuery { .. } = r {
            queries.push(r);
        }
        // Our Router Alert header is the host's (the bridge's queries pad with two Pad1
        // options instead of a PadN).
        let mut ra = [0u8; ipv6::ROUTER_ALERT_LEN];
        ipv6::emit_router_alert(&mut ra, NextHeader::Icmpv6);
        if !matches!(r, Repr::MldQuery { .. }) {
            assert_eq!(&f[54..62], &ra);
        }
    }
    let general = Address::UNSPECIFIED;
    match queries[..] {
        [Repr::MldQuery {
            max_resp_code: 10000,
            group: g2,
            v2: Some(v2),
        }, Repr::MldQuery {
            max_resp_code: 10000,
            group: g1,
            v2: None,
        }] => {
            assert_eq!((g2, g1), (general, general));
            assert_eq!((v2.suppress, v2.qrv, v2.qqic), (false, 2, 125));
            assert!(v2.sources.is_empty());
        }
        _ => panic!("{queries:?}"),
    }
    assert_eq!(mld_max_resp_delay_ms(10000), 10_000);
    // Frame 14: the host's MLDv1 report answering the MLDv1 query.
    let f = frames[13];
    let ip = ipv6::Packet::new_checked(&f[14..]).unwrap();
    let group = ip.dst_addr();
    assert_eq!(group, Address::new(0xff02, 0, 0, 0, 0, 1, 0xff00, 0x0b01));
    let mut out = [0xa5u8; MLDV1_REPORT_LEN];
    emit_mld_v1_report(
        &mut Packet::new_unchecked(&mut out[..]),
        ip.src_addr(),
        group,
    );
    assert_eq!(&out[..], &f[62..62 + MLDV1_REPORT_LEN]);
}
