//! `tasks`: boa-dsections, dynamic sections (the OpenMP paper §4.3, Fig. 5). The runner keeps no
//! ready queue: thread 0 (the producer) does the serial work — reads frames, hands them to
//! the `Server`, runs the timers — and creates a task for every connection that became
//! ready; the other threads execute tasks. Tasks live in per-thread work-stealing deques
//! (crossbeam-deque, the deque under rayon): the producer pushes onto its own, the others
//! steal from it and from each other. A task is one step of one connection; when the step
//! leaves its connection with more to do now, the task creates the next one (Fig. 5's
//! nested section), on its own thread's deque.
//!
//! A task is a 4-byte connection token, so creating one allocates nothing (rayon's
//! `spawn` boxes every job). The producer runs tasks itself only at scheduling points:
//! when a burst brought nothing, or when it is the only thread. Idle task threads spin
//! briefly, then park until the producer unparks them (or 1 ms passes).

use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::thread::Thread;
use std::time::Duration;

use bareweb_engine::cores::board::Role;
use bareweb_engine::nic::{RxFrame, TxRing};
use bareweb_engine::resource::Lookup;
use bareweb_engine::server::{AccessLog, Ready, Server};
use crossbeam_deque::{Steal, Stealer, Worker};

use super::batch::TxBatch;
use super::{
    read_burst, receive_burst, seats, spawn_each, Meter, Part, RxWait, Team, IDLE_WAIT_US, RX_BURST,
};
use crate::cores::CoreReport;

struct Shared<L: Lookup<'static>> {
    server: Mutex<Server<L>>,
    stealers: Vec<Stealer<Ready>>,
    sleeping: Vec<AtomicBool>,
    threads: Vec<OnceLock<Thread>>,
}

/// Empty looks for a task before a thread parks.
const SPINS: u32 = 64;
/// Longest park of an idle task thread.
const PARK: Duration = Duration::from_millis(1);

pub(super) fn run<L, R, T, A, F>(
    team: &Team<'_, L>,
    rx: R,
    txs: Vec<T>,
    make_log: &F,
) -> Vec<CoreReport>
where
    L: Lookup<'static> + Copy + Send + Sync,
    R: RxWait + Send,
    T: TxRing + Send,
    A: AccessLog,
    F: Fn(usize) -> A + Sync,
{
    let n = team.threads;
    let deques: Vec<Worker<Ready>> = (0..n).map(|_| Worker::new_fifo()).collect();
    let shared = Shared {
        server: Mutex::new(team.new_server()),
        stealers: deques.iter().map(Worker::stealer).collect(),
        sleeping: (0..n).map(|_| AtomicBool::new(false)).collect(),
        threads: (0..n).map(|_| OnceLock::new()).collect(),
    };
    let seats: Vec<_> = seats(rx, txs).into_iter().zip(deques).collect();
    let mut reports = spawn_each(seats, |k, ((tx, rx), local)| {
        let _ = shared.threads[k].set(std::thread::current());
        let role = if k == 0 { Role::NetHttp } else { Role::Worker };
        let own = Own {
            m: Meter::new(&team.clock, k, role),
            local,
            batch: TxBatch::new(),
            tx,
            log: make_log(k),
        };
        match rx {
            Some(rx) => producer(team, &shared, rx, own),
            None => task_thread(team, &shared, k, own),
        }
    });
    let server = shared
        .server
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    reports.push(team.server_report(&server));
    reports
}

/// What a thread owns.
struct Own<'c, T, A> {
    m: Meter<'c>,
    local: Worker<Ready>,
    batch: TxBatch,
    tx: T,
    log: A,
}

/// One task: one step of `r`; a nested task if the connection has more to do now.
fn run_task<L, T, A>(team: &Team<'_, L>, sh: &Shared<L>, o: &mut Own<'_, T, A>, r: Ready)
where
    L: Lookup<'static> + Copy,
    T: TxRing,
    A: AccessLog,
{
    o.m.switch(Part::Http);
    let mut g = o.m.lock(&sh.server);
    g.begin(&team.clock);
    if g.step(r, &mut o.batch, &mut o.log) {
        if let Some(next) = g.take_ready() {
            o.local.push(next);
        }
    }
    o.m.steps += 1;
    drop(g);
    o.m.switch(Part::Send);
    o.m.batch_high = o.m.batch_high.max(o.batch.len());
    o.batch.drain_into(&mut o.tx);
}

/// A task from this thread's deque, or stolen from another's (the producer's first).
fn find_task<L: Lookup<'static>>(sh: &Shared<L>, k: usize, local: &Worker<Ready>) -> Option<Ready> {
    if let Some(r) = local.pop() {
        return Some(r);
    }
    loop {
        let mut retry = false;
        for (i, s) in sh.stealers.iter().enumerate() {
            if i == k {
                continue;
            }
            match s.steal() {
                Steal::Success(r) => return Some(r),
                Steal::Retry => retry = true,
                Steal::Empty => {}
            }
        }
        if !retry {
            return None;
        }
    }
}

fn producer<L, R, T, A>(
    team: &Team<'_, L>,
    sh: &Shared<L>,
    mut rx: R,
    mut o: Own<'_, T, A>,
) -> CoreReport
where
    L: Lookup<'static> + Copy,
    R: RxWait,
    T: TxRing,
    A: AccessLog,
{
    let alone = team.threads == 1;
    let board = team.plan.board;
    let mut frames = [RxFrame { buf: 0, len: 0 }; RX_BURST];
    while !team.stopping() {
        o.m.switch(Part::Rcv);
        let n = read_burst(&mut rx, &mut frames);
        let mut g = o.m.lock(&sh.server);
        g.begin(&team.clock);
        receive_burst(&mut g, &mut rx, &frames[..n], &mut o.batch);
        g.tick(&mut o.batch, &mut o.log);
        let mut created = 0;
        while let Some(r) = g.take_ready() {
            o.local.push(r);
            created += 1;
        }
        if o.m.due() {
            team.publish_server(&g);
        }
        drop(g);
        if created > 0 && !alone {
            // Pairs with the fence a task thread makes between saying it sleeps and
            // looking for work: one of the two sees the other.
            fence(Ordering::SeqCst);
            for (k, s) in sh.sleeping.iter().enumerate().skip(1) {
                if s.load(Ordering::Relaxed) {
                    if let Some(t) = sh.threads[k].get() {
                        t.unpark();
                    }
                }
            }
        }
        o.m.switch(Part::Send);
        o.m.batch_high = o.m.batch_high.max(o.batch.len());
        o.batch.drain_into(&mut o.tx);
        // A scheduling point: the producer runs tasks when it is alone or idle.
        let mut ran = 0;
        if alone || n == 0 {
            while let Some(r) = o.local.pop() {
                run_task(team, sh, &mut o, r);
                ran += 1;
            }
        }
        o.m.switch(Part::Main);
        o.m.publish(board, false);
        if n == 0 && created == 0 && ran == 0 {
            o.m.idle_polls += 1;
            rx.wait_us(IDLE_WAIT_US);
        }
    }
    // Wake everyone to see the stop.
    for t in sh.threads.iter().skip(1).filter_map(OnceLock::get) {
        t.unpark();
    }
    o.m.report(board)
}

fn task_thread<L, T, A>(
    team: &Team<'_, L>,
    sh: &Shared<L>,
    k: usize,
    mut o: Own<'_, T, A>,
) -> CoreReport
where
    L: Lookup<'static> + Copy,
    T: TxRing,
    A: AccessLog,
{
    let board = team.plan.board;
    let mut spins = 0;
    while !team.stopping() {
        if let Some(r) = find_task(sh, k, &o.local) {
            run_task(team, sh, &mut o, r);
            o.m.switch(Part::Main);
            o.m.publish(board, false);
            spins = 0;
            continue;
        }
        spins += 1;
        if spins < SPINS {
            std::hint::spin_loop();
            continue;
        }
        o.m.idle_polls += 1;
        sh.sleeping[k].store(true, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        if sh.stealers.iter().all(Stealer::is_empty) && !team.stopping() {
            std::thread::park_timeout(PARK);
        }
        sh.sleeping[k].store(false, Ordering::Relaxed);
        o.m.publish(board, false);
    }
    o.m.report(board)
}
