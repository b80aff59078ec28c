//! The fetcher's request writer and response reader, on whole responses and on every split
//! of them.

use super::*;

const RESP: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhelloNEXT";

#[test]
fn writes_a_get() {
    let mut b = [0u8; 128];
    let n = write_get(&mut b, "h", "/a", false).unwrap();
    assert_eq!(&b[..n], b"GET /a HTTP/1.1\r\nHost: h\r\n\r\n");
    let n = write_get(&mut b, "h", "/a", true).unwrap();
    assert_eq!(
        &b[..n],
        b"GET /a HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"
    );
    assert_eq!(write_get(&mut b[..10], "h", "/a", true), None);
}

#[test]
fn reads_a_response_whole_and_leaves_what_follows() {
    let mut r = Reader::new();
    let f = r.feed(RESP).unwrap();
    assert!(f.done);
    assert_eq!(&RESP[f.body.0..f.body.1], b"hello");
    assert_eq!(&RESP[f.used..], b"NEXT");
    assert_eq!((r.status, r.body_len, r.close), (200, 5, false));
}

#[test]
fn reads_a_response_split_anywhere() {
    for cut in 0..RESP.len() - 4 {
        for cut2 in cut..RESP.len() - 4 {
            let mut r = Reader::new();
            let mut body = Vec::new();
            for part in [&RESP[..cut], &RESP[cut..cut2], &RESP[cut2..RESP.len() - 4]] {
                let f = r.feed(part).unwrap();
                assert_eq!(f.used, part.len());
                body.extend_from_slice(&part[f.body.0..f.body.1]);
            }
            assert!(r.done(), "{cut} {cut2}");
            assert_eq!(body, b"hello");
        }
    }
}

#[test]
fn close_and_bodiless_and_until_close() {
    let mut r = Reader::new();
    let f = r
        .feed(b"HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\nConnection: close\r\n\r\n")
        .unwrap();
    assert!(f.done && r.close && r.status == 304);
    let mut r = Reader::new();
    let f = r.feed(b"HTTP/1.0 200 OK\r\n\r\nabc").unwrap();
    assert!(!f.done && r.close);
    assert_eq!(f.body, (19, 22));
    assert!(r.end_of_stream());
    assert_eq!(r.body_len, 3);
    // A response cut short is not complete.
    let mut r = Reader::new();
    r.feed(&RESP[..RESP.len() - 6]).unwrap();
    assert!(!r.end_of_stream());
}

#[test]
fn refuses_what_it_cannot_read() {
    let mut r = Reader::new();
    assert_eq!(
        r.feed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"),
        Err(BadResponse::TransferEncoding)
    );
    let mut r = Reader::new();
    assert_eq!(r.feed(b"SSH-2.0\r\n\r\n"), Err(BadResponse::Malformed));
    let mut r = Reader::new();
    assert_eq!(
        r.feed(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n"),
        Err(BadResponse::Malformed)
    );
    let mut r = Reader::new();
    let long = [b'a'; HEAD_MAX + 1];
    assert_eq!(r.feed(&long), Err(BadResponse::HeadTooLong));
}

/// Every body byte a reader hands on for `input` fed in pieces of `step` bytes (calling
/// again on what a call leaves), and whether it ended; or the first error.
fn read_all(
    r: &mut Reader,
    input: &[u8],
    step: usize,
) -> Result<(Vec<u8>, bool, usize), BadResponse> {
    let mut body = Vec::new();
    let mut at = 0;
    while at < input.len() && !r.done() {
        let end = (at + step).min(input.len());
        let mut piece = &input[at..end];
        while !piece.is_empty() && !r.done() {
            let f = r.feed(piece)?;
            body.extend_from_slice(&piece[f.body.0..f.body.1]);
            at += f.used;
            piece = &piece[f.used..];
            assert!(f.used > 0 || r.done(), "a feed that takes nothing stalls");
        }
    }
    Ok((body, r.done(), at))
}

const CHUNKED: &[u8] =
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nReplay-Nonce: abc_1\r\n\r\n\
    5;name=value\r\nhello\r\n1A\r\n, chunked world, 26 bytes!\r\n0\r\nTrailer: x\r\n\r\nNEXT";

#[test]
fn chunked_bodies_when_asked_for_split_anywhere() {
    // Refused by the load generator's reader, read by the client's.
    assert_eq!(
        Reader::new().feed(CHUNKED),
        Err(BadResponse::TransferEncoding)
    );
    for step in 1..CHUNKED.len() {
        let mut r = Reader::chunked();
        let (body, done, used) = read_all(&mut r, CHUNKED, step).unwrap();
        assert!(done, "step {step}");
        assert_eq!(body, b"hello, chunked world, 26 bytes!", "step {step}");
        assert_eq!(&CHUNKED[used..], b"NEXT", "step {step}");
        assert_eq!(r.body_len, 31);
    }
    let mut r = Reader::chunked();
    read_all(&mut r, CHUNKED, 7).unwrap();
    assert_eq!(r.header("replay-nonce"), Some(&b"abc_1"[..]));
    assert_eq!(r.header("Location"), None);
    // Before the head, no fields.
    assert_eq!(Reader::chunked().header("replay-nonce"), None);
}

#[test]
fn chunked_framing_that_does_not_parse_is_refused() {
    let head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    for bad in [
        &b"x\r\n"[..],
        b"\r\n",
        b"5\r\nhelloX\r\n",
        b"1000000000000000\r\n",
        &[b'1'; 16],
        // RFC 9112's grammar: only spaces, then `;` or CRLF, after the digits; CRLF only.
        b"5 5\r\nhello\r\n",
        b"5 garbage\r\n",
        b"5\rjunk\n",
        b"5\nhello\r\n",
        b"5\r\nhello\n0\r\n\r\n",
        // The trailer section: a line ended by LF alone cannot end it early.
        b"0\r\nX\nFoo: bar\r\n\r\n",
    ] {
        let mut input = head.to_vec();
        input.extend_from_slice(bad);
        let mut r = Reader::chunked();
        assert_eq!(
            read_all(&mut r, &input, 3).err(),
            Some(BadResponse::BadChunk),
            "{bad:?}"
        );
    }
    // Extensions and trailer lines past LINE_MAX.
    for tail in [
        [b"1;".to_vec(), vec![b'a'; LINE_MAX], b"\r\n".to_vec()].concat(),
        [b"0\r\n".to_vec(), vec![b'a'; LINE_MAX + 1]].concat(),
    ] {
        let mut input = head.to_vec();
        input.extend_from_slice(&tail);
        let mut r = Reader::chunked();
        assert_eq!(
            read_all(&mut r, &input, 100).err(),
            Some(BadResponse::BadChunk)
        );
    }
    // Chunked with a length (smuggling), another coding, or chunked twice.
    for h in [
        &b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n"[..],
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
    ] {
        let r = Reader::chunked().feed(h);
        assert!(r.is_err(), "{:?}", String::from_utf8_lossy(h));
    }
    // Spaces before an extension, extensions, trailers: read; so many trailer lines that
    // they pass HEAD_MAX: refused.
    let ok = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
        2 \t;a=\"b;c\"\r\nok\r\n0;x\r\nT: 1\r\nU: 2\r\n\r\n";
    let mut r = Reader::chunked();
    let (body, done, used) = read_all(&mut r, ok, 5).unwrap();
    assert!(done && body == b"ok" && used == ok.len());
    let mut many = head.to_vec();
    many.extend_from_slice(b"0\r\n");
    for _ in 0..HEAD_MAX / 8 + 1 {
        many.extend_from_slice(b"T: 123\r\n");
    }
    assert_eq!(
        read_all(&mut Reader::chunked(), &many, 64).err(),
        Some(BadResponse::BadChunk)
    );
    // Chunked over HTTP/1.0: faulty framing.
    assert!(Reader::chunked()
        .feed(b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        .is_err());
    // A HEAD's answer has no body, whatever its head says.
    for h in [
        &b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nReplay-Nonce: n\r\n\r\n"[..],
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\nReplay-Nonce: n\r\n\r\n",
    ] {
        let mut r = Reader::chunked();
        r.set_head_request(true);
        assert!(r.feed(h).unwrap().done);
        assert_eq!(r.header("replay-nonce"), Some(&b"n"[..]));
    }
    // A chunked 204 has no body.
    let mut r = Reader::chunked();
    let f = r
        .feed(b"HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n")
        .unwrap();
    assert!(f.done);
}
