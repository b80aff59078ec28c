//! UDP datagrams: every accessor, `Repr::parse`, and an emit round trip.
#![no_main]

use std::hint::black_box;

use bareweb_engine::wire::{udp, Ipv4Address, UdpPacket, UdpRepr};
use libfuzzer_sys::fuzz_target;

const SRC: Ipv4Address = Ipv4Address::new(10, 0, 0, 1);
const DST: Ipv4Address = Ipv4Address::new(10, 0, 0, 2);

fuzz_target!(|data: &[u8]| {
    let Ok(p) = UdpPacket::new_checked(data) else {
        return;
    };
    black_box((
        p.src_port(),
        p.dst_port(),
        p.len(),
        p.is_empty(),
        p.checksum(),
        p.payload(),
        p.verify_checksum(SRC, DST),
    ));
    assert_eq!(udp::HEADER_LEN + p.payload().len(), usize::from(p.len()));
    let Ok(repr) = UdpRepr::parse(&p, SRC, DST) else {
        return;
    };
    let payload = p.payload();
    let mut out = vec![0xa5u8; repr.header_len() + payload.len()];
    let mut packet = UdpPacket::new_unchecked(&mut out[..]);
    repr.emit(&mut packet, SRC, DST, payload.len(), |buf| {
        buf.copy_from_slice(payload)
    });
    let back = UdpPacket::new_checked(&out[..]).expect("an emitted datagram checks");
    assert!(back.verify_checksum(SRC, DST));
    assert_eq!(UdpRepr::parse(&back, SRC, DST), Ok(repr));
    assert_eq!(back.payload(), payload);
});
