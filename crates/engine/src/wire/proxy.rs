//! The PROXY protocol header, versions 1 (text) and 2 (binary): what a load balancer
//! (HAProxy's `send-proxy`, `send-proxy-v2`) puts before the first byte of a connection to
//! say whose connection it relays.
//!
//! Heads up! read HAProxy's doc/proxy-protocol.txt (Willy Tarreau, "The PROXY protocol,
//! versions 1 & 2") whole before changing anything here; the code quotes the sections
//! where it makes a choice.
//!
//! - [`parse`] looks at the bytes received so far at the start of a connection and says
//!   [`Parsed::Complete`] (a [`Repr`] and the header's length), [`Parsed::Partial`] (a
//!   prefix of a header that may still complete: wait for more) or [`Parsed::Error`];
//! - [`Packet`] is the zero-copy view of a version 2 header (`new_checked` checks its
//!   length field against the buffer), and [`Tlvs`] walks its TLVs;
//! - [`has_signature`] says whether bytes begin like a header of either version (how a
//!   header from a source not trusted to send one is recognised, to count it).
//!
//! Limits: a version 1 line is at most [`V1_MAX`] (107) bytes with its CRLF, as §2.1 says
//! ("If the CRLF sequence is not found in the first 107 characters, the receiver should
//! declare the line invalid"); a version 2 header at most [`V2_MAX`] (536) bytes, the
//! smallest TCP segment every host takes, which §2 says both formats are designed to fit
//! in. Anything longer is [`Error::TooLong`]. TLVs are checked for shape (each within the
//! header) and skipped; a `PP2_TYPE_CRC32C` is not verified (§2.2.3 asks that only of a
//! receiver that supports it).
//!
//! The parser borrows the input, never allocates and never panics, whatever the bytes.

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Longest version 1 line, CRLF included (§2.1: the worst case, `UNKNOWN` with IPv6
/// addresses).
pub const V1_MAX: usize = 107;

/// Longest version 2 header accepted, in all (the fixed 16 bytes, addresses and TLVs):
/// 536 bytes, "the smallest TCP segment that any TCP/IP host is required to support"
/// (§2). A larger length field is [`Error::TooLong`].
pub const V2_MAX: usize = 536;

/// The version 2 signature (§2.2): `\r\n\r\n\0\r\nQUIT\n`.
pub const V2_SIGNATURE: [u8; 12] = *b"\r\n\r\n\0\r\nQUIT\n";

/// The start of a version 1 line (§2.1: "PROXY" and exactly one space).
pub const V1_PREFIX: &[u8; 6] = b"PROXY ";

/// Bytes of a version 2 header before its addresses.
pub const V2_HEADER_LEN: usize = field::ADDRESSES;

mod field {
    use core::ops::Range;
    pub const SIGNATURE: Range<usize> = 0..12;
    pub const VER_CMD: usize = 12;
    pub const FAM: usize = 13;
    pub const LEN: Range<usize> = 14..16;
    pub const ADDRESSES: usize = 16;
}

/// Why a header was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// The bytes do not begin with either version's signature: no header at all.
    Missing,
    /// A signature, then something the specification does not allow (a bad version,
    /// command, family, address, port, line end, or a TLV that overruns the header).
    Malformed,
    /// Longer than [`V1_MAX`] (a version 1 line without its CRLF in time) or [`V2_MAX`].
    TooLong,
}

/// The protocol version of a header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// The text line (`PROXY TCP4 …\r\n`).
    V1,
    /// The binary header.
    V2,
}

/// What a header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    /// Which version it was.
    pub version: Version,
    /// The relayed connection's source (the client) and destination, or `None` when the
    /// receiver must use the connection's own addresses: a version 2 `LOCAL` command (the
    /// balancer's own health check), `UNSPEC` or `AF_UNIX` addresses, version 1 `UNKNOWN`.
    pub addresses: Option<(SocketAddr, SocketAddr)>,
}

impl Repr {
    /// The client's address, if the header carries one.
    pub fn source(&self) -> Option<IpAddr> {
        self.addresses.map(|(s, _)| s.ip())
    }
}

/// The result of [`parse`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed {
    /// A whole header of `len` bytes; the connection's own data follows it.
    Complete {
        /// What it says.
        repr: Repr,
        /// Its length on the wire.
        len: usize,
    },
    /// A prefix of a header that may still complete: wait for more bytes (within a
    /// bound: at most [`V2_MAX`] bytes are ever needed).
    Partial,
    /// Not a header, or a bad one: the connection must be closed (§2.1: "Any sequence
    /// which does not exactly match the protocol must be discarded and cause the receiver
    /// to abort the connection").
    Error(Error),
}

/// Whether `buf` begins like a PROXY header of either version (all of `buf` when it is
/// shorter than a signature): `PROXY ` or the version 2 signature.
pub fn has_signature(buf: &[u8]) -> bool {
    prefix_of(buf, V1_PREFIX) || prefix_of(buf, &V2_SIGNATURE)
}

/// Whether `buf` and `sig` agree on their common length, and `buf` is not empty.
fn prefix_of(buf: &[u8], sig: &[u8]) -> bool {
    let n = buf.len().min(sig.len());
    n > 0 && buf[..n] == sig[..n]
}

/// Parses the header at the start of `buf`, the bytes received so far on a connection
/// from a source trusted to send one. Detection follows §2.2: the version 2 signature,
/// else `PROXY` (version 1), else there is no header ([`Error::Missing`]).
pub fn parse(buf: &[u8]) -> Parsed {
    if buf.is_empty() {
        return Parsed::Partial;
    }
    if prefix_of(buf, &V2_SIGNATURE) {
        return parse_v2(buf);
    }
    if prefix_of(buf, V1_PREFIX) {
        return parse_v1(buf);
    }
    Parsed::Error(Error::Missing)
}

fn parse_v2(buf: &[u8]) -> Parsed {
    let packet = match Packet::new_checked(buf) {
        Ok(p) => p,
        Err(Error::Missing) => return Parsed::Partial, // the signature or the length field
        Err(e) => return Parsed::Error(e),
    };
    match packet.repr() {
        Ok(repr) => Parsed::Complete {
            repr,
            len: packet.header_len(),
        },
        Err(e) => Parsed::Error(e),
    }
}

/// A view of a version 2 header (§2.2).
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

/// The version 2 command (§2.2, the low nibble of the 13th byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// The balancer's own connection (a health check): use the real addresses.
    Local,
    /// A relayed connection: the addresses are the client's.
    Proxy,
    /// Any other value (refused: "Receivers must drop connections presenting unexpected
    /// values here").
    Unknown(u8),
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<Packet<T>, Error> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Checks the signature ([`Error::Malformed`] when it differs), the version (2, else
    /// [`Error::Malformed`]) and the length field (at most [`V2_MAX`] in all, else
    /// [`Error::TooLong`]); [`Error::Missing`] when the buffer is shorter than the fixed
    /// part or than the length field says (more bytes may complete it).
    pub fn check_len(&self) -> Result<(), Error> {
        let b = self.buffer.as_ref();
        let sig = b.len().min(field::SIGNATURE.end);
        if b[..sig] != V2_SIGNATURE[..sig] {
            return Err(Error::Malformed);
        }
        // §2.2: "the receiver must only accept this value" (version 2).
        if let Some(&vc) = b.get(field::VER_CMD) {
            if vc >> 4 != 2 {
                return Err(Error::Malformed);
            }
        }
        if b.len() < V2_HEADER_LEN {
            return Err(Error::Missing);
        }
        if self.header_len() > V2_MAX {
            return Err(Error::TooLong);
        }
        if b.len() < self.header_len() {
            return Err(Error::Missing);
        }
        Ok(())
    }

    /// The command.
    pub fn command(&self) -> Command {
        match self.buffer.as_ref()[field::VER_CMD] & 0x0f {
            0 => Command::Local,
            1 => Command::Proxy,
            c => Command::Unknown(c),
        }
    }

    /// The address family and transport byte (`0x11`: TCP over IPv4, …).
    pub fn family(&self) -> u8 {
        self.buffer.as_ref()[field::FAM]
    }

    /// The length field: bytes of addresses and TLVs after the fixed 16.
    pub fn addresses_len(&self) -> usize {
        let b = self.buffer.as_ref();
        usize::from(u16::from_be_bytes([
            b[field::LEN.start],
            b[field::LEN.start + 1],
        ]))
    }

    /// The whole header's length: 16 and the length field.
    pub fn header_len(&self) -> usize {
        V2_HEADER_LEN + self.addresses_len()
    }

    /// The bytes after the fixed part: the address block, then the TLVs.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[V2_HEADER_LEN..self.header_len()]
    }

    /// Bytes of the address block of this family (§2.2: 12 for IPv4, 36 for IPv6, 216 for
    /// AF_UNIX, 0 for UNSPEC), or `None` for a family the specification does not define.
    fn address_block_len(&self) -> Option<usize> {
        match self.family() {
            0x00 => Some(0),
            0x11 | 0x12 => Some(12),
            0x21 | 0x22 => Some(36),
            0x31 | 0x32 => Some(216),
            _ => None,
        }
    }

    /// The TLVs after the address block (§2.2: "the receiver knows how many address
    /// bytes to skip"). Empty for a family without a known address block.
    pub fn tlvs(&self) -> Tlvs<'_> {
        let p = self.payload();
        let skip = self.address_block_len().unwrap_or(p.len()).min(p.len());
        Tlvs { rest: &p[skip..] }
    }

    /// What the header says.
    pub fn repr(&self) -> Result<Repr, Error> {
        let p = self.payload();
        let local = Repr {
            version: Version::V2,
            addresses: None,
        };
        match self.command() {
            // §2.2: LOCAL: "the receiver must accept this connection as valid and must use
            // the real connection endpoints and discard the protocol block including the
            // family which is ignored".
            Command::Local => return Ok(local),
            Command::Proxy => {}
            Command::Unknown(_) => return Err(Error::Malformed),
        }
        // "other values are unspecified … and must be rejected as invalid by receivers".
        let block = self.address_block_len().ok_or(Error::Malformed)?;
        let addr = p.get(..block).ok_or(Error::Malformed)?;
        if self.tlvs().any(|t| t.is_err()) {
            return Err(Error::Malformed);
        }
        let port = |at: usize| u16::from_be_bytes([addr[at], addr[at + 1]]);
        let addresses = match block {
            12 => {
                let ip =
                    |at: usize| Ipv4Addr::new(addr[at], addr[at + 1], addr[at + 2], addr[at + 3]);
                Some((
                    SocketAddr::new(IpAddr::V4(ip(0)), port(8)),
                    SocketAddr::new(IpAddr::V4(ip(4)), port(10)),
                ))
            }
            36 => {
                let ip = |at: usize| {
                    let mut a = [0u8; 16];
                    a.copy_from_slice(&addr[at..at + 16]);
                    Ipv6Addr::from(a)
                };
                Some((
                    SocketAddr::new(IpAddr::V6(ip(0)), port(32)),
                    SocketAddr::new(IpAddr::V6(ip(16)), port(34)),
                ))
            }
            // UNSPEC ("The receiver should ignore address information") and AF_UNIX
            // (no IP address to use): the connection's own.
            _ => None,
        };
        Ok(Repr { addresses, ..local })
    }
}

/// One TLV of a version 2 header (§2.2: a type byte, a two-byte length, the value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tlv<'a> {
    /// `PP2_TYPE_*` (`0x01` ALPN, `0x02` authority, `0x03` CRC32C, `0x04` NOOP, …).
    pub kind: u8,
    /// The value.
    pub value: &'a [u8],
}

/// The TLVs of a version 2 header, in order; an item is `Err` (and the last) when a TLV
/// runs past the header.
#[derive(Debug, Clone)]
pub struct Tlvs<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Tlvs<'a> {
    type Item = Result<Tlv<'a>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let r = self.rest;
        self.rest = &[];
        let (&kind, len) = match r {
            [k, hi, lo, ..] => (k, usize::from(u16::from_be_bytes([*hi, *lo]))),
            _ => return Some(Err(Error::Malformed)),
        };
        let value = r.get(3..3 + len).ok_or(Error::Malformed);
        Some(value.map(|value| {
            self.rest = &r[3 + len..];
            Tlv { kind, value }
        }))
    }
}

fn parse_v1(buf: &[u8]) -> Parsed {
    // §2.1: "The receiver must wait for the CRLF sequence before starting to decode the
    // addresses", "must not tolerate a single CR or LF character to end the line", and
    // "If the CRLF sequence is not found in the first 107 characters, the receiver should
    // declare the line invalid".
    let window = &buf[..buf.len().min(V1_MAX)];
    let mut end = None;
    for (i, &b) in window.iter().enumerate() {
        match b {
            b'\r' => match window.get(i + 1) {
                Some(b'\n') => {
                    end = Some(i);
                    break;
                }
                Some(_) => return Parsed::Error(Error::Malformed),
                None => {}
            },
            b'\n' => return Parsed::Error(Error::Malformed),
            // US-ASCII printable only.
            0x20..=0x7e => {}
            _ => return Parsed::Error(Error::Malformed),
        }
    }
    let Some(end) = end else {
        return if buf.len() >= V1_MAX {
            Parsed::Error(Error::TooLong)
        } else {
            Parsed::Partial
        };
    };
    match v1_line(&buf[V1_PREFIX.len()..end]) {
        Some(addresses) => Parsed::Complete {
            repr: Repr {
                version: Version::V1,
                addresses,
            },
            len: end + 2,
        },
        None => Parsed::Error(Error::Malformed),
    }
}

/// The line after `PROXY ` and before the CRLF: `TCP4 a b p q`, `TCP6 a b p q` or
/// `UNKNOWN` and anything. `None` when it is none of these.
fn v1_line(line: &[u8]) -> Option<Option<(SocketAddr, SocketAddr)>> {
    // §2.1: for "UNKNOWN", "the receiver must ignore anything presented before the CRLF".
    if line == b"UNKNOWN" || line.starts_with(b"UNKNOWN ") {
        return Some(None);
    }
    let line = core::str::from_utf8(line).ok()?;
    // Exactly one space between fields: an empty field (two spaces) fails below.
    let mut f = line.split(' ');
    let (proto, src, dst, sport, dport) = (f.next()?, f.next()?, f.next()?, f.next()?, f.next()?);
    if f.next().is_some() {
        return None;
    }
    let (src, dst): (IpAddr, IpAddr) = match proto {
        // Rust's IPv4 parser takes exactly four decimal numbers of 0 to 255 without
        // leading zeroes: the canonical form §2.1 asks for.
        "TCP4" => (
            src.parse::<Ipv4Addr>().ok()?.into(),
            dst.parse::<Ipv4Addr>().ok()?.into(),
        ),
        "TCP6" => (
            src.parse::<Ipv6Addr>().ok()?.into(),
            dst.parse::<Ipv6Addr>().ok()?.into(),
        ),
        _ => return None,
    };
    Some(Some((
        SocketAddr::new(src, v1_port(sport)?),
        SocketAddr::new(dst, v1_port(dport)?),
    )))
}

/// A decimal port, 0 to 65535, without leading zeroes (§2.1).
fn v1_port(s: &str) -> Option<u16> {
    let b = s.as_bytes();
    if b.is_empty() || b.len() > 5 || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if b.len() > 1 && b[0] == b'0' {
        return None;
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests;
