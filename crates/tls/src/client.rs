//! The client side, for the one connection the server opens itself (its ACME client to the
//! CA): [`TlsClient`], a configuration built once from the roots it trusts, and
//! [`ClientConn`], one connection's driver over rustls's unbuffered API
//! (`UnbufferedClientConnection`: no std, no I/O) for the handshake and the records alike.
//! Few bytes go over it (a request of a few KiB, an answer of at most 64 KiB), so the
//! server's own record layer, made for throughput, is not needed here.
//!
//! Bytes received on the TCP connection go in ([`ClientConn::receive`]) and come out as TLS
//! bytes to send and decrypted answer bytes; [`ClientConn::write`] seals a request once the
//! handshake is done. The server's certificate is verified by rustls's WebPKI verifier
//! against the roots given, with the platform's clock; an error ends the connection after
//! the alert that says why. Never panics on what it is fed; holds at most
//! [`MAX_BUFFERED`](crate::server::MAX_BUFFERED) received bytes.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt;

use rustls::client::{ClientConfig, UnbufferedClientConnection};
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::unbuffered::{AppDataRecord, ConnectionState, EncodeError, UnbufferedStatus};
use rustls::RootCertStore;

use crate::provider;
use crate::server::{encode_into, Platform, MAX_BUFFERED};

/// A client configuration: the roots trusted, the platform's randomness and clock.
#[derive(Clone, Debug)]
pub struct TlsClient {
    config: Arc<ClientConfig>,
}

/// Why a client configuration was refused.
#[derive(Debug)]
pub enum ClientConfigError {
    /// No root certificate was given (or none of them parsed).
    NoRoots,
    /// rustls refused the configuration.
    Rustls(rustls::Error),
}

impl fmt::Display for ClientConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoRoots => f.write_str("no usable root certificate"),
            Self::Rustls(e) => write!(f, "{e}"),
        }
    }
}

impl TlsClient {
    /// A client trusting `roots` (DER certificates; one that does not parse as a trust
    /// anchor is skipped), TLS 1.3 and 1.2, offering `http/1.1` by ALPN.
    pub fn new(
        roots: &[CertificateDer<'_>],
        platform: &Platform,
    ) -> Result<TlsClient, ClientConfigError> {
        let mut store = RootCertStore::empty();
        let (added, _) = store.add_parsable_certificates(roots.iter().cloned());
        if added == 0 {
            return Err(ClientConfigError::NoRoots);
        }
        Self::with_roots(store, platform)
    }

    /// A client trusting the roots of `store` (for instance the Web PKI's, from
    /// `webpki-roots`).
    pub fn with_roots(
        store: RootCertStore,
        platform: &Platform,
    ) -> Result<TlsClient, ClientConfigError> {
        if store.is_empty() {
            return Err(ClientConfigError::NoRoots);
        }
        let provider = Arc::new(provider::client_provider(platform.random));
        let mut config = ClientConfig::builder_with_details(provider, platform.time.clone())
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(ClientConfigError::Rustls)?
            .with_root_certificates(store)
            .with_no_client_auth();
        config.alpn_protocols = alloc::vec![b"http/1.1".to_vec()];
        config.enable_early_data = false;
        Ok(TlsClient {
            config: Arc::new(config),
        })
    }

    /// A connection to `name` (the host name the certificate must hold: a DNS name or an
    /// address). Its ClientHello is in the first [`ClientConn::receive`]'s output.
    pub fn connect(&self, name: &str) -> Result<ClientConn, rustls::Error> {
        let name = ServerName::try_from(name)
            .map_err(|_| rustls::Error::General("not a DNS name or address".into()))?
            .to_owned();
        Ok(ClientConn {
            conn: UnbufferedClientConnection::new(self.config.clone(), name)?,
            inbuf: Vec::new(),
            established: false,
            done: false,
            failed: false,
        })
    }
}

/// What a [`ClientConn::receive`] brought.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientProgress {
    /// The handshake is complete: [`ClientConn::write`] may seal.
    pub established: bool,
    /// The server's close_notify came (or the connection closed): nothing more comes.
    pub closed: bool,
}

/// One client connection.
pub struct ClientConn {
    conn: UnbufferedClientConnection,
    inbuf: Vec<u8>,
    established: bool,
    done: bool,
    /// An error ended it: every later call fails too.
    failed: bool,
}

impl fmt::Debug for ClientConn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientConn")
            .field("established", &self.established)
            .field("buffered", &self.inbuf.len())
            .finish()
    }
}

impl ClientConn {
    /// Feeds bytes received (none for the first call, which writes the ClientHello). TLS
    /// bytes to send are appended to `tls_out`, decrypted bytes to `plain`. An error ends
    /// the connection (the caller resets it: no alert is sent).
    pub fn receive(
        &mut self,
        tls_in: &[u8],
        tls_out: &mut Vec<u8>,
        plain: &mut Vec<u8>,
    ) -> Result<ClientProgress, rustls::Error> {
        if self.failed {
            return Err(rustls::Error::General(
                "the connection failed before".into(),
            ));
        }
        if self.done {
            return Ok(ClientProgress {
                established: self.established,
                closed: true,
            });
        }
        if self.inbuf.len() + tls_in.len() > MAX_BUFFERED {
            self.done = true;
            self.failed = true;
            return Err(rustls::Error::General("too much buffered".into()));
        }
        self.inbuf.extend_from_slice(tls_in);
        // Each step consumes input, emits output or changes state; the bound only guards
        // against a step that does none of these.
        for _ in 0..4096 {
            let UnbufferedStatus { mut discard, state } =
                self.conn.process_tls_records(&mut self.inbuf);
            let mut stop = false;
            let result = match state {
                Err(e) => Err(e),
                Ok(ConnectionState::ReadTraffic(mut traffic)) => {
                    let mut r = Ok(());
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
                                r = Err(e);
                                break;
                            }
                        }
                    }
                    r
                }
                Ok(ConnectionState::EncodeTlsData(mut encode)) => {
                    encode_into(tls_out, |buf| encode.encode(buf))
                        .map_err(|_| rustls::Error::EncryptError)
                }
                Ok(ConnectionState::TransmitTlsData(transmit)) => {
                    transmit.done();
                    Ok(())
                }
                Ok(ConnectionState::WriteTraffic(_)) => {
                    self.established = true;
                    stop = true;
                    Ok(())
                }
                Ok(ConnectionState::PeerClosed | ConnectionState::Closed) => {
                    self.done = true;
                    stop = true;
                    Ok(())
                }
                // BlockedHandshake: more bytes are needed. Early data is never sent.
                Ok(_) => {
                    stop = true;
                    Ok(())
                }
            };
            self.inbuf.drain(..discard.min(self.inbuf.len()));
            if let Err(e) = result {
                self.done = true;
                self.failed = true;
                return Err(e);
            }
            if stop {
                break;
            }
        }
        Ok(ClientProgress {
            established: self.established,
            closed: self.done,
        })
    }

    /// Seals `plain` as application data into `tls_out`. Only once established.
    pub fn write(&mut self, plain: &[u8], tls_out: &mut Vec<u8>) -> Result<(), rustls::Error> {
        if !self.established || self.done {
            return Err(rustls::Error::General("not established".into()));
        }
        let UnbufferedStatus { discard, state } = self.conn.process_tls_records(&mut self.inbuf);
        let r = match state {
            Ok(ConnectionState::WriteTraffic(mut w)) => {
                let mut r = Ok(());
                for chunk in plain.chunks(crate::server::MAX_RECORD_PLAINTEXT) {
                    r = encode_into(tls_out, |buf| {
                        w.encrypt(chunk, buf).map_err(|e| match e {
                            rustls::unbuffered::EncryptError::InsufficientSize(s) => {
                                EncodeError::InsufficientSize(s)
                            }
                            _ => EncodeError::AlreadyEncoded,
                        })
                    })
                    .map_err(|_| rustls::Error::EncryptError);
                    if r.is_err() {
                        break;
                    }
                }
                r
            }
            Ok(_) => Err(rustls::Error::General("not writable now".into())),
            Err(e) => Err(e),
        };
        self.inbuf.drain(..discard.min(self.inbuf.len()));
        r
    }

    /// Whether the handshake is complete.
    pub fn established(&self) -> bool {
        self.established
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::{Options, TlsServer};

    const CERT: &[u8] = include_bytes!("../testdata/cert.pem");
    const CA: &[u8] = include_bytes!("../testdata/ca.pem");
    const KEY: &[u8] = include_bytes!("../testdata/key.pem");

    fn pair(name: &str) -> (ClientConn, crate::TlsConn) {
        let platform = crate::host::platform();
        let server = TlsServer::new(CERT, KEY, &Options::default(), &platform).unwrap();
        let roots = crate::server::parse_chain(CA).unwrap();
        let client = TlsClient::new(&roots, &platform).unwrap();
        (client.connect(name).unwrap(), server.accept().unwrap())
    }

    /// Runs the handshake between the two; returns whether the client got established.
    fn shake(c: &mut ClientConn, s: &mut crate::TlsConn) -> Result<(), rustls::Error> {
        let (mut to_s, mut to_c, mut plain) = (Vec::new(), Vec::new(), Vec::new());
        c.receive(&[], &mut to_s, &mut plain)?;
        for _ in 0..10 {
            if !to_s.is_empty() {
                let _ = s.receive(&to_s, &mut to_c, &mut plain);
                to_s.clear();
            }
            if !to_c.is_empty() {
                let data = core::mem::take(&mut to_c);
                c.receive(&data, &mut to_s, &mut plain)?;
            }
            if c.established() && to_s.is_empty() {
                return Ok(());
            }
        }
        Err(rustls::Error::General("no handshake".into()))
    }

    #[test]
    fn a_request_and_its_answer_cross_our_own_server() {
        let (mut c, mut s) = pair("localhost");
        shake(&mut c, &mut s).unwrap();
        let (mut to_s, mut plain) = (Vec::new(), Vec::new());
        c.write(b"GET / HTTP/1.1\r\n\r\n", &mut to_s).unwrap();
        let mut to_c = Vec::new();
        s.receive(&to_s, &mut to_c, &mut plain).unwrap();
        assert!(plain.ends_with(b"GET / HTTP/1.1\r\n\r\n"), "{plain:?}");
        let mut sealed = alloc::vec![0; 200];
        let n = s.encrypt(b"HTTP/1.1 200 OK\r\n\r\n", &mut sealed).unwrap();
        let mut got = Vec::new();
        let mut out = Vec::new();
        // Tickets may come first: the answer is what is read.
        c.receive(&to_c, &mut out, &mut got).unwrap();
        c.receive(&sealed[..n], &mut out, &mut got).unwrap();
        assert_eq!(got, b"HTTP/1.1 200 OK\r\n\r\n");
    }

    /// An ECDSA leaf under an RSA root (the Web PKI's usual chain): verified with
    /// `rsa-verify`, refused without it (the kernel's build).
    #[test]
    fn a_chain_under_an_rsa_root_verifies_with_rsa_verify() {
        let platform = crate::host::platform();
        let chain = include_bytes!("../testdata/cert-under-rsa.pem");
        let server = TlsServer::new(chain, KEY, &Options::default(), &platform).unwrap();
        let roots = crate::server::parse_chain(include_bytes!("../testdata/rsa-ca.pem")).unwrap();
        let client = TlsClient::new(&roots, &platform).unwrap();
        let (mut c, mut s) = (
            client.connect("localhost").unwrap(),
            server.accept().unwrap(),
        );
        let shaken = shake(&mut c, &mut s);
        if cfg!(feature = "rsa-verify") {
            shaken.unwrap();
        } else {
            assert!(shaken.is_err());
        }
    }

    #[test]
    fn another_name_than_the_certificates_is_refused() {
        let (mut c, mut s) = pair("example.org");
        let e = shake(&mut c, &mut s).unwrap_err();
        assert!(matches!(e, rustls::Error::InvalidCertificate(_)), "{e:?}");
        // Dead from then on, never a panic.
        let mut out = Vec::new();
        assert!(c.write(b"x", &mut out).is_err());
    }

    #[test]
    fn garbage_ends_the_connection_without_a_panic() {
        let (mut c, _) = pair("localhost");
        let (mut out, mut plain) = (Vec::new(), Vec::new());
        c.receive(&[], &mut out, &mut plain).unwrap();
        let e = c.receive(&[0x16, 3, 3, 0, 4, 99, 0, 0, 0], &mut out, &mut plain);
        assert!(e.is_err());
        assert!(
            c.receive(&[1, 2, 3], &mut out, &mut plain).is_err(),
            "failed for good"
        );
        let big = alloc::vec![0x17; MAX_BUFFERED + 1];
        let (mut c, _) = pair("localhost");
        assert!(c.receive(&big, &mut out, &mut plain).is_err());
    }
}
