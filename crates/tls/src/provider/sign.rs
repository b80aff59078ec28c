//! The server's signing key: ECDSA over P-256 with SHA-256 or P-384 with SHA-384 (`p256`,
//! `p384`; the `ecdsa` crate's deterministic nonces, RFC 6979, so no randomness is needed to
//! sign), loaded from PKCS#8 or SEC1 DER. RSA keys are refused with the reason
//! ([`KeyError::Rsa`]): the pure-Rust RSA crate's signing is not constant-time (the Marvin
//! attack, RUSTSEC-2023-0071), and bareweb has no OS crypto library to sign with instead.

use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt;

use p256::pkcs8::{AssociatedOid, DecodePrivateKey, ObjectIdentifier, PrivateKeyInfo};
use rustls::crypto::KeyProvider;
use rustls::pki_types::{alg_id, PrivateKeyDer, SubjectPublicKeyInfoDer};
use rustls::sign::{public_key_to_spki, Signer, SigningKey};
use rustls::{SignatureAlgorithm, SignatureScheme};

/// Why a private key was not taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyError {
    /// An RSA key (PKCS#1, or PKCS#8 with rsaEncryption or RSASSA-PSS).
    Rsa,
    /// An EC key on a curve other than P-256 and P-384.
    UnsupportedCurve,
    /// A key of another algorithm (Ed25519, DSA, …).
    UnsupportedAlgorithm,
    /// The DER does not parse as the key it says it is.
    Malformed,
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Rsa => {
                "RSA keys are refused: RSA signing in pure Rust is not constant-time (the \
                 Marvin attack, RUSTSEC-2023-0071) and bareweb uses no OS crypto library. Use \
                 an ECDSA key: `openssl ecparam -genkey -name prime256v1 -noout -out key.pem` \
                 (or -name secp384r1) and a certificate for it"
            }
            Self::UnsupportedCurve => {
                "the EC key is on an unsupported curve: use P-256 (prime256v1) or P-384 \
                 (secp384r1)"
            }
            Self::UnsupportedAlgorithm => {
                "the key's algorithm is not supported: use an ECDSA P-256 or P-384 key"
            }
            Self::Malformed => "the private key does not parse",
        })
    }
}

/// rsaEncryption (RFC 8017 A.1).
const RSA_ENCRYPTION: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
/// id-RSASSA-PSS (RFC 8017 A.2.3).
const RSASSA_PSS: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.10");
/// id-ecPublicKey (RFC 5480 §2.1.1).
const EC_PUBLIC_KEY: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");

/// An ECDSA signing key of the server.
#[derive(Clone)]
pub enum EcdsaKey {
    /// P-256, signing ECDSA_NISTP256_SHA256.
    P256(Arc<p256::ecdsa::SigningKey>),
    /// P-384, signing ECDSA_NISTP384_SHA384.
    P384(Arc<p384::ecdsa::SigningKey>),
}

impl fmt::Debug for EcdsaKey {
    // Never the key itself.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::P256(_) => "EcdsaKey(P-256)",
            Self::P384(_) => "EcdsaKey(P-384)",
        })
    }
}

impl EcdsaKey {
    /// Takes a private key in DER: PKCS#8 or SEC1, P-256 or P-384; anything else is a
    /// [`KeyError`].
    pub fn from_der(key: &PrivateKeyDer<'_>) -> Result<Self, KeyError> {
        match key {
            PrivateKeyDer::Pkcs1(_) => Err(KeyError::Rsa),
            PrivateKeyDer::Pkcs8(der) => {
                let der = der.secret_pkcs8_der();
                let info = PrivateKeyInfo::try_from(der).map_err(|_| KeyError::Malformed)?;
                let oid = info.algorithm.oid;
                if oid == RSA_ENCRYPTION || oid == RSASSA_PSS {
                    return Err(KeyError::Rsa);
                }
                if oid != EC_PUBLIC_KEY {
                    return Err(KeyError::UnsupportedAlgorithm);
                }
                let curve = info
                    .algorithm
                    .parameters_oid()
                    .map_err(|_| KeyError::Malformed)?;
                if curve == p256::NistP256::OID {
                    p256::ecdsa::SigningKey::from_pkcs8_der(der)
                        .map(|k| Self::P256(Arc::new(k)))
                        .map_err(|_| KeyError::Malformed)
                } else if curve == p384::NistP384::OID {
                    p384::ecdsa::SigningKey::from_pkcs8_der(der)
                        .map(|k| Self::P384(Arc::new(k)))
                        .map_err(|_| KeyError::Malformed)
                } else {
                    Err(KeyError::UnsupportedCurve)
                }
            }
            PrivateKeyDer::Sec1(der) => {
                let der = der.secret_sec1_der();
                // The curve is in the key's parameters; its private scalar's length tells
                // P-256 (32 bytes) from P-384 (48) when they are left out.
                if let Ok(k) = p256::SecretKey::from_sec1_der(der) {
                    Ok(Self::P256(Arc::new(k.into())))
                } else if let Ok(k) = p384::SecretKey::from_sec1_der(der) {
                    Ok(Self::P384(Arc::new(k.into())))
                } else {
                    Err(KeyError::UnsupportedCurve)
                }
            }
            _ => Err(KeyError::UnsupportedAlgorithm),
        }
    }

    /// The TLS signature scheme this key signs with.
    pub fn scheme(&self) -> SignatureScheme {
        match self {
            Self::P256(_) => SignatureScheme::ECDSA_NISTP256_SHA256,
            Self::P384(_) => SignatureScheme::ECDSA_NISTP384_SHA384,
        }
    }

    /// Signs `message` (hashed with the curve's hash), the signature in DER as TLS sends
    /// it. Deterministic: the same key and message give the same signature (RFC 6979).
    pub fn sign_der(&self, message: &[u8]) -> Result<Vec<u8>, rustls::Error> {
        use p256::ecdsa::signature::Signer as _;
        let failed = |_| rustls::Error::General("ECDSA signing failed".into());
        match self {
            Self::P256(k) => {
                let sig: p256::ecdsa::Signature = k.try_sign(message).map_err(failed)?;
                Ok(sig.to_der().as_bytes().to_vec())
            }
            Self::P384(k) => {
                let sig: p384::ecdsa::Signature = k.try_sign(message).map_err(failed)?;
                Ok(sig.to_der().as_bytes().to_vec())
            }
        }
    }

    /// The public key as a SubjectPublicKeyInfo, for rustls's check that the key matches
    /// the certificate.
    pub fn spki(&self) -> SubjectPublicKeyInfoDer<'static> {
        match self {
            Self::P256(k) => public_key_to_spki(
                &alg_id::ECDSA_P256,
                k.verifying_key().to_encoded_point(false),
            ),
            Self::P384(k) => public_key_to_spki(
                &alg_id::ECDSA_P384,
                k.verifying_key().to_encoded_point(false),
            ),
        }
    }
}

impl SigningKey for EcdsaKey {
    fn choose_scheme(&self, offered: &[SignatureScheme]) -> Option<Box<dyn Signer>> {
        offered
            .contains(&self.scheme())
            .then(|| Box::new(self.clone()) as Box<dyn Signer>)
    }

    fn public_key(&self) -> Option<SubjectPublicKeyInfoDer<'_>> {
        Some(self.spki())
    }

    fn algorithm(&self) -> SignatureAlgorithm {
        SignatureAlgorithm::ECDSA
    }
}

impl Signer for EcdsaKey {
    fn sign(&self, message: &[u8]) -> Result<Vec<u8>, rustls::Error> {
        self.sign_der(message)
    }

    fn scheme(&self) -> SignatureScheme {
        EcdsaKey::scheme(self)
    }
}

/// rustls's `KeyProvider`: ECDSA keys only, others refused with [`KeyError`]'s reason.
#[derive(Debug)]
pub struct Keys;

impl KeyProvider for Keys {
    fn load_private_key(
        &self,
        key_der: PrivateKeyDer<'static>,
    ) -> Result<Arc<dyn SigningKey>, rustls::Error> {
        EcdsaKey::from_der(&key_der)
            .map(|k| Arc::new(k) as Arc<dyn SigningKey>)
            .map_err(|e| rustls::Error::General(alloc::format!("{e}")))
    }
}
