//! Session tickets (TLS 1.3 PSK tickets, RFC 8446 §4.6.1, and TLS 1.2 session tickets,
//! RFC 5077): rustls's `ProducesTickets` on AES-256-GCM, with a key shared by every
//! connection of every core and rotated on a schedule.
//!
//! Time is cut into periods of `lifetime` seconds; the key of the current period seals new
//! tickets, and the key of the one before still opens them, so a ticket lives at least one
//! period and at most two. Each key is fresh randomness, dropped two periods after it was
//! made: a key read out of memory opens no older ticket (forward secrecy for resumption,
//! as RFC 8446 §C.4 and RFC 5077 §5.5 ask). A ticket is the key's period number (8 bytes,
//! so an unknown key is found without trying), a random 12-byte nonce, the sealed state and
//! the tag; anything else, or a ticket of an unknown period, is refused and the handshake
//! falls back to a full one.
//!
//! The keys sit behind a spin read-write lock: taken only when a ticket is sealed or opened
//! (once per handshake, never per record), for writing once a period.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt;

use aes_gcm::aead::{AeadInPlace, KeyInit};
use aes_gcm::Aes256Gcm;
use rustls::crypto::SecureRandom;
use rustls::server::ProducesTickets;
use rustls::time_provider::TimeProvider;

const PERIOD_LEN: usize = 8;
const NONCE_LEN: usize = 12;
const TAG_LEN: usize = 16;
/// The most a ticket's sealed state may be (rustls's are a few hundred bytes).
const MAX_TICKET: usize = 2048;

struct Key {
    period: u64,
    aead: Aes256Gcm,
}

struct Keys {
    current: Key,
    previous: Option<Key>,
}

/// The ticket sealer: one per server, shared (`Arc`) by all connections and cores.
pub struct Ticketer {
    rng: &'static dyn SecureRandom,
    time: Arc<dyn TimeProvider>,
    lifetime: u32,
    keys: spin::RwLock<Keys>,
}

impl fmt::Debug for Ticketer {
    // Never the keys.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ticketer")
            .field("lifetime", &self.lifetime)
            .finish_non_exhaustive()
    }
}

impl Ticketer {
    /// A ticketer whose keys change every `lifetime` seconds (at least 1) of `time`.
    pub fn new(
        rng: &'static dyn SecureRandom,
        time: Arc<dyn TimeProvider>,
        lifetime: u32,
    ) -> Result<Self, rustls::Error> {
        let lifetime = lifetime.max(1);
        let period = period_at(&*time, lifetime);
        let current = new_key(rng, period)?;
        Ok(Self {
            rng,
            time,
            lifetime,
            keys: spin::RwLock::new(Keys {
                current,
                previous: None,
            }),
        })
    }

    fn now(&self) -> u64 {
        period_at(&*self.time, self.lifetime)
    }

    /// Moves the keys on to period `now` if it has come: the current key becomes the
    /// previous one (or is dropped, if more than one period has passed).
    fn rotate(&self, now: u64) {
        if self.keys.read().current.period >= now {
            return;
        }
        let Ok(fresh) = new_key(self.rng, now) else {
            // Without randomness the old key stays; tickets keep working.
            return;
        };
        let mut keys = self.keys.write();
        if keys.current.period >= now {
            return;
        }
        let old = core::mem::replace(&mut keys.current, fresh);
        keys.previous = (old.period + 1 == now).then_some(old);
    }
}

fn period_at(time: &dyn TimeProvider, lifetime: u32) -> u64 {
    time.current_time()
        .map_or(0, |t| t.as_secs() / u64::from(lifetime))
}

fn new_key(rng: &dyn SecureRandom, period: u64) -> Result<Key, rustls::Error> {
    let mut raw = [0u8; 32];
    rng.fill(&mut raw)?;
    let aead = Aes256Gcm::new_from_slice(&raw).map_err(|_| rustls::Error::EncryptError);
    raw.fill(0);
    Ok(Key {
        period,
        aead: aead?,
    })
}

impl ProducesTickets for Ticketer {
    fn enabled(&self) -> bool {
        true
    }

    fn lifetime(&self) -> u32 {
        self.lifetime
    }

    fn encrypt(&self, plain: &[u8]) -> Option<Vec<u8>> {
        if plain.len() > MAX_TICKET {
            return None;
        }
        self.rotate(self.now());
        let mut nonce = [0u8; NONCE_LEN];
        self.rng.fill(&mut nonce).ok()?;
        let keys = self.keys.read();
        let mut out = Vec::with_capacity(PERIOD_LEN + NONCE_LEN + plain.len() + TAG_LEN);
        out.extend_from_slice(&keys.current.period.to_be_bytes());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(plain);
        let (head, body) = out.split_at_mut(PERIOD_LEN + NONCE_LEN);
        let tag = keys
            .current
            .aead
            .encrypt_in_place_detached((&nonce).into(), &head[..PERIOD_LEN], body)
            .ok()?;
        out.extend_from_slice(&tag);
        Some(out)
    }

    fn decrypt(&self, cipher: &[u8]) -> Option<Vec<u8>> {
        if cipher.len() < PERIOD_LEN + NONCE_LEN + TAG_LEN
            || cipher.len() > PERIOD_LEN + NONCE_LEN + MAX_TICKET + TAG_LEN
        {
            return None;
        }
        self.rotate(self.now());
        let (period_bytes, rest) = cipher.split_at(PERIOD_LEN);
        let period = u64::from_be_bytes(period_bytes.try_into().ok()?);
        let (nonce, rest) = rest.split_at(NONCE_LEN);
        let (sealed, tag) = rest.split_at(rest.len() - TAG_LEN);
        let keys = self.keys.read();
        let key = [Some(&keys.current), keys.previous.as_ref()]
            .into_iter()
            .flatten()
            .find(|k| k.period == period)?;
        let mut plain = sealed.to_vec();
        key.aead
            .decrypt_in_place_detached(nonce.into(), period_bytes, &mut plain, tag.into())
            .ok()?;
        Some(plain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{FixedTime, TestRandom};
    use alloc::vec;
    use core::sync::atomic::Ordering;

    static RNG: TestRandom = TestRandom::new(7);

    #[test]
    fn seals_opens_and_rotates() {
        let time = Arc::new(FixedTime::new(1_000_000));
        let t = Ticketer::new(&RNG, time.clone(), 3600).unwrap();
        let a = t.encrypt(b"state one").unwrap();
        assert_eq!(a.len(), 8 + 12 + 9 + 16);
        assert_eq!(t.decrypt(&a).unwrap(), b"state one");
        // A flipped bit anywhere is refused.
        for i in 0..a.len() {
            let mut bad = a.clone();
            bad[i] ^= 1;
            assert!(t.decrypt(&bad).is_none(), "bit flip at {i} accepted");
        }
        // Next period: the old ticket still opens, new ones use a new key.
        time.secs.fetch_add(3600, Ordering::Relaxed);
        let b = t.encrypt(b"state two").unwrap();
        assert_ne!(a[..8], b[..8]);
        assert_eq!(t.decrypt(&a).unwrap(), b"state one");
        // Two periods on: the first key is gone.
        time.secs.fetch_add(3600, Ordering::Relaxed);
        assert!(t.decrypt(&a).is_none());
        assert_eq!(t.decrypt(&b).unwrap(), b"state two");
        // Garbage of every short length is refused.
        for n in 0..64 {
            assert!(t.decrypt(&vec![0xa5; n]).is_none());
        }
    }
}
