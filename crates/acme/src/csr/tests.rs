use super::*;
use crate::jose::tests::key;
use std::process::Command;

/// `openssl` (a real, independent reader) given `der` with these arguments; its output.
fn openssl(args: &[&str], der: &[u8]) -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("bareweb-acme-{}-{n}.der", std::process::id()));
    std::fs::write(&path, der).unwrap();
    let out = Command::new("openssl")
        .args(args)
        .arg("-in")
        .arg(&path)
        .output()
        .expect("openssl (cargo xtask setup installs it)");
    std::fs::remove_file(&path).unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    text
}

#[test]
fn the_request_verifies_and_names_every_name() {
    let der = request(&key(), &["acme.test", "www.acme.test"]).unwrap();
    let text = openssl(
        &["req", "-inform", "DER", "-verify", "-noout", "-text"],
        &der,
    );
    assert!(text.contains("verify OK"), "{text}");
    assert!(text.contains("DNS:acme.test, DNS:www.acme.test"), "{text}");
    assert!(
        text.contains("X509v3 Subject Alternative Name: critical"),
        "{text}"
    );
    assert!(text.contains("ecdsa-with-SHA256"), "{text}");
    // The public key is the certificate key's.
    let parsed = CertReq::from_der(&der).unwrap();
    assert_eq!(parsed.info.public_key, public_key(&key()).unwrap());
    let bad: [&[&str]; 8] = [
        &[],
        &["é.test"],
        &[""],
        &["a\u{7}.test"],
        &["under_score.test"],
        &["-a.test"],
        &["a..test"],
        &["acme.test", "x y"],
    ];
    for names in bad {
        assert_eq!(request(&key(), names), Err(CsrError::Names), "{names:?}");
    }
}

#[test]
fn the_alpn_certificate_carries_the_key_authorizations_digest() {
    let ka =
        "95B1eyUduY_EL6Sl9cqyuFjz2Ts3n-iN88A-YZkWuDo.6UoWwDCkLjV0J-pQG8c0THxbVhBcpR0AZDift1Yl5DM";
    let now = 1_796_032_330;
    let der = alpn_certificate(&key(), "www.acme.test", ka, now).unwrap();
    let text = openssl(&["x509", "-inform", "DER", "-noout", "-text"], &der);
    assert!(text.contains("1.3.6.1.5.5.7.1.31: critical"), "{text}");
    assert!(text.contains("DNS:www.acme.test"), "{text}");
    // Self-signed: it verifies against its own key (the ACME extension is critical and
    // unknown to openssl, as to every TLS client but the CA's validator).
    let pem = der::pem::encode_string("CERTIFICATE", der::pem::LineEnding::LF, &der).unwrap();
    let path = std::env::temp_dir().join(format!("bareweb-alpn-{}.pem", std::process::id()));
    std::fs::write(&path, &pem).unwrap();
    let v = Command::new("openssl")
        .args([
            "verify",
            "-ignore_critical",
            "-no_check_time",
            "-partial_chain",
            "-CAfile",
        ])
        .arg(&path)
        .arg(&path)
        .output()
        .unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(
        String::from_utf8_lossy(&v.stdout).contains("OK"),
        "{}",
        String::from_utf8_lossy(&v.stderr)
    );
    // The extension's value: an OCTET STRING of SHA-256 of the key authorization.
    let cert = Certificate::from_der(&der).unwrap();
    let ext = cert
        .tbs_certificate
        .extensions
        .unwrap()
        .into_iter()
        .find(|e| e.extn_id == ACME_IDENTIFIER)
        .unwrap();
    let inner = OctetString::from_der(ext.extn_value.as_bytes()).unwrap();
    assert_eq!(inner.as_bytes(), Sha256::digest(ka.as_bytes()).as_slice());
    let validity = cert.tbs_certificate.validity;
    assert_eq!(validity.not_before.to_unix_duration().as_secs(), now - 3600);
    assert_eq!(
        validity.not_after.to_unix_duration().as_secs(),
        now + 7 * 86_400
    );
    // An issuer is never empty (RFC 5280 §4.1.2.4).
    assert!(
        text.contains("Issuer: CN = bareweb ACME challenge"),
        "{text}"
    );
}

#[test]
fn from_2050_times_are_generalized() {
    // 2049-12-30: notAfter falls in 2050 (RFC 5280 §4.1.2.5: GeneralizedTime).
    let now = 2_524_435_200;
    let der = alpn_certificate(&key(), "acme.test", "t.k", now).unwrap();
    let cert = Certificate::from_der(&der).unwrap();
    let v = cert.tbs_certificate.validity;
    assert!(matches!(v.not_before, Time::UtcTime(_)));
    assert!(matches!(v.not_after, Time::GeneralTime(_)));
    assert_eq!(v.not_after.to_unix_duration().as_secs(), now + 7 * 86_400);
    let text = openssl(&["x509", "-inform", "DER", "-noout", "-dates"], &der);
    assert!(text.contains("notAfter=Jan  6 00:00:00 2050 GMT"), "{text}");
}
