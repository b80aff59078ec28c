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
//! [`Wire::with_tso`] gives both ends TCP segmentation offload, as the TAP, virtio-net and
//! e1000 give the server: a frame posted with [`TxRing::post_tso`] (up to `tso_max`
//! payload bytes, its TCP checksum left partial, the pseudo-header sum only) reaches the
//! other end whole and marked [`RxRing::csum_trusted`], as the kernel hands a TSO frame to
//! a TAP reader that takes offloads (`virtio_net_hdr` NEEDS_CSUM; the bare client's
//! `--tap`, docs/load.md): one frame, no checksum over the body on either side.
//!
//! Also [`MemSite`], a site of in-memory files (leaked, so bodies are `'static` as a
//! loaded image's are) for the same uses.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::vec;
use std::vec::Vec;

use crate::nic::{Nic, NicCaps, RxFrame, RxRing, Tso, TxFull, TxRing, TX_HEAD_ROOM};
use crate::resource::{block_sums_into, Body, Found, Lookup, Resource};
use crate::wire::EthernetAddress;

/// Bytes of one frame buffer without offload: a 1514-byte frame, or a head slot.
const BUF: usize = TX_HEAD_ROOM;
/// Frames one end may have received and not yet recycled.
const LOANED: usize = 256;

type Buf = Box<[u8]>;
type Pool = Rc<RefCell<Vec<Buf>>>;

/// One end of the wire: a receive and a transmit ring sharing the wire's buffer pool.
pub struct End {
    mac: EthernetAddress,
    /// TCP segmentation offload: the most payload bytes of a `post_tso` frame (0: none).
    tso_max: usize,
    /// The receive ring.
    pub rx: EndRx,
    /// The transmit ring.
    pub tx: EndTx,
}

/// An end's receive ring.
pub struct EndRx {
    pool: Pool,
    /// Received frames (buffer, length, checksum trusted), waiting for `burst`.
    inbox: Inbox,
    loaned: Vec<Option<(Buf, bool)>>,
}

/// An end's transmit ring.
pub struct EndTx {
    pool: Pool,
    /// The slot being written (from `slot`, until `post`).
    cur: Option<Buf>,
    /// TCP segmentation offload: the most payload bytes of a `post_tso` frame (0: none).
    tso_max: usize,
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
        Wire::with_tso(mac_a, mac_b, frames, 0)
    }

    /// [`Wire::new`] whose ends offload TCP segmentation of up to `tso_max` payload bytes
    /// a frame (module docs); 0 is none.
    pub fn with_tso(
        mac_a: EthernetAddress,
        mac_b: EthernetAddress,
        frames: usize,
        tso_max: usize,
    ) -> Wire {
        let size = BUF + tso_max;
        let pool: Pool = Rc::new(RefCell::new(
            (0..frames)
                .map(|_| vec![0u8; size].into_boxed_slice())
                .collect(),
        ));
        let end = |mac| End {
            mac,
            tso_max,
            rx: EndRx {
                pool: pool.clone(),
                inbox: VecDeque::with_capacity(frames),
                loaned: (0..LOANED).map(|_| None).collect(),
            },
            tx: EndTx {
                pool: pool.clone(),
                cur: None,
                tso_max,
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
            pool.extend(end.tx.sent.drain(..).map(|(b, _, _, _)| b));
            pool.extend(end.rx.inbox.drain(..).map(|(b, _, _)| b));
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

/// Posted frames: buffer, head length, body, whether posted with TSO.
type Posted = VecDeque<(Buf, usize, &'static [u8], bool)>;
/// Received frames: buffer, length, whether its checksum is trusted.
type Inbox = VecDeque<(Buf, usize, bool)>;

/// Moves the frames of `sent` to `inbox`, each body copied behind its head (`post` checked
/// that the frame fits a buffer); a TSO frame arrives whole, its checksum trusted.
fn gather(sent: &mut Posted, inbox: &mut Inbox) {
    for (mut buf, head_len, body, tso) in sent.drain(..) {
        let len = head_len + body.len();
        buf[head_len..len].copy_from_slice(body);
        inbox.push_back((buf, len, tso));
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
        pool.extend(self.inbox.drain(..).map(|(b, _, _)| b));
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
            let (true, Some((buf, len, trusted))) = (i < LOANED, self.inbox.pop_front()) else {
                break;
            };
            self.loaned[i] = Some((buf, trusted));
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
            Some(Some((b, _))) => &b[..(f.len as usize).min(b.len())],
            _ => &[],
        }
    }

    fn recycle(&mut self, f: RxFrame) {
        if let Some((b, _)) = self.loaned.get_mut(f.buf as usize).and_then(Option::take) {
            self.pool.borrow_mut().push(b);
        }
    }

    fn csum_trusted(&self, f: &RxFrame) -> bool {
        matches!(self.loaned.get(f.buf as usize), Some(Some((_, true))))
    }
}

impl EndTx {
    /// Queues the frame in the current slot for [`Wire::carry`] (`tso`: posted with
    /// segmentation offload, so its checksum is partial and the receiver trusts it).
    fn queue(&mut self, head_len: usize, body: &'static [u8], tso: bool) -> Result<(), TxFull> {
        let len = head_len + body.len();
        let Some(buf) = self.cur.take() else {
            self.refused += 1;
            return Err(TxFull);
        };
        if len > buf.len() || (!tso && len > BUF) || head_len > TX_HEAD_ROOM {
            self.pool.borrow_mut().push(buf);
            self.refused += 1;
            return Err(TxFull);
        }
        self.sent.push_back((buf, head_len, body, tso));
        self.frames += 1;
        Ok(())
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
        self.queue(head_len, body, false)
    }

    fn post_tso(&mut self, head_len: usize, body: &'static [u8], tso: Tso) -> Result<(), TxFull> {
        if self.tso_max == 0 || body.len() > self.tso_max || tso.mss == 0 {
            // A device without the offload refuses (the slot stays for the next frame).
            self.refused += 1;
            return Err(TxFull);
        }
        self.queue(head_len, body, true)
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

    fn caps(&self) -> NicCaps {
        NicCaps::default().with_tso(self.tso_max)
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

#[cfg(test)]
mod tests {
    use super::*;

    const A: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 1]);
    const B: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 2]);
    const TSO: Tso = Tso {
        mss: 1448,
        l4_offset: 34,
        header_len: 66,
    };

    fn receive(end: &mut End) -> Vec<(Vec<u8>, bool)> {
        let mut out = [RxFrame { buf: 0, len: 0 }; 8];
        let n = end.rx.burst(&mut out);
        let got = out[..n]
            .iter()
            .map(|f| (end.rx.bytes(f).to_vec(), end.rx.csum_trusted(f)))
            .collect();
        for f in &out[..n] {
            end.rx.recycle(*f);
        }
        got
    }

    #[test]
    fn a_tso_frame_arrives_whole_and_trusted() {
        let mut w = Wire::with_tso(A, B, 4, 20_000);
        assert_eq!(w.a.caps().tso_max, 20_000);
        let body: &'static [u8] = Vec::leak(vec![7u8; 10_000]);
        w.a.tx.slot().unwrap()[..66].fill(1);
        w.a.tx.post_tso(66, body, TSO).unwrap();
        w.a.tx.slot().unwrap()[..60].fill(2);
        w.a.tx.post(60, &body[..100]).unwrap();
        assert_eq!(w.carry(), 2);
        let got = receive(&mut w.b);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].0.len(), 10_066);
        assert!(got[0].0[..66].iter().all(|&x| x == 1) && got[0].0[66..].iter().all(|&x| x == 7));
        assert!(got[0].1, "posted with TSO: checksum trusted");
        assert_eq!(got[1].0.len(), 160);
        assert!(!got[1].1, "a plain frame is verified");
        // Past tso_max, and a plain frame past one buffer: refused, nothing leaks.
        let big: &'static [u8] = Vec::leak(vec![0u8; 20_001]);
        w.a.tx.slot().unwrap();
        assert!(w.a.tx.post_tso(66, big, TSO).is_err());
        assert!(w.a.tx.post(60, &big[..BUF]).is_err());
        assert_eq!(w.a.tx.refused, 2);
        assert_eq!(w.a.tx.room(), 4);
    }

    #[test]
    fn without_tso_post_tso_is_refused() {
        let mut w = Wire::new(A, B, 2);
        assert_eq!(w.a.caps().tso_max, 0);
        w.a.tx.slot().unwrap();
        assert!(w.a.tx.post_tso(66, &[1, 2, 3], TSO).is_err());
        assert!(w.idle());
        assert_eq!(w.a.tx.room(), 2);
    }
}
