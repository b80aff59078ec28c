//! The provider's primitives against published vectors (the GCM specification's test cases
//! 4 and 16, RFC 8439 §2.8.2, RFC 5869, RFC 4231), its record layer against records
//! computed independently (Python's `cryptography` package, i.e. OpenSSL), and round trips
//! of key exchange and signatures.

use alloc::vec;
use alloc::vec::Vec;

use aes_gcm::aead::{AeadInPlace, KeyInit};
use rustls::crypto::cipher::{
    AeadKey, InboundOpaqueMessage, Iv, OutboundPlainMessage, Tls12AeadAlgorithm, Tls13AeadAlgorithm,
};
use rustls::crypto::hmac::Hmac;
use rustls::crypto::tls13::Hkdf;
use rustls::crypto::{SupportedKxGroup, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::PrivateKeyDer;
use rustls::sign::SigningKey;
use rustls::{ContentType, Error, ProtocolVersion, SignatureScheme};

use super::aead::Alg;
use super::sign::{EcdsaKey, KeyError};
use super::*;
use crate::testing::TestRandom;

/// Seals with the crate's detached in-place API, tag appended.
fn seal_raw<A: AeadInPlace>(aead: &A, nonce: &[u8], aad: &[u8], msg: &[u8]) -> Vec<u8> {
    let mut out = msg.to_vec();
    let tag = aead
        .encrypt_in_place_detached(nonce.into(), aad, &mut out)
        .unwrap();
    out.extend_from_slice(&tag);
    out
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

const GCM_K: &str = "feffe9928665731c6d6a8f9467308308";
const GCM_P: &str = "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39";
const GCM_A: &str = "feedfacedeadbeeffeedfacedeadbeefabaddad2";
const GCM_IV: &str = "cafebabefacedbaddecaf888";

#[test]
fn aes_128_gcm_test_case_4() {
    let aead = aes_gcm::Aes128Gcm::new_from_slice(&hex(GCM_K)).unwrap();
    let out = seal_raw(&aead, &hex(GCM_IV), &hex(GCM_A), &hex(GCM_P));
    assert_eq!(out, hex("42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e0915bc94fbc3221a5db94fae95ae7121a47"));
}

#[test]
fn aes_256_gcm_test_case_16() {
    let key = [hex(GCM_K), hex(GCM_K)].concat();
    let aead = aes_gcm::Aes256Gcm::new_from_slice(&key).unwrap();
    let out = seal_raw(&aead, &hex(GCM_IV), &hex(GCM_A), &hex(GCM_P));
    assert_eq!(out, hex("522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f66276fc6ece0f4e1768cddf8853bb2d551b"));
}

const SUNSCREEN: &[u8] = b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.";

#[test]
fn chacha20_poly1305_rfc8439() {
    let key: Vec<u8> = (0x80..0xa0).collect();
    let aead = chacha20poly1305::ChaCha20Poly1305::new_from_slice(&key).unwrap();
    let out = seal_raw(
        &aead,
        &hex("070000004041424344454647"),
        &hex("50515253c0c1c2c3c4c5c6c7"),
        SUNSCREEN,
    );
    assert_eq!(out, hex("d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d63dbea45e8ca9671282fafb69da92728b1a71de0a9e060b2905d6a5b67ecd3b3692ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc3ff4def08e4b7a9de576d26586cec64b61161ae10b594f09e26a7e902ecbd0600691"));
}

#[test]
fn hkdf_rfc5869_case_1() {
    let hkdf = rustls::crypto::tls13::HkdfUsingHmac(&hmac::HmacSha256);
    let expander = hkdf.extract_from_secret(Some(&hex("000102030405060708090a0b0c")), &[0x0b; 22]);
    let mut okm = [0u8; 42];
    expander
        .expand_slice(&[&hex("f0f1f2f3f4f5f6f7f8f9")], &mut okm)
        .unwrap();
    assert_eq!(
        okm.to_vec(),
        hex("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")
    );
}

#[test]
fn hmac_rfc4231_case_2() {
    let data: &[u8] = b"what do ya want for nothing?";
    let t = hmac::HmacSha256
        .with_key(b"Jefe")
        .sign(&[&data[..10], &data[10..]]);
    assert_eq!(
        t.as_ref(),
        hex("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    );
    let t = hmac::HmacSha384.with_key(b"Jefe").sign(&[data]);
    assert_eq!(t.as_ref(), hex("af45d2e376484031617f78d2b58a6b1b9c7ef464f5a01b47e42ec3736322445e8e2240ca5e69e2c78b3239ecfab21649"));
}

#[test]
fn sha2_abc() {
    use rustls::crypto::hash::Hash;
    assert_eq!(
        hash::Sha256.hash(b"abc").as_ref(),
        hex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    );
    let mut ctx = hash::Sha384.start();
    ctx.update(b"a");
    let fork = ctx.fork_finish();
    ctx.update(b"bc");
    assert_eq!(ctx.finish().as_ref(), hex("cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7"));
    assert_eq!(fork.as_ref(), hash::Sha384.hash(b"a").as_ref());
}

const GET: &[u8] = b"GET / HTTP/1.1\r\n\r\n";

fn seal(
    enc: &mut dyn rustls::crypto::cipher::MessageEncrypter,
    version: ProtocolVersion,
    seq: u64,
) -> Vec<u8> {
    enc.encrypt(
        OutboundPlainMessage {
            typ: ContentType::ApplicationData,
            version,
            payload: GET.into(),
        },
        seq,
    )
    .unwrap()
    .encode()
}

/// Records from our record layer equal records computed by OpenSSL (through Python's
/// `cryptography`) for the same key, IV and sequence number 1.
#[test]
fn records_match_an_independent_implementation() {
    let k128 = hex(GCM_K);
    let iv = hex(GCM_IV);
    let kcc: Vec<u8> = (0x80..0xa0).collect();
    let ivcc = hex("070000004041424344454647");

    let mut e =
        Tls13AeadAlgorithm::encrypter(&Alg::Aes128Gcm, AeadKey::from(arr32(&k128)), Iv::copy(&iv));
    assert_eq!(
        seal(&mut *e, ProtocolVersion::TLSv1_2, 1),
        [
            hex("1703030023"),
            hex("c255a08f7edc32c365bbf150fbaaa5dd017740d015a9e2b5191f947c6ee1b0c429efa5")
        ]
        .concat()
    );

    let mut e = Tls13AeadAlgorithm::encrypter(
        &Alg::ChaCha20Poly1305,
        AeadKey::from(arr32(&kcc)),
        Iv::copy(&ivcc),
    );
    assert_eq!(
        seal(&mut *e, ProtocolVersion::TLSv1_2, 1),
        [
            hex("1703030023"),
            hex("8fa1a63cfdd32f32cae5107b63592cb1d240203c9201eb75cb67085e366288a932885c")
        ]
        .concat()
    );

    let mut e = Tls12AeadAlgorithm::encrypter(
        &Alg::Aes128Gcm,
        AeadKey::from(arr32(&k128)),
        &iv[..4],
        &iv[4..],
    );
    assert_eq!(seal(&mut *e, ProtocolVersion::TLSv1_2, 1), [hex("170303002a"), hex("facedbaddecaf889c255a08f7edc32c365bbf150fbaaa5dd01778061202187c3e5d5b042690c0e72bc5f")].concat());

    let mut e = Tls12AeadAlgorithm::encrypter(
        &Alg::ChaCha20Poly1305,
        AeadKey::from(arr32(&kcc)),
        &ivcc,
        &[],
    );
    assert_eq!(
        seal(&mut *e, ProtocolVersion::TLSv1_2, 1),
        [
            hex("1703030022"),
            hex("8fa1a63cfdd32f32cae5107b63592cb1d240520a00b3dc92a60d9872bfc25836bd2c")
        ]
        .concat()
    );
}

fn arr32(k: &[u8]) -> [u8; 32] {
    let mut a = [0u8; 32];
    a[..k.len()].copy_from_slice(k);
    a
}

fn key_for(alg: Alg) -> AeadKey {
    let _ = alg;
    AeadKey::from([0x42; 32])
}

/// Every algorithm, both versions: sealed records open, a flipped bit, a wrong sequence
/// number and every truncation are refused without a panic.
#[test]
fn records_round_trip_and_refuse_tampering() {
    for alg in [Alg::Aes128Gcm, Alg::Aes256Gcm, Alg::ChaCha20Poly1305] {
        for v13 in [true, false] {
            let shape = Tls12AeadAlgorithm::key_block_shape(&alg);
            let iv12 = [7u8; 12];
            let (mut enc, mut dec) = if v13 {
                (
                    Tls13AeadAlgorithm::encrypter(&alg, key_for(alg), Iv::copy(&iv12)),
                    Tls13AeadAlgorithm::decrypter(&alg, key_for(alg), Iv::copy(&iv12)),
                )
            } else {
                let fixed = &iv12[..shape.fixed_iv_len];
                let extra = &iv12[..shape.explicit_nonce_len];
                (
                    Tls12AeadAlgorithm::encrypter(&alg, key_for(alg), fixed, extra),
                    Tls12AeadAlgorithm::decrypter(&alg, key_for(alg), fixed),
                )
            };
            let rec = seal(&mut *enc, ProtocolVersion::TLSv1_2, 5);
            let open =
                |dec: &mut dyn rustls::crypto::cipher::MessageDecrypter, body: &mut [u8], seq| {
                    dec.decrypt(
                        InboundOpaqueMessage::new(
                            ContentType::ApplicationData,
                            ProtocolVersion::TLSv1_2,
                            body,
                        ),
                        seq,
                    )
                    .map(|m| m.payload.to_vec())
                };
            let mut body = rec[5..].to_vec();
            assert_eq!(
                open(&mut *dec, &mut body, 5).unwrap(),
                GET,
                "{alg:?} v13={v13}"
            );
            let mut body = rec[5..].to_vec();
            assert_eq!(open(&mut *dec, &mut body, 6), Err(Error::DecryptError));
            for i in 0..rec.len() - 5 {
                let mut body = rec[5..].to_vec();
                body[i] ^= 0x80;
                assert!(open(&mut *dec, &mut body, 5).is_err(), "{alg:?} bit {i}");
            }
            for n in 0..rec.len() - 5 {
                let mut body = rec[5..5 + n].to_vec();
                assert!(
                    open(&mut *dec, &mut body, 5).is_err(),
                    "{alg:?} truncated to {n}"
                );
            }
            let mut huge = vec![0u8; 16384 + 256 + 100];
            assert!(open(&mut *dec, &mut huge, 5).is_err());
        }
    }
}

static RNG: TestRandom = TestRandom::new(1);

fn agree(a: &dyn SupportedKxGroup, b: &dyn SupportedKxGroup) {
    let x = a.start().unwrap();
    let y = b.start().unwrap();
    let (xp, yp) = (x.pub_key().to_vec(), y.pub_key().to_vec());
    let s1 = x.complete(&yp).unwrap();
    let s2 = y.complete(&xp).unwrap();
    assert_eq!(s1.secret_bytes(), s2.secret_bytes());
    assert!(s1.secret_bytes().iter().any(|&b| b != 0));
}

#[test]
fn key_exchange_agrees_and_refuses_bad_shares() {
    let x = kx::X25519 { rng: &RNG };
    let p = kx::P256 { rng: &RNG };
    agree(&x, &x);
    agree(&p, &p);
    assert_eq!(p.start().unwrap().pub_key().len(), 65);
    // X25519: a low-order point (all zeros) and wrong lengths.
    assert!(x.start().unwrap().complete(&[0; 32]).is_err());
    assert!(x.start().unwrap().complete(&[9; 31]).is_err());
    // P-256: not on the curve, compressed, empty.
    let mut bad = p.start().unwrap().pub_key().to_vec();
    bad[40] ^= 1;
    assert!(p.start().unwrap().complete(&bad).is_err());
    let good = p.start().unwrap().pub_key().to_vec();
    let mut compressed = good[..33].to_vec();
    compressed[0] = 2 + (good[64] & 1);
    assert!(p.start().unwrap().complete(&compressed).is_err());
    assert!(p.start().unwrap().complete(&[]).is_err());
}

fn key(pem: &[u8]) -> PrivateKeyDer<'static> {
    PrivateKeyDer::from_pem_slice(pem).unwrap()
}

fn sign_verify(pem: &[u8], scheme: SignatureScheme, algs: &WebPkiSupportedAlgorithms) {
    let k = EcdsaKey::from_der(&key(pem)).unwrap();
    assert_eq!(k.scheme(), scheme);
    let signer = k
        .choose_scheme(&[SignatureScheme::ED25519, scheme])
        .unwrap();
    assert!(k.choose_scheme(&[SignatureScheme::ED25519]).is_none());
    let msg = b"TLS 1.3, server CertificateVerify\0transcript hash";
    let sig = signer.sign(msg).unwrap();
    // RFC 6979: deterministic.
    assert_eq!(sig, signer.sign(msg).unwrap());
    let spki = k.spki();
    // The raw point is the SPKI's BIT STRING tail; verification takes the point.
    let point_len = if scheme == SignatureScheme::ECDSA_NISTP256_SHA256 {
        65
    } else {
        97
    };
    let point = &spki.as_ref()[spki.as_ref().len() - point_len..];
    let verifier = algs.mapping.iter().find(|(s, _)| *s == scheme).unwrap().1[0];
    verifier.verify_signature(point, msg, &sig).unwrap();
    assert!(verifier
        .verify_signature(point, b"another message", &sig)
        .is_err());
    assert!(verifier
        .verify_signature(point, msg, &sig[..sig.len() - 1])
        .is_err());
}

#[test]
fn ecdsa_sign_and_verify() {
    sign_verify(
        include_bytes!("../../testdata/key.pem"),
        SignatureScheme::ECDSA_NISTP256_SHA256,
        &verify::ALGORITHMS,
    );
    sign_verify(
        include_bytes!("../../testdata/key-sec1.pem"),
        SignatureScheme::ECDSA_NISTP256_SHA256,
        &verify::ALGORITHMS,
    );
    sign_verify(
        include_bytes!("../../testdata/key384.pem"),
        SignatureScheme::ECDSA_NISTP384_SHA384,
        &verify::ALGORITHMS,
    );
}

#[test]
fn rsa_keys_are_refused_with_the_reason() {
    for pem in [
        &include_bytes!("../../testdata/rsa.pem")[..],
        include_bytes!("../../testdata/rsa-pkcs1.pem"),
    ] {
        assert_eq!(EcdsaKey::from_der(&key(pem)).unwrap_err(), KeyError::Rsa);
    }
    let why = alloc::format!("{}", KeyError::Rsa);
    assert!(
        why.contains("RUSTSEC-2023-0071")
            && why.contains("openssl ecparam -genkey -name prime256v1")
    );
    assert_eq!(
        EcdsaKey::from_der(&key(include_bytes!("../../testdata/ed25519.pem"))).unwrap_err(),
        KeyError::UnsupportedAlgorithm
    );
    assert_eq!(
        EcdsaKey::from_der(&key(include_bytes!("../../testdata/secp256k1.pem"))).unwrap_err(),
        KeyError::UnsupportedCurve
    );
}
