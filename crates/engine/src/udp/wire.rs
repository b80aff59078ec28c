//! The protocol's two formats (docs/udp-protocol.md §3–§4): the request datagram a client
//! sends (an HTTP/1.1 request head, optional padding, the 4-octet tail) and the 16-octet
//! data header in front of every packet the server sends.
//!
//! Pure functions over byte slices: no state, no allocation; nothing a peer sends makes
//! them panic (the fuzz target `udp_request` runs [`parse_request`], `udp_client` runs
//! [`Header::parse`] through the client).
//!
//! ```text
//!  request  = head padding tail          head: request-line *(field-line CRLF) CRLF
//!                                         tail: start, u32 big-endian (0x99999999: initial)
//!  packet   = header payload
//!   0      1      2      3      4      5      6      7      8            12           16
//!  ┌──────┬──────┬─────────────┬──────┬──────┬─────────────┬────────────┬────────────┐
//!  │state │ ver  │ request id  │ core │flags │    unit     │  A (u32)   │  B (u32)   │
//!  └──────┴──────┴─────────────┴──────┴──────┴─────────────┴────────────┴────────────┘
//!   A: Get-Ack total bytes │ Header/Data payload bytes │ Error code
//!   B: Get-Ack packet count│ Header/Data packet number │ Error: packet count or 0
//! ```

/// The protocol version this implementation speaks (octet 1 of every packet).
pub const VERSION: u8 = 1;
/// Octets of the data header.
pub const HEADER_LEN: usize = 16;
/// Octets of the request tail.
pub const TAIL_LEN: usize = 4;
/// The tail of an initial GET (the paper's code 0x9999, in all four octets).
pub const INITIAL: u32 = 0x9999_9999;
/// Data octets in every data packet but the last (22 blocks of 64 octets, so each packet's
/// checksum is made of stored block sums; see `resource`).
pub const UNIT: usize = 1408;
/// Octets of an address-validation token.
pub const TOKEN_LEN: usize = 8;
/// Largest request datagram a server reads (the UDP payload of a 1500-octet IPv4 packet).
pub const MAX_REQUEST: usize = 1472;
/// Largest payload after the data header (same bound: one unfragmented packet).
pub const MAX_PAYLOAD: usize = MAX_REQUEST - HEADER_LEN;
/// What a client pads an initial GET to (docs/udp-protocol.md §6: earns the server's 3x
/// answer budget room for the Get-Ack, the header and two data packets).
pub const PAD_TO: usize = 1200;
/// The port a `bwudp://` URL without one names.
pub const DEFAULT_PORT: u16 = 80;

/// Flag bit: this Get-Ack carries a token (its 8-octet payload).
pub const FLAG_TOKEN: u8 = 0x01;
/// Flag bit: the answer was cut short by the amplification bound (§6).
pub const FLAG_BOUNDED: u8 = 0x02;

/// A packet's state (octet 0), as in the UDP paper §4.2.3, plus an error answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// 0x31: the answer to a GET begins; A = body bytes, B = packet count.
    GetAck,
    /// 0x32: packet 1, the HTTP response head.
    Header,
    /// 0x33: a data packet with more of this burst after it.
    Data,
    /// 0x34: the file's last packet.
    Last,
    /// 0x88: the last packet of this burst; more of the file remains (ask with a GET).
    LastNow,
    /// 0x45 ('E'): the request was refused; A = [`ErrorCode`].
    Error,
}

impl State {
    /// The octet on the wire.
    pub const fn octet(self) -> u8 {
        match self {
            State::GetAck => 0x31,
            State::Header => 0x32,
            State::Data => 0x33,
            State::Last => 0x34,
            State::LastNow => 0x88,
            State::Error => 0x45,
        }
    }

    /// The state of an octet, if it is one.
    pub const fn from_octet(o: u8) -> Option<State> {
        Some(match o {
            0x31 => State::GetAck,
            0x32 => State::Header,
            0x33 => State::Data,
            0x34 => State::Last,
            0x88 => State::LastNow,
            0x45 => State::Error,
            _ => return None,
        })
    }

    /// Whether a packet in this state carries packet `B` of the file (Header or data).
    pub const fn numbered(self) -> bool {
        matches!(
            self,
            State::Header | State::Data | State::Last | State::LastNow
        )
    }
}

/// Why the server refused a request (field A of an [`State::Error`] packet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// 1: not a request: no complete head before the tail.
    Malformed,
    /// 2: the start packet is 0 or beyond the packet count (B says the count).
    BadStart,
    /// 3: a `BW-Version` the server does not speak.
    Version,
    /// 4: the body is 4 GiB or more (A and B cannot describe it).
    TooLarge,
}

impl ErrorCode {
    /// The code on the wire.
    pub const fn code(self) -> u32 {
        match self {
            ErrorCode::Malformed => 1,
            ErrorCode::BadStart => 2,
            ErrorCode::Version => 3,
            ErrorCode::TooLarge => 4,
        }
    }

    /// The error of a code, if known.
    pub const fn from_code(c: u32) -> Option<ErrorCode> {
        Some(match c {
            1 => ErrorCode::Malformed,
            2 => ErrorCode::BadStart,
            3 => ErrorCode::Version,
            4 => ErrorCode::TooLarge,
            _ => return None,
        })
    }

    /// A short description.
    pub const fn text(self) -> &'static str {
        match self {
            ErrorCode::Malformed => "malformed request",
            ErrorCode::BadStart => "start packet beyond the end",
            ErrorCode::Version => "protocol version not supported",
            ErrorCode::TooLarge => "file too large for the protocol (4 GiB or more)",
        }
    }
}

/// The 16-octet data header, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Octet 0.
    pub state: State,
    /// Octet 1.
    pub version: u8,
    /// Octets 2–3: the server's request id (1..=ids, from its stack).
    pub request_id: u16,
    /// Octet 4: the core that answered.
    pub core: u8,
    /// Octet 5: [`FLAG_TOKEN`], [`FLAG_BOUNDED`]; other bits are sent 0, ignored.
    pub flags: u8,
    /// Octets 6–7: data octets per data packet but the last ([`UNIT`]).
    pub unit: u16,
    /// Octets 8–11: Get-Ack: body octets; Header/data: payload octets; Error: the code.
    pub a: u32,
    /// Octets 12–15: Get-Ack: packet count; Header/data: packet number; Error: count or 0.
    pub b: u32,
}

/// Why a received packet was refused (a client counts and ignores it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketError {
    /// Shorter than the header.
    Truncated,
    /// State octet unknown.
    State,
    /// Another protocol version.
    Version,
    /// A length field disagrees with the payload.
    Length,
}

impl Header {
    /// Parses the header at the start of `bytes` and returns it with the payload. Checks
    /// the length, the state, the version, and that the payload is what the header says:
    /// a Header or data packet carries exactly `a` octets, a Get-Ack 8 (token) or 0, an
    /// Error none.
    pub fn parse(bytes: &[u8]) -> Result<(Header, &[u8]), PacketError> {
        let h = bytes.get(..HEADER_LEN).ok_or(PacketError::Truncated)?;
        let state = State::from_octet(h[0]).ok_or(PacketError::State)?;
        let u32_at = |i: usize| u32::from_be_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
        let hdr = Header {
            state,
            version: h[1],
            request_id: u16::from_be_bytes([h[2], h[3]]),
            core: h[4],
            flags: h[5],
            unit: u16::from_be_bytes([h[6], h[7]]),
            a: u32_at(8),
            b: u32_at(12),
        };
        if hdr.version != VERSION {
            return Err(PacketError::Version);
        }
        let payload = &bytes[HEADER_LEN..];
        let want = match state {
            State::GetAck if hdr.flags & FLAG_TOKEN != 0 => TOKEN_LEN,
            State::GetAck | State::Error => 0,
            _ => hdr.a as usize,
        };
        if payload.len() != want {
            return Err(PacketError::Length);
        }
        Ok((hdr, payload))
    }

    /// Writes the header into the first 16 octets of `out`.
    ///
    /// # Panics
    /// If `out` is shorter than [`HEADER_LEN`] (the server's slots always have room).
    pub fn emit(&self, out: &mut [u8]) {
        let o = &mut out[..HEADER_LEN];
        o[0] = self.state.octet();
        o[1] = self.version;
        o[2..4].copy_from_slice(&self.request_id.to_be_bytes());
        o[4] = self.core;
        o[5] = self.flags;
        o[6..8].copy_from_slice(&self.unit.to_be_bytes());
        o[8..12].copy_from_slice(&self.a.to_be_bytes());
        o[12..16].copy_from_slice(&self.b.to_be_bytes());
    }
}

/// Where a GET starts (the tail).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// [`INITIAL`]: Get-Ack, header and the first burst.
    Initial,
    /// A subsequent GET: a burst from this packet number (1 is the header).
    From(u32),
}

impl Start {
    /// The tail value.
    pub const fn tail(self) -> u32 {
        match self {
            Start::Initial => INITIAL,
            Start::From(n) => n,
        }
    }

    /// The start a tail value stands for.
    pub const fn from_tail(v: u32) -> Start {
        if v == INITIAL {
            Start::Initial
        } else {
            Start::From(v)
        }
    }
}

/// A request datagram, split but not yet judged: the HTTP part is parsed by the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request<'a> {
    /// The octets before the tail: the HTTP head and any padding after its empty line.
    pub head: &'a [u8],
    /// The tail.
    pub start: Start,
    /// The `BW-Token` field: absent, a well-formed token, or a malformed value.
    pub token: TokenField,
    /// The `BW-Version` field, if present and a number (`Some(0)` if not a number).
    pub version: Option<u32>,
}

/// What a request said in `BW-Token`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenField {
    /// No such field.
    Absent,
    /// 16 hex digits.
    Token([u8; TOKEN_LEN]),
    /// Something else (counted, treated as no token).
    Bad,
}

/// Why a request datagram was refused before its HTTP head was looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestError {
    /// Shorter than the tail plus the smallest request line, or longer than one packet.
    Length,
    /// No empty line ends a head before the tail.
    NoHead,
}

/// Splits a request datagram (a UDP payload) into head, tail and the protocol's fields.
/// The head's end is its first empty line (CRLF CRLF, or LF LF as RFC 9112 §2.2 lets a
/// recipient accept); whatever lies between it and the tail is padding.
pub fn parse_request(payload: &[u8]) -> Result<Request<'_>, RequestError> {
    // "GET / HTTP/1.0" CRLF CRLF is the shortest request: 18 octets.
    if payload.len() < 18 + TAIL_LEN || payload.len() > MAX_REQUEST {
        return Err(RequestError::Length);
    }
    let (head, tail) = payload.split_at(payload.len() - TAIL_LEN);
    let start = Start::from_tail(u32::from_be_bytes([tail[0], tail[1], tail[2], tail[3]]));
    let mut req = Request {
        head,
        start,
        token: TokenField::Absent,
        version: None,
    };
    // Lines after the request line, up to the empty line.
    let mut lines = head.split_inclusive(|&c| c == b'\n');
    lines.next();
    for line in lines {
        let Some(line) = line.strip_suffix(b"\n") else {
            break; // octets after the last line end: no empty line came
        };
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            return Ok(req);
        }
        let Some(colon) = line.iter().position(|&c| c == b':') else {
            continue; // the HTTP parser judges it
        };
        let (name, value) = (&line[..colon], trim(&line[colon + 1..]));
        if name.eq_ignore_ascii_case(b"bw-token") {
            req.token = match (req.token, parse_token(value)) {
                (TokenField::Absent, Some(t)) => TokenField::Token(t),
                _ => TokenField::Bad, // malformed, or more than one
            };
        } else if name.eq_ignore_ascii_case(b"bw-version") {
            req.version = Some(parse_decimal(value).unwrap_or(0));
        }
    }
    Err(RequestError::NoHead)
}

fn trim(v: &[u8]) -> &[u8] {
    let start = v.iter().position(|&c| c != b' ' && c != b'\t');
    let end = v.iter().rposition(|&c| c != b' ' && c != b'\t');
    match (start, end) {
        (Some(s), Some(e)) => &v[s..=e],
        _ => &[],
    }
}

fn parse_decimal(v: &[u8]) -> Option<u32> {
    if v.is_empty() || v.len() > 9 {
        return None;
    }
    v.iter().try_fold(0u32, |acc, &c| {
        c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0'))
    })
}

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// 16 hex digits as a token.
pub fn parse_token(v: &[u8]) -> Option<[u8; TOKEN_LEN]> {
    if v.len() != 2 * TOKEN_LEN {
        return None;
    }
    let mut t = [0u8; TOKEN_LEN];
    for (i, pair) in v.chunks_exact(2).enumerate() {
        t[i] = (hex_digit(pair[0])? << 4) | hex_digit(pair[1])?;
    }
    Some(t)
}

/// Appends to a fixed buffer; `None` once something does not fit.
struct Out<'b> {
    buf: &'b mut [u8],
    len: usize,
}

impl Out<'_> {
    fn put(&mut self, b: &[u8]) -> Option<()> {
        let end = self.len.checked_add(b.len())?;
        self.buf.get_mut(self.len..end)?.copy_from_slice(b);
        self.len = end;
        Some(())
    }
}

/// Writes a request datagram into `out`: `GET path HTTP/1.1`, `Host`, `BW-Token` when
/// given, the empty line, zero octets up to `pad_to` octets in all, and the tail. Returns
/// its length, or `None` if it does not fit `out` or one packet ([`MAX_REQUEST`]), or if
/// `host` or `path` hold octets a request line or field may not (controls, spaces in the
/// host, a path not starting with `/`).
pub fn write_request(
    out: &mut [u8],
    host: &str,
    path: &str,
    start: Start,
    token: Option<&[u8; TOKEN_LEN]>,
    pad_to: usize,
) -> Option<usize> {
    let bad = |s: &str, space_ok: bool| {
        s.bytes()
            .any(|c| c < 0x20 || c == 0x7f || (!space_ok && c == b' '))
    };
    if !path.starts_with('/') || bad(path, false) || host.is_empty() || bad(host, false) {
        return None;
    }
    let cap = out.len().min(MAX_REQUEST);
    let mut w = Out {
        buf: &mut out[..cap],
        len: 0,
    };
    w.put(b"GET ")?;
    w.put(path.as_bytes())?;
    w.put(b" HTTP/1.1\r\nHost: ")?;
    w.put(host.as_bytes())?;
    w.put(b"\r\n")?;
    if let Some(t) = token {
        w.put(b"BW-Token: ")?;
        let mut hex = [0u8; 2 * TOKEN_LEN];
        for (i, b) in t.iter().enumerate() {
            const D: &[u8; 16] = b"0123456789abcdef";
            hex[2 * i] = D[usize::from(b >> 4)];
            hex[2 * i + 1] = D[usize::from(b & 15)];
        }
        w.put(&hex)?;
        w.put(b"\r\n")?;
    }
    w.put(b"\r\n")?;
    while w.len + TAIL_LEN < pad_to.min(cap) {
        w.put(&[0])?;
    }
    w.put(&start.tail().to_be_bytes())?;
    Some(w.len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_and_layout() {
        let h = Header {
            state: State::GetAck,
            version: VERSION,
            request_id: 0x0102,
            core: 3,
            flags: FLAG_TOKEN,
            unit: UNIT as u16,
            a: 4096,
            b: 4,
        };
        let mut b = [0u8; HEADER_LEN + TOKEN_LEN];
        h.emit(&mut b);
        assert_eq!(
            &b[..HEADER_LEN],
            &[0x31, 1, 1, 2, 3, 1, 0x05, 0x80, 0, 0, 0x10, 0, 0, 0, 0, 4]
        );
        assert_eq!(Header::parse(&b), Ok((h, &[0u8; 8][..])));
    }

    #[test]
    fn header_refusals() {
        let mut b = [0u8; 20];
        Header {
            state: State::Data,
            version: VERSION,
            request_id: 1,
            core: 0,
            flags: 0,
            unit: UNIT as u16,
            a: 4,
            b: 2,
        }
        .emit(&mut b);
        assert!(Header::parse(&b).is_ok());
        assert_eq!(Header::parse(&b[..19]), Err(PacketError::Length));
        assert_eq!(Header::parse(&b[..15]), Err(PacketError::Truncated));
        let mut v = b;
        v[1] = 2;
        assert_eq!(Header::parse(&v), Err(PacketError::Version));
        let mut s = b;
        s[0] = 0x35;
        assert_eq!(Header::parse(&s), Err(PacketError::State));
        // A Get-Ack without the token flag carries nothing; with it, exactly 8 octets.
        let mut g = [0u8; 16];
        Header {
            state: State::GetAck,
            ..Header::parse(&b).unwrap().0
        }
        .emit(&mut g);
        assert!(Header::parse(&g).is_ok());
        assert_eq!(Header::parse(&b[..17]), Err(PacketError::Length));
    }

    #[test]
    fn request_round_trip() {
        let mut buf = [0u8; 1500];
        let tok = [0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 3];
        let n = write_request(
            &mut buf,
            "10.0.0.2",
            "/a.html",
            Start::From(7),
            Some(&tok),
            0,
        )
        .unwrap();
        let expect =
            b"GET /a.html HTTP/1.1\r\nHost: 10.0.0.2\r\nBW-Token: deadbeef00010203\r\n\r\n\0\0\0\x07";
        assert_eq!(&buf[..n], &expect[..]);
        let r = parse_request(&buf[..n]).unwrap();
        assert_eq!(r.start, Start::From(7));
        assert_eq!(r.token, TokenField::Token(tok));
        assert_eq!(r.version, None);
        assert_eq!(r.head, &expect[..expect.len() - 4]);
    }

    #[test]
    fn padding_and_initial_tail() {
        let mut buf = [0u8; 1500];
        let n = write_request(&mut buf, "h", "/", Start::Initial, None, PAD_TO).unwrap();
        assert_eq!(n, PAD_TO);
        assert_eq!(&buf[n - 4..n], &[0x99; 4]);
        let r = parse_request(&buf[..n]).unwrap();
        assert_eq!(r.start, Start::Initial);
        assert_eq!(r.token, TokenField::Absent);
        // Too long for one packet: refused on both sides.
        assert_eq!(
            parse_request(&[b'x'; MAX_REQUEST + 1]),
            Err(RequestError::Length)
        );
        assert!(write_request(&mut buf, "h", "/", Start::Initial, None, 1600).is_some());
        let long = "/".repeat(1500);
        assert_eq!(
            write_request(&mut buf, "h", &long, Start::Initial, None, 0),
            None
        );
    }

    #[test]
    fn request_fields() {
        let r = parse_request(b"GET / HTTP/1.1\nbw-version:  2 \nBW-TOKEN: zz\n\n\x99\x99\x99\x99")
            .unwrap();
        assert_eq!(r.version, Some(2));
        assert_eq!(r.token, TokenField::Bad);
        let two = b"GET / HTTP/1.1\r\nBW-Token: 0000000000000000\r\nBW-Token: 0000000000000000\r\n\r\n\x99\x99\x99\x99";
        assert_eq!(parse_request(two).unwrap().token, TokenField::Bad);
        assert_eq!(
            parse_request(b"GET / HTTP/1.1\r\nHost: a\r\n\x99\x99\x99\x99"),
            Err(RequestError::NoHead)
        );
        assert_eq!(
            parse_request(b"\x99\x99\x99\x99"),
            Err(RequestError::Length)
        );
    }

    #[test]
    fn write_request_refuses_unsafe_text() {
        let mut buf = [0u8; 200];
        for (host, path) in [
            ("a b", "/"),
            ("a", "/x y"),
            ("a\r\n", "/"),
            ("a", "x"),
            ("", "/"),
        ] {
            assert_eq!(
                write_request(&mut buf, host, path, Start::Initial, None, 0),
                None,
                "{host:?} {path:?}"
            );
        }
    }

    #[test]
    fn states_round_trip() {
        for s in [
            State::GetAck,
            State::Header,
            State::Data,
            State::Last,
            State::LastNow,
            State::Error,
        ] {
            assert_eq!(State::from_octet(s.octet()), Some(s));
        }
        for e in [
            ErrorCode::Malformed,
            ErrorCode::BadStart,
            ErrorCode::Version,
            ErrorCode::TooLarge,
        ] {
            assert_eq!(ErrorCode::from_code(e.code()), Some(e));
        }
    }
}
