//! Pacing in the server (BBR): a connection that pacing holds back is woken at its
//! deadline — `next_timer_ns` tells a sleeping platform when, and the round at that time
//! sends what has become due, with no input — and leaves the paced list when it is freed.

use super::*;

const MS: u64 = 1_000_000;
const GET_BIG: &[u8] = b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n";

/// A connection whose handshake took 1 ms (so its first pacing rate is about 41.7 MB/s
/// and the initial window leaves in three bursts), its request sent at `clock`.
/// Returns (client port, client seq, server seq, the segments of the first burst).
fn paced_download(
    s: &mut Server<TestSite>,
    nic: &mut FakeNic,
    clock: &mut ManualClock,
) -> (u16, u32, u32, Vec<Out>) {
    let sport = 41100;
    nic.rx.inbox.push_back(tcp_frame(
        sport,
        1000,
        None,
        flags(true, false, false, false),
        &[],
        Some(1460),
    ));
    let out = run(s, nic, clock);
    let sseq = out[0].seq.wrapping_add(1);
    clock.0 += MS;
    nic.rx.inbox.push_back(tcp_frame(
        sport,
        1001,
        Some(sseq),
        flags(false, true, false, false),
        &[],
        None,
    ));
    assert!(run(s, nic, clock).is_empty());
    clock.0 += MS;
    nic.rx.inbox.push_back(tcp_frame(
        sport,
        1001,
        Some(sseq),
        flags(false, true, false, false),
        GET_BIG,
        None,
    ));
    let out = run(s, nic, clock);
    (sport, 1001 + GET_BIG.len() as u32, sseq, out)
}

#[test]
fn a_paced_connection_is_woken_at_its_deadline() {
    let mut s = server_cc(Algorithm::Bbr);
    let mut nic = FakeNic::new(SERVER_MAC);
    let mut clock = ManualClock(1_000 * MS);
    let (_, _, sseq, out) = paced_download(&mut s, &mut nic, &mut clock);
    // Eight segments within 250 µs of the pacing clock; the window allows ten.
    let data: Vec<_> = out.iter().filter(|o| !o.payload.is_empty()).collect();
    assert_eq!(data.len(), 8, "{out:?}");
    let t = clock.0;
    let due = s.next_timer_ns();
    assert!(
        due > t && due < t + MS,
        "the pacing deadline, {} ns out",
        due - t
    );
    // Nothing before it, without any input.
    clock.0 = due - 1;
    assert!(run(&mut s, &mut nic, &clock).is_empty());
    // At it, the next segment goes; the last one of the window a timer grain later (the
    // server's wake-ups are at least that far apart).
    clock.0 = due;
    let out = run(&mut s, &mut nic, &clock);
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0].seq, sseq.wrapping_add(8 * 1460));
    let due2 = s.next_timer_ns();
    assert_eq!(due2, due + crate::tcp::PACING_SLACK_NS);
    clock.0 = due2;
    let out = run(&mut s, &mut nic, &clock);
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0].seq, sseq.wrapping_add(9 * 1460));
    // The window is full: nothing is paced now; the next wake-up is a TCP timer's.
    assert!(s.next_timer_ns() >= t + 2 * MS, "{}", s.next_timer_ns() - t);
    assert!(s.conns.paced().is_empty());
}

#[test]
fn a_freed_connection_leaves_the_paced_list() {
    let mut s = server_cc(Algorithm::Bbr);
    let mut nic = FakeNic::new(SERVER_MAC);
    let mut clock = ManualClock(1_000 * MS);
    let (sport, cseq, _, _) = paced_download(&mut s, &mut nic, &mut clock);
    assert_eq!(s.conns.paced().len(), 1);
    nic.rx.inbox.push_back(tcp_frame(
        sport,
        cseq,
        None,
        flags(false, false, false, true),
        &[],
        None,
    ));
    run(&mut s, &mut nic, &clock);
    assert_eq!(s.active(), 0);
    assert!(s.conns.paced().is_empty());
    clock.0 += MS;
    assert!(run(&mut s, &mut nic, &clock).is_empty());
}

#[test]
fn cubic_connections_are_never_paced() {
    let mut s = server_cc(Algorithm::Cubic);
    let mut nic = FakeNic::new(SERVER_MAC);
    let mut clock = ManualClock(1_000 * MS);
    let (_, _, _, out) = paced_download(&mut s, &mut nic, &mut clock);
    assert_eq!(out.iter().filter(|o| !o.payload.is_empty()).count(), 10);
    assert!(s.conns.paced().is_empty());
}
