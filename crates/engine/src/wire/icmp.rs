//! ICMPv4 (RFC 792): enough to answer ping and to recognise everything else.
//!
//! Heads up! read RFC 792 ("Echo or Echo Reply Message") and RFC 1122 §3.2.2.6: a host
//! MUST answer an echo request, echoing the identifier, sequence number and data.
//!
//! The buffer given to [`Packet`] must be the whole ICMP message (the IPv4 payload,
//! padding already cut off): the checksum covers all of it.

use super::{checksum, Error, Result};

mod field {
    use core::ops::Range;
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: Range<usize> = 2..4;
    /// Identifier of an echo request/reply.
    pub const ECHO_IDENT: Range<usize> = 4..6;
    /// Sequence number of an echo request/reply.
    pub const ECHO_SEQNO: Range<usize> = 6..8;
    /// Every message we know has an 8-byte header; the rest is type-specific data.
    pub const HEADER_END: usize = 8;
}

/// Length of the ICMP header (type, code, checksum and the 4-byte rest-of-header).
pub const HEADER_LEN: usize = field::HEADER_END;

/// ICMP message types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Message {
    /// 0
    EchoReply,
    /// 3
    DstUnreachable,
    /// 8
    EchoRequest,
    /// 11
    TimeExceeded,
    /// Anything else.
    Unknown(u8),
}

impl From<u8> for Message {
    fn from(v: u8) -> Self {
        match v {
            0 => Message::EchoReply,
            3 => Message::DstUnreachable,
            8 => Message::EchoRequest,
            11 => Message::TimeExceeded,
            other => Message::Unknown(other),
        }
    }
}

impl From<Message> for u8 {
    fn from(v: Message) -> u8 {
        match v {
            Message::EchoReply => 0,
            Message::DstUnreachable => 3,
            Message::EchoRequest => 8,
            Message::TimeExceeded => 11,
            Message::Unknown(other) => other,
        }
    }
}

/// A view of an ICMPv4 message.
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

    /// Checks that the buffer holds the 8-byte header.
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Message type.
    pub fn msg_type(&self) -> Message {
        Message::from(self.buffer.as_ref()[field::TYPE])
    }

    /// Message code.
    pub fn msg_code(&self) -> u8 {
        self.buffer.as_ref()[field::CODE]
    }

    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        self.read_u16(field::CHECKSUM)
    }

    /// Identifier (meaningful for echo messages).
    pub fn echo_ident(&self) -> u16 {
        self.read_u16(field::ECHO_IDENT)
    }

    /// Sequence number (meaningful for echo messages).
    pub fn echo_seq_no(&self) -> u16 {
        self.read_u16(field::ECHO_SEQNO)
    }

    /// Everything after the 8-byte header: echo data, or the quoted datagram of an error.
    pub fn data(&self) -> &[u8] {
        &self.buffer.as_ref()[field::HEADER_END..]
    }

    /// Whether the checksum over the whole message verifies.
    ///
    /// # Fuzzing
    /// Always true under `cfg(fuzzing)`.
    pub fn verify_checksum(&self) -> bool {
        if cfg!(fuzzing) {
            return true;
        }
        checksum::sum(self.buffer.as_ref()) == 0xffff
    }

    fn read_u16(&self, f: core::ops::Range<usize>) -> u16 {
        let b = &self.buffer.as_ref()[f];
        u16::from_be_bytes([b[0], b[1]])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the message type.
    pub fn set_msg_type(&mut self, v: Message) {
        self.buffer.as_mut()[field::TYPE] = v.into();
    }

    /// Sets the message code.
    pub fn set_msg_code(&mut self, v: u8) {
        self.buffer.as_mut()[field::CODE] = v;
    }

    /// Sets the checksum field.
    pub fn set_checksum(&mut self, v: u16) {
        self.write_u16(field::CHECKSUM, v);
    }

    /// Sets the echo identifier.
    pub fn set_echo_ident(&mut self, v: u16) {
        self.write_u16(field::ECHO_IDENT, v);
    }

    /// Sets the echo sequence number.
    pub fn set_echo_seq_no(&mut self, v: u16) {
        self.write_u16(field::ECHO_SEQNO, v);
    }

    /// The data after the header, mutable.
    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::HEADER_END..]
    }

    /// Computes the checksum over the whole buffer and stores it.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let c = checksum::checksum(self.buffer.as_ref());
        self.set_checksum(c);
    }

    fn write_u16(&mut self, f: core::ops::Range<usize>, v: u16) {
        self.buffer.as_mut()[f].copy_from_slice(&v.to_be_bytes());
    }
}

/// An ICMPv4 message, as far as we care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repr<'a> {
    /// Type 8, code 0.
    EchoRequest {
        /// Identifier.
        ident: u16,
        /// Sequence number.
        seq_no: u16,
        /// Data to echo back.
        data: &'a [u8],
    },
    /// Type 0, code 0.
    EchoReply {
        /// Identifier.
        ident: u16,
        /// Sequence number.
        seq_no: u16,
        /// Echoed data.
        data: &'a [u8],
    },
    /// Any other type, or an echo type with a non-zero code.
    Other {
        /// Message type.
        msg_type: Message,
        /// Message code.
        code: u8,
    },
}

impl<'a> Repr<'a> {
    /// Parses a message: checks the length, then the checksum ([`Error::Checksum`]).
    ///
    /// # Fuzzing
    /// The checksum is not checked under `cfg(fuzzing)`.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&'a T>) -> Result<Repr<'a>> {
        packet.check_len()?;
        if !packet.verify_checksum() {
            return Err(Error::Checksum);
        }
        let buf: &'a [u8] = packet.buffer.as_ref();
        let data = buf.get(field::HEADER_END..).ok_or(Error::Truncated)?;
        Ok(match (packet.msg_type(), packet.msg_code()) {
            (Message::EchoRequest, 0) => Repr::EchoRequest {
                ident: packet.echo_ident(),
                seq_no: packet.echo_seq_no(),
                data,
            },
            (Message::EchoReply, 0) => Repr::EchoReply {
                ident: packet.echo_ident(),
                seq_no: packet.echo_seq_no(),
                data,
            },
            (msg_type, code) => Repr::Other { msg_type, code },
        })
    }

    /// Length of the message [`emit`](Self::emit) writes: the header plus echo data.
    pub const fn buffer_len(&self) -> usize {
        match self {
            Repr::EchoRequest { data, .. } | Repr::EchoReply { data, .. } => {
                HEADER_LEN + data.len()
            }
            Repr::Other { .. } => HEADER_LEN,
        }
    }

    /// Writes the message and fills the checksum. For [`Repr::Other`] only the type and
    /// code are written and the rest of the header is zeroed; any data after the header
    /// is the caller's (write it, then call [`Packet::fill_checksum`] again).
    ///
    /// # Panics
    /// If the buffer is shorter than [`buffer_len`](Self::buffer_len). The checksum
    /// covers the whole buffer, so it should be exactly that long.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
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
                let msg_type = if matches!(self, Repr::EchoRequest { .. }) {
                    Message::EchoRequest
                } else {
                    Message::EchoReply
                };
                packet.set_msg_type(msg_type);
                packet.set_msg_code(0);
                packet.set_echo_ident(ident);
                packet.set_echo_seq_no(seq_no);
                packet.data_mut()[..data.len()].copy_from_slice(data);
            }
            Repr::Other { msg_type, code } => {
                packet.set_msg_type(msg_type);
                packet.set_msg_code(code);
                packet.buffer.as_mut()[field::ECHO_IDENT.start..field::HEADER_END].fill(0);
            }
        }
        packet.fill_checksum();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The echo request of `ping -s 48` on Linux: ident 0x1c46, seq 1, a 16-byte timeval
    /// and the bytes 0x10..0x37.
    static ECHO_REQUEST_BYTES: [u8; 56] = [
        0x08, 0x00, 0xcb, 0x15, 0x1c, 0x46, 0x00, 0x01, 0x65, 0xf2, 0xa1, 0xb3, 0x00, 0x0c, 0x4a,
        0x1e, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d,
        0x1e, 0x1f, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x2b, 0x2c,
        0x2d, 0x2e, 0x2f, 0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37,
    ];

    /// The matching echo reply.
    static ECHO_REPLY_BYTES: [u8; 56] = [
        0x00, 0x00, 0xd3, 0x15, 0x1c, 0x46, 0x00, 0x01, 0x65, 0xf2, 0xa1, 0xb3, 0x00, 0x0c, 0x4a,
        0x1e, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d,
        0x1e, 0x1f, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x2b, 0x2c,
        0x2d, 0x2e, 0x2f, 0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37,
    ];

    /// Port unreachable, quoting the IPv4 header and first 8 bytes of a ping.
    static PORT_UNREACHABLE_BYTES: [u8; 36] = [
        0x03, 0x03, 0x0d, 0xa0, 0x00, 0x00, 0x00, 0x00, 0x45, 0x00, 0x00, 0x4c, 0x3b, 0x5d, 0x40,
        0x00, 0x40, 0x01, 0xeb, 0x51, 0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x02, 0x08, 0x00,
        0xcb, 0x15, 0x1c, 0x46, 0x00, 0x01,
    ];

    fn echo_request() -> Repr<'static> {
        Repr::EchoRequest {
            ident: 0x1c46,
            seq_no: 1,
            data: &ECHO_REQUEST_BYTES[8..],
        }
    }

    #[test]
    fn deconstruct() {
        let p = Packet::new_checked(&ECHO_REQUEST_BYTES[..]).unwrap();
        assert_eq!(p.msg_type(), Message::EchoRequest);
        assert_eq!(p.msg_code(), 0);
        assert_eq!(p.checksum(), 0xcb15);
        assert_eq!(p.echo_ident(), 0x1c46);
        assert_eq!(p.echo_seq_no(), 1);
        assert_eq!(p.data(), &ECHO_REQUEST_BYTES[8..]);
        assert!(p.verify_checksum());
    }

    #[test]
    fn construct() {
        let mut bytes = [0xa5u8; 56];
        let mut p = Packet::new_unchecked(&mut bytes[..]);
        p.set_msg_type(Message::EchoRequest);
        p.set_msg_code(0);
        p.set_echo_ident(0x1c46);
        p.set_echo_seq_no(1);
        p.data_mut().copy_from_slice(&ECHO_REQUEST_BYTES[8..]);
        p.fill_checksum();
        assert_eq!(&bytes[..], &ECHO_REQUEST_BYTES[..]);
    }

    #[test]
    fn parse() {
        let p = Packet::new_checked(&ECHO_REQUEST_BYTES[..]).unwrap();
        assert_eq!(Repr::parse(&p), Ok(echo_request()));
        let p = Packet::new_checked(&PORT_UNREACHABLE_BYTES[..]).unwrap();
        assert!(p.verify_checksum());
        assert_eq!(
            Repr::parse(&p),
            Ok(Repr::Other {
                msg_type: Message::DstUnreachable,
                code: 3
            })
        );
    }

    #[test]
    fn emit_reply_to_request() {
        let p = Packet::new_checked(&ECHO_REQUEST_BYTES[..]).unwrap();
        let Ok(Repr::EchoRequest {
            ident,
            seq_no,
            data,
        }) = Repr::parse(&p)
        else {
            panic!("not an echo request");
        };
        let reply = Repr::EchoReply {
            ident,
            seq_no,
            data,
        };
        assert_eq!(reply.buffer_len(), 56);
        let mut bytes = vec![0xa5; reply.buffer_len()];
        reply.emit(&mut Packet::new_unchecked(&mut bytes[..]));
        assert_eq!(&bytes[..], &ECHO_REPLY_BYTES[..]);
    }

    #[test]
    fn emit_request_and_other() {
        let mut bytes = [0xa5u8; 56];
        echo_request().emit(&mut Packet::new_unchecked(&mut bytes[..]));
        assert_eq!(&bytes[..], &ECHO_REQUEST_BYTES[..]);

        let other = Repr::Other {
            msg_type: Message::DstUnreachable,
            code: 3,
        };
        assert_eq!(other.buffer_len(), 8);
        let mut bytes = [0xa5u8; 36];
        let mut p = Packet::new_unchecked(&mut bytes[..]);
        p.data_mut().copy_from_slice(&PORT_UNREACHABLE_BYTES[8..]);
        other.emit(&mut p);
        assert_eq!(bytes, PORT_UNREACHABLE_BYTES);
    }

    #[test]
    fn bad_checksum() {
        let mut bytes = ECHO_REQUEST_BYTES;
        bytes[40] ^= 0x01;
        let p = Packet::new_checked(&bytes[..]).unwrap();
        assert!(!p.verify_checksum());
        assert_eq!(Repr::parse(&p), Err(Error::Checksum));
    }

    #[test]
    fn nonzero_echo_code_is_other() {
        let mut bytes = ECHO_REQUEST_BYTES;
        let mut p = Packet::new_unchecked(&mut bytes[..]);
        p.set_msg_code(1);
        p.fill_checksum();
        let p = Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(
            Repr::parse(&p),
            Ok(Repr::Other {
                msg_type: Message::EchoRequest,
                code: 1
            })
        );
    }

    #[test]
    fn truncated() {
        for len in [0, 4, 7] {
            assert_eq!(
                Packet::new_checked(&ECHO_REQUEST_BYTES[..len]).err(),
                Some(Error::Truncated),
                "len {len}"
            );
        }
        // A bare 8-byte echo request with no data is valid.
        let mut bytes = [0x08, 0, 0, 0, 0x12, 0x34, 0, 7];
        Packet::new_unchecked(&mut bytes[..]).fill_checksum();
        let p = Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(
            Repr::parse(&p),
            Ok(Repr::EchoRequest {
                ident: 0x1234,
                seq_no: 7,
                data: &[]
            })
        );
    }

    #[test]
    fn odd_length_checksum() {
        let mut bytes = [0xa5u8; 8 + 5];
        let r = Repr::EchoReply {
            ident: 1,
            seq_no: 2,
            data: b"hello",
        };
        r.emit(&mut Packet::new_unchecked(&mut bytes[..]));
        let p = Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(Repr::parse(&p), Ok(r));
    }

    #[test]
    fn message_round_trip() {
        for v in 0..=255u8 {
            assert_eq!(u8::from(Message::from(v)), v);
        }
    }
}
