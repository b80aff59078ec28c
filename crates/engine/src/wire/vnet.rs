//! `struct virtio_net_hdr` (virtio 1.2 §5.1.6 "Device Operation"; linux/virtio_net.h): the
//! 10-byte header before every frame on a TAP opened with `IFF_VNET_HDR` (and on a
//! virtio-net queue), read on the *receive* side: what the host kernel says about a frame
//! it hands us.
//!
//! A receiver that asked for checksum offload and TCP-over-IPv4 segmentation offload
//! (`TUNSETOFFLOAD` with `TUN_F_CSUM | TUN_F_TSO4`, the bare load client's TAP) gets:
//! - `flags` `NEEDS_CSUM`: the frame came from this host's memory (a local socket, or a
//!   TAP writer's partial checksum) and never crossed a wire; its checksum field holds only
//!   the pseudo-header sum, at `csum_start + csum_offset`. There is nothing to verify:
//!   the data cannot have been corrupted on a link, and a full verification would fail.
//! - `flags` `DATA_VALID`: the kernel (or a NIC) verified the checksum already.
//! - `gso_type` TCPV4 with `gso_size` (the MSS) and `hdr_len`: a super-frame of up to
//!   64 KiB, one in-order run of TCP segments under one header (GSO/TSO not cut, or GRO
//!   merged). Always with `NEEDS_CSUM`.
//!
//! Heads up: the header is input too. [`parse_rx`] checks every field against the frame
//! and against what was negotiated; a header no kernel writes for such a receiver is
//! [`Error::Unsupported`] (a flag or GSO type not negotiated) or [`Error::Malformed`]
//! (offsets outside the frame, GSO without a partial checksum), and the frame is dropped
//! and counted by the driver. Trust is given only for the TCP checksum of an IPv4 frame
//! whose `csum_start`/`csum_offset` name exactly that field; any other partial checksum
//! leaves the frame to be verified as usual (and so dropped: we cannot complete it).

use super::{Error, Result};

/// Bytes of the header (without `num_buffers`: a TAP's default size).
pub const HEADER_LEN: usize = 10;

/// `flags`: the checksum from `csum_start` is partial, to be completed by the receiver.
pub const F_NEEDS_CSUM: u8 = 1;
/// `flags`: the checksum was verified.
pub const F_DATA_VALID: u8 = 2;
/// `gso_type`: a single segment.
pub const GSO_NONE: u8 = 0;
/// `gso_type`: TCP over IPv4 segments.
pub const GSO_TCPV4: u8 = 1;
/// `gso_type` bit: the segments carry ECN's CWR (needs `TUN_F_TSO_ECN`, which we never ask).
pub const GSO_ECN: u8 = 0x80;

mod field {
    pub const FLAGS: usize = 0;
    pub const GSO_TYPE: usize = 1;
    pub const HDR_LEN: core::ops::Range<usize> = 2..4;
    pub const GSO_SIZE: core::ops::Range<usize> = 4..6;
    pub const CSUM_START: core::ops::Range<usize> = 6..8;
    pub const CSUM_OFFSET: core::ops::Range<usize> = 8..10;
}

/// Offset of the TCP checksum in the TCP header.
const TCP_CSUM_OFFSET: u16 = 16;
/// Ethernet header bytes (no VLAN tag: the TAP gives none to a receiver without one).
const ETH_LEN: usize = 14;

/// What a checked header says about its frame.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RxInfo {
    /// The frame's TCP checksum needs no verification (`NEEDS_CSUM` on exactly the TCP
    /// checksum field of an IPv4 frame, or `DATA_VALID`).
    pub csum_trusted: bool,
    /// `gso_size` of a super-frame (its segments' MSS); 0 for a single segment.
    pub gso_size: u16,
}

fn le16(h: &[u8], r: core::ops::Range<usize>) -> u16 {
    match h.get(r) {
        Some(&[a, b]) => u16::from_le_bytes([a, b]),
        _ => 0,
    }
}

/// Checks the header `hdr` of a received `frame` (the bytes after the header) for a
/// receiver that negotiated `TUN_F_CSUM | TUN_F_TSO4` (or less: a header with no
/// offload in it is always valid). Never panics.
pub fn parse_rx(hdr: &[u8], frame: &[u8]) -> Result<RxInfo> {
    if hdr.len() < HEADER_LEN {
        return Err(Error::Truncated);
    }
    let flags = hdr[field::FLAGS];
    let gso_type = hdr[field::GSO_TYPE];
    if flags & !(F_NEEDS_CSUM | F_DATA_VALID) != 0
        || (gso_type != GSO_NONE && gso_type != GSO_TCPV4)
    {
        return Err(Error::Unsupported);
    }
    if flags == F_NEEDS_CSUM | F_DATA_VALID {
        return Err(Error::Malformed);
    }
    let mut info = RxInfo::default();
    if flags == F_DATA_VALID {
        info.csum_trusted = true;
    } else if flags == F_NEEDS_CSUM {
        let start = le16(hdr, field::CSUM_START);
        let offset = le16(hdr, field::CSUM_OFFSET);
        let end = usize::from(start) + usize::from(offset) + 2;
        if end > frame.len() {
            return Err(Error::Malformed);
        }
        info.csum_trusted =
            offset == TCP_CSUM_OFFSET && ipv4_tcp_l4_offset(frame) == Some(usize::from(start));
    }
    if gso_type == GSO_TCPV4 {
        let size = le16(hdr, field::GSO_SIZE);
        let hdr_len = usize::from(le16(hdr, field::HDR_LEN));
        // The kernel hands a super-frame only with a partial TCP checksum.
        if flags != F_NEEDS_CSUM || !info.csum_trusted || size == 0 || hdr_len > frame.len() {
            return Err(Error::Malformed);
        }
        info.gso_size = size;
    }
    Ok(info)
}

/// Where the TCP header of an IPv4 TCP frame starts (Ethernet + IPv4 header bytes), from
/// the first bytes alone; `None` for any other frame. Ingress checks the rest.
fn ipv4_tcp_l4_offset(frame: &[u8]) -> Option<usize> {
    let ethertype = frame.get(12..14)?;
    let ip = frame.get(ETH_LEN..ETH_LEN + 20)?;
    if ethertype != [0x08, 0x00] || ip[0] >> 4 != 4 || ip[9] != 6 {
        return None;
    }
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    (ihl >= 20).then_some(ETH_LEN + ihl)
}

#[cfg(test)]
mod tests {
    use std::vec;
    use std::vec::Vec;

    use super::*;

    /// The start of an Ethernet + IPv4 (IHL 5, TCP) + TCP frame: 54 bytes of headers and
    /// `payload` bytes after them (contents do not matter here).
    fn frame(payload: usize) -> Vec<u8> {
        let mut f = vec![0u8; 54 + payload];
        f[12] = 0x08;
        f[14] = 0x45;
        f[23] = 6;
        f
    }

    fn hdr(flags: u8, gso: u8, hdr_len: u16, size: u16, start: u16, off: u16) -> [u8; 10] {
        let mut h = [0u8; 10];
        h[0] = flags;
        h[1] = gso;
        h[2..4].copy_from_slice(&hdr_len.to_le_bytes());
        h[4..6].copy_from_slice(&size.to_le_bytes());
        h[6..8].copy_from_slice(&start.to_le_bytes());
        h[8..10].copy_from_slice(&off.to_le_bytes());
        h
    }

    // Captured (2026-11-25, Linux 6.18) from a TAP with `TUN_F_CSUM | TUN_F_TSO4` whose
    // reader fetched 200 KiB from python's http.server on the kernel side: the virtio-net
    // header and the first 54 frame bytes (Ethernet, IPv4, TCP headers) of each. The whole
    // frames are fuzz/corpus/vnet's seeds.
    /// The SYN-ACK (one segment, partial checksum). Frame length 58.
    static SYN_ACK: [u8; 64] = [
        0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x22, 0x00, 0x10, 0x00, 0x02, 0x00, 0x00, 0x00, 0x09,
        0x02, 0x0a, 0xae, 0x58, 0x5d, 0x49, 0xa1, 0x08, 0x00, 0x45, 0x00, 0x00, 0x2c, 0x00, 0x00,
        0x40, 0x00, 0x40, 0x06, 0x26, 0xb8, 0x0a, 0x09, 0x00, 0x01, 0x0a, 0x09, 0x00, 0x02, 0x1f,
        0x40, 0x9c, 0x40, 0x48, 0xa9, 0xf9, 0x8d, 0x00, 0x00, 0x03, 0xe9, 0x60, 0x12, 0xfa, 0xf0,
        0x14, 0x33, 0x00, 0x00,
    ];
    /// The response head (one segment, partial checksum). Frame length 258.
    static DATA: [u8; 64] = [
        0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x22, 0x00, 0x10, 0x00, 0x02, 0x00, 0x00, 0x00, 0x09,
        0x02, 0x0a, 0xae, 0x58, 0x5d, 0x49, 0xa1, 0x08, 0x00, 0x45, 0x00, 0x00, 0xf4, 0x26, 0x46,
        0x40, 0x00, 0x40, 0x06, 0xff, 0xa9, 0x0a, 0x09, 0x00, 0x01, 0x0a, 0x09, 0x00, 0x02, 0x1f,
        0x40, 0x9c, 0x40, 0x48, 0xa9, 0xf9, 0x8e, 0x00, 0x00, 0x04, 0x00, 0x50, 0x18, 0xfa, 0xd9,
        0x14, 0xfb, 0x00, 0x00,
    ];
    /// A super-frame of five 1460-byte segments (TCPV4, gso_size 1460, hdr_len 54). Frame length 7354.
    static SUPER: [u8; 64] = [
        0x01, 0x01, 0x36, 0x00, 0xb4, 0x05, 0x22, 0x00, 0x10, 0x00, 0x02, 0x00, 0x00, 0x00, 0x09,
        0x02, 0x0a, 0xae, 0x58, 0x5d, 0x49, 0xa1, 0x08, 0x00, 0x45, 0x00, 0x1c, 0xac, 0x26, 0x47,
        0x40, 0x00, 0x40, 0x06, 0xe3, 0xf0, 0x0a, 0x09, 0x00, 0x01, 0x0a, 0x09, 0x00, 0x02, 0x1f,
        0x40, 0x9c, 0x40, 0x48, 0xa9, 0xfa, 0x5a, 0x00, 0x00, 0x04, 0x00, 0x50, 0x18, 0xfa, 0xd9,
        0x30, 0xb3, 0x00, 0x00,
    ];

    /// A captured frame: its header, and its frame with the payload zeroed.
    fn captured(bytes: &[u8; 64], len: usize) -> ([u8; 10], Vec<u8>) {
        let mut f = vec![0u8; len];
        f[..54].copy_from_slice(&bytes[10..]);
        (bytes[..10].try_into().unwrap(), f)
    }

    #[test]
    fn captured_linux_headers_are_trusted() {
        for (bytes, len, gso) in [(&SYN_ACK, 58, 0), (&DATA, 258, 0), (&SUPER, 7354, 1460)] {
            let (h, f) = captured(bytes, len);
            let info = parse_rx(&h, &f).unwrap();
            assert!(info.csum_trusted);
            assert_eq!(info.gso_size, gso);
            // The kernel fills the IPv4 header checksum, of a super-frame too.
            let ip = super::super::Ipv4Packet::new_checked(&f[14..]).unwrap();
            assert!(ip.verify_checksum());
            assert_eq!(usize::from(ip.total_len()), len - 14);
        }
        // The super-frame's header on the SYN-ACK's frame names nothing past its end: a
        // harmless lie (one segment is a run of one). Cut short, the frame is refused.
        let (h, _) = captured(&SUPER, 7354);
        let (_, f) = captured(&SYN_ACK, 58);
        assert_eq!(
            parse_rx(&h, &f),
            Ok(RxInfo {
                csum_trusted: true,
                gso_size: 1460
            })
        );
        let (_, short) = captured(&SYN_ACK, 54);
        assert_eq!(parse_rx(&h, &short[..40]), Err(Error::Malformed));
    }

    #[test]
    fn no_offload_is_verified_as_usual() {
        assert_eq!(parse_rx(&[0; 10], &frame(10)), Ok(RxInfo::default()));
        // Even for a frame too short to be IPv4: ingress judges it.
        assert_eq!(parse_rx(&[0; 10], &[]), Ok(RxInfo::default()));
    }

    /// A header as Linux 6.x writes it for a 64 KiB TCP super-frame from a local socket
    /// (NEEDS_CSUM at 34 + 16, TCPV4, gso_size 1448, hdr_len the linear part).
    #[test]
    fn a_super_frame_with_a_partial_checksum_is_trusted() {
        let f = frame(65_000);
        let h = hdr(F_NEEDS_CSUM, GSO_TCPV4, 66, 1448, 34, 16);
        assert_eq!(
            parse_rx(&h, &f),
            Ok(RxInfo {
                csum_trusted: true,
                gso_size: 1448
            })
        );
        // A single segment with a partial checksum (an ACK from a local socket).
        let h = hdr(F_NEEDS_CSUM, GSO_NONE, 0, 0, 34, 16);
        assert!(parse_rx(&h, &frame(0)).unwrap().csum_trusted);
        // DATA_VALID: verified already.
        let h = hdr(F_DATA_VALID, GSO_NONE, 0, 0, 0, 0);
        assert!(parse_rx(&h, &frame(0)).unwrap().csum_trusted);
    }

    #[test]
    fn a_partial_checksum_of_another_field_is_not_trusted() {
        // UDP's checksum (offset 6), or the right offset in a frame that is not TCP.
        let h = hdr(F_NEEDS_CSUM, GSO_NONE, 0, 0, 34, 6);
        assert!(!parse_rx(&h, &frame(10)).unwrap().csum_trusted);
        let mut udp = frame(10);
        udp[23] = 17;
        let h = hdr(F_NEEDS_CSUM, GSO_NONE, 0, 0, 34, 16);
        assert!(!parse_rx(&h, &udp).unwrap().csum_trusted);
        // Not where the TCP header starts (IHL 6 puts it at 38).
        let mut opts = frame(10);
        opts[14] = 0x46;
        assert!(!parse_rx(&h, &opts).unwrap().csum_trusted);
        assert!(
            parse_rx(&hdr(F_NEEDS_CSUM, 0, 0, 0, 38, 16), &opts)
                .unwrap()
                .csum_trusted
        );
    }

    /// One assert per lie a header can tell.
    #[test]
    fn bogus_headers_are_refused() {
        let f = frame(100);
        let bad = [
            // Too short.
            (&hdr(0, 0, 0, 0, 0, 0)[..9], Error::Truncated),
            // Flags and GSO types not negotiated (RSC_INFO, UDP, TCPV6, UDP_L4, ECN).
            (&hdr(4, 0, 0, 0, 0, 0)[..], Error::Unsupported),
            (&hdr(0x81, 0, 0, 0, 34, 16)[..], Error::Unsupported),
            (&hdr(1, 3, 54, 1448, 34, 16)[..], Error::Unsupported),
            (&hdr(1, 4, 54, 1448, 34, 16)[..], Error::Unsupported),
            (&hdr(1, 5, 54, 1448, 34, 16)[..], Error::Unsupported),
            (
                &hdr(1, GSO_TCPV4 | GSO_ECN, 54, 1448, 34, 16)[..],
                Error::Unsupported,
            ),
            // Both checksum flags.
            (&hdr(3, 0, 0, 0, 34, 16)[..], Error::Malformed),
            // The checksum field past the frame's end, or far past it.
            (&hdr(1, 0, 0, 0, 152, 16)[..], Error::Malformed),
            (&hdr(1, 0, 0, 0, 0xffff, 0xffff)[..], Error::Malformed),
            // A super-frame without a partial checksum, with DATA_VALID, with a partial
            // checksum that is not TCP's, with gso_size 0, with hdr_len past the end.
            (&hdr(0, 1, 54, 1448, 0, 0)[..], Error::Malformed),
            (&hdr(2, 1, 54, 1448, 0, 0)[..], Error::Malformed),
            (&hdr(1, 1, 54, 1448, 34, 6)[..], Error::Malformed),
            (&hdr(1, 1, 54, 0, 34, 16)[..], Error::Malformed),
            (&hdr(1, 1, 155, 1448, 34, 16)[..], Error::Malformed),
        ];
        for (i, (h, e)) in bad.iter().enumerate() {
            assert_eq!(parse_rx(h, &f), Err(*e), "case {i}: {h:?}");
        }
        // A super-frame whose frame is not IPv4 TCP at all.
        let h = hdr(1, 1, 54, 1448, 34, 16);
        assert_eq!(parse_rx(&h, &[0u8; 100]), Err(Error::Malformed));
        assert_eq!(parse_rx(&h, &[]), Err(Error::Malformed));
    }
}
