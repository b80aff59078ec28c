//! A server on a set of NICs (bonding), whole engine over fake NICs on a simulated
//! switch: clients resolve the server by ARP (and update on gratuitous ARP, as Linux
//! does), download over cumulative ACKs, and see every frame with the NIC it left from.
//! Links are switched off and on under the link monitor to test failover end to end.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use super::*;
use crate::bond::{Bond, BondNic, BondRole, BondRx, BondTx, LinkWatch, Mode, Policy};
use crate::cores::netcore::{NetCoreNic, RingNic};
use crate::cores::plan::{Mode as PlanMode, Plan};
use crate::cores::CoreQueue;
use crate::nic::{LinkSense, Nic, NicCaps};
use crate::ring::Doze;
use crate::wire::ethernet::Repr as EthernetRepr;
use crate::wire::{ArpOperation, ArpPacket, ArpRepr};

const REQ_BIG: &[u8] = b"GET /big.bin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

fn nic_mac(k: usize) -> EthernetAddress {
    EthernetAddress([0x02, 0, 0, 0, 0xB0, k as u8])
}

/// A link the test switches (the NIC's carrier).
#[derive(Clone)]
struct Switch(Arc<AtomicBool>);

impl LinkSense for Switch {
    fn link_up(&mut self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// The simulation's clock (shared with the link monitor).
#[derive(Clone)]
struct Hands(Arc<AtomicU64>);

impl Clock for Hands {
    fn now_ns(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
    fn unix_secs(&self) -> u64 {
        1_700_000_000
    }
}

/// One downloading client.
struct Client {
    ip: Ipv4Address,
    mac: EthernetAddress,
    port: u16,
    /// The server's MAC in this client's neighbour table.
    server_mac: Option<EthernetAddress>,
    snd_nxt: u32,
    rcv_nxt: u32,
    established: bool,
    req_acked: bool,
    data: Vec<u8>,
    done: bool,
    /// Its own FIN went (with the ACK of the server's).
    closed: bool,
    /// Source MACs of the TCP frames it got (with payload / without).
    data_from: Vec<EthernetAddress>,
    control_from: Vec<EthernetAddress>,
    /// Data frames as (round, source MAC, sequence number).
    seqs: Vec<(u32, EthernetAddress, u32)>,
    /// The simulation's round, as the client last saw it.
    round: u32,
}

impl Client {
    fn new(i: usize) -> Client {
        Client {
            ip: Ipv4Address([10, 0, 0, 10 + i as u8]),
            mac: EthernetAddress([0x02, 0, 0, 0, 0xC0, i as u8]),
            port: 42000 + i as u16,
            server_mac: None,
            snd_nxt: 7000,
            rcv_nxt: 0,
            established: false,
            req_acked: false,
            data: Vec::new(),
            done: false,
            closed: false,
            data_from: Vec::new(),
            control_from: Vec::new(),
            seqs: Vec::new(),
            round: 0,
        }
    }

    fn tcp(&self, seq: u32, ack: Option<u32>, f: wtcp::Flags, payload: &[u8]) -> Vec<u8> {
        let repr = wtcp::Repr {
            src_port: self.port,
            dst_port: 80,
            seq_number: seq,
            ack_number: ack,
            flags: f,
            window_len: 65535,
            max_seg_size: f.syn.then_some(1460),
            window_scale: None,
            sack_permitted: false,
            timestamps: None,
        };
        let hl = repr.header_len();
        let mut fr = vec![0u8; L2L3 + hl + payload.len()];
        let dst = self.server_mac.unwrap_or(EthernetAddress([0xFF; 6]));
        write_l2l3(
            &mut fr,
            self.mac,
            dst,
            self.ip,
            SERVER_IP,
            IpProtocol::Tcp,
            hl + payload.len(),
        );
        repr.emit_header(&mut fr[L2L3..]);
        fr[L2L3 + hl..].copy_from_slice(payload);
        TcpPacket::new_unchecked(&mut fr[L2L3..]).fill_checksum(self.ip, SERVER_IP);
        fr
    }

    fn arp_request(&self) -> Vec<u8> {
        arp_frame(
            self.mac,
            EthernetAddress([0xFF; 6]),
            ArpRepr {
                operation: ArpOperation::Request,
                source_hardware_addr: self.mac,
                source_protocol_addr: self.ip,
                target_hardware_addr: EthernetAddress([0; 6]),
                target_protocol_addr: SERVER_IP,
            },
        )
    }

    /// What the client sends this round (a retry every 300 ms until answered, an ACK
    /// whenever it got something).
    fn act(&mut self, round: u32, got: bool) -> Option<Vec<u8>> {
        self.round = round + 1;
        if self.done {
            // Acknowledge the server's FIN with ours, once (the server frees the TCB).
            if self.closed {
                return None;
            }
            self.closed = true;
            let seq = self.snd_nxt + REQ_BIG.len() as u32;
            return Some(self.tcp(
                seq,
                Some(self.rcv_nxt),
                flags(false, true, true, false),
                &[],
            ));
        }
        if self.server_mac.is_none() {
            return (round.is_multiple_of(300)).then(|| self.arp_request());
        }
        let fl = |syn, ack| flags(syn, ack, false, false);
        if !self.established {
            return (round.is_multiple_of(300))
                .then(|| self.tcp(self.snd_nxt, None, fl(true, false), &[]));
        }
        if !self.req_acked && (round.is_multiple_of(300) || got) {
            return Some(self.tcp(self.snd_nxt, Some(self.rcv_nxt), fl(false, true), REQ_BIG));
        }
        let seq = self.snd_nxt
            + if self.req_acked {
                REQ_BIG.len() as u32
            } else {
                0
            };
        got.then(|| self.tcp(seq, Some(self.rcv_nxt), fl(false, true), &[]))
    }

    /// Takes a frame the switch delivered to this client; returns whether it was TCP for
    /// it (to be acknowledged).
    fn take(&mut self, f: &[u8]) -> bool {
        let eth = EthernetFrame::new_checked(f).unwrap();
        if eth.ethertype() == EtherType::Arp {
            let a = ArpRepr::parse(&ArpPacket::new_checked(eth.payload()).unwrap()).unwrap();
            // A reply to us, or a gratuitous ARP: Linux updates an existing entry from
            // either (and creates one from the reply).
            let reply = a.operation == ArpOperation::Reply && a.target_protocol_addr == self.ip;
            let garp = a.operation == ArpOperation::Request
                && a.target_protocol_addr == a.source_protocol_addr;
            if a.source_protocol_addr == SERVER_IP && (reply || (garp && self.server_mac.is_some()))
            {
                assert_eq!(
                    a.source_hardware_addr,
                    eth.src_addr(),
                    "ARP from its own NIC"
                );
                self.server_mac = Some(a.source_hardware_addr);
            }
            return false;
        }
        let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
        if ip.dst_addr() != self.ip {
            return false;
        }
        let t = TcpPacket::new_checked(ip.payload()).unwrap();
        assert!(t.verify_checksum(SERVER_IP, self.ip));
        assert_eq!(t.dst_port(), self.port);
        assert!(!t.rst(), "the server reset a download");
        if t.payload().is_empty() {
            self.control_from.push(eth.src_addr());
        } else {
            self.data_from.push(eth.src_addr());
            self.seqs.push((self.round, eth.src_addr(), t.seq_number()));
        }
        if t.syn() {
            if !self.established {
                self.established = true;
                self.rcv_nxt = t.seq_number().wrapping_add(1);
                self.snd_nxt += 1;
            }
            return true;
        }
        if t.ack() && seq::ge(t.ack_number(), self.snd_nxt + REQ_BIG.len() as u32) {
            self.req_acked = true;
        }
        if t.seq_number() == self.rcv_nxt {
            self.data.extend_from_slice(t.payload());
            self.rcv_nxt = self.rcv_nxt.wrapping_add(t.payload().len() as u32);
            if t.fin() {
                self.rcv_nxt = self.rcv_nxt.wrapping_add(1);
                self.done = true;
            }
        }
        true
    }

    fn body(&self) -> &[u8] {
        let head = self.data.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        &self.data[head..]
    }
}

fn arp_frame(src: EthernetAddress, dst: EthernetAddress, a: ArpRepr) -> Vec<u8> {
    let mut f = vec![0u8; 14 + a.buffer_len()];
    let mut eth = EthernetFrame::new_unchecked(&mut f[..]);
    EthernetRepr {
        src_addr: src,
        dst_addr: dst,
        ethertype: EtherType::Arp,
    }
    .emit(&mut eth);
    a.emit(&mut ArpPacket::new_unchecked(eth.payload_mut()));
    f
}

type Fq = FakeQueues;

/// The cores serving: one server per queue pair of the set (one core, or per-queue
/// mode), or network-core mode (core 0 on the set, HTTP cores on rings).
#[allow(clippy::large_enum_variant)] // one per test
enum Cores {
    Queues(Vec<(Server<SiteRef>, BondNic<Fq, Fq>)>),
    Net {
        core0: (Server<SiteRef>, NetCoreNic<BondRx<Fq>, BondTx<Fq>, Hands>),
        http: Vec<(Server<SiteRef>, RingNic)>,
    },
}

/// A server on `n` fake NICs behind a switch, with link switches and clients.
struct Sim {
    bond: &'static Bond,
    cores: Cores,
    links: Vec<Switch>,
    clock: Hands,
    clients: Vec<Client>,
    /// Every frame the server sent: (NIC it left from, frame).
    wire: Vec<(usize, Vec<u8>)>,
    round: u32,
}

impl Sim {
    fn new(mode: Mode, policy: Policy, n: usize, clients: usize) -> Sim {
        Sim::with_cores(mode, policy, n, clients, PlanMode::Single, 1)
    }

    /// `cores` cores in `plan_mode` (per-queue: a queue pair of each NIC per core).
    fn with_cores(
        mode: Mode,
        policy: Policy,
        n: usize,
        clients: usize,
        plan_mode: PlanMode,
        cores: usize,
    ) -> Sim {
        Sim::with_config(mode, policy, n, clients, plan_mode, cores, |_| {})
    }

    /// [`with_cores`](Self::with_cores), the servers' configuration changed by `edit`.
    fn with_config(
        mode: Mode,
        policy: Policy,
        n: usize,
        clients: usize,
        plan_mode: PlanMode,
        cores: usize,
        edit: impl FnOnce(&mut Config),
    ) -> Sim {
        let macs: Vec<_> = (0..n).map(nic_mac).collect();
        let bond = Bond::new(mode, policy, &macs, 10, cores).unwrap().leak();
        let links: Vec<Switch> = (0..n)
            .map(|_| Switch(Arc::new(AtomicBool::new(true))))
            .collect();
        let clock = Hands(Arc::new(AtomicU64::new(1_000_000)));
        let watch = LinkWatch::new(
            bond,
            links
                .iter()
                .map(|l| Box::new(l.clone()) as Box<dyn LinkSense>)
                .collect(),
            Box::new(clock.clone()),
        );
        let mut cfg = Config::new(SERVER_IP, 24, [0x42; 16]);
        cfg.tcbs = 16;
        cfg.bond = Some(BondRole {
            bond,
            core: 0,
            announcer: true,
        });
        edit(&mut cfg);
        let site = SiteRef(Box::leak(Box::new(TestSite::new())));
        let plan = Plan::new(plan_mode, cores, site, cfg, nic_mac(0));
        let mut watch = Some(watch);
        let mut set = |core: usize| {
            let pairs = (0..n).map(|_| (Fq::default(), Fq::default())).collect();
            let nic = BondNic::new(bond, core, pairs, NicCaps::default());
            match watch.take() {
                Some(w) => nic.with_watch(w),
                None => nic,
            }
        };
        let cores = match plan_mode {
            PlanMode::NetCore { .. } => {
                let (rx, tx) = set(0).into_rings();
                let q = plan.netcore(rx, tx, clock.clone(), &Doze::none(), |_| Doze::none());
                Cores::Net {
                    core0: (plan.server(0), q.core0),
                    http: q
                        .http
                        .into_iter()
                        .enumerate()
                        .map(|(i, r)| (plan.server(i + 1), r))
                        .collect(),
                }
            }
            _ => Cores::Queues(
                plan.servers()
                    .into_iter()
                    .enumerate()
                    .map(|(k, s)| (s, set(k)))
                    .collect(),
            ),
        };
        Sim {
            bond,
            cores,
            links,
            clock,
            clients: (0..clients).map(Client::new).collect(),
            wire: Vec::new(),
            round: 0,
        }
    }

    /// Every core polls once (network-core mode: core 0, the HTTP cores, core 0 again to
    /// drain what they sent).
    fn poll(&mut self) {
        match &mut self.cores {
            Cores::Queues(q) => {
                for (s, nic) in q {
                    s.poll(nic, &self.clock, &mut NoLog);
                }
            }
            Cores::Net { core0, http } => {
                core0.0.poll(&mut core0.1, &self.clock, &mut NoLog);
                core0.1.connections_closed(core0.0.closed());
                for (s, nic) in http.iter_mut() {
                    s.poll(nic, &self.clock, &mut NoLog);
                    nic.connections_closed(s.closed());
                }
                core0.0.poll(&mut core0.1, &self.clock, &mut NoLog);
            }
        }
    }

    /// What the NICs sent since the last call: (NIC, frame).
    fn take_sent(&mut self) -> Vec<(usize, Vec<u8>)> {
        let mut sent = Vec::new();
        let mut take = |tx: &mut BondTx<Fq>| {
            for (k, ring) in tx.rings_mut().iter_mut().enumerate() {
                sent.extend(ring.outbox.drain(..).map(|f| (k, f)));
            }
        };
        match &mut self.cores {
            Cores::Queues(q) => q.iter_mut().for_each(|(_, nic)| take(nic.split().1)),
            Cores::Net { core0, .. } => take(core0.1.inner_mut().1),
        }
        sent
    }

    /// Puts a frame on NIC `k`'s receive ring (of the queue pair the device's flow hash
    /// gives it: by client port; broadcasts on queue 0).
    fn deliver(&mut self, k: usize, f: Vec<u8>) {
        let queue = |n: usize| {
            let eth = EthernetFrame::new_checked(&f[..]).unwrap();
            if eth.ethertype() != EtherType::Ipv4 {
                return 0;
            }
            let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
            let port = TcpPacket::new_checked(ip.payload()).unwrap().src_port();
            usize::from(port) % n
        };
        match &mut self.cores {
            Cores::Queues(q) => {
                let i = queue(q.len());
                q[i].1.split().0.rings_mut()[k].inbox.push_back(f);
            }
            Cores::Net { core0, .. } => core0.1.inner_mut().0.rings_mut()[k].inbox.push_back(f),
        }
    }

    /// Connections open on every core.
    fn active(&self) -> usize {
        match &self.cores {
            Cores::Queues(q) => q.iter().map(|(s, _)| s.active()).sum(),
            Cores::Net { core0, http } => {
                core0.0.active() + http.iter().map(|(s, _)| s.active()).sum::<usize>()
            }
        }
    }

    fn link(&self, k: usize, up: bool) {
        self.links[k].0.store(up, Ordering::Relaxed);
    }

    /// One round: the cores poll, the switch carries what they sent (nothing from a NIC
    /// whose link is down), the clients answer, the switch carries that to the NIC whose
    /// MAC it is for (every NIC for a broadcast; nothing to a NIC whose link is down).
    fn step(&mut self) {
        self.poll();
        let mut got = vec![false; self.clients.len()];
        let sent = self.take_sent();
        for (k, f) in sent {
            if !self.links[k].0.load(Ordering::Relaxed) {
                continue;
            }
            let eth = EthernetFrame::new_checked(&f[..]).unwrap();
            assert_eq!(eth.src_addr(), nic_mac(k), "a frame carries its NIC's MAC");
            for (i, c) in self.clients.iter_mut().enumerate() {
                if eth.dst_addr().is_broadcast() || eth.dst_addr() == c.mac {
                    got[i] |= c.take(&f);
                }
            }
            self.wire.push((k, f));
        }
        let round = self.round;
        let mut frames = Vec::new();
        for (i, c) in self.clients.iter_mut().enumerate() {
            if let Some(f) = c.act(round, got[i]) {
                frames.push(f);
            }
        }
        for f in frames {
            let dst = EthernetFrame::new_checked(&f[..]).unwrap().dst_addr();
            for k in 0..self.links.len() {
                let up = self.links[k].0.load(Ordering::Relaxed);
                if up && (dst.is_broadcast() || dst == nic_mac(k)) {
                    self.deliver(k, f.clone());
                }
            }
        }
        self.clock.0.fetch_add(1_000_000, Ordering::Relaxed);
        self.round += 1;
    }

    fn run_until_done(&mut self, max_rounds: u32) {
        for _ in 0..max_rounds {
            if self.clients.iter().all(|c| c.done) {
                // Two more rounds: the clients' FINs reach the server.
                self.step();
                self.step();
                return;
            }
            self.step();
        }
        panic!(
            "downloads did not finish: {:?} {:?}",
            self.clients
                .iter()
                .map(|c| c.data.len())
                .collect::<Vec<_>>(),
            self.active()
        );
    }

    fn assert_bodies(&self) {
        let want = big_file();
        for c in &self.clients {
            assert!(c.body() == &want[..], "client {} got a wrong body", c.ip);
        }
    }

    /// ARP frames the server sent, as (NIC, operation, sender MAC).
    fn arps(&self) -> Vec<(usize, ArpOperation, EthernetAddress)> {
        self.wire
            .iter()
            .filter_map(|(k, f)| {
                let eth = EthernetFrame::new_checked(&f[..]).ok()?;
                (eth.ethertype() == EtherType::Arp).then(|| {
                    let a =
                        ArpRepr::parse(&ArpPacket::new_checked(eth.payload()).unwrap()).unwrap();
                    (*k, a.operation, a.source_hardware_addr)
                })
            })
            .collect()
    }
}

#[test]
fn spread_per_client_gives_each_client_its_own_send_nic() {
    let mut sim = Sim::new(Mode::Spread, Policy::PerClient, 2, 2);
    sim.run_until_done(20_000);
    sim.assert_bodies();
    let a: Vec<_> = sim.clients.iter().map(|c| c.data_from[0]).collect();
    assert_ne!(a[0], a[1], "the paper's Fig. 7: one NIC per client");
    for c in &sim.clients {
        assert!(c
            .data_from
            .iter()
            .chain(&c.control_from)
            .all(|m| *m == c.data_from[0]));
        assert_eq!(
            c.server_mac,
            Some(nic_mac(0)),
            "neighbour table: the receive NIC"
        );
    }
    // ARP: the gratuitous one at start and the replies, all from NIC 0 with its MAC.
    let arps = sim.arps();
    assert!(
        arps.iter().all(|&(k, _, m)| k == 0 && m == nic_mac(0)),
        "{arps:?}"
    );
    assert_eq!(
        arps.iter().filter(|a| a.1 == ArpOperation::Reply).count(),
        2
    );
    assert!(arps.iter().filter(|a| a.1 == ArpOperation::Request).count() >= 1);
    for k in 0..2 {
        let c = sim.bond.counts(k);
        assert_eq!((c.assigned, c.conns), (1, 0), "NIC {k}: {c:?}");
        assert!(c.tx_frames > 700, "NIC {k} sent data: {c:?}");
    }
    assert_eq!(sim.bond.counts(0).garps, 3);
    assert_eq!(sim.active(), 0, "every connection closed");
    // Every client's ARP request reached NIC 1 too and was dropped there.
    assert!(sim.bond.counts(1).rx_ignored >= 2);
    assert_eq!(sim.bond.counts(1).rx_frames, 0);
}

#[test]
fn split_sends_only_on_the_send_nic_and_answers_arp_on_the_receive_nic() {
    let mut sim = Sim::new(Mode::Split, Policy::PerClient, 2, 2);
    sim.run_until_done(20_000);
    sim.assert_bodies();
    for c in &sim.clients {
        assert!(c
            .data_from
            .iter()
            .chain(&c.control_from)
            .all(|m| *m == nic_mac(1)));
        assert_eq!(c.server_mac, Some(nic_mac(0)));
    }
    let tcp_on_0 = sim
        .wire
        .iter()
        .filter(|(k, f)| *k == 0 && f[12..14] == [0x08, 0x00])
        .count();
    assert_eq!(tcp_on_0, 0, "the receive NIC sends no IP frame");
    assert!(sim.arps().iter().all(|&(k, ..)| k == 0));
}

#[test]
fn size_sends_frames_without_payload_on_one_nic_and_data_on_the_other() {
    let mut sim = Sim::new(Mode::Spread, Policy::Size, 2, 2);
    sim.run_until_done(20_000);
    sim.assert_bodies();
    for c in &sim.clients {
        assert!(
            c.control_from.iter().all(|m| *m == nic_mac(0)),
            "SYN-ACK, ACKs"
        );
        assert!(c.data_from.iter().all(|m| *m == nic_mac(1)), "data");
    }
}

#[test]
fn least_queued_spreads_connections_by_bytes_waiting() {
    let mut sim = Sim::new(Mode::Spread, Policy::LeastQueued, 2, 2);
    sim.run_until_done(20_000);
    sim.assert_bodies();
    assert_ne!(sim.clients[0].data_from[0], sim.clients[1].data_from[0]);
}

#[test]
fn a_send_nic_failing_mid_download_moves_its_connections() {
    let mut sim = Sim::new(Mode::Spread, Policy::PerClient, 2, 4);
    // Until every client is downloading.
    while sim.clients.iter().any(|c| c.data.len() < 100_000) {
        sim.step();
        assert!(sim.round < 20_000);
    }
    sim.link(1, false);
    let failed_at = sim.wire.len();
    sim.run_until_done(100_000);
    sim.assert_bodies();
    let c1 = sim.bond.counts(1);
    assert_eq!(c1.moved_off, 2, "NIC 1's two clients moved: {c1:?}");
    assert_eq!(sim.bond.counts(0).assigned, 4);
    assert_eq!(
        sim.bond.links().receive,
        0,
        "the receive NIC did not change"
    );
    // After the reading that saw it down (10 ms), nothing more left on NIC 1.
    let late: Vec<_> = sim.wire[failed_at..]
        .iter()
        .filter(|(k, _)| *k == 1)
        .collect();
    assert!(late.is_empty(), "{} frames on the dead NIC", late.len());
    // It rejoins: a new client's connection goes to it (it has fewer connections).
    sim.link(1, true);
    for _ in 0..20 {
        sim.step();
    }
    sim.clients.push(Client::new(9));
    sim.run_until_done(20_000);
    assert_eq!(sim.clients[4].data_from[0], nic_mac(1));
    assert_eq!(sim.bond.events(1), (1, 1, 0));
}

#[test]
fn the_receive_nic_failing_elects_another_and_announces_its_mac() {
    let mut sim = Sim::new(Mode::Spread, Policy::PerClient, 2, 4);
    while sim.clients.iter().any(|c| c.data.len() < 100_000) {
        sim.step();
        assert!(sim.round < 20_000);
    }
    sim.link(0, false);
    let failed_at = sim.wire.len();
    sim.run_until_done(100_000);
    sim.assert_bodies();
    for c in &sim.clients {
        assert_eq!(c.server_mac, Some(nic_mac(1)), "the neighbour table moved");
    }
    let links = sim.bond.links();
    assert_eq!((links.receive, links.up), (1, 0b10));
    assert_eq!(sim.bond.events(0), (1, 0, 1));
    assert_eq!(sim.bond.counts(0).moved_off, 2);
    assert_eq!(sim.bond.counts(1).garps, 3, "three gratuitous ARPs");
    let garps = sim.arps();
    assert!(garps
        .iter()
        .any(|&(k, op, m)| k == 1 && op == ArpOperation::Request && m == nic_mac(1)));
    assert!(sim.wire[failed_at..].iter().all(|(k, _)| *k == 1));
    // NIC 0 returns: it only rejoins as a sender.
    sim.link(0, true);
    for _ in 0..20 {
        sim.step();
    }
    assert_eq!(sim.bond.links().receive, 1);
    assert_eq!(sim.bond.senders(sim.bond.links()), 0b11);
}

/// IPv6 on a bond: the link's frames leave from the receive NIC with its MAC; when it
/// fails, each gratuitous ARP goes with an unsolicited neighbour advertisement (override,
/// to all-nodes) of our address with the new receive NIC's MAC, from that NIC, and the
/// link takes frames to that MAC.
#[test]
fn the_receive_nic_failing_announces_the_ipv6_address_with_the_new_mac() {
    use crate::iface::ipv6::tests::parse_from as parse;
    use crate::wire::{Icmpv6Repr, Ipv6Address};
    let mut sim = Sim::with_config(
        Mode::Spread,
        Policy::PerClient,
        2,
        1,
        PlanMode::Single,
        1,
        |c| {
            c.ipv6 = true;
            c.ipv6_secret = Some([5; 16]);
        },
    );
    for _ in 0..3_000 {
        sim.step(); // 3 s: DAD of the link-local address passed
    }
    let ours = match &sim.cores {
        Cores::Queues(q) => q[0].0.ipv6_address().unwrap(),
        Cores::Net { .. } => unreachable!(),
    };
    assert_eq!(ours.1, crate::iface::addr6::Phase::Preferred);
    let ipv6 = |f: &[u8]| EthernetFrame::new_checked(f).unwrap().ethertype() == EtherType::Ipv6;
    let before: Vec<_> = sim.wire.iter().filter(|(_, f)| ipv6(f)).collect();
    assert!(!before.is_empty());
    assert!(before.iter().all(|(k, _)| *k == 0), "from the receive NIC");
    sim.link(0, false);
    let failed_at = sim.wire.len();
    for _ in 0..300 {
        sim.step();
    }
    let adverts: Vec<_> = sim.wire[failed_at..]
        .iter()
        .filter(|(_, f)| ipv6(f))
        .map(|(k, f)| (*k, parse(f)))
        .collect();
    assert_eq!(
        adverts.len(),
        3,
        "one with each gratuitous ARP: {adverts:?}"
    );
    for (k, (dst_mac, src, dst, hop_limit, m)) in adverts {
        assert_eq!(k, 1);
        assert_eq!(dst_mac, Ipv6Address::ALL_NODES.multicast_ethernet());
        assert_eq!((src, dst, hop_limit), (ours.0, Ipv6Address::ALL_NODES, 255));
        assert_eq!(
            m,
            Icmpv6Repr::NeighborAdvert {
                router: false,
                solicited: false,
                override_: true,
                target: ours.0,
                target_lladdr: Some(nic_mac(1)),
            }
        );
    }
    let link = match &sim.cores {
        Cores::Queues(q) => q[0].0.ipv6_link().unwrap().clone(),
        Cores::Net { .. } => unreachable!(),
    };
    assert!(link
        .multicast_macs()
        .contains(&ours.0.solicited_node().multicast_ethernet()));
}

#[test]
fn a_server_without_a_set_sends_as_before() {
    let mut s = server();
    let mut nic = FakeNic::new(SERVER_MAC);
    let clock = ManualClock(1_000_000);
    handshake(&mut s, &mut nic, &clock, 40000);
    assert_eq!(s.send_nic(0), None);
}

/// Four downloads on two NICs in `plan_mode` with `cores` cores; NIC `fail`'s link goes
/// down once every client is downloading. Every body must arrive whole, the clients must
/// end with the receive NIC's MAC, and both NICs must have sent data before the failure.
fn failover_in(plan_mode: PlanMode, cores: usize, fail: usize) -> Sim {
    let mut sim = Sim::with_cores(Mode::Spread, Policy::PerClient, 2, 4, plan_mode, cores);
    while sim.clients.iter().any(|c| c.data.len() < 100_000) {
        sim.step();
        assert!(sim.round < 20_000, "stuck before the failure");
    }
    let mut before = [false; 2];
    for (k, f) in &sim.wire {
        before[*k] |= f.len() > 1000;
    }
    assert_eq!(before, [true, true], "data left from both NICs");
    sim.link(fail, false);
    sim.run_until_done(100_000);
    sim.assert_bodies();
    let rx = sim.bond.links().receive;
    assert_eq!(usize::from(rx), if fail == 0 { 1 } else { 0 });
    for c in &sim.clients {
        assert_eq!(c.server_mac, Some(nic_mac(usize::from(rx))));
    }
    assert!(sim.bond.counts(fail).moved_off > 0);
    assert_eq!(sim.active(), 0, "no TCB left");
    sim
}

#[test]
fn network_core_mode_bonds_and_fails_over() {
    for fail in [1, 0] {
        let sim = failover_in(PlanMode::NetCore { bsp_http: false }, 3, fail);
        // The HTTP cores chose the send-ids: their slots hold the connections.
        assert_eq!(
            (0..2).map(|k| sim.bond.counts(k).assigned).sum::<u64>(),
            4 + sim.bond.counts(fail).moved_off
        );
    }
}

#[test]
fn per_queue_mode_bonds_and_fails_over() {
    for fail in [1, 0] {
        failover_in(PlanMode::PerQueue, 2, fail);
    }
}

#[test]
fn one_gratuitous_arp_for_each_one_asked_even_if_the_server_was_late() {
    let macs: Vec<_> = (0..2).map(nic_mac).collect();
    let bond = Bond::new(Mode::Spread, Policy::PerClient, &macs, 10, 1)
        .unwrap()
        .leak();
    let pairs = (0..2).map(|_| (Fq::default(), Fq::default())).collect();
    // No monitor on this set: the test publishes the word itself.
    let mut nic = BondNic::new(bond, 0, pairs, NicCaps::default());
    let mut cfg = Config::new(SERVER_IP, 24, [0x42; 16]);
    cfg.tcbs = 4;
    cfg.bond = Some(BondRole {
        bond,
        core: 0,
        announcer: true,
    });
    let mut server = Server::new(cfg, TestSite::new(), nic_mac(0));
    let clock = ManualClock(1_000_000);
    let mut m = crate::bond::Monitor::new(2);
    m.observe(0b11);
    m.observe(0b11); // two readings before the server's next round
    bond.publish(m.links());
    server.poll(&mut nic, &clock, &mut NoLog);
    let (_, tx) = nic.split();
    let garps = tx.rings_mut()[0].outbox.len();
    assert_eq!(garps, 2, "both asked for");
    assert!(tx.rings_mut()[1].outbox.is_empty());
    // A server that does not announce (another core's) sends none.
    let mut cfg = Config::new(SERVER_IP, 24, [0x42; 16]);
    cfg.tcbs = 4;
    cfg.bond = Some(BondRole {
        bond,
        core: 0,
        announcer: false,
    });
    let mut quiet = Server::new(cfg, TestSite::new(), nic_mac(0));
    m.observe(0b11);
    bond.publish(m.links());
    quiet.poll(&mut nic, &clock, &mut NoLog);
    assert_eq!(nic.split().1.rings_mut()[0].outbox.len(), garps);
}

#[test]
fn a_gratuitous_arp_the_ring_has_no_room_for_waits_for_the_next_round() {
    let macs: Vec<_> = (0..2).map(nic_mac).collect();
    let bond = Bond::new(Mode::Spread, Policy::PerClient, &macs, 10, 1)
        .unwrap()
        .leak();
    let pairs = (0..2).map(|_| (Fq::default(), Fq::default())).collect();
    let mut nic = BondNic::new(bond, 0, pairs, NicCaps::default());
    let mut cfg = Config::new(SERVER_IP, 24, [0x42; 16]);
    cfg.tcbs = 4;
    cfg.bond = Some(BondRole {
        bond,
        core: 0,
        announcer: true,
    });
    let mut server = Server::new(cfg, TestSite::new(), nic_mac(0));
    let clock = ManualClock(1_000_000);
    nic.split().1.rings_mut()[0].room = Some(0);
    let mut m = crate::bond::Monitor::new(2);
    m.observe(0b11);
    bond.publish(m.links());
    server.poll(&mut nic, &clock, &mut NoLog);
    assert!(
        nic.split().1.rings_mut()[0].outbox.is_empty(),
        "no room: not sent"
    );
    nic.split().1.rings_mut()[0].room = None;
    server.poll(&mut nic, &clock, &mut NoLog);
    assert_eq!(
        nic.split().1.rings_mut()[0].outbox.len(),
        1,
        "sent a round later"
    );
    server.poll(&mut nic, &clock, &mut NoLog);
    assert_eq!(
        nic.split().1.rings_mut()[0].outbox.len(),
        1,
        "and only once"
    );
}

#[test]
fn a_moved_connection_sends_snd_una_and_its_tail_at_once_on_its_new_nic() {
    let mut sim = Sim::new(Mode::Spread, Policy::PerClient, 2, 2);
    while sim.clients.iter().any(|c| c.data.len() < 100_000) {
        sim.step();
        assert!(sim.round < 20_000);
    }
    let on1 = sim
        .clients
        .iter()
        .position(|c| *c.data_from.last().unwrap() == nic_mac(1))
        .expect("a client on NIC 1");
    sim.link(1, false);
    let down_at = sim.round;
    // The next link reading (10 ms) moves it; the kick follows in the same round.
    for _ in 0..15 {
        sim.step();
    }
    let c = &sim.clients[on1];
    let first = c
        .seqs
        .iter()
        .find(|(r, m, _)| *r > down_at && *m == nic_mac(0))
        .expect("data on NIC 0 after the failure");
    assert!(
        first.0 <= down_at + 13,
        "resumed {} rounds (ms) after the link went down, before any timer",
        first.0 - down_at
    );
    // Two segments at once: SND.UNA, then the last one in flight (out of order for the
    // client, so it answers without delaying its ACK).
    let kick: Vec<u32> = c
        .seqs
        .iter()
        .filter(|(r, m, _)| *r == first.0 && *m == nic_mac(0))
        .map(|s| s.2)
        .collect();
    assert_eq!(kick.len(), 2, "{kick:?}");
    let ahead = kick[1].wrapping_sub(kick[0]);
    assert!(
        ahead > 0 && ahead < 1 << 30,
        "the tail after SND.UNA: {kick:?}"
    );
    sim.run_until_done(100_000);
    sim.assert_bodies();
}
