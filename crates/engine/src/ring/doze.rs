//! Sleeping without lost wake-ups: a consumer that found its rings empty may sleep, and
//! the producer that fills one of them then rings its bell.
//!
//! The protocol is Dekker's, on two SeqCst fences:
//!
//! - the sleeper calls [`Doze::announce`] (flag set, then a fence), checks its rings once
//!   more, and sleeps only if they are still empty; on waking it calls [`Doze::awake`];
//! - a producer publishes its slot (the ring's Release store) and then calls
//!   [`Doze::nudge`] (a fence, then the flag read): if the flag is set it clears it and
//!   rings the bell, once, however many producers nudge.
//!
//! Whichever fence comes second in the total order of SeqCst operations sees the other
//! side's store, so either the sleeper sees the new slot and does not sleep, or the
//! producer sees the flag and rings. The bell is the platform's (an eventfd on Linux);
//! a doze without a bell ([`Doze::none`]) is never announced, costs one branch per nudge,
//! and serves platforms whose cores never sleep (the kernel's poll loop). Sleepers should
//! still bound their sleep: the bell is a latency measure, not the only way to make
//! progress.

use alloc::boxed::Box;

use super::sync::{fence, Arc, AtomicBool, Ordering};

/// What wakes a sleeping core (called by a producer, on its thread).
pub type Bell = Box<dyn Fn() + Send + Sync>;

struct Inner {
    asleep: AtomicBool,
    bell: Option<Bell>,
}

/// One core's "about to sleep" flag and its bell, shared by the core and its producers.
#[derive(Clone)]
pub struct Doze(Arc<Inner>);

impl Doze {
    /// A doze whose sleeper is woken by `bell`.
    pub fn new(bell: Bell) -> Doze {
        Doze(Arc::new(Inner {
            asleep: AtomicBool::new(false),
            bell: Some(bell),
        }))
    }

    /// A doze for a core that never sleeps: [`Doze::nudge`] never rings.
    pub fn none() -> Doze {
        Doze(Arc::new(Inner {
            asleep: AtomicBool::new(false),
            bell: None,
        }))
    }

    /// Whether this doze has a bell (a sleeper may rely on being woken).
    pub fn has_bell(&self) -> bool {
        self.0.bell.is_some()
    }

    /// The sleeper: "I am about to sleep". Check the rings again after this, then sleep
    /// only if they are empty.
    pub fn announce(&self) {
        self.0.asleep.store(true, Ordering::Relaxed);
        fence(Ordering::SeqCst);
    }

    /// The sleeper: "I am awake" (after sleeping, or after the re-check found work).
    pub fn awake(&self) {
        self.0.asleep.store(false, Ordering::Relaxed);
    }

    /// A producer, after publishing work: rings the bell if the sleeper announced sleep
    /// and nobody has rung since. Returns whether it rang.
    pub fn nudge(&self) -> bool {
        // A doze without a bell is never announced: no fence needed.
        let Some(bell) = &self.0.bell else {
            return false;
        };
        fence(Ordering::SeqCst);
        if self.0.asleep.load(Ordering::Relaxed) && self.0.asleep.swap(false, Ordering::Relaxed) {
            bell();
            return true;
        }
        false
    }
}

impl core::fmt::Debug for Doze {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Doze")
            .field("asleep", &self.0.asleep.load(Ordering::Relaxed))
            .field("bell", &self.0.bell.is_some())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use core::sync::atomic::AtomicUsize;

    fn counting() -> (Doze, Arc<AtomicUsize>) {
        let rung = Arc::new(AtomicUsize::new(0));
        let r = rung.clone();
        let d = Doze::new(Box::new(move || {
            r.fetch_add(1, Ordering::Relaxed);
        }));
        (d, rung)
    }

    #[test]
    fn nudge_rings_only_a_sleeper_and_only_once() {
        let (d, rung) = counting();
        assert!(!d.nudge(), "an awake core is not rung");
        d.announce();
        let other = d.clone();
        assert!(other.nudge());
        assert!(!d.nudge(), "a second producer does not ring again");
        assert_eq!(rung.load(Ordering::Relaxed), 1);
        d.awake();
        d.announce();
        d.awake();
        assert!(!d.nudge(), "a sleeper that woke by itself is not rung");
        assert_eq!(rung.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn a_doze_without_bell_never_rings() {
        let d = Doze::none();
        assert!(!d.has_bell());
        d.announce();
        assert!(!d.nudge());
    }
}
