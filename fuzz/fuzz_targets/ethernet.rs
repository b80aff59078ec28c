//! Ethernet frames, and the ARP or IPv4 parser behind them (like the receive path).
#![no_main]

use std::hint::black_box;

use bareweb_engine::wire::{
    ethernet, ArpPacket, ArpRepr, EtherType, EthernetFrame, Ipv4Packet, Ipv4Repr,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(frame) = EthernetFrame::new_checked(data) else {
        return;
    };
    black_box((
        frame.dst_addr(),
        frame.src_addr(),
        frame.ethertype(),
        frame.payload(),
    ));
    let repr = ethernet::Repr::parse(&frame).expect("a checked frame parses");

    // Emitting the parsed header gives back the same 14 bytes.
    let mut out = [0xa5u8; ethernet::HEADER_LEN];
    repr.emit(&mut EthernetFrame::new_unchecked(&mut out[..]));
    assert_eq!(&out[..], &data[..ethernet::HEADER_LEN]);

    match frame.ethertype() {
        EtherType::Arp => {
            if let Ok(p) = ArpPacket::new_checked(frame.payload()) {
                let _ = black_box(ArpRepr::parse(&p));
            }
        }
        EtherType::Ipv4 => {
            if let Ok(p) = Ipv4Packet::new_checked(frame.payload()) {
                black_box(p.payload());
                let _ = black_box(Ipv4Repr::parse(&p));
            }
        }
        _ => {}
    }
});
