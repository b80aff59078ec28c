//! Request parsing (RFC 9112 sections 2-3, 5-6 and 9.3).
//!
//! The request line is parsed here, byte by byte, so that a prefix of a valid request is
//! always [`Parse::Partial`] and garbage is refused as soon as it is seen; the header
//! section goes to `httparse::parse_headers` with a fixed array of [`MAX_HEADERS`].

use super::fields::{self, AcceptEncoding};
use super::{Status, MAX_HEADERS, MAX_REQUEST, MAX_REQUEST_LINE};

/// The request method, as far as a static server cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `GET`.
    Get,
    /// `HEAD`.
    Head,
    /// A method of RFC 9110 (or `PATCH`) that a static server does not allow: 405.
    Other,
    /// Any other token: 501.
    Unknown,
}

impl Method {
    fn from_token(t: &[u8]) -> Method {
        // Methods are case-sensitive (RFC 9110 9.1).
        match t {
            b"GET" => Method::Get,
            b"HEAD" => Method::Head,
            b"POST" | b"PUT" | b"DELETE" | b"CONNECT" | b"OPTIONS" | b"TRACE" | b"PATCH" => {
                Method::Other
            }
            _ => Method::Unknown,
        }
    }
}

/// The protocol version of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// `HTTP/1.0`.
    Http10,
    /// `HTTP/1.1`, or a later `HTTP/1.x`, which RFC 9110 2.5 says to process as the
    /// highest minor version we implement.
    Http11,
}

/// A parsed request head, borrowing the receive buffer. Field values are as sent, with
/// surrounding whitespace removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request<'b> {
    /// The method.
    pub method: Method,
    /// The request target, raw (still percent-encoded, with any query).
    pub target: &'b [u8],
    /// The protocol version.
    pub version: Version,
    /// Whether the connection may stay open after the response, from the version and
    /// `Connection` (RFC 9112 9.3). A request with a body closes regardless, see
    /// [`Request::has_body`].
    pub keep_alive: bool,
    /// `If-Match` (the first line if there were several: clients send one).
    pub if_match: Option<&'b [u8]>,
    /// `If-Unmodified-Since` (an empty value, which does not parse and so is ignored as
    /// RFC 9110 13.1.4 requires, if there were several).
    pub if_unmodified_since: Option<&'b [u8]>,
    /// `If-None-Match` (the first line if there were several).
    pub if_none_match: Option<&'b [u8]>,
    /// `If-Modified-Since` (an empty value if there were several, which is invalid and so
    /// ignored, as RFC 9110 13.1.3 requires for a list).
    pub if_modified_since: Option<&'b [u8]>,
    /// `Range` (an empty value, hence ignored, if there were several).
    pub range: Option<&'b [u8]>,
    /// `If-Range` (an empty value, which never matches, if there were several).
    pub if_range: Option<&'b [u8]>,
    /// What `Accept-Encoding` says (all its lines), for choosing an encoded variant.
    pub accept: AcceptEncoding,
    /// `Host`, validated; at most one (RFC 9112 3.2).
    pub host: Option<&'b [u8]>,
    /// The request announces content (`Content-Length` > 0 or `Transfer-Encoding`). We
    /// never read request content, so the response closes the connection.
    pub has_body: bool,
}

/// The outcome of [`parse`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parse<'b> {
    /// A whole request head.
    Complete {
        /// The request.
        request: Request<'b>,
        /// Bytes it took, up to and including the empty line (and any empty lines that
        /// preceded the request line). A pipelined request starts here.
        len: usize,
    },
    /// A valid prefix: wait for more bytes.
    Partial,
    /// Answer this status with [`respond_error`](super::respond_error) and close.
    Error(Status),
}

/// Request-line parse state: where the line ends and its three parts.
struct Line<'b> {
    method: &'b [u8],
    target: &'b [u8],
    version: Version,
    /// Index just past the line's LF.
    end: usize,
}

/// `Ok(None)`: a valid prefix that needs more bytes.
type Step<T> = Result<Option<T>, Status>;

/// Is `c` allowed in a request target? Visible ASCII, plus obs-text that some clients
/// send raw (decoded like any other byte). CTLs, SP and DEL are not.
fn is_target_byte(c: u8) -> bool {
    c > 0x20 && c != 0x7f
}

/// Parses `HTTP-version CRLF` (or bare LF, RFC 9112 2.2) at the start of `b`; returns the
/// version and the bytes taken.
fn version(b: &[u8]) -> Step<(Version, usize)> {
    const PREFIX: &[u8] = b"HTTP/";
    let n = b.len().min(PREFIX.len());
    if b[..n] != PREFIX[..n] {
        return Err(Status::BAD_REQUEST);
    }
    // After the prefix: up to the line end, which may not have arrived yet.
    let rest = &b[n..];
    let Some(eol) = rest.iter().position(|&c| c == b'\r' || c == b'\n') else {
        return if rest.iter().all(|&c| c.is_ascii_digit() || c == b'.') {
            Ok(None)
        } else {
            Err(Status::BAD_REQUEST)
        };
    };
    let v = &rest[..eol];
    let taken = match &rest[eol..] {
        [b'\n', ..] => n + eol + 1,
        [b'\r', b'\n', ..] => n + eol + 2,
        [b'\r'] => return Ok(None),
        _ => return Err(Status::BAD_REQUEST),
    };
    match v {
        // HTTP-version = HTTP-name "/" DIGIT "." DIGIT (RFC 9112 2.3)
        [b'1', b'.', b'0'] => Ok(Some((Version::Http10, taken))),
        [b'1', b'.', minor] if minor.is_ascii_digit() => Ok(Some((Version::Http11, taken))),
        // Another major version, or a version that looks like one: not ours.
        [_, ..] if v.iter().all(|&c| c.is_ascii_digit() || c == b'.') && v[0].is_ascii_digit() => {
            Err(Status::HTTP_VERSION_NOT_SUPPORTED)
        }
        _ => Err(Status::BAD_REQUEST),
    }
}

/// `request-line = method SP request-target SP HTTP-version CRLF`, strictly with single
/// spaces (RFC 9112 3). `b` starts at the method.
fn request_line(b: &[u8]) -> Step<Line<'_>> {
    let too_long = b.len() > MAX_REQUEST_LINE;
    let m = b.iter().position(|&c| !fields::is_tchar(c));
    let Some(m) = m else {
        return if too_long {
            Err(Status::BAD_REQUEST)
        } else {
            Ok(None)
        };
    };
    if m == 0 || b[m] != b' ' {
        return Err(Status::BAD_REQUEST);
    }
    let t0 = m + 1;
    let Some(t) = b[t0..].iter().position(|&c| !is_target_byte(c)) else {
        return if too_long {
            Err(Status::URI_TOO_LONG)
        } else {
            Ok(None)
        };
    };
    let t1 = t0 + t;
    if t == 0 || b[t1] != b' ' {
        // Includes HTTP/0.9's "GET /\r\n", which has no version.
        return Err(Status::BAD_REQUEST);
    }
    let v0 = t1 + 1;
    let Some((version, taken)) = version(&b[v0..])? else {
        return if too_long {
            Err(Status::URI_TOO_LONG)
        } else {
            Ok(None)
        };
    };
    let end = v0 + taken;
    let line_len = end - if b[end - 2] == b'\r' { 2 } else { 1 };
    if line_len > MAX_REQUEST_LINE {
        return Err(Status::URI_TOO_LONG);
    }
    Ok(Some(Line {
        method: &b[..m],
        target: &b[t0..t1],
        version,
        end,
    }))
}

/// Parses the request at the start of `buf` (the bytes received so far on a connection,
/// beginning at a request). Never panics, never reads past [`MAX_REQUEST`] bytes.
pub fn parse(buf: &[u8]) -> Parse<'_> {
    let cut = &buf[..buf.len().min(MAX_REQUEST)];
    match fast::parse(cut) {
        Some(step) => outcome(step),
        None => parse_general(buf),
    }
}

/// [`parse`] without its fast path for the common request (`fast`): every request
/// through the general parser. The same answer on every input (tests and the
/// `http_request` fuzz target compare them).
pub fn parse_general(buf: &[u8]) -> Parse<'_> {
    outcome(parse_inner(buf))
}

fn outcome(step: Step<(Request<'_>, usize)>) -> Parse<'_> {
    match step {
        Ok(Some((request, len))) => Parse::Complete { request, len },
        Ok(None) => Parse::Partial,
        Err(status) => Parse::Error(status),
    }
}

fn parse_inner(buf: &[u8]) -> Step<(Request<'_>, usize)> {
    let full = buf.len() >= MAX_REQUEST;
    let buf = &buf[..buf.len().min(MAX_REQUEST)];
    // RFC 9112 2.2: "a server that is expecting to receive and parse a request-line
    // SHOULD ignore at least one empty line (CRLF) received prior to the request-line."
    let mut start = 0;
    loop {
        match &buf[start..] {
            [b'\r', b'\n', ..] => start += 2,
            [b'\n', ..] => start += 1,
            [b'\r'] | [] => {
                return if full {
                    Err(Status::BAD_REQUEST)
                } else {
                    Ok(None)
                };
            }
            _ => break,
        }
    }
    let Some(line) = request_line(&buf[start..])? else {
        return if full {
            Err(Status::HEADER_FIELDS_TOO_LARGE)
        } else {
            Ok(None)
        };
    };
    let fields_start = start + line.end;
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let (fields_len, headers) = match httparse::parse_headers(&buf[fields_start..], &mut headers) {
        Ok(httparse::Status::Complete(done)) => done,
        Ok(httparse::Status::Partial) if full => return Err(Status::HEADER_FIELDS_TOO_LARGE),
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(Status::HEADER_FIELDS_TOO_LARGE),
        Err(_) => return Err(Status::BAD_REQUEST),
    };
    let mut f = Fields::new();
    for h in headers {
        f.add(h.name.as_bytes(), fields::trim_ows(h.value))?;
    }
    f.finish(line, fields_start + fields_len)
}

/// What the field lines say, gathered line by line (by the general parser and the fast
/// path alike), and the checks made once all are read.
struct Fields<'b> {
    host: Option<&'b [u8]>,
    if_match: Option<&'b [u8]>,
    if_unmodified_since: Option<&'b [u8]>,
    if_none_match: Option<&'b [u8]>,
    if_modified_since: Option<&'b [u8]>,
    range: Option<&'b [u8]>,
    if_range: Option<&'b [u8]>,
    accept: AcceptEncoding,
    close: bool,
    keep_alive: bool,
    content_length: Option<u64>,
    chunked: bool,
}

impl<'b> Fields<'b> {
    fn new() -> Fields<'b> {
        Fields {
            host: None,
            if_match: None,
            if_unmodified_since: None,
            if_none_match: None,
            if_modified_since: None,
            range: None,
            if_range: None,
            accept: AcceptEncoding::default(),
            close: false,
            keep_alive: false,
            content_length: None,
            chunked: false,
        }
    }

    /// One field line: its name and its value, trimmed.
    fn add(&mut self, name: &[u8], v: &'b [u8]) -> Result<(), Status> {
        // A field that must appear once: a second line makes the value empty, i.e. invalid.
        fn once<'b>(slot: &mut Option<&'b [u8]>, v: &'b [u8]) {
            *slot = Some(if slot.is_some() { &[] } else { v });
        }
        if name.eq_ignore_ascii_case(b"host") {
            // RFC 9112 3.2: "A server MUST respond with a 400 (Bad Request) status code
            // to any HTTP/1.1 request message that lacks a Host header field and to any
            // request message that contains more than one Host header field line or a
            // Host header field with an invalid field value."
            if self.host.is_some() || !fields::valid_host(v) {
                return Err(Status::BAD_REQUEST);
            }
            self.host = Some(v);
        } else if name.eq_ignore_ascii_case(b"connection") {
            let [close, keep_alive] = fields::has_tokens(v, [b"close", b"keep-alive"]);
            self.close |= close;
            self.keep_alive |= keep_alive;
        } else if name.eq_ignore_ascii_case(b"content-length") {
            // RFC 9112 6.3: an invalid Content-Length is unrecoverable: 400.
            let n = fields::content_length(v).ok_or(Status::BAD_REQUEST)?;
            if self.content_length.is_some_and(|m| m != n) {
                return Err(Status::BAD_REQUEST);
            }
            self.content_length = Some(n);
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            self.chunked = true;
        } else if name.eq_ignore_ascii_case(b"if-none-match") {
            // Keeping only the first line can only miss a match, so the answer is a full
            // 200 instead of a 304: always correct.
            self.if_none_match.get_or_insert(v);
        } else if name.eq_ignore_ascii_case(b"if-match") {
            self.if_match.get_or_insert(v);
        } else if name.eq_ignore_ascii_case(b"if-unmodified-since") {
            once(&mut self.if_unmodified_since, v);
        } else if name.eq_ignore_ascii_case(b"if-modified-since") {
            once(&mut self.if_modified_since, v);
        } else if name.eq_ignore_ascii_case(b"range") {
            once(&mut self.range, v);
        } else if name.eq_ignore_ascii_case(b"if-range") {
            once(&mut self.if_range, v);
        } else if name.eq_ignore_ascii_case(b"accept-encoding") {
            self.accept.add(v);
        }
        Ok(())
    }

    /// The request of `line` with these fields, `len` bytes long.
    #[inline(always)]
    fn finish(self, line: Line<'b>, len: usize) -> Step<(Request<'b>, usize)> {
        let version = line.version;
        if version == Version::Http11 && self.host.is_none() {
            return Err(Status::BAD_REQUEST);
        }
        let chunked = self.chunked;
        // RFC 9112 6.1: "A server or client that receives an HTTP/1.0 message containing
        // a Transfer-Encoding header field MUST treat the message as if the framing is
        // faulty".
        if chunked && version == Version::Http10 {
            return Err(Status::BAD_REQUEST);
        }
        let method = Method::from_token(line.method);
        // We never read request content: a GET or HEAD whose content is small is answered
        // and the connection closed (the content is discarded with it). Content larger
        // than one request buffer, or of unbounded length (chunked), is refused: RFC 9110
        // 15.5.14, "413 (Content Too Large) ... the request content is larger than the
        // server is willing or able to process". Other methods get 405 whatever their
        // content.
        let content_length = self.content_length;
        let too_large = chunked || content_length.is_some_and(|n| n > MAX_REQUEST as u64);
        if too_large && matches!(method, Method::Get | Method::Head) {
            return Err(Status::CONTENT_TOO_LARGE);
        }
        let request = Request {
            method,
            target: line.target,
            version,
            keep_alive: match version {
                Version::Http11 => !self.close,
                Version::Http10 => self.keep_alive && !self.close,
            },
            if_match: self.if_match,
            if_unmodified_since: self.if_unmodified_since,
            if_none_match: self.if_none_match,
            if_modified_since: self.if_modified_since,
            range: self.range,
            if_range: self.if_range,
            accept: self.accept,
            host: self.host,
            has_body: chunked || content_length.is_some_and(|n| n > 0),
        };
        Ok(Some((request, len)))
    }
}

mod fast;
#[cfg(test)]
mod tests;
