//! virtio-net, virtio 1.x ("modern") only, over either transport ([`super::virtio`]: PCI,
//! or MMIO on microVMs), polled; receive interrupts only to wake a halted core.
//!
//! Heads up! read virtio 1.2 §2.7 (split virtqueues), §3.1 (initialisation) and §5.1
//! (network device).
//!
//! - Features: VERSION_1 (required), MAC, RING_EVENT_IDX, STATUS (the link state, for the
//!   bonding link monitor); CTRL_VQ and MQ only when more than one queue pair is asked
//!   for; CSUM and HOST_TSO4 together when offered (and not turned off: `offload=off`):
//!   the engine then posts frames of up to ~64 KiB of TCP payload with a partial checksum
//!   (`post_tso`, header flags NEEDS_CSUM, gso_type TCPV4) and the device cuts them, as
//!   the host platform's TAP does. Every other frame carries complete checksums (the body
//!   part from the site image's block sums); receive offloads are not negotiated, so
//!   received frames are whole with complete checksums.
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
//! - Wake-ups: pair k's receive queue interrupts the core that owns it (an MSI-X entry
//!   aimed at that core, or on MMIO the device's line through the I/O APIC), but only when
//!   the core arms it before halting ([`VirtioRx::arm`]); every poll turns it off again.
//! - Device memory is untrusted: used-ring ids are checked against the driver's own
//!   record of what is in flight, lengths against the buffer size; anything else is
//!   counted and dropped, never followed.

use alloc::vec;
use alloc::vec::Vec;
use core::ptr::{read_volatile, write_volatile};

use alloc::boxed::Box;
use bareweb_engine::iface::egress::TSO_LIMIT;
use bareweb_engine::nic::{
    LinkSense, Nic, NicCaps, NicCounters, RxFrame, RxRing, Tso, TxFull, TxRing, TX_HEAD_ROOM,
};
use bareweb_engine::wire::EthernetAddress;

use super::virtio::mmio::{MmioTransport, Slot};
use super::virtio::pci::PciTransport;
use super::virtio::{self, Transport, Wake, S_ACKNOWLEDGE, S_DRIVER, S_DRIVER_OK, S_FEATURES_OK};
use super::virtqueue::{QueueError, VirtQueue, F_NEXT, F_WRITE};
use super::{Arm, Driver, Open};
use crate::arch::ioapic;
use crate::pci::Device;

pub use super::virtio::Error;

/// PCI vendor of virtio devices.
pub const VENDOR: u16 = 0x1AF4;
/// Transitional and modern virtio-net device ids.
pub const DEVICES: [u16; 2] = [0x1000, 0x1041];
/// virtio device id of a network card (the MMIO transport's DeviceID).
pub const DEVICE_ID_NET: u32 = 1;

const F_CSUM: u64 = 1 << 0;
const F_MAC: u64 = 1 << 5;
const F_HOST_TSO4: u64 = 1 << 11;
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

/// virtio_net_hdr with num_buffers: 12 bytes under VERSION_1.
const NET_HDR: usize = 12;
/// virtio_net_hdr.flags: the device completes the checksum from `csum_start`.
const HDR_F_NEEDS_CSUM: u8 = 1;
/// virtio_net_hdr.gso_type: TCP over IPv4 segmentation.
const HDR_GSO_TCPV4: u8 = 1;
/// Receive buffer: header + a 1514-byte frame fits.
const RX_BUF: usize = 2048;
/// Transmit slot stride: header + head room, cache-line rounded.
const TX_SLOT: usize = (NET_HDR + TX_HEAD_ROOM + 63) & !63;
/// Most entries per queue we use.
const MAX_QUEUE: u16 = 1024;

/// Receive side.
pub struct VirtioRx {
    q: VirtQueue,
    bufs: *mut u8,
    /// Per buffer: 0 = with the device, 1 = loaned to the engine, 2 = waiting to be posted.
    state: Vec<u8>,
    to_post: Vec<u16>,
    frames: u64,
    bad: u64,
    /// How this queue's interrupts wake its core.
    wake: Wake,
    /// A line-triggered transport's (InterruptStatus, InterruptACK) registers.
    ack: Option<(*mut u32, *mut u32)>,
}

/// Transmit side.
pub struct VirtioTx {
    q: VirtQueue,
    slots: *mut u8,
    in_flight: Vec<bool>,
    free: Vec<u16>,
    current: Option<u16>,
    frames: u64,
    /// Of which offloaded (segmented by the device).
    tso_frames: u64,
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
    /// TCP segmentation offload negotiated (VIRTIO_NET_F_CSUM and HOST_TSO4).
    tso: bool,
    /// The device configuration's `status` field, when VIRTIO_NET_F_STATUS was negotiated.
    status: Option<*const u16>,
}

// SAFETY: its queues are Send (above); `status` points at read-only device configuration
// that stays mapped and that no queue pair owns.
unsafe impl Send for VirtioNet {}

/// The link of a virtio-net device: the configuration's `status` field (virtio 1.2
/// §5.1.4: VIRTIO_NET_S_LINK_UP; QEMU clears it on `set_link off`). Without
/// VIRTIO_NET_F_STATUS the link "is assumed active" (§5.1.4.2).
#[derive(Clone, Copy)]
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

impl VirtioNet {
    /// Whether `dev` is a virtio-net PCI function.
    pub fn matches(dev: &Device) -> bool {
        dev.vendor == VENDOR && DEVICES.contains(&dev.device)
    }

    /// Brings the device up over transport `t` (virtio 1.2 §3.1.1) with `choose(offered)`
    /// queue pairs (clamped to 1..=offered), where `offered` is the device's
    /// `max_virtqueue_pairs` (1 without VIRTIO_NET_F_MQ), each returned as its own queue
    /// pair, receive buffers posted. Pair k's receive interrupts are aimed at the core
    /// with APIC id `wake[k]` (none for pairs past the slice's end: they are polled).
    /// With `offload`, checksum and TCP segmentation offload are used when the device
    /// offers both (QEMU does with a TAP backend, not with user networking).
    pub fn bring_up<T: Transport>(
        t: &mut T,
        choose: impl FnOnce(u16) -> u16,
        wake: &[u32],
        offload: bool,
    ) -> Result<Vec<VirtioNet>, Error> {
        let mut offered = 0;
        let tso = F_CSUM | F_HOST_TSO4;
        let base = F_MAC | F_EVENT_IDX | F_STATUS | if offload { tso } else { 0 };
        let wanted = virtio::negotiate(t, |o| {
            offered = o;
            let w = o & (base | F_MQ | F_CTRL_VQ);
            // Segmentation needs the checksum offload too: both or neither.
            if w & tso == tso {
                w
            } else {
                w & !tso
            }
        })?;
        // The device's pair count is device data: kept within what virtio allows and
        // what the configuration region holds.
        let mq = F_MQ | F_CTRL_VQ;
        let max_pairs = if offered & mq == mq && t.config_len() >= CFG_MAX_PAIRS + 2 {
            let n = u16::from_le_bytes([t.config8(CFG_MAX_PAIRS), t.config8(CFG_MAX_PAIRS + 1)]);
            n.clamp(1, MAX_PAIRS)
        } else {
            1
        };
        let pairs = choose(max_pairs).clamp(1, max_pairs);
        if pairs == 1 && wanted & mq != 0 {
            // Negotiated for nothing: renegotiate without multiqueue.
            virtio::negotiate(t, |_| wanted & !mq)?;
        }
        let wanted = if pairs == 1 { wanted & !mq } else { wanted };
        let event_idx = wanted & F_EVENT_IDX != 0;
        let mac = if wanted & F_MAC != 0 {
            EthernetAddress(core::array::from_fn(|i| t.config8(i)))
        } else {
            EthernetAddress([0x02, 0x00, 0x00, 0x00, 0x00, 0x01])
        };
        let status = if wanted & F_STATUS != 0 {
            t.config_ptr(CFG_STATUS, 2).map(|p| p.cast::<u16>())
        } else {
            None
        };
        let wakes: Vec<Wake> = (0..pairs)
            .map(|k| match wake.get(k as usize) {
                Some(&apic) => t.wake_for(k, apic),
                None => Wake::None,
            })
            .collect();
        t.interrupts_on();
        let ack = t.interrupt_ack();
        let mut nics = Vec::with_capacity(pairs as usize);
        for k in 0..pairs {
            let w = wakes[k as usize];
            let rxq = setup_queue(t, 2 * k, event_idx, MAX_QUEUE, w)?;
            let txq = setup_queue(t, 2 * k + 1, event_idx, MAX_QUEUE, Wake::None)?;
            nics.push(VirtioNet {
                rx: VirtioRx::new(rxq, w, ack)?,
                tx: VirtioTx::new(txq)?,
                mac,
                tso: wanted & tso == tso,
                status,
            });
        }
        let ctrl = if pairs > 1 {
            Some(setup_queue(t, 2 * max_pairs, event_idx, 64, Wake::None)?)
        } else {
            None
        };
        t.set_status(S_ACKNOWLEDGE | S_DRIVER | S_FEATURES_OK | S_DRIVER_OK);
        if let Some(mut q) = ctrl {
            set_pairs(&mut q, pairs)?;
        }
        // Post every receive buffer now that the device is live.
        for nic in nics.iter_mut() {
            nic.rx.q.publish();
        }
        Ok(nics)
    }

    /// Brings up the virtio-net device of a virtio-mmio slot (one queue pair: the device
    /// has one interrupt line, which can wake one core).
    pub fn open_mmio(slot: Slot, with: &Open<'_>) -> Result<Vec<VirtioNet>, Error> {
        let mut t = MmioTransport::new(slot)?;
        VirtioNet::bring_up(&mut t, |_| 1, with.wake, with.offload)
    }

    /// The device's link, as [`Driver::link`] reads it.
    pub fn link_sense(&self) -> VirtioLink {
        VirtioLink(self.status)
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

fn setup_queue<T: Transport>(
    t: &mut T,
    index: u16,
    event_idx: bool,
    limit: u16,
    wake: Wake,
) -> Result<VirtQueue, Error> {
    let max = t.queue_max(index);
    if max == 0 {
        return Err(Error::Queue(index, QueueError::BadSize(0)));
    }
    // Largest power of two within both limits.
    let mut size = 1u16;
    while size * 2 <= max.min(limit) {
        size *= 2;
    }
    let mut q = VirtQueue::new(size, index, event_idx).map_err(|e| Error::Queue(index, e))?;
    let notify = t.queue_enable(index, size, q.addresses(), wake)?;
    // SAFETY: the transport returned this queue's notification register (PCI: checked
    // against the notification capability's length; MMIO: QueueNotify of its page).
    unsafe { q.attach(notify) };
    Ok(q)
}

fn alloc_bytes(len: usize) -> Result<*mut u8, Error> {
    alloc_area(len, true)
}

/// `len` bytes, page-aligned, zeroed only if `zeroed`: receive buffers are written by the
/// device before the driver reads any byte of them (only the length the device reports,
/// clamped to the buffer), so they are not zeroed, which under an emulator was a
/// measurable part of boot (issue 16: ~2 MiB per queue, a store per 8 bytes).
fn alloc_area(len: usize, zeroed: bool) -> Result<*mut u8, Error> {
    let layout = core::alloc::Layout::from_size_align(len, 4096).map_err(|_| Error::NoMemory)?;
    // SAFETY: non-zero size.
    let p = unsafe {
        if zeroed {
            alloc::alloc::alloc_zeroed(layout)
        } else {
            alloc::alloc::alloc(layout)
        }
    };
    if p.is_null() {
        Err(Error::NoMemory)
    } else {
        Ok(p)
    }
}

impl VirtioRx {
    fn new(
        mut q: VirtQueue,
        wake: Wake,
        ack: Option<(*mut u32, *mut u32)>,
    ) -> Result<VirtioRx, Error> {
        let n = q.size();
        let bufs = alloc_area(n as usize * RX_BUF, false)?;
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
            wake,
            ack,
        })
    }

    /// Lowers a line-triggered transport's interrupt (reads InterruptStatus, writes it
    /// back to InterruptACK).
    fn ack_line(&self) {
        if let Some((status, ack)) = self.ack {
            // SAFETY: the transport's two registers in the device's page.
            unsafe {
                let s = read_volatile(status);
                if s != 0 {
                    write_volatile(ack, s);
                }
            }
        }
    }
}

impl super::WakeRx for VirtioRx {
    /// Lets the device interrupt the core at the next received frame; see [`Arm`].
    fn arm(&mut self) -> Arm {
        if self.wake == Wake::None {
            return Arm::Unable;
        }
        if !self.to_post.is_empty() {
            return Arm::Pending; // buffers to give back first: poll once more
        }
        if let Wake::Line(gsi) = self.wake {
            self.ack_line();
            ioapic::unmask(gsi);
        }
        if self.q.arm() {
            Arm::Armed
        } else {
            self.disarm();
            Arm::Pending
        }
    }

    /// Interrupts off again (after a halt, or when arming found a frame).
    fn disarm(&mut self) {
        self.q.keep_interrupts_off();
        if let Wake::Line(gsi) = self.wake {
            ioapic::mask(gsi);
            self.ack_line();
        }
    }

    fn wake(&self) -> Wake {
        self.wake
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
            tso_frames: 0,
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

impl VirtioTx {
    /// Queues the frame in the current slot behind virtio-net header `hdr`.
    fn post_with(
        &mut self,
        head_len: usize,
        body: &'static [u8],
        hdr: [u8; NET_HDR],
    ) -> Result<(), TxFull> {
        let Some(s) = self.current.take() else {
            self.full += 1;
            return Err(TxFull);
        };
        let head_len = head_len.min(TX_HEAD_ROOM);
        let d = 2 * s;
        let addr = self.slots as u64 + s as u64 * TX_SLOT as u64;
        // SAFETY: slot s (not in flight) starts with its NET_HDR header bytes.
        unsafe { core::ptr::copy_nonoverlapping(hdr.as_ptr(), addr as *mut u8, NET_HDR) };
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
        self.post_with(head_len, body, [0; NET_HDR])
    }

    fn post_tso(&mut self, head_len: usize, body: &'static [u8], tso: Tso) -> Result<(), TxFull> {
        let [h0, h1] = tso.header_len.to_le_bytes();
        let [m0, m1] = tso.mss.to_le_bytes();
        let [s0, s1] = tso.l4_offset.to_le_bytes();
        // csum_offset: the TCP checksum field, 16 bytes into the TCP header; the engine
        // left the pseudo-header sum there (virtio 1.2 §5.1.6.2).
        let hdr = [
            HDR_F_NEEDS_CSUM,
            HDR_GSO_TCPV4,
            h0,
            h1,
            m0,
            m1,
            s0,
            s1,
            16,
            0,
            0,
            0,
        ];
        self.post_with(head_len, body, hdr)?;
        self.tso_frames += 1;
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

    fn caps(&self) -> NicCaps {
        if self.tso {
            NicCaps::default().with_tso(TSO_LIMIT)
        } else {
            NicCaps::default()
        }
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

    /// `with.pairs` queue pairs when the device offers that many (virtio-net multiqueue),
    /// else one.
    fn open(dev: &Device, with: &Open<'_>) -> Result<(Vec<VirtioNet>, usize), Error> {
        let want = with.pairs;
        let mut offered = 1;
        let mut t = PciTransport::new(dev)?;
        let nics = VirtioNet::bring_up(
            &mut t,
            |n| {
                offered = n;
                if usize::from(n) >= want {
                    u16::try_from(want).unwrap_or(1)
                } else {
                    1
                }
            },
            with.wake,
            with.offload,
        )?;
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
        Box::new(self.link_sense())
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
        let mut q = VirtQueue::new(size, index, true).unwrap();
        // SAFETY: p points at a live u16 for the test's duration.
        unsafe { q.attach(super::super::virtio::Notify::u16(p)) };
        (q, doorbell)
    }

    #[test]
    fn receive_checks_ids_and_lengths_from_the_device() {
        let (q, _bell) = queue(8, 0);
        let mut rx = VirtioRx::new(q, Wake::None, None).unwrap();
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
