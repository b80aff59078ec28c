//! HTTPS: the TLS connection kind of the server. A connection to the HTTPS port
//! (`Config::tls`) is a TCB of the same table as plain HTTP's, with
//! [`HttpConn::tls`](crate::http::conn::HttpConn::tls) set and a [`TlsSide`] beside it
//! (as `clients` sits beside the TCBs): admission, cookies, eviction, timers and segment
//! emission are unchanged. Its step ([`Server::tls_step`]):
//!
//! 1. ciphertext received (kept in [`TlsSide::cin`], within the window the receive slab
//!    allows) goes to the session ([`TlsSession::receive`]): what TLS sends back (the
//!    handshake, alerts) is queued on the TCP stream, decrypted request bytes go into the
//!    connection's receive slab, as a plain request's do (what does not fit waits in
//!    [`TlsSide::spill`], and the window stays shut meanwhile);
//! 2. the HTTP step as for plain HTTP: `http::parse` and `respond_cached` on the slab, the
//!    response head in the head slab and its body a slice of the site image; the
//!    response is kept in *plaintext* positions (`Sending` from 0);
//! 3. records are *reserved* from it ([`TlsSession::reserve`]: a sequence number and a
//!    length, at most [`CIPHER_MAX`] unacknowledged bytes and [`PIECES_MAX`] records in
//!    flight) and queued on the TCP stream as pieces ([`Piece`]): the record's plaintext
//!    is where it lies (its head bytes, kept in [`TlsSide::kept`] until acknowledged
//!    since the head slab serves the next response; its body, a slice of the site
//!    image). Record sizes are dynamic: the first [`SMALL_RECORDS`] of a connection, and
//!    again after [`RECORD_IDLE_NS`] without sending, fill one TCP segment each (a
//!    browser decrypts the page's first bytes as they arrive), later ones 16 KiB;
//! 4. when the response is reserved whole, the next pipelined request is read;
//!    `Connection: close` (or a 408, or the peer's close_notify) ends with our
//!    close_notify and a FIN.
//!
//! A segment's bytes are made when it is sent ([`TlsSide::write`]), straight into the
//! frame that carries them: control bytes (the handshake's flights, alerts: sealed once,
//! kept in [`TlsSide::ctl`] until acknowledged) as kept; a record's part sealed alone
//! ([`TlsSession::seal_range`]: AES-GCM's counter at the segment's offset, the GHASH
//! carried from segment to segment and the tag kept once made), or, where the cipher
//! cannot seal a range alone, the record sealed whole into the server's one-record
//! [`SealCache`] ([`TlsSession::seal_reserved`]) and the part copied. The same key and
//! sequence number give the same bytes, so a retransmission seals its segment again
//! instead of keeping ciphertext: a connection holds a few descriptors and its heads,
//! not up to 64 KiB of ciphertext; a TLS 1.3 KeyUpdate keeps the old key until the
//! records sealed under it are acknowledged ([`TlsSession::release_before`]). Handshakes
//! are the expensive step (key exchange and a signature): at most
//! [`HANDSHAKES_PER_ROUND`] connections still in their handshake are stepped per poll
//! round; the others wait for the next round ([`Server::tls_round_end`]), so a flood of
//! handshakes cannot starve established connections.
//!
//! The TLS implementation is the platform's ([`TlsAcceptor`], [`TlsSession`]): the engine
//! does not depend on a TLS library unless its `tls` feature is on (`bareweb-tls`'s
//! rustls, [`rustls_session`]); the bare machine's build carries none.

use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::fmt;

use super::{AccessLog, Server};
use crate::http::conn::{Sending, NO_DYN};
use crate::http::{self};
use crate::nic::TxRing;
use crate::resource::Lookup;
use crate::tcp::emit;
use crate::tcp::seq;

/// The most a sealed record adds to its plaintext (header, TLS 1.2 GCM's explicit nonce,
/// tag).
pub const RECORD_OVERHEAD: usize = 5 + 8 + 16;
/// The largest plaintext of one record (RFC 8446 §5.1).
pub const MAX_RECORD: usize = 16384;
/// Unacknowledged record bytes one connection has in flight at most: four full records. A
/// record is reserved only when it fits.
pub const CIPHER_MAX: usize = 4 * (MAX_RECORD + RECORD_OVERHEAD);
/// Connections in their handshake stepped per poll round, at most. One: a full handshake's
/// first step (key exchange and an ECDSA signature) takes about 1.5 ms of a core here, and
/// each one more in a round is that much more wait for the established connections served
/// in the same round. Rounds are short when nothing else waits, so the handshakes a core
/// completes per second hardly change (400-570/s with a cap of 1 or 4). Measured on a busy
/// two-CPU machine (bench/tls_handshake_flood.py,
/// docs/perf/log/2026-11-28-tls-handshake-flood.md): a keep-alive client's p99 under a
/// flood of full handshakes was within 2x of its p99 without in most runs with either
/// cap; the noise did not separate them.
pub const HANDSHAKES_PER_ROUND: u32 = 1;
/// Records sealed one TCP segment each when a connection starts or resumes after
/// [`RECORD_IDLE_NS`] of silence: about TCP's initial window (ten segments), so the first
/// bytes of a page can be decrypted as each segment arrives instead of waiting for a
/// 16 KiB record to arrive whole (dynamic record sizing, as Google's and Cloudflare's TLS
/// front ends do). Then records grow to [`MAX_RECORD`], where the per-record cost is least.
pub const SMALL_RECORDS: u32 = 10;
/// Idle time after which a connection's records start small again (its congestion window
/// has gone back too, RFC 7661's idle restart).
pub const RECORD_IDLE_NS: u64 = 1_000_000_000;
/// The smallest "one segment" record's plaintext, whatever the MSS says.
const SMALL_RECORD_MIN: u32 = 512;
/// Responses one TLS step seals at most (pipelined requests beyond wait for the next
/// step).
const RESPONSES_PER_STEP: u32 = 16;

/// What one [`TlsSession::receive`] found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TlsProgress {
    /// The handshake is complete: [`TlsSession::seal`] works.
    pub established: bool,
    /// The peer sent close_notify: it sends nothing more.
    pub peer_closed: bool,
}

/// An application-data record reserved by [`TlsSession::reserve`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// Its sequence number under its key.
    pub seq: u64,
    /// Its transmit key's epoch (TLS 1.3 KeyUpdates move it on).
    pub epoch: u32,
    /// Its length on the wire, header included.
    pub wire: u32,
}

/// The connection failed (the peer broke the protocol, or the handshake failed): what the
/// session put in the output (an alert) is sent, then the connection closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TlsFailed;

/// One TLS connection's protocol state, as the platform implements it.
pub trait TlsSession: Send {
    /// Feeds bytes received on the connection: TLS bytes to send are appended to `out`,
    /// decrypted application data to `plain`. Never panics on what it is fed.
    fn receive(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        plain: &mut Vec<u8>,
    ) -> Result<TlsProgress, TlsFailed>;
    /// Reserves the next application-data record, of `len` plaintext bytes (at most
    /// [`MAX_RECORD`]): its sequence number, key epoch and length on the wire; control
    /// bytes that must precede it (a TLS 1.3 KeyUpdate at the key's limit) are appended to
    /// `ctl`. `None` when it cannot (not established, the keys exhausted): the connection
    /// is then closed.
    fn reserve(&mut self, len: usize, ctl: &mut Vec<u8>) -> Option<Record>;
    /// Seals reserved record `r` from `parts` joined (a response's head, a slice of the
    /// site image: the length reserved), each read where it lies, into `out` (room for
    /// `r.wire` bytes): the same bytes every time it is asked, so a retransmission seals
    /// again instead of keeping ciphertext.
    fn seal_reserved(&self, r: &Record, parts: &[&[u8]], out: &mut [u8]) -> Option<usize>;
    /// Seals bytes `from..from + out.len()` of reserved record `r` (plaintext `parts`
    /// joined) into `out` alone: a segment straight into its frame. `tag` is the record's
    /// tag once known (kept by the caller for the ranges sent again), set by the range
    /// that makes it. `false` when this range needs the whole record sealed
    /// ([`TlsSession::seal_reserved`]): the cipher cannot seal ranges, or the range holds
    /// the tag before the ciphertext before it went through in order.
    fn seal_range(
        &mut self,
        _r: &Record,
        _parts: &[&[u8]],
        _from: usize,
        _out: &mut [u8],
        _tag: &mut Option<[u8; 16]>,
    ) -> bool {
        false
    }
    /// The records reserved under key epochs before `epoch` are acknowledged: their keys
    /// may go.
    fn release_before(&mut self, epoch: u32);
    /// Seals a close_notify alert into `out` ([`RECORD_OVERHEAD`] + 2 bytes suffice).
    fn close_notify(&mut self, out: &mut [u8]) -> Option<usize>;
}

/// The server's TLS configuration: makes one session per connection. Shared by every
/// core.
pub trait TlsAcceptor: Sync + fmt::Debug {
    /// A new connection's session (`None`: none can be made; the connection is closed).
    fn accept(&self) -> Option<Box<dyn TlsSession>>;
    /// Whether a certificate is served (false while one is awaited over ACME: then
    /// `--http-redirect` does not send clients to a port that refuses them).
    fn certified(&self) -> bool {
        true
    }
}

/// HTTPS on a port (`Config::tls`).
#[derive(Clone, Copy, Debug)]
pub struct TlsListen {
    /// The TCP port (`--https-port`).
    pub port: u16,
    /// The sessions' maker (leaked at start, as the board is).
    pub acceptor: &'static dyn TlsAcceptor,
}

/// Records (and control pieces) one connection has in flight at most: past it, sealing
/// waits for an ACK as when [`CIPHER_MAX`] is reached.
const PIECES_MAX: usize = 64;

/// The most bytes one segment (an offloaded frame) of a TLS connection carries: the
/// size of [`SealCache`]'s frame buffer, where such a frame's payload is sealed.
pub(super) const JOIN_MAX: usize = 64 * 1024;

/// What a stretch of a TLS connection's outgoing stream is made of.
#[derive(Clone, Copy, Debug)]
enum Src {
    /// Bytes of [`TlsSide::ctl`] from this absolute offset (the handshake's flights,
    /// alerts, KeyUpdates, close_notify: sealed once, kept until acknowledged).
    Ctl { off: u64 },
    /// An application-data record, sealed whenever its bytes are sent: its plaintext is the
    /// head bytes kept in [`TlsSide::kept`] (from absolute offset `kept`, `kept_len` bytes)
    /// then `body`, a slice of the site image.
    Rec {
        rec: Record,
        kept: u64,
        kept_len: u32,
        body: &'static [u8],
        /// The record's AEAD tag once a range reached it (a range sent again that holds
        /// it needs no pass over the whole record).
        tag: Option<[u8; 16]>,
    },
}

/// Stream bytes `[start, start + len)` and where they come from.
#[derive(Clone, Copy, Debug)]
struct Piece {
    start: u32,
    len: u32,
    src: Src,
}

/// What a server (a core) seals TLS segments with besides their frames: the one record it
/// holds sealed whole (the last one a segment needed where its part could not be sealed
/// alone; its later segments, sent in order and mostly in one go, find it here), and the
/// payload buffer of an offloaded frame. One per server instead of the ciphertext of every
/// record in flight per connection.
#[derive(Default)]
pub(super) struct SealCache {
    /// The record's bytes.
    buf: Vec<u8>,
    /// Whose record it is: (connection slot, the slot's generation, sequence number,
    /// epoch).
    key: Option<(usize, u32, u64, u32)>,
    /// An offloaded frame's payload (up to [`JOIN_MAX`] bytes), written here by
    /// [`TlsSide::write`] for the ring to copy at post.
    pub(super) frame: Vec<u8>,
    /// Records sealed whole here since the server last counted them
    /// (`tls_sealed_whole`).
    pub(super) sealed_whole: u64,
}

impl SealCache {
    /// Room for a whole record and a segment (made once, when HTTPS is served).
    pub(super) fn new() -> Self {
        Self {
            buf: Vec::with_capacity(MAX_RECORD + RECORD_OVERHEAD),
            key: None,
            frame: alloc::vec![0; JOIN_MAX],
            sealed_whole: 0,
        }
    }
}

/// A TCB's TLS state, beside it in the server (kept per TCB slot: its buffers keep their
/// capacity from one connection to the next).
#[derive(Default)]
pub(super) struct TlsSide {
    /// The session, made at the connection's first byte.
    session: Option<Box<dyn TlsSession>>,
    /// Ciphertext received and not yet given to the session.
    pub(super) cin: Vec<u8>,
    /// Decrypted request bytes that did not fit in the receive slab.
    pub(super) spill: Vec<u8>,
    /// Control bytes queued and not yet acknowledged, from absolute offset `ctl_base`.
    ctl: Vec<u8>,
    ctl_base: u64,
    /// Head bytes of records in flight (response heads, dynamic pages: what is not in the
    /// site image), from absolute offset `kept_base`.
    kept: Vec<u8>,
    kept_base: u64,
    /// The stream from the oldest unacknowledged piece to its end, in order.
    pieces: VecDeque<Piece>,
    /// This slot's connection count: a cached record of an earlier connection is never
    /// taken for one of this.
    generation: u32,
    /// Plaintext bytes of the response in flight sealed so far.
    sealed: u32,
    /// Records sealed since the connection began or last went idle (the first
    /// [`SMALL_RECORDS`] are one segment each: dynamic record sizing).
    records: u32,
    /// When the last record was sealed (the server's clock, ns).
    last_seal_ns: u64,
    /// Our close_notify and FIN follow the response in flight.
    close_after: bool,
    /// The handshake is complete.
    established: bool,
    /// The peer sent close_notify.
    peer_closed: bool,
    /// The session failed, or our close_notify is sent: nothing more is read or sealed.
    done: bool,
    /// On the server's list of handshakes put off to the next round.
    deferred: bool,
}

impl TlsSide {
    /// Ready for the slot's next connection (buffers kept, their contents dropped).
    pub(super) fn reset(&mut self) {
        self.session = None;
        self.cin.clear();
        self.spill.clear();
        self.ctl.clear();
        self.ctl_base = 0;
        self.kept.clear();
        self.kept_base = 0;
        self.pieces.clear();
        self.generation = self.generation.wrapping_add(1);
        self.sealed = 0;
        self.records = 0;
        self.last_seal_ns = 0;
        self.close_after = false;
        self.established = false;
        self.peer_closed = false;
        self.done = false;
        self.deferred = false;
    }

    /// Bytes the receive window must leave room for besides the slab's.
    pub(super) fn held(&self) -> u32 {
        (self.cin.len() + self.spill.len()) as u32
    }

    /// Whether stream bytes from `una` on are queued (sent or not, unacknowledged).
    pub(super) fn unacked(&self, una: u32) -> bool {
        self.pieces
            .back()
            .is_some_and(|p| seq::gt(p.start.wrapping_add(p.len), una))
    }

    /// Whether a record queued and not yet acknowledged reads its body from memory that
    /// `within` says yes to (a reload's old image).
    /// Acknowledged pieces (up to `una`) no longer count, compacted or not.
    pub(super) fn reads_from(&self, una: u32, within: &impl Fn(&[u8]) -> bool) -> bool {
        self.pieces.iter().any(|p| match p.src {
            Src::Rec { body, .. } => seq::gt(p.start.wrapping_add(p.len), una) && within(body),
            Src::Ctl { .. } => false,
        })
    }

    /// Stream bytes queued and not acknowledged from `una` on.
    fn in_flight(&self, una: u32) -> u32 {
        match (self.pieces.front(), self.pieces.back()) {
            (Some(f), Some(b)) => {
                let from = if seq::gt(una, f.start) { una } else { f.start };
                b.start.wrapping_add(b.len).wrapping_sub(from)
            }
            _ => 0,
        }
    }

    /// Notes `n` control bytes appended to `ctl` from index `before`, queued on the stream
    /// from `start`.
    fn push_ctl(&mut self, start: u32, before: usize, n: u32) {
        if let Some(Piece {
            start: s,
            len,
            src: Src::Ctl { off },
        }) = self.pieces.back_mut()
        {
            if s.wrapping_add(*len) == start
                && *off + u64::from(*len) == self.ctl_base + before as u64
            {
                *len += n;
                return;
            }
        }
        self.pieces.push_back(Piece {
            start,
            len: n,
            src: Src::Ctl {
                off: self.ctl_base + before as u64,
            },
        });
    }

    /// Writes the bytes of stream range `[seq, seq + out.len())` into `out` (the frame
    /// that carries them): control bytes as kept; a record's range sealed alone, straight
    /// into `out`, where the session can ([`TlsSession::seal_range`]: AES-GCM on the
    /// assembly), else the record sealed whole into `cache` and the range copied. `false`
    /// when a record cannot be sealed (its key is gone: never, while it is
    /// unacknowledged) or the range is not all queued.
    pub(super) fn write(
        &mut self,
        idx: usize,
        seq: u32,
        out: &mut [u8],
        cache: &mut SealCache,
    ) -> bool {
        if out.is_empty() {
            return true; // a SYN-ACK, an ACK, a bare FIN
        }
        let first = self
            .pieces
            .partition_point(|p| seq::le(p.start.wrapping_add(p.len), seq));
        let TlsSide {
            session,
            ctl,
            ctl_base,
            kept,
            kept_base,
            pieces,
            generation,
            ..
        } = self;
        let Some(session) = session.as_mut() else {
            return false;
        };
        let mut w = 0;
        for p in pieces.range_mut(first..) {
            if w == out.len() {
                break;
            }
            let at = seq.wrapping_add(w as u32);
            let off = at.wrapping_sub(p.start) as usize;
            if off >= p.len as usize {
                return false; // before the first piece, or a gap: never, pieces are contiguous
            }
            let take = (p.len as usize - off).min(out.len() - w);
            let dst = &mut out[w..w + take];
            w += take;
            match &mut p.src {
                Src::Ctl { off: o } => {
                    let i = (*o - *ctl_base) as usize + off;
                    let Some(src) = ctl.get(i..i + take) else {
                        return false;
                    };
                    dst.copy_from_slice(src);
                }
                Src::Rec {
                    rec,
                    kept: k,
                    kept_len,
                    body,
                    tag,
                } => {
                    let k0 = (*k - *kept_base) as usize;
                    let Some(head) = kept.get(k0..k0 + *kept_len as usize) else {
                        return false;
                    };
                    if session.seal_range(rec, &[head, body], off, dst, tag) {
                        continue;
                    }
                    // The whole record, sealed into the cache (kept there for the next
                    // range, the common case), and the range copied from it.
                    let want = (idx, *generation, rec.seq, rec.epoch);
                    let SealCache {
                        buf,
                        key,
                        sealed_whole,
                        ..
                    } = &mut *cache;
                    if *key != Some(want) {
                        *key = None;
                        *sealed_whole += 1;
                        buf.clear();
                        buf.resize(rec.wire as usize, 0);
                        match session.seal_reserved(rec, &[head, body], buf) {
                            Some(n) if n == rec.wire as usize => *key = Some(want),
                            _ => return false,
                        }
                    }
                    let Some(src) = buf.get(off..off + take) else {
                        return false;
                    };
                    dst.copy_from_slice(src);
                    if tag.is_none() {
                        // The tag is the record's last bytes: later ranges go alone.
                        *tag = buf
                            .get(buf.len().saturating_sub(16)..)
                            .and_then(|t| t.try_into().ok());
                    }
                }
            }
        }
        w == out.len()
    }
}

impl fmt::Debug for TlsSide {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsSide")
            .field("session", &self.session.is_some())
            .field("cin", &self.cin.len())
            .field("pieces", &self.pieces.len())
            .field("established", &self.established)
            .finish()
    }
}

impl<L: Lookup<'static>> Server<L> {
    /// The HTTPS port, when served.
    pub(super) fn tls_port(&self) -> Option<u16> {
        if !crate::http::conn::TLS_ENABLED {
            return None;
        }
        self.cfg.tls.map(|t| t.port)
    }

    /// Our port of connection `idx` (HTTPS's or plain HTTP's).
    #[inline]
    pub(super) fn port_of(&self, idx: usize) -> u16 {
        match (self.conns[idx].app.tls(), self.cfg.tls) {
            (true, Some(t)) => t.port,
            _ => self.cfg.port,
        }
    }

    /// Ciphertext received on TLS connection `id`: kept for its step (the window bounds
    /// it, as the slab bounds plain HTTP's request bytes).
    pub(super) fn tls_store(&mut self, id: u32, data: &[u8]) {
        let idx = id as usize;
        let cap = self.cfg.rx_buffer;
        let side = &mut self.tls_sides[idx];
        if side.done || self.conns[idx].tcp.is_closing() {
            return;
        }
        let take = data.len().min(cap.saturating_sub(side.cin.len()));
        side.cin.extend_from_slice(&data[..take]);
        let t = &mut self.conns[idx];
        if t.app.request_start_ns == 0 && take > 0 {
            t.app.request_start_ns = self.now_ns;
        }
    }

    /// Whether TLS connection `idx` has work for its step: input it has not taken yet, or
    /// ciphertext not yet acknowledged (an ACK may let more of it go: the response's
    /// records stay in flight after the response is sealed whole).
    pub(super) fn tls_has_work(&self, idx: usize) -> bool {
        let side = &self.tls_sides[idx];
        side.held() > 0 || side.unacked(self.conns[idx].tcp.snd_una())
    }

    /// Queues on TCP the control bytes from `ctl[before..]` (what the session just wrote).
    fn tls_queue(&mut self, idx: usize, before: usize) {
        let side = &mut self.tls_sides[idx];
        let n = (side.ctl.len() - before) as u32;
        if n == 0 {
            return;
        }
        if self.conns[idx].tcp.is_closing() {
            // Our FIN is queued (a timer closed the connection): nothing goes after it.
            side.ctl.truncate(before);
            return;
        }
        let start = self.conns[idx].tcp.queue(n);
        side.push_ctl(start, before, n);
        self.stats.tls_bytes_out += u64::from(n);
    }

    /// Drops connection `idx`'s acknowledged pieces (their control bytes, their records'
    /// kept heads), and the keys only they needed.
    fn tls_compact(&mut self, idx: usize) {
        let una = self.conns[idx].tcp.snd_una();
        let side = &mut self.tls_sides[idx];
        let mut dropped = false;
        while let Some(p) = side.pieces.front().copied() {
            if !seq::le(p.start.wrapping_add(p.len), una) {
                break;
            }
            side.pieces.pop_front();
            match p.src {
                Src::Ctl { .. } => {
                    let n = (p.len as usize).min(side.ctl.len());
                    side.ctl.drain(..n);
                    side.ctl_base += n as u64;
                }
                Src::Rec { kept_len, rec, .. } => {
                    let n = (kept_len as usize).min(side.kept.len());
                    side.kept.drain(..n);
                    side.kept_base += n as u64;
                    dropped |= rec.epoch > 0;
                }
            }
        }
        if dropped {
            let oldest = side
                .pieces
                .iter()
                .filter_map(|p| match p.src {
                    Src::Rec { rec, .. } => Some(rec.epoch),
                    Src::Ctl { .. } => None,
                })
                .min()
                .unwrap_or(u32::MAX);
            if let Some(s) = side.session.as_mut() {
                s.release_before(oldest);
            }
        }
    }

    /// The HTTPS step of connection `id` (the module doc): input to the session, requests
    /// answered, records sealed, segments sent.
    pub(super) fn tls_step<T: TxRing, A: AccessLog>(&mut self, id: u32, tx: &mut T, log: &mut A) {
        let idx = id as usize;
        self.conns[idx].queued = false;
        if !self.conns[idx].tcp.state().is_synchronized() {
            return;
        }
        if self.conns[idx].app.proxy_wait && !self.tls_sides[idx].cin.is_empty() {
            match self.proxy_header_tls(id, tx) {
                super::proxy::Header::Read => {}
                super::proxy::Header::Wait => {
                    emit::ack_owed(&mut super::send::Out { s: self, tx }, id);
                    return;
                }
                super::proxy::Header::Closed => return,
            }
        }
        if self.tls_sides[idx].held() > 0 && !self.tls_sides[idx].done {
            if !self.tls_sides[idx].established
                && self.tls_handshakes >= HANDSHAKES_PER_ROUND
                && !self.tls_sides[idx].cin.is_empty()
            {
                // This round's handshakes are spent: next round.
                if !self.tls_sides[idx].deferred {
                    self.tls_sides[idx].deferred = true;
                    self.tls_deferred.push(id);
                }
                self.stats.tls_handshakes_deferred += 1;
            } else {
                self.tls_input(idx);
            }
        }
        let side = &self.tls_sides[idx];
        let t = &self.conns[idx];
        if !side.established
            && !side.done
            && side.cin.is_empty()
            && t.tcp.state().peer_closed()
            && !t.tcp.is_closing()
        {
            // The peer's FIN before its handshake ended: the rest will never come (as a
            // request cut off by the FIN is not waited for).
            self.tls_sides[idx].done = true;
            self.conns[idx].tcp.close();
        }
        self.tls_respond(id, tx, log);
        self.output(id, tx);
        emit::ack_owed(&mut super::send::Out { s: self, tx }, id);
    }

    /// Gives connection `idx`'s received ciphertext to its session, and its plaintext to
    /// the receive slab.
    fn tls_input(&mut self, idx: usize) {
        self.tls_unspill(idx);
        let side = &mut self.tls_sides[idx];
        if !side.spill.is_empty() || side.cin.is_empty() {
            return;
        }
        if side.session.is_none() {
            side.session = self.cfg.tls.and_then(|t| t.acceptor.accept());
            self.stats.tls_sessions += 1;
        }
        let was_established = side.established;
        if !was_established {
            self.tls_handshakes += 1;
        }
        let before = side.ctl.len();
        let mut plain = core::mem::take(&mut self.tls_plain);
        plain.clear();
        let result = match side.session.as_mut() {
            Some(s) => s.receive(&side.cin, &mut side.ctl, &mut plain),
            None => Err(TlsFailed),
        };
        side.cin.clear();
        match result {
            Ok(p) => {
                side.established |= p.established;
                side.peer_closed |= p.peer_closed;
                if side.established && !was_established {
                    self.stats.tls_established += 1;
                }
            }
            Err(TlsFailed) => {
                side.done = true;
                self.stats.tls_failed += 1;
            }
        }
        let failed = side.done;
        self.tls_queue(idx, before);
        // Plaintext into the slab; what does not fit waits.
        let cap = self.cfg.rx_buffer;
        let t = &mut self.conns[idx];
        let start = t.app.rx_len as usize;
        let take = plain.len().min(cap - start);
        let base = idx * cap;
        self.rx_slab[base + start..base + start + take].copy_from_slice(&plain[..take]);
        t.app.rx_len += take as u32;
        self.tls_sides[idx].spill.extend_from_slice(&plain[take..]);
        self.tls_plain = plain;
        if failed {
            // The alert (if any) is queued: it ends the stream.
            let t = &mut self.conns[idx];
            t.app.rx_len = 0;
            t.tcp.close();
            self.tls_sides[idx].spill.clear();
        }
    }

    /// Moves spilled plaintext into the room the slab has.
    fn tls_unspill(&mut self, idx: usize) {
        let side = &mut self.tls_sides[idx];
        if side.spill.is_empty() {
            return;
        }
        let cap = self.cfg.rx_buffer;
        let t = &mut self.conns[idx];
        let start = t.app.rx_len as usize;
        let take = side.spill.len().min(cap - start);
        let base = idx * cap;
        self.rx_slab[base + start..base + start + take].copy_from_slice(&side.spill[..take]);
        side.spill.drain(..take);
        t.app.rx_len += take as u32;
    }

    /// Answers connection `id`'s requests and seals their responses while its ciphertext
    /// buffer has room; closes when the responses say so, or the peer did.
    fn tls_respond<T: TxRing, A: AccessLog>(&mut self, id: u32, tx: &mut T, log: &mut A) {
        let idx = id as usize;
        if !self.tls_sides[idx].established || self.tls_sides[idx].done {
            return;
        }
        self.tls_compact(idx);
        for _ in 0..RESPONSES_PER_STEP {
            if self.conns[idx].app.resp.is_none() {
                self.tls_unspill(idx);
                let t = &self.conns[idx];
                let side = &self.tls_sides[idx];
                if t.app.rx_len == 0 || t.tcp.is_closing() || side.close_after {
                    break;
                }
                if !self.start_response(id, tx, log) {
                    return;
                }
                if self.conns[idx].app.resp.is_none() {
                    break; // a partial request: more input first
                }
            }
            if !self.tls_seal(idx) {
                break; // the buffer is full (or the session failed)
            }
        }
        let t = &self.conns[idx];
        let side = &self.tls_sides[idx];
        let peer_done = side.peer_closed || t.tcp.state().peer_closed();
        let finished = t.app.resp.is_none()
            && !side.done
            && (side.close_after || (peer_done && t.app.rx_len == 0 && side.spill.is_empty()));
        if finished {
            self.tls_close(idx);
        }
    }

    /// Seals the response in flight on connection `idx` into its ciphertext buffer,
    /// record by record, while there is room. Returns whether it was sealed whole.
    fn tls_seal(&mut self, idx: usize) -> bool {
        let Some(r) = self.conns[idx].app.resp else {
            return true;
        };
        let total = r.wire_len();
        let now = self.now_ns;
        let small = small_record(&self.conns[idx].tcp);
        let una = self.conns[idx].tcp.snd_una();
        loop {
            let side = &mut self.tls_sides[idx];
            let sealed = side.sealed;
            if sealed >= total {
                break;
            }
            let room = CIPHER_MAX.saturating_sub(side.in_flight(una) as usize);
            if room <= RECORD_OVERHEAD
                || side.pieces.len() >= PIECES_MAX
                || self.conns[idx].tcp.is_closing()
            {
                return false;
            }
            if side.records > 0 && now.saturating_sub(side.last_seal_ns) >= RECORD_IDLE_NS {
                side.records = 0;
            }
            let limit = if side.records < SMALL_RECORDS {
                small
            } else {
                MAX_RECORD as u32
            };
            let chunk = (total - sealed)
                .min(limit)
                .min((room - RECORD_OVERHEAD) as u32);
            // A record smaller than the room allows is worth waiting for an ACK, unless
            // it ends the response.
            if chunk < (total - sealed).min(limit) && chunk < 4096 {
                return false;
            }
            let p = r.payload(sealed, chunk);
            let head_buf: &[u8] = match &self.dynamic {
                Some(d) if self.conns[idx].app.dyn_slot != NO_DYN => {
                    let s = usize::from(self.conns[idx].app.dyn_slot);
                    &d.pool[s * d.slot_len..(s + 1) * d.slot_len]
                }
                _ => &self.head_slab[idx * http::HEAD_MAX..(idx + 1) * http::HEAD_MAX],
            };
            // The head (if this record starts the response) is kept until the record is
            // acknowledged (the head slab serves the next response); the body is a slice
            // of the site image, read when the record is sealed.
            let head = head_buf.get(p.head.clone()).unwrap_or(&[]);
            let before = side.ctl.len();
            let reserved = side
                .session
                .as_mut()
                .and_then(|s| s.reserve(head.len() + p.body.len(), &mut side.ctl));
            let Some(rec) = reserved else {
                // The key's record limit (TLS 1.2) or a failed session: our close_notify
                // and the FIN end it (the client sees the response cut short).
                side.ctl.truncate(before);
                self.stats.tls_failed += 1;
                self.conns[idx].app.rx_len = 0;
                self.tls_close(idx);
                return false;
            };
            let kept = side.kept_base + side.kept.len() as u64;
            side.kept.extend_from_slice(head);
            let body = p.body;
            let kept_len = head.len() as u32;
            // A KeyUpdate the key's limit called for goes first.
            self.tls_queue(idx, before);
            let start = self.conns[idx].tcp.queue(rec.wire);
            let side = &mut self.tls_sides[idx];
            side.pieces.push_back(Piece {
                start,
                len: rec.wire,
                src: Src::Rec {
                    rec,
                    kept,
                    kept_len,
                    body,
                    tag: None,
                },
            });
            side.sealed += chunk;
            side.records = side.records.saturating_add(1);
            side.last_seal_ns = now;
            self.stats.tls_bytes_out += u64::from(rec.wire);
        }
        // Sealed whole: the response is done (its ciphertext stays until acknowledged).
        let t = &mut self.conns[idx];
        t.app.resp = None;
        let slot = core::mem::replace(&mut t.app.dyn_slot, NO_DYN);
        self.release_dyn(slot);
        self.tls_sides[idx].sealed = 0;
        true
    }

    /// Closes connection `idx`, which has no response pending (idle keep-alive, or a
    /// drain): on an established TLS connection our close_notify goes before the FIN, so
    /// the client can tell the close from a cut (RFC 8446 §6.1); else the FIN alone.
    pub(super) fn close_idle(&mut self, idx: usize) {
        if crate::http::conn::TLS_ENABLED
            && self.conns[idx].app.tls()
            && self
                .tls_sides
                .get(idx)
                .is_some_and(|s| s.established && !s.done)
        {
            self.tls_close(idx);
            return;
        }
        self.conns[idx].tcp.close();
    }

    /// Our close_notify, then the FIN.
    fn tls_close(&mut self, idx: usize) {
        let side = &mut self.tls_sides[idx];
        side.done = true;
        let before = side.ctl.len();
        side.ctl.resize(before + RECORD_OVERHEAD + 2, 0);
        let n = side
            .session
            .as_mut()
            .and_then(|s| s.close_notify(&mut side.ctl[before..]))
            .unwrap_or(0);
        side.ctl.truncate(before + n);
        self.tls_queue(idx, before);
        self.conns[idx].tcp.close();
    }

    /// A TLS connection's request timed out: a 408 sealed and the connection closed once
    /// established; before that, the handshake just ends (a FIN).
    pub(super) fn tls_timeout(&mut self, idx: usize, resp: &http::Response<'_>) {
        let t = &mut self.conns[idx];
        t.app.rx_len = 0;
        t.app.request_start_ns = 0;
        let side = &mut self.tls_sides[idx];
        side.cin.clear();
        side.spill.clear();
        if side.established && !side.done {
            t.app.resp = Some(Sending::new(0, resp.head_len, None));
            side.sealed = 0;
            side.close_after = true;
        } else {
            side.done = true;
            t.tcp.close();
        }
    }

    /// Connections whose handshake waited for the next round go back on the run list.
    pub(super) fn tls_round_end(&mut self) {
        if !crate::http::conn::TLS_ENABLED {
            return;
        }
        self.tls_handshakes = 0;
        while let Some(id) = self.tls_deferred.pop() {
            let side = &mut self.tls_sides[id as usize];
            if side.deferred {
                side.deferred = false;
                self.enqueue(id);
            }
        }
    }

    /// Connection `idx`'s response as `start_response` made it: on TLS it stays in
    /// plaintext positions (from 0) and is sealed by the step; `close` becomes our
    /// close_notify and FIN after it.
    pub(super) fn tls_started(&mut self, idx: usize, sending: Sending, close: bool) {
        self.stats.http_bytes += u64::from(sending.wire_len());
        self.conns[idx].app.resp = Some(sending);
        let side = &mut self.tls_sides[idx];
        side.sealed = 0;
        side.close_after |= close;
    }
}

/// The plaintext of a record that fills one TCP segment of `tcp` (its MSS, less the
/// timestamp option when in use, less the most a record adds).
fn small_record(tcp: &crate::tcp::conn::Connection) -> u32 {
    let payload = tcp.mss().saturating_sub(if tcp.ts_ok() { 12 } else { 0 });
    payload
        .saturating_sub(RECORD_OVERHEAD as u32)
        .clamp(SMALL_RECORD_MIN, MAX_RECORD as u32)
}

#[cfg(any(test, feature = "tls"))]
pub mod rustls_session;
