//! The ACME order as a state machine (RFC 8555 §7): responses and time in, requests and
//! [`Event`]s out, one request in flight at a time and never more than one order. The
//! owner sends what [`Client::poll`] gives over HTTPS, hands each answer back
//! ([`Client::on_response`]) or says the request failed ([`Client::on_transport_error`]),
//! publishes the challenge answers it is told to, and installs the certificate.
//!
//! ```text
//! Idle ─(due, within the hour's budget)─► Directory ─► Account ─► NewOrder
//!   ▲   ─► for each authorization: Authorization ─► Answer ─► AwaitAuthorization (polled)
//!   │   ─► AwaitReady (the order polled until ready) ─► Finalize (a fresh certificate
//!   │      key, the CSR) ─► AwaitOrder (polled) ─► Download
//!   └── Install (renewal due at two thirds of the lifetime) │ Failed (backoff) ◄─ any error
//! ```
//!
//! - **Nonces** (§7.2): every response's Replay-Nonce is kept; a POST without one first
//!   asks newNonce (HEAD). A `badNonce` problem repeats the request with the fresh nonce,
//!   at most [`BAD_NONCE_RETRIES`] times in a row (§6.5).
//! - **One challenge answer out at a time**: each authorization's answer is published,
//!   then withdrawn once the authorization is valid, before the next.
//! - **Failures** end the attempt: the challenge answers are withdrawn, and the next
//!   attempt waits 1 minute doubled per failure up to 6 hours, with ±20 % jitter, and at
//!   least the CA's Retry-After (§6.6: 429 and 503). At most [`ATTEMPTS_PER_HOUR`]
//!   attempts begin in any hour, so a broken set-up cannot hammer a CA. An attempt not
//!   done in [`ORDER_DEADLINE`] seconds fails.
//! - **Polling** (§7.5.1): an authorization or order still in progress is asked again
//!   after its Retry-After (1 s to 60 s) or 1 s doubled up to 10 s.
//! - **The certificate key** is fresh per order, never the account key (§11.1); the chain
//!   is checked ([`crate::chain`]) before it is installed.
//! - **The owner's part of HTTP**: a POST carries `Content-Type: application/jose+json`,
//!   every request a `User-Agent` (§6.1), and each request is bounded in time by the
//!   owner's transport, which reports a timeout as [`Client::on_transport_error`]; the
//!   attempt's deadline is checked when a request would go and when an answer comes.
//! - **Renewal information** (RFC 9773), when the directory offers it: asked while a
//!   certificate is held (after a restart at once, else every six hours or at its
//!   Retry-After within an hour and a day), outside any order; a window moves the renewal
//!   to a random time in it (now if it has passed), never later than two thirds of the
//!   lifetime; the new order names the certificate it replaces. Its failures are no
//!   failure of the client.
//! - **A clock set back** is survived: backoff and the hour's budget counted from a time
//!   that has not come again are forgotten.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use crate::chain::{self, Issued};
use crate::csr;
use crate::document::{
    self, payload, url_ok, Account, AccountStatus, Authorization, AuthzStatus, Challenge,
    Directory, Finalize, Identifier, NewAccount, NewOrder, Order, OrderStatus, Problem,
    RenewalInfo,
};
use crate::jose::{b64, Key};

/// `badNonce` retries of one request in a row.
pub const BAD_NONCE_RETRIES: u32 = 3;
/// Attempts begun in any hour.
pub const ATTEMPTS_PER_HOUR: usize = 5;
/// Seconds an attempt may take from its start to the certificate.
pub const ORDER_DEADLINE: u64 = 600;
/// The first backoff after a failure, seconds.
pub const BACKOFF_FIRST: u64 = 60;
/// The longest backoff, seconds.
pub const BACKOFF_MAX: u64 = 6 * 3600;
/// The longest Retry-After honoured, seconds (a day: longer is the CA's mistake).
pub const RETRY_AFTER_MAX: u64 = 86_400;
/// How often the CA's renewal information is asked while a certificate is held (RFC
/// 9773 §4.3: its Retry-After, within an hour and a day, else this).
pub const ARI_EVERY: u64 = 6 * 3600;

/// A renewal-information request in flight (outside any order: the phase stays idle).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AriStep {
    /// The directory, for its renewalInfo URL (after a restart).
    Directory,
    /// The certificate's renewal information.
    Info,
}

/// Random bytes from the platform's generator (keys need unpredictable bits).
pub trait Entropy {
    /// Fills `buf` with random bytes.
    fn fill(&mut self, buf: &mut [u8]);
}

/// Which challenge proves control of the names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChallengeKind {
    /// HTTP-01 (§8.3): the key authorization at `/.well-known/acme-challenge/TOKEN` on
    /// port 80.
    Http01,
    /// TLS-ALPN-01 (RFC 8737): a certificate offered for `acme-tls/1` on port 443.
    TlsAlpn01,
}

impl ChallengeKind {
    /// Its name in the CA's documents.
    pub fn name(self) -> &'static str {
        match self {
            ChallengeKind::Http01 => "http-01",
            ChallengeKind::TlsAlpn01 => "tls-alpn-01",
        }
    }
}

/// What to ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The directory URL.
    pub directory: String,
    /// The names, lower case.
    pub names: Vec<String>,
    /// Contacts (`mailto:` URLs) for the account.
    pub contact: Vec<String>,
    /// The challenge to answer.
    pub challenge: ChallengeKind,
}

impl Config {
    /// The order both platforms place from their options: `email` as the account's
    /// `mailto:` contact, TLS-ALPN-01 when `tls_alpn`, else HTTP-01.
    pub fn new(
        directory: String,
        names: Vec<String>,
        email: Option<&str>,
        tls_alpn: bool,
    ) -> Config {
        Config {
            directory,
            names,
            contact: email
                .map(|e| alloc::vec![alloc::format!("mailto:{e}")])
                .unwrap_or_default(),
            challenge: if tls_alpn {
                ChallengeKind::TlsAlpn01
            } else {
                ChallengeKind::Http01
            },
        }
    }
}

/// An HTTP method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// GET (the directory).
    Get,
    /// HEAD (newNonce).
    Head,
    /// POST with `application/jose+json`.
    Post,
}

/// A request to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The method.
    pub method: Method,
    /// The URL (`https://`, checked).
    pub url: String,
    /// The body: a JWS for a POST, else empty.
    pub body: Vec<u8>,
}

/// An answer, as the owner's HTTPS client read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response<'a> {
    /// The status code.
    pub status: u16,
    /// The Location header.
    pub location: Option<&'a str>,
    /// The Replay-Nonce header.
    pub replay_nonce: Option<&'a str>,
    /// The Retry-After header in seconds from now ([`retry_after`] reads it).
    pub retry_after: Option<u64>,
    /// The body.
    pub body: &'a [u8],
}

/// A Retry-After value (RFC 9110 §10.2.3) in seconds from `now`: delay-seconds, or an
/// HTTP-date (IMF-fixdate only).
pub fn retry_after(value: &str, now: u64) -> Option<u64> {
    let v = value.trim();
    // The CA's header: anything but ASCII is refused before it is cut by position.
    if !v.is_ascii() {
        return None;
    }
    if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
        return v.parse().ok();
    }
    // "Sun, 06 Nov 1994 08:49:37 GMT"
    let b = v.as_bytes();
    if b.len() != 29 || &v[25..] != " GMT" {
        return None;
    }
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = MONTHS
        .iter()
        .position(|m| *m == v.get(8..11).unwrap_or(""))?
        + 1;
    let iso = format!(
        "{}-{:02}-{}T{}Z",
        v.get(12..16)?,
        month,
        v.get(5..7)?,
        v.get(17..25)?
    );
    Some(document::parse_time(&iso)?.saturating_sub(now))
}

/// An answer to publish while the CA validates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Serve `key_authorization` at `/.well-known/acme-challenge/{token}` (the engine sends
    /// it as `application/octet-stream`, as RFC 8555's example does).
    Http01 {
        /// The token (checked base64url).
        token: String,
        /// The body to serve.
        key_authorization: String,
    },
    /// Offer `cert` (DER, signed by `key`) to a ClientHello for `name` with ALPN
    /// `acme-tls/1`, and nothing else on such a connection.
    TlsAlpn01 {
        /// The name validated.
        name: String,
        /// The challenge certificate.
        cert: Vec<u8>,
        /// Its key, PKCS #8 DER.
        key: Vec<u8>,
    },
}

/// What the owner must do or show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Start serving this answer.
    Publish(Answer),
    /// Stop serving every answer.
    Withdraw,
    /// Install this certificate for new handshakes (connections running finish on the old
    /// one) and keep it with its key.
    Install {
        /// The checked chain.
        issued: Issued,
        /// The certificate key, PKCS #8 DER.
        key: Vec<u8>,
    },
    /// The attempt failed: why, and when the next begins (Unix seconds).
    Failed {
        /// The reason, for the console.
        reason: String,
        /// The next attempt.
        next: u64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Idle,
    Directory,
    Account,
    NewOrder,
    Authorization(usize),
    Answer(usize),
    AwaitAuthorization(usize),
    Finalize,
    AwaitReady,
    AwaitOrder,
    Download,
}

impl Phase {
    fn name(self) -> &'static str {
        match self {
            Phase::Idle => "idle",
            Phase::Directory => "reading the directory",
            Phase::Account => "registering the account",
            Phase::NewOrder => "placing the order",
            Phase::Authorization(_) | Phase::Answer(_) => "answering the challenges",
            Phase::AwaitAuthorization(_) => "waiting for validation",
            Phase::Finalize => "finalizing",
            Phase::AwaitReady => "waiting for the order to be ready",
            Phase::AwaitOrder => "waiting for issuance",
            Phase::Download => "downloading the certificate",
        }
    }
}

/// Where issuance stands, for the console, the stats page and /metrics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// What the client is doing.
    pub phase: &'static str,
    /// The certificate held: its notAfter.
    pub certificate_until: Option<u64>,
    /// When the next attempt begins (renewal or retry), if idle.
    pub next: Option<u64>,
    /// The last failure's reason.
    pub last_error: Option<String>,
    /// Failures since the last certificate.
    pub failures: u32,
}

/// The client.
pub struct Client {
    cfg: Config,
    account: Key,
    kid: Option<String>,
    directory: Option<Directory>,
    nonce: Option<String>,
    phase: Phase,
    /// A HEAD to newNonce is in flight before the phase's own request.
    fetching_nonce: bool,
    in_flight: bool,
    bad_nonces: u32,
    /// When the next step may go (idle: the next attempt; polling: the next poll).
    not_before: u64,
    poll_wait: u64,
    attempt_started: u64,
    attempts: [u64; ATTEMPTS_PER_HOUR],
    failures: u32,
    /// When the last failure happened (its backoff counts from then).
    failed_at: Option<u64>,
    last_error: Option<String>,
    order_url: Option<String>,
    order: Option<Order>,
    /// Each authorization's challenge URL, once chosen.
    challenge_url: Vec<String>,
    cert_key: Option<Key>,
    /// The CSR (base64url DER), made once per order.
    csr: String,
    published: bool,
    held: Option<Issued>,
    /// The CA's renewalInfo URL (RFC 9773), from the last directory read.
    renewal_url: Option<String>,
    /// When to ask for renewal information next (0: not at all).
    ari_due: u64,
    /// The directory is to be read for its renewalInfo URL (after a restart).
    ari_dir: bool,
    ari_step: Option<AriStep>,
    /// The last window the CA suggested and the time drawn in it (drawn again only when
    /// the window changes, so renewals spread over it as §4.2 means).
    ari_window: Option<(u64, u64)>,
    ari_at: Option<u64>,
    /// The backoff after the last failure ends here (0: none): renewal information never
    /// brings an attempt before it (§4.2).
    backoff_until: u64,
    /// The CA refused `replaces` (alreadyReplaced): the next orders go without it.
    skip_replaces: bool,
}

impl Client {
    /// A client that will order at once (`now`), with the account key kept from before
    /// (or just made).
    pub fn new(cfg: Config, account: Key, now: u64) -> Client {
        Client {
            cfg,
            account,
            kid: None,
            directory: None,
            nonce: None,
            phase: Phase::Idle,
            fetching_nonce: false,
            in_flight: false,
            bad_nonces: 0,
            not_before: now,
            poll_wait: 1,
            attempt_started: 0,
            attempts: [0; ATTEMPTS_PER_HOUR],
            failures: 0,
            failed_at: None,
            last_error: None,
            order_url: None,
            order: None,
            challenge_url: Vec::new(),
            cert_key: None,
            csr: String::new(),
            published: false,
            held: None,
            renewal_url: None,
            ari_due: 0,
            ari_dir: false,
            ari_step: None,
            ari_window: None,
            ari_at: None,
            backoff_until: 0,
            skip_replaces: false,
        }
    }

    /// The certificate kept from before a restart: no order until its renewal is due (two
    /// thirds of its lifetime, or earlier if the CA's renewal information says so: the
    /// directory is read for it at the next poll).
    pub fn resume(&mut self, issued: Issued) {
        if self.phase == Phase::Idle {
            self.not_before = issued.renew_at();
        }
        self.held = Some(issued);
        self.ari_dir = true;
        self.ari_due = 1;
    }

    /// Where issuance stands.
    pub fn status(&self) -> Status {
        Status {
            phase: self.phase.name(),
            certificate_until: self.held.as_ref().map(|h| h.not_after),
            next: (self.phase == Phase::Idle).then_some(self.not_before),
            last_error: self.last_error.clone(),
            failures: self.failures,
        }
    }

    /// When [`Client::poll`] next has something to do (`None` while a request is out).
    pub fn deadline(&self) -> Option<u64> {
        if self.in_flight {
            return None;
        }
        Some(match self.phase {
            Phase::Idle if self.ari_due != 0 => self.not_before.min(self.ari_due),
            Phase::Idle | Phase::AwaitAuthorization(_) | Phase::AwaitReady | Phase::AwaitOrder => {
                self.not_before
            }
            _ => 0,
        })
    }

    fn directory(&self) -> Option<&Directory> {
        self.directory.as_ref()
    }

    /// The renewal-information request due at `now` while idle with a certificate held
    /// and its renewal not yet due (RFC 9773 §4.2: an unauthenticated GET of
    /// renewalInfo/CERT-ID).
    fn ari_request(&mut self, now: u64) -> Option<Request> {
        let Some(id) = self.held.as_ref().and_then(|h| h.cert_id.clone()) else {
            // Nothing to ask about (a leaf without an authority key identifier).
            self.ari_due = 0;
            return None;
        };
        // A clock set back: a check planned from a time not yet come again is due now.
        if self.ari_due > now + 86_400 {
            self.ari_due = now;
        }
        if self.ari_due == 0 || now < self.ari_due || now >= self.not_before {
            return None;
        }
        let (step, url) = match &self.renewal_url {
            Some(base) => (
                AriStep::Info,
                format!("{}/{id}", base.trim_end_matches('/')),
            ),
            None if self.ari_dir => (AriStep::Directory, self.cfg.directory.clone()),
            None => {
                self.ari_due = 0;
                return None;
            }
        };
        self.ari_step = Some(step);
        Some(Request {
            method: Method::Get,
            url,
            body: Vec::new(),
        })
    }

    /// The answer to a renewal-information request, or `None` if it failed in transit.
    /// Never a failure of the client: the certificate still renews at two thirds.
    fn ari_answer(&mut self, r: Option<&Response<'_>>, now: u64, rng: &mut dyn Entropy) {
        let step = self.ari_step.take();
        self.ari_due = now
            + r.and_then(|r| r.retry_after)
                .map_or(ARI_EVERY, |s| s.clamp(3600, 86_400));
        let Some(r) = r.filter(|r| r.status == 200) else {
            return;
        };
        match step {
            Some(AriStep::Directory) => {
                if let Ok(d) = document::read::<Directory>(r.body) {
                    self.ari_dir = false;
                    self.renewal_url = d.renewal_info;
                    self.ari_due = if self.renewal_url.is_some() { now } else { 0 };
                }
            }
            Some(AriStep::Info) => {
                let Ok(info) = document::read::<RenewalInfo>(r.body) else {
                    return;
                };
                if let Some((start, end)) = info.window() {
                    // A uniformly random time in the window (§4.2), drawn once per window.
                    if self.ari_window != Some((start, end)) {
                        let mut b = [0u8; 8];
                        rng.fill(&mut b);
                        self.ari_window = Some((start, end));
                        self.ari_at = Some(start + u64::from_le_bytes(b) % (end - start));
                    }
                    // Now if the time has passed; never later than two thirds of the
                    // lifetime, never before a failure's backoff ends.
                    let renew = self.held.as_ref().map_or(u64::MAX, Issued::renew_at);
                    let at = self.ari_at.unwrap_or(renew).max(now).min(renew);
                    self.not_before = at.max(self.backoff_until);
                }
            }
            None => {}
        }
    }

    /// The next request, if one is due at `now`. An attempt that ran past its deadline
    /// fails here (the events are the failure's).
    pub fn poll(
        &mut self,
        now: u64,
        events: &mut Vec<Event>,
        rng: &mut dyn Entropy,
    ) -> Option<Request> {
        if self.in_flight {
            return None;
        }
        if self.phase != Phase::Idle && now > self.attempt_started + ORDER_DEADLINE {
            self.fail(
                format!("the order was not done in {ORDER_DEADLINE} s"),
                None,
                now,
                events,
                rng,
            );
            return None;
        }
        if self.phase == Phase::Idle {
            // A clock set back (a wrong time corrected): what was counted from a time that
            // has not come yet again is forgotten, so a backoff or the hour's budget cannot
            // hold the client for as long as the clock jumped.
            if self.failed_at.is_some_and(|t| now < t) {
                self.not_before = now;
                self.backoff_until = 0;
                self.failed_at = None;
            }
            for a in self.attempts.iter_mut().filter(|a| **a > now) {
                *a = 0;
            }
            if let Some(req) = self.ari_request(now) {
                self.in_flight = true;
                return Some(req);
            }
            if now < self.not_before {
                return None;
            }
            // The hour's budget: the oldest of the last attempts must be an hour old.
            let oldest = self.attempts.iter().copied().min().unwrap_or(0);
            if oldest != 0 && now < oldest + 3600 {
                self.not_before = oldest + 3600;
                return None;
            }
            if let Some(slot) = self.attempts.iter_mut().min() {
                *slot = now;
            }
            self.attempt_started = now;
            // Every attempt reads the directory afresh (a CA may move its URLs).
            self.directory = None;
            self.phase = Phase::Directory;
        }
        if matches!(
            self.phase,
            Phase::AwaitAuthorization(_) | Phase::AwaitReady | Phase::AwaitOrder
        ) && now < self.not_before
        {
            return None;
        }
        match self.request(rng) {
            Ok(req) => {
                self.in_flight = true;
                Some(req)
            }
            Err(reason) => {
                self.fail(reason, None, now, events, rng);
                None
            }
        }
    }

    /// After the directory: newAccount, every attempt. The same key finds the same
    /// account (200 and its URL), and an account the CA deactivated or forgot is made
    /// anew rather than failing every attempt after.
    fn after_directory(&self) -> Phase {
        Phase::Account
    }

    /// A POST of `payload` (`None`: POST-as-GET) to `url`, or the newNonce HEAD first.
    fn post(&mut self, url: &str, body: Option<&[u8]>) -> Result<Request, String> {
        let Some(nonce) = self.nonce.take() else {
            let url = self.directory().ok_or(LOST)?.new_nonce.clone();
            self.fetching_nonce = true;
            return Ok(Request {
                method: Method::Head,
                url,
                body: Vec::new(),
            });
        };
        let jws = self.account.jws(url, &nonce, self.kid.as_deref(), body);
        Ok(Request {
            method: Method::Post,
            url: url.to_string(),
            body: jws.into_bytes(),
        })
    }

    fn request(&mut self, rng: &mut dyn Entropy) -> Result<Request, String> {
        match self.phase {
            Phase::Idle => Err(LOST.into()),
            Phase::Directory => Ok(Request {
                method: Method::Get,
                url: self.cfg.directory.clone(),
                body: Vec::new(),
            }),
            Phase::Account => {
                // newAccount is signed with the key's JWK, never a `kid` (§6.2); the
                // account's URL is learnt again from the answer.
                self.kid = None;
                let url = self.directory().ok_or(LOST)?.new_account.clone();
                let body = payload(&NewAccount {
                    terms_of_service_agreed: true,
                    contact: &self.cfg.contact,
                });
                self.post(&url, Some(&body))
            }
            Phase::NewOrder => {
                let url = self.directory().ok_or(LOST)?.new_order.clone();
                let ids: Vec<Identifier> =
                    self.cfg.names.iter().map(|n| Identifier::dns(n)).collect();
                // RFC 9773 §5: a renewal the CA's renewal information covers names the
                // certificate it replaces.
                let replaces = match (&self.held, &self.renewal_url) {
                    (Some(h), Some(_)) if !self.skip_replaces => h.cert_id.clone(),
                    _ => None,
                };
                let body = payload(&NewOrder {
                    identifiers: &ids,
                    replaces: replaces.as_deref(),
                });
                self.post(&url, Some(&body))
            }
            Phase::Authorization(i) | Phase::AwaitAuthorization(i) => {
                let url = self.order_ref()?.authorizations.get(i).ok_or(LOST)?.clone();
                self.post(&url, None)
            }
            Phase::Answer(i) => {
                let url = self.challenge_url.get(i).ok_or(LOST)?.clone();
                self.post(&url, Some(b"{}"))
            }
            Phase::Finalize => {
                if self.csr.is_empty() {
                    let key = fresh_key(rng).ok_or("the random generator gave no key")?;
                    let names: Vec<&str> = self.cfg.names.iter().map(String::as_str).collect();
                    let der = csr::request(&key, &names)
                        .map_err(|_| String::from("the names do not make a CSR"))?;
                    self.csr = b64(&der);
                    self.cert_key = Some(key);
                }
                let url = self.order_ref()?.finalize.clone();
                let body = payload(&Finalize { csr: &self.csr });
                self.post(&url, Some(&body))
            }
            Phase::AwaitReady | Phase::AwaitOrder => {
                let url = self.order_url.clone().ok_or(LOST)?;
                self.post(&url, None)
            }
            Phase::Download => {
                let url = self.order_ref()?.certificate.clone().ok_or(LOST)?;
                self.post(&url, None)
            }
        }
    }

    fn order_ref(&self) -> Result<&Order, String> {
        self.order.as_ref().ok_or_else(|| LOST.into())
    }
}

/// A state that cannot happen (a phase without what it needs): failing the attempt is
/// the safe way out.
const LOST: &str = "internal: the order lost its state";

/// A fresh P-256 key from the platform's random bytes, drawn again in the rare case (one
/// in 2^32) the bytes are not a valid scalar; `None` from a generator that never gives one.
pub fn fresh_key(rng: &mut dyn Entropy) -> Option<Key> {
    for _ in 0..16 {
        let mut s = [0u8; 32];
        rng.fill(&mut s);
        if let Ok(k) = Key::from_random(&s) {
            return Some(k);
        }
    }
    None
}

impl Client {
    /// The request failed before an answer (connection, TLS, DNS, timeout): the attempt
    /// fails with `reason`.
    pub fn on_transport_error(
        &mut self,
        reason: &str,
        now: u64,
        events: &mut Vec<Event>,
        rng: &mut dyn Entropy,
    ) {
        if !self.in_flight {
            return;
        }
        self.in_flight = false;
        if self.ari_step.is_some() {
            self.ari_answer(None, now, rng);
            return;
        }
        self.fetching_nonce = false;
        self.fail(
            format!("{}: {reason}", self.phase.name()),
            None,
            now,
            events,
            rng,
        );
    }

    /// The answer to the request in flight.
    pub fn on_response(
        &mut self,
        r: &Response<'_>,
        now: u64,
        events: &mut Vec<Event>,
        rng: &mut dyn Entropy,
    ) {
        if !self.in_flight {
            return;
        }
        self.in_flight = false;
        if self.ari_step.is_some() {
            self.ari_answer(Some(r), now, rng);
            return;
        }
        if now > self.attempt_started + ORDER_DEADLINE {
            let reason = format!("the order was not done in {ORDER_DEADLINE} s");
            self.fail(reason, None, now, events, rng);
            return;
        }
        if let Some(n) = r.replay_nonce.filter(|n| nonce_ok(n)) {
            self.nonce = Some(n.to_string());
        }
        if self.fetching_nonce {
            self.fetching_nonce = false;
            if self.nonce.is_none() {
                let reason = format!("newNonce gave no nonce (HTTP {})", r.status);
                self.fail(reason, r.retry_after, now, events, rng);
            }
            return;
        }
        if !(200..300).contains(&r.status) {
            let problem = document::read::<Problem>(r.body).ok();
            if problem.as_ref().is_some_and(Problem::is_bad_nonce)
                && self.bad_nonces < BAD_NONCE_RETRIES
            {
                // §6.5: the same request again with the fresh nonce.
                self.bad_nonces += 1;
                return;
            }
            // RFC 9773 §5: an order that names a certificate already replaced is refused;
            // the next goes without the name.
            if self.phase == Phase::NewOrder
                && problem
                    .as_ref()
                    .is_some_and(|p| p.kind == "urn:ietf:params:acme:error:alreadyReplaced")
            {
                self.skip_replaces = true;
            }
            let what = match problem {
                Some(p) => p.summary(),
                None => format!("HTTP {}", r.status),
            };
            let reason = format!("{}: {what}", self.phase.name());
            self.fail(reason, r.retry_after, now, events, rng);
            return;
        }
        self.bad_nonces = 0;
        if let Err(reason) = self.advance(r, now, events, rng) {
            let reason = format!("{}: {reason}", self.phase.name());
            self.fail(reason, r.retry_after, now, events, rng);
        }
    }

    /// A 2xx answer moves the order on.
    fn advance(
        &mut self,
        r: &Response<'_>,
        now: u64,
        events: &mut Vec<Event>,
        rng: &mut dyn Entropy,
    ) -> Result<(), String> {
        let doc = |e: document::DocError| e.to_string();
        match self.phase {
            Phase::Idle => {}
            Phase::Directory => {
                let d: Directory = document::read(r.body).map_err(doc)?;
                if d.meta
                    .as_ref()
                    .and_then(|m| m.external_account_required)
                    .unwrap_or(false)
                {
                    return Err("the CA requires external account binding (not supported)".into());
                }
                self.renewal_url = d.renewal_info.clone();
                self.directory = Some(d);
                self.phase = self.after_directory();
            }
            Phase::Account => {
                let a: Account = document::read(r.body).map_err(doc)?;
                if a.status != AccountStatus::Valid {
                    return Err(format!("the account is {:?}", a.status).to_ascii_lowercase());
                }
                let kid = r.location.filter(|u| url_ok(u)).ok_or("no account URL")?;
                self.kid = Some(kid.to_string());
                self.phase = Phase::NewOrder;
            }
            Phase::NewOrder => {
                let o: Order = document::read(r.body).map_err(doc)?;
                let url = r.location.filter(|u| url_ok(u)).ok_or("no order URL")?;
                for n in &self.cfg.names {
                    if !o
                        .identifiers
                        .iter()
                        .any(|i| i.kind == "dns" && i.value.eq_ignore_ascii_case(n))
                    {
                        return Err(format!("the order does not name {n}"));
                    }
                }
                self.order_url = Some(url.to_string());
                self.challenge_url = Vec::new();
                self.csr = String::new();
                self.cert_key = None;
                self.phase = self.order_next(o)?;
            }
            Phase::Authorization(i) => {
                let a: Authorization = document::read(r.body).map_err(doc)?;
                match a.status {
                    AuthzStatus::Valid => {
                        self.challenge_url.push(String::new());
                        self.phase = self.next_authorization(i);
                    }
                    AuthzStatus::Pending => {
                        let kind = self.cfg.challenge.name();
                        let c = a.challenge(kind).ok_or_else(|| {
                            format!(
                                "the CA offers no {kind} challenge for {}",
                                a.identifier.value
                            )
                        })?;
                        let name = a.identifier.value.to_ascii_lowercase();
                        if !self.cfg.names.contains(&name) {
                            return Err(format!("an authorization for {name}, not ordered"));
                        }
                        events.push(Event::Publish(self.answer(c, &name, now, rng)?));
                        self.published = true;
                        self.challenge_url.push(c.url.clone());
                        self.phase = Phase::Answer(i);
                    }
                    other => {
                        return Err(format!("the authorization is {other:?}").to_ascii_lowercase())
                    }
                }
            }
            Phase::Answer(i) => {
                let _: Challenge = document::read(r.body).map_err(doc)?;
                self.phase = Phase::AwaitAuthorization(i);
                self.wait(r.retry_after, now, true);
            }
            Phase::AwaitAuthorization(i) => {
                let a: Authorization = document::read(r.body).map_err(doc)?;
                match a.status {
                    AuthzStatus::Valid => {
                        // One answer out at a time: the platform's tables stay small
                        // whatever the number of names.
                        if self.published {
                            events.push(Event::Withdraw);
                            self.published = false;
                        }
                        // The next step goes at once; its own polling starts from 1 s.
                        self.not_before = now;
                        self.poll_wait = 1;
                        self.phase = self.next_authorization(i);
                    }
                    AuthzStatus::Pending => self.wait(r.retry_after, now, false),
                    _ => {
                        let problem = a
                            .challenge(self.cfg.challenge.name())
                            .and_then(|c| c.error.as_ref());
                        let why = why(problem);
                        return Err(format!("{} was not validated: {why}", a.identifier.value));
                    }
                }
            }
            Phase::AwaitReady => {
                let o: Order = document::read(r.body).map_err(doc)?;
                match o.status {
                    OrderStatus::Ready => self.phase = Phase::Finalize,
                    OrderStatus::Pending => self.wait(r.retry_after, now, false),
                    _ => return Err(order_refused(&o, " before finalize")),
                }
                self.order = Some(o);
            }
            Phase::Finalize | Phase::AwaitOrder => {
                let o: Order = document::read(r.body).map_err(doc)?;
                let first = self.phase == Phase::Finalize;
                self.phase = match o.status {
                    OrderStatus::Valid => Phase::Download,
                    OrderStatus::Processing | OrderStatus::Ready => Phase::AwaitOrder,
                    OrderStatus::Invalid | OrderStatus::Pending => {
                        return Err(order_refused(&o, ""))
                    }
                };
                if self.phase == Phase::AwaitOrder {
                    self.wait(r.retry_after, now, first);
                }
                self.order = Some(o);
            }
            Phase::Download => {
                let key = self.cert_key.take().ok_or(LOST)?;
                let names: Vec<&str> = self.cfg.names.iter().map(String::as_str).collect();
                let issued = chain::check(r.body, &key, &names, now)
                    .map_err(|e| String::from(e.reason()))?;
                if self.published {
                    events.push(Event::Withdraw);
                    self.published = false;
                }
                self.not_before = issued.renew_at();
                self.held = Some(issued.clone());
                // §4.3: the new certificate's renewal information is asked at once.
                self.ari_due = if self.renewal_url.is_some() { now } else { 0 };
                self.ari_window = None;
                self.ari_at = None;
                self.backoff_until = 0;
                self.skip_replaces = false;
                events.push(Event::Install {
                    issued,
                    key: key.to_pkcs8(),
                });
                self.failures = 0;
                self.last_error = None;
                self.order = None;
                self.order_url = None;
                self.csr = String::new();
                self.phase = Phase::Idle;
            }
        }
        Ok(())
    }

    /// Where a new or re-read order goes next.
    fn order_next(&mut self, o: Order) -> Result<Phase, String> {
        let next = match o.status {
            OrderStatus::Pending => Phase::Authorization(0),
            OrderStatus::Ready => Phase::Finalize,
            // A CA handing back an order finalized by an earlier attempt: its key died
            // with that attempt, so its certificate is of no use.
            OrderStatus::Processing | OrderStatus::Valid => {
                return Err(String::from(
                    "the CA gave back an order finalized earlier, whose key is lost",
                ))
            }
            OrderStatus::Invalid => return Err(order_refused(&o, "")),
        };
        self.order = Some(o);
        Ok(next)
    }

    fn next_authorization(&self, i: usize) -> Phase {
        let count = self.order.as_ref().map_or(0, |o| o.authorizations.len());
        if i + 1 < count {
            Phase::Authorization(i + 1)
        } else {
            // §7.4: finalize once the order is ready, which a CA may say a moment later.
            Phase::AwaitReady
        }
    }

    /// The answer to challenge `c` for `name`.
    fn answer(
        &self,
        c: &Challenge,
        name: &str,
        now: u64,
        rng: &mut dyn Entropy,
    ) -> Result<Answer, String> {
        let token = c.token.clone().ok_or("a challenge without a token")?;
        let key_authorization = self.account.key_authorization(&token);
        Ok(match self.cfg.challenge {
            ChallengeKind::Http01 => Answer::Http01 {
                token,
                key_authorization,
            },
            ChallengeKind::TlsAlpn01 => {
                // The challenge certificate's own key: the account key signs only JWS.
                let key = fresh_key(rng).ok_or("the random generator gave no key")?;
                let cert = csr::alpn_certificate(&key, name, &key_authorization, now)
                    .map_err(|_| String::from("the TLS-ALPN-01 certificate could not be made"))?;
                Answer::TlsAlpn01 {
                    name: name.to_string(),
                    cert,
                    key: key.to_pkcs8(),
                }
            }
        })
    }

    /// Waits before the next poll: the CA's Retry-After (1 to 60 s), else 1 s doubled
    /// up to 10 s (`first`: from 1 s).
    fn wait(&mut self, retry_after: Option<u64>, now: u64, first: bool) {
        if first {
            self.poll_wait = 1;
        }
        let wait = match retry_after {
            Some(s) => s.clamp(1, 60),
            None => {
                let w = self.poll_wait;
                self.poll_wait = (self.poll_wait * 2).min(10);
                w
            }
        };
        self.not_before = now + wait;
    }

    /// The owner could not put the certificate of the last [`Event::Install`] in service
    /// (`previous`: the one it still serves, if any): a failure like any other, with its
    /// backoff, and the next attempt orders anew.
    pub fn install_failed(
        &mut self,
        reason: &str,
        previous: Option<Issued>,
        now: u64,
        events: &mut Vec<Event>,
        rng: &mut dyn Entropy,
    ) {
        self.held = previous;
        self.fail(
            format!("installing the certificate: {reason}"),
            None,
            now,
            events,
            rng,
        );
    }

    /// Ends the attempt: answers withdrawn, the next attempt after the backoff (at least
    /// the CA's Retry-After).
    fn fail(
        &mut self,
        reason: String,
        retry_after: Option<u64>,
        now: u64,
        events: &mut Vec<Event>,
        rng: &mut dyn Entropy,
    ) {
        if self.published {
            events.push(Event::Withdraw);
            self.published = false;
        }
        self.failures = self.failures.saturating_add(1);
        let base = BACKOFF_FIRST
            .saturating_mul(1u64 << (self.failures - 1).min(20))
            .min(BACKOFF_MAX);
        let mut r = [0u8; 8];
        rng.fill(&mut r);
        // ±20 %.
        let span = base * 2 / 5;
        let jittered = base - base / 5
            + if span == 0 {
                0
            } else {
                u64::from_le_bytes(r) % span
            };
        let wait = jittered.max(retry_after.unwrap_or(0).min(RETRY_AFTER_MAX));
        self.not_before = now + wait;
        self.backoff_until = self.not_before;
        self.failed_at = Some(now);
        self.phase = Phase::Idle;
        self.in_flight = false;
        self.fetching_nonce = false;
        self.bad_nonces = 0;
        self.order = None;
        self.order_url = None;
        self.cert_key = None;
        self.csr = String::new();
        self.last_error = Some(reason.clone());
        events.push(Event::Failed {
            reason,
            next: self.not_before,
        });
    }
}

/// The CA's reason for a failure, as it gave it, or that it gave none.
fn why(problem: Option<&Problem>) -> String {
    problem.map_or_else(|| String::from("no reason given"), Problem::summary)
}

/// `the order is STATUS[when]: WHY`, for an order in a status that ends the attempt.
fn order_refused(o: &Order, when: &str) -> String {
    let status = format!("{:?}", o.status).to_ascii_lowercase();
    format!("the order is {status}{when}: {}", why(o.error.as_ref()))
}

/// Whether a Replay-Nonce may be used: base64url, 1 to 256 characters (§6.5.1).
fn nonce_ok(n: &str) -> bool {
    (1..=256).contains(&n.len())
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[cfg(test)]
mod tests;
