//! Reloading the site without downtime: generations of the site image ([`Generations`]),
//! swapped in by every core between two of its rounds ([`Swap`], a [`CoreHook`]), and an
//! old image freed only once no connection on any core sends from it (or, after the drain
//! timeout, once the connections that still did were reset and counted).
//!
//! The engine sends bodies as `&'static [u8]` slices of the image (posted to the device,
//! kept by a connection for retransmission until acknowledged). "Static" is a promise this
//! module keeps for an image it frees: it frees generation `g` only when every core
//!
//! 1. has swapped to a newer generation (`Server::set_site`, on its own thread between
//!    rounds: no lookup of `g` is in progress there, and none starts after: the core reads
//!    the published generation again only at its next swap), and
//! 2. has found, in a scan of its connections after that swap, none whose response in
//!    flight sends from `g`'s memory (`Server::responses_in`, by address), or reset those
//!    that did (`Server::reset_responses_in`, after the drain timeout).
//!
//! Every other copy of `g`'s `Site` is gone or never used again: the core's server held
//! it (replaced), its head cache held addresses (cleared by the swap), the plan's copy
//! made the servers at start only; the server's own pages take owned copies of what they
//! need from the configuration (the caller's job: `PageSettings::base`, `headers`).
//!
//! Memory is bounded: at most two generations are alive, the one served and the one
//! draining; a reload waits for the previous one's image to be freed first. The request
//! path takes no lock and reads no shared state: a core reads the published generation
//! (one atomic load) only in its hook, every [`SWAP_EVERY_NS`]; the slots' mutexes are
//! taken by the reloading thread and by a core once per swap.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bareweb_engine::nic::Nic;
use bareweb_engine::resource::Lookup;
use bareweb_engine::server::Server;
use bareweb_engine::site::Site;

/// What runs on each core between rounds, about every [`CoreHook::every_ns`].
pub trait CoreHook<L: Lookup<'static>>: Sync {
    /// Nanoseconds between two calls (`u64::MAX`: never).
    fn every_ns(&self) -> u64;
    /// Called on core `core`'s thread between two rounds of its server.
    fn tick<N: Nic>(&self, core: usize, server: &mut Server<L>, nic: &mut N);
}

/// No hook.
pub struct NoHook;

impl<L: Lookup<'static>> CoreHook<L> for NoHook {
    fn every_ns(&self) -> u64 {
        u64::MAX
    }
    fn tick<N: Nic>(&self, _: usize, _: &mut Server<L>, _: &mut N) {}
}

/// One generation's image: its bytes (a leaked `Box<[u8]>`, freed by [`Generations`])
/// and the site read from them.
#[derive(Clone, Copy)]
struct Image<S> {
    bytes: &'static [u8],
    site: S,
}

impl<S> Image<S> {
    fn range(&self) -> Range<usize> {
        let a = self.bytes.as_ptr() as usize;
        a..a + self.bytes.len()
    }
}

/// One core's view, written only by its own thread (the reloading thread reads it).
#[derive(Default)]
struct CoreMark {
    /// The generation this core serves.
    serving: AtomicU64,
    /// The newest generation such that this core holds nothing of any older one.
    clean: AtomicU64,
    /// The old image this core still scans for, as an address range (start == end: none).
    old_start: AtomicUsize,
    old_end: AtomicUsize,
}

/// What a core's part of a reload needs of the core: its server's site swapped, its
/// connections that send from an old image counted or reset (a [`Server`] and its
/// queue pair; a fake one in the state tests).
pub trait Core<S> {
    /// Serve `site` from now on.
    fn set_site(&mut self, site: S);
    /// The connections whose response in flight sends from `range`.
    fn responses_in(&self, range: Range<usize>) -> usize;
    /// Resets those connections; returns how many.
    fn reset_responses_in(&mut self, range: Range<usize>) -> usize;
}

/// A core's [`Server`] with its queue pair, and `wrap`, which makes the server's site
/// type from a site (the stats page's wrapper around it).
pub struct ServerCore<'a, L: Lookup<'static>, N, F> {
    /// The core's server.
    pub server: &'a mut Server<L>,
    /// Its queue pair (a reset is sent on it).
    pub nic: &'a mut N,
    /// Makes `L` from a site.
    pub wrap: &'a F,
}

impl<L, N, F> Core<Site<'static>> for ServerCore<'_, L, N, F>
where
    L: Lookup<'static>,
    N: Nic,
    F: Fn(Site<'static>) -> L,
{
    fn set_site(&mut self, site: Site<'static>) {
        self.server.set_site((self.wrap)(site));
    }
    fn responses_in(&self, range: Range<usize>) -> usize {
        self.server.responses_in(range)
    }
    fn reset_responses_in(&mut self, range: Range<usize>) -> usize {
        let (_, tx) = self.nic.split();
        self.server.reset_responses_in(range, tx)
    }
}

/// The site's generations: the published one and at most one older, draining. `S` is
/// the site read from an image (`Site<'static>`; a fake in the state tests).
pub struct Generations<S = Site<'static>> {
    /// The generation the cores are to serve.
    current: AtomicU64,
    /// Generation `g` is in slot `g % 2`.
    slots: [Mutex<Option<Image<S>>>; 2],
    cores: Box<[CoreMark]>,
    /// Set by the reloading thread after the drain timeout: cores reset the connections
    /// that still send from the old image.
    reset_old: AtomicBool,
    counters: Counters,
}

/// The reload counters (the stats page's and `/metrics`' `reload_*`).
#[derive(Default)]
pub struct Counters {
    /// Reloads that put a new site in service.
    pub done: AtomicU64,
    /// Reloads refused (the new site did not build or load); the old one kept serving.
    pub refused: AtomicU64,
    /// Old images freed.
    pub freed: AtomicU64,
    /// Connections reset because they still sent from an old image at the drain timeout.
    pub reset: AtomicU64,
}

impl<S: Copy + Send> bareweb_engine::stats::platform::ReloadCounters for Generations<S> {
    fn reload_counts(&self) -> bareweb_engine::stats::platform::ReloadCounts {
        let c = self.counts();
        bareweb_engine::stats::platform::ReloadCounts {
            generation: c.generation,
            done: c.done,
            refused: c.refused,
            freed: c.freed,
            reset: c.reset,
        }
    }
}

impl<S> core::fmt::Debug for Generations<S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Generations")
            .field("current", &self.current.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// A snapshot of [`Counters`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// See [`Counters::done`].
    pub done: u64,
    /// See [`Counters::refused`].
    pub refused: u64,
    /// See [`Counters::freed`].
    pub freed: u64,
    /// See [`Counters::reset`].
    pub reset: u64,
    /// The generation served (0: the site of the start).
    pub generation: u64,
}

/// How a reload's drain of the old image ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Drained {
    /// Milliseconds from the swap to the old image freed.
    pub ms: u64,
    /// Connections reset at the drain timeout.
    pub reset: u64,
}

impl<S: Copy> Generations<S> {
    /// Generation 0: `bytes` (a leaked `Box<[u8]>`, which these generations now own and
    /// free when replaced) and the site loaded from them, for `cores` cores.
    ///
    /// # Safety
    ///
    /// `bytes` must be a `Box<[u8]>` leaked (`Box::leak`) and used by nothing else once
    /// its generation is freed, except through `site` handed out by these generations.
    pub unsafe fn new(bytes: &'static [u8], site: S, cores: usize) -> Generations<S> {
        Generations {
            current: AtomicU64::new(0),
            slots: [Mutex::new(Some(Image { bytes, site })), Mutex::new(None)],
            cores: (0..cores).map(|_| CoreMark::default()).collect(),
            reset_old: AtomicBool::new(false),
            counters: Counters::default(),
        }
    }

    /// The cores it was made for.
    pub fn cores(&self) -> usize {
        self.cores.len()
    }

    /// The counters now.
    pub fn counts(&self) -> Counts {
        let c = &self.counters;
        Counts {
            done: c.done.load(Ordering::Relaxed),
            refused: c.refused.load(Ordering::Relaxed),
            freed: c.freed.load(Ordering::Relaxed),
            reset: c.reset.load(Ordering::Relaxed),
            generation: self.current.load(Ordering::Relaxed),
        }
    }

    /// Counts a refused reload.
    pub fn refuse(&self) {
        self.counters.refused.fetch_add(1, Ordering::Relaxed);
    }

    /// The site served now (the newest generation).
    pub fn site(&self) -> S {
        let g = self.current.load(Ordering::Acquire);
        self.image(g).site
    }

    fn image(&self, g: u64) -> Image<S> {
        let slot = self.slots[(g % 2) as usize]
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        // Generation `g` stays in its slot while it is published or draining.
        slot.expect("a published generation is in its slot")
    }

    /// Publishes a new generation and returns its number; every core swaps to it within
    /// a tick. The previous generation must be gone ([`Generations::drain`] returned).
    ///
    /// # Safety
    ///
    /// As [`Generations::new`] for `bytes`.
    pub unsafe fn publish(&self, bytes: &'static [u8], site: S) -> u64 {
        let g = self.current.load(Ordering::Relaxed) + 1;
        let mut slot = self.slots[(g % 2) as usize]
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        assert!(slot.is_none(), "two generations live at most");
        *slot = Some(Image { bytes, site });
        drop(slot);
        self.current.store(g, Ordering::Release);
        self.counters.done.fetch_add(1, Ordering::Relaxed);
        g
    }

    /// Whether every core serves generation `g` (its swap is done everywhere).
    pub fn swapped(&self, g: u64) -> bool {
        self.cores
            .iter()
            .all(|c| c.serving.load(Ordering::Acquire) >= g)
    }

    /// Whether no core holds anything of a generation older than `g`.
    pub fn clean(&self, g: u64) -> bool {
        self.cores
            .iter()
            .all(|c| c.clean.load(Ordering::Acquire) >= g)
    }

    /// Waits until generation `g - 1` may be freed, then frees it: every core swapped to
    /// `g` and none sends from `g - 1` any more; after `timeout` the cores reset the
    /// connections that still do. `wait` sleeps between looks (tests step instead).
    pub fn drain(&self, g: u64, timeout: Duration, mut wait: impl FnMut()) -> Drained {
        let start = Instant::now();
        let reset_before = self.counters.reset.load(Ordering::Relaxed);
        while !self.clean(g) {
            if start.elapsed() >= timeout {
                self.reset_old.store(true, Ordering::Release);
            }
            wait();
        }
        self.reset_old.store(false, Ordering::Release);
        self.free(g - 1);
        Drained {
            ms: start.elapsed().as_millis() as u64,
            reset: self.counters.reset.load(Ordering::Relaxed) - reset_before,
        }
    }

    fn free(&self, old: u64) {
        let image = self.slots[(old % 2) as usize]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(image) = image {
            let raw = core::ptr::from_ref::<[u8]>(image.bytes).cast_mut();
            // SAFETY: `bytes` was a leaked `Box<[u8]>` (the contract of `new` and
            // `publish`), freed once: its slot is emptied above. Every core has swapped to
            // a newer site and found no connection sending from this memory (or reset
            // them), on its own thread between rounds, so no reference into it is used
            // again (the module doc).
            drop(unsafe { Box::from_raw(raw) });
            self.counters.freed.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Core `core`'s part, between two of its rounds: swap to a newer generation if one
    /// was published, then look whether its connections still send from the old image
    /// (resetting them when the drain timed out).
    pub fn on_core(&self, core: usize, server: &mut impl Core<S>) {
        let Some(mark) = self.cores.get(core) else {
            return;
        };
        let serving = mark.serving.load(Ordering::Relaxed);
        let g = self.current.load(Ordering::Acquire);
        if g != serving {
            let old = self.image(serving).range();
            server.set_site(self.image(g).site);
            mark.old_start.store(old.start, Ordering::Relaxed);
            mark.old_end.store(old.end, Ordering::Relaxed);
            mark.serving.store(g, Ordering::Release);
        }
        let old = mark.old_start.load(Ordering::Relaxed)..mark.old_end.load(Ordering::Relaxed);
        if old.is_empty() {
            return;
        }
        if server.responses_in(old.clone()) > 0 {
            if !self.reset_old.load(Ordering::Acquire) {
                return;
            }
            let n = server.reset_responses_in(old);
            self.counters.reset.fetch_add(n as u64, Ordering::Relaxed);
        }
        mark.old_start.store(0, Ordering::Relaxed);
        mark.old_end.store(0, Ordering::Relaxed);
        mark.clean.store(g, Ordering::Release);
    }
}

impl<S> Drop for Generations<S> {
    fn drop(&mut self) {
        // The cores are gone: whatever is left is freed.
        for slot in &self.slots {
            let image = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(image) = image {
                // SAFETY: as in `free`: a leaked `Box<[u8]>`, freed once (taken from its
                // slot); the cores that used it have stopped.
                drop(unsafe { Box::from_raw(core::ptr::from_ref::<[u8]>(image.bytes).cast_mut()) });
            }
        }
    }
}

/// The hook that runs [`Generations::on_core`] on every core every [`SWAP_EVERY_NS`],
/// with `wrap` making the server's site type from a site.
pub struct Swap<'a, F> {
    /// The generations (`None`: no reload, the hook does nothing).
    pub gens: Option<&'a Generations<Site<'static>>>,
    /// Makes the servers' site type from a site (the stats page's wrapper around it).
    pub wrap: F,
}

/// How often a core looks for a new generation: the longest an idle host core sleeps
/// anyway (`cores::SLEEP_IDLE_US`), so the hook adds no wake-up.
pub const SWAP_EVERY_NS: u64 = 10_000_000;

impl<L, F> CoreHook<L> for Swap<'_, F>
where
    L: Lookup<'static>,
    F: Fn(Site<'static>) -> L + Sync,
{
    fn every_ns(&self) -> u64 {
        if self.gens.is_some() {
            SWAP_EVERY_NS
        } else {
            u64::MAX
        }
    }
    fn tick<N: Nic>(&self, core: usize, server: &mut Server<L>, nic: &mut N) {
        let Some(gens) = self.gens else { return };
        let mut c = ServerCore {
            server,
            nic,
            wrap: &self.wrap,
        };
        gens.on_core(core, &mut c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// A core as the generations see it: the site (a number) it serves and the addresses
    /// its connections' responses in flight send from.
    #[derive(Default)]
    struct FakeCore {
        site: u32,
        sending: Vec<usize>,
    }

    impl Core<u32> for FakeCore {
        fn set_site(&mut self, site: u32) {
            self.site = site;
        }
        fn responses_in(&self, range: Range<usize>) -> usize {
            self.sending.iter().filter(|a| range.contains(a)).count()
        }
        fn reset_responses_in(&mut self, range: Range<usize>) -> usize {
            let before = self.sending.len();
            self.sending.retain(|a| !range.contains(a));
            before - self.sending.len()
        }
    }

    fn image() -> &'static [u8] {
        Box::leak(vec![7u8; 256].into_boxed_slice())
    }

    fn addr(b: &[u8], at: usize) -> usize {
        b.as_ptr() as usize + at
    }

    /// A reload: every core swaps at its next tick; the old image is freed once the
    /// connection that still sent from it is done, and not before.
    #[test]
    fn the_old_image_is_freed_when_no_core_sends_from_it() {
        let old = image();
        // SAFETY: leaked boxes, used through these generations only.
        let gens = unsafe { Generations::new(old, 0u32, 2) };
        let mut cores = [FakeCore::default(), FakeCore::default()];
        cores[1].sending.push(addr(old, 100));
        let new = image();
        // SAFETY: as above.
        let g = unsafe { gens.publish(new, 1) };
        assert_eq!(g, 1);
        assert!(!gens.swapped(1), "no core has ticked");
        gens.on_core(0, &mut cores[0]);
        assert!(!gens.swapped(1));
        gens.on_core(1, &mut cores[1]);
        assert!(gens.swapped(1));
        assert_eq!((cores[0].site, cores[1].site), (1, 1));
        // Core 1 still sends from the old image: not clean.
        assert!(!gens.clean(1) && gens.counts().freed == 0);
        // A response from the new image does not hold the old one.
        cores[0].sending.push(addr(new, 3));
        let ticks = Cell::new(0);
        let drained = gens.drain(1, Duration::from_secs(3600), || {
            ticks.set(ticks.get() + 1);
            if ticks.get() == 3 {
                cores[1].sending.clear(); // acknowledged
            }
            for (k, c) in cores.iter_mut().enumerate() {
                gens.on_core(k, c);
            }
        });
        assert!(ticks.get() >= 3, "freed only after the response ended");
        assert_eq!(drained.reset, 0);
        let c = gens.counts();
        assert_eq!((c.done, c.freed, c.reset, c.generation), (1, 1, 0, 1));
        assert_eq!(gens.site(), 1);
    }

    /// At the drain timeout the connections still sending from the old image are reset
    /// and counted, then it is freed.
    #[test]
    fn the_drain_timeout_resets_what_holds_the_old_image() {
        let old = image();
        // SAFETY: leaked boxes, used through these generations only.
        let gens = unsafe { Generations::new(old, 0u32, 1) };
        let mut core = FakeCore::default();
        core.sending.extend([addr(old, 0), addr(old, 255)]);
        // SAFETY: as above.
        unsafe { gens.publish(image(), 1) };
        let drained = gens.drain(1, Duration::ZERO, || gens.on_core(0, &mut core));
        assert_eq!(drained.reset, 2);
        assert!(core.sending.is_empty());
        let c = gens.counts();
        assert_eq!((c.freed, c.reset), (1, 2));
    }

    /// Reload after reload: two generations at most, the slots reused; a core that slept
    /// through a whole reload still swaps to the newest and lets the old one go.
    #[test]
    fn generations_follow_each_other_in_two_slots() {
        // SAFETY: leaked boxes, used through these generations only.
        let gens = unsafe { Generations::new(image(), 0u32, 2) };
        let mut cores = [FakeCore::default(), FakeCore::default()];
        for g in 1..=5u32 {
            // SAFETY: as above.
            let n = unsafe { gens.publish(image(), g) };
            assert_eq!(n, u64::from(g));
            gens.drain(n, Duration::from_secs(3600), || {
                for (k, c) in cores.iter_mut().enumerate() {
                    gens.on_core(k, c);
                }
            });
            assert!(cores.iter().all(|c| c.site == g));
        }
        let c = gens.counts();
        assert_eq!((c.done, c.freed, c.generation), (5, 5, 5));
        // The old slot is empty again: at most the served image and none draining.
        assert!(
            gens.slots
                .iter()
                .filter(|s| s.lock().unwrap().is_some())
                .count()
                == 1
        );
    }

    /// Publishing while the previous image still drains would make three: refused.
    #[test]
    #[should_panic(expected = "two generations live at most")]
    fn a_third_generation_is_refused() {
        // SAFETY: leaked boxes, used through these generations only.
        let gens = unsafe { Generations::new(image(), 0u32, 1) };
        // SAFETY: as above.
        unsafe {
            gens.publish(image(), 1);
            gens.publish(image(), 2);
        }
    }
}
