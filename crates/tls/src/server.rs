//! The server side: [`TlsServer`], a configuration built once from a certificate chain, a
//! key and [`Options`], and [`TlsConn`], one connection's driver: rustls's unbuffered API
//! (`UnbufferedServerConnection`, which needs no std and no I/O) for the handshake, then
//! our own record layer (`records`) with the keys rustls hands over.
//!
//! The driver is what the engine's TCP connection table calls: bytes received on the
//! connection go in ([`TlsConn::receive`]) and come out as TLS bytes to send and plaintext
//! request bytes, in buffers the caller owns and reuses; application data is sealed into
//! records in a caller's buffer ([`TlsConn::encrypt`], [`TlsConn::encrypt_parts`]) with no
//! allocation; [`TlsConn::close`] seals a
//! close_notify. A protocol error comes back as [`Fatal`] after the alert that tells the peer
//! why has been put in the output: the caller sends it and closes the TCP connection. The
//! driver never panics on what it is fed, and never buffers more than [`MAX_BUFFERED`] bytes
//! of received TLS.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

use rustls::crypto::SecureRandom;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::PrivatePkcs8KeyDer;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{
    ClientHello, NoServerSessionStorage, ResolvesServerCert, ServerConfig,
    UnbufferedServerConnection,
};
use rustls::sign::CertifiedKey;
use rustls::time_provider::TimeProvider;
use rustls::unbuffered::{
    AppDataRecord, ConnectionState, EncodeError, InsufficientSizeError, UnbufferedStatus,
};
use rustls::{CipherSuite, NamedGroup, ProtocolVersion};

use crate::provider::{self, sign::EcdsaKey, sign::KeyError};
use crate::ticket::Ticketer;

mod records;
pub use crate::provider::aead::RangeMac;
pub use records::{
    open_record, seal_record, seal_record_range, Reserved, CT_ALERT, CT_APP_DATA, CT_HANDSHAKE,
};

/// The most received TLS bytes a connection holds while waiting for the rest of a record or
/// handshake message: a full record is 5 + 2^14 + 256 bytes, a handshake message rustls
/// takes may span a few; past this the connection fails.
pub const MAX_BUFFERED: usize = 64 * 1024;

/// The most a sealed record adds to its plaintext: header (5), TLS 1.2 GCM's explicit
/// nonce (8) and the tag (16); TLS 1.3's inner content type (1) is less than the nonce.
pub const RECORD_OVERHEAD: usize = 5 + 8 + 16;
/// The largest plaintext of one record.
pub const MAX_RECORD_PLAINTEXT: usize = 16384;

/// The lowest protocol version the server accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MinVersion {
    /// TLS 1.2 and 1.3.
    Tls12,
    /// TLS 1.3 only.
    Tls13,
}

/// What the server offers beyond its certificate.
#[derive(Clone, Debug)]
pub struct Options {
    /// The lowest version accepted.
    pub min_version: MinVersion,
    /// ALPN protocols, in order of preference; empty: no ALPN. The default is `http/1.1`.
    pub alpn: Vec<Vec<u8>>,
    /// Session tickets (TLS 1.3 PSK and TLS 1.2 RFC 5077) on; 0-RTT is never accepted.
    pub tickets: bool,
    /// How long a ticket key seals new tickets, in seconds; it opens them for one period
    /// more.
    pub ticket_lifetime: u32,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            min_version: MinVersion::Tls12,
            alpn: vec![b"http/1.1".to_vec()],
            tickets: true,
            ticket_lifetime: 6 * 3600,
        }
    }
}

/// What the platform gives TLS: randomness and the wall clock.
#[derive(Clone)]
pub struct Platform {
    /// Key shares, nonces, tickets.
    pub random: &'static dyn SecureRandom,
    /// Certificate dates and ticket ages and rotation.
    pub time: Arc<dyn TimeProvider>,
}

impl fmt::Debug for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Platform")
            .field("random", &self.random)
            .field("time", &self.time)
            .finish()
    }
}

/// Why a server configuration was refused.
#[derive(Debug)]
pub enum ConfigError {
    /// The certificate file has no PEM `CERTIFICATE` block.
    NoCertificate,
    /// The key file has no PEM private key block.
    NoKey,
    /// The key is not one the server can sign with.
    Key(KeyError),
    /// rustls refused the configuration (for instance: the key does not match the
    /// certificate).
    Rustls(rustls::Error),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoCertificate => f.write_str("no PEM CERTIFICATE block found"),
            Self::NoKey => f.write_str(
                "no PEM private key found (PRIVATE KEY, EC PRIVATE KEY or RSA PRIVATE KEY)",
            ),
            Self::Key(e) => write!(f, "{e}"),
            Self::Rustls(rustls::Error::InconsistentKeys(_)) => {
                f.write_str("the private key does not match the certificate")
            }
            Self::Rustls(e) => write!(f, "{e}"),
        }
    }
}

/// Parses a PEM certificate chain (leaf first).
pub fn parse_chain(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, ConfigError> {
    let chain: Vec<_> = CertificateDer::pem_slice_iter(pem)
        .filter_map(Result::ok)
        .collect();
    if chain.is_empty() {
        return Err(ConfigError::NoCertificate);
    }
    Ok(chain)
}

/// Parses a PEM private key (PKCS#8, SEC1 or PKCS#1), refusing any the server cannot use.
pub fn parse_key(pem: &[u8]) -> Result<PrivateKeyDer<'static>, ConfigError> {
    let key = PrivateKeyDer::from_pem_slice(pem).map_err(|_| ConfigError::NoKey)?;
    EcdsaKey::from_der(&key).map_err(ConfigError::Key)?;
    Ok(key)
}

/// The ALPN protocol of the TLS-ALPN-01 challenge (RFC 8737 §6.2).
pub const ACME_TLS_ALPN: &[u8] = b"acme-tls/1";

/// Which certificate a ClientHello gets: a TLS-ALPN-01 challenge's, for a hello offering
/// `acme-tls/1` alone and naming a name with a challenge published (RFC 8737 §3: and only
/// for such a hello); else the server's certificate, or none before one is held (the
/// handshake then fails with an alert: no self-signed stand-in).
#[derive(Debug, Clone)]
struct Resolver {
    normal: Option<Arc<CertifiedKey>>,
    challenges: Vec<(String, Arc<CertifiedKey>)>,
}

impl ResolvesServerCert for Resolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let acme_only = hello.alpn().is_some_and(|mut offered| {
            offered.next() == Some(ACME_TLS_ALPN) && offered.next().is_none()
        });
        if acme_only {
            let name = hello.server_name()?;
            return self
                .challenges
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, k)| k.clone());
        }
        self.normal.clone()
    }
}

/// The chain and key, checked (the key usable, and matching the leaf), as rustls serves
/// them.
fn certified(
    chain_pem: &[u8],
    key_pem: &[u8],
    provider: &rustls::crypto::CryptoProvider,
) -> Result<Arc<CertifiedKey>, ConfigError> {
    let chain = parse_chain(chain_pem)?;
    let key = parse_key(key_pem)?;
    CertifiedKey::from_der(chain, key, provider)
        .map(Arc::new)
        .map_err(ConfigError::Rustls)
}

/// A server's TLS configuration, shared by all its connections (and cores).
#[derive(Clone, Debug)]
pub struct TlsServer {
    config: Arc<ServerConfig>,
    resolver: Resolver,
    /// The ALPN protocols of the options (`acme-tls/1` is added while a challenge is out).
    alpn: Vec<Vec<u8>>,
}

impl TlsServer {
    /// A configuration from a PEM certificate chain and PEM key. Refuses, with the reason, a
    /// key that is not ECDSA P-256/P-384, a key that does not match the certificate, and
    /// files without PEM blocks.
    pub fn new(
        chain_pem: &[u8],
        key_pem: &[u8],
        options: &Options,
        platform: &Platform,
    ) -> Result<Self, ConfigError> {
        let provider = Arc::new(provider::provider(platform.random));
        let certified = certified(chain_pem, key_pem, &provider)?;
        Self::build(Some(certified), options, platform, provider)
    }

    /// A configuration with no certificate yet (one is being obtained over ACME): every
    /// handshake fails with an alert, but for TLS-ALPN-01 challenges once published
    /// ([`TlsServer::with_acme_challenge`]).
    pub fn awaiting_certificate(
        options: &Options,
        platform: &Platform,
    ) -> Result<Self, ConfigError> {
        let provider = Arc::new(provider::provider(platform.random));
        Self::build(None, options, platform, provider)
    }

    fn build(
        normal: Option<Arc<CertifiedKey>>,
        options: &Options,
        platform: &Platform,
        provider: Arc<rustls::crypto::CryptoProvider>,
    ) -> Result<Self, ConfigError> {
        let versions: &[&rustls::SupportedProtocolVersion] = match options.min_version {
            MinVersion::Tls12 => &[&rustls::version::TLS13, &rustls::version::TLS12],
            MinVersion::Tls13 => &[&rustls::version::TLS13],
        };
        let resolver = Resolver {
            normal,
            challenges: Vec::new(),
        };
        let mut config = ServerConfig::builder_with_details(provider, platform.time.clone())
            .with_protocol_versions(versions)
            .map_err(ConfigError::Rustls)?
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(resolver.clone()));
        config.alpn_protocols = options.alpn.clone();
        config.session_storage = Arc::new(NoServerSessionStorage {});
        config.max_early_data_size = 0;
        // After the handshake the record layer is ours (`records`): rustls hands over the
        // traffic keys and keeps the key schedule.
        config.enable_secret_extraction = true;
        if options.tickets {
            config.ticketer = Arc::new(
                Ticketer::new(
                    platform.random,
                    platform.time.clone(),
                    options.ticket_lifetime,
                )
                .map_err(ConfigError::Rustls)?,
            );
            config.send_tls13_tickets = 1;
        } else {
            config.send_tls13_tickets = 0;
        }
        Ok(Self {
            config: Arc::new(config),
            resolver,
            alpn: options.alpn.clone(),
        })
    }

    /// This configuration with `resolver` (and `acme-tls/1` offered, last, while it holds
    /// a challenge).
    fn with_resolver(&self, resolver: Resolver) -> Self {
        let mut config = (*self.config).clone();
        config.alpn_protocols = self.alpn.clone();
        if !resolver.challenges.is_empty() {
            // With no ALPN configured, offering acme-tls/1 alone would make rustls refuse
            // every client that offers http/1.1 (no_application_protocol): the HTTP the
            // server speaks is offered first.
            if config.alpn_protocols.is_empty() {
                config.alpn_protocols.push(b"http/1.1".to_vec());
            }
            config.alpn_protocols.push(ACME_TLS_ALPN.to_vec());
        }
        config.cert_resolver = Arc::new(resolver.clone());
        Self {
            config: Arc::new(config),
            resolver,
            alpn: self.alpn.clone(),
        }
    }

    /// Whether a certificate is held (else only TLS-ALPN-01 challenges are answered).
    pub fn has_certificate(&self) -> bool {
        self.resolver.normal.is_some()
    }

    /// The same configuration answering the TLS-ALPN-01 challenge for `name` with `cert`
    /// (DER) and its `key` (PKCS #8 DER), replacing one for the same name.
    pub fn with_acme_challenge(
        &self,
        name: &str,
        cert: &[u8],
        key: &[u8],
    ) -> Result<Self, ConfigError> {
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.to_vec()));
        EcdsaKey::from_der(&key).map_err(ConfigError::Key)?;
        // Not `from_der`: its check parses the certificate with webpki, which refuses the
        // critical acmeIdentifier extension every such certificate carries.
        let signer = self
            .config
            .crypto_provider()
            .key_provider
            .load_private_key(key)
            .map_err(ConfigError::Rustls)?;
        let certified = CertifiedKey::new(vec![CertificateDer::from(cert.to_vec())], signer);
        let mut resolver = self.resolver.clone();
        resolver
            .challenges
            .retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        resolver
            .challenges
            .push((String::from(name), Arc::new(certified)));
        Ok(self.with_resolver(resolver))
    }

    /// The same configuration with no TLS-ALPN-01 challenge.
    pub fn without_acme_challenges(&self) -> Self {
        let mut resolver = self.resolver.clone();
        resolver.challenges.clear();
        self.with_resolver(resolver)
    }

    /// A new connection's driver.
    pub fn accept(&self) -> Result<TlsConn, rustls::Error> {
        Ok(TlsConn {
            conn: Some(UnbufferedServerConnection::new(self.config.clone())?),
            records: None,
            negotiated: None,
            inbuf: Vec::new(),
            phase: Phase::Handshake,
            sent_close: false,
            peer_closed: false,
        })
    }

    /// rustls's configuration (for a test or a benchmark's inspection).
    pub fn config(&self) -> &Arc<ServerConfig> {
        &self.config
    }

    /// The same configuration (protocol versions, ALPN, the ticket keys: a ticket issued
    /// before still resumes) with another certificate chain and key, checked as
    /// [`TlsServer::new`] checks them: a renewed certificate.
    pub fn with_certificate(&self, chain_pem: &[u8], key_pem: &[u8]) -> Result<Self, ConfigError> {
        let mut resolver = self.resolver.clone();
        resolver.normal = Some(certified(
            chain_pem,
            key_pem,
            self.config.crypto_provider(),
        )?);
        Ok(self.with_resolver(resolver))
    }
}

/// The [`TlsServer`] new connections are accepted with, replaceable while the server runs
/// (a renewed certificate): a connection keeps the configuration it was accepted with
/// until it ends. A read lock is taken per accepted connection (one atomic add and
/// subtract, never contended but by a replacement), not per record.
#[derive(Debug)]
pub struct ServerSlot {
    current: spin::RwLock<TlsServer>,
    /// Whether what it holds has a certificate (one load for the plain-HTTP redirect).
    certified: core::sync::atomic::AtomicBool,
}

impl ServerSlot {
    /// A slot holding `server`.
    pub fn new(server: TlsServer) -> Self {
        Self {
            certified: core::sync::atomic::AtomicBool::new(server.has_certificate()),
            current: spin::RwLock::new(server),
        }
    }

    /// Whether the server in the slot has a certificate (else it awaits its first over
    /// ACME and refuses every handshake but a challenge's).
    pub fn has_certificate(&self) -> bool {
        self.certified.load(core::sync::atomic::Ordering::Relaxed)
    }

    /// A new connection's driver, with the server now in the slot.
    pub fn accept(&self) -> Result<TlsConn, rustls::Error> {
        self.current.read().accept()
    }

    /// Connections accepted from now on use `server`.
    pub fn replace(&self, server: TlsServer) {
        let certified = server.has_certificate();
        *self.current.write() = server;
        self.certified
            .store(certified, core::sync::atomic::Ordering::Relaxed);
    }

    /// The server now in the slot.
    pub fn current(&self) -> TlsServer {
        self.current.read().clone()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Handshake,
    Open,
    /// A fatal error was reported; every call fails.
    Failed,
    /// Both sides sent close_notify.
    Closed,
}

/// What one [`TlsConn::receive`] found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// The handshake is complete: [`TlsConn::encrypt`] works.
    pub established: bool,
    /// The peer sent close_notify during this call: it sends nothing more.
    pub peer_closed: bool,
    /// Both sides have sent close_notify: the connection is done.
    pub closed: bool,
}

/// The connection failed; what is in the output (an alert, if rustls had one to send) is
/// to be sent, then the TCP connection closed.
#[derive(Clone, Debug, PartialEq)]
pub enum Fatal {
    /// The peer broke the protocol, or the handshake failed (the reason).
    Protocol(rustls::Error),
    /// More than [`MAX_BUFFERED`] bytes of an incomplete record or handshake message.
    TooMuchBuffered,
    /// A call made after the connection had failed or closed.
    Done,
}

impl fmt::Display for Fatal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Protocol(e) => write!(f, "TLS: {e}"),
            Self::TooMuchBuffered => f.write_str("TLS: too much buffered input"),
            Self::Done => f.write_str("TLS: the connection is closed"),
        }
    }
}

/// Why [`TlsConn::encrypt`] or [`TlsConn::close`] wrote nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SealError {
    /// The handshake is not complete, or the connection has failed or closed.
    NotReady,
    /// The output needs this many bytes.
    TooSmall(usize),
    /// The keys' record limit was reached; close the connection.
    Exhausted,
    /// This range of a record cannot be sealed alone ([`seal_record_range`]): seal the
    /// whole record.
    Whole,
}

/// The negotiated parameters of an established connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Negotiated {
    /// TLS 1.2 or 1.3.
    pub version: ProtocolVersion,
    /// The suite.
    pub suite: CipherSuite,
    /// The key-exchange group (None on a TLS 1.2 resumption, which has none).
    pub group: Option<NamedGroup>,
    /// ALPN chose `http/1.1`.
    pub alpn_http11: bool,
}

/// One TLS connection of the server. About 1 KiB plus rustls's per-connection state and
/// the received bytes of an incomplete record.
pub struct TlsConn {
    /// rustls's connection, until the handshake is complete.
    conn: Option<UnbufferedServerConnection>,
    /// Then our record layer, with rustls's key schedule.
    records: Option<alloc::boxed::Box<records::Records>>,
    /// What the handshake agreed on (kept when rustls's connection is handed over).
    negotiated: Option<Negotiated>,
    /// Received TLS bytes not yet consumed (an incomplete record or handshake message);
    /// empty between records.
    inbuf: Vec<u8>,
    phase: Phase,
    /// Our close_notify is sealed: nothing more is.
    sent_close: bool,
    /// The peer's close_notify was read.
    peer_closed: bool,
}

impl fmt::Debug for TlsConn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsConn")
            .field("phase", &self.phase)
            .field("buffered", &self.inbuf.len())
            .finish()
    }
}

/// What a step of rustls's state machine asked for, once its borrow of the connection ended.
enum Step {
    Again,
    Stop,
}

impl TlsConn {
    /// Feeds bytes received on the connection. TLS bytes to send are appended to `tls_out`
    /// (send them, in order, before calling again), decrypted application data to `plain`.
    /// Both are the caller's and keep their capacity across calls.
    pub fn receive(
        &mut self,
        tls_in: &[u8],
        tls_out: &mut Vec<u8>,
        plain: &mut Vec<u8>,
    ) -> Result<Progress, Fatal> {
        if matches!(self.phase, Phase::Failed | Phase::Closed) {
            return Err(Fatal::Done);
        }
        if self.inbuf.len() + tls_in.len() > MAX_BUFFERED {
            self.fail(tls_out);
            return Err(Fatal::TooMuchBuffered);
        }
        self.inbuf.extend_from_slice(tls_in);
        let mut progress = Progress::default();
        if self.phase == Phase::Handshake {
            self.handshake(tls_out, plain, &mut progress)?;
        }
        if self.phase == Phase::Open {
            progress.established = true;
            self.open(tls_out, plain, &mut progress)?;
        }
        Ok(progress)
    }

    /// The handshake, by rustls, with what it reads and writes; when complete, the
    /// connection's keys move to our record layer ([`records`]).
    fn handshake(
        &mut self,
        tls_out: &mut Vec<u8>,
        plain: &mut Vec<u8>,
        progress: &mut Progress,
    ) -> Result<(), Fatal> {
        let Some(conn) = self.conn.as_mut() else {
            return Err(Fatal::Done);
        };
        let mut complete = false;
        // Each step consumes input, emits output or changes state; the bound only guards
        // against a step that does none of these.
        for _ in 0..4096 {
            let UnbufferedStatus { mut discard, state } = conn.process_tls_records(&mut self.inbuf);
            let step = match state {
                Err(e) => {
                    self.inbuf.drain(..discard.min(self.inbuf.len()));
                    self.fail(tls_out);
                    return Err(Fatal::Protocol(e));
                }
                Ok(ConnectionState::ReadTraffic(mut traffic)) => {
                    let mut err = None;
                    while let Some(record) = traffic.next_record() {
                        match record {
                            Ok(AppDataRecord {
                                discard: d,
                                payload,
                            }) => {
                                discard += d;
                                plain.extend_from_slice(payload);
                            }
                            Err(e) => {
                                err = Some(e);
                                break;
                            }
                        }
                    }
                    if let Some(e) = err {
                        self.inbuf.drain(..discard.min(self.inbuf.len()));
                        self.fail(tls_out);
                        return Err(Fatal::Protocol(e));
                    }
                    Step::Again
                }
                Ok(ConnectionState::ReadEarlyData(mut early)) => {
                    // Never accepted (max_early_data_size is 0): rustls does not produce
                    // this state; were it to, the data is dropped, not served.
                    while let Some(Ok(record)) = early.next_record() {
                        discard += record.discard;
                    }
                    Step::Again
                }
                Ok(ConnectionState::EncodeTlsData(mut encode)) => {
                    if encode_into(tls_out, |buf| encode.encode(buf)).is_err() {
                        self.inbuf.drain(..discard.min(self.inbuf.len()));
                        self.fail(tls_out);
                        return Err(Fatal::Protocol(rustls::Error::EncryptError));
                    }
                    Step::Again
                }
                Ok(ConnectionState::TransmitTlsData(transmit)) => {
                    // The caller sends `tls_out` after this call.
                    transmit.done();
                    Step::Again
                }
                Ok(ConnectionState::WriteTraffic(_)) => {
                    complete = true;
                    Step::Stop
                }
                Ok(ConnectionState::PeerClosed | ConnectionState::Closed) => {
                    // close_notify before the handshake ended: nothing more comes.
                    self.phase = Phase::Closed;
                    progress.peer_closed = true;
                    progress.closed = true;
                    Step::Stop
                }
                Ok(_) => Step::Stop,
            };
            self.inbuf.drain(..discard.min(self.inbuf.len()));
            if let Step::Stop = step {
                break;
            }
        }
        if !complete {
            return Ok(());
        }
        let negotiated = Negotiated {
            version: conn.protocol_version().unwrap_or(ProtocolVersion::TLSv1_3),
            suite: conn
                .negotiated_cipher_suite()
                .map(|s| s.suite())
                .unwrap_or(CipherSuite::Unknown(0)),
            group: conn.negotiated_key_exchange_group().map(|g| g.name()),
            alpn_http11: conn.alpn_protocol() == Some(b"http/1.1"),
        };
        let Some(conn) = self.conn.take() else {
            return Err(Fatal::Done);
        };
        match conn
            .dangerous_into_kernel_connection()
            .and_then(|(secrets, kernel)| records::Records::new(secrets, kernel))
        {
            Ok(r) => {
                self.records = Some(alloc::boxed::Box::new(r));
                self.negotiated = Some(negotiated);
                self.phase = Phase::Open;
                Ok(())
            }
            Err(e) => {
                self.phase = Phase::Failed;
                self.inbuf = Vec::new();
                Err(Fatal::Protocol(e))
            }
        }
    }

    /// The records received after the handshake, by our record layer.
    fn open(
        &mut self,
        tls_out: &mut Vec<u8>,
        plain: &mut Vec<u8>,
        progress: &mut Progress,
    ) -> Result<(), Fatal> {
        let Some(records) = self.records.as_mut() else {
            return Err(Fatal::Done);
        };
        match records.open(&mut self.inbuf, tls_out, plain) {
            Ok(o) => {
                self.inbuf.drain(..o.used.min(self.inbuf.len()));
                if o.peer_closed {
                    progress.peer_closed = true;
                    self.peer_closed = true;
                    // What follows close_notify is not read.
                    self.inbuf = Vec::new();
                }
                if self.peer_closed && self.sent_close {
                    self.phase = Phase::Closed;
                    progress.closed = true;
                }
                Ok(())
            }
            Err((e, alert)) => {
                if let Some(desc) = alert {
                    records.fatal_alert(desc, tls_out);
                }
                // The keys stay: records sent before the alert may be sent again.
                self.phase = Phase::Failed;
                self.inbuf = Vec::new();
                Err(Fatal::Protocol(e))
            }
        }
    }

    /// Seals `plain` as application-data records (16 KiB of plaintext each at most) into
    /// `out`, returning the bytes written. Needs at most `plain.len()` + [`RECORD_OVERHEAD`]
    /// per record ([`sealed_len`]).
    pub fn encrypt(&mut self, plain: &[u8], out: &mut [u8]) -> Result<usize, SealError> {
        let need = sealed_len(plain.len());
        if out.len() < need {
            return Err(SealError::TooSmall(need));
        }
        let mut n = 0;
        for chunk in plain.chunks(MAX_RECORD_PLAINTEXT) {
            n += self.encrypt_parts(&[chunk], &mut out[n..])?;
        }
        Ok(n)
    }

    /// Seals the concatenation of `parts` (at most [`MAX_RECORD_PLAINTEXT`] bytes) as one
    /// application-data record into `out`: each part is read where it lies (a response's
    /// head, a slice of the site image) and encrypted in the output.
    pub fn encrypt_parts(&mut self, parts: &[&[u8]], out: &mut [u8]) -> Result<usize, SealError> {
        match self.records.as_mut() {
            Some(r) if self.phase == Phase::Open && !self.sent_close => {
                r.seal(records::CT_APP_DATA, parts, out)
            }
            _ => Err(SealError::NotReady),
        }
    }

    /// Reserves the next application-data record, of `len` plaintext bytes (at most
    /// [`MAX_RECORD_PLAINTEXT`]): its sequence number, key epoch and length on the wire. It
    /// is sealed by [`TlsConn::seal_reserved`], as often as it is sent: a retransmission
    /// re-seals the same bytes instead of keeping them. A TLS 1.3 KeyUpdate that must
    /// precede it (the key's record limit) is appended to `ctl`.
    pub fn reserve(&mut self, len: usize, ctl: &mut Vec<u8>) -> Result<Reserved, SealError> {
        match self.records.as_mut() {
            Some(r) if self.phase == Phase::Open && !self.sent_close => r.reserve(len, ctl),
            _ => Err(SealError::NotReady),
        }
    }

    /// Seals reserved record `r` whose plaintext is `parts` joined (the length reserved)
    /// into `out`; the bytes written (`r.wire`). Works after a close or a failure too (a
    /// record already sent may need sending again); `Exhausted` once its key is released.
    pub fn seal_reserved(
        &self,
        r: &Reserved,
        parts: &[&[u8]],
        out: &mut [u8],
    ) -> Result<usize, SealError> {
        match self.records.as_ref() {
            Some(rec) => rec.seal_reserved(r, parts, out),
            None => Err(SealError::NotReady),
        }
    }

    /// Seals bytes `from..from + out.len()` of reserved record `r` (plaintext `parts`
    /// joined) into `out`, alone, carrying its MAC in `mac` and its tag in `tag` from
    /// one range to the next ([`seal_record_range`]); `Err(SealError::Whole)` when this
    /// range needs the whole record sealed ([`TlsConn::seal_reserved`]).
    pub fn seal_reserved_range(
        &self,
        r: &Reserved,
        parts: &[&[u8]],
        from: usize,
        out: &mut [u8],
        mac: &mut Option<RangeMac>,
        tag: &mut Option<[u8; 16]>,
    ) -> Result<(), SealError> {
        match self.records.as_ref() {
            Some(rec) => rec.seal_reserved_range(r, parts, from, out, mac, tag),
            None => Err(SealError::NotReady),
        }
    }

    /// Records reserved under key epochs before `epoch` are all acknowledged: their keys
    /// can go.
    pub fn release_before(&mut self, epoch: u32) {
        if let Some(r) = self.records.as_mut() {
            r.release_before(epoch);
        }
    }

    /// Seals a close_notify alert into `out`; after it, the connection sends nothing more.
    pub fn close(&mut self, out: &mut [u8]) -> Result<usize, SealError> {
        match self.records.as_mut() {
            Some(r) if self.phase == Phase::Open && !self.sent_close => {
                let n = r.close_notify(out)?;
                self.sent_close = true;
                Ok(n)
            }
            _ => Err(SealError::NotReady),
        }
    }

    /// The negotiated version, suite, group and ALPN, once established.
    pub fn negotiated(&self) -> Option<Negotiated> {
        self.negotiated
    }

    /// Received TLS bytes held, waiting for the rest of a record.
    pub fn buffered(&self) -> usize {
        self.inbuf.len()
    }

    /// Marks the connection failed and appends whatever rustls queued (the alert) to `out`.
    ///
    /// rustls hands queued records out before it reads any input, and is asked only while
    /// it has some: once failed it must not read input again (it would fail a second time).
    /// The buffer passed is still the connection's own, as rustls keeps offsets into it.
    fn fail(&mut self, out: &mut Vec<u8>) {
        self.phase = Phase::Failed;
        let Some(conn) = self.conn.as_mut() else {
            if let Some(r) = self.records.as_mut() {
                r.fatal_alert(rustls::AlertDescription::RecordOverflow, out);
            }
            self.inbuf = Vec::new();
            return;
        };
        for _ in 0..8 {
            if !conn.wants_write() {
                break;
            }
            let UnbufferedStatus { state, .. } = conn.process_tls_records(&mut self.inbuf);
            match state {
                Ok(ConnectionState::EncodeTlsData(mut encode)) => {
                    if encode_into(out, |buf| encode.encode(buf)).is_err() {
                        break;
                    }
                }
                _ => break,
            }
        }
        self.inbuf = Vec::new();
    }
}

/// The bytes [`TlsConn::encrypt`] needs at most for `plain_len` bytes of plaintext.
pub fn sealed_len(plain_len: usize) -> usize {
    let records = plain_len.div_ceil(MAX_RECORD_PLAINTEXT).max(1);
    plain_len + records * RECORD_OVERHEAD
}

/// Runs rustls's `encode` into the spare end of `out`, growing it to the size rustls asks
/// (the server's handshake and the client's records alike).
pub(crate) fn encode_into(
    out: &mut Vec<u8>,
    mut encode: impl FnMut(&mut [u8]) -> Result<usize, EncodeError>,
) -> Result<(), EncodeError> {
    let start = out.len();
    let mut room = 2048;
    loop {
        out.resize(start + room, 0);
        match encode(&mut out[start..]) {
            Ok(n) => {
                out.truncate(start + n);
                return Ok(());
            }
            Err(EncodeError::InsufficientSize(InsufficientSizeError { required_size }))
                if required_size > room =>
            {
                room = required_size;
            }
            Err(e) => {
                out.truncate(start);
                return Err(e);
            }
        }
    }
}

#[cfg(test)]
mod tests;
