use super::*;
use base64ct::{Base64UrlUnpadded, Encoding};
use p256::ecdsa::signature::Verifier;

/// The key whose scalar is 1, 2, ..., 32 (the chain fixtures' certificate key too).
pub(crate) fn key() -> Key {
    let mut s = [0u8; 32];
    for (i, b) in s.iter_mut().enumerate() {
        *b = i as u8 + 1;
    }
    Key::from_random(&s).unwrap()
}

fn unb64(s: &str) -> Vec<u8> {
    Base64UrlUnpadded::decode_vec(s).unwrap()
}

#[test]
fn jwk_and_thumbprint_match_an_independent_implementation() {
    // Python's cryptography for the same scalar: json.dumps(sort_keys, no spaces), SHA-256.
    assert_eq!(
        key().jwk(),
        "{\"crv\":\"P-256\",\"kty\":\"EC\",\"x\":\"UVw9brnjlrkE0_7Kf1T9zQzB6Ze_N13KUVrQpsO0A18\",\
         \"y\":\"RTa-OlDzGPv5pUdZAqIhUCvvDVfgjFOyzApW8X2fk1Q\"}"
    );
    assert_eq!(
        key().thumbprint(),
        "6UoWwDCkLjV0J-pQG8c0THxbVhBcpR0AZDift1Yl5DM"
    );
    assert_eq!(
        key().key_authorization("tok_en-123"),
        "tok_en-123.6UoWwDCkLjV0J-pQG8c0THxbVhBcpR0AZDift1Yl5DM"
    );
}

#[test]
fn scalars_and_storage() {
    assert_eq!(Key::from_random(&[0; 32]).err(), Some(KeyError::Scalar));
    assert_eq!(Key::from_random(&[0xFF; 32]).err(), Some(KeyError::Scalar));
    let der = key().to_pkcs8();
    assert_eq!(Key::from_pkcs8(&der).unwrap().jwk(), key().jwk());
    assert_eq!(Key::from_pkcs8(&der[1..]).err(), Some(KeyError::Stored));
    assert!(key()
        .to_pkcs8_pem()
        .starts_with("-----BEGIN PRIVATE KEY-----\n"));
}

/// The JWS's parts: (protected header as JSON, payload bytes), its signature checked.
fn open(jws: &str, k: &Key) -> (serde_json::Value, Vec<u8>) {
    let v: serde_json::Value = serde_json::from_str(jws).unwrap();
    let (p, pl, sig) = (
        v["protected"].as_str().unwrap(),
        v["payload"].as_str().unwrap(),
        v["signature"].as_str().unwrap(),
    );
    let sig = Signature::from_slice(&unb64(sig)).unwrap();
    let input = format!("{p}.{pl}");
    k.signing_key()
        .verifying_key()
        .verify(input.as_bytes(), &sig)
        .expect("ES256 signature verifies");
    (serde_json::from_slice(&unb64(p)).unwrap(), unb64(pl))
}

#[test]
fn jws_by_jwk_then_by_kid_and_post_as_get() {
    let k = key();
    let (h, payload) = open(
        &k.jws(
            "https://ca.test/new-acct",
            "n0nce",
            None,
            Some(b"{\"termsOfServiceAgreed\":true}"),
        ),
        &k,
    );
    assert_eq!(h["alg"], "ES256");
    assert_eq!(h["nonce"], "n0nce");
    assert_eq!(h["url"], "https://ca.test/new-acct");
    assert_eq!(h["jwk"]["x"], "UVw9brnjlrkE0_7Kf1T9zQzB6Ze_N13KUVrQpsO0A18");
    assert!(
        h.get("kid").is_none(),
        "jwk and kid never both (RFC 8555 §6.2)"
    );
    assert_eq!(payload, b"{\"termsOfServiceAgreed\":true}");
    let (h, payload) = open(
        &k.jws(
            "https://ca.test/order/1",
            "n\"2",
            Some("https://ca.test/acct/7"),
            None,
        ),
        &k,
    );
    assert_eq!(h["kid"], "https://ca.test/acct/7");
    assert_eq!(h["nonce"], "n\"2", "escaped, not spliced");
    assert!(h.get("jwk").is_none());
    assert!(payload.is_empty(), "POST-as-GET's payload is empty");
    // Another key's signature does not verify.
    let mut s = [7u8; 32];
    s[0] = 1;
    let other = Key::from_random(&s).unwrap();
    let jws = other.jws("https://ca.test/x", "n", None, None);
    let v: serde_json::Value = serde_json::from_str(&jws).unwrap();
    let sig = Signature::from_slice(&unb64(v["signature"].as_str().unwrap())).unwrap();
    let input = format!("{}.{}", v["protected"].as_str().unwrap(), "");
    assert!(k
        .signing_key()
        .verifying_key()
        .verify(input.as_bytes(), &sig)
        .is_err());
}
