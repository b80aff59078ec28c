//! TCP options (RFC 9293 §3.2, RFC 7323, RFC 2018): each option parsed and emitted
//! ([`TcpOption`]), the iteration over a header's option bytes, and the options the TCP
//! layer acts on ([`Options`], [`parse_options`]), with the fast path for the one layout
//! nearly every segment of a connection carries (timestamps alone, RFC 7323 Appendix A).
//! The header itself is the parent module's; the options are written by
//! [`Repr::emit_header`](super::Repr::emit_header) in the order its doc gives.
//!
//! Heads up! read RFC 9293 §3.2 and RFC 7323 §2 before changing this code.

use super::MAX_WINDOW_SCALE;
use crate::wire::{Error, Result};

pub(super) mod option_kind {
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
            (option_kind::SACK, d) => TcpOption::Sack(sack_blocks(d).ok_or(Error::Malformed)?),
            (option_kind::TIMESTAMPS, &[a, b, c, d, e, f, g, h]) => TcpOption::Timestamps {
                tsval: u32::from_be_bytes([a, b, c, d]),
                tsecr: u32::from_be_bytes([e, f, g, h]),
            },
            (
                option_kind::MSS
                | option_kind::WS
                | option_kind::SACK_PERMITTED
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
///
/// Always inlined (its fast path): returned through memory, the `Options` were read back
/// whole right after being written field by field, a store-forwarding stall on every
/// segment (~24% of `classify`'s cycles in the engine microbenchmark).
#[inline(always)]
pub fn parse_options(opts: &[u8]) -> Result<Options> {
    // Fast path (as Linux's `tcp_fast_parse_options`): NOP, NOP, timestamps is what every
    // segment after the handshake carries when timestamps are on (RFC 7323 Appendix A);
    // read it without walking the list. The general walk gives the same `Options`.
    if let [option_kind::NOP, option_kind::NOP, option_kind::TIMESTAMPS, 10, a, b, c, d, e, f, g, h] =
        *opts
    {
        return Ok(Options {
            timestamps: Some((
                u32::from_be_bytes([a, b, c, d]),
                u32::from_be_bytes([e, f, g, h]),
            )),
            ..Options::NONE
        });
    }
    walk(opts)
}

/// The general walk of [`parse_options`], by kind and data without making a `TcpOption` of
/// each (the SYN's list is five options). Its rules are `TcpOption::parse`'s, and
/// a test holds the two to the same answers on random bytes.
fn walk(opts: &[u8]) -> Result<Options> {
    let mut out = Options::default();
    let mut rest = opts;
    while let [kind, after_kind @ ..] = rest {
        let kind = *kind;
        match kind {
            option_kind::END => break,
            option_kind::NOP => {
                rest = after_kind;
                continue;
            }
            _ => {}
        }
        let len = usize::from(*after_kind.first().ok_or(Error::Malformed)?);
        if len < 2 {
            return Err(Error::Malformed);
        }
        let data = rest.get(2..len).ok_or(Error::Malformed)?;
        match (kind, data) {
            (option_kind::MSS, &[a, b]) => out.mss = Some(u16::from_be_bytes([a, b])),
            // RFC 7323 §2.3: "If a Window Scale option is received with a shift.cnt
            // value larger than 14, the TCP SHOULD log the error but MUST use 14 instead
            // of the specified value."
            (option_kind::WS, &[shift]) => out.window_scale = Some(shift.min(MAX_WINDOW_SCALE)),
            (option_kind::SACK_PERMITTED, &[]) => out.sack_permitted = true,
            (option_kind::SACK, d) => out.sack = sack_blocks(d).ok_or(Error::Malformed)?,
            (option_kind::TIMESTAMPS, &[a, b, c, d, e, f, g, h]) => {
                out.timestamps = Some((
                    u32::from_be_bytes([a, b, c, d]),
                    u32::from_be_bytes([e, f, g, h]),
                ));
            }
            (
                option_kind::MSS
                | option_kind::WS
                | option_kind::SACK_PERMITTED
                | option_kind::TIMESTAMPS,
                _,
            ) => return Err(Error::Malformed),
            _ => {}
        }
        rest = rest.get(len..).ok_or(Error::Malformed)?;
    }
    Ok(out)
}

/// The blocks of a SACK option's data: 8 bytes each, one to four (RFC 2018 §3).
fn sack_blocks(d: &[u8]) -> Option<SackBlocks> {
    if d.is_empty() || !d.len().is_multiple_of(8) || d.len() > 32 {
        return None;
    }
    let mut blocks = SackBlocks::NONE;
    for b in d.chunks_exact(8) {
        blocks.push(
            u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
            u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
        );
    }
    Some(blocks)
}
