//! HTTPS on the bare machine: what the platform gives rustls, and the engine's HTTPS
//! listener built from the image's certificate and key.
//!
//! - [`Csprng`]: rustls's `SecureRandom`, a ChaCha20 generator with fast key erasure
//!   (D. J. Bernstein, "Fast-key-erasure random-number generators", 2017: each request
//!   draws its bytes and a new key from one keystream, and the old key is overwritten, so
//!   memory read later reveals no earlier output), seeded with 256 bits from RDSEED, else
//!   RDRAND (CPUID-checked, each retry loop bounded), and stirred with more every
//!   [`RESEED_EVERY`] requests. A CPU with neither instruction gets no HTTPS: the boot says
//!   so and serves plain HTTP only if HTTPS was not asked for, else stops.
//! - [`RtcTime`]: rustls's `TimeProvider`, the CMOS RTC read at boot plus TSC seconds since
//!   (the same wall clock as the engine's `Date` header, `TscClock::unix_secs`).
//! - [`listen`]: the engine's `TlsListen` from the PEMs the image carries
//!   (`bareweb_settings::tls_payload`), with the same checks as `serve`; its sessions'
//!   maker ([`Guarded`]) makes none when the heap is nearly used up ([`RESERVE`]).
//!
//! The generator is one for all cores behind a spin lock, taken once per `fill` (key
//! shares, ticket nonces, the server random: a handshake's few calls, never a record).

use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
use core::fmt;
use core::sync::atomic::{AtomicU64, Ordering};
use core::time::Duration;

use bareweb_engine::nic::Clock;
use bareweb_engine::server::tls::rustls_session::Acceptor;
use bareweb_engine::server::tls::{TlsAcceptor, TlsListen, TlsSession};
use bareweb_tls::rustls::crypto::{GetRandomFailed, SecureRandom};
use bareweb_tls::rustls::pki_types::UnixTime;
use bareweb_tls::rustls::time_provider::TimeProvider;
use bareweb_tls::{MinVersion, Options, Platform, TlsServer};
use chacha20::cipher::{KeyIvInit, StreamCipher};
use chacha20::ChaCha20;

/// The certificate chain and key the image carries (PEM).
pub type Pems = (&'static [u8], &'static [u8]);

/// Requests between two stirs of fresh hardware randomness into the key.
pub const RESEED_EVERY: u32 = 1024;

/// Where the seed came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// RDSEED: the entropy conditioner's output.
    Rdseed,
    /// RDRAND: the CPU's DRBG (RDSEED absent or dry).
    Rdrand,
}

impl Source {
    /// The instruction's name.
    pub fn name(self) -> &'static str {
        match self {
            Source::Rdseed => "RDSEED",
            Source::Rdrand => "RDRAND",
        }
    }
}

/// 256 bits from `word` (four 64-bit draws), or `None` if a draw fails.
pub fn seed_from(mut word: impl FnMut() -> Option<u64>) -> Option<[u8; 32]> {
    let mut seed = [0u8; 32];
    for chunk in seed.chunks_exact_mut(8) {
        chunk.copy_from_slice(&word()?.to_le_bytes());
    }
    Some(seed)
}

/// A seed from the CPU: RDSEED when it has it and it delivers, else RDRAND; `None` on a
/// CPU with neither (or both failing every bounded retry).
fn hardware_seed() -> Option<([u8; 32], Source)> {
    #[cfg(target_os = "none")]
    {
        use crate::arch::cpu::{rdrand, rdseed};
        if let Some(s) = seed_from(rdseed) {
            return Some((s, Source::Rdseed));
        }
        seed_from(rdrand).map(|s| (s, Source::Rdrand))
    }
    #[cfg(not(target_os = "none"))]
    None
}

/// Fills `dest` from the generator keyed by `key` and replaces `key` with the first 32
/// bytes of the same keystream (fast key erasure: the old key is gone once this returns).
pub fn generate(key: &mut [u8; 32], dest: &mut [u8]) {
    let mut c = ChaCha20::new(&(*key).into(), &[0u8; 12].into());
    let mut next = [0u8; 32];
    c.apply_keystream(&mut next);
    // A 32-bit block counter: 256 GiB of keystream per key, far beyond one request.
    dest.fill(0);
    c.apply_keystream(dest);
    *key = next;
    next.fill(0);
}

struct State {
    key: [u8; 32],
    since_stir: u32,
}

/// rustls's randomness on the bare machine (the module's doc).
pub struct Csprng {
    state: spin::Mutex<State>,
    source: Source,
    stir: fn() -> Option<[u8; 32]>,
}

impl fmt::Debug for Csprng {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the key.
        f.debug_struct("Csprng")
            .field("source", &self.source)
            .finish()
    }
}

impl Csprng {
    /// A generator seeded with `seed` from `source`; `stir` gives fresh bytes to mix into
    /// the key every [`RESEED_EVERY`] requests (a failed stir is skipped).
    pub fn new(seed: [u8; 32], source: Source, stir: fn() -> Option<[u8; 32]>) -> Csprng {
        Csprng {
            state: spin::Mutex::new(State {
                key: seed,
                since_stir: 0,
            }),
            source,
            stir,
        }
    }

    /// Seeded from the CPU (RDSEED, else RDRAND); `None` on a CPU with neither.
    pub fn from_cpu() -> Option<Csprng> {
        let (seed, source) = hardware_seed()?;
        Some(Csprng::new(seed, source, || hardware_seed().map(|s| s.0)))
    }

    /// Where the seed came from.
    pub fn source(&self) -> Source {
        self.source
    }
}

impl SecureRandom for Csprng {
    fn fill(&self, buf: &mut [u8]) -> Result<(), GetRandomFailed> {
        let mut s = self.state.lock();
        s.since_stir += 1;
        if s.since_stir >= RESEED_EVERY {
            s.since_stir = 0;
            if let Some(fresh) = (self.stir)() {
                for (k, f) in s.key.iter_mut().zip(fresh) {
                    *k ^= f;
                }
            }
        }
        generate(&mut s.key, buf);
        Ok(())
    }
}

/// rustls's wall clock on the bare machine: the engine's clock (RTC at boot + TSC).
#[derive(Debug, Clone, Copy)]
pub struct RtcTime<C>(pub C);

impl<C: Clock + fmt::Debug + Send + Sync> TimeProvider for RtcTime<C> {
    fn current_time(&self) -> Option<UnixTime> {
        // 0: the RTC said nonsense at boot; rustls then refuses what needs a date.
        let s = self.0.unix_secs();
        (s != 0).then(|| UnixTime::since_unix_epoch(Duration::from_secs(s)))
    }
}

/// Heap room below which no new TLS session is made (its connection is closed at its first
/// byte): a flood of handshakes cannot take the last of the heap, and the sessions
/// already running keep room to grow their buffers (a panic on a failed allocation would
/// stop the machine).
pub const RESERVE: u64 = 16 << 20;

/// Sessions not made for want of memory ([`RESERVE`]).
pub static NO_MEMORY: AtomicU64 = AtomicU64::new(0);

/// A sessions' maker (the image's certificate's, or ACME's renewable one) refusing new
/// sessions when the heap is nearly used up.
#[derive(Debug)]
pub struct Guarded<A>(pub A);

impl<A: TlsAcceptor> TlsAcceptor for Guarded<A> {
    fn accept(&self) -> Option<Box<dyn TlsSession>> {
        if crate::mem::room() < RESERVE {
            NO_MEMORY.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        self.0.accept()
    }

    fn certified(&self) -> bool {
        self.0.certified()
    }
}

/// The TLS server's options from the command line's (`tls_min=`).
pub fn options(tls: &bareweb_settings::Tls) -> Options {
    Options {
        min_version: if tls.min13 {
            MinVersion::Tls13
        } else {
            MinVersion::Tls12
        },
        ..Options::default()
    }
}

/// The engine's HTTPS listener from the image's PEMs, or why not (for the console;
/// never the key's bytes).
pub fn listen<C: Clock + fmt::Debug + Send + Sync + 'static>(
    tls: &bareweb_settings::Tls,
    cert: &[u8],
    key: &[u8],
    clock: C,
    random: &'static Csprng,
) -> Result<TlsListen, String> {
    let options = options(tls);
    let platform = Platform {
        random,
        time: Arc::new(RtcTime(clock)),
    };
    let server = TlsServer::new(cert, key, &options, &platform)
        .map_err(|e| alloc::format!("the image's certificate and key: {e}"))?;
    Ok(TlsListen {
        port: tls.port(),
        acceptor: Box::leak(Box::new(Guarded(Acceptor(server)))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generator_matches_chacha20_and_erases_its_key() {
        // RFC 8439 §2.4.2's key is not needed: the keystream of key K and nonce 0 is
        // what ChaCha20 gives; our output is its bytes 32.., the new key its first 32.
        let k0 = [7u8; 32];
        let mut stream = [0u8; 96];
        ChaCha20::new(&k0.into(), &[0u8; 12].into()).apply_keystream(&mut stream);
        let mut key = k0;
        let mut out = [0u8; 64];
        generate(&mut key, &mut out);
        assert_eq!(out[..], stream[32..]);
        assert_eq!(key[..], stream[..32]);
        // The next request uses the new key: different bytes, never a repeat.
        let mut again = [0u8; 64];
        generate(&mut key, &mut again);
        assert_ne!(out, again);
    }

    #[test]
    fn seeding_needs_four_good_draws_and_stirring_changes_the_stream() {
        let mut n = 0u64;
        let s = seed_from(|| {
            n += 1;
            Some(n)
        })
        .unwrap();
        assert_eq!(s[0], 1);
        assert_eq!(s[24], 4);
        let mut left = 2;
        assert_eq!(
            seed_from(|| {
                left -= 1;
                (left >= 0).then_some(5)
            }),
            None
        );
        let plain = Csprng::new([1; 32], Source::Rdrand, || None);
        let stirred = Csprng::new([1; 32], Source::Rdrand, || Some([9; 32]));
        let (mut a, mut b) = ([0u8; 16], [0u8; 16]);
        for _ in 0..RESEED_EVERY - 1 {
            plain.fill(&mut a).unwrap();
            stirred.fill(&mut b).unwrap();
            assert_eq!(a, b);
        }
        plain.fill(&mut a).unwrap();
        stirred.fill(&mut b).unwrap();
        assert_ne!(a, b);
        assert!(!alloc::format!("{plain:?}").contains("key"));
    }
}
