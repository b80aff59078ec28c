//! The server's TLS sessions from `bareweb-tls` (rustls with bareweb's RustCrypto
//! provider, over rustls's unbuffered API): [`Acceptor`] wraps its `TlsServer`
//! ([`Renewable`] its `ServerSlot`, whose certificate can be replaced while the server
//! runs), and its `TlsConn` is a [`TlsSession`]. Feature `tls` (the host's `serve`); the engine's tests
//! use it too.

use alloc::boxed::Box;
use alloc::vec::Vec;

use bareweb_tls::server::{RangeMac, Reserved};
use bareweb_tls::{ServerSlot, TlsConn, TlsServer};

use super::{Record, TlsAcceptor, TlsFailed, TlsProgress, TlsSession};

/// A `TlsServer` (certificate, key, options, ticket keys) as the server's acceptor.
#[derive(Debug, Clone)]
pub struct Acceptor(pub TlsServer);

impl TlsAcceptor for Acceptor {
    fn accept(&self) -> Option<Box<dyn TlsSession>> {
        let conn = self.0.accept().ok()?;
        Some(Box::new(Session(conn, None)))
    }
}

/// A `ServerSlot` as the server's acceptor: a renewed certificate put in the slot is used
/// by the connections accepted after it (`serve`'s reload).
#[derive(Debug)]
pub struct Renewable(pub ServerSlot);

impl TlsAcceptor for Renewable {
    fn accept(&self) -> Option<Box<dyn TlsSession>> {
        let conn = self.0.accept().ok()?;
        Some(Box::new(Session(conn, None)))
    }

    fn certified(&self) -> bool {
        self.0.has_certificate()
    }
}

/// One connection's `TlsConn`, and the MAC (GHASH, Poly1305) of the record its ranges
/// are being sealed from (the record's sequence number and key epoch with it): records are sent in order,
/// so one at a time.
struct Session(TlsConn, Option<(u64, u32, RangeMac)>);

/// The library's name for a reserved record.
fn reserved(r: &Record) -> Reserved {
    Reserved {
        seq: r.seq,
        epoch: r.epoch,
        wire: r.wire,
    }
}

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

    fn reserve(&mut self, len: usize, ctl: &mut Vec<u8>) -> Option<Record> {
        let r = self.0.reserve(len, ctl).ok()?;
        Some(Record {
            seq: r.seq,
            epoch: r.epoch,
            wire: r.wire,
        })
    }

    fn seal_reserved(&self, r: &Record, parts: &[&[u8]], out: &mut [u8]) -> Option<usize> {
        self.0.seal_reserved(&reserved(r), parts, out).ok()
    }

    fn seal_range(
        &mut self,
        r: &Record,
        parts: &[&[u8]],
        from: usize,
        out: &mut [u8],
        tag: &mut Option<[u8; 16]>,
    ) -> bool {
        // The MAC under way, if it is this record's. A range of another record (sent
        // again) leaves it be, unless that range starts a MAC of its own: then the
        // record left behind gets its tag by being sealed whole.
        let mine = matches!(&self.1, Some((s, e, _)) if (*s, *e) == (r.seq, r.epoch));
        let mut ghash = if mine {
            self.1.take().map(|(_, _, g)| g)
        } else {
            None
        };
        let ok = self
            .0
            .seal_reserved_range(&reserved(r), parts, from, out, &mut ghash, tag)
            .is_ok();
        if mine || ghash.is_some() {
            self.1 = ghash.map(|g| (r.seq, r.epoch, g));
        }
        ok
    }

    fn release_before(&mut self, epoch: u32) {
        self.0.release_before(epoch);
    }

    fn close_notify(&mut self, out: &mut [u8]) -> Option<usize> {
        self.0.close(out).ok()
    }
}
