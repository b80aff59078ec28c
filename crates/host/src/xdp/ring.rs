//! The four single-producer/single-consumer rings an AF_XDP socket shares with the kernel
//! (fill, RX, TX, completion), each a mapping of the socket: a producer index, a consumer
//! index, a flags word and a power-of-two array of descriptors. Our side keeps its own
//! index locally and publishes it with one release store per batch; the other side's
//! index is read with an acquire load only when the cached view runs out (the protocol of
//! the kernel's Documentation/networking/af_xdp.rst and libxdp's xsk.h).

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU32, Ordering};

/// A shared or private mapping, unmapped on drop.
pub struct Mmap {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain memory; which thread touches which part is the business of
// the types that hold it (one ring per side, disjoint UMEM frames per side).
unsafe impl Send for Mmap {}
// SAFETY: as above; `Mmap` itself hands out only raw pointers.
unsafe impl Sync for Mmap {}

impl Mmap {
    /// `len` bytes of zeroed anonymous memory (the UMEM), faulted in now.
    pub fn anonymous(len: usize) -> io::Result<Mmap> {
        Self::map(
            len,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
            -1,
            0,
        )
    }

    /// The ring of socket `fd` at page offset `pgoff`.
    pub fn ring(fd: RawFd, len: usize, pgoff: u64) -> io::Result<Mmap> {
        Self::map(len, libc::MAP_SHARED | libc::MAP_POPULATE, fd, pgoff)
    }

    fn map(len: usize, flags: libc::c_int, fd: RawFd, off: u64) -> io::Result<Mmap> {
        // SAFETY: a new mapping at an address the kernel chooses; nothing aliases it yet.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                fd,
                off as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mmap { ptr: p.cast(), len })
    }

    pub fn ptr(&self) -> *mut u8 {
        self.ptr
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for Mmap {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `map`, once.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// One ring of descriptors of type `T` (`u64` addresses for fill and completion,
/// `xdp_desc` for RX and TX).
pub struct Ring<T> {
    map: Mmap,
    producer: *const AtomicU32,
    consumer: *const AtomicU32,
    flags: *const AtomicU32,
    desc: *mut T,
    size: u32,
    /// Our index (the producer's for fill/TX, the consumer's for RX/completion).
    local: u32,
    /// The other side's index as last read.
    cached: u32,
}

// SAFETY: a ring is used by the one thread that owns its side of the queue pair.
unsafe impl<T> Send for Ring<T> {}

impl<T: Copy> Ring<T> {
    /// The ring mapped at `map` with the kernel's offsets and `size` entries.
    pub fn new(map: Mmap, off: &libc::xdp_ring_offset, size: u32) -> Ring<T> {
        let at = |o: u64| map.ptr().wrapping_add(o as usize);
        Ring {
            producer: at(off.producer).cast(),
            consumer: at(off.consumer).cast(),
            flags: at(off.flags).cast(),
            desc: at(off.desc).cast(),
            map,
            size,
            local: 0,
            cached: 0,
        }
    }

    /// Bytes a ring of `size` entries maps.
    pub fn map_len(off: &libc::xdp_ring_offset, size: u32) -> usize {
        off.desc as usize + size as usize * std::mem::size_of::<T>()
    }

    fn index(&self, which: *const AtomicU32) -> &AtomicU32 {
        // SAFETY: the kernel's offsets point at aligned u32 indices inside the mapping,
        // which lives as long as `self`.
        unsafe { &*which }
    }

    /// Whether the kernel asks to be woken (`XDP_RING_NEED_WAKEUP`).
    pub fn needs_wakeup(&self) -> bool {
        self.index(self.flags).load(Ordering::Relaxed) & libc::XDP_RING_NEED_WAKEUP != 0
    }

    pub fn size(&self) -> u32 {
        self.size
    }

    // --- producer side (fill, TX) ---

    /// Entries we may still produce (reads the consumer index only when needed).
    pub fn free(&mut self, want: u32) -> u32 {
        let free = self.size - self.local.wrapping_sub(self.cached);
        if free >= want {
            return free;
        }
        self.cached = self.index(self.consumer).load(Ordering::Acquire);
        self.size - self.local.wrapping_sub(self.cached)
    }

    /// Writes the next entry (the caller checked [`free`](Self::free)).
    pub fn push(&mut self, v: T) {
        let i = (self.local & (self.size - 1)) as usize;
        // SAFETY: i < size, and the entry is ours until we publish it (checked free).
        unsafe { self.desc.add(i).write_volatile(v) };
        self.local = self.local.wrapping_add(1);
    }

    /// Makes the entries pushed so far visible to the kernel.
    pub fn submit(&mut self) {
        self.index(self.producer)
            .store(self.local, Ordering::Release);
    }

    /// Entries produced and not yet consumed by the kernel.
    pub fn outstanding(&self) -> u32 {
        self.local
            .wrapping_sub(self.index(self.consumer).load(Ordering::Acquire))
    }

    // --- consumer side (RX, completion) ---

    /// Entries ready to be consumed.
    pub fn ready(&mut self) -> u32 {
        let n = self.cached.wrapping_sub(self.local);
        if n > 0 {
            return n;
        }
        self.cached = self.index(self.producer).load(Ordering::Acquire);
        self.cached.wrapping_sub(self.local).min(self.size)
    }

    /// Takes the next entry (the caller checked [`ready`](Self::ready)).
    pub fn pop(&mut self) -> T {
        let i = (self.local & (self.size - 1)) as usize;
        // SAFETY: i < size, and the kernel published this entry (ready > 0).
        let v = unsafe { self.desc.add(i).read_volatile() };
        self.local = self.local.wrapping_add(1);
        v
    }

    /// Gives the consumed entries back to the kernel.
    pub fn release(&mut self) {
        self.index(self.consumer)
            .store(self.local, Ordering::Release);
    }

    /// Keeps the mapping named (it is what the pointers point into).
    pub fn mapping(&self) -> &Mmap {
        &self.map
    }
}
