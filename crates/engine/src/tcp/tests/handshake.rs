//! The passive open (RFC 9293 §3.10.7.2–4): what `accept` takes from the SYN (MSS with its
//! default and clamp, window scale with its clamp, the unscaled SYN window, the initial
//! window), the SYN-ACK, SYN-RECEIVED → ESTABLISHED on an acceptable ACK (with data, with
//! a FIN), the RST for an unacceptable ACK, a retransmitted SYN, the SYN-ACK timer's
//! backoff and expiry, and the handshake's RTT sample (the first SYN-ACK timed, none sent
//! again, nor a SYN cookie's).

use super::*;
use crate::tcp::conn::{Reply, DEFAULT_MSS, MIN_MSS, OUR_MSS};
use crate::tcp::output::TimerAction;
use crate::tcp::timer::Timer;

fn syn_with(mss: Option<u16>, window_scale: Option<u8>) -> ParsedRepr<'static> {
    ParsedRepr {
        options: Options {
            mss,
            window_scale,
            sack_permitted: false,
            sack: crate::wire::tcp::SackBlocks::NONE,
            timestamps: None,
        },
        ..SYN_TEMPL
    }
}

#[test]
fn accept_sets_up_syn_received() {
    let c = Connection::accept(&SYN_TEMPL, ISS, 7 * MS);
    assert_eq!(c.state(), State::SynReceived);
    assert_eq!(c.iss(), ISS);
    assert_eq!((c.snd_una(), c.snd_nxt(), c.snd_max()), (ISS, ISS, ISS));
    assert_eq!(c.rcv_nxt(), REMOTE_SEQ);
    assert_eq!(c.send_end(), LOCAL_SEQ, "the stream starts after our SYN");
    assert_eq!(c.snd_wnd(), 64_240);
    assert_eq!(c.mss(), 1460);
    assert_eq!(c.last_heard_ns(), 7 * MS);
    assert_eq!(c.timer(), Timer::Idle, "armed by syn_ack, not accept");
    assert!(!c.ack_pending() && !c.is_closing());
}

#[test]
fn accept_takes_the_offered_mss() {
    assert_eq!(
        Connection::accept(&syn_with(Some(1200), None), ISS, 0).mss(),
        1200
    );
    assert_eq!(
        Connection::accept(&syn_with(Some(536), None), ISS, 0).mss(),
        536
    );
}

#[test]
fn accept_without_mss_uses_536() {
    let c = Connection::accept(&syn_with(None, None), ISS, 0);
    assert_eq!(c.mss(), DEFAULT_MSS);
    assert_eq!(c.mss(), 536);
}

#[test]
fn accept_raises_a_tiny_mss_to_64() {
    for offered in [0, 1, 63, 64] {
        let c = Connection::accept(&syn_with(Some(offered), None), ISS, 0);
        assert_eq!(c.mss(), MIN_MSS, "offered {offered}");
    }
    assert_eq!(
        Connection::accept(&syn_with(Some(65), None), ISS, 0).mss(),
        65
    );
}

#[test]
fn accept_caps_a_large_mss_at_ours() {
    for offered in [1461, 8960, 65_535] {
        let c = Connection::accept(&syn_with(Some(offered), None), ISS, 0);
        assert_eq!(c.mss(), u32::from(OUR_MSS), "offered {offered}");
    }
}

#[test]
fn accept_records_the_peer_window_scale() {
    let c = Connection::accept(&syn_with(Some(1460), Some(7)), ISS, 0);
    assert_eq!(c.snd_shift(), 7);
    assert!(c.offer_ws);
}

#[test]
fn accept_without_window_scale_neither_scales_nor_offers() {
    let c = Connection::accept(&syn_with(Some(1460), None), ISS, 0);
    assert_eq!(c.snd_shift(), 0);
    assert!(!c.offer_ws);
}

#[test]
fn accept_clamps_the_shift_to_14() {
    for shift in [14, 15, 200, 255] {
        let c = Connection::accept(&syn_with(None, Some(shift)), ISS, 0);
        assert_eq!(c.snd_shift(), 14, "offered {shift}");
    }
}

#[test]
fn the_syn_window_is_never_scaled() {
    let syn = ParsedRepr {
        window_len: 1000,
        ..syn_with(Some(1460), Some(7))
    };
    let c = Connection::accept(&syn, ISS, 0);
    assert_eq!(
        c.snd_wnd(),
        1000,
        "RFC 7323 §2.2: the SYN's window is not scaled"
    );
}

#[test]
fn accept_sets_the_initial_window_by_mss() {
    // RFC 6928: min(10 MSS, max(2 MSS, 14 600)); our MSS cap, 1460, keeps it at ten
    // segments (the 14 600 bound is exactly ten of ours).
    for (mss, iw) in [
        (536, 5360),
        (1095, 10_950),
        (1096, 10_960),
        (1460, 14_600),
        (64, 640),
    ] {
        let c = Connection::accept(&syn_with(Some(mss), None), ISS, 0);
        assert_eq!(c.congestion().cwnd, iw, "mss {mss}");
        assert_eq!(c.congestion().ssthresh, u32::MAX);
        assert_eq!(
            c.congestion().recover,
            ISS,
            "RFC 6582: recover starts at the ISS"
        );
        assert!(!c.congestion().in_recovery);
    }
}

#[test]
fn syn_ack_is_our_iss_and_arms_the_timer() {
    let mut c = Connection::accept(&SYN_TEMPL, ISS, 0);
    let s = c.syn_ack(5 * MS);
    assert_eq!(
        s,
        Segment {
            seq: ISS,
            len: 0,
            syn: true,
            fin: false,
            probe: false
        }
    );
    assert_eq!((c.snd_nxt(), c.snd_max()), (LOCAL_SEQ, LOCAL_SEQ));
    assert_eq!(c.timer(), Timer::Retransmit { at: 5 * MS + SEC });
    // on_sent of the SYN-ACK moves nothing (syn_ack did the bookkeeping).
    c.on_sent(&s, 6 * MS);
    assert_eq!((c.snd_nxt(), c.snd_max()), (LOCAL_SEQ, LOCAL_SEQ));
    assert_eq!(c.timer(), Timer::Retransmit { at: 5 * MS + SEC });
}

#[test]
fn nothing_is_sent_before_the_handshake_completes() {
    let mut c = syn_received();
    c.queue(100);
    c.close();
    assert_eq!(c.next_segment(0, 0), None);
    assert_eq!(c.next_segment(0, 65_535), None);
}

#[test]
fn ack_of_our_syn_establishes() {
    let mut c = syn_received();
    let o = recv(&mut c, 30 * MS, RECV_TEMPL);
    assert_eq!(
        o,
        Outcome {
            established: true,
            ack_seen: true,
            ..Outcome::default()
        }
    );
    assert_eq!(c.state(), State::Established);
    assert_eq!((c.snd_una(), c.snd_nxt()), (LOCAL_SEQ, LOCAL_SEQ));
    assert_eq!(c.snd_wnd(), 65_535);
    assert_eq!((c.snd_wl1, c.snd_wl2), (REMOTE_SEQ, LOCAL_SEQ));
    assert_eq!(c.timer(), Timer::Idle, "the SYN-ACK timer stops");
    assert_eq!(c.last_heard_ns(), 30 * MS);
    assert_eq!(c.flight(), 0);
    assert!(!c.ack_pending(), "a bare ACK is not acknowledged");
}

#[test]
fn the_completing_ack_window_is_scaled() {
    let mut c = syn_received_with(&syn_with(Some(1460), Some(7)));
    let o = recv(
        &mut c,
        0,
        ParsedRepr {
            window_len: 100,
            ..RECV_TEMPL
        },
    );
    assert!(o.established);
    assert_eq!(c.snd_wnd(), 100 << 7);
}

#[test]
fn the_completing_ack_may_carry_the_request() {
    let mut c = syn_received();
    let o = recv(
        &mut c,
        0,
        ParsedRepr {
            payload: data(20),
            ..RECV_TEMPL
        },
    );
    assert!(o.established);
    assert_eq!(o.deliver, Some((0, 20)));
    assert_eq!(c.rcv_nxt(), REMOTE_SEQ + 20);
    assert!(c.ack_pending());
    assert_eq!(
        o.reply,
        Reply::None,
        "the owner pays the ACK with its answer"
    );
}

#[test]
fn the_completing_ack_may_carry_a_fin() {
    let mut c = syn_received();
    let o = recv(
        &mut c,
        0,
        ParsedRepr {
            flags: FIN_ACK,
            ..RECV_TEMPL
        },
    );
    assert!(o.established && o.fin);
    assert_eq!(c.state(), State::CloseWait);
    assert_eq!(c.rcv_nxt(), REMOTE_SEQ + 1);
    assert!(c.ack_pending());
}

#[test]
fn an_old_ack_in_syn_received_gets_a_reset() {
    let mut c = syn_received();
    let o = recv_ack(&mut c, 0, ISS);
    assert_eq!(
        o,
        Outcome {
            reply: Reply::Reset { seq: ISS },
            ack_seen: true,
            ..Outcome::default()
        }
    );
    assert_eq!(
        c.state(),
        State::SynReceived,
        "the half-open connection stays"
    );
    assert_eq!(c.snd_una(), ISS);
}

#[test]
fn an_ack_beyond_our_syn_in_syn_received_gets_a_reset() {
    let mut c = syn_received();
    for ack in [LOCAL_SEQ + 1, LOCAL_SEQ + 1000, ISS.wrapping_sub(1000)] {
        let o = recv_ack(&mut c, 0, ack);
        assert_eq!(o.reply, Reply::Reset { seq: ack }, "ack {ack:#x}");
        assert!(!o.established);
        assert_eq!(c.state(), State::SynReceived);
    }
    // The right ACK still completes it.
    assert!(recv(&mut c, 0, RECV_TEMPL).established);
}

#[test]
fn a_segment_without_ack_in_syn_received_is_dropped() {
    let mut c = syn_received();
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
    assert_eq!(c.state(), State::SynReceived);
    assert_eq!(c.rcv_nxt(), REMOTE_SEQ);
}

#[test]
fn a_retransmitted_syn_gets_the_syn_ack_again() {
    let mut c = syn_received();
    let before = c;
    let o = recv(&mut c, 500 * MS, SYN_TEMPL);
    assert_eq!(
        o,
        Outcome {
            reply: Reply::SynAck,
            ..Outcome::default()
        }
    );
    assert_eq!(c, before, "nothing changes until the owner calls syn_ack");
}

#[test]
fn a_retransmitted_syn_with_window_scale_makes_us_offer_it() {
    let mut c = syn_received();
    assert!(!c.offer_ws);
    let o = recv(&mut c, 0, syn_with(Some(1460), Some(7)));
    assert_eq!(o.reply, Reply::SynAck);
    assert!(c.offer_ws);
    let s = c.syn_ack(0);
    assert_eq!(
        c.header(&s, LOCAL_PORT, REMOTE_PORT, RX, 0).window_scale,
        Some(0)
    );
}

#[test]
fn a_different_syn_in_syn_received_gets_a_challenge_ack() {
    let mut c = syn_received();
    let o = recv(
        &mut c,
        0,
        ParsedRepr {
            seq_number: IRS + 5000,
            ..SYN_TEMPL
        },
    );
    assert_eq!(
        o,
        Outcome {
            reply: Reply::Ack,
            challenge_ack: true,
            ..Outcome::default()
        }
    );
    assert_eq!(c.state(), State::SynReceived);
    assert_eq!(c.rcv_nxt(), REMOTE_SEQ);
}

#[test]
fn a_rst_in_syn_received_closes() {
    let mut c = syn_received();
    let o = recv(
        &mut c,
        0,
        ParsedRepr {
            ack_number: None,
            flags: RST,
            ..RECV_TEMPL
        },
    );
    assert!(o.reset);
    assert_eq!(c.state(), State::Closed);
    assert_eq!(c.timer(), Timer::Idle);
}

#[test]
fn syn_ack_timer_backs_off_three_times_then_expires() {
    let mut c = syn_received();
    assert_eq!(c.timer(), Timer::Retransmit { at: SEC });
    assert_eq!(c.on_timer(SEC - 1, STALL, RETRIES), TimerAction::None);
    let mut now = SEC;
    for (i, rto) in [(1u8, 2 * SEC), (2, 4 * SEC), (3, 8 * SEC)] {
        assert_eq!(c.on_timer(now, STALL, RETRIES), TimerAction::ResendSynAck);
        assert_eq!(c.retries(), i);
        assert_eq!(c.rtt().rto_ns(), rto);
        let s = c.syn_ack(now);
        assert_eq!(s.seq, ISS);
        assert_eq!(c.timer(), Timer::Retransmit { at: now + rto });
        now += rto;
    }
    assert_eq!(now, 15 * SEC);
    assert_eq!(c.on_timer(now - 1, STALL, RETRIES), TimerAction::None);
    assert_eq!(c.on_timer(now, STALL, RETRIES), TimerAction::Expire);
}

#[test]
fn syn_received_is_not_cut_by_the_stall_bound() {
    let mut c = syn_received();
    assert_eq!(c.on_timer(SEC / 2, 0, RETRIES), TimerAction::None);
}

#[test]
fn the_handshake_gives_the_first_rtt_sample() {
    // The first SYN-ACK is timed: the ACK that completes the handshake is the first
    // sample (RFC 6298 §2.2), so the first data already runs under a measured RTO.
    let mut c = syn_received();
    assert!(c.rtt().timing());
    assert!(recv(&mut c, 100 * MS, RECV_TEMPL).established);
    let r = c.rtt();
    assert_eq!((r.srtt_us, r.rttvar_us, r.rto_ms), (100_000, 50_000, 300));
    assert!(!r.timing());
    // An ACK at once: a sample of 0, taken as 1 µs (0 means "no sample").
    let c = established();
    assert_eq!((c.rtt().srtt_us, c.rtt().rttvar_us), (1, 0));
    assert_eq!(c.rtt().rto_ns(), 200 * MS, "the floor");
}

#[test]
fn a_retransmitted_syn_ack_gives_no_rtt_sample() {
    // Karn: the ACK may answer either SYN-ACK. RFC 6298 §2.1 then §5.7: 1 s until the
    // first sample, 3 s once the handshake's segment timed out.
    let mut c = syn_received();
    assert_eq!(c.on_timer(SEC, STALL, RETRIES), TimerAction::ResendSynAck);
    c.syn_ack(SEC);
    assert!(!c.rtt().timing());
    assert!(recv(&mut c, SEC + 40 * MS, RECV_TEMPL).established);
    assert_eq!(c.rtt().srtt_us, 0);
    assert_eq!(c.rtt().rto_ns(), 3 * SEC);
    // A SYN-ACK sent again for a retransmitted SYN before any timeout is not timed either.
    let mut c = syn_received();
    recv(&mut c, 10 * MS, SYN_TEMPL);
    c.syn_ack(10 * MS);
    assert!(!c.rtt().timing());
    assert!(recv(&mut c, 40 * MS, RECV_TEMPL).established);
    assert_eq!(c.rtt().srtt_us, 0);
    assert_eq!(
        c.rtt().rto_ns(),
        SEC,
        "RFC 6298 §2.1: 1 s until the first sample"
    );
}

#[test]
fn a_syn_cookies_syn_ack_is_not_timed() {
    // A SYN cookie's TCB is made when the ACK returns, long after its SYN-ACK went:
    // `syn_ack_sent` does the bookkeeping without timing.
    let mut c = Connection::accept(&SYN_TEMPL, ISS, 0);
    c.syn_ack_sent(0);
    assert!(!c.rtt().timing());
    assert_eq!(c.timer(), Timer::Retransmit { at: SEC });
    assert!(recv(&mut c, 40 * MS, RECV_TEMPL).established);
    assert_eq!(c.rtt().srtt_us, 0);
    assert_eq!(c.rtt().rto_ns(), SEC);
}

#[test]
fn the_peer_sequence_may_wrap() {
    let syn = ParsedRepr {
        seq_number: u32::MAX,
        ..SYN_TEMPL
    };
    let mut c = syn_received_with(&syn);
    assert_eq!(c.rcv_nxt(), 0);
    let o = recv(
        &mut c,
        0,
        ParsedRepr {
            seq_number: 0,
            payload: data(10),
            ..RECV_TEMPL
        },
    );
    assert!(o.established);
    assert_eq!(o.deliver, Some((0, 10)));
    assert_eq!(c.rcv_nxt(), 10);
}

#[test]
fn our_sequence_may_wrap() {
    let iss = u32::MAX - 1000;
    let first = iss.wrapping_add(1);
    let mut c = Connection::accept(&SYN_TEMPL, iss, 0);
    assert_eq!(c.syn_ack(0).seq, iss);
    let o = recv_ack(&mut c, 0, first);
    assert!(o.established);
    assert_eq!(c.queue(3000), first);
    let segs = send_all(&mut c, 0);
    assert_eq!(
        segs,
        [
            out(first, 1460, false),
            out(first.wrapping_add(1460), 1460, false),
            out(first.wrapping_add(2920), 80, false)
        ]
    );
    assert_eq!(c.snd_nxt(), 2000);
    let o = recv_ack(&mut c, 10 * MS, 2000);
    assert_eq!(o.acked, 3000);
    assert!(c.all_acked());
    assert_eq!(c.timer(), Timer::Idle);
}

#[test]
fn the_rto_is_3_s_after_a_syn_ack_retransmission() {
    // RFC 6298 §5.7 (a MUST).
    let mut c = syn_received();
    assert_eq!(c.on_timer(SEC, STALL, RETRIES), TimerAction::ResendSynAck);
    c.syn_ack(SEC);
    assert!(recv(&mut c, SEC + 100 * MS, RECV_TEMPL).established);
    assert_eq!(c.rtt().rto_ns(), 3 * SEC);
    c.queue(100);
    send_all(&mut c, SEC + 100 * MS);
    assert_eq!(
        c.timer(),
        Timer::Retransmit {
            at: 4 * SEC + 100 * MS
        }
    );
}

#[test]
fn a_retransmitted_syn_with_window_scale_sets_the_shift() {
    let mut c = syn_received();
    recv(&mut c, 0, syn_with(Some(1460), Some(7)));
    assert!(c.offer_ws);
    assert_eq!(c.snd_shift(), 7);
    let o = recv(
        &mut c,
        0,
        ParsedRepr {
            window_len: 100,
            ..RECV_TEMPL
        },
    );
    assert!(o.established);
    assert_eq!(c.snd_wnd(), 100 << 7);
}
