//! The TLS server's input: arbitrary bytes, in pieces whose sizes the input chooses, into a
//! fresh server connection (ClientHello parsing, record framing, alerts, everything rustls
//! and this crate's driver do before and around the handshake). Checks the driver's
//! promises: no panic; output only TLS records; after a failure, nothing more; received
//! bytes held stay within MAX_BUFFERED.
#![no_main]

use std::sync::{Arc, OnceLock};

use bareweb_tls::server::{sealed_len, MAX_BUFFERED};
use bareweb_tls::testing::{FixedTime, TestRandom};
use bareweb_tls::{Fatal, Options, Platform, TlsServer};
use libfuzzer_sys::fuzz_target;

static RNG: TestRandom = TestRandom::new(5);

fn server() -> &'static TlsServer {
    static S: OnceLock<TlsServer> = OnceLock::new();
    S.get_or_init(|| {
        let platform = Platform {
            random: &RNG,
            time: Arc::new(FixedTime::new(1_800_000_000)),
        };
        TlsServer::new(
            include_bytes!("../../crates/tls/testdata/cert.pem"),
            include_bytes!("../../crates/tls/testdata/key.pem"),
            &Options::default(),
            &platform,
        )
        .unwrap()
    })
}

/// Every byte of `out` is whole TLS records of the known content types.
fn records(out: &[u8]) {
    let mut at = 0;
    while at < out.len() {
        assert!(out.len() >= at + 5);
        assert!(matches!(out[at], 20..=23), "content type {}", out[at]);
        at += 5 + usize::from(u16::from_be_bytes([out[at + 3], out[at + 4]]));
    }
    assert_eq!(at, out.len());
}

fuzz_target!(|data: &[u8]| {
    let Some((&split, mut rest)) = data.split_first() else {
        return;
    };
    let piece = usize::from(split).max(1) * 7;
    let mut conn = server().accept().unwrap();
    let (mut out, mut plain) = (Vec::new(), Vec::new());
    let mut failed = false;
    while !rest.is_empty() {
        let (now, later) = rest.split_at(piece.min(rest.len()));
        rest = later;
        out.clear();
        match conn.receive(now, &mut out, &mut plain) {
            Ok(p) => {
                assert!(!failed);
                if p.established {
                    let mut sealed = vec![0u8; sealed_len(plain.len())];
                    let _ = conn.encrypt(&plain, &mut sealed);
                }
            }
            Err(Fatal::Done) => assert!(out.is_empty()),
            Err(_) => failed = true,
        }
        records(&out);
        assert!(conn.buffered() <= MAX_BUFFERED);
    }
});
