//! The server's part of the timer scan over all TCBs (`tcp::table::scan_timers`), every
//! 10 ms and whenever a loss probe is due sooner: HTTP's request timeout (408 and close)
//! and idle keep-alive close first, then what the TCP connection's own timer asks
//! (SYN-ACK and data retransmission, tail loss probe, persist probe, stall abort;
//! [`TimerAction`]).

use super::{AccessLog, AccessRecord, Server};
use crate::http::conn::HttpConn;
use crate::http::{self, conn::Sending, Status};
use crate::nic::TxRing;
use crate::resource::Lookup;
use crate::tcp::output::TimerAction;
use crate::tcp::table::{scan_timers, Table, Timed};

/// The server's side of the shared timer scan: HTTP's timeouts, and TCP's timer actions
/// carried out on `tx`.
struct Scan<'a, L: Lookup<'static>, T, A> {
    s: &'a mut Server<L>,
    tx: &'a mut T,
    log: &'a mut A,
}

impl<L: Lookup<'static>, T: TxRing, A: AccessLog> Timed for Scan<'_, L, T, A> {
    type App = HttpConn;

    fn table(&mut self) -> &mut Table<HttpConn> {
        &mut self.s.conns
    }

    fn app_timer(&mut self, id: u32) -> bool {
        let s = &mut *self.s;
        let now = s.now_ns;
        let to = s.cfg.timeouts;
        let t = &s.conns[id as usize];
        if t.tcp.state().is_synchronized() && !t.tcp.is_closing() && t.app.resp.is_none() {
            // Request head not complete in time: 408 and close.
            if t.app.request_start_ns != 0
                && now.saturating_sub(t.app.request_start_ns) >= ms(to.request_ms)
            {
                if t.app.proxy_wait {
                    // From a balancer, and no whole PROXY header in time: no request
                    // can be read, so none is answered.
                    s.refuse_header(id, crate::wire::proxy::Error::Missing, self.tx);
                } else {
                    s.request_timeout(id, self.log);
                }
                return true;
            }
            // Idle keep-alive connection: close it gracefully; at once past a drain's
            // grace.
            let silent = now.saturating_sub(t.tcp.last_heard_ns());
            if t.app.rx_len == 0 && s.drain_phase.refuses() {
                s.stats.drain_closed += 1;
                s.close_idle(id as usize);
                s.enqueue(id);
                return true;
            }
            if t.app.rx_len == 0 && silent >= ms(to.idle_ms) {
                s.close_idle(id as usize);
                s.enqueue(id);
                return true;
            }
        }
        false
    }

    fn fire(&mut self, id: u32, action: TimerAction) {
        let (s, tx) = (&mut *self.s, &mut *self.tx);
        match action {
            TimerAction::None => {}
            TimerAction::ResendSynAck => {
                s.stats.tcp_rto_retransmits += 1;
                s.send_syn_ack(id, tx);
            }
            TimerAction::Retransmit => {
                s.stats.tcp_rto_retransmits += 1;
                s.output(id, tx);
            }
            TimerAction::LossProbe(seg) => {
                if s.send_once(id, &seg, tx) {
                    s.stats.tcp_loss_probes += 1;
                }
            }
            TimerAction::Probe(seg) => {
                if s.send_once(id, &seg, tx) {
                    s.stats.tcp_window_probes += 1;
                }
            }
            TimerAction::Abort { seq } => {
                s.stats.tcp_timeouts += 1;
                s.remember_reset(id);
                s.send_reset_raw(id, seq, tx);
                s.free_tcb(id);
            }
            TimerAction::Expire => {
                // Half-open: the client never completed the handshake.
                s.stats.tcp_timeouts += 1;
                s.free_tcb(id);
            }
        }
    }
}

fn ms(x: u64) -> u64 {
    x * 1_000_000
}

impl<L: Lookup<'static>> Server<L> {
    /// Fires what is due; returns the earliest precise TCP deadline left (a loss probe's;
    /// `u64::MAX`: none).
    pub(super) fn timers<T: TxRing, A: AccessLog>(&mut self, tx: &mut T, log: &mut A) -> u64 {
        let now = self.now_ns;
        let to = self.cfg.timeouts;
        let mut scan = Scan { s: self, tx, log };
        scan_timers(&mut scan, now, ms(to.stall_ms), to.max_retries).next_precise_ns
    }

    /// 408: the request head did not complete in time. The answer closes the connection.
    fn request_timeout<A: AccessLog>(&mut self, id: u32, log: &mut A) {
        let idx = id as usize;
        let head = &mut self.head_slab[idx * http::HEAD_MAX..(idx + 1) * http::HEAD_MAX];
        let extra: &[u8] = if self.conns[idx].app.tls() {
            &self.hsts
        } else {
            b""
        };
        let resp = http::respond_error_with(
            Status::REQUEST_TIMEOUT,
            self.unix_secs,
            self.cfg.server_name,
            extra,
            head,
        );
        log.record(&AccessRecord {
            peer: self.client_of(idx),
            request_line: b"",
            head: b"",
            status: resp.status,
            bytes: resp.content_len as usize,
            unix_secs: self.unix_secs,
            duration_us: (self
                .now_ns
                .saturating_sub(self.conns[idx].app.request_start_ns))
                / 1000,
        });
        self.count_response(resp.status);
        if self.conns[idx].app.tls() {
            self.tls_timeout(idx, &resp);
            self.enqueue(id);
            return;
        }
        let t = &mut self.conns[idx];
        let start = t.tcp.queue(resp.head_len as u32);
        let r = Sending::new(start, resp.head_len, None);
        t.app.resp = Some(r);
        t.tcp.close();
        t.app.rx_len = 0;
        t.app.request_start_ns = 0;
        self.bond_queued(id, r.wire_len());
        self.enqueue(id);
    }
}
