//! HMAC-SHA-256 and HMAC-SHA-384 (the `hmac` crate) as rustls's `hmac::Hmac`. rustls builds
//! HKDF (TLS 1.3's key schedule, RFC 5869) and the TLS 1.2 PRF (RFC 5246 §5) on these, with
//! its `HkdfUsingHmac` and `PrfUsingHmac`.

use alloc::boxed::Box;

use hmac::{digest::KeyInit, Hmac as HmacOf, Mac};
use rustls::crypto::hmac::{Hmac, Key, Tag};
use sha2::Digest;

macro_rules! hmac {
    ($name:ident, $key:ident, $digest:ty) => {
        /// HMAC over the hash, as rustls's provider trait.
        pub(crate) struct $name;

        impl Hmac for $name {
            fn with_key(&self, key: &[u8]) -> Box<dyn Key> {
                // HMAC takes a key of any length (longer ones are hashed first): this
                // cannot fail.
                let mac = match <HmacOf<$digest> as KeyInit>::new_from_slice(key) {
                    Ok(mac) => mac,
                    Err(_) => <HmacOf<$digest> as KeyInit>::new(&Default::default()),
                };
                Box::new($key(mac))
            }

            fn hash_output_len(&self) -> usize {
                <$digest as Digest>::output_size()
            }
        }

        struct $key(HmacOf<$digest>);

        impl Key for $key {
            fn sign_concat(&self, first: &[u8], middle: &[&[u8]], last: &[u8]) -> Tag {
                let mut ctx = self.0.clone();
                ctx.update(first);
                for m in middle {
                    ctx.update(m);
                }
                ctx.update(last);
                Tag::new(&ctx.finalize().into_bytes()[..])
            }

            fn tag_len(&self) -> usize {
                <$digest as Digest>::output_size()
            }
        }
    };
}

hmac!(HmacSha256, HmacSha256Key, sha2::Sha256);
hmac!(HmacSha384, HmacSha384Key, sha2::Sha384);
