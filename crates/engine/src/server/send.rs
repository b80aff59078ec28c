//! The HTTP step (the papers' HTTP task) and everything a connection sends: the next
//! response started from the receive slab, segments within the windows (the state machine
//! chooses them, this builds them from the head slab and the site image), ACKs, SYN-ACKs,
//! retransmissions and RSTs.

use super::{AccessLog, AccessRecord, Server, DYN_MAX};
use crate::http::conn::{Sending, NO_DYN};
use crate::http::{self, Parse, Status};
use crate::iface::egress::{self, TSO_HEAD_MAX};
use crate::nic::TxRing;
use crate::resource::Lookup;
use crate::tcp::output::Segment;
use crate::tcp::seq;
use crate::wire::Ipv4Address;

impl<L: Lookup<'static>> Server<L> {
    /// The paper's HTTP task for one connection: start the next response if the previous
    /// one is acknowledged, then send what the windows allow.
    pub(super) fn http_step<T: TxRing, A: AccessLog>(&mut self, id: u32, tx: &mut T, log: &mut A) {
        let idx = id as usize;
        self.conns[idx].queued = false;
        if !self.conns[idx].tcp.state().is_synchronized() {
            return;
        }
        // A response is done when every byte of it is acknowledged.
        let t = &mut self.conns[idx];
        if let Some(r) = t.app.resp {
            if seq::ge(t.tcp.snd_una(), r.end()) {
                t.app.resp = None;
                let slot = core::mem::replace(&mut t.app.dyn_slot, NO_DYN);
                self.release_dyn(slot);
                self.bond_acked(id, r.wire_len());
            }
        }
        let t = &self.conns[idx];
        if t.app.resp.is_none() && !t.tcp.is_closing() && t.app.rx_len > 0 {
            self.start_response(id, log);
        }
        let t = &mut self.conns[idx];
        if t.app.resp.is_none()
            && !t.tcp.is_closing()
            && t.tcp.state().peer_closed()
            && t.app.rx_len == 0
        {
            // The client closed and asked for nothing more: close our side too.
            t.tcp.close();
        }
        self.output(id, tx);
        if self.conns[idx].tcp.ack_pending() {
            self.send_ack(id, tx);
        }
    }

    fn start_response<A: AccessLog>(&mut self, id: u32, log: &mut A) {
        let idx = id as usize;
        let cap = self.cfg.rx_buffer;
        let rx_len = self.conns[idx].app.rx_len as usize;
        let rx = &self.rx_slab[idx * cap..idx * cap + rx_len];
        let head = &mut self.head_slab[idx * http::HEAD_MAX..(idx + 1) * http::HEAD_MAX];
        let now = self.unix_secs;
        let name = self.cfg.server_name;
        let mut dyn_slot = NO_DYN;
        let (resp, consumed) = match http::parse(rx) {
            Parse::Complete { request, len } => match self.dynamic.as_mut() {
                Some(d) if d.page.claims(request.target, self.conns[idx].peer.ip) => {
                    match d.free.pop() {
                        Some(slot) => {
                            dyn_slot = slot;
                            let s = usize::from(slot);
                            let out = &mut d.pool[s * DYN_MAX..(s + 1) * DYN_MAX];
                            let own = (&self.stats, &self.times, &self.stay);
                            let peer = self.conns[idx].peer.ip;
                            (d.page.respond(own, &request, peer, now, name, out), len)
                        }
                        None => (
                            http::respond_error(Status::SERVICE_UNAVAILABLE, now, name, head),
                            len,
                        ),
                    }
                }
                _ => {
                    let cache = &mut self.head_cache;
                    let r = http::respond_cached(&request, &self.site, now, name, head, cache);
                    (r, len)
                }
            },
            Parse::Partial => {
                let t = &mut self.conns[idx];
                if rx_len >= cap {
                    (
                        http::respond_error(Status::HEADER_FIELDS_TOO_LARGE, now, name, head),
                        rx_len,
                    )
                } else {
                    if t.tcp.state().peer_closed() {
                        // The client half-closed in the middle of a request: nothing to
                        // answer.
                        t.app.rx_len = 0;
                    }
                    return;
                }
            }
            Parse::Error(status) => (http::respond_error(status, now, name, head), rx_len),
        };
        let line_end = rx
            .iter()
            .position(|&b| b == b'\r' || b == b'\n')
            .unwrap_or(rx.len())
            .min(consumed);
        let sending = Sending::new(0, resp.head_len, resp.body);
        log.record(&AccessRecord {
            peer: Ipv4Address(self.conns[idx].peer.ip),
            request_line: &rx[..line_end],
            status: resp.status,
            bytes: resp.content_len as usize,
            unix_secs: now,
        });
        self.count_response(resp.status);
        // Drop the consumed request; keep pipelined bytes that follow it.
        let base = idx * cap;
        self.rx_slab
            .copy_within(base + consumed..base + rx_len, base);
        let now_ns = self.now_ns;
        let t = &mut self.conns[idx];
        t.app.rx_len = (rx_len - consumed) as u32;
        t.app.request_start_ns = if t.app.rx_len > 0 { now_ns } else { 0 };
        t.app.dyn_slot = dyn_slot;
        if t.app.stay_start_ns == 0 {
            t.app.stay_start_ns = now_ns.max(1);
            self.stay.parallel += 1;
            self.stay.parallel_max = self.stay.parallel_max.max(self.stay.parallel);
        }
        let start = t.tcp.queue(sending.wire_len());
        let r = Sending { start, ..sending };
        self.stats.http_bytes += u64::from(r.wire_len());
        t.app.resp = Some(r);
        let close = resp.close || (t.tcp.state().peer_closed() && t.app.rx_len == 0);
        self.bond_queued(id, r.wire_len());
        let t = &mut self.conns[idx];
        // Close after this response when HTTP says so, or when the client has already
        // half-closed and sent nothing more: then the FIN rides the last data segment.
        if close {
            t.tcp.close();
        }
    }

    /// Counts a response by status class.
    pub(super) fn count_response(&mut self, status: u16) {
        self.stats.http_requests += 1;
        match status {
            200..=299 => self.stats.http_2xx += 1,
            300..=399 => self.stats.http_3xx += 1,
            400..=499 => self.stats.http_4xx += 1,
            _ => self.stats.http_5xx += 1,
        }
    }

    /// Sends what the state machine allows now: holes the peer's SACKs show in recovery,
    /// new data within the windows, the FIN on the last segment when the connection is
    /// closing.
    pub(super) fn output<T: TxRing>(&mut self, id: u32, tx: &mut T) {
        let idx = id as usize;
        loop {
            let now = self.now_ns;
            let t = &mut self.conns[idx];
            // Head bytes are copied into the transmit slot, so an offloaded frame may carry
            // only as many as the slot holds: while more remain (a dynamic response keeps
            // its whole body there), segments are single.
            let head_left = t.app.head_left(t.tcp.snd_nxt()) as usize;
            let frame_max = if head_left <= TSO_HEAD_MAX {
                self.tso_max
            } else {
                0
            };
            let Some(seg) = t.tcp.next_segment(now, frame_max) else {
                break;
            };
            if !self.emit(id, &seg, tx) {
                self.enqueue(id); // ring full: try again next round
                break;
            }
            let t = &mut self.conns[idx].tcp;
            if seg.seq != t.snd_nxt() {
                self.stats.tcp_sack_retransmits += 1; // a hole (only recovery goes back)
            }
            t.on_sent(&seg, now);
            if seg.fin {
                break;
            }
        }
        self.note_timer(id);
    }

    /// Retransmits one segment at snd_una (fast retransmit, partial ACK).
    pub(super) fn retransmit_una<T: TxRing>(&mut self, id: u32, tx: &mut T) {
        if let Some(seg) = self.conns[id as usize].tcp.retransmit_segment() {
            if self.emit(id, &seg, tx) {
                let now = self.now_ns;
                self.conns[id as usize].tcp.on_sent(&seg, now);
            }
        }
        self.note_timer(id);
    }

    pub(super) fn send_ack<T: TxRing>(&mut self, id: u32, tx: &mut T) {
        let seg = self.conns[id as usize].tcp.ack_segment();
        self.emit(id, &seg, tx);
    }

    pub(super) fn send_syn_ack<T: TxRing>(&mut self, id: u32, tx: &mut T) {
        let now = self.now_ns;
        let seg = self.conns[id as usize].tcp.syn_ack(now);
        self.emit(id, &seg, tx);
        self.note_timer(id);
    }

    /// Builds and posts one segment of connection `id`: head bytes copied from the head
    /// slab (or its dynamic buffer), body bytes borrowed from the site image. Returns false
    /// when the ring had no slot.
    pub(super) fn emit<T: TxRing>(&mut self, id: u32, seg: &Segment, tx: &mut T) -> bool {
        self.via_conn(id, seg.len > 0, tx);
        let idx = id as usize;
        let rx_space = self.rx_space(id);
        let port = self.cfg.port;
        let now = self.now_ns;
        let t = &mut self.conns[idx];
        let payload = t.app.payload(seg.seq, seg.len);
        let head_buf: &[u8] = match &self.dynamic {
            Some(d) if t.app.dyn_slot != NO_DYN => {
                let s = usize::from(t.app.dyn_slot);
                &d.pool[s * DYN_MAX..(s + 1) * DYN_MAX]
            }
            _ => &self.head_slab[idx * http::HEAD_MAX..(idx + 1) * http::HEAD_MAX],
        };
        let head = head_buf.get(payload.head.clone()).unwrap_or(&[]);
        let (peer_port, mac) = (t.peer.port, t.peer_mac);
        let body_sum = || payload.body_sum();
        let out = t.frame(
            seg,
            (port, peer_port),
            rx_space,
            mac,
            head,
            payload.body,
            body_sum,
            now,
        );
        let sent = self.egress.tcp(tx, &out);
        self.count_sent(sent);
        sent.done()
    }

    /// RST on an existing connection with a given sequence number (the caller frees the
    /// TCB where the connection ends; in SYN-RECEIVED an unacceptable ACK keeps it).
    pub(super) fn send_reset_raw<T: TxRing>(&mut self, id: u32, seq_number: u32, tx: &mut T) {
        self.via_conn(id, false, tx);
        let t = &self.conns[id as usize];
        let repr = egress::reset(self.cfg.port, t.peer.port, seq_number, None);
        let (mac, ip) = (t.peer_mac, Ipv4Address(t.peer.ip));
        let sent = self.egress.tcp_bare(tx, mac, ip, &repr);
        self.count_sent(sent);
        self.stats.tcp_rst_sent += 1;
    }
}
