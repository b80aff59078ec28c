//! The virtio-net header of a received frame (`wire::vnet::parse_rx`, the bare client's
//! TAP with receive offloads): the first 10 bytes are the header, the rest the frame.
//! Never panics; what it trusts is an IPv4 TCP frame's checksum field, inside the frame.
#![no_main]

use bareweb_engine::wire::vnet;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (hdr, frame) = data.split_at(data.len().min(vnet::HEADER_LEN));
    let Ok(info) = vnet::parse_rx(hdr, frame) else {
        return;
    };
    if info.gso_size > 0 {
        assert!(info.csum_trusted, "a super-frame comes with a trusted checksum");
    }
    if info.csum_trusted && hdr[0] == vnet::F_NEEDS_CSUM {
        // The partial checksum named is TCP's, inside an IPv4 TCP frame.
        let start = usize::from(u16::from_le_bytes([hdr[6], hdr[7]]));
        assert!(start + 18 <= frame.len());
        assert_eq!(&frame[12..14], &[0x08, 0x00]);
        assert_eq!(frame[23], 6);
    }
});
