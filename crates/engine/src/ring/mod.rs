//! Single-producer single-consumer rings: the only way cores talk to each other (the
//! papers' CLIST, frames in, and DLIST, frames out). Lock-free, fixed size, allocated once.
//!
//! A ring is a power-of-two array of slots and two free-running indices: `tail`, written
//! only by the [`Producer`], and `head`, written only by the [`Consumer`]. The producer fills
//! the slot at `tail` and then publishes it with a Release store of `tail + 1`; the consumer
//! reads `tail` with Acquire, so the slot's bytes happen-before its read. Symmetrically the
//! consumer releases a slot with a Release store of `head + 1`, and the producer reuses it
//! only after an Acquire load of `head` shows it free. Each side caches the other's index
//! and reloads it only when the ring looks full (producer) or empty (consumer), so the shared
//! cache lines move only when they must.
//!
//! Slots are initialised once ([`Default`]) and then reused in place: a frame is written
//! straight into the slot the producer lends ([`Producer::slot`]), never moved, so a 2 KiB
//! frame costs one copy into the ring and none out of it.
//!
//! This module must never block, spin on the other side, or allocate after [`channel`].
//! It is the engine's one module with `unsafe` (two dereferences of a slot pointer, each
//! with the index argument that makes it exclusive); `cfg(loom)` swaps the atomics for
//! loom's so the model test in `loom_tests` explores every interleaving of both sides.
//!
//! [`Doze`] lets a consumer that found its rings empty sleep without missing the next
//! slot: the producer nudges it after publishing (see `doze` for the protocol; the model
//! test covers it too).
#![allow(unsafe_code)]

use alloc::boxed::Box;

mod doze;
pub use doze::{Bell, Doze};

#[cfg(not(loom))]
mod sync {
    pub use alloc::sync::Arc;
    pub use core::sync::atomic::{fence, AtomicBool, AtomicUsize, Ordering};

    /// `core::cell::UnsafeCell` with loom's closure API, so both builds share the code.
    pub struct Cell<T>(core::cell::UnsafeCell<T>);

    impl<T> Cell<T> {
        pub fn new(v: T) -> Cell<T> {
            Cell(core::cell::UnsafeCell::new(v))
        }
        pub fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }
        pub fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
        pub fn ptr(&self) -> *mut T {
            self.0.get()
        }
    }
}

#[cfg(loom)]
mod sync {
    pub use loom::cell::UnsafeCell as Cell;
    pub use loom::sync::atomic::{fence, AtomicBool, AtomicUsize, Ordering};
    pub use loom::sync::Arc;
}

use sync::{Arc, AtomicUsize, Cell, Ordering};

/// Keeps an index on its own cache line pair (adjacent-line prefetch pulls 128 bytes).
#[repr(align(128))]
struct Padded<T>(T);

struct Inner<T> {
    /// Next slot the consumer will read; written only by the consumer.
    head: Padded<AtomicUsize>,
    /// Next slot the producer will fill; written only by the producer.
    tail: Padded<AtomicUsize>,
    /// Most slots ever full at once; written only by the producer.
    high_water: AtomicUsize,
    mask: usize,
    slots: Box<[Cell<T>]>,
}

// SAFETY: a slot is reached by at most one side at a time. The producer touches only the
// slot at `tail`, which the consumer never reads until `tail` is published past it; the
// consumer touches only slots in `head..tail`, which the producer never writes until `head`
// is published past them. Both hand-overs are Release stores read with Acquire loads, so a
// slot's contents move between threads with a happens-before edge. `T: Send` because values
// written on one thread are read (and eventually dropped) on the other.
unsafe impl<T: Send> Sync for Inner<T> {}
// SAFETY: as above; `Inner` owns its slots and is only shared through the two handles.
unsafe impl<T: Send> Send for Inner<T> {}

/// The writing end of a ring. Not `Clone`: one producer per ring is a type-level fact.
pub struct Producer<T> {
    inner: Arc<Inner<T>>,
    tail: usize,
    head_cache: usize,
    reserved: bool,
    high_water: usize,
}

/// The reading end of a ring. Not `Clone`: one consumer per ring.
pub struct Consumer<T> {
    inner: Arc<Inner<T>>,
    head: usize,
    tail_cache: usize,
}

/// Makes a ring of `capacity` slots (rounded up to a power of two, at least 2), every slot
/// holding `T::default()`. This is the only allocation a ring makes.
///
/// # Panics
/// If `capacity` exceeds 2^30 (a configuration error).
pub fn channel<T: Default>(capacity: usize) -> (Producer<T>, Consumer<T>) {
    assert!(capacity <= 1 << 30, "ring capacity too large");
    let cap = capacity.max(2).next_power_of_two();
    let slots: Box<[Cell<T>]> = (0..cap).map(|_| Cell::new(T::default())).collect();
    let inner = Arc::new(Inner {
        head: Padded(AtomicUsize::new(0)),
        tail: Padded(AtomicUsize::new(0)),
        high_water: AtomicUsize::new(0),
        mask: cap - 1,
        slots,
    });
    (
        Producer {
            inner: inner.clone(),
            tail: 0,
            head_cache: 0,
            reserved: false,
            high_water: 0,
        },
        Consumer {
            inner,
            head: 0,
            tail_cache: 0,
        },
    )
}

impl<T> Producer<T> {
    /// Slots in the ring.
    pub fn capacity(&self) -> usize {
        self.inner.mask + 1
    }

    /// Free slots now (the consumer's index reloaded).
    pub fn free(&mut self) -> usize {
        // Acquire: as in `has_room`.
        self.head_cache = self.inner.head.0.load(Ordering::Acquire);
        self.capacity() - self.tail.wrapping_sub(self.head_cache)
    }

    /// Whether the slot at `tail` is free, reloading the consumer's index only when the
    /// cached one says the ring is full.
    fn has_room(&mut self) -> bool {
        if self.tail.wrapping_sub(self.head_cache) > self.inner.mask {
            // Acquire: the consumer's reads of the slot we are about to reuse
            // happen-before our writes to it.
            self.head_cache = self.inner.head.0.load(Ordering::Acquire);
        }
        self.tail.wrapping_sub(self.head_cache) <= self.inner.mask
    }

    /// Runs `f` on the next free slot and returns its result, or `None` when the ring is
    /// full. The slot is not published until [`commit`](Self::commit).
    pub fn with_slot<R>(&mut self, f: impl FnOnce(&mut T) -> R) -> Option<R> {
        if !self.has_room() {
            return None;
        }
        self.reserved = true;
        let cell = &self.inner.slots[self.tail & self.inner.mask];
        // SAFETY: `has_room` showed `tail - head <= mask`, so slot `tail` is outside the
        // consumer's window `head..tail` and the consumer will not read it until we
        // publish `tail + 1`; only this producer (`&mut self`) writes slots.
        Some(cell.with_mut(|p| f(unsafe { &mut *p })))
    }

    /// The next free slot, to be filled in place and then [`commit`](Self::commit)ted, or
    /// `None` when the ring is full.
    #[cfg(not(loom))]
    pub fn slot(&mut self) -> Option<&mut T> {
        if !self.has_room() {
            return None;
        }
        self.reserved = true;
        let p = self.inner.slots[self.tail & self.inner.mask].ptr();
        // SAFETY: as in `with_slot`: slot `tail` is outside the consumer's window until we
        // publish it, and the returned borrow of `self` keeps any other producer call
        // (including `commit`) from running while it lives.
        Some(unsafe { &mut *p })
    }

    /// Publishes the slot last lent by [`slot`](Self::slot) or
    /// [`with_slot`](Self::with_slot). Returns false (and does nothing) when no slot was
    /// lent since the last commit.
    pub fn commit(&mut self) -> bool {
        if !self.reserved {
            return false;
        }
        self.reserved = false;
        self.tail = self.tail.wrapping_add(1);
        // Release: the slot's contents happen-before the consumer's Acquire of `tail`.
        self.inner.tail.0.store(self.tail, Ordering::Release);
        if self.tail.wrapping_sub(self.head_cache) > self.high_water {
            // Maybe a new high-water mark: measure against the consumer's real index.
            self.head_cache = self.inner.head.0.load(Ordering::Acquire);
            let len = self.tail.wrapping_sub(self.head_cache);
            if len > self.high_water {
                self.high_water = len;
                self.inner.high_water.store(len, Ordering::Relaxed);
            }
        }
        true
    }

    /// Fills the next slot with `v` and publishes it; gives `v` back when the ring is full.
    pub fn push(&mut self, v: T) -> Result<(), T> {
        let mut v = Some(v);
        match self.with_slot(|s| {
            if let Some(v) = v.take() {
                *s = v;
            }
        }) {
            Some(()) => {
                self.commit();
                Ok(())
            }
            None => Err(v.take().expect("not consumed when the ring is full")),
        }
    }

    /// Slots published and not yet released by the consumer (a snapshot).
    pub fn len(&self) -> usize {
        self.tail
            .wrapping_sub(self.inner.head.0.load(Ordering::Acquire))
    }

    /// Whether no published slot is waiting (a snapshot).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Most slots that were ever full at once.
    pub fn high_water(&self) -> usize {
        self.high_water
    }

    /// A read-only view of the ring's occupancy, for stats readers on any core.
    pub fn gauge(&self) -> Gauge<T> {
        Gauge {
            inner: self.inner.clone(),
        }
    }
}

impl<T> Consumer<T> {
    /// Slots in the ring.
    pub fn capacity(&self) -> usize {
        self.inner.mask + 1
    }

    /// Published slots not yet released, reloading the producer's index.
    pub fn available(&mut self) -> usize {
        // Acquire: the producer's writes to every slot below `tail` happen-before our reads.
        self.tail_cache = self.inner.tail.0.load(Ordering::Acquire);
        self.tail_cache.wrapping_sub(self.head)
    }

    /// Whether slot `head + i` is known published, reloading `tail` only if needed.
    fn has(&mut self, i: usize) -> bool {
        if self.tail_cache.wrapping_sub(self.head) <= i {
            self.available();
        }
        self.tail_cache.wrapping_sub(self.head) > i
    }

    /// Runs `f` on the oldest published slot, or returns `None` when the ring is empty.
    /// The slot stays in the ring until [`pop`](Self::pop).
    pub fn with_front<R>(&mut self, f: impl FnOnce(&T) -> R) -> Option<R> {
        if !self.has(0) {
            return None;
        }
        let cell = &self.inner.slots[self.head & self.inner.mask];
        // SAFETY: slot `head` is inside the published window `head..tail` (Acquire of
        // `tail` in `has`), so the producer finished writing it and will not write it
        // again until we publish `head + 1`.
        Some(cell.with(|p| f(unsafe { &*p })))
    }

    /// The `i`-th oldest slot (0 = front) among those [`available`](Self::available) last
    /// counted; it stays in the ring. Does not look for newly published slots, so it can
    /// take `&self` while earlier results are still borrowed.
    #[cfg(not(loom))]
    pub fn peek(&self, i: usize) -> Option<&T> {
        if self.tail_cache.wrapping_sub(self.head) <= i {
            return None;
        }
        let p = self.inner.slots[self.head.wrapping_add(i) & self.inner.mask].ptr();
        // SAFETY: slot `head + i` is inside the published window `head..tail_cache` (an
        // Acquire load of `tail`), which the producer does not write until `head` moves
        // past it, and `head` moves only in `pop`, which needs `&mut self` and so cannot
        // run while this borrow lives.
        Some(unsafe { &*p })
    }

    /// The oldest published slot's index counter (wraps), naming it for [`pop`](Self::pop)
    /// checks by callers that loan several slots at once.
    pub fn head(&self) -> usize {
        self.head
    }

    /// Releases the oldest published slot to the producer; false when the ring is empty.
    pub fn pop(&mut self) -> bool {
        if !self.has(0) {
            return false;
        }
        self.head = self.head.wrapping_add(1);
        // Release: our reads of the slot happen-before the producer reuses it.
        self.inner.head.0.store(self.head, Ordering::Release);
        true
    }

    /// Takes the oldest value out (leaving `T::default()` in the slot) and releases it.
    pub fn take(&mut self) -> Option<T>
    where
        T: Default,
    {
        if !self.has(0) {
            return None;
        }
        let cell = &self.inner.slots[self.head & self.inner.mask];
        // SAFETY: as in `with_front`, and we write the slot: the producer will not touch it
        // until `pop` below publishes `head + 1`.
        let v = cell.with_mut(|p| core::mem::take(unsafe { &mut *p }));
        self.pop();
        Some(v)
    }

    /// A read-only view of the ring's occupancy, for stats readers on any core.
    pub fn gauge(&self) -> Gauge<T> {
        Gauge {
            inner: self.inner.clone(),
        }
    }

    /// Most slots that were ever full at once (as the producer last published it).
    pub fn high_water(&self) -> usize {
        self.inner.high_water.load(Ordering::Relaxed)
    }
}

/// Occupancy of a ring as any core may read it: snapshot length and high-water mark.
pub struct Gauge<T> {
    inner: Arc<Inner<T>>,
}

impl<T> Gauge<T> {
    /// Slots in the ring.
    pub fn capacity(&self) -> usize {
        self.inner.mask + 1
    }

    /// Slots full now (a racy snapshot, clamped to the capacity).
    pub fn len(&self) -> usize {
        let head = self.inner.head.0.load(Ordering::Relaxed);
        let tail = self.inner.tail.0.load(Ordering::Relaxed);
        tail.wrapping_sub(head).min(self.capacity())
    }

    /// Whether the ring looks empty now.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Most slots that were ever full at once.
    pub fn high_water(&self) -> usize {
        self.inner.high_water.load(Ordering::Relaxed)
    }
}

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, loom))]
mod loom_tests;
