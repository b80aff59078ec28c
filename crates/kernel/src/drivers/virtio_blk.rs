//! virtio-blk (virtio 1.2 §5.2): the bare machine's disk, for the state it keeps across
//! restarts (the ACME client's records). Not a `Nic`: one request queue, one request at a
//! time, polled. A request is three descriptors (virtio 1.2 §5.2.6): the header the
//! device reads (type, sector), the data (read by the device for a write, written by it
//! for a read), and the status byte it writes; the driver waits for the used entry with a
//! bound the caller sets, and checks it against what it submitted (the device is not
//! trusted: another id, a short read or an unwritten status is an error, never data; a
//! request that does not come back resets the device, and its memory goes back to the
//! heap only once the reset is done, else is leaked).
//!
//! Writes are durable once [`VirtioBlk::flush`] returns when the device offers
//! VIRTIO_BLK_F_FLUSH (it is negotiated); without it the device writes through (virtio
//! 1.2 §5.2.6.2: a device without FLUSH has no write cache to flush).
//!
//! Heads up! read virtio 1.2 §5.2 (the block device) before changing the request layout.

use super::hal::{Dma, Hal, Reg, RW};
use super::virtio::{self, negotiate, Transport, Wake, S_ACKNOWLEDGE, S_DRIVER};
use super::virtio::{S_DRIVER_OK, S_FEATURES_OK};
use super::virtqueue::{VirtQueue, F_NEXT, F_WRITE};

/// Bytes of a sector, the unit of every address (whatever the device's block size).
pub const SECTOR: usize = 512;
/// The most bytes one request moves.
pub const MAX_IO: usize = 64 * 1024;

/// virtio's PCI vendor.
pub const VENDOR: u16 = 0x1AF4;
/// virtio-blk's PCI device ids: transitional, and virtio 1.0's (0x1040 + 2).
pub const DEVICES: [u16; 2] = [0x1001, 0x1042];

/// Whether PCI function `dev` is a virtio block device.
pub fn matches(dev: &crate::arch::pci::Device) -> bool {
    dev.vendor == VENDOR && DEVICES.contains(&dev.device)
}

/// VIRTIO_BLK_F_RO: the device is read-only.
const F_RO: u64 = 1 << 5;
/// VIRTIO_BLK_F_FLUSH: the device has a write cache and takes flush requests.
const F_FLUSH: u64 = 1 << 9;

const T_IN: u32 = 0;
const T_OUT: u32 = 1;
const T_FLUSH: u32 = 4;
const STATUS_OK: u8 = 0;
/// The status byte before the device writes it: no status the device may write.
const STATUS_UNSET: u8 = 0xFF;

/// Header at 0 (16 bytes), status at 16, data from 64.
const HEADER: usize = 0;
const STATUS: usize = 16;
const DATA: usize = 64;

/// Why a request failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlkError {
    /// The device could not be brought up.
    Device(virtio::Error),
    /// The device is read-only.
    ReadOnly,
    /// Past the disk's end, or not whole sectors, or more than [`MAX_IO`].
    Range,
    /// The device answered with this status (1: I/O error, 2: unsupported).
    Status(u8),
    /// The device used another request than the one submitted (the disk then stops),
    /// or reported a length or status that cannot be.
    Lied,
    /// The wait gave up before the device answered.
    Timeout,
    /// An earlier request did not come back (a timeout, or another request's entry in
    /// its place): the device was reset (its memory freed only if the reset completed)
    /// and the disk takes no further request.
    Stopped,
}

/// The memory the device is given: the queue, and the one request's header, status and
/// data.
struct Io {
    queue: VirtQueue,
    buf: Dma,
}

/// A virtio block device.
pub struct VirtioBlk<T: Transport> {
    transport: T,
    /// `None` once stopped: the memory was leaked, never handed back (the device may
    /// still write it).
    io: Option<Io>,
    /// Sectors.
    capacity: u64,
    read_only: bool,
    flush: bool,
}

impl<T: Transport> VirtioBlk<T> {
    /// Brings the device up (virtio 1.2 §3.1.1): features (FLUSH if offered; RO read),
    /// queue 0 of at most 8 entries, its capacity read, DRIVER_OK.
    pub fn new<H: Hal>(mut transport: T) -> Result<VirtioBlk<T>, BlkError> {
        let features = negotiate(&mut transport, |offered| offered & (F_RO | F_FLUSH))
            .map_err(BlkError::Device)?;
        let max = transport.queue_max(0);
        if max == 0 {
            transport.set_status(virtio::S_FAILED);
            return Err(BlkError::Device(virtio::Error::Queue(
                0,
                super::virtqueue::QueueError::BadSize(0),
            )));
        }
        // A power of two no larger than the device allows, at least the three
        // descriptors a request takes, at most 8.
        let size = (1u16 << (15 - max.leading_zeros().min(15))).min(8);
        if size < 4 {
            transport.set_status(virtio::S_FAILED);
            return Err(BlkError::Device(virtio::Error::Queue(
                0,
                super::virtqueue::QueueError::BadSize(max),
            )));
        }
        let mut queue = VirtQueue::new::<H>(size, 0, false)
            .map_err(|e| BlkError::Device(virtio::Error::Queue(0, e)))?;
        let notify = transport
            .queue_enable(0, size, queue.addresses(), Wake::None)
            .map_err(BlkError::Device)?;
        queue.attach(notify);
        let buf =
            Dma::new::<H>(DATA + MAX_IO, true).ok_or(BlkError::Device(virtio::Error::NoMemory))?;
        let mut cap = [0u8; 8];
        for (i, b) in cap.iter_mut().enumerate() {
            *b = transport.config8(i);
        }
        transport.set_status(S_ACKNOWLEDGE | S_DRIVER | S_FEATURES_OK | S_DRIVER_OK);
        Ok(VirtioBlk {
            transport,
            io: Some(Io { queue, buf }),
            capacity: u64::from_le_bytes(cap),
            read_only: features & F_RO != 0,
            flush: features & F_FLUSH != 0,
        })
    }

    /// The disk's size in bytes.
    pub fn capacity(&self) -> u64 {
        self.capacity.saturating_mul(SECTOR as u64)
    }

    /// Whether writes are refused.
    pub fn read_only(&self) -> bool {
        self.read_only
    }

    fn check(&self, sector: u64, len: usize) -> Result<(), BlkError> {
        let sectors = (len / SECTOR) as u64;
        if len == 0 || len % SECTOR != 0 || len > MAX_IO {
            return Err(BlkError::Range);
        }
        match sector.checked_add(sectors) {
            Some(end) if end <= self.capacity => Ok(()),
            _ => Err(BlkError::Range),
        }
    }

    /// Submits a request of type `kind` at `sector` with `len` data bytes, and waits for
    /// it: `wait` is called between looks at the used ring (with the transport: a test's
    /// fake device serves the request there) and returns false to give up.
    fn request(
        &mut self,
        kind: u32,
        sector: u64,
        len: usize,
        mut wait: impl FnMut(&mut T) -> bool,
    ) -> Result<(), BlkError> {
        let io = self.io.as_mut().ok_or(BlkError::Stopped)?;
        let mut header = [0u8; 16];
        header[0..4].copy_from_slice(&kind.to_le_bytes());
        header[8..16].copy_from_slice(&sector.to_le_bytes());
        // SAFETY: the device holds no descriptor of this buffer (one request at a time,
        // and none is out: a request that did not come back stopped the disk).
        let h = unsafe { io.buf.bytes_mut(HEADER, 16) };
        h.ok_or(BlkError::Device(virtio::Error::NoMemory))?
            .copy_from_slice(&header);
        let status: Reg<u8, RW> = io
            .buf
            .reg(STATUS)
            .ok_or(BlkError::Device(virtio::Error::NoMemory))?;
        status.write(STATUS_UNSET);
        // Descriptors 0, 1 and 2, reused request after request (one is out at a time).
        let d0 = 0u16;
        io.queue.set_desc(d0, io.buf.paddr(HEADER), 16, F_NEXT, 1);
        if len == 0 {
            io.queue.set_desc(1, io.buf.paddr(STATUS), 1, F_WRITE, 0);
        } else {
            let data_flags = if kind == T_IN {
                F_WRITE | F_NEXT
            } else {
                F_NEXT
            };
            io.queue
                .set_desc(1, io.buf.paddr(DATA), len as u32, data_flags, 2);
            io.queue.set_desc(2, io.buf.paddr(STATUS), 1, F_WRITE, 0);
        }
        io.queue.push_avail(d0);
        io.queue.publish();
        loop {
            let Some(io) = self.io.as_mut() else {
                return Err(BlkError::Stopped);
            };
            if let Some((id, used)) = io.queue.pop_used() {
                if id != u32::from(d0) {
                    // Another request than ours: ours may still be the device's.
                    self.stop();
                    return Err(BlkError::Lied);
                }
                // Ours came back: its buffers are ours again, whatever else is wrong.
                // The Acquire fence in pop_used orders the status read after the entry.
                return match status.read() {
                    // A read reports the data and the status byte, a write or a flush
                    // at least the status byte.
                    STATUS_OK if kind == T_IN && used != len as u32 + 1 => Err(BlkError::Lied),
                    STATUS_OK if used < 1 => Err(BlkError::Lied),
                    STATUS_OK => Ok(()),
                    STATUS_UNSET => Err(BlkError::Lied),
                    other => Err(BlkError::Status(other)),
                };
            }
            if !wait(&mut self.transport) {
                self.stop();
                return Err(BlkError::Timeout);
            }
        }
    }

    /// A request did not come back: the device is reset (virtio 1.2 §2.4: once the reset
    /// reads back as done, the device uses none of the memory it was given, which is then
    /// freed); a device that does not finish its reset keeps the memory for good, leaked
    /// rather than handed back to the heap while it may still write it.
    fn stop(&mut self) {
        self.transport.set_status(0);
        let io = self.io.take();
        for _ in 0..1_000_000 {
            if self.transport.status() == 0 {
                drop(io);
                return;
            }
            core::hint::spin_loop();
        }
        core::mem::forget(io);
    }

    /// Reads `buf.len()` bytes (whole sectors, at most [`MAX_IO`]) from `sector`.
    pub fn read(
        &mut self,
        sector: u64,
        buf: &mut [u8],
        wait: impl FnMut(&mut T) -> bool,
    ) -> Result<(), BlkError> {
        self.check(sector, buf.len())?;
        self.request(T_IN, sector, buf.len(), wait)?;
        let io = self.io.as_ref().ok_or(BlkError::Stopped)?;
        // SAFETY: the request is complete: the device no longer writes the buffer.
        let data = unsafe { io.buf.bytes(DATA, buf.len()) }.ok_or(BlkError::Range)?;
        buf.copy_from_slice(data);
        Ok(())
    }

    /// Writes `data` (whole sectors, at most [`MAX_IO`]) at `sector`.
    pub fn write(
        &mut self,
        sector: u64,
        data: &[u8],
        wait: impl FnMut(&mut T) -> bool,
    ) -> Result<(), BlkError> {
        if self.read_only {
            return Err(BlkError::ReadOnly);
        }
        self.check(sector, data.len())?;
        let io = self.io.as_mut().ok_or(BlkError::Stopped)?;
        // SAFETY: no request is out (requests are synchronous, and one that did not come
        // back stopped the disk).
        let dst = unsafe { io.buf.bytes_mut(DATA, data.len()) }.ok_or(BlkError::Range)?;
        dst.copy_from_slice(data);
        self.request(T_OUT, sector, data.len(), wait)
    }

    /// Makes every completed write durable (a no-op on a device without a write cache).
    pub fn flush(&mut self, wait: impl FnMut(&mut T) -> bool) -> Result<(), BlkError> {
        if !self.flush {
            return Ok(());
        }
        self.request(T_FLUSH, 0, 0, wait)
    }
}

#[cfg(test)]
mod tests;
