//! HTTP/1.x response reader for the load generator: an incremental parser fed with
//! whatever bytes a read returned. It finds the head (status, Content-Length,
//! Transfer-Encoding: chunked, Connection), then frames the body by length, by chunks or
//! by the close of the connection, handing body bytes back as slices of the input (no
//! copies except the head, which is gathered into a fixed buffer). Bytes from the network
//! are hostile: every path returns an error instead of panicking, and nothing grows.
//!
//! For a client that follows redirects (`bareweb get --follow`): the Location of a
//! redirect response ([`redirect_location`]) and its resolution against the URL that was
//! fetched ([`resolve_location`]).

/// Longest response head accepted.
pub const HEAD_MAX: usize = 8192;
const MAX_HEADERS: usize = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RespError {
    /// The head is not HTTP/1.x.
    BadHead,
    /// The head is longer than [`HEAD_MAX`].
    HeadTooLong,
    /// Content-Length is not a number, or two differ.
    BadLength,
    /// Chunked framing is malformed.
    BadChunk,
    /// The connection closed inside the head or the body.
    Truncated,
    /// The connection closed before any byte of the response.
    NoResponse,
}

impl RespError {
    pub fn name(self) -> &'static str {
        match self {
            RespError::BadHead => "bad_head",
            RespError::HeadTooLong => "head_too_long",
            RespError::BadLength => "bad_length",
            RespError::BadChunk => "bad_chunk",
            RespError::Truncated => "truncated",
            RespError::NoResponse => "no_response",
        }
    }
}

/// What the head said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    pub status: u16,
    /// Length of the whole head in bytes.
    pub head_len: usize,
    pub content_length: Option<u64>,
    pub chunked: bool,
    /// The server will close the connection after this response.
    pub close: bool,
}

/// One step of parsing: `consumed` bytes of the input were used.
#[derive(Debug, PartialEq, Eq)]
pub enum Step<'a> {
    /// Everything was consumed and more is needed.
    NeedMore,
    /// The head is complete.
    Head { consumed: usize, head: Head },
    /// Body bytes (a slice of the input; chunk framing is not included).
    Body { consumed: usize, data: &'a [u8] },
    /// An interim (1xx) response head was skipped; the final response follows.
    Interim { consumed: usize },
    /// The response is complete; bytes after `consumed` belong to the next response.
    Done { consumed: usize },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Chunk {
    /// Reading hex digits of a chunk size; `any` once at least one was seen.
    Size {
        any: bool,
    },
    /// Skipping a chunk extension up to CR.
    Ext,
    /// Expecting LF after the size line.
    SizeLf,
    /// Inside chunk data.
    Data,
    /// Expecting CR then LF after chunk data.
    DataCr,
    DataLf,
    /// After the last chunk: trailer lines; `empty` while the current line has no bytes.
    Trailer {
        empty: bool,
    },
    TrailerLf {
        empty: bool,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Head,
    Length,
    Chunked(Chunk),
    UntilClose,
    Done,
}

/// Incremental response parser; reset it before each response.
pub struct ResponseParser {
    head: Box<[u8; HEAD_MAX]>,
    head_len: usize,
    state: State,
    /// Body bytes still expected (Length) or left in the current chunk (Chunked).
    remaining: u64,
    /// Body bytes delivered so far.
    pub body_bytes: u64,
    /// Any byte of this response seen.
    started: bool,
}

impl Default for ResponseParser {
    fn default() -> Self {
        Self::new()
    }
}

impl ResponseParser {
    pub fn new() -> ResponseParser {
        ResponseParser {
            head: Box::new([0; HEAD_MAX]),
            head_len: 0,
            state: State::Head,
            remaining: 0,
            body_bytes: 0,
            started: false,
        }
    }

    pub fn reset(&mut self) {
        self.head_len = 0;
        self.state = State::Head;
        self.remaining = 0;
        self.body_bytes = 0;
        self.started = false;
    }

    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Parses as much of `input` as makes one step.
    pub fn feed<'a>(&mut self, input: &'a [u8]) -> Result<Step<'a>, RespError> {
        if !input.is_empty() {
            self.started = true;
        }
        match self.state {
            State::Head => self.feed_head(input),
            State::Length => {
                let n = (input.len() as u64).min(self.remaining) as usize;
                self.remaining -= n as u64;
                self.body_bytes += n as u64;
                if self.remaining == 0 {
                    self.state = State::Done;
                }
                if n == 0 && self.state == State::Done {
                    return Ok(Step::Done { consumed: 0 });
                }
                Ok(Step::Body {
                    consumed: n,
                    data: &input[..n],
                })
            }
            State::UntilClose => {
                self.body_bytes += input.len() as u64;
                Ok(Step::Body {
                    consumed: input.len(),
                    data: input,
                })
            }
            State::Chunked(c) => self.feed_chunked(c, input),
            State::Done => Ok(Step::Done { consumed: 0 }),
        }
    }

    /// The connection reached end of file: is the response complete?
    pub fn eof(&mut self) -> Result<(), RespError> {
        match self.state {
            State::Done => Ok(()),
            State::UntilClose => {
                self.state = State::Done;
                Ok(())
            }
            State::Head if !self.started => Err(RespError::NoResponse),
            _ => Err(RespError::Truncated),
        }
    }

    fn feed_head<'a>(&mut self, input: &'a [u8]) -> Result<Step<'a>, RespError> {
        let old = self.head_len;
        let take = input.len().min(HEAD_MAX - old);
        self.head[old..old + take].copy_from_slice(&input[..take]);
        self.head_len += take;
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut resp = httparse::Response::new(&mut headers);
        let n = match resp.parse(&self.head[..self.head_len]) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => {
                if self.head_len == HEAD_MAX {
                    return Err(RespError::HeadTooLong);
                }
                return Ok(Step::NeedMore);
            }
            Err(httparse::Error::TooManyHeaders) => return Err(RespError::HeadTooLong),
            Err(_) => return Err(RespError::BadHead),
        };
        let status = resp.code.ok_or(RespError::BadHead)?;
        let version = resp.version.ok_or(RespError::BadHead)?;
        let mut content_length: Option<u64> = None;
        let mut chunked = false;
        let mut close = version == 0;
        for h in resp.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                let v = parse_decimal(h.value).ok_or(RespError::BadLength)?;
                if content_length.is_some_and(|c| c != v) {
                    return Err(RespError::BadLength);
                }
                content_length = Some(v);
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                // The final coding decides (RFC 9112 §6.1).
                let last = h.value.rsplit(|&b| b == b',').next().unwrap_or(b"");
                chunked = trim(last).eq_ignore_ascii_case(b"chunked");
            } else if h.name.eq_ignore_ascii_case("connection") {
                for tok in h.value.split(|&b| b == b',') {
                    let tok = trim(tok);
                    if tok.eq_ignore_ascii_case(b"close") {
                        close = true;
                    } else if tok.eq_ignore_ascii_case(b"keep-alive") && version == 0 {
                        close = false;
                    }
                }
            }
        }
        let consumed = n - old;
        if (100..200).contains(&status) {
            // An interim response: drop it; the real one follows.
            self.head_len = 0;
            return Ok(Step::Interim { consumed });
        }
        let no_body = status == 204 || status == 304;
        self.state = if no_body {
            State::Done
        } else if chunked {
            State::Chunked(Chunk::Size { any: false })
        } else if let Some(len) = content_length {
            self.remaining = len;
            if len == 0 {
                State::Done
            } else {
                State::Length
            }
        } else {
            close = true;
            State::UntilClose
        };
        Ok(Step::Head {
            consumed,
            head: Head {
                status,
                head_len: n,
                content_length,
                chunked,
                close,
            },
        })
    }

    fn feed_chunked<'a>(&mut self, mut c: Chunk, input: &'a [u8]) -> Result<Step<'a>, RespError> {
        let mut i = 0;
        while i < input.len() {
            if c == Chunk::Data {
                let n = (input.len() - i).min(self.remaining.min(usize::MAX as u64) as usize);
                self.remaining -= n as u64;
                self.body_bytes += n as u64;
                if self.remaining == 0 {
                    c = Chunk::DataCr;
                }
                self.state = State::Chunked(c);
                return Ok(Step::Body {
                    consumed: i + n,
                    data: &input[i..i + n],
                });
            }
            let b = input[i];
            i += 1;
            c = match c {
                Chunk::Size { any } => match hex(b) {
                    Some(d) => {
                        if self.remaining > (u64::MAX >> 4) {
                            return Err(RespError::BadChunk);
                        }
                        self.remaining = self.remaining << 4 | d as u64;
                        Chunk::Size { any: true }
                    }
                    None if !any => return Err(RespError::BadChunk),
                    None if b == b'\r' => Chunk::SizeLf,
                    None if b == b';' || b == b' ' || b == b'\t' => Chunk::Ext,
                    None => return Err(RespError::BadChunk),
                },
                Chunk::Ext => match b {
                    b'\r' => Chunk::SizeLf,
                    b'\n' => return Err(RespError::BadChunk),
                    _ => Chunk::Ext,
                },
                Chunk::SizeLf if b == b'\n' => {
                    if self.remaining == 0 {
                        Chunk::Trailer { empty: true }
                    } else {
                        Chunk::Data
                    }
                }
                Chunk::DataCr if b == b'\r' => Chunk::DataLf,
                Chunk::DataLf if b == b'\n' => Chunk::Size { any: false },
                Chunk::Trailer { empty } => match b {
                    b'\r' => Chunk::TrailerLf { empty },
                    b'\n' => return Err(RespError::BadChunk),
                    _ => Chunk::Trailer { empty: false },
                },
                Chunk::TrailerLf { empty } if b == b'\n' => {
                    if empty {
                        self.state = State::Done;
                        return Ok(Step::Done { consumed: i });
                    }
                    Chunk::Trailer { empty: true }
                }
                _ => return Err(RespError::BadChunk),
            };
        }
        self.state = State::Chunked(c);
        Ok(Step::NeedMore)
    }
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

fn trim(s: &[u8]) -> &[u8] {
    let start = s
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &s[start..end]
}

fn parse_decimal(s: &[u8]) -> Option<u64> {
    let s = trim(s);
    if s.is_empty() || s.len() > 19 {
        return None;
    }
    let mut v: u64 = 0;
    for &b in s {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v * 10 + (b - b'0') as u64;
    }
    Some(v)
}

/// Feeds `input` to a fresh parser in pieces of `piece` bytes and returns the head,
/// the body and how many bytes were left over after the response (for tests and fuzzing).
pub fn parse_all(
    input: &[u8],
    piece: usize,
    eof: bool,
) -> Result<(Option<Head>, Vec<u8>, usize), RespError> {
    let mut p = ResponseParser::new();
    let mut head = None;
    let mut body = Vec::new();
    let mut off = 0;
    let piece = piece.max(1);
    while off < input.len() {
        let end = (off + piece).min(input.len());
        let mut chunk = &input[off..end];
        while !chunk.is_empty() {
            match p.feed(chunk)? {
                Step::NeedMore => chunk = &[],
                Step::Head { consumed, head: h } => {
                    head = Some(h);
                    chunk = &chunk[consumed..];
                }
                Step::Body { consumed, data } => {
                    body.extend_from_slice(data);
                    chunk = &chunk[consumed..];
                }
                Step::Done { consumed } | Step::Interim { consumed } => {
                    chunk = &chunk[consumed..];
                }
            }
            if p.is_done() {
                return Ok((head, body, input.len() - (end - chunk.len())));
            }
        }
        off = end;
    }
    if eof {
        p.eof()?;
        return Ok((head, body, 0));
    }
    Err(RespError::Truncated)
}

/// The Location of a redirect response (301, 302, 303, 307, 308) whose head is `head`,
/// trimmed; `None` for any other response, a head that is not HTTP, or no Location.
pub fn redirect_location(head: &[u8]) -> Option<&str> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut fields);
    resp.parse(head).ok()?;
    if !matches!(resp.code?, 301 | 302 | 303 | 307 | 308) {
        return None;
    }
    let loc = resp
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("location"))?;
    let loc = std::str::from_utf8(loc.value).ok()?.trim();
    (!loc.is_empty() && !loc.bytes().any(|b| b < b' ' || b == 0x7f)).then_some(loc)
}

/// `location` (absolute `scheme://…`, scheme-relative `//host/…`, absolute-path `/…` or
/// relative `name`, RFC 3986 section 5; no dot-segment removal, the server normalises)
/// resolved against `base` (`scheme://authority/path`), or `None` when `base` is no URL.
pub fn resolve_location(base: &str, location: &str) -> Option<String> {
    let is_scheme = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
    };
    if location
        .split_once("://")
        .is_some_and(|(scheme, _)| is_scheme(scheme))
    {
        return Some(location.to_string());
    }
    let (scheme, rest) = base.split_once("://").filter(|(s, _)| is_scheme(s))?;
    if let Some(authority_path) = location.strip_prefix("//") {
        return Some(format!("{scheme}://{authority_path}"));
    }
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    if location.starts_with('/') {
        return Some(format!("{scheme}://{authority}{location}"));
    }
    let path = path.split(['?', '#']).next().unwrap_or("");
    let dir = &path[..path.rfind('/').map_or(0, |i| i + 1)];
    let dir = if dir.is_empty() { "/" } else { dir };
    Some(format!("{scheme}://{authority}{dir}{location}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real nginx 1.22 response head (captured on this project's bench veth).
    const NGINX: &[u8] = b"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Sun, 22 Nov 2026 12:00:00 GMT\r\nContent-Type: text/html\r\nContent-Length: 5\r\nLast-Modified: Sun, 22 Nov 2026 11:57:00 GMT\r\nConnection: keep-alive\r\nETag: \"6740722c-5\"\r\nAccept-Ranges: bytes\r\n\r\nhello";

    #[test]
    fn content_length_in_every_split() {
        for piece in 1..NGINX.len() + 1 {
            let (h, body, rest) = parse_all(NGINX, piece, false).unwrap();
            let h = h.unwrap();
            assert_eq!(h.status, 200);
            assert_eq!(h.content_length, Some(5));
            assert!(!h.close);
            assert_eq!(body, b"hello");
            assert_eq!(rest, 0);
        }
    }

    #[test]
    fn pipelined_leftover_is_reported() {
        let mut two = NGINX.to_vec();
        two.extend_from_slice(NGINX);
        let (_, body, rest) = parse_all(&two, 4096, false).unwrap();
        assert_eq!(body, b"hello");
        assert_eq!(rest, NGINX.len());
    }

    #[test]
    fn chunked_with_extension_and_trailer() {
        let r = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n4;x=y\r\nWiki\r\n5\r\npedia\r\n0\r\nX-T: 1\r\n\r\nNEXT";
        for piece in 1..r.len() {
            let (h, body, rest) = parse_all(r, piece, false).unwrap();
            assert!(h.unwrap().chunked);
            assert_eq!(body, b"Wikipedia");
            assert_eq!(rest, 4);
        }
    }

    #[test]
    fn close_delimited_needs_eof() {
        let r = b"HTTP/1.0 200 OK\r\n\r\nabc";
        assert_eq!(parse_all(r, 100, false), Err(RespError::Truncated));
        let (h, body, _) = parse_all(r, 100, true).unwrap();
        assert!(h.unwrap().close);
        assert_eq!(body, b"abc");
    }

    #[test]
    fn http10_keep_alive_and_no_body_codes() {
        let r =
            b"HTTP/1.0 304 Not Modified\r\nConnection: keep-alive\r\nContent-Length: 99\r\n\r\n";
        let (h, body, rest) = parse_all(r, 7, false).unwrap();
        let h = h.unwrap();
        assert_eq!(h.status, 304);
        assert!(!h.close);
        assert!(body.is_empty());
        assert_eq!(rest, 0);
    }

    #[test]
    fn interim_response_is_skipped() {
        let r = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        let (h, body, _) = parse_all(r, 1000, false).unwrap();
        assert_eq!(h.unwrap().status, 200);
        assert_eq!(body, b"ok");
    }

    #[test]
    fn bad_inputs_are_errors() {
        let cases: &[(&[u8], bool, RespError)] = &[
            (b"SSH-2.0-OpenSSH\r\n\r\n", false, RespError::BadHead),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n",
                false,
                RespError::BadLength,
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                false,
                RespError::BadLength,
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
                false,
                RespError::BadLength,
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                false,
                RespError::BadChunk,
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\n",
                false,
                RespError::BadChunk,
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\naXY",
                false,
                RespError::BadChunk,
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
                true,
                RespError::Truncated,
            ),
            (b"HTTP/1.1 200 OK\r\nContent-Le", true, RespError::Truncated),
            (b"", true, RespError::NoResponse),
        ];
        for (input, eof, want) in cases {
            assert_eq!(
                parse_all(input, 3, *eof).map(|_| ()),
                Err(*want),
                "{:?}",
                String::from_utf8_lossy(input)
            );
        }
        let mut long = b"HTTP/1.1 200 OK\r\n".to_vec();
        while long.len() < HEAD_MAX + 10 {
            long.extend_from_slice(b"X-Pad: aaaaaaaaaaaaaaaaaaaaaaaa\r\n");
        }
        assert_eq!(
            parse_all(&long, 500, false).map(|_| ()),
            Err(RespError::HeadTooLong)
        );
    }

    /// A 301 captured from `bareweb serve examples/site` (GET /docs).
    const BAREWEB_301: &[u8] = b"HTTP/1.1 301 Moved Permanently\r\nDate: Sat, 28 Nov 2026 10:10:50 GMT\r\nServer: bareweb\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: 123\r\nLocation: /docs/\r\nConnection: close\r\n\r\n";

    #[test]
    fn redirects_are_found_and_resolved() {
        assert_eq!(redirect_location(BAREWEB_301), Some("/docs/"));
        assert_eq!(
            redirect_location(b"HTTP/1.1 200 OK\r\nLocation: /x\r\n\r\n"),
            None
        );
        assert_eq!(
            redirect_location(b"HTTP/1.1 302 Found\r\nContent-Length: 0\r\n\r\n"),
            None
        );
        assert_eq!(
            redirect_location(b"HTTP/1.1 308 X\r\nLocation:  \r\n\r\n"),
            None
        );
        assert_eq!(redirect_location(b"not http"), None);
        let b = "http://10.0.0.2:8080/a/b/c.html?q=1";
        let r = |l: &str| resolve_location(b, l);
        assert_eq!(r("/x").unwrap(), "http://10.0.0.2:8080/x");
        assert_eq!(r("d.html").unwrap(), "http://10.0.0.2:8080/a/b/d.html");
        assert_eq!(r("//h2/y").unwrap(), "http://h2/y");
        assert_eq!(r("http://h3/z").unwrap(), "http://h3/z");
        assert_eq!(
            r("/go?to=http://x/").unwrap(),
            "http://10.0.0.2:8080/go?to=http://x/"
        );
        assert_eq!(resolve_location("http://h", "x").unwrap(), "http://h/x");
        assert_eq!(resolve_location("http://h?a/b", "x").unwrap(), "http://h/x");
        assert_eq!(resolve_location("no url", "x"), None);
    }
}
