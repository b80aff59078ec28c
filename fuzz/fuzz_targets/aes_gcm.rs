//! AES-GCM's assembly (`provider::aesni`) against the `aes-gcm` crate: arbitrary key, nonce,
//! AAD and plaintext. Checks: both seal to the same ciphertext and tag, and so does the
//! assembly sealing from three parts cut anywhere (`seal_parts`), and in ranges cut
//! anywhere, each alone (`ctr_at`), the GHASH given the pieces in turn; the assembly opens
//! its own output back to the plaintext; with one bit of the ciphertext, tag or AAD flipped
//! it refuses and leaves the buffer as it was. Nothing to compare on a CPU without AES-NI.
#![no_main]

use aes_gcm::aead::{AeadInPlace, KeyInit};
use aes_gcm::{Aes128Gcm, Aes256Gcm};
use bareweb_tls::provider::aesni::AesGcm;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let key_len = if sel & 1 == 0 { 16 } else { 32 };
    if rest.len() < key_len + 13 {
        return;
    }
    let (key, rest) = rest.split_at(key_len);
    let (nonce, rest) = rest.split_at(12);
    let nonce: &[u8; 12] = nonce.try_into().unwrap();
    let (&aad_len, rest) = rest.split_first().unwrap();
    let (aad, plain) = rest.split_at(usize::from(aad_len).min(rest.len()));
    let Some(ni) = AesGcm::new(key) else {
        return;
    };
    let mut ours = plain.to_vec();
    let tag = ni.seal(nonce, aad, &mut ours).unwrap();
    let mut theirs = plain.to_vec();
    let want = if key_len == 16 {
        Aes128Gcm::new_from_slice(key)
            .unwrap()
            .encrypt_in_place_detached(nonce.into(), aad, &mut theirs)
    } else {
        Aes256Gcm::new_from_slice(key)
            .unwrap()
            .encrypt_in_place_detached(nonce.into(), aad, &mut theirs)
    }
    .unwrap();
    assert_eq!(ours, theirs);
    assert_eq!(tag.as_slice(), want.as_slice());

    // From three parts cut where the selector and the length say: the same bytes and tag.
    let a = (usize::from(sel) * 31) % (plain.len() + 1);
    let b = a + (usize::from(aad_len) * 17) % (plain.len() - a + 1);
    let mut dst = vec![0u8; plain.len()];
    let t3 = ni
        .seal_parts(nonce, aad, &[&plain[..a], &plain[a..b], &plain[b..]], &mut dst)
        .unwrap();
    assert_eq!(dst, ours);
    assert_eq!(t3, tag);

    // In ranges (segments of a record) cut at a, b and the middle, sealed last first, each
    // alone; the GHASH then given them in order: the same bytes and tag.
    let parts = [&plain[..a], &plain[a..b], &plain[b..]];
    let mut cuts = [0, a, b, (a + plain.len()) / 2, plain.len()];
    cuts.sort_unstable();
    let mut ranged = vec![0u8; plain.len()];
    for w in cuts.windows(2).rev() {
        ni.ctr_at(nonce, &parts, w[0], &mut ranged[w[0]..w[1]]).unwrap();
    }
    assert_eq!(ranged, ours);
    let mut g = ni.ghash_start(aad);
    for w in cuts.windows(2) {
        ni.ghash_update(&mut g, &ranged[w[0]..w[1]]);
    }
    assert_eq!(ni.ghash_finish(nonce, g), tag);

    // One flipped bit, chosen by the selector and the length, anywhere in ciphertext, tag, AAD.
    let total = (ours.len() + 16 + aad.len()) * 8;
    let bit = (usize::from(sel >> 1) * 7919 + plain.len()) % total;
    let (mut c, mut t, mut a) = (ours.clone(), tag, aad.to_vec());
    let (byte, m) = (bit / 8, 1u8 << (bit % 8));
    if byte < c.len() {
        c[byte] ^= m;
    } else if byte < c.len() + 16 {
        t[byte - c.len()] ^= m;
    } else {
        a[byte - c.len() - 16] ^= m;
    }
    let flipped = c.clone();
    assert!(ni.open(nonce, &a, &mut c, &t).is_err());
    assert_eq!(c, flipped);

    ni.open(nonce, aad, &mut ours, &tag).unwrap();
    assert_eq!(ours, plain);
});
