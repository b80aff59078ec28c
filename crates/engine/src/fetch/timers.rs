//! The fetcher's part of the shared timer scan (`tcp::table::scan_timers`): what a TCP
//! timer asks of a fetch's connection — the SYN, data or a probe again, or the end of the
//! fetch (no answer to the SYN, or stalled) and of its TCB. A fetch has no timeouts of its
//! own beyond TCP's.

use super::{Failure, FetchConn, Fetcher, Handler, Out};
use crate::nic::TxRing;
use crate::tcp::emit;
use crate::tcp::table::{scan_timers, Table, Timed};
use crate::tcp::{State, TimerAction};

/// The fetcher, its transmit ring and handler, during one scan.
struct Scan<'a, T, H> {
    c: &'a mut Fetcher,
    now: u64,
    tx: &'a mut T,
    h: &'a mut H,
}

impl<T: TxRing, H: Handler> Timed for Scan<'_, T, H> {
    type App = FetchConn;

    fn table(&mut self) -> &mut Table<FetchConn> {
        &mut self.c.conns
    }

    fn app_timer(&mut self, _id: u32) -> bool {
        false
    }

    fn fire(&mut self, idx: u32, action: TimerAction) {
        let (c, now, tx) = (&mut *self.c, self.now, &mut *self.tx);
        match action {
            TimerAction::None => {}
            TimerAction::ResendSynAck => {
                let s = c.conns[idx as usize].tcp.syn_ack(now);
                c.counters.retransmits += 1;
                c.send(idx, &s, now, tx);
            }
            TimerAction::Retransmit => {
                c.counters.retransmits += 1;
                c.output(idx, now, tx);
            }
            TimerAction::Probe(s) | TimerAction::LossProbe(s) => {
                c.counters.retransmits += 1;
                emit::once(&mut Out { f: c, now, tx }, idx, &s, now);
            }
            TimerAction::Abort { seq } => {
                c.reset(idx, seq, tx);
                c.fail(idx, Failure::Stalled, now, self.h);
                c.free_tcb(idx);
            }
            TimerAction::Expire => {
                let why = if c.conns[idx as usize].tcp.state() == State::SynSent {
                    Failure::NoAnswer
                } else {
                    Failure::Stalled
                };
                c.fail(idx, why, now, self.h);
                c.free_tcb(idx);
            }
        }
    }
}

impl Fetcher {
    /// Fires the TCP timers that are due; returns whether any did.
    pub(super) fn timers<T: TxRing, H: Handler>(
        &mut self,
        now: u64,
        tx: &mut T,
        h: &mut H,
    ) -> bool {
        let (stall, retries) = (self.cfg.stall_ns, self.cfg.max_retries);
        let mut scan = Scan {
            c: self,
            now,
            tx,
            h,
        };
        scan_timers(&mut scan, now, stall, retries).fired
    }
}
