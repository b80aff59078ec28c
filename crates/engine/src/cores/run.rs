//! The per-core loop both platforms run: poll the core's `Server` over its queue pair,
//! decide idle or busy, publish to the stats board, and let the platform idle its way
//! (the kernel: `pause`/`hlt`; the host: spin, then sleep or wait on the device).
//!
//! Never allocates; stops when the platform's stop flag is set.

use core::sync::atomic::{AtomicBool, Ordering};

use super::board::Board;
use crate::nic::{Clock, Nic, NicCounters};
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
}

/// What one core did, returned when it stops.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunSummary {
    /// Nanoseconds from start to stop.
    pub elapsed_ns: u64,
    /// Polls that found nothing to do.
    pub idle_polls: u64,
}

fn activity(c: &NicCounters) -> u64 {
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
    mut idle: impl FnMut(&mut N, Idle),
) -> RunSummary
where
    L: Lookup<'static>,
    N: Nic,
    C: Clock,
    A: AccessLog,
{
    let start = clock.now_ns();
    let mut idle_polls = 0u64;
    let mut idle_run = 0u32;
    let mut next_publish = start;
    let mut last = activity(&nic.counters());
    while !ctx.stop.load(Ordering::Relaxed) {
        let mut worked = server.poll(nic, clock, log);
        let counters = nic.counters();
        let a = activity(&counters);
        // Core 0 in network-core mode may forward and drain without its server working.
        worked |= a != last;
        last = a;
        let now = clock.now_ns();
        if let Some(board) = ctx.board {
            if now >= next_publish {
                next_publish = now + PUBLISH_NS;
                publish(board, ctx.core, server, &counters, now - start, idle_polls);
            }
        }
        if worked {
            idle_run = 0;
        } else {
            idle_polls += 1;
            idle_run = idle_run.saturating_add(1);
            let state = Idle {
                polls: idle_run,
                connections: server.active(),
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
            &nic.counters(),
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
    counters: &NicCounters,
    elapsed_ns: u64,
    idle_polls: u64,
) {
    board.publish_server(core, server.stats(), server.times(), server.stay());
    board.publish_run(core, counters, elapsed_ns, idle_polls);
}
