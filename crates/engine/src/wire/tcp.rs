//! TCP segment headers (RFC 9293), without state: the [`Packet`] view, the [`Repr`] the
//! TCP layer emits and the [`ParsedRepr`] it reads. The options, one by one and as the set
//! the TCP layer acts on, are `options.rs`'s (re-exported here).
//!
//! Heads up! read RFC 9293 §3.1 (header format, options), §3.2 (option definitions) and
//! RFC 7323 §2 (window scale) before changing the option code.
//!
//! Sequence numbers are plain `u32`; the TCP layer does the modular arithmetic. Checksums
//! are split the same way: [`Repr::emit_header`] leaves the checksum field zero, because
//! the TCP layer adds stored payload sums to the header sum itself. For a segment whose
//! payload is in the same buffer, [`Packet::fill_checksum`] does the whole job.
//!
//! The buffer given to [`Packet`] must be the whole segment (the IPv4 payload, padding
//! already cut off): there is no length field, so everything after the header is payload.

use super::ipv4::{Address as Ipv4Address, Protocol};
use super::{checksum, Error, Result};

mod field {
    use core::ops::Range;
    pub const SRC_PORT: Range<usize> = 0..2;
    pub const DST_PORT: Range<usize> = 2..4;
    pub const SEQ_NUM: Range<usize> = 4..8;
    pub const ACK_NUM: Range<usize> = 8..12;
    /// Data offset (high nibble) and reserved bits.
    pub const DATA_OFF: usize = 12;
    pub const FLAGS: usize = 13;
    pub const WIN_SIZE: Range<usize> = 14..16;
    pub const CHECKSUM: Range<usize> = 16..18;
    pub const URGENT: Range<usize> = 18..20;
    pub const OPTIONS: usize = 20;
}

/// Length of a TCP header without options.
pub const HEADER_LEN: usize = field::OPTIONS;

/// The largest window scale shift RFC 7323 allows.
pub const MAX_WINDOW_SCALE: u8 = 14;

/// The TCP control bits the stack acts on. URG, ECE and CWR are read through
/// [`Packet::urg`], [`Packet::ece`] and [`Packet::cwr`], and never sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Flags {
    /// No more data from sender.
    pub fin: bool,
    /// Synchronize sequence numbers.
    pub syn: bool,
    /// Reset the connection.
    pub rst: bool,
    /// Push.
    pub psh: bool,
    /// The acknowledgment number is significant.
    pub ack: bool,
}

mod flag_bit {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const RST: u8 = 0x04;
    pub const PSH: u8 = 0x08;
    pub const ACK: u8 = 0x10;
    pub const URG: u8 = 0x20;
    pub const ECE: u8 = 0x40;
    pub const CWR: u8 = 0x80;
}

impl Flags {
    /// No flag set.
    pub const NONE: Flags = Flags {
        fin: false,
        syn: false,
        rst: false,
        psh: false,
        ack: false,
    };
    /// FIN only.
    pub const FIN: Flags = Flags {
        fin: true,
        ..Flags::NONE
    };
    /// SYN only.
    pub const SYN: Flags = Flags {
        syn: true,
        ..Flags::NONE
    };
    /// RST only.
    pub const RST: Flags = Flags {
        rst: true,
        ..Flags::NONE
    };
    /// PSH only.
    pub const PSH: Flags = Flags {
        psh: true,
        ..Flags::NONE
    };
    /// ACK only.
    pub const ACK: Flags = Flags {
        ack: true,
        ..Flags::NONE
    };

    /// Reads the five flags from the control-bit byte (URG, ECE and CWR are dropped).
    pub const fn from_bits(bits: u8) -> Flags {
        Flags {
            fin: bits & flag_bit::FIN != 0,
            syn: bits & flag_bit::SYN != 0,
            rst: bits & flag_bit::RST != 0,
            psh: bits & flag_bit::PSH != 0,
            ack: bits & flag_bit::ACK != 0,
        }
    }

    /// The control-bit byte for these flags.
    pub const fn bits(self) -> u8 {
        let mut bits = 0;
        if self.fin {
            bits |= flag_bit::FIN;
        }
        if self.syn {
            bits |= flag_bit::SYN;
        }
        if self.rst {
            bits |= flag_bit::RST;
        }
        if self.psh {
            bits |= flag_bit::PSH;
        }
        if self.ack {
            bits |= flag_bit::ACK;
        }
        bits
    }

    /// Whether every flag of `other` is set in `self`.
    pub const fn contains(self, other: Flags) -> bool {
        self.bits() & other.bits() == other.bits()
    }

    /// `self` with the flags of `other` added.
    pub const fn union(self, other: Flags) -> Flags {
        Flags::from_bits(self.bits() | other.bits())
    }

    /// `self` with the flags of `other` removed.
    pub const fn difference(self, other: Flags) -> Flags {
        Flags::from_bits(self.bits() & !other.bits())
    }
}

impl core::ops::BitOr for Flags {
    type Output = Flags;
    fn bitor(self, rhs: Flags) -> Flags {
        self.union(rhs)
    }
}

impl core::ops::BitOrAssign for Flags {
    fn bitor_assign(&mut self, rhs: Flags) {
        *self = self.union(rhs);
    }
}

mod options;

use options::option_kind;
pub use options::{parse_options, Options, OptionsIter, SackBlocks, TcpOption};

/// A view of a TCP segment.
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

    /// Checks that the buffer holds the fixed header ([`Error::Truncated`]), that the data
    /// offset is at least 5 words ([`Error::Malformed`]) and that the header with its
    /// options fits in the buffer ([`Error::Truncated`]).
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let header_len = usize::from(self.header_len());
        if header_len < HEADER_LEN {
            return Err(Error::Malformed);
        }
        if header_len > len {
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

    /// Sequence number.
    pub fn seq_number(&self) -> u32 {
        self.read_u32(field::SEQ_NUM)
    }

    /// Acknowledgment number (meaningful only with ACK).
    pub fn ack_number(&self) -> u32 {
        self.read_u32(field::ACK_NUM)
    }

    /// Header length in bytes (data offset·4), options included.
    pub fn header_len(&self) -> u8 {
        (self.buffer.as_ref()[field::DATA_OFF] >> 4) * 4
    }

    /// FIN, SYN, RST, PSH and ACK.
    pub fn flags(&self) -> Flags {
        Flags::from_bits(self.flag_bits())
    }

    /// FIN.
    pub fn fin(&self) -> bool {
        self.flag_bits() & flag_bit::FIN != 0
    }

    /// SYN.
    pub fn syn(&self) -> bool {
        self.flag_bits() & flag_bit::SYN != 0
    }

    /// RST.
    pub fn rst(&self) -> bool {
        self.flag_bits() & flag_bit::RST != 0
    }

    /// PSH.
    pub fn psh(&self) -> bool {
        self.flag_bits() & flag_bit::PSH != 0
    }

    /// ACK.
    pub fn ack(&self) -> bool {
        self.flag_bits() & flag_bit::ACK != 0
    }

    /// URG.
    pub fn urg(&self) -> bool {
        self.flag_bits() & flag_bit::URG != 0
    }

    /// ECE (RFC 3168).
    pub fn ece(&self) -> bool {
        self.flag_bits() & flag_bit::ECE != 0
    }

    /// CWR (RFC 3168).
    pub fn cwr(&self) -> bool {
        self.flag_bits() & flag_bit::CWR != 0
    }

    fn flag_bits(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }

    /// Window field (not scaled).
    pub fn window_len(&self) -> u16 {
        self.read_u16(field::WIN_SIZE)
    }

    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        self.read_u16(field::CHECKSUM)
    }

    /// Urgent pointer.
    pub fn urgent_at(&self) -> u16 {
        self.read_u16(field::URGENT)
    }

    /// The option bytes (empty when the data offset is 5). Read them with
    /// [`OptionsIter`] or [`parse_options`].
    pub fn options(&self) -> &[u8] {
        &self.buffer.as_ref()[field::OPTIONS..usize::from(self.header_len())]
    }

    /// Everything after the header.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[usize::from(self.header_len())..]
    }

    /// Sequence space the segment occupies: payload length, plus one for SYN and one
    /// for FIN.
    pub fn segment_len(&self) -> usize {
        self.payload().len() + usize::from(self.syn()) + usize::from(self.fin())
    }

    /// Whether the checksum verifies for a segment from `src` to `dst` (the pseudo-header
    /// and the whole buffer).
    ///
    /// # Fuzzing
    /// Always true under `cfg(fuzzing)`.
    pub fn verify_checksum(&self, src: Ipv4Address, dst: Ipv4Address) -> bool {
        if cfg!(fuzzing) {
            return true;
        }
        let data = self.buffer.as_ref();
        let Ok(len) = u16::try_from(data.len()) else {
            return false;
        };
        let acc = checksum::pseudo_header_v4(src.0, dst.0, Protocol::Tcp.into(), len);
        checksum::fold(checksum::accumulate(acc, data)) == 0xffff
    }

    fn read_u16(&self, f: core::ops::Range<usize>) -> u16 {
        let b = &self.buffer.as_ref()[f];
        u16::from_be_bytes([b[0], b[1]])
    }

    fn read_u32(&self, f: core::ops::Range<usize>) -> u32 {
        let b = &self.buffer.as_ref()[f];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the source port.
    pub fn set_src_port(&mut self, v: u16) {
        self.write(field::SRC_PORT, &v.to_be_bytes());
    }

    /// Sets the destination port.
    pub fn set_dst_port(&mut self, v: u16) {
        self.write(field::DST_PORT, &v.to_be_bytes());
    }

    /// Sets the sequence number.
    pub fn set_seq_number(&mut self, v: u32) {
        self.write(field::SEQ_NUM, &v.to_be_bytes());
    }

    /// Sets the acknowledgment number.
    pub fn set_ack_number(&mut self, v: u32) {
        self.write(field::ACK_NUM, &v.to_be_bytes());
    }

    /// Sets the header length in bytes (a multiple of 4, at most 60); clears the reserved
    /// bits.
    pub fn set_header_len(&mut self, len: u8) {
        self.buffer.as_mut()[field::DATA_OFF] = ((len / 4) & 0x0f) << 4;
    }

    /// Sets FIN, SYN, RST, PSH and ACK as given and clears URG, ECE and CWR.
    pub fn set_flags(&mut self, flags: Flags) {
        self.buffer.as_mut()[field::FLAGS] = flags.bits();
    }

    /// Sets the window field.
    pub fn set_window_len(&mut self, v: u16) {
        self.write(field::WIN_SIZE, &v.to_be_bytes());
    }

    /// Sets the checksum field.
    pub fn set_checksum(&mut self, v: u16) {
        self.write(field::CHECKSUM, &v.to_be_bytes());
    }

    /// Sets the urgent pointer.
    pub fn set_urgent_at(&mut self, v: u16) {
        self.write(field::URGENT, &v.to_be_bytes());
    }

    /// The option bytes, mutable.
    pub fn options_mut(&mut self) -> &mut [u8] {
        let end = usize::from(self.header_len());
        &mut self.buffer.as_mut()[field::OPTIONS..end]
    }

    /// Everything after the header, mutable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let start = usize::from(self.header_len());
        &mut self.buffer.as_mut()[start..]
    }

    /// Computes the checksum over the pseudo-header and the whole buffer (header and
    /// payload) and stores it.
    ///
    /// # Panics
    /// In debug builds, if the buffer is longer than 65 535 bytes.
    pub fn fill_checksum(&mut self, src: Ipv4Address, dst: Ipv4Address) {
        self.set_checksum(0);
        let data = self.buffer.as_ref();
        debug_assert!(data.len() <= usize::from(u16::MAX));
        let acc = checksum::pseudo_header_v4(src.0, dst.0, Protocol::Tcp.into(), data.len() as u16);
        let c = !checksum::fold(checksum::accumulate(acc, data));
        self.set_checksum(c);
    }

    fn write(&mut self, f: core::ops::Range<usize>, bytes: &[u8]) {
        self.buffer.as_mut()[f].copy_from_slice(bytes);
    }
}

/// A segment header to emit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Sequence number.
    pub seq_number: u32,
    /// Acknowledgment number; the ACK flag is set exactly when this is `Some`.
    pub ack_number: Option<u32>,
    /// Control bits; the ACK sent follows `ack_number`, not `flags.ack`.
    pub flags: Flags,
    /// Window field (already scaled down).
    pub window_len: u16,
    /// MSS option to send (on a SYN).
    pub max_seg_size: Option<u16>,
    /// Window scale option to send (on a SYN), as NOP + WS.
    pub window_scale: Option<u8>,
    /// SACK-permitted option to send (on a SYN), as NOP + NOP + SACK-permitted.
    pub sack_permitted: bool,
    /// Timestamps option to send, `(TSval, TSecr)`, as NOP + NOP + timestamps (RFC 7323
    /// Appendix A's layout).
    pub timestamps: Option<(u32, u32)>,
}

impl Repr {
    /// Header length [`emit_header`](Self::emit_header) writes: 20, plus 4 for MSS, plus
    /// 4 for NOP + window scale, plus 4 for NOP + NOP + SACK permitted, plus 12 for NOP +
    /// NOP + timestamps. Always a multiple of 4.
    pub const fn header_len(&self) -> usize {
        let mut len = HEADER_LEN;
        if self.max_seg_size.is_some() {
            len += 4;
        }
        if self.window_scale.is_some() {
            len += 4;
        }
        if self.sack_permitted {
            len += 4;
        }
        if self.timestamps.is_some() {
            len += 12;
        }
        len
    }

    /// The flags that go on the wire: `flags` with ACK set iff `ack_number` is `Some`.
    pub const fn wire_flags(&self) -> Flags {
        Flags {
            ack: self.ack_number.is_some(),
            ..self.flags
        }
    }

    /// Writes the header, options included, into the first
    /// [`header_len`](Self::header_len) bytes of `buf`. The checksum field is left ZERO
    /// and the urgent pointer is zero.
    ///
    /// # Panics
    /// If `buf` is shorter than `header_len()`.
    pub fn emit_header(&self, buf: &mut [u8]) {
        let header_len = self.header_len();
        let mut packet = Packet::new_unchecked(&mut buf[..header_len]);
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_seq_number(self.seq_number);
        packet.set_ack_number(self.ack_number.unwrap_or(0));
        packet.set_header_len(header_len as u8);
        packet.set_flags(self.wire_flags());
        packet.set_window_len(self.window_len);
        packet.set_checksum(0);
        packet.set_urgent_at(0);
        // The options in the order and layout `header_len` counts, written as whole words
        // (the bytes `TcpOption::emit` would write one option at a time).
        use option_kind::{MSS, NOP, SACK_PERMITTED, TIMESTAMPS, WS};
        let opts = packet.options_mut();
        let mut at = 0;
        if let Some(mss) = self.max_seg_size {
            let [hi, lo] = mss.to_be_bytes();
            opts[at..at + 4].copy_from_slice(&[MSS, 4, hi, lo]);
            at += 4;
        }
        if let Some(shift) = self.window_scale {
            opts[at..at + 4].copy_from_slice(&[NOP, WS, 3, shift]);
            at += 4;
        }
        if self.sack_permitted {
            opts[at..at + 4].copy_from_slice(&[NOP, NOP, SACK_PERMITTED, 2]);
            at += 4;
        }
        if let Some((tsval, tsecr)) = self.timestamps {
            opts[at..at + 4].copy_from_slice(&[NOP, NOP, TIMESTAMPS, 10]);
            opts[at + 4..at + 8].copy_from_slice(&tsval.to_be_bytes());
            opts[at + 8..at + 12].copy_from_slice(&tsecr.to_be_bytes());
            at += 12;
        }
        debug_assert_eq!(at, opts.len());
    }

    /// Parses a segment for the TCP layer. Checks the lengths; refuses port 0 and more
    /// than one of SYN, FIN and RST ([`Error::Malformed`]) and malformed options.
    /// The checksum is NOT checked here (it needs the addresses): call
    /// [`Packet::verify_checksum`] first.
    pub fn parse<'a, T: AsRef<[u8]> + ?Sized>(packet: &Packet<&'a T>) -> Result<ParsedRepr<'a>> {
        packet.check_len()?;
        if packet.src_port() == 0 || packet.dst_port() == 0 {
            return Err(Error::Malformed);
        }
        let flags = packet.flags();
        if u8::from(flags.syn) + u8::from(flags.fin) + u8::from(flags.rst) > 1 {
            return Err(Error::Malformed);
        }
        let buf: &'a [u8] = packet.buffer.as_ref();
        let header_len = usize::from(packet.header_len());
        let options = buf
            .get(field::OPTIONS..header_len)
            .ok_or(Error::Truncated)?;
        let payload = buf.get(header_len..).ok_or(Error::Truncated)?;
        Ok(ParsedRepr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
            seq_number: packet.seq_number(),
            ack_number: if packet.ack() {
                Some(packet.ack_number())
            } else {
                None
            },
            flags,
            window_len: packet.window_len(),
            options: parse_options(options)?,
            payload,
        })
    }
}

/// A received segment, as the TCP layer consumes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParsedRepr<'a> {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Sequence number.
    pub seq_number: u32,
    /// Acknowledgment number, `Some` iff ACK is set.
    pub ack_number: Option<u32>,
    /// FIN, SYN, RST, PSH and ACK as received.
    pub flags: Flags,
    /// Window field (not scaled).
    pub window_len: u16,
    /// MSS, window scale, SACK permitted and SACK blocks, if present.
    pub options: Options,
    /// The segment's data.
    pub payload: &'a [u8],
}

impl ParsedRepr<'_> {
    /// Sequence space the segment occupies: payload length, plus one each for SYN and FIN.
    pub fn segment_len(&self) -> usize {
        self.payload.len() + usize::from(self.flags.syn) + usize::from(self.flags.fin)
    }
}

#[cfg(test)]
mod tests;
