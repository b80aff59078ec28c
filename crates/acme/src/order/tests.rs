//! The order at its own level: pebble's own answers (testdata/pebble) and hostile ones
//! in, requests and events out.

use super::*;
use crate::jose::tests::key;
use base64ct::{Base64UrlUnpadded, Encoding};

/// 2026-11-30T09:52:10Z, within the fixtures' chain's validity.
const NOW: u64 = 1_796_032_330;
const DIR: &str = "https://127.0.0.1:14000/dir";
const KID: &str = "https://127.0.0.1:14000/my-account/1";
const ORDER: &str = "https://127.0.0.1:14000/my-order/1";

fn pebble(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/testdata/pebble/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// Every draw gives the bytes 1, 2, 3, ...: a 32-byte one is the fixtures' certificate
/// key (scalar 1..32), and the jitter is the same every time.
struct Fixed;

impl Entropy for Fixed {
    fn fill(&mut self, buf: &mut [u8]) {
        for (i, b) in buf.iter_mut().enumerate() {
            *b = i as u8 + 1;
        }
    }
}

struct H {
    c: Client,
    now: u64,
    events: Vec<Event>,
    rng: Fixed,
    nonce: u32,
}

impl H {
    fn new(kind: ChallengeKind) -> H {
        let cfg = Config {
            directory: DIR.into(),
            names: vec!["acme.test".into(), "www.acme.test".into()],
            contact: vec!["mailto:ops@acme.test".into()],
            challenge: kind,
        };
        // The account key is another than the certificate's.
        let mut s = [5u8; 32];
        s[0] = 1;
        H {
            c: Client::new(cfg, Key::from_random(&s).unwrap(), NOW),
            now: NOW,
            events: Vec::new(),
            rng: Fixed,
            nonce: 0,
        }
    }

    fn poll(&mut self) -> Option<Request> {
        self.c.poll(self.now, &mut self.events, &mut self.rng)
    }

    fn expect(&mut self, method: Method, url: &str) -> Request {
        let r = self
            .poll()
            .unwrap_or_else(|| panic!("no request; events {:?}", self.events));
        assert_eq!(
            (r.method, r.url.as_str()),
            (method, url),
            "{:?}",
            self.c.status()
        );
        r
    }

    fn answer(
        &mut self,
        status: u16,
        body: &str,
        location: Option<&str>,
        retry_after: Option<u64>,
    ) {
        self.nonce += 1;
        let nonce = format!("nonce{}", self.nonce);
        let r = Response {
            status,
            location,
            replay_nonce: Some(&nonce),
            retry_after,
            body: body.as_bytes(),
        };
        self.c
            .on_response(&r, self.now, &mut self.events, &mut self.rng);
    }

    /// The JWS's protected header and payload.
    fn open(r: &Request) -> (serde_json::Value, Vec<u8>) {
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        let h = Base64UrlUnpadded::decode_vec(v["protected"].as_str().unwrap()).unwrap();
        let p = Base64UrlUnpadded::decode_vec(v["payload"].as_str().unwrap()).unwrap();
        (serde_json::from_slice(&h).unwrap(), p)
    }

    /// Up to the first authorization: directory, nonce, account, order.
    fn up_to_the_order(&mut self) {
        self.place(&pebble("order-pending.json"));
    }

    /// Directory, nonce, account, then newOrder answered with `order_body`.
    fn place(&mut self, order_body: &str) {
        self.expect(Method::Get, DIR);
        self.answer(200, &pebble("directory.json"), None, None);
        // No nonce held at first? The directory's answer carried one: the account POST
        // goes at once. Without it a HEAD comes first (a later test).
        let r = self.expect(Method::Post, "https://127.0.0.1:14000/sign-me-up");
        let (h, p) = H::open(&r);
        assert_eq!(h["nonce"], "nonce1");
        assert!(h.get("jwk").is_some() && h.get("kid").is_none());
        assert_eq!(
            p,
            b"{\"termsOfServiceAgreed\":true,\"contact\":[\"mailto:ops@acme.test\"]}"
        );
        self.answer(201, &pebble("account.json"), Some(KID), None);
        let r = self.expect(Method::Post, "https://127.0.0.1:14000/order-plz");
        let (h, _) = H::open(&r);
        assert_eq!(h["kid"], KID);
        self.answer(201, order_body, Some(ORDER), None);
    }
}

fn order_doc() -> Order {
    document::read(pebble("order-pending.json").as_bytes()).unwrap()
}

fn authz_url(i: usize) -> String {
    order_doc().authorizations[i].clone()
}

#[test]
fn an_order_through_pebbles_answers_to_an_installed_certificate() {
    let mut h = H::new(ChallengeKind::Http01);
    h.up_to_the_order();
    for i in 0..2 {
        let body = pebble(&format!("authz-{i}.json"));
        let authz: Authorization = document::read(body.as_bytes()).unwrap();
        let http = authz.challenge("http-01").unwrap().clone();
        let r = h.expect(Method::Post, &authz_url(i));
        assert!(H::open(&r).1.is_empty(), "POST-as-GET");
        h.answer(200, &body, None, None);
        let token = http.token.clone().unwrap();
        assert_eq!(
            h.events.drain(..).collect::<Vec<_>>(),
            vec![Event::Publish(Answer::Http01 {
                key_authorization: h.c.account.key_authorization(&token),
                token,
            })]
        );
        let r = h.expect(Method::Post, &http.url);
        assert_eq!(H::open(&r).1, b"{}");
        h.answer(200, &pebble(&format!("challenge-{i}.json")), None, None);
        // Validation takes a moment: asked again a second later, then valid.
        assert_eq!(h.poll(), None);
        h.now += 1;
        h.expect(Method::Post, &authz_url(i));
        h.answer(200, &body, None, None);
        h.now += 2;
        h.expect(Method::Post, &authz_url(i));
        h.answer(
            200,
            &body.replace("\"status\": \"pending\"", "\"status\": \"valid\""),
            None,
            None,
        );
        // Valid: its answer withdrawn before the next is published.
        assert_eq!(
            h.events.drain(..).collect::<Vec<_>>(),
            vec![Event::Withdraw]
        );
    }
    // The order read until it is ready (§7.4), then finalized.
    h.expect(Method::Post, ORDER);
    h.answer(200, &pebble("order-pending.json"), None, Some(2));
    assert_eq!(h.poll(), None, "Retry-After 2 s");
    h.now += 2;
    h.expect(Method::Post, ORDER);
    h.answer(200, &pebble("order-ready.json"), None, None);
    let order: Order = order_doc();
    let r = h.expect(Method::Post, &order.finalize);
    let (_, p) = H::open(&r);
    let v: serde_json::Value = serde_json::from_slice(&p).unwrap();
    let csr = Base64UrlUnpadded::decode_vec(v["csr"].as_str().unwrap()).unwrap();
    assert_eq!(
        csr,
        crate::csr::request(&key(), &["acme.test", "www.acme.test"]).unwrap()
    );
    let processing = pebble("order-ready.json").replace("\"ready\"", "\"processing\"");
    h.answer(200, &processing, None, Some(3));
    assert_eq!(h.poll(), None, "Retry-After 3 s");
    h.now += 3;
    h.expect(Method::Post, ORDER);
    h.answer(200, &pebble("order-valid.json"), None, None);
    let valid: Order = document::read(pebble("order-valid.json").as_bytes()).unwrap();
    h.expect(Method::Post, valid.certificate.as_deref().unwrap());
    h.answer(200, &pebble("chain.pem"), None, None);
    let events: Vec<_> = h.events.drain(..).collect();
    assert_eq!(events.len(), 1, "nothing left to withdraw: {events:?}");
    let Event::Install { issued, key: k } = &events[0] else {
        panic!("{events:?}")
    };
    assert_eq!(k, &key().to_pkcs8());
    let s = h.c.status();
    assert_eq!(s.phase, "idle");
    assert_eq!(s.next, Some(issued.renew_at()));
    assert_eq!(s.certificate_until, Some(issued.not_after));
    assert_eq!(h.poll(), None, "nothing until renewal");
    // At two thirds of the lifetime, a new attempt reads the directory again.
    h.now = issued.renew_at();
    h.expect(Method::Get, DIR);
}

#[test]
fn a_certificate_the_owner_cannot_put_in_service_is_a_failure_with_its_backoff() {
    let mut h = H::new(ChallengeKind::Http01);
    h.c.resume(kept());
    h.c.install_failed(
        "the key was refused",
        None,
        h.now,
        &mut h.events,
        &mut h.rng,
    );
    let Some(Event::Failed { reason, next }) = h.events.pop() else {
        panic!("no failure")
    };
    assert_eq!(reason, "installing the certificate: the key was refused");
    assert!(
        (h.now + 48..=h.now + 72).contains(&next),
        "the first backoff"
    );
    let s = h.c.status();
    assert_eq!((s.certificate_until, s.failures), (None, 1), "nothing held");
    assert_eq!(h.poll(), None);
    h.now = next;
    h.expect(Method::Get, DIR);
}

#[test]
fn tls_alpn_01_publishes_a_challenge_certificate() {
    let mut h = H::new(ChallengeKind::TlsAlpn01);
    h.up_to_the_order();
    h.expect(Method::Post, &authz_url(0));
    let body = pebble("authz-0.json");
    h.answer(200, &body, None, None);
    let authz: Authorization = document::read(body.as_bytes()).unwrap();
    let c = authz.challenge("tls-alpn-01").unwrap();
    let Some(Event::Publish(Answer::TlsAlpn01 { name, cert, .. })) = h.events.pop() else {
        panic!()
    };
    assert_eq!(name, "www.acme.test");
    let ka = h.c.account.key_authorization(c.token.as_deref().unwrap());
    let expect = crate::csr::alpn_certificate(&key(), "www.acme.test", &ka, NOW).unwrap();
    assert_eq!(cert, expect);
    h.expect(Method::Post, &c.url);
}

#[test]
fn bad_nonce_is_retried_three_times_then_fails() {
    let mut h = H::new(ChallengeKind::Http01);
    h.expect(Method::Get, DIR);
    h.answer(200, &pebble("directory.json"), None, None);
    for n in 0..=BAD_NONCE_RETRIES {
        let r = h.expect(Method::Post, "https://127.0.0.1:14000/sign-me-up");
        // Each try carries the nonce of the answer before.
        assert_eq!(H::open(&r).0["nonce"], format!("nonce{}", n + 1));
        h.answer(400, &pebble("problem-badnonce.json"), None, None);
    }
    let Some(Event::Failed { reason, .. }) = h.events.pop() else {
        panic!("{:?}", h.events)
    };
    assert!(reason.contains("badNonce"), "{reason}");
}

#[test]
fn a_post_without_a_nonce_asks_new_nonce_first() {
    let mut h = H::new(ChallengeKind::Http01);
    h.expect(Method::Get, DIR);
    let dir = pebble("directory.json");
    h.c.on_response(
        &Response {
            status: 200,
            location: None,
            replay_nonce: None,
            retry_after: None,
            body: dir.as_bytes(),
        },
        h.now,
        &mut h.events,
        &mut h.rng,
    );
    h.expect(Method::Head, "https://127.0.0.1:14000/nonce-plz");
    h.answer(200, "", None, None);
    let r = h.expect(Method::Post, "https://127.0.0.1:14000/sign-me-up");
    assert_eq!(H::open(&r).0["nonce"], "nonce1");
}

#[test]
fn rate_limits_and_broken_cas_end_in_a_reason_and_a_bounded_retry() {
    // 429 with Retry-After: no attempt before it.
    let mut h = H::new(ChallengeKind::Http01);
    h.up_to_the_order();
    h.expect(Method::Post, &authz_url(0));
    h.answer(200, &pebble("authz-0.json"), None, None);
    h.expect(
        Method::Post,
        "https://127.0.0.1:14000/chalZ/k3HjtqgRtV_u8wEojutsKUwQzENNWJB2qABaqBTFmVQ",
    );
    let limited = "{\"type\":\"urn:ietf:params:acme:error:rateLimited\",\"detail\":\"slow down\"}";
    h.answer(429, limited, None, Some(7200));
    let ev: Vec<_> = h.events.drain(..).collect();
    assert!(matches!(ev[0], Event::Publish(_)));
    assert_eq!(ev[1], Event::Withdraw, "answers withdrawn on failure");
    let Event::Failed { reason, next } = &ev[2] else {
        panic!("{ev:?}")
    };
    assert!(reason.contains("rateLimited: slow down"), "{reason}");
    assert_eq!(*next, NOW + 7200);
    assert_eq!(h.poll(), None);
    h.now = NOW + 7200;
    h.expect(Method::Get, DIR);

    // Malformed JSON; a chain for another key; a challenge that never validates.
    let mut h = H::new(ChallengeKind::Http01);
    h.expect(Method::Get, DIR);
    h.answer(200, "{\"newNonce\": ", None, None);
    let Some(Event::Failed { reason, next }) = h.events.pop() else {
        panic!()
    };
    assert!(
        reason.starts_with("reading the directory: malformed JSON"),
        "{reason}"
    );
    assert!(
        (NOW + 48..=NOW + 72).contains(&next),
        "60 s ± 20 %: {}",
        next - NOW
    );
}

#[test]
fn a_challenge_that_never_validates_or_is_refused() {
    let mut h = H::new(ChallengeKind::Http01);
    h.up_to_the_order();
    h.expect(Method::Post, &authz_url(0));
    let body = pebble("authz-0.json");
    h.answer(200, &body, None, None);
    h.poll().unwrap();
    h.answer(200, &pebble("challenge-0.json"), None, None);
    // Still pending, every poll, until the attempt's deadline.
    let mut polls = 0;
    loop {
        h.now += 1;
        match h.poll() {
            Some(_) => {
                polls += 1;
                h.answer(200, &body, None, None);
            }
            None if !h.events.is_empty()
                && matches!(h.events.last(), Some(Event::Failed { .. })) =>
            {
                break
            }
            None => {}
        }
        assert!(h.now < NOW + 2 * ORDER_DEADLINE);
    }
    assert!(
        polls < ORDER_DEADLINE as usize / 5,
        "polls back off to 10 s: {polls}"
    );
    let Some(Event::Failed { reason, .. }) = h.events.pop() else {
        panic!()
    };
    assert!(reason.contains("not done in 600 s"), "{reason}");
    assert_eq!(h.events.pop(), Some(Event::Withdraw));

    // Invalid with the CA's reason.
    let mut h = H::new(ChallengeKind::Http01);
    h.up_to_the_order();
    h.expect(Method::Post, &authz_url(0));
    h.answer(200, &body, None, None);
    h.poll().unwrap();
    h.answer(200, &pebble("challenge-0.json"), None, None);
    h.now += 1;
    h.poll().unwrap();
    let invalid = body
        .replacen("\"status\": \"pending\"", "\"status\": \"invalid\"", 1)
        .replace(
            "\"type\": \"http-01\",",
            "\"type\": \"http-01\", \"error\": {\"type\": \"urn:ietf:params:acme:error:unauthorized\", \"detail\": \"404 at /.well-known\"},",
        );
    h.answer(200, &invalid, None, None);
    let Some(Event::Failed { reason, .. }) = h.events.pop() else {
        panic!()
    };
    assert!(
        reason.contains("www.acme.test was not validated: unauthorized: 404 at /.well-known"),
        "{reason}"
    );
}

#[test]
fn failures_back_off_and_the_hour_bounds_attempts() {
    let mut h = H::new(ChallengeKind::Http01);
    let mut starts = Vec::new();
    let mut waits = Vec::new();
    while h.now < NOW + 3 * 3600 {
        if let Some(r) = h.poll() {
            assert_eq!(r.url, DIR);
            starts.push(h.now);
            h.c.on_transport_error("timed out", h.now, &mut h.events, &mut h.rng);
            if let Some(Event::Failed { next, reason }) = h.events.pop() {
                assert_eq!(reason, "reading the directory: timed out");
                waits.push(next - h.now);
            }
        }
        h.now += 10;
    }
    // 60, 120, 240, 480 s (± 20 %) ..., and never more than 5 attempts in an hour.
    for (k, w) in waits.iter().take(4).enumerate() {
        let base = 60 << k;
        assert!(base * 4 / 5 <= *w && *w <= base * 6 / 5, "{k}: {w}");
    }
    for win in starts.windows(ATTEMPTS_PER_HOUR + 1) {
        assert!(win[ATTEMPTS_PER_HOUR] - win[0] >= 3600, "{starts:?}");
    }
    assert_eq!(h.c.status().failures as usize, starts.len());
}

#[test]
fn a_certificate_kept_from_before_places_no_order_until_renewal() {
    let mut h = H::new(ChallengeKind::Http01);
    let issued = crate::chain::check(
        pebble("chain.pem").as_bytes(),
        &key(),
        &["acme.test", "www.acme.test"],
        NOW,
    )
    .unwrap();
    h.c.resume(issued.clone());
    // Only the directory, for renewal information (pebble 2.4 offers none): no order.
    h.expect(Method::Get, DIR);
    h.answer(200, &pebble("directory.json"), None, None);
    assert_eq!(h.poll(), None);
    assert_eq!(h.c.status().phase, "idle");
    h.now = issued.renew_at() - 1;
    assert_eq!(h.poll(), None);
    h.now += 1;
    h.expect(Method::Get, DIR);
    h.answer(200, &pebble("directory.json"), None, None);
    h.expect(Method::Post, "https://127.0.0.1:14000/sign-me-up");
}

#[test]
fn retry_after_values() {
    assert_eq!(retry_after("120", NOW), Some(120));
    assert_eq!(retry_after(" 0 ", NOW), Some(0));
    assert_eq!(retry_after("Mon, 30 Nov 2026 09:53:10 GMT", NOW), Some(60));
    assert_eq!(retry_after("Mon, 30 Nov 2026 09:50:10 GMT", NOW), Some(0));
    for bad in [
        "",
        "-1",
        "1.5",
        "soon",
        "Mon, 30 Foo 2026 09:53:10 GMT",
        "99999999999999999999999",
    ] {
        assert_eq!(retry_after(bad, NOW), None, "{bad}");
    }
}

/// A client for HTTP-01 up to the order, with `order_body` as newOrder's answer.
fn placed(order_body: &str) -> H {
    let mut h = H::new(ChallengeKind::Http01);
    h.place(order_body);
    h
}

#[test]
fn orders_the_ca_hands_back_in_other_states() {
    // Ready at once (authorizations reused): finalized without a challenge.
    let mut h = placed(&pebble("order-ready.json"));
    h.expect(Method::Post, &order_doc().finalize);
    assert!(h.events.is_empty());
    // Processing or valid at once: finalized by an earlier attempt, its key lost.
    for status in ["processing", "valid"] {
        let body = pebble("order-valid.json").replace("\"valid\"", &format!("\"{status}\""));
        let mut h = placed(&body);
        assert_eq!(h.poll(), None);
        let Some(Event::Failed { reason, .. }) = h.events.pop() else {
            panic!("{status}: {:?}", h.events)
        };
        assert!(
            reason.contains("finalized earlier, whose key is lost"),
            "{reason}"
        );
    }
    // An authorization already valid: no answer published, on to the next.
    let mut h = placed(&pebble("order-pending.json"));
    h.expect(Method::Post, &authz_url(0));
    let valid =
        pebble("authz-0.json").replacen("\"status\": \"pending\"", "\"status\": \"valid\"", 1);
    h.answer(200, &valid, None, None);
    assert!(h.events.is_empty());
    h.expect(Method::Post, &authz_url(1));
}

#[test]
fn every_attempt_registers_the_account_so_a_lost_one_is_made_anew() {
    let mut h = placed(&pebble("order-pending.json"));
    let gone = "{\"type\":\"urn:ietf:params:acme:error:accountDoesNotExist\",\"detail\":\"no\"}";
    h.expect(Method::Post, &authz_url(0));
    h.answer(400, gone, None, None);
    let Some(Event::Failed { next, .. }) = h.events.pop() else {
        panic!()
    };
    h.now = next;
    h.expect(Method::Get, DIR);
    h.answer(200, &pebble("directory.json"), None, None);
    let r = h.expect(Method::Post, "https://127.0.0.1:14000/sign-me-up");
    assert!(
        H::open(&r).0.get("jwk").is_some(),
        "newAccount again, by the key"
    );
}

#[test]
fn a_chain_for_another_key_is_refused_and_nothing_installed() {
    let mut h = placed(&pebble("order-ready.json"));
    // The certificate key drawn for this order is not the fixtures' key.
    struct Other;
    impl Entropy for Other {
        fn fill(&mut self, buf: &mut [u8]) {
            buf.fill(7);
        }
    }
    let r = h.c.poll(h.now, &mut h.events, &mut Other).unwrap();
    assert_eq!(r.url, order_doc().finalize);
    h.answer(200, &pebble("order-valid.json"), None, None);
    h.poll().unwrap();
    h.answer(200, &pebble("chain.pem"), None, None);
    let ev: Vec<_> = h.events.drain(..).collect();
    assert!(
        !ev.iter().any(|e| matches!(e, Event::Install { .. })),
        "{ev:?}"
    );
    let Some(Event::Failed { reason, .. }) = ev.last() else {
        panic!("{ev:?}")
    };
    assert!(
        reason.ends_with("the certificate is not for our key"),
        "{reason}"
    );
    assert_eq!(h.c.status().certificate_until, None);
}

#[test]
fn polling_clamps_retry_after_and_late_answers_are_not_acted_on() {
    let mut h = placed(&pebble("order-pending.json"));
    h.expect(Method::Post, &authz_url(0));
    h.answer(200, &pebble("authz-0.json"), None, None);
    assert!(matches!(h.events.pop(), Some(Event::Publish(_))));
    h.poll().unwrap();
    // A Retry-After of an hour while polling: 60 s at most.
    h.answer(200, &pebble("challenge-0.json"), None, Some(3600));
    h.now += 59;
    assert_eq!(h.poll(), None);
    h.now += 1;
    h.expect(Method::Post, &authz_url(0));
    // The answer comes after the attempt's deadline: the attempt fails, not advances.
    h.now = NOW + ORDER_DEADLINE + 1;
    h.answer(
        200,
        &pebble("authz-0.json").replacen("\"pending\"", "\"valid\"", 1),
        None,
        None,
    );
    let ev: Vec<_> = h.events.drain(..).collect();
    assert_eq!(ev[0], Event::Withdraw);
    assert!(matches!(&ev[1], Event::Failed { reason, .. } if reason.contains("not done in 600 s")));
}

#[test]
fn a_clock_set_back_does_not_hold_the_client() {
    let mut h = H::new(ChallengeKind::Http01);
    // Failures at a time a year ahead (a wrong clock), then the clock corrected.
    h.now = NOW + 365 * 86_400;
    for _ in 0..ATTEMPTS_PER_HOUR {
        h.poll().unwrap();
        h.c.on_transport_error("down", h.now, &mut h.events, &mut h.rng);
        h.now += BACKOFF_MAX + 1;
    }
    h.now = NOW;
    h.expect(Method::Get, DIR);
}

#[test]
fn retry_after_refuses_what_is_not_ascii() {
    assert_eq!(retry_after("Mon, 30 Nov 2026 09:53:1\u{e9}GMT", NOW), None);
    assert_eq!(retry_after("\u{e9}\u{e9}\u{e9}", NOW), None);
}

/// The directory with RFC 9773's renewalInfo, as a CA that offers it answers.
fn directory_with_ari() -> String {
    pebble("directory.json").replacen(
        "\"keyChange\"",
        "\"renewalInfo\": \"https://127.0.0.1:14000/ari\",\n   \"keyChange\"",
        1,
    )
}

fn kept() -> crate::chain::Issued {
    crate::chain::check(
        pebble("chain.pem").as_bytes(),
        &key(),
        &["acme.test", "www.acme.test"],
        NOW,
    )
    .unwrap()
}

fn window(start: u64, end: u64) -> String {
    let t = |s: u64| {
        let dt = der::DateTime::from_unix_duration(core::time::Duration::from_secs(s)).unwrap();
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
            dt.year(),
            dt.month(),
            dt.day(),
            dt.hour(),
            dt.minutes(),
            dt.seconds()
        )
    };
    format!(
        "{{\"suggestedWindow\":{{\"start\":\"{}\",\"end\":\"{}\"}}}}",
        t(start),
        t(end)
    )
}

#[test]
fn after_a_restart_renewal_information_moves_the_renewal_into_its_window() {
    let mut h = H::new(ChallengeKind::Http01);
    let issued = kept();
    let id = issued.cert_id.clone().unwrap();
    h.c.resume(issued.clone());
    // The directory for its renewalInfo URL, then the certificate's information: no
    // order, the phase stays idle.
    h.expect(Method::Get, DIR);
    h.answer(200, &directory_with_ari(), None, None);
    assert_eq!(h.c.status().phase, "idle");
    h.expect(Method::Get, &format!("https://127.0.0.1:14000/ari/{id}"));
    let (start, end) = (NOW + 86_400, NOW + 2 * 86_400);
    h.answer(200, &window(start, end), None, Some(7200));
    let next = h.c.status().next.unwrap();
    assert!((start..end).contains(&next), "{next} not in the window");
    assert!(next < issued.renew_at());
    assert!(h.events.is_empty(), "{:?}", h.events);
    // Asked again at its Retry-After (2 h), within the hour-to-a-day bounds.
    h.now += 7199;
    assert_eq!(h.poll(), None);
    h.now += 1;
    h.expect(Method::Get, &format!("https://127.0.0.1:14000/ari/{id}"));
    // A window already past: renew now. The order names the certificate it replaces.
    h.answer(200, &window(NOW - 7200, NOW - 3600), None, None);
    h.expect(Method::Get, DIR);
    h.answer(200, &directory_with_ari(), None, None);
    h.poll().unwrap();
    h.answer(201, &pebble("account.json"), Some(KID), None);
    let r = h.expect(Method::Post, "https://127.0.0.1:14000/order-plz");
    let p: serde_json::Value = serde_json::from_slice(&H::open(&r).1).unwrap();
    assert_eq!(p["replaces"], id.as_str());
}

#[test]
fn renewal_information_that_fails_is_no_failure_and_a_ca_without_it_is_not_asked() {
    let mut h = H::new(ChallengeKind::Http01);
    let issued = kept();
    h.c.resume(issued.clone());
    h.expect(Method::Get, DIR);
    h.answer(200, &directory_with_ari(), None, None);
    h.poll().unwrap();
    h.c.on_transport_error("timed out", h.now, &mut h.events, &mut h.rng);
    assert!(h.events.is_empty());
    assert_eq!(h.c.status().failures, 0);
    assert_eq!(h.c.status().next, Some(issued.renew_at()));
    // Asked again six hours later; a malformed answer changes nothing either.
    h.now += ARI_EVERY;
    h.poll().unwrap();
    h.answer(200, "{\"suggestedWindow\": 7}", None, None);
    assert_eq!(h.c.status().next, Some(issued.renew_at()));
    // Pebble 2.4's directory has no renewalInfo: after it, nothing until renewal.
    let mut h = H::new(ChallengeKind::Http01);
    h.c.resume(issued.clone());
    h.expect(Method::Get, DIR);
    h.answer(200, &pebble("directory.json"), None, None);
    h.now += 30 * 86_400;
    assert_eq!(h.poll(), None);
    assert_eq!(h.c.deadline(), Some(issued.renew_at()));
}

/// Draws that differ each time (unlike `Fixed`).
struct Counting(u64);

impl Entropy for Counting {
    fn fill(&mut self, buf: &mut [u8]) {
        for b in buf.iter_mut() {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            *b = (self.0 >> 56) as u8;
        }
    }
}

/// A resumed client that has read a directory with renewalInfo and sent its first ARI
/// request.
fn asking_ari() -> (H, crate::chain::Issued) {
    let mut h = H::new(ChallengeKind::Http01);
    let issued = kept();
    h.c.resume(issued.clone());
    h.expect(Method::Get, DIR);
    h.answer(200, &directory_with_ari(), None, None);
    let id = issued.cert_id.clone().unwrap();
    h.expect(Method::Get, &format!("https://127.0.0.1:14000/ari/{id}"));
    (h, issued)
}

#[test]
fn the_same_window_keeps_its_drawn_time_so_renewals_spread() {
    let (mut h, _) = asking_ari();
    let (start, end) = (NOW + 86_400, NOW + 8 * 86_400);
    let mut rng = Counting(1);
    let answer = |h: &mut H, rng: &mut Counting| {
        let w = window(start, end);
        let r = Response {
            status: 200,
            location: None,
            replay_nonce: None,
            retry_after: Some(3600),
            body: w.as_bytes(),
        };
        h.c.on_response(&r, h.now, &mut h.events, rng);
    };
    answer(&mut h, &mut rng);
    let first = h.c.status().next.unwrap();
    // Asked again and again (every hour for a day): the time stays, it does not creep
    // towards the window's start as a minimum of many draws would.
    for _ in 0..24 {
        h.now += 3600;
        h.c.poll(h.now, &mut h.events, &mut h.rng).unwrap();
        answer(&mut h, &mut rng);
        assert_eq!(h.c.status().next, Some(first));
    }
    // A new window: a new draw within it.
    h.now += 3600;
    h.c.poll(h.now, &mut h.events, &mut h.rng).unwrap();
    let w = window(NOW + 9 * 86_400, NOW + 10 * 86_400);
    let r = Response {
        status: 200,
        location: None,
        replay_nonce: None,
        retry_after: None,
        body: w.as_bytes(),
    };
    h.c.on_response(&r, h.now, &mut h.events, &mut rng);
    let next = h.c.status().next.unwrap();
    assert!(
        (NOW + 9 * 86_400..NOW + 10 * 86_400).contains(&next),
        "{next}"
    );
}

#[test]
fn renewal_information_never_cuts_a_failures_backoff_short() {
    let mut h = H::new(ChallengeKind::Http01);
    h.expect(Method::Get, DIR);
    h.c.on_transport_error("refused", h.now, &mut h.events, &mut h.rng);
    let Some(Event::Failed { next: backoff, .. }) = h.events.pop() else {
        panic!()
    };
    let issued = kept();
    h.c.resume(issued.clone());
    h.expect(Method::Get, DIR);
    h.answer(200, &directory_with_ari(), None, None);
    h.poll().unwrap();
    // A window already past would mean "now": the backoff still holds.
    h.answer(200, &window(NOW - 7200, NOW - 3600), None, None);
    assert_eq!(h.c.status().next, Some(backoff));
    assert_eq!(h.poll(), None);
    h.now = backoff;
    h.expect(Method::Get, DIR);
}

#[test]
fn a_leaf_without_an_identifier_asks_nothing_and_never_spins() {
    let mut h = H::new(ChallengeKind::Http01);
    let issued = crate::chain::Issued {
        cert_id: None,
        ..kept()
    };
    h.c.resume(issued.clone());
    assert_eq!(h.poll(), None);
    assert_eq!(
        h.c.deadline(),
        Some(issued.renew_at()),
        "no deadline in the past"
    );
}

#[test]
fn already_replaced_sends_the_next_order_without_replaces() {
    let (mut h, _) = asking_ari();
    h.answer(200, &window(NOW - 7200, NOW - 3600), None, None);
    h.expect(Method::Get, DIR);
    h.answer(200, &directory_with_ari(), None, None);
    h.poll().unwrap();
    h.answer(201, &pebble("account.json"), Some(KID), None);
    let r = h.expect(Method::Post, "https://127.0.0.1:14000/order-plz");
    assert!(H::open(&r).1.windows(8).any(|w| w == b"replaces"));
    let refused = "{\"type\":\"urn:ietf:params:acme:error:alreadyReplaced\",\"detail\":\"x\"}";
    h.answer(409, refused, None, None);
    let Some(Event::Failed { next, .. }) = h.events.pop() else {
        panic!()
    };
    h.now = next;
    h.expect(Method::Get, DIR);
    h.answer(200, &directory_with_ari(), None, None);
    h.poll().unwrap();
    h.answer(201, &pebble("account.json"), Some(KID), None);
    let r = h.expect(Method::Post, "https://127.0.0.1:14000/order-plz");
    assert!(!H::open(&r).1.windows(8).any(|w| w == b"replaces"));
}
