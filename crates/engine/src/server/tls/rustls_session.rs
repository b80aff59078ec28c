//! The server's TLS sessions from `bareweb-tls` (rustls with bareweb's RustCrypto
//! provider, over rustls's unbuffered API): [`Acceptor`] wraps its `TlsServer`, and its
//! `TlsConn` is a [`TlsSession`]. Feature `tls` (the host's `serve`); the engine's tests
//! use it too.

use alloc::boxed::Box;
use alloc::vec::Vec;

use bareweb_tls::{TlsConn, TlsServer};

use super::{TlsAcceptor, TlsFailed, TlsProgress, TlsSession};

/// A `TlsServer` (certificate, key, options, ticket keys) as the server's acceptor.
#[derive(Debug, Clone)]
pub struct Acceptor(pub TlsServer);

impl TlsAcceptor for Acceptor {
    fn accept(&self) -> Option<Box<dyn TlsSession>> {
        let conn = self.0.accept().ok()?;
        Some(Box::new(Session(conn)))
    }
}

/// One connection's `TlsConn`.
struct Session(TlsConn);

impl TlsSession for Session {
    fn receive(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        plain: &mut Vec<u8>,
    ) -> Result<TlsProgress, TlsFailed> {
        match self.0.receive(input, out, plain) {
            Ok(p) => Ok(TlsProgress {
                established: p.established,
                peer_closed: p.peer_closed || p.closed,
            }),
            Err(_) => Err(TlsFailed),
        }
    }

    fn seal(&mut self, plain: &[u8], out: &mut [u8]) -> Option<usize> {
        self.0.encrypt(plain, out).ok()
    }

    fn close_notify(&mut self, out: &mut [u8]) -> Option<usize> {
        self.0.close(out).ok()
    }
}
