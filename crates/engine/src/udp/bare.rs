//! The bare fetcher (the UDP paper §4.2.3: "the bare UDP client"): the load generator of
//! [`super::load`] speaking the protocol with the engine's own frames over a [`Nic`], with
//! no operating system in its path. The host runs it on a TAP of its own (`bareweb load
//! --udp --tap`), the kernel boots into it (`client=udp`); both call [`BareFetcher::poll`]
//! in a loop.
//!
//! It owns an address on the link and little else: it resolves the server's (or the
//! router's) MAC with ARP before the first request, answers ARP for its own address (over
//! IPv6, `FetchLink::v6`: its place on the link is a [`Client6`], its address behind DAD
//! and the next hop solicited, and the link verifies each datagram's checksum), picks
//! a fresh UDP source port for every request (the port indexes the request, as in the
//! paper) from a table of all 65,536 ports allocated at start, and builds each GET in a
//! transmit slot. Datagrams from the server's port to ours are checked (IPv4 header
//! checksum and UDP checksum) and handed to the request's transfer. Nothing allocates
//! after [`BareFetcher::new`].

use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use super::fetch::Sink;
use super::load::{Config, Load, Outcome};
use super::wire::{write_request, Start, MAX_REQUEST, PAD_TO};
use crate::iface::client6::Client6;
use crate::iface::egress::{self, Egress};
use crate::iface::ipv6::Step;
use crate::iface::FetchLink;
use crate::nic::{Nic, RxFrame, RxRing, TxRing};
use crate::wire::{
    ethernet, EtherType, EthernetAddress, EthernetFrame, IpProtocol, Ipv4Address, Ipv4Packet,
    UdpPacket,
};

/// Where the fetcher is and what it asks for.
#[derive(Debug, Clone)]
pub struct BareConfig {
    /// The fetcher's place on its link and the server (its UDP port).
    pub link: FetchLink,
    /// The `Host` field.
    pub host: String,
    /// Paths, fetched round robin.
    pub paths: Vec<String>,
    /// Schedule, slots, requests, timing.
    pub load: Config,
    /// Pad initial GETs to 1200 octets.
    pub pad: bool,
}

/// Source ports the fetcher uses (a fresh one per request).
const PORT_FIRST: u16 = 1024;
const ARP_EVERY_NS: u64 = 200_000_000;
const RX_BURST: usize = 32;

/// Counters of the fetcher's own frames (besides the load's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrameCounts {
    /// Frames received.
    pub rx: u64,
    /// Frames sent.
    pub tx: u64,
    /// Frames not sent: the transmit ring was full.
    pub tx_full: u64,
    /// Received frames that were not for a request (other traffic, late, bad checksums).
    pub ignored: u64,
    /// ARP requests sent for the server's (or the router's) MAC.
    pub arp_requests: u64,
}

/// The sink of a request: the HTTP status of its head.
struct Status(u16);

impl Sink for Status {
    fn begin(&mut self, _: u64) -> bool {
        true
    }
    fn head(&mut self, head: &[u8]) {
        self.0 = head
            .get(9..12)
            .and_then(|c| core::str::from_utf8(c).ok()?.parse().ok())
            .unwrap_or(0);
    }
    fn data(&mut self, _: u64, _: &[u8]) {}
}

/// The fetcher.
pub struct BareFetcher {
    cfg: BareConfig,
    egress: Egress,
    /// The next hop's MAC, once ARP answered.
    next_hop_mac: Option<EthernetAddress>,
    /// Over IPv6: the link and the next hop.
    c6: Option<Client6>,
    next_arp_ns: u64,
    load: Option<Load>,
    /// Port → slot + 1 (0: none).
    ports: Vec<u32>,
    /// Slot → its port.
    slot_port: Vec<u16>,
    /// Slot → status seen in its head.
    status: Vec<u16>,
    next_port: u16,
    started_ns: u64,
    /// Frame counters.
    pub frames: FrameCounts,
    req: Vec<u8>,
}

impl BareFetcher {
    /// A fetcher; allocates its tables now.
    pub fn new(cfg: BareConfig) -> BareFetcher {
        let slots = cfg.load.slots.max(1);
        let mut egress = Egress::new(&cfg.link.interface());
        // Its secret: any fixed bytes of this client (the link-local address need only be
        // stable for the run).
        let c6 = cfg.link.v6.map(|v| {
            let c = Client6::new(v, cfg.link.mac, [0xb4; 16]);
            egress = egress.with_ip6(c.src());
            c
        });
        BareFetcher {
            egress,
            c6,
            next_hop_mac: None,
            next_arp_ns: 0,
            load: None,
            ports: vec![0; 65536],
            slot_port: vec![0; slots],
            status: vec![0; slots],
            next_port: PORT_FIRST,
            started_ns: 0,
            frames: FrameCounts::default(),
            req: vec![0; MAX_REQUEST],
            cfg,
        }
    }

    /// The load (counters, slots), once the server's MAC is known and the run started.
    pub fn load(&self) -> Option<&Load> {
        self.load.as_ref()
    }

    /// When requests began (after ARP).
    pub fn started_ns(&self) -> u64 {
        self.started_ns
    }

    /// Whether every request has finished (the run is over).
    pub fn finished(&self) -> bool {
        self.load.as_ref().is_some_and(Load::finished)
    }

    /// Stops starting requests: what is in progress may finish (the run's time is up).
    pub fn stop_starting(&mut self) {
        if let Some(l) = self.load.as_mut() {
            l.stop_starting();
        }
    }

    fn next_hop(&self) -> Ipv4Address {
        self.cfg.link.next_hop()
    }

    /// One round: receive and handle a burst, start what the schedule says, run timeouts,
    /// flush. Returns whether anything happened.
    pub fn poll<N: Nic>(&mut self, nic: &mut N, now: u64) -> bool {
        let (rx, tx) = nic.split();
        let mut frames = [RxFrame { buf: 0, len: 0 }; RX_BURST];
        let n = rx.burst(&mut frames);
        for f in &frames[..n] {
            self.frames.rx += 1;
            self.frame(rx.bytes(f), now, tx);
            rx.recycle(*f);
        }
        let mut worked = n > 0;
        if self.c6.is_some() {
            worked |= self.poll6(now, tx);
        }
        if self.next_hop_mac.is_none() {
            if self.c6.is_none() && now >= self.next_arp_ns {
                self.next_arp_ns = now + ARP_EVERY_NS;
                self.arp_request(tx);
                worked = true;
            }
        } else {
            worked |= self.schedule(now, tx);
        }
        tx.flush();
        worked
    }

    /// The next time something is due (a request to start or a timeout).
    pub fn next_wakeup(&self) -> u64 {
        match &self.load {
            None => match &self.c6 {
                Some(c) => c.deadline(),
                None => self.next_arp_ns,
            },
            Some(l) => l.next_due().min(l.next_deadline()),
        }
    }

    fn schedule<T: TxRing>(&mut self, now: u64, tx: &mut T) -> bool {
        if self.load.is_none() {
            self.load = Some(Load::new(self.cfg.load, self.cfg.paths.len(), now));
            self.started_ns = now.max(1);
        }
        let mut worked = false;
        let due = self.load.as_mut().map_or(0, |l| l.due(now));
        for _ in 0..due {
            let Some((i, start)) = self.load.as_mut().and_then(|l| l.start(now)) else {
                continue;
            };
            // A fresh port: skip those still held by a request in progress.
            let mut port = self.next_port;
            while self.ports[usize::from(port)] != 0 {
                port = if port == u16::MAX {
                    PORT_FIRST
                } else {
                    port + 1
                };
            }
            self.next_port = if port == u16::MAX {
                PORT_FIRST
            } else {
                port + 1
            };
            let old = self.slot_port[i as usize];
            if self.ports[usize::from(old)] == i + 1 {
                self.ports[usize::from(old)] = 0;
            }
            self.ports[usize::from(port)] = i + 1;
            self.slot_port[i as usize] = port;
            self.status[i as usize] = 0;
            self.send(i, start, tx);
            worked = true;
        }
        let mut timeouts: [(u32, Outcome); 32] = [(0, Outcome::Going(None)); 32];
        // At most 32 slots' timeouts per pass, without allocating.
        while let Some(load) = self.load.as_mut().filter(|l| l.next_deadline() <= now) {
            let mut n = 0;
            load.on_timeouts(now, |i, o| {
                timeouts[n] = (i, o);
                n += 1;
                n < timeouts.len()
            });
            for &(i, o) in &timeouts[..n] {
                match o {
                    Outcome::Going(Some(start)) => self.send(i, start, tx),
                    Outcome::Finished(_) => self.release(i),
                    Outcome::Going(None) => {}
                }
            }
            worked |= n > 0;
            if n < timeouts.len() {
                break;
            }
        }
        worked
    }

    fn release(&mut self, i: u32) {
        let p = self.slot_port[i as usize];
        if self.ports[usize::from(p)] == i + 1 {
            self.ports[usize::from(p)] = 0;
        }
    }

    fn send<T: TxRing>(&mut self, i: u32, start: Start, tx: &mut T) {
        let (Some(load), Some(mac)) = (self.load.as_ref(), self.next_hop_mac) else {
            return;
        };
        let path = &self.cfg.paths[load.slot(i).url as usize];
        let pad = if self.cfg.pad && start == Start::Initial {
            PAD_TO
        } else {
            0
        };
        let Some(n) = write_request(
            &mut self.req,
            &self.cfg.host,
            path,
            start,
            load.token(),
            pad,
        ) else {
            return;
        };
        let ports = (self.slot_port[i as usize], self.cfg.link.port);
        let server = match self.cfg.link.v6 {
            Some(v) => v.server.0,
            None => crate::wire::ipv6::mapped(self.cfg.link.server.0),
        };
        let sent = self
            .egress
            .udp(tx, mac, &server, ports, &[&self.req[..n]], &[], 0);
        self.count(sent);
    }

    fn arp_request<T: TxRing>(&mut self, tx: &mut T) {
        let sent = self.egress.arp_request(tx, self.next_hop());
        if self.count(sent) {
            self.frames.arp_requests += 1;
        }
    }

    /// Counts a frame handed to the ring, or a full ring; whether it left.
    fn count(&mut self, sent: egress::Sent) -> bool {
        let left = sent == egress::Sent::Frame;
        if left {
            self.frames.tx += 1;
        } else {
            self.frames.tx_full += 1;
        }
        left
    }

    /// Over IPv6: the link's clock and the next hop's lookup, the frames they ask for
    /// posted. Returns whether anything was sent.
    fn poll6<T: TxRing>(&mut self, now: u64, tx: &mut T) -> bool {
        let mut worked = false;
        for _ in 0..16 {
            let Some(out) = self.c6.as_mut().and_then(|c| c.poll(now)) else {
                break;
            };
            let sent = self.c6.as_ref().and_then(|c| c.post(&out, tx));
            self.count_posted(sent);
            worked |= sent == Some(true);
        }
        if let Some(c) = &self.c6 {
            self.next_hop_mac = c.next_hop_mac();
            self.frames.arp_requests = c.solicitations;
            if self.egress.ip6() != c.src() {
                // The link-local address DAD replaced.
                self.egress = self.egress.with_ip6(c.src());
            }
        }
        worked
    }

    /// Over IPv6: a frame for the link, or a datagram from the server.
    fn frame6<T: TxRing>(&mut self, bytes: &[u8], now: u64, tx: &mut T) {
        let Some(c) = self.c6.as_mut() else { return };
        match c.receive(bytes, now) {
            Ok(Step::Udp { src, datagram, .. })
                if self.cfg.link.v6.is_some_and(|v| v.server == src) =>
            {
                match UdpPacket::new_checked(datagram) {
                    Ok(u) if u.src_port() == self.cfg.link.port => {
                        if let Some(c) = self.c6.as_mut() {
                            c.heard();
                        }
                        self.datagram(&u, datagram, now, tx);
                    }
                    _ => self.frames.ignored += 1,
                }
            }
            Ok(Step::Send(out)) => {
                let sent = self.c6.as_ref().and_then(|c| c.post(&out, tx));
                self.count_posted(sent);
            }
            Ok(Step::Udp { .. } | Step::Tcp { .. } | Step::TooBig { .. }) | Err(_) => {
                self.frames.ignored += 1
            }
            Ok(_) => {}
        }
    }

    /// Counts a frame of the link's: posted, the ring full, or nothing to send from.
    fn count_posted(&mut self, sent: Option<bool>) {
        match sent {
            Some(true) => self.frames.tx += 1,
            Some(false) => self.frames.tx_full += 1,
            None => {}
        }
    }

    /// Over IPv6, the link (its groups, for a NIC's multicast filter).
    pub fn link6(&self) -> Option<&crate::iface::ipv6::Link> {
        self.c6.as_ref().map(Client6::link)
    }

    fn frame<T: TxRing>(&mut self, bytes: &[u8], now: u64, tx: &mut T) {
        let Ok(eth) = EthernetFrame::new_checked(bytes) else {
            self.frames.ignored += 1;
            return;
        };
        if self.c6.is_some() {
            // Over IPv6 nothing else is ours (an ARP reply "from" the unused IPv4 next
            // hop must not make the client ready).
            match eth.ethertype() {
                EtherType::Ipv6 => self.frame6(bytes, now, tx),
                _ => self.frames.ignored += 1,
            }
            return;
        }
        if eth.dst_addr() != self.cfg.link.mac && !eth.dst_addr().is_broadcast() {
            self.frames.ignored += 1;
            return;
        }
        let payload = &bytes[ethernet::HEADER_LEN..];
        match eth.ethertype() {
            EtherType::Arp => self.arp(payload, tx),
            EtherType::Ipv4 => self.ipv4(payload, now, tx),
            _ => self.frames.ignored += 1,
        }
    }

    fn arp<T: TxRing>(&mut self, payload: &[u8], tx: &mut T) {
        let Some(heard) = self.cfg.link.hear_arp(payload) else {
            self.frames.ignored += 1;
            return;
        };
        if heard.next_hop_mac.is_some() {
            self.next_hop_mac = heard.next_hop_mac;
        }
        if let Some(r) = heard.request {
            let sent = self.egress.arp_reply(tx, r.source_hardware_addr, &r);
            self.count(sent);
        }
    }

    fn ipv4<T: TxRing>(&mut self, payload: &[u8], now: u64, tx: &mut T) {
        let Ok(ip) = Ipv4Packet::new_checked(payload) else {
            self.frames.ignored += 1;
            return;
        };
        let ok = !ip.is_fragment()
            && ip.verify_checksum()
            && ip.dst_addr() == self.cfg.link.ip
            && ip.src_addr() == self.cfg.link.server
            && ip.next_header() == IpProtocol::Udp;
        let body = payload
            .get(usize::from(ip.header_len())..usize::from(ip.total_len()))
            .unwrap_or(&[]);
        let udp = match UdpPacket::new_checked(body) {
            Ok(u) if ok && u.src_port() == self.cfg.link.port => u,
            _ => {
                self.frames.ignored += 1;
                return;
            }
        };
        if !udp.verify_checksum(self.cfg.link.server, self.cfg.link.ip) {
            self.frames.ignored += 1;
            return;
        }
        self.datagram(&udp, body, now, tx);
    }

    /// A datagram from the server's port (its checksum verified), `body` its bytes from
    /// the UDP header on: to the request whose port it came to.
    fn datagram<T: TxRing>(&mut self, udp: &UdpPacket<&[u8]>, body: &[u8], now: u64, tx: &mut T) {
        let slot = self.ports[usize::from(udp.dst_port())];
        let (Some(load), true) = (self.load.as_mut(), slot != 0) else {
            self.frames.ignored += 1;
            return;
        };
        let i = slot - 1;
        let mut sink = Status(self.status[i as usize]);
        let end = usize::from(udp.len());
        let data = body.get(8..end).unwrap_or(&[]);
        let outcome = load.on_packet(i, data, now, &mut sink);
        self.status[i as usize] = sink.0;
        match outcome {
            Outcome::Going(Some(start)) => self.send(i, start, tx),
            Outcome::Going(None) => {}
            Outcome::Finished(ok) => {
                if ok && !(200..300).contains(&sink.0) {
                    if let Some(l) = self.load.as_mut() {
                        l.count_bad_status();
                    }
                }
                self.release(i);
            }
        }
    }
}

#[cfg(test)]
mod tests;
