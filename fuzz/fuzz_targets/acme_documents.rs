//! The ACME client's readers fed anything: the input read as each of the CA's documents
//! (serde_json, then the checks), as a certificate chain and as a state record (one read
//! back after writing it again gives the same state); and split at its first 0
//! byte into a URL and a nonce that a JWS is made of. Nothing may panic; a document that
//! passes has only https URLs and good tokens; a JWS always parses back and its header
//! names the URL and nonce given.
#![no_main]

use bareweb_acme::document::{
    self, read, token_ok, url_ok, Account, Authorization, Challenge, Directory, Order, Problem,
    RenewalInfo,
};
use bareweb_acme::jose::Key;
use bareweb_acme::{chain, csr, store};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut s = [0u8; 32];
    for (i, b) in s.iter_mut().enumerate() {
        *b = i as u8 + 1;
    }
    let key = Key::from_random(&s).unwrap();
    if let Ok(d) = read::<Directory>(data) {
        assert!(url_ok(&d.new_order) && url_ok(&d.new_nonce) && url_ok(&d.new_account));
    }
    let _ = read::<Account>(data);
    if let Ok(o) = read::<Order>(data) {
        assert!(o.authorizations.iter().all(|a| url_ok(a)) && url_ok(&o.finalize));
    }
    if let Ok(a) = read::<Authorization>(data) {
        for c in &a.challenges {
            assert!(url_ok(&c.url));
            assert!(c.token.as_deref().is_none_or(token_ok));
        }
    }
    let _ = read::<Challenge>(data);
    if let Ok(p) = read::<Problem>(data) {
        assert!(!p.summary().chars().any(char::is_control));
    }
    if let Ok(r) = read::<RenewalInfo>(data) {
        let (start, end) = r.window().unwrap();
        assert!(start < end);
    }
    if let Ok(t) = core::str::from_utf8(data) {
        let _ = document::parse_time(t);
    }
    if let Ok((seq, state)) = store::decode(data) {
        let again = store::encode(&state, seq).unwrap();
        assert_eq!(store::decode(&again), Ok((seq, state)));
    }
    if let Ok(issued) = chain::check(data, &key, &["acme.test"], 1_796_032_330) {
        assert!(issued.not_before < issued.not_after && !issued.certs.is_empty());
    }
    // A JWS of any URL and nonce is JSON whose header carries them exactly.
    let (url, nonce) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b""[..]),
    };
    if let (Ok(url), Ok(nonce)) = (core::str::from_utf8(url), core::str::from_utf8(nonce)) {
        let jws = key.jws(url, nonce, Some("https://ca.test/acct/1"), Some(b"{}"));
        let v: serde_json::Value = serde_json::from_str(&jws).unwrap();
        let protected = v["protected"].as_str().unwrap();
        let header = <base64ct::Base64UrlUnpadded as base64ct::Encoding>::decode_vec(protected)
            .unwrap();
        let h: serde_json::Value = serde_json::from_slice(&header).unwrap();
        assert_eq!(h["url"], url);
        assert_eq!(h["nonce"], nonce);
        if let Ok(ka) = core::str::from_utf8(data) {
            let _ = csr::alpn_certificate(&key, "acme.test", ka, 1_796_032_330);
        }
    }
});
