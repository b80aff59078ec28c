//! The per-core loop both platforms run: poll the core's `Server` over its queue pair,
//! decide idle or busy, publish to the stats board, and let the platform idle its way
//! (the kernel: `pause`/`hlt`; the host: spin, then sleep or wait on the device).
//!
//! Never allocates; stops when the platform's stop flag is set.

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
    /// Microseconds until the server's next timer scan is due (0: now): a platform that
    /// sleeps wakes by then, or a loss probe a few milliseconds out would wait for the
    /// sleep to end.
    pub timer_in_us: u64,
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
/// idle (the kernel prints its console counters line from there).
#[allow(clippy::too_many_arguments)]
pub fn run_core_ticking<L, N, C, A>(
    server: &mut Server<L>,
    nic: &mut N,
    clock: &C,
    log: &mut A,
    ctx: &CoreCtx<'_>,
    mut idle: impl FnMut(&mut N, Idle),
    every_ns: u64,
    mut tick: impl FnMut(&Server<L>, &N),
) -> RunSummary
where
    L: Lookup<'static>,
    N: CoreQueue,
    C: Clock,
    A: AccessLog,
{
    let start = clock.now_ns();
    let mut next_tick = start.saturating_add(every_ns);
    let mut idle_polls = 0u64;
    let mut idle_run = 0u32;
    let mut next_publish = start;
    let mut last = activity(&nic.dispatch_counters());
    while !ctx.stop.load(Ordering::Relaxed) {
        let mut worked = server.poll(nic, clock, log);
        nic.connections_closed(server.closed());
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
                publish(board, ctx.core, server, &counters, now - start, idle_polls);
            }
        }
        if now >= next_tick {
            next_tick = now.saturating_add(every_ns);
            tick(server, nic);
        }
        if worked {
            idle_run = 0;
        } else {
            idle_polls += 1;
            idle_run = idle_run.saturating_add(1);
            let state = Idle {
                polls: idle_run,
                connections: server.active(),
                timer_in_us: server.next_timer_ns().saturating_sub(now) / 1000,
            };
            idle(nic, state);
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
) {
    board.publish_server(core, server.stats(), server.times(), server.stay());
    board.publish_run(core, nic, dispatch, elapsed_ns, idle_polls);
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
}
