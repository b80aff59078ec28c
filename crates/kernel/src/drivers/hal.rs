//! What a driver needs from the machine, and nothing else: DMA-able memory and the address
//! a device uses for it, device registers mapped for the CPU ([`Hal`]); typed access to
//! those registers and to the rings in DMA memory ([`Reg`], [`Array`], [`Mmio`]). The bare
//! machine's implementation is [`Identity`] (every address the kernel uses is physical);
//! the host tests' is `drivers::fake`'s, which gives devices addresses that are *not* the
//! CPU's, so a driver that hands a device a pointer instead of a DMA address fails there.
//!
//! Modelled on virtio-drivers' `Hal` (src/hal.rs), with bytes instead of pages, an
//! allocation that may be left unzeroed (receive buffers: see [`Hal::dma_alloc`]), and
//! [`Hal::dma_addr_static`] for the one kind of buffer our drivers share without copying:
//! the site image, immutable and `'static`, so it is shared once and never unshared (no
//! call per frame to undo).
//!
//! Registers: every register and ring field these devices have (PCI, virtio 1.x, the
//! 8254x) is little-endian; [`Reg`] converts on a big-endian CPU and costs nothing on
//! x86. Its access type ([`RO`], [`WO`], [`RW`]) says which of `read`/`write` exist, so a
//! driver cannot read a write-only doorbell or write a device-owned ring field.

use core::marker::PhantomData;
use core::ptr::NonNull;

/// An address as a device sees it (bus/physical address).
pub type PhysAddr = u64;

/// The machine underneath a driver.
///
/// # Safety
///
/// An implementation must follow each method's "Implementation safety": drivers rely on it
/// for every pointer they dereference and every address they give a device.
pub unsafe trait Hal: 'static {
    /// `len` bytes (`len > 0`) of memory the CPU and a device can both use, page-aligned;
    /// zeroed if `zeroed`. Returns the device's address for the first byte and the CPU's
    /// pointer to it, or `None` when memory is exhausted. Receive buffers are asked for
    /// unzeroed: the device writes them before the driver reads any byte (and the driver
    /// reads only the length the device reports, clamped to the buffer), and zeroing
    /// megabytes under an emulator is a measurable part of boot.
    ///
    /// # Implementation safety
    ///
    /// The pointer is valid for reads and writes of `len` bytes, 4096-aligned, aliases no
    /// other allocation or reference until [`Hal::dma_dealloc`], and the device reaches
    /// byte `i` of it at `paddr + i` (physically contiguous).
    fn dma_alloc(len: usize, zeroed: bool) -> Option<(PhysAddr, NonNull<u8>)>;

    /// Gives back memory from [`Hal::dma_alloc`].
    ///
    /// # Safety
    ///
    /// `paddr`, `vaddr` and `len` are one `dma_alloc`'s, not yet given back, and no device
    /// uses the memory any more.
    unsafe fn dma_dealloc(paddr: PhysAddr, vaddr: NonNull<u8>, len: usize);

    /// The CPU's pointer to `len` bytes of device registers at physical address `paddr`
    /// (a memory BAR, a virtio-mmio page).
    ///
    /// # Implementation safety
    ///
    /// The pointer is valid for volatile reads and writes of those `len` bytes, mapped
    /// uncached, and aliases no ordinary memory.
    ///
    /// # Safety
    ///
    /// `paddr..paddr + len` is a device's register region.
    unsafe fn mmio_phys_to_virt(paddr: PhysAddr, len: usize) -> NonNull<u8>;

    /// The address a device reads `buf` at: memory that never changes and lives for ever
    /// (the site image), lent to devices by transmit descriptors without being copied.
    /// Called per transmitted body: an implementation should be a computation, not a
    /// mapping per call.
    ///
    /// # Implementation safety
    ///
    /// A device reading `len` bytes at the returned address reads `buf`'s bytes, for as
    /// long as the program runs.
    fn dma_addr_static(buf: &'static [u8]) -> PhysAddr;
}

/// The bare machine: the kernel identity-maps the first 4 GiB (arch's page tables,
/// write-back RAM, uncached device holes), so every CPU address is the physical one and
/// DMA memory is ordinary heap memory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Identity;

// SAFETY: under the kernel's identity mapping a pointer's value is its physical address;
// the heap's memory is physically contiguous (one mapping, no paging out), page-aligned
// allocations are asked for, and no IOMMU stands between devices and memory.
unsafe impl Hal for Identity {
    #[inline]
    fn dma_alloc(len: usize, zeroed: bool) -> Option<(PhysAddr, NonNull<u8>)> {
        let layout = core::alloc::Layout::from_size_align(len.max(1), 4096).ok()?;
        // SAFETY: the layout has a non-zero size.
        let p = unsafe {
            if zeroed {
                alloc::alloc::alloc_zeroed(layout)
            } else {
                alloc::alloc::alloc(layout)
            }
        };
        let p = NonNull::new(p)?;
        Some((p.as_ptr() as PhysAddr, p))
    }

    unsafe fn dma_dealloc(_paddr: PhysAddr, vaddr: NonNull<u8>, len: usize) {
        if let Ok(layout) = core::alloc::Layout::from_size_align(len.max(1), 4096) {
            // SAFETY: vaddr came from dma_alloc with this layout (the caller's contract).
            unsafe { alloc::alloc::dealloc(vaddr.as_ptr(), layout) };
        }
    }

    #[inline]
    unsafe fn mmio_phys_to_virt(paddr: PhysAddr, _len: usize) -> NonNull<u8> {
        // A BAR or a virtio-mmio page is never at 0; the dangling pointer would only be
        // produced for a caller who broke the contract.
        NonNull::new(paddr as usize as *mut u8).unwrap_or(NonNull::dangling())
    }

    #[inline]
    fn dma_addr_static(buf: &'static [u8]) -> PhysAddr {
        buf.as_ptr() as PhysAddr
    }
}

/// A region of DMA memory from [`Hal::dma_alloc`], given back when dropped (the kernel's
/// drivers never drop theirs; host tests do). The CPU uses [`Dma::ptr`], a device
/// [`Dma::paddr`]: the two are kept apart.
pub struct Dma {
    paddr: PhysAddr,
    vaddr: NonNull<u8>,
    len: usize,
    free: unsafe fn(PhysAddr, NonNull<u8>, usize),
}

// SAFETY: the region is owned by this value alone (dma_alloc's no-alias guarantee);
// moving it to another core moves that ownership. Access to its bytes needs `&mut self`
// or goes through `Reg`/`Array` views whose owners keep them to one core.
unsafe impl Send for Dma {}

impl core::fmt::Debug for Dma {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Dma({:#x}, {} bytes)", self.paddr, self.len)
    }
}

impl Dma {
    /// `len` bytes from `H` (see [`Hal::dma_alloc`]); `None` when memory is exhausted.
    pub fn new<H: Hal>(len: usize, zeroed: bool) -> Option<Dma> {
        let (paddr, vaddr) = H::dma_alloc(len, zeroed)?;
        Some(Dma {
            paddr,
            vaddr,
            len,
            free: H::dma_dealloc,
        })
    }

    /// The device's address of byte `off` (no check: an address is only data here).
    #[inline(always)]
    pub fn paddr(&self, off: usize) -> PhysAddr {
        self.paddr + off as PhysAddr
    }

    /// The CPU's pointer to the first byte.
    #[inline(always)]
    pub fn ptr(&self) -> *mut u8 {
        self.vaddr.as_ptr()
    }

    /// Bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the region is empty (never: `dma_alloc` is asked for at least one byte).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `b` lies wholly inside this region (the drivers' tests: a frame handed to the
    /// engine must be a view into the driver's own buffers).
    #[cfg(any(test, feature = "fake"))]
    pub fn holds(&self, b: &[u8]) -> bool {
        let (start, p) = (self.ptr() as usize, b.as_ptr() as usize);
        p >= start && p + b.len() <= start + self.len
    }

    /// Bytes `off..off + len` for the CPU, or `None` past the region's end.
    ///
    /// # Safety
    ///
    /// No device writes those bytes while the slice lives (the driver does not hand them
    /// to the device meanwhile).
    #[inline(always)]
    pub unsafe fn bytes(&self, off: usize, len: usize) -> Option<&[u8]> {
        if off.checked_add(len)? > self.len {
            return None;
        }
        // SAFETY: inside the region (checked); no device write meanwhile (the caller's).
        Some(unsafe { core::slice::from_raw_parts(self.ptr().add(off), len) })
    }

    /// Bytes `off..off + len` for the CPU to write, or `None` past the region's end.
    ///
    /// # Safety
    ///
    /// No device reads or writes those bytes while the slice lives.
    #[inline(always)]
    pub unsafe fn bytes_mut(&mut self, off: usize, len: usize) -> Option<&mut [u8]> {
        if off.checked_add(len)? > self.len {
            return None;
        }
        // SAFETY: inside the region (checked), exclusively borrowed; no device access
        // meanwhile (the caller's).
        Some(unsafe { core::slice::from_raw_parts_mut(self.ptr().add(off), len) })
    }

    /// A typed view of the `T` at `off`, or `None` if it does not fit or is misaligned.
    pub fn reg<T: Value, A>(&self, off: usize) -> Option<Reg<T, A>> {
        view(self.vaddr, self.len, off)
    }

    /// A typed view of `n` (a power of two) `T`s from `off`, indexed modulo `n`, or
    /// `None` if they do not fit or are misaligned.
    pub fn array<T: Value, A>(&self, off: usize, n: usize) -> Option<Array<T, A>> {
        array(self.vaddr, self.len, off, n)
    }
}

impl Drop for Dma {
    fn drop(&mut self) {
        // SAFETY: the region came from dma_alloc of the Hal that gave `free`; the owner
        // (a driver's queue) is going away with it, so no device is given it any more.
        unsafe { (self.free)(self.paddr, self.vaddr, self.len) };
    }
}

/// A device's register region as the CPU sees it (from [`Hal::mmio_phys_to_virt`]).
#[derive(Debug, Clone, Copy)]
pub struct Mmio {
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: a register region stays mapped for the life of the program; which registers a
// value may touch is decided by its owner (a driver's queue pair, its link monitor).
unsafe impl Send for Mmio {}

impl Mmio {
    /// The `len` bytes of registers at physical `paddr`, through `H`.
    ///
    /// # Safety
    ///
    /// `paddr..paddr + len` is a device's register region ([`Hal::mmio_phys_to_virt`]).
    pub unsafe fn map<H: Hal>(paddr: PhysAddr, len: usize) -> Mmio {
        Mmio {
            // SAFETY: forwarded to the caller.
            base: unsafe { H::mmio_phys_to_virt(paddr, len) },
            len,
        }
    }

    /// A region at `base` the CPU already reaches (a host test's register file).
    ///
    /// # Safety
    ///
    /// `base` is valid for volatile reads and writes of `len` bytes for as long as any
    /// register view of it is used.
    pub unsafe fn from_ptr(base: NonNull<u8>, len: usize) -> Mmio {
        Mmio { base, len }
    }

    /// Bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the region is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The register of type `T` at `off`, or `None` if it lies past the region or is
    /// misaligned (register blocks are built once, at bring-up, from these).
    pub fn reg<T: Value, A>(&self, off: usize) -> Option<Reg<T, A>> {
        view(self.base, self.len, off)
    }

    /// `n` (a power of two) registers of type `T` from `off` (a table: MSI-X entries, the
    /// e1000's multicast table), indexed modulo `n`.
    pub fn array<T: Value, A>(&self, off: usize, n: usize) -> Option<Array<T, A>> {
        array(self.base, self.len, off, n)
    }
}

fn view<T: Value, A>(base: NonNull<u8>, len: usize, off: usize) -> Option<Reg<T, A>> {
    let end = off.checked_add(core::mem::size_of::<T>())?;
    let p = base.as_ptr().wrapping_add(off);
    if end > len || (p as usize) % core::mem::align_of::<T>() != 0 {
        return None;
    }
    Some(Reg {
        ptr: NonNull::new(p.cast())?,
        _access: PhantomData,
    })
}

fn array<T: Value, A>(base: NonNull<u8>, len: usize, off: usize, n: usize) -> Option<Array<T, A>> {
    if !n.is_power_of_two() {
        return None;
    }
    let bytes = n.checked_mul(core::mem::size_of::<T>())?;
    let end = off.checked_add(bytes)?;
    let first: Reg<T, A> = view(base, len, off)?;
    (end <= len).then_some(Array {
        base: first.ptr,
        mask: n - 1,
        _access: PhantomData,
    })
}

/// Read-only: the device writes it (a status register, a used ring).
#[derive(Debug, Clone, Copy)]
pub enum RO {}
/// Write-only: the device reads it (a doorbell, an interrupt mask, an available ring).
#[derive(Debug, Clone, Copy)]
pub enum WO {}
/// Both.
#[derive(Debug, Clone, Copy)]
pub enum RW {}
/// Access types that allow [`Reg::read`].
pub trait Readable {}
/// Access types that allow [`Reg::write`].
pub trait Writable {}
impl Readable for RO {}
impl Readable for RW {}
impl Writable for WO {}
impl Writable for RW {}

/// A value a register or ring field holds, stored little-endian.
///
/// # Safety
///
/// Any bit pattern of the type's size is a valid value (a device may write anything).
pub unsafe trait Value: Copy {
    /// From the little-endian stored form.
    fn le_to_cpu(self) -> Self;
    /// To the little-endian stored form.
    fn cpu_to_le(self) -> Self;
}

macro_rules! int_value {
    ($($t:ty),*) => {$(
        // SAFETY: every bit pattern is an integer.
        unsafe impl Value for $t {
            #[inline(always)]
            fn le_to_cpu(self) -> Self { <$t>::from_le(self) }
            #[inline(always)]
            fn cpu_to_le(self) -> Self { <$t>::to_le(self) }
        }
    )*};
}
int_value!(u8, u16, u32, u64);

/// One register (or ring field) of type `T`, accessed volatile, little-endian, as `A`
/// allows. Built only from a region that holds it ([`Mmio::reg`], [`Dma::reg`],
/// [`Array::at`]), so every access stays inside that region.
pub struct Reg<T, A = RW> {
    ptr: NonNull<T>,
    _access: PhantomData<A>,
}

impl<T, A> Clone for Reg<T, A> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, A> Copy for Reg<T, A> {}

impl<T, A> core::fmt::Debug for Reg<T, A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Reg({:p})", self.ptr)
    }
}

// SAFETY: a register view is a device address; its region stays mapped (or allocated)
// for as long as its owner, which keeps it to one core at a time.
unsafe impl<T, A> Send for Reg<T, A> {}

impl<T: Value, A: Readable> Reg<T, A> {
    /// Reads the register.
    #[inline(always)]
    pub fn read(self) -> T {
        // SAFETY: the pointer lies inside a live register region or DMA area and is
        // aligned (checked when the view was made); every bit pattern is a T (Value).
        unsafe { self.ptr.as_ptr().read_volatile() }.le_to_cpu()
    }
}

impl<T: Value, A: Writable> Reg<T, A> {
    /// Writes the register.
    #[inline(always)]
    pub fn write(self, v: T) {
        // SAFETY: as `read`.
        unsafe { self.ptr.as_ptr().write_volatile(v.cpu_to_le()) }
    }
}

impl<T, A> Reg<T, A> {
    /// The view of one field of `T`, `U` at byte `off` of it (a descriptor's status byte).
    ///
    /// # Safety
    ///
    /// `T` has a field of type `U` at `off` (use `core::mem::offset_of!`).
    #[inline(always)]
    pub unsafe fn field<U: Value, B>(self, off: usize) -> Reg<U, B> {
        Reg {
            // SAFETY: a field of the T the view points at (the caller's), so inside the
            // same region and aligned as T's layout aligns it.
            ptr: unsafe { self.ptr.cast::<u8>().add(off).cast() },
            _access: PhantomData,
        }
    }

    /// The address, for a device that must be told where a register is (a doorbell
    /// handed from the transport to a queue), or a test.
    pub fn as_ptr(self) -> *mut T {
        self.ptr.as_ptr()
    }
}

/// `n` registers or ring entries of type `T`, a power of two, indexed modulo `n`: no index
/// reaches past the table, whatever it is (a device's).
pub struct Array<T, A = RW> {
    base: NonNull<T>,
    mask: usize,
    _access: PhantomData<A>,
}

impl<T, A> Clone for Array<T, A> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, A> Copy for Array<T, A> {}

impl<T, A> core::fmt::Debug for Array<T, A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Array({:p}, {})", self.base, self.mask + 1)
    }
}

// SAFETY: as Reg.
unsafe impl<T, A> Send for Array<T, A> {}

impl<T, A> Array<T, A> {
    /// Entry `i` modulo the length.
    #[inline(always)]
    pub fn at(self, i: usize) -> Reg<T, A> {
        Reg {
            // SAFETY: i & mask < n: inside the table (checked when it was made).
            ptr: unsafe { self.base.add(i & self.mask) },
            _access: PhantomData,
        }
    }

    /// Entries.
    pub fn len(self) -> usize {
        self.mask + 1
    }

    /// Whether empty (never).
    pub fn is_empty(self) -> bool {
        false
    }
}
