//! A bonded server (the bonding paper's design) under hostile input and flapping links: a
//! `Server` on a `BondNic` over three fake NICs, with the link monitor reading links the
//! input switches. Every input is a sequence of records: a control byte (bits 0-1: the NIC
//! the frame arrives on; bits 2-4: the links that are up; bit 5: one more link reading
//! passes), then a 2-byte big-endian length and the frame. The mode and policy come from
//! the input's length. Nothing may panic; every frame the server sends carries the MAC of
//! the NIC it leaves from; the TCB count stays within capacity; after 100 s of silence
//! every TCB has been freed and every send-id released.
#![no_main]

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};

use bareweb_engine::bond::{
    Bond, BondNic, BondRole, LinkWatch, Links, Mode, NicCounts, Part, Policy,
};
use bareweb_engine::fake::FakeQueues;
use bareweb_engine::nic::{Clock, LinkSense, Nic, NicCaps};
use bareweb_engine::server::{Config, NoLog, Server};
use bareweb_engine::site::{build_from_files, Site};
use bareweb_engine::wire::{EthernetAddress, Ipv4Address};
use libfuzzer_sys::fuzz_target;

const NICS: usize = 3;

#[derive(Clone)]
struct FuzzClock(Arc<AtomicU64>);

impl Clock for FuzzClock {
    fn now_ns(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
    fn unix_secs(&self) -> u64 {
        1_700_000_000 + self.now_ns() / 1_000_000_000
    }
}

/// NIC `k`'s link: bit k of the shared mask.
struct Link(Arc<AtomicU8>, u8);

impl LinkSense for Link {
    fn link_up(&mut self) -> bool {
        self.0.load(Ordering::Relaxed) & (1 << self.1) != 0
    }
}

fn site() -> Site<'static> {
    static IMAGE: OnceLock<Vec<u8>> = OnceLock::new();
    let image = IMAGE.get_or_init(|| {
        build_from_files(&[
            ("/index.html".into(), b"<h1>fuzz</h1>".to_vec(), 1_700_000_000),
            ("/big.bin".into(), vec![7u8; 20_000], 1_700_000_000),
        ])
        .expect("fuzz site builds")
    });
    Site::load(image).expect("fuzz site loads")
}

fn mac(k: usize) -> EthernetAddress {
    EthernetAddress([2, 0, 0, 0, 0, 0x10 + k as u8])
}

/// The set for `mode` and `policy`, made once (a set lives as long as the program) and
/// reset for every input: every link up, NIC 0 receiving, counters zero.
fn bond(mode: Mode, policy: Policy) -> &'static Bond {
    static SETS: OnceLock<Vec<&'static Bond>> = OnceLock::new();
    let sets = SETS.get_or_init(|| {
        let macs: Vec<_> = (0..NICS).map(mac).collect();
        [Mode::Spread, Mode::Split]
            .into_iter()
            .flat_map(|m| {
                let macs = macs.clone();
                [Policy::PerClient, Policy::Size, Policy::LeastQueued]
                    .into_iter()
                    .map(move |p| Bond::new(m, p, &macs, 10, 1).expect("a set").leak())
            })
            .collect()
    });
    let b = *sets
        .iter()
        .find(|b| b.mode() == mode && b.policy() == policy)
        .expect("every combination");
    b.publish(Links::start(NICS));
    let zero = [NicCounts::default(); NICS];
    for part in [Part::Tx, Part::Rx, Part::Server] {
        b.publish_counts(0, part, &zero);
    }
    b
}

fuzz_target!(|data: &[u8]| {
    let mode = if data.len() % 2 == 0 {
        Mode::Spread
    } else {
        Mode::Split
    };
    let policy = [Policy::PerClient, Policy::Size, Policy::LeastQueued][data.len() / 2 % 3];
    let bond = bond(mode, policy);
    let clock = FuzzClock(Arc::new(AtomicU64::new(1)));
    let up = Arc::new(AtomicU8::new(0b111));
    let links: Vec<Box<dyn LinkSense>> = (0..NICS as u8)
        .map(|k| Box::new(Link(up.clone(), k)) as Box<dyn LinkSense>)
        .collect();
    let pairs = (0..NICS)
        .map(|_| (FakeQueues::default(), FakeQueues::default()))
        .collect();
    let mut nic = BondNic::new(bond, 0, pairs, NicCaps::default())
        .with_watch(LinkWatch::new(bond, links, Box::new(clock.clone())));
    let mut cfg = Config::new(Ipv4Address([10, 0, 0, 2]), 24, [0x42; 16]);
    cfg.tcbs = 4;
    cfg.bond = Some(BondRole {
        bond,
        core: 0,
        announcer: true,
    });
    let mut server = Server::new(cfg, site(), mac(0));
    let poll = |server: &mut Server<Site<'static>>, nic: &mut BondNic<FakeQueues, FakeQueues>| {
        server.poll(nic, &clock, &mut NoLog);
        let (_, tx) = nic.split();
        for (k, ring) in tx.rings_mut().iter_mut().enumerate() {
            for f in ring.outbox.drain(..) {
                assert_eq!(f[6..12], mac(k).0, "a frame carries its NIC's MAC");
            }
        }
    };
    let mut rest = data;
    while rest.len() >= 3 {
        let ctl = rest[0];
        let len = usize::from(u16::from_be_bytes([rest[1], rest[2]])).min(rest.len() - 3);
        let frame = rest[3..3 + len].to_vec();
        rest = &rest[3 + len..];
        up.store((ctl >> 2) & 0b111, Ordering::Relaxed);
        let k = usize::from(ctl & 0b11) % NICS;
        nic.split().0.rings_mut()[k].inbox.push_back(frame);
        poll(&mut server, &mut nic);
        let step = if ctl & 0x20 != 0 { 10_000_000 } else { 1_000_000 };
        clock.0.fetch_add(step, Ordering::Relaxed);
        assert!(server.active() <= 4);
    }
    up.store(0b111, Ordering::Relaxed);
    for _ in 0..100 {
        clock.0.fetch_add(1_000_000_000, Ordering::Relaxed);
        poll(&mut server, &mut nic);
    }
    // Every connection times out within 100 s of silence: no TCB may leak.
    assert_eq!(server.active(), 0, "TCB leaked: {:?}", server.stats());
    let conns: u64 = (0..NICS).map(|k| bond.counts(k).conns).sum();
    assert_eq!(conns, 0, "every send-id released");
});
