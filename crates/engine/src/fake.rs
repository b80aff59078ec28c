//! Test devices (std only): [`FakeNic`], an in-memory queue pair, and [`FaultInjector`],
//! a wrapper around any [`Nic`] that drops, duplicates, reorders and corrupts frames in
//! both directions from a seeded generator, so loss tests are deterministic.
//!
//! Both can play a device with TCP segmentation offload (`FakeNic::tso_max`,
//! [`FaultInjector::with_tso`]): a frame posted with `post_tso` is checked (its partial
//! checksum must be the pseudo-header sum) and cut into MSS-sized segments with complete
//! checksums by [`segment`], as a NIC or the Linux TAP does.
//!
//! These copy frames and allocate; they are test tools, never on a product path.

use std::collections::VecDeque;
use std::vec::Vec;

use crate::nic::{Nic, NicCaps, RxFrame, RxRing, Tso, TxFull, TxRing, TX_HEAD_ROOM};
use crate::wire::{checksum, EthernetAddress, Ipv4Packet, TcpPacket};

/// Cuts a frame posted with segmentation offload into single segments, as a device does:
/// headers copied, IPv4 length, ident and checksum and the TCP sequence number set per
/// segment, FIN and PSH kept for the last one only, every TCP checksum completed.
///
/// # Panics
/// If the frame is not what the engine must post (lengths, or a TCP checksum field that is
/// not the folded pseudo-header sum of the whole segment): that is an engine bug.
pub fn segment(frame: &[u8], tso: Tso) -> Vec<Vec<u8>> {
    if frame.get(12..14) == Some(&[0x86, 0xdd][..]) {
        return segment6(frame, tso);
    }
    let l4 = usize::from(tso.l4_offset);
    let hl = usize::from(tso.header_len);
    let mss = usize::from(tso.mss);
    assert!(
        l4 >= 14 + 20 && hl > l4 && frame.len() > hl && mss > 0,
        "bad TSO frame"
    );
    let ip = Ipv4Packet::new_checked(&frame[14..]).expect("TSO frame: IPv4 header");
    assert_eq!(
        usize::from(ip.total_len()),
        frame.len() - 14,
        "IPv4 total length"
    );
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    let ident = ip.ident();
    let tcp = TcpPacket::new_checked(&frame[l4..]).expect("TSO frame: TCP header");
    assert_eq!(usize::from(tcp.header_len()), hl - l4, "TCP header length");
    let partial = checksum::fold(checksum::pseudo_header_v4(
        src.0,
        dst.0,
        6,
        (frame.len() - l4) as u16,
    ));
    assert_eq!(tcp.checksum(), partial, "TSO frame: partial checksum");
    let (seq, flags) = (tcp.seq_number(), tcp.flags());
    let payload = &frame[hl..];
    let n = payload.len().div_ceil(mss);
    let mut out = Vec::with_capacity(n);
    for (i, chunk) in payload.chunks(mss).enumerate() {
        let mut f = frame[..hl].to_vec();
        f.extend_from_slice(chunk);
        let total = (f.len() - 14) as u16;
        let mut ip = Ipv4Packet::new_unchecked(&mut f[14..]);
        ip.set_total_len(total);
        ip.set_ident(ident.wrapping_add(i as u16));
        ip.fill_checksum();
        let last = i + 1 == n;
        let mut t = TcpPacket::new_unchecked(&mut f[l4..]);
        t.set_seq_number(seq.wrapping_add((i * mss) as u32));
        let mut fl = flags;
        fl.fin &= last;
        fl.psh &= last;
        t.set_flags(fl);
        t.fill_checksum(src, dst);
        out.push(f);
    }
    out
}

/// [`segment`] of an IPv6 frame (a device with `NicCaps::tso6`): the IPv6 payload length
/// checked and set per segment, each segment's checksum made over IPv6's pseudo-header.
fn segment6(frame: &[u8], tso: Tso) -> Vec<Vec<u8>> {
    let l4 = usize::from(tso.l4_offset);
    let hl = usize::from(tso.header_len);
    let mss = usize::from(tso.mss);
    assert!(
        l4 == 14 + 40 && hl > l4 && frame.len() > hl && mss > 0,
        "bad IPv6 TSO frame"
    );
    let plen = usize::from(u16::from_be_bytes([frame[18], frame[19]]));
    assert_eq!(plen, frame.len() - l4, "IPv6 payload length");
    assert_eq!(frame[20], 6, "TCP right after the IPv6 header");
    let mut src = [0u8; 16];
    let mut dst = [0u8; 16];
    src.copy_from_slice(&frame[22..38]);
    dst.copy_from_slice(&frame[38..54]);
    let tcp = TcpPacket::new_checked(&frame[l4..]).expect("TSO frame: TCP header");
    assert_eq!(usize::from(tcp.header_len()), hl - l4, "TCP header length");
    let partial = checksum::fold(checksum::pseudo_header_v6(&src, &dst, 6, plen as u32));
    assert_eq!(tcp.checksum(), partial, "TSO frame: partial checksum");
    let (seq, flags) = (tcp.seq_number(), tcp.flags());
    let payload = &frame[hl..];
    let n = payload.len().div_ceil(mss);
    let mut out = Vec::with_capacity(n);
    for (i, chunk) in payload.chunks(mss).enumerate() {
        let mut f = frame[..hl].to_vec();
        f.extend_from_slice(chunk);
        let len = f.len() - l4;
        f[18..20].copy_from_slice(&(len as u16).to_be_bytes());
        let last = i + 1 == n;
        let mut t = TcpPacket::new_unchecked(&mut f[l4..]);
        t.set_seq_number(seq.wrapping_add((i * mss) as u32));
        let mut fl = flags;
        fl.fin &= last;
        fl.psh &= last;
        t.set_flags(fl);
        f[l4 + 16..l4 + 18].fill(0);
        let acc = checksum::pseudo_header_v6(&src, &dst, 6, len as u32);
        let sum = !checksum::fold(checksum::accumulate(acc, &f[l4..]));
        f[l4 + 16..l4 + 18].copy_from_slice(&sum.to_be_bytes());
        out.push(f);
    }
    out
}

/// Frames waiting to be received, and frames sent.
#[derive(Default)]
pub struct FakeQueues {
    /// Frames the engine will receive, in order.
    pub inbox: VecDeque<Vec<u8>>,
    /// Frames the engine sent (head and body joined).
    pub outbox: Vec<Vec<u8>>,
    loaned: Vec<Option<Vec<u8>>>,
    slot: Vec<u8>,
    /// Frames posted with segmentation offload (each is in `outbox` as its segments).
    pub tso_frames: u64,
    /// As a transmit ring: frames it takes before it is full (`None`: no limit). Each
    /// post uses one; a test frees them by raising it (the device sent them).
    pub room: Option<usize>,
}

impl RxRing for FakeQueues {
    fn burst(&mut self, out: &mut [RxFrame]) -> usize {
        let mut n = 0;
        while n < out.len() {
            let Some(f) = self.inbox.pop_front() else {
                break;
            };
            let len = f.len() as u32;
            let id = match self.loaned.iter().position(Option::is_none) {
                Some(i) => {
                    self.loaned[i] = Some(f);
                    i
                }
                None => {
                    self.loaned.push(Some(f));
                    self.loaned.len() - 1
                }
            };
            out[n] = RxFrame {
                buf: id as u32,
                len,
            };
            n += 1;
        }
        n
    }

    fn bytes(&self, f: &RxFrame) -> &[u8] {
        match self.loaned.get(f.buf as usize) {
            Some(Some(b)) => &b[..(f.len as usize).min(b.len())],
            _ => &[],
        }
    }

    fn recycle(&mut self, f: RxFrame) {
        if let Some(slot) = self.loaned.get_mut(f.buf as usize) {
            *slot = None;
        }
    }
}

impl TxRing for FakeQueues {
    fn slot(&mut self) -> Option<&mut [u8]> {
        if self.room == Some(0) {
            return None;
        }
        self.slot.resize(TX_HEAD_ROOM, 0);
        Some(&mut self.slot[..])
    }

    fn post(&mut self, head_len: usize, body: &'static [u8]) -> Result<(), TxFull> {
        if self.room == Some(0) {
            return Err(TxFull);
        }
        self.room = self.room.map(|r| r - 1);
        let mut f = self.slot[..head_len.min(TX_HEAD_ROOM)].to_vec();
        f.extend_from_slice(body);
        self.outbox.push(f);
        Ok(())
    }

    fn post_tso(&mut self, head_len: usize, body: &'static [u8], tso: Tso) -> Result<(), TxFull> {
        self.post_tso_copied(head_len, body, tso)
    }

    /// Frames are copied at post (into the outbox), as the host's TAP writes them.
    fn tso_copies(&self) -> bool {
        true
    }

    fn post_tso_copied(&mut self, head_len: usize, body: &[u8], tso: Tso) -> Result<(), TxFull> {
        if self.room == Some(0) {
            return Err(TxFull);
        }
        self.room = self.room.map(|r| r - 1);
        let mut f = self.slot[..head_len.min(TX_HEAD_ROOM)].to_vec();
        f.extend_from_slice(body);
        self.tso_frames += 1;
        self.outbox.extend(segment(&f, tso));
        Ok(())
    }

    fn flush(&mut self) {}

    fn room(&mut self) -> usize {
        self.room.unwrap_or(usize::MAX)
    }
}

/// An in-memory queue pair.
pub struct FakeNic {
    /// Receive queues.
    pub rx: FakeQueues,
    /// Transmit queues.
    pub tx: FakeQueues,
    /// Station address.
    pub mac: EthernetAddress,
    /// Segmentation offload offered to the engine (0: none).
    pub tso_max: usize,
    /// The offload also over IPv6.
    pub tso6: bool,
}

impl FakeNic {
    /// A fake NIC with the given MAC.
    pub fn new(mac: EthernetAddress) -> FakeNic {
        FakeNic {
            rx: FakeQueues::default(),
            tx: FakeQueues::default(),
            mac,
            tso_max: 0,
            tso6: false,
        }
    }
}

impl crate::cores::CoreQueue for FakeNic {}

impl Nic for FakeNic {
    type Rx = FakeQueues;
    type Tx = FakeQueues;

    fn split(&mut self) -> (&mut FakeQueues, &mut FakeQueues) {
        (&mut self.rx, &mut self.tx)
    }

    fn mac(&self) -> EthernetAddress {
        self.mac
    }

    fn caps(&self) -> NicCaps {
        let caps = NicCaps::default().with_tso(self.tso_max);
        if self.tso6 {
            caps.with_tso6()
        } else {
            caps
        }
    }
}

/// Fault probabilities in percent, per direction, and the seed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Faults {
    /// Frames dropped.
    pub drop_pct: u8,
    /// Frames delivered twice.
    pub dup_pct: u8,
    /// Frames held back behind the next one.
    pub reorder_pct: u8,
    /// Frames with one byte flipped (checksums must catch it).
    pub corrupt_pct: u8,
    /// Seed of the generator (xorshift64*); the same seed gives the same faults.
    pub seed: u64,
}

struct Rng(u64);

impl Rng {
    fn pct(&mut self, p: u8) -> bool {
        self.next() % 100 < u64::from(p)
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// One direction of the injector: copies frames and applies faults.
struct Lane {
    rng: Rng,
    faults: Faults,
    /// A frame held back to be delivered after later ones; it waits at most one round
    /// (one `burst` or one `flush`), so reordering never becomes an unbounded delay.
    held: Option<Vec<u8>>,
    held_rounds: u8,
}

impl Lane {
    fn new(faults: Faults, salt: u64) -> Lane {
        Lane {
            rng: Rng(faults.seed.wrapping_mul(2).wrapping_add(salt) | 1),
            faults,
            held: None,
            held_rounds: 0,
        }
    }

    /// Applies faults to `frame`, pushing what is to be delivered into `out`.
    fn apply(&mut self, mut frame: Vec<u8>, out: &mut VecDeque<Vec<u8>>) {
        let f = self.faults;
        if self.rng.pct(f.drop_pct) {
            return;
        }
        if !frame.is_empty() && self.rng.pct(f.corrupt_pct) {
            let i = (self.rng.next() as usize) % frame.len();
            frame[i] ^= 1 << (self.rng.next() % 8);
        }
        let dup = self.rng.pct(f.dup_pct);
        if self.held.is_none() && self.rng.pct(f.reorder_pct) {
            self.held = Some(frame);
            self.held_rounds = 0;
            return;
        }
        if dup {
            out.push_back(frame.clone());
        }
        out.push_back(frame);
        if let Some(h) = self.held.take() {
            out.push_back(h);
        }
    }
}

impl Lane {
    /// Ends a round: a frame held for a whole round is delivered now.
    fn end_round(&mut self, out: &mut VecDeque<Vec<u8>>) {
        if self.held.is_some() {
            if self.held_rounds >= 1 {
                out.extend(self.held.take());
            } else {
                self.held_rounds += 1;
            }
        }
    }
}

/// Receive side of a [`FaultInjector`].
pub struct FaultRx<R> {
    inner: R,
    lane: Lane,
    ready: VecDeque<Vec<u8>>,
    loaned: FakeQueues,
}

/// Transmit side of a [`FaultInjector`].
pub struct FaultTx<T> {
    inner: T,
    lane: Lane,
    slot: Vec<u8>,
    ready: VecDeque<Vec<u8>>,
}

/// Wraps the two rings of a queue pair and injects faults in both directions.
pub struct FaultInjector<R, T> {
    mac: EthernetAddress,
    tso_max: usize,
    rx: FaultRx<R>,
    tx: FaultTx<T>,
}

impl<R: RxRing, T: TxRing> FaultInjector<R, T> {
    /// Wraps the rings `rx` and `tx` of a device whose station address is `mac`.
    pub fn new(mac: EthernetAddress, rx: R, tx: T, rx_faults: Faults, tx_faults: Faults) -> Self {
        FaultInjector {
            mac,
            tso_max: 0,
            rx: FaultRx {
                inner: rx,
                lane: Lane::new(rx_faults, 1),
                ready: VecDeque::new(),
                loaned: FakeQueues::default(),
            },
            tx: FaultTx {
                inner: tx,
                lane: Lane::new(tx_faults, 2),
                slot: vec![0; TX_HEAD_ROOM],
                ready: VecDeque::new(),
            },
        }
    }

    /// Offers segmentation offload of up to `max` payload bytes: frames posted with it are
    /// cut into segments (see [`segment`]) before the faults apply to each segment.
    pub fn with_tso(mut self, max: usize) -> Self {
        self.tso_max = max;
        self
    }

    /// The wrapped receive ring (to feed frames in tests).
    pub fn inner_rx(&mut self) -> &mut R {
        &mut self.rx.inner
    }

    /// The wrapped transmit ring (to read what went out in tests).
    pub fn inner_tx(&mut self) -> &mut T {
        &mut self.tx.inner
    }
}

impl<R: RxRing> RxRing for FaultRx<R> {
    fn burst(&mut self, out: &mut [RxFrame]) -> usize {
        let mut tmp = [RxFrame { buf: 0, len: 0 }; 32];
        let n = self.inner.burst(&mut tmp);
        for f in &tmp[..n] {
            let bytes = self.inner.bytes(f).to_vec();
            self.inner.recycle(*f);
            self.lane.apply(bytes, &mut self.ready);
        }
        self.lane.end_round(&mut self.ready);
        while let Some(f) = self.ready.pop_front() {
            self.loaned.inbox.push_back(f);
        }
        self.loaned.burst(out)
    }

    fn bytes(&self, f: &RxFrame) -> &[u8] {
        self.loaned.bytes(f)
    }

    fn recycle(&mut self, f: RxFrame) {
        self.loaned.recycle(f)
    }
}

impl<T: TxRing> FaultTx<T> {
    fn forward(&mut self) -> Result<(), TxFull> {
        while let Some(f) = self.ready.pop_front() {
            let Some(slot) = self.inner.slot() else {
                return Err(TxFull);
            };
            let n = f.len().min(slot.len());
            slot[..n].copy_from_slice(&f[..n]);
            self.inner.post(n, &[])?;
        }
        Ok(())
    }
}

impl<T: TxRing> TxRing for FaultTx<T> {
    fn slot(&mut self) -> Option<&mut [u8]> {
        Some(&mut self.slot[..])
    }

    fn post(&mut self, head_len: usize, body: &'static [u8]) -> Result<(), TxFull> {
        let mut f = self.slot[..head_len.min(TX_HEAD_ROOM)].to_vec();
        f.extend_from_slice(body);
        self.lane.apply(f, &mut self.ready);
        self.forward()
    }

    fn post_tso(&mut self, head_len: usize, body: &'static [u8], tso: Tso) -> Result<(), TxFull> {
        let mut f = self.slot[..head_len.min(TX_HEAD_ROOM)].to_vec();
        f.extend_from_slice(body);
        for seg in segment(&f, tso) {
            self.lane.apply(seg, &mut self.ready);
        }
        self.forward()
    }

    fn flush(&mut self) {
        self.lane.end_round(&mut self.ready);
        let _ = self.forward();
        self.inner.flush()
    }
}

impl<R: RxRing, T: TxRing> crate::cores::CoreQueue for FaultInjector<R, T> {}

impl<R: RxRing, T: TxRing> Nic for FaultInjector<R, T> {
    type Rx = FaultRx<R>;
    type Tx = FaultTx<T>;

    fn split(&mut self) -> (&mut Self::Rx, &mut Self::Tx) {
        (&mut self.rx, &mut self.tx)
    }

    fn mac(&self) -> EthernetAddress {
        self.mac
    }

    fn caps(&self) -> NicCaps {
        NicCaps::default().with_tso(self.tso_max)
    }
}
