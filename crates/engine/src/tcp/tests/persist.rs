//! Zero windows (RFC 9293 §3.8.6.1): data held back by a closed window arms the persist
//! timer; it sends a one-octet probe at SND.UNA with exponential backoff, never counted as
//! a retry (only the stall bound ends a window that stays closed); the peer may refuse or
//! take the octet; a reopened window resumes sending from SND.UNA.

use super::*;
use crate::tcp::output::TimerAction;
use crate::tcp::timer::Timer;

/// The RTO, and so the first persist interval, after the helpers' handshake: its RTT
/// sample of 0 puts it at the 200 ms floor.
const RTO: u64 = 200 * MS;

const PROBE: Segment = Segment {
    seq: LOCAL_SEQ,
    len: 1,
    syn: false,
    fin: false,
    probe: true,
};

/// Established with a zero window and 1000 bytes queued; the persist timer armed at 0.
fn closed_window() -> Connection {
    let mut c = established_with(&SYN_TEMPL, 0);
    c.queue(1000);
    assert_eq!(c.next_segment(0, 0), None);
    c
}

#[test]
fn a_zero_window_arms_the_persist_timer() {
    let mut c = established_with(&SYN_TEMPL, 0);
    assert_eq!(c.snd_wnd(), 0);
    c.queue(1000);
    assert_eq!(c.next_segment(5 * MS, 0), None);
    assert_eq!(c.timer(), Timer::Persist { at: 5 * MS + RTO });
    // Asking again does not push the deadline back.
    assert_eq!(c.next_segment(100 * MS, 65_535), None);
    assert_eq!(c.timer(), Timer::Persist { at: 5 * MS + RTO });
}

#[test]
fn no_persist_timer_without_data() {
    let mut c = established_with(&SYN_TEMPL, 0);
    assert_eq!(c.next_segment(0, 0), None);
    assert_eq!(c.timer(), Timer::Idle);
}

#[test]
fn the_probe_is_one_octet_at_snd_una() {
    let mut c = closed_window();
    assert_eq!(c.on_timer(RTO - 1, STALL, RETRIES), TimerAction::None);
    assert_eq!(c.on_timer(RTO, STALL, RETRIES), TimerAction::Probe(PROBE));
    assert_eq!(c.timer(), Timer::Persist { at: 3 * RTO });
    c.on_sent(&PROBE, RTO);
    assert_eq!(c.snd_nxt(), LOCAL_SEQ, "a probe does not advance SND.NXT");
    assert_eq!(c.snd_max(), LOCAL_SEQ + 1);
    assert_eq!(c.flight(), 0);
    assert_eq!(c.timer(), Timer::Persist { at: 3 * RTO });
    let h = c.header(&PROBE, LOCAL_PORT, REMOTE_PORT, RX, 0);
    assert_eq!(h.seq_number, LOCAL_SEQ);
    assert!(h.flags.psh && !h.flags.fin);
}

#[test]
fn probes_back_off_to_the_rto_cap() {
    let mut c = closed_window();
    let mut now = RTO;
    for next_ms in [
        400, 800, 1600, 3200, 6400, 12_800, 25_600, 51_200, 60_000, 60_000,
    ] {
        assert_eq!(
            c.on_timer(now, 10 * 60 * SEC, RETRIES),
            TimerAction::Probe(PROBE)
        );
        c.on_sent(&PROBE, now);
        now += next_ms * MS;
        assert_eq!(c.timer(), Timer::Persist { at: now });
    }
}

#[test]
fn probes_are_not_retries() {
    let mut c = closed_window();
    let mut now = RTO;
    for _ in 0..12 {
        let a = c.on_timer(now, 1_000_000 * SEC, 1);
        assert_eq!(a, TimerAction::Probe(PROBE));
        c.on_sent(&PROBE, now);
        // The peer answers, refusing the octet: not progress, not a loss.
        recv_ack_wnd(&mut c, now + MS, LOCAL_SEQ, 0);
        now = c.timer().deadline().unwrap();
    }
    assert_eq!(c.retries(), 0);
    assert_eq!(c.congestion().cwnd, 14_600, "no loss response");
    assert_eq!(c.congestion().dupacks, 0);
}

#[test]
fn a_window_that_stays_closed_meets_the_stall_bound() {
    let mut c = closed_window();
    let stall = 10 * SEC;
    assert_eq!(c.on_timer(RTO, stall, RETRIES), TimerAction::Probe(PROBE));
    c.on_sent(&PROBE, RTO);
    recv_ack_wnd(&mut c, RTO + MS, LOCAL_SEQ, 0);
    assert_eq!(
        c.on_timer(3 * RTO, stall, RETRIES),
        TimerAction::Probe(PROBE)
    );
    assert_eq!(
        c.on_timer(stall, stall, RETRIES),
        TimerAction::Abort { seq: LOCAL_SEQ }
    );
}

#[test]
fn a_peer_may_take_the_probe_octet() {
    let mut c = closed_window();
    let rtt = *c.rtt();
    c.on_timer(RTO, STALL, RETRIES);
    c.on_sent(&PROBE, RTO);
    let o = recv_ack_wnd(&mut c, RTO + 10 * MS, LOCAL_SEQ + 1, 0);
    assert_eq!(o.acked, 1);
    assert_eq!((c.snd_una(), c.snd_nxt()), (LOCAL_SEQ + 1, LOCAL_SEQ + 1));
    assert_eq!(
        (c.rtt().srtt_us, c.rtt().rttvar_us),
        (rtt.srtt_us, rtt.rttvar_us),
        "a probe is not timed"
    );
    assert_eq!(c.last_heard_ns(), RTO + 10 * MS);
    // Still closed: the persist timer comes back (with the backed-off interval).
    assert_eq!(c.next_segment(RTO + 10 * MS, 0), None);
    assert_eq!(
        c.timer(),
        Timer::Persist {
            at: 3 * RTO + 10 * MS
        }
    );
    assert_eq!(
        c.on_timer(3 * RTO + 10 * MS, STALL, RETRIES),
        TimerAction::Probe(Segment {
            seq: LOCAL_SEQ + 1,
            ..PROBE
        })
    );
}

#[test]
fn a_reopened_window_resumes_from_snd_una() {
    let mut c = closed_window();
    c.on_timer(RTO, STALL, RETRIES);
    c.on_sent(&PROBE, RTO);
    // The peer refused the probe octet, then opens its window.
    recv_ack_wnd(&mut c, RTO + MS, LOCAL_SEQ, 0);
    recv_ack_wnd(&mut c, 2 * RTO, LOCAL_SEQ, 65_535);
    assert_eq!(c.snd_wnd(), 65_535);
    assert_eq!(
        send_all(&mut c, 2 * RTO),
        [out(LOCAL_SEQ, 1000, false)],
        "the probe octet goes again inside a full segment"
    );
    assert_eq!(c.snd_nxt(), LOCAL_SEQ + 1000);
}

#[test]
fn a_window_closing_with_data_in_flight_turns_the_rto_into_probes() {
    let mut c = established();
    c.queue(10_000);
    send_all(&mut c, 0);
    recv_ack_wnd(&mut c, 100 * MS, LOCAL_SEQ + 1460, 0);
    assert_eq!(c.flight(), 10_000 - 1460);
    assert_eq!(c.next_segment(100 * MS, 0), None);
    // The retransmission timer is running, so it is what fires, as a probe.
    let rto = c.rtt().rto_ns();
    assert_eq!(c.timer(), Timer::Retransmit { at: 100 * MS + rto });
    let a = c.on_timer(100 * MS + rto, STALL, RETRIES);
    assert_eq!(
        a,
        TimerAction::Probe(Segment {
            seq: LOCAL_SEQ + 1460,
            ..PROBE
        })
    );
    assert_eq!(
        c.snd_nxt(),
        LOCAL_SEQ + 1460,
        "what was sent goes again later"
    );
    assert_eq!(c.retries(), 0);
    assert_eq!(c.congestion().cwnd, 14_600 + 1460, "no loss response");
}

#[test]
fn a_bare_fin_goes_out_into_a_zero_window() {
    let mut c = established_with(&SYN_TEMPL, 0);
    c.close();
    assert_eq!(send_all(&mut c, 0), [out(LOCAL_SEQ, 0, true)]);
    assert_eq!(c.state(), State::FinWait1);
}

#[test]
fn data_after_a_reopened_window_is_under_the_retransmission_timer() {
    // Found by this suite: data sent after a window update ran under the old persist
    // deadline and met a spurious timeout (RFC 6298 §5.1).
    let mut c = closed_window();
    assert_eq!(c.on_timer(RTO, STALL, RETRIES), TimerAction::Probe(PROBE));
    c.on_sent(&PROBE, RTO);
    assert_eq!(c.timer(), Timer::Persist { at: 3 * RTO });
    recv_ack_wnd(&mut c, 3 * RTO - 20 * MS, LOCAL_SEQ, 65_535);
    assert_eq!(
        send_all(&mut c, 3 * RTO - 20 * MS),
        [out(LOCAL_SEQ, 1000, false)]
    );
    assert_eq!(
        c.timer(),
        Timer::Retransmit {
            at: 3 * RTO - 20 * MS + c.rtt().rto_ns()
        }
    );
    assert_eq!(c.on_timer(3 * RTO, STALL, RETRIES), TimerAction::None);
}
