//! The access record: one per response, handed to the platform's [`AccessLog`], and its
//! Common Log Format line ([`Clf`]), written the same way by the host and the kernel.
//!
//! Owns nothing but the record's shape and its text form; it never allocates.

use core::fmt;
use core::net::IpAddr;

use super::clf_date;

/// One served request, for the access log.
#[derive(Debug, Clone, Copy)]
pub struct AccessRecord<'a> {
    /// Client address: the connection's peer, or the client a PROXY protocol header
    /// named (which may be IPv6 though the engine speaks IPv4 only).
    pub peer: IpAddr,
    /// Request line as received (up to the first CRLF), or empty for parse errors.
    pub request_line: &'a [u8],
    /// Status code.
    pub status: u16,
    /// Bytes of the response body on the wire (an error page's inline body too).
    pub bytes: usize,
    /// Wall-clock seconds.
    pub unix_secs: u64,
}

impl<'a> AccessRecord<'a> {
    /// The record as a Common Log Format line (no line end):
    /// `10.0.0.1 - - [14/Nov/2023:22:13:20 +0000] "GET / HTTP/1.1" 200 15`.
    pub fn clf(&self) -> Clf<'_, 'a> {
        Clf(self)
    }
}

/// Common Log Format [`Display`](fmt::Display) of an [`AccessRecord`]. The request line is
/// escaped (`escape_default` on its UTF-8, or `(not UTF-8)`), so a client cannot forge log
/// lines with control characters or quotes.
pub struct Clf<'r, 'a>(&'r AccessRecord<'a>);

impl fmt::Display for Clf<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self.0;
        write!(f, "{} - - [{}] \"", r.peer, clf_date(r.unix_secs))?;
        match core::str::from_utf8(r.request_line) {
            Ok(line) => write!(f, "{}", line.escape_default())?,
            Err(_) => f.write_str("(not UTF-8)")?,
        }
        write!(f, "\" {} {}", r.status, r.bytes)
    }
}

/// Receives access records (the host prints them on stdout, the kernel on its console).
pub trait AccessLog {
    /// Called once per response.
    fn record(&mut self, rec: &AccessRecord<'_>);
}

/// An access log that drops everything.
pub struct NoLog;

impl AccessLog for NoLog {
    fn record(&mut self, _: &AccessRecord<'_>) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn common_log_format_escapes_the_request_line() {
        let r = AccessRecord {
            peer: IpAddr::from([10, 0, 0, 1]),
            request_line: b"GET /a\"b HTTP/1.1",
            status: 200,
            bytes: 15,
            unix_secs: 1_700_000_000,
        };
        assert_eq!(
            r.clf().to_string(),
            "10.0.0.1 - - [14/Nov/2023:22:13:20 +0000] \"GET /a\\\"b HTTP/1.1\" 200 15"
        );
        let bad = AccessRecord {
            request_line: &[0xff, 0x20],
            ..r
        };
        assert!(bad.clf().to_string().contains("\"(not UTF-8)\""));
        let v6 = AccessRecord {
            peer: "2001:db8::7".parse().unwrap(),
            ..r
        };
        assert!(v6
            .clf()
            .to_string()
            .starts_with("2001:db8::7 - - [14/Nov/2023"));
    }
}
