//! Tests of `http::request`, with byte fixtures from real captures.

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
            if_match: None,
            if_unmodified_since: None,
            if_none_match: None,
            if_modified_since: None,
            range: None,
            if_range: None,
            accept: fields::AcceptEncoding::default(),
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
    assert!(r.keep_alive && !r.accept.gzip_preferred());

    let (r, len) = complete(PYTHON);
    assert_eq!(len, PYTHON.len());
    assert_eq!(r.target, b"/x");
    assert!(r.keep_alive && !r.accept.gzip_preferred() && !r.has_body);

    let (r, _) = complete(FIREFOX);
    assert_eq!(r.target, b"/style.css?v=3");
    assert!(r.accept.gzip_preferred() && r.keep_alive);
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
fn if_match_and_if_unmodified_since_fields() {
    let (r, _) = complete(
        b"GET / HTTP/1.1\r\nHost: a\r\nIf-Match: \"a\", \"b\"\r\n\
          If-Unmodified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\n",
    );
    assert_eq!(r.if_match, Some(&b"\"a\", \"b\""[..]));
    assert_eq!(
        r.if_unmodified_since,
        Some(&b"Sun, 06 Nov 1994 08:49:37 GMT"[..])
    );
    // Repeated: If-Match keeps its first line; If-Unmodified-Since becomes invalid.
    let (r, _) = complete(
        b"GET / HTTP/1.1\r\nHost: a\r\nif-match: \"a\"\r\nIF-MATCH: \"b\"\r\n\
          If-Unmodified-Since: x\r\nIf-Unmodified-Since: y\r\n\r\n",
    );
    assert_eq!(r.if_match, Some(&b"\"a\""[..]));
    assert_eq!(r.if_unmodified_since, Some(&b""[..]));
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

/// The fast path (`fast`) answers exactly as the general parser on requests built from
/// plain and awkward pieces, cut anywhere and with single bytes changed.
#[test]
fn fast_path_agrees_with_the_general_parser() {
    const LINES: &[&[u8]] = &[
        b"GET / HTTP/1.1\r\n",
        b"GET /4k.bin HTTP/1.1\r\n",
        b"HEAD /a?b=c HTTP/1.1\r\n",
        b"GET /x HTTP/1.0\r\n",
        b"GET /x HTTP/1.2\r\n",
        b"GET /x HTTP/2.0\r\n",
        b"GET /\x80\xff HTTP/1.1\r\n",
        b"GET /a\x7fb HTTP/1.1\r\n",
        b"GET  / HTTP/1.1\r\n",
        b"GET / HTTP/1.1\n",
        b"POST / HTTP/1.1\r\n",
        b"GETS / HTTP/1.1\r\n",
        b"\r\nGET / HTTP/1.1\r\n",
        b"get / HTTP/1.1\r\n",
    ];
    const FIELDS: &[&[u8]] = &[
        b"Host: 10.0.0.2\r\n",
        b"host:example.org:8080 \r\n",
        b"Host: a b\r\n",
        b"Host:\r\n",
        b"Connection: close\r\n",
        b"Connection: Keep-Alive, x\r\n",
        b"Content-Length: 0\r\n",
        b"Content-Length: 5\r\n",
        b"Content-Length: 99999\r\n",
        b"Content-Length: x\r\n",
        b"Transfer-Encoding: chunked\r\n",
        b"If-None-Match: \"a\", W/\"b\"\r\n",
        b"If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n",
        b"Range: bytes=0-9\r\n",
        b"If-Range: \"a\"\r\n",
        b"Accept-Encoding: gzip;q=0.5, br\r\n",
        b"User-Agent: x\t y \t\r\n",
        b"X-Obs: caf\xc3\xa9\r\n",
        b"X-Ctl: a\x01b\r\n",
        b"X-Space : v\r\n",
        b"X-Bare: lf\n",
        b" folded\r\n",
        b"Bad(name): v\r\n",
        b": empty name\r\n",
        b"X-Empty:\r\n",
    ];
    let mut x: u64 = 0x0123_4567_89ab_cdef;
    let mut next = |n: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 11) as usize % n
    };
    let mut buf = alloc::vec::Vec::new();
    let mut fast_taken = 0;
    for round in 0..40_000 {
        buf.clear();
        buf.extend_from_slice(LINES[next(LINES.len())]);
        // Mostly a Host first, as clients send; now and then over MAX_HEADERS fields.
        if next(4) != 0 {
            buf.extend_from_slice(FIELDS[0]);
        }
        let fields = if round % 500 == 0 { 40 } else { next(6) };
        for _ in 0..fields {
            // Plain fields mostly, so that the fast path has work.
            let i = if next(3) == 0 {
                next(FIELDS.len())
            } else {
                next(17)
            };
            buf.extend_from_slice(FIELDS[i]);
        }
        buf.extend_from_slice(if next(8) == 0 { b"\n" } else { b"\r\n" });
        if next(4) == 0 {
            buf.extend_from_slice(b"GET /next HTTP/1.1\r\n");
        }
        match next(6) {
            0 => buf.truncate(next(buf.len() + 1)),
            1 => {
                let i = next(buf.len());
                buf[i] = (next(256)) as u8;
            }
            _ => {}
        }
        let (a, b) = (parse(&buf), parse_general(&buf));
        assert_eq!(a, b, "{:?}", alloc::string::String::from_utf8_lossy(&buf));
        let cut = &buf[..buf.len().min(MAX_REQUEST)];
        fast_taken += usize::from(fast::parse(cut).is_some());
    }
    assert!(fast_taken > 5_000, "the fast path took only {fast_taken}");
    // The captured requests of common clients are plain: the fast path reads them.
    for req in [CURL, WGET, PYTHON, FIREFOX, HTTP10] {
        assert!(fast::parse(req).is_some());
    }
    // Every prefix of the captured requests, and a head at the size limit.
    for req in [CURL, WGET, PYTHON, FIREFOX, HTTP10] {
        for n in 0..=req.len() {
            assert_eq!(parse(&req[..n]), parse_general(&req[..n]));
        }
    }
    let mut big = alloc::vec::Vec::from(&b"GET / HTTP/1.1\r\nHost: h\r\nX: "[..]);
    big.resize(MAX_REQUEST - 2, b'a');
    big.extend_from_slice(b"\r\n\r\n");
    for n in [MAX_REQUEST - 3, MAX_REQUEST - 2, MAX_REQUEST, big.len()] {
        assert_eq!(parse(&big[..n]), parse_general(&big[..n]));
    }
}
