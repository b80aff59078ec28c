//! bareweb's ACME client (RFC 8555), the parts that need no network: everything the server
//! signs, sends and reads when it asks a certificate authority for a certificate.
//!
//! - [`jose`]: the account key (ECDSA P-256), its JWK and thumbprint (RFC 7638), the
//!   flattened JWS every request carries (ES256, RFC 7515/7518), key authorizations;
//! - [`document`]: the CA's JSON documents (directory, account, order, authorization,
//!   challenge, problem, renewal information), read by serde_json and then checked: a
//!   hostile CA's document is refused with a reason, never trusted into a URL or a file;
//! - [`csr`]: the certificate key and the PKCS #10 request for the names (RFC 2986), and
//!   the TLS-ALPN-01 challenge certificate (RFC 8737);
//! - [`chain`]: the certificate chain the CA issues (PEM), checked against our key and
//!   names, and its lifetime;
//! - [`order`]: the order as a state machine: responses and time in, requests and events
//!   (publish an answer, install a certificate, a failure and its next try) out;
//! - [`store`]: the state kept (account key, certificate and key) as a checksummed record,
//!   written in turn to two slots on the bare machine so a torn write loses nothing.
//!
//! `no_std` + `alloc`: the same code runs on the host and in the bare-machine kernel. It
//! has no socket, clock or randomness of its own: the caller gives keys' random bits and
//! the time (docs/design/acme.md).

#![cfg_attr(not(test), no_std)]
#![deny(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

pub mod chain;
pub mod csr;
pub mod document;
pub mod jose;
pub mod order;
pub mod store;
