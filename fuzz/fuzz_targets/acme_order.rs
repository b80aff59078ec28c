//! The ACME order state machine fed any sequence of answers, failures and time: each
//! input is events (a tag octet: tag % 4 == 0 = an answer to the request in flight, its
//! status from the tag, then an octet choosing the body — one of pebble's own documents,
//! or with bit 7 set raw bytes whose length octet follows — and an octet whose bits give a
//! Location, a Replay-Nonce and a Retry-After; 1 = the request failed in transit; 2 = the
//! clock moves on by tag² seconds; 3 = poll); with bit 1 of the first octet the client
//! starts holding a certificate (resumed, so renewal information is asked). Nothing may panic; no request is given while
//! one is out; a failure's next attempt is never in the past; no more than five attempts
//! begin in any hour; an installed certificate is valid at the time.
#![no_main]

use bareweb_acme::jose::Key;
use bareweb_acme::order::{ChallengeKind, Client, Config, Entropy, Event, Method, Response};
use libfuzzer_sys::fuzz_target;

const DOCS: [&[u8]; 14] = [
    include_bytes!("../../crates/acme/testdata/pebble/directory.json"),
    include_bytes!("../../crates/acme/testdata/pebble/account.json"),
    include_bytes!("../../crates/acme/testdata/pebble/order-pending.json"),
    include_bytes!("../../crates/acme/testdata/pebble/authz-0.json"),
    include_bytes!("../../crates/acme/testdata/pebble/authz-1.json"),
    include_bytes!("../../crates/acme/testdata/pebble/challenge-0.json"),
    include_bytes!("../../crates/acme/testdata/pebble/order-ready.json"),
    include_bytes!("../../crates/acme/testdata/pebble/order-valid.json"),
    include_bytes!("../../crates/acme/testdata/pebble/chain.pem"),
    include_bytes!("../../crates/acme/testdata/pebble/problem-badnonce.json"),
    include_bytes!("../../crates/acme/testdata/pebble/problem-rejected.json"),
    b"{\"status\":\"valid\",\"identifier\":{\"type\":\"dns\",\"value\":\"acme.test\"},\"challenges\":[]}",
    // RFC 9773: a directory offering renewal information, and a window.
    b"{\"newNonce\":\"https://127.0.0.1:14000/n\",\"newAccount\":\"https://127.0.0.1:14000/a\",\"newOrder\":\"https://127.0.0.1:14000/o\",\"renewalInfo\":\"https://127.0.0.1:14000/ari\"}",
    b"{\"suggestedWindow\":{\"start\":\"2026-12-01T00:00:00Z\",\"end\":\"2026-12-02T00:00:00Z\"}}",
];
const STATUS: [u16; 8] = [200, 201, 204, 400, 404, 429, 500, 503];

struct Counter(u8);

impl Entropy for Counter {
    fn fill(&mut self, buf: &mut [u8]) {
        for (i, b) in buf.iter_mut().enumerate() {
            *b = (i as u8 + 1).wrapping_add(self.0 & 0x0F);
        }
        self.0 = self.0.wrapping_add(1);
    }
}

fuzz_target!(|data: &[u8]| {
    let mut s = [0u8; 32];
    for (i, b) in s.iter_mut().enumerate() {
        *b = i as u8 + 1;
    }
    let cfg = Config {
        directory: "https://127.0.0.1:14000/dir".into(),
        names: vec!["acme.test".into(), "www.acme.test".into()],
        contact: vec![],
        challenge: if data.first().is_some_and(|b| b & 1 == 1) {
            ChallengeKind::TlsAlpn01
        } else {
            ChallengeKind::Http01
        },
    };
    let mut now = 1_796_032_330u64;
    let mut c = Client::new(cfg, Key::from_random(&s).unwrap(), now);
    // Half the runs hold a certificate from before (renewal information asked first).
    if data.first().is_some_and(|b| b & 2 == 2) {
        let key = Key::from_random(&s).unwrap();
        if let Ok(issued) = bareweb_acme::chain::check(DOCS[8], &key, &["acme.test"], now) {
            c.resume(issued);
        }
    }
    let mut rng = Counter(0);
    let mut events = Vec::new();
    let mut out = false;
    let mut starts: Vec<u64> = Vec::new();
    let mut rest = data;
    while let Some((&tag, tail)) = rest.split_first() {
        rest = tail;
        events.clear();
        match tag % 4 {
            0 => {
                let Some((&pick, tail)) = rest.split_first() else { break };
                rest = tail;
                let body: Vec<u8> = if pick & 0x80 != 0 {
                    let Some((&len, tail)) = rest.split_first() else { break };
                    let len = usize::from(len).min(tail.len());
                    rest = &tail[len..];
                    tail[..len].to_vec()
                } else {
                    DOCS[usize::from(pick) % DOCS.len()].to_vec()
                };
                let Some((&bits, tail)) = rest.split_first() else { break };
                rest = tail;
                // The CA's Retry-After header, read as the owner would.
                let _ = bareweb_acme::order::retry_after(
                    &String::from_utf8_lossy(&body[..body.len().min(40)]),
                    now,
                );
                let r = Response {
                    status: STATUS[usize::from(tag >> 2) % 8],
                    location: (bits & 1 != 0).then_some("https://127.0.0.1:14000/x/1"),
                    replay_nonce: (bits & 2 != 0).then_some("nonce_AbC-1"),
                    retry_after: (bits & 4 != 0).then_some(u64::from(bits >> 3) * 97),
                    body: &body,
                };
                c.on_response(&r, now, &mut events, &mut rng);
                out = false;
            }
            1 => {
                c.on_transport_error("timed out", now, &mut events, &mut rng);
                out = false;
            }
            2 => now += u64::from(tag) * u64::from(tag),
            _ => match c.poll(now, &mut events, &mut rng) {
                Some(req) => {
                    assert!(!out, "a second request while one is out");
                    out = true;
                    assert!(req.url.starts_with("https://"));
                    if req.method == Method::Get {
                        starts.push(now);
                    }
                }
                None => {}
            },
        }
        for e in &events {
            match e {
                Event::Failed { next, .. } => assert!(*next >= now),
                Event::Install { issued, .. } => assert!(issued.not_after > now),
                _ => {}
            }
        }
        let recent = starts.iter().filter(|&&t| t + 3600 > now).count();
        assert!(recent <= 5, "{recent} attempts within the hour");
    }
});
