//! `pool`: boa-pthreads, producer-consumer (the OpenMP paper §4.1, Fig. 3). Thread 0, the
//! network thread, does everything of Boa's main loop but request processing: it reads
//! frames, hands them to the `Server` (which moves the connections they concern to its
//! ready queue) and runs the timers. Threads 1.. consume: each takes the lock, dequeues
//! one ready connection, runs one step of it (one chunk, as Boa's round robin), lets go
//! and writes the frames it built. A consumer with nothing to do sleeps on a condition
//! variable (the paper's consumers spin, which on this 2-CPU machine would take a CPU
//! from the client); the network thread wakes it when a receive made connections ready.
//!
//! The ready queue's lock is the `Server`'s lock: the queue lives in the `Server`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use bareweb_engine::cores::board::Role;
use bareweb_engine::nic::{RxFrame, TxRing};
use bareweb_engine::resource::Lookup;
use bareweb_engine::server::{AccessLog, Server};

use super::batch::TxBatch;
use super::{
    read_burst, receive_burst, seats, spawn_each, Meter, Part, RxWait, Team, IDLE_WAIT_US, RX_BURST,
};
use crate::cores::CoreReport;

struct Shared<L: Lookup<'static>> {
    server: Mutex<Server<L>>,
    work: Condvar,
    /// Consumers waiting on `work` (changed and read with `server` held).
    waiting: AtomicUsize,
}

/// Longest sleep of an idle consumer (it also wakes when work comes).
const WORKER_NAP: Duration = Duration::from_millis(10);

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
    let shared = Shared {
        server: Mutex::new(team.new_server()),
        work: Condvar::new(),
        waiting: AtomicUsize::new(0),
    };
    let mut reports = spawn_each(seats(rx, txs), |k, (tx, rx)| match rx {
        Some(rx) => network(team, &shared, rx, tx, make_log(0)),
        None => consumer(team, &shared, k, tx, make_log(k)),
    });
    let server = shared
        .server
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    reports.push(team.server_report(&server));
    reports
}

fn network<L, R, T, A>(
    team: &Team<'_, L>,
    sh: &Shared<L>,
    mut rx: R,
    mut tx: T,
    mut log: A,
) -> CoreReport
where
    L: Lookup<'static> + Copy,
    R: RxWait,
    T: TxRing,
    A: AccessLog,
{
    let alone = team.threads == 1;
    let board = team.plan.board;
    let mut m = Meter::new(
        &team.clock,
        0,
        if alone { Role::NetHttp } else { Role::Net },
    );
    let mut batch = TxBatch::new();
    let mut frames = [RxFrame { buf: 0, len: 0 }; RX_BURST];
    while !team.stopping() {
        m.switch(Part::Rcv);
        let n = read_burst(&mut rx, &mut frames);
        let mut g = m.lock(&sh.server);
        g.begin(&team.clock);
        receive_burst(&mut g, &mut rx, &frames[..n], &mut batch);
        g.tick(&mut batch, &mut log);
        let mut stepped = 0;
        if alone {
            // No consumer: the network thread serves one pass itself.
            m.switch(Part::Http);
            for _ in 0..g.ready_len() {
                if let Some(r) = g.take_ready() {
                    let _ = g.step(r, &mut batch, &mut log);
                    stepped += 1;
                }
            }
        }
        let ready = g.ready_len();
        if m.due() {
            team.publish_server(&g);
        }
        let sleepers = sh.waiting.load(Ordering::Relaxed);
        drop(g);
        if ready > 0 && sleepers > 0 {
            if ready > 1 {
                sh.work.notify_all();
            } else {
                sh.work.notify_one();
            }
        }
        m.switch(Part::Send);
        m.batch_high = m.batch_high.max(batch.len());
        batch.drain_into(&mut tx);
        m.switch(Part::Main);
        m.steps += stepped;
        m.publish(board, false);
        if n == 0 && stepped == 0 && !(alone && ready > 0) {
            m.idle_polls += 1;
            rx.wait_us(IDLE_WAIT_US);
        }
    }
    sh.work.notify_all();
    m.report(board)
}

fn consumer<L, T, A>(
    team: &Team<'_, L>,
    sh: &Shared<L>,
    k: usize,
    mut tx: T,
    mut log: A,
) -> CoreReport
where
    L: Lookup<'static> + Copy,
    T: TxRing,
    A: AccessLog,
{
    let board = team.plan.board;
    let mut m = Meter::new(&team.clock, k, Role::Worker);
    let mut batch = TxBatch::new();
    'serve: loop {
        m.switch(Part::Http);
        let mut g = m.lock(&sh.server);
        while g.ready_len() == 0 {
            if team.stopping() {
                break 'serve;
            }
            m.switch(Part::Main);
            m.idle_polls += 1;
            sh.waiting.fetch_add(1, Ordering::Relaxed);
            g = sh
                .work
                .wait_timeout(g, WORKER_NAP)
                .unwrap_or_else(|e| e.into_inner())
                .0;
            sh.waiting.fetch_sub(1, Ordering::Relaxed);
            m.publish(board, false);
            m.switch(Part::Http);
        }
        g.begin(&team.clock);
        if let Some(r) = g.take_ready() {
            let _ = g.step(r, &mut batch, &mut log);
            m.steps += 1;
        }
        drop(g);
        m.switch(Part::Send);
        m.batch_high = m.batch_high.max(batch.len());
        batch.drain_into(&mut tx);
        m.switch(Part::Main);
        m.publish(board, false);
    }
    m.report(board)
}
