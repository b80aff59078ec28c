//! The timer scan over all TCBs, every 10 ms and whenever a loss probe is due sooner:
//! HTTP's request timeout (408 and close) and idle keep-alive close first, then the TCP
//! connection's own timer (SYN-ACK and data retransmission, tail loss probe, persist
//! probe, stall abort; [`TimerAction`]).

use super::{AccessLog, AccessRecord, Server};
use crate::http::{self, conn::Sending, Status};
use crate::nic::TxRing;
use crate::resource::Lookup;
use crate::tcp::output::TimerAction;
use crate::wire::Ipv4Address;

impl<L: Lookup<'static>> Server<L> {
    /// Fires what is due; returns the earliest precise TCP deadline left (a loss probe's;
    /// `u64::MAX`: none).
    pub(super) fn timers<T: TxRing, A: AccessLog>(&mut self, tx: &mut T, log: &mut A) -> u64 {
        let now = self.now_ns;
        let to = self.cfg.timeouts;
        let ms = |x: u64| x * 1_000_000;
        let mut next = u64::MAX;
        for id in 0..self.conns.made() as u32 {
            let idx = id as usize;
            let t = &self.conns[idx];
            if !t.in_use() {
                continue;
            }
            if t.tcp.state().is_synchronized() && !t.tcp.is_closing() && t.app.resp.is_none() {
                // Request head not complete in time: 408 and close.
                if t.app.request_start_ns != 0
                    && now.saturating_sub(t.app.request_start_ns) >= ms(to.request_ms)
                {
                    self.request_timeout(id, log);
                    continue;
                }
                // Idle keep-alive connection: close it gracefully.
                let silent = now.saturating_sub(t.tcp.last_heard_ns());
                if t.app.rx_len == 0 && silent >= ms(to.idle_ms) {
                    self.conns[idx].tcp.close();
                    self.enqueue(id);
                    continue;
                }
            }
            let action = self.conns[idx]
                .tcp
                .on_timer(now, ms(to.stall_ms), to.max_retries);
            match action {
                TimerAction::None => {}
                TimerAction::ResendSynAck => {
                    self.stats.tcp_rto_retransmits += 1;
                    self.send_syn_ack(id, tx);
                }
                TimerAction::Retransmit => {
                    self.stats.tcp_rto_retransmits += 1;
                    self.output(id, tx);
                }
                TimerAction::LossProbe(seg) => {
                    if self.emit(id, &seg, tx) {
                        self.conns[idx].tcp.on_sent(&seg, now);
                        self.stats.tcp_loss_probes += 1;
                    }
                }
                TimerAction::Probe(seg) => {
                    if self.emit(id, &seg, tx) {
                        self.conns[idx].tcp.on_sent(&seg, now);
                        self.stats.tcp_window_probes += 1;
                    }
                }
                TimerAction::Abort { seq } => {
                    self.stats.tcp_timeouts += 1;
                    self.remember_reset(id);
                    self.send_reset_raw(id, seq, tx);
                    self.free_tcb(id);
                }
                TimerAction::Expire => {
                    // Half-open: the client never completed the handshake.
                    self.stats.tcp_timeouts += 1;
                    self.free_tcb(id);
                }
            }
            let t = &self.conns[idx];
            if t.in_use() {
                next = next.min(t.tcp.timer().precise_deadline().unwrap_or(u64::MAX));
            }
        }
        next
    }

    /// 408: the request head did not complete in time. The answer closes the connection.
    fn request_timeout<A: AccessLog>(&mut self, id: u32, log: &mut A) {
        let idx = id as usize;
        let head = &mut self.head_slab[idx * http::HEAD_MAX..(idx + 1) * http::HEAD_MAX];
        let resp = http::respond_error(
            Status::REQUEST_TIMEOUT,
            self.unix_secs,
            self.cfg.server_name,
            head,
        );
        log.record(&AccessRecord {
            peer: Ipv4Address(self.conns[idx].peer.ip),
            request_line: b"",
            status: resp.status,
            bytes: resp.content_len as usize,
            unix_secs: self.unix_secs,
        });
        self.count_response(resp.status);
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
