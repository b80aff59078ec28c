//! The counts and latency histograms of an HTTP load run, and the [`Report`] made of
//! them: one [`Tally`] for every HTTP load client (the socket client of [`crate::load`],
//! the bare client of `bareweb load --tap/--xdp`), so that their reports have one shape
//! and one meaning. Allocated once, when the run starts (the histograms preallocated with
//! fixed bounds): counting a fetch never allocates.

use bareweb_tls::rustls::{CipherSuite, ProtocolVersion};

use crate::hist::Histogram;
use crate::load::Expect;
use crate::report::{ErrorKind, Report, TlsReport};

/// Counters and histograms of a run.
pub struct Tally {
    pub fetches_started: u64,
    /// Responses received in full (any status).
    pub fetches: u64,
    pub fetches_ok: u64,
    pub bytes: u64,
    pub connections: u64,
    pub max_parallel: u64,
    pub errors: [u64; ErrorKind::ALL.len()],
    status: Box<[u64; 600]>,
    pub sessions_started: u64,
    pub sessions_completed: u64,
    pub sessions_failed: u64,
    pub connect: Histogram,
    pub first: Histogram,
    pub response: Histogram,
    pub session: Histogram,
    /// Over HTTPS (the socket client sets it): handshakes and the first TLS failure.
    pub tls: Option<TlsTally>,
}

/// The TLS counts of an HTTPS run: fixed arrays and a histogram, allocated at start; only
/// the first failure's words are allocated, once.
pub struct TlsTally {
    /// Handshakes completed over TLS 1.3 and TLS 1.2 (and any other version).
    versions: [u64; 3],
    /// Handshakes per cipher suite, in the order first seen (the provider has six).
    suites: [(CipherSuite, u64); 8],
    pub handshake: Histogram,
    pub first_error: Option<String>,
}

impl Default for TlsTally {
    fn default() -> Self {
        Self::new()
    }
}

impl TlsTally {
    pub fn new() -> TlsTally {
        TlsTally {
            versions: [0; 3],
            suites: [(CipherSuite::Unknown(0), 0); 8],
            handshake: Histogram::new(),
            first_error: None,
        }
    }

    /// A handshake completed in `ns` with `version` and `suite`.
    pub fn handshake(&mut self, version: ProtocolVersion, suite: CipherSuite, ns: u64) {
        let v = match version {
            ProtocolVersion::TLSv1_3 => 0,
            ProtocolVersion::TLSv1_2 => 1,
            _ => 2,
        };
        self.versions[v] += 1;
        if let Some(e) = self.suites.iter_mut().find(|(s, n)| *s == suite || *n == 0) {
            *e = (suite, e.1 + 1);
        }
        self.handshake.record(ns);
    }

    /// A TLS failure: its words are kept if it is the first.
    pub fn failed(&mut self, why: &dyn std::fmt::Display) {
        if self.first_error.is_none() {
            self.first_error = Some(why.to_string());
        }
    }

    fn report(&self) -> TlsReport {
        let names = ["TLS 1.3", "TLS 1.2", "TLS (other)"];
        TlsReport {
            handshakes: self.versions.iter().sum(),
            versions: names
                .iter()
                .zip(self.versions)
                .filter(|(_, n)| *n > 0)
                .map(|(k, n)| (k.to_string(), n))
                .collect(),
            cipher_suites: self
                .suites
                .iter()
                .filter(|(_, n)| *n > 0)
                .map(|(s, n)| {
                    (
                        s.as_str().map_or_else(|| format!("{s:?}"), String::from),
                        *n,
                    )
                })
                .collect(),
            handshake: self.handshake.summary(),
            first_error: self.first_error.clone(),
        }
    }
}

impl Default for Tally {
    fn default() -> Self {
        Self::new()
    }
}

/// What a complete response is worth: `None` when good, else the error it counts as.
/// `expect` lists the bodies a good response may carry (one per `--verify` directory, so a
/// run across a content change accepts either version whole); empty means unchecked.
/// `sha256` is asked for only when some length matched.
pub fn verdict(
    expect_status: u16,
    expect: &[Expect],
    status: u16,
    body: u64,
    sha256: impl FnOnce() -> [u8; 32],
) -> Option<ErrorKind> {
    if status != expect_status {
        return Some(ErrorKind::BadStatus);
    }
    if expect.is_empty() {
        return None;
    }
    if !expect.iter().any(|x| x.len == body) {
        return Some(ErrorKind::LengthMismatch);
    }
    let got = sha256();
    if expect.iter().any(|x| x.len == body && x.sha256 == got) {
        None
    } else {
        Some(ErrorKind::Sha256Mismatch)
    }
}

impl Tally {
    pub fn new() -> Tally {
        Tally {
            fetches_started: 0,
            fetches: 0,
            fetches_ok: 0,
            bytes: 0,
            connections: 0,
            max_parallel: 0,
            errors: [0; ErrorKind::ALL.len()],
            status: Box::new([0; 600]),
            sessions_started: 0,
            sessions_completed: 0,
            sessions_failed: 0,
            connect: Histogram::new(),
            first: Histogram::new(),
            response: Histogram::new(),
            session: Histogram::new(),
            tls: None,
        }
    }

    /// `n` fetches failed with `kind`.
    pub fn error(&mut self, kind: ErrorKind, n: u64) {
        self.errors[kind as usize] += n;
    }

    pub fn errors_total(&self) -> u64 {
        self.errors.iter().sum()
    }

    /// A response arrived in full: `first_ns` from the request to its first byte,
    /// `whole_ns` to its last; `verdict` as [`verdict`] gave it. Returns whether it was
    /// good.
    pub fn response(
        &mut self,
        status: u16,
        body: u64,
        first_ns: u64,
        whole_ns: u64,
        verdict: Option<ErrorKind>,
    ) -> bool {
        self.fetches += 1;
        self.bytes += body;
        self.status[(status as usize).min(599)] += 1;
        self.first.record(first_ns);
        self.response.record(whole_ns);
        match verdict {
            Some(k) => {
                self.error(k, 1);
                false
            }
            None => {
                self.fetches_ok += 1;
                true
            }
        }
    }

    /// The report: `mode` as [`crate::LoadConfig::describe`] says it, `client` the kind
    /// of client, `secs` the run's wall time, `unfinished` fetches still in flight at its
    /// end, `cpu` the client's CPU seconds.
    pub fn report(
        &self,
        mode: String,
        client: &str,
        secs: f64,
        unfinished: u64,
        cpu: f64,
    ) -> Report {
        let per_sec = |v: u64| if secs > 0.0 { v as f64 / secs } else { 0.0 };
        Report {
            mode,
            client: client.to_string(),
            elapsed_secs: secs,
            fetches_started: self.fetches_started,
            fetches: self.fetches,
            fetches_ok: self.fetches_ok,
            unfinished,
            fetches_per_sec: per_sec(self.fetches),
            bytes: self.bytes,
            bytes_per_sec: per_sec(self.bytes),
            bytes_per_fetch: if self.fetches > 0 {
                self.bytes as f64 / self.fetches as f64
            } else {
                0.0
            },
            connect: self.connect.summary(),
            first_response: self.first.summary(),
            response: self.response.summary(),
            connections: self.connections,
            max_parallel: self.max_parallel,
            timeouts: ErrorKind::ALL
                .iter()
                .filter(|k| k.is_timeout())
                .map(|k| self.errors[*k as usize])
                .sum(),
            errors_total: self.errors_total(),
            errors: ErrorKind::ALL
                .iter()
                .filter(|k| self.errors[**k as usize] > 0)
                .map(|k| (k.name().to_string(), self.errors[*k as usize]))
                .collect(),
            status: (0..600u16)
                .filter(|c| self.status[*c as usize] > 0)
                .map(|c| (c, self.status[c as usize]))
                .collect(),
            sessions_started: self.sessions_started,
            sessions_completed: self.sessions_completed,
            sessions_failed: self.sessions_failed,
            sessions_per_sec: per_sec(self.sessions_completed),
            session: self.session.summary(),
            client_cpu_secs: cpu,
            client_cpu_us_per_fetch: if self.fetches > 0 {
                cpu * 1e6 / self.fetches as f64
            } else {
                0.0
            },
            client_cpu_utilisation: if secs > 0.0 { cpu / secs } else { 0.0 },
            retransmits: 0,
            offloaded_frames: 0,
            scheme: if self.tls.is_some() { "https" } else { "http" }.into(),
            tls: self.tls.as_ref().map(TlsTally::report),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tally_makes_the_report() {
        let mut t = Tally::new();
        t.fetches_started = 3;
        t.connections = 2;
        let x = Expect {
            len: 4,
            sha256: [7; 32],
        };
        assert!(t.response(
            200,
            4,
            1_000_000,
            2_000_000,
            verdict(200, core::slice::from_ref(&x), 200, 4, || [7; 32])
        ));
        let v = verdict(200, core::slice::from_ref(&x), 200, 4, || [8; 32]);
        assert_eq!(v, Some(ErrorKind::Sha256Mismatch));
        assert!(!t.response(200, 4, 3_000_000, 4_000_000, v));
        assert_eq!(
            verdict(200, core::slice::from_ref(&x), 404, 4, || unreachable!()),
            Some(ErrorKind::BadStatus)
        );
        assert_eq!(
            verdict(200, core::slice::from_ref(&x), 200, 5, || unreachable!()),
            Some(ErrorKind::LengthMismatch)
        );
        // Two versions of a file: either one whole is good, a mix of them is not.
        let y = Expect {
            len: 5,
            sha256: [9; 32],
        };
        let both = [x.clone(), y];
        assert_eq!(verdict(200, &both, 200, 4, || [7; 32]), None);
        assert_eq!(verdict(200, &both, 200, 5, || [9; 32]), None);
        assert_eq!(
            verdict(200, &both, 200, 5, || [7; 32]),
            Some(ErrorKind::Sha256Mismatch)
        );
        assert_eq!(verdict(200, &[], 200, 77, || unreachable!()), None);
        t.error(ErrorKind::ResponseTimeout, 1);
        let r = t.report("parallel 1".into(), "bare-tap", 2.0, 0, 0.5);
        assert_eq!(
            (r.fetches, r.fetches_ok, r.errors_total, r.timeouts),
            (2, 1, 2, 1)
        );
        assert_eq!(r.errors["sha256_mismatch"], 1);
        assert_eq!(r.status[&200], 2);
        assert_eq!(r.first_response.count, 2);
        assert_eq!(r.response.max_ms, 4.0);
        assert_eq!(r.fetches_per_sec, 1.0);
        assert_eq!(r.client, "bare-tap");
        assert_eq!(r.client_cpu_us_per_fetch, 250_000.0);
    }
}
