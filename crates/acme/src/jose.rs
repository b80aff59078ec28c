//! JOSE for ACME (RFC 8555 §6.2): the account key (ECDSA P-256, the only key type
//! written), its JWK in RFC 7638's canonical form and thumbprint, the flattened JWS
//! every POST carries, signed ES256 (deterministic, RFC 6979: no randomness needed), and
//! key authorizations (§8.1).

use alloc::string::String;
use alloc::vec::Vec;

use base64ct::{Base64UrlUnpadded, Encoding};
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};
use p256::pkcs8::{DecodePrivateKey, EncodePrivateKey};
use serde::Serialize;
use sha2::{Digest, Sha256};

/// Why a key was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyError {
    /// The random bits are not a valid P-256 scalar (zero or not below the order): draw
    /// again.
    Scalar,
    /// The stored key is not a PKCS #8 P-256 key.
    Stored,
}

/// base64url without padding (RFC 7515 §2).
pub fn b64(bytes: &[u8]) -> String {
    Base64UrlUnpadded::encode_string(bytes)
}

/// An ECDSA P-256 key: the ACME account's, or a certificate's.
#[derive(Clone)]
pub struct Key {
    key: SigningKey,
}

impl Key {
    /// The key whose secret scalar is `random` (32 random bytes from the platform).
    pub fn from_random(random: &[u8; 32]) -> Result<Key, KeyError> {
        SigningKey::from_bytes(random.into())
            .map(|key| Key { key })
            .map_err(|_| KeyError::Scalar)
    }

    /// The key as stored: PKCS #8 DER (what [`Key::to_pkcs8`] wrote).
    pub fn from_pkcs8(der: &[u8]) -> Result<Key, KeyError> {
        SigningKey::from_pkcs8_der(der)
            .map(|key| Key { key })
            .map_err(|_| KeyError::Stored)
    }

    /// The key for storing: PKCS #8 DER. Secret: the caller keeps it unreadable to others.
    pub fn to_pkcs8(&self) -> Vec<u8> {
        match self.key.to_pkcs8_der() {
            Ok(doc) => doc.as_bytes().to_vec(),
            // Encoding a valid key into a fresh buffer does not fail.
            Err(_) => Vec::new(),
        }
    }

    /// The key as PEM ("PRIVATE KEY"), as TLS servers and openssl read it.
    pub fn to_pkcs8_pem(&self) -> String {
        match self.key.to_pkcs8_pem(Default::default()) {
            Ok(pem) => String::from(pem.as_str()),
            Err(_) => String::new(),
        }
    }

    /// The signing key itself.
    pub fn signing_key(&self) -> &SigningKey {
        &self.key
    }

    /// The public point's coordinates, 32 bytes each.
    fn xy(&self) -> ([u8; 32], [u8; 32]) {
        let point = self.key.verifying_key().to_encoded_point(false);
        let mut x = [0u8; 32];
        let mut y = [0u8; 32];
        if let (Some(px), Some(py)) = (point.x(), point.y()) {
            x.copy_from_slice(px);
            y.copy_from_slice(py);
        }
        (x, y)
    }

    /// The public key as a JWK, members in lexicographic order with no white space: the
    /// form RFC 7638 §3 hashes, and a valid JWK to send.
    pub fn jwk(&self) -> String {
        let (x, y) = self.xy();
        let mut s = String::from("{\"crv\":\"P-256\",\"kty\":\"EC\",\"x\":\"");
        s.push_str(&b64(&x));
        s.push_str("\",\"y\":\"");
        s.push_str(&b64(&y));
        s.push_str("\"}");
        s
    }

    /// The JWK thumbprint (RFC 7638): base64url of SHA-256 of the canonical JWK.
    pub fn thumbprint(&self) -> String {
        b64(&Sha256::digest(self.jwk().as_bytes()))
    }

    /// The key authorization for a challenge's token (RFC 8555 §8.1): what HTTP-01 serves
    /// and TLS-ALPN-01 hashes.
    pub fn key_authorization(&self, token: &str) -> String {
        let mut s = String::from(token);
        s.push('.');
        s.push_str(&self.thumbprint());
        s
    }

    /// ES256 over `data`: r and s, 32 bytes each (RFC 7518 §3.4).
    pub fn sign_raw(&self, data: &[u8]) -> [u8; 64] {
        let sig: Signature = self.key.sign(data);
        let mut out = [0u8; 64];
        out.copy_from_slice(&sig.to_bytes());
        out
    }

    /// The flattened JWS JSON (RFC 8555 §6.2) of a POST to `url` with `nonce`: identified
    /// by `kid` (the account URL) or, for newAccount, by this key's JWK. `payload` is the
    /// JSON to send; `None` is a POST-as-GET (§6.3), whose payload is empty.
    pub fn jws(&self, url: &str, nonce: &str, kid: Option<&str>, payload: Option<&[u8]>) -> String {
        #[derive(Serialize)]
        struct Protected<'a> {
            alg: &'static str,
            #[serde(skip_serializing_if = "Option::is_none")]
            kid: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            jwk: Option<&'a serde_json::value::RawValue>,
            nonce: &'a str,
            url: &'a str,
        }
        let jwk = self.jwk();
        let raw = serde_json::value::RawValue::from_string(jwk).ok();
        let protected = Protected {
            alg: "ES256",
            kid,
            jwk: if kid.is_none() { raw.as_deref() } else { None },
            nonce,
            url,
        };
        let header = serde_json::to_vec(&protected).unwrap_or_default();
        let protected = b64(&header);
        let payload = payload.map(b64).unwrap_or_default();
        let mut signing_input = String::with_capacity(protected.len() + 1 + payload.len());
        signing_input.push_str(&protected);
        signing_input.push('.');
        signing_input.push_str(&payload);
        let signature = b64(&self.sign_raw(signing_input.as_bytes()));
        #[derive(Serialize)]
        struct Flattened<'a> {
            protected: &'a str,
            payload: &'a str,
            signature: &'a str,
        }
        serde_json::to_string(&Flattened {
            protected: &protected,
            payload: &payload,
            signature: &signature,
        })
        .unwrap_or_default()
    }
}

#[cfg(test)]
pub(crate) mod tests;
