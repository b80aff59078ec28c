//! The engine's own HTTP/1.1 response reader (the fetcher's, and the server's HTTPS
//! client's with chunked bodies) fed anything in pieces: the first octet chooses the mode
//! and the piece size. Nothing may panic; every range handed on lies within its piece;
//! the body bytes handed on add up to `body_len`; the bytes taken never exceed the input;
//! a field looked up is a slice of the head.
#![no_main]

use bareweb_engine::fetch::http::Reader;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, input)) = data.split_first() else {
        return;
    };
    let mut r = if mode & 1 == 1 { Reader::chunked() } else { Reader::new() };
    r.set_head_request(mode & 0x80 != 0);
    let step = usize::from(mode >> 1).max(1);
    let mut handed = 0u64;
    let mut at = 0;
    'outer: while at < input.len() && !r.done() {
        let end = (at + step).min(input.len());
        let mut piece = &input[at..end];
        while !piece.is_empty() && !r.done() {
            let Ok(f) = r.feed(piece) else {
                break 'outer;
            };
            assert!(f.used <= piece.len());
            assert!(f.body.0 <= f.body.1 && f.body.1 <= f.used);
            assert!(f.used > 0 || r.done(), "a feed that takes nothing stalls");
            handed += (f.body.1 - f.body.0) as u64;
            at += f.used;
            piece = &piece[f.used..];
        }
    }
    assert_eq!(handed, r.body_len);
    for name in ["content-type", "replay-nonce", "location", "retry-after"] {
        if let Some(v) = r.header(name) {
            // A slice of the input's head, which the reader keeps.
            let head = &input[..input.len().min(2048)];
            assert!(head.windows(v.len().max(1)).any(|w| v.is_empty() || w == v));
        }
    }
});
