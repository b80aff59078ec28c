//! BBR at the connection level: pacing holds segments until the pacing clock allows them
//! (and says when), offloaded frames carry at most the TSO goal, the ACKs of tracked
//! ranges give the rate samples the model is made of, a SACK loss keeps the window (packet
//! conservation, then the window before recovery), a timeout cuts it to one segment and
//! recovery's end restores it, and queueing a response after running dry marks the
//! connection application-limited. CUBIC is not paced.

use super::*;
use crate::tcp::bbr::{Bbr, CaState, Mode, BW_SHIFT};
use crate::tcp::congestion::Algorithm;
use crate::tcp::output::TimerAction;
use crate::tcp::PACING_SLACK_NS;
use crate::wire::tcp::SackBlocks;

const M: u32 = 1460;

/// The peer's SYN offering SACK.
const SACK_SYN: ParsedRepr<'static> = ParsedRepr {
    options: Options {
        sack_permitted: true,
        mss: Some(1460),
        ..NO_OPTIONS
    },
    ..SYN_TEMPL
};

/// Segment `i` of our stream, as a sequence number.
fn s(i: u32) -> u32 {
    LOCAL_SEQ + i * M
}

/// A connection running `algorithm`, SACK on, whose handshake took `rtt` (its timed
/// SYN-ACK went at 0, the ACK came at `rtt`).
fn with(algorithm: Algorithm, rtt: u64) -> Connection {
    let mut c = Connection::accept(&SACK_SYN, ISS, 0).with_congestion(algorithm);
    c.syn_ack(0);
    assert!(c.input(&RECV_TEMPL, rtt, RX).established);
    c
}

/// A pure ACK of `ack` with SACK blocks of whole segments `[from, to)`, at `now`.
fn sack(c: &mut Connection, now: u64, ack: u32, blocks: &[(u32, u32)]) -> Outcome {
    let mut b = SackBlocks::NONE;
    for &(from, to) in blocks {
        b.push(s(from), s(to));
    }
    let seg = ParsedRepr {
        options: Options {
            sack: b,
            ..NO_OPTIONS
        },
        ..ack_of(c, ack)
    };
    recv(c, now, seg)
}

fn bbr(c: &Connection) -> Bbr {
    *c.congestion().bbr().expect("BBR")
}

#[test]
fn the_handshake_gives_the_first_min_rtt_and_pacing_rate() {
    let c = with(Algorithm::Bbr, MS);
    let b = bbr(&c);
    assert_eq!(b.mode(), Mode::Startup);
    assert_eq!(b.min_rtt_us(), 1000);
    // 2.885 · 14 600 bytes / 1 ms, less 1%: about 41.7 MB/s.
    let bps = Bbr::bytes_per_sec(b.pacing_rate());
    assert!((41_500_000..41_900_000).contains(&bps), "{bps}");
    assert_eq!(c.congestion().cwnd, 14_600);
}

#[test]
fn pacing_holds_segments_until_the_pacing_clock_allows_them() {
    let mut c = with(Algorithm::Bbr, MS);
    c.queue(100_000);
    let rate = bbr(&c).pacing_rate();
    let per = Bbr::send_time_ns(M, rate); // ≈ 35 µs a segment
    let t = 2 * MS;
    // Segments may leave up to 250 µs ahead of the pacing clock: eight of the ten the
    // initial window allows go now.
    let n = PACING_SLACK_NS / per + 1;
    assert_eq!(n, 8);
    let segs = send_all(&mut c, t);
    assert_eq!(segs.len() as u64, n);
    assert_eq!(c.next_send_ns(), t + n * per);
    let due = c.pacing_deadline().expect("held back by pacing");
    assert_eq!(due, t + n * per - PACING_SLACK_NS);
    // Not before its time; then one goes, and the clock moves on by its length.
    assert_eq!(c.next_segment(due - 1, 0), None);
    assert_eq!(c.pacing_deadline(), Some(due));
    let seg = c.next_segment(due, 0).expect("due");
    assert_eq!(seg, out(s(8), M, false));
    assert_eq!(c.pacing_deadline(), None);
    c.on_sent(&seg, due);
    assert_eq!(c.next_send_ns(), t + (n + 1) * per);
    // The window, not pacing, holds the rest back: no deadline then.
    let rest = send_all(&mut c, t + MS);
    assert_eq!(rest, [out(s(9), M, false)]);
    assert_eq!(c.pacing_deadline(), None);
}

#[test]
fn cubic_is_not_paced() {
    let mut c = with(Algorithm::Cubic, MS);
    c.queue(100_000);
    assert_eq!(
        send_all(&mut c, 2 * MS).len(),
        10,
        "the initial window at once"
    );
    assert_eq!(c.pacing_deadline(), None);
}

#[test]
fn an_offloaded_frame_carries_at_most_the_tso_goal() {
    let mut c = with(Algorithm::Bbr, MS);
    set_cwnd(&mut c, 200_000);
    // Less than the windows let go (no quarter-window bound on the frame).
    c.queue(60_000);
    // About a millisecond at 41.7 MB/s: 27 segments (the offload limit would allow 44).
    let goal = c.congestion().tso_goal(M).unwrap();
    assert_eq!(goal, 27 * M);
    let seg = c.next_segment(2 * MS, 65_535).unwrap();
    assert_eq!(seg.len, goal);
}

#[test]
fn the_ack_of_the_tracked_range_feeds_the_model() {
    let mut c = with(Algorithm::Bbr, MS);
    c.queue(100_000);
    let t = 2 * MS;
    assert!(c.rate().is_app_limited(), "queued after running dry");
    send_all(&mut c, t);
    for _ in 0..2 {
        let due = c.pacing_deadline().unwrap();
        send_all(&mut c, due);
    }
    assert_eq!(c.snd_nxt(), s(10));
    assert_eq!(c.rate().tracked(), Some((s(0), s(1))));
    // All ten acknowledged 1 ms after they began to go: a sample of 14 600 bytes in 1 ms.
    recv_ack(&mut c, t + MS, s(10));
    let b = bbr(&c);
    assert_eq!(b.max_bw(), (14_600 << BW_SHIFT) / 1000);
    assert_eq!((b.min_rtt_us(), b.rounds()), (1000, 1));
    // STARTUP grows the window by what was delivered; the pacing rate follows the sample.
    assert_eq!(c.congestion().cwnd, 2 * 14_600);
    assert!(
        !c.rate().is_app_limited(),
        "the app-limited bubble was delivered"
    );
    // The next new data sent is tracked.
    send_all(&mut c, t + MS);
    assert_eq!(c.rate().tracked(), Some((s(10), s(11))));
}

#[test]
fn a_sack_loss_keeps_the_window_then_restores_it() {
    // A 1 µs handshake RTT: pacing far faster than these sends.
    let mut c = with(Algorithm::Bbr, 0);
    set_cwnd(&mut c, 20 * M);
    c.queue(200_000);
    assert_eq!(send_all(&mut c, MS).len(), 20);
    // Segment 0 lost, 1 and 2 SACKed: recovery, and the first segment goes again.
    let o = sack(&mut c, 2 * MS, s(0), &[(1, 3)]);
    assert!(o.retransmit);
    let cc = c.congestion();
    assert_eq!(cc.ca_state(), CaState::Recovery);
    assert_eq!(cc.ssthresh, u32::MAX, "no multiplicative decrease");
    assert_eq!(bbr(&c).prior_cwnd(), 20 * M);
    // Packet conservation: the pipe (17 segments above the SACKed ones) plus the two
    // delivered.
    assert_eq!(c.pipe(), 17 * M);
    assert_eq!(cc.cwnd, 19 * M);
    assert!(bbr(&c).packet_conservation());
    let rtx = c.retransmit_segment().unwrap();
    c.on_sent(&rtx, 2 * MS);
    // One more segment may go: two arrived, two leave.
    assert_eq!(send_all(&mut c, 2 * MS), [out(s(20), M, false)]);
    // Everything acknowledged: recovery is over and the window before it is back.
    recv_ack(&mut c, 3 * MS, s(21));
    let cc = c.congestion();
    assert_eq!(cc.ca_state(), CaState::Open);
    assert!(cc.cwnd >= 20 * M, "{}", cc.cwnd);
}

#[test]
fn a_timeout_cuts_the_window_to_one_segment_until_recovery_ends() {
    let mut c = with(Algorithm::Bbr, 0);
    set_cwnd(&mut c, 20 * M);
    c.queue(200_000);
    send_all(&mut c, MS);
    // The loss probes go first (each answered by nothing), then the timeout.
    let mut now;
    let action = loop {
        now = c.timer().deadline().expect("armed");
        match c.on_timer(now, STALL, RETRIES) {
            TimerAction::LossProbe(seg) => c.on_sent(&seg, now),
            a => break a,
        }
    };
    assert_eq!(action, TimerAction::Retransmit);
    let (rto, high) = (now - MS, c.snd_max());
    assert_eq!(c.congestion().cwnd, M);
    assert_eq!(c.congestion().ca_state(), CaState::Loss);
    assert_eq!(send_all(&mut c, MS + rto), [out(s(0), M, false)]);
    // Its ACK: the window grows (at least four segments) from one.
    recv_ack(&mut c, MS + rto + MS, s(1));
    assert_eq!(c.congestion().cwnd, 4 * M);
    // The ACK of all that was outstanding at the timeout ends the Loss state: the window
    // saved then comes back.
    recv_ack(&mut c, MS + rto + 2 * MS, high);
    assert_eq!(c.congestion().ca_state(), CaState::Open);
    assert!(c.congestion().cwnd >= 20 * M);
}

#[test]
fn queueing_after_running_dry_marks_the_connection_app_limited() {
    let mut c = with(Algorithm::Bbr, 0);
    c.queue(100_000);
    assert!(c.rate().is_app_limited());
    send_all(&mut c, MS);
    recv_ack(&mut c, 2 * MS, s(10));
    assert!(!c.rate().is_app_limited());
    // More than a segment still unsent: queueing more is not app-limited.
    c.queue(1000);
    assert!(!c.rate().is_app_limited());
}
