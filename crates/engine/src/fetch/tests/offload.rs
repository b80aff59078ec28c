//! Receive offloads (the bare load generator's TAP with `TUN_F_CSUM | TUN_F_TSO4`): the engine's
//! server posts its responses with segmentation offload, and the link between them plays
//! the host kernel: with the fetcher's offloads on, a super-frame reaches the fetcher whole
//! with its partial checksum and the trust mark (`NEEDS_CSUM`); with them off, it is cut
//! into MSS segments with complete checksums (`fake::segment`), as today.

use std::collections::VecDeque;
use std::vec::Vec;

use super::*;
use crate::fake;
use crate::nic::{NicCaps, Tso, TxFull, TX_HEAD_ROOM};
use crate::wire::{Ipv4Packet, TcpPacket};

/// One direction's queues: frames posted (whole, with whether they were offloaded) and
/// frames to receive (with the trust mark).
#[derive(Default)]
struct Q {
    out: Vec<(Vec<u8>, Option<Tso>)>,
    inbox: VecDeque<(Vec<u8>, bool)>,
    loaned: Vec<(Vec<u8>, bool)>,
    slot: Vec<u8>,
}

impl RxRing for Q {
    fn burst(&mut self, out: &mut [RxFrame]) -> usize {
        let mut n = 0;
        while n < out.len() {
            let Some(f) = self.inbox.pop_front() else {
                break;
            };
            out[n] = RxFrame {
                buf: self.loaned.len() as u32,
                len: f.0.len() as u32,
            };
            self.loaned.push(f);
            n += 1;
        }
        n
    }
    fn bytes(&self, f: &RxFrame) -> &[u8] {
        self.loaned.get(f.buf as usize).map_or(&[], |b| &b.0[..])
    }
    fn recycle(&mut self, _: RxFrame) {}
    fn csum_trusted(&self, f: &RxFrame) -> bool {
        self.loaned.get(f.buf as usize).is_some_and(|b| b.1)
    }
}

impl TxRing for Q {
    fn slot(&mut self) -> Option<&mut [u8]> {
        self.slot.resize(TX_HEAD_ROOM, 0);
        Some(&mut self.slot[..])
    }
    fn post(&mut self, head_len: usize, body: &'static [u8]) -> Result<(), TxFull> {
        let mut f = self.slot[..head_len].to_vec();
        f.extend_from_slice(body);
        self.out.push((f, None));
        Ok(())
    }
    fn post_tso(&mut self, head_len: usize, body: &'static [u8], tso: Tso) -> Result<(), TxFull> {
        let mut f = self.slot[..head_len].to_vec();
        f.extend_from_slice(body);
        self.out.push((f, Some(tso)));
        Ok(())
    }
    fn flush(&mut self) {}
}

struct Dev {
    mac: EthernetAddress,
    rx: Q,
    tx: Q,
    tso_max: usize,
}

impl Dev {
    fn new(mac: EthernetAddress, tso_max: usize) -> Dev {
        Dev {
            mac,
            rx: Q::default(),
            tx: Q::default(),
            tso_max,
        }
    }
}

impl Nic for Dev {
    type Rx = Q;
    type Tx = Q;
    fn split(&mut self) -> (&mut Q, &mut Q) {
        (&mut self.rx, &mut self.tx)
    }
    fn mac(&self) -> EthernetAddress {
        self.mac
    }
    fn caps(&self) -> NicCaps {
        NicCaps::default().with_tso(self.tso_max)
    }
}

struct Link {
    server: Server<MemSite>,
    s: Dev,
    fetcher: Fetcher,
    c: Dev,
    rec: Record,
    now: u64,
    /// The fetcher's receive offloads.
    offload: bool,
    /// Frames the fetcher was given, and of them super-frames; ACK-only frames it sent.
    to_fetcher: u64,
    super_frames: u64,
    acks: u64,
}

impl Link {
    fn new(offload: bool) -> Link {
        let mut cfg = FetchConfig::new(CLIENT_MAC, CLIENT_IP, 24, SERVER_IP, 80, 1);
        cfg.ports = (40_000, 40_015);
        let mut fetcher = Fetcher::new(cfg);
        fetcher.set_next_hop_mac(SERVER_MAC);
        Link {
            server: Server::new(
                ServerConfig::new(SERVER_IP, 24, [7; 16]),
                site(),
                SERVER_MAC,
            ),
            s: Dev::new(SERVER_MAC, 65_535 - 80),
            fetcher,
            c: Dev::new(CLIENT_MAC, 0),
            rec: Record {
                bodies: vec![Vec::new()],
                ends: Vec::new(),
                events: Vec::new(),
            },
            now: 1_000_000,
            offload,
            to_fetcher: 0,
            super_frames: 0,
            acks: 0,
        }
    }

    fn get(&mut self, path: &str, close: bool) {
        let n = http::write_get(self.fetcher.request_buf(0), "t", path, close).unwrap();
        self.rec.bodies[0].clear();
        assert!(self
            .fetcher
            .get(0, n, close, self.now, &mut self.c.tx, &mut self.rec));
    }

    /// Carries the frames posted: the server's to the fetcher as the kernel does for the
    /// fetcher's offloads; the fetcher's to the server as they are.
    fn carry(&mut self) -> usize {
        let mut moved = 0;
        for (f, tso) in self.s.tx.out.drain(..) {
            moved += 1;
            match tso {
                Some(_) if self.offload => {
                    self.super_frames += 1;
                    self.to_fetcher += 1;
                    self.c.rx.inbox.push_back((f, true));
                }
                Some(tso) => {
                    for seg in fake::segment(&f, tso) {
                        self.to_fetcher += 1;
                        self.c.rx.inbox.push_back((seg, false));
                    }
                }
                None => {
                    self.to_fetcher += 1;
                    self.c.rx.inbox.push_back((f, false));
                }
            }
        }
        for (f, _) in self.c.tx.out.drain(..) {
            moved += 1;
            let tcp = TcpPacket::new_checked(&f[34..]).unwrap();
            if tcp.payload().is_empty() && !tcp.syn() && !tcp.fin() {
                self.acks += 1;
            }
            self.s.rx.inbox.push_back((f, false));
        }
        moved
    }

    fn step(&mut self) -> usize {
        self.now += 10_000;
        self.server.poll(&mut self.s, &At(self.now), &mut NoLog);
        self.fetcher.poll(&mut self.c, self.now, &mut self.rec);
        self.carry()
    }

    fn run(&mut self) {
        for _ in 0..10_000 {
            if self.step() == 0 && self.s.rx.inbox.is_empty() && self.c.rx.inbox.is_empty() {
                return;
            }
        }
        panic!("the link never went quiet");
    }
}

/// Runs a keep-alive fetch of `path` on a fresh link; returns it after the fetch.
fn fetch(offload: bool, path: &str) -> Link {
    let mut l = Link::new(offload);
    l.get(path, false);
    l.run();
    let want = site().bytes(path).unwrap();
    assert_eq!(
        l.rec.ends,
        [(
            0,
            End::Done {
                status: 200,
                body: want.len() as u64
            }
        )]
    );
    assert!(l.rec.bodies[0] == want, "{path}: body differs");
    l
}

#[test]
fn super_frames_with_a_partial_checksum_are_taken_whole() {
    let on = fetch(true, "/big.bin");
    let off = fetch(false, "/big.bin");
    assert!(on.super_frames > 0);
    assert_eq!(on.fetcher.counters.rx_csum_trusted, on.super_frames);
    assert_eq!(on.fetcher.counters.ignored, 0, "none dropped");
    assert_eq!(off.fetcher.counters.rx_csum_trusted, 0);
    assert_eq!(
        on.fetcher.counters.retransmits + off.fetcher.counters.retransmits,
        0
    );
    // 256 KiB in far fewer frames, and an ACK per burst of them, not per segment.
    assert!(
        on.to_fetcher * 4 < off.to_fetcher,
        "{} frames with offloads, {} without",
        on.to_fetcher,
        off.to_fetcher
    );
    assert!(
        on.acks <= off.acks,
        "{} ACKs, {} without",
        on.acks,
        off.acks
    );
}

/// Steps a fresh link until the server's response to `GET /4k.bin` is posted, and returns
/// it (not delivered): one super-frame of Ethernet + IPv4 + TCP headers and 4 KiB and more.
fn response_frame() -> (Link, Vec<u8>) {
    let mut l = Link::new(true);
    l.get("/4k.bin", false);
    for _ in 0..100 {
        l.now += 10_000;
        l.server.poll(&mut l.s, &At(l.now), &mut NoLog);
        if let Some(at) = l.s.tx.out.iter().position(|(_, t)| t.is_some()) {
            let (f, _) = l.s.tx.out.remove(at);
            l.carry();
            return (l, f);
        }
        l.fetcher.poll(&mut l.c, l.now, &mut l.rec);
        l.carry();
    }
    panic!("no offloaded response");
}

#[test]
fn a_super_frame_is_one_segment_acked_at_once() {
    let (mut l, f) = response_frame();
    l.run(); // the handshake's last frames
    let tcp = TcpPacket::new_checked(&f[34..]).unwrap();
    let end = tcp.seq_number().wrapping_add(tcp.payload().len() as u32);
    assert!(tcp.payload().len() > 4096, "more than one MSS in it");
    let rx = l.fetcher.counters.rx;
    l.c.rx.inbox.push_back((f, true));
    l.now += 10_000;
    l.fetcher.poll(&mut l.c, l.now, &mut l.rec);
    assert_eq!(l.fetcher.counters.rx, rx + 1);
    assert_eq!(
        l.rec.ends,
        [(
            0,
            End::Done {
                status: 200,
                body: 4096
            }
        )]
    );
    assert!(l.rec.bodies[0] == [b'z'; 4096]);
    // One ACK, of all of it (held for the slot's next request, then sent by itself).
    l.fetcher.flush_acks(l.now, &mut l.c.tx);
    assert_eq!(l.c.tx.out.len(), 1, "one ACK for the whole super-frame");
    let ack = TcpPacket::new_checked(&l.c.tx.out[0].0[34..]).unwrap();
    assert!(ack.ack() && ack.payload().is_empty());
    assert_eq!(ack.ack_number(), end);
}

#[test]
fn a_partial_checksum_without_the_mark_is_dropped() {
    let (mut l, f) = response_frame();
    l.run();
    // Not vouched for: its checksum field is the pseudo-header sum, which fails.
    let ignored = l.fetcher.counters.ignored;
    l.c.rx.inbox.push_back((f.clone(), false));
    l.now += 10_000;
    l.fetcher.poll(&mut l.c, l.now, &mut l.rec);
    assert_eq!(l.fetcher.counters.ignored, ignored + 1);
    assert!(l.rec.ends.is_empty() && l.rec.bodies[0].is_empty());
    // The mark spares the TCP checksum only: a bad IPv4 header checksum still drops it.
    let mut bad = f.clone();
    let mut ip = Ipv4Packet::new_unchecked(&mut bad[14..]);
    ip.set_ident(ip.ident() ^ 1);
    l.c.rx.inbox.push_back((bad, true));
    l.now += 10_000;
    l.fetcher.poll(&mut l.c, l.now, &mut l.rec);
    assert_eq!(l.fetcher.counters.ignored, ignored + 2);
    assert!(l.rec.ends.is_empty());
    // And the frame itself, vouched for, is taken.
    l.c.rx.inbox.push_back((f, true));
    l.now += 10_000;
    l.fetcher.poll(&mut l.c, l.now, &mut l.rec);
    assert_eq!(l.rec.ends.len(), 1);
    assert!(l.rec.bodies[0] == [b'z'; 4096]);
}
