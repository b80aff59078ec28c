//! A split virtqueue (virtio 1.2 §2.7), driver side, polled.
//!
//! Ref: virtio-drivers src/queue.rs (shadow descriptors, fence then index store) and
//! Linux drivers/virtio/virtio_ring.c (event index arithmetic).
//!
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

use alloc::alloc::{alloc_zeroed, Layout};

use super::virtio::Notify;
use core::ptr::{read_volatile, write_volatile};
use core::sync::atomic::{fence, Ordering};

/// Descriptor continues in `next`.
pub const F_NEXT: u16 = 1;
/// Device writes this buffer.
pub const F_WRITE: u16 = 2;

#[repr(C)]
struct Desc {
    addr: u64,
    len: u32,
    flags: u16,
    next: u16,
}
const _: () = assert!(core::mem::size_of::<Desc>() == 16);

/// The memory of one split virtqueue and the driver's indices.
pub struct VirtQueue {
    size: u16,
    desc: *mut Desc,
    /// flags, idx, ring[size], used_event
    avail: *mut u16,
    /// flags, idx, ring[size] of (id u32, len u32), avail_event
    used: *mut u8,
    /// The doorbell, once the device has the queue ([`VirtQueue::attach`]).
    notify: Option<Notify>,
    index: u16,
    avail_idx: u16,
    published: u16,
    last_used: u16,
    event_idx: bool,
    /// Notifications written.
    pub doorbells: u64,
    /// Publishes that needed no notification.
    pub suppressed: u64,
}

// SAFETY: a VirtQueue owns its ring memory exclusively, and its notification register is
// this queue's own (each queue has its own offset); moving the value to another core moves
// that ownership, and the device is told about it only through these pointers.
unsafe impl Send for VirtQueue {}

/// Why a queue could not be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueError {
    /// The size is 0, not a power of two, or above 32768.
    BadSize(u16),
    /// The heap is exhausted.
    NoMemory,
}

impl VirtQueue {
    /// Allocates a zeroed queue of `size` entries; the device learns its addresses
    /// ([`VirtQueue::addresses`]) from the transport, and its doorbell is given by
    /// [`VirtQueue::attach`] (a publish before that rings nothing).
    pub fn new(size: u16, index: u16, event_idx: bool) -> Result<VirtQueue, QueueError> {
        if size == 0 || !size.is_power_of_two() || size > 32768 {
            return Err(QueueError::BadSize(size));
        }
        let n = size as usize;
        let (_, avail_off, used_off, total) = Self::layout(n);
        let layout = Layout::from_size_align(total, 4096).map_err(|_| QueueError::NoMemory)?;
        // SAFETY: layout has a non-zero size.
        let base = unsafe { alloc_zeroed(layout) };
        if base.is_null() {
            return Err(QueueError::NoMemory);
        }
        let q = VirtQueue {
            size,
            desc: base.cast(),
            // SAFETY: offsets within the allocation of `total` bytes.
            avail: unsafe { base.add(avail_off) }.cast(),
            // SAFETY: as above.
            used: unsafe { base.add(used_off) },
            notify: None,
            index,
            avail_idx: 0,
            published: 0,
            last_used: 0,
            event_idx,
            doorbells: 0,
            suppressed: 0,
        };
        q.keep_interrupts_off();
        Ok(q)
    }

    /// Gives the queue its doorbell.
    ///
    /// # Safety
    /// `notify` must be this queue's notification register in mapped device memory.
    pub unsafe fn attach(&mut self, notify: Notify) {
        self.notify = Some(notify);
    }

    /// (desc, avail, used offsets, total bytes) for `n` entries.
    fn layout(n: usize) -> (usize, usize, usize, usize) {
        let avail_off = 16 * n;
        let used_off = (avail_off + 6 + 2 * n + 63) & !63;
        let total = used_off + 6 + 8 * n;
        (0, avail_off, used_off, total)
    }

    /// Entries.
    pub fn size(&self) -> u16 {
        self.size
    }

    /// Physical addresses of the descriptor table, available ring and used ring.
    pub fn addresses(&self) -> (u64, u64, u64) {
        (self.desc as u64, self.avail as u64, self.used as u64)
    }

    /// Writes descriptor `i` (taken modulo the size).
    pub fn set_desc(&mut self, i: u16, addr: u64, len: u32, flags: u16, next: u16) {
        let i = (i & (self.size - 1)) as usize;
        // SAFETY: i < size, so the write stays inside the descriptor table we own.
        unsafe {
            write_volatile(
                self.desc.add(i),
                Desc {
                    addr,
                    len,
                    flags,
                    next,
                },
            )
        };
    }

    /// Queues descriptor chain head `id` in the available ring (visible after `publish`).
    pub fn push_avail(&mut self, id: u16) {
        let slot = (self.avail_idx & (self.size - 1)) as usize;
        // SAFETY: slot < size: ring entry 2 + slot of the avail area we own.
        unsafe { write_volatile(self.avail.add(2 + slot), id) };
        self.avail_idx = self.avail_idx.wrapping_add(1);
    }

    /// Entries pushed but not yet published.
    pub fn unpublished(&self) -> u16 {
        self.avail_idx.wrapping_sub(self.published)
    }

    /// Makes pushed entries visible and notifies the device if it asked to be. Returns
    /// whether a doorbell was written.
    pub fn publish(&mut self) -> bool {
        if self.avail_idx == self.published {
            return false;
        }
        let old = self.published;
        let new = self.avail_idx;
        // Descriptors and ring entries before the index (virtio 1.2 §2.7.13).
        fence(Ordering::Release);
        // SAFETY: avail[1] is the idx field of the avail area we own.
        unsafe { write_volatile(self.avail.add(1), new) };
        self.published = new;
        // The index store before reading avail_event (Linux: virtio_mb).
        fence(Ordering::SeqCst);
        let kick = if self.event_idx {
            // SAFETY: avail_event follows the used ring entries inside the used area.
            let ev =
                unsafe { read_volatile(self.used.add(4 + 8 * self.size as usize).cast::<u16>()) };
            need_event(ev, new, old)
        } else {
            // SAFETY: used flags are the first u16 of the used area.
            let flags = unsafe { read_volatile(self.used.cast::<u16>()) };
            flags & 1 == 0 // VIRTQ_USED_F_NO_NOTIFY
        };
        if let (true, Some(n)) = (kick, &self.notify) {
            // SAFETY: notify is this queue's notification register (attach's contract).
            unsafe { n.ring(self.index) };
            self.doorbells += 1;
        } else {
            self.suppressed += 1;
        }
        kick
    }

    /// The next used entry as (id, len), unchecked: device data.
    pub fn pop_used(&mut self) -> Option<(u32, u32)> {
        // SAFETY: used[1] (u16 at offset 2) is the device's used idx.
        let idx = unsafe { read_volatile(self.used.add(2).cast::<u16>()) };
        if idx == self.last_used {
            return None;
        }
        // Read the entry only after seeing the index (virtio 1.2 §2.7.14).
        fence(Ordering::Acquire);
        let slot = (self.last_used & (self.size - 1)) as usize;
        // SAFETY: slot < size: entry inside the used ring.
        let (id, len) = unsafe {
            let e = self.used.add(4 + 8 * slot);
            (
                read_volatile(e.cast::<u32>()),
                read_volatile(e.add(4).cast::<u32>()),
            )
        };
        self.last_used = self.last_used.wrapping_add(1);
        Some((id, len))
    }

    /// Asks the device to interrupt when it next uses an entry (`used_event` = the next
    /// entry to read; without event indices, the no-interrupt flag cleared), then looks
    /// again: returns false if an entry is already there (do not halt, poll).
    pub fn arm(&self) -> bool {
        let at = 2 + self.size as usize;
        // SAFETY: used_event is the u16 after the avail ring entries, inside our area.
        unsafe { write_volatile(self.avail.add(at), self.last_used) };
        if !self.event_idx {
            // SAFETY: avail flags, the first u16 of the avail area.
            unsafe { write_volatile(self.avail, 0) };
        }
        // The request is visible before the used index is read again (virtio 1.2
        // §2.7.10: a used entry published meanwhile is seen, or it interrupts).
        fence(Ordering::SeqCst);
        // SAFETY: used[1] (u16 at offset 2) is the device's used idx.
        let idx = unsafe { read_volatile(self.used.add(2).cast::<u16>()) };
        idx == self.last_used
    }

    /// Keeps `used_event` half the index space ahead so the device does not interrupt.
    pub fn keep_interrupts_off(&self) {
        let at = 2 + self.size as usize;
        // SAFETY: used_event is the u16 after the avail ring entries, inside our area.
        unsafe { write_volatile(self.avail.add(at), self.last_used.wrapping_add(0x8000)) };
        if !self.event_idx {
            // SAFETY: avail flags, first u16 of the avail area: VIRTQ_AVAIL_F_NO_INTERRUPT.
            unsafe { write_volatile(self.avail, 1) };
        }
    }
}

/// Linux `vring_need_event`: whether the device asked to be notified for an index move
/// from `old` to `new` when its event index is `event`.
pub fn need_event(event: u16, new: u16, old: u16) -> bool {
    new.wrapping_sub(event).wrapping_sub(1) < new.wrapping_sub(old)
}
