//! What a load run reports: http_load's figures (fetches/s, bytes/s, connect and
//! first-response times with min/mean/percentiles/max, max parallel, timeouts, errors by
//! kind, status codes) plus full response times, sessions and the client's own CPU time.
//! Serialises to JSON (`--json`) and prints as text. Every HTTP load client reports in
//! this shape ([`crate::tally::Tally`] makes it), the socket client and the bare clients
//! alike, and the bench reads it back for each.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::hist::Summary;

/// Every way a fetch can fail, counted separately.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(usize)]
pub enum ErrorKind {
    /// The server refused the connection (RST to our SYN).
    Refused,
    /// connect failed in another way (unreachable, no ports, ...).
    ConnectFailed,
    /// No connection within the timeout.
    ConnectTimeout,
    /// No progress on the response within the timeout.
    ResponseTimeout,
    /// The connection was reset or a read/write failed.
    Reset,
    /// The connection closed before any byte of the response.
    NoResponse,
    /// The connection closed inside the head or body.
    Truncated,
    /// The response head is not HTTP/1.x, or too long.
    BadHead,
    /// Content-Length or chunked framing is malformed.
    BadFraming,
    /// The server sent bytes nobody asked for.
    ExtraBytes,
    /// The status was not the expected one.
    BadStatus,
    /// The body length differs from the file's size.
    LengthMismatch,
    /// The body's SHA-256 differs from the file's.
    Sha256Mismatch,
    /// Every connection slot was busy (the client, not the server, is the limit).
    NoSlot,
    /// HTTPS: the TLS handshake failed (the server's certificate did not verify, an alert,
    /// the connection closed during it) or a record did not decrypt; the report's
    /// [`TlsReport::first_error`] says why.
    Tls,
}

impl ErrorKind {
    pub const ALL: [ErrorKind; 15] = [
        ErrorKind::Refused,
        ErrorKind::ConnectFailed,
        ErrorKind::ConnectTimeout,
        ErrorKind::ResponseTimeout,
        ErrorKind::Reset,
        ErrorKind::NoResponse,
        ErrorKind::Truncated,
        ErrorKind::BadHead,
        ErrorKind::BadFraming,
        ErrorKind::ExtraBytes,
        ErrorKind::BadStatus,
        ErrorKind::LengthMismatch,
        ErrorKind::Sha256Mismatch,
        ErrorKind::NoSlot,
        ErrorKind::Tls,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Refused => "refused",
            ErrorKind::ConnectFailed => "connect_failed",
            ErrorKind::ConnectTimeout => "connect_timeout",
            ErrorKind::ResponseTimeout => "response_timeout",
            ErrorKind::Reset => "reset",
            ErrorKind::NoResponse => "no_response",
            ErrorKind::Truncated => "truncated",
            ErrorKind::BadHead => "bad_head",
            ErrorKind::BadFraming => "bad_framing",
            ErrorKind::ExtraBytes => "extra_bytes",
            ErrorKind::BadStatus => "bad_status",
            ErrorKind::LengthMismatch => "length_mismatch",
            ErrorKind::Sha256Mismatch => "sha256_mismatch",
            ErrorKind::NoSlot => "no_slot",
            ErrorKind::Tls => "tls",
        }
    }

    pub fn is_timeout(self) -> bool {
        matches!(self, ErrorKind::ConnectTimeout | ErrorKind::ResponseTimeout)
    }
}

/// The result of one load run.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Report {
    /// How the load was made, e.g. "parallel 16, keep-alive".
    pub mode: String,
    /// The client that made it: "socket" (`bareweb load` on the kernel's TCP), "bare-tap"
    /// or "bare-xdp" (the engine's own TCP on a TAP or an AF_XDP socket; "-spin" added
    /// when it polls, `--spin-us`); others (wrk) as the bench names them.
    #[serde(default)]
    pub client: String,
    /// Wall time from the first launch to the end of the run, seconds.
    pub elapsed_secs: f64,
    /// Fetches begun (requests queued).
    pub fetches_started: u64,
    /// Responses received in full (any status).
    pub fetches: u64,
    /// Responses received in full with the expected status and body.
    pub fetches_ok: u64,
    /// Fetches still in flight when the time bound ended the run (not errors).
    pub unfinished: u64,
    pub fetches_per_sec: f64,
    /// Body bytes of all responses.
    pub bytes: u64,
    pub bytes_per_sec: f64,
    /// Mean body bytes per fetch.
    pub bytes_per_fetch: f64,
    /// TCP connect: connect() until the connection is established.
    pub connect: Summary,
    /// First response: request sent until the first byte of its response.
    pub first_response: Summary,
    /// Whole response: request sent until the last byte of its response.
    pub response: Summary,
    pub connections: u64,
    /// Most connections open at once.
    pub max_parallel: u64,
    /// Connect and response timeouts (also in `errors`).
    pub timeouts: u64,
    pub errors_total: u64,
    pub errors: BTreeMap<String, u64>,
    /// Responses by status code.
    pub status: BTreeMap<u16, u64>,
    pub sessions_started: u64,
    pub sessions_completed: u64,
    pub sessions_failed: u64,
    pub sessions_per_sec: f64,
    /// Session length, first connect to last byte (session mode).
    pub session: Summary,
    /// CPU time (user + system) of the load generator's thread during the run.
    pub client_cpu_secs: f64,
    pub client_cpu_us_per_fetch: f64,
    /// Client CPU time / elapsed: near 1.0 means the client was the limit.
    pub client_cpu_utilisation: f64,
    /// Segments the client's own TCP sent again (the bare clients; 0 for the socket
    /// client, whose kernel keeps its own count).
    #[serde(default)]
    pub retransmits: u64,
    /// Frames the client received as TSO/GSO super-frames, several segments in one (the
    /// bare client on a TAP with receive offloads; 0 for the others).
    #[serde(default)]
    pub offloaded_frames: u64,
    /// The URLs' scheme, "http" or "https" (empty in a report made by another client).
    #[serde(default)]
    pub scheme: String,
    /// Over HTTPS: the TLS the client negotiated, and the first TLS failure's reason.
    /// `None` over HTTP.
    #[serde(default)]
    pub tls: Option<TlsReport>,
}

/// What TLS an HTTPS run negotiated.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct TlsReport {
    /// Handshakes completed (every connection makes a full one: no resumption).
    pub handshakes: u64,
    /// Handshakes by protocol version: "TLS 1.3", "TLS 1.2".
    pub versions: BTreeMap<String, u64>,
    /// Handshakes by cipher suite (rustls's names, "TLS13_AES_128_GCM_SHA256").
    pub cipher_suites: BTreeMap<String, u64>,
    /// TCP established until the handshake completed (the request is sent after it).
    pub handshake: Summary,
    /// The first TLS failure's reason as rustls and its certificate verifier say it
    /// ("invalid peer certificate: UnknownIssuer", "certificate not valid for name …"),
    /// when there was one (`errors` has the count, kind `tls`).
    pub first_error: Option<String>,
}

impl TlsReport {
    /// "TLS 1.3", or "TLS 1.3 and TLS 1.2" when both were negotiated (most used first).
    pub fn versions_said(&self) -> String {
        let mut v: Vec<(&String, &u64)> = self.versions.iter().collect();
        v.sort_by(|a, b| b.1.cmp(a.1).then(b.0.cmp(a.0)));
        let names: Vec<&str> = v.iter().map(|(k, _)| k.as_str()).collect();
        names.join(" and ")
    }
}

impl Report {
    /// http_load-style text.
    pub fn text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{} fetches ({} ok, {} started, {} unfinished), {} max parallel, {} bytes, in {:.3} seconds   [{}]",
            self.fetches,
            self.fetches_ok,
            self.fetches_started,
            self.unfinished,
            self.max_parallel,
            self.bytes,
            self.elapsed_secs,
            self.mode
        );
        let _ = writeln!(s, "{:.1} mean bytes/fetch", self.bytes_per_fetch);
        let _ = writeln!(
            s,
            "{:.2} fetches/sec, {:.0} bytes/sec ({:.1} Mbit/s)",
            self.fetches_per_sec,
            self.bytes_per_sec,
            self.bytes_per_sec * 8.0 / 1e6
        );
        let line = |s: &mut String, name: &str, h: &Summary| {
            let _ = writeln!(
                s,
                "msecs/{name}: {:.3} mean, {:.3} min, {:.3} p50, {:.3} p99, {:.3} max  ({} samples)",
                h.mean_ms, h.min_ms, h.p50_ms, h.p99_ms, h.max_ms, h.count
            );
        };
        line(&mut s, "connect", &self.connect);
        if let Some(tls) = &self.tls {
            let list = |m: &BTreeMap<String, u64>| {
                m.iter()
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            if tls.handshakes == 0 {
                let _ = writeln!(s, "HTTPS: no TLS handshake completed");
            } else {
                let _ = writeln!(
                    s,
                    "HTTPS over {}: {} handshakes ({}; {})",
                    tls.versions_said(),
                    tls.handshakes,
                    list(&tls.versions),
                    list(&tls.cipher_suites)
                );
                line(&mut s, "tls-handshake", &tls.handshake);
            }
        }
        line(&mut s, "first-response", &self.first_response);
        line(&mut s, "response", &self.response);
        if self.sessions_started > 0 {
            let _ = writeln!(
                s,
                "sessions: {} started, {} completed, {} failed, {:.2}/sec",
                self.sessions_started,
                self.sessions_completed,
                self.sessions_failed,
                self.sessions_per_sec
            );
            line(&mut s, "session", &self.session);
        }
        let _ = writeln!(
            s,
            "{} connections, {} timeouts{}",
            self.connections,
            self.timeouts,
            if self.client.starts_with("bare") {
                format!(", {} retransmissions", self.retransmits)
            } else {
                String::new()
            }
        );
        if self.errors.is_empty() {
            let _ = writeln!(s, "errors: none");
        } else {
            let list: Vec<String> = self
                .errors
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect();
            let _ = writeln!(s, "errors: {} ({})", self.errors_total, list.join(", "));
        }
        if let Some(e) = self.tls.as_ref().and_then(|t| t.first_error.as_ref()) {
            let _ = writeln!(s, "first TLS error: {e}");
        }
        if !self.status.is_empty() {
            let _ = writeln!(s, "HTTP response codes:");
        }
        for (code, n) in &self.status {
            let _ = writeln!(s, "  code {code} -- {n}");
        }
        let _ = writeln!(
            s,
            "client CPU ({}): {:.3} s ({:.1} µs/fetch, {:.0}% of one core){}",
            if self.client.is_empty() {
                "?"
            } else {
                &self.client
            },
            self.client_cpu_secs,
            self.client_cpu_us_per_fetch,
            self.client_cpu_utilisation * 100.0,
            if self.client_cpu_utilisation >= 0.85 {
                "  — the client may have been the limit"
            } else {
                ""
            }
        );
        s
    }
}
