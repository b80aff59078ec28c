//! A split virtqueue (virtio 1.2 §2.7), driver side, polled.
//!
//! Ref: virtio-drivers src/queue.rs (shadow descriptors, fence then index store) and
//! Linux drivers/virtio/virtio_ring.c (event index arithmetic).
//!
//! - Its memory comes from the driver's [`Hal`] (the device is given DMA addresses, the
//!   CPU uses its own pointers); the rings are reached through typed views
//!   ([`super::hal::Reg`], [`super::hal::Array`]), indexed modulo the size, so no index
//!   (the driver's or the device's) reaches outside the queue's memory.
//! - The driver writes descriptors and the available ring; it never reads them back
//!   (the callers keep their own shadow state of what each descriptor holds).
//! - The used ring is device memory and untrusted: [`VirtQueue::pop_used`] returns raw
//!   (id, len) pairs that callers check against their shadow state before use.
//! - The available index is published by [`VirtQueue::publish`] once per batch, and the
//!   device is notified only when its `avail_event` asks for it
//!   (VIRTIO_RING_F_EVENT_IDX), so a busy device costs no doorbell at all.
//! - Interrupts are off while the core polls: `used_event` is kept half the index space
//!   ahead. A core about to halt [`arm`](VirtQueue::arm)s its receive queue (`used_event`
//!   = the next entry it will read) and re-checks the used ring; the next poll turns
//!   interrupts off again.

use core::sync::atomic::{fence, Ordering};

use super::hal::{Array, Dma, Hal, PhysAddr, Reg, Value, RO, WO};
use super::virtio::Notify;

/// Descriptor continues in `next`.
pub const F_NEXT: u16 = 1;
/// Device writes this buffer.
pub const F_WRITE: u16 = 2;

/// A descriptor (virtio 1.2 §2.7.5), written whole by the driver, never read back.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Desc {
    /// The buffer's DMA address.
    pub addr: u64,
    /// Its length.
    pub len: u32,
    /// [`F_NEXT`], [`F_WRITE`].
    pub flags: u16,
    /// The next descriptor of the chain (with [`F_NEXT`]).
    pub next: u16,
}
const _: () = assert!(core::mem::size_of::<Desc>() == 16);

// SAFETY: plain integers: any bit pattern is a Desc.
unsafe impl Value for Desc {
    #[inline(always)]
    fn le_to_cpu(self) -> Self {
        Desc {
            addr: u64::from_le(self.addr),
            len: u32::from_le(self.len),
            flags: u16::from_le(self.flags),
            next: u16::from_le(self.next),
        }
    }
    #[inline(always)]
    fn cpu_to_le(self) -> Self {
        self.le_to_cpu() // the same swap both ways
    }
}

/// A used-ring entry (virtio 1.2 §2.7.8): device data, read whole, checked by the caller.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Used {
    /// The head of the descriptor chain the device says it used.
    pub id: u32,
    /// Bytes it says it wrote.
    pub len: u32,
}
const _: () = assert!(core::mem::size_of::<Used>() == 8);

// SAFETY: plain integers.
unsafe impl Value for Used {
    #[inline(always)]
    fn le_to_cpu(self) -> Self {
        Used {
            id: u32::from_le(self.id),
            len: u32::from_le(self.len),
        }
    }
    #[inline(always)]
    fn cpu_to_le(self) -> Self {
        self.le_to_cpu()
    }
}

/// The memory of one split virtqueue and the driver's indices. Ring fields are typed by
/// who writes them: the driver's (descriptors, available ring, `used_event`) write-only,
/// the device's (used ring, `avail_event`) read-only.
pub struct VirtQueue {
    size: u16,
    mem: Dma,
    desc: Array<Desc, WO>,
    avail_flags: Reg<u16, WO>,
    avail_idx: Reg<u16, WO>,
    avail_ring: Array<u16, WO>,
    used_event: Reg<u16, WO>,
    used_flags: Reg<u16, RO>,
    used_idx: Reg<u16, RO>,
    used_ring: Array<Used, RO>,
    avail_event: Reg<u16, RO>,
    /// The doorbell, once the device has the queue ([`VirtQueue::attach`]).
    notify: Option<Notify>,
    index: u16,
    avail_idx_shadow: u16,
    published: u16,
    last_used: u16,
    event_idx: bool,
    /// Notifications written.
    pub doorbells: u64,
    /// Publishes that needed no notification.
    pub suppressed: u64,
}

/// Why a queue could not be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueError {
    /// The size is 0, not a power of two, or above 32768.
    BadSize(u16),
    /// The heap is exhausted.
    NoMemory,
}

impl VirtQueue {
    /// Allocates a zeroed queue of `size` entries from `H`; the device learns its
    /// addresses ([`VirtQueue::addresses`]) from the transport, and its doorbell is given
    /// by [`VirtQueue::attach`] (a publish before that rings nothing).
    pub fn new<H: Hal>(size: u16, index: u16, event_idx: bool) -> Result<VirtQueue, QueueError> {
        if size == 0 || !size.is_power_of_two() || size > 32768 {
            return Err(QueueError::BadSize(size));
        }
        let n = size as usize;
        let (avail_off, used_off, total) = Self::layout(n);
        let mem = Dma::new::<H>(total, true).ok_or(QueueError::NoMemory)?;
        // The views fit by construction of the layout; None would be an allocator that
        // broke its alignment promise.
        let bad = QueueError::NoMemory;
        let q = VirtQueue {
            size,
            desc: mem.array(0, n).ok_or(bad)?,
            avail_flags: mem.reg(avail_off).ok_or(bad)?,
            avail_idx: mem.reg(avail_off + 2).ok_or(bad)?,
            avail_ring: mem.array(avail_off + 4, n).ok_or(bad)?,
            used_event: mem.reg(avail_off + 4 + 2 * n).ok_or(bad)?,
            used_flags: mem.reg(used_off).ok_or(bad)?,
            used_idx: mem.reg(used_off + 2).ok_or(bad)?,
            used_ring: mem.array(used_off + 4, n).ok_or(bad)?,
            avail_event: mem.reg(used_off + 4 + 8 * n).ok_or(bad)?,
            mem,
            notify: None,
            index,
            avail_idx_shadow: 0,
            published: 0,
            last_used: 0,
            event_idx,
            doorbells: 0,
            suppressed: 0,
        };
        q.keep_interrupts_off();
        Ok(q)
    }

    /// Gives the queue its doorbell (the transport's notification register for it).
    pub fn attach(&mut self, notify: Notify) {
        self.notify = Some(notify);
    }

    /// (avail offset, used offset, total bytes) for `n` entries.
    fn layout(n: usize) -> (usize, usize, usize) {
        let avail_off = 16 * n;
        let used_off = (avail_off + 6 + 2 * n + 63) & !63;
        let total = used_off + 6 + 8 * n;
        (avail_off, used_off, total)
    }

    /// Entries.
    pub fn size(&self) -> u16 {
        self.size
    }

    /// The queue's index on its device.
    pub fn index(&self) -> u16 {
        self.index
    }

    /// DMA addresses of the descriptor table, available ring and used ring.
    pub fn addresses(&self) -> (PhysAddr, PhysAddr, PhysAddr) {
        let (avail_off, used_off, _) = Self::layout(self.size as usize);
        (
            self.mem.paddr(0),
            self.mem.paddr(avail_off),
            self.mem.paddr(used_off),
        )
    }

    /// Writes descriptor `i` (taken modulo the size).
    #[inline]
    pub fn set_desc(&mut self, i: u16, addr: PhysAddr, len: u32, flags: u16, next: u16) {
        self.desc.at(i as usize).write(Desc {
            addr,
            len,
            flags,
            next,
        });
    }

    /// Queues descriptor chain head `id` in the available ring (visible after `publish`).
    #[inline]
    pub fn push_avail(&mut self, id: u16) {
        self.avail_ring.at(self.avail_idx_shadow as usize).write(id);
        self.avail_idx_shadow = self.avail_idx_shadow.wrapping_add(1);
    }

    /// The available-ring index the next `push_avail` takes (its entry is at this
    /// index modulo the size).
    #[inline]
    pub fn next_avail(&self) -> u16 {
        self.avail_idx_shadow
    }

    /// Entries pushed but not yet published.
    pub fn unpublished(&self) -> u16 {
        self.avail_idx_shadow.wrapping_sub(self.published)
    }

    /// Makes pushed entries visible and notifies the device if it asked to be. Returns
    /// whether a doorbell was written.
    pub fn publish(&mut self) -> bool {
        if self.avail_idx_shadow == self.published {
            return false;
        }
        let old = self.published;
        let new = self.avail_idx_shadow;
        // Descriptors and ring entries before the index (virtio 1.2 §2.7.13).
        fence(Ordering::Release);
        self.avail_idx.write(new);
        self.published = new;
        // The index store before reading avail_event (Linux: virtio_mb).
        fence(Ordering::SeqCst);
        let kick = if self.event_idx {
            need_event(self.avail_event.read(), new, old)
        } else {
            self.used_flags.read() & 1 == 0 // VIRTQ_USED_F_NO_NOTIFY
        };
        if let (true, Some(n)) = (kick, &self.notify) {
            n.ring(self.index);
            self.doorbells += 1;
        } else {
            self.suppressed += 1;
        }
        kick
    }

    /// The next used entry as (id, len), unchecked: device data.
    #[inline]
    pub fn pop_used(&mut self) -> Option<(u32, u32)> {
        if self.used_idx.read() == self.last_used {
            return None;
        }
        // Read the entry only after seeing the index (virtio 1.2 §2.7.14).
        fence(Ordering::Acquire);
        let e = self.used_ring.at(self.last_used as usize).read();
        self.last_used = self.last_used.wrapping_add(1);
        Some((e.id, e.len))
    }

    /// Asks the device to interrupt when it next uses an entry (`used_event` = the next
    /// entry to read; without event indices, the no-interrupt flag cleared), then looks
    /// again: returns false if an entry is already there (do not halt, poll).
    pub fn arm(&self) -> bool {
        self.used_event.write(self.last_used);
        if !self.event_idx {
            self.avail_flags.write(0);
        }
        // The request is visible before the used index is read again (virtio 1.2
        // §2.7.10: a used entry published meanwhile is seen, or it interrupts).
        fence(Ordering::SeqCst);
        self.used_idx.read() == self.last_used
    }

    /// Keeps `used_event` half the index space ahead so the device does not interrupt.
    pub fn keep_interrupts_off(&self) {
        self.used_event.write(self.last_used.wrapping_add(0x8000));
        if !self.event_idx {
            self.avail_flags.write(1); // VIRTQ_AVAIL_F_NO_INTERRUPT
        }
    }
}

/// Linux `vring_need_event`: whether the device asked to be notified for an index move
/// from `old` to `new` when its event index is `event`.
pub fn need_event(event: u16, new: u16, old: u16) -> bool {
    new.wrapping_sub(event).wrapping_sub(1) < new.wrapping_sub(old)
}
