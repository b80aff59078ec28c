//! Fast retransmit and fast recovery (RFC 5681 §3.2 with RFC 6582 NewReno): the duplicate
//! ACK definition of RFC 5681 §2 (no data, no FIN, same non-zero window, data
//! outstanding), the third duplicate retransmitting one MSS at SND.UNA with CUBIC's
//! reduction (ssthresh = 0.7 · FlightSize, RFC 9438 §4.6), inflation, partial ACKs
//! retransmitting the next hole and deflating, the full ACK leaving recovery, and no new
//! recovery for duplicates below `recover` (after a recovery or a timeout).

use super::*;
use crate::tcp::output::TimerAction;

/// Established with ten segments (14 600 bytes) in flight, sent at 0; 100 000 queued.
fn ten_in_flight() -> Connection {
    let mut c = established();
    set_cwnd(&mut c, 10 * 1460);
    c.queue(100_000);
    assert_eq!(send_all(&mut c, 0).len(), 10);
    assert_eq!(c.snd_max(), LOCAL_SEQ + 14_600);
    c
}

/// [`ten_in_flight`] after three duplicate ACKs of LOCAL_SEQ (the first segment lost).
fn in_recovery() -> Connection {
    let mut c = ten_in_flight();
    for _ in 0..3 {
        recv_ack(&mut c, 10 * MS, LOCAL_SEQ);
    }
    assert!(c.congestion().in_recovery);
    c
}

fn dup(c: &mut Connection) -> Outcome {
    recv_ack(c, 20 * MS, c.snd_una())
}

#[test]
fn the_third_duplicate_ack_retransmits() {
    let mut c = ten_in_flight();
    for n in 1..=2 {
        let o = dup(&mut c);
        assert_eq!(
            o,
            Outcome {
                ack_seen: true,
                ..Outcome::default()
            }
        );
        assert_eq!(c.congestion().dupacks, n);
    }
    let o = dup(&mut c);
    assert!(o.retransmit);
    assert_eq!(o.acked, 0);
    let cc = c.congestion();
    assert!(cc.in_recovery);
    assert_eq!(cc.ssthresh, 10_220, "β_cubic · flight: 0.7 · 14 600");
    assert_eq!(cc.cwnd, 10_220 + 3 * 1460);
    assert_eq!(cc.recover, LOCAL_SEQ + 14_600);
    assert!(
        !c.rtt().timing(),
        "Karn: the timed segment is being retransmitted"
    );
    assert_eq!(c.retransmit_segment(), Some(out(LOCAL_SEQ, 1460, false)));
}

#[test]
fn a_fast_retransmission_moves_nothing() {
    let mut c = in_recovery();
    let s = c.retransmit_segment().unwrap();
    c.on_sent(&s, 30 * MS);
    assert_eq!(c.snd_nxt(), LOCAL_SEQ + 14_600);
    assert_eq!(c.snd_max(), LOCAL_SEQ + 14_600);
    assert_eq!(c.snd_una(), LOCAL_SEQ);
    assert!(!c.rtt().timing());
}

#[test]
fn further_duplicates_inflate_the_window() {
    let mut c = in_recovery();
    assert_eq!(c.congestion().cwnd, 14_600);
    assert_eq!(c.next_segment(10 * MS, 0), None, "14 600 in flight");
    for (n, cwnd) in [(4, 16_060), (5, 17_520), (6, 18_980)] {
        let o = dup(&mut c);
        assert!(!o.retransmit, "dup {n}");
        assert_eq!(c.congestion().cwnd, cwnd);
    }
    // Three MSS of room: new data goes out.
    assert_eq!(
        send_all(&mut c, 20 * MS),
        [
            out(LOCAL_SEQ + 14_600, 1460, false),
            out(LOCAL_SEQ + 16_060, 1460, false),
            out(LOCAL_SEQ + 17_520, 1460, false)
        ]
    );
}

#[test]
fn a_partial_ack_retransmits_the_next_hole_and_deflates() {
    let mut c = in_recovery();
    let o = recv_ack(&mut c, 30 * MS, LOCAL_SEQ + 2920);
    assert!(o.retransmit);
    assert_eq!(o.acked, 2920);
    let cc = c.congestion();
    assert!(cc.in_recovery);
    assert_eq!(cc.cwnd, 14_600 - 2920 + 1460);
    assert_eq!(cc.dupacks, 0);
    assert_eq!(
        c.retransmit_segment(),
        Some(out(LOCAL_SEQ + 2920, 1460, false))
    );
    assert_eq!(
        c.rtt().srtt_us,
        1,
        "no sample during recovery: still the handshake's"
    );
}

#[test]
fn a_full_ack_leaves_recovery() {
    let mut c = in_recovery();
    let o = recv_ack(&mut c, 30 * MS, LOCAL_SEQ + 14_600);
    assert!(!o.retransmit);
    assert_eq!(o.acked, 14_600);
    let cc = c.congestion();
    assert!(!cc.in_recovery);
    // min(ssthresh 10 220, max(flight 0, MSS) + MSS).
    assert_eq!(cc.cwnd, 2920);
    assert_eq!(cc.ssthresh, 10_220);
}

#[test]
fn a_full_ack_with_data_still_in_flight() {
    let mut c = in_recovery();
    for _ in 0..7 {
        dup(&mut c);
    }
    // cwnd 14 600 + 7 * 1460 = 24 820: 10 220 new bytes go out.
    assert_eq!(c.congestion().cwnd, 24_820);
    send_all(&mut c, 20 * MS);
    assert_eq!(c.snd_nxt(), LOCAL_SEQ + 24_820);
    recv_ack(&mut c, 30 * MS, LOCAL_SEQ + 14_600);
    assert!(!c.congestion().in_recovery);
    // min(10 220, 10 220 + 1460).
    assert_eq!(c.congestion().cwnd, 10_220);
    let mut c = in_recovery();
    for _ in 0..3 {
        dup(&mut c);
    }
    send_all(&mut c, 20 * MS);
    assert_eq!(c.snd_nxt(), LOCAL_SEQ + 14_600 + 4380);
    recv_ack(&mut c, 30 * MS, LOCAL_SEQ + 14_600);
    // min(10 220, 4380 + 1460).
    assert_eq!(c.congestion().cwnd, 5840);
}

#[test]
fn an_ack_with_data_is_not_a_duplicate() {
    let mut c = ten_in_flight();
    for i in 0..5 {
        let o = recv(
            &mut c,
            MS,
            ParsedRepr {
                seq_number: REMOTE_SEQ + i * 10,
                payload: data(10),
                ..RECV_TEMPL
            },
        );
        assert!(!o.retransmit);
    }
    assert_eq!(c.congestion().dupacks, 0);
}

#[test]
fn an_ack_with_a_fin_is_not_a_duplicate() {
    let mut c = ten_in_flight();
    dup(&mut c);
    dup(&mut c);
    let o = recv(
        &mut c,
        MS,
        ParsedRepr {
            flags: FIN_ACK,
            ..RECV_TEMPL
        },
    );
    assert!(o.fin && !o.retransmit);
    assert_eq!(c.congestion().dupacks, 2);
}

#[test]
fn an_ack_changing_the_window_is_not_a_duplicate() {
    let mut c = ten_in_flight();
    dup(&mut c);
    dup(&mut c);
    let o = recv_ack_wnd(&mut c, MS, LOCAL_SEQ, 60_000);
    assert!(!o.retransmit);
    assert_eq!(c.congestion().dupacks, 2);
    assert_eq!(c.snd_wnd(), 60_000);
    // The same window again is a duplicate.
    let o = recv_ack_wnd(&mut c, MS, LOCAL_SEQ, 60_000);
    assert!(o.retransmit);
}

#[test]
fn zero_window_acks_are_not_duplicates() {
    let mut c = ten_in_flight();
    recv_ack_wnd(&mut c, MS, LOCAL_SEQ, 0);
    for _ in 0..5 {
        let o = recv_ack_wnd(&mut c, MS, LOCAL_SEQ, 0);
        assert!(!o.retransmit);
    }
    assert_eq!(c.congestion().dupacks, 0);
    assert!(!c.congestion().in_recovery);
}

#[test]
fn with_nothing_in_flight_there_are_no_duplicates() {
    let mut c = established();
    for _ in 0..5 {
        assert!(!recv_ack(&mut c, MS, LOCAL_SEQ).retransmit);
    }
    assert_eq!(c.congestion().dupacks, 0);
    assert_eq!(c.retransmit_segment(), None);
}

#[test]
fn a_new_ack_clears_the_duplicate_count() {
    let mut c = ten_in_flight();
    dup(&mut c);
    dup(&mut c);
    recv_ack(&mut c, MS, LOCAL_SEQ + 1460);
    assert_eq!(c.congestion().dupacks, 0);
    dup(&mut c);
    dup(&mut c);
    assert!(!c.congestion().in_recovery);
    assert!(dup(&mut c).retransmit);
}

#[test]
fn duplicates_in_recovery_do_not_start_another() {
    let mut c = in_recovery();
    let ssthresh = c.congestion().ssthresh;
    for _ in 0..10 {
        assert!(!dup(&mut c).retransmit);
    }
    assert_eq!(c.congestion().ssthresh, ssthresh);
    assert_eq!(c.congestion().recover, LOCAL_SEQ + 14_600);
}

#[test]
fn no_fast_retransmit_for_duplicates_after_a_timeout() {
    let mut c = ten_in_flight();
    assert_eq!(c.on_timer(SEC, STALL, RETRIES), TimerAction::Retransmit);
    assert_eq!(c.congestion().recover, LOCAL_SEQ + 14_600);
    send_all(&mut c, SEC);
    // RFC 6582 §3.2 step 1 / step 4: duplicates of data sent before the timeout.
    for _ in 0..5 {
        assert!(!dup(&mut c).retransmit);
    }
    assert!(!c.congestion().in_recovery);
    assert_eq!(c.congestion().cwnd, 1460);
}

#[test]
fn duplicates_of_recover_itself_start_a_new_recovery() {
    // `recover` is SND.MAX at the start of the last recovery (one past RFC 6582's "highest
    // sequence number transmitted"): an ACK of it acknowledges everything outstanding then,
    // so its duplicates report a new loss (RFC 6582 §3.2 step 1: the ACK "covers more
    // than" the RFC's recover; RFC 6675 §5: HighACK ≥ RecoveryPoint).
    let mut c = in_recovery();
    recv_ack(&mut c, 30 * MS, LOCAL_SEQ + 14_600);
    assert!(!c.congestion().in_recovery);
    send_all(&mut c, 30 * MS);
    assert!(c.flight() > 0);
    dup(&mut c);
    dup(&mut c);
    assert!(dup(&mut c).retransmit);
    assert_eq!(c.congestion().recover, c.snd_max());
}

#[test]
fn a_timeout_in_recovery_ends_it() {
    let mut c = in_recovery();
    // Inflation lets new data go: 24 820 in flight when the timer fires.
    for _ in 0..7 {
        dup(&mut c);
    }
    send_all(&mut c, 20 * MS);
    assert_eq!(c.flight(), 24_820);
    assert_eq!(c.on_timer(SEC, STALL, RETRIES), TimerAction::Retransmit);
    let cc = c.congestion();
    assert!(!cc.in_recovery);
    assert_eq!((cc.cwnd, cc.dupacks), (1460, 0));
    // The loss was answered when recovery began: ssthresh is not reduced again (0.7 of
    // the 24 820 in flight now would be 17 374).
    assert_eq!(cc.ssthresh, 10_220);
}

#[test]
fn the_fin_is_retransmitted_with_the_last_segment() {
    let mut c = established();
    c.queue(1000);
    c.close();
    send_all(&mut c, 0);
    assert_eq!(c.state(), State::FinWait1);
    dup(&mut c);
    dup(&mut c);
    assert!(dup(&mut c).retransmit);
    let s = c.retransmit_segment().unwrap();
    assert_eq!(s, out(LOCAL_SEQ, 1000, true));
    c.on_sent(&s, 30 * MS);
    assert_eq!(c.state(), State::FinWait1);
    assert_eq!(c.snd_nxt(), LOCAL_SEQ + 1001);
}

#[test]
fn the_fin_alone_is_retransmitted() {
    let mut c = established();
    c.queue(1000);
    c.close();
    send_all(&mut c, 0);
    recv_ack(&mut c, MS, LOCAL_SEQ + 1000);
    assert_eq!(c.retransmit_segment(), Some(out(LOCAL_SEQ + 1000, 0, true)));
}

#[test]
fn an_unsent_fin_is_not_retransmitted() {
    let mut c = established();
    c.queue(20_000);
    c.close();
    send_all(&mut c, 0);
    assert_eq!(c.state(), State::Established);
    dup(&mut c);
    dup(&mut c);
    assert!(dup(&mut c).retransmit);
    assert_eq!(c.retransmit_segment(), Some(out(LOCAL_SEQ, 1460, false)));
    assert_eq!(c.state(), State::Established);
}

#[test]
fn a_fast_retransmission_stays_within_what_was_sent() {
    // Found by this suite: a retransmission ran past SND.MAX and the peer's window.
    let mut c = established_with(&SYN_TEMPL, 500);
    c.queue(3000);
    assert_eq!(send_all(&mut c, 0), [out(LOCAL_SEQ, 500, false)]);
    for _ in 0..2 {
        recv_ack_wnd(&mut c, MS, LOCAL_SEQ, 500);
    }
    assert!(recv_ack_wnd(&mut c, MS, LOCAL_SEQ, 500).retransmit);
    let s = c.retransmit_segment().unwrap();
    assert_eq!(s, out(LOCAL_SEQ, 500, false));
}

#[test]
fn a_partial_ack_of_less_than_one_mss_adds_nothing_back() {
    // RFC 6582 §3.2 step 5: one MSS is added back only for a partial ACK of at least one.
    let mut c = in_recovery();
    assert_eq!(c.congestion().cwnd, 14_600);
    let o = recv_ack(&mut c, 30 * MS, LOCAL_SEQ + 500);
    assert!(o.retransmit);
    assert_eq!(c.congestion().cwnd, 14_600 - 500);
}

#[test]
fn fast_retransmit_works_after_two_gigabytes() {
    // Found by this suite: `recover` stayed at the ISS and fell 2^31 behind.
    let mut c = established();
    set_cwnd(&mut c, 65_535);
    let mut now = 0;
    while c.snd_una().wrapping_sub(LOCAL_SEQ) < 0x8000_0000 {
        if c.send_end().wrapping_sub(c.snd_nxt()) < 1 << 20 {
            c.queue(1 << 30);
        }
        now += MS;
        send_all_max(&mut c, now, 65_535);
        let nxt = c.snd_nxt();
        recv_ack(&mut c, now, nxt);
    }
    set_cwnd(&mut c, 10 * 1460);
    for _ in 0..10 {
        send_one(&mut c, now);
    }
    assert_eq!(c.flight(), 14_600);
    dup(&mut c);
    dup(&mut c);
    assert!(dup(&mut c).retransmit);
}
