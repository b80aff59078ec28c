//! Closing (RFC 9293 §3.6, §3.10.7.4 "eighth"): our FIN riding the last data segment,
//! ESTABLISHED → FIN-WAIT-1 → FIN-WAIT-2 → TIME-WAIT (done at once), the passive close
//! CLOSE-WAIT → LAST-ACK → CLOSED, the simultaneous close through CLOSING, and the peer's
//! FIN with data, beyond the receive space, out of order, retransmitted, or refused by a
//! zero window.

use super::*;
use crate::tcp::conn::Reply;
use crate::tcp::output::TimerAction;
use crate::tcp::timer::Timer;

fn fin_seg(seq: u32, n: usize) -> ParsedRepr<'static> {
    ParsedRepr {
        seq_number: seq,
        flags: FIN_ACK,
        payload: data(n),
        ..RECV_TEMPL
    }
}

/// Established, 100 bytes queued and closed, all sent: FIN-WAIT-1 with the FIN at
/// `LOCAL_SEQ + 100`.
fn fin_wait_1() -> Connection {
    let mut c = established();
    c.queue(100);
    c.close();
    let segs = send_all(&mut c, 0);
    assert_eq!(segs, [out(LOCAL_SEQ, 100, true)]);
    assert_eq!(c.state(), State::FinWait1);
    c
}

#[test]
fn the_fin_rides_the_last_data_segment() {
    let c = fin_wait_1();
    assert_eq!(
        (c.snd_nxt(), c.snd_max()),
        (LOCAL_SEQ + 101, LOCAL_SEQ + 101)
    );
    assert_eq!(c.flight(), 101, "the FIN occupies one sequence number");
    assert!(c.is_closing());
    // The RTO from the handshake's sample: its 200 ms floor.
    assert_eq!(c.timer(), Timer::Retransmit { at: 200 * MS });
}

#[test]
fn the_fin_waits_for_the_last_segment() {
    let mut c = established();
    c.queue(15_000);
    c.close();
    // The initial window: ten segments, the FIN not among them.
    let segs = send_all(&mut c, 0);
    assert_eq!(segs.len(), 10);
    assert!(segs.iter().all(|s| s.len == 1460 && !s.fin));
    assert_eq!(c.state(), State::Established, "no FIN sent yet");
    recv_ack(&mut c, 10 * MS, LOCAL_SEQ + 14_600);
    let segs = send_all(&mut c, 10 * MS);
    assert_eq!(segs, [out(LOCAL_SEQ + 14_600, 400, true)]);
    assert_eq!(c.state(), State::FinWait1);
}

#[test]
fn closing_with_nothing_queued_sends_a_bare_fin() {
    let mut c = established();
    c.close();
    let s = send_one(&mut c, 0);
    assert_eq!(s, out(LOCAL_SEQ, 0, true));
    assert_eq!(c.state(), State::FinWait1);
    assert_eq!(c.snd_nxt(), LOCAL_SEQ + 1);
    assert_eq!(c.next_segment(0, 0), None, "the FIN goes once");
}

#[test]
fn nothing_is_queued_after_close() {
    let mut c = established();
    c.queue(100);
    c.close();
    assert_eq!(c.queue(500), LOCAL_SEQ + 100);
    assert_eq!(c.send_end(), LOCAL_SEQ + 100);
}

#[test]
fn an_ack_short_of_the_fin_stays_in_fin_wait_1() {
    let mut c = fin_wait_1();
    let o = recv_ack(&mut c, 10 * MS, LOCAL_SEQ + 100);
    assert_eq!(o.acked, 100);
    assert_eq!(c.state(), State::FinWait1);
    assert_eq!(c.flight(), 1);
    assert_eq!(
        c.timer(),
        Timer::Retransmit {
            at: 10 * MS + c.rtt().rto_ns()
        }
    );
}

#[test]
fn the_ack_of_our_fin_moves_to_fin_wait_2() {
    let mut c = fin_wait_1();
    let o = recv_ack(&mut c, 10 * MS, LOCAL_SEQ + 101);
    assert_eq!(
        o,
        Outcome {
            acked: 101,
            ack_seen: true,
            ..Outcome::default()
        }
    );
    assert_eq!(c.state(), State::FinWait2);
    assert_eq!(c.timer(), Timer::Idle);
    assert!(c.all_acked() && !c.state().is_done());
    assert_eq!(c.next_segment(10 * MS, 0), None);
}

#[test]
fn fin_wait_2_takes_data_then_the_fin_to_time_wait() {
    let mut c = fin_wait_1();
    recv_ack(&mut c, 0, LOCAL_SEQ + 101);
    let o = recv(
        &mut c,
        0,
        ParsedRepr {
            ack_number: Some(LOCAL_SEQ + 101),
            payload: data(10),
            ..RECV_TEMPL
        },
    );
    assert_eq!(o.deliver, Some((0, 10)));
    assert_eq!(c.state(), State::FinWait2);
    let o = recv(
        &mut c,
        0,
        ParsedRepr {
            ack_number: Some(LOCAL_SEQ + 101),
            ..fin_seg(REMOTE_SEQ + 10, 0)
        },
    );
    assert_eq!(
        o,
        Outcome {
            reply: Reply::Ack,
            fin: true,
            ack_seen: true,
            ..Outcome::default()
        }
    );
    assert_eq!(c.state(), State::TimeWait);
    assert!(c.state().is_done(), "TIME-WAIT is not held");
    assert_eq!(c.rcv_nxt(), REMOTE_SEQ + 11);
    let h = c.header(&c.ack_segment(), LOCAL_PORT, REMOTE_PORT, RX, 0);
    assert_eq!(
        (h.seq_number, h.ack_number),
        (LOCAL_SEQ + 101, Some(REMOTE_SEQ + 11))
    );
    assert_eq!(c.on_timer(100 * SEC, STALL, RETRIES), TimerAction::None);
}

#[test]
fn a_fin_acking_our_fin_goes_straight_to_time_wait() {
    let mut c = fin_wait_1();
    let o = recv(
        &mut c,
        0,
        ParsedRepr {
            ack_number: Some(LOCAL_SEQ + 101),
            ..fin_seg(REMOTE_SEQ, 0)
        },
    );
    assert!(o.fin);
    assert_eq!(o.acked, 101);
    assert_eq!(o.reply, Reply::Ack);
    assert_eq!(c.state(), State::TimeWait);
    assert_eq!(c.timer(), Timer::Idle);
}

#[test]
fn simultaneous_close_goes_through_closing() {
    let mut c = fin_wait_1();
    // The peer's FIN crosses ours: it acknowledges our data, not our FIN.
    let o = recv(
        &mut c,
        0,
        ParsedRepr {
            ack_number: Some(LOCAL_SEQ + 100),
            ..fin_seg(REMOTE_SEQ, 0)
        },
    );
    assert!(o.fin);
    assert_eq!(o.reply, Reply::None, "the owner sends the ACK it owes");
    assert_eq!(c.state(), State::Closing);
    assert!(c.ack_pending());
    let h = c.header(&c.ack_segment(), LOCAL_PORT, REMOTE_PORT, RX, 0);
    assert_eq!(h.ack_number, Some(REMOTE_SEQ + 1));
    assert!(!h.flags.fin, "an ACK, not our FIN again");
    let o = recv_ack(&mut c, 0, LOCAL_SEQ + 101);
    assert_eq!(o.reply, Reply::None);
    assert_eq!(c.state(), State::TimeWait);
    assert!(c.state().is_done());
}

#[test]
fn passive_close_through_close_wait_and_last_ack() {
    let mut c = established();
    let o = recv(&mut c, 0, fin_seg(REMOTE_SEQ, 0));
    assert_eq!(
        o,
        Outcome {
            fin: true,
            ack_seen: true,
            ..Outcome::default()
        }
    );
    assert_eq!(c.state(), State::CloseWait);
    assert_eq!(c.rcv_nxt(), REMOTE_SEQ + 1);
    assert!(c.ack_pending());
    c.header(&c.ack_segment(), LOCAL_PORT, REMOTE_PORT, RX, 0);
    // Our answer and our FIN.
    c.queue(3000);
    c.close();
    let segs = send_all(&mut c, 0);
    assert_eq!(
        segs,
        [
            out(LOCAL_SEQ, 1460, false),
            out(LOCAL_SEQ + 1460, 1460, false),
            out(LOCAL_SEQ + 2920, 80, true)
        ]
    );
    assert_eq!(c.state(), State::LastAck);
    let o = recv_ack(&mut c, 0, LOCAL_SEQ + 3000);
    assert_eq!(c.state(), State::LastAck, "the FIN is not acknowledged yet");
    assert_eq!(o.acked, 3000);
    let o = recv_ack(&mut c, 0, LOCAL_SEQ + 3001);
    assert_eq!(
        o,
        Outcome {
            acked: 1,
            ack_seen: true,
            ..Outcome::default()
        }
    );
    assert_eq!(c.state(), State::Closed);
    assert!(c.state().is_done());
    assert_eq!(c.timer(), Timer::Idle);
    // Closed: anything else is ignored.
    assert_eq!(recv(&mut c, 0, fin_seg(REMOTE_SEQ, 0)), Outcome::default());
}

#[test]
fn a_fin_with_data_delivers_both() {
    let mut c = established();
    let o = recv(&mut c, 0, fin_seg(REMOTE_SEQ, 20));
    assert_eq!(o.deliver, Some((0, 20)));
    assert!(o.fin);
    assert_eq!(c.rcv_nxt(), REMOTE_SEQ + 21);
    assert_eq!(c.state(), State::CloseWait);
}

#[test]
fn a_fin_after_overlapping_data_is_taken() {
    let mut c = established();
    recv(
        &mut c,
        0,
        ParsedRepr {
            payload: data(5),
            ..RECV_TEMPL
        },
    );
    let o = recv(&mut c, 0, fin_seg(REMOTE_SEQ, 20));
    assert_eq!(o.deliver, Some((5, 20)));
    assert!(o.fin);
    assert_eq!(c.rcv_nxt(), REMOTE_SEQ + 21);
}

#[test]
fn a_fin_beyond_the_receive_space_is_not_taken() {
    let mut c = established();
    let o = c.input(&fin_seg(REMOTE_SEQ, 20), 0, 10);
    assert_eq!(o.deliver, Some((0, 10)));
    assert!(!o.fin);
    assert_eq!(c.state(), State::Established);
    assert_eq!(c.rcv_nxt(), REMOTE_SEQ + 10);
    assert!(c.ack_pending());
}

#[test]
fn a_fin_with_data_filling_the_space_is_taken() {
    // The FIN takes no buffer space.
    let mut c = established();
    let o = c.input(&fin_seg(REMOTE_SEQ, 20), 0, 20);
    assert_eq!(o.deliver, Some((0, 20)));
    assert!(o.fin);
    assert_eq!(c.state(), State::CloseWait);
}

#[test]
fn a_fin_out_of_order_is_ignored() {
    let mut c = established();
    let o = recv(&mut c, 0, fin_seg(REMOTE_SEQ + 10, 0));
    assert!(!o.fin);
    assert_eq!(c.state(), State::Established);
    assert_eq!(c.rcv_nxt(), REMOTE_SEQ);
    assert!(c.ack_pending(), "the duplicate ACK asks for the gap");
    let o = recv(&mut c, 0, fin_seg(REMOTE_SEQ + 10, 5));
    assert!(o.out_of_order && !o.fin);
    assert_eq!(o.deliver, None);
    assert_eq!(c.state(), State::Established);
}

#[test]
fn a_retransmitted_fin_in_close_wait_gets_an_ack() {
    let mut c = established();
    recv(&mut c, 0, fin_seg(REMOTE_SEQ, 0));
    let o = recv(&mut c, 0, fin_seg(REMOTE_SEQ, 0));
    assert_eq!(
        o,
        Outcome {
            reply: Reply::Ack,
            out_of_window: true,
            ..Outcome::default()
        }
    );
    assert_eq!(c.state(), State::CloseWait);
    assert_eq!(c.rcv_nxt(), REMOTE_SEQ + 1);
}

#[test]
fn data_after_the_peer_fin_is_ignored() {
    let mut c = established();
    recv(&mut c, 0, fin_seg(REMOTE_SEQ, 0));
    let o = recv(
        &mut c,
        0,
        ParsedRepr {
            seq_number: REMOTE_SEQ + 1,
            payload: data(10),
            ..RECV_TEMPL
        },
    );
    assert_eq!(o.deliver, None);
    assert!(o.out_of_order);
    assert_eq!(c.rcv_nxt(), REMOTE_SEQ + 1);
    assert_eq!(c.state(), State::CloseWait);
}

#[test]
fn a_fin_is_refused_by_a_zero_window() {
    let mut c = established();
    let o = c.input(&fin_seg(REMOTE_SEQ, 0), 0, 0);
    // RFC 9293 §3.10.7.4 (and Linux): the FIN is refused, its ACK processed.
    assert_eq!(o.reply, Reply::Ack);
    assert!(o.ack_seen && !o.fin);
    assert_eq!(c.state(), State::Established);
}

#[test]
fn last_ack_fin_is_retransmitted_after_a_timeout() {
    let mut c = established();
    recv(&mut c, 0, fin_seg(REMOTE_SEQ, 0));
    c.close();
    assert_eq!(send_all(&mut c, 0), [out(LOCAL_SEQ, 0, true)]);
    assert_eq!(c.state(), State::LastAck);
    assert_eq!(c.on_timer(SEC, STALL, RETRIES), TimerAction::Retransmit);
    assert_eq!(send_all(&mut c, SEC), [out(LOCAL_SEQ, 0, true)]);
    assert_eq!(c.state(), State::LastAck);
    assert_eq!(c.snd_nxt(), LOCAL_SEQ + 1);
    recv_ack(&mut c, SEC + MS, LOCAL_SEQ + 1);
    assert_eq!(c.state(), State::Closed);
}
