//! The HTTP step (the papers' HTTP task) and everything a connection sends: the next
//! response started from the receive slab, segments within the windows (the state machine
//! chooses them, this builds them from the head slab and the site image), ACKs, SYN-ACKs,
//! retransmissions and RSTs.

use super::drain::Phase;
use super::proxy::{client_of, Header};
use super::{AccessLog, AccessRecord, Server};
use crate::http::conn::{Sending, NO_DYN};
use crate::http::{self, Parse, Status};
use crate::iface::egress::{Sent, TSO_HEAD_MAX};
use crate::nic::TxRing;
use crate::resource::Lookup;
use crate::tcp::emit::{self, Sender};
use crate::tcp::output::Segment;
use crate::tcp::port_table::v4_of;
use crate::tcp::seq;
use crate::tcp::Connection;
use crate::wire;

impl<L: Lookup<'static>> Server<L> {
    /// The paper's HTTP task for one connection: start the next response if the previous
    /// one is acknowledged, then send what the windows allow.
    pub(super) fn http_step<T: TxRing, A: AccessLog>(&mut self, id: u32, tx: &mut T, log: &mut A) {
        let idx = id as usize;
        if self.conns[idx].app.tls() {
            return self.tls_step(id, tx, log);
        }
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
            let header = if t.app.proxy_wait {
                self.proxy_header(id, tx)
            } else {
                Header::Read
            };
            match header {
                Header::Closed => return,
                Header::Read if self.conns[idx].app.rx_len > 0 => {
                    if !self.start_response(id, tx, log) {
                        return;
                    }
                }
                Header::Read | Header::Wait => {}
            }
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
        emit::ack_owed(&mut Out { s: self, tx }, id);
    }

    /// Parses connection `id`'s next request and starts its response. Returns false when
    /// the connection was reset instead (a PROXY header from a source not trusted to send
    /// one) and its TCB freed.
    pub(super) fn start_response<T: TxRing, A: AccessLog>(
        &mut self,
        id: u32,
        tx: &mut T,
        log: &mut A,
    ) -> bool {
        let idx = id as usize;
        let cap = self.cfg.rx_buffer;
        let rx_len = self.conns[idx].app.rx_len as usize;
        let rx = &self.rx_slab[idx * cap..idx * cap + rx_len];
        let head = &mut self.head_slab[idx * http::HEAD_MAX..(idx + 1) * http::HEAD_MAX];
        let now = self.unix_secs;
        let name = self.cfg.server_name;
        // RFC 6797 §7.2: `Strict-Transport-Security` on HTTPS only, never plain HTTP.
        let extra: &[u8] = if self.conns[idx].app.tls() {
            &self.hsts
        } else {
            b""
        };
        let mut dyn_slot = NO_DYN;
        let (resp, consumed) = match http::parse(rx) {
            Parse::Complete { mut request, len } => {
                // Draining: this response is the connection's last.
                if self.drain_phase != Phase::Serving && request.keep_alive {
                    request.keep_alive = false;
                    self.stats.drain_closed += 1;
                }
                // `--http-redirect`: plain HTTP sends everything but ACME's challenges to
                // HTTPS, once HTTPS has a certificate (ACME may still be getting it).
                let redirect = self.cfg.https_redirect.filter(|_| {
                    !self.conns[idx].app.tls()
                        && http::redirects_to_https(&request)
                        && self.cfg.tls.is_none_or(|t| t.acceptor.certified())
                });
                match (redirect, self.dynamic.as_mut()) {
                    (Some(port), _) => {
                        let r = http::respond_https_redirect(&request, port, now, name, head);
                        (r, len)
                    }
                    (None, Some(d)) if d.page.claims(request.target, client_of!(self, idx)) => {
                        match d.free.pop() {
                            Some(slot) => {
                                dyn_slot = slot;
                                let s = usize::from(slot);
                                let out = &mut d.pool[s * d.slot_len..(s + 1) * d.slot_len];
                                let own = (&self.stats, &self.times, &self.stay);
                                let peer = client_of!(self, idx);
                                (
                                    d.page.respond(own, &request, peer, now, name, extra, out),
                                    len,
                                )
                            }
                            None => (
                                http::respond_error_with(
                                    Status::SERVICE_UNAVAILABLE,
                                    now,
                                    name,
                                    extra,
                                    head,
                                ),
                                len,
                            ),
                        }
                    }
                    _ => {
                        let cache = &mut self.head_cache;
                        let r = http::respond_cached(
                            &request, &self.site, now, name, extra, head, cache,
                        );
                        (r, len)
                    }
                }
            }
            Parse::Partial => {
                let t = &mut self.conns[idx];
                if rx_len >= cap {
                    (
                        http::respond_error_with(
                            Status::HEADER_FIELDS_TOO_LARGE,
                            now,
                            name,
                            extra,
                            head,
                        ),
                        rx_len,
                    )
                } else {
                    if t.tcp.state().peer_closed() {
                        // The client half-closed in the middle of a request: nothing to
                        // answer.
                        t.app.rx_len = 0;
                    }
                    return true;
                }
            }
            // A PROXY header from a source not trusted to send one (it is no request). From
            // a trusted source, whose header was read already, a second one is a bad
            // request like any other: one header outcome per connection.
            Parse::Error(_)
                if self.conns[idx].app.stay_start_ns == 0
                    && wire::proxy::has_signature(rx)
                    && !(self.proxy
                        && v4_of(&self.conns[idx].peer.ip)
                            .is_some_and(|v4| self.cfg.proxy_protocol.contains(v4))) =>
            {
                self.forbid_header(id, tx);
                return false;
            }
            Parse::Error(status) => (
                http::respond_error_with(status, now, name, extra, head),
                rx_len,
            ),
        };
        let line_end = rx
            .iter()
            .position(|&b| b == b'\r' || b == b'\n')
            .unwrap_or(rx.len())
            .min(consumed);
        let sending = Sending::new(0, resp.head_len, resp.body);
        let started = self.conns[idx].app.request_start_ns;
        log.record(&AccessRecord {
            peer: client_of!(self, idx),
            request_line: &rx[..line_end],
            head: &rx[..consumed],
            status: resp.status,
            bytes: resp.content_len as usize,
            unix_secs: now,
            duration_us: if started == 0 {
                0
            } else {
                self.now_ns.saturating_sub(started) / 1000
            },
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
        if t.app.tls() {
            let close = resp.close || (t.tcp.state().peer_closed() && t.app.rx_len == 0);
            self.tls_started(idx, sending, close);
            return true;
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
        true
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

    /// Sends what the state machine allows now (`tcp::emit::send`): holes the peer's SACKs
    /// show in recovery, new data within the windows, the FIN on the last segment when the
    /// connection is closing. A full ring puts the connection back on the run list.
    pub(super) fn output<T: TxRing>(&mut self, id: u32, tx: &mut T) {
        let now = self.now_ns;
        let round = emit::send(&mut Out { s: self, tx }, id, now);
        self.stats.tcp_sack_retransmits += u64::from(round.holes);
        if round.blocked {
            self.enqueue(id); // ring full: try again next round
        }
        self.note_timer(id);
    }

    /// Retransmits one segment at snd_una (fast retransmit, partial ACK).
    pub(super) fn retransmit_una<T: TxRing>(&mut self, id: u32, tx: &mut T) {
        let now = self.now_ns;
        emit::retransmit_una(&mut Out { s: self, tx }, id, now);
        self.note_timer(id);
    }

    /// Sends `seg` (a probe) and marks it sent; returns whether it went.
    pub(super) fn send_once<T: TxRing>(&mut self, id: u32, seg: &Segment, tx: &mut T) -> bool {
        let now = self.now_ns;
        emit::once(&mut Out { s: self, tx }, id, seg, now)
    }

    pub(super) fn send_ack<T: TxRing>(&mut self, id: u32, tx: &mut T) {
        emit::ack(&mut Out { s: self, tx }, id);
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
        let local = self.conns[idx].app.local;
        self.sync_egress(local);
        // A VIP connection answers to the client's next hop (`reply_mac`); ours to the
        // MAC its segments come from.
        let mac = match self.conns[idx].peer_mac {
            m if local == 0 => m,
            m => self.reply_mac(local, self.conns[idx].peer.ip, m, tx),
        };
        let rx_space = self.rx_space(id);
        let port = self.port_of(idx);
        let now = self.now_ns;
        if self.conns[idx].app.tls() {
            // TLS: the segment's bytes are control bytes kept, or a record's range sealed
            // now (again, for a retransmission), written straight into the frame.
            let t = &mut self.conns[idx];
            let peer_port = t.peer.port;
            let mut out = t.frame(seg, (port, peer_port), rx_space, mac, &[], &[], || 0, now);
            let side = &mut self.tls_sides[idx];
            let cache = &mut self.tls_cache;
            let eg = Self::egress_of(&self.egress, &self.vip_egress, &self.egress6, local);
            let sent = if out.tso_mss.is_some() {
                // An offloaded frame: its payload is written into the cache's frame buffer
                // and the ring copies it at post (`frame_max` bounds it).
                let mut frame = core::mem::take(&mut cache.frame);
                let len = seg.len as usize;
                let sent =
                    if len <= frame.len() && side.write(idx, seg.seq, &mut frame[..len], cache) {
                        out.copied = &frame[..len];
                        eg.tcp(tx, &out)
                    } else {
                        Sent::Unfilled
                    };
                cache.frame = frame;
                sent
            } else {
                let fill = |dst: &mut [u8]| side.write(idx, seg.seq, dst, cache);
                eg.tcp_filled(tx, &out, seg.len as usize, fill)
            };
            self.stats.tls_sealed_whole += core::mem::take(&mut self.tls_cache.sealed_whole);
            if sent == Sent::Unfilled {
                // A record could not be sealed (never while unacknowledged): the segment
                // is as lost, and the retransmission limit ends the connection.
                self.stats.tls_failed += 1;
            }
            self.count_sent(sent);
            return sent.done();
        }
        let t = &mut self.conns[idx];
        let payload = t.app.payload(seg.seq, seg.len);
        let head_buf: &[u8] = match &self.dynamic {
            Some(d) if t.app.dyn_slot != NO_DYN => {
                let s = usize::from(t.app.dyn_slot);
                &d.pool[s * d.slot_len..(s + 1) * d.slot_len]
            }
            _ => &self.head_slab[idx * http::HEAD_MAX..(idx + 1) * http::HEAD_MAX],
        };
        let head = head_buf.get(payload.head.clone()).unwrap_or(&[]);
        let peer_port = t.peer.port;
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
        let sent =
            Self::egress_of(&self.egress, &self.vip_egress, &self.egress6, local).tcp(tx, &out);
        self.count_sent(sent);
        sent.done()
    }

    /// RST on an existing connection with a given sequence number (the caller frees the
    /// TCB where the connection ends; in SYN-RECEIVED an unacceptable ACK keeps it).
    pub(super) fn send_reset_raw<T: TxRing>(&mut self, id: u32, seq_number: u32, tx: &mut T) {
        self.via_conn(id, false, tx);
        let local = self.conns[id as usize].app.local;
        self.sync_egress(local);
        let port = self.port_of(id as usize);
        let t = &self.conns[id as usize];
        let repr = t.reset((port, t.peer.port), seq_number);
        let (mac, ip) = (t.peer_mac, t.peer.ip);
        let mac = self.reply_mac(local, ip, mac, tx);
        let eg = Self::egress_of(&self.egress, &self.vip_egress, &self.egress6, local);
        let sent = eg.tcp_bare(tx, mac, ip, &repr);
        self.count_sent(sent);
        self.stats.tcp_rst_sent += 1;
    }
}

/// The server and its transmit ring as `tcp::emit` sees them: segments built by
/// [`Server::emit`].
pub(super) struct Out<'a, L: Lookup<'static>, T> {
    pub(super) s: &'a mut Server<L>,
    pub(super) tx: &'a mut T,
}

impl<L: Lookup<'static>, T: TxRing> Sender for Out<'_, L, T> {
    #[inline]
    fn conn(&mut self, id: u32) -> &mut Connection {
        &mut self.s.conns[id as usize].tcp
    }

    /// Head bytes are copied into the transmit slot, so an offloaded frame may carry only
    /// as many as the slot holds: while more remain (a dynamic response keeps its whole
    /// body there), segments are single.
    #[inline]
    fn frame_max(&mut self, id: u32) -> u32 {
        let t = &self.s.conns[id as usize];
        if !self.s.tso6 && t.app.local >= crate::iface::LOCAL_V6 {
            // A NIC that segments TCP over IPv4 only.
            return 0;
        }
        if t.app.tls() {
            // A record's bytes are sealed into a buffer the next segment reuses: offloaded
            // frames only where the ring copies them at post (the host's TAP), within the
            // buffer a segment spanning records is joined in; else single segments (the
            // slot holds them).
            return if self.tx.tso_copies() {
                self.s.tso_max.min(super::tls::JOIN_MAX as u32)
            } else {
                0
            };
        }
        if t.app.head_left(t.tcp.snd_nxt()) as usize <= TSO_HEAD_MAX {
            self.s.tso_max
        } else {
            0
        }
    }

    #[inline]
    fn emit(&mut self, id: u32, seg: &Segment) -> bool {
        self.s.emit(id, seg, self.tx)
    }
}
