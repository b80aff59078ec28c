//! TCP segment headers and options (RFC 9293), without state.
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

mod option_kind {
    pub const END: u8 = 0;
    pub const NOP: u8 = 1;
    pub const MSS: u8 = 2;
    pub const WS: u8 = 3;
    pub const SACK_PERMITTED: u8 = 4;
    pub const SACK: u8 = 5;
    pub const TIMESTAMPS: u8 = 8;
}

/// One TCP option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcpOption<'a> {
    /// Kind 0: end of the option list.
    EndOfList,
    /// Kind 1: padding.
    NoOperation,
    /// Kind 2, length 4: the largest segment the sender can receive.
    MaxSegmentSize(u16),
    /// Kind 3, length 3: the shift count of the sender's receive window (RFC 7323),
    /// as sent (not clamped).
    WindowScale(u8),
    /// Kind 4, length 2: the sender understands SACK (RFC 2018).
    SackPermitted,
    /// Kind 5, length 2 + 8n (n = 1..4): blocks of data the receiver holds above its
    /// cumulative acknowledgment (RFC 2018 §3).
    Sack(SackBlocks),
    /// Kind 8, length 10: timestamps (RFC 7323).
    Timestamps {
        /// TSval.
        tsval: u32,
        /// TSecr.
        tsecr: u32,
    },
    /// Any other kind, with its data (the bytes after kind and length).
    Unknown {
        /// Option kind.
        kind: u8,
        /// Option data.
        data: &'a [u8],
    },
}

impl<'a> TcpOption<'a> {
    /// Parses the option at the start of `buf` and returns the bytes after it.
    ///
    /// Every option but EOL and NOP has a length byte that counts kind and length
    /// (RFC 9293 §3.2). A missing length byte, a length below 2, a length running past
    /// `buf`, a length other than the fixed one of MSS (4), window scale (3), SACK
    /// permitted (2) or timestamps (10), and a SACK option whose length is not 2 + 8n for
    /// n = 1..4 are [`Error::Malformed`], as is an empty `buf`.
    pub fn parse(buf: &'a [u8]) -> Result<(&'a [u8], TcpOption<'a>)> {
        let (&kind, after_kind) = buf.split_first().ok_or(Error::Malformed)?;
        match kind {
            option_kind::END => return Ok((after_kind, TcpOption::EndOfList)),
            option_kind::NOP => return Ok((after_kind, TcpOption::NoOperation)),
            _ => {}
        }
        let len = usize::from(*after_kind.first().ok_or(Error::Malformed)?);
        if len < 2 {
            return Err(Error::Malformed);
        }
        let data = buf.get(2..len).ok_or(Error::Malformed)?;
        let rest = buf.get(len..).ok_or(Error::Malformed)?;
        let option = match (kind, data) {
            (option_kind::MSS, &[a, b]) => TcpOption::MaxSegmentSize(u16::from_be_bytes([a, b])),
            (option_kind::WS, &[shift]) => TcpOption::WindowScale(shift),
            (option_kind::SACK_PERMITTED, &[]) => TcpOption::SackPermitted,
            (option_kind::SACK, d) if !d.is_empty() && d.len() % 8 == 0 && d.len() <= 32 => {
                let mut blocks = SackBlocks::NONE;
                for b in d.chunks_exact(8) {
                    blocks.push(
                        u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
                        u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
                    );
                }
                TcpOption::Sack(blocks)
            }
            (option_kind::TIMESTAMPS, &[a, b, c, d, e, f, g, h]) => TcpOption::Timestamps {
                tsval: u32::from_be_bytes([a, b, c, d]),
                tsecr: u32::from_be_bytes([e, f, g, h]),
            },
            (
                option_kind::MSS
                | option_kind::WS
                | option_kind::SACK_PERMITTED
                | option_kind::SACK
                | option_kind::TIMESTAMPS,
                _,
            ) => return Err(Error::Malformed),
            (kind, data) => TcpOption::Unknown { kind, data },
        };
        Ok((rest, option))
    }

    /// Bytes this option takes on the wire.
    pub const fn buffer_len(&self) -> usize {
        match self {
            TcpOption::EndOfList | TcpOption::NoOperation => 1,
            TcpOption::MaxSegmentSize(_) => 4,
            TcpOption::WindowScale(_) => 3,
            TcpOption::SackPermitted => 2,
            TcpOption::Sack(b) => 2 + 8 * b.len as usize,
            TcpOption::Timestamps { .. } => 10,
            TcpOption::Unknown { data, .. } => 2 + data.len(),
        }
    }

    /// Writes the option at the start of `buf` and returns the bytes after it.
    ///
    /// # Panics
    /// If `buf` is shorter than [`buffer_len`](Self::buffer_len), or an `Unknown`
    /// option's data is longer than 253 bytes.
    pub fn emit<'b>(&self, buf: &'b mut [u8]) -> &'b mut [u8] {
        let len = self.buffer_len();
        let (out, rest) = buf.split_at_mut(len);
        match *self {
            TcpOption::EndOfList => out[0] = option_kind::END,
            TcpOption::NoOperation => out[0] = option_kind::NOP,
            TcpOption::MaxSegmentSize(mss) => {
                out[..2].copy_from_slice(&[option_kind::MSS, 4]);
                out[2..].copy_from_slice(&mss.to_be_bytes());
            }
            TcpOption::WindowScale(shift) => {
                out.copy_from_slice(&[option_kind::WS, 3, shift]);
            }
            TcpOption::SackPermitted => out.copy_from_slice(&[option_kind::SACK_PERMITTED, 2]),
            TcpOption::Sack(b) => {
                out[..2].copy_from_slice(&[option_kind::SACK, len as u8]);
                for (chunk, (l, r)) in out[2..].chunks_exact_mut(8).zip(b.iter()) {
                    chunk[..4].copy_from_slice(&l.to_be_bytes());
                    chunk[4..].copy_from_slice(&r.to_be_bytes());
                }
            }
            TcpOption::Timestamps { tsval, tsecr } => {
                out[..2].copy_from_slice(&[option_kind::TIMESTAMPS, 10]);
                out[2..6].copy_from_slice(&tsval.to_be_bytes());
                out[6..].copy_from_slice(&tsecr.to_be_bytes());
            }
            TcpOption::Unknown { kind, data } => {
                out[0] = kind;
                out[1] = u8::try_from(len).expect("TCP option data longer than 253 bytes");
                out[2..].copy_from_slice(data);
            }
        }
        rest
    }
}

/// Iterates over the options in a header's option bytes. Yields [`TcpOption::EndOfList`]
/// and then stops; after an error it yields nothing more.
#[derive(Debug, Clone)]
pub struct OptionsIter<'a> {
    rest: &'a [u8],
}

impl<'a> OptionsIter<'a> {
    /// Iterates over `opts` (the bytes [`Packet::options`] returns).
    pub const fn new(opts: &'a [u8]) -> OptionsIter<'a> {
        OptionsIter { rest: opts }
    }
}

impl<'a> Iterator for OptionsIter<'a> {
    type Item = Result<TcpOption<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        match TcpOption::parse(self.rest) {
            Ok((rest, option)) => {
                self.rest = if option == TcpOption::EndOfList {
                    &[]
                } else {
                    rest
                };
                Some(Ok(option))
            }
            Err(e) => {
                self.rest = &[];
                Some(Err(e))
            }
        }
    }
}

impl core::iter::FusedIterator for OptionsIter<'_> {}

/// The options the TCP layer acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Options {
    /// Maximum segment size, as sent.
    pub mss: Option<u16>,
    /// Window scale shift, clamped to [`MAX_WINDOW_SCALE`].
    pub window_scale: Option<u8>,
    /// SACK permitted was present.
    pub sack_permitted: bool,
    /// The SACK blocks, as sent (the TCP layer checks them against its send sequence).
    pub sack: SackBlocks,
    /// Timestamps (RFC 7323): `(TSval, TSecr)`.
    pub timestamps: Option<(u32, u32)>,
}

impl Options {
    /// No option at all.
    pub const NONE: Options = Options {
        mss: None,
        window_scale: None,
        sack_permitted: false,
        sack: SackBlocks::NONE,
        timestamps: None,
    };
}

/// The blocks of one SACK option (RFC 2018 §3): at most four `[left, right)` sequence
/// ranges, in the order sent (the first is the most recently received data).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SackBlocks {
    blocks: [(u32, u32); 4],
    len: u8,
}

impl SackBlocks {
    /// No block.
    pub const NONE: SackBlocks = SackBlocks {
        blocks: [(0, 0); 4],
        len: 0,
    };

    /// Appends `[left, right)`; a fifth block is ignored (an option holds four).
    pub fn push(&mut self, left: u32, right: u32) {
        if let Some(slot) = self.blocks.get_mut(usize::from(self.len)) {
            *slot = (left, right);
            self.len += 1;
        }
    }

    /// The blocks, as `(left, right)`.
    pub fn iter(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.blocks[..usize::from(self.len)].iter().copied()
    }

    /// Whether there is no block.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Reads the options the TCP layer acts on from a header's option bytes, stopping at
/// End of Option List. Other options (unknown kinds) are skipped; any malformed option makes the whole list [`Error::Malformed`].
///
/// Whether MSS and window scale count (only on a SYN) is the TCP layer's call.
pub fn parse_options(opts: &[u8]) -> Result<Options> {
    let mut out = Options::default();
    for option in OptionsIter::new(opts) {
        match option? {
            TcpOption::MaxSegmentSize(mss) => out.mss = Some(mss),
            // RFC 7323 §2.3: "If a Window Scale option is received with a shift.cnt
            // value larger than 14, the TCP SHOULD log the error but MUST use 14 instead
            // of the specified value."
            TcpOption::WindowScale(shift) => {
                out.window_scale = Some(shift.min(MAX_WINDOW_SCALE));
            }
            TcpOption::SackPermitted => out.sack_permitted = true,
            TcpOption::Sack(blocks) => out.sack = blocks,
            TcpOption::Timestamps { tsval, tsecr } => out.timestamps = Some((tsval, tsecr)),
            TcpOption::EndOfList | TcpOption::NoOperation | TcpOption::Unknown { .. } => {}
        }
    }
    Ok(out)
}

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
        let mut opts = packet.options_mut();
        if let Some(mss) = self.max_seg_size {
            opts = TcpOption::MaxSegmentSize(mss).emit(opts);
        }
        if let Some(shift) = self.window_scale {
            opts = TcpOption::NoOperation.emit(opts);
            opts = TcpOption::WindowScale(shift).emit(opts);
        }
        if self.sack_permitted {
            opts = TcpOption::NoOperation.emit(opts);
            opts = TcpOption::NoOperation.emit(opts);
            opts = TcpOption::SackPermitted.emit(opts);
        }
        if let Some((tsval, tsecr)) = self.timestamps {
            opts = TcpOption::NoOperation.emit(opts);
            opts = TcpOption::NoOperation.emit(opts);
            opts = TcpOption::Timestamps { tsval, tsecr }.emit(opts);
        }
        debug_assert!(opts.is_empty());
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
