//! An in-memory wire between two engines in one thread (std only): [`Wire`] holds two
//! [`End`]s, each a [`Nic`]; a frame posted on one end is received on the other after
//! [`Wire::carry`]. No system call: the engine microbenchmark (`benches/engine.rs`) and the
//! client's tests run the server and the client against each other over it.
//!
//! Each end has the rings of a NIC, allocated at start: a transmit ring of head slots
//! (the engine writes a frame's headers there and posts its body beside them by
//! reference) and a receive ring of frame buffers, each a fixed array with a stack of free
//! indexes, as a driver's descriptor rings are (`RxFrame::buf` is the buffer's index). The
//! engine's ring calls (`slot`, `post`, `burst`, `bytes`, `recycle`) are a few index
//! operations, no allocation and no shared borrow. [`Wire::carry`] is the device and the
//! cable: it copies each posted frame, head and body, into a free receive buffer of the
//! other end (as the two NICs' DMA would: the sender's gathers head and body, the
//! receiver's writes the frame to memory), and leaves a frame queued while the other end
//! has no free buffer (a lossless link: the sender's slot stays taken, so its
//! `TxRing::room` shrinks). A DMA device costs the engines no CPU for those copies, so
//! neither does this one: the microbenchmark times the server's `poll` calls, and the
//! copies are in `carry`, outside them.
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

use std::collections::VecDeque;
use std::vec;
use std::vec::Vec;

use crate::nic::{Nic, NicCaps, RxFrame, RxRing, Tso, TxFull, TxRing, TX_HEAD_ROOM};
use crate::resource::{block_sums_into, Body, Found, Lookup, Resource};
use crate::wire::EthernetAddress;

/// Bytes of one frame without offload (a 1514-byte frame fits), and of a head slot.
const BUF: usize = TX_HEAD_ROOM;

/// A receive buffer's state: lent to the engine by `burst`, not yet recycled.
const LOANED: u8 = 1;
/// A receive buffer's state: its frame came with TSO, its checksum trusted.
const TRUSTED: u8 = 2;

/// One end of the wire: a receive and a transmit ring.
pub struct End {
    mac: EthernetAddress,
    /// TCP segmentation offload: the most payload bytes of a `post_tso` frame (0: none).
    tso_max: usize,
    /// The receive ring.
    pub rx: EndRx,
    /// The transmit ring.
    pub tx: EndTx,
}

/// An end's receive ring: `n` buffers of `size` bytes in one allocation.
pub struct EndRx {
    size: usize,
    bufs: Box<[u8]>,
    /// Each buffer's state (`LOANED`, `TRUSTED`).
    state: Box<[u8]>,
    /// Indexes of the free buffers.
    free: Vec<u32>,
    /// Received frames (buffer, length), waiting for `burst`.
    inbox: VecDeque<(u32, u32)>,
}

/// An end's transmit ring: `n` head slots of `BUF` bytes in one allocation.
pub struct EndTx {
    bufs: Box<[u8]>,
    /// Indexes of the free slots.
    free: Vec<u32>,
    /// The slot being written (from `slot`, until `post`).
    cur: Option<u32>,
    /// TCP segmentation offload: the most payload bytes of a `post_tso` frame (0: none).
    tso_max: usize,
    /// Posted frames, waiting for [`Wire::carry`].
    sent: VecDeque<Posted>,
    /// Frames posted.
    pub frames: u64,
    /// Frames refused: no slot was free, or the frame was larger than a buffer.
    pub refused: u64,
}

/// A posted frame: its head slot and length, its body, whether posted with TSO.
struct Posted {
    slot: u32,
    head_len: u32,
    body: &'static [u8],
    tso: bool,
}

/// Two ends and the frames between them.
pub struct Wire {
    /// The first end (the server's, by convention).
    pub a: End,
    /// The second end (the client's).
    pub b: End,
}

impl Wire {
    /// A wire between `mac_a` and `mac_b` whose ends have `frames` transmit slots and
    /// `frames` receive buffers each.
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
        // Popped from the end: the lowest indexes first.
        let stack = || (0..frames as u32).rev().collect::<Vec<u32>>();
        let end = |mac| End {
            mac,
            tso_max,
            rx: EndRx {
                size,
                bufs: vec![0u8; frames * size].into_boxed_slice(),
                state: vec![0u8; frames].into_boxed_slice(),
                free: stack(),
                inbox: VecDeque::with_capacity(frames),
            },
            tx: EndTx {
                bufs: vec![0u8; frames * BUF].into_boxed_slice(),
                free: stack(),
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

    /// Moves every posted frame the other end has a free buffer for into its receive
    /// ring, head and body copied (as the devices' DMA does); returns how many moved.
    pub fn carry(&mut self) -> usize {
        carry(&mut self.a.tx, &mut self.b.rx) + carry(&mut self.b.tx, &mut self.a.rx)
    }

    /// Drops every frame on its way (a cut cable, for tests), freeing their buffers.
    pub fn cut(&mut self) {
        for end in [&mut self.a, &mut self.b] {
            let tx = &mut end.tx;
            tx.free.extend(tx.sent.drain(..).map(|p| p.slot));
            end.rx.clear();
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

/// Moves `tx`'s posted frames into `rx`'s free buffers, each head and body copied (`post`
/// checked that the frame fits a buffer); a TSO frame arrives whole, its checksum trusted.
fn carry(tx: &mut EndTx, rx: &mut EndRx) -> usize {
    let mut n = 0;
    while let Some(p) = tx.sent.front() {
        let Some(b) = rx.free.pop() else {
            break; // the receiver has no free buffer: the frame waits
        };
        let (head_len, len) = (p.head_len as usize, p.head_len as usize + p.body.len());
        let at = b as usize * rx.size;
        let s = p.slot as usize * BUF;
        let dst = &mut rx.bufs[at..at + len];
        dst[..head_len].copy_from_slice(&tx.bufs[s..s + head_len]);
        dst[head_len..].copy_from_slice(p.body);
        rx.state[b as usize] = if p.tso { TRUSTED } else { 0 };
        rx.inbox.push_back((b, len as u32));
        tx.free.push(p.slot);
        tx.sent.pop_front();
        n += 1;
    }
    n
}

impl EndRx {
    /// Frames waiting to be received.
    pub fn pending(&self) -> usize {
        self.inbox.len()
    }

    /// Drops every frame waiting to be received (an engine that is gone).
    pub fn clear(&mut self) {
        self.free.extend(self.inbox.drain(..).map(|(b, _)| b));
    }
}

impl RxRing for EndRx {
    fn burst(&mut self, out: &mut [RxFrame]) -> usize {
        let mut n = 0;
        for o in out.iter_mut() {
            let Some((buf, len)) = self.inbox.pop_front() else {
                break;
            };
            self.state[buf as usize] |= LOANED;
            *o = RxFrame { buf, len };
            n += 1;
        }
        n
    }

    fn bytes(&self, f: &RxFrame) -> &[u8] {
        match self.state.get(f.buf as usize) {
            Some(s) if s & LOANED != 0 => {
                let at = f.buf as usize * self.size;
                &self.bufs[at..at + (f.len as usize).min(self.size)]
            }
            _ => &[],
        }
    }

    fn recycle(&mut self, f: RxFrame) {
        if let Some(s) = self.state.get_mut(f.buf as usize) {
            if *s & LOANED != 0 {
                *s = 0;
                self.free.push(f.buf);
            }
        }
    }

    fn csum_trusted(&self, f: &RxFrame) -> bool {
        self.state.get(f.buf as usize) == Some(&(LOANED | TRUSTED))
    }
}

impl EndTx {
    /// A copy of the `i`-th frame waiting for [`Wire::carry`] (tests: a frame to quote).
    pub fn waiting(&self, i: usize) -> Option<Vec<u8>> {
        let p = self.sent.get(i)?;
        let s = p.slot as usize * BUF;
        let mut f = self.bufs[s..s + p.head_len as usize].to_vec();
        f.extend_from_slice(p.body);
        Some(f)
    }

    /// Queues the frame in the current slot for [`Wire::carry`] (`tso`: posted with
    /// segmentation offload, so its checksum is partial and the receiver trusts it).
    fn queue(&mut self, head_len: usize, body: &'static [u8], tso: bool) -> Result<(), TxFull> {
        let len = head_len + body.len();
        let Some(slot) = self.cur.take() else {
            self.refused += 1;
            return Err(TxFull);
        };
        if len > BUF + self.tso_max || (!tso && len > BUF) || head_len > BUF {
            self.free.push(slot);
            self.refused += 1;
            return Err(TxFull);
        }
        self.sent.push_back(Posted {
            slot,
            head_len: head_len as u32,
            body,
            tso,
        });
        self.frames += 1;
        Ok(())
    }
}

impl TxRing for EndTx {
    fn slot(&mut self) -> Option<&mut [u8]> {
        if self.cur.is_none() {
            self.cur = self.free.pop();
        }
        let at = self.cur? as usize * BUF;
        Some(&mut self.bufs[at..at + BUF])
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
        self.free.len() + usize::from(self.cur.is_some())
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
    fn a_frame_waits_for_a_free_receive_buffer() {
        let mut w = Wire::new(A, B, 2);
        for k in 0..2u8 {
            w.a.tx.slot().unwrap()[..60].fill(k);
            w.a.tx.post(60, &[]).unwrap();
        }
        assert_eq!(w.a.tx.room(), 0);
        assert_eq!(w.carry(), 2);
        assert_eq!(w.a.tx.room(), 2);
        // B's two buffers are full: a third frame stays on A's ring until one is free.
        w.a.tx.slot().unwrap()[..60].fill(9);
        w.a.tx.post(60, &[]).unwrap();
        assert_eq!(w.carry(), 0);
        assert_eq!(w.a.tx.room(), 1);
        let mut out = [RxFrame { buf: 0, len: 0 }; 1];
        assert_eq!(w.b.rx.burst(&mut out), 1);
        assert_eq!(w.b.rx.bytes(&out[0]), &[0u8; 60][..]);
        w.b.rx.recycle(out[0]);
        w.b.rx.recycle(out[0]); // twice: the buffer is freed once
        assert_eq!(
            w.b.rx.bytes(&out[0]),
            &[] as &[u8],
            "a recycled buffer is not lent"
        );
        assert_eq!(w.carry(), 1);
        let got = receive(&mut w.b);
        assert_eq!(got, vec![(vec![1u8; 60], false), (vec![9u8; 60], false)]);
        assert!(w.idle());
        assert_eq!((w.a.tx.room(), w.b.rx.free.len()), (2, 2));
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
