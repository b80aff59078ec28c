//! virtio-net over PCI, virtio 1.x ("modern") transport only, polled.
//!
//! Heads up! read virtio 1.2 §4.1 (PCI transport), §2.7 (split virtqueues) and §5.1
//! (network device).
//!
//! - Features: VERSION_1 (required), MAC, RING_EVENT_IDX, STATUS (the link state, for the
//!   bonding link monitor); CTRL_VQ and MQ only when more than one queue pair is asked
//!   for. No offloads: the engine computes every checksum (the
//!   body part from the site image's stored block sums).
//! - Multiqueue (§5.1.6.5.5): with N pairs, receiveq k = 2k, transmitq k = 2k+1, the
//!   control queue 2·max_virtqueue_pairs; after DRIVER_OK the driver sends
//!   VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET(N) and waits for its ack. Each pair is returned as its
//!   own [`VirtioNet`] value, moved to the core that owns it; the device (with QEMU, the
//!   host's multi-queue TAP) decides which pair a flow arrives on, and a flow's replies
//!   leave on the same pair.
//! - Receive: queue 0, one device-writable 2 KiB buffer per descriptor, posted once at
//!   start; frames are loaned to the engine and re-posted in a batch at the next burst.
//! - Transmit: queue 1, descriptor pairs: `2s` = 12-byte virtio-net header + the head
//!   slot `s` (one buffer), `2s+1` = the body, pointing straight into the site image.
//!   No body byte is copied. One `publish` per `flush`, which notifies only when the
//!   device's `avail_event` asks (so a device already working costs no exit).
//! - Device memory is untrusted: used-ring ids are checked against the driver's own
//!   record of what is in flight, lengths against the buffer size; anything else is
//!   counted and dropped, never followed.

use alloc::vec;
use alloc::vec::Vec;
use core::ptr::{read_volatile, write_volatile};

use alloc::boxed::Box;
use bareweb_engine::nic::{
    LinkSense, Nic, NicCounters, RxFrame, RxRing, TxFull, TxRing, TX_HEAD_ROOM,
};
use bareweb_engine::wire::EthernetAddress;

use super::virtqueue::{QueueError, VirtQueue, F_NEXT, F_WRITE};
use super::Driver;
use crate::pci::{Bar, Device};

/// PCI vendor of virtio devices.
pub const VENDOR: u16 = 0x1AF4;
/// Transitional and modern virtio-net device ids.
pub const DEVICES: [u16; 2] = [0x1000, 0x1041];

const F_MAC: u64 = 1 << 5;
const F_STATUS: u64 = 1 << 16;
const F_CTRL_VQ: u64 = 1 << 17;
const F_MQ: u64 = 1 << 22;
const F_EVENT_IDX: u64 = 1 << 29;

/// Device configuration: `status` (u16) and `max_virtqueue_pairs` (u16) offsets.
const CFG_STATUS: usize = 6;
const CFG_MAX_PAIRS: usize = 8;
/// `status`: VIRTIO_NET_S_LINK_UP.
const S_LINK_UP: u16 = 1;
/// Control command: class VIRTIO_NET_CTRL_MQ, command VQ_PAIRS_SET, and the ack.
const CTRL_MQ: u8 = 4;
const CTRL_MQ_VQ_PAIRS_SET: u8 = 0;
const CTRL_OK: u8 = 0;
/// Most queue pairs a device may announce (virtio: 0x8000).
const MAX_PAIRS: u16 = 0x8000;
const F_VERSION_1: u64 = 1 << 32;

const S_ACKNOWLEDGE: u8 = 1;
const S_DRIVER: u8 = 2;
const S_DRIVER_OK: u8 = 4;
const S_FEATURES_OK: u8 = 8;
const S_FAILED: u8 = 128;

/// virtio_net_hdr with num_buffers: 12 bytes under VERSION_1.
const NET_HDR: usize = 12;
/// Receive buffer: header + a 1514-byte frame fits.
const RX_BUF: usize = 2048;
/// Transmit slot stride: header + head room, cache-line rounded.
const TX_SLOT: usize = (NET_HDR + TX_HEAD_ROOM + 63) & !63;
/// Most entries per queue we use.
const MAX_QUEUE: u16 = 1024;

/// Why the device could not be brought up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// A virtio PCI capability is missing or points outside its BAR.
    MissingCapability(&'static str),
    /// The device lacks VIRTIO_F_VERSION_1 (legacy-only devices are not supported).
    NotModern,
    /// The device refused FEATURES_OK.
    FeaturesRejected,
    /// The device did not reset.
    NoReset,
    /// A queue has size 0 or could not be allocated.
    Queue(u16, QueueError),
    /// The heap is exhausted.
    NoMemory,
    /// A queue's notification register lies outside the notification capability.
    BadNotifyOffset(u16),
    /// The device did not acknowledge VQ_PAIRS_SET (the ack byte, or none in time).
    MqRefused(u8),
}

struct Regs {
    common: *mut u8,
    device: *mut u8,
    notify: *mut u8,
    notify_len: u32,
    notify_mult: u32,
}

impl Regs {
    fn r8(&self, off: usize) -> u8 {
        // SAFETY: off is a field of the common configuration structure, inside its BAR.
        unsafe { read_volatile(self.common.add(off)) }
    }
    fn w8(&self, off: usize, v: u8) {
        // SAFETY: as r8.
        unsafe { write_volatile(self.common.add(off), v) }
    }
    fn r16(&self, off: usize) -> u16 {
        // SAFETY: as r8; fields are naturally aligned.
        unsafe { read_volatile(self.common.add(off).cast()) }
    }
    fn w16(&self, off: usize, v: u16) {
        // SAFETY: as r16.
        unsafe { write_volatile(self.common.add(off).cast(), v) }
    }
    fn r32(&self, off: usize) -> u32 {
        // SAFETY: as r16.
        unsafe { read_volatile(self.common.add(off).cast()) }
    }
    fn w32(&self, off: usize, v: u32) {
        // SAFETY: as r16.
        unsafe { write_volatile(self.common.add(off).cast(), v) }
    }
    fn w64(&self, off: usize, v: u64) {
        self.w32(off, v as u32);
        self.w32(off + 4, (v >> 32) as u32);
    }
}

// Common configuration offsets (virtio 1.2 §4.1.4.3).
const DEVICE_FEATURE_SELECT: usize = 0;
const DEVICE_FEATURE: usize = 4;
const DRIVER_FEATURE_SELECT: usize = 8;
const DRIVER_FEATURE: usize = 12;
const MSIX_CONFIG: usize = 16;
const DEVICE_STATUS: usize = 20;
const QUEUE_SELECT: usize = 22;
const QUEUE_SIZE: usize = 24;
const QUEUE_MSIX_VECTOR: usize = 26;
const QUEUE_ENABLE: usize = 28;
const QUEUE_NOTIFY_OFF: usize = 30;
const QUEUE_DESC: usize = 32;
const QUEUE_DRIVER: usize = 40;
const QUEUE_DEVICE: usize = 48;
const NO_VECTOR: u16 = 0xFFFF;

/// Receive side.
pub struct VirtioRx {
    q: VirtQueue,
    bufs: *mut u8,
    /// Per buffer: 0 = with the device, 1 = loaned to the engine, 2 = waiting to be posted.
    state: Vec<u8>,
    to_post: Vec<u16>,
    frames: u64,
    bad: u64,
}

/// Transmit side.
pub struct VirtioTx {
    q: VirtQueue,
    slots: *mut u8,
    in_flight: Vec<bool>,
    free: Vec<u16>,
    current: Option<u16>,
    frames: u64,
    bad: u64,
    full: u64,
}

// SAFETY: a VirtioRx owns its receive buffers and its queue (see VirtQueue's Send) alone;
// moving it to another core moves that ownership, nothing else points at them.
unsafe impl Send for VirtioRx {}
// SAFETY: as VirtioRx: the transmit slots and the queue belong to this value alone.
unsafe impl Send for VirtioTx {}

/// A virtio-net device as one engine queue pair.
pub struct VirtioNet {
    rx: VirtioRx,
    tx: VirtioTx,
    mac: EthernetAddress,
    /// The device configuration's `status` field, when VIRTIO_NET_F_STATUS was negotiated.
    status: Option<*const u16>,
}

// SAFETY: its queues are Send (above); `status` points at read-only device configuration
// that stays mapped and that no queue pair owns.
unsafe impl Send for VirtioNet {}

/// The link of a virtio-net device: the configuration's `status` field (virtio 1.2
/// §5.1.4: VIRTIO_NET_S_LINK_UP; QEMU clears it on `set_link off`). Without
/// VIRTIO_NET_F_STATUS the link "is assumed active" (§5.1.4.2).
pub struct VirtioLink(Option<*const u16>);

// SAFETY: the field is read-only device configuration, mapped for the life of the
// program; reading it touches nothing the queue pairs own.
unsafe impl Send for VirtioLink {}

impl LinkSense for VirtioLink {
    fn link_up(&mut self) -> bool {
        match self.0 {
            Some(p) => {
                // SAFETY: `status` lies inside the device configuration region (checked
                // against its length at bring-up), naturally aligned.
                let status: u16 = unsafe { read_volatile(p) };
                status & S_LINK_UP != 0
            }
            None => true,
        }
    }
}

fn bar_addr(dev: &Device, bar: u8, off: u32, len: u32) -> Option<*mut u8> {
    match dev.bars.get(bar as usize)? {
        Bar::Mem { addr, size, .. } if *addr != 0 && off as u64 + len as u64 <= *size => {
            Some((*addr + off as u64) as *mut u8)
        }
        _ => None,
    }
}

impl VirtioNet {
    /// Whether `dev` is a virtio-net function.
    pub fn matches(dev: &Device) -> bool {
        dev.vendor == VENDOR && DEVICES.contains(&dev.device)
    }

    /// Brings the device up (virtio 1.2 §3.1.1) with one queue pair posted.
    pub fn new(dev: &Device) -> Result<VirtioNet, Error> {
        let mut v = Self::new_multi(dev, |_| 1)?;
        v.pop().ok_or(Error::Queue(0, QueueError::BadSize(0)))
    }

    /// Brings the device up with `choose(offered)` queue pairs (clamped to 1..=offered),
    /// where `offered` is the device's `max_virtqueue_pairs` (1 without VIRTIO_NET_F_MQ),
    /// each returned as its own queue pair, receive buffers posted.
    pub fn new_multi(
        dev: &Device,
        choose: impl FnOnce(u16) -> u16,
    ) -> Result<Vec<VirtioNet>, Error> {
        dev.enable();
        let (mut common, mut device, mut notify, mut mult) = (None, None, None, 0);
        let (mut device_len, mut notify_len) = (0, 0);
        for (id, at) in dev.capabilities() {
            if id != 0x09 {
                continue;
            }
            let a = dev.addr;
            let cfg_type = a.read8(at + 3);
            let bar = a.read8(at + 4);
            let off = a.read32(at + 8);
            let len = a.read32(at + 12);
            match cfg_type {
                1 if common.is_none() => common = bar_addr(dev, bar, off, len.max(56)),
                2 if notify.is_none() => {
                    notify = bar_addr(dev, bar, off, len);
                    notify_len = len;
                    mult = a.read32(at + 16);
                }
                4 if device.is_none() => {
                    device = bar_addr(dev, bar, off, len.max(6));
                    device_len = len;
                }
                _ => {}
            }
        }
        let regs = Regs {
            common: common.ok_or(Error::MissingCapability("common configuration"))?,
            device: device.ok_or(Error::MissingCapability("device configuration"))?,
            notify: notify.ok_or(Error::MissingCapability("notification"))?,
            notify_len,
            notify_mult: mult,
        };
        regs.w8(DEVICE_STATUS, 0);
        let mut spins = 0;
        while regs.r8(DEVICE_STATUS) != 0 {
            spins += 1;
            if spins > 1_000_000 {
                return Err(Error::NoReset);
            }
        }
        regs.w8(DEVICE_STATUS, S_ACKNOWLEDGE);
        regs.w8(DEVICE_STATUS, S_ACKNOWLEDGE | S_DRIVER);
        regs.w32(DEVICE_FEATURE_SELECT, 0);
        let lo = regs.r32(DEVICE_FEATURE) as u64;
        regs.w32(DEVICE_FEATURE_SELECT, 1);
        let hi = regs.r32(DEVICE_FEATURE) as u64;
        let offered = lo | hi << 32;
        if offered & F_VERSION_1 == 0 {
            regs.w8(DEVICE_STATUS, S_FAILED);
            return Err(Error::NotModern);
        }
        // The device's pair count is device data: kept within what virtio allows and
        // what the configuration region holds.
        let max_pairs = if offered & (F_MQ | F_CTRL_VQ) == F_MQ | F_CTRL_VQ && device_len >= 10 {
            // SAFETY: max_virtqueue_pairs is the u16 at offset 8 of the device
            // configuration, which is at least 10 bytes long (checked).
            let n = unsafe { read_volatile(regs.device.add(CFG_MAX_PAIRS).cast::<u16>()) };
            n.clamp(1, MAX_PAIRS)
        } else {
            1
        };
        let pairs = choose(max_pairs).clamp(1, max_pairs);
        let mut wanted = offered & (F_VERSION_1 | F_MAC | F_EVENT_IDX | F_STATUS);
        if pairs > 1 {
            wanted |= F_MQ | F_CTRL_VQ;
        }
        regs.w32(DRIVER_FEATURE_SELECT, 0);
        regs.w32(DRIVER_FEATURE, wanted as u32);
        regs.w32(DRIVER_FEATURE_SELECT, 1);
        regs.w32(DRIVER_FEATURE, (wanted >> 32) as u32);
        regs.w8(DEVICE_STATUS, S_ACKNOWLEDGE | S_DRIVER | S_FEATURES_OK);
        if regs.r8(DEVICE_STATUS) & S_FEATURES_OK == 0 {
            regs.w8(DEVICE_STATUS, S_FAILED);
            return Err(Error::FeaturesRejected);
        }
        regs.w16(MSIX_CONFIG, NO_VECTOR);
        let event_idx = wanted & F_EVENT_IDX != 0;
        let mac = if wanted & F_MAC != 0 {
            let mut m = [0u8; 6];
            for (i, b) in m.iter_mut().enumerate() {
                // SAFETY: the MAC is the first 6 bytes of the device configuration.
                *b = unsafe { read_volatile(regs.device.add(i)) };
            }
            EthernetAddress(m)
        } else {
            EthernetAddress([0x02, 0x00, 0x00, 0x00, 0x00, 0x01])
        };
        let status = (wanted & F_STATUS != 0 && device_len >= 8).then(|| {
            // SAFETY: offset 6 of a device configuration of at least 8 bytes (checked).
            let p = unsafe { regs.device.add(CFG_STATUS) };
            p.cast::<u16>().cast_const()
        });
        let mut nics = Vec::with_capacity(pairs as usize);
        for k in 0..pairs {
            let rxq = setup_queue(&regs, 2 * k, event_idx, MAX_QUEUE)?;
            let txq = setup_queue(&regs, 2 * k + 1, event_idx, MAX_QUEUE)?;
            nics.push(VirtioNet {
                rx: VirtioRx::new(rxq)?,
                tx: VirtioTx::new(txq)?,
                mac,
                status,
            });
        }
        let ctrl = if pairs > 1 {
            Some(setup_queue(&regs, 2 * max_pairs, event_idx, 64)?)
        } else {
            None
        };
        regs.w8(
            DEVICE_STATUS,
            S_ACKNOWLEDGE | S_DRIVER | S_FEATURES_OK | S_DRIVER_OK,
        );
        if let Some(mut q) = ctrl {
            set_pairs(&mut q, pairs)?;
        }
        // Post every receive buffer now that the device is live.
        for nic in nics.iter_mut() {
            nic.rx.q.publish();
        }
        Ok(nics)
    }

    /// The queue pair's two sides, for a wrapper that owns them apart (the network core).
    pub fn into_rings(self) -> (VirtioRx, VirtioTx) {
        (self.rx, self.tx)
    }
}

/// Sends VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET(`pairs`) on the control queue and waits for the
/// device's ack (bounded: the device answers when notified).
fn set_pairs(q: &mut VirtQueue, pairs: u16) -> Result<(), Error> {
    let buf = alloc_bytes(64)?;
    // SAFETY: buf is a fresh zeroed 64-byte allocation: command header at 0, data at 2,
    // ack at 16.
    unsafe {
        buf.write(CTRL_MQ);
        buf.add(1).write(CTRL_MQ_VQ_PAIRS_SET);
        buf.add(2).cast::<u16>().write_unaligned(pairs);
        buf.add(16).write_volatile(0xFF);
    }
    let b = buf as u64;
    q.set_desc(0, b, 2, F_NEXT, 1);
    q.set_desc(1, b + 2, 2, F_NEXT, 2);
    q.set_desc(2, b + 16, 1, F_WRITE, 0);
    q.push_avail(0);
    q.publish();
    let mut spins = 0u64;
    loop {
        if let Some((id, _)) = q.pop_used() {
            // SAFETY: the ack byte of our buffer, written by the device before it
            // published the used entry (the Acquire fence in pop_used orders the read).
            let ack = unsafe { buf.add(16).read_volatile() };
            return if id == 0 && ack == CTRL_OK {
                Ok(())
            } else {
                Err(Error::MqRefused(ack))
            };
        }
        spins += 1;
        if spins > 200_000_000 {
            return Err(Error::MqRefused(0xFF));
        }
        crate::arch::cpu::relax();
    }
}

fn setup_queue(regs: &Regs, index: u16, event_idx: bool, limit: u16) -> Result<VirtQueue, Error> {
    regs.w16(QUEUE_SELECT, index);
    let max = regs.r16(QUEUE_SIZE);
    if max == 0 {
        return Err(Error::Queue(index, QueueError::BadSize(0)));
    }
    // Largest power of two within both limits.
    let mut size = 1u16;
    while size * 2 <= max.min(limit) {
        size *= 2;
    }
    let notify_off = regs.r16(QUEUE_NOTIFY_OFF) as u64 * regs.notify_mult as u64;
    if notify_off + 2 > regs.notify_len as u64 {
        return Err(Error::BadNotifyOffset(index));
    }
    let notify = (regs.notify as u64 + notify_off) as *mut u16;
    // SAFETY: notify lies inside the notification capability's region (checked just
    // above), which the capability scan checked against the BAR size.
    let q = unsafe { VirtQueue::new(size, index, notify, event_idx) }
        .map_err(|e| Error::Queue(index, e))?;
    let (d, a, u) = q.addresses();
    regs.w16(QUEUE_SIZE, size);
    regs.w16(QUEUE_MSIX_VECTOR, NO_VECTOR);
    regs.w64(QUEUE_DESC, d);
    regs.w64(QUEUE_DRIVER, a);
    regs.w64(QUEUE_DEVICE, u);
    regs.w16(QUEUE_ENABLE, 1);
    Ok(q)
}

fn alloc_bytes(len: usize) -> Result<*mut u8, Error> {
    let layout = core::alloc::Layout::from_size_align(len, 4096).map_err(|_| Error::NoMemory)?;
    // SAFETY: non-zero size.
    let p = unsafe { alloc::alloc::alloc_zeroed(layout) };
    if p.is_null() {
        Err(Error::NoMemory)
    } else {
        Ok(p)
    }
}

impl VirtioRx {
    fn new(mut q: VirtQueue) -> Result<VirtioRx, Error> {
        let n = q.size();
        let bufs = alloc_bytes(n as usize * RX_BUF)?;
        for i in 0..n {
            q.set_desc(
                i,
                bufs as u64 + i as u64 * RX_BUF as u64,
                RX_BUF as u32,
                F_WRITE,
                0,
            );
            q.push_avail(i);
        }
        Ok(VirtioRx {
            q,
            bufs,
            state: vec![0; n as usize],
            to_post: Vec::with_capacity(n as usize),
            frames: 0,
            bad: 0,
        })
    }
}

impl RxRing for VirtioRx {
    fn burst(&mut self, out: &mut [RxFrame]) -> usize {
        if !self.to_post.is_empty() {
            for i in 0..self.to_post.len() {
                let id = self.to_post[i];
                self.state[id as usize] = 0;
                self.q.push_avail(id);
            }
            self.to_post.clear();
            self.q.publish();
        }
        let mut n = 0;
        while n < out.len() {
            let Some((id, len)) = self.q.pop_used() else {
                break;
            };
            let ok_id = (id as usize) < self.state.len() && self.state[id as usize] == 0;
            if !ok_id {
                self.bad += 1;
                continue;
            }
            let len = len as usize;
            if len <= NET_HDR || len > RX_BUF {
                self.bad += 1;
                self.state[id as usize] = 2;
                self.to_post.push(id as u16);
                continue;
            }
            self.state[id as usize] = 1;
            out[n] = RxFrame {
                buf: id,
                len: (len - NET_HDR) as u32,
            };
            n += 1;
        }
        self.frames += n as u64;
        self.q.keep_interrupts_off();
        n
    }

    fn bytes(&self, f: &RxFrame) -> &[u8] {
        if (f.buf as usize) >= self.state.len() {
            return &[];
        }
        let len = (f.len as usize).min(RX_BUF - NET_HDR);
        // SAFETY: buffer f.buf lies inside the RX area we allocated; len is clamped to
        // it; the device does not write a buffer the engine holds (it is not posted).
        unsafe {
            core::slice::from_raw_parts(self.bufs.add(f.buf as usize * RX_BUF + NET_HDR), len)
        }
    }

    fn recycle(&mut self, f: RxFrame) {
        let id = f.buf as usize;
        if id < self.state.len() && self.state[id] == 1 {
            self.state[id] = 2;
            self.to_post.push(id as u16);
        }
    }
}

impl VirtioTx {
    fn new(mut q: VirtQueue) -> Result<VirtioTx, Error> {
        let n = q.size() / 2;
        let slots = alloc_bytes(n as usize * TX_SLOT)?;
        for s in 0..n {
            // Descriptor 2s+1 (body) is filled per frame; 2s's next is fixed.
            q.set_desc(
                2 * s,
                slots as u64 + s as u64 * TX_SLOT as u64,
                0,
                0,
                2 * s + 1,
            );
        }
        Ok(VirtioTx {
            q,
            slots,
            in_flight: vec![false; n as usize],
            free: (0..n).rev().collect(),
            current: None,
            frames: 0,
            bad: 0,
            full: 0,
        })
    }

    fn reclaim(&mut self) {
        while let Some((id, _len)) = self.q.pop_used() {
            let s = (id / 2) as usize;
            if id % 2 != 0 || s >= self.in_flight.len() || !self.in_flight[s] {
                self.bad += 1;
                continue;
            }
            self.in_flight[s] = false;
            self.free.push(s as u16);
        }
    }
}

impl TxRing for VirtioTx {
    fn slot(&mut self) -> Option<&mut [u8]> {
        if self.current.is_none() {
            if self.free.is_empty() {
                self.reclaim();
            }
            if self.free.is_empty() && self.q.unpublished() > 0 {
                // Every slot is queued within one poll round: let the device start on
                // them now instead of refusing frames.
                self.q.publish();
                self.reclaim();
            }
            self.current = self.free.pop();
        }
        let s = self.current? as usize;
        // SAFETY: slot s is free (not in flight), inside the TX area; the engine gets the
        // TX_HEAD_ROOM bytes after the virtio-net header.
        Some(unsafe {
            core::slice::from_raw_parts_mut(self.slots.add(s * TX_SLOT + NET_HDR), TX_HEAD_ROOM)
        })
    }

    fn post(&mut self, head_len: usize, body: &'static [u8]) -> Result<(), TxFull> {
        let Some(s) = self.current.take() else {
            self.full += 1;
            return Err(TxFull);
        };
        let head_len = head_len.min(TX_HEAD_ROOM);
        let d = 2 * s;
        let addr = self.slots as u64 + s as u64 * TX_SLOT as u64;
        if body.is_empty() {
            self.q.set_desc(d, addr, (NET_HDR + head_len) as u32, 0, 0);
        } else {
            self.q
                .set_desc(d, addr, (NET_HDR + head_len) as u32, F_NEXT, d + 1);
            // The body is read by the device in place: identity-mapped, so its virtual
            // address is its physical one, and it is 'static, so it outlives the DMA.
            self.q
                .set_desc(d + 1, body.as_ptr() as u64, body.len() as u32, 0, 0);
        }
        self.in_flight[s as usize] = true;
        self.q.push_avail(d);
        self.frames += 1;
        Ok(())
    }

    fn flush(&mut self) {
        if self.q.unpublished() > 0 {
            self.q.publish();
        }
        self.reclaim();
    }

    fn room(&mut self) -> usize {
        self.reclaim();
        if self.free.is_empty() && self.current.is_none() && self.q.unpublished() > 0 {
            self.q.publish();
            self.reclaim();
        }
        self.free.len() + usize::from(self.current.is_some())
    }
}

impl bareweb_engine::cores::CoreQueue for VirtioNet {}

impl Nic for VirtioNet {
    type Rx = VirtioRx;
    type Tx = VirtioTx;

    fn split(&mut self) -> (&mut VirtioRx, &mut VirtioTx) {
        (&mut self.rx, &mut self.tx)
    }

    fn mac(&self) -> EthernetAddress {
        self.mac
    }

    fn counters(&self) -> NicCounters {
        super::counters::<VirtioNet>(&self.rx, &self.tx)
    }
}

impl Driver for VirtioNet {
    type Error = Error;
    const NAME: &'static str = "virtio-net";

    fn matches(dev: &Device) -> bool {
        VirtioNet::matches(dev)
    }

    /// `want` queue pairs when the device offers that many (virtio-net multiqueue), else one.
    fn open(dev: &Device, want: usize) -> Result<(Vec<VirtioNet>, usize), Error> {
        let mut offered = 1;
        let nics = VirtioNet::new_multi(dev, |n| {
            offered = n;
            if usize::from(n) >= want {
                u16::try_from(want).unwrap_or(1)
            } else {
                1
            }
        })?;
        Ok((nics, usize::from(offered)))
    }

    fn rx_counters(rx: &VirtioRx, c: &mut NicCounters) {
        c.device_rx_frames += rx.frames;
        c.doorbells += rx.q.doorbells;
        c.rx_doorbells += rx.q.doorbells;
        c.doorbells_suppressed += rx.q.suppressed;
        c.device_rx_bad += rx.bad;
    }

    fn tx_counters(tx: &VirtioTx, c: &mut NicCounters) {
        c.device_tx_frames += tx.frames;
        c.doorbells += tx.q.doorbells;
        c.doorbells_suppressed += tx.q.suppressed;
        c.device_tx_bad += tx.bad;
        c.device_tx_full += tx.full;
    }

    fn into_rings(self) -> (VirtioRx, VirtioTx) {
        VirtioNet::into_rings(self)
    }

    fn link(&self) -> Box<dyn LinkSense> {
        Box::new(VirtioLink(self.status))
    }
}

#[cfg(test)]
mod tests {
    //! The driver against a simulated device that writes the used rings, including ids
    //! and lengths no honest device would write.
    use super::*;
    use alloc::boxed::Box;

    struct Device {
        used_idx: u16,
    }

    impl Device {
        /// Writes a used entry (id, len) and publishes it, as the device would.
        fn complete(&mut self, q: &VirtQueue, id: u32, len: u32) {
            let (_, _, used) = q.addresses();
            let used = used as *mut u8;
            let slot = (self.used_idx & (q.size() - 1)) as usize;
            // SAFETY: test-only: the used ring of a live queue of q.size() entries.
            unsafe {
                write_volatile(used.add(4 + 8 * slot).cast::<u32>(), id);
                write_volatile(used.add(8 + 8 * slot).cast::<u32>(), len);
                self.used_idx = self.used_idx.wrapping_add(1);
                write_volatile(used.add(2).cast::<u16>(), self.used_idx);
            }
        }
    }

    fn queue(size: u16, index: u16) -> (VirtQueue, Box<u16>) {
        let mut doorbell = Box::new(0u16);
        let p: *mut u16 = &mut *doorbell;
        // SAFETY: p points at a live u16 for the test's duration.
        (
            unsafe { VirtQueue::new(size, index, p, true) }.unwrap(),
            doorbell,
        )
    }

    #[test]
    fn receive_checks_ids_and_lengths_from_the_device() {
        let (q, _bell) = queue(8, 0);
        let mut rx = VirtioRx::new(q).unwrap();
        let mut dev = Device { used_idx: 0 };
        dev.complete(&rx.q, 3, (NET_HDR + 60) as u32); // good
        dev.complete(&rx.q, 3, (NET_HDR + 60) as u32); // same id again: not ours now
        dev.complete(&rx.q, 99, 100); // id out of range
        dev.complete(&rx.q, 4, NET_HDR as u32); // no frame after the header
        dev.complete(&rx.q, 5, 100_000); // longer than the buffer
        dev.complete(&rx.q, 6, (NET_HDR + 1514) as u32); // good, full size
        let mut out = [RxFrame { buf: 0, len: 0 }; 8];
        let n = rx.burst(&mut out);
        assert_eq!(
            &out[..n],
            &[RxFrame { buf: 3, len: 60 }, RxFrame { buf: 6, len: 1514 }]
        );
        assert_eq!(rx.bad, 4);
        assert_eq!(rx.bytes(&out[1]).len(), 1514);
        assert_eq!(rx.bytes(&RxFrame { buf: 1000, len: 10 }), &[] as &[u8]);
        // Recycling twice or recycling what is not loaned is ignored.
        rx.recycle(out[0]);
        rx.recycle(out[0]);
        rx.recycle(RxFrame { buf: 7, len: 1 });
        assert_eq!(rx.to_post, [4, 5, 3]); // the bad ones went back during the burst
        rx.burst(&mut out);
        assert!(rx.to_post.is_empty());
    }

    #[test]
    fn transmit_posts_head_and_body_and_reclaims_only_what_is_in_flight() {
        static BODY: [u8; 100] = [7; 100];
        let (q, _bell) = queue(8, 1);
        let mut tx = VirtioTx::new(q).unwrap();
        let mut dev = Device { used_idx: 0 };
        for _ in 0..4 {
            let s = tx.slot().unwrap();
            s[..54].fill(1);
            tx.post(54, &BODY).unwrap();
        }
        assert!(tx.slot().is_none(), "4 slots for 8 descriptors");
        assert_eq!(tx.post(54, &BODY), Err(TxFull));
        tx.flush();
        assert_eq!(tx.q.doorbells, 1);
        dev.complete(&tx.q, 1, 0); // odd id: never a chain head
        dev.complete(&tx.q, 200, 0); // out of range
        dev.complete(&tx.q, 2, 0); // slot 1: good
        dev.complete(&tx.q, 2, 0); // slot 1 again: already free
        tx.flush();
        assert_eq!(tx.bad, 3);
        assert_eq!(tx.free, [1]);
        assert!(tx.slot().is_some());
    }

    #[test]
    fn room_counts_free_slots_and_hands_the_device_a_full_ring() {
        // The engine asks before each receive burst (backpressure): room is what `slot`
        // would lend, after reclaiming; a ring filled within one round is published so the
        // device can start on it, and room comes back as the device completes frames.
        let (q, _bell) = queue(8, 1);
        let mut tx = VirtioTx::new(q).unwrap();
        let mut dev = Device { used_idx: 0 };
        assert_eq!(tx.room(), 4);
        for _ in 0..4 {
            tx.slot().unwrap();
            tx.post(54, &[]).unwrap();
        }
        assert_eq!(tx.q.unpublished(), 4);
        assert_eq!(tx.room(), 0);
        assert_eq!(tx.q.unpublished(), 0, "a full ring is handed to the device");
        dev.complete(&tx.q, 0, 0);
        dev.complete(&tx.q, 4, 0);
        assert_eq!(tx.room(), 2);
        tx.slot().unwrap();
        assert_eq!(tx.room(), 2, "a slot lent and not yet posted still counts");
    }

    /// The control queue's VQ_PAIRS_SET against a device simulated on a thread, which
    /// reads the command the driver made available and answers `ack`.
    fn pairs_set_answered_with(ack: u8) -> (Result<(), Error>, [u8; 4]) {
        let (mut q, _bell) = queue(8, 4);
        let (desc, avail, used) = q.addresses();
        let dev = std::thread::spawn(move || {
            // SAFETY: test-only: the live queue's rings, read and written as a device would.
            unsafe {
                let avail_idx = (avail as *const u16).add(1);
                let mut spins = 0u64;
                while read_volatile(avail_idx) == 0 {
                    spins += 1;
                    assert!(spins < 1 << 32, "driver never published");
                    std::hint::spin_loop();
                }
                let head = read_volatile((avail as *const u16).add(2)) as usize;
                let d = desc as *const u64; // 16-byte descriptors: addr, len|flags|next
                let cmd = read_volatile(d.add(2 * head)) as *const u8;
                let got = [
                    read_volatile(cmd),
                    read_volatile(cmd.add(1)),
                    read_volatile(cmd.add(2)),
                    read_volatile(cmd.add(3)),
                ];
                let ack_at = read_volatile(d.add(2 * 2)) as *mut u8;
                write_volatile(ack_at, ack);
                let used = used as *mut u8;
                write_volatile(used.add(4).cast::<u32>(), head as u32);
                write_volatile(used.add(8).cast::<u32>(), 1);
                std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
                write_volatile(used.add(2).cast::<u16>(), 1);
                got
            }
        });
        let r = set_pairs(&mut q, 3);
        (r, dev.join().unwrap())
    }

    #[test]
    fn multiqueue_pairs_set_on_the_control_queue() {
        let (r, cmd) = pairs_set_answered_with(CTRL_OK);
        assert_eq!(r, Ok(()));
        assert_eq!(
            cmd,
            [CTRL_MQ, CTRL_MQ_VQ_PAIRS_SET, 3, 0],
            "class, command, pairs (le16)"
        );
        let (r, _) = pairs_set_answered_with(1); // VIRTIO_NET_ERR
        assert_eq!(r, Err(Error::MqRefused(1)));
    }

    #[test]
    fn notifications_follow_the_event_index() {
        assert!(super::super::virtqueue::need_event(0, 1, 0));
        assert!(!super::super::virtqueue::need_event(5, 3, 2));
        assert!(super::super::virtqueue::need_event(5, 7, 5));
        assert!(super::super::virtqueue::need_event(0xFFFF, 1, 0xFFFE));
    }
}
