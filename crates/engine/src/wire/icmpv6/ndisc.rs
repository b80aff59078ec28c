//! Neighbor Discovery options (RFC 4861 §4.6, RDNSS of RFC 8106, the DAD nonce of RFC
//! 7527): checked once when a message is parsed, then iterated without failure.

use super::*;

/// A Neighbor Discovery option (RFC 4861 §4.6, RFC 8106, RFC 7527).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NdiscOption<'a> {
    /// 1: the sender's link-layer address (Ethernet: one 8-octet unit).
    SourceLinkLayerAddr(EthernetAddress),
    /// 2: the target's link-layer address.
    TargetLinkLayerAddr(EthernetAddress),
    /// 3: an on-link and/or autoconfiguration prefix.
    PrefixInformation(PrefixInfo),
    /// 4: the head of the redirected packet (after 6 reserved octets).
    RedirectedHeader(&'a [u8]),
    /// 5: the link MTU.
    Mtu(u32),
    /// 14: the nonce of a DAD probe (RFC 7527), to recognise our own looped back.
    Nonce(&'a [u8]),
    /// 25: recursive DNS servers (RFC 8106): a lifetime in seconds and 16-octet addresses.
    Rdnss {
        /// Seconds the servers may be used (0xffffffff: forever, 0: no longer).
        lifetime: u32,
        /// The addresses, 16 octets each (use `chunks_exact(16)`).
        servers: &'a [u8],
    },
    /// Any other type: ignored by receivers (RFC 4861 §4.6).
    Unknown {
        /// Option type.
        kind: u8,
        /// The octets after type and length.
        data: &'a [u8],
    },
}

/// A Prefix Information option (RFC 4861 §4.6.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrefixInfo {
    /// Prefix length in bits (at most 128).
    pub prefix_len: u8,
    /// L: the prefix is on-link.
    pub on_link: bool,
    /// A: the prefix may be used for SLAAC.
    pub autonomous: bool,
    /// Valid lifetime in seconds (0xffffffff: forever).
    pub valid_lifetime: u32,
    /// Preferred lifetime in seconds (0xffffffff: forever).
    pub preferred_lifetime: u32,
    /// The prefix (bits past `prefix_len` are the sender's; RFC 4861 asks them zero).
    pub prefix: Address,
}

mod opt {
    pub const SOURCE_LLADDR: u8 = 1;
    pub const TARGET_LLADDR: u8 = 2;
    pub const PREFIX_INFO: u8 = 3;
    pub const REDIRECTED_HDR: u8 = 4;
    pub const MTU: u8 = 5;
    pub const NONCE: u8 = 14;
    pub const RDNSS: u8 = 25;
}

impl<'a> NdiscOption<'a> {
    /// Reads the option at the start of `bytes`; returns it and its length. A zero
    /// length or an option past the end is [`Error::Malformed`] / [`Error::Truncated`]
    /// (RFC 4861 §4.6: discard the packet), as is a known option of the wrong size.
    pub fn parse(bytes: &'a [u8]) -> Result<(NdiscOption<'a>, usize)> {
        let [kind, units] = *bytes.first_chunk::<2>().ok_or(Error::Truncated)?;
        if units == 0 {
            return Err(Error::Malformed);
        }
        let len = 8 * usize::from(units);
        let body = bytes.get(..len).ok_or(Error::Truncated)?;
        let u32_at =
            |i: usize| u32::from_be_bytes([body[i], body[i + 1], body[i + 2], body[i + 3]]);
        let lladdr = || -> Result<EthernetAddress> {
            if units != 1 {
                return Err(Error::Malformed);
            }
            let mut a = [0u8; 6];
            a.copy_from_slice(&body[2..8]);
            Ok(EthernetAddress(a))
        };
        let o = match kind {
            opt::SOURCE_LLADDR => NdiscOption::SourceLinkLayerAddr(lladdr()?),
            opt::TARGET_LLADDR => NdiscOption::TargetLinkLayerAddr(lladdr()?),
            opt::PREFIX_INFO => {
                if units != 4 || body[2] > 128 {
                    return Err(Error::Malformed);
                }
                NdiscOption::PrefixInformation(PrefixInfo {
                    prefix_len: body[2],
                    on_link: body[3] & 0x80 != 0,
                    autonomous: body[3] & 0x40 != 0,
                    valid_lifetime: u32_at(4),
                    preferred_lifetime: u32_at(8),
                    prefix: Address::from_bytes(&body[16..32]),
                })
            }
            opt::REDIRECTED_HDR => NdiscOption::RedirectedHeader(&body[8..]),
            opt::MTU => {
                if units != 1 {
                    return Err(Error::Malformed);
                }
                NdiscOption::Mtu(u32_at(4))
            }
            opt::NONCE => NdiscOption::Nonce(&body[2..]),
            opt::RDNSS => {
                // One unit of header, then two per address, at least one address.
                if units < 3 || units % 2 == 0 {
                    return Err(Error::Malformed);
                }
                NdiscOption::Rdnss {
                    lifetime: u32_at(4),
                    servers: &body[8..],
                }
            }
            kind => NdiscOption::Unknown {
                kind,
                data: &body[2..],
            },
        };
        Ok((o, len))
    }

    /// Length in bytes of the option [`emit`](Self::emit) writes (a multiple of 8).
    pub fn buffer_len(&self) -> usize {
        let raw = match self {
            NdiscOption::SourceLinkLayerAddr(_)
            | NdiscOption::TargetLinkLayerAddr(_)
            | NdiscOption::Mtu(_) => 8,
            NdiscOption::PrefixInformation(_) => 32,
            NdiscOption::RedirectedHeader(d) => 8 + d.len(),
            NdiscOption::Rdnss { servers, .. } => 8 + servers.len(),
            NdiscOption::Nonce(d) | NdiscOption::Unknown { data: d, .. } => 2 + d.len(),
        };
        raw.div_ceil(8) * 8
    }

    /// Writes the option, zero-padded to a multiple of 8 octets.
    ///
    /// # Panics
    /// If `buf` is shorter than [`buffer_len`](Self::buffer_len), or the option is
    /// longer than 2040 bytes.
    pub fn emit(&self, buf: &mut [u8]) {
        let len = self.buffer_len();
        let buf = &mut buf[..len];
        buf.fill(0);
        buf[1] = u8::try_from(len / 8).expect("an NDP option fits 255 units");
        match *self {
            NdiscOption::SourceLinkLayerAddr(a) | NdiscOption::TargetLinkLayerAddr(a) => {
                buf[0] = if matches!(self, NdiscOption::SourceLinkLayerAddr(_)) {
                    opt::SOURCE_LLADDR
                } else {
                    opt::TARGET_LLADDR
                };
                buf[2..8].copy_from_slice(&a.0);
            }
            NdiscOption::PrefixInformation(p) => {
                buf[0] = opt::PREFIX_INFO;
                buf[2] = p.prefix_len;
                buf[3] = (u8::from(p.on_link) << 7) | (u8::from(p.autonomous) << 6);
                buf[4..8].copy_from_slice(&p.valid_lifetime.to_be_bytes());
                buf[8..12].copy_from_slice(&p.preferred_lifetime.to_be_bytes());
                buf[16..32].copy_from_slice(&p.prefix.0);
            }
            NdiscOption::RedirectedHeader(d) => {
                buf[0] = opt::REDIRECTED_HDR;
                buf[8..8 + d.len()].copy_from_slice(d);
            }
            NdiscOption::Mtu(m) => {
                buf[0] = opt::MTU;
                buf[4..8].copy_from_slice(&m.to_be_bytes());
            }
            NdiscOption::Nonce(d) => {
                buf[0] = opt::NONCE;
                buf[2..2 + d.len()].copy_from_slice(d);
            }
            NdiscOption::Rdnss { lifetime, servers } => {
                buf[0] = opt::RDNSS;
                buf[4..8].copy_from_slice(&lifetime.to_be_bytes());
                buf[8..8 + servers.len()].copy_from_slice(servers);
            }
            NdiscOption::Unknown { kind, data } => {
                buf[0] = kind;
                buf[2..2 + data.len()].copy_from_slice(data);
            }
        }
    }
}

/// The options of a Neighbor Discovery message, every one checked by
/// [`NdiscOptions::parse`]; iterating them cannot fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NdiscOptions<'a>(&'a [u8]);

impl<'a> NdiscOptions<'a> {
    /// Checks every option of `bytes` ([`NdiscOption::parse`]). Each step consumes at
    /// least 8 octets, so this ends within `bytes.len() / 8` steps.
    pub fn parse(bytes: &'a [u8]) -> Result<NdiscOptions<'a>> {
        let mut rest = bytes;
        while !rest.is_empty() {
            let (_, len) = NdiscOption::parse(rest)?;
            rest = &rest[len..];
        }
        Ok(NdiscOptions(bytes))
    }

    /// The option bytes.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.0
    }

    /// The options in order.
    pub fn iter(&self) -> NdiscOptionIter<'a> {
        NdiscOptionIter(self.0)
    }

    /// The first source link-layer address option's address.
    pub fn source_lladdr(&self) -> Option<EthernetAddress> {
        self.iter().find_map(|o| match o {
            NdiscOption::SourceLinkLayerAddr(a) => Some(a),
            _ => None,
        })
    }

    /// The first target link-layer address option's address.
    pub fn target_lladdr(&self) -> Option<EthernetAddress> {
        self.iter().find_map(|o| match o {
            NdiscOption::TargetLinkLayerAddr(a) => Some(a),
            _ => None,
        })
    }

    /// The first MTU option's MTU.
    pub fn mtu(&self) -> Option<u32> {
        self.iter().find_map(|o| match o {
            NdiscOption::Mtu(m) => Some(m),
            _ => None,
        })
    }

    /// The first 6-octet nonce (what Linux and RFC 7527 send).
    pub fn nonce(&self) -> Option<[u8; 6]> {
        self.iter().find_map(|o| match o {
            NdiscOption::Nonce(n) => n.try_into().ok(),
            _ => None,
        })
    }
}

/// Iterator over checked [`NdiscOptions`].
#[derive(Debug, Clone)]
pub struct NdiscOptionIter<'a>(&'a [u8]);

impl<'a> Iterator for NdiscOptionIter<'a> {
    type Item = NdiscOption<'a>;

    fn next(&mut self) -> Option<NdiscOption<'a>> {
        match NdiscOption::parse(self.0) {
            Ok((o, len)) => {
                self.0 = &self.0[len..];
                Some(o)
            }
            Err(_) => {
                self.0 = &[];
                None
            }
        }
    }
}
