//! The certificate request (PKCS #10, RFC 2986) for the names, as finalize takes it
//! (RFC 8555 §7.4), and the TLS-ALPN-01 challenge certificate (RFC 8737 §3). Both name
//! their DNS names (checked: letters, digits and hyphens in labels of 1 to 63, 253 at
//! most) in a critical subjectAltName; the request's subject is empty (RFC 5280
//! §4.2.1.6), the challenge certificate's subject and issuer a fixed common name (an
//! issuer may not be empty, §4.1.2.4). Both are signed ECDSA P-256 with SHA-256 by a
//! key of their own, never the account's (RFC 8555 §11.1). Built from x509-cert's types
//! and encoded by `der`; times from 2050 on are GeneralizedTime (§4.1.2.5).

use alloc::vec;
use alloc::vec::Vec;
use core::time::Duration;

use core::str::FromStr;

use der::asn1::{BitString, GeneralizedTime, Ia5String, OctetString, SetOfVec, UtcTime};
use der::{Decode, Encode};
use p256::ecdsa::signature::Signer;
use p256::ecdsa::DerSignature;
use p256::pkcs8::EncodePublicKey;
use sha2::{Digest, Sha256};
use x509_cert::attr::Attribute;
use x509_cert::certificate::{Certificate, TbsCertificate, Version};
use x509_cert::ext::pkix::name::GeneralName;
use x509_cert::ext::pkix::SubjectAltName;
use x509_cert::ext::Extension;
use x509_cert::name::Name;
use x509_cert::request::{CertReq, CertReqInfo, ExtensionReq};
use x509_cert::serial_number::SerialNumber;
use x509_cert::spki::{AlgorithmIdentifierOwned, ObjectIdentifier, SubjectPublicKeyInfoOwned};
use x509_cert::time::{Time, Validity};

use crate::jose::Key;

/// ecdsa-with-SHA256 (RFC 5758 §3.2).
const ECDSA_WITH_SHA256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.4.3.2");
/// id-pe-acmeIdentifier (RFC 8737 §6.1).
pub const ACME_IDENTIFIER: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.5.5.7.1.31");
/// subjectAltName.
const SUBJECT_ALT_NAME: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.17");

/// Why a request or certificate could not be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CsrError {
    /// No names, or a name that is not IA5 text.
    Names,
    /// DER encoding failed (a value out of range).
    Encoding,
}

impl From<der::Error> for CsrError {
    fn from(_: der::Error) -> CsrError {
        CsrError::Encoding
    }
}

fn algorithm() -> AlgorithmIdentifierOwned {
    AlgorithmIdentifierOwned {
        oid: ECDSA_WITH_SHA256,
        parameters: None,
    }
}

fn public_key(key: &Key) -> Result<SubjectPublicKeyInfoOwned, CsrError> {
    let der = key
        .signing_key()
        .verifying_key()
        .to_public_key_der()
        .map_err(|_| CsrError::Encoding)?;
    Ok(SubjectPublicKeyInfoOwned::from_der(der.as_bytes())?)
}

/// Whether `n` is a host name a certificate may carry: labels of 1 to 63 letters,
/// digits and hyphens (not at either end), 253 characters at most.
pub fn name_ok(n: &str) -> bool {
    (1..=253).contains(&n.len())
        && n.split('.').all(|l| {
            (1..=63).contains(&l.len())
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

/// The subjectAltName extension naming `names`, critical.
fn san(names: &[&str]) -> Result<Extension, CsrError> {
    if names.is_empty() || !names.iter().all(|n| name_ok(n)) {
        return Err(CsrError::Names);
    }
    let mut general = Vec::with_capacity(names.len());
    for n in names {
        general.push(GeneralName::DnsName(
            Ia5String::new(n).map_err(|_| CsrError::Names)?,
        ));
    }
    Ok(Extension {
        extn_id: SUBJECT_ALT_NAME,
        critical: true,
        extn_value: OctetString::new(SubjectAltName(general).to_der()?)?,
    })
}

fn sign(key: &Key, data: &[u8]) -> Result<BitString, CsrError> {
    let sig: DerSignature = key.signing_key().sign(data);
    Ok(BitString::from_bytes(sig.as_bytes())?)
}

/// The CSR (DER) for `names`, signed by the certificate's `key`.
pub fn request(key: &Key, names: &[&str]) -> Result<Vec<u8>, CsrError> {
    let attribute = Attribute::try_from(ExtensionReq(vec![san(names)?]))?;
    let mut attributes = SetOfVec::new();
    attributes.insert(attribute)?;
    let info = CertReqInfo {
        version: x509_cert::request::Version::V1,
        subject: Name::default(),
        public_key: public_key(key)?,
        attributes,
    };
    let signature = sign(key, &info.to_der()?)?;
    Ok(CertReq {
        info,
        algorithm: algorithm(),
        signature,
    }
    .to_der()?)
}

/// The TLS-ALPN-01 certificate (RFC 8737 §3) for `name`: self-signed by `key`, naming
/// only `name`, with the critical acmeIdentifier extension holding SHA-256 of the key
/// authorization; valid from an hour before `now` (Unix seconds) for a week.
pub fn alpn_certificate(
    key: &Key,
    name: &str,
    key_authorization: &str,
    now: u64,
) -> Result<Vec<u8>, CsrError> {
    let digest = Sha256::digest(key_authorization.as_bytes());
    let acme = Extension {
        extn_id: ACME_IDENTIFIER,
        critical: true,
        extn_value: OctetString::new(OctetString::new(digest.as_slice())?.to_der()?)?,
    };
    // UTCTime until the end of 2049, GeneralizedTime from 2050 (RFC 5280 §4.1.2.5).
    let time = |secs: u64| -> Result<Time, CsrError> {
        let d = Duration::from_secs(secs);
        Ok(if secs < 2_524_608_000 {
            Time::UtcTime(UtcTime::from_unix_duration(d)?)
        } else {
            Time::GeneralTime(GeneralizedTime::from_unix_duration(d)?)
        })
    };
    let own = Name::from_str("CN=bareweb ACME challenge")?;
    let tbs = TbsCertificate {
        version: Version::V3,
        serial_number: SerialNumber::new(&now.to_be_bytes())?,
        signature: algorithm(),
        issuer: own.clone(),
        validity: Validity {
            not_before: time(now.saturating_sub(3600))?,
            not_after: time(now.saturating_add(7 * 86_400))?,
        },
        subject: own,
        subject_public_key_info: public_key(key)?,
        issuer_unique_id: None,
        subject_unique_id: None,
        extensions: Some(vec![san(&[name])?, acme]),
    };
    let signature = sign(key, &tbs.to_der()?)?;
    Ok(Certificate {
        tbs_certificate: tbs,
        signature_algorithm: algorithm(),
        signature,
    }
    .to_der()?)
}

#[cfg(test)]
mod tests;
