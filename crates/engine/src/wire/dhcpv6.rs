//! DHCPv6 messages (RFC 8415), the client's side: a checked parser of what servers send
//! (Advertise, Reply) into a [`ServerMessage`], and a builder of what the client sends
//! (Solicit, Request, Renew, Rebind, Information-request).
//!
//! Heads up! read RFC 8415 §8 (the message format: type, 3-octet transaction id, then
//! options), §21 (options: code and length, 16 bits each), §21.4 and §21.6 (IA_NA and its
//! IA Address options, which nest options of their own), §21.13 (Status Code) and RFC 3646
//! (DNS Recursive Name Server, option 23).
//!
//! What is kept of a server's message: its type and transaction id; the Client and Server
//! Identifiers (DUIDs of at most [`MAX_DUID`] octets); the first IA_NA, with the first of
//! its addresses that has a non-zero valid lifetime and no error status; the message's
//! and the IA_NA's status codes; the preference; up to [`MAX_DNS`] DNS servers; the
//! information refresh time, SOL_MAX_RT and INF_MAX_RT. Everything else (unknown options, further
//! IA_NAs, the status messages' text) is stepped over. A walk over options is bounded by
//! the bytes it is given (every option takes four octets at least), and an option whose
//! length runs past its container refuses the whole message ([`Error::Truncated`]).

use super::ipv6::Address as Ipv6Address;
use super::{Error, Result};

/// UDP port the client listens on.
pub const CLIENT_PORT: u16 = 546;
/// UDP port servers and relays listen on.
pub const SERVER_PORT: u16 = 547;
/// All_DHCP_Relay_Agents_and_Servers (ff02::1:2), where the client sends.
pub const ALL_SERVERS: Ipv6Address = Ipv6Address::new(0xff02, 0, 0, 0, 0, 0, 1, 2);
/// A DUID's longest (RFC 8415 §11.1: 128 octets of identifier and its 2-octet type).
pub const MAX_DUID: usize = 130;
/// DNS servers kept from one message.
pub const MAX_DNS: usize = 3;
/// The longest message [`emit`] writes (a DUID-LL client identifier, the longest server
/// identifier, an IA_NA with one address, the option request and elapsed time).
pub const MAX_EMIT: usize = 4 + (4 + 10) + (4 + MAX_DUID) + (4 + 12 + 4 + 24) + (4 + 4) + (4 + 2);

/// Message types (RFC 8415 §7.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum MessageType {
    /// A client looks for servers.
    Solicit = 1,
    /// A server offers itself.
    Advertise = 2,
    /// A client asks the server it chose for the addresses offered.
    Request = 3,
    /// A client extends its lease with the server that gave it.
    Renew = 5,
    /// A client extends its lease with any server.
    Rebind = 6,
    /// A server answers.
    Reply = 7,
    /// A client asks for configuration without addresses.
    InformationRequest = 11,
}

/// Option codes used here.
pub mod option {
    /// Client Identifier.
    pub const CLIENTID: u16 = 1;
    /// Server Identifier.
    pub const SERVERID: u16 = 2;
    /// Identity Association for Non-temporary Addresses.
    pub const IA_NA: u16 = 3;
    /// IA Address.
    pub const IAADDR: u16 = 5;
    /// Option Request.
    pub const ORO: u16 = 6;
    /// Preference.
    pub const PREFERENCE: u16 = 7;
    /// Elapsed Time.
    pub const ELAPSED_TIME: u16 = 8;
    /// Status Code.
    pub const STATUS_CODE: u16 = 13;
    /// DNS Recursive Name Server (RFC 3646).
    pub const DNS_SERVERS: u16 = 23;
    /// Information Refresh Time.
    pub const INFORMATION_REFRESH_TIME: u16 = 32;
    /// SOL_MAX_RT.
    pub const SOL_MAX_RT: u16 = 82;
    /// INF_MAX_RT.
    pub const INF_MAX_RT: u16 = 83;
}

/// Status codes (RFC 8415 §21.13) a client acts on.
pub mod status {
    /// Success.
    pub const SUCCESS: u16 = 0;
    /// The server has no addresses for this IA.
    pub const NO_ADDRS_AVAIL: u16 = 2;
    /// The server has no binding for this IA (Renew, Rebind).
    pub const NO_BINDING: u16 = 3;
    /// The server wants the client to use multicast.
    pub const USE_MULTICAST: u16 = 5;
}

/// A DUID (RFC 8415 §11), as opaque octets.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Duid {
    len: u8,
    bytes: [u8; MAX_DUID],
}

impl core::fmt::Debug for Duid {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Duid(")?;
        for b in self.as_bytes() {
            write!(f, "{b:02x}")?;
        }
        write!(f, ")")
    }
}

impl Duid {
    /// A DUID-LL (type 3, hardware type 1: Ethernet) from a MAC (RFC 8415 §11.4).
    pub fn link_layer(mac: [u8; 6]) -> Duid {
        let mut d = Duid {
            len: 10,
            bytes: [0; MAX_DUID],
        };
        d.bytes[..4].copy_from_slice(&[0, 3, 0, 1]);
        d.bytes[4..10].copy_from_slice(&mac);
        d
    }

    /// `b` as a DUID: 2 to [`MAX_DUID`] octets.
    pub fn from_bytes(b: &[u8]) -> Result<Duid> {
        if b.len() < 2 || b.len() > MAX_DUID {
            return Err(Error::Malformed);
        }
        let mut d = Duid {
            len: b.len() as u8,
            bytes: [0; MAX_DUID],
        };
        d.bytes[..b.len()].copy_from_slice(b);
        Ok(d)
    }

    /// Its octets.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// An IA Address option's address and lifetimes (seconds; `u32::MAX`: infinity).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IaAddress {
    /// The address.
    pub addr: Ipv6Address,
    /// Preferred lifetime.
    pub preferred: u32,
    /// Valid lifetime.
    pub valid: u32,
}

/// An IA_NA as a server sent it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IaNa {
    /// Its identifier (the client's choice, echoed).
    pub iaid: u32,
    /// When to renew, seconds from now (0: the client chooses).
    pub t1: u32,
    /// When to rebind, seconds from now (0: the client chooses).
    pub t2: u32,
    /// The first address offered with a non-zero valid lifetime, a preferred lifetime not
    /// above it and no error status.
    pub addr: Option<IaAddress>,
    /// The first address given a valid lifetime of 0: the server takes it back (RFC 8415
    /// §18.2.10.1).
    pub revoked: Option<Ipv6Address>,
    /// The IA's own status code, when it carries one.
    pub status: Option<u16>,
}

/// What a server sent, as far as a client uses it (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerMessage {
    /// Advertise or Reply.
    pub kind: MessageType,
    /// The transaction it answers.
    pub xid: [u8; 3],
    /// Whose request it answers.
    pub client_id: Option<Duid>,
    /// The server.
    pub server_id: Option<Duid>,
    /// The first IA_NA.
    pub ia_na: Option<IaNa>,
    /// The message's status code, when it carries one.
    pub status: Option<u16>,
    /// The server's preference (0 when absent).
    pub preference: u8,
    /// DNS servers, in the server's order.
    pub dns: [Option<Ipv6Address>; MAX_DNS],
    /// Information Refresh Time, seconds.
    pub info_refresh: Option<u32>,
    /// SOL_MAX_RT, seconds.
    pub sol_max_rt: Option<u32>,
    /// INF_MAX_RT, seconds.
    pub inf_max_rt: Option<u32>,
}

/// The options in `b`, each as (code, body); `Err(Truncated)` for one that runs past `b`.
/// Bounded: each step consumes at least four octets.
fn options(b: &[u8]) -> impl Iterator<Item = Result<(u16, &[u8])>> {
    let mut rest = b;
    core::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        if rest.len() < 4 {
            rest = &[];
            return Some(Err(Error::Truncated));
        }
        let code = u16::from_be_bytes([rest[0], rest[1]]);
        let len = usize::from(u16::from_be_bytes([rest[2], rest[3]]));
        let Some(body) = rest.get(4..4 + len) else {
            rest = &[];
            return Some(Err(Error::Truncated));
        };
        rest = &rest[4 + len..];
        Some(Ok((code, body)))
    })
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// A Status Code option's code (its message text is stepped over).
fn status_of(body: &[u8]) -> Result<u16> {
    match body {
        [a, b, ..] => Ok(u16::from_be_bytes([*a, *b])),
        _ => Err(Error::Malformed),
    }
}

/// An IA Address option: the address, lifetimes, and its own status (nested options).
fn ia_address(body: &[u8]) -> Result<(IaAddress, Option<u16>)> {
    if body.len() < 24 {
        return Err(Error::Malformed);
    }
    let mut a = [0u8; 16];
    a.copy_from_slice(&body[..16]);
    let addr = IaAddress {
        addr: Ipv6Address(a),
        preferred: be32(&body[16..20]),
        valid: be32(&body[20..24]),
    };
    let mut st = None;
    for o in options(&body[24..]) {
        let (code, b) = o?;
        if code == option::STATUS_CODE && st.is_none() {
            st = Some(status_of(b)?);
        }
    }
    Ok((addr, st))
}

/// An IA_NA option.
fn ia_na(body: &[u8]) -> Result<IaNa> {
    if body.len() < 12 {
        return Err(Error::Malformed);
    }
    let mut ia = IaNa {
        iaid: be32(&body[..4]),
        t1: be32(&body[4..8]),
        t2: be32(&body[8..12]),
        addr: None,
        revoked: None,
        status: None,
    };
    for o in options(&body[12..]) {
        let (code, b) = o?;
        match code {
            option::IAADDR => {
                let (a, st) = ia_address(b)?;
                let ok = st.is_none_or(|s| s == status::SUCCESS);
                let usable = ok && a.valid != 0 && a.preferred <= a.valid;
                if usable && ia.addr.is_none() {
                    ia.addr = Some(a);
                }
                if a.valid == 0 && ia.revoked.is_none() {
                    ia.revoked = Some(a.addr);
                }
            }
            option::STATUS_CODE if ia.status.is_none() => ia.status = Some(status_of(b)?),
            _ => {}
        }
    }
    Ok(ia)
}

/// Parses a server's message (the UDP payload). Only Advertise and Reply are taken
/// ([`Error::Unsupported`] for any other type); see the module doc for what is kept.
pub fn parse(b: &[u8]) -> Result<ServerMessage> {
    if b.len() < 4 {
        return Err(Error::Truncated);
    }
    let kind = match b[0] {
        2 => MessageType::Advertise,
        7 => MessageType::Reply,
        _ => return Err(Error::Unsupported),
    };
    let mut m = ServerMessage {
        kind,
        xid: [b[1], b[2], b[3]],
        client_id: None,
        server_id: None,
        ia_na: None,
        status: None,
        preference: 0,
        dns: [None; MAX_DNS],
        info_refresh: None,
        sol_max_rt: None,
        inf_max_rt: None,
    };
    for o in options(&b[4..]) {
        let (code, body) = o?;
        match code {
            option::CLIENTID if m.client_id.is_none() => {
                m.client_id = Some(Duid::from_bytes(body)?)
            }
            option::SERVERID if m.server_id.is_none() => {
                m.server_id = Some(Duid::from_bytes(body)?)
            }
            option::IA_NA if m.ia_na.is_none() => m.ia_na = Some(ia_na(body)?),
            option::STATUS_CODE if m.status.is_none() => m.status = Some(status_of(body)?),
            option::PREFERENCE => m.preference = *body.first().ok_or(Error::Malformed)?,
            option::DNS_SERVERS => {
                if body.len() % 16 != 0 {
                    return Err(Error::Malformed);
                }
                for (slot, a) in m.dns.iter_mut().zip(body.chunks_exact(16)) {
                    let mut x = [0u8; 16];
                    x.copy_from_slice(a);
                    *slot = Some(Ipv6Address(x));
                }
            }
            option::INFORMATION_REFRESH_TIME if body.len() == 4 => {
                m.info_refresh = Some(be32(body));
            }
            option::SOL_MAX_RT if body.len() == 4 => m.sol_max_rt = Some(be32(body)),
            option::INF_MAX_RT if body.len() == 4 => m.inf_max_rt = Some(be32(body)),
            _ => {}
        }
    }
    Ok(m)
}

/// A client's message to build ([`emit`]).
#[derive(Debug, Clone, Copy)]
pub struct ClientMessage<'a> {
    /// Solicit, Request, Renew, Rebind or Information-request.
    pub kind: MessageType,
    /// Its transaction id.
    pub xid: [u8; 3],
    /// Our DUID.
    pub client_id: &'a Duid,
    /// The server chosen (Request, Renew).
    pub server_id: Option<&'a Duid>,
    /// An IA_NA: its IAID and the address asked for (none in a Solicit). T1 and T2 are
    /// sent as 0 (the server chooses, RFC 8415 §21.4).
    pub ia_na: Option<(u32, Option<Ipv6Address>)>,
    /// Time since the exchange began, in hundredths of a second (saturating at 0xffff).
    pub elapsed_cs: u16,
}

/// Writes `m` into `out` (at least [`MAX_EMIT`] octets); returns its length, or `None`
/// when `out` is too short. The option request asks for DNS servers, and in an
/// Information-request for the refresh time too.
pub fn emit(m: &ClientMessage<'_>, out: &mut [u8]) -> Option<usize> {
    let mut w = Writer { out, at: 0 };
    w.put(&[m.kind as u8, m.xid[0], m.xid[1], m.xid[2]])?;
    w.option(option::CLIENTID, m.client_id.as_bytes())?;
    if let Some(s) = m.server_id {
        w.option(option::SERVERID, s.as_bytes())?;
    }
    if let Some((iaid, addr)) = m.ia_na {
        let len: u16 = if addr.is_some() { 12 + 28 } else { 12 };
        w.put(&option::IA_NA.to_be_bytes())?;
        w.put(&len.to_be_bytes())?;
        w.put(&iaid.to_be_bytes())?;
        w.put(&[0; 8])?;
        if let Some(a) = addr {
            w.put(&option::IAADDR.to_be_bytes())?;
            w.put(&24u16.to_be_bytes())?;
            w.put(a.as_bytes())?;
            w.put(&[0; 8])?;
        }
    }
    if m.kind == MessageType::InformationRequest {
        let mut oro = [0u8; 4];
        oro[..2].copy_from_slice(&option::DNS_SERVERS.to_be_bytes());
        oro[2..].copy_from_slice(&option::INFORMATION_REFRESH_TIME.to_be_bytes());
        w.option(option::ORO, &oro)?;
    } else {
        w.option(option::ORO, &option::DNS_SERVERS.to_be_bytes())?;
    }
    w.option(option::ELAPSED_TIME, &m.elapsed_cs.to_be_bytes())?;
    Some(w.at)
}

struct Writer<'a> {
    out: &'a mut [u8],
    at: usize,
}

impl Writer<'_> {
    fn put(&mut self, b: &[u8]) -> Option<()> {
        self.out
            .get_mut(self.at..self.at + b.len())?
            .copy_from_slice(b);
        self.at += b.len();
        Some(())
    }

    fn option(&mut self, code: u16, body: &[u8]) -> Option<()> {
        self.put(&code.to_be_bytes())?;
        self.put(&u16::try_from(body.len()).ok()?.to_be_bytes())?;
        self.put(body)
    }
}

#[cfg(test)]
mod tests;
