//! `workshare`: boa-omp, the standard OpenMP version (the OpenMP paper §4.2, Fig. 4). The
//! request loop becomes passes. Before a pass the master (thread 0; OpenMP's `single`
//! region) receives, runs the timers and takes every connection on the ready queue into
//! the pass; a barrier makes all threads see the same pass; then every thread claims the
//! pass's connections one at a time (`single nowait` per element, i.e. whoever comes
//! first) and steps each once, the master also receiving new frames between its elements
//! (`master: accept new requests`); a barrier ends the pass. A connection that has more
//! to do goes back on the ready queue for the next pass, as Fig. 4's second loop keeps it.
//!
//! What the paper found costly is kept: every thread waits at the end of a pass for the
//! slowest element, and work that became ready during a pass waits for the next one. The
//! time spent at the end-of-pass barrier is reported as lock wait; the wait before a pass
//! (the master waiting for frames) is idle.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex};

use bareweb_engine::cores::board::Role;
use bareweb_engine::nic::{RxFrame, TxRing};
use bareweb_engine::resource::Lookup;
use bareweb_engine::server::{AccessLog, Ready, Server};

use super::batch::TxBatch;
use super::{
    read_burst, receive_burst, seats, spawn_each, Meter, Part, RxWait, Team, IDLE_WAIT_US, RX_BURST,
};
use crate::cores::CoreReport;

struct State<L: Lookup<'static>> {
    server: Server<L>,
    /// The connections of the current pass (written by the master between passes).
    pass: Vec<Ready>,
}

struct Shared<L: Lookup<'static>> {
    state: Mutex<State<L>>,
    barrier: Barrier,
    /// Next element of the pass to claim.
    next: AtomicUsize,
    /// Elements in the pass.
    len: AtomicUsize,
    stop: AtomicBool,
}

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
    let tcbs = team.plan.cfg.tcbs;
    let shared = Shared {
        state: Mutex::new(State {
            server: team.new_server(),
            pass: Vec::with_capacity(tcbs),
        }),
        barrier: Barrier::new(team.threads),
        next: AtomicUsize::new(0),
        len: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
    };
    let mut reports = spawn_each(seats(rx, txs), |k, (tx, rx)| {
        member(team, &shared, k, rx, tx, make_log(k))
    });
    let state = shared.state.into_inner().unwrap_or_else(|e| e.into_inner());
    reports.push(team.server_report(&state.server));
    reports
}

/// Everything the master does before a pass: receive, timers, and the pass itself; waits
/// on the device while there is nothing to do; returns with a pass, or `stop` set.
fn prepare<L, R, A>(
    team: &Team<'_, L>,
    sh: &Shared<L>,
    m: &mut Meter<'_>,
    rx: &mut R,
    tx: &mut impl TxRing,
    batch: &mut TxBatch,
    log: &mut A,
) where
    L: Lookup<'static> + Copy,
    R: RxWait,
    A: AccessLog,
{
    let mut frames = [RxFrame { buf: 0, len: 0 }; RX_BURST];
    loop {
        m.switch(Part::Rcv);
        let n = read_burst(rx, &mut frames);
        let mut g = m.lock(&sh.state);
        let st = &mut *g;
        st.server.begin(&team.clock);
        receive_burst(&mut st.server, rx, &frames[..n], batch);
        st.server.tick(batch, log);
        st.pass.clear();
        while let Some(r) = st.server.take_ready() {
            st.pass.push(r);
        }
        let len = st.pass.len();
        if m.due() {
            team.publish_server(&st.server);
        }
        drop(g);
        m.switch(Part::Send);
        m.batch_high = m.batch_high.max(batch.len());
        batch.drain_into(tx);
        m.switch(Part::Main);
        m.publish(team.plan.board, false);
        if team.stopping() {
            sh.stop.store(true, Ordering::Relaxed);
            return;
        }
        if len > 0 {
            sh.len.store(len, Ordering::Relaxed);
            sh.next.store(0, Ordering::Relaxed);
            return;
        }
        if n == 0 {
            m.idle_polls += 1;
            rx.wait_us(IDLE_WAIT_US);
        }
    }
}

fn member<L, R, T, A>(
    team: &Team<'_, L>,
    sh: &Shared<L>,
    k: usize,
    mut rx: Option<R>,
    mut tx: T,
    mut log: A,
) -> CoreReport
where
    L: Lookup<'static> + Copy,
    R: RxWait,
    T: TxRing,
    A: AccessLog,
{
    let board = team.plan.board;
    let role = if k == 0 { Role::NetHttp } else { Role::Worker };
    let mut m = Meter::new(&team.clock, k, role);
    let mut batch = TxBatch::new();
    let mut frames = [RxFrame { buf: 0, len: 0 }; RX_BURST];
    loop {
        if let Some(rx) = rx.as_mut() {
            // The master's `single` region. Stop or not, it meets the others at the
            // barrier, which publishes `stop`, `len` and `next` to them.
            prepare(team, sh, &mut m, rx, &mut tx, &mut batch, &mut log);
        }
        m.switch(Part::Main);
        sh.barrier.wait();
        if sh.stop.load(Ordering::Relaxed) {
            break;
        }
        let len = sh.len.load(Ordering::Relaxed);
        loop {
            let i = sh.next.fetch_add(1, Ordering::Relaxed);
            if i >= len {
                break;
            }
            m.switch(Part::Http);
            let mut g = m.lock(&sh.state);
            let st = &mut *g;
            st.server.begin(&team.clock);
            let r = st.pass[i];
            let _ = st.server.step(r, &mut batch, &mut log);
            m.steps += 1;
            drop(g);
            if let Some(rx) = rx.as_mut() {
                // `#pragma omp master`: accept new requests (they join the next pass).
                m.switch(Part::Rcv);
                let n = read_burst(rx, &mut frames);
                if n > 0 {
                    let mut g = m.lock(&sh.state);
                    g.server.begin(&team.clock);
                    receive_burst(&mut g.server, rx, &frames[..n], &mut batch);
                }
            }
            m.switch(Part::Send);
            m.batch_high = m.batch_high.max(batch.len());
            batch.drain_into(&mut tx);
            m.switch(Part::Main);
            m.publish(board, false);
        }
        // The end of the parallel loop: wait for the whole team.
        m.barrier(&sh.barrier);
    }
    m.report(board)
}
