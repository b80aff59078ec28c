//! IPv6 headers (RFC 8200), addresses (RFC 4291, text form RFC 5952) and a bounded walk
//! over the extension-header chain.
//!
//! Heads up! read RFC 8200 §3 (header), §4 (extension headers: order, options, routing,
//! fragment) and RFC 5095 (routing type 0 deprecated).
//!
//! [`Packet::new_checked`] checks the fixed header; [`Packet::walk`] then follows the
//! Next Header chain to the upper layer within [`MAX_EXT_HEADERS`] headers and
//! [`MAX_EXT_LEN`] bytes, and says why it stopped otherwise ([`ChainError`]), with the
//! pointer an ICMPv6 Parameter Problem needs. Fragments are reported, never reassembled:
//! a web server's peers send segments sized by the MSS we announce, and RFC 8200 §4.5
//! lets a host drop what it cannot reassemble.

use super::{checksum, Error, Result};

mod field {
    use core::ops::Range;
    pub const VER_TC_FLOW: Range<usize> = 0..4;
    pub const LENGTH: Range<usize> = 4..6;
    pub const NXT_HDR: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC_ADDR: Range<usize> = 8..24;
    pub const DST_ADDR: Range<usize> = 24..40;
}

/// Length of the fixed IPv6 header, which is what [`Repr::emit`] writes.
pub const HEADER_LEN: usize = field::DST_ADDR.end;

/// The most extension headers [`Packet::walk`] follows before it gives up.
pub const MAX_EXT_HEADERS: usize = 8;

/// The most bytes of extension headers [`Packet::walk`] reads: the upper-layer header
/// must start within this many bytes after the fixed header.
pub const MAX_EXT_LEN: usize = 1024;

/// Length of the hop-by-hop header [`emit_router_alert`] writes (MLD's Router Alert).
pub const ROUTER_ALERT_LEN: usize = 8;

/// The minimum link MTU of IPv6 (RFC 8200 §5): every link carries 1280-byte packets.
pub const MIN_MTU: usize = 1280;

/// `v4` as an IPv4-mapped IPv6 address (RFC 4291 §2.5.5.2: the form the connection key,
/// `tcp::port_table::Peer`, keeps IPv4 in).
#[inline(always)]
pub const fn mapped(v4: [u8; 4]) -> [u8; 16] {
    [
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, v4[0], v4[1], v4[2], v4[3],
    ]
}

/// The IPv4 address `ip` maps, if it is IPv4-mapped.
///
/// One 128-bit load and compare (a slice pattern over the bytes compiled to a compare
/// per byte, on every segment of the IPv4 path).
#[inline(always)]
pub fn v4_of(ip: &[u8; 16]) -> Option<[u8; 4]> {
    let x = u128::from_be_bytes(*ip);
    (x >> 32 == 0xffff).then_some((x as u32).to_be_bytes())
}

/// An IPv6 address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Address(pub [u8; 16]);

impl Address {
    /// `::`, the unspecified address.
    pub const UNSPECIFIED: Address = Address([0; 16]);
    /// `::1`, the loopback address.
    pub const LOOPBACK: Address = Address::new(0, 0, 0, 0, 0, 0, 0, 1);
    /// `ff02::1`, all nodes on the link.
    pub const ALL_NODES: Address = Address::new(0xff02, 0, 0, 0, 0, 0, 0, 1);
    /// `ff02::2`, all routers on the link.
    pub const ALL_ROUTERS: Address = Address::new(0xff02, 0, 0, 0, 0, 0, 0, 2);
    /// `ff02::16`, all MLDv2-capable routers (where MLDv2 reports go, RFC 3810 §5.2.14).
    pub const ALL_MLDV2_ROUTERS: Address = Address::new(0xff02, 0, 0, 0, 0, 0, 0, 0x16);

    /// Builds an address from its eight 16-bit groups.
    #[allow(clippy::too_many_arguments)]
    pub const fn new(a: u16, b: u16, c: u16, d: u16, e: u16, f: u16, g: u16, h: u16) -> Address {
        let w = [a, b, c, d, e, f, g, h];
        let mut out = [0u8; 16];
        let mut i = 0;
        while i < 8 {
            let [hi, lo] = w[i].to_be_bytes();
            out[2 * i] = hi;
            out[2 * i + 1] = lo;
            i += 1;
        }
        Address(out)
    }

    /// Builds an address from a 16-byte slice in network order.
    ///
    /// # Panics
    /// If `data` is not exactly 16 bytes long (a bug in the caller: wire accessors read
    /// fixed ranges).
    pub fn from_bytes(data: &[u8]) -> Address {
        let mut a = [0; 16];
        a.copy_from_slice(data);
        Address(a)
    }

    /// The sixteen octets in network order.
    pub const fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }

    /// The eight 16-bit groups.
    pub fn segments(&self) -> [u16; 8] {
        core::array::from_fn(|i| u16::from_be_bytes([self.0[2 * i], self.0[2 * i + 1]]))
    }

    /// Whether this is `::`.
    pub fn is_unspecified(&self) -> bool {
        *self == Self::UNSPECIFIED
    }

    /// Whether this is `::1`.
    pub fn is_loopback(&self) -> bool {
        *self == Self::LOOPBACK
    }

    /// Whether this is a multicast address, `ff00::/8`.
    pub fn is_multicast(&self) -> bool {
        self.0[0] == 0xff
    }

    /// Whether this is a link-local unicast address, `fe80::/10`.
    pub fn is_link_local(&self) -> bool {
        self.0[0] == 0xfe && self.0[1] & 0xc0 == 0x80
    }

    /// Whether this is a unicast address (neither multicast nor unspecified).
    pub fn is_unicast(&self) -> bool {
        !self.is_multicast() && !self.is_unspecified()
    }

    /// Whether this is a solicited-node multicast address, `ff02::1:ff00:0/104`.
    pub fn is_solicited_node_multicast(&self) -> bool {
        self.0[..13] == Self::SOLICITED_NODE_PREFIX
    }

    const SOLICITED_NODE_PREFIX: [u8; 13] = [0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff];

    /// The solicited-node multicast address of this address (RFC 4291 §2.7.1):
    /// `ff02::1:ff` followed by the low 24 bits, where neighbour solicitations for it go.
    pub fn solicited_node(&self) -> Address {
        let mut a = [0u8; 16];
        a[..13].copy_from_slice(&Self::SOLICITED_NODE_PREFIX);
        a[13..].copy_from_slice(&self.0[13..]);
        Address(a)
    }

    /// The multicast scope (RFC 4291 §2.7: 1 interface, 2 link, 5 site, 14 global), or
    /// `None` for a unicast address.
    pub fn multicast_scope(&self) -> Option<u8> {
        self.is_multicast().then_some(self.0[1] & 0x0f)
    }

    /// Whether this address lies in `net`/`prefix_len`. A prefix longer than 128 counts
    /// as 128; a prefix of 0 matches every address.
    pub fn in_subnet(&self, net: Address, prefix_len: u8) -> bool {
        let mask = prefix_mask(prefix_len);
        u128::from_be_bytes(self.0) & mask == u128::from_be_bytes(net.0) & mask
    }

    /// The Ethernet group a packet to this multicast address goes to (RFC 2464 §7):
    /// `33:33` and the low 32 bits. Meaningless for a unicast address.
    pub fn multicast_ethernet(&self) -> super::ethernet::Address {
        let b = self.0;
        super::ethernet::Address([0x33, 0x33, b[12], b[13], b[14], b[15]])
    }

    /// Whether this is an IPv4-mapped address, `::ffff:0:0/96` (shown as `::ffff:a.b.c.d`).
    pub fn is_ipv4_mapped(&self) -> bool {
        self.0[..10] == [0; 10] && self.0[10..12] == [0xff, 0xff]
    }
}

fn prefix_mask(prefix_len: u8) -> u128 {
    match prefix_len {
        0 => 0,
        n => u128::MAX << (128 - u32::from(n.min(128))),
    }
}

impl From<[u8; 16]> for Address {
    fn from(b: [u8; 16]) -> Self {
        Address(b)
    }
}

impl From<Address> for [u8; 16] {
    fn from(a: Address) -> Self {
        a.0
    }
}

/// A small stack buffer for [`core::fmt::Write`], so `Display` can honour width and
/// alignment through [`core::fmt::Formatter::pad`] without allocating.
struct TextBuf {
    buf: [u8; 48],
    len: usize,
}

impl core::fmt::Write for TextBuf {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let end = self.len + s.len();
        let dst = self.buf.get_mut(self.len..end).ok_or(core::fmt::Error)?;
        dst.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

impl core::fmt::Display for Address {
    /// RFC 5952 §4: lowercase hex without leading zeros, the longest run of two or more
    /// zero groups (the first of equal runs) as `::`, and RFC 5952 §5's `::ffff:a.b.c.d`
    /// for IPv4-mapped addresses (as `std::net::Ipv6Addr` shows them).
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        use core::fmt::Write;
        let mut t = TextBuf {
            buf: [0; 48],
            len: 0,
        };
        let seg = self.segments();
        if self.is_ipv4_mapped() {
            let b = self.0;
            write!(t, "::ffff:{}.{}.{}.{}", b[12], b[13], b[14], b[15])?;
        } else {
            // The longest run of zero groups, at least two long.
            let (mut best, mut best_len, mut run, mut run_len) = (0, 0, 0, 0);
            for (i, s) in seg.iter().enumerate() {
                if *s == 0 {
                    if run_len == 0 {
                        run = i;
                    }
                    run_len += 1;
                    if run_len > best_len {
                        (best, best_len) = (run, run_len);
                    }
                } else {
                    run_len = 0;
                }
            }
            if best_len < 2 {
                best_len = 0;
            }
            let mut i = 0;
            while i < 8 {
                if best_len > 0 && i == best {
                    t.write_str("::")?;
                    i += best_len;
                    continue;
                }
                if i > 0 && !(best_len > 0 && i == best + best_len) {
                    t.write_str(":")?;
                }
                write!(t, "{:x}", seg[i])?;
                i += 1;
            }
        }
        // Only ASCII was written.
        f.pad(core::str::from_utf8(&t.buf[..t.len]).map_err(|_| core::fmt::Error)?)
    }
}

/// Why a string is not an IPv6 address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddressParseError;

impl core::fmt::Display for AddressParseError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("invalid IPv6 address (want RFC 4291 text such as 2001:db8::1)")
    }
}

impl core::str::FromStr for Address {
    type Err = AddressParseError;

    /// Parses the text forms of RFC 4291 §2.2: eight groups of 1-4 hex digits, one `::`
    /// for a run of zero groups, and a dotted IPv4 address as the last 32 bits. No zone
    /// (`%eth0`), no brackets, no spaces. Needs no allocation.
    fn from_str(s: &str) -> core::result::Result<Self, Self::Err> {
        let bytes = s.as_bytes();
        if bytes.len() > 45 {
            return Err(AddressParseError);
        }
        // The groups in order; `gap` is how many came before the `::`, if there is one.
        let mut seg = [0u16; 8];
        let mut n = 0usize;
        let mut gap = None;
        let mut i = 0;
        if bytes.starts_with(b"::") {
            gap = Some(0);
            i = 2;
        } else if bytes.first() == Some(&b':') {
            return Err(AddressParseError);
        }
        while i < bytes.len() {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_hexdigit() {
                i += 1;
            }
            if i < bytes.len() && bytes[i] == b'.' {
                // A dotted IPv4 tail: it ends the text and fills two groups.
                let v4: super::ipv4::Address = s[start..].parse().map_err(|_| AddressParseError)?;
                if n + 2 > 8 {
                    return Err(AddressParseError);
                }
                let b = v4.0;
                seg[n] = u16::from_be_bytes([b[0], b[1]]);
                seg[n + 1] = u16::from_be_bytes([b[2], b[3]]);
                n += 2;
                break;
            }
            let digits = &s[start..i];
            if digits.is_empty() || digits.len() > 4 || n >= 8 {
                return Err(AddressParseError);
            }
            seg[n] = u16::from_str_radix(digits, 16).map_err(|_| AddressParseError)?;
            n += 1;
            if i == bytes.len() {
                break;
            }
            // A separator: `:` then a group, or `::` once.
            if bytes[i] != b':' {
                return Err(AddressParseError);
            }
            i += 1;
            if i < bytes.len() && bytes[i] == b':' {
                if gap.is_some() {
                    return Err(AddressParseError);
                }
                gap = Some(n);
                i += 1;
            } else if i == bytes.len() {
                return Err(AddressParseError); // a trailing single `:`
            }
        }
        match gap {
            None if n != 8 => return Err(AddressParseError),
            Some(_) if n > 7 => return Err(AddressParseError),
            Some(g) => {
                // Move the groups after the `::` to the end, zeros between.
                let after = n - g;
                seg.copy_within(g..n, 8 - after);
                seg[g..8 - after].fill(0);
            }
            None => {}
        }
        Ok(Address::new(
            seg[0], seg[1], seg[2], seg[3], seg[4], seg[5], seg[6], seg[7],
        ))
    }
}

/// A Next Header value (IANA "Assigned Internet Protocol Numbers").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextHeader {
    /// 0, hop-by-hop options.
    HopByHop,
    /// 6
    Tcp,
    /// 17
    Udp,
    /// 43, routing header.
    Routing,
    /// 44, fragment header.
    Fragment,
    /// 50, Encapsulating Security Payload.
    Esp,
    /// 51, Authentication Header.
    Ah,
    /// 58
    Icmpv6,
    /// 59, nothing follows.
    NoNext,
    /// 60, destination options.
    DstOpts,
    /// Anything else.
    Unknown(u8),
}

impl From<u8> for NextHeader {
    fn from(v: u8) -> Self {
        match v {
            0 => NextHeader::HopByHop,
            6 => NextHeader::Tcp,
            17 => NextHeader::Udp,
            43 => NextHeader::Routing,
            44 => NextHeader::Fragment,
            50 => NextHeader::Esp,
            51 => NextHeader::Ah,
            58 => NextHeader::Icmpv6,
            59 => NextHeader::NoNext,
            60 => NextHeader::DstOpts,
            other => NextHeader::Unknown(other),
        }
    }
}

impl From<NextHeader> for u8 {
    fn from(v: NextHeader) -> u8 {
        match v {
            NextHeader::HopByHop => 0,
            NextHeader::Tcp => 6,
            NextHeader::Udp => 17,
            NextHeader::Routing => 43,
            NextHeader::Fragment => 44,
            NextHeader::Esp => 50,
            NextHeader::Ah => 51,
            NextHeader::Icmpv6 => 58,
            NextHeader::NoNext => 59,
            NextHeader::DstOpts => 60,
            NextHeader::Unknown(other) => other,
        }
    }
}

/// What RFC 8200 §4.2 tells a node to do with an option it does not recognise (the top
/// two bits of the option type; `00`, skip, is never reported).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionAction {
    /// `01`: discard the packet silently.
    Discard,
    /// `10`: discard and send a Parameter Problem (code 2) whatever the destination.
    DiscardAndReport,
    /// `11`: discard and send a Parameter Problem (code 2) unless the destination was
    /// multicast.
    DiscardAndReportUnicast,
}

/// Why [`Packet::walk`] did not reach an upper-layer header. Each `pointer` is the offset
/// from the start of the IPv6 header of the octet at fault, as a Parameter Problem
/// quotes it (RFC 4443 §3.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChainError {
    /// An extension header runs past the payload.
    Truncated,
    /// More than [`MAX_EXT_HEADERS`] headers, or the chain reaches past [`MAX_EXT_LEN`].
    TooLong,
    /// A hop-by-hop header not right after the fixed header (RFC 8200 §4.1; Parameter
    /// Problem code 1 at `pointer`, the Next Header field naming it).
    HopByHopNotFirst {
        /// The Next Header octet that names the misplaced header.
        pointer: usize,
    },
    /// An option whose type says to discard the packet (Parameter Problem code 2 at
    /// `pointer`, the option type, when `action` asks for one).
    Option {
        /// What the option type asks.
        action: OptionAction,
        /// The option type octet.
        pointer: usize,
    },
    /// A routing header with segments left: we are a host and forward nothing; type 0
    /// (RFC 5095) and every other type alike (Parameter Problem code 0 at `pointer`, the
    /// routing type).
    Routing {
        /// The Routing Type octet.
        pointer: usize,
    },
    /// A fragment header at `offset`: fragments are refused (and counted), not
    /// reassembled.
    Fragment {
        /// Where the fragment header starts.
        offset: usize,
    },
    /// ESP, AH, a Next Header we do not know, or an upper layer we do not speak
    /// (Parameter Problem code 1 at `pointer`, the Next Header field naming it).
    Unsupported {
        /// The value we do not handle.
        next_header: NextHeader,
        /// The Next Header octet that holds it.
        pointer: usize,
    },
}

impl From<ChainError> for Error {
    fn from(e: ChainError) -> Error {
        match e {
            ChainError::Truncated => Error::Truncated,
            ChainError::TooLong
            | ChainError::HopByHopNotFirst { .. }
            | ChainError::Option { .. }
            | ChainError::Routing { .. } => Error::Malformed,
            ChainError::Fragment { .. } | ChainError::Unsupported { .. } => Error::Unsupported,
        }
    }
}

/// Where the upper layer of a packet starts, found by [`Packet::walk`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Upper {
    /// TCP, UDP, ICMPv6 or No Next Header.
    pub protocol: NextHeader,
    /// Offset of the upper-layer header from the start of the IPv6 header.
    pub offset: usize,
    /// Length of the upper-layer packet (the pseudo-header's length, RFC 8200 §8.1).
    pub len: usize,
    /// Whether a hop-by-hop Router Alert option (RFC 2711) was present: MLD messages
    /// carry one.
    pub router_alert: bool,
}

/// A view of an IPv6 packet.
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

    /// Checks the buffer holds the 40-byte header ([`Error::Truncated`]), the version is
    /// 6 ([`Error::Malformed`]) and the payload length fits in the buffer
    /// ([`Error::Truncated`]). The buffer may be longer (Ethernet padding). A payload
    /// length of 0 is an empty payload: jumbograms (RFC 2675) are not taken.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        if self.version() != 6 {
            return Err(Error::Malformed);
        }
        if HEADER_LEN + usize::from(self.payload_len()) > len {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn word0(&self) -> u32 {
        let b = &self.buffer.as_ref()[field::VER_TC_FLOW];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    /// The version field (6 for a checked packet).
    pub fn version(&self) -> u8 {
        (self.word0() >> 28) as u8
    }

    /// The traffic class (DSCP and ECN).
    pub fn traffic_class(&self) -> u8 {
        (self.word0() >> 20) as u8
    }

    /// The 20-bit flow label.
    pub fn flow_label(&self) -> u32 {
        self.word0() & 0x000f_ffff
    }

    /// The payload length: extension headers and upper layer, in bytes.
    pub fn payload_len(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::LENGTH];
        u16::from_be_bytes([b[0], b[1]])
    }

    /// The first Next Header (an extension header or the upper layer).
    pub fn next_header(&self) -> NextHeader {
        NextHeader::from(self.buffer.as_ref()[field::NXT_HDR])
    }

    /// The hop limit.
    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_LIMIT]
    }

    /// Source address.
    pub fn src_addr(&self) -> Address {
        Address::from_bytes(&self.buffer.as_ref()[field::SRC_ADDR])
    }

    /// Destination address.
    pub fn dst_addr(&self) -> Address {
        Address::from_bytes(&self.buffer.as_ref()[field::DST_ADDR])
    }

    /// The payload: from the end of the fixed header to the payload length (Ethernet
    /// padding cut off), extension headers included.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..HEADER_LEN + usize::from(self.payload_len())]
    }

    /// The upper-layer packet [`walk`](Self::walk) found.
    pub fn upper_payload(&self, upper: &Upper) -> &[u8] {
        let end = HEADER_LEN + usize::from(self.payload_len());
        self.buffer
            .as_ref()
            .get(upper.offset..end)
            .unwrap_or_default()
    }

    /// Follows the Next Header chain from the fixed header to the upper layer. Hop-by-hop
    /// and destination options are skipped unless an option's type asks for the packet
    /// to be dropped; a routing header with segments left 0 is skipped (RFC 8200 §4.4);
    /// everything else stops the walk with its reason. At most [`MAX_EXT_HEADERS`]
    /// headers within the first [`MAX_EXT_LEN`] bytes after the fixed header are read.
    pub fn walk(&self) -> core::result::Result<Upper, ChainError> {
        let payload_end = HEADER_LEN + usize::from(self.payload_len());
        let buf = &self.buffer.as_ref()[..payload_end];
        let limit = payload_end.min(HEADER_LEN + MAX_EXT_LEN);
        let mut nh_at = field::NXT_HDR; // where the current Next Header octet is
        let mut offset = HEADER_LEN; // where the header it names starts
        let mut router_alert = false;
        for count in 0..=MAX_EXT_HEADERS {
            let nh = NextHeader::from(buf[nh_at]);
            match nh {
                NextHeader::Tcp | NextHeader::Udp | NextHeader::Icmpv6 | NextHeader::NoNext => {
                    return Ok(Upper {
                        protocol: nh,
                        offset,
                        len: payload_end - offset,
                        router_alert,
                    });
                }
                NextHeader::HopByHop | NextHeader::DstOpts | NextHeader::Routing => {}
                NextHeader::Fragment => return Err(ChainError::Fragment { offset }),
                _ => {
                    return Err(ChainError::Unsupported {
                        next_header: nh,
                        pointer: nh_at,
                    })
                }
            }
            if count == MAX_EXT_HEADERS {
                return Err(ChainError::TooLong);
            }
            if nh == NextHeader::HopByHop && offset != HEADER_LEN {
                return Err(ChainError::HopByHopNotFirst { pointer: nh_at });
            }
            // Every one of these three starts with Next Header and a length in 8-octet
            // units not counting the first eight.
            let hdr = buf.get(offset..offset + 2).ok_or(ChainError::Truncated)?;
            let len = 8 + 8 * usize::from(hdr[1]);
            let end = offset + len;
            if end > payload_end {
                return Err(ChainError::Truncated);
            }
            if end > limit {
                return Err(ChainError::TooLong);
            }
            let body = &buf[offset..end];
            match nh {
                NextHeader::Routing => {
                    // Routing type at +2, segments left at +3.
                    if body[3] != 0 {
                        return Err(ChainError::Routing {
                            pointer: offset + 2,
                        });
                    }
                }
                _ => {
                    let hop_by_hop = nh == NextHeader::HopByHop;
                    router_alert |= walk_options(&body[2..], offset + 2, hop_by_hop)?;
                }
            }
            nh_at = offset;
            offset = end;
        }
        Err(ChainError::TooLong)
    }

    /// The sum of the upper-layer pseudo-header (RFC 8200 §8.1) for a packet from this
    /// packet's source to its destination.
    pub fn pseudo_header(&self, upper: &Upper) -> u64 {
        checksum::pseudo_header_v6(
            &self.src_addr().0,
            &self.dst_addr().0,
            upper.protocol.into(),
            upper.len as u32,
        )
    }
}

/// Pad1, PadN and Router Alert are the options we recognise.
const OPT_PAD1: u8 = 0;
const OPT_PADN: u8 = 1;
const OPT_ROUTER_ALERT: u8 = 5;

/// Walks the options of a hop-by-hop or destination options header (`opts` starts at
/// `base` in the packet). Returns whether a Router Alert was seen (hop-by-hop only).
fn walk_options(
    opts: &[u8],
    base: usize,
    hop_by_hop: bool,
) -> core::result::Result<bool, ChainError> {
    let mut router_alert = false;
    let mut i = 0;
    while i < opts.len() {
        let kind = opts[i];
        if kind == OPT_PAD1 {
            i += 1;
            continue;
        }
        let len = usize::from(*opts.get(i + 1).ok_or(ChainError::Truncated)?);
        let end = i + 2 + len;
        if end > opts.len() {
            return Err(ChainError::Truncated);
        }
        match kind {
            OPT_PADN => {}
            OPT_ROUTER_ALERT if hop_by_hop && len == 2 => router_alert = true,
            _ => {
                let action = match kind >> 6 {
                    0 => None,
                    1 => Some(OptionAction::Discard),
                    2 => Some(OptionAction::DiscardAndReport),
                    _ => Some(OptionAction::DiscardAndReportUnicast),
                };
                if let Some(action) = action {
                    return Err(ChainError::Option {
                        action,
                        pointer: base + i,
                    });
                }
            }
        }
        i = end;
    }
    Ok(router_alert)
}

/// Writes an 8-byte hop-by-hop header holding a Router Alert option for MLD (value 0,
/// RFC 2711) and a PadN, naming `next_header` after it: what RFC 3810 §5 asks of every
/// MLDv2 message.
///
/// # Panics
/// If `buf` is shorter than [`ROUTER_ALERT_LEN`].
pub fn emit_router_alert(buf: &mut [u8], next_header: NextHeader) {
    buf[..ROUTER_ALERT_LEN].copy_from_slice(&[
        next_header.into(),
        0,
        OPT_ROUTER_ALERT,
        2,
        0,
        0,
        OPT_PADN,
        0,
    ]);
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets version, traffic class and flow label together.
    pub fn set_version_tc_flow(&mut self, version: u8, traffic_class: u8, flow_label: u32) {
        let w = (u32::from(version) << 28)
            | (u32::from(traffic_class) << 20)
            | (flow_label & 0x000f_ffff);
        self.buffer.as_mut()[field::VER_TC_FLOW].copy_from_slice(&w.to_be_bytes());
    }

    /// Sets the payload length.
    pub fn set_payload_len(&mut self, v: u16) {
        self.buffer.as_mut()[field::LENGTH].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the first Next Header.
    pub fn set_next_header(&mut self, v: NextHeader) {
        self.buffer.as_mut()[field::NXT_HDR] = v.into();
    }

    /// Sets the hop limit.
    pub fn set_hop_limit(&mut self, v: u8) {
        self.buffer.as_mut()[field::HOP_LIMIT] = v;
    }

    /// Sets the source address.
    pub fn set_src_addr(&mut self, a: Address) {
        self.buffer.as_mut()[field::SRC_ADDR].copy_from_slice(&a.0);
    }

    /// Sets the destination address.
    pub fn set_dst_addr(&mut self, a: Address) {
        self.buffer.as_mut()[field::DST_ADDR].copy_from_slice(&a.0);
    }

    /// The payload (after the fixed header, up to the payload length), mutable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = HEADER_LEN + usize::from(self.payload_len());
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }
}

/// The fixed header's fields the stack uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    /// Source address.
    pub src_addr: Address,
    /// Destination address.
    pub dst_addr: Address,
    /// The first Next Header.
    pub next_header: NextHeader,
    /// Payload length in bytes (extension headers included).
    pub payload_len: usize,
    /// Hop limit.
    pub hop_limit: u8,
}

impl Repr {
    /// Parses the fixed header: checks the lengths and refuses a multicast source
    /// ([`Error::Malformed`], RFC 4291 §2.7). The extension headers are
    /// [`Packet::walk`]'s.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        if packet.src_addr().is_multicast() {
            return Err(Error::Malformed);
        }
        Ok(Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            next_header: packet.next_header(),
            payload_len: usize::from(packet.payload_len()),
            hop_limit: packet.hop_limit(),
        })
    }

    /// Length of the header [`emit`](Self::emit) writes ([`HEADER_LEN`]).
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the 40-byte fixed header: version 6, traffic class 0, flow label 0, the
    /// payload length, next header, hop limit and addresses. The payload is not touched.
    ///
    /// # Panics
    /// If the buffer is shorter than [`HEADER_LEN`]; in debug builds also if
    /// `payload_len` exceeds 65 535.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        debug_assert!(self.payload_len <= usize::from(u16::MAX));
        packet.set_version_tc_flow(6, 0, 0);
        packet.set_payload_len(self.payload_len as u16);
        packet.set_next_header(self.next_header);
        packet.set_hop_limit(self.hop_limit);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
    }
}

#[cfg(test)]
mod tests;
