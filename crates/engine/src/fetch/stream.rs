//! The fetcher as a byte stream and a datagram sender, for the server's own client (its
//! ACME client, `crate::acme`): a slot's connection carrying bytes unread both ways
//! ([`Fetcher::open_stream`], [`Fetcher::stream_send`], [`Fetcher::finish_stream`]), the
//! fetcher pointed at another server or address ([`Fetcher::retarget`]), and a UDP
//! datagram to the server ([`Fetcher::send_datagram`]: a resolver's query).

use super::{Fetcher, Handler, NONE};
use crate::iface::egress::Egress;
use crate::nic::TxRing;
use crate::tcp::port_table::mapped;
use crate::wire::Ipv4Address;

impl Fetcher {
    /// Opens a byte stream on slot `slot` to the server (a TLS connection's transport):
    /// nothing is sent but what [`stream_send`](Self::stream_send) queues, every byte
    /// received goes to [`Handler::body`] unread, and the stream ends in [`Handler::end`]
    /// with `End::Done { status: 0, body }` when the server closes (its FIN), or
    /// `End::Failed`. [`close_stream`](Self::close_stream) closes our side. Returns false
    /// as [`get`](Self::get) does.
    pub fn open_stream<T: TxRing, H: Handler>(
        &mut self,
        slot: u32,
        now: u64,
        tx: &mut T,
        h: &mut H,
    ) -> bool {
        if let Some(s) = self.slots.get(slot as usize) {
            if s.tcb != NONE && !s.busy {
                // A stream is never carried on a kept connection.
                self.detach(s.tcb);
            }
        }
        if !self.get_pipelined(slot, 0, 1, false, now, tx, h) {
            return false;
        }
        let s = &mut self.slots[slot as usize];
        s.stream = true;
        true
    }

    /// Queues `data` on slot `slot`'s stream and sends what the window allows. Returns
    /// false, queuing nothing, when no stream runs on the slot or the slot's request
    /// buffer ([`Config::request_max`]: everything one stream sends) cannot hold it.
    pub fn stream_send<T: TxRing>(&mut self, slot: u32, data: &[u8], now: u64, tx: &mut T) -> bool {
        let max = self.cfg.request_max.max(1);
        let Some(s) = self.slots.get_mut(slot as usize) else {
            return false;
        };
        if !s.busy || !s.stream || s.tcb == NONE || s.req_len + data.len() > max {
            return false;
        }
        let idx = s.tcb;
        if self.conns[idx as usize].tcp.is_closing() {
            return false; // our FIN is queued: nothing may follow it
        }
        let base = slot as usize * max + s.req_len;
        s.req_len += data.len();
        self.requests[base..base + data.len()].copy_from_slice(data);
        self.conns[idx as usize].tcp.queue(data.len() as u32);
        self.output(idx, now, tx);
        true
    }

    /// Closes our side of slot `slot`'s stream (our FIN goes after what is queued); the
    /// stream still ends in the handler when the server's FIN comes. Nothing when no
    /// stream runs there.
    pub fn close_stream<T: TxRing>(&mut self, slot: u32, now: u64, tx: &mut T) {
        let Some(s) = self.slots.get(slot as usize) else {
            return;
        };
        if s.stream && s.tcb != NONE {
            let idx = s.tcb;
            self.conns[idx as usize].tcp.close();
            self.output(idx, now, tx);
        }
    }

    /// Ends slot `slot`'s stream quietly (its answer is read): our side closes and the
    /// connection finishes closing on its own, holding its TCB (not the slot) until then;
    /// the handler hears nothing more of it.
    pub fn finish_stream<T: TxRing>(&mut self, slot: u32, now: u64, tx: &mut T) {
        let Some(s) = self.slots.get_mut(slot as usize) else {
            return;
        };
        if !s.stream {
            return;
        }
        s.busy = false;
        s.pending = 0;
        let idx = s.tcb;
        if idx != NONE {
            self.detach(idx);
            self.output(idx, now, tx);
        }
    }

    /// Abandons slot `slot`'s fetch or stream: its connection is reset and the handler
    /// hears nothing more of it.
    pub fn abort<T: TxRing>(&mut self, slot: u32, tx: &mut T) {
        let Some(s) = self.slots.get_mut(slot as usize) else {
            return;
        };
        s.busy = false;
        s.pending = 0;
        let idx = s.tcb;
        if idx != NONE {
            let t = &self.conns[idx as usize];
            if !t.tcp.state().is_done() {
                let seq = t.tcp.snd_nxt();
                self.reset(idx, seq, tx);
            }
            self.conns[idx as usize].app.slot = NONE;
            self.free_tcb(idx);
            self.slots[slot as usize].tcb = NONE;
        }
    }

    /// Points the fetcher at another server (address and port), and its own address at
    /// `ip`/`prefix_len` with router `gateway`. Refused (false) while a slot's fetch or
    /// stream runs; connections no slot holds any more (a finished stream still closing)
    /// are reset. The next hop is learnt again when it changed.
    pub fn retarget<T: TxRing>(
        &mut self,
        (ip, prefix_len, gateway): (Ipv4Address, u8, Option<Ipv4Address>),
        (server, port): (Ipv4Address, u16),
        tx: &mut T,
    ) -> bool {
        if self.slots.iter().any(|s| s.busy) {
            return false;
        }
        for idx in self.conns.ids().rev() {
            let t = &self.conns[idx as usize];
            if t.in_use() {
                let seq = t.tcp.snd_nxt();
                self.reset(idx, seq, tx);
                self.free_tcb(idx);
            }
        }
        for s in &mut self.slots {
            s.tcb = NONE;
        }
        let link = &self.cfg.link;
        let before = (link.ip, link.prefix_len, link.gateway, self.next_hop());
        self.cfg.link.ip = ip;
        self.cfg.link.prefix_len = prefix_len;
        self.cfg.link.gateway = gateway;
        self.cfg.link.server = server;
        self.cfg.link.port = port;
        if (before.0, before.1, before.2) != (ip, prefix_len, gateway) {
            self.iface = self.cfg.link.interface();
            let mut egress = Egress::new(&self.iface);
            if let Some(c) = &self.c6 {
                egress = egress.with_ip6(c.src());
            }
            self.egress = egress;
        }
        if (before.0, before.3) != (ip, self.next_hop()) {
            self.next_hop_mac = None;
            self.next_arp_ns = 0;
        }
        true
    }

    /// Where the fetcher points: its own address, prefix and router, and the server.
    pub fn aim(&self) -> ((Ipv4Address, u8, Option<Ipv4Address>), (Ipv4Address, u16)) {
        let l = &self.cfg.link;
        ((l.ip, l.prefix_len, l.gateway), (l.server, l.port))
    }

    /// Sends `payload` as a UDP datagram from local port `src_port` to the server at
    /// `dst_port` (over IPv4; a resolver's query while the fetcher points at a DNS
    /// server). False when the next hop is not known yet or the ring refused it.
    pub fn send_datagram<T: TxRing>(
        &mut self,
        src_port: u16,
        dst_port: u16,
        payload: &[u8],
        tx: &mut T,
    ) -> bool {
        let Some(mac) = self.next_hop_mac else {
            return false;
        };
        let to = mapped(self.cfg.link.server.0);
        let sent = self
            .egress
            .udp(tx, mac, &to, (src_port, dst_port), &[payload], &[], 0);
        tx.flush();
        self.count(sent)
    }
}
