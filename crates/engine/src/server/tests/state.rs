//! TCP state machine cases, each against a scripted client: the persist timer and a client
//! that never reads, fast retransmit on exactly three duplicate ACKs, the retransmission
//! timer's backoff up to the stall abort, a loss probe at its own deadline between the
//! periodic timer scans, window scaling, the idle keep-alive timeout.

use super::*;

const ACK: wtcp::Flags = wtcp::Flags {
    fin: false,
    syn: false,
    rst: false,
    psh: false,
    ack: true,
};

/// A client → server frame with every TCP header field chosen.
#[allow(clippy::too_many_arguments)]
fn frame(
    sport: u16,
    seq: u32,
    ack: Option<u32>,
    flags: wtcp::Flags,
    payload: &[u8],
    window: u16,
    mss: Option<u16>,
    window_scale: Option<u8>,
) -> Vec<u8> {
    let repr = wtcp::Repr {
        src_port: sport,
        dst_port: 80,
        seq_number: seq,
        ack_number: ack,
        flags,
        window_len: window,
        max_seg_size: mss,
        window_scale,
        sack_permitted: false,
        timestamps: None,
    };
    emit(&repr, payload)
}

/// The frame of `repr` carrying `payload`.
fn emit(repr: &wtcp::Repr, payload: &[u8]) -> Vec<u8> {
    let hl = repr.header_len();
    let mut f = vec![0u8; L2L3 + hl + payload.len()];
    write_l2l3(
        &mut f,
        CLIENT_MAC,
        SERVER_MAC,
        CLIENT_IP,
        SERVER_IP,
        IpProtocol::Tcp,
        hl + payload.len(),
    );
    repr.emit_header(&mut f[L2L3..]);
    f[L2L3 + hl..].copy_from_slice(payload);
    TcpPacket::new_unchecked(&mut f[L2L3..]).fill_checksum(CLIENT_IP, SERVER_IP);
    f
}

/// One scripted connection: its port and both next sequence numbers.
struct Conn {
    sport: u16,
    cseq: u32,
    sseq: u32,
}

impl Conn {
    fn open(s: &mut Server<TestSite>, nic: &mut FakeNic, clock: &ManualClock, sport: u16) -> Conn {
        let (cseq, sseq) = handshake(s, nic, clock, sport);
        Conn { sport, cseq, sseq }
    }

    /// Sends `payload` with ACK of `ack` and the given window; returns what came back.
    fn send(
        &mut self,
        s: &mut Server<TestSite>,
        nic: &mut FakeNic,
        clock: &ManualClock,
        ack: u32,
        payload: &[u8],
        window: u16,
    ) -> Vec<Out> {
        let f = frame(
            self.sport,
            self.cseq,
            Some(ack),
            ACK,
            payload,
            window,
            None,
            None,
        );
        self.cseq = self.cseq.wrapping_add(payload.len() as u32);
        nic.rx.inbox.push_back(f);
        run(s, nic, clock)
    }
}

const GET_BIG: &[u8] = b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n";
const GET_INDEX: &[u8] = b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n";
const MS: u64 = 1_000_000;

/// Runs the clock forward in 10 ms ticks until `until_ns`, handing every segment the
/// server sends (with the time it was sent) to `on_out`, whose frames are sent back.
fn advance(
    s: &mut Server<TestSite>,
    nic: &mut FakeNic,
    clock: &mut ManualClock,
    until_ns: u64,
    mut on_out: impl FnMut(u64, &Out) -> Option<Vec<u8>>,
) {
    while clock.0 < until_ns {
        clock.0 += 10 * MS;
        for o in run(s, nic, clock) {
            if let Some(reply) = on_out(clock.0, &o) {
                nic.rx.inbox.push_back(reply);
            }
        }
    }
}

#[test]
fn zero_window_is_probed_with_backoff_and_data_flows_when_it_opens() {
    let mut s = server();
    let mut nic = FakeNic::new(SERVER_MAC);
    let mut clock = ManualClock(1_000 * MS);
    let mut c = Conn::open(&mut s, &mut nic, &clock, 41000);
    // The request arrives with a closed window: nothing but an ACK may go out.
    let out = c.send(&mut s, &mut nic, &clock, c.sseq, GET_BIG, 0);
    assert!(out.iter().all(|o| o.payload.is_empty()), "{out:?}");
    let t0 = clock.0;
    let (sport, cseq, sseq) = (c.sport, c.cseq, c.sseq);
    let mut probes = Vec::new();
    // 40 s of a client that answers every probe with "still zero" (RFC 9293 §3.8.6.1:
    // the probe byte is not accepted, the ACK repeats RCV.NXT).
    advance(&mut s, &mut nic, &mut clock, t0 + 40_000 * MS, |at, o| {
        assert_eq!(
            o.payload.len(),
            1,
            "only one-byte probes into a zero window"
        );
        assert_eq!(o.seq, sseq, "the probe is the first unacknowledged byte");
        probes.push((at - t0) / MS);
        Some(frame(sport, cseq, Some(sseq), ACK, &[], 0, None, None))
    });
    // Persist timer: the RTO after the handshake's RTT sample (its 200 ms floor), doubling
    // each time, none wasted.
    assert_eq!(
        probes,
        [200, 600, 1400, 3000, 6200, 12_600, 25_400],
        "probe times (ms)"
    );
    assert_eq!(s.stats().tcp_window_probes, 7);
    assert_eq!(s.stats().tcp_fast_retransmits, 0);
    assert_eq!(s.active(), 1);
    // The window opens: full segments flow from the first unacknowledged byte.
    let out = c.send(&mut s, &mut nic, &clock, sseq, &[], 65535);
    assert!(out.len() >= 2, "{out:?}");
    assert_eq!(out[0].seq, sseq);
    assert_eq!(out[0].payload.len(), 1460);
    assert!(out[0].payload.starts_with(b"HTTP/1.1 200 OK\r\n"));
}

#[test]
fn client_that_never_opens_its_window_is_cut_off() {
    let mut s = server();
    let mut nic = FakeNic::new(SERVER_MAC);
    let mut clock = ManualClock(1_000 * MS);
    let mut c = Conn::open(&mut s, &mut nic, &clock, 41001);
    c.send(&mut s, &mut nic, &clock, c.sseq, GET_BIG, 0);
    let t0 = clock.0;
    let (sport, cseq, sseq) = (c.sport, c.cseq, c.sseq);
    let mut rst_at = None;
    advance(&mut s, &mut nic, &mut clock, t0 + 70_000 * MS, |at, o| {
        if o.rst {
            rst_at = Some((at - t0) / MS);
            return None;
        }
        Some(frame(sport, cseq, Some(sseq), ACK, &[], 0, None, None))
    });
    // No progress for the stall timeout (60 s): RST and the TCB is freed.
    let at = rst_at.expect("a RST");
    assert!((60_000..=60_020).contains(&at), "RST at {at} ms");
    assert_eq!(s.active(), 0);
    assert_eq!(s.stats().tcp_timeouts, 1);
}

#[test]
fn three_duplicate_acks_trigger_one_fast_retransmit() {
    let mut s = server_cc(Algorithm::Cubic); // the window arithmetic below is CUBIC's
    let mut nic = FakeNic::new(SERVER_MAC);
    let clock = ManualClock(1_000 * MS);
    let mut c = Conn::open(&mut s, &mut nic, &clock, 41002);
    let out = c.send(&mut s, &mut nic, &clock, c.sseq, GET_BIG, 65535);
    // Initial window: 10 segments of 1460 (RFC 6928, MSS 1460).
    assert_eq!(out.len(), 10, "{out:?}");
    assert!(out.iter().all(|o| o.payload.len() == 1460));
    let s0 = c.sseq;
    let seg = |i: u32| s0.wrapping_add(1460 * i);
    let seqs = |out: &[Out]| out.iter().map(|o| o.seq).collect::<Vec<_>>();
    // ACK of the first segment: slow start sends two more (11 in flight).
    let out = c.send(&mut s, &mut nic, &clock, seg(1), &[], 65535);
    assert_eq!(seqs(&out), [seg(10), seg(11)]);
    // The second segment was "lost": the client repeats ACK seg(1). Two duplicates do
    // nothing; the third retransmits exactly that segment, before any timer.
    for _ in 0..2 {
        assert!(c
            .send(&mut s, &mut nic, &clock, seg(1), &[], 65535)
            .is_empty());
    }
    let out = c.send(&mut s, &mut nic, &clock, seg(1), &[], 65535);
    assert_eq!((out[0].seq, out[0].payload.len()), (seg(1), 1460));
    // RFC 5681 §3.2 step 3 with CUBIC's β: cwnd = 0.7 · 16 060 + 3 MSS = 15 622, below
    // the 11 segments (16 060) in flight: only the retransmission.
    assert_eq!(seqs(&out), [seg(1)]);
    assert_eq!(s.stats().tcp_fast_retransmits, 1);
    assert_eq!(s.stats().tcp_rto_retransmits, 0);
    // Further duplicates inflate cwnd by one MSS each (step 4): 1022 bytes of room after
    // the fourth, a silly segment held back; a full one after the fifth.
    let out = c.send(&mut s, &mut nic, &clock, seg(1), &[], 65535);
    assert!(out.is_empty(), "{out:?}");
    let out = c.send(&mut s, &mut nic, &clock, seg(1), &[], 65535);
    assert_eq!(seqs(&out), [seg(12)]);
    // An ACK of everything up to `recover` (seg(12)) is a full ACK: recovery ends with
    // cwnd = min(ssthresh, flight + MSS) = 2 MSS (RFC 6582 §3.2 step 6), no further
    // retransmission: one new segment joins the one in flight.
    let out = c.send(&mut s, &mut nic, &clock, seg(12), &[], 65535);
    assert_eq!(seqs(&out), [seg(13)], "no retransmission");
    assert_eq!(s.stats().tcp_fast_retransmits, 1);
}

#[test]
fn unanswered_data_is_retransmitted_with_backoff_then_aborted() {
    let mut s = server();
    let mut nic = FakeNic::new(SERVER_MAC);
    let mut clock = ManualClock(1_000 * MS);
    let mut c = Conn::open(&mut s, &mut nic, &clock, 41003);
    let out = c.send(&mut s, &mut nic, &clock, c.sseq, GET_INDEX, 65535);
    assert_eq!(out.len(), 1);
    let first = out[0].clone();
    let t0 = clock.0;
    let mut resent = Vec::new();
    let mut rst_at = None;
    advance(&mut s, &mut nic, &mut clock, t0 + 70_000 * MS, |at, o| {
        if o.rst {
            rst_at = Some((at - t0) / MS);
        } else {
            assert_eq!((o.seq, &o.payload), (first.seq, &first.payload));
            resent.push((at - t0) / MS);
        }
        None
    });
    // RFC 6298 §5.5: the RTO from the handshake's sample (200 ms, the floor) doubles (0.4,
    // 0.8, ... 25.6 s), then the stall timeout (60 s without progress) aborts before the
    // ninth retransmission at 102.2 s.
    assert_eq!(resent, [200, 600, 1400, 3000, 6200, 12_600, 25_400, 51_000]);
    let at = rst_at.expect("a RST");
    assert!((60_000..=60_020).contains(&at), "RST at {at} ms");
    assert_eq!(s.active(), 0);
    assert_eq!(s.stats().tcp_rto_retransmits, 8);
}

#[test]
fn a_loss_probe_goes_at_its_deadline_between_the_periodic_scans() {
    // The timer scan runs every 10 ms, and sooner when a TCP deadline comes first: a loss
    // probe 4 ms out goes at 4 ms, and a platform that sleeps is told to wake by then.
    // CUBIC: unpaced, the whole initial window goes at once (pacing's own wake-ups:
    // tests/pacing.rs).
    let mut s = server_cc(Algorithm::Cubic);
    let mut nic = FakeNic::new(SERVER_MAC);
    let mut clock = ManualClock(1_000 * MS);
    let sport = 41010;
    let syn = wtcp::Repr {
        src_port: sport,
        dst_port: 80,
        seq_number: 1000,
        ack_number: None,
        flags: wtcp::Flags {
            syn: true,
            ack: false,
            ..ACK
        },
        window_len: 65535,
        max_seg_size: Some(1460),
        window_scale: None,
        sack_permitted: true,
        timestamps: None,
    };
    nic.rx.inbox.push_back(emit(&syn, &[]));
    let out = run(&mut s, &mut nic, &clock);
    assert!(out[0].syn, "{out:?}");
    let sseq = out[0].seq.wrapping_add(1);
    let mut c = Conn {
        sport,
        cseq: 1001,
        sseq,
    };
    // The completing ACK 1 ms after the SYN-ACK: the handshake's RTT sample, 1 ms.
    clock.0 += MS;
    assert!(c
        .send(&mut s, &mut nic, &clock, sseq, &[], 65535)
        .is_empty());
    clock.0 += MS;
    let t1 = clock.0;
    let out = c.send(&mut s, &mut nic, &clock, sseq, GET_BIG, 65535);
    assert_eq!(out.len(), 10, "the initial window");
    let next = sseq.wrapping_add(10 * 1460);
    // PTO = 2·SRTT + 2 ms = 4 ms, before the next periodic scan (10 ms after the last).
    assert_eq!(s.next_timer_ns(), t1 + 4 * MS);
    clock.0 = t1 + 4 * MS - 1;
    assert!(run(&mut s, &mut nic, &clock).is_empty());
    clock.0 = t1 + 4 * MS;
    let out = run(&mut s, &mut nic, &clock);
    assert_eq!(
        out.iter()
            .map(|o| (o.seq, o.payload.len()))
            .collect::<Vec<_>>(),
        [(next, 1460)],
        "the probe: a segment of new data"
    );
    assert_eq!(s.stats().tcp_loss_probes, 1);
    assert_eq!(s.stats().tcp_rto_retransmits, 0);
    // Unanswered, the next probe waits twice as long: 8 ms, still before the periodic scan.
    assert_eq!(s.next_timer_ns(), t1 + 12 * MS);
}

#[test]
fn peer_window_is_scaled_by_its_shift() {
    let mut s = server();
    let mut nic = FakeNic::new(SERVER_MAC);
    let clock = ManualClock(1_000 * MS);
    // SYN with window scale 10: our SYN-ACK carries our own shift (0).
    let syn = wtcp::Flags {
        syn: true,
        ack: false,
        ..ACK
    };
    nic.rx.inbox.push_back(frame(
        41004,
        5000,
        None,
        syn,
        &[],
        64240,
        Some(1460),
        Some(10),
    ));
    s.poll(&mut nic, &clock, &mut NoLog);
    let synack = nic.tx.outbox.pop().expect("SYN-ACK");
    let eth = EthernetFrame::new_checked(&synack[..]).unwrap();
    let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
    let t = TcpPacket::new_checked(ip.payload()).unwrap();
    let r = wtcp::Repr::parse(&t).unwrap();
    assert_eq!(r.options.window_scale, Some(0));
    let sseq = t.seq_number().wrapping_add(1);
    // Window field 3 with shift 10: 3072 bytes. cwnd (14 600) would allow ten segments;
    // the scaled window allows two full ones (the third would be a silly 152 bytes).
    let mut c = Conn {
        sport: 41004,
        cseq: 5001,
        sseq,
    };
    assert!(c.send(&mut s, &mut nic, &clock, sseq, &[], 3).is_empty());
    let out = c.send(&mut s, &mut nic, &clock, sseq, GET_BIG, 3);
    assert_eq!(
        out.iter().map(|o| o.payload.len()).collect::<Vec<_>>(),
        [1460, 1460]
    );
}

#[test]
fn idle_keepalive_connection_is_closed_after_the_idle_timeout() {
    let mut s = server();
    let mut nic = FakeNic::new(SERVER_MAC);
    let mut clock = ManualClock(1_000 * MS);
    let mut c = Conn::open(&mut s, &mut nic, &clock, 41005);
    let out = c.send(&mut s, &mut nic, &clock, c.sseq, GET_INDEX, 65535);
    assert_eq!(out.len(), 1);
    let snext = c.sseq.wrapping_add(out[0].payload.len() as u32);
    assert!(c
        .send(&mut s, &mut nic, &clock, snext, &[], 65535)
        .is_empty());
    let t0 = clock.0;
    let mut fin_at = None;
    let mut acked_client_fin = false;
    let (sport, cseq) = (c.sport, c.cseq);
    advance(&mut s, &mut nic, &mut clock, t0 + 31_000 * MS, |at, o| {
        assert!(o.payload.is_empty() && o.seq == snext + u32::from(!o.fin));
        if !o.fin {
            // After the FIN: the acknowledgment of the client's FIN.
            assert!(fin_at.is_some() && o.ack == cseq + 1);
            acked_client_fin = true;
            return None;
        }
        fin_at = Some((at - t0) / MS);
        // The client acknowledges the FIN and closes its side too.
        let fin_ack = wtcp::Flags { fin: true, ..ACK };
        Some(frame(
            sport,
            cseq,
            Some(snext + 1),
            fin_ack,
            &[],
            65535,
            None,
            None,
        ))
    });
    let at = fin_at.expect("a FIN");
    assert!((30_000..=30_020).contains(&at), "FIN at {at} ms");
    assert!(acked_client_fin);
    assert_eq!(s.active(), 0);
}

#[test]
fn data_with_a_forged_old_ack_is_discarded_and_the_connection_goes_on() {
    // Hardening: a request at the right sequence number but acknowledging 0x70000000 behind
    // SND.UNA was taken in. RFC 5961 §5.2: discard it, answer with an ACK.
    let mut s = server();
    let mut nic = FakeNic::new(SERVER_MAC);
    let clock = ManualClock(1_000 * MS);
    let mut c = Conn::open(&mut s, &mut nic, &clock, 41010);
    let forged_ack = c.sseq.wrapping_sub(0x7000_0000);
    let (cseq, sseq) = (c.cseq, c.sseq);
    let out = c.send(&mut s, &mut nic, &clock, forged_ack, GET_INDEX, 65535);
    assert_eq!(out.len(), 1, "one ACK: {out:?}");
    assert!(out[0].has_ack && out[0].payload.is_empty());
    assert_eq!(
        out[0].ack, cseq,
        "RCV.NXT did not move: the data was not taken"
    );
    assert_eq!(out[0].seq, sseq);
    assert_eq!(s.stats().tcp_bad_acks, 1);
    assert_eq!(s.stats().http_requests, 0);
    // The same request with a true ACK is answered 200.
    c.cseq = cseq;
    let out = c.send(&mut s, &mut nic, &clock, sseq, GET_INDEX, 65535);
    let body: Vec<u8> = out.iter().flat_map(|o| o.payload.clone()).collect();
    assert!(body.starts_with(b"HTTP/1.1 200 OK\r\n"), "{out:?}");
    assert_eq!(s.stats().http_2xx, 1);
}

#[test]
fn a_connection_that_sends_nothing_gets_408_at_the_request_timeout() {
    // Hardening: the request timeout starts at establishment, so a silent client is closed
    // after `request_ms` (10 s), not after the idle timeout (30 s).
    let mut s = server();
    let mut nic = FakeNic::new(SERVER_MAC);
    let mut clock = ManualClock(1_000 * MS);
    let c = Conn::open(&mut s, &mut nic, &clock, 41011);
    let t0 = clock.0;
    let mut answered_at = None;
    advance(&mut s, &mut nic, &mut clock, t0 + 12_000 * MS, |at, o| {
        if !o.payload.is_empty() && answered_at.is_none() {
            assert!(o.payload.starts_with(b"HTTP/1.1 408 "), "{o:?}");
            assert!(o.fin, "the 408 closes the connection");
            assert_eq!(o.seq, c.sseq);
            answered_at = Some((at - t0) / MS);
        }
        None
    });
    let at = answered_at.expect("a 408");
    assert!((10_000..=10_020).contains(&at), "408 at {at} ms");
    assert_eq!(s.stats().http_4xx, 1);
}
