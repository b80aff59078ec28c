//! The active open (RFC 9293 §3.10.7.3, `tcp::active`): the SYN and its options, its
//! retransmission timing and the attempt's failure, the SYN-ACK with and without options,
//! unacceptable ACKs (RST at SEG.ACK), RSTs with and without an acceptable ACK, a
//! simultaneous open, and the client's close in both orders. Here "we" are the client:
//! our ISS is [`ISS`], the server's is [`IRS`].

use super::*;
use crate::tcp::active::SYN_RETRIES;
use crate::tcp::conn::{DEFAULT_MSS, TS_OPTION_LEN};
use crate::tcp::output::TimerAction;
use crate::tcp::timer::Timer;
use crate::wire::tcp::SackBlocks;

/// The server's SYN-ACK of our SYN, with `options`, window 65535.
fn syn_ack_with(options: Options) -> ParsedRepr<'static> {
    ParsedRepr {
        seq_number: IRS,
        ack_number: Some(LOCAL_SEQ),
        flags: Flags {
            syn: true,
            ack: true,
            ..NO_FLAGS
        },
        options,
        ..RECV_TEMPL
    }
}

/// What Linux answers our SYN with: MSS 1460, window scale 7, SACK, timestamps.
const FULL: Options = Options {
    mss: Some(1460),
    window_scale: Some(7),
    sack_permitted: true,
    sack: SackBlocks::NONE,
    timestamps: Some((777, 0)),
};

/// A connection in SYN-SENT at time 0 with its SYN sent.
fn syn_sent() -> Connection {
    let mut c = Connection::connect(ISS, 0);
    let s = c.syn(0);
    assert_eq!((s.seq, s.len, s.syn, s.fin), (ISS, 0, true, false));
    c
}

/// Established through `syn_ack` at 3 ms.
fn established_client(options: Options) -> Connection {
    let mut c = syn_sent();
    let o = c.input(&syn_ack_with(options), 3 * MS, RX);
    assert!(o.established && o.reply == Reply::None, "{o:?}");
    c
}

#[test]
fn connect_sends_a_syn_offering_every_option() {
    let mut c = syn_sent();
    assert_eq!(c.state(), State::SynSent);
    assert_eq!(
        (c.snd_una(), c.snd_nxt(), c.snd_max()),
        (ISS, LOCAL_SEQ, LOCAL_SEQ)
    );
    let syn = c.syn(0);
    let h = c.header(&syn, REMOTE_PORT, LOCAL_PORT, RX, 5 * MS);
    assert!(h.flags.syn && !h.flags.ack && !h.flags.rst && !h.flags.fin);
    assert_eq!(h.ack_number, None, "the first SYN acknowledges nothing");
    assert_eq!(h.seq_number, ISS);
    assert_eq!(h.max_seg_size, Some(1460));
    assert_eq!(h.window_scale, Some(0));
    assert!(h.sack_permitted);
    assert_eq!(h.timestamps, Some((5, 0)), "TSval from the clock, TSecr 0");
    assert_eq!(
        c.timer(),
        Timer::Retransmit { at: SEC },
        "RFC 6298 initial RTO"
    );
}

#[test]
fn data_queued_in_syn_sent_waits_for_the_handshake() {
    let mut c = syn_sent();
    assert_eq!(c.queue(100), LOCAL_SEQ);
    assert_eq!(c.next_segment(0, 1460), None);
    let o = c.input(&syn_ack_with(NO_OPTIONS), MS, RX);
    assert!(o.established);
    // The request carries the ACK of the SYN-ACK: no bare ACK before it.
    assert!(c.ack_pending());
    let segs = send_all(&mut c, MS);
    assert_eq!(segs, [out(LOCAL_SEQ, 100, false)]);
    let h = c.header(&segs[0], REMOTE_PORT, LOCAL_PORT, RX, MS);
    assert_eq!(h.ack_number, Some(REMOTE_SEQ));
    assert!(h.flags.ack && !h.flags.syn);
    assert!(!c.ack_pending());
}

#[test]
fn the_syn_goes_again_after_1_2_4_s_then_the_attempt_fails() {
    let mut c = syn_sent();
    let mut at = 0;
    for (i, wait) in [SEC, 2 * SEC, 4 * SEC].into_iter().enumerate() {
        assert_eq!(c.on_timer(at + wait - 1, STALL, RETRIES), TimerAction::None);
        at += wait;
        assert_eq!(c.on_timer(at, STALL, RETRIES), TimerAction::ResendSynAck);
        assert_eq!(c.retries(), i as u8 + 1);
        let s = c.syn(at);
        assert!(s.syn && s.seq == ISS);
        let h = c.header(&s, REMOTE_PORT, LOCAL_PORT, RX, at);
        assert!(h.flags.syn && !h.flags.ack);
    }
    assert_eq!(c.retries(), SYN_RETRIES);
    at += 8 * SEC;
    assert_eq!(c.on_timer(at - 1, STALL, RETRIES), TimerAction::None);
    assert_eq!(c.on_timer(at, STALL, RETRIES), TimerAction::Expire);
}

#[test]
fn a_syn_ack_after_a_retransmitted_syn_gives_no_sample_and_a_3_s_rto() {
    let mut c = syn_sent();
    assert_eq!(c.on_timer(SEC, STALL, RETRIES), TimerAction::ResendSynAck);
    c.syn(SEC);
    let o = c.input(&syn_ack_with(NO_OPTIONS), SEC + 3 * MS, RX);
    assert!(o.established);
    assert_eq!(
        c.rtt().srtt_us,
        0,
        "Karn: the SYN-ACK may answer either SYN"
    );
    assert_eq!(c.rtt().rto_ns(), 3 * SEC, "RFC 6298 §5.7");
    assert_eq!(c.retries(), 0);
}

#[test]
fn a_syn_ack_with_every_option_turns_them_on() {
    let c = established_client(FULL);
    assert_eq!(c.state(), State::Established);
    assert_eq!(c.snd_una(), LOCAL_SEQ);
    assert_eq!(c.rcv_nxt(), REMOTE_SEQ);
    assert_eq!(c.snd_shift(), 7);
    assert!(c.sack_ok() && c.ts_ok());
    assert_eq!(c.ts_recent(), 777);
    assert_eq!(c.mss(), 1460 - TS_OPTION_LEN);
    assert_eq!(c.snd_wnd(), 65_535, "a SYN-ACK's window is never scaled");
    assert_eq!(c.rtt().srtt_us, 3000, "the first SYN was timed: 3 ms");
    assert_eq!(c.timer(), Timer::Idle);
}

#[test]
fn a_syn_ack_without_options_turns_them_off() {
    let mut c = established_client(NO_OPTIONS);
    assert_eq!(c.snd_shift(), 0);
    assert!(!c.sack_ok() && !c.ts_ok());
    assert_eq!(c.mss(), DEFAULT_MSS, "no MSS option: 536");
    // Our segments then carry none of them, and a window update is taken unscaled.
    c.queue(10);
    let s = send_all(&mut c, 4 * MS)[0];
    let h = c.header(&s, REMOTE_PORT, LOCAL_PORT, RX, 4 * MS);
    assert_eq!(h.timestamps, None);
    assert_eq!(
        (h.window_scale, h.max_seg_size, h.sack_permitted),
        (None, None, false)
    );
    recv_ack_wnd(&mut c, 5 * MS, LOCAL_SEQ + 10, 1000);
    assert_eq!(c.snd_wnd(), 1000);
}

#[test]
fn a_window_scale_answer_scales_later_windows() {
    let mut c = established_client(Options {
        window_scale: Some(20),
        ..NO_OPTIONS
    });
    assert_eq!(c.snd_shift(), 14, "clamped (RFC 7323 §2.3)");
    recv_ack_wnd(&mut c, 4 * MS, LOCAL_SEQ, 2);
    assert_eq!(c.snd_wnd(), 2 << 14);
}

#[test]
fn the_mss_answer_is_clamped() {
    let small = established_client(Options {
        mss: Some(10),
        ..NO_OPTIONS
    });
    assert_eq!(small.mss(), 64);
    let big = established_client(Options {
        mss: Some(9000),
        ..NO_OPTIONS
    });
    assert_eq!(big.mss(), 1460);
}

/// IPv6's MSS offered before the SYN: in the SYN, as the clamp of the SYN-ACK's answer,
/// and kept through a simultaneous open's SYN-ACK; never below the least MSS.
#[test]
fn an_offered_mss_goes_in_the_syn_and_bounds_the_answer() {
    let mut c = Connection::connect(ISS, 0);
    c.offer_mss(1440);
    let syn = c.syn(0);
    let h = c.header(&syn, REMOTE_PORT, LOCAL_PORT, RX, 0);
    assert_eq!(h.max_seg_size, Some(1440));
    let o = c.input(&syn_ack_with(FULL), 3 * MS, RX);
    assert!(o.established);
    assert_eq!(c.mss(), 1440 - TS_OPTION_LEN, "1460 answered, 1440 ours");
    // Both SYNs crossing: our SYN-ACK offers what our SYN did.
    let mut c = Connection::connect(ISS, 0);
    c.offer_mss(1440);
    let _ = c.syn(0);
    let their_syn = ParsedRepr {
        options: FULL,
        ..SYN_TEMPL
    };
    assert_eq!(c.input(&their_syn, MS, RX).reply, Reply::SynAck);
    let s = c.syn_ack(MS);
    let h = c.header(&s, REMOTE_PORT, LOCAL_PORT, RX, MS);
    assert_eq!(h.max_seg_size, Some(1440));
    let mut tiny = Connection::connect(ISS, 0);
    tiny.offer_mss(10);
    let syn = tiny.syn(0);
    let h = tiny.header(&syn, REMOTE_PORT, LOCAL_PORT, RX, 0);
    assert_eq!(h.max_seg_size, Some(64), "never below the least MSS");
}

#[test]
fn an_ack_not_of_our_syn_is_answered_with_a_rst() {
    for ack in [
        ISS,
        ISS.wrapping_sub(1000),
        LOCAL_SEQ + 1,
        LOCAL_SEQ + 100_000,
    ] {
        let mut c = syn_sent();
        for flags in [ACK, Flags { syn: true, ..ACK }] {
            let seg = ParsedRepr {
                ack_number: Some(ack),
                flags,
                ..syn_ack_with(NO_OPTIONS)
            };
            let o = c.input(&seg, MS, RX);
            assert_eq!(o.reply, Reply::Reset { seq: ack }, "ACK {ack:#x} {flags:?}");
            assert!(o.bad_ack && !o.established);
            assert_eq!(c.state(), State::SynSent, "the attempt goes on");
        }
    }
}

#[test]
fn a_rst_with_a_bad_ack_is_dropped_silently() {
    let mut c = syn_sent();
    let seg = ParsedRepr {
        ack_number: Some(LOCAL_SEQ + 5),
        flags: Flags { rst: true, ..ACK },
        ..RECV_TEMPL
    };
    let o = c.input(&seg, MS, RX);
    assert_eq!(o, Outcome::default());
    assert_eq!(c.state(), State::SynSent);
}

#[test]
fn a_rst_without_ack_is_dropped() {
    // RFC 5961 §3.2: in SYN-SENT a RST is believed only if it acknowledges our SYN.
    let mut c = syn_sent();
    let seg = ParsedRepr {
        ack_number: None,
        flags: RST,
        ..RECV_TEMPL
    };
    assert_eq!(c.input(&seg, MS, RX), Outcome::default());
    assert_eq!(c.state(), State::SynSent);
}

#[test]
fn a_rst_acknowledging_our_syn_refuses_the_connection() {
    let mut c = syn_sent();
    let seg = ParsedRepr {
        seq_number: 0,
        ack_number: Some(LOCAL_SEQ),
        flags: Flags { rst: true, ..ACK },
        ..RECV_TEMPL
    };
    let o = c.input(&seg, MS, RX);
    assert!(o.reset);
    assert_eq!(o.reply, Reply::None);
    assert_eq!(c.state(), State::Closed);
    assert!(c.state().is_done());
    assert_eq!(c.on_timer(10 * SEC, STALL, RETRIES), TimerAction::None);
}

#[test]
fn an_ack_without_syn_or_a_bare_segment_is_dropped() {
    let mut c = syn_sent();
    let ack_only = ParsedRepr {
        ack_number: Some(LOCAL_SEQ),
        ..RECV_TEMPL
    };
    assert_eq!(c.input(&ack_only, MS, RX), Outcome::default());
    let nothing = ParsedRepr {
        ack_number: None,
        flags: NO_FLAGS,
        payload: data(10),
        ..RECV_TEMPL
    };
    assert_eq!(c.input(&nothing, MS, RX), Outcome::default());
    assert_eq!(c.state(), State::SynSent);
    assert_eq!(c.rcv_nxt(), 0);
}

#[test]
fn data_and_fin_on_the_syn_ack_are_not_taken() {
    let mut c = syn_sent();
    let seg = ParsedRepr {
        flags: Flags {
            syn: true,
            ack: true,
            fin: true,
            ..NO_FLAGS
        },
        payload: data(10),
        ..syn_ack_with(NO_OPTIONS)
    };
    let o = c.input(&seg, MS, RX);
    assert!(o.established && o.deliver.is_none() && !o.fin);
    assert_eq!(c.rcv_nxt(), REMOTE_SEQ, "the peer sends them again");
    assert_eq!(c.state(), State::Established);
}

#[test]
fn simultaneous_open_goes_through_syn_received() {
    let mut c = syn_sent();
    c.queue(50);
    // The peer's SYN crosses ours.
    let their_syn = ParsedRepr {
        options: FULL,
        ..SYN_TEMPL
    };
    let o = c.input(&their_syn, MS, RX);
    assert_eq!(o.reply, Reply::SynAck);
    assert_eq!(c.state(), State::SynReceived);
    assert_eq!(c.rcv_nxt(), REMOTE_SEQ);
    let s = c.syn_ack(MS);
    assert!(s.syn && s.seq == ISS);
    let h = c.header(&s, REMOTE_PORT, LOCAL_PORT, RX, MS);
    assert!(h.flags.syn && h.flags.ack);
    assert_eq!(h.ack_number, Some(REMOTE_SEQ));
    // Their SYN-ACK (or ACK) of our SYN completes it; the queued data then goes.
    let o = recv_ack(&mut c, 2 * MS, LOCAL_SEQ);
    assert!(o.established);
    assert_eq!(c.state(), State::Established);
    assert!(c.sack_ok() && c.ts_ok() && c.snd_shift() == 7);
    let segs = send_all(&mut c, 2 * MS);
    assert_eq!(segs, [out(LOCAL_SEQ, 50, false)]);
}

#[test]
fn the_client_closes_first_fin_wait_to_time_wait() {
    let mut c = established_client(NO_OPTIONS);
    c.queue(40); // the request
    c.close();
    let segs = send_all(&mut c, 4 * MS);
    assert_eq!(segs, [out(LOCAL_SEQ, 40, true)]);
    assert_eq!(c.state(), State::FinWait1);
    recv_ack(&mut c, 5 * MS, LOCAL_SEQ + 41);
    assert_eq!(c.state(), State::FinWait2);
    // The response, then the server's FIN.
    let o = recv(
        &mut c,
        6 * MS,
        ParsedRepr {
            ack_number: Some(LOCAL_SEQ + 41),
            payload: data(100),
            ..RECV_TEMPL
        },
    );
    assert_eq!(o.deliver, Some((0, 100)));
    let o = recv(
        &mut c,
        7 * MS,
        ParsedRepr {
            seq_number: REMOTE_SEQ + 100,
            ack_number: Some(LOCAL_SEQ + 41),
            flags: FIN_ACK,
            ..RECV_TEMPL
        },
    );
    assert!(o.fin);
    assert_eq!(o.reply, Reply::Ack, "the last ACK goes at once");
    assert_eq!(c.state(), State::TimeWait);
    assert!(
        c.state().is_done(),
        "TIME-WAIT is not held: the TCB is freed"
    );
}

#[test]
fn the_server_closes_first_close_wait_to_closed() {
    let mut c = established_client(NO_OPTIONS);
    c.queue(40);
    send_all(&mut c, 4 * MS);
    // Response and FIN in one segment (`Connection: close`).
    let o = recv(
        &mut c,
        5 * MS,
        ParsedRepr {
            ack_number: Some(LOCAL_SEQ + 40),
            flags: FIN_ACK,
            payload: data(200),
            ..RECV_TEMPL
        },
    );
    assert_eq!(o.deliver, Some((0, 200)));
    assert!(o.fin);
    assert_eq!(c.state(), State::CloseWait);
    c.close();
    let segs = send_all(&mut c, 5 * MS);
    assert_eq!(segs, [out(LOCAL_SEQ + 40, 0, true)]);
    assert_eq!(c.state(), State::LastAck);
    recv(
        &mut c,
        6 * MS,
        ParsedRepr {
            seq_number: REMOTE_SEQ + 201,
            ack_number: Some(LOCAL_SEQ + 41),
            ..RECV_TEMPL
        },
    );
    assert_eq!(c.state(), State::Closed);
}

#[test]
fn a_syn_in_established_after_connect_gets_a_challenge_ack() {
    let mut c = established_client(NO_OPTIONS);
    // A retransmitted SYN-ACK (our ACK of it was lost) is answered with an ACK.
    let o = c.input(&syn_ack_with(NO_OPTIONS), 10 * MS, RX);
    assert!(o.challenge_ack);
    assert_eq!(o.reply, Reply::Ack);
    assert_eq!(c.state(), State::Established);
}
