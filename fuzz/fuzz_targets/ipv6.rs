//! IPv6 packets: every accessor, the extension-header walk, `Repr::parse`, and an emit
//! round trip.
#![no_main]

use std::hint::black_box;

use bareweb_engine::wire::{ipv6, Ipv6Packet, Ipv6Repr};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Text addresses: whatever parses prints back to something that parses the same.
    if let Ok(s) = std::str::from_utf8(data) {
        if let Ok(a) = s.parse::<ipv6::Address>() {
            let text = a.to_string();
            assert_eq!(text.parse::<ipv6::Address>(), Ok(a));
            assert_eq!(text, std::net::Ipv6Addr::from(a.0).to_string());
        }
    }
    let Ok(p) = Ipv6Packet::new_checked(data) else {
        return;
    };
    black_box((
        p.version(),
        p.traffic_class(),
        p.flow_label(),
        p.payload_len(),
        p.next_header(),
        p.hop_limit(),
        p.src_addr(),
        p.dst_addr(),
        p.payload(),
    ));
    let a = p.dst_addr();
    black_box((
        a.is_multicast(),
        a.is_link_local(),
        a.is_solicited_node_multicast(),
        a.solicited_node(),
        a.multicast_ethernet(),
        a.multicast_scope(),
        a.in_subnet(p.src_addr(), p.hop_limit()),
    ));
    assert_eq!(ipv6::HEADER_LEN + p.payload().len(), 40 + usize::from(p.payload_len()));
    match p.walk() {
        Ok(up) => {
            // The upper layer lies inside the payload, within the bounds.
            assert!(up.offset >= ipv6::HEADER_LEN);
            assert!(up.offset <= ipv6::HEADER_LEN + ipv6::MAX_EXT_LEN);
            assert_eq!(up.offset + up.len, 40 + usize::from(p.payload_len()));
            assert_eq!(p.upper_payload(&up).len(), up.len);
            black_box(p.pseudo_header(&up));
        }
        Err(e) => {
            black_box(bareweb_engine::wire::Error::from(e));
        }
    }
    let Ok(repr) = Ipv6Repr::parse(&p) else {
        return;
    };
    let mut out = vec![0xa5u8; repr.buffer_len() + repr.payload_len];
    let mut packet = Ipv6Packet::new_unchecked(&mut out[..]);
    repr.emit(&mut packet);
    packet.payload_mut().copy_from_slice(p.payload());
    let back = Ipv6Packet::new_checked(&out[..]).expect("an emitted packet checks");
    assert_eq!(Ipv6Repr::parse(&back), Ok(repr));
    assert_eq!(back.payload(), p.payload());
    assert_eq!(back.walk(), p.walk());
});
