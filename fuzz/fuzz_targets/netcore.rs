//! Network-core target (the multi-core paper's design): every input is a sequence of frames
//! (2-byte big-endian length prefix each) fed to core 0 of a network-core machine (core 0's
//! `NetCoreNic` dispatching to two HTTP cores' `Server`s over rings), one round of all
//! cores per frame. Nothing may panic; an HTTP core never lacks a TCB for a SYN core 0 gave
//! it (the dispatcher's capacity rule); after 100 s of silence every TCB is freed and core
//! 0 has forgotten every connection.
#![no_main]

use std::cell::Cell;
use std::rc::Rc;
use std::sync::OnceLock;

use bareweb_engine::cores::netcore::{
    links, Addressing, NetCoreNic, NetCoreSetup, RingNic, RingSizes,
};
use bareweb_engine::cores::CoreQueue;
use bareweb_engine::fake::FakeQueues;
use bareweb_engine::nic::Clock;
use bareweb_engine::server::{Config, NoLog, Server};
use bareweb_engine::site::{build_from_files, Site};
use bareweb_engine::wire::{EthernetAddress, Ipv4Address};
use libfuzzer_sys::fuzz_target;

#[derive(Clone)]
struct FuzzClock(Rc<Cell<u64>>);

impl Clock for FuzzClock {
    fn now_ns(&self) -> u64 {
        self.0.get()
    }
    fn unix_secs(&self) -> u64 {
        1_700_000_000 + self.0.get() / 1_000_000_000
    }
}

fn site() -> Site<'static> {
    static IMAGE: OnceLock<Vec<u8>> = OnceLock::new();
    let image = IMAGE.get_or_init(|| {
        build_from_files(&[
            (
                "/index.html".into(),
                b"<h1>fuzz</h1>".to_vec(),
                1_700_000_000,
            ),
            ("/big.bin".into(), vec![7u8; 20_000], 1_700_000_000),
        ])
        .expect("fuzz site builds")
    });
    Site::load(image).expect("fuzz site loads")
}

const TCBS: usize = 3;

fuzz_target!(|data: &[u8]| {
    let mac = EthernetAddress([2, 0, 0, 0, 0, 2]);
    let mut cfg = Config::new(Ipv4Address([10, 0, 0, 2]), 24, [0x42; 16]);
    cfg.tcbs = TCBS;
    // The UDP protocol too, with few request ids so core 0's stack runs dry and its done
    // rings (16 slots, more than the ids) carry every answer back.
    let mut udp = bareweb_engine::udp::Config::new(8081);
    udp.ids = 4;
    cfg.udp = Some(udp);
    let clock = FuzzClock(Rc::new(Cell::new(1)));
    let mut ends = Vec::new();
    let mut http = Vec::new();
    for _ in 0..2 {
        // Small rings so a full CLIST/DLIST is reachable, and runs stay fast.
        let (n, h) = links(RingSizes {
            clist: 16,
            dlist: 16,
            notes: 16,
            done: 16,
        });
        ends.push(n);
        http.push((Server::new(cfg.clone(), site(), mac), RingNic::new(h, mac)));
    }
    let mut core0_nic = NetCoreNic::new(
        FakeQueues::default(),
        FakeQueues::default(),
        mac,
        clock.clone(),
        NetCoreSetup {
            ends,
            http_tcbs: TCBS,
            bsp_tcbs: Some(TCBS),
            addressing: Addressing::new(&cfg, mac),
        },
    );
    let mut core0 = Server::new(cfg.clone(), site(), mac);
    let round = |core0: &mut Server<Site<'static>>,
                 nic: &mut NetCoreNic<FakeQueues, FakeQueues, FuzzClock>,
                 http: &mut Vec<(Server<Site<'static>>, RingNic)>| {
        // As the per-core loop (`cores::run`) does: each poll, then its closed connections.
        core0.poll(nic, &clock, &mut NoLog);
        nic.connections_closed(core0.closed());
        for (s, n) in http.iter_mut() {
            s.poll(n, &clock, &mut NoLog);
            n.connections_closed(s.closed());
        }
        core0.poll(nic, &clock, &mut NoLog);
        nic.connections_closed(core0.closed());
        nic.inner_mut().1.outbox.clear();
        for (s, _) in http.iter() {
            // A SYN always finds a TCB or gets a cookie; a returned cookie dispatched to a
            // full core may find none (every connection sending: `tcp_no_tcb`), never more.
            assert!(s.active() <= TCBS);
        }
        assert!(nic.map().len() <= 3 * TCBS);
    };
    let mut rest = data;
    while rest.len() >= 2 {
        let len = usize::from(u16::from_be_bytes([rest[0], rest[1]])).min(rest.len() - 2);
        core0_nic
            .inner_mut()
            .0
            .inbox
            .push_back(rest[2..2 + len].to_vec());
        rest = &rest[2 + len..];
        round(&mut core0, &mut core0_nic, &mut http);
        clock.0.set(clock.0.get() + 50_000_000);
    }
    for _ in 0..100 {
        clock.0.set(clock.0.get() + 1_000_000_000);
        round(&mut core0, &mut core0_nic, &mut http);
    }
    assert_eq!(core0.active(), 0, "TCB leaked on core 0");
    for (s, _) in &http {
        assert_eq!(s.active(), 0, "TCB leaked: {:?}", s.stats());
    }
    assert!(core0_nic.map().is_empty(), "core 0 still maps a connection");
});
