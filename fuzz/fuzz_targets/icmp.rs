//! ICMPv4 messages: every accessor, `Repr::parse`, and an emit round trip for echo.
#![no_main]

use std::hint::black_box;

use bareweb_engine::wire::{IcmpPacket, IcmpRepr};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(p) = IcmpPacket::new_checked(data) else {
        return;
    };
    black_box((
        p.msg_type(),
        p.msg_code(),
        p.checksum(),
        p.echo_ident(),
        p.echo_seq_no(),
        p.data(),
        p.verify_checksum(),
    ));
    let Ok(repr) = IcmpRepr::parse(&p) else {
        return;
    };
    if let IcmpRepr::Other { .. } = repr {
        return;
    }
    assert_eq!(repr.buffer_len(), data.len());
    let mut out = vec![0xa5u8; repr.buffer_len()];
    repr.emit(&mut IcmpPacket::new_unchecked(&mut out[..]));
    let back = IcmpPacket::new_checked(&out[..]).expect("an emitted message checks");
    assert!(back.verify_checksum());
    assert_eq!(IcmpRepr::parse(&back), Ok(repr));
});
