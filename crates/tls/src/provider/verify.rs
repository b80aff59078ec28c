//! ECDSA signature verification (P-256/SHA-256, P-384/SHA-384), for rustls's certificate
//! checks where this provider is a client's (the tests' and benchmarks' in-memory client);
//! the server asks no client certificate.

use p256::ecdsa::signature::Verifier;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{
    alg_id, AlgorithmIdentifier, InvalidSignature, SignatureVerificationAlgorithm,
};
use rustls::SignatureScheme;

/// The algorithms, by TLS signature scheme: ECDSA, and (feature `rsa-verify`, for the
/// client) RSA.
#[cfg(feature = "rsa-verify")]
pub static CLIENT_ALGORITHMS: WebPkiSupportedAlgorithms = WebPkiSupportedAlgorithms {
    all: &[
        P256_SHA256,
        P384_SHA384,
        rsa_verify::PKCS1_SHA256,
        rsa_verify::PKCS1_SHA384,
        rsa_verify::PKCS1_SHA512,
        rsa_verify::PSS_SHA256,
        rsa_verify::PSS_SHA384,
        rsa_verify::PSS_SHA512,
    ],
    mapping: &[
        (SignatureScheme::ECDSA_NISTP256_SHA256, &[P256_SHA256]),
        (SignatureScheme::ECDSA_NISTP384_SHA384, &[P384_SHA384]),
        (SignatureScheme::RSA_PSS_SHA256, &[rsa_verify::PSS_SHA256]),
        (SignatureScheme::RSA_PSS_SHA384, &[rsa_verify::PSS_SHA384]),
        (SignatureScheme::RSA_PSS_SHA512, &[rsa_verify::PSS_SHA512]),
        (
            SignatureScheme::RSA_PKCS1_SHA256,
            &[rsa_verify::PKCS1_SHA256],
        ),
        (
            SignatureScheme::RSA_PKCS1_SHA384,
            &[rsa_verify::PKCS1_SHA384],
        ),
        (
            SignatureScheme::RSA_PKCS1_SHA512,
            &[rsa_verify::PKCS1_SHA512],
        ),
    ],
};

#[cfg(feature = "rsa-verify")]
mod rsa_verify {
    //! RSA verification by the `rsa` crate: PKCS #1 v1.5 and PSS over SHA-2, keys of 2048
    //! to 4096 bits (the crate's own bound). Public keys and signatures only: no secret is handled, so the crate's
    //! timing advisory (decryption, RUSTSEC-2023-0071) does not apply.
    use rsa::pkcs1::DecodeRsaPublicKey;
    use rsa::signature::Verifier;
    use rsa::traits::PublicKeyParts;
    use rustls::pki_types::{
        alg_id, AlgorithmIdentifier, InvalidSignature, SignatureVerificationAlgorithm,
    };
    use sha2::{Sha256, Sha384, Sha512};

    #[derive(Debug, Clone, Copy)]
    enum Hash {
        S256,
        S384,
        S512,
    }

    #[derive(Debug)]
    struct Rsa {
        pss: bool,
        hash: Hash,
    }

    pub static PKCS1_SHA256: &dyn SignatureVerificationAlgorithm = &Rsa {
        pss: false,
        hash: Hash::S256,
    };
    pub static PKCS1_SHA384: &dyn SignatureVerificationAlgorithm = &Rsa {
        pss: false,
        hash: Hash::S384,
    };
    pub static PKCS1_SHA512: &dyn SignatureVerificationAlgorithm = &Rsa {
        pss: false,
        hash: Hash::S512,
    };
    pub static PSS_SHA256: &dyn SignatureVerificationAlgorithm = &Rsa {
        pss: true,
        hash: Hash::S256,
    };
    pub static PSS_SHA384: &dyn SignatureVerificationAlgorithm = &Rsa {
        pss: true,
        hash: Hash::S384,
    };
    pub static PSS_SHA512: &dyn SignatureVerificationAlgorithm = &Rsa {
        pss: true,
        hash: Hash::S512,
    };

    fn check<V: Verifier<S>, S>(v: V, sig: S, message: &[u8]) -> Result<(), InvalidSignature> {
        v.verify(message, &sig).map_err(|_| InvalidSignature)
    }

    impl SignatureVerificationAlgorithm for Rsa {
        fn public_key_alg_id(&self) -> AlgorithmIdentifier {
            alg_id::RSA_ENCRYPTION
        }

        fn signature_alg_id(&self) -> AlgorithmIdentifier {
            match (self.pss, self.hash) {
                (false, Hash::S256) => alg_id::RSA_PKCS1_SHA256,
                (false, Hash::S384) => alg_id::RSA_PKCS1_SHA384,
                (false, Hash::S512) => alg_id::RSA_PKCS1_SHA512,
                (true, Hash::S256) => alg_id::RSA_PSS_SHA256,
                (true, Hash::S384) => alg_id::RSA_PSS_SHA384,
                (true, Hash::S512) => alg_id::RSA_PSS_SHA512,
            }
        }

        fn verify_signature(
            &self,
            public_key: &[u8],
            message: &[u8],
            signature: &[u8],
        ) -> Result<(), InvalidSignature> {
            let key =
                rsa::RsaPublicKey::from_pkcs1_der(public_key).map_err(|_| InvalidSignature)?;
            if !(2048..=4096).contains(&key.size().saturating_mul(8)) {
                return Err(InvalidSignature);
            }
            if self.pss {
                let sig = rsa::pss::Signature::try_from(signature).map_err(|_| InvalidSignature)?;
                match self.hash {
                    Hash::S256 => check(rsa::pss::VerifyingKey::<Sha256>::new(key), sig, message),
                    Hash::S384 => check(rsa::pss::VerifyingKey::<Sha384>::new(key), sig, message),
                    Hash::S512 => check(rsa::pss::VerifyingKey::<Sha512>::new(key), sig, message),
                }
            } else {
                let sig =
                    rsa::pkcs1v15::Signature::try_from(signature).map_err(|_| InvalidSignature)?;
                use rsa::pkcs1v15::VerifyingKey as V;
                match self.hash {
                    Hash::S256 => check(V::<Sha256>::new(key), sig, message),
                    Hash::S384 => check(V::<Sha384>::new(key), sig, message),
                    Hash::S512 => check(V::<Sha512>::new(key), sig, message),
                }
            }
        }
    }
}

/// The algorithms, by TLS signature scheme.
pub static ALGORITHMS: WebPkiSupportedAlgorithms = WebPkiSupportedAlgorithms {
    all: &[P256_SHA256, P384_SHA384],
    mapping: &[
        (SignatureScheme::ECDSA_NISTP256_SHA256, &[P256_SHA256]),
        (SignatureScheme::ECDSA_NISTP384_SHA384, &[P384_SHA384]),
    ],
};

static P256_SHA256: &dyn SignatureVerificationAlgorithm = &EcdsaP256Sha256;
static P384_SHA384: &dyn SignatureVerificationAlgorithm = &EcdsaP384Sha384;

#[derive(Debug)]
struct EcdsaP256Sha256;

impl SignatureVerificationAlgorithm for EcdsaP256Sha256 {
    fn public_key_alg_id(&self) -> AlgorithmIdentifier {
        alg_id::ECDSA_P256
    }

    fn signature_alg_id(&self) -> AlgorithmIdentifier {
        alg_id::ECDSA_SHA256
    }

    fn verify_signature(
        &self,
        public_key: &[u8],
        message: &[u8],
        signature: &[u8],
    ) -> Result<(), InvalidSignature> {
        let key =
            p256::ecdsa::VerifyingKey::from_sec1_bytes(public_key).map_err(|_| InvalidSignature)?;
        let sig = p256::ecdsa::Signature::from_der(signature).map_err(|_| InvalidSignature)?;
        key.verify(message, &sig).map_err(|_| InvalidSignature)
    }
}

#[derive(Debug)]
struct EcdsaP384Sha384;

impl SignatureVerificationAlgorithm for EcdsaP384Sha384 {
    fn public_key_alg_id(&self) -> AlgorithmIdentifier {
        alg_id::ECDSA_P384
    }

    fn signature_alg_id(&self) -> AlgorithmIdentifier {
        alg_id::ECDSA_SHA384
    }

    fn verify_signature(
        &self,
        public_key: &[u8],
        message: &[u8],
        signature: &[u8],
    ) -> Result<(), InvalidSignature> {
        let key =
            p384::ecdsa::VerifyingKey::from_sec1_bytes(public_key).map_err(|_| InvalidSignature)?;
        let sig = p384::ecdsa::Signature::from_der(signature).map_err(|_| InvalidSignature)?;
        key.verify(message, &sig).map_err(|_| InvalidSignature)
    }
}
