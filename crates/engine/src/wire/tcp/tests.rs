//! Tests of `wire::tcp`, with byte fixtures from real captures.

use super::*;

const CLIENT: Ipv4Address = Ipv4Address::new(10, 0, 0, 1);
const SERVER: Ipv4Address = Ipv4Address::new(10, 0, 0, 2);

/// The SYN of `curl http://10.0.0.2/` on Linux: port 54321 -> 80, window 64240,
/// options MSS 1460, SACK permitted, timestamps, NOP, window scale 7.
static SYN_BYTES: [u8; 40] = [
    0xd4, 0x31, 0x00, 0x50, 0x6e, 0x3b, 0x2f, 0x0a, 0x00, 0x00, 0x00, 0x00, 0xa0, 0x02, 0xfa, 0xf0,
    0xdd, 0x14, 0x00, 0x00, 0x02, 0x04, 0x05, 0xb4, 0x04, 0x02, 0x08, 0x0a, 0x9c, 0x0f, 0x4e, 0x21,
    0x00, 0x00, 0x00, 0x00, 0x01, 0x03, 0x03, 0x07,
];

/// curl's request segment: PSH|ACK, window 502, NOP NOP timestamps, 71 bytes of HTTP.
static DATA_BYTES: [u8; 103] = [
    0xd4, 0x31, 0x00, 0x50, 0x6e, 0x3b, 0x2f, 0x0b, 0x1f, 0x2e, 0x3d, 0x4d, 0x80, 0x18, 0x01, 0xf6,
    0x30, 0x8a, 0x00, 0x00, 0x01, 0x01, 0x08, 0x0a, 0x9c, 0x0f, 0x4e, 0x5a, 0x00, 0xb3, 0xc7, 0xd2,
    0x47, 0x45, 0x54, 0x20, 0x2f, 0x20, 0x48, 0x54, 0x54, 0x50, 0x2f, 0x31, 0x2e, 0x31, 0x0d, 0x0a,
    0x48, 0x6f, 0x73, 0x74, 0x3a, 0x20, 0x31, 0x30, 0x2e, 0x30, 0x2e, 0x30, 0x2e, 0x32, 0x0d, 0x0a,
    0x55, 0x73, 0x65, 0x72, 0x2d, 0x41, 0x67, 0x65, 0x6e, 0x74, 0x3a, 0x20, 0x63, 0x75, 0x72, 0x6c,
    0x2f, 0x38, 0x2e, 0x35, 0x2e, 0x30, 0x0d, 0x0a, 0x41, 0x63, 0x63, 0x65, 0x70, 0x74, 0x3a, 0x20,
    0x2a, 0x2f, 0x2a, 0x0d, 0x0a, 0x0d, 0x0a,
];

static REQUEST: &[u8] =
    b"GET / HTTP/1.1\r\nHost: 10.0.0.2\r\nUser-Agent: curl/8.5.0\r\nAccept: */*\r\n\r\n";

/// Our SYN-ACK header (checksum field zero): 80 -> 54321, MSS 1460, NOP, WS 7.
static SYN_ACK_HEADER_BYTES: [u8; 28] = [
    0x00, 0x50, 0xd4, 0x31, 0x0b, 0xad, 0xf0, 0x0d, 0x6e, 0x3b, 0x2f, 0x0b, 0x70, 0x12, 0xfa, 0xf0,
    0x00, 0x00, 0x00, 0x00, 0x02, 0x04, 0x05, 0xb4, 0x01, 0x03, 0x03, 0x07,
];

const SYN_ACK: Repr = Repr {
    src_port: 80,
    dst_port: 54321,
    seq_number: 0x0bad_f00d,
    ack_number: Some(0x6e3b_2f0b),
    flags: Flags::SYN,
    window_len: 64240,
    max_seg_size: Some(1460),
    window_scale: Some(7),
    sack_permitted: false,
    timestamps: None,
};

#[test]
fn deconstruct_syn() {
    let p = Packet::new_checked(&SYN_BYTES[..]).unwrap();
    assert_eq!(p.src_port(), 54321);
    assert_eq!(p.dst_port(), 80);
    assert_eq!(p.seq_number(), 0x6e3b_2f0a);
    assert_eq!(p.ack_number(), 0);
    assert_eq!(p.header_len(), 40);
    assert_eq!(p.flags(), Flags::SYN);
    assert!(p.syn());
    assert!(!p.fin() && !p.rst() && !p.psh() && !p.ack());
    assert!(!p.urg() && !p.ece() && !p.cwr());
    assert_eq!(p.window_len(), 64240);
    assert_eq!(p.checksum(), 0xdd14);
    assert_eq!(p.urgent_at(), 0);
    assert_eq!(p.options(), &SYN_BYTES[20..]);
    assert!(p.payload().is_empty());
    assert_eq!(p.segment_len(), 1);
    assert!(p.verify_checksum(CLIENT, SERVER));
}

#[test]
fn deconstruct_data() {
    let p = Packet::new_checked(&DATA_BYTES[..]).unwrap();
    assert_eq!(p.seq_number(), 0x6e3b_2f0b);
    assert_eq!(p.ack_number(), 0x1f2e_3d4d);
    assert_eq!(p.header_len(), 32);
    assert_eq!(p.flags(), Flags::PSH | Flags::ACK);
    assert!(p.psh() && p.ack());
    assert_eq!(p.window_len(), 502);
    assert_eq!(p.payload(), REQUEST);
    assert_eq!(p.segment_len(), REQUEST.len());
    assert!(p.verify_checksum(CLIENT, SERVER));
}

#[test]
fn checksum_detects_any_flipped_byte() {
    for (name, fixture) in [("syn", &SYN_BYTES[..]), ("data", &DATA_BYTES[..])] {
        for i in 0..fixture.len() {
            let mut bytes = fixture.to_vec();
            bytes[i] ^= 0x20;
            let p = Packet::new_unchecked(&bytes[..]);
            assert!(!p.verify_checksum(CLIENT, SERVER), "{name} byte {i}");
        }
    }
    // The pseudo-header counts too.
    let p = Packet::new_checked(&SYN_BYTES[..]).unwrap();
    assert!(!p.verify_checksum(CLIENT, Ipv4Address::new(10, 0, 0, 3)));
}

#[test]
fn construct() {
    let mut bytes = [0xa5u8; 40];
    let mut p = Packet::new_unchecked(&mut bytes[..]);
    p.set_src_port(54321);
    p.set_dst_port(80);
    p.set_seq_number(0x6e3b_2f0a);
    p.set_ack_number(0);
    p.set_header_len(40);
    p.set_flags(Flags::SYN);
    p.set_window_len(64240);
    p.set_urgent_at(0);
    let opts = p.options_mut();
    let opts = TcpOption::MaxSegmentSize(1460).emit(opts);
    let opts = TcpOption::SackPermitted.emit(opts);
    let opts = TcpOption::Timestamps {
        tsval: 0x9c0f_4e21,
        tsecr: 0,
    }
    .emit(opts);
    let opts = TcpOption::NoOperation.emit(opts);
    let opts = TcpOption::WindowScale(7).emit(opts);
    assert!(opts.is_empty());
    p.fill_checksum(CLIENT, SERVER);
    assert_eq!(&bytes[..], &SYN_BYTES[..]);
}

#[test]
fn fill_checksum_matches_fixture() {
    let mut bytes = DATA_BYTES;
    bytes[16..18].fill(0);
    Packet::new_unchecked(&mut bytes[..]).fill_checksum(CLIENT, SERVER);
    assert_eq!(bytes, DATA_BYTES);
}

#[test]
fn parse_syn() {
    let p = Packet::new_checked(&SYN_BYTES[..]).unwrap();
    let r = Repr::parse(&p).unwrap();
    assert_eq!(
        r,
        ParsedRepr {
            src_port: 54321,
            dst_port: 80,
            seq_number: 0x6e3b_2f0a,
            ack_number: None,
            flags: Flags::SYN,
            window_len: 64240,
            options: Options {
                mss: Some(1460),
                window_scale: Some(7),
                sack_permitted: true,
                sack: crate::wire::tcp::SackBlocks::NONE,
                timestamps: Some((2_618_248_737, 0)),
            },
            payload: &[],
        }
    );
    assert_eq!(r.segment_len(), 1);
}

#[test]
fn parse_data() {
    let p = Packet::new_checked(&DATA_BYTES[..]).unwrap();
    let r = Repr::parse(&p).unwrap();
    assert_eq!(r.ack_number, Some(0x1f2e_3d4d));
    assert_eq!(r.flags, Flags::PSH | Flags::ACK);
    assert_eq!(r.window_len, 502);
    assert_eq!(
        r.options,
        Options {
            timestamps: Some((2_618_248_794, 11_782_098)),
            ..Options::default()
        }
    );
    assert_eq!(r.payload, REQUEST);
    assert_eq!(r.segment_len(), 71);
}

#[test]
fn options_iter_syn() {
    let p = Packet::new_checked(&SYN_BYTES[..]).unwrap();
    let mut it = OptionsIter::new(p.options());
    assert_eq!(it.next(), Some(Ok(TcpOption::MaxSegmentSize(1460))));
    assert_eq!(it.next(), Some(Ok(TcpOption::SackPermitted)));
    assert_eq!(
        it.next(),
        Some(Ok(TcpOption::Timestamps {
            tsval: 0x9c0f_4e21,
            tsecr: 0
        }))
    );
    assert_eq!(it.next(), Some(Ok(TcpOption::NoOperation)));
    assert_eq!(it.next(), Some(Ok(TcpOption::WindowScale(7))));
    assert_eq!(it.next(), None);
    assert_eq!(it.next(), None);
}

#[test]
fn emit_syn_ack() {
    assert_eq!(SYN_ACK.header_len(), 28);
    let mut bytes = [0xa5u8; 28];
    SYN_ACK.emit_header(&mut bytes);
    assert_eq!(&bytes[..], &SYN_ACK_HEADER_BYTES[..]);

    // Checksummed, it parses back to the same fields.
    Packet::new_unchecked(&mut bytes[..]).fill_checksum(SERVER, CLIENT);
    let p = Packet::new_checked(&bytes[..]).unwrap();
    assert!(p.verify_checksum(SERVER, CLIENT));
    let r = Repr::parse(&p).unwrap();
    assert_eq!(r.flags, Flags::SYN | Flags::ACK);
    assert_eq!(r.seq_number, SYN_ACK.seq_number);
    assert_eq!(r.ack_number, SYN_ACK.ack_number);
    assert_eq!(r.window_len, 64240);
    assert_eq!(
        r.options,
        Options {
            mss: Some(1460),
            window_scale: Some(7),
            sack_permitted: false,
            sack: crate::wire::tcp::SackBlocks::NONE,
            timestamps: None,
        }
    );
}

#[test]
fn emit_without_options() {
    let rst = Repr {
        ack_number: None,
        flags: Flags::RST | Flags::ACK, // ACK without an ack number is dropped
        window_len: 0,
        max_seg_size: None,
        window_scale: None,
        sack_permitted: false,
        ..SYN_ACK
    };
    assert_eq!(rst.header_len(), 20);
    assert_eq!(rst.wire_flags(), Flags::RST);
    let mut bytes = [0xa5u8; 24];
    rst.emit_header(&mut bytes);
    assert_eq!(
        &bytes[..20],
        &[
            0x00, 0x50, 0xd4, 0x31, 0x0b, 0xad, 0xf0, 0x0d, 0, 0, 0, 0, 0x50, 0x04, 0, 0, 0, 0, 0,
            0
        ]
    );
    assert_eq!(&bytes[20..], &[0xa5; 4], "wrote past the header");

    let only_ws = Repr {
        max_seg_size: None,
        ..SYN_ACK
    };
    assert_eq!(only_ws.header_len(), 24);
    let mut bytes = [0xa5u8; 24];
    only_ws.emit_header(&mut bytes);
    assert_eq!(bytes[12], 0x60);
    assert_eq!(&bytes[20..], &[1, 3, 3, 7]);
}

#[test]
fn emit_header_then_payload() {
    let data = Repr {
        seq_number: 0x0bad_f00e,
        ack_number: Some(0x6e3b_2f52),
        flags: Flags::PSH,
        window_len: 502,
        max_seg_size: None,
        window_scale: None,
        sack_permitted: false,
        ..SYN_ACK
    };
    let body = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    let mut bytes = vec![0xa5; data.header_len() + body.len()];
    data.emit_header(&mut bytes);
    bytes[20..].copy_from_slice(body);
    let mut p = Packet::new_unchecked(&mut bytes[..]);
    p.fill_checksum(SERVER, CLIENT);
    let p = Packet::new_checked(&bytes[..]).unwrap();
    assert!(p.verify_checksum(SERVER, CLIENT));
    assert_eq!(Repr::parse(&p).unwrap().payload, body);
}

#[test]
fn truncated() {
    for len in [0, 1, 19] {
        assert_eq!(
            Packet::new_checked(&SYN_BYTES[..len]).err(),
            Some(Error::Truncated),
            "len {len}"
        );
    }
    // The header is 40 bytes, the buffer 20 or 39.
    for len in [20, 39] {
        assert_eq!(
            Packet::new_checked(&SYN_BYTES[..len]).err(),
            Some(Error::Truncated),
            "len {len}"
        );
    }
}

#[test]
fn bad_data_offset() {
    for words in 0..5u8 {
        let mut bytes = SYN_BYTES;
        bytes[12] = words << 4;
        assert_eq!(
            Packet::new_checked(&bytes[..]).err(),
            Some(Error::Malformed),
            "data offset {words}"
        );
    }
    let mut bytes = SYN_BYTES;
    bytes[12] = 0xf0; // 60 bytes in a 40-byte buffer
    assert_eq!(
        Packet::new_checked(&bytes[..]).err(),
        Some(Error::Truncated)
    );
    bytes[12] = 0x50; // options now count as payload
    let p = Packet::new_checked(&bytes[..]).unwrap();
    assert!(p.options().is_empty());
    assert_eq!(p.payload().len(), 20);
}

#[test]
fn option_parse_valid() {
    let rest: &[u8] = &[];
    assert_eq!(TcpOption::parse(&[0]), Ok((rest, TcpOption::EndOfList)));
    assert_eq!(
        TcpOption::parse(&[1, 0]),
        Ok((&[0u8][..], TcpOption::NoOperation))
    );
    assert_eq!(
        TcpOption::parse(&[2, 4, 0x05, 0xb4, 1]),
        Ok((&[1u8][..], TcpOption::MaxSegmentSize(1460)))
    );
    assert_eq!(
        TcpOption::parse(&[3, 3, 14]),
        Ok((rest, TcpOption::WindowScale(14)))
    );
    assert_eq!(
        TcpOption::parse(&[4, 2]),
        Ok((rest, TcpOption::SackPermitted))
    );
    assert_eq!(
        TcpOption::parse(&[8, 10, 0, 0, 0, 1, 0, 0, 0, 2]),
        Ok((rest, TcpOption::Timestamps { tsval: 1, tsecr: 2 }))
    );
    // SACK blocks (kind 5): one and four
    let mut one = SackBlocks::NONE;
    one.push(0x0102_0304, 0x0506_0708);
    assert_eq!(
        TcpOption::parse(&[5, 10, 1, 2, 3, 4, 5, 6, 7, 8]),
        Ok((rest, TcpOption::Sack(one)))
    );
    let mut four_bytes = std::vec![5u8, 34];
    let mut four = SackBlocks::NONE;
    for i in 0..4u32 {
        four_bytes.extend_from_slice(&(i * 100).to_be_bytes());
        four_bytes.extend_from_slice(&(i * 100 + 50).to_be_bytes());
        four.push(i * 100, i * 100 + 50);
    }
    assert_eq!(
        TcpOption::parse(&four_bytes),
        Ok((rest, TcpOption::Sack(four)))
    );
    assert_eq!(four.iter().nth(3), Some((300, 350)));
    // an empty unknown option
    assert_eq!(
        TcpOption::parse(&[0xfe, 2]),
        Ok((
            rest,
            TcpOption::Unknown {
                kind: 0xfe,
                data: &[]
            }
        ))
    );
}

#[test]
fn option_parse_malformed() {
    let m = Err(Error::Malformed);
    assert_eq!(TcpOption::parse(&[]), m); // nothing at all
    assert_eq!(TcpOption::parse(&[2]), m); // MSS without a length byte
    assert_eq!(TcpOption::parse(&[2, 0]), m); // length 0
    assert_eq!(TcpOption::parse(&[2, 1]), m); // length 1
    assert_eq!(TcpOption::parse(&[2, 4, 0x05]), m); // MSS past the end
    assert_eq!(TcpOption::parse(&[2, 3, 0x05]), m); // MSS length 3
    assert_eq!(TcpOption::parse(&[2, 5, 0x05, 0xb4, 0]), m); // MSS length 5
    assert_eq!(TcpOption::parse(&[2, 2]), m); // MSS length 2
    assert_eq!(TcpOption::parse(&[3, 2]), m); // WS length 2
    assert_eq!(TcpOption::parse(&[3, 4, 7, 0]), m); // WS length 4
    assert_eq!(TcpOption::parse(&[3, 3]), m); // WS past the end
    assert_eq!(TcpOption::parse(&[4, 3, 0]), m); // SACK permitted length 3
    assert_eq!(TcpOption::parse(&[4, 4, 0, 0]), m); // SACK permitted length 4
    assert_eq!(TcpOption::parse(&[8, 8, 0, 0, 0, 1, 0, 0]), m); // TS length 8
    assert_eq!(TcpOption::parse(&[8, 10, 0, 0, 0, 1]), m); // TS past the end
    assert_eq!(TcpOption::parse(&[8, 12, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0]), m); // TS length 12
    assert_eq!(TcpOption::parse(&[5, 2]), m); // SACK without a block
    assert_eq!(TcpOption::parse(&[5, 9, 0, 0, 0, 1, 0, 0, 0]), m); // SACK length 9
    let mut five = std::vec![5u8, 42];
    five.extend_from_slice(&[0; 40]);
    assert_eq!(TcpOption::parse(&five), m); // five SACK blocks
    assert_eq!(TcpOption::parse(&[0xfe]), m); // unknown without a length byte
    assert_eq!(TcpOption::parse(&[0xfe, 1]), m); // unknown length 1
    assert_eq!(TcpOption::parse(&[0xfe, 5, 1, 2]), m); // unknown past the end
    assert_eq!(TcpOption::parse(&[0xfe, 255]), m); // unknown far past the end
}

#[test]
fn option_emit_round_trip() {
    let options = [
        TcpOption::EndOfList,
        TcpOption::NoOperation,
        TcpOption::MaxSegmentSize(536),
        TcpOption::WindowScale(3),
        TcpOption::SackPermitted,
        TcpOption::Sack({
            let mut b = SackBlocks::NONE;
            b.push(7, 0xffff_fff0);
            b
        }),
        TcpOption::Timestamps {
            tsval: 0xdead_beef,
            tsecr: 7,
        },
        TcpOption::Unknown {
            kind: 30,
            data: &[1, 2, 3],
        },
    ];
    for o in options {
        let mut buf = [0xa5u8; 16];
        let left = o.emit(&mut buf).len();
        assert_eq!(left, 16 - o.buffer_len());
        let (rest, parsed) = TcpOption::parse(&buf[..o.buffer_len()]).unwrap();
        assert_eq!(parsed, o);
        assert!(rest.is_empty());
    }
}

#[test]
fn parse_options_rules() {
    // Stops at End of Option List: the garbage after it is not read.
    assert_eq!(
        parse_options(&[2, 4, 0x05, 0xb4, 0, 2, 1, 0xff]),
        Ok(Options {
            mss: Some(1460),
            ..Options::default()
        })
    );
    // RFC 7323 §2.3: a shift above 14 counts as 14.
    assert_eq!(
        parse_options(&[1, 3, 3, 20]).map(|o| o.window_scale),
        Ok(Some(14))
    );
    assert_eq!(parse_options(&[]), Ok(Options::default()));
    assert_eq!(parse_options(&[1, 1, 1, 1]), Ok(Options::default()));
    // A malformed option anywhere fails the list.
    assert_eq!(parse_options(&[1, 1, 2, 3, 5]), Err(Error::Malformed));
    // The iterator stops after an error.
    let mut it = OptionsIter::new(&[2, 1, 1, 1]);
    assert_eq!(it.next(), Some(Err(Error::Malformed)));
    assert_eq!(it.next(), None);
}

#[test]
fn parse_refuses_malformed_options() {
    let mut bytes = SYN_BYTES;
    bytes[21] = 5; // MSS length 5
    let p = Packet::new_checked(&bytes[..]).unwrap();
    assert_eq!(Repr::parse(&p), Err(Error::Malformed));
    let mut bytes = SYN_BYTES;
    bytes[39] = 0xff; // window scale shift 255
    let p = Packet::new_checked(&bytes[..]).unwrap();
    assert_eq!(
        Repr::parse(&p).map(|r| r.options.window_scale),
        Ok(Some(14))
    );
    let mut bytes = SYN_BYTES;
    bytes[38] = 4; // WS length 4 runs past the header
    let p = Packet::new_checked(&bytes[..]).unwrap();
    assert_eq!(Repr::parse(&p), Err(Error::Malformed));
}

#[test]
fn parse_refuses_bad_flags_and_ports() {
    let with = |f: &dyn Fn(&mut Packet<&mut [u8]>)| {
        let mut bytes = SYN_BYTES;
        f(&mut Packet::new_unchecked(&mut bytes[..]));
        let p = Packet::new_checked(&bytes[..]).unwrap();
        Repr::parse(&p).map(|r| r.flags)
    };
    let m = Err(Error::Malformed);
    assert_eq!(with(&|p| p.set_flags(Flags::SYN | Flags::FIN)), m);
    assert_eq!(with(&|p| p.set_flags(Flags::SYN | Flags::RST)), m);
    assert_eq!(with(&|p| p.set_flags(Flags::FIN | Flags::RST)), m);
    assert_eq!(
        with(&|p| p.set_flags(Flags::SYN | Flags::FIN | Flags::RST)),
        m
    );
    assert_eq!(with(&|p| p.set_src_port(0)), m);
    assert_eq!(with(&|p| p.set_dst_port(0)), m);
    assert_eq!(
        with(&|p| p.set_flags(Flags::RST | Flags::ACK)),
        Ok(Flags::RST | Flags::ACK)
    );
    assert_eq!(with(&|p| p.set_flags(Flags::NONE)), Ok(Flags::NONE));
    assert_eq!(
        with(&|p| p.set_flags(Flags::FIN | Flags::ACK | Flags::PSH)),
        Ok(Flags {
            fin: true,
            psh: true,
            ack: true,
            ..Flags::NONE
        })
    );
}

#[test]
fn flags_ops() {
    let f = Flags::SYN | Flags::ACK;
    assert!(f.syn && f.ack && !f.fin && !f.rst && !f.psh);
    assert_eq!(f.bits(), 0x12);
    assert!(f.contains(Flags::SYN));
    assert!(f.contains(Flags::SYN | Flags::ACK));
    assert!(!f.contains(Flags::SYN | Flags::FIN));
    assert_eq!(f.difference(Flags::ACK), Flags::SYN);
    let mut g = Flags::NONE;
    g |= Flags::FIN;
    assert_eq!(g.bits(), 1);
    for bits in 0..=0x1fu8 {
        assert_eq!(Flags::from_bits(bits).bits(), bits);
    }
    // URG, ECE and CWR are not Flags; the packet still reports them.
    assert_eq!(Flags::from_bits(0xe0), Flags::NONE);
    let mut bytes = SYN_BYTES;
    bytes[13] = 0xc2; // SYN with ECE and CWR: an ECN-setup SYN
    let p = Packet::new_checked(&bytes[..]).unwrap();
    assert!(p.ece() && p.cwr() && !p.urg());
    assert_eq!(p.flags(), Flags::SYN);
    bytes[13] = 0x30;
    let p = Packet::new_checked(&bytes[..]).unwrap();
    assert!(p.urg() && p.ack());
}

/// A Linux client's ACK on a lossy link (captured by tcpdump in the loss benchmark,
/// bench/loss.py): 52488 -> 80, ACK 1699923666, window 1007, NOP NOP SACK with two blocks,
/// the most recent first: {1699928046:1699929506} {1699925126:1699926586}.
static SACK_ACK_BYTES: [u8; 40] = [
    0xcd, 0x08, 0x00, 0x50, 0x2d, 0xa1, 0x7c, 0x64, 0x65, 0x52, 0xc6, 0xd2, 0xa0, 0x10, 0x03, 0xef,
    0xb4, 0x9b, 0x00, 0x00, 0x01, 0x01, 0x05, 0x12, 0x65, 0x52, 0xd7, 0xee, 0x65, 0x52, 0xdd, 0xa2,
    0x65, 0x52, 0xcc, 0x86, 0x65, 0x52, 0xd2, 0x3a,
];

#[test]
fn a_captured_sack_ack_parses() {
    let p = Packet::new_checked(&SACK_ACK_BYTES[..]).unwrap();
    assert!(p.verify_checksum(CLIENT, SERVER));
    let r = Repr::parse(&p).unwrap();
    assert_eq!(r.ack_number, Some(1_699_923_666));
    assert_eq!(r.window_len, 1007);
    let blocks: std::vec::Vec<_> = r.options.sack.iter().collect();
    assert_eq!(
        blocks,
        [
            (1_699_928_046, 1_699_929_506),
            (1_699_925_126, 1_699_926_586)
        ]
    );
    assert!(r.payload.is_empty());
}

#[test]
fn timestamps_round_trip_after_the_other_options() {
    // RFC 7323 Appendix A's layout: NOP NOP TS, 12 bytes, word-aligned after the SYN's.
    let repr = Repr {
        src_port: 80,
        dst_port: 54321,
        seq_number: 1,
        ack_number: Some(2),
        flags: Flags::SYN,
        window_len: 1000,
        max_seg_size: Some(1460),
        window_scale: Some(0),
        sack_permitted: true,
        timestamps: Some((0x0102_0304, 0xa0b0_c0d0)),
    };
    assert_eq!(repr.header_len(), 20 + 4 + 4 + 4 + 12);
    let mut buf = [0u8; 44];
    repr.emit_header(&mut buf);
    assert_eq!(
        &buf[32..44],
        &[1, 1, 8, 10, 1, 2, 3, 4, 0xa0, 0xb0, 0xc0, 0xd0]
    );
    let p = Packet::new_checked(&buf[..]).unwrap();
    let back = Repr::parse(&p).unwrap();
    assert_eq!(back.options.timestamps, Some((0x0102_0304, 0xa0b0_c0d0)));
    assert_eq!(back.options.mss, Some(1460));
    assert!(back.options.sack_permitted);
}

/// `emit_header` writes each combination of options as `TcpOption::emit` would, one
/// option at a time, in the documented order.
#[test]
fn emit_header_options_match_one_at_a_time() {
    for mask in 0..16u8 {
        let r = Repr {
            max_seg_size: (mask & 1 != 0).then_some(1460),
            window_scale: (mask & 2 != 0).then_some(7),
            sack_permitted: mask & 4 != 0,
            timestamps: (mask & 8 != 0).then_some((0x0102_0304, 0xa0b0_c0d0)),
            ..SYN_ACK
        };
        let mut fast = vec![0xa5u8; r.header_len()];
        r.emit_header(&mut fast);
        let mut want = vec![0u8; r.header_len() - HEADER_LEN];
        let mut opts = &mut want[..];
        if let Some(mss) = r.max_seg_size {
            opts = TcpOption::MaxSegmentSize(mss).emit(opts);
        }
        if let Some(shift) = r.window_scale {
            opts = TcpOption::NoOperation.emit(opts);
            opts = TcpOption::WindowScale(shift).emit(opts);
        }
        if r.sack_permitted {
            opts = TcpOption::NoOperation.emit(opts);
            opts = TcpOption::NoOperation.emit(opts);
            opts = TcpOption::SackPermitted.emit(opts);
        }
        if let Some((tsval, tsecr)) = r.timestamps {
            opts = TcpOption::NoOperation.emit(opts);
            opts = TcpOption::NoOperation.emit(opts);
            opts = TcpOption::Timestamps { tsval, tsecr }.emit(opts);
        }
        assert!(opts.is_empty());
        assert_eq!(&fast[HEADER_LEN..], &want[..], "options mask {mask:#b}");
    }
}

/// `emit_header`'s fixed 20 bytes are the bytes the `Packet` setters write field by
/// field, for every flag combination and random ports, numbers and window.
#[test]
fn emit_header_fixed_words_match_the_setters() {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in 0..20_000u32 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let bits = (i % 32) as u8;
        let r = Repr {
            src_port: x as u16,
            dst_port: (x >> 16) as u16,
            seq_number: (x >> 32) as u32,
            ack_number: (i % 3 != 0).then_some((x >> 8) as u32),
            flags: Flags::from_bits(bits),
            window_len: (x >> 40) as u16,
            max_seg_size: (i % 5 == 0).then_some(1460),
            window_scale: (i % 7 == 0).then_some(7),
            sack_permitted: i % 11 == 0,
            timestamps: (i % 2 == 0).then_some((x as u32, (x >> 24) as u32)),
        };
        let mut words = vec![0xa5u8; r.header_len()];
        r.emit_header(&mut words);
        let mut fields = vec![0x5au8; r.header_len()];
        let mut packet = Packet::new_unchecked(&mut fields[..]);
        packet.set_src_port(r.src_port);
        packet.set_dst_port(r.dst_port);
        packet.set_seq_number(r.seq_number);
        packet.set_ack_number(r.ack_number.unwrap_or(0));
        packet.set_header_len(r.header_len() as u8);
        packet.set_flags(r.wire_flags());
        packet.set_window_len(r.window_len);
        packet.set_checksum(0);
        packet.set_urgent_at(0);
        assert_eq!(&words[..HEADER_LEN], &fields[..HEADER_LEN], "{r:?}");
    }
}

/// The timestamps-only fast path reads what the general walk reads.
#[test]
fn parse_options_fast_path_matches_the_walk() {
    let ts = [1u8, 1, 8, 10, 0, 0, 0x12, 0x34, 0xff, 0xee, 0xdd, 0xcc];
    let fast = parse_options(&ts).unwrap();
    assert_eq!(fast.timestamps, Some((0x1234, 0xffee_ddcc)));
    // The same bytes with an End of Option List after them take the general walk.
    let mut walked = ts.to_vec();
    walked.push(0);
    assert_eq!(parse_options(&walked).unwrap(), fast);
    // A timestamps option of the wrong length is still malformed.
    let mut bad = ts;
    bad[3] = 9;
    assert!(parse_options(&bad).is_err());
}

/// `parse_options` walks the list itself: on any bytes it answers as the walk over
/// `TcpOption::parse` does (the reference below), Ok or Malformed alike.
#[test]
fn parse_options_agrees_with_the_option_parser() {
    fn reference(opts: &[u8]) -> Result<Options> {
        let mut out = Options::default();
        for option in OptionsIter::new(opts) {
            match option? {
                TcpOption::MaxSegmentSize(mss) => out.mss = Some(mss),
                TcpOption::WindowScale(shift) => {
                    out.window_scale = Some(shift.min(MAX_WINDOW_SCALE));
                }
                TcpOption::SackPermitted => out.sack_permitted = true,
                TcpOption::Sack(blocks) => out.sack = blocks,
                TcpOption::Timestamps { tsval, tsecr } => out.timestamps = Some((tsval, tsecr)),
                TcpOption::EndOfList | TcpOption::NoOperation | TcpOption::Unknown { .. } => {}
            }
        }
        Ok(out)
    }
    // A deterministic generator: bytes drawn mostly from option kinds and plausible
    // lengths, so that valid lists, truncated ones and bad lengths all occur.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let alphabet = [0u8, 1, 2, 3, 4, 5, 8, 10, 18, 34, 9, 4, 2, 1, 1, 0xff];
    let mut valid = 0;
    for _ in 0..100_000 {
        let len = (next() % 41) as usize;
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                let r = next();
                if r % 3 == 0 {
                    (r >> 8) as u8
                } else {
                    alphabet[(r >> 8) as usize % alphabet.len()]
                }
            })
            .collect();
        let got = parse_options(&bytes);
        assert_eq!(got, reference(&bytes), "{bytes:?}");
        valid += usize::from(got.is_ok_and(|o| o != Options::NONE));
    }
    assert!(valid > 200, "too few lists with options: {valid}");
    // The SYN of the fixture, and SACK lists of each size.
    assert_eq!(parse_options(&SYN_BYTES[20..]), reference(&SYN_BYTES[20..]));
    for n in 0..6u8 {
        let mut sack = std::vec![1u8, 1, 5, 2 + 8 * n];
        sack.extend((0..8 * n).map(|i| i.wrapping_mul(7)));
        assert_eq!(parse_options(&sack), reference(&sack), "{n} blocks");
    }
}
