//! ICMPv6 (RFC 4443), Neighbor Discovery (RFC 4861, RDNSS of RFC 8106, the DAD nonce of
//! RFC 7527) and MLDv2 reports (RFC 3810 §5.2).
//!
//! Heads up! read RFC 4443 §2.3-2.4 (checksum over the pseudo-header; never answer an
//! error with an error), RFC 4861 §6.1 and §7.1 (the validity checks a message must pass
//! before it touches any state) and §4.6 (options: a zero length means discard).
//!
//! The buffer given to [`Packet`] must be the whole ICMPv6 message (the upper-layer
//! payload [`super::ipv6::Packet::walk`] found): the checksum covers all of it.
//! [`Repr::parse`] checks the checksum and, for Neighbor Discovery, RFC 4861's validity
//! rules (hop limit 255, code 0, lengths, option lengths, addresses). Every accessor of a
//! checked [`Packet`] reads past-the-end fields as zero rather than panicking, whatever
//! the message type.

use super::ethernet::Address as EthernetAddress;
use super::ipv6::{Address, NextHeader};
use super::{checksum, Error, Result};

mod mld;
mod ndisc;

pub use mld::*;
pub use ndisc::*;

mod field {
    use core::ops::Range;
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: Range<usize> = 2..4;
    /// Echo identifier and sequence number.
    pub const ECHO_IDENT: Range<usize> = 4..6;
    pub const ECHO_SEQNO: Range<usize> = 6..8;
    /// The MTU of Packet Too Big, the pointer of Parameter Problem.
    pub const WORD: Range<usize> = 4..8;
    /// Router advertisement.
    pub const RA_HOP_LIMIT: usize = 4;
    pub const RA_FLAGS: usize = 5;
    pub const RA_ROUTER_LIFETIME: Range<usize> = 6..8;
    pub const RA_REACHABLE_TIME: Range<usize> = 8..12;
    pub const RA_RETRANS_TIMER: Range<usize> = 12..16;
    /// Neighbor advertisement flags.
    pub const NA_FLAGS: usize = 4;
    /// Target of NS, NA and redirect.
    pub const TARGET: Range<usize> = 8..24;
    /// Destination of a redirect.
    pub const REDIRECT_DEST: Range<usize> = 24..40;
    /// Number of address records of an MLDv2 report.
    pub const MLD_RECORDS: Range<usize> = 6..8;
    /// MLD query: maximum response code, multicast address, then (MLDv2) S/QRV, QQIC
    /// and the number of sources.
    pub const MLD_MAX_RESP: Range<usize> = 4..6;
    pub const MLD_GROUP: Range<usize> = 8..24;
    pub const MLD_S_QRV: usize = 24;
    pub const MLD_QQIC: usize = 25;
    pub const MLD_NUM_SOURCES: Range<usize> = 26..28;
}

/// Length of an MLDv2 query without sources; a 24-byte query is MLDv1's (RFC 3810 §8.1).
pub const MLDV2_QUERY_LEN: usize = 28;

/// Length of the ICMPv6 header (type, code, checksum and the 4-byte rest-of-header).
pub const HEADER_LEN: usize = 8;

/// The most bytes of the invoking packet an error we send quotes: the error must fit
/// the IPv6 minimum MTU (RFC 4443 §2.4(c)), 1280 - 40 - 8.
pub const MAX_INVOKING_LEN: usize = super::ipv6::MIN_MTU - super::ipv6::HEADER_LEN - HEADER_LEN;

/// ICMPv6 message types (IANA "ICMPv6 Parameters").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Message {
    /// 1
    DstUnreachable,
    /// 2
    PacketTooBig,
    /// 3
    TimeExceeded,
    /// 4
    ParamProblem,
    /// 128
    EchoRequest,
    /// 129
    EchoReply,
    /// 130, MLD query.
    MldQuery,
    /// 131, MLDv1 report.
    MldV1Report,
    /// 132, MLDv1 done.
    MldDone,
    /// 133
    RouterSolicit,
    /// 134
    RouterAdvert,
    /// 135
    NeighborSolicit,
    /// 136
    NeighborAdvert,
    /// 137
    Redirect,
    /// 143, MLDv2 report.
    MldReport,
    /// Anything else.
    Unknown(u8),
}

impl From<u8> for Message {
    fn from(v: u8) -> Self {
        match v {
            1 => Message::DstUnreachable,
            2 => Message::PacketTooBig,
            3 => Message::TimeExceeded,
            4 => Message::ParamProblem,
            128 => Message::EchoRequest,
            129 => Message::EchoReply,
            130 => Message::MldQuery,
            131 => Message::MldV1Report,
            132 => Message::MldDone,
            133 => Message::RouterSolicit,
            134 => Message::RouterAdvert,
            135 => Message::NeighborSolicit,
            136 => Message::NeighborAdvert,
            137 => Message::Redirect,
            143 => Message::MldReport,
            other => Message::Unknown(other),
        }
    }
}

impl From<Message> for u8 {
    fn from(v: Message) -> u8 {
        match v {
            Message::DstUnreachable => 1,
            Message::PacketTooBig => 2,
            Message::TimeExceeded => 3,
            Message::ParamProblem => 4,
            Message::EchoRequest => 128,
            Message::EchoReply => 129,
            Message::MldQuery => 130,
            Message::MldV1Report => 131,
            Message::MldDone => 132,
            Message::RouterSolicit => 133,
            Message::RouterAdvert => 134,
            Message::NeighborSolicit => 135,
            Message::NeighborAdvert => 136,
            Message::Redirect => 137,
            Message::MldReport => 143,
            Message::Unknown(other) => other,
        }
    }
}

impl Message {
    /// Whether this is an error message (types 0-127, RFC 4443 §2.1): never answered
    /// with an error.
    pub fn is_error(self) -> bool {
        u8::from(self) < 128
    }

    /// The fixed part of the message before its data or options: the least a message
    /// of this type can be.
    pub fn min_len(self) -> usize {
        match self {
            Message::RouterAdvert => 16,
            Message::NeighborSolicit | Message::NeighborAdvert | Message::MldQuery => 24,
            Message::Redirect => 40,
            _ => HEADER_LEN,
        }
    }
}

/// Destination Unreachable codes (RFC 4443 §3.1).
pub mod unreachable {
    /// No route to destination.
    pub const NO_ROUTE: u8 = 0;
    /// Communication administratively prohibited.
    pub const PROHIBITED: u8 = 1;
    /// Address unreachable.
    pub const ADDRESS: u8 = 3;
    /// Port unreachable.
    pub const PORT: u8 = 4;
}

/// Parameter Problem codes (RFC 4443 §3.4).
pub mod param_problem {
    /// Erroneous header field.
    pub const HEADER_FIELD: u8 = 0;
    /// Unrecognised Next Header type.
    pub const NEXT_HEADER: u8 = 1;
    /// Unrecognised IPv6 option.
    pub const OPTION: u8 = 2;
}

/// A view of an ICMPv6 message.
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

    /// Checks that the buffer holds the 8-byte header and the fixed part of its type
    /// ([`Message::min_len`]).
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN || len < self.msg_type().min_len() {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// `N` bytes at `at`, zeros where the buffer ends first.
    fn bytes<const N: usize>(&self, at: usize) -> [u8; N] {
        let mut out = [0u8; N];
        if let Some(b) = self.buffer.as_ref().get(at..at + N) {
            out.copy_from_slice(b);
        }
        out
    }

    fn u8_at(&self, at: usize) -> u8 {
        self.bytes::<1>(at)[0]
    }

    fn u16_at(&self, r: core::ops::Range<usize>) -> u16 {
        u16::from_be_bytes(self.bytes(r.start))
    }

    fn u32_at(&self, r: core::ops::Range<usize>) -> u32 {
        u32::from_be_bytes(self.bytes(r.start))
    }

    fn tail(&self, from: usize) -> &[u8] {
        self.buffer.as_ref().get(from..).unwrap_or_default()
    }

    /// Message type.
    pub fn msg_type(&self) -> Message {
        Message::from(self.u8_at(field::TYPE))
    }

    /// Message code.
    pub fn msg_code(&self) -> u8 {
        self.u8_at(field::CODE)
    }

    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        self.u16_at(field::CHECKSUM)
    }

    /// Echo identifier.
    pub fn echo_ident(&self) -> u16 {
        self.u16_at(field::ECHO_IDENT)
    }

    /// Echo sequence number.
    pub fn echo_seq_no(&self) -> u16 {
        self.u16_at(field::ECHO_SEQNO)
    }

    /// The MTU of a Packet Too Big.
    pub fn mtu(&self) -> u32 {
        self.u32_at(field::WORD)
    }

    /// The pointer of a Parameter Problem.
    pub fn pointer(&self) -> u32 {
        self.u32_at(field::WORD)
    }

    /// Everything after the 8-byte header: echo data, an error's invoking packet, or the
    /// options of a router solicitation.
    pub fn data(&self) -> &[u8] {
        self.tail(HEADER_LEN)
    }

    /// Current hop limit of a router advertisement (0: unspecified).
    pub fn ra_hop_limit(&self) -> u8 {
        self.u8_at(field::RA_HOP_LIMIT)
    }

    /// The M (managed address configuration) flag of a router advertisement.
    pub fn ra_managed(&self) -> bool {
        self.u8_at(field::RA_FLAGS) & 0x80 != 0
    }

    /// The O (other configuration) flag of a router advertisement.
    pub fn ra_other(&self) -> bool {
        self.u8_at(field::RA_FLAGS) & 0x40 != 0
    }

    /// Router lifetime in seconds (0: not a default router).
    pub fn router_lifetime(&self) -> u16 {
        self.u16_at(field::RA_ROUTER_LIFETIME)
    }

    /// Reachable time in milliseconds (0: unspecified).
    pub fn reachable_time(&self) -> u32 {
        self.u32_at(field::RA_REACHABLE_TIME)
    }

    /// Retransmission timer in milliseconds (0: unspecified).
    pub fn retrans_timer(&self) -> u32 {
        self.u32_at(field::RA_RETRANS_TIMER)
    }

    /// The R (router) flag of a neighbour advertisement.
    pub fn na_router(&self) -> bool {
        self.u8_at(field::NA_FLAGS) & 0x80 != 0
    }

    /// The S (solicited) flag of a neighbour advertisement.
    pub fn na_solicited(&self) -> bool {
        self.u8_at(field::NA_FLAGS) & 0x40 != 0
    }

    /// The O (override) flag of a neighbour advertisement.
    pub fn na_override(&self) -> bool {
        self.u8_at(field::NA_FLAGS) & 0x20 != 0
    }

    /// The target address of a neighbour solicitation/advertisement or redirect.
    pub fn target_addr(&self) -> Address {
        Address(self.bytes(field::TARGET.start))
    }

    /// The destination address of a redirect.
    pub fn redirect_dst_addr(&self) -> Address {
        Address(self.bytes(field::REDIRECT_DEST.start))
    }

    /// The number of address records of an MLDv2 report.
    pub fn mld_num_records(&self) -> u16 {
        self.u16_at(field::MLD_RECORDS)
    }

    /// The Maximum Response Code of an MLD query.
    pub fn mld_max_resp_code(&self) -> u16 {
        self.u16_at(field::MLD_MAX_RESP)
    }

    /// The multicast address of an MLD query (`::` for a general query).
    pub fn mld_group(&self) -> Address {
        Address(self.bytes(field::MLD_GROUP.start))
    }

    /// The S flag (suppress router-side processing) of an MLDv2 query.
    pub fn mld_suppress(&self) -> bool {
        self.u8_at(field::MLD_S_QRV) & 0x08 != 0
    }

    /// The querier's robustness variable of an MLDv2 query.
    pub fn mld_qrv(&self) -> u8 {
        self.u8_at(field::MLD_S_QRV) & 0x07
    }

    /// The querier's query interval code of an MLDv2 query.
    pub fn mld_qqic(&self) -> u8 {
        self.u8_at(field::MLD_QQIC)
    }

    /// The number of sources of an MLDv2 query.
    pub fn mld_num_sources(&self) -> u16 {
        self.u16_at(field::MLD_NUM_SOURCES)
    }

    /// The Neighbor Discovery options (after the fixed part of the type), unchecked.
    pub fn options(&self) -> &[u8] {
        self.tail(self.msg_type().min_len())
    }

    /// Whether the checksum over the pseudo-header and the whole message verifies.
    ///
    /// # Fuzzing
    /// Always true under `cfg(fuzzing)`.
    pub fn verify_checksum(&self, src: Address, dst: Address) -> bool {
        if cfg!(fuzzing) {
            return true;
        }
        let buf = self.buffer.as_ref();
        let acc =
            checksum::pseudo_header_v6(&src.0, &dst.0, NextHeader::Icmpv6.into(), buf.len() as u32);
        checksum::fold(checksum::accumulate(acc, buf)) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn put(&mut self, at: usize, v: &[u8]) {
        self.buffer.as_mut()[at..at + v.len()].copy_from_slice(v);
    }

    /// Sets the message type.
    pub fn set_msg_type(&mut self, v: Message) {
        self.put(field::TYPE, &[v.into()]);
    }

    /// Sets the message code.
    pub fn set_msg_code(&mut self, v: u8) {
        self.put(field::CODE, &[v]);
    }

    /// Sets the checksum field.
    pub fn set_checksum(&mut self, v: u16) {
        self.put(field::CHECKSUM.start, &v.to_be_bytes());
    }

    /// Computes the checksum over the pseudo-header and the whole buffer and stores it.
    pub fn fill_checksum(&mut self, src: Address, dst: Address) {
        self.set_checksum(0);
        let buf = self.buffer.as_ref();
        let acc =
            checksum::pseudo_header_v6(&src.0, &dst.0, NextHeader::Icmpv6.into(), buf.len() as u32);
        let c = !checksum::fold(checksum::accumulate(acc, buf));
        self.set_checksum(c);
    }
}

/// An ICMPv6 message, as far as a host cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repr<'a> {
    /// 128
    EchoRequest {
        /// Identifier.
        ident: u16,
        /// Sequence number.
        seq_no: u16,
        /// Data to echo back.
        data: &'a [u8],
    },
    /// 129
    EchoReply {
        /// Identifier.
        ident: u16,
        /// Sequence number.
        seq_no: u16,
        /// Echoed data.
        data: &'a [u8],
    },
    /// 1: the invoking packet could not be delivered.
    DstUnreachable {
        /// See [`unreachable`].
        code: u8,
        /// As much of the invoking packet as fits.
        invoking: &'a [u8],
    },
    /// 2: a link on the path is smaller than the invoking packet.
    PacketTooBig {
        /// The MTU of that link (the caller refuses one below 1280).
        mtu: u32,
        /// As much of the invoking packet as fits.
        invoking: &'a [u8],
    },
    /// 3: hop limit exceeded (0) or reassembly timed out (1).
    TimeExceeded {
        /// Code.
        code: u8,
        /// As much of the invoking packet as fits.
        invoking: &'a [u8],
    },
    /// 4: see [`param_problem`].
    ParamProblem {
        /// Code.
        code: u8,
        /// Offset in the invoking packet of the octet at fault.
        pointer: u32,
        /// As much of the invoking packet as fits.
        invoking: &'a [u8],
    },
    /// 133
    RouterSolicit {
        /// The sender's link-layer address (never from `::`).
        source_lladdr: Option<EthernetAddress>,
    },
    /// 134
    RouterAdvert {
        /// Hop limit to use (0: unspecified).
        hop_limit: u8,
        /// M: addresses from DHCPv6.
        managed: bool,
        /// O: other configuration from DHCPv6.
        other: bool,
        /// Seconds this router is a default router (0: it is not).
        router_lifetime: u16,
        /// Milliseconds (0: unspecified).
        reachable_time: u32,
        /// Milliseconds (0: unspecified).
        retrans_timer: u32,
        /// Source link-layer address, MTU, prefixes, RDNSS...
        options: NdiscOptions<'a>,
    },
    /// 135
    NeighborSolicit {
        /// The address asked about.
        target: Address,
        /// The sender's link-layer address (never from `::`).
        source_lladdr: Option<EthernetAddress>,
        /// The DAD nonce (RFC 7527), when 6 octets.
        nonce: Option<[u8; 6]>,
    },
    /// 136
    NeighborAdvert {
        /// R: the sender is a router.
        router: bool,
        /// S: an answer to a solicitation.
        solicited: bool,
        /// O: override a cached link-layer address.
        override_: bool,
        /// The address advertised.
        target: Address,
        /// Its link-layer address.
        target_lladdr: Option<EthernetAddress>,
    },
    /// 137 (parsed; a host never sends one).
    Redirect {
        /// The better first hop.
        target: Address,
        /// The destination being redirected.
        dst: Address,
        /// Target link-layer address, redirected header.
        options: NdiscOptions<'a>,
    },
    /// 130, from a link-local source (RFC 3810 §5.1.14).
    MldQuery {
        /// Maximum response code ([`mld_max_resp_delay_ms`] decodes it).
        max_resp_code: u16,
        /// The group asked about, `::` for a general query.
        group: Address,
        /// MLDv2's fields; `None` for a 24-byte MLDv1 query.
        v2: Option<MldQueryV2<'a>>,
    },
    /// 143
    MldReport {
        /// The address records.
        records: MldRecords<'a>,
    },
    /// Any other type (MLDv1 reports and done included), or a known type with a code we
    /// do not know.
    /// Emitted as its type's fixed part, zeroed.
    Other {
        /// Type.
        msg_type: Message,
        /// Code.
        code: u8,
    },
}

impl<'a> Repr<'a> {
    /// Parses a message sent from `src` to `dst` with `hop_limit`: checks the length, the
    /// checksum ([`Error::Checksum`]) and, for Neighbor Discovery, RFC 4861 §6.1/§7.1
    /// ([`Error::Malformed`]): hop limit 255, code 0, every option of non-zero length
    /// and within the message, a router advertisement or redirect from a link-local
    /// address, no multicast target, no source link-layer address from `::` and a
    /// solicitation from `::` only to a solicited-node group, no solicited advertisement
    /// to a multicast group.
    ///
    /// # Fuzzing
    /// The checksum is not checked under `cfg(fuzzing)`.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(
        packet: &Packet<&'a T>,
        src: Address,
        dst: Address,
        hop_limit: u8,
    ) -> Result<Repr<'a>> {
        packet.check_len()?;
        if !packet.verify_checksum(src, dst) {
            return Err(Error::Checksum);
        }
        let buf: &'a [u8] = packet.buffer.as_ref();
        let msg_type = packet.msg_type();
        let code = packet.msg_code();
        let rest = buf.get(msg_type.min_len()..).ok_or(Error::Truncated)?;
        let ndisc = matches!(
            msg_type,
            Message::RouterSolicit
                | Message::RouterAdvert
                | Message::NeighborSolicit
                | Message::NeighborAdvert
                | Message::Redirect
        );
        if ndisc && (hop_limit != 255 || code != 0) {
            return Err(Error::Malformed);
        }
        let malformed_if = |bad: bool| if bad { Err(Error::Malformed) } else { Ok(()) };
        Ok(match (msg_type, code) {
            (Message::EchoRequest, 0) => Repr::EchoRequest {
                ident: packet.echo_ident(),
                seq_no: packet.echo_seq_no(),
                data: rest,
            },
            (Message::EchoReply, 0) => Repr::EchoReply {
                ident: packet.echo_ident(),
                seq_no: packet.echo_seq_no(),
                data: rest,
            },
            (Message::DstUnreachable, code) => Repr::DstUnreachable {
                code,
                invoking: rest,
            },
            (Message::PacketTooBig, 0) => Repr::PacketTooBig {
                mtu: packet.mtu(),
                invoking: rest,
            },
            (Message::TimeExceeded, code @ 0..=1) => Repr::TimeExceeded {
                code,
                invoking: rest,
            },
            (Message::ParamProblem, code) => Repr::ParamProblem {
                code,
                pointer: packet.pointer(),
                invoking: rest,
            },
            (Message::RouterSolicit, _) => {
                let options = NdiscOptions::parse(rest)?;
                let source_lladdr = options.source_lladdr();
                malformed_if(src.is_unspecified() && source_lladdr.is_some())?;
                Repr::RouterSolicit { source_lladdr }
            }
            (Message::RouterAdvert, _) => {
                malformed_if(!src.is_link_local())?;
                Repr::RouterAdvert {
                    hop_limit: packet.ra_hop_limit(),
                    managed: packet.ra_managed(),
                    other: packet.ra_other(),
                    router_lifetime: packet.router_lifetime(),
                    reachable_time: packet.reachable_time(),
                    retrans_timer: packet.retrans_timer(),
                    options: NdiscOptions::parse(rest)?,
                }
            }
            (Message::NeighborSolicit, _) => {
                let target = packet.target_addr();
                let options = NdiscOptions::parse(rest)?;
                let source_lladdr = options.source_lladdr();
                malformed_if(target.is_multicast())?;
                malformed_if(
                    src.is_unspecified()
                        && (source_lladdr.is_some() || !dst.is_solicited_node_multicast()),
                )?;
                Repr::NeighborSolicit {
                    target,
                    source_lladdr,
                    nonce: options.nonce(),
                }
            }
            (Message::NeighborAdvert, _) => {
                let target = packet.target_addr();
                let options = NdiscOptions::parse(rest)?;
                malformed_if(target.is_multicast())?;
                malformed_if(dst.is_multicast() && packet.na_solicited())?;
                Repr::NeighborAdvert {
                    router: packet.na_router(),
                    solicited: packet.na_solicited(),
                    override_: packet.na_override(),
                    target,
                    target_lladdr: options.target_lladdr(),
                }
            }
            (Message::Redirect, _) => {
                malformed_if(!src.is_link_local())?;
                let dst_addr = packet.redirect_dst_addr();
                malformed_if(dst_addr.is_multicast())?;
                Repr::Redirect {
                    target: packet.target_addr(),
                    dst: dst_addr,
                    options: NdiscOptions::parse(rest)?,
                }
            }
            (Message::MldQuery, 0) => {
                malformed_if(!src.is_link_local())?;
                let group = packet.mld_group();
                malformed_if(!group.is_unspecified() && !group.is_multicast())?;
                let v2 = if buf.len() == 24 {
                    None
                } else {
                    let n = 16 * usize::from(packet.mld_num_sources());
                    let sources = buf
                        .get(MLDV2_QUERY_LEN..MLDV2_QUERY_LEN + n)
                        .ok_or(Error::Truncated)?;
                    Some(MldQueryV2 {
                        suppress: packet.mld_suppress(),
                        qrv: packet.mld_qrv(),
                        qqic: packet.mld_qqic(),
                        sources,
                    })
                };
                Repr::MldQuery {
                    max_resp_code: packet.mld_max_resp_code(),
                    group,
                    v2,
                }
            }
            (Message::MldReport, 0) => Repr::MldReport {
                records: MldRecords::parse(rest, packet.mld_num_records())?,
            },
            (msg_type, code) => Repr::Other { msg_type, code },
        })
    }

    /// Length of the message [`emit`](Self::emit) writes.
    pub fn buffer_len(&self) -> usize {
        let lladdr = |a: &Option<EthernetAddress>| if a.is_some() { 8 } else { 0 };
        match self {
            Repr::EchoRequest { data, .. } | Repr::EchoReply { data, .. } => {
                HEADER_LEN + data.len()
            }
            Repr::DstUnreachable { invoking, .. }
            | Repr::PacketTooBig { invoking, .. }
            | Repr::TimeExceeded { invoking, .. }
            | Repr::ParamProblem { invoking, .. } => HEADER_LEN + invoking.len(),
            Repr::RouterSolicit { source_lladdr } => HEADER_LEN + lladdr(source_lladdr),
            Repr::RouterAdvert { options, .. } => 16 + options.as_bytes().len(),
            Repr::NeighborSolicit {
                source_lladdr,
                nonce,
                ..
            } => 24 + lladdr(source_lladdr) + if nonce.is_some() { 8 } else { 0 },
            Repr::NeighborAdvert { target_lladdr, .. } => 24 + lladdr(target_lladdr),
            Repr::Redirect { options, .. } => 40 + options.as_bytes().len(),
            Repr::MldReport { records } => HEADER_LEN + records.bytes.len(),
            Repr::MldQuery { v2: None, .. } => 24,
            Repr::MldQuery { v2: Some(v2), .. } => MLDV2_QUERY_LEN + v2.sources.len(),
            Repr::Other { msg_type, .. } => msg_type.min_len(),
        }
    }

    /// Writes the message and fills the checksum for `src` → `dst`. An error's invoking
    /// packet is the caller's to cut to [`MAX_INVOKING_LEN`]. For [`Repr::Other`] only
    /// the type and code are written and the rest of the header zeroed.
    ///
    /// # Panics
    /// If the buffer is shorter than [`buffer_len`](Self::buffer_len). The checksum
    /// covers the whole buffer, so it should be exactly that long.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        packet: &mut Packet<T>,
        src: Address,
        dst: Address,
    ) {
        let (msg_type, code) = match *self {
            Repr::EchoRequest { .. } => (Message::EchoRequest, 0),
            Repr::EchoReply { .. } => (Message::EchoReply, 0),
            Repr::DstUnreachable { code, .. } => (Message::DstUnreachable, code),
            Repr::PacketTooBig { .. } => (Message::PacketTooBig, 0),
            Repr::TimeExceeded { code, .. } => (Message::TimeExceeded, code),
            Repr::ParamProblem { code, .. } => (Message::ParamProblem, code),
            Repr::RouterSolicit { .. } => (Message::RouterSolicit, 0),
            Repr::RouterAdvert { .. } => (Message::RouterAdvert, 0),
            Repr::NeighborSolicit { .. } => (Message::NeighborSolicit, 0),
            Repr::NeighborAdvert { .. } => (Message::NeighborAdvert, 0),
            Repr::Redirect { .. } => (Message::Redirect, 0),
            Repr::MldReport { .. } => (Message::MldReport, 0),
            Repr::MldQuery { .. } => (Message::MldQuery, 0),
            Repr::Other { msg_type, code } => (msg_type, code),
        };
        packet.set_msg_type(msg_type);
        packet.set_msg_code(code);
        packet.put(4, &[0; 4]);
        let fixed = msg_type.min_len();
        packet.buffer.as_mut()[HEADER_LEN..fixed].fill(0);
        match *self {
            Repr::EchoRequest {
                ident,
                seq_no,
                data,
            }
            | Repr::EchoReply {
                ident,
                seq_no,
                data,
            } => {
                packet.put(field::ECHO_IDENT.start, &ident.to_be_bytes());
                packet.put(field::ECHO_SEQNO.start, &seq_no.to_be_bytes());
                packet.put(HEADER_LEN, data);
            }
            Repr::DstUnreachable { invoking, .. } | Repr::TimeExceeded { invoking, .. } => {
                packet.put(HEADER_LEN, invoking);
            }
            Repr::PacketTooBig {
                mtu: word,
                invoking,
            }
            | Repr::ParamProblem {
                pointer: word,
                invoking,
                ..
            } => {
                packet.put(field::WORD.start, &word.to_be_bytes());
                packet.put(HEADER_LEN, invoking);
            }
            Repr::RouterSolicit { source_lladdr } => {
                if let Some(a) = source_lladdr {
                    NdiscOption::SourceLinkLayerAddr(a).emit(&mut packet.buffer.as_mut()[8..]);
                }
            }
            Repr::RouterAdvert {
                hop_limit,
                managed,
                other,
                router_lifetime,
                reachable_time,
                retrans_timer,
                options,
            } => {
                let flags = (u8::from(managed) << 7) | (u8::from(other) << 6);
                packet.put(field::RA_HOP_LIMIT, &[hop_limit, flags]);
                packet.put(
                    field::RA_ROUTER_LIFETIME.start,
                    &router_lifetime.to_be_bytes(),
                );
                packet.put(
                    field::RA_REACHABLE_TIME.start,
                    &reachable_time.to_be_bytes(),
                );
                packet.put(field::RA_RETRANS_TIMER.start, &retrans_timer.to_be_bytes());
                packet.put(16, options.as_bytes());
            }
            Repr::NeighborSolicit {
                target,
                source_lladdr,
                nonce,
            } => {
                packet.put(field::TARGET.start, &target.0);
                let mut at = 24;
                if let Some(a) = source_lladdr {
                    NdiscOption::SourceLinkLayerAddr(a).emit(&mut packet.buffer.as_mut()[at..]);
                    at += 8;
                }
                if let Some(n) = nonce {
                    NdiscOption::Nonce(&n).emit(&mut packet.buffer.as_mut()[at..]);
                }
            }
            Repr::NeighborAdvert {
                router,
                solicited,
                override_,
                target,
                target_lladdr,
            } => {
                let flags = (u8::from(router) << 7)
                    | (u8::from(solicited) << 6)
                    | (u8::from(override_) << 5);
                packet.put(field::NA_FLAGS, &[flags]);
                packet.put(field::TARGET.start, &target.0);
                if let Some(a) = target_lladdr {
                    NdiscOption::TargetLinkLayerAddr(a).emit(&mut packet.buffer.as_mut()[24..]);
                }
            }
            Repr::Redirect {
                target,
                dst: redirected,
                options,
            } => {
                packet.put(field::TARGET.start, &target.0);
                packet.put(field::REDIRECT_DEST.start, &redirected.0);
                packet.put(40, options.as_bytes());
            }
            Repr::MldReport { records } => {
                packet.put(field::MLD_RECORDS.start, &records.count.to_be_bytes());
                packet.put(HEADER_LEN, records.bytes);
            }
            Repr::MldQuery {
                max_resp_code,
                group,
                v2,
            } => {
                packet.put(field::MLD_MAX_RESP.start, &max_resp_code.to_be_bytes());
                packet.put(field::MLD_GROUP.start, &group.0);
                if let Some(v2) = v2 {
                    let n = u16::try_from(v2.sources.len() / 16).expect("at most 65535 sources");
                    let s_qrv = (u8::from(v2.suppress) << 3) | (v2.qrv & 7);
                    packet.put(field::MLD_S_QRV, &[s_qrv, v2.qqic]);
                    packet.put(field::MLD_NUM_SOURCES.start, &n.to_be_bytes());
                    packet.put(MLDV2_QUERY_LEN, v2.sources);
                }
            }
            Repr::Other { .. } => {}
        }
        packet.fill_checksum(src, dst);
    }
}

#[cfg(test)]
mod tests;
