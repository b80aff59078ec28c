//! The record ciphers: AES-128-GCM, AES-256-GCM and ChaCha20-Poly1305 (`chacha20poly1305`),
//! as rustls's TLS 1.3 (RFC 8446 §5.2) and TLS 1.2 (RFC 5288 for GCM, RFC 7905 for
//! ChaCha20-Poly1305) AEAD algorithms.
//!
//! AES-GCM ([`Gcm`]) runs on our AES-NI + PCLMULQDQ assembly ([`super::aesni`]) when the CPU
//! has those instructions (asked once, at the first key), on the host and in the kernel alike,
//! and on the `aes-gcm` crate's portable constant-time code otherwise.
//!
//! The nonce of every record is the connection's IV XORed with the record's sequence number
//! (TLS 1.3, and TLS 1.2 ChaCha20-Poly1305); TLS 1.2 GCM sends the last 8 bytes of that same
//! nonce as its explicit nonce, as rustls's own providers do. The same key and sequence number
//! therefore always give the same record bytes. Every length taken from a received record is
//! checked before use: a short or oversized record is a `DecryptError` or
//! `PeerSentOversizedRecord`, never a panic.

use alloc::boxed::Box;

use aes_gcm::aead::generic_array::GenericArray;
use aes_gcm::aead::{AeadCore, AeadInPlace, Key, KeyInit, KeySizeUser};
use aes_gcm::{Aes128Gcm, Aes256Gcm};
use chacha20poly1305::ChaCha20Poly1305;
use rustls::crypto::cipher::{
    make_tls12_aad, make_tls13_aad, AeadKey, InboundOpaqueMessage, InboundPlainMessage, Iv,
    KeyBlockShape, MessageDecrypter, MessageEncrypter, Nonce, OutboundOpaqueMessage,
    OutboundPlainMessage, PrefixedPayload, Tls12AeadAlgorithm, Tls13AeadAlgorithm,
    UnsupportedOperationError, NONCE_LEN,
};
use rustls::{ConnectionTrafficSecrets, ContentType, Error, ProtocolVersion};

/// The tag of all three AEADs.
pub const TAG_LEN: usize = 16;
/// TLS 1.2 GCM's explicit nonce on the wire (RFC 5288 §3).
pub const GCM_EXPLICIT_NONCE_LEN: usize = 8;
/// The largest plaintext of a record (RFC 8446 §5.1).
const MAX_FRAGMENT_LEN: usize = 16384;

/// One of the three record AEADs; each is both a TLS 1.3 and a TLS 1.2 algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alg {
    /// AES-128-GCM (NIST SP 800-38D).
    Aes128Gcm,
    /// AES-256-GCM.
    Aes256Gcm,
    /// ChaCha20-Poly1305 (RFC 8439).
    ChaCha20Poly1305,
}

impl Alg {
    fn key_len(self) -> usize {
        match self {
            Self::Aes128Gcm => 16,
            Self::Aes256Gcm | Self::ChaCha20Poly1305 => 32,
        }
    }

    /// The key's first `key_len` bytes (rustls hands exactly that many); an empty slice,
    /// which no cipher takes, if the key is shorter.
    fn key_of(self, key: &AeadKey) -> &[u8] {
        key.as_ref().get(..self.key_len()).unwrap_or_default()
    }

    fn secrets(self, key: AeadKey, iv: Iv) -> ConnectionTrafficSecrets {
        match self {
            Self::Aes128Gcm => ConnectionTrafficSecrets::Aes128Gcm { key, iv },
            Self::Aes256Gcm => ConnectionTrafficSecrets::Aes256Gcm { key, iv },
            Self::ChaCha20Poly1305 => ConnectionTrafficSecrets::Chacha20Poly1305 { key, iv },
        }
    }
}

/// Builds a cipher of the algorithm from rustls's key and hands it to `make`; a key of the
/// wrong length (rustls never gives one) becomes a cipher that fails every record.
macro_rules! with_cipher {
    ($alg:expr, $key:expr, $make:ident) => {
        match $alg {
            Alg::Aes128Gcm => $make::<Gcm<Aes128Gcm>>($key),
            Alg::Aes256Gcm => $make::<Gcm<Aes256Gcm>>($key),
            Alg::ChaCha20Poly1305 => $make::<ChaCha20Poly1305>($key),
        }
    };
}

/// What the record ciphers need of an AEAD.
pub trait RecordAead: AeadInPlace + KeyInit + Send + Sync + 'static {}
impl<A: AeadInPlace + KeyInit + Send + Sync + 'static> RecordAead for A {}

/// AES-GCM on the assembly of [`super::aesni`] if the CPU has AES-NI, PCLMULQDQ and SSSE3,
/// else on `S`, the `aes-gcm` crate's cipher of the same key size. Both give the same bytes.
// The record ciphers hold a `Gcm` inside their own box: one allocation per key either way.
#[allow(clippy::large_enum_variant)]
pub enum Gcm<S> {
    /// The assembly (x86-64 only).
    #[cfg(target_arch = "x86_64")]
    Ni(super::aesni::AesGcm),
    /// The crate.
    Soft(S),
}

impl<S: KeyInit> Gcm<S> {
    /// The crate's cipher even where the assembly could run: for tests and benches that
    /// compare the two.
    pub fn new_soft(key: &Key<S>) -> Self {
        Self::Soft(S::new(key))
    }
}

impl<S: KeySizeUser> KeySizeUser for Gcm<S> {
    type KeySize = S::KeySize;
}

impl<S: KeyInit> KeyInit for Gcm<S> {
    fn new(key: &Key<Self>) -> Self {
        #[cfg(target_arch = "x86_64")]
        if let Some(k) = super::aesni::AesGcm::new(key) {
            return Self::Ni(k);
        }
        Self::Soft(S::new(key))
    }
}

impl<S: AeadCore> AeadCore for Gcm<S> {
    type NonceSize = S::NonceSize;
    type TagSize = S::TagSize;
    type CiphertextOverhead = S::CiphertextOverhead;
}

impl<S: AeadInPlace> AeadInPlace for Gcm<S> {
    fn encrypt_in_place_detached(
        &self,
        nonce: &aes_gcm::aead::Nonce<Self>,
        aad: &[u8],
        buffer: &mut [u8],
    ) -> aes_gcm::aead::Result<aes_gcm::aead::Tag<Self>> {
        match self {
            #[cfg(target_arch = "x86_64")]
            Self::Ni(k) => {
                let nonce = <&[u8; NONCE_LEN]>::try_from(nonce.as_slice())
                    .map_err(|_| aes_gcm::aead::Error)?;
                let tag = k
                    .seal(nonce, aad, buffer)
                    .map_err(|_| aes_gcm::aead::Error)?;
                GenericArray::from_exact_iter(tag).ok_or(aes_gcm::aead::Error)
            }
            Self::Soft(s) => s.encrypt_in_place_detached(nonce, aad, buffer),
        }
    }

    fn decrypt_in_place_detached(
        &self,
        nonce: &aes_gcm::aead::Nonce<Self>,
        aad: &[u8],
        buffer: &mut [u8],
        tag: &aes_gcm::aead::Tag<Self>,
    ) -> aes_gcm::aead::Result<()> {
        match self {
            #[cfg(target_arch = "x86_64")]
            Self::Ni(k) => {
                let nonce = <&[u8; NONCE_LEN]>::try_from(nonce.as_slice())
                    .map_err(|_| aes_gcm::aead::Error)?;
                k.open(nonce, aad, buffer, tag)
                    .map_err(|_| aes_gcm::aead::Error)
            }
            Self::Soft(s) => s.decrypt_in_place_detached(nonce, aad, buffer, tag),
        }
    }
}

fn nonce_of<A: RecordAead>(n: &[u8; NONCE_LEN]) -> &aes_gcm::aead::Nonce<A> {
    aes_gcm::aead::Nonce::<A>::from_slice(n)
}

fn tag_of<A: RecordAead>(t: &[u8]) -> &aes_gcm::aead::Tag<A> {
    aes_gcm::aead::Tag::<A>::from_slice(t)
}

impl Tls13AeadAlgorithm for Alg {
    fn encrypter(&self, key: AeadKey, iv: Iv) -> Box<dyn MessageEncrypter> {
        fn make<A: RecordAead>((key, iv): (&[u8], Iv)) -> Box<dyn MessageEncrypter> {
            match A::new_from_slice(key) {
                Ok(aead) => Box::new(Tls13Cipher { aead, iv }),
                Err(_) => Box::new(Broken),
            }
        }
        with_cipher!(self, (self.key_of(&key), iv), make)
    }

    fn decrypter(&self, key: AeadKey, iv: Iv) -> Box<dyn MessageDecrypter> {
        fn make<A: RecordAead>((key, iv): (&[u8], Iv)) -> Box<dyn MessageDecrypter> {
            match A::new_from_slice(key) {
                Ok(aead) => Box::new(Tls13Cipher { aead, iv }),
                Err(_) => Box::new(Broken),
            }
        }
        with_cipher!(self, (self.key_of(&key), iv), make)
    }

    fn key_len(&self) -> usize {
        Alg::key_len(*self)
    }

    fn extract_keys(
        &self,
        key: AeadKey,
        iv: Iv,
    ) -> Result<ConnectionTrafficSecrets, UnsupportedOperationError> {
        Ok(self.secrets(key, iv))
    }
}

/// TLS 1.3's record protection: the inner content type follows the plaintext, the AAD is the
/// record header (RFC 8446 §5.2).
struct Tls13Cipher<A> {
    aead: A,
    iv: Iv,
}

impl<A: RecordAead> MessageEncrypter for Tls13Cipher<A> {
    fn encrypt(
        &mut self,
        m: OutboundPlainMessage<'_>,
        seq: u64,
    ) -> Result<OutboundOpaqueMessage, Error> {
        let total_len = self.encrypted_payload_len(m.payload.len());
        let mut payload = PrefixedPayload::with_capacity(total_len);
        payload.extend_from_chunks(&m.payload);
        payload.extend_from_slice(&m.typ.to_array());
        let nonce = Nonce::new(&self.iv, seq).0;
        let aad = make_tls13_aad(total_len);
        let tag = self
            .aead
            .encrypt_in_place_detached(nonce_of::<A>(&nonce), &aad, payload.as_mut())
            .map_err(|_| Error::EncryptError)?;
        payload.extend_from_slice(&tag);
        Ok(OutboundOpaqueMessage::new(
            ContentType::ApplicationData,
            ProtocolVersion::TLSv1_2,
            payload,
        ))
    }

    fn encrypted_payload_len(&self, payload_len: usize) -> usize {
        payload_len + 1 + TAG_LEN
    }
}

impl<A: RecordAead> MessageDecrypter for Tls13Cipher<A> {
    fn decrypt<'a>(
        &mut self,
        mut m: InboundOpaqueMessage<'a>,
        seq: u64,
    ) -> Result<InboundPlainMessage<'a>, Error> {
        let payload = &mut m.payload;
        // TLSCiphertext.length is at most 2^14 + 256 (RFC 8446 §5.2).
        if payload.len() > MAX_FRAGMENT_LEN + 256 {
            return Err(Error::PeerSentOversizedRecord);
        }
        let Some(plain_len) = payload.len().checked_sub(TAG_LEN) else {
            return Err(Error::DecryptError);
        };
        let nonce = Nonce::new(&self.iv, seq).0;
        let aad = make_tls13_aad(payload.len());
        let (body, tag) = payload.split_at_mut(plain_len);
        self.aead
            .decrypt_in_place_detached(nonce_of::<A>(&nonce), &aad, body, tag_of::<A>(tag))
            .map_err(|_| Error::DecryptError)?;
        payload.truncate(plain_len);
        m.into_tls13_unpadded_message()
    }
}

impl Tls12AeadAlgorithm for Alg {
    fn encrypter(&self, key: AeadKey, iv: &[u8], extra: &[u8]) -> Box<dyn MessageEncrypter> {
        fn make<A: RecordAead>(
            (key, iv, explicit): (&[u8], Option<Iv>, bool),
        ) -> Box<dyn MessageEncrypter> {
            match (A::new_from_slice(key), iv) {
                (Ok(aead), Some(iv)) => Box::new(Tls12Cipher { aead, iv, explicit }),
                _ => Box::new(Broken),
            }
        }
        let explicit = *self != Alg::ChaCha20Poly1305;
        let iv = if explicit {
            gcm_iv(iv, extra)
        } else {
            full_iv(iv)
        };
        with_cipher!(self, (self.key_of(&key), iv, explicit), make)
    }

    fn decrypter(&self, key: AeadKey, iv: &[u8]) -> Box<dyn MessageDecrypter> {
        fn make<A: RecordAead>(
            (key, iv, explicit): (&[u8], Option<Iv>, bool),
        ) -> Box<dyn MessageDecrypter> {
            match (A::new_from_slice(key), iv) {
                (Ok(aead), Some(iv)) => Box::new(Tls12Cipher { aead, iv, explicit }),
                _ => Box::new(Broken),
            }
        }
        let explicit = *self != Alg::ChaCha20Poly1305;
        // GCM's decrypter takes the nonce's last 8 bytes from each record: only the 4-byte
        // salt of the key block is the connection's.
        let iv = if explicit {
            gcm_iv(iv, &[0; GCM_EXPLICIT_NONCE_LEN])
        } else {
            full_iv(iv)
        };
        with_cipher!(self, (self.key_of(&key), iv, explicit), make)
    }

    fn key_block_shape(&self) -> KeyBlockShape {
        match self {
            Alg::ChaCha20Poly1305 => KeyBlockShape {
                enc_key_len: 32,
                fixed_iv_len: 12,
                explicit_nonce_len: 0,
            },
            gcm => KeyBlockShape {
                enc_key_len: gcm.key_len(),
                fixed_iv_len: 4,
                explicit_nonce_len: GCM_EXPLICIT_NONCE_LEN,
            },
        }
    }

    fn extract_keys(
        &self,
        key: AeadKey,
        iv: &[u8],
        explicit: &[u8],
    ) -> Result<ConnectionTrafficSecrets, UnsupportedOperationError> {
        let iv = match self {
            Alg::ChaCha20Poly1305 => full_iv(iv),
            _ => gcm_iv(iv, explicit),
        };
        iv.map(|iv| self.secrets(key, iv))
            .ok_or(UnsupportedOperationError)
    }
}

/// The 12-byte nonce base of TLS 1.2 GCM: the key block's 4-byte salt, then its 8-byte
/// explicit-nonce seed.
fn gcm_iv(salt: &[u8], explicit: &[u8]) -> Option<Iv> {
    let mut iv = [0; NONCE_LEN];
    if salt.len() != 4 || explicit.len() != GCM_EXPLICIT_NONCE_LEN {
        return None;
    }
    iv[..4].copy_from_slice(salt);
    iv[4..].copy_from_slice(explicit);
    Some(Iv::new(iv))
}

fn full_iv(iv: &[u8]) -> Option<Iv> {
    <[u8; NONCE_LEN]>::try_from(iv).ok().map(Iv::new)
}

/// TLS 1.2's record protection: the AAD is the sequence number and the plaintext's header
/// (RFC 5246 §6.2.3.3); GCM sends an explicit nonce before the ciphertext.
struct Tls12Cipher<A> {
    aead: A,
    iv: Iv,
    /// GCM (an 8-byte explicit nonce on the wire) rather than ChaCha20-Poly1305.
    explicit: bool,
}

impl<A: RecordAead> Tls12Cipher<A> {
    fn prefix(&self) -> usize {
        if self.explicit {
            GCM_EXPLICIT_NONCE_LEN
        } else {
            0
        }
    }
}

impl<A: RecordAead> MessageEncrypter for Tls12Cipher<A> {
    fn encrypt(
        &mut self,
        m: OutboundPlainMessage<'_>,
        seq: u64,
    ) -> Result<OutboundOpaqueMessage, Error> {
        let prefix = self.prefix();
        let mut payload =
            PrefixedPayload::with_capacity(self.encrypted_payload_len(m.payload.len()));
        let nonce = Nonce::new(&self.iv, seq).0;
        payload.extend_from_slice(&nonce[NONCE_LEN - prefix..]);
        payload.extend_from_chunks(&m.payload);
        let aad = make_tls12_aad(seq, m.typ, m.version, m.payload.len());
        let tag = self
            .aead
            .encrypt_in_place_detached(nonce_of::<A>(&nonce), &aad, &mut payload.as_mut()[prefix..])
            .map_err(|_| Error::EncryptError)?;
        payload.extend_from_slice(&tag);
        Ok(OutboundOpaqueMessage::new(m.typ, m.version, payload))
    }

    fn encrypted_payload_len(&self, payload_len: usize) -> usize {
        self.prefix() + payload_len + TAG_LEN
    }
}

impl<A: RecordAead> MessageDecrypter for Tls12Cipher<A> {
    fn decrypt<'a>(
        &mut self,
        mut m: InboundOpaqueMessage<'a>,
        seq: u64,
    ) -> Result<InboundPlainMessage<'a>, Error> {
        let prefix = self.prefix();
        let payload = &mut m.payload;
        let Some(plain_len) = payload.len().checked_sub(prefix + TAG_LEN) else {
            return Err(Error::DecryptError);
        };
        if plain_len > MAX_FRAGMENT_LEN {
            return Err(Error::PeerSentOversizedRecord);
        }
        let mut nonce = Nonce::new(&self.iv, seq).0;
        if self.explicit {
            nonce[NONCE_LEN - prefix..].copy_from_slice(&payload[..prefix]);
        }
        let aad = make_tls12_aad(seq, m.typ, m.version, plain_len);
        let (body, tag) = payload[prefix..].split_at_mut(plain_len);
        self.aead
            .decrypt_in_place_detached(nonce_of::<A>(&nonce), &aad, body, tag_of::<A>(tag))
            .map_err(|_| Error::DecryptError)?;
        payload.copy_within(prefix..prefix + plain_len, 0);
        payload.truncate(plain_len);
        Ok(m.into_plain_message())
    }
}

/// A cipher whose key could not be set: it fails every record (rustls hands keys of the
/// length the algorithm states, so this is never built in practice).
struct Broken;

impl MessageEncrypter for Broken {
    fn encrypt(
        &mut self,
        _: OutboundPlainMessage<'_>,
        _: u64,
    ) -> Result<OutboundOpaqueMessage, Error> {
        Err(Error::EncryptError)
    }

    fn encrypted_payload_len(&self, payload_len: usize) -> usize {
        payload_len + TAG_LEN
    }
}

impl MessageDecrypter for Broken {
    fn decrypt<'a>(
        &mut self,
        _: InboundOpaqueMessage<'a>,
        _: u64,
    ) -> Result<InboundPlainMessage<'a>, Error> {
        Err(Error::DecryptError)
    }
}

/// The nonce size of the three AEADs, checked at compile time against rustls's.
const _: () = {
    use aes_gcm::aead::generic_array::typenum::Unsigned;
    assert!(<<Aes128Gcm as AeadCore>::NonceSize as Unsigned>::USIZE == NONCE_LEN);
    assert!(<<Aes256Gcm as AeadCore>::NonceSize as Unsigned>::USIZE == NONCE_LEN);
    assert!(<<ChaCha20Poly1305 as AeadCore>::NonceSize as Unsigned>::USIZE == NONCE_LEN);
};

/// The MAC of a record sealed in ranges, under way ([`RecordKey::mac_start`]): GCM's GHASH
/// on the assembly, or ChaCha20-Poly1305's Poly1305. The caller keeps it from one range to
/// the next and gives it the ciphertext in order.
// Inline, not boxed: one per connection, made per record; a box would allocate per record.
#[allow(clippy::large_enum_variant)]
#[derive(Clone)]
pub enum RangeMac {
    /// AES-GCM's GHASH (the assembly).
    #[cfg(target_arch = "x86_64")]
    Gcm(super::aesni::Ghash),
    /// ChaCha20-Poly1305's Poly1305 (RFC 8439 §2.8).
    Poly(PolyMac),
}

impl RangeMac {
    /// Ciphertext bytes absorbed so far.
    pub fn absorbed(&self) -> u64 {
        match self {
            #[cfg(target_arch = "x86_64")]
            RangeMac::Gcm(g) => g.absorbed(),
            RangeMac::Poly(p) => p.len,
        }
    }
}

/// Poly1305 over a ChaCha20-Poly1305 message given in pieces: the AAD padded, then the
/// ciphertext in 16-byte blocks (a partial block waits here for the rest), then at the
/// end the last block padded and the lengths (RFC 8439 §2.8).
#[derive(Clone)]
pub struct PolyMac {
    mac: poly1305::Poly1305,
    pend: [u8; 16],
    pend_len: usize,
    aad_len: u64,
    len: u64,
}

impl PolyMac {
    fn update(&mut self, mut data: &[u8]) {
        use poly1305::universal_hash::UniversalHash;
        self.len += data.len() as u64;
        if self.pend_len > 0 {
            let n = (16 - self.pend_len).min(data.len());
            self.pend[self.pend_len..self.pend_len + n].copy_from_slice(&data[..n]);
            self.pend_len += n;
            data = &data[n..];
            if self.pend_len < 16 {
                return;
            }
            self.mac.update_padded(&self.pend);
            self.pend_len = 0;
        }
        let whole = data.len() / 16 * 16;
        // Whole blocks: padding adds nothing.
        self.mac.update_padded(&data[..whole]);
        let tail = &data[whole..];
        self.pend[..tail.len()].copy_from_slice(tail);
        self.pend_len = tail.len();
    }

    fn finish(mut self) -> [u8; TAG_LEN] {
        use poly1305::universal_hash::UniversalHash;
        self.mac.update_padded(&self.pend[..self.pend_len]);
        let mut lens = [0u8; 16];
        lens[..8].copy_from_slice(&self.aad_len.to_le_bytes());
        lens[8..].copy_from_slice(&self.len.to_le_bytes());
        self.mac.update_padded(&lens);
        let mut t = [0u8; TAG_LEN];
        t.copy_from_slice(&self.mac.finalize());
        t
    }
}

/// One direction's record key after the handshake, for the engine's own record layer
/// ([`crate::server`]): the AEAD and the nonce base rustls derived, as it hands them out
/// ([`ConnectionTrafficSecrets`]). Built once per key (one allocation), then it seals and
/// opens in the caller's buffers with none.
pub struct RecordKey {
    aead: Sealer,
    iv: [u8; NONCE_LEN],
    alg: Alg,
}

/// The AEAD of a [`RecordKey`]: AES-GCM on the assembly (which seals from parts where
/// they lie), or any of the three behind a pointer.
enum Sealer {
    #[cfg(target_arch = "x86_64")]
    Ni(Box<super::aesni::AesGcm>),
    /// ChaCha20-Poly1305 by its two halves (the key, wiped on drop): seals from parts
    /// and in ranges.
    ChaCha(Box<ChaChaKey>),
    Any(Box<dyn DynAead>),
}

/// A ChaCha20-Poly1305 key, wiped on drop.
struct ChaChaKey([u8; 32]);

impl Drop for ChaChaKey {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.0);
    }
}

impl ChaChaKey {
    fn cipher(&self) -> ChaCha20Poly1305 {
        ChaCha20Poly1305::new(GenericArray::from_slice(&self.0))
    }

    /// The keystream from byte `at` of the message (block 1 on: block 0 makes the
    /// Poly1305 key, RFC 8439 §2.8).
    fn stream(&self, nonce: &[u8; NONCE_LEN], at: usize) -> chacha20::ChaCha20 {
        use chacha20::cipher::{KeyIvInit, StreamCipherSeek};
        let mut c = chacha20::ChaCha20::new(
            GenericArray::from_slice(&self.0),
            GenericArray::from_slice(nonce),
        );
        c.seek(64 + at as u64);
        c
    }

    fn mac_start(&self, nonce: &[u8; NONCE_LEN], aad: &[u8]) -> PolyMac {
        use chacha20::cipher::{KeyIvInit, StreamCipher};
        use poly1305::universal_hash::{KeyInit as _, UniversalHash};
        let mut k = [0u8; 32];
        chacha20::ChaCha20::new(
            GenericArray::from_slice(&self.0),
            GenericArray::from_slice(nonce),
        )
        .apply_keystream(&mut k);
        let mut mac = poly1305::Poly1305::new(GenericArray::from_slice(&k));
        zeroize::Zeroize::zeroize(&mut k);
        mac.update_padded(aad);
        PolyMac {
            mac,
            pend: [0; 16],
            pend_len: 0,
            aad_len: aad.len() as u64,
            len: 0,
        }
    }
}

impl core::fmt::Debug for RecordKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RecordKey").field("alg", &self.alg).finish()
    }
}

impl RecordKey {
    /// The key of `secrets`; `None` for an AEAD this provider does not have (rustls only
    /// negotiates ours).
    pub fn new(secrets: &ConnectionTrafficSecrets) -> Option<Self> {
        fn make<A: RecordAead>(key: &[u8]) -> Option<Box<dyn DynAead>> {
            A::new_from_slice(key)
                .ok()
                .map(|a| Box::new(a) as Box<dyn DynAead>)
        }
        let (alg, key, iv) = match secrets {
            ConnectionTrafficSecrets::Aes128Gcm { key, iv } => (Alg::Aes128Gcm, key, iv),
            ConnectionTrafficSecrets::Aes256Gcm { key, iv } => (Alg::Aes256Gcm, key, iv),
            ConnectionTrafficSecrets::Chacha20Poly1305 { key, iv } => {
                (Alg::ChaCha20Poly1305, key, iv)
            }
            _ => return None,
        };
        #[cfg(target_arch = "x86_64")]
        if alg != Alg::ChaCha20Poly1305 {
            if let Some(k) = super::aesni::AesGcm::new(alg.key_of(key)) {
                return Some(Self {
                    aead: Sealer::Ni(Box::new(k)),
                    iv: <[u8; NONCE_LEN]>::try_from(iv.as_ref()).ok()?,
                    alg,
                });
            }
        }
        if alg == Alg::ChaCha20Poly1305 {
            let k = <[u8; 32]>::try_from(alg.key_of(key)).ok()?;
            return Some(Self {
                aead: Sealer::ChaCha(Box::new(ChaChaKey(k))),
                iv: <[u8; NONCE_LEN]>::try_from(iv.as_ref()).ok()?,
                alg,
            });
        }
        let aead = Sealer::Any(with_cipher!(alg, alg.key_of(key), make)?);
        Some(Self {
            aead,
            iv: <[u8; NONCE_LEN]>::try_from(iv.as_ref()).ok()?,
            alg,
        })
    }

    /// The algorithm.
    pub fn alg(&self) -> Alg {
        self.alg
    }

    /// The nonce of record `seq`: the IV XORed with the sequence number (RFC 8446 §5.3; TLS
    /// 1.2 GCM sends its last 8 bytes as the explicit nonce, as rustls's providers do).
    pub fn nonce(&self, seq: u64) -> [u8; NONCE_LEN] {
        Nonce::new(&Iv::from(self.iv), seq).0
    }

    /// TLS 1.2 GCM's nonce for a received record: the 4-byte salt and the record's explicit
    /// nonce.
    pub fn nonce_explicit(&self, explicit: &[u8; GCM_EXPLICIT_NONCE_LEN]) -> [u8; NONCE_LEN] {
        let mut n = self.iv;
        n[NONCE_LEN - GCM_EXPLICIT_NONCE_LEN..].copy_from_slice(explicit);
        n
    }

    /// Encrypts `data` in place under `nonce` and `aad`; the tag.
    pub fn seal(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        data: &mut [u8],
    ) -> Option<[u8; TAG_LEN]> {
        match &self.aead {
            #[cfg(target_arch = "x86_64")]
            Sealer::Ni(k) => k.seal(nonce, aad, data).ok(),
            Sealer::ChaCha(k) => k.cipher().seal(nonce, aad, data),
            Sealer::Any(a) => a.seal(nonce, aad, data),
        }
    }

    /// Encrypts the concatenation of `parts` into `dst` (as long as they are) under
    /// `nonce` and `aad`; the tag. The AES-GCM assembly and ChaCha20-Poly1305 read each
    /// part where it lies; the `aes-gcm` crate (a CPU without AES-NI) has the parts copied
    /// into `dst` and encrypts there.
    pub fn seal_parts(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        parts: &[&[u8]],
        dst: &mut [u8],
    ) -> Option<[u8; TAG_LEN]> {
        match &self.aead {
            #[cfg(target_arch = "x86_64")]
            Sealer::Ni(k) => k.seal_parts(nonce, aad, parts, dst).ok(),
            Sealer::ChaCha(_) => {
                let total: usize = parts.iter().map(|p| p.len()).sum();
                if total != dst.len() {
                    return None;
                }
                self.ctr_at(nonce, parts, 0, dst)?;
                let mut m = self.mac_start(nonce, aad)?;
                self.mac_update(&mut m, dst);
                self.mac_finish(nonce, m)
            }
            Sealer::Any(a) => {
                let mut at = 0;
                for p in parts {
                    dst.get_mut(at..at + p.len())?.copy_from_slice(p);
                    at += p.len();
                }
                if at != dst.len() {
                    return None;
                }
                a.seal(nonce, aad, dst)
            }
        }
    }

    /// Encrypts bytes `at..at + dst.len()` of the message `parts` joined under `nonce` into
    /// `dst`, alone (a segment of a record, in any order): AES-GCM's counter (the
    /// assembly, [`aesni::AesGcm::ctr_at`]) or ChaCha20's keystream from that byte, each
    /// part read where it lies; `None` when the cipher is the `aes-gcm` crate's (a CPU
    /// without AES-NI) or the parts are too short.
    ///
    /// [`aesni::AesGcm::ctr_at`]: super::aesni::AesGcm::ctr_at
    pub fn ctr_at(
        &self,
        nonce: &[u8; NONCE_LEN],
        parts: &[&[u8]],
        at: usize,
        dst: &mut [u8],
    ) -> Option<()> {
        match &self.aead {
            #[cfg(target_arch = "x86_64")]
            Sealer::Ni(k) => k.ctr_at(nonce, parts, at, dst).ok(),
            Sealer::ChaCha(k) => {
                use chacha20::cipher::StreamCipher;
                // RFC 8439's 32-bit block counter: at most 256 GiB of keystream (chacha20
                // 0.9 refuses the counter's last block; an empty range there must not seek
                // past it either).
                if (at as u64).checked_add(dst.len() as u64)? > (1u64 << 38) - 128 {
                    return None;
                }
                let mut c = k.stream(nonce, at);
                let mut w = 0;
                for part in parts_in(parts, at, dst.len()) {
                    c.apply_keystream_b2b(part, &mut dst[w..w + part.len()])
                        .ok()?;
                    w += part.len();
                }
                (w == dst.len()).then_some(())
            }
            Sealer::Any(_) => None,
        }
    }

    /// A MAC over `aad` to give a message's ciphertext to in pieces, where the cipher
    /// seals in ranges ([`RecordKey::ctr_at`]); `None` otherwise.
    pub fn mac_start(&self, nonce: &[u8; NONCE_LEN], aad: &[u8]) -> Option<RangeMac> {
        match &self.aead {
            #[cfg(target_arch = "x86_64")]
            Sealer::Ni(k) => Some(RangeMac::Gcm(k.ghash_start(aad))),
            Sealer::ChaCha(k) => Some(RangeMac::Poly(k.mac_start(nonce, aad))),
            Sealer::Any(_) => None,
        }
    }

    /// Absorbs the next bytes of the ciphertext into `m` (made by this key).
    pub fn mac_update(&self, m: &mut RangeMac, data: &[u8]) {
        match (&self.aead, m) {
            #[cfg(target_arch = "x86_64")]
            (Sealer::Ni(k), RangeMac::Gcm(g)) => k.ghash_update(g, data),
            (Sealer::ChaCha(_), RangeMac::Poly(p)) => p.update(data),
            _ => {}
        }
    }

    /// The tag of the message sealed under `nonce` whose whole ciphertext `m` absorbed.
    pub fn mac_finish(&self, nonce: &[u8; NONCE_LEN], m: RangeMac) -> Option<[u8; TAG_LEN]> {
        match (&self.aead, m) {
            #[cfg(target_arch = "x86_64")]
            (Sealer::Ni(k), RangeMac::Gcm(g)) => Some(k.ghash_finish(nonce, g)),
            (Sealer::ChaCha(_), RangeMac::Poly(p)) => Some(p.finish()),
            _ => None,
        }
    }

    /// Checks `tag` and decrypts `data` in place; `false` (and `data` not to be used) when
    /// the tag is wrong.
    pub fn open(&self, nonce: &[u8; NONCE_LEN], aad: &[u8], data: &mut [u8], tag: &[u8]) -> bool {
        if tag.len() != TAG_LEN {
            return false;
        }
        match &self.aead {
            #[cfg(target_arch = "x86_64")]
            Sealer::Ni(k) => k.open(nonce, aad, data, tag).is_ok(),
            Sealer::ChaCha(k) => k.cipher().open(nonce, aad, data, tag),
            Sealer::Any(a) => a.open(nonce, aad, data, tag),
        }
    }
}

/// The pieces of `parts` that hold bytes `at..at + len` of their concatenation, in order
/// (fewer bytes when the parts end first): how a range of a message is read where it lies.
pub(crate) fn parts_in<'a>(
    parts: &'a [&'a [u8]],
    at: usize,
    len: usize,
) -> impl Iterator<Item = &'a [u8]> + 'a {
    let (mut skip, mut left) = (at, len);
    parts.iter().filter_map(move |part| {
        if left == 0 {
            return None;
        }
        if skip >= part.len() {
            skip -= part.len();
            return None;
        }
        let piece = &part[skip..part.len().min(skip + left)];
        skip = 0;
        left -= piece.len();
        Some(piece)
    })
}

/// An AEAD behind a pointer (the three of [`with_cipher!`]).
trait DynAead: Send + Sync {
    fn seal(&self, nonce: &[u8; NONCE_LEN], aad: &[u8], data: &mut [u8]) -> Option<[u8; TAG_LEN]>;
    fn open(&self, nonce: &[u8; NONCE_LEN], aad: &[u8], data: &mut [u8], tag: &[u8]) -> bool;
}

impl<A: RecordAead> DynAead for A {
    fn seal(&self, nonce: &[u8; NONCE_LEN], aad: &[u8], data: &mut [u8]) -> Option<[u8; TAG_LEN]> {
        let tag = self
            .encrypt_in_place_detached(nonce_of::<A>(nonce), aad, data)
            .ok()?;
        <[u8; TAG_LEN]>::try_from(tag.as_slice()).ok()
    }

    fn open(&self, nonce: &[u8; NONCE_LEN], aad: &[u8], data: &mut [u8], tag: &[u8]) -> bool {
        self.decrypt_in_place_detached(nonce_of::<A>(nonce), aad, data, tag_of::<A>(tag))
            .is_ok()
    }
}
