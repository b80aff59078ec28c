//! TCP segments: every accessor, the option parsers, `Repr::parse`, and an emit round trip.
#![no_main]

use std::hint::black_box;

use bareweb_engine::wire::tcp::{self, OptionsIter};
use bareweb_engine::wire::{Ipv4Address, TcpOption, TcpPacket, TcpRepr};
use libfuzzer_sys::fuzz_target;

const SRC: Ipv4Address = Ipv4Address::new(10, 0, 0, 1);
const DST: Ipv4Address = Ipv4Address::new(10, 0, 0, 2);

fuzz_target!(|data: &[u8]| {
    let Ok(p) = TcpPacket::new_checked(data) else {
        return;
    };
    black_box((
        p.src_port(),
        p.dst_port(),
        p.seq_number(),
        p.ack_number(),
        p.header_len(),
        p.flags(),
        (
            p.fin(),
            p.syn(),
            p.rst(),
            p.psh(),
            p.ack(),
            p.urg(),
            p.ece(),
            p.cwr(),
        ),
        p.window_len(),
        p.checksum(),
        p.urgent_at(),
        p.options(),
        p.payload(),
        p.segment_len(),
        p.verify_checksum(SRC, DST),
    ));
    assert_eq!(
        usize::from(p.header_len()),
        tcp::HEADER_LEN + p.options().len()
    );

    // Every option that parses emits back to the same bytes' meaning.
    for option in OptionsIter::new(p.options()) {
        let Ok(option) = option else { break };
        let mut buf = [0xa5u8; 256];
        let len = option.buffer_len();
        option.emit(&mut buf[..len]);
        let (rest, again) = TcpOption::parse(&buf[..len]).expect("an emitted option parses");
        assert!(rest.is_empty());
        assert_eq!(again, option);
    }
    let options = tcp::parse_options(p.options());

    let Ok(parsed) = TcpRepr::parse(&p) else {
        return;
    };
    assert_eq!(Ok(parsed.options), options);
    assert_eq!(parsed.segment_len(), p.segment_len());

    let repr = TcpRepr {
        src_port: parsed.src_port,
        dst_port: parsed.dst_port,
        seq_number: parsed.seq_number,
        ack_number: parsed.ack_number,
        flags: parsed.flags,
        window_len: parsed.window_len,
        max_seg_size: parsed.options.mss,
        window_scale: parsed.options.window_scale,
        sack_permitted: parsed.options.sack_permitted,
        timestamps: parsed.options.timestamps,
    };
    let header_len = repr.header_len();
    let mut out = vec![0xa5u8; header_len + parsed.payload.len()];
    repr.emit_header(&mut out);
    out[header_len..].copy_from_slice(parsed.payload);
    TcpPacket::new_unchecked(&mut out[..]).fill_checksum(DST, SRC);
    let back = TcpPacket::new_checked(&out[..]).expect("an emitted segment checks");
    assert!(back.verify_checksum(DST, SRC));
    let again = TcpRepr::parse(&back).expect("an emitted segment parses");
    assert_eq!(again.options.mss, parsed.options.mss);
    assert_eq!(again.options.window_scale, parsed.options.window_scale);
    assert_eq!(again.options.sack_permitted, parsed.options.sack_permitted);
    assert!(again.options.sack.is_empty());
    assert_eq!(again.options.timestamps, parsed.options.timestamps);
    assert_eq!(
        (
            again.src_port,
            again.dst_port,
            again.seq_number,
            again.ack_number
        ),
        (
            parsed.src_port,
            parsed.dst_port,
            parsed.seq_number,
            parsed.ack_number
        )
    );
    assert_eq!(
        (again.flags, again.window_len),
        (parsed.flags, parsed.window_len)
    );
    assert_eq!(again.payload, parsed.payload);
});
