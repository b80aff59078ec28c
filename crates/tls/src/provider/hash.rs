//! SHA-256 and SHA-384 (the `sha2` crate) as rustls's `hash::Hash`: the transcript hash of
//! every suite (SHA-256 for the AES-128-GCM and ChaCha20-Poly1305 suites, SHA-384 for
//! AES-256-GCM).

use alloc::boxed::Box;

use rustls::crypto::hash::{Context, Hash, HashAlgorithm, Output};
use sha2::Digest;

macro_rules! hash {
    ($name:ident, $ctx:ident, $digest:ty, $alg:expr) => {
        /// The hash as rustls's provider trait.
        pub(crate) struct $name;

        impl Hash for $name {
            fn start(&self) -> Box<dyn Context> {
                Box::new($ctx(<$digest>::new()))
            }

            fn hash(&self, data: &[u8]) -> Output {
                Output::new(&<$digest>::digest(data)[..])
            }

            fn algorithm(&self) -> HashAlgorithm {
                $alg
            }

            fn output_len(&self) -> usize {
                <$digest as Digest>::output_size()
            }
        }

        struct $ctx($digest);

        impl Context for $ctx {
            fn fork_finish(&self) -> Output {
                Output::new(&self.0.clone().finalize()[..])
            }

            fn fork(&self) -> Box<dyn Context> {
                Box::new(Self(self.0.clone()))
            }

            fn finish(self: Box<Self>) -> Output {
                Output::new(&self.0.finalize()[..])
            }

            fn update(&mut self, data: &[u8]) {
                self.0.update(data);
            }
        }
    };
}

hash!(Sha256, Sha256Context, sha2::Sha256, HashAlgorithm::SHA256);
hash!(Sha384, Sha384Context, sha2::Sha384, HashAlgorithm::SHA384);
