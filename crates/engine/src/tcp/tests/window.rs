//! The send side's windows: what goes out is bounded by min(cwnd, SND.WND); the initial
//! window (RFC 6928), slow start (RFC 5681 §3.1, RFC 3465 without its L limit) and CUBIC's congestion
//! avoidance growth (RFC 9438), sender-side silly window avoidance (RFC 9293 §3.8.6.2.1),
//! the SND.WL1/WL2 window update rule (RFC 9293 §3.10.7.4) and the peer's window scale
//! (RFC 7323 §2.3) on later segments.

use super::*;

fn syn_mss(mss: Option<u16>) -> ParsedRepr<'static> {
    ParsedRepr {
        options: Options { mss, ..NO_OPTIONS },
        ..SYN_TEMPL
    }
}

#[test]
fn the_initial_window_is_ten_segments_of_1460() {
    // RFC 6928: min(10 MSS, max(2 MSS, 14 600)).
    let mut c = established();
    c.queue(20_000);
    let segs = send_all(&mut c, 0);
    let want: Vec<Segment> = (0..10)
        .map(|i| out(LOCAL_SEQ + i * 1460, 1460, false))
        .collect();
    assert_eq!(segs, want);
    assert_eq!(c.flight(), 14_600);
}

#[test]
fn the_initial_window_is_ten_segments_of_536() {
    let mut c = established_with(&syn_mss(None), 65_535);
    c.queue(10_000);
    let segs = send_all(&mut c, 0);
    assert_eq!(segs.len(), 10);
    assert!(segs.iter().all(|s| s.len == 536));
    assert_eq!(c.flight(), 5360);
}

#[test]
fn the_initial_window_is_ten_segments_of_any_mss_we_accept() {
    // 14 600 bytes would cap it only above an MSS of 1460, which is ours (the largest
    // accepted): every MSS gets ten segments.
    for (mss, iw) in [(1000, 10_000), (1200, 12_000), (64, 640)] {
        let mut c = established_with(&syn_mss(Some(mss)), 65_535);
        c.queue(20_000);
        assert_eq!(send_all(&mut c, 0).len(), 10, "mss {mss}");
        assert_eq!(c.flight(), iw, "mss {mss}");
    }
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
    assert_eq!(c.flight(), 2920, "min(cwnd 14 600, wnd 2920)");
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
fn slow_start_adds_what_each_ack_acknowledges() {
    const IW: u32 = 14_600;
    let mut c = established();
    c.queue(20_000);
    send_all(&mut c, 0);
    recv_ack(&mut c, MS, LOCAL_SEQ + 1460);
    assert_eq!(c.congestion().cwnd, IW + 1460);
    // One ACK for two segments adds two (RFC 3465 byte counting).
    recv_ack(&mut c, 2 * MS, LOCAL_SEQ + 4380);
    assert_eq!(c.congestion().cwnd, IW + 3 * 1460);
    // Partial-segment ACKs add what they acknowledge.
    send_all(&mut c, 3 * MS);
    recv_ack(&mut c, 4 * MS, LOCAL_SEQ + 4380 + 100);
    assert_eq!(c.congestion().cwnd, IW + 3 * 1460 + 100);
    // A stretch ACK (an offloading receiver's one ACK per burst) adds all it covers, not
    // RFC 3465's L = 2 segments: the window still doubles per round trip.
    recv_ack(&mut c, 5 * MS, LOCAL_SEQ + 4380 + 100 + 4 * 1460);
    assert_eq!(c.congestion().cwnd, IW + 7 * 1460 + 100);
}

#[test]
fn slow_start_doubles_per_round_trip() {
    let mut c = established();
    c.queue(100_000);
    let first = send_all(&mut c, 0);
    assert_eq!(first.len(), 10);
    for s in &first {
        recv_ack(&mut c, 10 * MS, s.seq + s.len);
    }
    assert_eq!(c.congestion().cwnd, 20 * 1460);
    let second = send_all(&mut c, 10 * MS);
    assert_eq!(second.len(), 20);
    assert_eq!(second[0].seq, LOCAL_SEQ + 14_600);
}

#[test]
fn congestion_avoidance_before_any_loss_adds_mss_squared_over_cwnd() {
    // RFC 9438 §4.3: CUBIC's window is never below W_est, the window Reno would have,
    // which grows by α_cubic segments per window; α_cubic is 1 once W_est reaches
    // cwnd_prior, the window before the last reduction, and with no reduction yet that
    // is from the start: Reno's MSS²/cwnd per segment acknowledged. The cubic curve,
    // which starts at the window of the epoch, adds nothing within the same millisecond.
    let mut c = established();
    c.cc.ssthresh = 14_600;
    c.queue(20_000);
    send_all(&mut c, 0);
    recv_ack(&mut c, MS, LOCAL_SEQ + 1460);
    assert_eq!(c.congestion().cwnd, 14_600 + 1460 * 1460 / 14_600);
    assert_eq!(c.congestion().cwnd, 14_746);
    recv_ack(&mut c, MS, LOCAL_SEQ + 2920);
    assert_eq!(c.congestion().cwnd, 14_746 + 1460 * 1460 / 14_746);
}

/// Established, ten segments sent at 0, the first lost: NewReno recovery with six more
/// duplicates, which inflate the window enough for six new segments (s(10)..s(16)),
/// then the full ACK at 20 ms leaves recovery with those six in flight and
/// cwnd = min(ssthresh, flight + MSS) = ssthresh: congestion avoidance from the next ACK.
fn out_of_recovery_at_ssthresh() -> Connection {
    let mut c = established();
    c.queue(100_000);
    assert_eq!(send_all(&mut c, 0).len(), 10);
    for _ in 0..9 {
        recv_ack(&mut c, 10 * MS, LOCAL_SEQ);
    }
    let r = c.retransmit_segment().unwrap();
    c.on_sent(&r, 10 * MS);
    assert_eq!(send_all(&mut c, 10 * MS).len(), 6);
    recv_ack(&mut c, 20 * MS, LOCAL_SEQ + 14_600);
    let cc = c.congestion();
    assert!(!cc.in_recovery);
    // β_cubic = 0.7 of the 14 600 in flight at the loss.
    assert_eq!((cc.cwnd, cc.ssthresh), (10_220, 10_220));
    assert_eq!(
        (cc.cubic().unwrap().w_max, cc.cubic().unwrap().cwnd_prior),
        (14_600, 14_600)
    );
    c
}

#[test]
fn after_a_loss_congestion_avoidance_grows_at_cubics_reno_friendly_rate() {
    // RFC 9438 §4.3: below cwnd_prior W_est grows by α_cubic = 3(1 − β)/(1 + β) = 0.529
    // segment per window, so CUBIC with β = 0.7 is no more aggressive than Reno (one
    // segment per window after halving). Right after the loss the cubic curve is at the
    // reduced window (W_cubic(0) = W_max − C·K³ = cwnd), so W_est leads.
    let mut c = out_of_recovery_at_ssthresh();
    recv_ack(&mut c, 20 * MS, LOCAL_SEQ + 16_060);
    assert_eq!(
        c.congestion().cwnd,
        10_220 + 529 * 1460 * 1460 / 1000 / 10_220
    );
    assert_eq!(c.congestion().cwnd, 10_330, "Reno would have 10 428");
    recv_ack(&mut c, 20 * MS, LOCAL_SEQ + 17_520);
    // W_est is kept in thousandths of a byte: 10 330.334 + 109.159.
    assert_eq!(c.congestion().cwnd, 10_439, "Reno would have 10 536");
}

#[test]
fn congestion_avoidance_follows_the_cubic_curve_in_time() {
    // K = ∛((W_max − cwnd)/C) = ∛(3 segments / 0.4) s = 1.957 s after the epoch (the first
    // ACK in congestion avoidance) the curve is back at W_max: an ACK then moves the window
    // (W_max − cwnd)/cwnd of a segment per segment acknowledged towards it, far more than
    // W_est's α_cubic·MSS/cwnd.
    let mut c = out_of_recovery_at_ssthresh();
    recv_ack(&mut c, 20 * MS, LOCAL_SEQ + 16_060);
    assert_eq!(c.congestion().cubic().unwrap().k_ms, 1957);
    assert_eq!(c.congestion().cubic().unwrap().epoch_ns, 20 * MS);
    let before = c.congestion().cwnd;
    assert_eq!(before, 10_330);
    recv_ack(&mut c, 20 * MS + 1957 * MS, LOCAL_SEQ + 17_520);
    let grown = c.congestion().cwnd - before;
    // W_cubic(K + SRTT) is W_max to the byte; (14 600 − 10 330) · 1460 / 10 330 = 603.
    assert_eq!(grown, 603);
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
    c.queue(20_000);
    assert_eq!(send_all(&mut c, 0).len(), 1);
    recv_ack_wnd(&mut c, MS, LOCAL_SEQ, 65_535);
    assert_eq!(c.snd_wnd(), 65_535);
    let segs = send_all(&mut c, MS);
    assert_eq!(segs.len(), 9, "cwnd 14 600 with 1460 in flight");
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
