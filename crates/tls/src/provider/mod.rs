//! bareweb's rustls crypto provider, on maintained RustCrypto crates, laid out as rustls's
//! own `ring` and `aws-lc-rs` providers are (one module per primitive, suites as statics).
//!
//! - key exchange: X25519, secp256r1 ([`kx`]);
//! - TLS 1.3 suites: AES-128-GCM-SHA256, AES-256-GCM-SHA384, ChaCha20-Poly1305-SHA256;
//! - TLS 1.2 suites: ECDHE-ECDSA with the same three AEADs (no RSA, no CBC, no static RSA
//!   key exchange);
//! - HKDF and the TLS 1.2 PRF: rustls's `HkdfUsingHmac` / `PrfUsingHmac` over [`hmac`];
//! - record ciphers ([`aead`]): AES-GCM on our AES-NI/PCLMULQDQ assembly ([`aesni`]) where the
//!   CPU has it, else the `aes-gcm` crate; ChaCha20-Poly1305 on `chacha20poly1305`;
//! - signing keys: ECDSA P-256 and P-384 ([`sign`]);
//! - signature verification: ECDSA P-256 and P-384 ([`verify`]), for a client using it;
//! - randomness: the platform's `SecureRandom`, passed to [`provider`].

pub mod aead;
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
pub mod aesni;
pub mod hash;
pub mod hmac;
pub mod kx;
pub mod sign;
pub mod verify;

use alloc::boxed::Box;
use alloc::vec;

use rustls::crypto::tls12::PrfUsingHmac;
use rustls::crypto::tls13::HkdfUsingHmac;
use rustls::crypto::{CipherSuiteCommon, CryptoProvider, KeyExchangeAlgorithm, SecureRandom};
use rustls::{
    CipherSuite, SignatureScheme, SupportedCipherSuite, Tls12CipherSuite, Tls13CipherSuite,
};

use aead::Alg;

/// AES-GCM's confidentiality limit per key in records (RFC 8446 §5.5: 2^24.5 full-size
/// records), as rustls's own providers state it.
const GCM_LIMIT: u64 = 1 << 24;
/// ChaCha20-Poly1305 has no practical limit.
const CHACHA_LIMIT: u64 = u64::MAX;

/// TLS_AES_128_GCM_SHA256.
pub static TLS13_AES_128_GCM_SHA256: SupportedCipherSuite =
    SupportedCipherSuite::Tls13(&Tls13CipherSuite {
        common: CipherSuiteCommon {
            suite: CipherSuite::TLS13_AES_128_GCM_SHA256,
            hash_provider: &hash::Sha256,
            confidentiality_limit: GCM_LIMIT,
        },
        hkdf_provider: &HkdfUsingHmac(&hmac::HmacSha256),
        aead_alg: &Alg::Aes128Gcm,
        quic: None,
    });

/// TLS_AES_256_GCM_SHA384.
pub static TLS13_AES_256_GCM_SHA384: SupportedCipherSuite =
    SupportedCipherSuite::Tls13(&Tls13CipherSuite {
        common: CipherSuiteCommon {
            suite: CipherSuite::TLS13_AES_256_GCM_SHA384,
            hash_provider: &hash::Sha384,
            confidentiality_limit: GCM_LIMIT,
        },
        hkdf_provider: &HkdfUsingHmac(&hmac::HmacSha384),
        aead_alg: &Alg::Aes256Gcm,
        quic: None,
    });

/// TLS_CHACHA20_POLY1305_SHA256.
pub static TLS13_CHACHA20_POLY1305_SHA256: SupportedCipherSuite =
    SupportedCipherSuite::Tls13(&Tls13CipherSuite {
        common: CipherSuiteCommon {
            suite: CipherSuite::TLS13_CHACHA20_POLY1305_SHA256,
            hash_provider: &hash::Sha256,
            confidentiality_limit: CHACHA_LIMIT,
        },
        hkdf_provider: &HkdfUsingHmac(&hmac::HmacSha256),
        aead_alg: &Alg::ChaCha20Poly1305,
        quic: None,
    });

const ECDSA_SCHEMES: &[SignatureScheme] = &[
    SignatureScheme::ECDSA_NISTP256_SHA256,
    SignatureScheme::ECDSA_NISTP384_SHA384,
];

/// TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 (RFC 5289).
pub static TLS12_ECDHE_ECDSA_AES_128_GCM_SHA256: SupportedCipherSuite =
    SupportedCipherSuite::Tls12(&Tls12CipherSuite {
        common: CipherSuiteCommon {
            suite: CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
            hash_provider: &hash::Sha256,
            confidentiality_limit: GCM_LIMIT,
        },
        kx: KeyExchangeAlgorithm::ECDHE,
        sign: ECDSA_SCHEMES,
        prf_provider: &PrfUsingHmac(&hmac::HmacSha256),
        aead_alg: &Alg::Aes128Gcm,
    });

/// TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 (RFC 5289).
pub static TLS12_ECDHE_ECDSA_AES_256_GCM_SHA384: SupportedCipherSuite =
    SupportedCipherSuite::Tls12(&Tls12CipherSuite {
        common: CipherSuiteCommon {
            suite: CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
            hash_provider: &hash::Sha384,
            confidentiality_limit: GCM_LIMIT,
        },
        kx: KeyExchangeAlgorithm::ECDHE,
        sign: ECDSA_SCHEMES,
        prf_provider: &PrfUsingHmac(&hmac::HmacSha384),
        aead_alg: &Alg::Aes256Gcm,
    });

/// TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256 (RFC 7905).
pub static TLS12_ECDHE_ECDSA_CHACHA20_POLY1305_SHA256: SupportedCipherSuite =
    SupportedCipherSuite::Tls12(&Tls12CipherSuite {
        common: CipherSuiteCommon {
            suite: CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
            hash_provider: &hash::Sha256,
            confidentiality_limit: CHACHA_LIMIT,
        },
        kx: KeyExchangeAlgorithm::ECDHE,
        sign: ECDSA_SCHEMES,
        prf_provider: &PrfUsingHmac(&hmac::HmacSha256),
        aead_alg: &Alg::ChaCha20Poly1305,
    });

/// Every suite, in the server's order of preference: AES-128-GCM first (fastest with
/// AES-NI), then AES-256-GCM, then ChaCha20-Poly1305; TLS 1.3 before TLS 1.2.
pub static ALL_SUITES: &[SupportedCipherSuite] = &[
    TLS13_AES_128_GCM_SHA256,
    TLS13_AES_256_GCM_SHA384,
    TLS13_CHACHA20_POLY1305_SHA256,
    TLS12_ECDHE_ECDSA_AES_128_GCM_SHA256,
    TLS12_ECDHE_ECDSA_AES_256_GCM_SHA384,
    TLS12_ECDHE_ECDSA_CHACHA20_POLY1305_SHA256,
];

/// The provider over the platform's randomness. The two key-exchange groups hold `rng`, so
/// they are allocated here and kept for the program's life (two small objects per call:
/// build the provider once per process, or once per configuration).
pub fn provider(rng: &'static dyn SecureRandom) -> CryptoProvider {
    let x25519: &'static kx::X25519 = Box::leak(Box::new(kx::X25519 { rng }));
    let p256: &'static kx::P256 = Box::leak(Box::new(kx::P256 { rng }));
    CryptoProvider {
        cipher_suites: ALL_SUITES.to_vec(),
        kx_groups: vec![x25519, p256],
        signature_verification_algorithms: verify::ALGORITHMS,
        secure_random: rng,
        key_provider: &sign::Keys,
    }
}

/// The provider of the client ([`crate::client`]): the same, verifying RSA signatures too
/// with feature `rsa-verify` (the Web PKI's roots and intermediates are RSA as often as
/// not).
pub fn client_provider(rng: &'static dyn SecureRandom) -> CryptoProvider {
    #[allow(unused_mut)]
    let mut p = provider(rng);
    #[cfg(feature = "rsa-verify")]
    {
        p.signature_verification_algorithms = verify::CLIENT_ALGORITHMS;
    }
    p
}

#[cfg(test)]
mod tests;
#[cfg(all(test, target_arch = "x86_64"))]
mod tests_gcm;
