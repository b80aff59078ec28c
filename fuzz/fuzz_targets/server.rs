//! Whole-server target: every input is a sequence of frames (2-byte big-endian length
//! prefix each) fed to one `Server` over a `FakeNic` (with segmentation offload when the
//! input's length is odd), with the clock advancing between them. Nothing may panic, the TCB count never exceeds the configured capacity, and
//! after 100 s of silence every TCB has been freed.
#![no_main]

use bareweb_engine::fake::FakeNic;
use bareweb_engine::nic::Clock;
use bareweb_engine::server::{Config, NoLog, Server};
use bareweb_engine::site::{build_from_files, Site};
use bareweb_engine::wire::{EthernetAddress, Ipv4Address};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

struct FuzzClock(u64);

impl Clock for FuzzClock {
    fn now_ns(&self) -> u64 {
        self.0
    }
    fn unix_secs(&self) -> u64 {
        1_700_000_000 + self.0 / 1_000_000_000
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

fuzz_target!(|data: &[u8]| {
    let mac = EthernetAddress([2, 0, 0, 0, 0, 2]);
    let mut cfg = Config::new(Ipv4Address([10, 0, 0, 2]), 24, [0x42; 16]);
    cfg.tcbs = 4;
    // The UDP protocol on port 8081 (bounds on, ids few), so frames reach it too.
    let mut udp = bareweb_engine::udp::Config::new(8081);
    udp.ids = 2;
    cfg.udp = Some(udp);
    // IPv6 on the link (a fixed secret: its address is one the fuzzer can learn).
    cfg.ipv6 = true;
    cfg.ipv6_secret = Some([0x42; 16]);
    let mut server = Server::new(cfg, site(), mac);
    let mut nic = FakeNic::new(mac);
    // Half the inputs (by length) run with segmentation offload, whose frames the fake
    // checks and cuts (a wrong partial checksum or length panics).
    nic.tso_max = if data.len() % 2 == 1 { 65455 } else { 0 };
    let mut clock = FuzzClock(1);
    let mut rest = data;
    while rest.len() >= 2 {
        let len = usize::from(u16::from_be_bytes([rest[0], rest[1]])).min(rest.len() - 2);
        nic.rx.inbox.push_back(rest[2..2 + len].to_vec());
        rest = &rest[2 + len..];
        server.poll(&mut nic, &clock, &mut NoLog);
        nic.tx.outbox.clear();
        clock.0 += 50_000_000;
        assert!(server.active() <= 4);
    }
    for _ in 0..100 {
        clock.0 += 1_000_000_000;
        server.poll(&mut nic, &clock, &mut NoLog);
        nic.tx.outbox.clear();
    }
    // Every connection times out within 100 s of silence: no TCB may leak.
    assert_eq!(server.active(), 0, "TCB leaked: {:?}", server.stats());
});
