//! `Server::next_deadline_ns`, the time a sleeping platform must wake at: exactly the
//! first timer work (a core that sleeps until one nanosecond before it and polls does
//! nothing; one that sleeps until it and polls does the work), for each kind of deadline:
//! the SYN-ACK retransmission, a data retransmission, the keep-alive idle close. Each
//! scenario is built twice (it is deterministic), once per wake-up time.

use super::*;

type Scene = (Server<TestSite>, FakeNic, ManualClock);

/// Builds the scenario twice: wakes one copy at `deadline - 1` (no frame may come out)
/// and the other at `deadline`; returns the frames of the latter and its clock.
fn nothing_before_then_at(scene: impl Fn() -> Scene) -> (Vec<Out>, u64) {
    let (mut s, mut nic, mut clock) = scene();
    let d = s.next_deadline_ns();
    assert!(d != u64::MAX && d > clock.0, "deadline {d} at {}", clock.0);
    clock.0 = d - 1;
    assert!(
        run(&mut s, &mut nic, &clock).is_empty(),
        "timer work before the deadline"
    );
    let (mut s, mut nic, mut clock) = scene();
    assert_eq!(s.next_deadline_ns(), d, "deterministic");
    clock.0 = d;
    let mut out = run(&mut s, &mut nic, &clock);
    // A timer may leave work on the run list (the idle close queues its FIN): then the
    // deadline is now, and the next poll does it.
    for _ in 0..3 {
        if s.next_deadline_ns() > clock.0 {
            break;
        }
        out.extend(run(&mut s, &mut nic, &clock));
    }
    (out, d)
}

#[test]
fn no_connection_no_deadline() {
    let mut s = server();
    let mut nic = FakeNic::new(SERVER_MAC);
    let clock = ManualClock(5_000_000);
    run(&mut s, &mut nic, &clock);
    assert_eq!(s.next_deadline_ns(), u64::MAX);
}

#[test]
fn the_syn_ack_retransmission_is_the_deadline() {
    let (out, at) = nothing_before_then_at(|| {
        let mut s = server();
        let mut nic = FakeNic::new(SERVER_MAC);
        let clock = ManualClock(1_000_000);
        nic.rx.inbox.push_back(tcp_frame(
            7000,
            1,
            None,
            flags(true, false, false, false),
            &[],
            None,
        ));
        assert_eq!(run(&mut s, &mut nic, &clock).len(), 1);
        (s, nic, clock)
    });
    assert!(out.iter().any(|o| o.syn), "{out:?}");
    assert!(at >= 1_000_000 + 1_000_000_000, "RTO 1 s, at {at}");
}

#[test]
fn an_unacknowledged_response_is_retransmitted_at_the_deadline() {
    let first_seq = std::cell::Cell::new(0);
    let (again, _) = nothing_before_then_at(|| {
        let mut s = server();
        let mut nic = FakeNic::new(SERVER_MAC);
        let clock = ManualClock(1_000_000);
        let (cseq, sseq) = handshake(&mut s, &mut nic, &clock, 7001);
        let req = b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n";
        nic.rx.inbox.push_back(tcp_frame(
            7001,
            cseq,
            Some(sseq),
            flags(false, true, false, false),
            req,
            None,
        ));
        let first = run(&mut s, &mut nic, &clock);
        assert_eq!(first.len(), 1);
        first_seq.set(first[0].seq);
        // The response is never acknowledged: the next deadline is its retransmission
        // (a tail loss probe or the RTO, whichever the connection armed).
        (s, nic, clock)
    });
    assert!(
        again
            .iter()
            .any(|o| o.seq == first_seq.get() && !o.payload.is_empty()),
        "{again:?}"
    );
}

#[test]
fn an_idle_keep_alive_connection_is_closed_at_the_deadline() {
    let (out, at) = nothing_before_then_at(|| {
        let mut s = server();
        let mut nic = FakeNic::new(SERVER_MAC);
        let clock = ManualClock(1_000_000);
        let (cseq, sseq) = handshake(&mut s, &mut nic, &clock, 7002);
        // One request, answered and acknowledged; then the client says nothing.
        let req = b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n";
        nic.rx.inbox.push_back(tcp_frame(
            7002,
            cseq,
            Some(sseq),
            flags(false, true, false, false),
            req,
            None,
        ));
        let out = run(&mut s, &mut nic, &clock);
        let end = sseq + out[0].payload.len() as u32;
        nic.rx.inbox.push_back(tcp_frame(
            7002,
            cseq + req.len() as u32,
            Some(end),
            flags(false, true, false, false),
            &[],
            None,
        ));
        assert!(run(&mut s, &mut nic, &clock).is_empty());
        (s, nic, clock)
    });
    assert!(out.iter().any(|o| o.fin && o.payload.is_empty()), "{out:?}");
    let idle = Timeouts::default().idle_ms * 1_000_000;
    assert!(
        at >= 1_000_000 + idle && at < 1_000_000 + idle + TICK_NS,
        "{at}"
    );
}
