//! IPv4 headers (RFC 791) and addresses.
//!
//! Heads up! read RFC 791 §3.1 (header format) and RFC 1122 §3.2.1 (what a host must check).
//!
//! We accept options (and skip them), never reassemble: a fragment parses as a [`Packet`]
//! but [`Repr::parse`] refuses it with [`Error::Unsupported`]. A web server's peers send
//! DF segments sized by the MSS we announced, so fragments are noise or an attack.

use super::{checksum, Error, Result};

mod field {
    use core::ops::Range;
    pub const VER_IHL: usize = 0;
    pub const DSCP_ECN: usize = 1;
    pub const LENGTH: Range<usize> = 2..4;
    pub const IDENT: Range<usize> = 4..6;
    pub const FLG_OFF: Range<usize> = 6..8;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Range<usize> = 10..12;
    pub const SRC_ADDR: Range<usize> = 12..16;
    pub const DST_ADDR: Range<usize> = 16..20;
}

/// Length of an IPv4 header without options, which is what [`Repr::emit`] writes.
pub const HEADER_LEN: usize = field::DST_ADDR.end;

/// Don't Fragment flag in the flags/fragment-offset word.
const FLAG_DF: u16 = 0x4000;
/// More Fragments flag in the flags/fragment-offset word.
const FLAG_MF: u16 = 0x2000;
/// Fragment offset (in 8-byte units) in the flags/fragment-offset word.
const FRAG_OFFSET_MASK: u16 = 0x1fff;

/// An IPv4 address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Address(pub [u8; 4]);

impl Address {
    /// 0.0.0.0.
    pub const UNSPECIFIED: Address = Address([0; 4]);
    /// 255.255.255.255, the limited broadcast address.
    pub const BROADCAST: Address = Address([255; 4]);

    /// Builds an address from its four octets.
    pub const fn new(a: u8, b: u8, c: u8, d: u8) -> Address {
        Address([a, b, c, d])
    }

    /// Builds an address from a 4-byte slice in network order.
    ///
    /// # Panics
    /// If `data` is not exactly 4 bytes long (a bug in the caller: wire accessors read
    /// fixed ranges).
    pub fn from_bytes(data: &[u8]) -> Address {
        let mut a = [0; 4];
        a.copy_from_slice(data);
        Address(a)
    }

    /// The four octets in network order.
    pub const fn as_bytes(&self) -> &[u8; 4] {
        &self.0
    }

    /// The address as a host-order integer (10.0.0.1 is 0x0a000001).
    pub const fn to_bits(self) -> u32 {
        u32::from_be_bytes(self.0)
    }

    /// Whether this is 255.255.255.255.
    pub fn is_broadcast(&self) -> bool {
        *self == Self::BROADCAST
    }

    /// Whether this is a class D address, 224.0.0.0/4.
    pub fn is_multicast(&self) -> bool {
        self.0[0] & 0xf0 == 224
    }

    /// Whether this is 0.0.0.0.
    pub fn is_unspecified(&self) -> bool {
        *self == Self::UNSPECIFIED
    }

    /// Whether this is in 127.0.0.0/8.
    pub fn is_loopback(&self) -> bool {
        self.0[0] == 127
    }

    /// Whether this address lies in `net`/`prefix_len`. A prefix longer than 32 counts as
    /// 32; a prefix of 0 matches every address.
    pub fn in_subnet(&self, net: Address, prefix_len: u8) -> bool {
        let mask = prefix_mask(prefix_len);
        self.to_bits() & mask == net.to_bits() & mask
    }
}

/// The netmask of a prefix length as a host-order integer (`/24` is 0xffffff00).
fn prefix_mask(prefix_len: u8) -> u32 {
    match prefix_len {
        0 => 0,
        n => u32::MAX << (32 - u32::from(n.min(32))),
    }
}

impl From<[u8; 4]> for Address {
    fn from(b: [u8; 4]) -> Self {
        Address(b)
    }
}

impl From<Address> for [u8; 4] {
    fn from(a: Address) -> Self {
        a.0
    }
}

impl core::fmt::Display for Address {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let b = self.0;
        write!(f, "{}.{}.{}.{}", b[0], b[1], b[2], b[3])
    }
}

/// Why a string is not a dotted-quad IPv4 address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddressParseError;

impl core::fmt::Display for AddressParseError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("invalid IPv4 address (want a.b.c.d)")
    }
}

impl core::str::FromStr for Address {
    type Err = AddressParseError;

    /// Parses `a.b.c.d` with four decimal octets, no leading `+`, no leading zeros beyond
    /// a single `0`, and no surrounding spaces. Needs no allocation, so it is always on.
    fn from_str(s: &str) -> core::result::Result<Self, Self::Err> {
        let mut out = [0u8; 4];
        let mut parts = s.split('.');
        for o in &mut out {
            let p = parts.next().ok_or(AddressParseError)?;
            let ok = !p.is_empty()
                && p.len() <= 3
                && p.bytes().all(|c| c.is_ascii_digit())
                && !(p.len() > 1 && p.starts_with('0'));
            if !ok {
                return Err(AddressParseError);
            }
            *o = p.parse().map_err(|_| AddressParseError)?;
        }
        if parts.next().is_some() {
            return Err(AddressParseError);
        }
        Ok(Address(out))
    }
}

/// The protocol carried by an IPv4 packet (the "Protocol" field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// 1
    Icmp,
    /// 6
    Tcp,
    /// 17
    Udp,
    /// Anything else.
    Unknown(u8),
}

impl From<u8> for Protocol {
    fn from(v: u8) -> Self {
        match v {
            1 => Protocol::Icmp,
            6 => Protocol::Tcp,
            17 => Protocol::Udp,
            other => Protocol::Unknown(other),
        }
    }
}

impl From<Protocol> for u8 {
    fn from(v: Protocol) -> u8 {
        match v {
            Protocol::Icmp => 1,
            Protocol::Tcp => 6,
            Protocol::Udp => 17,
            Protocol::Unknown(other) => other,
        }
    }
}

/// A view of an IPv4 packet.
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

    /// Checks the length fields against the buffer and against each other:
    /// the buffer holds 20 bytes ([`Error::Truncated`]), the version is 4 and
    /// 20 ≤ IHL·4 ≤ total length ([`Error::Malformed`]), and the total length fits in the
    /// buffer ([`Error::Truncated`]). The buffer may be longer (Ethernet padding).
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        if self.version() != 4 {
            return Err(Error::Malformed);
        }
        let header_len = usize::from(self.header_len());
        let total_len = usize::from(self.total_len());
        if header_len < HEADER_LEN || total_len < header_len {
            return Err(Error::Malformed);
        }
        if total_len > len {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The version field (4 for a checked packet).
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }

    /// Header length in bytes (IHL·4), options included.
    pub fn header_len(&self) -> u8 {
        (self.buffer.as_ref()[field::VER_IHL] & 0x0f) * 4
    }

    /// The DSCP and ECN bits (the old type-of-service byte).
    pub fn dscp_ecn(&self) -> u8 {
        self.buffer.as_ref()[field::DSCP_ECN]
    }

    /// Total length of the packet (header and payload) in bytes.
    pub fn total_len(&self) -> u16 {
        self.read_u16(field::LENGTH)
    }

    /// Identification.
    pub fn ident(&self) -> u16 {
        self.read_u16(field::IDENT)
    }

    /// The Don't Fragment flag.
    pub fn dont_frag(&self) -> bool {
        self.read_u16(field::FLG_OFF) & FLAG_DF != 0
    }

    /// The More Fragments flag.
    pub fn more_frags(&self) -> bool {
        self.read_u16(field::FLG_OFF) & FLAG_MF != 0
    }

    /// Fragment offset in bytes (the field counts 8-byte units).
    pub fn frag_offset(&self) -> u16 {
        (self.read_u16(field::FLG_OFF) & FRAG_OFFSET_MASK) << 3
    }

    /// Whether this packet is a fragment (the first one included).
    pub fn is_fragment(&self) -> bool {
        self.more_frags() || self.frag_offset() != 0
    }

    /// Time to live.
    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }

    /// The protocol of the payload.
    pub fn next_header(&self) -> Protocol {
        Protocol::from(self.buffer.as_ref()[field::PROTOCOL])
    }

    /// The header checksum field.
    pub fn checksum(&self) -> u16 {
        self.read_u16(field::CHECKSUM)
    }

    /// Source address.
    pub fn src_addr(&self) -> Address {
        Address::from_bytes(&self.buffer.as_ref()[field::SRC_ADDR])
    }

    /// Destination address.
    pub fn dst_addr(&self) -> Address {
        Address::from_bytes(&self.buffer.as_ref()[field::DST_ADDR])
    }

    /// The option bytes between the fixed header and the payload (empty when IHL is 5).
    pub fn options(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..usize::from(self.header_len())]
    }

    /// The payload: from the end of the header to the total length. Anything after the
    /// total length (Ethernet padding of short frames) is cut off.
    pub fn payload(&self) -> &[u8] {
        let range = usize::from(self.header_len())..usize::from(self.total_len());
        &self.buffer.as_ref()[range]
    }

    /// Whether the header checksum verifies.
    ///
    /// # Fuzzing
    /// Always true under `cfg(fuzzing)`, so the fuzzer reaches the layers above.
    pub fn verify_checksum(&self) -> bool {
        if cfg!(fuzzing) {
            return true;
        }
        let header = &self.buffer.as_ref()[..usize::from(self.header_len())];
        checksum::sum(header) == 0xffff
    }

    fn read_u16(&self, f: core::ops::Range<usize>) -> u16 {
        let b = &self.buffer.as_ref()[f];
        u16::from_be_bytes([b[0], b[1]])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the version field.
    pub fn set_version(&mut self, v: u8) {
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0x0f) | (v << 4);
    }

    /// Sets the header length in bytes (a multiple of 4, at most 60).
    pub fn set_header_len(&mut self, len: u8) {
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0xf0) | ((len / 4) & 0x0f);
    }

    /// Sets the DSCP and ECN bits.
    pub fn set_dscp_ecn(&mut self, v: u8) {
        self.buffer.as_mut()[field::DSCP_ECN] = v;
    }

    /// Sets the total length.
    pub fn set_total_len(&mut self, v: u16) {
        self.write_u16(field::LENGTH, v);
    }

    /// Sets the identification.
    pub fn set_ident(&mut self, v: u16) {
        self.write_u16(field::IDENT, v);
    }

    /// Clears the flags and the fragment offset.
    pub fn clear_flags(&mut self) {
        self.write_u16(field::FLG_OFF, 0);
    }

    /// Sets or clears Don't Fragment.
    pub fn set_dont_frag(&mut self, v: bool) {
        self.set_flag(FLAG_DF, v);
    }

    /// Sets or clears More Fragments.
    pub fn set_more_frags(&mut self, v: bool) {
        self.set_flag(FLAG_MF, v);
    }

    /// Sets the fragment offset in bytes (rounded down to a multiple of 8).
    pub fn set_frag_offset(&mut self, bytes: u16) {
        let raw = self.read_u16(field::FLG_OFF);
        self.write_u16(field::FLG_OFF, (raw & !FRAG_OFFSET_MASK) | (bytes >> 3));
    }

    /// Sets the time to live.
    pub fn set_hop_limit(&mut self, v: u8) {
        self.buffer.as_mut()[field::TTL] = v;
    }

    /// Sets the payload protocol.
    pub fn set_next_header(&mut self, p: Protocol) {
        self.buffer.as_mut()[field::PROTOCOL] = p.into();
    }

    /// Sets the checksum field.
    pub fn set_checksum(&mut self, v: u16) {
        self.write_u16(field::CHECKSUM, v);
    }

    /// Sets the source address.
    pub fn set_src_addr(&mut self, a: Address) {
        self.buffer.as_mut()[field::SRC_ADDR].copy_from_slice(&a.0);
    }

    /// Sets the destination address.
    pub fn set_dst_addr(&mut self, a: Address) {
        self.buffer.as_mut()[field::DST_ADDR].copy_from_slice(&a.0);
    }

    /// Computes the header checksum (over `header_len` bytes) and stores it.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let hl = usize::from(self.header_len());
        let c = checksum::checksum(&self.buffer.as_ref()[..hl]);
        self.set_checksum(c);
    }

    /// The payload (header end to total length), mutable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let range = usize::from(self.header_len())..usize::from(self.total_len());
        &mut self.buffer.as_mut()[range]
    }

    fn set_flag(&mut self, flag: u16, v: bool) {
        let raw = self.read_u16(field::FLG_OFF);
        let raw = if v { raw | flag } else { raw & !flag };
        self.write_u16(field::FLG_OFF, raw);
    }

    fn write_u16(&mut self, f: core::ops::Range<usize>, v: u16) {
        self.buffer.as_mut()[f].copy_from_slice(&v.to_be_bytes());
    }
}

/// The parts of an IPv4 header the stack uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    /// Source address.
    pub src_addr: Address,
    /// Destination address.
    pub dst_addr: Address,
    /// Payload protocol.
    pub next_header: Protocol,
    /// Payload length in bytes (total length minus header length).
    pub payload_len: usize,
    /// Time to live.
    pub hop_limit: u8,
}

impl Repr {
    /// Parses a packet: checks the lengths, then the header checksum ([`Error::Checksum`]),
    /// then refuses fragments ([`Error::Unsupported`]). Options are skipped.
    ///
    /// # Fuzzing
    /// The checksum is not checked under `cfg(fuzzing)`.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        if !packet.verify_checksum() {
            return Err(Error::Checksum);
        }
        if packet.is_fragment() {
            return Err(Error::Unsupported);
        }
        Ok(Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            next_header: packet.next_header(),
            payload_len: usize::from(packet.total_len()) - usize::from(packet.header_len()),
            hop_limit: packet.hop_limit(),
        })
    }

    /// Length of the header [`emit`](Self::emit) writes ([`HEADER_LEN`]); the payload
    /// follows it.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes a 20-byte header into `packet`: version 4, IHL 5, TOS 0, total length
    /// 20 + `payload_len`, ident 0, DF set, the TTL, protocol and addresses, and the
    /// checksum. The payload bytes are not touched.
    ///
    /// # Panics
    /// If the buffer is shorter than [`HEADER_LEN`]; in debug builds also if
    /// `payload_len` exceeds 65 515 (the total length would not fit in 16 bits).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        debug_assert!(self.payload_len <= usize::from(u16::MAX) - HEADER_LEN);
        packet.set_version(4);
        packet.set_header_len(HEADER_LEN as u8);
        packet.set_dscp_ecn(0);
        packet.set_total_len((HEADER_LEN + self.payload_len) as u16);
        packet.set_ident(0);
        packet.clear_flags();
        packet.set_dont_frag(true);
        packet.set_hop_limit(self.hop_limit);
        packet.set_next_header(self.next_header);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
        packet.fill_checksum();
    }
}

#[cfg(test)]
mod tests;
