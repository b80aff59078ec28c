//! Retransmission (RFC 6298): the initial RTO of 1 s (a handshake without a sample) or the
//! one the handshake's sample gives, samples from the ACK of the timed octets (the first
//! MSS of new octets past SND.MAX, one sample at a time) smoothed to the nearest µs,
//! Karn's rule, the 200 ms floor and 60 s cap, backoff, the timer re-armed by new ACKs and
//! stopped when all is acknowledged, go-back-N on expiry with the RFC 5681 loss window and
//! CUBIC's ssthresh, the FIN sent again, and the two aborts (retries, stall).
//!
//! Most tests start from a handshake that gave no sample ([`established_unsampled`]), so
//! that a data sample is the first one and the RTO starts at 1 s.

use super::*;
use crate::tcp::output::TimerAction;
use crate::tcp::rtt::{RTO_MAX_MS, RTO_MIN_MS};
use crate::tcp::timer::Timer;

/// Established without an RTT sample (RTO 1 s), cwnd three segments, 4380 bytes (three
/// segments) in flight sent at time 0 and 10 000 queued.
fn three_in_flight() -> Connection {
    let mut c = established_unsampled();
    set_cwnd(&mut c, 3 * 1460);
    c.queue(10_000);
    assert_eq!(send_all(&mut c, 0).len(), 3);
    c
}

#[test]
fn without_a_handshake_sample_the_initial_rto_is_one_second() {
    let mut c = established_unsampled();
    c.queue(100);
    send_all(&mut c, 5 * MS);
    assert_eq!(c.timer(), Timer::Retransmit { at: 5 * MS + SEC });
    assert!(c.rtt().timing());
    assert_eq!(
        c.on_timer(5 * MS + SEC - 1, STALL, RETRIES),
        TimerAction::None
    );
}

#[test]
fn after_the_handshakes_sample_data_runs_under_the_measured_rto() {
    // The handshake's sample (an ACK at once: 1 µs) puts the RTO at its floor.
    let mut c = established();
    c.queue(100);
    send_all(&mut c, 5 * MS);
    assert_eq!(
        c.timer(),
        Timer::Retransmit {
            at: 5 * MS + u64::from(RTO_MIN_MS) * MS
        }
    );
    assert!(c.rtt().timing());
    assert_eq!(
        c.on_timer(5 * MS + 200 * MS - 1, STALL, RETRIES),
        TimerAction::None
    );
    assert_eq!(
        c.on_timer(5 * MS + 200 * MS, STALL, RETRIES),
        TimerAction::Retransmit
    );
}

#[test]
fn the_first_sample_sets_srtt_and_rttvar() {
    let mut c = established_unsampled();
    c.queue(100);
    send_all(&mut c, 0);
    let o = recv_ack(&mut c, 100 * MS, LOCAL_SEQ + 100);
    assert_eq!(o.acked, 100);
    let r = c.rtt();
    assert_eq!((r.srtt_us, r.rttvar_us, r.rto_ms), (100_000, 50_000, 300));
    assert!(!r.timing());
    assert_eq!(c.timer(), Timer::Idle, "all acknowledged: the timer stops");
}

#[test]
fn a_data_sample_is_smoothed_into_the_handshakes() {
    // SRTT 1 µs and RTTVAR 0 from the handshake; a 100 ms sample: SRTT + (R − SRTT)/8 =
    // 12 500.875 and RTTVAR + (|SRTT − R| − RTTVAR)/4 = 24 999.75, rounded to nearest.
    let mut c = established();
    c.queue(100);
    send_all(&mut c, 0);
    recv_ack(&mut c, 100 * MS, LOCAL_SEQ + 100);
    let r = c.rtt();
    assert_eq!((r.srtt_us, r.rttvar_us), (12_501, 25_000));
    assert_eq!(r.rto_ms, RTO_MIN_MS, "112.5 ms, floored");
}

#[test]
fn a_new_ack_rearms_the_timer_with_the_current_rto() {
    let mut c = three_in_flight();
    recv_ack(&mut c, 100 * MS, LOCAL_SEQ + 1460);
    assert_eq!(c.rtt().rto_ms, 300);
    assert_eq!(c.timer(), Timer::Retransmit { at: 400 * MS });
    // A duplicate ACK does not re-arm it.
    recv_ack(&mut c, 150 * MS, LOCAL_SEQ + 1460);
    assert_eq!(c.timer(), Timer::Retransmit { at: 400 * MS });
}

#[test]
fn sending_more_does_not_restart_a_running_timer() {
    let mut c = established();
    set_cwnd(&mut c, 1460);
    c.queue(10_000);
    send_all(&mut c, 0);
    set_cwnd(&mut c, 2920);
    send_all(&mut c, 50 * MS);
    assert_eq!(c.flight(), 2920);
    assert_eq!(c.timer(), Timer::Retransmit { at: 200 * MS });
}

#[test]
fn only_one_segment_is_timed_at_a_time() {
    let mut c = established_unsampled();
    c.queue(10_000);
    let s1 = send_one(&mut c, 0);
    let s2 = send_one(&mut c, 10 * MS);
    assert_eq!((s1.seq, s2.seq), (LOCAL_SEQ, LOCAL_SEQ + 1460));
    // The ACK of both ends the first one's timing: 80 ms, not 70.
    recv_ack(&mut c, 80 * MS, LOCAL_SEQ + 2920);
    assert_eq!(c.rtt().srtt_us, 80_000);
    // The next new segment starts a new sample.
    assert!(!c.rtt().timing());
    send_one(&mut c, 90 * MS);
    assert!(c.rtt().timing());
    recv_ack(&mut c, 130 * MS, LOCAL_SEQ + 4380);
    // srtt = 7/8 * 80 + 1/8 * 40 = 75 ms.
    assert_eq!(c.rtt().srtt_us, 75_000);
}

#[test]
fn an_ack_short_of_the_timed_octets_gives_no_sample() {
    let mut c = three_in_flight();
    recv_ack(&mut c, 50 * MS, LOCAL_SEQ + 1000);
    assert_eq!(c.rtt().srtt_us, 0);
    assert!(c.rtt().timing());
    recv_ack(&mut c, 60 * MS, LOCAL_SEQ + 1460);
    assert_eq!(c.rtt().srtt_us, 60_000);
}

#[test]
fn an_offloaded_frame_is_timed_on_its_first_segment() {
    let mut c = established_unsampled();
    c.queue(4380);
    assert_eq!(
        send_all_max(&mut c, 0, 65_535),
        [out(LOCAL_SEQ, 4380, false)]
    );
    recv_ack(&mut c, 30 * MS, LOCAL_SEQ + 1459);
    assert_eq!(c.rtt().srtt_us, 0);
    recv_ack(&mut c, 50 * MS, LOCAL_SEQ + 1460);
    assert_eq!(
        c.rtt().srtt_us,
        50_000,
        "one MSS of the frame, not all of it"
    );
}

#[test]
fn karn_no_sample_from_retransmitted_data() {
    let mut c = three_in_flight();
    assert_eq!(c.on_timer(SEC, STALL, RETRIES), TimerAction::Retransmit);
    assert!(!c.rtt().timing());
    assert_eq!(send_all(&mut c, SEC), [out(LOCAL_SEQ, 1460, false)]);
    assert!(!c.rtt().timing(), "a retransmission is never timed");
    recv_ack(&mut c, SEC + 10 * MS, LOCAL_SEQ + 1460);
    assert_eq!(c.rtt().srtt_us, 0);
    assert_eq!(
        c.rtt().rto_ms,
        2000,
        "the backed-off RTO stays until a valid sample"
    );
    // Nothing in flight until the owner sends again (go-back-N resends the rest).
    assert_eq!(c.timer(), Timer::Idle);
    send_all(&mut c, SEC + 10 * MS);
    assert_eq!(
        c.timer(),
        Timer::Retransmit {
            at: 3 * SEC + 10 * MS
        }
    );
}

#[test]
fn timing_restarts_only_with_new_octets_past_snd_max() {
    let mut c = three_in_flight();
    c.on_timer(SEC, STALL, RETRIES);
    send_all(&mut c, SEC);
    recv_ack(&mut c, 1100 * MS, LOCAL_SEQ + 1460);
    assert_eq!(c.congestion().cwnd, 2920);
    // Two segments, both sent before (SND.MAX is LOCAL_SEQ + 4380): not timed.
    assert_eq!(
        send_all(&mut c, 1100 * MS),
        [
            out(LOCAL_SEQ + 1460, 1460, false),
            out(LOCAL_SEQ + 2920, 1460, false)
        ]
    );
    assert!(!c.rtt().timing());
    recv_ack(&mut c, 1200 * MS, LOCAL_SEQ + 4380);
    // New octets: timed.
    let s = send_one(&mut c, 1200 * MS);
    assert_eq!(s.seq, LOCAL_SEQ + 4380);
    assert!(c.rtt().timing());
    recv_ack(&mut c, 1220 * MS, LOCAL_SEQ + 5840);
    assert_eq!(c.rtt().srtt_us, 20_000);
    assert_eq!(
        c.rtt().rto_ms,
        RTO_MIN_MS,
        "20 + 4 * 10 ms, floored at 200 ms"
    );
}

#[test]
fn a_frame_straddling_snd_max_is_timed_from_snd_max() {
    let mut c = established_unsampled();
    set_cwnd(&mut c, 2920);
    c.queue(10_000);
    send_all(&mut c, 0);
    assert_eq!(c.snd_max(), LOCAL_SEQ + 2920);
    assert_eq!(c.on_timer(SEC, STALL, RETRIES), TimerAction::Retransmit);
    set_cwnd(&mut c, 10_000);
    // One frame from SND.UNA: 2920 old octets, then new ones from SND.MAX.
    assert_eq!(
        send_all_max(&mut c, SEC, 65_535),
        [out(LOCAL_SEQ, 10_000, false)]
    );
    assert!(c.rtt().timing());
    recv_ack(&mut c, SEC + 30 * MS, LOCAL_SEQ + 4379);
    assert_eq!(c.rtt().srtt_us, 0, "the timed octets end at SND.MAX + MSS");
    recv_ack(&mut c, SEC + 50 * MS, LOCAL_SEQ + 4380);
    assert_eq!(c.rtt().srtt_us, 50_000);
}

#[test]
fn the_rto_has_a_floor_of_200_ms() {
    let mut c = three_in_flight();
    recv_ack(&mut c, MS, LOCAL_SEQ + 1460);
    assert_eq!(c.rtt().srtt_us, 1000);
    assert_eq!(c.rtt().rto_ms, RTO_MIN_MS);
    assert_eq!(c.timer(), Timer::Retransmit { at: MS + 200 * MS });
}

#[test]
fn the_rto_backs_off_to_a_cap_of_60_s() {
    let mut c = three_in_flight();
    let mut now = SEC;
    for rto_s in [2, 4, 8, 16, 32, 60, 60, 60] {
        assert_eq!(c.on_timer(now, 10 * 60 * SEC, 20), TimerAction::Retransmit);
        assert_eq!(c.rtt().rto_ms, rto_s * 1000);
        assert_eq!(
            c.timer(),
            Timer::Retransmit {
                at: now + u64::from(rto_s) * SEC
            }
        );
        assert_eq!(send_all(&mut c, now), [out(LOCAL_SEQ, 1460, false)]);
        now += u64::from(rto_s) * SEC;
    }
    assert_eq!(c.rtt().rto_ms, RTO_MAX_MS);
    assert_eq!(c.retries(), 8);
}

#[test]
fn rto_expiry_goes_back_to_snd_una() {
    let mut c = established();
    set_cwnd(&mut c, 20 * 1460);
    c.queue(100_000);
    send_all(&mut c, 0);
    assert_eq!(c.flight(), 29_200);
    let rto = 200 * MS;
    assert_eq!(c.on_timer(rto - 1, STALL, RETRIES), TimerAction::None);
    assert_eq!(c.on_timer(rto, STALL, RETRIES), TimerAction::Retransmit);
    assert_eq!(c.snd_nxt(), LOCAL_SEQ, "go-back-N");
    assert_eq!(c.snd_max(), LOCAL_SEQ + 29_200);
    let cc = c.congestion();
    assert_eq!(cc.cwnd, 1460, "RFC 5681 §3.1: loss window of one segment");
    assert_eq!(cc.ssthresh, 20_440, "RFC 9438 §4.8: β_cubic · flight");
    assert_eq!(cc.recover, LOCAL_SEQ + 29_200);
    assert_eq!(c.retries(), 1);
    assert_eq!(c.timer(), Timer::Retransmit { at: rto + 2 * rto });
    assert_eq!(send_all(&mut c, rto), [out(LOCAL_SEQ, 1460, false)]);
}

#[test]
fn the_loss_ssthresh_is_at_least_two_segments() {
    let mut c = established();
    c.queue(1000);
    send_all(&mut c, 0);
    c.on_timer(SEC, STALL, RETRIES);
    assert_eq!(c.congestion().ssthresh, 2920);
    assert_eq!(c.congestion().cwnd, 1460);
}

#[test]
fn the_fin_goes_again_after_a_timeout() {
    let mut c = established();
    c.queue(100);
    c.close();
    send_all(&mut c, 0);
    assert_eq!(c.state(), State::FinWait1);
    assert_eq!(c.on_timer(SEC, STALL, RETRIES), TimerAction::Retransmit);
    assert_eq!(c.snd_nxt(), LOCAL_SEQ);
    assert_eq!(send_all(&mut c, SEC), [out(LOCAL_SEQ, 100, true)]);
    assert_eq!(c.state(), State::FinWait1);
    assert_eq!(c.snd_nxt(), LOCAL_SEQ + 101);
    recv_ack(&mut c, SEC + MS, LOCAL_SEQ + 101);
    assert_eq!(c.state(), State::FinWait2);
}

#[test]
fn a_late_ack_of_the_first_transmission_moves_snd_nxt_forward() {
    let mut c = three_in_flight();
    c.on_timer(SEC, STALL, RETRIES);
    send_all(&mut c, SEC);
    assert_eq!(c.snd_nxt(), LOCAL_SEQ + 1460);
    // The original segments got through after all.
    let o = recv_ack(&mut c, SEC + MS, LOCAL_SEQ + 4380);
    assert_eq!(o.acked, 4380);
    assert_eq!(o.reply, crate::tcp::conn::Reply::None);
    assert_eq!(
        (c.snd_una(), c.snd_nxt()),
        (LOCAL_SEQ + 4380, LOCAL_SEQ + 4380)
    );
    assert_eq!(c.flight(), 0);
    assert_eq!(c.timer(), Timer::Idle);
    assert_eq!(c.retries(), 0, "progress resets the retry count");
    assert_eq!(send_one(&mut c, SEC + MS).seq, LOCAL_SEQ + 4380);
}

#[test]
fn max_retries_aborts_with_a_rst_at_snd_nxt() {
    let mut c = three_in_flight();
    assert_eq!(c.on_timer(SEC, STALL, 2), TimerAction::Retransmit);
    send_all(&mut c, SEC);
    assert_eq!(c.on_timer(3 * SEC, STALL, 2), TimerAction::Retransmit);
    send_all(&mut c, 3 * SEC);
    assert_eq!(c.retries(), 2);
    assert_eq!(
        c.on_timer(7 * SEC, STALL, 2),
        TimerAction::Abort {
            seq: LOCAL_SEQ + 1460
        }
    );
}

#[test]
fn progress_resets_the_retry_count() {
    let mut c = three_in_flight();
    c.on_timer(SEC, STALL, RETRIES);
    send_all(&mut c, SEC);
    assert_eq!(c.retries(), 1);
    recv_ack(&mut c, SEC + MS, LOCAL_SEQ + 1460);
    assert_eq!(c.retries(), 0);
}

#[test]
fn a_timer_expiring_with_nothing_in_flight_disarms() {
    let mut c = three_in_flight();
    assert_eq!(c.on_timer(SEC, STALL, RETRIES), TimerAction::Retransmit);
    // The owner could not send (ring full): SND.NXT is still at SND.UNA.
    assert_eq!(c.flight(), 0);
    assert_eq!(c.on_timer(3 * SEC, STALL, RETRIES), TimerAction::None);
    assert_eq!(c.timer(), Timer::Idle);
    assert_eq!(c.retries(), 1);
}

#[test]
fn a_silent_peer_is_cut_off_after_the_stall_bound() {
    let mut c = three_in_flight();
    let stall = 5 * SEC;
    assert_eq!(c.on_timer(SEC, stall, RETRIES), TimerAction::Retransmit);
    send_all(&mut c, SEC);
    assert_eq!(c.on_timer(3 * SEC, stall, RETRIES), TimerAction::Retransmit);
    send_all(&mut c, 3 * SEC);
    assert_eq!(c.on_timer(5 * SEC - 1, stall, RETRIES), TimerAction::None);
    assert_eq!(
        c.on_timer(5 * SEC, stall, RETRIES),
        TimerAction::Abort {
            seq: LOCAL_SEQ + 1460
        }
    );
}

#[test]
fn progress_postpones_the_stall_abort() {
    let mut c = three_in_flight();
    recv_ack(&mut c, 50 * SEC, LOCAL_SEQ + 1460);
    assert_ne!(
        c.on_timer(60 * SEC, STALL, RETRIES),
        TimerAction::Abort { seq: c.snd_nxt() }
    );
    assert!(matches!(
        c.on_timer(110 * SEC, STALL, RETRIES),
        TimerAction::Abort { .. }
    ));
}

#[test]
fn fin_wait_2_is_cut_off_after_the_stall_bound() {
    let mut c = established();
    c.close();
    send_all(&mut c, 0);
    recv_ack(&mut c, SEC, LOCAL_SEQ + 1);
    assert_eq!(c.state(), State::FinWait2);
    assert_eq!(
        c.on_timer(SEC + STALL - 1, STALL, RETRIES),
        TimerAction::None
    );
    assert_eq!(
        c.on_timer(SEC + STALL, STALL, RETRIES),
        TimerAction::Abort { seq: LOCAL_SEQ + 1 }
    );
}

#[test]
fn a_sample_after_a_timeout_replaces_the_backed_off_rto() {
    let mut c = three_in_flight();
    c.on_timer(SEC, STALL, RETRIES);
    c.on_timer(3 * SEC, STALL, RETRIES); // nothing in flight: disarms, no backoff
    send_all(&mut c, 3 * SEC);
    assert_eq!(c.rtt().rto_ms, 2000);
    // Everything up to SND.MAX acknowledged; new data is timed.
    recv_ack(&mut c, 3 * SEC + MS, LOCAL_SEQ + 4380);
    send_one(&mut c, 4 * SEC);
    recv_ack(&mut c, 4 * SEC + 100 * MS, LOCAL_SEQ + 5840);
    assert_eq!(c.rtt().rto_ms, 300);
}
