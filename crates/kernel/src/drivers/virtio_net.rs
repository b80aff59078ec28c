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
//!   the host platform's TAP does; HOST_TSO6 too when offered beside them, for TCP over
//!   IPv6 (gso_type TCPV6, told apart by the TCP header's offset: 54, behind a 40-byte
//!   IPv6 header, where the engine's IPv4 frames have it at 34). Every other frame carries complete checksums (the body
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
//! - Generic over the machine ([`Hal`]): rings and buffers come from `H::dma_alloc`, the
//!   device is given their DMA addresses (and the site image's, `H::dma_addr_static`),
//!   registers are typed views. On the machine `H` is [`Identity`] (the default); the
//!   host tests run the whole driver against `drivers::fake`'s device.

use alloc::vec;
use alloc::vec::Vec;
use core::marker::PhantomData;

use alloc::boxed::Box;
use bareweb_engine::iface::egress::TSO_LIMIT;
use bareweb_engine::nic::{
    LinkSense, Nic, NicCaps, NicCounters, RxFrame, RxRing, Tso, TxFull, TxRing, TX_HEAD_ROOM,
};
use bareweb_engine::wire::EthernetAddress;

use super::hal::{Dma, Hal, Identity, Reg, RO, RW, WO};
use super::virtio::mmio::{MmioTransport, Slot};
use super::virtio::pci::PciTransport;
use super::virtio::{self, Transport, Wake, S_ACKNOWLEDGE, S_DRIVER, S_DRIVER_OK, S_FEATURES_OK};
use super::virtqueue::{QueueError, VirtQueue, F_NEXT, F_WRITE};
use super::{Arm, Driver, Open};
use crate::arch::ioapic;
use crate::arch::pci::Device;

pub use super::virtio::Error;

/// PCI vendor of virtio devices.
pub const VENDOR: u16 = 0x1AF4;
/// Transitional and modern virtio-net device ids.
pub const DEVICES: [u16; 2] = [0x1000, 0x1041];
/// virtio device id of a network card (the MMIO transport's DeviceID).
pub const DEVICE_ID_NET: u32 = 1;

/// No slot (an available-ring entry not yet written).
const NONE: u16 = u16::MAX;
const F_CSUM: u64 = 1 << 0;
const F_MAC: u64 = 1 << 5;
const F_HOST_TSO4: u64 = 1 << 11;
const F_HOST_TSO6: u64 = 1 << 12;
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
/// virtio_net_hdr.gso_type: TCP over IPv6 segmentation.
const HDR_GSO_TCPV6: u8 = 4;
/// Where the TCP header of an engine's IPv6 frame starts (Ethernet + IPv6, no extension
/// header).
const L4_OFFSET_V6: u16 = 14 + 40;
/// Receive buffer: header + a 1514-byte frame fits.
const RX_BUF: usize = 2048;
/// Transmit slot stride: header + head room, cache-line rounded.
const TX_SLOT: usize = (NET_HDR + TX_HEAD_ROOM + 63) & !63;
/// Most entries per queue we use.
const MAX_QUEUE: u16 = 1024;

/// Receive side.
pub struct VirtioRx {
    q: VirtQueue,
    bufs: Dma,
    /// Per buffer: 0 = with the device, 1 = loaned to the engine, 2 = waiting to be posted.
    state: Vec<u8>,
    to_post: Vec<u16>,
    frames: u64,
    bad: u64,
    /// How this queue's interrupts wake its core.
    wake: Wake,
    /// A line-triggered transport's (InterruptStatus, InterruptACK) registers.
    ack: Option<(Reg<u32, RO>, Reg<u32, WO>)>,
}

/// Transmit side, lending bodies to the device through `H`.
pub struct VirtioTx<H: Hal = Identity> {
    q: VirtQueue,
    slots: Dma,
    in_flight: Vec<bool>,
    /// Per slot: the available-ring index its latest post took.
    posted_at: Vec<u16>,
    /// Per available-ring entry: the slot whose post it last held (`NONE` before any).
    entry_of: Vec<u16>,
    free: Vec<u16>,
    current: Option<u16>,
    frames: u64,
    /// Of which offloaded (segmented by the device).
    tso_frames: u64,
    bad: u64,
    full: u64,
    _hal: PhantomData<fn() -> H>,
}

/// A virtio-net device as one engine queue pair.
pub struct VirtioNet<H: Hal = Identity> {
    rx: VirtioRx,
    tx: VirtioTx<H>,
    mac: EthernetAddress,
    /// TCP segmentation offload negotiated (VIRTIO_NET_F_CSUM and HOST_TSO4).
    tso: bool,
    /// And over IPv6 (HOST_TSO6 besides).
    tso6: bool,
    /// The device configuration's `status` field, when VIRTIO_NET_F_STATUS was negotiated.
    status: Option<Reg<u16, RO>>,
}

/// The link of a virtio-net device: the configuration's `status` field (virtio 1.2
/// §5.1.4: VIRTIO_NET_S_LINK_UP; QEMU clears it on `set_link off`). Without
/// VIRTIO_NET_F_STATUS the link "is assumed active" (§5.1.4.2).
#[derive(Clone, Copy)]
pub struct VirtioLink(Option<Reg<u16, RO>>);

impl LinkSense for VirtioLink {
    fn link_up(&mut self) -> bool {
        self.0.is_none_or(|r| r.read() & S_LINK_UP != 0)
    }
}

impl VirtioNet {
    /// Whether `dev` is a virtio-net PCI function.
    pub fn matches(dev: &Device) -> bool {
        dev.vendor == VENDOR && DEVICES.contains(&dev.device)
    }
}

impl<H: Hal> VirtioNet<H> {
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
    ) -> Result<Vec<VirtioNet<H>>, Error> {
        let mut offered = 0;
        let tso = F_CSUM | F_HOST_TSO4;
        let base = F_MAC | F_EVENT_IDX | F_STATUS | if offload { tso | F_HOST_TSO6 } else { 0 };
        let wanted = virtio::negotiate(t, |o| {
            offered = o;
            let w = o & (base | F_MQ | F_CTRL_VQ);
            // Segmentation needs the checksum offload too: both or neither; IPv6's only
            // beside IPv4's.
            if w & tso == tso {
                w
            } else {
                w & !(tso | F_HOST_TSO6)
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
            t.config_u16(CFG_STATUS)
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
            let rxq = setup_queue::<H, T>(t, 2 * k, event_idx, MAX_QUEUE, w)?;
            let txq = setup_queue::<H, T>(t, 2 * k + 1, event_idx, MAX_QUEUE, Wake::None)?;
            nics.push(VirtioNet {
                rx: VirtioRx::new::<H>(rxq, w, ack)?,
                tx: VirtioTx::new(txq)?,
                mac,
                tso: wanted & tso == tso,
                tso6: wanted & (tso | F_HOST_TSO6) == tso | F_HOST_TSO6,
                status,
            });
        }
        let ctrl = if pairs > 1 {
            Some(setup_queue::<H, T>(
                t,
                2 * max_pairs,
                event_idx,
                64,
                Wake::None,
            )?)
        } else {
            None
        };
        t.set_status(S_ACKNOWLEDGE | S_DRIVER | S_FEATURES_OK | S_DRIVER_OK);
        if let Some(mut q) = ctrl {
            set_pairs::<H>(&mut q, pairs)?;
        }
        // Post every receive buffer now that the device is live.
        for nic in nics.iter_mut() {
            nic.rx.q.publish();
        }
        Ok(nics)
    }

    /// Brings up the virtio-net device of a virtio-mmio slot (one queue pair: the device
    /// has one interrupt line, which can wake one core).
    pub fn open_mmio(slot: Slot, with: &Open<'_>) -> Result<Vec<VirtioNet<H>>, Error> {
        let mut t = MmioTransport::new::<H>(slot)?;
        VirtioNet::bring_up(&mut t, |_| 1, with.wake, with.offload)
    }

    /// The device's link, as [`Driver::link`] reads it.
    pub fn link_sense(&self) -> VirtioLink {
        VirtioLink(self.status)
    }

    /// The queue pair's two sides, for a wrapper that owns them apart (the network core).
    pub fn into_rings(self) -> (VirtioRx, VirtioTx<H>) {
        (self.rx, self.tx)
    }
}

/// Sends VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET(`pairs`) on the control queue and waits for the
/// device's ack (bounded: the device answers when notified).
fn set_pairs<H: Hal>(q: &mut VirtQueue, pairs: u16) -> Result<(), Error> {
    // Command header at 0, data at 2, ack at 16.
    let mut buf = Dma::new::<H>(64, true).ok_or(Error::NoMemory)?;
    let [p0, p1] = pairs.to_le_bytes();
    // SAFETY: the device is not given the buffer until the descriptors below.
    if let Some(cmd) = unsafe { buf.bytes_mut(0, 4) } {
        cmd.copy_from_slice(&[CTRL_MQ, CTRL_MQ_VQ_PAIRS_SET, p0, p1]);
    }
    let ack: Reg<u8, RW> = buf.reg(16).ok_or(Error::NoMemory)?;
    ack.write(0xFF);
    q.set_desc(0, buf.paddr(0), 2, F_NEXT, 1);
    q.set_desc(1, buf.paddr(2), 2, F_NEXT, 2);
    q.set_desc(2, buf.paddr(16), 1, F_WRITE, 0);
    q.push_avail(0);
    q.publish();
    let mut spins = 0u64;
    loop {
        if let Some((id, _)) = q.pop_used() {
            // Written by the device before it published the used entry (the Acquire
            // fence in pop_used orders the read).
            let ack = ack.read();
            return if id == 0 && ack == CTRL_OK {
                Ok(())
            } else {
                Err(Error::MqRefused(ack))
            };
        }
        spins += 1;
        if spins > 200_000_000 {
            // The buffer stays with a device that never answered: not given back.
            core::mem::forget(buf);
            return Err(Error::MqRefused(0xFF));
        }
        relax();
    }
}

/// A polling loop's pause (the machine's, or the host's in tests).
fn relax() {
    #[cfg(not(test))]
    crate::arch::cpu::relax();
    #[cfg(test)]
    std::hint::spin_loop();
}

fn setup_queue<H: Hal, T: Transport>(
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
    let mut q = VirtQueue::new::<H>(size, index, event_idx).map_err(|e| Error::Queue(index, e))?;
    let notify = t.queue_enable(index, size, q.addresses(), wake)?;
    q.attach(notify);
    Ok(q)
}

impl VirtioRx {
    fn new<H: Hal>(
        mut q: VirtQueue,
        wake: Wake,
        ack: Option<(Reg<u32, RO>, Reg<u32, WO>)>,
    ) -> Result<VirtioRx, Error> {
        let n = q.size();
        // Not zeroed: see `Hal::dma_alloc`.
        let bufs = Dma::new::<H>(n as usize * RX_BUF, false).ok_or(Error::NoMemory)?;
        for i in 0..n {
            q.set_desc(
                i,
                bufs.paddr(i as usize * RX_BUF),
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
            let s = status.read();
            if s != 0 {
                ack.write(s);
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
        // SAFETY: the device does not write a buffer the engine holds (it is not posted);
        // the region's bounds are checked by `bytes`.
        unsafe { self.bufs.bytes(f.buf as usize * RX_BUF + NET_HDR, len) }.unwrap_or(&[])
    }

    fn recycle(&mut self, f: RxFrame) {
        let id = f.buf as usize;
        if id < self.state.len() && self.state[id] == 1 {
            self.state[id] = 2;
            self.to_post.push(id as u16);
        }
    }
}

impl<H: Hal> VirtioTx<H> {
    fn new(mut q: VirtQueue) -> Result<VirtioTx<H>, Error> {
        let n = q.size() / 2;
        let entries = q.size() as usize;
        let slots = Dma::new::<H>(n as usize * TX_SLOT, true).ok_or(Error::NoMemory)?;
        for s in 0..n {
            // Descriptor 2s+1 (body) is filled per frame; 2s's next is fixed.
            q.set_desc(2 * s, slots.paddr(s as usize * TX_SLOT), 0, 0, 2 * s + 1);
        }
        Ok(VirtioTx {
            q,
            slots,
            in_flight: vec![false; n as usize],
            posted_at: vec![0; n as usize],
            entry_of: vec![NONE; entries],
            free: (0..n).rev().collect(),
            current: None,
            frames: 0,
            tso_frames: 0,
            bad: 0,
            full: 0,
            _hal: PhantomData,
        })
    }

    /// Whether the next post would overwrite the available-ring entry that still holds
    /// an in-flight slot's latest post (the ring has twice as many entries as slots, so
    /// this takes a slot held over a whole lap). A device that reported some slot used
    /// before taking its entry may not have taken this one either, and overwriting it
    /// would hide that slot from the device for good: the driver waits for the slot
    /// instead, so every in-flight slot keeps its entry and a device that goes on to take
    /// all it is given returns every slot. An honest device that holds one frame a lap
    /// merely delays the next post until it completes it.
    fn overwrites_live_entry(&self) -> bool {
        let at = self.q.next_avail();
        let ring = self.entry_of.len() as u16;
        let s = self.entry_of[at as usize % self.entry_of.len()];
        s != NONE
            && self.in_flight[s as usize]
            && self.posted_at[s as usize].wrapping_add(ring) == at
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

impl<H: Hal> VirtioTx<H> {
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
        let at = s as usize * TX_SLOT;
        // SAFETY: slot s is not in flight: the device does not read it meanwhile.
        if let Some(h) = unsafe { self.slots.bytes_mut(at, NET_HDR) } {
            h.copy_from_slice(&hdr);
        }
        let addr = self.slots.paddr(at);
        if body.is_empty() {
            self.q.set_desc(d, addr, (NET_HDR + head_len) as u32, 0, 0);
        } else {
            self.q
                .set_desc(d, addr, (NET_HDR + head_len) as u32, F_NEXT, d + 1);
            // The body is read by the device in place: 'static and immutable, so it
            // outlives the DMA; the Hal says at which address the device reads it.
            let body_at = H::dma_addr_static(body);
            self.q.set_desc(d + 1, body_at, body.len() as u32, 0, 0);
        }
        self.in_flight[s as usize] = true;
        let at = self.q.next_avail();
        self.posted_at[s as usize] = at;
        let ring = self.entry_of.len();
        self.entry_of[at as usize % ring] = s;
        self.q.push_avail(d);
        self.frames += 1;
        Ok(())
    }
}

impl<H: Hal> TxRing for VirtioTx<H> {
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
            if self.overwrites_live_entry() {
                return None;
            }
            self.current = self.free.pop();
        }
        let s = self.current? as usize;
        // SAFETY: slot s is free (not in flight), so the device does not read it; the
        // engine gets the TX_HEAD_ROOM bytes after the virtio-net header.
        unsafe { self.slots.bytes_mut(s * TX_SLOT + NET_HDR, TX_HEAD_ROOM) }
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
        let gso = match tso.l4_offset {
            L4_OFFSET_V6 => HDR_GSO_TCPV6,
            _ => HDR_GSO_TCPV4,
        };
        let hdr = [HDR_F_NEEDS_CSUM, gso, h0, h1, m0, m1, s0, s1, 16, 0, 0, 0];
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
        if self.current.is_none() && self.overwrites_live_entry() {
            return 0;
        }
        self.free.len() + usize::from(self.current.is_some())
    }
}

impl<H: Hal> bareweb_engine::cores::CoreQueue for VirtioNet<H> {}

impl<H: Hal> Nic for VirtioNet<H> {
    type Rx = VirtioRx;
    type Tx = VirtioTx<H>;

    fn split(&mut self) -> (&mut VirtioRx, &mut VirtioTx<H>) {
        (&mut self.rx, &mut self.tx)
    }

    fn mac(&self) -> EthernetAddress {
        self.mac
    }

    fn caps(&self) -> NicCaps {
        match (self.tso, self.tso6) {
            (true, true) => NicCaps::default().with_tso(TSO_LIMIT).with_tso6(),
            (true, false) => NicCaps::default().with_tso(TSO_LIMIT),
            _ => NicCaps::default(),
        }
    }

    fn counters(&self) -> NicCounters {
        super::counters::<VirtioNet<H>>(&self.rx, &self.tx)
    }
}

impl<H: Hal> Driver for VirtioNet<H> {
    type Error = Error;
    const NAME: &'static str = "virtio-net";

    fn matches(dev: &Device) -> bool {
        VirtioNet::matches(dev)
    }

    /// `with.pairs` queue pairs when the device offers that many (virtio-net multiqueue),
    /// else one.
    fn open(dev: &Device, with: &Open<'_>) -> Result<(Vec<VirtioNet<H>>, usize), Error> {
        let want = with.pairs;
        let mut offered = 1;
        let mut t = PciTransport::new::<H>(dev)?;
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

    fn tx_counters(tx: &VirtioTx<H>, c: &mut NicCounters) {
        c.device_tx_frames += tx.frames;
        c.doorbells += tx.q.doorbells;
        c.doorbells_suppressed += tx.q.suppressed;
        c.device_tx_bad += tx.bad;
        c.device_tx_full += tx.full;
    }

    fn into_rings(self) -> (VirtioRx, VirtioTx<H>) {
        VirtioNet::into_rings(self)
    }

    fn link(&self) -> Box<dyn LinkSense> {
        Box::new(self.link_sense())
    }

    fn multicast(&self) -> Box<dyn super::Multicast> {
        Box::new(Unfiltered)
    }
}

/// virtio-net's multicast filter: nothing to program. The driver does not negotiate
/// VIRTIO_NET_F_CTRL_RX, and a device without it receives in the mode its reset leaves,
/// every frame (QEMU `virtio_net_reset`: "compatibility mode", promiscuous), so the groups
/// IPv6 listens to arrive already.
pub struct Unfiltered;

impl super::Multicast for Unfiltered {
    fn set(&mut self, _: &[EthernetAddress]) {}
}

#[cfg(test)]
mod tests {
    //! The driver against `drivers::fake`'s virtio-net device: bring-up as the device
    //! sees it, frames out and in, and used entries no honest device would write.
    use super::super::fake::{DeviceRing, FakeHal, FakeVirtio, DMA_OFFSET};
    use super::super::virtio::F_VERSION_1;
    use super::super::virtqueue::need_event;
    use super::*;

    const MAC: [u8; 6] = [0x52, 0x54, 0, 0x12, 0x34, 0x56];
    const OFFERED: u64 =
        F_VERSION_1 | F_MAC | F_EVENT_IDX | F_STATUS | F_CSUM | F_HOST_TSO4 | F_HOST_TSO6;

    /// A device with one queue pair of `size` entries, brought up by the driver.
    fn up(size: u16) -> (FakeVirtio, VirtioNet<FakeHal>) {
        let mut dev = FakeVirtio::new(OFFERED, 2, size, MAC, S_LINK_UP);
        let mut nics = VirtioNet::<FakeHal>::bring_up(&mut dev, |_| 1, &[], true).unwrap();
        assert_eq!(nics.len(), 1);
        (dev, nics.pop().unwrap())
    }

    #[test]
    fn ring_setup_negotiates_and_gives_the_device_dma_addresses() {
        let (mut dev, mut nic) = up(256);
        assert_eq!(
            dev.status,
            S_ACKNOWLEDGE | S_DRIVER | S_FEATURES_OK | S_DRIVER_OK
        );
        assert_eq!(dev.accepted, OFFERED, "every offered feature used, no MQ");
        assert_eq!(nic.mac(), EthernetAddress(MAC));
        assert!(nic.tso && nic.tso6 && nic.caps().tso6);
        // Queues 0 and 1, full size, at the addresses the driver's queues hold: device
        // addresses, not CPU pointers.
        let got: Vec<(u16, u16)> = dev.queues.iter().map(|q| (q.0, q.1)).collect();
        assert_eq!(got, [(0, 256), (1, 256)]);
        let (rx, tx) = nic.split();
        assert_eq!(dev.ring(0).rings, rx.q.addresses());
        assert_eq!(dev.ring(1).rings, tx.q.addresses());
        assert!(rx.q.addresses().0 >= DMA_OFFSET);
        // Every receive buffer posted at bring-up, one doorbell: each a device-writable
        // 2 KiB buffer inside DMA memory (pop_avail checks), no two alike.
        assert_eq!((dev.ring(0).avail_idx(), rx.q.doorbells), (256, 1));
        assert_eq!(dev.bell(0), 0);
        let mut seen = Vec::new();
        while let Some((head, bufs)) = dev.ring(0).pop_avail() {
            assert_eq!(bufs.len(), 1);
            assert!(bufs[0].write && bufs[0].len == RX_BUF as u32);
            seen.push((head, bufs[0].addr));
        }
        seen.sort();
        seen.dedup_by_key(|s| s.1);
        assert_eq!(seen.len(), 256);
        // Nothing made available to transmit yet.
        assert_eq!(dev.ring(1).avail_idx(), 0);
        // The link as the configuration's status field says.
        let mut link = nic.link_sense();
        assert!(link.link_up());
        dev.set_link(false);
        assert!(!link.link_up());
    }

    #[test]
    fn a_frame_goes_out_and_a_frame_comes_in() {
        static BODY: [u8; 300] = [7; 300];
        let (mut dev, mut nic) = up(256);
        let (rx, tx) = nic.split();
        // Out: head from the slot, body lent from 'static memory, one doorbell.
        let s = tx.slot().unwrap();
        s[..54].fill(0xEE);
        tx.post(54, &BODY).unwrap();
        tx.slot().unwrap()[..60].fill(0xDD);
        tx.post(60, &[]).unwrap();
        tx.flush();
        assert_eq!(tx.q.doorbells, 1);
        assert_eq!(dev.bell(1), 1, "queue 1's doorbell rung with its index");
        let out = dev.transmitted(1);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0][..NET_HDR], [0; NET_HDR]);
        assert_eq!(out[0][NET_HDR..NET_HDR + 54], [0xEE; 54]);
        assert_eq!(out[0][NET_HDR + 54..], BODY);
        assert_eq!(out[1].len(), NET_HDR + 60);
        // The slots come back once the device used them.
        assert_eq!(tx.room(), 128);
        // TSO: the header tells the device to segment.
        tx.slot().unwrap();
        let tso = Tso {
            mss: 1448,
            header_len: 54,
            l4_offset: 34,
        };
        tx.post_tso(54, &BODY, tso).unwrap();
        tx.flush();
        let out = dev.transmitted(1);
        assert_eq!(
            out[0][..10],
            [
                HDR_F_NEEDS_CSUM,
                HDR_GSO_TCPV4,
                54,
                0,
                0xA8,
                5,
                34,
                0,
                16,
                0
            ]
        );
        // Over IPv6 (the TCP header behind a 40-byte IPv6 header): TCPV6.
        tx.slot().unwrap();
        let tso6 = Tso {
            mss: 1428,
            header_len: 74,
            l4_offset: 54,
        };
        tx.post_tso(74, &BODY, tso6).unwrap();
        tx.flush();
        let out = dev.transmitted(1);
        assert_eq!(
            out[0][..10],
            [
                HDR_F_NEEDS_CSUM,
                HDR_GSO_TCPV6,
                74,
                0,
                0x94,
                5,
                54,
                0,
                16,
                0
            ]
        );
        // In: the frame lands in a posted buffer and is lent to the engine.
        let frame: Vec<u8> = (0..1514).map(|i| i as u8).collect();
        assert!(dev.deliver(0, &frame));
        let mut got = [RxFrame { buf: 0, len: 0 }; 8];
        assert_eq!(rx.burst(&mut got), 1);
        assert_eq!(rx.bytes(&got[0]), &frame[..]);
        assert!(rx.bufs.holds(rx.bytes(&got[0])));
        // Recycled and re-posted in the next burst (one more available entry).
        rx.recycle(got[0]);
        assert_eq!(rx.burst(&mut got), 0);
        assert_eq!(dev.ring(0).avail_idx(), 257);
        assert_eq!((rx.frames, rx.bad, tx.bad), (1, 0, 0));
    }

    #[test]
    fn a_lying_device_on_receive_is_counted_and_dropped() {
        let (mut dev, mut nic) = up(16);
        let (rx, _) = nic.split();
        let mut out = [RxFrame { buf: 0, len: 0 }; 16];
        // One honest frame, held by the engine.
        assert!(dev.deliver(0, &[1; 60]));
        assert_eq!(rx.burst(&mut out), 1);
        let held = out[0];
        let ring = dev.ring(0);
        ring.push_used(held.buf, (NET_HDR + 60) as u32); // a buffer the engine holds
        ring.push_used(99, 100); // an id past the ring
        ring.push_used(u32::MAX, 100); // far past it
        ring.push_used(4, NET_HDR as u32); // no frame after the header
        ring.push_used(5, 100_000); // used length past the buffer
        ring.push_used(6, u32::MAX); // and far past it
        ring.push_used(7, (NET_HDR + RX_BUF) as u32); // one buffer's worth past the header
        ring.push_used(3, (NET_HDR + 1514) as u32); // honest, full size
        ring.push_used(3, (NET_HDR + 60) as u32); // the same id again: not posted now
        let n = rx.burst(&mut out);
        assert_eq!(&out[..n], &[RxFrame { buf: 3, len: 1514 }]);
        assert_eq!(rx.bad, 8);
        assert!(rx.bufs.holds(rx.bytes(&out[0])));
        // Views of what is not lent, or past a buffer, are empty or clamped.
        assert_eq!(rx.bytes(&RxFrame { buf: 1000, len: 10 }), &[] as &[u8]);
        let past = rx.bytes(&RxFrame {
            buf: 7,
            len: 100_000,
        });
        assert!(past.len() <= RX_BUF - NET_HDR && rx.bufs.holds(past));
        // Recycling twice, or what is not lent, is ignored.
        rx.recycle(out[0]);
        rx.recycle(out[0]);
        rx.recycle(RxFrame { buf: 1, len: 1 });
        assert_eq!(rx.to_post, [4, 5, 6, 7, 3]);
        // It keeps working: the dropped buffers are posted again, and the next frame
        // is received.
        rx.recycle(held);
        assert_eq!(rx.burst(&mut out), 0);
        assert!(rx.to_post.is_empty());
        while dev.ring(0).pop_avail().is_some() {} // the device takes what is posted
        dev.ring(0).push_used(held.buf, (NET_HDR + 42) as u32);
        assert_eq!(rx.burst(&mut out), 1);
        assert_eq!(
            out[0],
            RxFrame {
                buf: held.buf,
                len: 42
            }
        );
    }

    #[test]
    fn a_lying_device_on_transmit_frees_only_what_is_in_flight() {
        static BODY: [u8; 100] = [7; 100];
        let (mut dev, mut nic) = up(8);
        let (_, tx) = nic.split();
        for _ in 0..4 {
            tx.slot().unwrap()[..54].fill(1);
            tx.post(54, &BODY).unwrap();
        }
        assert!(tx.slot().is_none(), "4 slots for 8 descriptors");
        assert_eq!(tx.post(54, &BODY), Err(TxFull));
        tx.flush();
        assert_eq!(tx.q.doorbells, 1);
        let ring = dev.ring(1);
        ring.push_used(1, 0); // odd id: never a chain head
        ring.push_used(200, 0); // past the ring
        ring.push_used(2, u32::MAX); // slot 1, any length: good
        ring.push_used(2, 0); // slot 1 again: already free
        tx.flush();
        assert_eq!(tx.bad, 3);
        assert_eq!(tx.free, [1]);
        // It keeps working: the freed slot carries a frame the device receives whole.
        tx.slot().unwrap()[..54].fill(9);
        tx.post(54, &BODY).unwrap();
        tx.flush();
        let out = dev.transmitted(1);
        assert_eq!(out.len(), 5, "the four first frames and the new one");
        assert_eq!(out[4][NET_HDR..NET_HDR + 54], [9; 54]);
    }

    #[test]
    fn a_device_that_reports_frames_sent_before_taking_them_loses_no_slot() {
        // It reports slot 0 used over and over without ever taking an entry: each time
        // the driver posts slot 0 again, so the available ring fills with entries the
        // device has not taken. Slot 1 stays in flight; the driver must not write over
        // its entry a lap later, or the device would never see slot 1 again.
        static BODY: [u8; 10] = [7; 10];
        let (mut dev, mut nic) = up(4);
        let (_, tx) = nic.split();
        for _ in 0..2 {
            tx.slot().unwrap()[..54].fill(1);
            tx.post(54, &BODY).unwrap();
        }
        tx.flush();
        let mut posted = 2;
        for _ in 0..8 {
            dev.ring(1).push_used(0, 0); // slot 0, a lie: its entry is not taken
            tx.flush();
            let Some(slot) = tx.slot() else { break };
            slot[..54].fill(2);
            tx.post(54, &BODY).unwrap();
            tx.flush();
            posted += 1;
        }
        // Entries 0 and 1 hold slots 0 and 1; slot 0 is posted again at 2, 3 and 4 (over
        // its own stale entry 0); entry 5 would be entry 1's place: the driver waits.
        assert_eq!(
            posted, 5,
            "posts stop where slot 1's entry would be overwritten"
        );
        assert_eq!(tx.room(), 0);
        // The device now takes every entry it was given and completes them: slot 1 is
        // among them, and both slots come back.
        let sent = dev.transmitted(1);
        assert_eq!(sent.len(), 5);
        tx.flush();
        assert_eq!(tx.room(), 2);
        tx.slot().unwrap()[..54].fill(3);
        tx.post(54, &BODY).unwrap();
        tx.flush();
        let sent = dev.transmitted(1);
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0][NET_HDR..NET_HDR + 54], [3; 54]);
    }

    #[test]
    fn room_counts_free_slots_and_hands_the_device_a_full_ring() {
        // The engine asks before each receive burst (backpressure): room is what `slot`
        // would lend, after reclaiming; a ring filled within one round is published so the
        // device can start on it, and room comes back as the device completes frames.
        let (mut dev, mut nic) = up(8);
        let (_, tx) = nic.split();
        assert_eq!(tx.room(), 4);
        for _ in 0..4 {
            tx.slot().unwrap();
            tx.post(54, &[]).unwrap();
        }
        assert_eq!(tx.q.unpublished(), 4);
        assert_eq!(tx.room(), 0);
        assert_eq!(tx.q.unpublished(), 0, "a full ring is handed to the device");
        let ring = dev.ring(1);
        ring.push_used(0, 0);
        ring.push_used(4, 0);
        assert_eq!(tx.room(), 2);
        tx.slot().unwrap();
        assert_eq!(tx.room(), 2, "a slot lent and not yet posted still counts");
    }

    /// The control queue's VQ_PAIRS_SET against a device on a thread, which reads the
    /// command the driver made available and answers `ack`.
    fn pairs_set_answered_with(ack: u8) -> (Result<(), Error>, Vec<u8>) {
        let mut q = VirtQueue::new::<FakeHal>(8, 4, true).unwrap();
        let mut ring = DeviceRing::new(8, q.addresses());
        let dev = std::thread::spawn(move || {
            let mut spins = 0u64;
            loop {
                if let Some((head, bufs)) = ring.pop_avail() {
                    assert_eq!(bufs.len(), 3);
                    let mut cmd = FakeHal::read(bufs[0].addr, 2);
                    cmd.extend(FakeHal::read(bufs[1].addr, 2));
                    assert!(bufs[2].write && bufs[2].len == 1);
                    FakeHal::write(bufs[2].addr, &[ack]);
                    ring.push_used(head as u32, 1);
                    return cmd;
                }
                spins += 1;
                assert!(spins < 1 << 32, "driver never published");
                std::hint::spin_loop();
            }
        });
        let r = set_pairs::<FakeHal>(&mut q, 3);
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
        assert!(need_event(0, 1, 0));
        assert!(!need_event(5, 3, 2));
        assert!(need_event(5, 7, 5));
        assert!(need_event(0xFFFF, 1, 0xFFFE));
    }
}
