//! The server's split round (the parallel runners') driven in any order: each input
//! is a sequence of operations — receive a frame (2-byte big-endian length, then the
//! bytes), take a ready connection (tokens kept, up to 16), step any kept token (maybe
//! long after it was taken, its connection since freed or its TCB reused), tick the timers
//! with the clock advancing. Nothing may panic; TCBs never exceed the capacity; the ready
//! queue stays bounded; and after every kept token is stepped and 100 s of silence every
//! TCB has been freed, even when the input dropped tokens on the way. Half the inputs run
//! with segmentation offload.
#![no_main]

use bareweb_engine::fake::FakeQueues;
use bareweb_engine::nic::{Clock, NicCaps};
use bareweb_engine::server::{Config, NoLog, Ready, Server};
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

const TCBS: usize = 4;
const KEPT: usize = 16;

fuzz_target!(|data: &[u8]| {
    let mac = EthernetAddress([2, 0, 0, 0, 0, 2]);
    let mut cfg = Config::new(Ipv4Address([10, 0, 0, 2]), 24, [0x42; 16]);
    cfg.tcbs = TCBS;
    let mut server = Server::new(cfg, site(), mac);
    // Half the inputs (by length) run with segmentation offload, whose frames the fake
    // ring checks and cuts (a wrong partial checksum or length panics).
    if data.len() % 2 == 1 {
        server.set_caps(NicCaps::default().with_tso(65455));
    }
    let mut tx = FakeQueues::default();
    let mut clock = FuzzClock(1);
    let mut kept: Vec<Ready> = Vec::new();
    let mut stale_steps = 0usize;
    let mut rest = data;
    while let Some((&op, tail)) = rest.split_first() {
        rest = tail;
        server.begin(&clock);
        match op % 5 {
            0 => {
                if rest.len() < 2 {
                    break;
                }
                let len = usize::from(u16::from_be_bytes([rest[0], rest[1]])).min(rest.len() - 2);
                server.receive(&rest[2..2 + len], &mut tx);
                rest = &rest[2 + len..];
            }
            1 => {
                if kept.len() < KEPT {
                    if let Some(r) = server.take_ready() {
                        kept.push(r);
                    }
                }
            }
            2 => {
                let Some((&i, tail)) = rest.split_first() else { break };
                rest = tail;
                if !kept.is_empty() {
                    let r = kept.swap_remove(usize::from(i) % kept.len());
                    let _ = server.step(r, &mut tx, &mut NoLog);
                    stale_steps += 1;
                }
            }
            3 => {
                clock.0 += 50_000_000;
                server.begin(&clock);
                server.tick(&mut tx, &mut NoLog);
            }
            _ => {
                // A token dropped on the floor: its connection must still end by its timers.
                kept.pop();
            }
        }
        tx.outbox.clear();
        assert!(server.active() <= TCBS);
        // Each entry is a queued TCB, or one left behind by a step of a stale token.
        assert!(server.ready_len() <= TCBS + stale_steps, "ready queue grew: {}", server.ready_len());
    }
    for r in kept.drain(..) {
        let _ = server.step(r, &mut tx, &mut NoLog);
    }
    for _ in 0..100 {
        clock.0 += 1_000_000_000;
        server.begin(&clock);
        server.tick(&mut tx, &mut NoLog);
        while let Some(r) = server.take_ready() {
            let _ = server.step(r, &mut tx, &mut NoLog);
        }
        tx.outbox.clear();
    }
    assert_eq!(server.active(), 0, "TCB leaked: {:?}", server.stats());
});
