//! The send side's windows: what goes out is bounded by min(cwnd, SND.WND); the initial
//! window (RFC 5681 §3.1), slow start and congestion avoidance growth, sender-side silly
//! window avoidance (RFC 9293 §3.8.6.2.1), the SND.WL1/WL2 window update rule
//! (RFC 9293 §3.10.7.4) and the peer's window scale (RFC 7323 §2.3) on later segments.

use super::*;

fn syn_mss(mss: Option<u16>) -> ParsedRepr<'static> {
    ParsedRepr {
        options: Options { mss, ..NO_OPTIONS },
        ..SYN_TEMPL
    }
}

#[test]
fn the_initial_window_is_three_segments_of_1460() {
    let mut c = established();
    c.queue(10_000);
    let segs = send_all(&mut c, 0);
    assert_eq!(
        segs,
        [
            out(LOCAL_SEQ, 1460, false),
            out(LOCAL_SEQ + 1460, 1460, false),
            out(LOCAL_SEQ + 2920, 1460, false)
        ]
    );
    assert_eq!(c.flight(), 4380);
}

#[test]
fn the_initial_window_is_four_segments_of_536() {
    let mut c = established_with(&syn_mss(None), 65_535);
    c.queue(10_000);
    let segs = send_all(&mut c, 0);
    assert_eq!(segs.len(), 4);
    assert!(segs.iter().all(|s| s.len == 536));
    assert_eq!(c.flight(), 2144);
}

#[test]
fn the_initial_window_is_four_segments_up_to_1095() {
    let mut c = established_with(&syn_mss(Some(1000)), 65_535);
    c.queue(10_000);
    assert_eq!(send_all(&mut c, 0).len(), 4);
    assert_eq!(c.flight(), 4000);
    let mut c = established_with(&syn_mss(Some(1200)), 65_535);
    c.queue(10_000);
    assert_eq!(send_all(&mut c, 0).len(), 3);
    assert_eq!(c.flight(), 3600);
}

#[test]
fn the_peer_window_bounds_what_is_sent() {
    let mut c = established_with(&SYN_TEMPL, 2920);
    c.queue(10_000);
    let segs = send_all(&mut c, 0);
    assert_eq!(
        segs,
        [
            out(LOCAL_SEQ, 1460, false),
            out(LOCAL_SEQ + 1460, 1460, false)
        ]
    );
    assert_eq!(c.flight(), 2920, "min(cwnd 4380, wnd 2920)");
}

#[test]
fn the_congestion_window_bounds_what_is_sent() {
    let mut c = established();
    set_cwnd(&mut c, 2000);
    c.queue(10_000);
    // 1460, then 540 of room: a silly segment, held.
    assert_eq!(send_all(&mut c, 0), [out(LOCAL_SEQ, 1460, false)]);
}

#[test]
fn slow_start_adds_at_most_two_mss_per_ack() {
    let mut c = established();
    c.queue(20_000);
    send_all(&mut c, 0);
    recv_ack(&mut c, MS, LOCAL_SEQ + 1460);
    assert_eq!(c.congestion().cwnd, 4380 + 1460);
    // One ACK for two segments adds two (RFC 3465 byte counting, L = 2 segments).
    recv_ack(&mut c, 2 * MS, LOCAL_SEQ + 4380);
    assert_eq!(c.congestion().cwnd, 4380 + 3 * 1460);
    // Partial-segment ACKs add what they acknowledge.
    send_all(&mut c, 3 * MS);
    recv_ack(&mut c, 4 * MS, LOCAL_SEQ + 4380 + 100);
    assert_eq!(c.congestion().cwnd, 4380 + 3 * 1460 + 100);
    // More than two segments in one ACK still adds two.
    recv_ack(&mut c, 5 * MS, LOCAL_SEQ + 4380 + 100 + 4 * 1460);
    assert_eq!(c.congestion().cwnd, 4380 + 5 * 1460 + 100);
}

#[test]
fn slow_start_doubles_per_round_trip() {
    let mut c = established();
    c.queue(100_000);
    let first = send_all(&mut c, 0);
    assert_eq!(first.len(), 3);
    for s in &first {
        recv_ack(&mut c, 10 * MS, s.seq + s.len);
    }
    assert_eq!(c.congestion().cwnd, 6 * 1460);
    let second = send_all(&mut c, 10 * MS);
    assert_eq!(second.len(), 6);
    assert_eq!(second[0].seq, LOCAL_SEQ + 4380);
}

#[test]
fn congestion_avoidance_adds_mss_squared_over_cwnd() {
    let mut c = established();
    c.cc.ssthresh = 4380;
    c.queue(20_000);
    send_all(&mut c, 0);
    recv_ack(&mut c, MS, LOCAL_SEQ + 1460);
    assert_eq!(c.congestion().cwnd, 4380 + 1460 * 1460 / 4380);
    assert_eq!(c.congestion().cwnd, 4866);
    recv_ack(&mut c, MS, LOCAL_SEQ + 2920);
    assert_eq!(c.congestion().cwnd, 4866 + 1460 * 1460 / 4866);
}

#[test]
fn sws_avoidance_holds_a_small_segment_while_data_is_in_flight() {
    let mut c = established_with(&SYN_TEMPL, 2000);
    c.queue(3000);
    assert_eq!(send_all(&mut c, 0), [out(LOCAL_SEQ, 1460, false)]);
    assert_eq!(c.next_segment(0, 0), None, "540 of room: held");
    recv_ack_wnd(&mut c, MS, LOCAL_SEQ + 1460, 2000);
    // Now 2000 of room and nothing in flight: a full segment, then the 80-byte tail that
    // ends the stream.
    assert_eq!(
        send_all(&mut c, MS),
        [
            out(LOCAL_SEQ + 1460, 1460, false),
            out(LOCAL_SEQ + 2920, 80, false)
        ]
    );
}

#[test]
fn sws_avoidance_lets_a_small_segment_go_with_nothing_in_flight() {
    let mut c = established_with(&SYN_TEMPL, 500);
    c.queue(3000);
    assert_eq!(send_all(&mut c, 0), [out(LOCAL_SEQ, 500, false)]);
    assert_eq!(c.flight(), 500);
}

#[test]
fn sws_avoidance_lets_the_end_of_the_stream_go() {
    let mut c = established();
    c.queue(1500);
    assert_eq!(
        send_all(&mut c, 0),
        [
            out(LOCAL_SEQ, 1460, false),
            out(LOCAL_SEQ + 1460, 40, false)
        ]
    );
    // Queued later, while the first is in flight: a small response goes at once too.
    let mut c = established();
    c.queue(1460);
    send_all(&mut c, 0);
    c.queue(10);
    assert_eq!(send_all(&mut c, 0), [out(LOCAL_SEQ + 1460, 10, false)]);
}

#[test]
fn a_window_update_reopens_the_flow() {
    let mut c = established_with(&SYN_TEMPL, 1460);
    c.queue(10_000);
    assert_eq!(send_all(&mut c, 0).len(), 1);
    recv_ack_wnd(&mut c, MS, LOCAL_SEQ, 65_535);
    assert_eq!(c.snd_wnd(), 65_535);
    let segs = send_all(&mut c, MS);
    assert_eq!(segs.len(), 2, "cwnd 4380 with 1460 in flight");
    assert_eq!(segs[0].seq, LOCAL_SEQ + 1460);
}

#[test]
fn the_window_is_updated_from_a_newer_segment() {
    let mut c = established();
    // Same SEG.SEQ as SND.WL1 and SEG.ACK >= SND.WL2: update, even to shrink.
    recv_ack_wnd(&mut c, 0, LOCAL_SEQ, 30_000);
    assert_eq!(c.snd_wnd(), 30_000);
    // A higher SEG.SEQ (the peer sent data): update.
    recv(
        &mut c,
        0,
        ParsedRepr {
            payload: data(10),
            window_len: 20_000,
            ..RECV_TEMPL
        },
    );
    assert_eq!(c.snd_wnd(), 20_000);
    assert_eq!((c.snd_wl1, c.snd_wl2), (REMOTE_SEQ, LOCAL_SEQ));
    recv_ack_wnd(&mut c, 0, LOCAL_SEQ, 25_000);
    assert_eq!(c.snd_wnd(), 25_000);
    assert_eq!(c.snd_wl1, REMOTE_SEQ + 10);
}

#[test]
fn an_older_segment_does_not_update_the_window() {
    let mut c = established();
    recv(
        &mut c,
        0,
        ParsedRepr {
            payload: data(10),
            window_len: 20_000,
            ..RECV_TEMPL
        },
    );
    recv_ack_wnd(&mut c, 0, LOCAL_SEQ, 20_000);
    assert_eq!(c.snd_wl1, REMOTE_SEQ + 10);
    // A reordered segment that starts before SND.WL1 (overlapping, so acceptable).
    let o = recv(
        &mut c,
        0,
        ParsedRepr {
            seq_number: REMOTE_SEQ + 5,
            payload: data(10),
            window_len: 60_000,
            ..RECV_TEMPL
        },
    );
    assert_eq!(o.deliver, Some((5, 10)));
    assert_eq!(c.snd_wnd(), 20_000, "SEG.SEQ < SND.WL1: no update");
}

#[test]
fn an_older_ack_does_not_update_the_window() {
    let mut c = established();
    c.queue(2920);
    send_all(&mut c, 0);
    recv_ack_wnd(&mut c, MS, LOCAL_SEQ + 2920, 1000);
    assert_eq!(c.snd_wnd(), 1000);
    // A reordered ACK from before: same SEG.SEQ, SEG.ACK < SND.WL2.
    let o = recv_ack_wnd(&mut c, MS, LOCAL_SEQ + 1460, 65_535);
    assert_eq!(o.acked, 0);
    assert_eq!(c.snd_wnd(), 1000);
    assert_eq!(c.snd_una(), LOCAL_SEQ + 2920);
}

#[test]
fn the_peer_window_scale_applies_to_later_segments() {
    let syn = ParsedRepr {
        options: Options {
            window_scale: Some(7),
            ..SYN_TEMPL.options
        },
        ..SYN_TEMPL
    };
    let mut c = established_with(&syn, 20);
    assert_eq!(c.snd_wnd(), 20 << 7);
    recv_ack_wnd(&mut c, 0, LOCAL_SEQ, 3);
    assert_eq!(c.snd_wnd(), 384);
    c.queue(10_000);
    assert_eq!(send_all(&mut c, 0), [out(LOCAL_SEQ, 384, false)]);
    recv_ack_wnd(&mut c, MS, LOCAL_SEQ + 384, 65_535);
    assert_eq!(c.snd_wnd(), 65_535 << 7);
}

#[test]
fn the_largest_scaled_window_fits() {
    let syn = ParsedRepr {
        options: Options {
            window_scale: Some(14),
            ..SYN_TEMPL.options
        },
        ..SYN_TEMPL
    };
    let c = established_with(&syn, 65_535);
    assert_eq!(c.snd_wnd(), 65_535 << 14);
}

#[test]
fn without_window_scale_the_window_is_taken_as_is() {
    let mut c = established();
    recv_ack_wnd(&mut c, 0, LOCAL_SEQ, 3);
    assert_eq!(c.snd_wnd(), 3);
}
