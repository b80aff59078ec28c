//! DNS messages (RFC 1035 §4) as far as a stub resolver needs them: a query for one name
//! and one address type written, and a response read against the question that was asked.
//!
//! The response reader trusts nothing. Every offset is checked before it is read, a
//! compression pointer must point strictly before the name that uses it (so pointers
//! cannot loop) and past the header, and names are bounded by RFC 1035's 255 octets. A
//! response to another question or with another ID, or too short or broken to tell, is
//! [`Error::NotOurs`]: the resolver drops it as RFC 5452 asks, rather than let it end
//! the query. A label holding a dot or another byte no host name has matches no name. Addresses are taken only from records owned
//! by the name asked for or by the end of its CNAME chain (at most [`MAX_CHAIN`] links),
//! so a server cannot slip in an address for another name. TTLs above 2^31 - 1 count as
//! 0 (RFC 2181 §8). A negative answer's TTL is the SOA's, as RFC 2308 §5 says, and 0 with
//! no SOA.
//!
//! Queries carry no EDNS option, so answers are at most 512 octets (RFC 1035 §4.2.1): an
//! A or AAAA answer for one name fits. A truncated answer (TC) is [`Error::Truncated`];
//! there is no retry over TCP.

use crate::wire::ipv6::mapped;
use crate::wire::Ipv6Address;

/// The DNS server port.
pub const PORT: u16 = 53;
/// The fixed header's length.
pub const HEADER_LEN: usize = 12;
/// The largest message over UDP without EDNS (RFC 1035 §4.2.1).
pub const MAX_MESSAGE: usize = 512;
/// A name's longest text form, without the final dot (255 octets on the wire).
pub const MAX_NAME: usize = 253;
/// CNAME links followed from the name asked for.
pub const MAX_CHAIN: usize = 8;
/// Addresses kept from one answer.
pub const MAX_ADDRS: usize = 4;
/// Compression pointers followed in one name (each must point backwards anyway).
const MAX_JUMPS: usize = 32;

const TYPE_CNAME: u16 = 5;
const TYPE_SOA: u16 = 6;
const CLASS_IN: u16 = 1;
/// Flags of a query: a standard query, recursion desired.
const FLAGS_QUERY: u16 = 0x0100;

/// The address types asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    /// IPv4 (type 1).
    A,
    /// IPv6 (type 28, RFC 3596).
    Aaaa,
}

impl Type {
    /// The type's number on the wire.
    pub fn code(self) -> u16 {
        match self {
            Type::A => 1,
            Type::Aaaa => 28,
        }
    }

    fn rdata_len(self) -> usize {
        match self {
            Type::A => 4,
            Type::Aaaa => 16,
        }
    }
}

/// Why a name was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameError {
    /// Empty, longer than 253 characters, or with an empty label.
    Length,
    /// A label longer than 63 characters.
    Label,
    /// A character other than a letter, digit, hyphen or underscore.
    Character,
}

/// A host name, checked and lower-cased: labels of letters, digits, hyphens and
/// underscores, separated by dots, no final dot.
#[derive(Clone, Copy)]
pub struct Name {
    len: u8,
    text: [u8; MAX_NAME],
}

impl Name {
    /// No name (a free slot's).
    pub(super) const EMPTY: Name = Name {
        len: 0,
        text: [0; MAX_NAME],
    };

    /// `text` checked; one final dot is allowed and dropped.
    pub fn new(text: &str) -> Result<Name, NameError> {
        let t = text.strip_suffix('.').unwrap_or(text).as_bytes();
        if t.is_empty() || t.len() > MAX_NAME {
            return Err(NameError::Length);
        }
        let mut n = Name {
            len: t.len() as u8,
            text: [0; MAX_NAME],
        };
        for label in t.split(|&b| b == b'.') {
            if label.is_empty() {
                return Err(NameError::Length);
            }
            if label.len() > 63 {
                return Err(NameError::Label);
            }
            if !label
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_')
            {
                return Err(NameError::Character);
            }
        }
        for (d, s) in n.text.iter_mut().zip(t) {
            *d = s.to_ascii_lowercase();
        }
        Ok(n)
    }

    /// The name's text (lower case, no final dot).
    pub fn as_str(&self) -> &str {
        // Only ASCII was stored.
        core::str::from_utf8(self.bytes()).unwrap_or("")
    }

    fn bytes(&self) -> &[u8] {
        &self.text[..self.len as usize]
    }

    /// The name's labels.
    fn labels(&self) -> impl Iterator<Item = &[u8]> {
        self.bytes().split(|&b| b == b'.')
    }

    /// The length of its wire form: a length octet per label, the labels, the root.
    fn wire_len(&self) -> usize {
        self.len as usize + 2
    }
}

impl PartialEq for Name {
    fn eq(&self, other: &Name) -> bool {
        self.bytes() == other.bytes()
    }
}

impl Eq for Name {}

impl core::fmt::Debug for Name {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The query for `name`'s `qtype` addresses with transaction `id`, written to the front
/// of `buf`; its length, or `None` if `buf` is too short.
pub fn write_query(id: u16, name: &Name, qtype: Type, buf: &mut [u8]) -> Option<usize> {
    let len = HEADER_LEN + name.wire_len() + 4;
    let out = buf.get_mut(..len)?;
    out[..HEADER_LEN].fill(0);
    out[0..2].copy_from_slice(&id.to_be_bytes());
    out[2..4].copy_from_slice(&FLAGS_QUERY.to_be_bytes());
    out[4..6].copy_from_slice(&1u16.to_be_bytes());
    let mut at = HEADER_LEN;
    for label in name.labels() {
        out[at] = label.len() as u8;
        out[at + 1..at + 1 + label.len()].copy_from_slice(label);
        at += 1 + label.len();
    }
    out[at] = 0;
    out[at + 1..at + 3].copy_from_slice(&qtype.code().to_be_bytes());
    out[at + 3..at + 5].copy_from_slice(&CLASS_IN.to_be_bytes());
    Some(len)
}

/// Why a response gave no addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// Not a response to this query (another ID, not a response, another question, a
    /// query rather than an answer): dropped, the query goes on waiting.
    NotOurs,
    /// Cut short, a bad name or pointer, a record running past the end.
    Malformed,
    /// The server set TC: the answer did not fit in 512 octets.
    Truncated,
    /// The server failed (RCODE other than 0 and 3: SERVFAIL, REFUSED, ...).
    Server(u8),
    /// The name does not exist (NXDOMAIN), or has no address of this type (NODATA).
    /// The TTL is how long that may be believed (RFC 2308).
    NoAddress {
        /// Seconds the negative answer may be cached.
        ttl: u32,
    },
}

/// The addresses of an answer (IPv4 ones IPv4-mapped) and how long they may be kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    /// The addresses, `count` of them, in the order the server gave.
    pub addrs: [Ipv6Address; MAX_ADDRS],
    /// How many of `addrs` are set.
    pub count: usize,
    /// The least TTL of the records used, in seconds.
    pub ttl: u32,
}

impl Answer {
    /// The addresses.
    pub fn addresses(&self) -> &[Ipv6Address] {
        &self.addrs[..self.count]
    }
}

fn u16_at(m: &[u8], at: usize) -> Result<u16, Error> {
    match m.get(at..at + 2) {
        Some(b) => Ok(u16::from_be_bytes([b[0], b[1]])),
        None => Err(Error::Malformed),
    }
}

fn u32_at(m: &[u8], at: usize) -> Result<u32, Error> {
    match m.get(at..at + 4) {
        Some(b) => Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]])),
        None => Err(Error::Malformed),
    }
}

/// The name at `at` read into `out` (labels joined by dots, lower case); returns the
/// offset just past the name where it is written (a pointer ends it), its length, and
/// whether every label holds only what a [`Name`] may (letters, digits, `-`, `_`): a
/// label with a dot or any other byte can never equal a name asked for.
fn read_name(m: &[u8], at: usize, out: &mut [u8; 255]) -> Result<(usize, usize, bool), Error> {
    let mut pos = at;
    let mut end = None;
    let mut len = 0usize;
    let mut jumps = 0;
    let mut clean = true;
    // Every pointer must point before the label that holds it, so positions only fall
    // after a jump and the walk ends.
    let mut floor = at;
    loop {
        let b = *m.get(pos).ok_or(Error::Malformed)?;
        match b & 0xC0 {
            0x00 if b == 0 => {
                return Ok((end.unwrap_or(pos + 1), len, clean));
            }
            0x00 => {
                let l = b as usize;
                let label = m.get(pos + 1..pos + 1 + l).ok_or(Error::Malformed)?;
                let extra = if len == 0 { l } else { l + 1 };
                if len + extra > MAX_NAME {
                    return Err(Error::Malformed);
                }
                if len != 0 {
                    out[len] = b'.';
                    len += 1;
                }
                for (d, s) in out[len..len + l].iter_mut().zip(label) {
                    clean &= s.is_ascii_alphanumeric() || *s == b'-' || *s == b'_';
                    *d = s.to_ascii_lowercase();
                }
                len += l;
                pos += 1 + l;
            }
            0xC0 => {
                let target = (u16_at(m, pos)? & 0x3FFF) as usize;
                jumps += 1;
                // Never into the header, never forward: the walk ends.
                if target >= floor || target < HEADER_LEN || jumps > MAX_JUMPS {
                    return Err(Error::Malformed);
                }
                if end.is_none() {
                    end = Some(pos + 2);
                }
                floor = target;
                pos = target;
            }
            _ => return Err(Error::Malformed),
        }
    }
}

/// Whether the name at `at` is `name`, and the offset past it.
fn name_at(m: &[u8], at: usize, name: &[u8]) -> Result<(bool, usize), Error> {
    let mut buf = [0u8; 255];
    let (end, len, clean) = read_name(m, at, &mut buf)?;
    Ok((clean && &buf[..len] == name, end))
}

/// One resource record's fixed fields and where its data lies.
struct Record {
    owner_at: usize,
    rtype: u16,
    class: u16,
    ttl: u32,
    data: core::ops::Range<usize>,
}

/// Where the section of `count` records starting at `at` ends, each record checked to
/// lie within the message.
fn section_end(m: &[u8], mut at: usize, count: usize) -> Result<usize, Error> {
    for _ in 0..count {
        at = record(m, at)?.data.end;
    }
    Ok(at)
}

/// The record at `at`.
fn record(m: &[u8], at: usize) -> Result<Record, Error> {
    let mut scratch = [0u8; 255];
    let (fixed, _, _) = read_name(m, at, &mut scratch)?;
    let rtype = u16_at(m, fixed)?;
    let class = u16_at(m, fixed + 2)?;
    let ttl = u32_at(m, fixed + 4)?;
    let rdlen = u16_at(m, fixed + 8)? as usize;
    let start = fixed + 10;
    if start + rdlen > m.len() {
        return Err(Error::Malformed);
    }
    Ok(Record {
        owner_at: at,
        rtype,
        class,
        ttl: if ttl > i32::MAX as u32 { 0 } else { ttl },
        data: start..start + rdlen,
    })
}

/// Reads the response `m` to the query with `id` for `name`'s `qtype` addresses.
pub fn read_response(m: &[u8], id: u16, name: &Name, qtype: Type) -> Result<Answer, Error> {
    // Until the ID and question are known to be ours, nothing may end the query: a
    // message too short to say, or whose question does not read, is not ours.
    if m.len() < HEADER_LEN {
        return Err(Error::NotOurs);
    }
    let flags = u16_at(m, 2)?;
    let qr = flags & 0x8000 != 0;
    let opcode = (flags >> 11) & 0xF;
    if u16_at(m, 0)? != id || !qr || opcode != 0 {
        return Err(Error::NotOurs);
    }
    let qd = u16_at(m, 4)?;
    let an = u16_at(m, 6)? as usize;
    let ns = u16_at(m, 8)? as usize;
    // The question must be ours (RFC 5452 §9.1): one entry, our name, type and class.
    if qd != 1 {
        return Err(Error::NotOurs);
    }
    let (same, after) = name_at(m, HEADER_LEN, name.bytes()).map_err(|_| Error::NotOurs)?;
    if !same
        || u16_at(m, after).ok() != Some(qtype.code())
        || u16_at(m, after + 2).ok() != Some(CLASS_IN)
    {
        return Err(Error::NotOurs);
    }
    if flags & 0x0200 != 0 {
        return Err(Error::Truncated);
    }
    let rcode = (flags & 0xF) as u8;
    let answers_at = after + 4;
    // Every record of the answer and authority sections must lie within the message.
    let authority_at = section_end(m, answers_at, an)?;
    section_end(m, authority_at, ns)?;
    match rcode {
        0 | 3 => {}
        other => return Err(Error::Server(other)),
    }

    // The CNAME chain from the name asked for.
    let mut target = [0u8; 255];
    let mut target_len = name.bytes().len();
    target[..target_len].copy_from_slice(name.bytes());
    let mut ttl = u32::MAX;
    let mut links = 0;
    'chain: loop {
        let mut at = answers_at;
        for _ in 0..an {
            let r = record(m, at)?;
            at = r.data.end;
            if r.rtype == TYPE_CNAME && r.class == CLASS_IN {
                let (owned, _) = name_at(m, r.owner_at, &target[..target_len])?;
                if owned {
                    links += 1;
                    if links > MAX_CHAIN {
                        return Err(Error::Malformed);
                    }
                    let mut next = [0u8; 255];
                    let (end, len, clean) = read_name(m, r.data.start, &mut next)?;
                    if end != r.data.end || len == 0 || !clean {
                        return Err(Error::Malformed);
                    }
                    target = next;
                    target_len = len;
                    ttl = ttl.min(r.ttl);
                    continue 'chain;
                }
            }
        }
        break;
    }

    let mut answer = Answer {
        addrs: [Ipv6Address([0; 16]); MAX_ADDRS],
        count: 0,
        ttl,
    };
    let mut addr_ttl = u32::MAX;
    if rcode == 0 {
        let mut at = answers_at;
        for _ in 0..an {
            let r = record(m, at)?;
            at = r.data.end;
            if r.rtype != qtype.code() || r.class != CLASS_IN {
                continue;
            }
            if !name_at(m, r.owner_at, &target[..target_len])?.0 {
                continue;
            }
            if r.data.len() != qtype.rdata_len() {
                return Err(Error::Malformed);
            }
            let d = &m[r.data.clone()];
            let a = match qtype {
                Type::A => Ipv6Address(mapped([d[0], d[1], d[2], d[3]])),
                Type::Aaaa => {
                    let mut b = [0u8; 16];
                    b.copy_from_slice(d);
                    Ipv6Address(b)
                }
            };
            addr_ttl = addr_ttl.min(r.ttl);
            if answer.count < MAX_ADDRS && !answer.addresses().contains(&a) {
                answer.addrs[answer.count] = a;
                answer.count += 1;
            }
        }
    }
    if answer.count > 0 {
        answer.ttl = ttl.min(addr_ttl);
        return Ok(answer);
    }
    // NXDOMAIN, or NODATA: the SOA of the authority section says for how long.
    let mut neg = 0;
    let mut at = authority_at;
    for _ in 0..ns {
        let r = record(m, at)?;
        at = r.data.end;
        if r.rtype == TYPE_SOA && r.class == CLASS_IN {
            // MNAME, RNAME, then SERIAL REFRESH RETRY EXPIRE MINIMUM.
            let mut scratch = [0u8; 255];
            let (after_m, _, _) = read_name(m, r.data.start, &mut scratch)?;
            let (after_r, _, _) = read_name(m, after_m, &mut scratch)?;
            if after_r + 20 != r.data.end {
                return Err(Error::Malformed);
            }
            let minimum = u32_at(m, after_r + 16)?;
            neg = r.ttl.min(minimum).min(i32::MAX as u32);
            break;
        }
    }
    Err(Error::NoAddress { ttl: neg.min(ttl) })
}

#[cfg(test)]
mod tests;
