//! AES-GCM on both paths of [`Gcm`] (the AES-NI assembly and the `aes-gcm` crate): the GCM
//! specification's test cases (McGrew and Viega, the 96-bit-IV ones for AES-128 and AES-256)
//! and a NIST CAVP AAD-only vector, a differential test of the assembly against the crate for
//! every length 0..=600 and record sizes up to 16640 bytes, and tampering (every flipped bit
//! of ciphertext, tag and AAD is refused, and the buffer keeps the ciphertext).

use alloc::vec;
use alloc::vec::Vec;

use aes_gcm::aead::{AeadInPlace, KeyInit};
use aes_gcm::{Aes128Gcm, Aes256Gcm};

use super::aead::Gcm;
use super::aesni::{self, AesGcm};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// (key, iv, aad, plaintext, ciphertext, tag), hex.
const VECTORS: &[(&str, &str, &str, &str, &str, &str)] = &[
    // McGrew-Viega test case 1.
    ("00000000000000000000000000000000", "000000000000000000000000", "", "", "", "58e2fccefa7e3061367f1d57a4e7455a"),
    // 2.
    ("00000000000000000000000000000000", "000000000000000000000000", "", "00000000000000000000000000000000", "0388dace60b6a392f328c2b971b2fe78", "ab6e47d42cec13bdf53a67b21257bddf"),
    // 3.
    ("feffe9928665731c6d6a8f9467308308", "cafebabefacedbaddecaf888", "",
     "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255",
     "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091473f5985",
     "4d5c2af327cd64a62cf35abd2ba6fab4"),
    // 4: AAD and a partial last block.
    ("feffe9928665731c6d6a8f9467308308", "cafebabefacedbaddecaf888", "feedfacedeadbeeffeedfacedeadbeefabaddad2",
     "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
     "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091",
     "5bc94fbc3221a5db94fae95ae7121a47"),
    // 13.
    ("0000000000000000000000000000000000000000000000000000000000000000", "000000000000000000000000", "", "", "", "530f8afbc74536b9a963b4f1c4cb738b"),
    // 14.
    ("0000000000000000000000000000000000000000000000000000000000000000", "000000000000000000000000", "", "00000000000000000000000000000000", "cea7403d4d606b6e074ec5d3baf39d18", "d0d1c8a799996bf0265b98b5d48ab919"),
    // 15.
    ("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308", "cafebabefacedbaddecaf888", "",
     "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255",
     "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad",
     "b094dac5d93471bdec1a502270e3cc6c"),
    // 16.
    ("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308", "cafebabefacedbaddecaf888", "feedfacedeadbeeffeedfacedeadbeefabaddad2",
     "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
     "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
     "76fc6ece0f4e1768cddf8853bb2d551b"),
    // NIST CAVP gcmEncryptExtIV128, PTlen 0, AADlen 128, count 0: AAD only.
    ("77be63708971c4e240d1cb79e8d77feb", "e0e00f19fed7ba0136a797f3", "7a43ec1d9c0a5a78a0b16533a6213cab", "", "", "209fcc8d3675ed938e9c7166709dd946"),
];

/// The two key sizes on one path: the assembly if `asm` (and the CPU has it), else the crate.
#[allow(clippy::large_enum_variant)] // test-only, a few at a time
enum Either {
    A128(Gcm<Aes128Gcm>),
    A256(Gcm<Aes256Gcm>),
}

impl Either {
    fn new(key: &[u8], asm: bool) -> Self {
        match (key.len(), asm) {
            (16, true) => Self::A128(Gcm::new_from_slice(key).unwrap()),
            (16, false) => Self::A128(Gcm::new_soft(key.into())),
            (32, true) => Self::A256(Gcm::new_from_slice(key).unwrap()),
            _ => Self::A256(Gcm::new_soft(key.into())),
        }
    }

    fn is_asm(&self) -> bool {
        matches!(self, Self::A128(Gcm::Ni(_)) | Self::A256(Gcm::Ni(_)))
    }

    fn seal(&self, nonce: &[u8], aad: &[u8], buf: &mut [u8]) -> [u8; 16] {
        let t = match self {
            Self::A128(g) => g.encrypt_in_place_detached(nonce.into(), aad, buf),
            Self::A256(g) => g.encrypt_in_place_detached(nonce.into(), aad, buf),
        };
        t.unwrap().into()
    }

    fn open(&self, nonce: &[u8], aad: &[u8], buf: &mut [u8], tag: &[u8]) -> bool {
        match self {
            Self::A128(g) => g.decrypt_in_place_detached(nonce.into(), aad, buf, tag.into()),
            Self::A256(g) => g.decrypt_in_place_detached(nonce.into(), aad, buf, tag.into()),
        }
        .is_ok()
    }
}

/// The paths to test: the crate always, the assembly where the CPU has it.
fn paths() -> Vec<bool> {
    if aesni::available() {
        vec![true, false]
    } else {
        std::eprintln!("no AES-NI/PCLMULQDQ/SSSE3 here: only the crate path is tested");
        vec![false]
    }
}

#[test]
fn this_machine_takes_the_assembly_path() {
    // The development and CI machines have AES-NI; if this fails there, detection broke.
    let g = Either::new(&[1; 16], true);
    assert_eq!(g.is_asm(), aesni::available());
    assert!(!Either::new(&[1; 16], false).is_asm());
}

#[test]
fn gcm_specification_vectors_on_both_paths() {
    for asm in paths() {
        for (i, (k, iv, a, p, c, t)) in VECTORS.iter().enumerate() {
            let (k, iv, a, p, c, t) = (hex(k), hex(iv), hex(a), hex(p), hex(c), hex(t));
            let g = Either::new(&k, asm);
            assert_eq!(g.is_asm(), asm);
            let mut buf = p.clone();
            let tag = g.seal(&iv, &a, &mut buf);
            assert_eq!(buf, c, "vector {i} asm={asm}: ciphertext");
            assert_eq!(tag.as_slice(), t, "vector {i} asm={asm}: tag");
            assert!(g.open(&iv, &a, &mut buf, &t), "vector {i} asm={asm}: open");
            assert_eq!(buf, p, "vector {i} asm={asm}: plaintext");
        }
    }
}

/// splitmix64: a fixed, seeded stream for the differential tests.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// Seals with the assembly and the crate and compares, then opens each other's output.
fn differential(rng: &mut Rng, key_len: usize, len: usize) {
    let key = rng.bytes(key_len);
    let nonce = rng.bytes(12);
    let aad_len = (rng.next() % 65) as usize;
    let aad = rng.bytes(aad_len);
    let plain = rng.bytes(len);
    let (ni, soft) = (Either::new(&key, true), Either::new(&key, false));
    assert!(ni.is_asm());
    let (mut a, mut b) = (plain.clone(), plain.clone());
    let ta = ni.seal(&nonce, &aad, &mut a);
    let tb = soft.seal(&nonce, &aad, &mut b);
    assert_eq!(a, b, "key {key_len} len {len} aad {aad_len}: ciphertext");
    assert_eq!(ta, tb, "key {key_len} len {len} aad {aad_len}: tag");
    assert!(soft.open(&nonce, &aad, &mut a, &ta));
    assert_eq!(a, plain);
    assert!(ni.open(&nonce, &aad, &mut b, &tb));
    assert_eq!(b, plain);
}

#[test]
fn assembly_matches_the_crate_for_every_length() {
    if !aesni::available() {
        return;
    }
    let mut rng = Rng(0x5eed);
    for key_len in [16, 32] {
        for len in 0..=600 {
            differential(&mut rng, key_len, len);
        }
        for len in [
            1023, 1024, 1025, 4095, 4096, 8200, 16383, 16384, 16385, 16401, 16640,
        ] {
            differential(&mut rng, key_len, len);
        }
    }
}

#[test]
fn every_flipped_bit_is_refused_on_both_paths() {
    let mut rng = Rng(7);
    for asm in paths() {
        for key_len in [16, 32] {
            for (len, aad_len) in [(0, 0), (0, 13), (1, 0), (17, 5), (130, 13), (300, 0)] {
                let key = rng.bytes(key_len);
                let nonce = rng.bytes(12);
                let aad = rng.bytes(aad_len);
                let g = Either::new(&key, asm);
                let mut ct = rng.bytes(len);
                let tag = g.seal(&nonce, &aad, &mut ct);
                let mut ok = ct.clone();
                assert!(g.open(&nonce, &aad, &mut ok, &tag));
                for bit in 0..(len + 16 + aad_len) * 8 {
                    let (mut c, mut t, mut a) = (ct.clone(), tag, aad.clone());
                    let byte = bit / 8;
                    let m = 1u8 << (bit % 8);
                    if byte < len {
                        c[byte] ^= m;
                    } else if byte < len + 16 {
                        t[byte - len] ^= m;
                    } else {
                        a[byte - len - 16] ^= m;
                    }
                    let flipped = c.clone();
                    assert!(
                        !g.open(&nonce, &a, &mut c, &t),
                        "asm={asm} key {key_len} len {len} aad {aad_len} bit {bit}"
                    );
                    if asm {
                        // The assembly checks before it decrypts: the buffer is untouched.
                        assert_eq!(c, flipped);
                    }
                }
                let mut n = nonce.clone();
                n[11] ^= 1;
                assert!(!g.open(&n, &aad, &mut ct.clone(), &tag));
            }
        }
    }
}

#[test]
fn the_assembly_refuses_bad_keys_and_tags() {
    if !aesni::available() {
        return;
    }
    assert!(AesGcm::new(&[0; 24]).is_none());
    assert!(AesGcm::new(&[]).is_none());
    let k = AesGcm::new(&[3; 16]).unwrap();
    let mut buf = [9u8; 40];
    let tag = k.seal(&[1; 12], b"x", &mut buf).unwrap();
    assert!(k.open(&[1; 12], b"x", &mut buf, &tag[..15]).is_err());
    assert!(k.open(&[1; 12], b"x", &mut buf, &[]).is_err());
    assert!(k.open(&[1; 12], b"x", &mut buf, &tag).is_ok());
    assert_eq!(buf, [9; 40]);
}

/// `seal_parts` (the plaintext read where it lies, in pieces cut anywhere) gives the bytes
/// and tag `seal` gives for the pieces joined: one to five parts, empty ones included, for
/// every length to 300 and record sizes, both key sizes; the source is never written.
#[test]
fn sealing_from_parts_matches_sealing_in_place() {
    if !aesni::available() {
        return;
    }
    let mut rng = Rng(0x9a27);
    for key_len in [16, 32] {
        let key = rng.bytes(key_len);
        let k = aesni::AesGcm::new(&key).unwrap();
        let lens = (0..=300).chain([1024, 4096, 4133, 16384, 16385]);
        for len in lens {
            let nonce: [u8; 12] = rng.bytes(12).try_into().unwrap();
            let aad_len = (rng.next() % 14) as usize;
            let aad = rng.bytes(aad_len);
            let plain = rng.bytes(len);
            let mut joined = plain.clone();
            let want = k.seal(&nonce, &aad, &mut joined).unwrap();
            for _ in 0..4 {
                let mut cuts: Vec<usize> = (0..(rng.next() % 5))
                    .map(|_| (rng.next() as usize) % (len + 1))
                    .collect();
                cuts.sort_unstable();
                let mut parts = Vec::new();
                let mut at = 0;
                for c in cuts {
                    parts.push(&plain[at..c]);
                    at = c;
                }
                parts.push(&plain[at..]);
                let mut dst = vec![0u8; len];
                let tag = k.seal_parts(&nonce, &aad, &parts, &mut dst).unwrap();
                assert_eq!(dst, joined, "key {key_len} len {len} parts {}", parts.len());
                assert_eq!(tag, want, "key {key_len} len {len}: tag");
            }
        }
        // A destination of another length is refused.
        let nonce = [0u8; 12];
        assert!(k.seal_parts(&nonce, &[], &[b"abc"], &mut [0u8; 4]).is_err());
    }
}

/// Any range of a message sealed alone (`ctr_at`, from parts cut anywhere) is the same
/// bytes as that range of the whole message sealed, and the GHASH given the ciphertext in
/// pieces of any length gives the same tag: every offset and length to 100 over 130 bytes,
/// then random ranges of record-sized messages, both key sizes.
#[test]
fn ranges_sealed_alone_match_the_whole_and_the_tag_comes_from_pieces() {
    if !aesni::available() {
        return;
    }
    let mut rng = Rng(0x7a9e);
    for key_len in [16, 32] {
        let k = aesni::AesGcm::new(&rng.bytes(key_len)).unwrap();
        for len in [130usize, 1448, 4133, 16385] {
            let nonce: [u8; 12] = rng.bytes(12).try_into().unwrap();
            let aad_len = 5 + (rng.next() % 9) as usize;
            let aad = rng.bytes(aad_len);
            let plain = rng.bytes(len);
            let mut whole = plain.clone();
            let want = k.seal(&nonce, &aad, &mut whole).unwrap();
            let cut = (rng.next() as usize) % (len + 1);
            let parts = [&plain[..cut], &[][..], &plain[cut..]];
            let mut ranges: Vec<(usize, usize)> = Vec::new();
            if len == 130 {
                for at in 0..=100 {
                    for n in 0..=30 {
                        ranges.push((at, n));
                    }
                }
            } else {
                for _ in 0..200 {
                    let at = (rng.next() as usize) % len;
                    ranges.push((at, (rng.next() as usize) % (len - at + 1)));
                }
            }
            for (at, n) in ranges {
                let mut dst = vec![0u8; n];
                k.ctr_at(&nonce, &parts, at, &mut dst).unwrap();
                assert_eq!(
                    dst,
                    whole[at..at + n],
                    "key {key_len} len {len} at {at} n {n}"
                );
            }
            // A range past the message's end is refused.
            assert!(k.ctr_at(&nonce, &parts, len, &mut [0u8; 1]).is_err());
            for _ in 0..8 {
                let mut g = k.ghash_start(&aad);
                let mut at = 0;
                while at < len {
                    let n = ((rng.next() % 40) as usize).min(len - at);
                    let n = if rng.next().is_multiple_of(4) {
                        (n * 97).min(len - at)
                    } else {
                        n
                    };
                    k.ghash_update(&mut g, &whole[at..at + n]);
                    at += n;
                }
                assert_eq!(g.absorbed(), len as u64);
                assert_eq!(
                    k.ghash_finish(&nonce, g),
                    want,
                    "key {key_len} len {len}: tag"
                );
            }
        }
    }
}

/// ChaCha20-Poly1305 sealed from parts and in ranges (ChaCha20's keystream from any byte,
/// Poly1305 given the ciphertext in pieces): RFC 8439 §2.8.2's AEAD vector byte for byte,
/// then the `chacha20poly1305` crate's output for every length to 300 and record sizes,
/// with ranges cut anywhere.
#[test]
fn chacha20_poly1305_from_parts_and_in_ranges_matches_rfc8439_and_the_crate() {
    use super::aead::RecordKey;
    use chacha20poly1305::ChaCha20Poly1305;
    let key_of = |k: &[u8]| {
        RecordKey::new(&rustls::ConnectionTrafficSecrets::Chacha20Poly1305 {
            key: rustls::crypto::cipher::AeadKey::from(<[u8; 32]>::try_from(k).unwrap()),
            iv: rustls::crypto::cipher::Iv::new([0; 12]),
        })
        .unwrap()
    };
    let key: Vec<u8> = (0x80..=0x9f).collect();
    let rk = key_of(&key);
    let nonce: [u8; 12] = hex("070000004041424344454647").try_into().unwrap();
    let aad = hex("50515253c0c1c2c3c4c5c6c7");
    let plain = b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.";
    let want_ct = hex(
        "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d6\
         3dbea45e8ca9671282fafb69da92728b1a71de0a9e060b2905d6a5b67ecd3b36\
         92ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc\
         3ff4def08e4b7a9de576d26586cec64b6116",
    );
    let want_tag = hex("1ae10b594f09e26a7e902ecbd0600691");
    let mut ct = vec![0u8; plain.len()];
    let tag = rk
        .seal_parts(
            &nonce,
            &aad,
            &[&plain[..7], &plain[7..50], &plain[50..]],
            &mut ct,
        )
        .unwrap();
    assert_eq!(ct, want_ct);
    assert_eq!(tag[..], want_tag[..]);
    let mut back = ct.clone();
    assert!(rk.open(&nonce, &aad, &mut back, &tag));
    assert_eq!(&back[..], &plain[..]);

    let mut rng = Rng(0xc4a);
    for len in (0..=300).chain([1024, 4133, 16385]) {
        let key = rng.bytes(32);
        let rk = key_of(&key);
        let nonce: [u8; 12] = rng.bytes(12).try_into().unwrap();
        let aad_len = (rng.next() % 14) as usize;
        let aad = rng.bytes(aad_len);
        let plain = rng.bytes(len);
        let mut want = plain.clone();
        let want_tag = ChaCha20Poly1305::new_from_slice(&key)
            .unwrap()
            .encrypt_in_place_detached((&nonce).into(), &aad, &mut want)
            .unwrap();
        let cut = (rng.next() as usize) % (len + 1);
        let parts = [&plain[..cut], &plain[cut..]];
        // Ranges cut at random, made last first, each alone.
        let mut cuts: Vec<usize> = (0..4).map(|_| (rng.next() as usize) % (len + 1)).collect();
        cuts.extend([0, len]);
        cuts.sort_unstable();
        let mut got = vec![0u8; len];
        for w in cuts.windows(2).rev() {
            rk.ctr_at(&nonce, &parts, w[0], &mut got[w[0]..w[1]])
                .unwrap();
        }
        assert_eq!(got, want, "len {len}");
        let mut m = rk.mac_start(&nonce, &aad).unwrap();
        for w in cuts.windows(2) {
            rk.mac_update(&mut m, &got[w[0]..w[1]]);
        }
        assert_eq!(m.absorbed(), len as u64);
        assert_eq!(
            rk.mac_finish(&nonce, m).unwrap()[..],
            want_tag[..],
            "len {len}"
        );
    }
}
