//! Host fakes for the drivers' tests: a [`Hal`] over host memory whose device addresses
//! are *not* the CPU's ([`FakeHal`]), and device models that see memory only through
//! those addresses: a virtio-net device behind a fake [`Transport`] ([`FakeVirtio`], its
//! queues as [`DeviceRing`]s) and an 82540EM/82574 register file ([`FakeE1000`]). A test plays
//! the device by calling their step functions (pop a transmitted frame, deliver a
//! received one, or write whatever a lying device would), then looks at the driver.
//!
//! Every address a driver gives a device is checked by [`FakeHal::translate`]: it must
//! lie wholly inside memory the driver got from the Hal (or shared with it). A driver
//! that hands a device a CPU pointer, or a buffer length past its buffer, fails there.

use alloc::vec;
use alloc::vec::Vec;
use core::ptr::NonNull;
use core::sync::atomic::{fence, Ordering};
use std::sync::Mutex;

use super::hal::{Hal, Mmio, PhysAddr, Reg, RO, WO};
use super::virtio::{Error, Notify, Transport, Wake, F_VERSION_1, S_FEATURES_OK};
use super::virtqueue::{F_NEXT, F_WRITE};

/// Device addresses are host addresses plus this: never a valid host pointer.
pub const DMA_OFFSET: u64 = 1 << 56;

/// A region a device may reach: (device address, CPU address, bytes).
static REGIONS: Mutex<Vec<(u64, usize, usize)>> = Mutex::new(Vec::new());

/// The test machine: DMA memory from the host's heap, tracked; device addresses offset.
#[derive(Debug)]
pub struct FakeHal;

// SAFETY: memory comes from the host allocator with the asked size and page alignment,
// is owned by the caller until dealloc, and a device (the fakes) reaches it only through
// `translate`, which maps `paddr + i` back to byte i.
unsafe impl Hal for FakeHal {
    fn dma_alloc(len: usize, zeroed: bool) -> Option<(PhysAddr, NonNull<u8>)> {
        let layout = core::alloc::Layout::from_size_align(len.max(1), 4096).ok()?;
        // SAFETY: non-zero size. Unzeroed memory is filled with a pattern so a driver
        // reading a byte the device did not write sees garbage, not zeros.
        let p = unsafe {
            if zeroed {
                std::alloc::alloc_zeroed(layout)
            } else {
                let p = std::alloc::alloc(layout);
                if !p.is_null() {
                    p.write_bytes(0xA5, len);
                }
                p
            }
        };
        let p = NonNull::new(p)?;
        let pa = p.as_ptr() as u64 + DMA_OFFSET;
        REGIONS.lock().unwrap().push((pa, p.as_ptr() as usize, len));
        Some((pa, p))
    }

    unsafe fn dma_dealloc(paddr: PhysAddr, vaddr: NonNull<u8>, len: usize) {
        REGIONS.lock().unwrap().retain(|r| r.0 != paddr);
        let layout = core::alloc::Layout::from_size_align(len.max(1), 4096).unwrap();
        // SAFETY: from dma_alloc with this layout (the caller's contract).
        unsafe { std::alloc::dealloc(vaddr.as_ptr(), layout) };
    }

    unsafe fn mmio_phys_to_virt(paddr: PhysAddr, _len: usize) -> NonNull<u8> {
        NonNull::new(paddr as usize as *mut u8).unwrap()
    }

    fn dma_addr_static(buf: &'static [u8]) -> PhysAddr {
        let va = buf.as_ptr() as usize;
        let pa = va as u64 + DMA_OFFSET;
        let mut r = REGIONS.lock().unwrap();
        if !r.iter().any(|&(p, _, l)| p == pa && l == buf.len()) {
            r.push((pa, va, buf.len()));
        }
        pa
    }
}

impl FakeHal {
    /// The CPU's pointer for `len` bytes at device address `pa`, if they lie inside one
    /// region the driver got from (or shared through) the Hal.
    pub fn translate(pa: u64, len: usize) -> Option<*mut u8> {
        let r = REGIONS.lock().unwrap();
        r.iter().find_map(|&(p, v, l)| {
            let off = pa.checked_sub(p)? as usize;
            (off.checked_add(len)? <= l).then_some((v + off) as *mut u8)
        })
    }

    /// Reads `len` bytes at device address `pa`.
    ///
    /// # Panics
    ///
    /// If the range is not the driver's: the test fails (the driver pointed a device
    /// outside its memory).
    pub fn read(pa: u64, len: usize) -> Vec<u8> {
        let p = Self::translate(pa, len)
            .unwrap_or_else(|| panic!("device read {len} bytes at {pa:#x}: not DMA memory"));
        // SAFETY: inside a live region (translate).
        (0..len)
            .map(|i| unsafe { p.add(i).read_volatile() })
            .collect()
    }

    /// Writes `bytes` at device address `pa`.
    ///
    /// # Panics
    ///
    /// As [`FakeHal::read`].
    pub fn write(pa: u64, bytes: &[u8]) {
        let p = Self::translate(pa, bytes.len()).unwrap_or_else(|| {
            panic!(
                "device wrote {} bytes at {pa:#x}: not DMA memory",
                bytes.len()
            )
        });
        for (i, &b) in bytes.iter().enumerate() {
            // SAFETY: inside a live region (translate).
            unsafe { p.add(i).write_volatile(b) };
        }
    }

    fn read_u16(pa: u64) -> u16 {
        let b = Self::read(pa, 2);
        u16::from_le_bytes([b[0], b[1]])
    }

    fn write_u16(pa: u64, v: u16) {
        Self::write(pa, &v.to_le_bytes());
    }
}

/// One descriptor of a chain, as the device read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Buf {
    /// Device address.
    pub addr: u64,
    /// Bytes.
    pub len: u32,
    /// Device-writable.
    pub write: bool,
}

/// A split virtqueue seen from the device side: reads what the driver made available,
/// writes used entries. Holds only device addresses (it can run on another thread).
#[derive(Debug, Clone, Copy)]
pub struct DeviceRing {
    /// Entries.
    pub size: u16,
    /// Device addresses of the descriptor table, available ring, used ring.
    pub rings: (u64, u64, u64),
    /// Next available entry to take.
    pub last_avail: u16,
    /// The used index the device published.
    pub used_idx: u16,
}

impl DeviceRing {
    /// The device side of a queue of `size` entries at `rings`.
    pub fn new(size: u16, rings: (u64, u64, u64)) -> DeviceRing {
        DeviceRing {
            size,
            rings,
            last_avail: 0,
            used_idx: 0,
        }
    }

    /// The driver's published available index.
    pub fn avail_idx(&self) -> u16 {
        fence(Ordering::Acquire);
        FakeHal::read_u16(self.rings.1 + 2)
    }

    /// Takes the next available chain: its head and buffers (at most `size`, so a
    /// looping chain ends).
    pub fn pop_avail(&mut self) -> Option<(u16, Vec<Buf>)> {
        if self.avail_idx() == self.last_avail {
            return None;
        }
        let slot = (self.last_avail % self.size) as u64;
        let head = FakeHal::read_u16(self.rings.1 + 4 + 2 * slot);
        self.last_avail = self.last_avail.wrapping_add(1);
        // The device asks to be notified at the next entry (VIRTIO_RING_F_EVENT_IDX).
        FakeHal::write_u16(self.rings.2 + 4 + 8 * self.size as u64, self.last_avail);
        let mut bufs = Vec::new();
        let mut i = head;
        for _ in 0..self.size {
            assert!(i < self.size, "driver chained to descriptor {i}");
            let d = FakeHal::read(self.rings.0 + 16 * i as u64, 16);
            let addr = u64::from_le_bytes(d[0..8].try_into().unwrap());
            let len = u32::from_le_bytes(d[8..12].try_into().unwrap());
            let flags = u16::from_le_bytes([d[12], d[13]]);
            let next = u16::from_le_bytes([d[14], d[15]]);
            // The buffer must be the driver's memory, all of it.
            assert!(
                FakeHal::translate(addr, len as usize).is_some(),
                "descriptor {i}: {len} bytes at {addr:#x} are not DMA memory"
            );
            bufs.push(Buf {
                addr,
                len,
                write: flags & F_WRITE != 0,
            });
            if flags & F_NEXT == 0 {
                break;
            }
            i = next;
        }
        Some((head, bufs))
    }

    /// Publishes used entry (`id`, `len`), whatever they are (an honest device's, or a
    /// lie).
    pub fn push_used(&mut self, id: u32, len: u32) {
        let slot = (self.used_idx % self.size) as u64;
        let mut e = id.to_le_bytes().to_vec();
        e.extend_from_slice(&len.to_le_bytes());
        FakeHal::write(self.rings.2 + 4 + 8 * slot, &e);
        self.used_idx = self.used_idx.wrapping_add(1);
        fence(Ordering::Release);
        FakeHal::write_u16(self.rings.2 + 2, self.used_idx);
    }
}

/// A virtio-blk request's type and the byte offset it names, read from its header (the
/// chain's first buffer: type, reserved, sector).
pub fn blk_request(bufs: &[Buf]) -> (u32, usize) {
    let h = FakeHal::read(bufs[0].addr, 16);
    let kind = u32::from_le_bytes(h[0..4].try_into().unwrap());
    let sector = u64::from_le_bytes(h[8..16].try_into().unwrap()) as usize;
    (kind, sector.saturating_mul(512))
}

/// A virtio-net device model behind a fake transport: feature negotiation, queue
/// set-up as the driver writes it, doorbells in host memory, and the device's side of
/// each queue.
pub struct FakeVirtio {
    /// Features offered.
    pub offered: u64,
    /// Features the driver accepted.
    pub accepted: u64,
    /// Device status as last written.
    pub status: u8,
    /// Largest size per queue (index = queue).
    pub max: Vec<u16>,
    /// Queues the driver enabled: (index, size, device side).
    pub queues: Vec<(u16, u16, DeviceRing)>,
    /// Device configuration: MAC at 0, status at 6, max_virtqueue_pairs at 8.
    config: Box<[u16; 32]>,
    /// One doorbell register per queue (what the driver last wrote).
    bells: Box<[u32; 64]>,
}

use alloc::boxed::Box;

impl FakeVirtio {
    /// A device offering `offered` features, `queues` queues of up to `max` entries, MAC
    /// `mac` and link status `status`.
    pub fn new(offered: u64, queues: usize, max: u16, mac: [u8; 6], status: u16) -> FakeVirtio {
        let mut config = Box::new([0u16; 32]);
        for i in 0..3 {
            config[i] = u16::from_le_bytes([mac[2 * i], mac[2 * i + 1]]);
        }
        config[3] = status;
        config[4] = (queues / 2) as u16;
        FakeVirtio {
            offered,
            accepted: 0,
            status: 0,
            max: vec![max; queues],
            queues: Vec::new(),
            config,
            bells: Box::new([0; 64]),
        }
    }

    /// The device side of queue `index`.
    pub fn ring(&mut self, index: u16) -> &mut DeviceRing {
        &mut self
            .queues
            .iter_mut()
            .find(|q| q.0 == index)
            .expect("queue not enabled")
            .2
    }

    /// The driver's doorbell register of queue `index` (the value last written: the
    /// queue's index once rung).
    pub fn bell(&self, index: u16) -> u32 {
        // SAFETY: the host memory of the register file.
        unsafe { (&raw const self.bells[index as usize]).read_volatile() }
    }

    /// Sets the link status field (VIRTIO_NET_S_LINK_UP = 1).
    pub fn set_link(&mut self, up: bool) {
        // SAFETY: the host memory of the configuration region.
        unsafe { (&raw mut self.config[3]).write_volatile(up as u16) };
    }

    /// Takes every frame the driver made available on transmit queue `q`: its bytes
    /// (virtio-net header included), completing each chain as an honest device does.
    pub fn transmitted(&mut self, q: u16) -> Vec<Vec<u8>> {
        let ring = self.ring(q);
        let mut out = Vec::new();
        while let Some((head, bufs)) = ring.pop_avail() {
            let mut f = Vec::new();
            for b in bufs {
                assert!(!b.write, "transmit buffer marked device-writable");
                f.extend(FakeHal::read(b.addr, b.len as usize));
            }
            ring.push_used(head as u32, 0);
            out.push(f);
        }
        out
    }

    /// Delivers `frame` (behind a zero virtio-net header) into the next receive buffer
    /// of queue `q`; false if the driver posted none.
    pub fn deliver(&mut self, q: u16, frame: &[u8]) -> bool {
        let ring = self.ring(q);
        let Some((head, bufs)) = ring.pop_avail() else {
            return false;
        };
        let b = bufs[0];
        assert!(b.write, "receive buffer not device-writable");
        let mut bytes = vec![0u8; 12];
        bytes.extend_from_slice(frame);
        assert!(
            bytes.len() <= b.len as usize,
            "frame larger than the buffer"
        );
        FakeHal::write(b.addr, &bytes);
        ring.push_used(head as u32, bytes.len() as u32);
        true
    }

    /// A virtio-blk device of `sectors` sectors offering `offered` features (VERSION_1
    /// added), one queue of up to `max` entries.
    pub fn blk(sectors: u64, offered: u64, max: u16) -> FakeVirtio {
        let mut d = FakeVirtio::new(offered | F_VERSION_1, 1, max, [0; 6], 0);
        d.config.fill(0);
        for (i, w) in d.config.iter_mut().take(4).enumerate() {
            *w = (sectors >> (16 * i)) as u16;
        }
        d
    }

    /// Serves every request queue 0 holds against `disk` as an honest virtio-blk device
    /// does (virtio 1.2 §5.2.6): reads, writes, flushes (counted in the return's second
    /// field), anything else unsupported. Returns the requests served and the flushes.
    pub fn serve_blk(&mut self, disk: &mut [u8]) -> (usize, usize) {
        let ring = self.ring(0);
        let (mut served, mut flushes) = (0, 0);
        while let Some((head, bufs)) = ring.pop_avail() {
            assert!(bufs.len() >= 2, "a request is a header, data and a status");
            assert!(
                !bufs[0].write && bufs[0].len == 16,
                "the header is 16 device-read bytes"
            );
            let status = bufs[bufs.len() - 1];
            assert!(
                status.write && status.len == 1,
                "the status is one device-written byte"
            );
            let (kind, at) = blk_request(&bufs);
            let mut written = 1;
            let st = match (kind, &bufs[1..bufs.len() - 1]) {
                (0, [data]) if data.write => {
                    match disk.get(at..at.saturating_add(data.len as usize)) {
                        Some(src) => {
                            FakeHal::write(data.addr, src);
                            written += data.len;
                            0
                        }
                        None => 1,
                    }
                }
                (1, [data]) if !data.write => {
                    match disk.get_mut(at..at.saturating_add(data.len as usize)) {
                        Some(dst) => {
                            dst.copy_from_slice(&FakeHal::read(data.addr, data.len as usize));
                            0
                        }
                        None => 1,
                    }
                }
                (4, []) => {
                    flushes += 1;
                    0
                }
                _ => 2,
            };
            FakeHal::write(status.addr, &[st]);
            ring.push_used(head as u32, written);
            served += 1;
        }
        (served, flushes)
    }

    fn bells_mmio(&self) -> Mmio {
        // SAFETY: the boxed register file lives as long as self, which outlives the
        // driver in every test.
        unsafe { Mmio::from_ptr(NonNull::from(&*self.bells).cast(), 256) }
    }

    fn config_mmio(&self) -> Mmio {
        // SAFETY: as bells_mmio.
        unsafe { Mmio::from_ptr(NonNull::from(&*self.config).cast(), 64) }
    }
}

impl Transport for FakeVirtio {
    fn device_features(&mut self) -> u64 {
        self.offered
    }

    fn set_driver_features(&mut self, f: u64) {
        assert_eq!(
            f & !self.offered,
            0,
            "driver accepted a feature not offered"
        );
        self.accepted = f;
    }

    fn status(&mut self) -> u8 {
        self.status
    }

    fn set_status(&mut self, s: u8) {
        if s == 0 {
            self.queues.clear();
            self.accepted = 0;
        }
        if s & S_FEATURES_OK != 0 {
            assert_ne!(self.accepted, 0, "FEATURES_OK before features");
        }
        self.status = s;
    }

    fn queue_max(&mut self, q: u16) -> u16 {
        self.max.get(q as usize).copied().unwrap_or(0)
    }

    fn queue_enable(
        &mut self,
        q: u16,
        size: u16,
        rings: (u64, u64, u64),
        _wake: Wake,
    ) -> Result<Notify, Error> {
        assert!(size <= self.queue_max(q) && size.is_power_of_two());
        // The rings must be DMA memory of the sizes virtio 1.2 §2.7 gives.
        let n = size as u64;
        assert!(FakeHal::translate(rings.0, 16 * size as usize).is_some());
        assert!(FakeHal::translate(rings.1, (6 + 2 * n) as usize).is_some());
        assert!(FakeHal::translate(rings.2, (6 + 8 * n) as usize).is_some());
        self.queues.push((q, size, DeviceRing::new(size, rings)));
        let bell: Reg<u32, WO> = self.bells_mmio().reg(4 * q as usize).unwrap();
        Ok(Notify::U32(bell))
    }

    fn config_len(&self) -> usize {
        64
    }

    fn config8(&self, off: usize) -> u8 {
        self.config_mmio().reg::<u8, RO>(off).map_or(0, Reg::read)
    }

    fn config_u16(&self, off: usize) -> Option<Reg<u16, RO>> {
        self.config_mmio().reg(off)
    }

    fn wake_for(&mut self, _k: u16, _apic: u32) -> Wake {
        Wake::None
    }
}

/// An 82540EM model: a register file in host memory (the driver's view of BAR 0) and
/// the device's side of both rings, reading the ring registers the driver wrote.
pub struct FakeE1000 {
    regs: Box<[u32]>,
    /// The device's receive head (RDH as the device keeps it).
    pub rdh: u32,
    /// The device's transmit head.
    pub tdh: u32,
    /// Receive and transmit heads of queues 1 and on (an 82574's second pair, an 82576's
    /// others; entry 0 unused: `rdh`, `tdh`).
    pub heads1: [(u32, u32); 4],
    /// Context descriptors met on transmit (16 bytes each), in order.
    pub contexts: Vec<Vec<u8>>,
    /// Per frame transmitted: the last data descriptor's POPTS and whether it asked for
    /// segmentation (TSE).
    pub options: Vec<(u8, bool)>,
    /// Per frame transmitted as advanced data descriptors (an 82576's): the PAYLEN of
    /// its last one.
    pub paylens: Vec<u32>,
}

impl Default for FakeE1000 {
    fn default() -> Self {
        FakeE1000 {
            regs: vec![0u32; super::e1000::REGION / 4].into_boxed_slice(),
            rdh: 0,
            tdh: 0,
            heads1: [(0, 0); 4],
            contexts: Vec::new(),
            options: Vec::new(),
            paylens: Vec::new(),
        }
    }
}

impl FakeE1000 {
    /// The register region, for the driver.
    pub fn mmio(&mut self) -> Mmio {
        // SAFETY: the boxed register file lives as long as self, which outlives the
        // driver in every test.
        unsafe { Mmio::from_ptr(NonNull::from(&mut *self.regs).cast(), super::e1000::REGION) }
    }

    /// Runs `f` (a driver's bring-up on these registers) while a thread plays the reset:
    /// it clears CTRL.RST whenever the driver sets it, as the device does when done.
    pub fn resetting<T>(&mut self, f: impl FnOnce(Mmio) -> T) -> T {
        use std::sync::atomic::AtomicBool;
        use std::sync::Arc;
        let m = self.mmio();
        let ctrl = m.reg::<u32, super::hal::RW>(0).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let done = stop.clone();
        // The register file outlives the thread (joined before this returns).
        let reset = std::thread::spawn(move || {
            while !done.load(Ordering::Acquire) {
                let v = ctrl.read();
                if v & 1 << 26 != 0 {
                    ctrl.write(v & !(1 << 26));
                }
                std::hint::spin_loop();
            }
        });
        let out = f(m);
        stop.store(true, Ordering::Release);
        reset.join().unwrap();
        out
    }

    /// `bring_up` run while a thread plays the reset ([`FakeE1000::resetting`]), again
    /// while it answers NoReset (the thread had not run yet), at most 1000 times.
    pub fn bring_up<N>(
        &mut self,
        mut bring_up: impl FnMut(&Mmio) -> Result<N, super::e1000::Error>,
    ) -> Result<N, super::e1000::Error> {
        self.resetting(|m| {
            let mut nic = Err(super::e1000::Error::NoReset);
            for _ in 0..1000 {
                nic = bring_up(&m);
                if nic.as_ref().err() != Some(&super::e1000::Error::NoReset) {
                    break;
                }
            }
            nic
        })
    }

    /// Register at byte offset `off` as the driver last wrote it.
    pub fn reg(&self, off: usize) -> u32 {
        // SAFETY: host memory of the register file; off < REGION.
        unsafe { (&raw const self.regs[off / 4]).read_volatile() }
    }

    /// Sets register `off` as the device would.
    pub fn set_reg(&mut self, off: usize, v: u32) {
        // SAFETY: as reg.
        unsafe { (&raw mut self.regs[off / 4]).write_volatile(v) };
    }

    /// (device address, descriptors) of the ring whose registers start at `base`
    /// (RDBAL or TDBAL).
    pub fn ring_at(&self, base: usize) -> (u64, u32) {
        let at = self.reg(base) as u64 | (self.reg(base + 4) as u64) << 32;
        (at, self.reg(base + 8) / 16)
    }

    /// Receive descriptor `i` as 16 bytes, written back with `len`, `status`, `errors`
    /// (any values: a lying device's too). Returns the buffer address the driver put in.
    pub fn write_back_rx(&mut self, i: u32, len: u16, status: u8, errors: u8) -> u64 {
        self.write_back_rx_q(0, i, len, status, errors)
    }

    /// Whether the driver asked for extended receive descriptors (an 82574's RFCTL.EXTEN).
    /// Or advanced one-buffer ones (an 82576's SRRCTL.DESCTYPE 001, same write-back).
    pub fn extended(&self) -> bool {
        self.reg(0x5008) & 1 << 15 != 0 || self.reg(0x280C) >> 25 & 7 == 1
    }

    /// As [`FakeE1000::write_back_rx`], on receive queue `q` (its ring registers 0x100 × q
    /// on), in the layout the driver chose: legacy, or extended, where the write-back
    /// overwrites the buffer address with the RSS fields (zero here) as QEMU's does.
    pub fn write_back_rx_q(&mut self, q: usize, i: u32, len: u16, status: u8, errors: u8) -> u64 {
        let (ring, n) = self.ring_at(0x2800 + 0x100 * q);
        let at = ring + 16 * (i % n) as u64;
        let addr = u64::from_le_bytes(FakeHal::read(at, 8).try_into().unwrap());
        if self.extended() {
            FakeHal::write(at, &[0; 8]);
            FakeHal::write(at + 9, &[0, 0, errors]);
            FakeHal::write(at + 12, &len.to_le_bytes());
            fence(Ordering::Release);
            FakeHal::write(at + 8, &[status]);
        } else {
            FakeHal::write(at + 8, &len.to_le_bytes());
            FakeHal::write(at + 13, &[errors]);
            fence(Ordering::Release);
            FakeHal::write(at + 12, &[status]);
        }
        addr
    }

    /// Delivers `frame` as an honest device does: into the buffer of the descriptor at
    /// the device's head, if the driver's tail leaves it one (false otherwise).
    pub fn deliver(&mut self, frame: &[u8]) -> bool {
        self.deliver_q(0, frame)
    }

    /// As [`FakeE1000::deliver`], on receive queue `q`.
    pub fn deliver_q(&mut self, q: usize, frame: &[u8]) -> bool {
        let (ring, n) = self.ring_at(0x2800 + 0x100 * q);
        let head = if q == 0 { self.rdh } else { self.heads1[q].0 };
        if head == self.reg(super::e1000::RDT + 0x100 * q) {
            return false;
        }
        let i = head;
        let addr = u64::from_le_bytes(FakeHal::read(ring + 16 * i as u64, 8).try_into().unwrap());
        FakeHal::write(addr, frame); // panics if the buffer is not the driver's
        assert!(
            FakeHal::translate(addr, 2048).is_some(),
            "buffer under 2 KiB"
        );
        self.write_back_rx_q(q, i, frame.len() as u16, 0x03, 0);
        if q == 0 {
            self.rdh = (i + 1) % n;
        } else {
            self.heads1[q].0 = (i + 1) % n;
        }
        true
    }

    /// Sends every frame between the device's transmit head and the driver's tail, as an
    /// honest device does (DD written back where the driver asked, RS): their bytes.
    pub fn transmitted(&mut self) -> Vec<Vec<u8>> {
        self.transmitted_q(0)
    }

    /// As [`FakeE1000::transmitted`], on transmit queue `q`.
    pub fn transmitted_q(&mut self, q: usize) -> Vec<Vec<u8>> {
        let (ring, n) = self.ring_at(0x3800 + 0x100 * q);
        let tail = self.reg(super::e1000::TDT + 0x100 * q);
        let mut out = Vec::new();
        let mut frame = Vec::new();
        let mut head = if q == 0 { self.tdh } else { self.heads1[q].1 };
        while head != tail {
            let at = ring + 16 * head as u64;
            let d = FakeHal::read(at, 16);
            let addr = u64::from_le_bytes(d[0..8].try_into().unwrap());
            let cmd = d[11];
            // Extended (DEXT): a context descriptor (DTYP 0; an 82576's advanced one: 2)
            // carries no buffer; a data one a 20-bit length (DTYP 1; advanced, DTYP 3: 16
            // bits). Legacy: a 16-bit length.
            let dtyp = d[10] >> 4;
            let len = if cmd & 0x20 != 0 {
                if dtyp == 0 || dtyp == 2 {
                    self.contexts.push(d);
                    head = (head + 1) % n;
                    continue;
                }
                let len = u32::from_le_bytes([d[8], d[9], d[10], 0]);
                (len & if dtyp == 3 { 0xFFFF } else { 0xF_FFFF }) as usize
            } else {
                u16::from_le_bytes([d[8], d[9]]) as usize
            };
            frame.extend(FakeHal::read(addr, len));
            if cmd & 8 != 0 {
                FakeHal::write(at + 12, &[1]); // DD
            }
            if cmd & 1 != 0 {
                out.push(core::mem::take(&mut frame));
                // POPTS (an advanced descriptor's: bits 8-13 of the offload field) and TSE
                // (the 82574's command bit 2, an advanced descriptor's bit 7).
                let tse = if dtyp == 3 { 0x80 } else { 0x04 };
                let popts = if dtyp == 3 { d[13] & 0x3F } else { d[13] };
                self.options
                    .push((popts, cmd & 0x20 != 0 && cmd & tse != 0));
                if cmd & 0x20 != 0 && dtyp == 3 {
                    self.paylens
                        .push(u32::from_le_bytes([d[12], d[13], d[14], d[15]]) >> 14);
                }
            }
            head = (head + 1) % n;
        }
        if q == 0 {
            self.tdh = head;
        } else {
            self.heads1[q].1 = head;
        }
        out
    }
}

/// A vmxnet3: its two register files (BAR 0, BAR 1) and the device's side of the queues,
/// found through the shared area whose address the driver wrote to DSAL/DSAH.
pub struct FakeVmxnet3 {
    pt: Box<[u32]>,
    vd: Box<[u32]>,
    /// Answer to GET_LINK (bit 0: up).
    pub link: std::sync::Arc<std::sync::atomic::AtomicU32>,
    /// Receive ring 0, receive completions, transmit ring, transmit completions: (next
    /// index, generation).
    pub rx: (u32, u32),
    /// See `rx`.
    pub rxc: (u32, u32),
    /// See `rx`.
    pub tx: (u32, u32),
    /// See `rx`.
    pub txc: (u32, u32),
    /// Words 2 and 3 of the first descriptor of every frame `transmitted` returned, in
    /// order (the offload fields: `msscof`, `hlen`, offload mode).
    pub tx_first: Vec<[u32; 2]>,
}

/// What the fake leaves in TXPROD once it has taken a doorbell: the driver writes ring
/// indices, never this, so another doorbell (even of the same index) shows.
const TXPROD_TAKEN: u32 = u32::MAX;

impl Default for FakeVmxnet3 {
    fn default() -> Self {
        let mut pt = alloc::vec![0; 1024].into_boxed_slice();
        pt[0x600 / 4] = TXPROD_TAKEN;
        FakeVmxnet3 {
            pt,
            vd: alloc::vec![0; 1024].into_boxed_slice(),
            link: std::sync::Arc::new(std::sync::atomic::AtomicU32::new(1)),
            rx: (0, 1),
            rxc: (0, 1),
            tx: (0, 1),
            txc: (0, 1),
            tx_first: Vec::new(),
        }
    }
}

impl FakeVmxnet3 {
    /// BAR 0 and BAR 1, for the driver.
    pub fn mmio(&mut self) -> (Mmio, Mmio) {
        // SAFETY: the boxed register files live as long as self, which outlives the
        // driver in every test.
        unsafe {
            (
                Mmio::from_ptr(NonNull::from(&mut *self.pt).cast(), 4096),
                Mmio::from_ptr(NonNull::from(&mut *self.vd).cast(), 4096),
            )
        }
    }

    /// Runs `f` (bring-up, link readings) while a thread answers commands: ACTIVATE with
    /// `activate`, GET_LINK with `link`.
    pub fn answering<T>(&mut self, activate: u32, f: impl FnOnce(Mmio, Mmio) -> T) -> T {
        use std::sync::atomic::AtomicBool;
        use std::sync::Arc;
        let (pt, vd) = self.mmio();
        let cmd = vd.reg::<u32, super::hal::RW>(0x20).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let (done, link) = (stop.clone(), self.link.clone());
        let t = std::thread::spawn(move || {
            while !done.load(Ordering::Acquire) {
                match cmd.read() {
                    0xCAFE_0000 => cmd.write(activate),
                    0xF00D_0002 => cmd.write(link.load(Ordering::Acquire)),
                    _ => {}
                }
                std::hint::spin_loop();
            }
        });
        let out = f(pt, vd);
        stop.store(true, Ordering::Release);
        t.join().unwrap();
        out
    }

    /// BAR 0 (`bar` 0) or BAR 1 register at `off`, as the driver last wrote it.
    pub fn reg(&self, bar: usize, off: usize) -> u32 {
        let r = if bar == 0 { &self.pt } else { &self.vd };
        // SAFETY: host memory of the register file.
        unsafe { (&raw const r[off / 4]).read_volatile() }
    }

    /// The shared area's device address.
    pub fn shared(&self) -> u64 {
        self.reg(1, 0x10) as u64 | (self.reg(1, 0x18) as u64) << 32
    }

    fn u32_at(pa: u64) -> u32 {
        let b = FakeHal::read(pa, 4);
        u32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }

    fn u64_at(pa: u64) -> u64 {
        Self::u32_at(pa) as u64 | (Self::u32_at(pa + 4) as u64) << 32
    }

    /// Queue descriptor field: transmit queue (`rx` false) or receive queue's, at `off`.
    pub fn queue_u64(&self, rx: bool, off: u64) -> u64 {
        let qd = Self::u64_at(self.shared() + 40);
        Self::u64_at(qd + if rx { 256 } else { 0 } + off)
    }

    /// As `queue_u64`, 32 bits.
    pub fn queue_u32(&self, rx: bool, off: u64) -> u32 {
        let qd = Self::u64_at(self.shared() + 40);
        Self::u32_at(qd + if rx { 256 } else { 0 } + off)
    }

    fn advance(p: &mut (u32, u32), size: u32) {
        p.0 += 1;
        if p.0 == size {
            p.0 = 0;
            p.1 ^= 1;
        }
    }

    /// Writes a receive completion (the four words, the generation bit set to the
    /// completion ring's, written last) whatever it says: a lying device's step.
    pub fn complete_rx(&mut self, w: [u32; 4]) {
        let (base, size) = (self.queue_u64(true, 32), self.queue_u32(true, 64));
        let pa = base + 16 * self.rxc.0 as u64;
        let mut b = Vec::new();
        for x in &w[..3] {
            b.extend_from_slice(&x.to_le_bytes());
        }
        FakeHal::write(pa, &b);
        FakeHal::write(
            pa + 12,
            &(w[3] & !(1 << 31) | self.rxc.1 << 31).to_le_bytes(),
        );
        Self::advance(&mut self.rxc, size);
    }

    /// Writes the statistics GET_STATS would (`tx`, `rx`: the ten UPT1 counters of the
    /// transmit and receive queue, in `UPT1_TxStats`/`UPT1_RxStats` order), whatever they
    /// say.
    pub fn write_stats(&mut self, tx: [u64; 10], rx: [u64; 10]) {
        let qd = Self::u64_at(self.shared() + 40);
        for (base, v) in [(qd + 88, tx), (qd + 256 + 88, rx)] {
            let b: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            FakeHal::write(base, &b);
        }
    }

    /// Sets a BAR 1 register (a test clearing CMD to see whether a command is written).
    pub fn set_vd(&mut self, off: usize, v: u32) {
        let r = &raw mut self.vd[off / 4];
        // SAFETY: host memory of the register file.
        unsafe { r.write_volatile(v) };
    }

    /// Delivers `frame` as the device would: into the next ring 0 descriptor if it is the
    /// device's (its generation), then a completion. False when the ring is empty.
    pub fn deliver(&mut self, frame: &[u8]) -> bool {
        self.deliver_marked(frame, 0, 0)
    }

    /// As `deliver`, the completion's word 0 with `w0` set too and word 3 `w3` (the
    /// checksum bits).
    pub fn deliver_marked(&mut self, frame: &[u8], w0: u32, w3: u32) -> bool {
        let (base, size) = (self.queue_u64(true, 16), self.queue_u32(true, 56));
        let pa = base + 16 * self.rx.0 as u64;
        let w2 = Self::u32_at(pa + 8);
        if w2 >> 31 != self.rx.1 {
            return false;
        }
        let (addr, len) = (Self::u64_at(pa), (w2 & 0x3FFF) as usize);
        assert!(frame.len() <= len, "frame larger than the posted buffer");
        FakeHal::write(addr, frame);
        let idx = self.rx.0;
        Self::advance(&mut self.rx, size);
        self.complete_rx([idx | 3 << 14 | w0, 0, frame.len() as u32, w3]);
        true
    }

    /// Every frame the driver handed over (descriptors of the device's generation, up to
    /// an end of packet), each completed, if it rang TXPROD since the last call: as QEMU's,
    /// which reads the ring on a doorbell only, whatever index it carries.
    pub fn transmitted(&mut self) -> Vec<Vec<u8>> {
        let prod = &raw mut self.pt[0x600 / 4];
        // SAFETY: host memory of the register file, which the driver writes through its
        // own pointer: read and written volatile.
        if unsafe { prod.read_volatile() } == TXPROD_TAKEN {
            return Vec::new();
        }
        // SAFETY: as above.
        unsafe { prod.write_volatile(TXPROD_TAKEN) };
        let (base, size) = (self.queue_u64(false, 16), self.queue_u32(false, 56));
        let (cbase, csize) = (self.queue_u64(false, 32), self.queue_u32(false, 64));
        let mut out = Vec::new();
        let mut frame = Vec::new();
        let mut at = self.tx;
        loop {
            let pa = base + 16 * at.0 as u64;
            let (w2, w3) = (Self::u32_at(pa + 8), Self::u32_at(pa + 12));
            if (w2 >> 14) & 1 != at.1 {
                return out;
            }
            if frame.is_empty() {
                self.tx_first.push([w2, w3]);
            }
            let len = match w2 & 0x3FFF {
                0 => 0x4000,
                n => n as usize,
            };
            frame.extend(FakeHal::read(Self::u64_at(pa), len));
            let idx = at.0;
            Self::advance(&mut at, size);
            if w3 & 1 << 12 != 0 {
                out.push(core::mem::take(&mut frame));
                self.tx = at;
                let c = cbase + 16 * self.txc.0 as u64;
                FakeHal::write(c, &idx.to_le_bytes());
                FakeHal::write(c + 12, &(self.txc.1 << 31).to_le_bytes());
                Self::advance(&mut self.txc, csize);
            }
        }
    }
}
