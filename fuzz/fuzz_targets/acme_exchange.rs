//! The ACME client's exchange with its CA as the server's agent runs it: the first octet
//! chooses what the rest is. Even: a URL the CA gave (`exchange::target`, and the
//! dotted-quad reader); odd: the CA's side of a TLS connection, cut into pieces at the
//! octets that follow a 0xff, fed to a fresh `Exchange` after its ClientHello. Nothing may
//! panic; a URL read has a host and a port; an answer body never passes its bound; an
//! exchange that failed keeps failing (never a late answer).
#![no_main]

use std::sync::Arc;

use bareweb_acme::order::{Method, Request};
use bareweb_engine::acme::exchange::{self, Exchange, Moved, BODY_MAX};
use bareweb_tls::testing::{FixedTime, TestRandom};
use bareweb_tls::{Platform, TlsClient};
use libfuzzer_sys::fuzz_target;

static RANDOM: TestRandom = TestRandom::new(7);

/// Made once: the provider leaks its key-exchange groups by design (one per server).
fn client() -> &'static TlsClient {
    static CLIENT: std::sync::OnceLock<TlsClient> = std::sync::OnceLock::new();
    CLIENT.get_or_init(make_client)
}

fn make_client() -> TlsClient {
    let platform = Platform {
        random: &RANDOM,
        time: Arc::new(FixedTime::new(1_800_000_000)),
    };
    let roots = bareweb_tls::server::parse_chain(include_bytes!(
        "../../crates/tls/testdata/ca.pem"
    ))
    .unwrap();
    TlsClient::new(&roots, &platform).unwrap()
}

fuzz_target!(|data: &[u8]| {
    let Some((&tag, rest)) = data.split_first() else {
        return;
    };
    if tag % 2 == 0 {
        let url = String::from_utf8_lossy(rest);
        if let Ok(t) = exchange::target(&url) {
            assert!(!t.host.is_empty() && t.port != 0 && t.path.starts_with('/'));
        }
        let _ = exchange::parse_v4(&url);
        return;
    }
    let t = exchange::target("https://localhost:14000/dir").unwrap();
    let req = Request {
        method: if tag & 2 == 0 { Method::Get } else { Method::Head },
        url: "https://localhost:14000/dir".into(),
        body: Vec::new(),
    };
    let bytes = exchange::request_bytes(&req, &t, "fuzz");
    let mut ex = Exchange::new(client(), &t, bytes, req.method == Method::Head).unwrap();
    let mut moved = Moved::default();
    ex.receive(&[], &mut moved).unwrap();
    let mut failed = false;
    for piece in rest.split(|&b| b == 0xff) {
        let mut moved = Moved::default();
        match ex.receive(piece, &mut moved) {
            Ok(()) => assert!(!failed, "an answer after a failure"),
            Err(_) => failed = true,
        }
        assert!(ex.answer.body.len() <= BODY_MAX);
    }
    let _ = ex.end_of_stream();
});
