//! The access record: one per response, handed to the platform's [`AccessLog`], and its
//! text forms, written the same way by the host and the kernel: Common Log Format
//! ([`Clf`]), Combined Log Format (Common plus the referer and user agent) and one JSON
//! object per line ([`LogFormat`], [`AccessRecord::line`]).
//!
//! Owns nothing but the record's shape and its text forms; it never allocates. Every byte
//! that came from the network is escaped (request line, referer, user agent, host), so a
//! client can neither forge a line nor make one that is not valid JSON.

use core::fmt;
use core::net::IpAddr;

use super::{clf_date, iso_date};

/// The most bytes of one field taken from the request (the request line, a header's
/// value) a log line holds; the rest is cut (after escaping a line stays bounded, so a
/// platform's line buffer of [`LINE_MAX`] always holds one).
pub const FIELD_MAX: usize = 2048;

/// An upper bound on one formatted line's length, its end included: four fields of
/// [`FIELD_MAX`] bytes escaped at six bytes each at most, and the fixed text.
pub const LINE_MAX: usize = 4 * FIELD_MAX * 6 + 512;

/// One served request, for the access log.
#[derive(Debug, Clone, Copy)]
pub struct AccessRecord<'a> {
    /// Client address: the connection's peer, or the client a PROXY protocol header
    /// named (which may be IPv6 though the engine speaks IPv4 only).
    pub peer: IpAddr,
    /// Request line as received (up to the first CRLF), or empty for parse errors.
    pub request_line: &'a [u8],
    /// The request head as received (request line and header lines), where the formats
    /// that show headers find them ([`AccessRecord::header`]); empty when there is none.
    pub head: &'a [u8],
    /// Status code.
    pub status: u16,
    /// Bytes of the response body on the wire (an error page's inline body too).
    pub bytes: usize,
    /// Wall-clock seconds.
    pub unix_secs: u64,
    /// Microseconds from the request's start (a connection's first request: the
    /// connection's establishment; a later one: its first byte) to its response started
    /// (the record is made when the response starts; its bytes are sent after).
    pub duration_us: u64,
}

/// Which text an access log writes per response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// Common Log Format: `10.0.0.1 - - [14/Nov/2023:22:13:20 +0000] "GET / HTTP/1.1" 200 15`.
    #[default]
    Common,
    /// Combined Log Format: Common, then `"referer" "user agent"` (`"-"` when absent).
    Combined,
    /// One JSON object per line: time, client, method, path, protocol, status, bytes,
    /// duration_us, host, referer, user_agent (`null` when absent).
    Json,
}

impl LogFormat {
    /// The format's name on the command line (`common`, `combined`, `json`).
    pub fn name(self) -> &'static str {
        match self {
            LogFormat::Common => "common",
            LogFormat::Combined => "combined",
            LogFormat::Json => "json",
        }
    }

    /// The format named `name`.
    pub fn from_name(name: &str) -> Option<LogFormat> {
        [LogFormat::Common, LogFormat::Combined, LogFormat::Json]
            .into_iter()
            .find(|f| f.name() == name)
    }
}

impl<'a> AccessRecord<'a> {
    /// The record as a Common Log Format line (no line end):
    /// `10.0.0.1 - - [14/Nov/2023:22:13:20 +0000] "GET / HTTP/1.1" 200 15`.
    pub fn clf(&self) -> Clf<'_, 'a> {
        Clf(self)
    }

    /// The record as a line of `format` (no line end).
    pub fn line(&self, format: LogFormat) -> Line<'_, 'a> {
        Line(self, format)
    }

    /// The value of the request's first header line named `name` (ASCII case ignored),
    /// without surrounding spaces and tabs.
    pub fn header(&self, name: &[u8]) -> Option<&'a [u8]> {
        let lines = self.head.split(|&b| b == b'\n').skip(1);
        let mut fields = lines
            .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
            .take_while(|l| !l.is_empty());
        fields.find_map(|l| {
            let colon = l.iter().position(|&b| b == b':')?;
            l[..colon]
                .eq_ignore_ascii_case(name)
                .then(|| l[colon + 1..].trim_ascii())
        })
    }

    /// The request line's method, target and protocol (empty where it has none).
    fn parts(&self) -> (&'a [u8], &'a [u8], &'a [u8]) {
        let mut it = self.request_line.splitn(3, |&b| b == b' ');
        let method = it.next().unwrap_or(&[]);
        let target = it.next().unwrap_or(&[]);
        let proto = it.next().unwrap_or(&[]);
        (method, target, proto)
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
        match core::str::from_utf8(cut(r.request_line)) {
            Ok(line) => write!(f, "{}", line.escape_default())?,
            Err(_) => f.write_str("(not UTF-8)")?,
        }
        write!(f, "\" {} {}", r.status, r.bytes)
    }
}

/// An [`AccessRecord`] as a line of a [`LogFormat`], from [`AccessRecord::line`].
pub struct Line<'r, 'a>(&'r AccessRecord<'a>, LogFormat);

impl fmt::Display for Line<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self.0;
        match self.1 {
            LogFormat::Common => Clf(r).fmt(f),
            LogFormat::Combined => {
                Clf(r).fmt(f)?;
                write!(
                    f,
                    " \"{}\" \"{}\"",
                    Quoted(r.header(b"referer").unwrap_or(b"-")),
                    Quoted(r.header(b"user-agent").unwrap_or(b"-"))
                )
            }
            LogFormat::Json => {
                let (method, path, proto) = r.parts();
                write!(
                    f,
                    "{{\"time\":\"{}\",\"client\":\"{}\",\"method\":\"{}\",\"path\":\"{}\",\
                     \"protocol\":\"{}\",\"status\":{},\"bytes\":{},\"duration_us\":{},\
                     \"host\":{},\"referer\":{},\"user_agent\":{}}}",
                    iso_date(r.unix_secs),
                    r.peer,
                    Json(method),
                    Json(path),
                    Json(proto),
                    r.status,
                    r.bytes,
                    r.duration_us,
                    JsonOr(r.header(b"host")),
                    JsonOr(r.header(b"referer")),
                    JsonOr(r.header(b"user-agent")),
                )
            }
        }
    }
}

/// At most [`FIELD_MAX`] bytes of `b`.
fn cut(b: &[u8]) -> &[u8] {
    &b[..b.len().min(FIELD_MAX)]
}

/// Bytes as Apache writes them in a quoted log field: printable ASCII as it is, except
/// `"` and `\` escaped with a backslash; every other byte `\xHH`.
struct Quoted<'a>(&'a [u8]);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = cut(self.0);
        while !rest.is_empty() {
            let plain = rest
                .iter()
                .position(|&b| !(0x20..0x7f).contains(&b) || b == b'"' || b == b'\\')
                .unwrap_or(rest.len());
            // ASCII printable bytes: always UTF-8.
            f.write_str(core::str::from_utf8(&rest[..plain]).unwrap_or(""))?;
            let Some(&b) = rest.get(plain) else { break };
            match b {
                b'"' => f.write_str("\\\"")?,
                b'\\' => f.write_str("\\\\")?,
                _ => write!(f, "\\x{b:02x}")?,
            }
            rest = &rest[plain + 1..];
        }
        Ok(())
    }
}

/// Bytes as the inside of a JSON string (RFC 8259): `"` and `\` escaped, control
/// characters (C0, DEL and C1, which terminals act on) as `\u00XX`, U+2028 and U+2029 as `\u2028`/`\u2029` (so the line
/// is valid JavaScript too), and bytes that are not UTF-8 as U+FFFD.
struct Json<'a>(&'a [u8]);

impl fmt::Display for Json<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for chunk in cut(self.0).utf8_chunks() {
            let mut s = chunk.valid();
            while !s.is_empty() {
                let plain = s
                    .char_indices()
                    .find(|&(_, c)| {
                        c.is_control() || matches!(c, '"' | '\\' | '\u{2028}' | '\u{2029}')
                    })
                    .map_or(s.len(), |(i, _)| i);
                f.write_str(&s[..plain])?;
                let Some(c) = s[plain..].chars().next() else {
                    break;
                };
                match c {
                    '"' => f.write_str("\\\"")?,
                    '\\' => f.write_str("\\\\")?,
                    '\n' => f.write_str("\\n")?,
                    '\r' => f.write_str("\\r")?,
                    '\t' => f.write_str("\\t")?,
                    _ => write!(f, "\\u{:04x}", u32::from(c))?,
                }
                s = &s[plain + c.len_utf8()..];
            }
            if !chunk.invalid().is_empty() {
                f.write_str("\\ufffd")?;
            }
        }
        Ok(())
    }
}

/// A JSON string of the bytes, or `null`.
struct JsonOr<'a>(Option<&'a [u8]>);

impl fmt::Display for JsonOr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(v) => write!(f, "\"{}\"", Json(v)),
            None => f.write_str("null"),
        }
    }
}

/// Receives access records (the host prints them on stdout or a file, the kernel on its
/// console).
pub trait AccessLog {
    /// Called once per response.
    fn record(&mut self, rec: &AccessRecord<'_>);

    /// Called at the end of every round of the server (and after each step of the split
    /// API): a log that buffers its lines writes them out here.
    fn flush(&mut self) {}
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
            head: b"",
            status: 200,
            bytes: 15,
            unix_secs: 1_700_000_000,
            duration_us: 0,
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

    /// A request as curl sends it, with a referer, captured from `curl -v -e`.
    const CURL_HEAD: &[u8] = b"GET /docs/a.html?x=1 HTTP/1.1\r\nHost: 10.0.0.2\r\n\
        User-Agent: curl/8.5.0\r\nAccept: */*\r\nReferer: http://example.com/\r\n\r\n";

    fn curl_record(head: &[u8]) -> AccessRecord<'_> {
        let line_end = head.iter().position(|&b| b == b'\r').unwrap_or(head.len());
        AccessRecord {
            peer: IpAddr::from([10, 0, 0, 1]),
            request_line: &head[..line_end],
            head,
            status: 200,
            bytes: 15,
            unix_secs: 1_700_000_000,
            duration_us: 125,
        }
    }

    #[test]
    fn combined_adds_the_referer_and_user_agent() {
        let r = curl_record(CURL_HEAD);
        assert_eq!(
            r.line(LogFormat::Combined).to_string(),
            "10.0.0.1 - - [14/Nov/2023:22:13:20 +0000] \"GET /docs/a.html?x=1 HTTP/1.1\" \
             200 15 \"http://example.com/\" \"curl/8.5.0\""
        );
        assert_eq!(r.line(LogFormat::Common).to_string(), r.clf().to_string());
        // Absent headers are `-`; a hostile one is escaped byte by byte.
        let head = b"GET / HTTP/1.0\r\nuser-agent: a\"b\\c\x01\xff\r\n\r\nReferer: late\r\n";
        let r = curl_record(head);
        assert!(
            r.line(LogFormat::Combined)
                .to_string()
                .ends_with(" \"-\" \"a\\\"b\\\\c\\x01\\xff\""),
            "{}",
            r.line(LogFormat::Combined)
        );
    }

    #[test]
    fn json_is_one_object_with_every_field() {
        let r = curl_record(CURL_HEAD);
        let line = r.line(LogFormat::Json).to_string();
        assert_eq!(
            line,
            "{\"time\":\"2023-11-14T22:13:20Z\",\"client\":\"10.0.0.1\",\"method\":\"GET\",\
             \"path\":\"/docs/a.html?x=1\",\"protocol\":\"HTTP/1.1\",\"status\":200,\
             \"bytes\":15,\"duration_us\":125,\"host\":\"10.0.0.2\",\
             \"referer\":\"http://example.com/\",\"user_agent\":\"curl/8.5.0\"}"
        );
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["user_agent"], "curl/8.5.0");
        // No request (a 408): empty strings and nulls, still one object.
        let none = AccessRecord {
            request_line: b"",
            head: b"",
            ..r
        };
        let v: serde_json::Value =
            serde_json::from_str(&none.line(LogFormat::Json).to_string()).unwrap();
        assert_eq!(v["method"], "");
        assert!(v["host"].is_null() && v["user_agent"].is_null());
    }

    /// Whatever bytes a client puts in the request line and the headers, the JSON line
    /// is one line, parses, and gives back the header's text (its valid UTF-8; U+FFFD for
    /// the rest).
    #[test]
    fn hostile_bytes_never_break_a_json_line() {
        use proptest::prelude::*;
        let bytes = proptest::collection::vec(any::<u8>(), 0..64);
        proptest!(|(ua in bytes.clone(), path in bytes)| {
            let mut head = b"GET ".to_vec();
            head.extend(path.iter().filter(|&&b| b != b'\n' && b != b' '));
            head.extend_from_slice(b" HTTP/1.1\r\nUser-Agent: ");
            let ua: alloc::vec::Vec<u8> =
                ua.into_iter().filter(|&b| b != b'\n' && b != b'\r').collect();
            head.extend_from_slice(&ua);
            head.extend_from_slice(b"\r\n\r\n");
            let line_end = head.iter().position(|&b| b == b'\r').unwrap();
            let r = AccessRecord {
                request_line: &head[..line_end],
                head: &head,
                ..curl_record(CURL_HEAD)
            };
            for format in [LogFormat::Common, LogFormat::Combined, LogFormat::Json] {
                let line = r.line(format).to_string();
                prop_assert!(!line.contains('\n') && !line.contains('\r'));
                prop_assert!(line.chars().all(|c| c == ' ' || !c.is_control()));
            }
            let line = r.line(LogFormat::Json).to_string();
            let v: serde_json::Value = serde_json::from_str(&line).unwrap();
            let want = alloc::string::String::from_utf8_lossy(ua.trim_ascii());
            prop_assert_eq!(v["user_agent"].as_str().unwrap(), &*want);
        });
    }

    #[test]
    fn long_fields_are_cut_so_a_line_stays_bounded() {
        let mut head = b"GET /".to_vec();
        head.extend(core::iter::repeat_n(b'"', 10_000));
        head.extend_from_slice(b" HTTP/1.1\r\nReferer: ");
        head.extend(core::iter::repeat_n(0x01, 10_000));
        head.extend_from_slice(b"\r\nUser-Agent: ");
        head.extend(core::iter::repeat_n(b'\\', 10_000));
        head.extend_from_slice(b"\r\nHost: ");
        head.extend(core::iter::repeat_n(0x7f, 10_000));
        head.extend_from_slice(b"\r\n\r\n");
        let r = curl_record(&head);
        for format in [LogFormat::Common, LogFormat::Combined, LogFormat::Json] {
            let n = r.line(format).to_string().len();
            assert!(n < LINE_MAX, "{format:?}: {n}");
        }
    }

    #[test]
    fn a_header_is_found_by_name_within_the_head_only() {
        let r = curl_record(CURL_HEAD);
        assert_eq!(r.header(b"HOST"), Some(&b"10.0.0.2"[..]));
        assert_eq!(r.header(b"accept"), Some(&b"*/*"[..]));
        assert_eq!(r.header(b"cookie"), None);
        // The request line is no header, even with a colon in it.
        let r = curl_record(b"GET /a:b HTTP/1.1\r\n\r\n");
        assert_eq!(r.header(b"get /a"), None);
    }
}
