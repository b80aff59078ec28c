//! HTTPS for the load generator: the client configuration ([`client_config`]) and the
//! socket adapter rustls's buffered connection (`rustls::ClientConnection`) writes through
//! (`FdIo`); the driving of a connection from the epoll loop is in `load::conn`.
//!
//! The crypto is bareweb's own rustls provider (`bareweb_tls::provider::client_provider`,
//! the RustCrypto crates the server runs on, RSA signatures verified for the Web PKI's
//! chains) with the host's randomness and clock: no second crypto library. TLS 1.3 and
//! 1.2, ALPN `http/1.1`, the certificate always verified (rustls's WebPKI verifier: the
//! chain to a trusted root, the name, the dates). Session resumption is off: every
//! connection makes a full handshake, so each one sees the certificate the server holds
//! at that moment (a run across a certificate renewal checks the new one) and a
//! connection per fetch measures the server's full handshake.

use std::io::{self, IoSlice};
use std::os::fd::BorrowedFd;
use std::sync::Arc;

use bareweb_tls::rustls::client::Resumption;
use bareweb_tls::rustls::{self, ClientConfig, RootCertStore};

use crate::sys;

/// The TLS client of a run: trusting the certificates of `cacert_pem` (PEM, one or more
/// CA certificates) or, without it, the Web PKI's roots (the `webpki-roots` crate).
pub fn client_config(cacert_pem: Option<&[u8]>) -> Result<Arc<ClientConfig>, String> {
    let mut roots = RootCertStore::empty();
    match cacert_pem {
        Some(pem) => {
            let certs = bareweb_tls::server::parse_chain(pem)
                .map_err(|_| "no PEM CERTIFICATE block in it".to_string())?;
            let (added, _) = roots.add_parsable_certificates(certs);
            if added == 0 {
                return Err("none of its certificates is usable as a trust anchor".into());
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    let platform = bareweb_tls::host::platform();
    // The provider leaks two small objects (its key-exchange groups hold the randomness):
    // one configuration per run.
    let provider = Arc::new(bareweb_tls::provider::client_provider(platform.random));
    let mut config = ClientConfig::builder_with_details(provider, platform.time)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    config.resumption = Resumption::disabled();
    config.enable_early_data = false;
    Ok(Arc::new(config))
}

/// A connected non-blocking socket as `io::Write` for `ClientConnection::write_tls`
/// (`sendmsg` with MSG_NOSIGNAL, several records in one call).
pub(super) struct FdIo<'a>(pub BorrowedFd<'a>);

impl io::Write for FdIo<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        sys::write(self.0, buf)
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        sys::write_vectored(self.0, bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// "TLS 1.3", "TLS 1.2": the version as the report says it.
pub fn version_name(v: rustls::ProtocolVersion) -> &'static str {
    match v {
        rustls::ProtocolVersion::TLSv1_3 => "TLS 1.3",
        rustls::ProtocolVersion::TLSv1_2 => "TLS 1.2",
        _ => "TLS (other)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_come_from_the_pem_given_or_the_web_pki() {
        assert!(client_config(None).is_ok());
        let e = client_config(Some(b"not a certificate")).unwrap_err();
        assert!(e.contains("no PEM CERTIFICATE"), "{e}");
        // A PEM block that is no certificate a root store takes.
        let junk = b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        assert!(client_config(Some(junk)).is_err());
        assert_eq!(version_name(rustls::ProtocolVersion::TLSv1_3), "TLS 1.3");
    }
}
