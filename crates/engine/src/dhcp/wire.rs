//! DHCP messages (RFC 2131 §2, options of RFC 2132): a checked parser of the server's
//! replies into [`Reply`], and a builder of the client's DISCOVER and REQUEST.
//!
//! The parser reads the fixed BOOTP part and the options field only (option overload,
//! option 52, is not followed: the options this client needs fit in the options field
//! on every server we know). It never panics and never reads past the buffer: an option
//! whose length runs past the end, a fixed-size option of the wrong size, a mask that is
//! not contiguous are refused with an [`Error`], which the client counts.

use crate::wire::{EthernetAddress, Ipv4Address};

/// The server's UDP port.
pub const SERVER_PORT: u16 = 67;
/// The client's UDP port.
pub const CLIENT_PORT: u16 = 68;
/// The magic cookie that starts the options (RFC 2131 §3).
pub const MAGIC: [u8; 4] = [99, 130, 83, 99];
/// Octets before the options: the fixed BOOTP fields and the cookie.
pub const OPTIONS_AT: usize = 240;
/// Size of every message this client sends (the BOOTP minimum, RFC 1542 §2.1).
pub const MESSAGE_LEN: usize = 300;
/// The BROADCAST flag (RFC 2131 §2): the server answers to the broadcast address, since
/// a client without an address may not take unicast.
pub const FLAG_BROADCAST: u16 = 0x8000;

mod field {
    pub const OP: usize = 0;
    pub const HTYPE: usize = 1;
    pub const HLEN: usize = 2;
    pub const XID: usize = 4;
    pub const SECS: usize = 8;
    pub const FLAGS: usize = 10;
    pub const CIADDR: usize = 12;
    pub const YIADDR: usize = 16;
    pub const CHADDR: usize = 28;
    pub const COOKIE: usize = 236;
}

mod opt {
    pub const PAD: u8 = 0;
    pub const SUBNET_MASK: u8 = 1;
    pub const ROUTER: u8 = 3;
    pub const DNS: u8 = 6;
    pub const REQUESTED_IP: u8 = 50;
    pub const LEASE_TIME: u8 = 51;
    pub const MESSAGE_TYPE: u8 = 53;
    pub const SERVER_ID: u8 = 54;
    pub const PARAMETERS: u8 = 55;
    pub const MAX_SIZE: u8 = 57;
    pub const RENEWAL_TIME: u8 = 58;
    pub const REBINDING_TIME: u8 = 59;
    pub const CLIENT_ID: u8 = 61;
    pub const END: u8 = 255;
}

/// A DHCP message type (option 53).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageType {
    /// Client: looking for servers.
    Discover,
    /// Server: an address offered.
    Offer,
    /// Client: asks for the offered address, or to extend its lease.
    Request,
    /// Client: the address is in use.
    Decline,
    /// Server: the lease is granted.
    Ack,
    /// Server: the request is refused.
    Nak,
    /// Client: gives the address back.
    Release,
    /// Client: asks for parameters only.
    Inform,
}

impl MessageType {
    /// The option's value.
    pub fn code(self) -> u8 {
        match self {
            MessageType::Discover => 1,
            MessageType::Offer => 2,
            MessageType::Request => 3,
            MessageType::Decline => 4,
            MessageType::Ack => 5,
            MessageType::Nak => 6,
            MessageType::Release => 7,
            MessageType::Inform => 8,
        }
    }

    /// The type of value `v`, if there is one.
    pub fn from_code(v: u8) -> Option<MessageType> {
        Some(match v {
            1 => MessageType::Discover,
            2 => MessageType::Offer,
            3 => MessageType::Request,
            4 => MessageType::Decline,
            5 => MessageType::Ack,
            6 => MessageType::Nak,
            7 => MessageType::Release,
            8 => MessageType::Inform,
            _ => return None,
        })
    }
}

/// Why a message was refused by the parser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// Shorter than the fixed part and the cookie.
    Truncated,
    /// Not a BOOTREPLY on Ethernet (op, htype or hlen wrong).
    NotReply,
    /// The magic cookie is missing.
    Cookie,
    /// An option runs past the end of the message.
    OptionOverrun,
    /// An option has a size or value its definition forbids (a 3-octet lease, a
    /// non-contiguous mask, two message types...).
    BadOption,
    /// No message type option, or an unknown type.
    NoType,
}

/// A server's reply, as far as this client uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    /// The message type.
    pub kind: MessageType,
    /// Transaction id.
    pub xid: u32,
    /// The client hardware address the reply is for.
    pub chaddr: EthernetAddress,
    /// The address offered or granted ("your address").
    pub yiaddr: Ipv4Address,
    /// The server identifier (option 54).
    pub server_id: Option<Ipv4Address>,
    /// Prefix length from the subnet mask (option 1).
    pub prefix_len: Option<u8>,
    /// The first router (option 3).
    pub router: Option<Ipv4Address>,
    /// The first DNS server (option 6): the bare machine's ACME client's when no `dns=`.
    pub dns: Option<Ipv4Address>,
    /// Lease time in seconds (option 51; `u32::MAX` is infinite).
    pub lease_s: Option<u32>,
    /// Renewal time T1, seconds (option 58).
    pub t1_s: Option<u32>,
    /// Rebinding time T2, seconds (option 59).
    pub t2_s: Option<u32>,
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn addr(b: &[u8]) -> Ipv4Address {
    Ipv4Address([b[0], b[1], b[2], b[3]])
}

/// The prefix length of a contiguous mask.
fn prefix_of(mask: u32) -> Option<u8> {
    let len = mask.leading_ones();
    (mask.checked_shl(len).unwrap_or(0) == 0).then_some(len as u8)
}

/// Parses a server's reply (the UDP payload). Checks the fixed part, the cookie and every
/// option's bounds; the fields' meaning (xid, chaddr, addresses, lease) is the client's
/// to judge.
pub fn parse(b: &[u8]) -> Result<Reply, Error> {
    if b.len() < OPTIONS_AT {
        return Err(Error::Truncated);
    }
    if b[field::OP] != 2 || b[field::HTYPE] != 1 || b[field::HLEN] != 6 {
        return Err(Error::NotReply);
    }
    if b[field::COOKIE..OPTIONS_AT] != MAGIC {
        return Err(Error::Cookie);
    }
    let mut chaddr = [0; 6];
    chaddr.copy_from_slice(&b[field::CHADDR..field::CHADDR + 6]);
    let mut r = Reply {
        kind: MessageType::Discover,
        xid: be32(&b[field::XID..]),
        chaddr: EthernetAddress(chaddr),
        yiaddr: addr(&b[field::YIADDR..]),
        server_id: None,
        prefix_len: None,
        router: None,
        dns: None,
        lease_s: None,
        t1_s: None,
        t2_s: None,
    };
    let mut kind = None;
    let mut i = OPTIONS_AT;
    while i < b.len() {
        let code = b[i];
        if code == opt::END {
            break;
        }
        if code == opt::PAD {
            i += 1;
            continue;
        }
        let Some(&len) = b.get(i + 1) else {
            return Err(Error::OptionOverrun);
        };
        let start = i + 2;
        let end = start + usize::from(len);
        let Some(v) = b.get(start..end) else {
            return Err(Error::OptionOverrun);
        };
        i = end;
        let four = v.len() == 4;
        match code {
            opt::MESSAGE_TYPE => {
                if v.len() != 1 || kind.is_some() {
                    return Err(Error::BadOption);
                }
                kind = Some(MessageType::from_code(v[0]).ok_or(Error::NoType)?);
            }
            opt::SERVER_ID if four => r.server_id = Some(addr(v)),
            opt::SUBNET_MASK if four => {
                r.prefix_len = Some(prefix_of(be32(v)).ok_or(Error::BadOption)?);
            }
            opt::ROUTER | opt::DNS if !v.is_empty() && v.len() % 4 == 0 => {
                let first = Some(addr(v));
                if code == opt::ROUTER {
                    r.router = first;
                } else {
                    r.dns = first;
                }
            }
            opt::LEASE_TIME if four => r.lease_s = Some(be32(v)),
            opt::RENEWAL_TIME if four => r.t1_s = Some(be32(v)),
            opt::REBINDING_TIME if four => r.t2_s = Some(be32(v)),
            opt::SERVER_ID
            | opt::SUBNET_MASK
            | opt::ROUTER
            | opt::DNS
            | opt::LEASE_TIME
            | opt::RENEWAL_TIME
            | opt::REBINDING_TIME => return Err(Error::BadOption),
            _ => {} // options this client does not use
        }
    }
    r.kind = kind.ok_or(Error::NoType)?;
    Ok(r)
}

/// A message the client sends (DISCOVER or REQUEST).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outgoing {
    /// DISCOVER or REQUEST.
    pub kind: MessageType,
    /// Transaction id.
    pub xid: u32,
    /// Seconds since the client began acquiring or renewing.
    pub secs: u16,
    /// The client's MAC (chaddr, and the client identifier).
    pub mac: EthernetAddress,
    /// Our address when renewing or rebinding (else 0.0.0.0).
    pub ciaddr: Ipv4Address,
    /// The address asked for (option 50, REQUEST in SELECTING only).
    pub requested: Option<Ipv4Address>,
    /// The chosen server (option 54, REQUEST in SELECTING only).
    pub server_id: Option<Ipv4Address>,
    /// Ask the server to broadcast its answer.
    pub broadcast: bool,
}

/// The options the client asks for (option 55). The DNS servers are asked for (a server
/// such as dnsmasq sends only what is asked): the bare machine's ACME client uses the
/// first when no `dns=` is given.
const PARAMETERS: [u8; 6] = [
    opt::SUBNET_MASK,
    opt::ROUTER,
    opt::DNS,
    opt::LEASE_TIME,
    opt::RENEWAL_TIME,
    opt::REBINDING_TIME,
];

impl Outgoing {
    /// Writes the message into `buf` and returns its length, [`MESSAGE_LEN`].
    ///
    /// # Panics
    /// If `buf` is shorter than [`MESSAGE_LEN`] (a bug in the caller).
    pub fn emit(&self, buf: &mut [u8]) -> usize {
        let b = &mut buf[..MESSAGE_LEN];
        b.fill(0);
        b[field::OP] = 1;
        b[field::HTYPE] = 1;
        b[field::HLEN] = 6;
        b[field::XID..field::XID + 4].copy_from_slice(&self.xid.to_be_bytes());
        b[field::SECS..field::SECS + 2].copy_from_slice(&self.secs.to_be_bytes());
        let flags = if self.broadcast { FLAG_BROADCAST } else { 0 };
        b[field::FLAGS..field::FLAGS + 2].copy_from_slice(&flags.to_be_bytes());
        b[field::CIADDR..field::CIADDR + 4].copy_from_slice(&self.ciaddr.0);
        b[field::CHADDR..field::CHADDR + 6].copy_from_slice(&self.mac.0);
        b[field::COOKIE..OPTIONS_AT].copy_from_slice(&MAGIC);
        let mut i = OPTIONS_AT;
        let mut put = |code: u8, v: &[u8]| {
            b[i] = code;
            b[i + 1] = v.len() as u8;
            b[i + 2..i + 2 + v.len()].copy_from_slice(v);
            i += 2 + v.len();
        };
        put(opt::MESSAGE_TYPE, &[self.kind.code()]);
        let m = self.mac.0;
        put(opt::CLIENT_ID, &[1, m[0], m[1], m[2], m[3], m[4], m[5]]);
        if let Some(a) = self.requested {
            put(opt::REQUESTED_IP, &a.0);
        }
        if let Some(s) = self.server_id {
            put(opt::SERVER_ID, &s.0);
        }
        put(opt::MAX_SIZE, &576u16.to_be_bytes());
        put(opt::PARAMETERS, &PARAMETERS);
        b[i] = opt::END;
        MESSAGE_LEN
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAC: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 7]);

    /// A reply with the fixed part right and `options` after the cookie.
    fn reply(options: &[u8]) -> std::vec::Vec<u8> {
        let mut b = std::vec![0u8; OPTIONS_AT];
        b[0] = 2;
        b[1] = 1;
        b[2] = 6;
        b[4..8].copy_from_slice(&0x1234_5678u32.to_be_bytes());
        b[16..20].copy_from_slice(&[10, 0, 0, 9]);
        b[28..34].copy_from_slice(&MAC.0);
        b[236..240].copy_from_slice(&MAGIC);
        b.extend_from_slice(options);
        b
    }

    #[test]
    fn a_full_ack_parses() {
        let r = parse(&reply(&[
            53, 1, 5, 54, 4, 10, 0, 0, 1, 1, 4, 255, 255, 254, 0, 3, 8, 10, 0, 0, 1, 10, 0, 0, 2,
            6, 4, 10, 0, 0, 3, 51, 4, 0, 0, 14, 16, 58, 4, 0, 0, 7, 8, 59, 4, 0, 0, 12, 78, 0, 0,
            255, 99,
        ]))
        .unwrap();
        assert_eq!(r.kind, MessageType::Ack);
        assert_eq!((r.xid, r.chaddr), (0x1234_5678, MAC));
        assert_eq!(r.yiaddr, Ipv4Address([10, 0, 0, 9]));
        assert_eq!(r.server_id, Some(Ipv4Address([10, 0, 0, 1])));
        assert_eq!(r.prefix_len, Some(23));
        assert_eq!(r.router, Some(Ipv4Address([10, 0, 0, 1])));
        assert_eq!(r.dns, Some(Ipv4Address([10, 0, 0, 3])));
        assert_eq!(
            (r.lease_s, r.t1_s, r.t2_s),
            (Some(3600), Some(1800), Some(3150))
        );
    }

    #[test]
    fn hostile_options_are_refused() {
        let cases: &[(&[u8], Error)] = &[
            (&[53, 1, 2, 51, 4, 0, 0], Error::OptionOverrun),
            (&[53, 1, 2, 51], Error::OptionOverrun),
            (&[53, 1, 2, 51, 3, 0, 0, 1], Error::BadOption),
            (&[53, 1, 2, 1, 4, 255, 0, 255, 0], Error::BadOption),
            (&[53, 1, 2, 53, 1, 5], Error::BadOption),
            (&[53, 2, 2, 2], Error::BadOption),
            (&[53, 1, 9], Error::NoType),
            (&[54, 4, 1, 2, 3, 4], Error::NoType),
            (&[3, 3, 1, 2, 3, 53, 1, 2], Error::BadOption),
            (&[255, 53, 1, 2], Error::NoType),
        ];
        for (opts, e) in cases {
            assert_eq!(parse(&reply(opts)), Err(*e), "{opts:?}");
        }
        assert_eq!(parse(&reply(&[])[..239]), Err(Error::Truncated));
        let mut b = reply(&[53, 1, 2]);
        b[0] = 1;
        assert_eq!(parse(&b), Err(Error::NotReply));
        let mut b = reply(&[53, 1, 2]);
        b[239] = 0;
        assert_eq!(parse(&b), Err(Error::Cookie));
        // No END option: the message's end ends the options.
        assert_eq!(parse(&reply(&[53, 1, 2])).unwrap().kind, MessageType::Offer);
    }

    #[test]
    fn masks_give_prefixes() {
        assert_eq!(prefix_of(0), Some(0));
        assert_eq!(prefix_of(u32::MAX), Some(32));
        assert_eq!(prefix_of(0xffff_ff00), Some(24));
        assert_eq!(prefix_of(0xff00_ff00), None);
        assert_eq!(prefix_of(0x0000_00ff), None);
    }

    #[test]
    fn a_request_is_built_as_rfc_2131_says() {
        let mut buf = [0xaa; 400];
        let n = Outgoing {
            kind: MessageType::Request,
            xid: 0xdead_beef,
            secs: 3,
            mac: MAC,
            ciaddr: Ipv4Address::UNSPECIFIED,
            requested: Some(Ipv4Address([10, 0, 0, 9])),
            server_id: Some(Ipv4Address([10, 0, 0, 1])),
            broadcast: true,
        }
        .emit(&mut buf);
        assert_eq!(n, MESSAGE_LEN);
        let b = &buf[..n];
        assert_eq!(&b[..4], &[1, 1, 6, 0]);
        assert_eq!(&b[4..8], &[0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(&b[8..12], &[0, 3, 0x80, 0]);
        assert_eq!(&b[28..34], &MAC.0);
        assert_eq!(&b[236..240], &MAGIC);
        assert_eq!(
            &b[240..272],
            &[
                53, 1, 3, 61, 7, 1, 2, 0, 0, 0, 0, 7, 50, 4, 10, 0, 0, 9, 54, 4, 10, 0, 0, 1, 57,
                2, 2, 64, 55, 6, 1, 3
            ]
        );
        assert_eq!(&b[272..277], &[6, 51, 58, 59, 255]);
        assert!(b[277..].iter().all(|&x| x == 0));
    }
}
