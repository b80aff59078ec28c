//! ARP (RFC 826) for Ethernet and IPv4 only.
//!
//! Heads up! read RFC 826 ("Packet format") and RFC 5227 §2.1.1 (probes, gratuitous ARP).
//!
//! The view has the fixed 28-byte Ethernet/IPv4 layout. A packet announcing other
//! hardware or protocol types or lengths still passes [`Packet::check_len`] (its fields
//! then read as garbage, never out of bounds), but [`Repr::parse`] refuses it with
//! [`Error::Unsupported`].

use super::ethernet::{Address as EthernetAddress, EtherType};
use super::ipv4::Address as Ipv4Address;
use super::{Error, Result};

mod field {
    use core::ops::Range;
    pub const HTYPE: Range<usize> = 0..2;
    pub const PTYPE: Range<usize> = 2..4;
    pub const HLEN: usize = 4;
    pub const PLEN: usize = 5;
    pub const OPER: Range<usize> = 6..8;
    pub const SHA: Range<usize> = 8..14;
    pub const SPA: Range<usize> = 14..18;
    pub const THA: Range<usize> = 18..24;
    pub const TPA: Range<usize> = 24..28;
}

/// Length of an Ethernet/IPv4 ARP packet.
pub const BUFFER_LEN: usize = field::TPA.end;

/// The hardware type field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hardware {
    /// 1
    Ethernet,
    /// Anything else.
    Unknown(u16),
}

impl From<u16> for Hardware {
    fn from(v: u16) -> Self {
        match v {
            1 => Hardware::Ethernet,
            other => Hardware::Unknown(other),
        }
    }
}

impl From<Hardware> for u16 {
    fn from(v: Hardware) -> u16 {
        match v {
            Hardware::Ethernet => 1,
            Hardware::Unknown(other) => other,
        }
    }
}

/// The ARP operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// 1: who has the target protocol address?
    Request,
    /// 2: the source hardware address has the source protocol address.
    Reply,
    /// Anything else (RARP, InARP, ...).
    Unknown(u16),
}

impl From<u16> for Operation {
    fn from(v: u16) -> Self {
        match v {
            1 => Operation::Request,
            2 => Operation::Reply,
            other => Operation::Unknown(other),
        }
    }
}

impl From<Operation> for u16 {
    fn from(v: Operation) -> u16 {
        match v {
            Operation::Request => 1,
            Operation::Reply => 2,
            Operation::Unknown(other) => other,
        }
    }
}

/// A view of an Ethernet/IPv4 ARP packet.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking its length.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Checks that the buffer holds [`BUFFER_LEN`] bytes. It may be longer (Ethernet
    /// padding follows a 28-byte ARP packet in a 60-byte frame).
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < BUFFER_LEN {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Hardware type.
    pub fn hardware_type(&self) -> Hardware {
        Hardware::from(self.read_u16(field::HTYPE))
    }

    /// Protocol type (an EtherType).
    pub fn protocol_type(&self) -> EtherType {
        EtherType::from(self.read_u16(field::PTYPE))
    }

    /// Hardware address length.
    pub fn hardware_len(&self) -> u8 {
        self.buffer.as_ref()[field::HLEN]
    }

    /// Protocol address length.
    pub fn protocol_len(&self) -> u8 {
        self.buffer.as_ref()[field::PLEN]
    }

    /// Operation.
    pub fn operation(&self) -> Operation {
        Operation::from(self.read_u16(field::OPER))
    }

    /// Sender hardware address.
    pub fn source_hardware_addr(&self) -> EthernetAddress {
        self.read_mac(field::SHA)
    }

    /// Sender protocol address.
    pub fn source_protocol_addr(&self) -> Ipv4Address {
        Ipv4Address::from_bytes(&self.buffer.as_ref()[field::SPA])
    }

    /// Target hardware address.
    pub fn target_hardware_addr(&self) -> EthernetAddress {
        self.read_mac(field::THA)
    }

    /// Target protocol address.
    pub fn target_protocol_addr(&self) -> Ipv4Address {
        Ipv4Address::from_bytes(&self.buffer.as_ref()[field::TPA])
    }

    fn read_u16(&self, f: core::ops::Range<usize>) -> u16 {
        let b = &self.buffer.as_ref()[f];
        u16::from_be_bytes([b[0], b[1]])
    }

    fn read_mac(&self, f: core::ops::Range<usize>) -> EthernetAddress {
        let mut a = [0; 6];
        a.copy_from_slice(&self.buffer.as_ref()[f]);
        EthernetAddress(a)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the hardware type.
    pub fn set_hardware_type(&mut self, v: Hardware) {
        self.write_u16(field::HTYPE, v.into());
    }

    /// Sets the protocol type.
    pub fn set_protocol_type(&mut self, v: EtherType) {
        self.write_u16(field::PTYPE, v.into());
    }

    /// Sets the hardware address length.
    pub fn set_hardware_len(&mut self, v: u8) {
        self.buffer.as_mut()[field::HLEN] = v;
    }

    /// Sets the protocol address length.
    pub fn set_protocol_len(&mut self, v: u8) {
        self.buffer.as_mut()[field::PLEN] = v;
    }

    /// Sets the operation.
    pub fn set_operation(&mut self, v: Operation) {
        self.write_u16(field::OPER, v.into());
    }

    /// Sets the sender hardware address.
    pub fn set_source_hardware_addr(&mut self, a: EthernetAddress) {
        self.buffer.as_mut()[field::SHA].copy_from_slice(&a.0);
    }

    /// Sets the sender protocol address.
    pub fn set_source_protocol_addr(&mut self, a: Ipv4Address) {
        self.buffer.as_mut()[field::SPA].copy_from_slice(&a.0);
    }

    /// Sets the target hardware address.
    pub fn set_target_hardware_addr(&mut self, a: EthernetAddress) {
        self.buffer.as_mut()[field::THA].copy_from_slice(&a.0);
    }

    /// Sets the target protocol address.
    pub fn set_target_protocol_addr(&mut self, a: Ipv4Address) {
        self.buffer.as_mut()[field::TPA].copy_from_slice(&a.0);
    }

    fn write_u16(&mut self, f: core::ops::Range<usize>, v: u16) {
        self.buffer.as_mut()[f].copy_from_slice(&v.to_be_bytes());
    }
}

/// An Ethernet/IPv4 ARP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    /// Request, reply or other.
    pub operation: Operation,
    /// Sender MAC.
    pub source_hardware_addr: EthernetAddress,
    /// Sender IPv4 address.
    pub source_protocol_addr: Ipv4Address,
    /// Target MAC (zero in a request).
    pub target_hardware_addr: EthernetAddress,
    /// Target IPv4 address.
    pub target_protocol_addr: Ipv4Address,
}

impl Repr {
    /// Parses a packet. Anything but hardware type 1, protocol type 0x0800, hardware length
    /// 6 and protocol length 4 is [`Error::Unsupported`]. Unknown operations parse; the
    /// caller decides what to do with them.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        if packet.hardware_type() != Hardware::Ethernet
            || packet.protocol_type() != EtherType::Ipv4
            || packet.hardware_len() != 6
            || packet.protocol_len() != 4
        {
            return Err(Error::Unsupported);
        }
        Ok(Repr {
            operation: packet.operation(),
            source_hardware_addr: packet.source_hardware_addr(),
            source_protocol_addr: packet.source_protocol_addr(),
            target_hardware_addr: packet.target_hardware_addr(),
            target_protocol_addr: packet.target_protocol_addr(),
        })
    }

    /// Length of the packet [`emit`](Self::emit) writes.
    pub const fn buffer_len(&self) -> usize {
        BUFFER_LEN
    }

    /// Writes the whole packet.
    ///
    /// # Panics
    /// If the buffer is shorter than [`BUFFER_LEN`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        packet.set_hardware_type(Hardware::Ethernet);
        packet.set_protocol_type(EtherType::Ipv4);
        packet.set_hardware_len(6);
        packet.set_protocol_len(4);
        packet.set_operation(self.operation);
        packet.set_source_hardware_addr(self.source_hardware_addr);
        packet.set_source_protocol_addr(self.source_protocol_addr);
        packet.set_target_hardware_addr(self.target_hardware_addr);
        packet.set_target_protocol_addr(self.target_protocol_addr);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLIENT_MAC: EthernetAddress = EthernetAddress([0x52, 0x54, 0x00, 0x12, 0x34, 0x56]);
    const SERVER_MAC: EthernetAddress = EthernetAddress([0x52, 0x54, 0x00, 0xab, 0xcd, 0xef]);
    const CLIENT: Ipv4Address = Ipv4Address::new(10, 0, 0, 1);
    const SERVER: Ipv4Address = Ipv4Address::new(10, 0, 0, 2);

    /// Linux 10.0.0.1 asking who has 10.0.0.2 (the body of the Ethernet test frame).
    static REQUEST_BYTES: [u8; 28] = [
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, 0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0x0a,
        0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x00, 0x00, 0x02,
    ];

    /// Our answer: 10.0.0.2 is at 52:54:00:ab:cd:ef.
    static REPLY_BYTES: [u8; 28] = [
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x02, 0x52, 0x54, 0x00, 0xab, 0xcd, 0xef, 0x0a,
        0x00, 0x00, 0x02, 0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0x0a, 0x00, 0x00, 0x01,
    ];

    fn request() -> Repr {
        Repr {
            operation: Operation::Request,
            source_hardware_addr: CLIENT_MAC,
            source_protocol_addr: CLIENT,
            target_hardware_addr: EthernetAddress([0; 6]),
            target_protocol_addr: SERVER,
        }
    }

    fn reply() -> Repr {
        Repr {
            operation: Operation::Reply,
            source_hardware_addr: SERVER_MAC,
            source_protocol_addr: SERVER,
            target_hardware_addr: CLIENT_MAC,
            target_protocol_addr: CLIENT,
        }
    }

    #[test]
    fn deconstruct() {
        let p = Packet::new_checked(&REQUEST_BYTES[..]).unwrap();
        assert_eq!(p.hardware_type(), Hardware::Ethernet);
        assert_eq!(p.protocol_type(), EtherType::Ipv4);
        assert_eq!(p.hardware_len(), 6);
        assert_eq!(p.protocol_len(), 4);
        assert_eq!(p.operation(), Operation::Request);
        assert_eq!(p.source_hardware_addr(), CLIENT_MAC);
        assert_eq!(p.source_protocol_addr(), CLIENT);
        assert_eq!(p.target_hardware_addr(), EthernetAddress([0; 6]));
        assert_eq!(p.target_protocol_addr(), SERVER);
    }

    #[test]
    fn construct() {
        let mut bytes = [0xa5u8; 28];
        let mut p = Packet::new_unchecked(&mut bytes[..]);
        p.set_hardware_type(Hardware::Ethernet);
        p.set_protocol_type(EtherType::Ipv4);
        p.set_hardware_len(6);
        p.set_protocol_len(4);
        p.set_operation(Operation::Request);
        p.set_source_hardware_addr(CLIENT_MAC);
        p.set_source_protocol_addr(CLIENT);
        p.set_target_hardware_addr(EthernetAddress([0; 6]));
        p.set_target_protocol_addr(SERVER);
        assert_eq!(&bytes[..], &REQUEST_BYTES[..]);
    }

    #[test]
    fn parse() {
        let p = Packet::new_checked(&REQUEST_BYTES[..]).unwrap();
        assert_eq!(Repr::parse(&p), Ok(request()));
        let p = Packet::new_checked(&REPLY_BYTES[..]).unwrap();
        assert_eq!(Repr::parse(&p), Ok(reply()));
    }

    #[test]
    fn emit() {
        let mut bytes = [0xa5u8; 28];
        let r = reply();
        assert_eq!(r.buffer_len(), 28);
        r.emit(&mut Packet::new_unchecked(&mut bytes[..]));
        assert_eq!(bytes, REPLY_BYTES);
    }

    #[test]
    fn padded_frame_parses() {
        let mut bytes = [0u8; 46];
        bytes[..28].copy_from_slice(&REQUEST_BYTES);
        let p = Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(Repr::parse(&p), Ok(request()));
    }

    #[test]
    fn truncated() {
        for len in [0, 8, 27] {
            assert_eq!(
                Packet::new_checked(&REQUEST_BYTES[..len]).err(),
                Some(Error::Truncated),
                "len {len}"
            );
        }
    }

    #[test]
    fn unsupported() {
        let patch = |i: usize, v: u8| {
            let mut b = REQUEST_BYTES;
            b[i] = v;
            let p = Packet::new_checked(&b[..]).unwrap();
            Repr::parse(&p)
        };
        assert_eq!(patch(1, 6), Err(Error::Unsupported)); // htype 6 (IEEE 802)
        assert_eq!(patch(2, 0x86), Err(Error::Unsupported)); // ptype 0x86 00
        assert_eq!(patch(4, 8), Err(Error::Unsupported)); // hlen 8
        assert_eq!(patch(5, 16), Err(Error::Unsupported)); // plen 16
        assert_eq!(
            patch(7, 3).map(|r| r.operation),
            Ok(Operation::Unknown(3)) // RARP request: parses, the caller ignores it
        );
    }

    #[test]
    fn operation_round_trip() {
        for v in [0u16, 1, 2, 3, 4, 0xffff] {
            assert_eq!(u16::from(Operation::from(v)), v);
            assert_eq!(u16::from(Hardware::from(v)), v);
        }
    }
}
