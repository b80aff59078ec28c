//! Key exchange: X25519 (RFC 7748, `x25519-dalek`) and secp256r1 ECDH (`p256`), as rustls's
//! `SupportedKxGroup`s, for TLS 1.3 key shares and TLS 1.2 ECDHE alike.
//!
//! The private scalars come from the platform's `SecureRandom` (the groups hold it), not
//! from a global: the kernel's generator and the host's getrandom plug in the same way.
//! A peer's share that is not a valid point, and an X25519 result that is all zeros (a
//! low-order point, RFC 7748 §6.1), are refused as `InvalidKeyShare`.

use alloc::boxed::Box;
use alloc::vec::Vec;

use p256::elliptic_curve::sec1::ToEncodedPoint;
use rustls::crypto::{ActiveKeyExchange, SecureRandom, SharedSecret, SupportedKxGroup};
use rustls::{Error, NamedGroup, PeerMisbehaved};

/// X25519 with the platform's randomness.
#[derive(Debug)]
pub struct X25519 {
    /// Where the private scalar comes from.
    pub rng: &'static dyn SecureRandom,
}

/// secp256r1 (NIST P-256) ECDH with the platform's randomness.
#[derive(Debug)]
pub struct P256 {
    /// Where the private scalar comes from.
    pub rng: &'static dyn SecureRandom,
}

struct X25519Share {
    secret: x25519_dalek::StaticSecret,
    public: x25519_dalek::PublicKey,
}

impl SupportedKxGroup for X25519 {
    fn start(&self) -> Result<Box<dyn ActiveKeyExchange>, Error> {
        let mut bytes = [0u8; 32];
        self.rng.fill(&mut bytes)?;
        // Clamped by x25519-dalek when used (RFC 7748 §5).
        let secret = x25519_dalek::StaticSecret::from(bytes);
        bytes.fill(0);
        let public = x25519_dalek::PublicKey::from(&secret);
        Ok(Box::new(X25519Share { secret, public }))
    }

    fn name(&self) -> NamedGroup {
        NamedGroup::X25519
    }
}

impl ActiveKeyExchange for X25519Share {
    fn complete(self: Box<Self>, peer: &[u8]) -> Result<SharedSecret, Error> {
        let peer: [u8; 32] = peer
            .try_into()
            .map_err(|_| Error::from(PeerMisbehaved::InvalidKeyShare))?;
        let shared = self
            .secret
            .diffie_hellman(&x25519_dalek::PublicKey::from(peer));
        if !shared.was_contributory() {
            return Err(PeerMisbehaved::InvalidKeyShare.into());
        }
        Ok(SharedSecret::from(&shared.as_bytes()[..]))
    }

    fn pub_key(&self) -> &[u8] {
        self.public.as_bytes()
    }

    fn group(&self) -> NamedGroup {
        NamedGroup::X25519
    }
}

struct P256Share {
    secret: p256::NonZeroScalar,
    /// The uncompressed SEC1 point (65 bytes), as TLS sends it (RFC 8446 §4.2.8.2).
    public: Vec<u8>,
}

impl SupportedKxGroup for P256 {
    fn start(&self) -> Result<Box<dyn ActiveKeyExchange>, Error> {
        // A uniformly random 32-byte string is a valid scalar (nonzero, below the order)
        // except with probability about 2^-32; draw again then, a bounded number of times.
        for _ in 0..8 {
            let mut bytes = p256::FieldBytes::default();
            self.rng.fill(&mut bytes)?;
            let secret = p256::SecretKey::from_bytes(&bytes);
            bytes.fill(0);
            if let Ok(secret) = secret {
                let public = secret
                    .public_key()
                    .to_encoded_point(false)
                    .as_bytes()
                    .to_vec();
                return Ok(Box::new(P256Share {
                    secret: secret.to_nonzero_scalar(),
                    public,
                }));
            }
        }
        Err(Error::FailedToGetRandomBytes)
    }

    fn name(&self) -> NamedGroup {
        NamedGroup::secp256r1
    }
}

impl ActiveKeyExchange for P256Share {
    fn complete(self: Box<Self>, peer: &[u8]) -> Result<SharedSecret, Error> {
        // Only the uncompressed form is allowed in TLS (RFC 8446 §4.2.8.2, RFC 8422 §5.1.1).
        if peer.first() != Some(&4) {
            return Err(PeerMisbehaved::InvalidKeyShare.into());
        }
        let peer = p256::PublicKey::from_sec1_bytes(peer)
            .map_err(|_| Error::from(PeerMisbehaved::InvalidKeyShare))?;
        let shared = p256::ecdh::diffie_hellman(self.secret, peer.as_affine());
        Ok(SharedSecret::from(&shared.raw_secret_bytes()[..]))
    }

    fn pub_key(&self) -> &[u8] {
        &self.public
    }

    fn group(&self) -> NamedGroup {
        NamedGroup::secp256r1
    }
}
