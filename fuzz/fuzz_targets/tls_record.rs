//! The record layer alone: arbitrary bytes as the body of a received record, opened by
//! every AEAD of the provider for TLS 1.3 and TLS 1.2 under a fixed key. Checks: no panic,
//! and nothing forged opens (the chance of a valid tag is 2^-128).
#![no_main]

use bareweb_tls::provider::aead::Alg;
use bareweb_tls::rustls::crypto::cipher::{
    AeadKey, InboundOpaqueMessage, Iv, Tls12AeadAlgorithm, Tls13AeadAlgorithm,
};
use bareweb_tls::rustls::{ContentType, ProtocolVersion};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, body)) = data.split_first() else {
        return;
    };
    let alg = [Alg::Aes128Gcm, Alg::Aes256Gcm, Alg::ChaCha20Poly1305][usize::from(sel % 3)];
    let typ = ContentType::from(sel >> 2);
    let seq = u64::from(sel);
    let mut dec = if sel & 0x80 != 0 {
        Tls13AeadAlgorithm::decrypter(&alg, AeadKey::from([9; 32]), Iv::new([3; 12]))
    } else {
        let iv = if alg == Alg::ChaCha20Poly1305 { &[3u8; 12][..] } else { &[3u8; 4][..] };
        Tls12AeadAlgorithm::decrypter(&alg, AeadKey::from([9; 32]), iv)
    };
    let mut buf = body.to_vec();
    let r = dec.decrypt(
        InboundOpaqueMessage::new(typ, ProtocolVersion::TLSv1_2, &mut buf),
        seq,
    );
    assert!(r.is_err());
});
