//! Receiving in ESTABLISHED: the four acceptability cases of RFC 9293 §3.10.7.4 (zero
//! window included, the window being `min(rx_space, 65535)`), the ACK for an unacceptable
//! segment, in-order data, partially overlapping data (only the new bytes, exact
//! `deliver` range), old duplicates, data beyond `rx_space`, out-of-order data (dropped,
//! ACK owed), and segments without ACK.

use super::*;
use crate::tcp::conn::Reply;

fn data_seg(seq: u32, n: usize) -> ParsedRepr<'static> {
    ParsedRepr {
        seq_number: seq,
        payload: data(n),
        ..RECV_TEMPL
    }
}

#[test]
fn in_order_data_is_delivered() {
    let mut c = established();
    let o = recv(&mut c, 20 * MS, data_seg(REMOTE_SEQ, 100));
    assert_eq!(
        o,
        Outcome {
            deliver: Some((0, 100)),
            ack_seen: true,
            ..Outcome::default()
        }
    );
    assert_eq!(c.rcv_nxt(), REMOTE_SEQ + 100);
    assert!(c.ack_pending(), "data is acknowledged");
    assert_eq!(c.last_heard_ns(), 20 * MS);
    let o = recv(&mut c, 21 * MS, data_seg(REMOTE_SEQ + 100, 50));
    assert_eq!(o.deliver, Some((0, 50)));
    assert_eq!(c.rcv_nxt(), REMOTE_SEQ + 150);
}

#[test]
fn a_pure_ack_owes_no_ack() {
    let mut c = established();
    let o = recv(&mut c, 0, RECV_TEMPL);
    assert_eq!(
        o,
        Outcome {
            ack_seen: true,
            ..Outcome::default()
        }
    );
    assert!(!c.ack_pending());
}

#[test]
fn partially_overlapping_data_delivers_only_the_new_bytes() {
    let mut c = established();
    recv(&mut c, 0, data_seg(REMOTE_SEQ, 100));
    // Octets 60..160: 60..100 are old.
    let o = recv(&mut c, 0, data_seg(REMOTE_SEQ + 60, 100));
    assert_eq!(o.deliver, Some((40, 100)));
    assert!(!o.out_of_order && !o.out_of_window);
    assert_eq!(c.rcv_nxt(), REMOTE_SEQ + 160);
}

#[test]
fn data_ending_exactly_at_rcv_nxt_is_an_old_duplicate() {
    let mut c = established();
    recv(&mut c, 0, data_seg(REMOTE_SEQ, 100));
    let o = recv(&mut c, 0, data_seg(REMOTE_SEQ, 100));
    assert_eq!(
        o,
        Outcome {
            reply: Reply::Ack,
            out_of_window: true,
            ..Outcome::default()
        }
    );
    assert_eq!(c.rcv_nxt(), REMOTE_SEQ + 100);
}

#[test]
fn an_overlap_of_one_new_byte_is_taken() {
    let mut c = established();
    recv(&mut c, 0, data_seg(REMOTE_SEQ, 100));
    let o = recv(&mut c, 0, data_seg(REMOTE_SEQ + 1, 100));
    assert_eq!(o.deliver, Some((99, 100)));
    assert_eq!(c.rcv_nxt(), REMOTE_SEQ + 101);
}

#[test]
fn data_beyond_the_receive_space_is_clipped() {
    let mut c = established();
    let o = c.input(&data_seg(REMOTE_SEQ, 100), 0, 30);
    assert_eq!(o.deliver, Some((0, 30)));
    assert_eq!(c.rcv_nxt(), REMOTE_SEQ + 30);
    assert!(c.ack_pending(), "the ACK tells the peer where we stopped");
    // The rest, retransmitted, is then taken from where we stopped.
    let o = c.input(&data_seg(REMOTE_SEQ, 100), 0, 1000);
    assert_eq!(o.deliver, Some((30, 100)));
    assert_eq!(c.rcv_nxt(), REMOTE_SEQ + 100);
}

#[test]
fn a_segment_straddling_the_whole_window_is_unacceptable() {
    // RFC 9293 §3.10.7.4 case 4 taken literally: neither the first nor the last octet is
    // in [RCV.NXT, RCV.NXT + RCV.WND), so the segment is refused (Linux would take the
    // part in the window). Clipping to the receive space thus only ever applies to a
    // segment starting at RCV.NXT.
    let mut c = established();
    recv(&mut c, 0, data_seg(REMOTE_SEQ, 10));
    let o = c.input(&data_seg(REMOTE_SEQ, 100), 0, 30);
    assert_eq!(
        o,
        Outcome {
            reply: Reply::Ack,
            out_of_window: true,
            ..Outcome::default()
        }
    );
    assert_eq!(c.rcv_nxt(), REMOTE_SEQ + 10);
}

#[test]
fn zero_receive_space_refuses_data_with_an_ack() {
    let mut c = established();
    let o = c.input(&data_seg(REMOTE_SEQ, 1), 0, 0);
    assert_eq!(
        o,
        Outcome {
            // RFC 9293 §3.10.7.4: the text is refused, the ACK is processed.
            reply: Reply::Ack,
            ack_seen: true,
            ..Outcome::default()
        }
    );
    assert_eq!(c.rcv_nxt(), REMOTE_SEQ);
}

#[test]
fn zero_receive_space_still_takes_an_ack_at_rcv_nxt() {
    // RFC 9293 §3.10.7.4 case 1: SEG.LEN 0, RCV.WND 0, SEG.SEQ = RCV.NXT.
    let mut c = established();
    c.queue(100);
    send_all(&mut c, 0);
    let seg = ack_of(&c, LOCAL_SEQ + 100);
    let o = c.input(&seg, 5 * MS, 0);
    assert_eq!(o.acked, 100);
    assert!(o.ack_seen && !o.out_of_window);
    assert_eq!(c.snd_una(), LOCAL_SEQ + 100);
}

#[test]
fn zero_receive_space_refuses_a_bare_segment_elsewhere() {
    let mut c = established();
    for seq in [REMOTE_SEQ + 1, REMOTE_SEQ - 1] {
        let o = c.input(
            &ParsedRepr {
                seq_number: seq,
                ..RECV_TEMPL
            },
            0,
            0,
        );
        assert_eq!(o.reply, Reply::Ack, "seq {seq:#x}");
        assert!(o.out_of_window && !o.ack_seen);
    }
}

#[test]
fn a_bare_segment_is_acceptable_anywhere_in_the_window() {
    // RFC 9293 §3.10.7.4 case 2: RCV.NXT =< SEG.SEQ < RCV.NXT+RCV.WND.
    let mut c = established();
    for seq in [REMOTE_SEQ, REMOTE_SEQ + 1, REMOTE_SEQ + 999] {
        let o = c.input(
            &ParsedRepr {
                seq_number: seq,
                ..RECV_TEMPL
            },
            0,
            1000,
        );
        assert!(o.ack_seen && !o.out_of_window, "seq {seq:#x}");
        assert_eq!(o.reply, Reply::None);
    }
    for seq in [REMOTE_SEQ + 1000, REMOTE_SEQ - 1, REMOTE_SEQ + 0x8000_0000] {
        let o = c.input(
            &ParsedRepr {
                seq_number: seq,
                ..RECV_TEMPL
            },
            0,
            1000,
        );
        assert_eq!(o.reply, Reply::Ack, "seq {seq:#x}");
        assert!(o.out_of_window && !o.ack_seen);
    }
    assert_eq!(c.rcv_nxt(), REMOTE_SEQ);
}

#[test]
fn data_is_acceptable_if_its_first_or_last_octet_is_in_the_window() {
    // RFC 9293 §3.10.7.4 case 4. Window [RCV.NXT, RCV.NXT + 1000).
    let mut c = established();
    // Last octet in the window, first before it: overlapping old data.
    let o = c.input(&data_seg(REMOTE_SEQ - 50, 51), 0, 1000);
    assert_eq!(o.deliver, Some((50, 51)));
    // First octet in the window (last octet of the window), last beyond it: acceptable,
    // but not at RCV.NXT, so dropped as out of order.
    let mut c = established();
    let o = c.input(&data_seg(REMOTE_SEQ + 999, 10), 0, 1000);
    assert!(o.out_of_order && !o.out_of_window);
    assert_eq!(o.deliver, None);
    // Entirely beyond: unacceptable.
    let o = c.input(&data_seg(REMOTE_SEQ + 1000, 10), 0, 1000);
    assert!(o.out_of_window);
    assert_eq!(o.reply, Reply::Ack);
}

#[test]
fn the_window_is_the_receive_space_capped_at_65535() {
    let mut c = established();
    assert_eq!(c.rcv_wnd(0), 0);
    assert_eq!(c.rcv_wnd(8192), 8192);
    assert_eq!(c.rcv_wnd(65_535), 65_535);
    assert_eq!(c.rcv_wnd(1 << 20), 65_535);
    let at = |seq| ParsedRepr {
        seq_number: seq,
        ..RECV_TEMPL
    };
    assert!(!c.input(&at(REMOTE_SEQ + 65_534), 0, 1 << 20).out_of_window);
    assert!(c.input(&at(REMOTE_SEQ + 65_535), 0, 1 << 20).out_of_window);
}

#[test]
fn out_of_order_data_is_dropped_and_an_ack_owed() {
    let mut c = established();
    let o = recv(&mut c, 0, data_seg(REMOTE_SEQ + 100, 50));
    assert_eq!(
        o,
        Outcome {
            ack_seen: true,
            out_of_order: true,
            ..Outcome::default()
        }
    );
    assert_eq!(c.rcv_nxt(), REMOTE_SEQ, "no reassembly");
    assert!(
        c.ack_pending(),
        "RFC 5681 §4.2: a duplicate ACK re-requests the hole"
    );
}

#[test]
fn an_unacceptable_segment_moves_nothing() {
    let mut c = established();
    c.queue(1000);
    send_all(&mut c, 0);
    let before = c;
    // Its ACK would acknowledge everything, but the segment is outside the window.
    let o = recv(
        &mut c,
        5 * MS,
        ParsedRepr {
            seq_number: REMOTE_SEQ + 100_000,
            ack_number: Some(LOCAL_SEQ + 1000),
            payload: data(10),
            ..RECV_TEMPL
        },
    );
    assert_eq!(o.reply, Reply::Ack);
    assert!(o.out_of_window && !o.ack_seen);
    assert_eq!(c, before);
}

#[test]
fn a_segment_without_ack_is_dropped() {
    // RFC 9293 §3.10.7.4 fifth: "if the ACK bit is off, drop the segment and return".
    let mut c = established();
    let o = recv(
        &mut c,
        0,
        ParsedRepr {
            ack_number: None,
            flags: NO_FLAGS,
            payload: data(10),
            ..RECV_TEMPL
        },
    );
    assert_eq!(o, Outcome::default());
    assert_eq!(c.rcv_nxt(), REMOTE_SEQ);
    assert!(!c.ack_pending());
}

#[test]
fn data_and_ack_in_one_segment() {
    let mut c = established();
    c.queue(500);
    send_all(&mut c, 0);
    let o = recv(
        &mut c,
        10 * MS,
        ParsedRepr {
            ack_number: Some(LOCAL_SEQ + 500),
            payload: data(30),
            ..RECV_TEMPL
        },
    );
    assert_eq!(o.acked, 500);
    assert_eq!(o.deliver, Some((0, 30)));
    assert!(c.all_acked());
    assert_eq!(c.rcv_nxt(), REMOTE_SEQ + 30);
}

#[test]
fn only_progress_refreshes_last_heard() {
    let mut c = established();
    c.queue(3000);
    send_all(&mut c, 0);
    // A duplicate ACK and a window update are not progress.
    recv_ack(&mut c, 5 * MS, LOCAL_SEQ);
    recv_ack_wnd(&mut c, 6 * MS, LOCAL_SEQ, 30_000);
    assert_eq!(c.last_heard_ns(), 0);
    // New data acknowledged is.
    recv_ack_wnd(&mut c, 7 * MS, LOCAL_SEQ + 1460, 30_000);
    assert_eq!(c.last_heard_ns(), 7 * MS);
    // So is new data received.
    recv(&mut c, 8 * MS, data_seg(REMOTE_SEQ, 1));
    assert_eq!(c.last_heard_ns(), 8 * MS);
}

#[test]
fn a_closed_connection_ignores_everything() {
    let mut c = Connection::closed();
    assert_eq!(c.state(), State::Closed);
    for seg in [RECV_TEMPL, SYN_TEMPL, data_seg(REMOTE_SEQ, 10)] {
        assert_eq!(c.input(&seg, 0, RX), Outcome::default());
    }
    assert_eq!(c, Connection::closed());
    assert_eq!(c.next_segment(0, 0), None);
}

#[test]
fn a_zero_window_still_takes_the_ack_of_a_data_segment() {
    // RFC 9293 §3.10.7.4: "special allowance should be made to accept valid ACKs".
    let mut c = established();
    c.queue(1000);
    send_all(&mut c, 0);
    let o = c.input(
        &ParsedRepr {
            ack_number: Some(LOCAL_SEQ + 1000),
            ..data_seg(REMOTE_SEQ, 1)
        },
        10 * MS,
        0,
    );
    assert_eq!(o.reply, Reply::Ack);
    assert_eq!(o.deliver, None);
    assert_eq!(o.acked, 1000);
    assert_eq!(c.snd_una(), LOCAL_SEQ + 1000);
    assert_eq!(c.rcv_nxt(), REMOTE_SEQ);
}
