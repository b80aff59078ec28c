//! The per-core loop both platforms run: poll the core's `Server` over its queue pair,
//! decide idle or busy, publish to the stats board, and let the platform idle its way
//! (the kernel: poll, then halt until an interrupt; the host: spin, then sleep or wait on
//! the device).
//!
//! The idle policy is written once, here: [`SpinThenSleep`] spins while the platform says
//! so, then asks how long it may sleep, announces the sleep to whatever can wake the core
//! (and looks for work once more), sleeps, and wakes. Each platform implements only the
//! steps, as [`Sleep`]: the kernel spins with PAUSE for an adaptive spell and halts until
//! an interrupt (its NIC, its timer, another core's IPI); the host spins a number of polls
//! and waits in `poll(2)` on the device's descriptors and an eventfd.
//!
//! Underneath, a platform's hook is an [`IdleHook`]: at an empty poll it is handed a
//! [`Quiet`], through which it asks when the core must run again (the server's next timer
//! deadline, the loop's next tick) and has the core's row published before it sleeps, and
//! it reports its sleeps as [`SleepCounters`] for the board. A closure
//! `FnMut(&mut N, Idle)` is the simple hook.
//!
//! Never allocates; stops when the platform's stop flag is set, or when a graceful drain
//! (`server::drain`) has finished on every core (then it sets the flag itself).

use core::sync::atomic::{AtomicBool, Ordering};

use super::board::Board;
use super::{CoreQueue, DispatchCounters};
use crate::nic::{Clock, NicCounters};
use crate::resource::Lookup;
use crate::server::{AccessLog, Server};

/// How often a core publishes its row to the board.
pub const PUBLISH_NS: u64 = 10_000_000;

/// What a core's loop needs besides its server and queue pair.
pub struct CoreCtx<'a> {
    /// This core's number (its board row).
    pub core: usize,
    /// The board to publish to, if the stats are on.
    pub board: Option<&'a Board>,
    /// Set by the platform to stop every core.
    pub stop: &'a AtomicBool,
}

/// What the idle hook is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Idle {
    /// Empty polls in a row so far (at least 1).
    pub polls: u32,
    /// Connections the core's server holds (a platform may nap shorter when some are
    /// open, since frames for them can come from other cores' rings).
    pub connections: usize,
    /// Nanoseconds since the first empty poll of this idle spell.
    pub idle_ns: u64,
    /// Microseconds until the server's next timer scan is due (0: now): a platform that
    /// sleeps wakes by then, or a loss probe a few milliseconds out would wait for the
    /// sleep to end.
    pub timer_in_us: u64,
}

/// What the loop offers an idle hook about to sleep.
pub trait Quiet {
    /// The monotonic time (ns) by which the core must poll again: the server's next timer
    /// deadline or the loop's next tick; 0 if work waits already, `u64::MAX` if nothing is
    /// due. Scans the server's connections: ask once per sleep, not per poll.
    fn wake_at_ns(&mut self) -> u64;
    /// Publishes the core's row to the board now, so it is current while the core sleeps.
    fn publish(&mut self);
}

/// How a core's sleeps went (zero for a platform that never sleeps), on the board.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SleepCounters {
    /// Times the core slept (halted, or waited on the device).
    pub sleeps: u64,
    /// Nanoseconds asleep.
    pub slept_ns: u64,
    /// Sleeps ended by the device (a NIC interrupt).
    pub woken_by_device: u64,
    /// Sleeps ended by the timer (a deadline).
    pub woken_by_timer: u64,
    /// Sleeps ended by another core (a wake-up from a ring producer).
    pub woken_by_core: u64,
}

/// A platform's idle policy, called after every empty poll.
pub trait IdleHook<N> {
    /// The poll found nothing to do: spin, sleep or wait, as the platform does.
    fn idle(&mut self, nic: &mut N, state: Idle, quiet: &mut dyn Quiet);
    /// The sleeps so far, for the board.
    fn sleeps(&self) -> SleepCounters {
        SleepCounters::default()
    }
}

/// A closure as an idle hook: called with the queue pair and the idle state.
pub struct Simple<F>(pub F);

impl<N, F: FnMut(&mut N, Idle)> IdleHook<N> for Simple<F> {
    fn idle(&mut self, nic: &mut N, state: Idle, _: &mut dyn Quiet) {
        (self.0)(nic, state)
    }
}

/// A platform's steps for resting an idle core; [`SpinThenSleep`] takes them in order.
pub trait Sleep<N> {
    /// How the platform says when a sleep ends (the kernel: a monotonic time in ns; the
    /// host: microseconds to wait).
    type Until: Copy;
    /// Whether to spin at this empty poll rather than sleep; a spin relaxes the CPU here
    /// (PAUSE, `spin_loop`) and the core polls again.
    fn spin(&mut self, state: &Idle) -> bool;
    /// When the sleep must end at the latest; None: not at all, work is due. A platform
    /// that sleeps long publishes the core's row here ([`Quiet::publish`]).
    fn until(&mut self, nic: &mut N, state: &Idle, quiet: &mut dyn Quiet) -> Option<Self::Until>;
    /// Announces the sleep to whatever can wake the core (a NIC interrupt, the core's
    /// doze) and looks for work once more: true if some came, announcement undone (do
    /// not sleep).
    fn announce(&mut self, nic: &mut N) -> bool;
    /// Sleeps until woken or `until`.
    fn sleep(&mut self, nic: &mut N, until: Self::Until);
    /// Undoes [`Sleep::announce`] after the sleep (and counts it).
    fn awake(&mut self, nic: &mut N);
    /// The sleeps so far, for the board.
    fn sleeps(&self) -> SleepCounters {
        SleepCounters::default()
    }
}

/// The idle policy of every platform: spin, then announce, then sleep (the steps are the
/// platform's [`Sleep`]). An announced sleep is taken only if no work came in between,
/// so no wake-up is lost: a producer that sees the announcement wakes the core.
pub struct SpinThenSleep<S>(pub S);

impl<N, S: Sleep<N>> IdleHook<N> for SpinThenSleep<S> {
    fn idle(&mut self, nic: &mut N, state: Idle, quiet: &mut dyn Quiet) {
        let s = &mut self.0;
        if s.spin(&state) {
            return;
        }
        let Some(until) = s.until(nic, &state, quiet) else {
            return;
        };
        if s.announce(nic) {
            return;
        }
        s.sleep(nic, until);
        s.awake(nic);
    }

    fn sleeps(&self) -> SleepCounters {
        self.0.sleeps()
    }
}

/// What one core did, returned when it stops.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunSummary {
    /// Nanoseconds from start to stop.
    pub elapsed_ns: u64,
    /// Polls that found nothing to do.
    pub idle_polls: u64,
}

fn activity(c: &DispatchCounters) -> u64 {
    c.dispatched.wrapping_add(c.drained)
}

/// Runs one core until `ctx.stop` is set. `idle(nic, state)` is called after every empty
/// poll: the platform spins, sleeps or waits for the device there.
pub fn run_core<L, N, C, A>(
    server: &mut Server<L>,
    nic: &mut N,
    clock: &C,
    log: &mut A,
    ctx: &CoreCtx<'_>,
    idle: impl FnMut(&mut N, Idle),
) -> RunSummary
where
    L: Lookup<'static>,
    N: CoreQueue,
    C: Clock,
    A: AccessLog,
{
    run_core_ticking(server, nic, clock, log, ctx, idle, u64::MAX, |_, _| {})
}

/// [`run_core`] that also calls `tick(server, nic)` every `every_ns` of the loop, busy or
/// idle, between rounds (the kernel prints its console counters line from there; the
/// host swaps a reloaded site in: `Server::set_site`).
#[allow(clippy::too_many_arguments)]
pub fn run_core_ticking<L, N, C, A>(
    server: &mut Server<L>,
    nic: &mut N,
    clock: &C,
    log: &mut A,
    ctx: &CoreCtx<'_>,
    idle: impl FnMut(&mut N, Idle),
    every_ns: u64,
    tick: impl FnMut(&mut Server<L>, &mut N),
) -> RunSummary
where
    L: Lookup<'static>,
    N: CoreQueue,
    C: Clock,
    A: AccessLog,
{
    run_core_hooked(
        server,
        nic,
        clock,
        log,
        ctx,
        &mut Simple(idle),
        every_ns,
        tick,
    )
}

/// The quiet moment of one core's loop: what an [`IdleHook`] may ask before it sleeps.
struct Moment<'a, L: Lookup<'static>> {
    server: &'a Server<L>,
    ctx: &'a CoreCtx<'a>,
    /// The queue pair's counters as of this empty poll (the hook holds the queue pair).
    counters: (NicCounters, DispatchCounters),
    next_tick: u64,
    elapsed_ns: u64,
    idle_polls: u64,
    sleeps: SleepCounters,
}

impl<L: Lookup<'static>> Quiet for Moment<'_, L> {
    fn wake_at_ns(&mut self) -> u64 {
        self.server.next_deadline_ns().min(self.next_tick)
    }

    fn publish(&mut self) {
        if let Some(board) = self.ctx.board {
            publish(
                board,
                self.ctx.core,
                self.server,
                &self.counters,
                self.elapsed_ns,
                self.idle_polls,
                &self.sleeps,
            );
        }
    }
}

/// [`run_core_ticking`] with an [`IdleHook`]: the loop of a platform that sleeps (the
/// kernel's halting cores).
#[allow(clippy::too_many_arguments)]
pub fn run_core_hooked<L, N, C, A, H>(
    server: &mut Server<L>,
    nic: &mut N,
    clock: &C,
    log: &mut A,
    ctx: &CoreCtx<'_>,
    hook: &mut H,
    every_ns: u64,
    mut tick: impl FnMut(&mut Server<L>, &mut N),
) -> RunSummary
where
    L: Lookup<'static>,
    N: CoreQueue,
    C: Clock,
    A: AccessLog,
    H: IdleHook<N>,
{
    let start = clock.now_ns();
    // The first tick comes after the first round: what a hook keeps in step with the
    // server (a NIC's filter, a steering map) is set before the link has sent anything.
    let mut next_tick = start;
    let mut idle_polls = 0u64;
    let mut idle_run = 0u32;
    let mut idle_since = start;
    let mut next_publish = start;
    let mut last = activity(&nic.dispatch_counters());
    while !ctx.stop.load(Ordering::Relaxed) {
        let mut worked = server.poll(nic, clock, log);
        nic.connections_closed(server.closed());
        if server.config().drain.is_some_and(|d| d.finished()) {
            // The last core to finish a drain ended it: every core stops.
            ctx.stop.store(true, Ordering::Relaxed);
        }
        if server.take_address_change() {
            let (ip, prefix_len, gateway) = server.address();
            nic.set_address(ip, prefix_len, gateway);
        }
        let dispatch = nic.dispatch_counters();
        let a = activity(&dispatch);
        // Core 0 in network-core mode may forward and drain without its server working.
        worked |= a != last;
        last = a;
        let now = clock.now_ns();
        if let Some(board) = ctx.board {
            if now >= next_publish {
                next_publish = now + PUBLISH_NS;
                let counters = (nic.counters(), dispatch);
                let sleeps = hook.sleeps();
                publish(
                    board,
                    ctx.core,
                    server,
                    &counters,
                    now - start,
                    idle_polls,
                    &sleeps,
                );
            }
        }
        // Also at once when the IPv6 link's destinations changed: what a hook keeps in step
        // with them (a NIC's filter, AF_XDP's map) must be before a new address's DAD
        // probe goes.
        // And on core 0 while frames wait for the server's own client connection
        // (`server::divert`), which its hook takes.
        if now >= next_tick
            || server.take_ipv6_destinations_change()
            || (ctx.core == 0 && server.config().divert.is_some_and(|d| d.pending()))
        {
            next_tick = now.saturating_add(every_ns);
            tick(server, nic);
        }
        if worked {
            idle_run = 0;
        } else {
            idle_polls += 1;
            if idle_run == 0 {
                idle_since = now;
            }
            idle_run = idle_run.saturating_add(1);
            let state = Idle {
                polls: idle_run,
                connections: server.active(),
                idle_ns: now - idle_since,
                timer_in_us: server.next_timer_ns().saturating_sub(now) / 1000,
            };
            let mut moment = Moment {
                server,
                ctx,
                counters: (nic.counters(), dispatch),
                next_tick,
                elapsed_ns: now - start,
                idle_polls,
                sleeps: hook.sleeps(),
            };
            hook.idle(nic, state, &mut moment);
        }
    }
    let elapsed_ns = clock.now_ns().saturating_sub(start);
    if let Some(board) = ctx.board {
        publish(
            board,
            ctx.core,
            server,
            &(nic.counters(), nic.dispatch_counters()),
            elapsed_ns,
            idle_polls,
            &hook.sleeps(),
        );
    }
    RunSummary {
        elapsed_ns,
        idle_polls,
    }
}

fn publish<L: Lookup<'static>>(
    board: &Board,
    core: usize,
    server: &Server<L>,
    (nic, dispatch): &(NicCounters, DispatchCounters),
    elapsed_ns: u64,
    idle_polls: u64,
    sleeps: &SleepCounters,
) {
    board.publish_server(core, server.stats(), server.times(), server.stay());
    board.publish_run(core, nic, dispatch, elapsed_ns, idle_polls);
    board.publish_sleeps(core, sleeps);
}

#[cfg(test)]
mod tests {
    use core::cell::Cell;
    use std::sync::atomic::AtomicBool;

    use super::*;
    use crate::cores::board::{Role, JSON_MAX};
    use crate::fake::FakeNic;
    use crate::resource::Found;
    use crate::server::{Config, NoLog};
    use crate::wire::{EthernetAddress, Ipv4Address};

    /// A clock that moves 1 ms at every read.
    struct Steps(Cell<u64>);

    impl Clock for Steps {
        fn now_ns(&self) -> u64 {
            let t = self.0.get() + 1_000_000;
            self.0.set(t);
            t
        }
        fn unix_secs(&self) -> u64 {
            1_700_000_000
        }
    }

    #[derive(Clone, Copy)]
    struct Empty;

    impl Lookup<'static> for Empty {
        fn lookup(&self, _: &[u8]) -> Found<'static> {
            Found::NotFound
        }
    }

    #[test]
    fn ticks_come_on_time_on_an_idle_core_and_publish_happens() {
        let mac = EthernetAddress([2, 0, 0, 0, 0, 2]);
        let mut cfg = Config::new(Ipv4Address([10, 0, 0, 2]), 24, [0x42; 16]);
        cfg.tcbs = 4;
        let mut server = Server::new(cfg, Empty, mac);
        let mut nic = FakeNic::new(mac);
        let board = Board::new("single", &[Role::Single]);
        let stop = AtomicBool::new(false);
        let ctx = CoreCtx {
            core: 0,
            board: Some(&board),
            stop: &stop,
        };
        let clock = Steps(Cell::new(0));
        let mut ticks = Vec::new();
        let sum = run_core_ticking(
            &mut server,
            &mut nic,
            &clock,
            &mut NoLog,
            &ctx,
            |_, _| {},
            20_000_000,
            |s, _| {
                ticks.push(clock.0.get());
                if ticks.len() == 3 {
                    stop.store(true, Ordering::Relaxed);
                }
                let _ = s.stats();
            },
        );
        assert_eq!(ticks.len(), 3);
        // Every tick is at least 20 ms after the previous one.
        assert!(
            ticks.windows(2).all(|w| w[1] - w[0] >= 20_000_000),
            "{ticks:?}"
        );
        assert!(sum.idle_polls > 0);
        let mut buf = vec![0u8; JSON_MAX];
        let n = board.render_json(&mut buf).unwrap();
        let json = core::str::from_utf8(&buf[..n]).unwrap();
        assert!(
            !json.contains("\"elapsed_ns\":0,"),
            "the run was published: {json}"
        );
        // run_core itself never ticks: it stops only on the flag.
        stop.store(true, Ordering::Relaxed);
        let s = run_core(&mut server, &mut nic, &clock, &mut NoLog, &ctx, |_, _| {});
        assert_eq!(s.idle_polls, 0);
    }

    /// A hook that sleeps (moves the clock) at every 3rd empty poll and records what the
    /// loop told it.
    struct Napper<'a> {
        clock: &'a Steps,
        stop: &'a AtomicBool,
        seen: Vec<(u32, u64, u64)>,
        sleeps: SleepCounters,
    }

    impl<N> IdleHook<N> for Napper<'_> {
        fn idle(&mut self, _: &mut N, state: Idle, quiet: &mut dyn Quiet) {
            if !state.polls.is_multiple_of(3) {
                return;
            }
            let wake = quiet.wake_at_ns();
            quiet.publish();
            self.seen.push((state.polls, state.idle_ns, wake));
            self.sleeps.sleeps += 1;
            self.sleeps.slept_ns += 5_000_000;
            self.sleeps.woken_by_timer += 1;
            self.clock.0.set(self.clock.0.get() + 5_000_000);
            if self.seen.len() == 4 {
                self.stop.store(true, Ordering::Relaxed);
            }
        }

        fn sleeps(&self) -> SleepCounters {
            self.sleeps
        }
    }

    /// Records the steps the policy takes.
    struct Steps3 {
        spins: u32,
        due: bool,
        work: bool,
        log: Vec<&'static str>,
    }

    impl<N> Sleep<N> for Steps3 {
        type Until = u64;
        fn spin(&mut self, state: &Idle) -> bool {
            let spin = state.polls <= self.spins;
            if spin {
                self.log.push("spin");
            }
            spin
        }
        fn until(&mut self, _: &mut N, _: &Idle, _: &mut dyn Quiet) -> Option<u64> {
            self.log.push("until");
            (!self.due).then_some(7)
        }
        fn announce(&mut self, _: &mut N) -> bool {
            self.log.push("announce");
            self.work
        }
        fn sleep(&mut self, _: &mut N, until: u64) {
            assert_eq!(until, 7);
            self.log.push("sleep");
        }
        fn awake(&mut self, _: &mut N) {
            self.log.push("awake");
        }
    }

    struct NoQuiet;

    impl Quiet for NoQuiet {
        fn wake_at_ns(&mut self) -> u64 {
            u64::MAX
        }
        fn publish(&mut self) {}
    }

    #[test]
    fn the_policy_spins_then_announces_then_sleeps_and_skips_the_sleep_when_work_came() {
        let idle = |polls| Idle {
            polls,
            connections: 0,
            idle_ns: 0,
            timer_in_us: 0,
        };
        let run = |due, work| {
            let mut p = SpinThenSleep(Steps3 {
                spins: 2,
                due,
                work,
                log: Vec::new(),
            });
            for polls in 1..=3 {
                p.idle(&mut (), idle(polls), &mut NoQuiet);
            }
            p.0.log
        };
        assert_eq!(
            run(false, false),
            ["spin", "spin", "until", "announce", "sleep", "awake"]
        );
        assert_eq!(run(false, true), ["spin", "spin", "until", "announce"]);
        assert_eq!(run(true, false), ["spin", "spin", "until"]);
    }

    #[test]
    fn a_sleeping_hook_is_told_the_next_tick_and_its_sleeps_reach_the_board() {
        let mac = EthernetAddress([2, 0, 0, 0, 0, 2]);
        let mut cfg = Config::new(Ipv4Address([10, 0, 0, 2]), 24, [0x42; 16]);
        cfg.tcbs = 4;
        let mut server = Server::new(cfg, Empty, mac);
        let mut nic = FakeNic::new(mac);
        let board = Board::new("single", &[Role::Single]);
        let stop = AtomicBool::new(false);
        let ctx = CoreCtx {
            core: 0,
            board: Some(&board),
            stop: &stop,
        };
        let clock = Steps(Cell::new(0));
        let mut hook = Napper {
            clock: &clock,
            stop: &stop,
            seen: Vec::new(),
            sleeps: SleepCounters::default(),
        };
        run_core_hooked(
            &mut server,
            &mut nic,
            &clock,
            &mut NoLog,
            &ctx,
            &mut hook,
            1_000_000_000,
            |_, _| {},
        );
        assert_eq!(hook.seen.len(), 4);
        for &(polls, idle_ns, wake) in &hook.seen {
            assert!(polls.is_multiple_of(3));
            assert!(
                idle_ns > 0,
                "the spell has lasted since its first empty poll"
            );
            // No connection: nothing is due but the loop's own tick, 1 s after the first,
            // which came after the first round (the clock read then: 3 ms).
            assert_eq!(wake, 1_000_000_000 + 3_000_000, "{:?}", hook.seen);
        }
        let snap = board.snapshot(0);
        assert_eq!(snap.sleeps().sleeps, 4, "published after the last sleep");
        let mut buf = vec![0u8; JSON_MAX];
        let n = board.render_json(&mut buf).unwrap();
        let json = core::str::from_utf8(&buf[..n]).unwrap();
        assert!(json.contains("\"sleep_ns\":20000000,"), "{json}");
    }
}
