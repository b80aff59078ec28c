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
