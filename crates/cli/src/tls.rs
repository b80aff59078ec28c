//! `serve`'s HTTPS: the certificate and key files read and checked at start (a bad one
//! refused naming the file and the reason, an expired or not-yet-valid one warned about),
//! and the engine's session maker built from them (bareweb-tls's `TlsServer` with the
//! host's getrandom and clock). The key's bytes are never printed.

use std::time::{SystemTime, UNIX_EPOCH};

use bareweb_engine::server::tls::rustls_session::Renewable;
use bareweb_engine::server::tls::TlsListen;
use bareweb_tls::server::{parse_chain, parse_key};
use bareweb_tls::{MinVersion, Options, ServerSlot, TlsServer};

use crate::opts::ServerOpts;

/// HTTPS for the engine's `Config::tls`, when `--tls-cert` is given: the files read and
/// checked, the configuration built once and shared by every core (leaked: it lives as
/// long as the process), and what a reload needs to renew the certificate. `Err` says
/// which file and why.
pub fn listen(o: &ServerOpts) -> Result<Option<(TlsListen, Renewal)>, String> {
    let Some(checked) = read_checked(o)? else {
        return Ok(None);
    };
    let acceptor: &'static Renewable =
        Box::leak(Box::new(Renewable(ServerSlot::new(checked.server))));
    Ok(Some((
        TlsListen {
            port: o.settings.tls.port(),
            acceptor,
        },
        Renewal {
            cert: checked.cert_path,
            key: checked.key_path,
            slot: &acceptor.0,
        },
    )))
}

/// A certificate renewed by `serve`'s reload: the same two files read again, checked as
/// at start, and put in service for the connections accepted after it (the protocol
/// versions and ticket keys stay; a connection in its handshake finishes on the old one).
pub struct Renewal {
    cert: String,
    key: String,
    slot: &'static ServerSlot,
}

impl Renewal {
    /// The files read and checked again: the server to [`Renewal::install`], and what to
    /// say about it. `Err` (the old certificate stays) names the file and the reason.
    pub fn read(&self) -> Result<(TlsServer, String), String> {
        let current = self.slot.current();
        let c = check_files(&self.cert, &self.key, |cert, key| {
            current.with_certificate(cert, key)
        })?;
        let until = match c.not_after {
            Some(t) => format!(", valid for {} more days", (t - now()) / 86_400),
            None => String::new(),
        };
        Ok((
            c.server,
            format!("certificate {} read again{until}", self.cert),
        ))
    }

    /// Connections accepted from now on get `server`.
    pub fn install(&self, server: TlsServer) {
        self.slot.replace(server);
    }
}

/// The certificate and key files as read and checked at start.
pub struct Checked {
    /// The chain's PEM bytes.
    pub cert: Vec<u8>,
    /// The key's PEM bytes (never printed).
    pub key: Vec<u8>,
    /// The server they make (the proof that they go together).
    pub server: TlsServer,
    /// The leaf's notAfter (Unix seconds), when its validity parses.
    not_after: Option<i64>,
    cert_path: String,
    key_path: String,
}

/// `--tls-cert` and `--tls-key` read and checked as a start-up must (unreadable, not
/// PEM, RSA or another unusable key, a key not matching the certificate: refused naming
/// the file and the reason; outside its dates: a warning), for `serve` and for the
/// images `run` and `build` make. `None` without `--tls-cert`.
pub fn read_checked(o: &ServerOpts) -> Result<Option<Checked>, String> {
    let t = o.settings.tls;
    let (Some(cert_path), Some(key_path)) = (o.given("tls-cert"), o.given("tls-key")) else {
        return Ok(None);
    };
    let options = Options {
        min_version: if t.min13 {
            MinVersion::Tls13
        } else {
            MinVersion::Tls12
        },
        ..Options::default()
    };
    let platform = bareweb_tls::host::platform();
    check_files(cert_path, key_path, |cert, key| {
        TlsServer::new(cert, key, &options, &platform)
    })
    .map(Some)
}

/// The system's clock, Unix seconds.
fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Reads and checks a certificate chain and key file; `make` builds the server from their
/// bytes (refusing a key that does not match). A certificate outside its dates is warned
/// about on stderr.
fn check_files(
    cert_path: &str,
    key_path: &str,
    make: impl FnOnce(&[u8], &[u8]) -> Result<TlsServer, bareweb_tls::server::ConfigError>,
) -> Result<Checked, String> {
    let read = |opt: &str, path: &str| {
        std::fs::read(path).map_err(|e| format!("--{opt} {path}: cannot read it: {e}"))
    };
    let cert = read("tls-cert", cert_path)?;
    let key = read("tls-key", key_path)?;
    let chain = parse_chain(&cert).map_err(|e| format!("--tls-cert {cert_path}: {e}"))?;
    parse_key(&key).map_err(|e| format!("--tls-key {key_path}: {e}"))?;
    let server = make(&cert, &key)
        .map_err(|e| format!("--tls-cert {cert_path} with --tls-key {key_path}: {e}"))?;
    let dates = validity(&chain[0]);
    if let Some(warning) = dates.and_then(|v| dates_warning(v, now() as u64)) {
        eprintln!("bareweb: warning: --tls-cert {cert_path}: {warning}");
    }
    Ok(Checked {
        cert,
        key,
        server,
        not_after: dates.map(|(_, until)| until),
        cert_path: cert_path.to_string(),
        key_path: key_path.to_string(),
    })
}

/// The boot module for the bare machine: the site image, then the certificate and key
/// when HTTPS is asked for (`bareweb_settings::tls_payload`: the kernel splits them at
/// boot). Whether the bytes hold a private key is `checked.is_some()`.
pub fn with_pems(mut site: Vec<u8>, checked: Option<&Checked>) -> Result<Vec<u8>, String> {
    if let Some(c) = checked {
        let head = bareweb_settings::tls_payload::head(c.cert.len(), c.key.len())
            .ok_or("the certificate or key is larger than 4 GiB")?;
        site.extend_from_slice(&head);
        site.extend_from_slice(&c.cert);
        site.extend_from_slice(&c.key);
    }
    Ok(site)
}

/// The boot module with the ACME client's roots (`--acme-ca`, read and checked by
/// [`crate::acme::read_roots`]) after the site and any certificate (the CA trailer of
/// `bareweb_settings::tls_payload`; the kernel's ACME client trusts them instead of the
/// Web PKI's roots).
pub fn with_ca(mut module: Vec<u8>, roots: Option<&[u8]>) -> Result<Vec<u8>, String> {
    if let Some(pem) = roots {
        let head = bareweb_settings::tls_payload::ca_head(pem.len())
            .ok_or("--acme-ca: the file is larger than 4 GiB")?;
        module.extend_from_slice(&head);
        module.extend_from_slice(pem);
    }
    Ok(module)
}

/// Writes `bytes` to `path` readable by its owner alone (mode 0600, set as the file is
/// made, so the key is never readable by others, even for an instant), replacing a file
/// there.
pub fn write_private(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::fs::PermissionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    // An existing file keeps its mode through open(): set it.
    f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    f.write_all(bytes)
}

/// What to say about a certificate valid from `not_before` to `not_after` (Unix
/// seconds) at `now`: nothing while it is valid.
fn dates_warning((not_before, not_after): (i64, i64), now: u64) -> Option<String> {
    let now = now as i64;
    if now < not_before {
        Some(format!(
            "not valid yet (from {} s from now): clients refuse it until then",
            not_before - now
        ))
    } else if now > not_after {
        Some(format!(
            "expired {} days ago: clients refuse it",
            (now - not_after) / 86_400
        ))
    } else {
        None
    }
}

/// The validity (notBefore, notAfter, Unix seconds) of a DER certificate (RFC 5280
/// §4.1: Certificate → tbsCertificate → [version], serialNumber, signature, issuer,
/// validity), or `None` when it does not parse so.
fn validity(der: &[u8]) -> Option<(i64, i64)> {
    let (tag, cert, _) = tlv(der)?;
    if tag != 0x30 {
        return None;
    }
    let (tag, mut tbs, _) = tlv(cert)?;
    if tag != 0x30 {
        return None;
    }
    let mut field = |want: Option<u8>| -> Option<(u8, &[u8])> {
        let (tag, value, rest) = tlv(tbs)?;
        if want.is_some_and(|w| w != tag) {
            return None;
        }
        tbs = rest;
        Some((tag, value))
    };
    let (tag, value) = field(None)?;
    if tag == 0xa0 {
        field(Some(0x02))?; // the serial number after the version
    } else if tag != 0x02 {
        return None;
    }
    let _ = value;
    field(Some(0x30))?; // signature
    field(Some(0x30))?; // issuer
    let (_, validity) = field(Some(0x30))?;
    let (t1, v1, rest) = tlv(validity)?;
    let (t2, v2, _) = tlv(rest)?;
    Some((time(t1, v1)?, time(t2, v2)?))
}

/// One DER tag, its value and what follows.
fn tlv(b: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let tag = *b.first()?;
    let first = *b.get(1)?;
    let (len, head) = if first < 0x80 {
        (usize::from(first), 2)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 {
            return None;
        }
        let len = b
            .get(2..2 + n)?
            .iter()
            .fold(0usize, |a, &x| (a << 8) | usize::from(x));
        (len, 2 + n)
    };
    let value = b.get(head..head.checked_add(len)?)?;
    Some((tag, value, &b[head + len..]))
}

/// UTCTime (`YYMMDDHHMMSSZ`, tag 0x17) or GeneralizedTime (`YYYYMMDDHHMMSSZ`, 0x18) as
/// Unix seconds.
fn time(tag: u8, v: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(v).ok()?.strip_suffix('Z')?;
    let (year, rest) = match tag {
        0x17 if s.len() == 12 => {
            let yy: i64 = s[..2].parse().ok()?;
            (if yy >= 50 { 1900 + yy } else { 2000 + yy }, &s[2..])
        }
        0x18 if s.len() == 14 => (s[..4].parse().ok()?, &s[4..]),
        _ => return None,
    };
    let n = |i: usize| -> Option<i64> { rest.get(i..i + 2)?.parse().ok() };
    let (month, day, h, m, sec) = (n(0)?, n(2)?, n(4)?, n(6)?, n(8)?);
    Some(days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + sec)
}

/// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    const CERT: &[u8] = include_bytes!("../../tls/testdata/cert.pem");

    /// The boot module `run` and `build` write: the site, HTTPS's trailer, the ACME
    /// client's roots; the kernel's split finds each.
    #[test]
    fn the_roots_follow_the_certificate_and_the_kernel_splits_them() {
        use bareweb_settings::tls_payload::split;
        let mut site = vec![0u8; 64];
        site[16..24].copy_from_slice(&64u64.to_le_bytes());
        let only = with_ca(site.clone(), Some(b"ROOTS")).unwrap();
        let s = split(&only).unwrap();
        assert_eq!(
            (s.site, s.pems, s.ca),
            (&site[..], None, Some(&b"ROOTS"[..]))
        );
        assert_eq!(with_ca(site.clone(), None).unwrap(), site);
        let key = include_bytes!("../../tls/testdata/key.pem");
        let server = TlsServer::new(
            CERT,
            key,
            &Options::default(),
            &bareweb_tls::host::platform(),
        )
        .unwrap();
        let checked = Checked {
            cert: CERT.to_vec(),
            key: key.to_vec(),
            server,
            not_after: None,
            cert_path: "cert.pem".into(),
            key_path: "key.pem".into(),
        };
        let both = with_ca(with_pems(site.clone(), Some(&checked)).unwrap(), Some(b"R")).unwrap();
        let s = split(&both).unwrap();
        assert_eq!(s.pems, Some((CERT, &key[..])));
        assert_eq!(s.ca, Some(&b"R"[..]));
    }

    #[test]
    fn reads_a_certificates_dates_and_warns_outside_them() {
        let chain = parse_chain(CERT).unwrap();
        let (from, to) = validity(&chain[0]).unwrap();
        // `openssl x509 -dates`: Nov 28 09:55:02 2026 GMT to Nov 4 09:55:02 2126 GMT.
        assert_eq!(from, 1_795_859_702);
        assert_eq!(to - from, 36_500 * 86_400);
        assert_eq!(dates_warning((from, to), from as u64 + 1), None);
        assert!(dates_warning((from, to), from as u64 - 10)
            .unwrap()
            .contains("not valid yet"));
        assert!(dates_warning((from, to), to as u64 + 3 * 86_400)
            .unwrap()
            .starts_with("expired 3 days ago"));
        assert_eq!(validity(b"\x30\x03\x02\x01\x00"), None);
        assert_eq!(validity(b""), None);
    }
}
