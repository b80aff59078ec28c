use super::*;
use crate::jose::tests::key;

fn state(with_cert: bool) -> State {
    State {
        account: key().to_pkcs8(),
        certificate: with_cert.then(|| Kept {
            chain_pem: String::from(include_str!("../../testdata/pebble/chain.pem")),
            key: key().to_pkcs8(),
        }),
    }
}

#[test]
fn records_round_trip() {
    for with_cert in [false, true] {
        let r = encode(&state(with_cert), 7).unwrap();
        assert_eq!(&r[..8], b"BWACME\x00\x01");
        let mut area = r.clone();
        area.extend_from_slice(&[0xAA; 100]); // what follows in a slot is ignored
        assert_eq!(decode(&area), Ok((7, state(with_cert))));
    }
}

#[test]
fn any_damage_reads_as_absent() {
    let r = encode(&state(true), 3).unwrap();
    for i in 0..r.len() {
        let mut bad = r.clone();
        bad[i] ^= 0x01;
        assert!(decode(&bad).is_err(), "byte {i}");
    }
    for len in 0..r.len() {
        assert!(decode(&r[..len]).is_err(), "cut at {len}");
    }
    assert_eq!(decode(&[0; 4096]), Err(StoreError::NotARecord));
    assert_eq!(decode(&[]), Err(StoreError::NotARecord));
}

#[test]
fn a_write_cut_short_leaves_the_previous_state() {
    // Two slots; the first record in slot 0, the second in slot 1, the third torn while
    // being written over slot 0: slot 1's (the second) is the newest readable.
    let mut slots = [vec![0u8; 8192], vec![0u8; 8192]];
    let write = |slots: &mut [Vec<u8>; 2], s: &State, cut: Option<usize>| {
        let (i, seq) = next_write([&slots[0], &slots[1]]);
        let r = encode(s, seq).unwrap();
        let n = cut.unwrap_or(r.len());
        slots[i][..n].copy_from_slice(&r[..n]);
        i
    };
    assert_eq!(newest(&[&slots[0], &slots[1]]), None);
    assert_eq!(write(&mut slots, &state(false), None), 0);
    assert_eq!(write(&mut slots, &state(true), None), 1);
    let mut third = state(true);
    third.certificate.as_mut().unwrap().key = vec![1, 2, 3];
    for cut in [HEADER - 1, HEADER + 10, 600] {
        let mut s = slots.clone();
        assert_eq!(write(&mut s, &third, Some(cut)), 0);
        let (i, seq, got) = newest(&[&s[0], &s[1]]).unwrap();
        assert_eq!((i, seq), (1, 2), "cut at {cut}");
        assert_eq!(got, state(true));
    }
    // Written whole, it is the newest.
    assert_eq!(write(&mut slots, &third, None), 0);
    assert_eq!(newest(&[&slots[0], &slots[1]]).unwrap().2, third);
    assert_eq!(next_write([&slots[0], &slots[1]]), (1, 4));
}

#[test]
fn a_payload_that_does_not_read_is_refused() {
    // Items that run past the payload, a chain without its key, no account: each with a
    // correct checksum, so only the payload's reading refuses them.
    let record = |payload: &[u8]| {
        let seq = 1u64.to_be_bytes();
        let len = (payload.len() as u32).to_be_bytes();
        let mut r = MAGIC.to_vec();
        r.extend_from_slice(&seq);
        r.extend_from_slice(&len);
        r.extend_from_slice(&crc(&seq, &len, payload).to_be_bytes());
        r.extend_from_slice(payload);
        r
    };
    for payload in [
        &[1, 0, 0, 0, 9, 1][..],
        &[1, 0, 0, 0, 1, 7, 2, 0, 0, 0, 1, b'x'],
        &[2, 0, 0, 0, 1, b'x', 3, 0, 0, 0, 1, 7],
        &[1, 0, 0],
        &[1, 0, 0, 0, 1, 7, 2, 0, 0, 0, 1, 0xFF, 3, 0, 0, 0, 0],
    ] {
        assert_eq!(
            decode(&record(payload)),
            Err(StoreError::Payload),
            "{payload:?}"
        );
    }
    // An unknown item is skipped (a later version's).
    let ok = record(&[1, 0, 0, 0, 1, 7, 9, 0, 0, 0, 2, 1, 2]);
    assert_eq!(decode(&ok).unwrap().1.account, vec![7]);
    // A sequence number past 2^63: no real count of writes reaches it.
    let mut forged = record(&[1, 0, 0, 0, 1, 7]);
    forged[8..16].copy_from_slice(&u64::MAX.to_be_bytes());
    let seq = forged[8..16].to_vec();
    let len = forged[16..20].to_vec();
    let sum = crc(&seq, &len, &forged[24..]).to_be_bytes();
    forged[20..24].copy_from_slice(&sum);
    assert_eq!(decode(&forged), Err(StoreError::Payload));
    // A length past the bound.
    let mut long = record(&[1, 0, 0, 0, 1, 7]);
    long[16..20].copy_from_slice(&(MAX_PAYLOAD as u32 + 1).to_be_bytes());
    assert_eq!(decode(&long), Err(StoreError::Length));
}
