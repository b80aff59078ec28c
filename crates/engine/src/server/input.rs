//! The receive path (the papers' RCV task): every frame handled to the end. ARP and ICMP
//! are answered here; a TCP segment goes to LISTEN or to its connection's state machine,
//! whose [`Outcome`] is applied: payload stored in the receive slab, replies built, the
//! TCB freed or put on the run list.

use super::{AccessLog, Server, EVICT_GRACE_NS, RESET_MEMORY};
use crate::http::conn::HttpConn;
use crate::iface::LOCAL_V6;
use crate::iface::{admissible_syn, classified, egress, Drop, Ingress, Sent};
use crate::nic::TxRing;
use crate::resource::Lookup;
use crate::tcp::conn::{Connection, Reply, OUR_MSS, TS_TICK_NS};
use crate::tcp::per_ip::{limit_key, Place};
use crate::tcp::port_table::{mapped, Peer};
use crate::tcp::syncookie::{Ends, SKEW_NS};
use crate::tcp::table::App;
use crate::wire::tcp::{self as wtcp, ParsedRepr as TcpRepr};
use crate::wire::EthernetAddress;

impl<L: Lookup<'static>> Server<L> {
    pub(super) fn handle_frame<T: TxRing, A: AccessLog>(
        &mut self,
        bytes: &[u8],
        tx: &mut T,
        log: &mut A,
    ) {
        self.stats.rx_frames += 1;
        if self.cfg.dhcp.is_some() && self.dhcp_frame(bytes, tx) {
            return;
        }
        if super::ipv6::is_ipv6(bytes) {
            if self.ipv6_frame(bytes, tx, log) {
                self.pass6(bytes);
            }
            return;
        }
        match classified(&self.iface, bytes) {
            Ok(Ingress::ArpRequest { request, src_mac }) => {
                self.via_receive(tx);
                let sent = self.egress.arp_reply(tx, src_mac, &request);
                self.count_sent(sent);
                if matches!(sent, Sent::Frame | Sent::Refused) {
                    self.stats.arp_replies += 1;
                }
            }
            Ok(Ingress::ArpReply { reply, dst_mac }) => {
                let us = (self.egress.mac(), self.iface.ip);
                if !self.neigh.learn(&reply, dst_mac, us, self.now_ns) {
                    self.stats.drop_not_for_us += 1;
                }
                if let Some(d) = self.cfg.divert {
                    // The client connection learns its next hop itself.
                    d.post(bytes);
                }
            }
            Ok(Ingress::Echo {
                src_mac,
                src,
                ident,
                seq_no,
                data,
            }) => {
                self.via_stateless(tx);
                let sent = self
                    .egress
                    .echo_reply(tx, src_mac, src, (ident, seq_no, data));
                self.count_sent(sent);
                if matches!(sent, Sent::Frame | Sent::Refused) {
                    self.stats.icmp_echo += 1;
                }
            }
            // The segment by reference: moved out, it was copied whole right after
            // `classified` wrote it field by field (a store-forwarding stall per frame).
            Ok(Ingress::Tcp {
                src_mac,
                src,
                local,
                ref seg,
                options_ok,
            }) => {
                self.rx_local = local;
                self.rx_tls = false;
                self.tcp_segment(src_mac, mapped(src.0), seg, options_ok, tx);
            }
            Ok(Ingress::ClosedPort {
                src_mac,
                src,
                local,
                ref seg,
                options_ok,
            }) if self.tls_port() == Some(seg.dst_port) => {
                self.rx_local = local;
                self.rx_tls = true;
                self.tcp_segment(src_mac, mapped(src.0), seg, options_ok, tx);
            }
            Ok(Ingress::ClosedPort { seg, .. })
                if self.cfg.divert.is_some_and(|d| d.takes_tcp(seg.dst_port)) =>
            {
                self.divert(bytes);
            }
            Ok(Ingress::ClosedPort {
                src_mac,
                src,
                local,
                seg,
                ..
            }) => {
                self.rx_local = local;
                // RFC 9293 §3.10.7.1: a segment for a closed port gets a RST.
                if seg.flags.rst {
                    self.stats.drop_not_for_us += 1;
                } else {
                    self.send_reset_for(src_mac, mapped(src.0), &seg, tx);
                }
            }
            Ok(Ingress::Udp {
                src_mac,
                src,
                src_port,
                payload,
            }) => self.udp_datagram((src_mac, mapped(src.0), src_port), 0, payload, tx, log),
            Err(crate::iface::Drop::NotForUs)
                if self
                    .cfg
                    .divert
                    .is_some_and(|d| d.takes_udp(bytes, self.egress.mac().0, self.iface.ip.0)) =>
            {
                self.divert(bytes);
            }
            Ok(Ingress::Drop(d)) | Err(d) => self.count_drop(d),
        }
    }

    /// Hands `bytes` to the server's own client connection (`server::divert`).
    fn divert(&mut self, bytes: &[u8]) {
        match self.cfg.divert {
            Some(d) if d.post(bytes) => self.stats.diverted += 1,
            _ => self.stats.drop_not_for_us += 1,
        }
    }

    /// A segment for one of our ports (`rx_tls`: the HTTPS port): to its connection, or
    /// to LISTEN.
    /// Always inlined: it was, with one caller; IPv6's second one made it a call on every
    /// IPv4 segment (29 instructions a segment, callgrind).
    #[inline(always)]
    pub(super) fn tcp_segment<T: TxRing>(
        &mut self,
        src_mac: EthernetAddress,
        src: [u8; 16],
        seg: &TcpRepr<'_>,
        options_ok: bool,
        tx: &mut T,
    ) {
        let peer = Peer {
            ip: src,
            port: seg.src_port,
        };
        match self.conns.find(peer) {
            // The table is keyed by the peer's address and port: one peer port on both
            // of our ports at once finds the other one's connection. Rare (a client picks
            // a fresh port per connection), and dropped: its retransmissions find it
            // once the other is gone.
            Some(id) if self.conns[id as usize].app.tls() != self.rx_tls => {
                self.stats.drop_not_for_us += 1;
            }
            Some(id) => self.segment_arrives(id, src_mac, seg, tx),
            None => self.listen(src_mac, src, seg, options_ok, tx),
        }
    }

    pub(super) fn count_drop(&mut self, d: Drop) {
        let s = &mut self.stats;
        match d {
            Drop::Truncated => s.drop_truncated += 1,
            Drop::Malformed => s.drop_malformed += 1,
            Drop::Checksum => s.drop_checksum += 1,
            Drop::NotForUs => s.drop_not_for_us += 1,
            Drop::Fragment => s.drop_fragment += 1,
            Drop::NoRoute => s.drop_no_route += 1,
        }
    }

    /// LISTEN (RFC 9293 §3.10.7.2): a segment that matches no connection.
    fn listen<T: TxRing>(
        &mut self,
        src_mac: EthernetAddress,
        src: [u8; 16],
        seg: &TcpRepr<'_>,
        options_ok: bool,
        tx: &mut T,
    ) {
        let peer = Peer {
            ip: src,
            port: seg.src_port,
        };
        if seg.flags.rst {
            return self.no_connection(peer);
        }
        if let (Some(ack), false) = (seg.ack_number, seg.flags.syn) {
            // An ACK for no connection: the return of a SYN cookie, or a RST.
            if !self.cookie_ack(src_mac, peer, seg, ack, tx) {
                self.send_reset_for(src_mac, src, seg, tx);
                self.no_connection(peer);
            }
            return;
        }
        if seg.ack_number.is_some() || !seg.flags.syn {
            self.send_reset_for(src_mac, src, seg, tx);
            return self.no_connection(peer);
        }
        if !admissible_syn(seg, options_ok) {
            self.stats.drop_malformed += 1;
            return self.no_connection(peer);
        }
        if self.drain_phase.refuses() {
            // Draining past the grace: no new connection.
            self.stats.drain_refused += 1;
            self.send_reset_for(src_mac, src, seg, tx);
            return self.no_connection(peer);
        }
        // An IPv6 client is counted by its /64 (`per_ip::limit_key`).
        let place = self.per_ip.lookup(limit_key(&src));
        // A balancer (`proxy_protocol`) relays many clients: the limit applies to each
        // client its PROXY header names (`proxy.rs`), not to the balancer.
        if place.count() >= self.max_per_ip && !self.proxy_source(src) {
            self.stats.tcp_per_ip_refused += 1;
            self.send_reset_for(src_mac, src, seg, tx);
            return self.no_connection(peer);
        }
        let now = self.now_ns;
        let ends = self.ends(peer);
        if self.half_open >= self.syn_backlog || !self.tcb_left() {
            // RFC 4987 §3.6: the half-open budget is spent (or every TCB is in use): answer
            // with a SYN cookie and keep nothing. The TCB is made when the ACK brings the
            // cookie back; a flood of spoofed SYNs costs no TCB and no eviction scan.
            // The SYN-ACK is the one a TCB would send (`Connection::syn_ack` and `header`),
            // from a connection that is then forgotten.
            let iss = self.cookies.make(ends, seg.seq_number, &seg.options, now);
            let mut c = Connection::accept_mss(seg, iss, now, self.rx_mss(&peer))
                .with_ts_offset(self.isn.ts_offset(ends.0, ends.1));
            let syn_ack = c.syn_ack(now);
            let repr = c.header(
                &syn_ack,
                self.rx_port(),
                seg.src_port,
                self.cfg.rx_buffer as u32,
                now,
            );
            self.via_stateless(tx);
            self.sync_egress(self.rx_local);
            let mac = self.reply_mac(self.rx_local, src, src_mac, tx);
            let eg = Self::egress_of(&self.egress, &self.vip_egress, &self.egress6, self.rx_local);
            let sent = eg.tcp_bare(tx, mac, src, &repr);
            self.count_sent(sent);
            self.stats.tcp_syncookies_sent += 1;
            return self.no_connection(peer);
        }
        let Some(id) = self.take_tcb() else {
            self.stats.tcp_no_tcb += 1;
            return self.no_connection(peer);
        };
        let (iss, ts_offset) = self.isn.isn_and_ts_offset(ends.0, ends.1, now);
        let tcp = Connection::accept_mss(seg, iss, now, self.rx_mss(&peer))
            .with_ts_offset(ts_offset)
            .with_congestion(self.cfg.congestion);
        self.open(id, peer, src_mac, tcp, place);
        self.send_syn_ack(id, tx);
    }

    /// The connection's two ends, as ISNs and SYN cookies hash them: for IPv6 the
    /// address the segment being handled came to.
    fn ends(&self, peer: Peer) -> Ends {
        let local = match self.rx_local.checked_sub(LOCAL_V6) {
            Some(slot) => self.ipv6_slot_addr(slot).map_or([0; 16], |a| a.0),
            None => mapped(self.cfg.ip.0),
        };
        ((local, self.rx_port()), (peer.ip, peer.port))
    }

    /// Our MSS for a connection from `peer` on the path of the segment being handled:
    /// IPv6's header is 20 bytes longer, and a Packet Too Big may have taught less.
    fn rx_mss(&self, peer: &Peer) -> u16 {
        if self.rx_local >= LOCAL_V6 {
            self.mss6_for(&peer.ip)
        } else {
            OUR_MSS
        }
    }

    /// The port of ours the segment being handled came to.
    fn rx_port(&self) -> u16 {
        match (self.rx_tls, self.cfg.tls) {
            (true, Some(t)) => t.port,
            _ => self.cfg.port,
        }
    }

    /// Takes TCB `id` for a new connection `tcp` with `peer`, in SYN-RECEIVED: it counts
    /// as half-open until it leaves that state (`segment_arrives`, `free_tcb`). `place` is
    /// where the per-address count of `peer.ip` was looked up.
    fn open(
        &mut self,
        id: u32,
        peer: Peer,
        src_mac: EthernetAddress,
        tcp: Connection,
        place: Place,
    ) {
        let mut app = HttpConn {
            local: self.rx_local,
            tls: self.rx_tls,
            ..HttpConn::IDLE
        };
        if self.proxy {
            // A PROXY header comes before TLS, and is not read there (yet).
            app.proxy_wait = self.proxy_source(peer.ip);
            self.clients[id as usize] = None;
        }
        self.conns.open(id, peer, src_mac, tcp, app);
        self.conns[id as usize].per_ip_home = place.home();
        self.per_ip.add_at(place);
        self.bond_assign(id, peer.ip);
        self.half_open += 1;
        self.stats.tcp_accepted += 1;
        self.stats.tcbs_in_use = self.active() as u64;
        self.stats.tcbs_max = self.stats.tcbs_max.max(self.stats.tcbs_in_use);
    }

    /// An ACK that matches no connection: if it returns a valid SYN cookie, open the
    /// connection it stands for (RFC 4987 §3.6) and process the ACK on it (it may carry
    /// the request). Returns false when it is no cookie (the caller answers with a RST).
    fn cookie_ack<T: TxRing>(
        &mut self,
        src_mac: EthernetAddress,
        peer: Peer,
        seg: &TcpRepr<'_>,
        ack: u32,
        tx: &mut T,
    ) -> bool {
        if seg.flags.rst {
            return false;
        }
        let now = self.now_ns;
        let ends = self.ends(peer);
        let Some(opts) = self.cookies.check_ack(ends, seg.seq_number, ack, now) else {
            return false;
        };
        if self.reset.contains(&(peer, ack)) {
            // We reset this connection (evicted before it sent a byte): its client was
            // told it is gone, and a late segment of it must not open it again.
            return false;
        }
        let place = self.per_ip.lookup(limit_key(&peer.ip));
        if place.count() >= self.max_per_ip && !self.proxy_source(peer.ip) {
            self.stats.tcp_per_ip_refused += 1;
            return false;
        }
        let Some(id) = self.take_tcb().or_else(|| self.evict(tx)) else {
            // Every connection is sending: the client's retransmission will try again.
            self.stats.tcp_no_tcb += 1;
            self.no_connection(peer);
            return true;
        };
        // The SYN the cookie stands for, and our SYN-ACK, as if a TCB had held them. The
        // cookie has no room for timestamps and needs none: once negotiated, every segment
        // carries them (RFC 7323 §3.2), so this ACK has them exactly when the SYN did.
        let syn = TcpRepr {
            seq_number: seg.seq_number.wrapping_sub(1),
            ack_number: None,
            flags: wtcp::Flags::SYN,
            options: wtcp::Options {
                timestamps: seg.options.timestamps,
                ..opts.options()
            },
            payload: &[],
            ..*seg
        };
        let offset = self.isn.ts_offset(ends.0, ends.1);
        let mut tcp = Connection::accept_mss(&syn, ack.wrapping_sub(1), now, self.rx_mss(&peer))
            .with_ts_offset(offset)
            .with_congestion(self.cfg.congestion);
        // The SYN-ACK may have been stamped by another core (network-core mode's core 0),
        // whose clock may run a little ahead of ours: the ACK echoes its TSval. Stamp this
        // connection's clock that much later, so no TSval of ours goes back behind it (the
        // peer's PAWS would drop the segment). At most the skew two cores can have; an echo
        // further ahead is no echo of ours and is not followed.
        if let Some((_, echoed)) = seg.options.timestamps {
            let ahead = echoed.wrapping_sub(tcp.ts_now(now));
            if (1..=(SKEW_NS / TS_TICK_NS) as i32).contains(&(ahead as i32)) {
                tcp = tcp.with_ts_offset(offset.wrapping_add(ahead));
            }
        }
        tcp.syn_ack_sent(now);
        self.open(id, peer, src_mac, tcp, place); // half-open until the ACK below establishes it
        self.stats.tcp_syncookies_ok += 1;
        self.segment_arrives(id, src_mac, seg, tx);
        true
    }

    /// Every TCB is in use and a new connection wants one: reset and free the connection
    /// that has gone longest without progress among those with no response in flight
    /// (half-open, waiting for a request, or idle between requests), as Linux drops
    /// half-open connections and nginx reclaims idle keep-alives. Returns its TCB, now
    /// free and taken, or `None` when every connection is sending a response. A scan of
    /// the TCB array, but only when the array is full.
    fn evict<T: TxRing>(&mut self, tx: &mut T) -> Option<u32> {
        let now = self.now_ns;
        let mut victim: Option<(u64, u32)> = None;
        for (i, t) in self.conns.tcbs().iter().enumerate() {
            let c = &t.tcp;
            let evictable = match c.state() {
                crate::tcp::State::SynReceived => true,
                s if s.is_synchronized() => {
                    // Just established and its first request not yet read (or not whole):
                    // kept for `EVICT_GRACE_NS`, or the request it is sending finds a RST.
                    let fresh = t.app.stay_start_ns == 0
                        && t.app.request_start_ns != 0
                        && now.saturating_sub(t.app.request_start_ns) < EVICT_GRACE_NS;
                    // A TLS connection's sealed records may still be on their way.
                    let sending = t.app.tls() && self.tls_sides[i].unacked(c.snd_una());
                    t.app.resp.is_none() && !c.is_closing() && !fresh && !sending
                }
                _ => false,
            };
            if !evictable {
                continue;
            }
            // Waiting for a request since `request_start_ns`, else silent since last heard.
            let since = if t.app.request_start_ns != 0 {
                t.app.request_start_ns.min(c.last_heard_ns())
            } else {
                c.last_heard_ns()
            };
            if victim.is_none_or(|(v, _)| since < v) {
                victim = Some((since, i as u32));
            }
        }
        let (_, id) = victim?;
        let seq = self.conns[id as usize].tcp.snd_nxt();
        self.remember_reset(id);
        self.send_reset_raw(id, seq, tx);
        self.stats.tcp_evicted += 1;
        self.free_tcb(id);
        self.take_tcb()
    }

    /// Connection `id` is being reset by us: if nothing of ours but the SYN-ACK was sent,
    /// its client's next segment still acknowledges our initial sequence number, which for
    /// a connection opened by a SYN cookie is that cookie; remember it, so the cookie no
    /// longer opens anything ([`Server::cookie_ack`]).
    pub(super) fn remember_reset(&mut self, id: u32) {
        let t = &self.conns[id as usize];
        let nxt = t.tcp.snd_nxt();
        if t.tcp.state().is_synchronized() && nxt == t.tcp.iss().wrapping_add(1) {
            self.reset[self.reset_next] = (t.peer, nxt);
            self.reset_next = (self.reset_next + 1) % RESET_MEMORY;
        }
    }

    /// Everything after LISTEN: the state machine judges, this applies.
    fn segment_arrives<T: TxRing>(
        &mut self,
        id: u32,
        src_mac: EthernetAddress,
        seg: &TcpRepr<'_>,
        tx: &mut T,
    ) {
        let idx = id as usize;
        let now = self.now_ns;
        let rx_space = self.rx_space(id);
        let was_half_open = self.conns[idx].tcp.state() == crate::tcp::State::SynReceived;
        let out = self.conns[idx].tcp.input(seg, now, rx_space);
        self.note_timer(id);
        if was_half_open && self.conns[idx].tcp.state() != crate::tcp::State::SynReceived {
            self.half_open = self.half_open.saturating_sub(1); // established, or reset
        }
        let s = &mut self.stats;
        s.tcp_out_of_window += u64::from(out.out_of_window);
        s.tcp_bad_acks += u64::from(out.bad_ack);
        s.tcp_challenge_acks += u64::from(out.challenge_ack && !out.challenge_limited);
        s.tcp_out_of_order += u64::from(out.out_of_order);
        s.tcp_lost_retransmits += u64::from(out.lost_retransmit);
        s.tcp_challenge_acks_limited += u64::from(out.challenge_limited);
        s.tcp_paws_rejected += u64::from(out.paws_rejected);
        s.tcp_established += u64::from(out.established);
        if out.reset {
            self.stats.tcp_rst_received += 1;
            return self.free_tcb(id);
        }
        if out.ack_seen {
            self.conns[idx].peer_mac = src_mac;
        }
        if out.established {
            // The request timeout runs from here, not from the first byte: a connection
            // that never sends one gets 408 like a slow one (the hardening work: silent clients held
            // TCBs until the idle timeout, three times as long).
            self.conns[idx].app.request_start_ns = now;
        }
        if let Some((a, b)) = out.deliver {
            if self.conns[idx].app.tls() {
                self.tls_store(id, &seg.payload[a..b]);
            } else {
                self.store(id, &seg.payload[a..b]);
            }
        }
        match out.reply {
            Reply::None => {}
            Reply::Ack => self.send_ack(id, tx),
            Reply::SynAck => return self.send_syn_ack(id, tx),
            Reply::Reset { seq } => return self.send_reset_raw(id, seq, tx),
        }
        if out.retransmit {
            self.stats.tcp_fast_retransmits += 1;
            self.retransmit_una(id, tx);
        }
        let t = &self.conns[idx];
        if t.tcp.state().is_done() {
            // Both directions are closed (no TIME-WAIT is held; see docs/design/tcp.md).
            let start = t.app.stay_start_ns;
            if start != 0 {
                self.stay.record(now.saturating_sub(start));
            }
            return self.free_tcb(id);
        }
        let has_work = t.app.resp.is_some()
            || t.app.rx_len > 0
            || (t.app.tls() && self.tls_has_work(idx))
            || t.tcp.state().peer_closed()
            || t.tcp.ack_pending();
        if has_work {
            self.enqueue(id);
        }
    }

    /// Appends request bytes to connection `id`'s receive slab (or drops them once the
    /// connection is closing: nothing more will be answered).
    fn store(&mut self, id: u32, data: &[u8]) {
        let idx = id as usize;
        let cap = self.cfg.rx_buffer;
        let t = &mut self.conns[idx];
        if t.tcp.is_closing() {
            return;
        }
        let start = t.app.rx_len as usize;
        let take = data.len().min(cap - start);
        let base = idx * cap;
        self.rx_slab[base + start..base + start + take].copy_from_slice(&data[..take]);
        if t.app.request_start_ns == 0 && take > 0 {
            t.app.request_start_ns = self.now_ns;
        }
        t.app.rx_len += take as u32;
    }

    /// RST for a segment that belongs to no connection (RFC 9293 §3.10.7.1).
    pub(super) fn send_reset_for<T: TxRing>(
        &mut self,
        dst_mac: EthernetAddress,
        dst: [u8; 16],
        seg: &TcpRepr<'_>,
        tx: &mut T,
    ) {
        let repr = egress::reset_for(seg);
        self.via_stateless(tx);
        self.sync_egress(self.rx_local);
        let mac = self.reply_mac(self.rx_local, dst, dst_mac, tx);
        let eg = Self::egress_of(&self.egress, &self.vip_egress, &self.egress6, self.rx_local);
        let sent = eg.tcp_bare(tx, mac, dst, &repr);
        self.count_sent(sent);
        self.stats.tcp_rst_sent += 1;
    }
}
