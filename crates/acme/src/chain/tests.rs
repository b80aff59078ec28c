use super::*;
use crate::jose::tests::key;

/// The chain pebble issued for a CSR of the test key (scalar 1..32) naming acme.test and
/// www.acme.test: leaf, then pebble's intermediate (testdata/pebble/README).
const CHAIN: &[u8] = include_bytes!("../../testdata/pebble/chain.pem");
const NAMES: [&str; 2] = ["acme.test", "www.acme.test"];
/// 2026-11-30T09:52:10Z, when the fixtures were made.
const NOW: u64 = 1_796_032_330;

#[test]
fn pebbles_chain_is_ours() {
    let issued = check(CHAIN, &key(), &NAMES, NOW).unwrap();
    assert_eq!(issued.certs.len(), 2);
    assert!(issued.not_before <= NOW && NOW < issued.not_after);
    assert_eq!(
        issued.renew_at(),
        issued.not_before + (issued.not_after - issued.not_before) * 2 / 3
    );
    // What is installed reads back the same.
    assert_eq!(
        check(issued.pem.as_bytes(), &key(), &NAMES, NOW)
            .unwrap()
            .certs,
        issued.certs
    );
    // RFC 9773's identifier: the AKI and the serial openssl shows
    // (F1:8B:33:...:2D:96 and 09B04DC992C5DA1C), each base64url.
    let aki = [
        0xF1, 0x8B, 0x33, 0xF6, 0xCA, 0x5B, 0x2C, 0xD4, 0xFC, 0x06, 0xBD, 0xEC, 0xA4, 0x8B, 0xCB,
        0x0C, 0x33, 0x73, 0x2D, 0x96,
    ];
    let serial = [0x09, 0xB0, 0x4D, 0xC9, 0x92, 0xC5, 0xDA, 0x1C];
    let want = format!("{}.{}", crate::jose::b64(&aki), crate::jose::b64(&serial));
    assert_eq!(issued.cert_id.as_deref(), Some(want.as_str()));
    // Names in any case, or fewer of them.
    assert!(check(CHAIN, &key(), &["WWW.acme.test"], NOW).is_ok());
}

#[test]
fn a_chain_that_is_not_ours_is_refused() {
    let mut s = [9u8; 32];
    s[0] = 1;
    let other = Key::from_random(&s).unwrap();
    assert_eq!(
        check(CHAIN, &other, &NAMES, NOW),
        Err(ChainError::NotOurKey)
    );
    assert_eq!(
        check(CHAIN, &key(), &["acme.test", "evil.test"], NOW),
        Err(ChainError::Names)
    );
    let issued = check(CHAIN, &key(), &NAMES, NOW).unwrap();
    assert_eq!(
        check(CHAIN, &key(), &NAMES, issued.not_after),
        Err(ChainError::Validity)
    );
    assert_eq!(
        check(CHAIN, &key(), &NAMES, issued.not_before - 3600),
        Err(ChainError::Validity)
    );
    // The intermediate first: not in issuing order (and not our key).
    let text = core::str::from_utf8(CHAIN).unwrap();
    let end = text.find("-----END CERTIFICATE-----").unwrap() + 25;
    let swapped = format!("{}\n{}", text[end..].trim(), &text[..end]);
    assert_eq!(
        check(swapped.as_bytes(), &key(), &NAMES, NOW),
        Err(ChainError::NotOurKey)
    );
    let leaf_twice = format!("{}\n{}", &text[..end], &text[..end]);
    assert_eq!(
        check(leaf_twice.as_bytes(), &key(), &NAMES, NOW),
        Err(ChainError::Order)
    );
}

#[test]
fn what_is_not_a_chain() {
    let text = core::str::from_utf8(CHAIN).unwrap();
    let end = text.find("-----END CERTIFICATE-----").unwrap() + 25;
    let leaf = &text[..end];
    for bad in [
        String::new(),
        "garbage".into(),
        leaf.replace("CERTIFICATE", "PRIVATE KEY"),
        format!("{leaf}\ntrailing"),
        leaf[..leaf.len() - 30].into(),
        [leaf; MAX_CERTS + 1].join("\n"),
    ] {
        assert_eq!(
            check(bad.as_bytes(), &key(), &NAMES, NOW),
            Err(ChainError::Format),
            "{bad:.60}"
        );
    }
    let corrupt = leaf.replacen("MII", "MIJ", 1);
    assert!(check(corrupt.as_bytes(), &key(), &NAMES, NOW).is_err());
    assert_eq!(
        check(&vec![b'a'; MAX_CHAIN + 1], &key(), &NAMES, NOW),
        Err(ChainError::Format)
    );
}

#[test]
fn serial_bytes_keep_their_leading_zero_as_rfc_9773_asks() {
    // RFC 9773 §4.1's example: serial 0x0087654321 gives "AIdlQyE".
    use der::Decode;
    let serial =
        x509_cert::serial_number::SerialNumber::<x509_cert::certificate::Rfc5280>::from_der(&[
            0x02, 0x05, 0x00, 0x87, 0x65, 0x43, 0x21,
        ])
        .unwrap();
    assert_eq!(crate::jose::b64(serial.as_bytes()), "AIdlQyE");
}
