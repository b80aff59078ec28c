//! The certificate chain the CA issues (`application/pem-certificate-chain`, RFC 8555
//! §9.1), checked before it is installed: PEM blocks of certificates only, at most
//! [`MAX_CERTS`]; the first (the leaf) for our key (its public key is ours), naming every
//! name ordered, within its validity now; each certificate's issuer named by the next
//! one's subject (names in issuing order; signatures are not verified here: the chain
//! came over the CA's authenticated HTTPS, and clients verify it). A chain that fails is
//! refused with the reason and the old certificate stays.

use alloc::string::String;
use alloc::vec::Vec;

use der::{Decode, Encode};
use p256::pkcs8::EncodePublicKey;
use x509_cert::ext::pkix::name::GeneralName;
use x509_cert::ext::pkix::{AuthorityKeyIdentifier, SubjectAltName};
use x509_cert::Certificate;

use crate::jose::Key;

/// The most certificates a chain may hold.
pub const MAX_CERTS: usize = 8;
/// The largest chain read.
pub const MAX_CHAIN: usize = 64 * 1024;

/// Why a chain was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChainError {
    /// Not PEM certificates, or too many, or too large.
    Format,
    /// A certificate that is not X.509 DER.
    Certificate,
    /// The leaf's public key is not ours.
    NotOurKey,
    /// The leaf does not name every name ordered.
    Names,
    /// The leaf is not valid now (or its times do not read).
    Validity,
    /// A certificate's issuer is not the next one's subject.
    Order,
}

impl ChainError {
    /// The reason, for the console.
    pub fn reason(self) -> &'static str {
        match self {
            ChainError::Format => "the chain is not PEM certificates within bounds",
            ChainError::Certificate => "a certificate of the chain does not parse",
            ChainError::NotOurKey => "the certificate is not for our key",
            ChainError::Names => "the certificate does not name every domain ordered",
            ChainError::Validity => "the certificate is not valid now",
            ChainError::Order => "the chain's certificates are not in issuing order",
        }
    }
}

/// A chain that passed: its certificates (DER, leaf first), the PEM to install, and the
/// leaf's validity in Unix seconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issued {
    /// The certificates, DER, leaf first.
    pub certs: Vec<Vec<u8>>,
    /// The chain as PEM, as received (normalized line ends).
    pub pem: String,
    /// The leaf's notBefore.
    pub not_before: u64,
    /// The leaf's notAfter.
    pub not_after: u64,
    /// RFC 9773's certificate identifier (base64url of the leaf's authority key
    /// identifier, a dot, base64url of its serial number's DER content), if the leaf has
    /// an authority key identifier.
    pub cert_id: Option<String>,
}

impl Issued {
    /// When to renew: two thirds of the way through the lifetime.
    pub fn renew_at(&self) -> u64 {
        self.not_before + (self.not_after.saturating_sub(self.not_before)) * 2 / 3
    }
}

/// The PEM blocks labelled CERTIFICATE in `pem`, decoded.
fn blocks(pem: &[u8]) -> Result<Vec<Vec<u8>>, ChainError> {
    const END: &str = "-----END CERTIFICATE-----";
    let text = core::str::from_utf8(pem).map_err(|_| ChainError::Format)?;
    let mut out = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let end = rest.find(END).ok_or(ChainError::Format)? + END.len();
        let (label, der) =
            der::pem::decode_vec(&rest.as_bytes()[..end]).map_err(|_| ChainError::Format)?;
        if label != "CERTIFICATE" || out.len() == MAX_CERTS {
            return Err(ChainError::Format);
        }
        out.push(der);
        rest = rest[end..].trim_start();
    }
    if out.is_empty() {
        return Err(ChainError::Format);
    }
    Ok(out)
}

/// Checks the chain `pem` against our certificate `key`, the `names` ordered and the
/// time `now` (Unix seconds).
pub fn check(pem: &[u8], key: &Key, names: &[&str], now: u64) -> Result<Issued, ChainError> {
    if pem.len() > MAX_CHAIN {
        return Err(ChainError::Format);
    }
    let certs = blocks(pem)?;
    let mut parsed = Vec::with_capacity(certs.len());
    for c in &certs {
        parsed.push(Certificate::from_der(c).map_err(|_| ChainError::Certificate)?);
    }
    let leaf = &parsed[0].tbs_certificate;
    let ours = key
        .signing_key()
        .verifying_key()
        .to_public_key_der()
        .map_err(|_| ChainError::NotOurKey)?;
    let theirs = leaf
        .subject_public_key_info
        .to_der()
        .map_err(|_| ChainError::Certificate)?;
    if theirs != ours.as_bytes() {
        return Err(ChainError::NotOurKey);
    }
    let san: Option<(bool, SubjectAltName)> = leaf.get().map_err(|_| ChainError::Certificate)?;
    let named: Vec<String> = san
        .map(|(_, s)| {
            s.0.iter()
                .filter_map(|g| match g {
                    GeneralName::DnsName(n) => Some(n.as_str().to_ascii_lowercase()),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    if !names
        .iter()
        .all(|n| named.iter().any(|m| m.eq_ignore_ascii_case(n)))
    {
        return Err(ChainError::Names);
    }
    let not_before = leaf.validity.not_before.to_unix_duration().as_secs();
    let not_after = leaf.validity.not_after.to_unix_duration().as_secs();
    if not_before >= not_after || now >= not_after || now.saturating_add(300) < not_before {
        return Err(ChainError::Validity);
    }
    for pair in parsed.windows(2) {
        if pair[0].tbs_certificate.issuer != pair[1].tbs_certificate.subject {
            return Err(ChainError::Order);
        }
    }
    // Only for RFC 9773's identifier: an extension that does not read costs the
    // identifier, not the chain.
    let aki: Option<(bool, AuthorityKeyIdentifier)> = leaf.get().ok().flatten();
    let cert_id = aki.and_then(|(_, a)| a.key_identifier).map(|kid| {
        let mut id = crate::jose::b64(kid.as_bytes());
        id.push('.');
        id.push_str(&crate::jose::b64(leaf.serial_number.as_bytes()));
        id
    });
    let mut text = String::new();
    for c in &certs {
        let block = der::pem::encode_string("CERTIFICATE", der::pem::LineEnding::LF, c)
            .map_err(|_| ChainError::Format)?;
        text.push_str(&block);
    }
    Ok(Issued {
        certs,
        pem: text,
        not_before,
        not_after,
        cert_id,
    })
}

#[cfg(test)]
mod tests;
