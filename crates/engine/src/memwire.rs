//! An in-memory wire between two engines in one thread (std only): [`Wire`] holds two
//! [`End`]s, each a [`Nic`]; a frame posted on one end is received on the other after
//! [`Wire::carry`]. Frame buffers come from a pool allocated at start and move between
//! the ends by pointer: after the first frames, nothing allocates and nothing is copied
//! except what a device would copy (a body posted beside its head is gathered into the
//! frame, as DMA does). That gather is the wire's work, done in [`Wire::carry`], not in
//! `post`: a DMA device costs the sender no CPU for it, so neither does this one (the
//! microbenchmark times the server's `poll` calls alone). No system call: the engine microbenchmark (`benches/engine.rs`) and
//! the client's tests run the server and the client against each other over it.
//!
//! Also [`MemSite`], a site of in-memory files (leaked, so bodies are `'static` as a
//! loaded image's are) for the same uses.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::vec;
use std::vec::Vec;

use crate::nic::{Nic, RxFrame, RxRing, TxFull, TxRing, TX_HEAD_ROOM};
use crate::resource::{block_sums_into, Body, Found, Lookup, Resource};
use crate::wire::EthernetAddress;

/// Bytes of one frame buffer: a 1514-byte frame, or a head slot.
const BUF: usize = TX_HEAD_ROOM;
/// Frames one end may have received and not yet recycled.
const LOANED: usize = 256;

type Pool = Rc<RefCell<Vec<Box<[u8; BUF]>>>>;

/// One end of the wire: a receive and a transmit ring sharing the wire's buffer pool.
pub struct End {
    mac: EthernetAddress,
    /// The receive ring.
    pub rx: EndRx,
    /// The transmit ring.
    pub tx: EndTx,
}

/// An end's receive ring.
pub struct EndRx {
    pool: Pool,
    /// Received frames, waiting for `burst`.
    inbox: VecDeque<(Box<[u8; BUF]>, usize)>,
    loaned: Vec<Option<Box<[u8; BUF]>>>,
}

/// An end's transmit ring.
pub struct EndTx {
    pool: Pool,
    /// The slot being written (from `slot`, until `post`).
    cur: Option<Box<[u8; BUF]>>,
    /// Posted frames (slot, head length, body), waiting for [`Wire::carry`] to gather
    /// them.
    sent: Posted,
    /// Frames posted.
    pub frames: u64,
    /// Frames refused: no buffer was free, or the frame was larger than one.
    pub refused: u64,
}

/// Two ends and the frames between them.
pub struct Wire {
    /// The first end (the server's, by convention).
    pub a: End,
    /// The second end (the client's).
    pub b: End,
}

impl Wire {
    /// A wire between `mac_a` and `mac_b` with `frames` buffers in its pool.
    pub fn new(mac_a: EthernetAddress, mac_b: EthernetAddress, frames: usize) -> Wire {
        let pool: Pool = Rc::new(RefCell::new(
            (0..frames).map(|_| Box::new([0u8; BUF])).collect(),
        ));
        let end = |mac| End {
            mac,
            rx: EndRx {
                pool: pool.clone(),
                inbox: VecDeque::with_capacity(frames),
                loaned: (0..LOANED).map(|_| None).collect(),
            },
            tx: EndTx {
                pool: pool.clone(),
                cur: None,
                sent: VecDeque::with_capacity(frames),
                frames: 0,
                refused: 0,
            },
        };
        Wire {
            a: end(mac_a),
            b: end(mac_b),
        }
    }

    /// Moves every posted frame to the other end's inbox, gathering each body behind its
    /// head (as a device's DMA does); returns how many moved.
    pub fn carry(&mut self) -> usize {
        let n = self.a.tx.sent.len() + self.b.tx.sent.len();
        gather(&mut self.a.tx.sent, &mut self.b.rx.inbox);
        gather(&mut self.b.tx.sent, &mut self.a.rx.inbox);
        n
    }

    /// Drops every frame on its way (a cut cable, for tests), returning their buffers.
    pub fn cut(&mut self) {
        for end in [&mut self.a, &mut self.b] {
            let mut pool = end.tx.pool.borrow_mut();
            pool.extend(end.tx.sent.drain(..).map(|(b, _, _)| b));
            pool.extend(end.rx.inbox.drain(..).map(|(b, _)| b));
        }
    }

    /// Whether no frame is on its way or waiting to be received.
    pub fn idle(&self) -> bool {
        self.a.tx.sent.is_empty()
            && self.b.tx.sent.is_empty()
            && self.a.rx.inbox.is_empty()
            && self.b.rx.inbox.is_empty()
    }
}

type Posted = VecDeque<(Box<[u8; BUF]>, usize, &'static [u8])>;

/// Moves the frames of `sent` to `inbox`, each body copied behind its head (`post` checked
/// that the frame fits a buffer).
fn gather(sent: &mut Posted, inbox: &mut VecDeque<(Box<[u8; BUF]>, usize)>) {
    for (mut buf, head_len, body) in sent.drain(..) {
        let len = head_len + body.len();
        buf[head_len..len].copy_from_slice(body);
        inbox.push_back((buf, len));
    }
}

impl EndRx {
    /// Frames waiting to be received.
    pub fn pending(&self) -> usize {
        self.inbox.len()
    }

    /// Drops every frame waiting to be received (an engine that is gone).
    pub fn clear(&mut self) {
        let mut pool = self.pool.borrow_mut();
        pool.extend(self.inbox.drain(..).map(|(b, _)| b));
    }
}

impl RxRing for EndRx {
    fn burst(&mut self, out: &mut [RxFrame]) -> usize {
        let mut n = 0;
        let mut i = 0;
        while n < out.len() && !self.inbox.is_empty() {
            while i < LOANED && self.loaned[i].is_some() {
                i += 1;
            }
            let (true, Some((buf, len))) = (i < LOANED, self.inbox.pop_front()) else {
                break;
            };
            self.loaned[i] = Some(buf);
            out[n] = RxFrame {
                buf: i as u32,
                len: len as u32,
            };
            n += 1;
        }
        n
    }

    fn bytes(&self, f: &RxFrame) -> &[u8] {
        match self.loaned.get(f.buf as usize) {
            Some(Some(b)) => &b[..(f.len as usize).min(BUF)],
            _ => &[],
        }
    }

    fn recycle(&mut self, f: RxFrame) {
        if let Some(b) = self.loaned.get_mut(f.buf as usize).and_then(Option::take) {
            self.pool.borrow_mut().push(b);
        }
    }
}

impl TxRing for EndTx {
    fn slot(&mut self) -> Option<&mut [u8]> {
        if self.cur.is_none() {
            self.cur = self.pool.borrow_mut().pop();
        }
        self.cur.as_deref_mut().map(|b| &mut b[..])
    }

    fn post(&mut self, head_len: usize, body: &'static [u8]) -> Result<(), TxFull> {
        let len = head_len + body.len();
        let Some(buf) = self.cur.take() else {
            self.refused += 1;
            return Err(TxFull);
        };
        if len > BUF {
            self.pool.borrow_mut().push(buf);
            self.refused += 1;
            return Err(TxFull);
        }
        self.sent.push_back((buf, head_len, body));
        self.frames += 1;
        Ok(())
    }

    fn flush(&mut self) {}

    fn room(&mut self) -> usize {
        self.pool.borrow().len() + usize::from(self.cur.is_some())
    }
}

impl Nic for End {
    type Rx = EndRx;
    type Tx = EndTx;

    fn split(&mut self) -> (&mut EndRx, &mut EndTx) {
        (&mut self.rx, &mut self.tx)
    }

    fn mac(&self) -> EthernetAddress {
        self.mac
    }
}

/// A site of in-memory files for tests and benchmarks.
pub struct MemSite {
    files: Vec<(&'static str, Resource<'static>)>,
}

impl MemSite {
    /// A site of `(path, content type, bytes)`; `/` is the first file.
    pub fn new(files: Vec<(&'static str, &'static str, Vec<u8>)>) -> MemSite {
        let files = files
            .into_iter()
            .map(|(path, ct, data)| {
                let data: &'static [u8] = Vec::leak(data);
                let mut sums = vec![0u8; 2 * Body::blocks_for(data.len())];
                block_sums_into(data, &mut sums);
                let identity = Body {
                    data,
                    block_sums: Vec::leak(sums),
                };
                let r = Resource {
                    content_type: ct,
                    etag: "\"m1\"",
                    last_modified: 1_700_000_000,
                    identity,
                    gzip: None,
                    br: None,
                    zstd: None,
                    headers: "",
                };
                (path, r)
            })
            .collect();
        MemSite { files }
    }

    /// The bytes of the file at `path`.
    pub fn bytes(&self, path: &str) -> Option<&'static [u8]> {
        self.files
            .iter()
            .find(|(p, _)| *p == path)
            .map(|(_, r)| r.identity.data)
    }
}

impl Lookup<'static> for MemSite {
    fn lookup(&self, path: &[u8]) -> Found<'static> {
        if path == b"/" {
            return self
                .files
                .first()
                .map_or(Found::NotFound, |(_, r)| Found::Resource(*r));
        }
        match self.files.iter().find(|(p, _)| p.as_bytes() == path) {
            Some((_, r)) => Found::Resource(*r),
            None => Found::NotFound,
        }
    }
}
