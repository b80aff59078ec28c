//! bareweb's TLS: TLS 1.3 (RFC 8446) and TLS 1.2 (RFC 5246, ECDHE with AEAD suites only) for
//! the engine, `no_std` + `alloc`, on every platform (host and bare machine).
//!
//! - [`provider`]: a rustls crypto provider of our own on maintained RustCrypto crates
//!   (X25519 and P-256 key exchange; AES-128-GCM, AES-256-GCM, ChaCha20-Poly1305; SHA-256/384,
//!   HMAC, HKDF; ECDSA P-256/P-384 keys, RSA refused with the reason);
//! - [`ticket`]: session tickets sealed with a shared, rotated key;
//! - [`client`]: the one client connection the server opens itself (ACME, to its CA),
//!   over rustls's unbuffered API with WebPKI verification;
//! - [`server`]: the server configuration and the per-connection driver (rustls's
//!   unbuffered API for the handshake, our own record layer after it), which the engine's
//!   TCP connection table calls;
//! - [`host`] (feature `std`): the host's randomness (getrandom) and clock.
//!
//! The platform supplies randomness (`rustls::crypto::SecureRandom`) and wall-clock time
//! (`rustls::time_provider::TimeProvider`); see docs/design/tls.md.

#![no_std]
// Unsafe code only in `provider::aesni` (the AES-GCM assembly), which allows it.
#![deny(unsafe_code)]

extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

pub mod client;
pub mod provider;
pub mod server;
pub mod ticket;

#[cfg(feature = "std")]
pub mod host;

#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use client::{ClientConn, ClientProgress, TlsClient};
pub use rustls;
pub use server::{
    Fatal, MinVersion, Options, Platform, Progress, SealError, ServerSlot, TlsConn, TlsServer,
};
