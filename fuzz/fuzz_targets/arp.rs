//! ARP packets: every accessor, `Repr::parse`, and an emit round trip.
#![no_main]

use std::hint::black_box;

use bareweb_engine::wire::{arp, ArpPacket, ArpRepr};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(p) = ArpPacket::new_checked(data) else {
        return;
    };
    black_box((
        p.hardware_type(),
        p.protocol_type(),
        p.hardware_len(),
        p.protocol_len(),
        p.operation(),
        p.source_hardware_addr(),
        p.source_protocol_addr(),
        p.target_hardware_addr(),
        p.target_protocol_addr(),
    ));
    let Ok(repr) = ArpRepr::parse(&p) else {
        return;
    };
    // Only Ethernet/IPv4 parses, so emitting reproduces the 28 bytes exactly.
    let mut out = [0xa5u8; arp::BUFFER_LEN];
    repr.emit(&mut ArpPacket::new_unchecked(&mut out[..]));
    assert_eq!(&out[..], &data[..arp::BUFFER_LEN]);
});
