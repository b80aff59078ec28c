//! ICMPv6 messages: every accessor, `Repr::parse` of every kind (echo, errors, Neighbor
//! Discovery with its option iterator, MLDv2 reports), and an emit round trip.
#![no_main]

use std::hint::black_box;

use bareweb_engine::wire::icmpv6::{self, MldRecords};
use bareweb_engine::wire::{Icmpv6Packet, Icmpv6Repr, Ipv6Address, NdiscOption, NdiscOptions};
use libfuzzer_sys::fuzz_target;

const SRC: Ipv6Address = Ipv6Address::new(0xfe80, 0, 0, 0, 0, 0xff, 0xfe00, 0x060a);

fuzz_target!(|input: &[u8]| {
    // The first byte picks the destination and hop limit, so every validity rule is
    // reached; the rest is the message.
    let Some((&sel, data)) = input.split_first() else {
        return;
    };
    let dst = match sel & 3 {
        0 => Ipv6Address::ALL_NODES,
        1 => SRC.solicited_node(),
        2 => Ipv6Address::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1),
        _ => Ipv6Address::UNSPECIFIED,
    };
    let src = if sel & 4 != 0 { Ipv6Address::UNSPECIFIED } else { SRC };
    let hop_limit = if sel & 8 != 0 { 255 } else { sel };

    // The option iterator and record walker on raw bytes.
    if let Ok(opts) = NdiscOptions::parse(data) {
        let mut total = 0;
        for o in opts.iter() {
            total += o.buffer_len();
            let mut out = vec![0u8; o.buffer_len()];
            o.emit(&mut out);
            if !matches!(o, NdiscOption::Unknown { .. }) {
                assert_eq!(NdiscOption::parse(&out).map(|(p, _)| p), Ok(o));
            }
        }
        assert!(total <= data.len());
        black_box((opts.source_lladdr(), opts.mtu(), opts.nonce()));
    }
    if let Ok(records) = MldRecords::parse(data, u16::from(sel)) {
        assert_eq!(records.iter().count(), records.len());
    }

    let p = Icmpv6Packet::new_unchecked(data);
    black_box((
        p.msg_type(),
        p.msg_code(),
        p.checksum(),
        p.echo_ident(),
        p.echo_seq_no(),
        p.mtu(),
        p.pointer(),
        p.data(),
        p.ra_hop_limit(),
        p.ra_managed(),
        p.ra_other(),
        p.router_lifetime(),
        p.reachable_time(),
        p.retrans_timer(),
        p.na_router(),
        p.na_solicited(),
        p.na_override(),
        p.target_addr(),
        p.redirect_dst_addr(),
        p.mld_num_records(),
        p.mld_max_resp_code(),
        p.mld_group(),
        p.mld_suppress(),
        p.mld_qrv(),
        p.mld_qqic(),
        p.mld_num_sources(),
        p.options(),
        icmpv6::mld_max_resp_delay_ms(p.mld_max_resp_code()),
    ));
    let Ok(p) = Icmpv6Packet::new_checked(data) else {
        return;
    };
    black_box(p.verify_checksum(src, dst));
    let Ok(repr) = Icmpv6Repr::parse(&p, src, dst, hop_limit) else {
        return;
    };
    if let Icmpv6Repr::Other { .. } = repr {
        return;
    }
    let mut out = vec![0xa5u8; repr.buffer_len()];
    repr.emit(&mut Icmpv6Packet::new_unchecked(&mut out[..]), src, dst);
    let back = Icmpv6Packet::new_checked(&out[..]).expect("an emitted message checks");
    assert!(back.verify_checksum(src, dst));
    assert_eq!(Icmpv6Repr::parse(&back, src, dst, hop_limit), Ok(repr));
    if let Icmpv6Repr::MldReport { records } = repr {
        // Our own report for the same groups and record types (the records without
        // sources).
        let plain: Vec<_> = records
            .iter()
            .filter(|r| r.sources.is_empty())
            .map(|r| (r.record_type, r.group))
            .collect();
        let groups: Vec<_> = plain.iter().map(|r| r.1).collect();
        let mut out = vec![0u8; icmpv6::mld_report_len(plain.len())];
        let mut pk = Icmpv6Packet::new_unchecked(&mut out[..]);
        icmpv6::emit_mld_report(&mut pk, src, dst, &plain);
        let back = Icmpv6Packet::new_checked(&out[..]).unwrap();
        let Ok(Icmpv6Repr::MldReport { records: r2 }) = Icmpv6Repr::parse(&back, src, dst, 1)
        else {
            panic!("our report does not parse");
        };
        assert!(r2.iter().map(|r| r.group).eq(groups.iter().copied()));
        assert!(r2
            .iter()
            .map(|r| r.record_type)
            .eq(plain.iter().map(|r| r.0)));
    }
});
