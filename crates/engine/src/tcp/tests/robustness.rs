//! Property tests: arbitrary sequences of segments (sequence and acknowledgment numbers
//! near the connection's and anywhere, any flags, windows and lengths, any receive space),
//! application calls, output and timer steps, played the way the server plays them. The
//! connection never panics and keeps its invariants: SND.UNA ≤ SND.NXT ≤ SND.MAX in
//! sequence space, nothing beyond what was queued (and the FIN) sent, RCV.NXT only moving
//! forward by what was delivered, the `deliver` range inside the payload and the receive
//! space, RTO and cwnd within bounds, and no way back to SYN-RECEIVED or out of CLOSED;
//! with CUBIC and with BBR (whose pacing may hold segments back: `Send` then sends less).

use proptest::prelude::*;

use super::*;
use crate::tcp::congestion::Algorithm;
use crate::tcp::conn::Reply;
use crate::tcp::output::TimerAction;
use crate::tcp::rtt::{RTO_MAX_MS, RTO_MIN_MS};
use crate::tcp::seq;

/// Where a generated segment's ACK points.
#[derive(Debug, Clone, Copy)]
enum AckAt {
    /// SND.UNA plus this (a duplicate at 0).
    Una(i32),
    /// SND.NXT (everything sent).
    Nxt,
    /// SND.MAX.
    Max,
    /// SND.UNA plus this many MSS.
    Segments(u32),
}

#[derive(Debug, Clone)]
enum Op {
    Segment {
        seq_off: i32,
        ack_off: Option<AckAt>,
        syn: bool,
        fin: bool,
        rst: bool,
        window: u16,
        len: usize,
        rx: u32,
        ws: Option<u8>,
        /// SACK blocks: (offset from SND.UNA, length), anywhere near the flight.
        sack: std::vec::Vec<(i32, u32)>,
        /// Timestamps: (TSval as an offset from TS.Recent, TSecr as one from our clock).
        ts: Option<(i32, i32)>,
    },
    Queue(u32),
    Close,
    Send(u32),
    Advance(u64),
    Header(u32),
    /// This many pure duplicate ACKs with the last window.
    DupAcks(u8),
}

fn offset() -> impl Strategy<Value = i32> {
    prop_oneof![
        4 => -3000i32..3000,
        2 => -70_000i32..70_000,
        1 => any::<i32>(),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let ack = prop_oneof![
        3 => offset().prop_map(AckAt::Una),
        2 => Just(AckAt::Una(0)),
        2 => Just(AckAt::Nxt),
        1 => Just(AckAt::Max),
        2 => (1u32..8).prop_map(AckAt::Segments),
    ];
    let segment = (
        prop_oneof![3 => Just(0i32), 2 => offset()],
        prop::option::weighted(0.9, ack),
        prop::bool::weighted(0.05),
        prop::bool::weighted(0.15),
        prop::bool::weighted(0.05),
        prop_oneof![Just(0u16), Just(65_535u16), any::<u16>(), 0u16..3000],
        prop_oneof![Just(0usize), 0usize..2000, 0usize..4096],
        prop_oneof![Just(RX), Just(0u32), 0u32..3000, Just(1u32 << 20)],
        prop::option::weighted(0.1, 0u8..20),
        prop::collection::vec(
            (
                prop_oneof![4 => -3000i32..30_000, 1 => any::<i32>()],
                prop_oneof![4 => 1u32..5000, 1 => any::<u32>()],
            ),
            0..5,
        ),
        prop::option::weighted(
            0.7,
            (
                prop_oneof![4 => 0i32..100, 1 => -100i32..0, 1 => any::<i32>()],
                prop_oneof![4 => -1000i32..1, 1 => any::<i32>()],
            ),
        ),
    )
        .prop_map(
            |(seq_off, ack_off, syn, fin, rst, window, len, rx, ws, sack, ts)| Op::Segment {
                seq_off,
                ack_off,
                syn,
                fin,
                rst,
                window,
                len,
                rx,
                ws,
                sack,
                ts,
            },
        );
    prop_oneof![
        8 => segment,
        2 => (0u32..20_000).prop_map(Op::Queue),
        1 => Just(Op::Close),
        4 => prop_oneof![Just(0u32), Just(65_535u32), 0u32..10_000].prop_map(Op::Send),
        3 => prop_oneof![0u64..50, 0u64..5000, Just(1000u64)].prop_map(Op::Advance),
        1 => prop_oneof![Just(RX), 0u32..100_000].prop_map(Op::Header),
        1 => (1u8..6).prop_map(Op::DupAcks),
    ]
}

/// The connection and what the test knows independently of it.
struct Run {
    c: Connection,
    now: u64,
    /// Bytes queued so far (the model of `send_end`).
    queued: u32,
    closed: bool,
    was_synchronized: bool,
}

impl Run {
    fn check(&self) -> Result<(), TestCaseError> {
        let c = &self.c;
        let s = c.state();
        if self.was_synchronized {
            prop_assert!(s != State::SynReceived, "back to SYN-RECEIVED");
        }
        if s == State::Closed {
            return Ok(());
        }
        prop_assert!(
            seq::le(c.snd_una(), c.snd_nxt()),
            "SND.UNA > SND.NXT: {c:?}"
        );
        prop_assert!(
            seq::le(c.snd_nxt(), c.snd_max()),
            "SND.NXT > SND.MAX: {c:?}"
        );
        prop_assert!(
            seq::le(c.iss(), c.snd_una()),
            "SND.UNA before the ISS: {c:?}"
        );
        prop_assert_eq!(c.send_end(), LOCAL_SEQ.wrapping_add(self.queued));
        let limit = c.send_end().wrapping_add(u32::from(self.closed));
        prop_assert!(seq::le(c.snd_max(), limit), "sent beyond the stream: {c:?}");
        prop_assert!(
            c.flight() <= limit.wrapping_sub(c.snd_una()),
            "flight beyond what was queued: {c:?}"
        );
        if s.is_synchronized() {
            let cc = c.congestion();
            prop_assert!(cc.cwnd >= c.mss(), "cwnd below one MSS: {cc:?}");
            prop_assert!(cc.ssthresh >= 2 * c.mss(), "ssthresh below 2 MSS: {cc:?}");
        }
        let rto = c.rtt().rto_ms;
        prop_assert!((RTO_MIN_MS..=RTO_MAX_MS).contains(&rto), "rto {rto}");
        // The scoreboard: ascending, disjoint, inside (SND.UNA, SND.MAX].
        let mut low = c.snd_una();
        for &(l, r) in c.scoreboard().blocks() {
            prop_assert!(seq::le(low, l) && seq::lt(l, r), "scoreboard {c:?}");
            prop_assert!(seq::le(r, c.snd_max()), "SACKed beyond SND.MAX: {c:?}");
            low = r;
        }
        prop_assert!(c.is_closing() == self.closed);
        Ok(())
    }

    /// Plays one step; returns false once the owner would free the TCB.
    fn step(&mut self, op: &Op) -> Result<bool, TestCaseError> {
        match *op {
            Op::Segment {
                seq_off,
                ack_off,
                syn,
                fin,
                rst,
                window,
                len,
                rx,
                ws,
                ref sack,
                ts,
            } => {
                let mut blocks = crate::wire::tcp::SackBlocks::NONE;
                for &(off, n) in sack.iter() {
                    let l = self.c.snd_una().wrapping_add(off as u32);
                    blocks.push(l, l.wrapping_add(n));
                }
                let seg = ParsedRepr {
                    seq_number: self.c.rcv_nxt().wrapping_add(seq_off as u32),
                    ack_number: ack_off.map(|a| self.ack_number(a)),
                    flags: Flags {
                        syn,
                        fin,
                        rst,
                        psh: len > 0,
                        ack: ack_off.is_some(),
                    },
                    window_len: window,
                    options: Options {
                        mss: Some(536),
                        window_scale: ws,
                        sack_permitted: false,
                        sack: blocks,
                        timestamps: ts.map(|(v, e)| {
                            (
                                self.c.ts_recent().wrapping_add(v as u32),
                                self.c.ts_now(self.now).wrapping_add(e as u32),
                            )
                        }),
                    },
                    payload: data(len),
                    ..RECV_TEMPL
                };
                let rcv_before = self.c.rcv_nxt();
                let state_before = self.c.state();
                let o = self.c.input(&seg, self.now, rx);
                let took = self.c.rcv_nxt().wrapping_sub(rcv_before);
                if let Some((a, b)) = o.deliver {
                    prop_assert!(a < b && b <= len, "deliver {a}..{b} of {len}");
                    prop_assert!((b - a) as u32 <= rx, "deliver beyond rx_space");
                    prop_assert_eq!(took, (b - a) as u32 + u32::from(o.fin));
                } else if !o.reset {
                    prop_assert_eq!(took, u32::from(o.fin));
                }
                if o.out_of_window || o.challenge_ack {
                    prop_assert!(o.deliver.is_none() && !o.fin && o.acked == 0);
                }
                if o.fin && self.c.state() != State::Closed {
                    // (A second FIN at a new sequence number whose ACK also ends LAST-ACK is
                    // reported as a FIN: the connection is Closed by then, and freed.)
                    prop_assert!(!state_before.peer_closed() && self.c.state().peer_closed());
                }
                if self.c.state().is_synchronized() {
                    self.was_synchronized = true;
                }
                if o.reset {
                    prop_assert_eq!(self.c.state(), State::Closed);
                    return Ok(false);
                }
                match o.reply {
                    Reply::SynAck => {
                        prop_assert_eq!(self.c.state(), State::SynReceived);
                        let s = self.c.syn_ack(self.now);
                        prop_assert_eq!(s.seq, self.c.iss());
                        return Ok(true);
                    }
                    Reply::Reset { .. } => {
                        prop_assert_eq!(self.c.state(), State::SynReceived);
                        return Ok(true);
                    }
                    Reply::Ack | Reply::None => {}
                }
                if o.retransmit {
                    if let Some(s) = self.c.retransmit_segment() {
                        prop_assert_eq!(s.seq, self.c.snd_una());
                        prop_assert!(s.len <= self.c.mss());
                        self.c.on_sent(&s, self.now);
                    }
                }
                if self.c.state().is_done() {
                    return Ok(false);
                }
            }
            Op::Queue(n) => {
                let start = self.c.queue(n);
                prop_assert_eq!(start, LOCAL_SEQ.wrapping_add(self.queued));
                if !self.closed {
                    self.queued += n;
                }
            }
            Op::Close => {
                self.c.close();
                self.closed = true;
            }
            Op::Send(frame_max) => self.send(frame_max)?,
            Op::Advance(ms) => {
                self.now += ms * MS;
                match self.c.on_timer(self.now, STALL, RETRIES) {
                    TimerAction::None => {}
                    TimerAction::ResendSynAck => {
                        self.c.syn_ack(self.now);
                    }
                    TimerAction::Retransmit => {
                        if self.c.sack_ok() && self.c.state().is_synchronized() {
                            prop_assert!(self.c.sack_recovery());
                        } else {
                            prop_assert_eq!(self.c.snd_nxt(), self.c.snd_una());
                        }
                        self.send(0)?;
                    }
                    TimerAction::Probe(p) => {
                        prop_assert!(p.probe && p.len == 1 && p.seq == self.c.snd_una());
                        self.c.on_sent(&p, self.now);
                    }
                    TimerAction::LossProbe(p) => {
                        prop_assert!(self.c.sack_ok() && !p.probe && p.len <= self.c.mss());
                        let end = p.seq.wrapping_add(p.len);
                        prop_assert!(seq::le(self.c.snd_una(), p.seq));
                        prop_assert!(seq::le(end, self.c.send_end()));
                        self.c.on_sent(&p, self.now);
                    }
                    TimerAction::Abort { .. } | TimerAction::Expire => return Ok(false),
                }
            }
            Op::DupAcks(n) => {
                for _ in 0..n {
                    let seg = ParsedRepr {
                        seq_number: self.c.rcv_nxt(),
                        ack_number: Some(self.c.snd_una()),
                        window_len: (self.c.snd_wnd() >> self.c.snd_shift()).min(65_535) as u16,
                        ..RECV_TEMPL
                    };
                    let o = self.c.input(&seg, self.now, RX);
                    prop_assert!(o.deliver.is_none() && o.acked == 0 && !o.fin);
                    if o.retransmit {
                        if let Some(s) = self.c.retransmit_segment() {
                            self.c.on_sent(&s, self.now);
                        }
                    }
                    self.check()?;
                }
            }
            Op::Header(rx) => {
                let s = self.c.ack_segment();
                let h = self.c.header(&s, LOCAL_PORT, REMOTE_PORT, rx, 0);
                prop_assert_eq!(h.ack_number, Some(self.c.rcv_nxt()));
                prop_assert_eq!(u32::from(h.window_len), rx.min(65_535));
                prop_assert!(!self.c.ack_pending());
            }
        }
        Ok(true)
    }

    fn ack_number(&self, at: AckAt) -> u32 {
        let c = &self.c;
        match at {
            AckAt::Una(off) => c.snd_una().wrapping_add(off as u32),
            AckAt::Nxt => c.snd_nxt(),
            AckAt::Max => c.snd_max(),
            AckAt::Segments(n) => c.snd_una().wrapping_add(n * c.mss()),
        }
    }

    fn send(&mut self, frame_max: u32) -> Result<(), TestCaseError> {
        for _ in 0..1000 {
            let Some(s) = self.c.next_segment(self.now, frame_max) else {
                return Ok(());
            };
            prop_assert!(self.c.state().is_synchronized());
            if s.seq != self.c.snd_nxt() {
                // A hole in SACK recovery: inside what was sent, never what is SACKed.
                let c = &self.c;
                prop_assert!(c.sack_recovery(), "{s:?}");
                prop_assert!(seq::le(c.snd_una(), s.seq) && seq::lt(s.seq, c.snd_nxt()));
                prop_assert!(seq::le(s.seq.wrapping_add(s.len), c.snd_max()));
                for &(l, r) in c.scoreboard().blocks() {
                    let end = s.seq.wrapping_add(s.len);
                    prop_assert!(seq::le(end, l) || seq::ge(s.seq, r), "{s:?} into {l}..{r}");
                }
            }
            prop_assert!(!s.syn && !s.probe);
            let mss = self.c.mss();
            if frame_max <= mss {
                prop_assert!(s.len <= mss, "{s:?} beyond the MSS");
            } else {
                prop_assert!(s.len <= frame_max);
            }
            let end = s.seq.wrapping_add(s.len);
            prop_assert!(seq::le(end, self.c.send_end()));
            if s.fin {
                prop_assert!(self.closed && end == self.c.send_end());
            }
            self.c.on_sent(&s, self.now);
            if s.fin {
                return Ok(());
            }
        }
        prop_assert!(false, "runaway output");
        Ok(())
    }
}

fn play(
    start_established: bool,
    sack: bool,
    ts: bool,
    bbr: bool,
    ops: &[Op],
) -> Result<(), TestCaseError> {
    let syn = ParsedRepr {
        options: Options {
            sack_permitted: sack,
            timestamps: ts.then_some((1000, 0)),
            ..SYN_TEMPL.options
        },
        ..SYN_TEMPL
    };
    let algorithm = if bbr {
        Algorithm::Bbr
    } else {
        Algorithm::Cubic
    };
    let mut c = Connection::accept(&syn, ISS, 0).with_congestion(algorithm);
    c.syn_ack(0);
    if start_established {
        prop_assert!(c.input(&RECV_TEMPL, 0, RX).established);
    }
    let mut run = Run {
        c,
        now: 0,
        queued: 0,
        closed: false,
        was_synchronized: start_established,
    };
    run.check()?;
    for op in ops {
        let live = run.step(op)?;
        run.check()?;
        if !live {
            break;
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_segments_keep_the_invariants(
        start_established in any::<bool>(),
        sack in any::<bool>(),
        ts in any::<bool>(),
        bbr in any::<bool>(),
        ops in prop::collection::vec(op(), 1..60),
    ) {
        play(start_established, sack, ts, bbr, &ops)?;
    }
}

#[test]
fn a_long_busy_exchange_keeps_the_invariants() {
    // A deterministic walk through data, losses, recovery and close.
    let mut ops = std::vec![Op::Queue(50_000)];
    for i in 0..40u32 {
        ops.push(Op::Send(if i % 3 == 0 { 65_535 } else { 0 }));
        ops.push(Op::Segment {
            seq_off: 0,
            ack_off: Some(if i % 4 == 0 {
                AckAt::Una(0)
            } else {
                AckAt::Segments(1)
            }),
            syn: false,
            fin: false,
            rst: false,
            window: if i % 7 == 0 { 0 } else { 65_535 },
            len: (i % 3) as usize,
            rx: RX,
            ws: None,
            sack: std::vec::Vec::new(),
            ts: None,
        });
        if i % 10 == 9 {
            ops.push(Op::Advance(1500));
        }
    }
    ops.push(Op::Close);
    ops.push(Op::Send(0));
    for bbr in [false, true] {
        play(true, false, false, bbr, &ops).unwrap();
        play(true, true, true, bbr, &ops).unwrap();
    }
}
