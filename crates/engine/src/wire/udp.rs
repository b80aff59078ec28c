//! UDP datagrams (RFC 768).
//!
//! Heads up! read RFC 768 and RFC 1122 §4.1.3.4: a zero checksum field means the sender
//! computed none; a computed checksum of zero is sent as 0xffff.
//!
//! The buffer given to [`Packet`] should be the IPv4 payload; the datagram's own length
//! field is checked against it and bounds [`Packet::payload`].

use super::ipv4::{Address as Ipv4Address, Protocol};
use super::{checksum, Error, Result};

mod field {
    use core::ops::Range;
    pub const SRC_PORT: Range<usize> = 0..2;
    pub const DST_PORT: Range<usize> = 2..4;
    pub const LENGTH: Range<usize> = 4..6;
    pub const CHECKSUM: Range<usize> = 6..8;
    pub const PAYLOAD: usize = 8;
}

/// Length of the UDP header.
pub const HEADER_LEN: usize = field::PAYLOAD;

/// A view of a UDP datagram.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Checks that the buffer holds the header ([`Error::Truncated`]), that the length
    /// field is at least 8 ([`Error::Malformed`]) and that it fits in the buffer
    /// ([`Error::Truncated`]).
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let field_len = usize::from(self.len());
        if field_len < HEADER_LEN {
            return Err(Error::Malformed);
        }
        if field_len > len {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Source port.
    pub fn src_port(&self) -> u16 {
        self.read_u16(field::SRC_PORT)
    }

    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        self.read_u16(field::DST_PORT)
    }

    /// The length field: header plus payload, in bytes.
    pub fn len(&self) -> u16 {
        self.read_u16(field::LENGTH)
    }

    /// Whether the length field says there is no payload.
    pub fn is_empty(&self) -> bool {
        usize::from(self.len()) <= HEADER_LEN
    }

    /// Checksum field (0 = not computed).
    pub fn checksum(&self) -> u16 {
        self.read_u16(field::CHECKSUM)
    }

    /// The payload, up to the length field (bytes after it are ignored).
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD..usize::from(self.len())]
    }

    /// Whether the checksum verifies for a datagram from `src` to `dst`. A zero checksum
    /// field (none computed) verifies.
    ///
    /// # Fuzzing
    /// Always true under `cfg(fuzzing)`.
    pub fn verify_checksum(&self, src: Ipv4Address, dst: Ipv4Address) -> bool {
        if cfg!(fuzzing) || self.checksum() == 0 {
            return true;
        }
        let len = self.len();
        let datagram = &self.buffer.as_ref()[..usize::from(len)];
        let acc = checksum::pseudo_header_v4(src.0, dst.0, Protocol::Udp.into(), len);
        checksum::fold(checksum::accumulate(acc, datagram)) == 0xffff
    }

    fn read_u16(&self, f: core::ops::Range<usize>) -> u16 {
        let b = &self.buffer.as_ref()[f];
        u16::from_be_bytes([b[0], b[1]])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the source port.
    pub fn set_src_port(&mut self, v: u16) {
        self.write_u16(field::SRC_PORT, v);
    }

    /// Sets the destination port.
    pub fn set_dst_port(&mut self, v: u16) {
        self.write_u16(field::DST_PORT, v);
    }

    /// Sets the length field.
    pub fn set_len(&mut self, v: u16) {
        self.write_u16(field::LENGTH, v);
    }

    /// Sets the checksum field.
    pub fn set_checksum(&mut self, v: u16) {
        self.write_u16(field::CHECKSUM, v);
    }

    /// The payload (up to the length field), mutable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = usize::from(self.len());
        &mut self.buffer.as_mut()[field::PAYLOAD..end]
    }

    /// Computes the checksum over the pseudo-header and the first `len()` bytes and
    /// stores it; a computed zero is stored as 0xffff.
    pub fn fill_checksum(&mut self, src: Ipv4Address, dst: Ipv4Address) {
        self.set_checksum(0);
        let len = self.len();
        let acc = checksum::pseudo_header_v4(src.0, dst.0, Protocol::Udp.into(), len);
        let datagram = &self.buffer.as_ref()[..usize::from(len)];
        let c = !checksum::fold(checksum::accumulate(acc, datagram));
        self.set_checksum(if c == 0 { 0xffff } else { c });
    }

    fn write_u16(&mut self, f: core::ops::Range<usize>, v: u16) {
        self.buffer.as_mut()[f].copy_from_slice(&v.to_be_bytes());
    }
}

/// A UDP header; the payload stays in the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
}

impl Repr {
    /// Parses a datagram from `src` to `dst`: checks the lengths, the checksum
    /// ([`Error::Checksum`]) and refuses destination port 0 ([`Error::Malformed`]).
    ///
    /// # Fuzzing
    /// The checksum is not checked under `cfg(fuzzing)`.
    pub fn parse<T: AsRef<[u8]>>(
        packet: &Packet<T>,
        src: Ipv4Address,
        dst: Ipv4Address,
    ) -> Result<Repr> {
        packet.check_len()?;
        if packet.dst_port() == 0 {
            return Err(Error::Malformed);
        }
        if !packet.verify_checksum(src, dst) {
            return Err(Error::Checksum);
        }
        Ok(Repr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
        })
    }

    /// Length of the header [`emit`](Self::emit) writes ([`HEADER_LEN`]).
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header for a `payload_len`-byte payload, lets `emit_payload` write the
    /// payload in place, then fills the checksum.
    ///
    /// # Panics
    /// If the buffer is shorter than 8 + `payload_len`; in debug builds also if
    /// `payload_len` exceeds 65 527.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        packet: &mut Packet<T>,
        src: Ipv4Address,
        dst: Ipv4Address,
        payload_len: usize,
        emit_payload: impl FnOnce(&mut [u8]),
    ) {
        debug_assert!(payload_len <= usize::from(u16::MAX) - HEADER_LEN);
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_len((HEADER_LEN + payload_len) as u16);
        emit_payload(packet.payload_mut());
        packet.fill_checksum(src, dst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLIENT: Ipv4Address = Ipv4Address::new(10, 0, 0, 1);
    const SERVER: Ipv4Address = Ipv4Address::new(10, 0, 0, 2);

    /// A DNS query for example.com A from 10.0.0.1:53000 to 10.0.0.2:53.
    static DATAGRAM_BYTES: [u8; 37] = [
        0xcf, 0x08, 0x00, 0x35, 0x00, 0x25, 0x02, 0x7b, 0x4a, 0x7b, 0x01, 0x00, 0x00, 0x01, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x07, 0x65, 0x78, 0x61, 0x6d, 0x70, 0x6c, 0x65, 0x03, 0x63,
        0x6f, 0x6d, 0x00, 0x00, 0x01, 0x00, 0x01,
    ];

    fn repr() -> Repr {
        Repr {
            src_port: 53000,
            dst_port: 53,
        }
    }

    #[test]
    fn deconstruct() {
        let p = Packet::new_checked(&DATAGRAM_BYTES[..]).unwrap();
        assert_eq!(p.src_port(), 53000);
        assert_eq!(p.dst_port(), 53);
        assert_eq!(p.len(), 37);
        assert!(!p.is_empty());
        assert_eq!(p.checksum(), 0x027b);
        assert_eq!(p.payload(), &DATAGRAM_BYTES[8..]);
        assert!(p.verify_checksum(CLIENT, SERVER));
        // The pseudo-header matters (swapping the addresses would not change the sum).
        assert!(!p.verify_checksum(CLIENT, Ipv4Address::new(10, 0, 0, 3)));
    }

    #[test]
    fn construct() {
        let mut bytes = [0xa5u8; 37];
        let mut p = Packet::new_unchecked(&mut bytes[..]);
        p.set_src_port(53000);
        p.set_dst_port(53);
        p.set_len(37);
        p.payload_mut().copy_from_slice(&DATAGRAM_BYTES[8..]);
        p.fill_checksum(CLIENT, SERVER);
        assert_eq!(&bytes[..], &DATAGRAM_BYTES[..]);
    }

    #[test]
    fn parse() {
        let p = Packet::new_checked(&DATAGRAM_BYTES[..]).unwrap();
        assert_eq!(Repr::parse(&p, CLIENT, SERVER), Ok(repr()));
    }

    #[test]
    fn emit() {
        let mut bytes = [0xa5u8; 37];
        let r = repr();
        r.emit(
            &mut Packet::new_unchecked(&mut bytes[..]),
            CLIENT,
            SERVER,
            29,
            |p| p.copy_from_slice(&DATAGRAM_BYTES[8..]),
        );
        assert_eq!(&bytes[..], &DATAGRAM_BYTES[..]);
    }

    #[test]
    fn checksum_zero_means_none() {
        let mut bytes = DATAGRAM_BYTES;
        bytes[6] = 0;
        bytes[7] = 0;
        let p = Packet::new_checked(&bytes[..]).unwrap();
        assert!(p.verify_checksum(CLIENT, SERVER));
        assert_eq!(Repr::parse(&p, CLIENT, SERVER), Ok(repr()));
    }

    #[test]
    fn computed_zero_sent_as_ffff() {
        // Find a payload word that makes the computed checksum zero, then check the field.
        let mut bytes = [0u8; 10];
        let mut p = Packet::new_unchecked(&mut bytes[..]);
        p.set_src_port(1);
        p.set_dst_port(2);
        p.set_len(10);
        p.fill_checksum(CLIENT, SERVER);
        let c = p.checksum();
        // Putting the checksum value in the payload word makes the sum 0xffff, so the
        // computed checksum is zero.
        p.payload_mut().copy_from_slice(&c.to_be_bytes());
        p.fill_checksum(CLIENT, SERVER);
        assert_eq!(p.checksum(), 0xffff);
        assert!(p.verify_checksum(CLIENT, SERVER));
    }

    #[test]
    fn bad_checksum() {
        let mut bytes = DATAGRAM_BYTES;
        bytes[20] ^= 0x40;
        let p = Packet::new_checked(&bytes[..]).unwrap();
        assert!(!p.verify_checksum(CLIENT, SERVER));
        assert_eq!(Repr::parse(&p, CLIENT, SERVER), Err(Error::Checksum));
    }

    #[test]
    fn truncated() {
        for len in [0, 7, 8, 36] {
            assert_eq!(
                Packet::new_checked(&DATAGRAM_BYTES[..len]).err(),
                Some(Error::Truncated),
                "len {len}"
            );
        }
    }

    #[test]
    fn malformed() {
        for bad_len in [0u16, 1, 7] {
            let mut bytes = DATAGRAM_BYTES;
            bytes[4..6].copy_from_slice(&bad_len.to_be_bytes());
            assert_eq!(
                Packet::new_checked(&bytes[..]).err(),
                Some(Error::Malformed),
                "len field {bad_len}"
            );
        }
        let mut bytes = DATAGRAM_BYTES;
        bytes[2..4].fill(0);
        Packet::new_unchecked(&mut bytes[..]).fill_checksum(CLIENT, SERVER);
        let p = Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(Repr::parse(&p, CLIENT, SERVER), Err(Error::Malformed));
    }

    #[test]
    fn payload_limited_to_len_field() {
        let mut bytes = [0u8; 46];
        bytes[..37].copy_from_slice(&DATAGRAM_BYTES);
        let p = Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(p.payload(), &DATAGRAM_BYTES[8..]);
        assert!(p.verify_checksum(CLIENT, SERVER));
        // A length field of exactly 8: empty payload.
        let mut bytes = DATAGRAM_BYTES;
        bytes[4..6].copy_from_slice(&8u16.to_be_bytes());
        let p = Packet::new_checked(&bytes[..]).unwrap();
        assert!(p.is_empty());
        assert!(p.payload().is_empty());
    }
}
