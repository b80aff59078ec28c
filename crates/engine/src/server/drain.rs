//! Graceful drain, shared by every core: one [`Drain`] (leaked at start, named by
//! `Config::drain`) that the platform asks for (the host on SIGTERM, the kernel on the
//! ACPI power button) and that every core's server reads once per poll round, lock-free.
//!
//! The sequence (docs/design/drain.md), from the moment the first core sees the request:
//! - **grace** (`--drain-grace`): `/healthz` answers 503 `draining` (the stats board reads
//!   [`Drain::draining`]), new connections are still served, since a balancer takes time
//!   to notice; every response started now carries `Connection: close`;
//! - **closing**: new connections are refused (RST), idle kept-alive connections are
//!   closed (FIN), responses in flight finish and then close;
//! - **overdue** (`--drain-timeout`, counted from the start): what is left is reset.
//!
//! A core is done once closing or overdue finds it without connections; the last core done
//! ends the drain ([`Drain::finished`]), and the platform stops (the host process exits,
//! the kernel powers the machine off). The counts are kept here for the platform's final
//! line; each server also counts its own (`Stats::drain_closed`, `drain_reset`,
//! `drain_refused`) for the stats page and `/metrics`.

use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use super::Server;
use crate::nic::TxRing;
use crate::resource::Lookup;

/// Where a drain is, as one core sees it at one poll round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Phase {
    /// No drain asked for.
    #[default]
    Serving,
    /// Draining, new connections still served.
    Grace,
    /// Past the grace: no new connections, the others finish.
    Closing,
    /// Past the timeout: what is left is reset.
    Overdue,
}

impl Phase {
    /// Whether new connections are refused.
    pub fn refuses(self) -> bool {
        matches!(self, Phase::Closing | Phase::Overdue)
    }
}

/// Not started (in [`Drain::start_ns`]).
const NOT_STARTED: u64 = u64::MAX;

/// The drain shared by the cores.
#[derive(Debug)]
pub struct Drain {
    /// Asked for (one store: safe from a signal handler or an interrupt).
    requested: AtomicBool,
    /// When the first core saw the request (monotonic ns); [`NOT_STARTED`] before.
    start_ns: AtomicU64,
    grace_ns: u64,
    timeout_ns: u64,
    /// Servers taking part, and how many of them are done.
    cores: AtomicU32,
    done: AtomicU32,
    /// When the last core was done (monotonic ns; 0: not yet).
    finished_ns: AtomicU64,
    closed: AtomicU64,
    reset: AtomicU64,
    refused: AtomicU64,
}

/// What a drain did, over every core.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DrainCounts {
    /// Connections closed by the drain (a response with `Connection: close`, or an idle
    /// kept-alive connection closed after the grace).
    pub closed: u64,
    /// Connections reset at the timeout.
    pub reset: u64,
    /// New connections refused after the grace.
    pub refused: u64,
    /// Milliseconds from the start to the last core done (0: not finished).
    pub took_ms: u64,
}

impl Drain {
    /// A drain that keeps serving new connections for `grace_ms` and resets what is left
    /// at `timeout_ms` (both from its start; the grace is cut to the timeout), for one
    /// server until [`Drain::set_cores`] says how many.
    pub const fn new(grace_ms: u64, timeout_ms: u64) -> Drain {
        let timeout_ns = timeout_ms.saturating_mul(1_000_000);
        let grace_ns = grace_ms.saturating_mul(1_000_000);
        Drain {
            requested: AtomicBool::new(false),
            start_ns: AtomicU64::new(NOT_STARTED),
            grace_ns: if grace_ns < timeout_ns {
                grace_ns
            } else {
                timeout_ns
            },
            timeout_ns,
            cores: AtomicU32::new(1),
            done: AtomicU32::new(0),
            finished_ns: AtomicU64::new(0),
            closed: AtomicU64::new(0),
            reset: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        }
    }

    /// How many servers take part (every core that runs one); set before they start.
    pub fn set_cores(&self, n: u32) {
        self.cores.store(n.max(1), Ordering::Relaxed);
    }

    /// Asks for the drain. One atomic store: callable from a signal handler or an
    /// interrupt handler. Asking again changes nothing.
    pub fn request(&self) {
        self.requested.store(true, Ordering::Release);
    }

    /// Whether the drain was asked for (the `/healthz` answer and the `bareweb_draining`
    /// gauge follow this, from the request on).
    pub fn draining(&self) -> bool {
        self.requested.load(Ordering::Acquire)
    }

    /// The phase at `now_ns` (monotonic). The first core to see the request stamps its
    /// start. One relaxed load while no drain is asked for.
    pub fn phase(&self, now_ns: u64) -> Phase {
        if !self.requested.load(Ordering::Relaxed) {
            return Phase::Serving;
        }
        let start = match self.start_ns.compare_exchange(
            NOT_STARTED,
            now_ns,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => now_ns,
            Err(s) => s,
        };
        let since = now_ns.saturating_sub(start);
        if since >= self.timeout_ns {
            Phase::Overdue
        } else if since >= self.grace_ns {
            Phase::Closing
        } else {
            Phase::Grace
        }
    }

    /// When the drain started (monotonic ns), once a core saw it.
    pub fn start_ns(&self) -> Option<u64> {
        Some(self.start_ns.load(Ordering::Acquire)).filter(|&s| s != NOT_STARTED)
    }

    /// When the grace ends and when the timeout comes (monotonic ns), once started: a
    /// sleeping core wakes by then.
    pub fn deadlines(&self) -> Option<(u64, u64)> {
        let s = self.start_ns()?;
        Some((
            s.saturating_add(self.grace_ns),
            s.saturating_add(self.timeout_ns),
        ))
    }

    /// The grace and the timeout, in ms.
    pub fn limits_ms(&self) -> (u64, u64) {
        (self.grace_ns / 1_000_000, self.timeout_ns / 1_000_000)
    }

    /// One core is done at `now_ns`; true for the last one (it ends the drain).
    pub fn core_done(&self, now_ns: u64) -> bool {
        let n = self.done.fetch_add(1, Ordering::AcqRel) + 1;
        let last = n == self.cores.load(Ordering::Relaxed);
        if last {
            self.finished_ns.store(now_ns.max(1), Ordering::Release);
        }
        last
    }

    /// Whether every core is done.
    pub fn finished(&self) -> bool {
        self.finished_ns.load(Ordering::Acquire) != 0
    }

    /// Adds one core's counts (when it is done).
    pub fn add(&self, closed: u64, reset: u64, refused: u64) {
        self.closed.fetch_add(closed, Ordering::Relaxed);
        self.reset.fetch_add(reset, Ordering::Relaxed);
        self.refused.fetch_add(refused, Ordering::Relaxed);
    }

    /// What the drain did so far.
    pub fn counts(&self) -> DrainCounts {
        let took = match (self.start_ns(), self.finished_ns.load(Ordering::Acquire)) {
            (Some(s), f) if f != 0 => f.saturating_sub(s) / 1_000_000,
            _ => 0,
        };
        DrainCounts {
            closed: self.closed.load(Ordering::Relaxed),
            reset: self.reset.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
            took_ms: took,
        }
    }
}

impl<L: Lookup<'static>> Server<L> {
    /// The drain's phase for this round (one atomic load while none is asked for).
    pub(super) fn drain_begin(&mut self) {
        if let Some(d) = self.cfg.drain {
            self.drain_phase = d.phase(self.now_ns);
        }
    }

    /// The end of a round while draining past the grace: at the timeout every connection
    /// left is reset; once none is left, this core is done (counted once).
    pub(super) fn drain_end<T: TxRing>(&mut self, tx: &mut T) {
        let Some(d) = self.cfg.drain else { return };
        if self.drain_done || !self.drain_phase.refuses() {
            return;
        }
        if self.drain_phase == Phase::Overdue {
            let made = self.conns.tcbs().len();
            for id in 0..made as u32 {
                if !self.conns[id as usize].in_use() {
                    continue;
                }
                let seq = self.conns[id as usize].tcp.snd_nxt();
                self.send_reset_raw(id, seq, tx);
                self.free_tcb(id);
                self.stats.drain_reset += 1;
            }
        }
        if self.active() == 0 {
            self.drain_done = true;
            let s = &self.stats;
            d.add(s.drain_closed, s.drain_reset, s.drain_refused);
            d.core_done(self.now_ns);
        }
    }

    /// The drain's phase as this server last saw it.
    pub fn drain_phase(&self) -> Phase {
        self.drain_phase
    }

    /// Whether this server is done draining: past the grace, no connection left.
    pub fn drained(&self) -> bool {
        self.drain_done
    }

    /// When a draining server must poll again at the latest (monotonic ns; `u64::MAX`:
    /// not draining, or the drain over): the grace's end and the timeout; past the grace,
    /// the next timer scan, which closes the connections that became idle; done here
    /// while other cores are not, the next tick (its loop must see the drain end).
    pub(super) fn drain_deadline(&self) -> u64 {
        let Some(d) = self.cfg.drain else {
            return u64::MAX;
        };
        let Some((grace_end, timeout)) = d.deadlines() else {
            return u64::MAX;
        };
        if self.drain_done {
            // Done here: poll on until every core is, so this core's loop sees the end.
            if d.finished() {
                u64::MAX
            } else {
                self.next_tick_ns
            }
        } else if self.drain_phase.refuses() {
            self.next_tick_ns.min(timeout)
        } else {
            grace_end
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn phases_follow_the_first_core_to_see_the_request() {
        let d = Drain::new(5_000, 30_000);
        assert_eq!(d.phase(7 * MS), Phase::Serving);
        assert!(!d.draining() && d.start_ns().is_none());
        d.request();
        assert!(d.draining());
        assert_eq!(d.phase(100 * MS), Phase::Grace);
        // A later core's reading does not move the start.
        assert_eq!(d.phase(200 * MS), Phase::Grace);
        assert_eq!(d.start_ns(), Some(100 * MS));
        assert_eq!(d.deadlines(), Some((5_100 * MS, 30_100 * MS)));
        assert_eq!(d.phase(5_099 * MS), Phase::Grace);
        assert_eq!(d.phase(5_100 * MS), Phase::Closing);
        assert!(d.phase(5_100 * MS).refuses() && !Phase::Grace.refuses());
        assert_eq!(d.phase(30_100 * MS), Phase::Overdue);
    }

    #[test]
    fn the_grace_is_cut_to_the_timeout_and_the_last_core_ends_the_drain() {
        let d = Drain::new(10_000, 2_000);
        assert_eq!(d.limits_ms(), (2_000, 2_000));
        d.set_cores(2);
        d.request();
        assert_eq!(d.phase(0), Phase::Grace);
        assert_eq!(d.phase(2_000 * MS), Phase::Overdue);
        d.add(3, 0, 1);
        assert!(!d.core_done(2_500 * MS));
        assert!(!d.finished());
        d.add(1, 2, 0);
        assert!(d.core_done(3_000 * MS));
        assert!(d.finished());
        assert_eq!(
            d.counts(),
            DrainCounts {
                closed: 4,
                reset: 2,
                refused: 1,
                took_ms: 3_000
            }
        );
    }
}
