//! `serial`: the paper's baseline, original Boa — one thread owns the `Server` (no lock,
//! no batch: frames go straight to the device) and loops as Boa's main loop does (Fig. 2):
//! take what arrived and move the connections it concerns to the ready queue, one pass
//! over the ready queue (each connection one step, Fig. 1), the timers, and wait on the
//! device when nothing happened.
//!
//! It differs from `pinned` with one thread (`Server::poll`) only in the schedule: poll's
//! default policy looks at receive again after every HTTP step (the scheduling paper's IMT), Boa
//! serves a whole pass first (IST-like, with a whole burst received before it).

use bareweb_engine::nic::{RxFrame, TxRing};
use bareweb_engine::resource::Lookup;
use bareweb_engine::server::AccessLog;

use super::{read_burst, receive_burst, Meter, Part, RxWait, Team, IDLE_WAIT_US, RX_BURST};
use crate::cores::CoreReport;

pub(super) fn run<L, R, T, A, F>(
    team: &Team<'_, L>,
    mut rx: R,
    txs: Vec<T>,
    make_log: &F,
) -> Vec<CoreReport>
where
    L: Lookup<'static> + Copy + Send + Sync,
    R: RxWait,
    T: TxRing,
    A: AccessLog,
    F: Fn(usize) -> A,
{
    let mut tx = txs.into_iter().next().expect("one transmit side");
    let mut server = team.new_server();
    let mut log = make_log(0);
    let board = team.plan.board;
    let mut m = Meter::new(&team.clock, 0, bareweb_engine::cores::board::Role::Single);
    let mut frames = [RxFrame { buf: 0, len: 0 }; RX_BURST];
    while !team.stopping() {
        m.switch(Part::Rcv);
        let n = read_burst(&mut rx, &mut frames);
        server.begin(&team.clock);
        receive_burst(&mut server, &mut rx, &frames[..n], &mut tx);
        m.switch(Part::Http);
        let pass = server.ready_len();
        for _ in 0..pass {
            if let Some(r) = server.take_ready() {
                let _ = server.step(r, &mut tx, &mut log);
                m.steps += 1;
            }
        }
        m.switch(Part::Main);
        server.tick(&mut tx, &mut log);
        tx.flush();
        if m.due() {
            team.publish_server(&server);
        }
        m.publish(board, false);
        if n == 0 && pass == 0 {
            m.idle_polls += 1;
            rx.wait_us(IDLE_WAIT_US);
        }
    }
    let server_report = team.server_report(&server);
    vec![m.report(board), server_report]
}
