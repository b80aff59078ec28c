//! Unit tests of the window arithmetic: slow start, CUBIC, NewReno, PRR.

use super::*;

const MSS: u32 = 1000;
const MS: u64 = 1_000_000;

#[test]
fn integer_cube_root() {
    for x in [0u64, 1, 7, 8, 26, 27, 1000, 999_999, 1_000_000, u64::MAX] {
        let r = icbrt(x);
        assert!(r * r * r <= x, "{x}: {r}");
        let r1 = r + 1;
        assert!(
            r1.checked_mul(r1)
                .and_then(|v| v.checked_mul(r1))
                .is_none_or(|v| v > x),
            "{x}: {r}"
        );
    }
    assert_eq!(icbrt(27), 3);
    assert_eq!(icbrt(2_500_000_000), 1357); // ∛(2.5·10⁹): K of one segment, in ms
}

#[test]
fn initial_window_by_mss() {
    assert_eq!(initial_window(536), 5360);
    assert_eq!(initial_window(1448), 14_480);
    assert_eq!(initial_window(1460), 14_600);
    assert_eq!(initial_window(4000), 14_600);
    assert_eq!(initial_window(8000), 16_000);
}

#[test]
fn slow_start_counts_a_stretch_ack_whole_up_to_ssthresh() {
    let mut c = Congestion::new(MSS, 0, Algorithm::Cubic);
    assert_eq!(c.cwnd, 10 * MSS);
    c.on_new_ack(5 * MSS, 5000, 0, MSS, false, 0, 100);
    assert_eq!(
        c.cwnd,
        15 * MSS,
        "every byte acknowledged, as Linux (no L = 2)"
    );
    c.on_new_ack(MSS, 6000, 0, MSS, false, 0, 100);
    assert_eq!(c.cwnd, 16 * MSS);
    c.ssthresh = 20 * MSS;
    c.on_new_ack(10 * MSS, 16_000, 0, MSS, false, 0, 100);
    assert_eq!(c.cwnd, 20 * MSS, "slow start stops at ssthresh");
}

#[test]
fn a_loss_keeps_seven_tenths_of_the_flight() {
    assert_eq!(loss_ssthresh(10_000, MSS), 7000);
    assert_eq!(loss_ssthresh(1000, MSS), 2000, "at least two segments");
    let mut c = Congestion::new(MSS, 0, Algorithm::Cubic);
    c.cwnd = 20 * MSS;
    assert!(c.enter_recovery(100, 20 * MSS, 20_100, MSS, true));
    assert_eq!((c.ssthresh, c.cwnd), (14 * MSS, 14 * MSS));
    assert_eq!(
        (c.cubic().unwrap().w_max, c.cubic().unwrap().cwnd_prior),
        (20 * MSS, 20 * MSS)
    );
    assert_eq!(c.prr().unwrap().recover_fs, 20 * MSS);
}

#[test]
fn fast_convergence_lowers_w_max_when_the_window_shrinks() {
    let mut c = Congestion::new(MSS, 0, Algorithm::Cubic);
    c.cwnd = 20 * MSS;
    c.enter_recovery(0, 20 * MSS, 20_000, MSS, true);
    c.on_new_ack(20 * MSS, 20_000, 0, MSS, true, 0, 100); // full ACK: out of recovery
    c.cwnd = 10 * MSS; // below the last W_max at the next loss
    c.enter_recovery(20_000, 10 * MSS, 30_000, MSS, true);
    assert_eq!(c.cubic().unwrap().w_max, 8500, "W_max · (1 + β)/2");
}

/// A connection out of a recovery from W_max = 100 segments, in congestion avoidance at
/// ssthresh = 70.
fn after_loss() -> Congestion {
    let mut c = Congestion::new(MSS, 0, Algorithm::Cubic);
    c.cwnd = 100 * MSS;
    c.enter_recovery(0, 100 * MSS, 100_000, MSS, true);
    c.on_new_ack(100 * MSS, 100_000, 0, MSS, true, 0, 0);
    assert_eq!(c.cwnd, 70 * MSS);
    c
}

#[test]
fn cubic_returns_to_w_max_after_k() {
    // K = ∛(30 segments / 0.4) s = 4.217 s.
    let mut c = after_loss();
    let mut now = 1;
    let mut ack = 100_000u32;
    // One ACK of a segment every 10 ms with a 10 ms RTT for 4.2 s: concave growth that
    // levels off just below W_max.
    while now < 4_200 * MS {
        ack += MSS;
        c.on_new_ack(MSS, ack, 0, MSS, false, now, 10_000);
        now += 10 * MS;
    }
    assert_eq!(c.cubic().unwrap().k_ms, 4217);
    assert!(c.cwnd > 97 * MSS && c.cwnd <= 100 * MSS, "{}", c.cwnd);
    // Beyond K the window grows past W_max (convex region).
    while now < 8_000 * MS {
        ack += MSS;
        c.on_new_ack(MSS, ack, 0, MSS, false, now, 10_000);
        now += 10 * MS;
    }
    assert!(c.cwnd > 110 * MSS, "{}", c.cwnd);
}

#[test]
fn at_a_short_rtt_cubic_grows_like_reno_friendly_aimd() {
    // 100 µs RTT: in 10 ms of ACKs the cubic curve barely moves, W_est (α = 0.529 segment
    // per window) leads.
    let mut c = after_loss();
    let mut ack = 100_000u32;
    let start = c.cwnd;
    let mut now = 1;
    let mut acked = 0;
    while acked < 10 * start {
        ack += MSS;
        c.on_new_ack(MSS, ack, 0, MSS, false, now, 100);
        acked += MSS;
        now += 10_000; // 10 µs per ACK
    }
    let grown = c.cwnd - start;
    // About ten windows acknowledged: 10 · 0.529 segments.
    assert!((5 * MSS..6 * MSS).contains(&grown), "{grown}");
}

#[test]
fn growth_is_at_most_half_a_segment_per_segment_acked() {
    // Long after the epoch (W_cubic far above) the target is capped at 1.5·cwnd.
    let mut c = after_loss();
    c.on_new_ack(MSS, 101_000, 0, MSS, false, 1, 100);
    let before = c.cwnd;
    c.on_new_ack(MSS, 102_000, 0, MSS, false, 1_000_000 * MS, 100);
    assert!(
        (MSS / 2 - 1..=MSS / 2).contains(&(c.cwnd - before)),
        "{}",
        c.cwnd - before
    );
}

#[test]
fn an_idle_spell_shifts_the_epoch() {
    let mut c = after_loss();
    c.on_sent(MSS, 10 * MS, false, false, 0, 0);
    c.on_new_ack(MSS, 101_000, 0, MSS, false, 10 * MS, 100);
    let epoch = c.cubic().unwrap().epoch_ns;
    assert_eq!(epoch, 10 * MS);
    // Nothing in flight from 10 ms to 2 s: the curve resumes where it was.
    c.on_sent(MSS, 2000 * MS, true, false, 0, 0);
    assert_eq!(c.cubic().unwrap().epoch_ns, epoch + 1990 * MS);
}

#[test]
fn a_timeout_leaves_one_segment_and_a_fresh_curve() {
    let mut c = Congestion::new(MSS, 0, Algorithm::Cubic);
    c.cwnd = 20 * MSS;
    c.on_timeout(20 * MSS, 20_000, MSS);
    assert_eq!(
        (c.cwnd, c.ssthresh, c.cubic().unwrap().w_max),
        (MSS, 14 * MSS, 0)
    );
    assert_eq!(c.recover, 20_000);
}

#[test]
fn three_dup_acks_enter_newreno_recovery_once() {
    let mut c = Congestion::new(MSS, 0, Algorithm::Cubic);
    for _ in 0..2 {
        assert_eq!(c.on_dup_ack(100, 8000, 8100, MSS, false), Verdict::Continue);
    }
    assert_eq!(
        c.on_dup_ack(100, 8000, 8100, MSS, false),
        Verdict::Retransmit
    );
    assert!(c.in_recovery);
    // ssthresh = 0.7 · 8000 = 5600, cwnd inflated by the three duplicates.
    assert_eq!((c.ssthresh, c.cwnd, c.recover), (5600, 8600, 8100));
    assert_eq!(c.on_dup_ack(100, 8000, 8100, MSS, false), Verdict::Continue);
    assert_eq!(c.cwnd, 9600, "inflation by one MSS per further duplicate");
    // Partial ACK: retransmit, deflate.
    assert_eq!(
        c.on_new_ack(1000, 1100, 7000, MSS, false, 0, 0),
        Verdict::Retransmit
    );
    assert_eq!(c.cwnd, 9600);
    // Full ACK: out of recovery, cwnd = min(ssthresh, flight + mss).
    assert_eq!(
        c.on_new_ack(7000, 8100, 0, MSS, false, 0, 0),
        Verdict::Continue
    );
    assert!(!c.in_recovery);
    assert_eq!(c.cwnd, 2000);
}

#[test]
fn no_recovery_for_acks_below_recover() {
    let mut c = Congestion::new(MSS, 0, Algorithm::Cubic);
    c.on_timeout(8000, 9000, MSS);
    for _ in 0..3 {
        assert_eq!(
            c.on_dup_ack(5000, 4000, 9000, MSS, false),
            Verdict::Continue
        );
    }
    assert!(
        !c.in_recovery,
        "RFC 6582: duplicates below recover start no recovery"
    );
}

#[test]
fn prr_sends_in_proportion_while_the_pipe_is_above_ssthresh() {
    // RFC 6937 Appendix A's first example: RecoverFS 20, ssthresh 10 (here 14 with β 0.7),
    // one segment lost; every ACK delivers one segment.
    let mut c = Congestion::new(MSS, 0, Algorithm::Cubic);
    c.cwnd = 20 * MSS;
    c.enter_recovery(0, 20 * MSS, 20_000, MSS, true);
    assert_eq!(c.ssthresh, 14 * MSS);
    let mut sent = 0;
    let mut pipe = 19 * MSS; // one lost
    for _ in 0..10 {
        c.on_recovery_ack(MSS, pipe, MSS);
        let room = c.cwnd.saturating_sub(pipe);
        c.on_sent(room, 0, false, false, 0, 0);
        sent += room;
        pipe = pipe - MSS + room;
    }
    // Ten segments delivered: 10 · 14/20 = 7 sent.
    assert_eq!(sent, 7 * MSS);
    assert_eq!(c.prr().unwrap().out, 7 * MSS);
}

#[test]
fn prr_slow_starts_back_to_ssthresh_when_the_pipe_fell_below_it() {
    let mut c = Congestion::new(MSS, 0, Algorithm::Cubic);
    c.cwnd = 20 * MSS;
    c.enter_recovery(0, 20 * MSS, 20_000, MSS, true);
    // Many losses: only four segments still in the pipe; an ACK delivers one.
    c.on_recovery_ack(MSS, 4 * MSS, MSS);
    // PRR-SSRB: at most what was delivered plus one segment.
    assert_eq!(c.cwnd, 6 * MSS);
    // Never above ssthresh.
    c.on_recovery_ack(20 * MSS, 4 * MSS, MSS);
    assert_eq!(c.cwnd, 14 * MSS);
}

#[test]
fn sack_recovery_ends_at_ssthresh() {
    let mut c = Congestion::new(MSS, 0, Algorithm::Cubic);
    c.cwnd = 20 * MSS;
    c.enter_recovery(0, 20 * MSS, 20_000, MSS, true);
    c.on_recovery_ack(MSS, 3 * MSS, MSS);
    assert!(c.cwnd < c.ssthresh);
    assert_eq!(
        c.on_new_ack(20 * MSS, 20_000, 0, MSS, true, 0, 0),
        Verdict::Continue
    );
    assert!(!c.in_recovery);
    assert_eq!(c.cwnd, 14 * MSS);
}
