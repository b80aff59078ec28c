//! Alternative runners around the same engine (the parallel-runner study of the
//! OpenMP paper, Balart et al., "Experiences parallelizing a Web Server with OpenMP"): the
//! four versions of Boa the paper compares, built from the engine's split round
//! (`Server::begin / receive / take_ready / step / tick`), next to our default runner,
//! `pinned` (one whole `Server` per core, nothing shared: `cores::run`).
//!
//! | runner | paper | threads |
//! |---|---|---|
//! | [`Runner::Serial`] | original Boa: one thread, ready/blocked loop | 1 |
//! | [`Runner::Pool`] | boa-pthreads: one network thread produces ready connections, the others consume them from the locked ready queue (Fig. 3) | 1 network + N−1 workers |
//! | [`Runner::Workshare`] | boa-omp: every thread traverses the ready queue of a pass together (`single nowait` per element), barrier per pass, the master receives (Fig. 4) | N, thread 0 the master |
//! | [`Runner::Tasks`] | boa-dsections: no ready queue in the runner; a task per ready connection in work-stealing deques (Fig. 5) | 1 producer + N−1 task runners |
//!
//! **What is shared, and what it costs.** All connection state is in one `Server`; the
//! shared-server runners keep it behind one `Mutex` (Boa's several locks — ready queue,
//! blocked queue, globals, file cache, log — become one, because our engine keeps them
//! all in one structure). A thread holds the lock only to run engine code; the system
//! calls are made outside it: the network thread reads its burst of frames before taking
//! the lock, and every thread builds its frames into its own [`batch::TxBatch`] under the
//! lock and writes them to the device (`writev` on the TAP, each thread through its own
//! duplicate of the fd) after letting go, as Boa's threads overlapped their file I/O. A
//! thread's time is split into RCV (reading and receiving), HTTP (steps), SEND (writing
//! its batch), lock wait (for the `Server`, and in workshare for the team at the end of a
//! pass) and Main (idle); the stats board shows one row per thread and one for the shared
//! `Server` (its counters).
//!
//! The shared-server runners are not pinned to CPUs: the OS places their threads, as it
//! placed Boa's. With one thread, each of them runs its whole protocol on that thread
//! (the pool's network thread then also consumes; the task producer runs its own tasks),
//! which measures what the machinery costs without parallelism.

pub mod batch;
mod pool;
mod serial;
mod tasks;
mod workshare;

#[cfg(test)]
mod tests;

use std::sync::{Mutex, MutexGuard, TryLockError};

use bareweb_engine::cores::board::{Board, Role};
use bareweb_engine::cores::plan;
use bareweb_engine::cores::run::{RunSummary, PUBLISH_NS};
use bareweb_engine::cores::DispatchCounters;
use bareweb_engine::nic::{Clock, NicCounters, RxFrame, RxRing, TxRing};
use bareweb_engine::resource::Lookup;
use bareweb_engine::server::{AccessLog, Server};
use bareweb_engine::stats::{CoreTimes, Stats, Stay};

use crate::cores::{CoreReport, Shared};
use crate::tap::TapRx;
use crate::SystemClock;

/// Which runner drives the engine (besides `pinned`, which is `cores::run` in per-queue mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runner {
    /// One thread, Boa's loop: receive, one pass over the ready queue, timers, wait.
    Serial,
    /// Producer-consumer: a network thread and workers sharing a locked ready queue.
    Pool,
    /// All threads traverse each pass of the ready queue together; barrier per pass.
    Workshare,
    /// A task per ready connection, in work-stealing deques (crossbeam-deque).
    Tasks,
}

impl Runner {
    /// Every runner, in the paper's order.
    pub const ALL: [Runner; 4] = [
        Runner::Serial,
        Runner::Pool,
        Runner::Workshare,
        Runner::Tasks,
    ];

    /// The name used on the command line and the stats board.
    pub fn name(self) -> &'static str {
        match self {
            Runner::Serial => "serial",
            Runner::Pool => "pool",
            Runner::Workshare => "workshare",
            Runner::Tasks => "tasks",
        }
    }

    /// Most threads the runner takes (serial: one).
    pub fn max_threads(self) -> usize {
        match self {
            Runner::Serial => 1,
            _ => 256,
        }
    }

    /// Board rows: one per thread, then the shared `Server`.
    pub fn roles(self, threads: usize) -> Vec<Role> {
        let mut roles: Vec<Role> = (0..threads)
            .map(|k| match (self, k, threads) {
                (Runner::Serial, _, _) => Role::Single,
                // Thread 0 owns the device; it serves HTTP too when it is alone, and in
                // workshare and tasks (master / producer that runs tasks when idle).
                (Runner::Pool, 0, 1) => Role::NetHttp,
                (Runner::Pool, 0, _) => Role::Net,
                (_, 0, _) => Role::NetHttp,
                _ => Role::Worker,
            })
            .collect();
        roles.push(Role::Server);
        roles
    }
}

/// A receive side a runner can wait on when idle.
pub trait RxWait: RxRing {
    /// Waits up to `us` microseconds for a frame (returns early when one arrives).
    fn wait_us(&mut self, us: u64);
}

impl RxWait for TapRx {
    fn wait_us(&mut self, us: u64) {
        TapRx::wait_us(self, us)
    }
}

/// Longest idle wait of a thread that owns the device: the timers' tick (10 ms), as the
/// one-core server waits in `poll(2)`.
const IDLE_WAIT_US: u64 = 10_000;
/// Frames read per burst (the engine's own burst size).
const RX_BURST: usize = 32;

/// What every runner's threads share besides the `Server`.
pub(crate) struct Team<'a, L> {
    pub plan: &'a Shared<'a, L>,
    pub threads: usize,
    pub clock: SystemClock,
}

impl<L: Lookup<'static>> Team<'_, L> {
    /// The board row of the shared `Server`.
    fn server_row(&self) -> usize {
        self.threads
    }

    /// A server set up like every core's, answering the stats page from its own row.
    fn new_server(&self) -> Server<L>
    where
        L: Copy,
    {
        let p = self.plan;
        let row = self.server_row();
        let mut s = plan::server(p.cfg.clone(), p.site, p.mac, p.board.map(|b| (b, row)));
        s.set_caps(p.caps);
        s
    }

    fn stopping(&self) -> bool {
        // A drain that finished stops the team as the stop flag does.
        self.plan.stop.load(std::sync::atomic::Ordering::Relaxed)
            || self.plan.cfg.drain.is_some_and(|d| d.finished())
    }

    /// Publishes the shared server's row; call with the server held (its row's only
    /// writer is whoever holds it, the stats response included).
    fn publish_server(&self, s: &Server<L>) {
        if let Some(b) = self.plan.board {
            b.publish_server(self.server_row(), s.stats(), s.times(), s.stay());
        }
    }

    /// The shared server's report at stop.
    fn server_report(&self, s: &Server<L>) -> CoreReport {
        self.publish_server(s);
        CoreReport {
            core: self.server_row(),
            role: Role::Server,
            stats: s.stats().clone(),
            times: s.times().clone(),
            stay: s.stay().clone(),
            nic: NicCounters::default(),
            dispatch: DispatchCounters::default(),
            run: RunSummary::default(),
            lock_ns: 0,
        }
    }
}

/// Takes a lock, ignoring poisoning (a panicking thread aborts the process anyway).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Where a thread's time goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Rcv,
    Http,
    Send,
    Main,
}

/// One thread's time split and counters, published to its board row.
struct Meter<'c> {
    clock: &'c SystemClock,
    core: usize,
    role: Role,
    start: u64,
    mark: u64,
    cur: Part,
    rcv: u64,
    http: u64,
    send: u64,
    lock: u64,
    steps: u64,
    idle_polls: u64,
    batch_high: usize,
    next_publish: u64,
}

impl<'c> Meter<'c> {
    fn new(clock: &'c SystemClock, core: usize, role: Role) -> Meter<'c> {
        let now = clock.now_ns();
        Meter {
            clock,
            core,
            role,
            start: now,
            mark: now,
            cur: Part::Main,
            rcv: 0,
            http: 0,
            send: 0,
            lock: 0,
            steps: 0,
            idle_polls: 0,
            batch_high: 0,
            next_publish: now,
        }
    }

    fn charge(&mut self, to: u64) {
        let d = to.saturating_sub(self.mark);
        match self.cur {
            Part::Rcv => self.rcv += d,
            Part::Http => self.http += d,
            Part::Send => self.send += d,
            Part::Main => {}
        }
        self.mark = self.mark.max(to);
    }

    /// The time since the last switch was spent on what was going on; `p` starts now.
    fn switch(&mut self, p: Part) {
        if p != self.cur {
            self.charge(self.clock.now_ns());
            self.cur = p;
        }
    }

    /// Takes `m`; time spent waiting for it is lock wait. An uncontended lock costs no
    /// clock read.
    fn lock<'m, T>(&mut self, m: &'m Mutex<T>) -> MutexGuard<'m, T> {
        match m.try_lock() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            Err(TryLockError::WouldBlock) => {
                let t0 = self.clock.now_ns();
                self.charge(t0);
                let g = lock(m);
                let t1 = self.clock.now_ns();
                self.lock += t1.saturating_sub(t0);
                self.mark = t1;
                g
            }
        }
    }

    /// Waits at `b` (the end of a pass); the wait is lock wait.
    fn barrier(&mut self, b: &std::sync::Barrier) {
        let t0 = self.clock.now_ns();
        self.charge(t0);
        b.wait();
        let t1 = self.clock.now_ns();
        self.lock += t1.saturating_sub(t0);
        self.mark = t1;
    }

    fn times(&self) -> CoreTimes {
        CoreTimes {
            rcv_ns: self.rcv,
            http_ns: self.http,
            busy_polls: self.steps,
        }
    }

    fn nic(&self) -> NicCounters {
        let mut n = NicCounters::default();
        n.tx_ring_slots = batch::BATCH_FRAMES as u64;
        n.tx_ring_high = self.batch_high as u64;
        n
    }

    /// The thread's send time, as the papers' send task (`drain_ns`).
    fn dispatch(&self) -> DispatchCounters {
        DispatchCounters {
            drain_ns: self.send,
            ..DispatchCounters::default()
        }
    }

    /// Whether this thread's next publication is due (by the clock as last read).
    fn due(&self) -> bool {
        self.mark >= self.next_publish
    }

    /// Publishes this thread's row every 10 ms (or now with `force`).
    fn publish(&mut self, board: Option<&Board>, force: bool) {
        let Some(b) = board else { return };
        let now = self.clock.now_ns();
        if !force && now < self.next_publish {
            return;
        }
        self.next_publish = now + PUBLISH_NS;
        b.publish_server(
            self.core,
            &Stats::default(),
            &self.times(),
            &Stay::default(),
        );
        b.publish_run(
            self.core,
            &self.nic(),
            &self.dispatch(),
            now.saturating_sub(self.start),
            self.idle_polls,
        );
        b.publish_lock_wait(self.core, self.lock);
    }

    fn report(mut self, board: Option<&Board>) -> CoreReport {
        self.switch(Part::Main);
        self.publish(board, true);
        CoreReport {
            core: self.core,
            role: self.role,
            stats: Stats::default(),
            times: self.times(),
            stay: Stay::default(),
            nic: self.nic(),
            dispatch: self.dispatch(),
            run: RunSummary {
                elapsed_ns: self.clock.now_ns().saturating_sub(self.start),
                idle_polls: self.idle_polls,
            },
            lock_ns: self.lock,
        }
    }
}

/// Reads one burst of frames (outside any lock).
fn read_burst<R: RxRing>(rx: &mut R, frames: &mut [RxFrame; RX_BURST]) -> usize {
    rx.burst(frames)
}

/// Hands a burst to the server and gives the buffers back.
fn receive_burst<L, R, T>(s: &mut Server<L>, rx: &mut R, frames: &[RxFrame], tx: &mut T)
where
    L: Lookup<'static>,
    R: RxRing,
    T: TxRing,
{
    for f in frames {
        s.receive(rx.bytes(f), tx);
        rx.recycle(*f);
    }
}

/// Runs `runner` with `threads` threads over a receive side (read by thread 0 only) and
/// one transmit side per thread, until `plan.stop` is set. `make_log(k)` builds thread
/// `k`'s access log. Returns one report per thread, then the shared server's.
///
/// # Panics
/// If `txs` does not hold one transmit side per thread, or `threads` is 0 or more than
/// the runner takes (the command line checks both).
pub fn run<L, R, T, A, F>(
    runner: Runner,
    threads: usize,
    rx: R,
    txs: Vec<T>,
    plan: &Shared<'_, L>,
    make_log: F,
) -> Vec<CoreReport>
where
    L: Lookup<'static> + Copy + Send + Sync,
    R: RxWait + Send,
    T: TxRing + Send,
    A: AccessLog,
    F: Fn(usize) -> A + Sync,
{
    assert!(threads >= 1 && threads <= runner.max_threads(), "threads");
    assert_eq!(txs.len(), threads, "one transmit side per thread");
    let team = Team {
        plan,
        threads,
        clock: SystemClock::new(),
    };
    match runner {
        Runner::Serial => serial::run(&team, rx, txs, &make_log),
        Runner::Pool => pool::run(&team, rx, txs, &make_log),
        Runner::Workshare => workshare::run(&team, rx, txs, &make_log),
        Runner::Tasks => tasks::run(&team, rx, txs, &make_log),
    }
}

/// Runs `f(k, item)` for every item on a thread of its own (scoped; thread `k` gets item
/// `k`); returns the results in thread order.
fn spawn_each<X: Send, Y: Send>(items: Vec<X>, f: impl Fn(usize, X) -> Y + Sync) -> Vec<Y> {
    std::thread::scope(|s| {
        let f = &f;
        let handles: Vec<_> = items
            .into_iter()
            .enumerate()
            .map(|(k, x)| {
                std::thread::Builder::new()
                    .name(format!("bareweb-t{k}"))
                    .spawn_scoped(s, move || f(k, x))
                    .expect("spawn runner thread")
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("runner thread panicked"))
            .collect()
    })
}

/// Thread `k`'s transmit side, and the receive side for thread 0.
fn seats<R, T>(rx: R, txs: Vec<T>) -> Vec<(T, Option<R>)> {
    let mut rx = Some(rx);
    txs.into_iter().map(|tx| (tx, rx.take())).collect()
}
