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
    /// `If-None-Match` (the first line if there were several).
    pub if_none_match: Option<&'b [u8]>,
    /// `If-Modified-Since` (an empty value if there were several, which is invalid and so
    /// ignored, as RFC 9110 13.1.3 requires for a list).
    pub if_modified_since: Option<&'b [u8]>,
    /// `Range` (an empty value, hence ignored, if there were several).
    pub range: Option<&'b [u8]>,
    /// `If-Range` (an empty value, which never matches, if there were several).
    pub if_range: Option<&'b [u8]>,
    /// `Accept-Encoding` prefers gzip over identity (see `fields::AcceptEncoding`).
    pub accept_gzip: bool,
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
    match parse_inner(buf) {
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

    let mut req = Request {
        method: Method::from_token(line.method),
        target: line.target,
        version: line.version,
        keep_alive: false,
        if_none_match: None,
        if_modified_since: None,
        range: None,
        if_range: None,
        accept_gzip: false,
        host: None,
        has_body: false,
    };
    let mut close = false;
    let mut keep_alive = false;
    let mut content_length: Option<u64> = None;
    let mut chunked = false;
    let mut accept = AcceptEncoding::default();
    // A field that must appear once: a second line makes the value empty, i.e. invalid.
    fn once<'b>(slot: &mut Option<&'b [u8]>, v: &'b [u8]) {
        *slot = Some(if slot.is_some() { &[] } else { v });
    }
    for h in headers {
        let name = h.name.as_bytes();
        let v = fields::trim_ows(h.value);
        if name.eq_ignore_ascii_case(b"host") {
            // RFC 9112 3.2: "A server MUST respond with a 400 (Bad Request) status code
            // to any HTTP/1.1 request message that lacks a Host header field and to any
            // request message that contains more than one Host header field line or a
            // Host header field with an invalid field value."
            if req.host.is_some() || !fields::valid_host(v) {
                return Err(Status::BAD_REQUEST);
            }
            req.host = Some(v);
        } else if name.eq_ignore_ascii_case(b"connection") {
            close |= fields::has_token(v, b"close");
            keep_alive |= fields::has_token(v, b"keep-alive");
        } else if name.eq_ignore_ascii_case(b"content-length") {
            // RFC 9112 6.3: an invalid Content-Length is unrecoverable: 400.
            let n = fields::content_length(v).ok_or(Status::BAD_REQUEST)?;
            if content_length.is_some_and(|m| m != n) {
                return Err(Status::BAD_REQUEST);
            }
            content_length = Some(n);
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            chunked = true;
        } else if name.eq_ignore_ascii_case(b"if-none-match") {
            // Keeping only the first line can only miss a match, so the answer is a full
            // 200 instead of a 304: always correct.
            req.if_none_match.get_or_insert(v);
        } else if name.eq_ignore_ascii_case(b"if-modified-since") {
            once(&mut req.if_modified_since, v);
        } else if name.eq_ignore_ascii_case(b"range") {
            once(&mut req.range, v);
        } else if name.eq_ignore_ascii_case(b"if-range") {
            once(&mut req.if_range, v);
        } else if name.eq_ignore_ascii_case(b"accept-encoding") {
            accept.add(v);
        }
    }
    if req.version == Version::Http11 && req.host.is_none() {
        return Err(Status::BAD_REQUEST);
    }
    // RFC 9112 6.1: "A server or client that receives an HTTP/1.0 message containing a
    // Transfer-Encoding header field MUST treat the message as if the framing is faulty".
    if chunked && req.version == Version::Http10 {
        return Err(Status::BAD_REQUEST);
    }
    req.has_body = chunked || content_length.is_some_and(|n| n > 0);
    // We never read request content: a GET or HEAD whose content is small is answered
    // and the connection closed (the content is discarded with it). Content larger than
    // one request buffer, or of unbounded length (chunked), is refused: RFC 9110 15.5.14,
    // "413 (Content Too Large) ... the request content is larger than the server is
    // willing or able to process". Other methods get 405 whatever their content.
    let too_large = chunked || content_length.is_some_and(|n| n > MAX_REQUEST as u64);
    if too_large && matches!(req.method, Method::Get | Method::Head) {
        return Err(Status::CONTENT_TOO_LARGE);
    }
    req.keep_alive = match req.version {
        Version::Http11 => !close,
        Version::Http10 => keep_alive && !close,
    };
    req.accept_gzip = accept.gzip_preferred();
    Ok(Some((req, fields_start + fields_len)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CURL: &[u8] =
        b"GET / HTTP/1.1\r\nHost: 10.0.0.2\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\n\r\n";
    const WGET: &[u8] = b"GET /docs/index.html HTTP/1.1\r\nHost: 10.0.0.2:8080\r\nUser-Agent: Wget/1.21.3\r\nAccept: */*\r\nAccept-Encoding: identity\r\nConnection: Keep-Alive\r\n\r\n";
    const PYTHON: &[u8] = b"GET /x HTTP/1.1\r\nHost: 10.0.0.2\r\nAccept-Encoding: identity\r\n\r\n";
    const FIREFOX: &[u8] = b"GET /style.css?v=3 HTTP/1.1\r\nHost: example.org\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:109.0) Gecko/20100101 Firefox/115.0\r\nAccept: text/css,*/*;q=0.1\r\nAccept-Language: en-US,en;q=0.5\r\nAccept-Encoding: gzip, deflate, br\r\nConnection: keep-alive\r\nIf-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\nIf-None-Match: \"5f3a-1c2b-gz\"\r\n\r\n";
    const HTTP10: &[u8] = b"HEAD /a HTTP/1.0\r\nUser-Agent: ApacheBench/2.3\r\n\r\n";

    fn complete(buf: &[u8]) -> (Request<'_>, usize) {
        match parse(buf) {
            Parse::Complete { request, len } => (request, len),
            other => panic!("{other:?} for {:?}", core::str::from_utf8(buf)),
        }
    }

    fn error(buf: &[u8]) -> u16 {
        match parse(buf) {
            Parse::Error(s) => s.code(),
            other => panic!("{other:?} for {:?}", core::str::from_utf8(buf)),
        }
    }

    #[test]
    fn curl() {
        let (r, len) = complete(CURL);
        assert_eq!(len, CURL.len());
        assert_eq!(
            r,
            Request {
                method: Method::Get,
                target: b"/",
                version: Version::Http11,
                keep_alive: true,
                if_none_match: None,
                if_modified_since: None,
                range: None,
                if_range: None,
                accept_gzip: false,
                host: Some(b"10.0.0.2"),
                has_body: false,
            }
        );
    }

    #[test]
    fn wget_python_firefox_ab() {
        let (r, len) = complete(WGET);
        assert_eq!(len, WGET.len());
        assert_eq!(r.target, b"/docs/index.html");
        assert_eq!(r.host, Some(&b"10.0.0.2:8080"[..]));
        assert!(r.keep_alive && !r.accept_gzip);

        let (r, len) = complete(PYTHON);
        assert_eq!(len, PYTHON.len());
        assert_eq!(r.target, b"/x");
        assert!(r.keep_alive && !r.accept_gzip && !r.has_body);

        let (r, _) = complete(FIREFOX);
        assert_eq!(r.target, b"/style.css?v=3");
        assert!(r.accept_gzip && r.keep_alive);
        assert_eq!(r.if_none_match, Some(&b"\"5f3a-1c2b-gz\""[..]));
        assert_eq!(
            r.if_modified_since,
            Some(&b"Sun, 06 Nov 1994 08:49:37 GMT"[..])
        );

        let (r, _) = complete(HTTP10);
        assert_eq!(r.method, Method::Head);
        assert_eq!(r.version, Version::Http10);
        assert!(!r.keep_alive);
        assert_eq!(r.host, None);
    }

    #[test]
    fn every_prefix_is_partial() {
        for req in [CURL, WGET, PYTHON, FIREFOX, HTTP10] {
            for n in 0..req.len() {
                assert_eq!(
                    parse(&req[..n]),
                    Parse::Partial,
                    "{:?}",
                    core::str::from_utf8(&req[..n])
                );
            }
        }
        let mut leading = alloc::vec::Vec::from(&b"\r\n\n"[..]);
        leading.extend_from_slice(CURL);
        for n in 0..leading.len() {
            assert_eq!(parse(&leading[..n]), Parse::Partial);
        }
        assert_eq!(complete(&leading).1, leading.len());
    }

    #[test]
    fn pipelined() {
        let mut buf = alloc::vec::Vec::new();
        buf.extend_from_slice(PYTHON);
        buf.extend_from_slice(CURL);
        buf.extend_from_slice(b"GET /partial HT");
        let (r, len) = complete(&buf);
        assert_eq!((r.target, len), (&b"/x"[..], PYTHON.len()));
        let (r, len2) = complete(&buf[len..]);
        assert_eq!((r.target, len2), (&b"/"[..], CURL.len()));
        assert_eq!(parse(&buf[len + len2..]), Parse::Partial);
    }

    #[test]
    fn bare_lf_and_whitespace() {
        let (r, len) = complete(b"GET /a HTTP/1.1\nHost: h \t\nConnection:close\n\n");
        assert_eq!(len, 44);
        assert_eq!(r.host, Some(&b"h"[..]));
        assert!(!r.keep_alive);
        assert_eq!(parse(b"GET /a HTTP/1.1\r"), Parse::Partial);
        assert_eq!(error(b"GET /a HTTP/1.1\rX"), 400);
    }

    #[test]
    fn methods() {
        let table: &[(&[u8], Method)] = &[
            (b"GET", Method::Get),
            (b"HEAD", Method::Head),
            (b"POST", Method::Other),
            (b"PUT", Method::Other),
            (b"DELETE", Method::Other),
            (b"OPTIONS", Method::Other),
            (b"TRACE", Method::Other),
            (b"CONNECT", Method::Other),
            (b"PATCH", Method::Other),
            (b"get", Method::Unknown),
            (b"PROPFIND", Method::Unknown),
            (b"BREW", Method::Unknown),
        ];
        for &(m, want) in table {
            let mut buf = alloc::vec::Vec::from(m);
            buf.extend_from_slice(b" / HTTP/1.1\r\nHost: h\r\n\r\n");
            assert_eq!(complete(&buf).0.method, want, "{m:?}");
        }
        assert_eq!(
            complete(b"OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n").0.target,
            b"*"
        );
    }

    #[test]
    fn versions() {
        let table: &[(&[u8], Result<Version, u16>)] = &[
            (b"HTTP/1.0", Ok(Version::Http10)),
            (b"HTTP/1.1", Ok(Version::Http11)),
            (b"HTTP/1.2", Ok(Version::Http11)),
            (b"HTTP/1.9", Ok(Version::Http11)),
            (b"HTTP/2.0", Err(505)),
            (b"HTTP/3.0", Err(505)),
            (b"HTTP/0.9", Err(505)),
            (b"HTTP/2", Err(505)),
            (b"HTTP/10.0", Err(505)),
            (b"HTTP/1.10", Err(505)),
            (b"HTTP/", Err(400)),
            (b"HTTP/1.x", Err(400)),
            (b"HTTP/.1", Err(400)),
            (b"http/1.1", Err(400)),
            (b"HTTPS/1.1", Err(400)),
            (b"HTTP/1.1 ", Err(400)),
            (b"FOO", Err(400)),
        ];
        for &(v, want) in table {
            let mut buf = alloc::vec::Vec::from(&b"GET / "[..]);
            buf.extend_from_slice(v);
            buf.extend_from_slice(b"\r\nHost: h\r\n\r\n");
            let got = match parse(&buf) {
                Parse::Complete { request, .. } => Ok(request.version),
                Parse::Error(s) => Err(s.code()),
                Parse::Partial => panic!("partial {v:?}"),
            };
            assert_eq!(got, want, "{:?}", core::str::from_utf8(v));
        }
    }

    #[test]
    fn malformed_request_lines() {
        for bad in [
            &b"GET  / HTTP/1.1\r\n\r\n"[..],
            b"GET /  HTTP/1.1\r\n\r\n",
            b" GET / HTTP/1.1\r\n\r\n",
            b"GET\t/ HTTP/1.1\r\n\r\n",
            b"GET / HTTP/1.1 \r\n\r\n",
            b"GET /\r\n",
            b"GET\r\n",
            b"GET /a\x00b HTTP/1.1\r\n\r\n",
            b"GET /a\x7fb HTTP/1.1\r\n\r\n",
            b"GE(T / HTTP/1.1\r\n\r\n",
            b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
            b"\r\r",
            b"GET / HTTP/1.1\n\r\r",
        ] {
            assert_eq!(error(bad), 400, "{bad:?}");
        }
    }

    #[test]
    fn header_errors() {
        // HTTP/1.1 needs exactly one valid Host.
        assert_eq!(error(b"GET / HTTP/1.1\r\n\r\n"), 400);
        assert_eq!(error(b"GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n"), 400);
        assert_eq!(error(b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n"), 400);
        assert_eq!(error(b"GET / HTTP/1.0\r\nHost: a\r\nhost: b\r\n\r\n"), 400);
        assert_eq!(
            complete(b"GET / HTTP/1.1\r\nHost:\r\n\r\n").0.host,
            Some(&b""[..])
        );
        // Field syntax (httparse): space before the colon, obs-fold, bad bytes.
        assert_eq!(error(b"GET / HTTP/1.1\r\nHost : a\r\n\r\n"), 400);
        assert_eq!(
            error(b"GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\n  folded\r\n\r\n"),
            400
        );
        assert_eq!(error(b"GET / HTTP/1.1\r\nHost: a\x01\r\n\r\n"), 400);
        assert_eq!(error(b"GET / HTTP/1.1\r\nHost: a\r\nNo colon\r\n\r\n"), 400);
        assert_eq!(error(b"GET / HTTP/1.1\r\n Host: a\r\n\r\n"), 400);
        // Content-Length.
        assert_eq!(
            error(b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: x\r\n\r\n"),
            400
        );
        assert_eq!(
            error(b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n"),
            400
        );
        assert_eq!(
            error(b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"),
            400
        );
        assert_eq!(
            error(b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1, 2\r\n\r\n"),
            400
        );
        // Transfer-Encoding in HTTP/1.0.
        assert_eq!(
            error(b"GET / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"),
            400
        );
        // Content a GET/HEAD cannot carry: more than one request buffer, or unbounded.
        assert_eq!(
            error(b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 8193\r\n\r\n"),
            413
        );
        assert_eq!(
            error(b"HEAD / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999\r\n\r\n"),
            413
        );
        assert_eq!(
            error(b"GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"),
            413
        );
    }

    #[test]
    fn bodies() {
        let r = |s: &'static [u8]| complete(s).0;
        assert!(!r(b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n").has_body);
        assert!(r(b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n").has_body);
        assert!(r(b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\n").has_body);
        assert!(r(b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n").has_body);
        assert!(r(b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 8192\r\n\r\n").has_body);
        assert!(r(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc").has_body);
        // The body is not part of `len`.
        assert_eq!(
            complete(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc").1,
            47
        );
    }

    #[test]
    fn connection_tokens() {
        let ka = |s: &'static [u8]| complete(s).0.keep_alive;
        assert!(ka(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"));
        assert!(ka(
            b"GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\n\r\n"
        ));
        assert!(!ka(
            b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
        ));
        assert!(!ka(
            b"GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, CLOSE\r\n\r\n"
        ));
        assert!(!ka(
            b"GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n"
        ));
        assert!(ka(
            b"GET / HTTP/1.1\r\nHost: a\r\nConnection: closed\r\n\r\n"
        ));
        assert!(!ka(b"GET / HTTP/1.0\r\n\r\n"));
        assert!(ka(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"));
        assert!(ka(b"GET / HTTP/1.0\r\nConnection: foo, keep-alive\r\n\r\n"));
        assert!(!ka(
            b"GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n"
        ));
    }

    #[test]
    fn repeated_conditional_fields() {
        let (r, _) = complete(
            b"GET / HTTP/1.1\r\nHost: a\r\nRange: bytes=0-1\r\nRange: bytes=2-3\r\n\
              If-Range: \"x\"\r\nIf-Range: \"x\"\r\nIf-None-Match: \"a\"\r\nIf-None-Match: \"b\"\r\n\
              If-Modified-Since: x\r\nIf-Modified-Since: y\r\n\r\n",
        );
        assert_eq!(r.range, Some(&b""[..]));
        assert_eq!(r.if_range, Some(&b""[..]));
        assert_eq!(r.if_none_match, Some(&b"\"a\""[..]));
        assert_eq!(r.if_modified_since, Some(&b""[..]));
    }

    #[test]
    fn limits() {
        // A request line of exactly MAX_REQUEST_LINE is fine; one more byte is 414.
        let mut line = alloc::vec::Vec::from(&b"GET /"[..]);
        line.resize(MAX_REQUEST_LINE - b" HTTP/1.1".len(), b'a');
        line.extend_from_slice(b" HTTP/1.1");
        assert_eq!(line.len(), MAX_REQUEST_LINE);
        let mut ok = line.clone();
        ok.extend_from_slice(b"\r\nHost: a\r\n\r\n");
        complete(&ok);
        let mut long = line.clone();
        long.insert(5, b'a');
        long.extend_from_slice(b"\r\nHost: a\r\n\r\n");
        assert_eq!(error(&long), 414);
        // Still receiving a target that is already too long: 414 without waiting.
        let mut partial = alloc::vec::Vec::from(&b"GET /"[..]);
        partial.resize(MAX_REQUEST_LINE + 1, b'a');
        assert_eq!(error(&partial), 414);
        // A method that never ends.
        assert_eq!(error(&[b'A'; MAX_REQUEST_LINE + 1]), 400);

        // Too many fields: 431.
        let mut many = alloc::vec::Vec::from(&b"GET / HTTP/1.1\r\nHost: a\r\n"[..]);
        for _ in 0..MAX_HEADERS - 1 {
            many.extend_from_slice(b"X: y\r\n");
        }
        let mut fits = many.clone();
        fits.extend_from_slice(b"\r\n");
        complete(&fits);
        many.extend_from_slice(b"X: y\r\n\r\n");
        assert_eq!(error(&many), 431);

        // A head that does not end within MAX_REQUEST bytes: 431.
        let mut big = alloc::vec::Vec::from(&b"GET / HTTP/1.1\r\nHost: a\r\nX: "[..]);
        big.resize(MAX_REQUEST - 4, b'x');
        big.extend_from_slice(b"\r\n\r\n");
        assert_eq!(big.len(), MAX_REQUEST);
        assert_eq!(complete(&big).1, MAX_REQUEST);
        big.insert(30, b'x');
        assert_eq!(error(&big), 431);
        assert_eq!(error(&big[..MAX_REQUEST]), 431);
        assert_eq!(parse(&big[..MAX_REQUEST - 1]), Parse::Partial);
        // Endless empty lines.
        assert_eq!(error(&[b'\n'; MAX_REQUEST]), 400);
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        // A cheap deterministic stand-in for the fuzz target.
        let mut x: u32 = 0x1234_5678;
        let mut buf = [0u8; 300];
        let alphabet = b"GETHOST /:\r\n1.0PHTTP/-,;=\"W*%2e";
        for _ in 0..20_000 {
            for b in buf.iter_mut() {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                *b = alphabet[(x as usize) % alphabet.len()];
            }
            let n = (x as usize) % buf.len();
            let mut real = alloc::vec::Vec::from(CURL);
            real.extend_from_slice(&buf[..n]);
            let _ = parse(&buf[..n]);
            let _ = parse(&real);
        }
    }
}
