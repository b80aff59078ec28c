//! The split round (`server/split.rs`): driven like Boa's ready/blocked loop it sends
//! exactly the frames `poll` sends under IST; stale tokens are harmless; a full ring
//! puts the connection back on the ready queue; the clock never goes backwards.

use super::*;

/// A client of several keep-alive connections: each fetches /index.html, then /big.bin
/// with `Connection: close`, acknowledging every in-order byte, then closes.
struct Client {
    conns: Vec<C>,
}

struct C {
    sport: u16,
    snd_nxt: u32,
    rcv_nxt: u32,
    established: bool,
    sent: usize,
    got: Vec<u8>,
    fin: bool,
    fin_sent: bool,
}

const REQS: [&[u8]; 2] = [
    b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /big.bin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
];

impl Client {
    fn new(n: u16) -> Client {
        Client {
            conns: (0..n)
                .map(|i| C {
                    sport: 42000 + i,
                    snd_nxt: 7000 + u32::from(i) * 1000,
                    rcv_nxt: 0,
                    established: false,
                    sent: 0,
                    got: Vec::new(),
                    fin: false,
                    fin_sent: false,
                })
                .collect(),
        }
    }

    fn start(&self) -> Vec<Vec<u8>> {
        self.conns
            .iter()
            .map(|c| {
                tcp_frame(
                    c.sport,
                    c.snd_nxt,
                    None,
                    flags(true, false, false, false),
                    &[],
                    Some(1460),
                )
            })
            .collect()
    }

    fn done(&self) -> bool {
        self.conns.iter().all(|c| c.fin)
    }

    /// The client's answer to what the server sent.
    fn answer(&mut self, sent: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let mut touched = vec![false; self.conns.len()];
        for f in sent {
            let eth = EthernetFrame::new_checked(&f[..]).unwrap();
            let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
            let t = TcpPacket::new_checked(ip.payload()).unwrap();
            let o = parse_out(f).expect("checksums");
            let Some(i) = self.conns.iter().position(|c| c.sport == t.dst_port()) else {
                panic!("frame for an unknown port");
            };
            let c = &mut self.conns[i];
            assert!(!o.rst, "reset: {o:?}");
            if o.syn {
                c.established = true;
                c.rcv_nxt = o.seq.wrapping_add(1);
                c.snd_nxt += 1;
            } else if o.seq == c.rcv_nxt {
                c.got.extend_from_slice(&o.payload);
                c.rcv_nxt = c.rcv_nxt.wrapping_add(o.payload.len() as u32);
                if o.fin {
                    c.rcv_nxt = c.rcv_nxt.wrapping_add(1);
                    c.fin = true;
                }
            }
            // Only what takes sequence space is acknowledged (no ACK of an ACK).
            touched[i] |= o.syn || o.fin || !o.payload.is_empty();
        }
        let mut out = Vec::new();
        for (i, c) in self.conns.iter_mut().enumerate() {
            if !touched[i] || c.fin_sent {
                continue;
            }
            // The next request goes out once the previous response is complete.
            let want = match c.sent {
                0 => Some(REQS[0]),
                1 if c.got.ends_with(b"<h1>hello</h1>\n") => Some(REQS[1]),
                _ => None,
            };
            let fin = c.fin;
            let payload = want.filter(|_| c.established && !fin).unwrap_or(&[]);
            out.push(tcp_frame(
                c.sport,
                c.snd_nxt,
                Some(c.rcv_nxt),
                flags(false, true, fin, false),
                payload,
                None,
            ));
            if !payload.is_empty() {
                c.sent += 1;
                c.snd_nxt += payload.len() as u32;
            }
            if fin {
                c.snd_nxt += 1;
                c.fin_sent = true;
            }
        }
        out
    }
}

/// Runs the exchange, one server round per client turn; returns every frame the server
/// sent and the server.
fn exchange(
    sched: Sched,
    mut round: impl FnMut(&mut Server<TestSite>, Vec<Vec<u8>>, &ManualClock) -> Vec<Vec<u8>>,
) -> (Vec<Vec<u8>>, Server<TestSite>) {
    let mut cfg = Config::new(SERVER_IP, 24, [0x42; 16]);
    cfg.tcbs = 8;
    cfg.sched = sched;
    let mut s = Server::new(cfg, TestSite::new(), SERVER_MAC);
    let mut client = Client::new(3);
    let mut clock = ManualClock(1_000_000);
    let mut to_server = client.start();
    let mut all = Vec::new();
    for _ in 0..20_000 {
        if client.done() && to_server.is_empty() {
            break;
        }
        let sent = round(&mut s, core::mem::take(&mut to_server), &clock);
        to_server = client.answer(&sent);
        all.extend(sent);
        clock.0 += 1_000_000;
    }
    assert!(client.done(), "exchange did not finish");
    for c in &client.conns {
        let text = String::from_utf8_lossy(&c.got[..64]);
        assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
        assert!(c.got.ends_with(&big_file()[big_file().len() - 4096..]));
    }
    (all, s)
}

/// Boa's loop from the split API: receive a burst, one pass over the ready queue, until
/// neither brings anything; then the timers.
fn boa_round<T: TxRing>(s: &mut Server<TestSite>, frames: &[Vec<u8>], tx: &mut T) {
    let mut next = 0;
    loop {
        let burst = &frames[next..(next + 32).min(frames.len())];
        next += burst.len();
        for f in burst {
            s.receive(f, tx);
        }
        let pass = s.ready_len();
        for _ in 0..pass {
            if let Some(r) = s.take_ready() {
                s.step(r, tx, &mut NoLog);
            }
        }
        if burst.is_empty() && pass == 0 {
            break;
        }
    }
    s.tick(tx, &mut NoLog);
}

#[test]
fn split_round_sends_exactly_what_poll_sends() {
    let (by_poll, a) = exchange(Sched::Ist, |s, frames, clock| {
        let mut nic = FakeNic::new(SERVER_MAC);
        nic.rx.inbox.extend(frames);
        s.poll(&mut nic, clock, &mut NoLog);
        core::mem::take(&mut nic.tx.outbox)
    });
    let (by_split, b) = exchange(Sched::Ist, |s, frames, clock| {
        let mut tx = FakeQueues::default();
        s.begin(clock);
        boa_round(s, &frames, &mut tx);
        core::mem::take(&mut tx.outbox)
    });
    assert!(by_poll.len() > 700, "a real exchange: {}", by_poll.len());
    assert_eq!(by_poll.len(), by_split.len());
    assert!(by_poll == by_split, "the frames differ");
    assert_eq!(a.stats(), b.stats());
    assert_eq!((a.active(), b.active()), (0, 0));
    assert_eq!(a.stats().http_2xx, 6);
}

fn open_with_request(s: &mut Server<TestSite>, tx: &mut FakeQueues, sport: u16) -> u32 {
    s.receive(
        &tcp_frame(
            sport,
            100,
            None,
            flags(true, false, false, false),
            &[],
            Some(1460),
        ),
        tx,
    );
    let synack = parse_out(&tx.outbox.pop().unwrap()).unwrap();
    let srv = synack.seq.wrapping_add(1);
    s.receive(
        &tcp_frame(
            sport,
            101,
            Some(srv),
            flags(false, true, false, false),
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
            None,
        ),
        tx,
    );
    srv
}

#[test]
fn a_stale_token_is_harmless() {
    let mut s = server();
    let mut tx = FakeQueues::default();
    s.begin(&ManualClock(1_000_000));
    open_with_request(&mut s, &mut tx, 43000);
    let stale = s.take_ready().expect("the request made it ready");
    assert_eq!(s.ready_len(), 0);
    // The peer resets before the step: the TCB is freed.
    s.receive(
        &tcp_frame(
            43000,
            101 + 27,
            None,
            flags(false, false, false, true),
            &[],
            None,
        ),
        &mut tx,
    );
    assert_eq!(s.active(), 0);
    tx.outbox.clear();
    assert!(!s.step(stale, &mut tx, &mut NoLog));
    assert!(tx.outbox.is_empty(), "a freed connection sends nothing");
    // A new connection takes the same TCB and is queued; the old token steps it (its
    // pending work, done once), and the queue entry it leaves behind is skipped.
    open_with_request(&mut s, &mut tx, 43001);
    assert_eq!(s.ready_len(), 1);
    tx.outbox.clear();
    assert!(!s.step(stale, &mut tx, &mut NoLog));
    let out: Vec<Out> = tx.outbox.drain(..).filter_map(|f| parse_out(&f)).collect();
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(String::from_utf8_lossy(&out[0].payload).starts_with("HTTP/1.1 200"));
    assert_eq!(s.take_ready(), None);
    assert_eq!(s.ready_len(), 0);
    assert_eq!(s.stats().http_2xx, 1);
}

/// A ring with `room` free slots (a full ring lends no slot, as a device's does).
struct Tight {
    room: usize,
    inner: FakeQueues,
}

impl TxRing for Tight {
    fn slot(&mut self) -> Option<&mut [u8]> {
        if self.room == 0 {
            return None;
        }
        self.inner.slot()
    }
    fn post(&mut self, head_len: usize, body: &'static [u8]) -> Result<(), crate::nic::TxFull> {
        self.room -= 1;
        self.inner.post(head_len, body)
    }
    fn flush(&mut self) {}
}

#[test]
fn a_full_ring_puts_the_connection_back_on_the_ready_queue() {
    let mut s = server();
    let mut tx = Tight {
        room: usize::MAX,
        inner: FakeQueues::default(),
    };
    s.begin(&ManualClock(1_000_000));
    s.receive(
        &tcp_frame(
            44000,
            100,
            None,
            flags(true, false, false, false),
            &[],
            Some(1460),
        ),
        &mut tx,
    );
    let srv = parse_out(&tx.inner.outbox.pop().unwrap()).unwrap().seq + 1;
    s.receive(
        &tcp_frame(
            44000,
            101,
            Some(srv),
            flags(false, true, false, false),
            b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n",
            None,
        ),
        &mut tx,
    );
    tx.room = 2;
    let r = s.take_ready().unwrap();
    assert!(s.step(r, &mut tx, &mut NoLog), "more to send now");
    assert_eq!(s.ready_len(), 1);
    assert_eq!(s.stats().tx_ring_full, 1);
    tx.room = usize::MAX;
    let r = s.take_ready().unwrap();
    assert!(!s.step(r, &mut tx, &mut NoLog), "now it waits for ACKs");
    let lens: Vec<usize> = tx
        .inner
        .outbox
        .iter()
        .filter_map(|f| parse_out(f))
        .map(|o| o.payload.len())
        .collect();
    assert_eq!(
        lens, [1460; 10],
        "the initial window (RFC 6928: 10 MSS), once"
    );
    assert_eq!(s.ready_len(), 0);
}

#[test]
fn begin_never_moves_the_clock_back() {
    let mut s = server();
    s.begin(&ManualClock(5_000_000));
    s.begin(&ManualClock(3_000_000));
    assert_eq!(s.now_ns, 5_000_000);
    s.begin(&ManualClock(6_000_000));
    assert_eq!(s.now_ns, 6_000_000);
}

#[test]
fn tick_fires_timers_like_poll() {
    // A half-open connection times out through tick alone: 3 SYN-ACK retransmissions.
    let mut s = server();
    let mut tx = FakeQueues::default();
    let mut clock = ManualClock(1_000_000);
    s.begin(&clock);
    s.receive(
        &tcp_frame(45000, 1, None, flags(true, false, false, false), &[], None),
        &mut tx,
    );
    for _ in 0..200 {
        clock.0 += 100_000_000;
        s.begin(&clock);
        s.tick(&mut tx, &mut NoLog);
    }
    let synacks = tx
        .outbox
        .iter()
        .filter_map(|f| parse_out(f))
        .filter(|o| o.syn)
        .count();
    assert_eq!(synacks, 4, "the first and 3 retransmissions");
    assert_eq!(s.active(), 0);
    assert_eq!(s.stats().tcp_timeouts, 1);
}
