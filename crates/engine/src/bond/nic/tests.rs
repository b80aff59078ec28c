use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use super::*;
use crate::bond::{Mode, Policy};
use crate::fake::FakeQueues;

fn macs(n: usize) -> Vec<EthernetAddress> {
    (0..n)
        .map(|k| EthernetAddress([2, 0, 0, 0, 0, 0x10 + k as u8]))
        .collect()
}

fn set(mode: Mode, n: usize) -> (&'static Bond, BondNic<FakeQueues, FakeQueues>) {
    let bond = Bond::new(mode, Policy::PerClient, &macs(n), 100, 1)
        .unwrap()
        .leak();
    let pairs = (0..n)
        .map(|_| (FakeQueues::default(), FakeQueues::default()))
        .collect();
    (bond, BondNic::new(bond, 0, pairs, NicCaps::default()))
}

/// A link the test switches.
#[derive(Clone)]
struct Switch(Arc<AtomicBool>);

impl LinkSense for Switch {
    fn link_up(&mut self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// A clock the test moves.
#[derive(Clone)]
struct Hands(Arc<AtomicU64>);

impl Clock for Hands {
    fn now_ns(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
    fn unix_secs(&self) -> u64 {
        0
    }
}

fn burst(nic: &mut BondNic<FakeQueues, FakeQueues>) -> Vec<Vec<u8>> {
    let (rx, _) = nic.split();
    let mut frames = [RxFrame { buf: 0, len: 0 }; 8];
    let n = rx.burst(&mut frames);
    let out = frames[..n].iter().map(|f| rx.bytes(f).to_vec()).collect();
    for f in &frames[..n] {
        rx.recycle(*f);
    }
    out
}

#[test]
fn only_the_receive_nic_is_read_the_others_are_emptied_and_counted() {
    let (bond, mut nic) = set(Mode::Spread, 2);
    nic.rx.rings[0].inbox.push_back(b"for nic 0".to_vec());
    nic.rx.rings[1]
        .inbox
        .push_back(b"flooded to nic 1".to_vec());
    assert_eq!(burst(&mut nic), vec![b"for nic 0".to_vec()]);
    for _ in 0..DRAIN_EVERY {
        assert!(burst(&mut nic).is_empty());
    }
    assert!(nic.rx.rings[1].inbox.is_empty(), "emptied");
    let (c0, c1) = (bond.counts(0), bond.counts(1));
    assert_eq!((c0.rx_frames, c0.rx_ignored), (1, 0));
    assert_eq!((c1.rx_frames, c1.rx_ignored), (0, 1));
    assert_eq!(nic.mac(), bond.mac(0));
}

#[test]
fn a_frame_stays_with_its_ring_across_a_failover() {
    let (bond, mut nic) = set(Mode::Spread, 2);
    nic.rx.rings[0].inbox.push_back(b"old".to_vec());
    let (rx, _) = nic.split();
    let mut frames = [RxFrame { buf: 0, len: 0 }; 4];
    assert_eq!(rx.burst(&mut frames), 1);
    // The receive NIC changes while the frame is loaned.
    let mut m = Monitor::new(2);
    m.observe(0b10);
    bond.publish(m.links());
    rx.rings[1].inbox.push_back(b"new".to_vec());
    let mut more = [RxFrame { buf: 0, len: 0 }; 4];
    assert_eq!(rx.burst(&mut more), 1);
    assert_eq!(rx.bytes(&frames[0]), b"old");
    assert_eq!(rx.bytes(&more[0]), b"new");
    rx.recycle(frames[0]);
    rx.recycle(more[0]);
    assert_eq!(rx.receive(), 1);
    // A buffer id naming no ring is nobody's.
    assert_eq!(
        rx.bytes(&RxFrame {
            buf: 9 << 24,
            len: 3
        }),
        b""
    );
    rx.recycle(RxFrame {
        buf: 9 << 24,
        len: 3,
    });
}

#[test]
fn select_routes_frames_and_counts_them_per_nic() {
    let (bond, mut nic) = set(Mode::Spread, 2);
    let (_, tx) = nic.split();
    static BODY: [u8; 100] = [7; 100];
    for k in [1u8, 0, 1, 9] {
        tx.select(k);
        let s = tx.slot().unwrap();
        s[..3].copy_from_slice(b"hdr");
        tx.post(3, &BODY).unwrap();
    }
    tx.flush();
    assert_eq!(
        tx.rings[0].outbox.len(),
        2,
        "an unknown NIC falls back to NIC 0"
    );
    assert_eq!(tx.rings[1].outbox.len(), 2);
    let c1 = bond.counts(1);
    assert_eq!((c1.tx_frames, c1.tx_bytes), (2, 206));
    // Room: the least of the NICs in use; a NIC whose link is down does not count.
    tx.rings[1].room = Some(3);
    assert_eq!(tx.room(), 3);
    let mut m = Monitor::new(2);
    m.observe(0b01);
    bond.publish(m.links());
    assert_eq!(tx.room(), usize::MAX);
}

#[test]
fn the_watching_core_runs_the_monitor_on_its_interval() {
    let (bond, nic) = set(Mode::Split, 2);
    let links: Vec<Switch> = (0..2)
        .map(|_| Switch(Arc::new(AtomicBool::new(true))))
        .collect();
    let clock = Hands(Arc::new(AtomicU64::new(1_000_000_000)));
    let watch = LinkWatch::new(
        bond,
        links
            .iter()
            .map(|l| Box::new(l.clone()) as Box<dyn LinkSense>)
            .collect(),
        Box::new(clock.clone()),
    );
    let mut nic = nic.with_watch(watch);
    burst(&mut nic);
    assert_eq!(bond.links().announce, 1, "the gratuitous ARP at start");
    // The receive NIC's link goes down; nothing happens before the interval is over.
    links[0].0.store(false, Ordering::Relaxed);
    clock.0.fetch_add(50_000_000, Ordering::Relaxed);
    burst(&mut nic);
    assert_eq!(bond.links().receive, 0);
    clock.0.fetch_add(50_000_000, Ordering::Relaxed);
    burst(&mut nic);
    let l = bond.links();
    assert_eq!((l.receive, l.up, l.announce), (1, 0b10, 2));
    assert_eq!(bond.events(0), (1, 0, 1));
    assert_eq!(nic.mac(), bond.mac(1));
    assert_eq!(nic.rx.watch().map(|w| w.readings), Some(2), "none between");
    // Frames now come from NIC 1.
    nic.rx.rings[1].inbox.push_back(b"to nic 1".to_vec());
    assert_eq!(burst(&mut nic), vec![b"to nic 1".to_vec()]);
}

#[test]
fn caps_are_the_least_of_the_nics() {
    let a = NicCaps::default().with_tso(60_000);
    let b = NicCaps {
        mtu: 1400,
        tso_max: 0,
        tso6: false,
    };
    let c = least_caps([a, b].into_iter());
    assert_eq!((c.mtu, c.tso_max), (1400, 0));
    assert_eq!(least_caps(core::iter::empty()), NicCaps::default());
}
