//! The CA's JSON documents (RFC 8555 §7.1; RFC 9773's renewal information) and the
//! payloads we send. A response body is read with serde_json into the types below and
//! then checked ([`Check`]): every URL we will follow must be `https://`, printable and
//! bounded; a challenge token, which becomes a URL path and a file name, must be
//! base64url of at least 128 bits (§8.3); lists are bounded; unknown statuses are refused;
//! times are RFC 3339. Unknown members are ignored (the RFC lets CAs add them). A body that
//! fails is a [`DocError`] with the reason, for the console.

use alloc::string::String;
use alloc::vec::Vec;

use serde::{Deserialize, Serialize};

/// The largest document read.
pub const MAX_DOCUMENT: usize = 64 * 1024;
/// The longest URL followed.
pub const MAX_URL: usize = 2048;
/// The most authorizations (names) an order may carry.
pub const MAX_AUTHORIZATIONS: usize = 100;
/// The most challenges an authorization may offer.
pub const MAX_CHALLENGES: usize = 16;

/// Why a document was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DocError {
    /// Larger than [`MAX_DOCUMENT`].
    TooLarge,
    /// Not JSON, or not this document's shape (serde_json's message).
    Json(String),
    /// A member that fails its check: which.
    Bad(&'static str),
}

impl core::fmt::Display for DocError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            DocError::TooLarge => write!(f, "document larger than {MAX_DOCUMENT} bytes"),
            DocError::Json(e) => write!(f, "malformed JSON: {e}"),
            DocError::Bad(what) => write!(f, "bad {what}"),
        }
    }
}

/// A document read from a body, then checked.
pub fn read<T: for<'de> Deserialize<'de> + Check>(body: &[u8]) -> Result<T, DocError> {
    if body.len() > MAX_DOCUMENT {
        return Err(DocError::TooLarge);
    }
    let doc: T = serde_json::from_slice(body).map_err(|e| {
        let mut s = String::new();
        let _ = core::fmt::write(&mut s, format_args!("{e}"));
        DocError::Json(s)
    })?;
    doc.check()?;
    Ok(doc)
}

/// A document's checks beyond its shape.
pub trait Check {
    /// Refuses what must not be followed or stored.
    fn check(&self) -> Result<(), DocError>;
}

/// Whether `u` may be followed: `https://`, a host (a name, an IPv4 address or a
/// bracketed IPv6 one) with no user information and at most a numeric port, printable
/// ASCII without spaces, quotes, angle brackets or backslashes, at most [`MAX_URL`] long.
pub fn url_ok(u: &str) -> bool {
    let printable = u
        .bytes()
        .all(|b| b.is_ascii_graphic() && !matches!(b, b'"' | b'<' | b'>' | b'\\'));
    let Some(rest) = u.strip_prefix("https://") else {
        return false;
    };
    if u.len() > MAX_URL || !printable {
        return false;
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => match v6.split_once(']') {
            Some((addr, "")) => (addr, ""),
            Some((addr, after)) => match after.strip_prefix(':') {
                Some(p) => (addr, p),
                None => return false,
            },
            None => return false,
        },
        None => authority.rsplit_once(':').unwrap_or((authority, "")),
    };
    let host_ok = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b':'));
    let port_ok = port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit());
    host_ok && port_ok
}

fn url(u: &str, what: &'static str) -> Result<(), DocError> {
    if url_ok(u) {
        Ok(())
    } else {
        Err(DocError::Bad(what))
    }
}

fn opt_url(u: &Option<String>, what: &'static str) -> Result<(), DocError> {
    match u {
        Some(u) => url(u, what),
        None => Ok(()),
    }
}

/// Whether `t` is a usable challenge token: base64url, 22 to 256 characters (at least
/// 128 bits, RFC 8555 §8.3).
pub fn token_ok(t: &str) -> bool {
    (22..=256).contains(&t.len())
        && t.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn time(t: &Option<String>, what: &'static str) -> Result<(), DocError> {
    match t {
        Some(t) if parse_time(t).is_none() => Err(DocError::Bad(what)),
        _ => Ok(()),
    }
}

/// Unix seconds as RFC 3339's date-time in UTC (`2026-11-30T09:00:00Z`), for the console;
/// a time `der` cannot hold (after 9999) as its number of seconds.
pub fn format_time(t: u64) -> String {
    match der::DateTime::from_unix_duration(core::time::Duration::from_secs(t)) {
        Ok(d) => alloc::format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
            d.year(),
            d.month(),
            d.day(),
            d.hour(),
            d.minutes(),
            d.seconds()
        ),
        Err(_) => alloc::format!("{t} s"),
    }
}

/// RFC 3339's date-time (`2026-11-30T09:00:00Z`, fractions and offsets allowed) as Unix
/// seconds; `None` if malformed or before 1970.
pub fn parse_time(t: &str) -> Option<u64> {
    let b = t.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |r: core::ops::Range<usize>| -> Option<u32> {
        let s = t.get(r)?;
        if !s.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    // 60 only as a leap second (read as the second before).
    if second > 60 {
        return None;
    }
    let mut rest = &t[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        rest = &frac[digits..];
    }
    let offset: i64 = match rest.as_bytes() {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2]
            if [h1, h2, m1, m2].iter().all(|d| d.is_ascii_digit()) =>
        {
            let hh = i64::from((h1 - b'0') * 10 + (h2 - b'0'));
            let mm = i64::from((m1 - b'0') * 10 + (m2 - b'0'));
            if hh > 23 || mm > 59 {
                return None;
            }
            let o = hh * 3600 + mm * 60;
            if *sign == b'+' {
                o
            } else {
                -o
            }
        }
        _ => return None,
    };
    let dt = der::DateTime::new(
        u16::try_from(year).ok()?,
        u8::try_from(month).ok()?,
        u8::try_from(day).ok()?,
        u8::try_from(hour).ok()?,
        u8::try_from(minute).ok()?,
        u8::try_from(second.min(59)).ok()?,
    )
    .ok()?;
    let unix = dt.unix_duration().as_secs() as i64 - offset;
    u64::try_from(unix).ok()
}

/// The directory (§7.1.1).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Directory {
    /// Where nonces come from.
    pub new_nonce: String,
    /// Where accounts are made or found.
    pub new_account: String,
    /// Where orders are placed.
    pub new_order: String,
    /// Renewal information (RFC 9773), if the CA offers it.
    #[serde(default)]
    pub renewal_info: Option<String>,
    /// The CA's terms and other facts.
    #[serde(default)]
    pub meta: Option<Meta>,
}

/// The directory's `meta` (§7.1.1).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Meta {
    /// The terms of service the account agrees to.
    #[serde(default)]
    pub terms_of_service: Option<String>,
    /// Whether accounts need an external account binding (not supported).
    #[serde(default)]
    pub external_account_required: Option<bool>,
}

impl Check for Directory {
    fn check(&self) -> Result<(), DocError> {
        url(&self.new_nonce, "newNonce URL")?;
        url(&self.new_account, "newAccount URL")?;
        url(&self.new_order, "newOrder URL")?;
        opt_url(&self.renewal_info, "renewalInfo URL")
    }
}

/// An account (§7.1.2), as newAccount answers.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Account {
    /// `valid`, `deactivated` or `revoked`.
    pub status: AccountStatus,
}

/// An account's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AccountStatus {
    /// Usable.
    Valid,
    /// Deactivated by its holder.
    Deactivated,
    /// Revoked by the CA.
    Revoked,
}

impl Check for Account {
    fn check(&self) -> Result<(), DocError> {
        Ok(())
    }
}

/// An identifier: a DNS name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identifier {
    /// Always `dns` here.
    #[serde(rename = "type")]
    pub kind: String,
    /// The name.
    pub value: String,
}

impl Identifier {
    /// The identifier of DNS name `name`.
    pub fn dns(name: &str) -> Identifier {
        Identifier {
            kind: String::from("dns"),
            value: String::from(name),
        }
    }
}

/// A problem document (RFC 7807, §6.7).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Problem {
    /// Its type, e.g. `urn:ietf:params:acme:error:badNonce`.
    #[serde(rename = "type", default)]
    pub kind: String,
    /// The CA's words.
    #[serde(default)]
    pub detail: Option<String>,
}

impl Problem {
    /// Whether it is `badNonce` (§6.5: retried with the fresh nonce).
    pub fn is_bad_nonce(&self) -> bool {
        self.kind == "urn:ietf:params:acme:error:badNonce"
    }

    /// Its type without the ACME prefix, and the detail, for the console; control
    /// characters dropped and the text bounded, since the CA wrote it.
    pub fn summary(&self) -> String {
        let kind = self
            .kind
            .strip_prefix("urn:ietf:params:acme:error:")
            .unwrap_or(&self.kind);
        let mut s = String::new();
        for c in kind
            .chars()
            .chain(": ".chars())
            .chain(self.detail.as_deref().unwrap_or("").chars())
        {
            if s.len() >= 200 {
                s.push('…');
                break;
            }
            if !c.is_control() {
                s.push(c);
            }
        }
        s
    }
}

impl Check for Problem {
    fn check(&self) -> Result<(), DocError> {
        Ok(())
    }
}

/// An order's status (§7.1.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OrderStatus {
    /// Authorizations to complete.
    Pending,
    /// Ready to finalize.
    Ready,
    /// The CA is issuing.
    Processing,
    /// Issued.
    Valid,
    /// Failed.
    Invalid,
}

/// An order (§7.1.3).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Order {
    /// Where it stands.
    pub status: OrderStatus,
    /// When it expires.
    #[serde(default)]
    pub expires: Option<String>,
    /// The names ordered.
    pub identifiers: Vec<Identifier>,
    /// One authorization per name.
    pub authorizations: Vec<String>,
    /// Where the CSR goes.
    pub finalize: String,
    /// The certificate, once valid.
    #[serde(default)]
    pub certificate: Option<String>,
    /// Why it failed.
    #[serde(default)]
    pub error: Option<Problem>,
}

impl Check for Order {
    fn check(&self) -> Result<(), DocError> {
        if self.authorizations.is_empty() || self.authorizations.len() > MAX_AUTHORIZATIONS {
            return Err(DocError::Bad("authorizations list"));
        }
        if self.identifiers.len() > MAX_AUTHORIZATIONS {
            return Err(DocError::Bad("identifiers list"));
        }
        for a in &self.authorizations {
            url(a, "authorization URL")?;
        }
        url(&self.finalize, "finalize URL")?;
        opt_url(&self.certificate, "certificate URL")?;
        time(&self.expires, "order expiry")?;
        if self.status == OrderStatus::Valid && self.certificate.is_none() {
            return Err(DocError::Bad("valid order without a certificate URL"));
        }
        Ok(())
    }
}

/// An authorization's status (§7.1.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuthzStatus {
    /// A challenge to answer.
    Pending,
    /// Done.
    Valid,
    /// Failed.
    Invalid,
    /// Given up by us.
    Deactivated,
    /// Timed out.
    Expired,
    /// Revoked by the CA.
    Revoked,
}

/// An authorization (§7.1.4).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Authorization {
    /// The name.
    pub identifier: Identifier,
    /// Where it stands.
    pub status: AuthzStatus,
    /// The ways to prove control.
    pub challenges: Vec<Challenge>,
    /// For a wildcard name (not ordered here).
    #[serde(default)]
    pub wildcard: Option<bool>,
}

impl Authorization {
    /// The challenge of type `kind` (`http-01`, `tls-alpn-01`), if offered.
    pub fn challenge(&self, kind: &str) -> Option<&Challenge> {
        self.challenges.iter().find(|c| c.kind == kind)
    }
}

impl Check for Authorization {
    fn check(&self) -> Result<(), DocError> {
        if self.challenges.len() > MAX_CHALLENGES {
            return Err(DocError::Bad("challenges list"));
        }
        for c in &self.challenges {
            c.check()?;
        }
        Ok(())
    }
}

/// A challenge's status (§7.1.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChallengeStatus {
    /// Not yet answered.
    Pending,
    /// The CA is validating.
    Processing,
    /// Validated.
    Valid,
    /// Failed.
    Invalid,
}

/// A challenge (§7.1.5, §8).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Challenge {
    /// `http-01`, `tls-alpn-01`, `dns-01`, ...
    #[serde(rename = "type")]
    pub kind: String,
    /// Where the answer is posted.
    pub url: String,
    /// Where it stands.
    pub status: ChallengeStatus,
    /// The token (HTTP-01, TLS-ALPN-01).
    #[serde(default)]
    pub token: Option<String>,
    /// Why it failed.
    #[serde(default)]
    pub error: Option<Problem>,
}

impl Check for Challenge {
    fn check(&self) -> Result<(), DocError> {
        url(&self.url, "challenge URL")?;
        match (&self.token, self.kind.as_str()) {
            (Some(t), _) if !token_ok(t) => Err(DocError::Bad("challenge token")),
            (None, "http-01" | "tls-alpn-01") => Err(DocError::Bad("challenge without a token")),
            _ => Ok(()),
        }
    }
}

/// Renewal information (RFC 9773 §4.2).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RenewalInfo {
    /// When the CA suggests renewing.
    pub suggested_window: Window,
}

/// RFC 9773's suggested window.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Window {
    /// Its start (RFC 3339).
    pub start: String,
    /// Its end (RFC 3339).
    pub end: String,
}

impl RenewalInfo {
    /// The window in Unix seconds (checked: both times read, start before end).
    pub fn window(&self) -> Option<(u64, u64)> {
        let start = parse_time(&self.suggested_window.start)?;
        let end = parse_time(&self.suggested_window.end)?;
        (start < end).then_some((start, end))
    }
}

impl Check for RenewalInfo {
    fn check(&self) -> Result<(), DocError> {
        match self.window() {
            Some(_) => Ok(()),
            None => Err(DocError::Bad("renewal window")),
        }
    }
}

/// newAccount's payload (§7.3): the terms agreed to, contacts if given.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NewAccount<'a> {
    /// Always true: the operator agreed by configuring the CA.
    pub terms_of_service_agreed: bool,
    /// `mailto:` addresses.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    pub contact: &'a [String],
}

/// newOrder's payload (§7.4), with RFC 9773's `replaces` on a renewal the CA's renewal
/// information covers.
#[derive(Debug, Clone, Serialize)]
pub struct NewOrder<'a> {
    /// The names.
    pub identifiers: &'a [Identifier],
    /// The certificate this one replaces (RFC 9773's identifier).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaces: Option<&'a str>,
}

/// finalize's payload (§7.4): the CSR, base64url DER.
#[derive(Debug, Clone, Serialize)]
pub struct Finalize<'a> {
    /// The CSR.
    pub csr: &'a str,
}

/// A payload as JSON bytes.
pub fn payload<T: Serialize>(p: &T) -> Vec<u8> {
    serde_json::to_vec(p).unwrap_or_default()
}

#[cfg(test)]
mod tests;
