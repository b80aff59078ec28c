//! IPv4 packets: every accessor, `Repr::parse`, and an emit round trip.
#![no_main]

use std::hint::black_box;

use bareweb_engine::wire::{ipv4, Ipv4Packet, Ipv4Repr};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(p) = Ipv4Packet::new_checked(data) else {
        return;
    };
    black_box((
        p.version(),
        p.header_len(),
        p.dscp_ecn(),
        p.total_len(),
        p.ident(),
        p.dont_frag(),
        p.more_frags(),
        p.frag_offset(),
        p.is_fragment(),
        p.hop_limit(),
        p.next_header(),
        p.checksum(),
        p.src_addr(),
        p.dst_addr(),
        p.options(),
        p.payload(),
        p.verify_checksum(),
    ));
    // The checked invariants: 20 <= header <= total <= buffer, payload in between.
    let header_len = usize::from(p.header_len());
    assert!(header_len >= ipv4::HEADER_LEN);
    assert_eq!(header_len + p.payload().len(), usize::from(p.total_len()));
    assert_eq!(ipv4::HEADER_LEN + p.options().len(), header_len);

    let Ok(repr) = Ipv4Repr::parse(&p) else {
        return;
    };
    assert!(!p.is_fragment());
    let mut out = vec![0xa5u8; repr.buffer_len() + repr.payload_len];
    let mut packet = Ipv4Packet::new_unchecked(&mut out[..]);
    repr.emit(&mut packet);
    packet.payload_mut().copy_from_slice(p.payload());
    let back = Ipv4Packet::new_checked(&out[..]).expect("an emitted packet checks");
    assert!(back.verify_checksum());
    assert_eq!(Ipv4Repr::parse(&back), Ok(repr));
    assert_eq!(back.payload(), p.payload());
});
