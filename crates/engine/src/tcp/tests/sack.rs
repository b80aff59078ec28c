//! SACK (RFC 2018) loss recovery (RFC 6675's pipe, with RFC 8985's "sent later and
//! delivered" rule, the window set by RFC 6937's PRR) and the loss probes (RFC 8985 §7,
//! and in recovery): the scoreboard from the peer's blocks, when recovery starts, which
//! holes go and in what order within the pipe, lost retransmissions, timeouts that skip
//! what the peer holds, and probes, which double their wait until the RTO's turn.

use super::*;
use crate::tcp::output::{TimerAction, DELACK_MAX_NS, PTO_SLACK_NS, RACK_MIN_NS};
use crate::tcp::timer::Timer;
use crate::wire::tcp::SackBlocks;

const M: u32 = 1460;

/// The peer's SYN offering SACK.
const SACK_SYN: ParsedRepr<'static> = ParsedRepr {
    options: Options {
        sack_permitted: true,
        ..NO_OPTIONS_MSS
    },
    ..SYN_TEMPL
};

const NO_OPTIONS_MSS: Options = Options {
    mss: Some(1460),
    ..NO_OPTIONS
};

/// Segment `i` of our stream (MSS-sized), as a sequence number.
fn s(i: u32) -> u32 {
    LOCAL_SEQ + i * M
}

/// A pure ACK of `ack` carrying SACK blocks of whole segments `[from, to)`.
fn sack_of(c: &Connection, ack: u32, blocks: &[(u32, u32)]) -> ParsedRepr<'static> {
    let mut b = SackBlocks::NONE;
    for &(from, to) in blocks {
        b.push(s(from), s(to));
    }
    ParsedRepr {
        options: Options {
            sack: b,
            ..NO_OPTIONS
        },
        ..ack_of(c, ack)
    }
}

fn recv_sack(c: &mut Connection, now: u64, ack: u32, blocks: &[(u32, u32)]) -> Outcome {
    let seg = sack_of(c, ack, blocks);
    recv(c, now, seg)
}

/// SACK established, cwnd ten segments, `queued` bytes queued and ten segments sent at
/// time 0 (single segments, no offload).
fn ten_in_flight(queued: u32) -> Connection {
    let mut c = established_with(&SACK_SYN, 65_535);
    assert!(c.sack_ok());
    set_cwnd(&mut c, 10 * M);
    c.queue(queued);
    let segs = send_all(&mut c, 0);
    assert_eq!(segs.len(), 10);
    c
}

#[test]
fn the_syn_ack_answers_sack_permitted() {
    let mut c = syn_received_with(&SACK_SYN);
    let syn = Segment {
        syn: true,
        ..out(ISS, 0, false)
    };
    let h = c.header(&syn, LOCAL_PORT, REMOTE_PORT, RX, 0);
    assert!(h.sack_permitted);
    assert_eq!(h.header_len(), 28, "MSS + NOP NOP SACK-permitted");
    let mut c = syn_received();
    assert!(
        !c.header(&syn, LOCAL_PORT, REMOTE_PORT, RX, 0)
            .sack_permitted
    );
    assert!(!c.sack_ok());
}

#[test]
fn sack_blocks_are_ignored_when_sack_was_not_negotiated() {
    let mut c = established();
    set_cwnd(&mut c, 10 * M);
    c.queue(100_000);
    send_all(&mut c, 0);
    let o = recv_sack(&mut c, MS, s(0), &[(1, 5)]);
    assert!(!o.retransmit);
    assert!(c.scoreboard().is_empty());
}

#[test]
fn the_first_sack_above_snd_una_starts_recovery() {
    // No reordering window (see `Connection::sack_loss`): one segment SACKed above the
    // hole marks it lost.
    let mut c = ten_in_flight(100_000);
    let o = recv_sack(&mut c, MS, s(0), &[(1, 2)]);
    assert!(o.retransmit, "segment 0 is lost");
    let cc = c.congestion();
    assert!(cc.in_recovery);
    assert_eq!(cc.ssthresh, 7 * M, "β_cubic · FlightSize");
    assert_eq!(
        (cc.prr().unwrap().recover_fs, cc.prr().unwrap().delivered),
        (10 * M, M)
    );
    // RFC 6937: no inflation; cwnd = pipe + ⌈delivered · ssthresh / RecoverFS⌉ − out,
    // the pipe being the eight segments above the SACKed one.
    assert_eq!(c.pipe(), 8 * M);
    assert_eq!(cc.cwnd, 8 * M + (M * 7).div_ceil(10));
    assert_eq!(c.retransmit_segment(), Some(out(s(0), M, false)));
    // More SACKs in the same window start nothing new.
    assert!(!recv_sack(&mut c, MS, s(0), &[(1, 3)]).retransmit);
}

#[test]
fn sack_counts_bytes_not_acks() {
    // One ACK reporting a whole lost-and-delivered offloaded frame is enough: duplicate
    // ACK counting does not depend on how the data was cut.
    let mut c = ten_in_flight(100_000);
    let o = recv_sack(&mut c, MS, s(0), &[(4, 10)]);
    assert!(o.retransmit);
    // The hole is four segments: the first retransmission takes one, the rest follow as
    // the pipe allows.
    let first = c.retransmit_segment().unwrap();
    assert_eq!(first, out(s(0), M, false));
    // Nothing is in the pipe (all above the hole arrived): PRR lets it grow back to
    // ssthresh (7 segments), at most what was delivered (6) plus one (PRR-SSRB).
    assert_eq!(c.congestion().cwnd, 7 * M);
    c.on_sent(&first, MS);
    // pipe = 1 (retransmitted): the rest of the hole in one frame, then new data in
    // frames of at most a quarter window (two segments).
    let segs = send_all_max(&mut c, MS, 65_535);
    assert_eq!(
        segs,
        [
            out(s(1), 3 * M, false),
            out(s(10), 2 * M, false),
            out(s(12), M, false)
        ]
    );
    assert_eq!(c.pipe(), 7 * M);
}

#[test]
fn holes_go_first_lowest_first_then_new_data() {
    let mut c = ten_in_flight(100_000);
    // Segments 0 and 2 lost, 1 and 3..10 arrived.
    let o = recv_sack(&mut c, MS, s(0), &[(3, 10), (1, 2)]);
    assert!(o.retransmit);
    assert_eq!(c.scoreboard().blocks(), &[(s(1), s(2)), (s(3), s(10))]);
    let r = c.retransmit_segment().unwrap();
    assert_eq!(r, out(s(0), M, false), "not into SACKed segment 1");
    // Eight segments delivered, none left in the pipe: PRR's window is ssthresh, 7.
    assert_eq!(c.congestion().cwnd, 7 * M);
    c.on_sent(&r, MS);
    // pipe: 1 retransmitted → hole 2, then new data from segment 10.
    let segs = send_all(&mut c, MS);
    assert_eq!(
        segs,
        [
            out(s(2), M, false),
            out(s(10), M, false),
            out(s(11), M, false),
            out(s(12), M, false),
            out(s(13), M, false),
            out(s(14), M, false)
        ]
    );
    assert_eq!(c.pipe(), 7 * M);
    assert_eq!(c.next_segment(MS, 0), None, "the pipe is full");
    // The retransmitted segment 0 arrives: ACK up to the hole at 2 (still out): a partial
    // ACK that delivered one segment (1 was SACKed before), no deflation; the pipe is 6
    // (hole 2 retransmitted, 10..15 new): one more segment in.
    let o = recv_sack(&mut c, 2 * MS, s(2), &[(3, 10)]);
    assert!(!o.retransmit);
    assert!(c.congestion().in_recovery);
    assert_eq!(c.congestion().prr().unwrap().delivered, 9 * M);
    assert_eq!(c.pipe(), 6 * M);
    assert_eq!(send_all(&mut c, 2 * MS), [out(s(15), M, false)]);
    // Segment 2 arrives: everything up to 10 is acknowledged; recovery ends when the ACK
    // passes what was outstanding at its start, with cwnd = ssthresh (RFC 6937).
    recv_sack(&mut c, 3 * MS, s(10), &[]);
    assert!(!c.congestion().in_recovery);
    assert!(c.scoreboard().is_empty());
    assert_eq!(c.congestion().cwnd, 7 * M);
    assert_eq!(c.congestion().ssthresh, 7 * M);
}

#[test]
fn a_lost_retransmission_is_sent_again() {
    let mut c = ten_in_flight(100_000);
    recv_sack(&mut c, MS, s(0), &[(1, 10)]);
    let r = c.retransmit_segment().unwrap();
    c.on_sent(&r, MS);
    // Let new data go: the pipe shrinks as the peer SACKs segments 1..10 (all of them
    // already): pipe is the retransmission only.
    let new = send_all(&mut c, MS);
    assert_eq!(new.first(), Some(&out(s(10), M, false)));
    assert_eq!(c.next_segment(MS, 0), None);
    // Data sent after the retransmission arrives but segment 0 does not: it was lost again.
    let o = recv_sack(&mut c, 2 * MS, s(0), &[(1, 11)]);
    assert!(o.lost_retransmit);
    assert_eq!(c.next_segment(2 * MS, 0), Some(out(s(0), M, false)));
    // SACKs of data sent before the retransmission say nothing about it.
    let mut c = ten_in_flight(100_000);
    recv_sack(&mut c, MS, s(0), &[(2, 9)]);
    let r = c.retransmit_segment().unwrap();
    c.on_sent(&r, MS);
    assert!(!recv_sack(&mut c, MS, s(0), &[(2, 10)]).lost_retransmit);
}

#[test]
fn when_everything_is_sent_one_sack_is_enough() {
    // Nothing more to send, so no more SACKs would come: the hole at SND.UNA is lost.
    let mut c = ten_in_flight(10 * M);
    let o = recv_sack(&mut c, MS, s(0), &[(9, 10)]);
    assert!(o.retransmit);
    let r = c.retransmit_segment().unwrap();
    c.on_sent(&r, MS);
    // The rest of the hole follows as PRR allows: one segment was delivered and nothing
    // is in the pipe, so what was delivered plus one (PRR-SSRB): the retransmission and one
    // more segment of the hole.
    assert_eq!(c.congestion().cwnd, 2 * M);
    let segs = send_all_max(&mut c, MS, 65_535);
    assert_eq!(segs, [out(s(1), M, false)]);
    // The ACK of the retransmission delivers one more: two more go.
    recv_sack(&mut c, 2 * MS, s(1), &[(9, 10)]);
    let segs = send_all_max(&mut c, 2 * MS, 65_535);
    assert_eq!(segs, [out(s(2), 2 * M, false)]);
}

#[test]
fn the_fin_is_resent_with_the_hole_that_ends_the_stream() {
    let mut c = ten_in_flight(10 * M);
    c.close();
    assert_eq!(send_all(&mut c, 0), [out(s(10), 0, true)]);
    // Segments 8 and 9 lost; the FIN segment itself arrived.
    let o = recv_sack(&mut c, MS, s(8), &[]);
    assert_eq!(o.acked, 8 * M);
    // The ACK of the FIN-only segment SACKs the FIN octet: everything is sent, so the
    // hole is lost.
    let mut b = SackBlocks::NONE;
    b.push(s(10), s(10) + 1);
    let seg = ParsedRepr {
        options: Options {
            sack: b,
            ..NO_OPTIONS
        },
        ..ack_of(&c, s(8))
    };
    let o = recv(&mut c, 2 * MS, seg);
    assert!(o.retransmit);
    let r = c.retransmit_segment().unwrap();
    assert_eq!(r, out(s(8), M, false));
    c.on_sent(&r, 2 * MS);
    // PRR: one octet (the FIN's) was delivered, so one segment goes, the retransmission.
    assert_eq!(send_all_max(&mut c, 2 * MS, 65_535), []);
    // Its ACK delivers a segment: the second hole goes, with the FIN.
    let seg = ParsedRepr {
        ack_number: Some(s(9)),
        ..seg
    };
    assert!(!recv(&mut c, 3 * MS, seg).retransmit);
    assert_eq!(send_all_max(&mut c, 3 * MS, 65_535), [out(s(9), M, true)]);
}

#[test]
fn a_timeout_goes_back_but_skips_what_the_peer_holds() {
    let mut c = ten_in_flight(10 * M);
    // Segments 0 and 5 lost; the ACKs were lost too except one SACK, before recovery
    // could start (the ACK does not pass `recover` after an earlier timeout).
    c.cc.recover = s(10);
    recv_sack(&mut c, MS, s(0), &[(1, 5), (6, 10)]);
    assert!(!c.congestion().in_recovery);
    // The tail loss probes go first (the last segment again, each after twice the wait
    // of the one before), unanswered too, until the RTO takes over.
    let mut probes = 0;
    while matches!(c.timer(), Timer::LossProbe { .. }) {
        probe_unanswered(&mut c, out(s(9), M, false));
        probes += 1;
    }
    assert!(probes > 1, "{probes}");
    assert_eq!(c.on_timer(2 * SEC, STALL, RETRIES), TimerAction::Retransmit);
    assert_eq!(send_all(&mut c, 2 * SEC), [out(s(0), M, false)]);
    // cwnd is one segment; the ACK of segment 0 jumps to the next hole.
    let o = recv_sack(&mut c, 2 * SEC + MS, s(5), &[(6, 10)]);
    assert_eq!(o.acked, 5 * M);
    assert_eq!(send_all(&mut c, 2 * SEC + MS), [out(s(5), M, false)]);
    assert_eq!(c.snd_nxt(), s(10), "segments 6..10 not sent again");
}

#[test]
fn a_second_timeout_forgets_the_scoreboard() {
    let mut c = ten_in_flight(10 * M);
    c.cc.recover = s(10);
    recv_sack(&mut c, MS, s(0), &[(1, 5)]);
    while matches!(c.timer(), Timer::LossProbe { .. }) {
        probe_unanswered(&mut c, out(s(9), M, false));
    }
    assert_eq!(c.on_timer(2 * SEC, STALL, RETRIES), TimerAction::Retransmit);
    assert!(!c.scoreboard().is_empty());
    send_all(&mut c, 2 * SEC);
    // After the timeout (recovery with SACK), the first hole is probed again until the RTO
    // takes over: none of them answered either.
    while let Timer::LossProbe { at } = c.timer() {
        probe_unanswered(&mut c, out(s(0), M, false));
        assert!(at < 3 * SEC);
    }
    assert_eq!(
        c.on_timer(10 * SEC, STALL, RETRIES),
        TimerAction::Retransmit
    );
    assert!(c.scoreboard().is_empty(), "the peer may have reneged");
}

/// Fires the loss probe due now (at its deadline) and sends it: it must be `want`.
fn probe_unanswered(c: &mut Connection, want: Segment) {
    let Timer::LossProbe { at } = c.timer() else {
        panic!("no probe armed: {:?}", c.timer());
    };
    assert_eq!(c.on_timer(at - 1, STALL, RETRIES), TimerAction::None);
    assert_eq!(c.on_timer(at, STALL, RETRIES), TimerAction::LossProbe(want));
    c.on_sent(&want, at);
}

/// SACK established with an RTT of 1 ms (the handshake's sample and one of data, so SRTT
/// is 1 ms, the RTO 200 ms), `n` segments of new data sent at 10 ms.
fn sampled_then_sent(n: u32, queued: u32) -> Connection {
    let mut c = syn_received_with(&SACK_SYN);
    assert!(recv(&mut c, MS, RECV_TEMPL).established);
    assert_eq!(c.rtt().srtt_us, 1000);
    set_cwnd(&mut c, 20 * M);
    c.queue(M);
    send_all(&mut c, MS);
    recv_ack(&mut c, 2 * MS, s(1));
    assert_eq!(c.rtt().srtt_us, 1000);
    assert_eq!(c.rtt().rto_ns(), 200 * MS);
    c.queue(queued);
    for _ in 0..n {
        send_one(&mut c, 10 * MS);
    }
    c
}

#[test]
fn the_tail_loss_probe_resends_the_last_segment() {
    let mut c = sampled_then_sent(4, 4 * M);
    // PTO = 2 SRTT + 2 ms, well before the RTO (200 ms).
    assert_eq!(
        c.timer(),
        Timer::LossProbe {
            at: 10 * MS + 2 * MS + PTO_SLACK_NS
        }
    );
    let cwnd = c.congestion().cwnd;
    assert_eq!(c.on_timer(14 * MS - 1, STALL, RETRIES), TimerAction::None);
    let TimerAction::LossProbe(p) = c.on_timer(14 * MS, STALL, RETRIES) else {
        panic!("{:?}", c.timer());
    };
    assert_eq!(p, out(s(4), M, false), "the last segment sent, again");
    c.on_sent(&p, 14 * MS);
    assert_eq!(c.retries(), 0, "a probe is not a timeout");
    assert_eq!(c.congestion().cwnd, cwnd, "nor a window reduction");
    // The probe's SACK shows segments 1..4 lost: recovery, without waiting for the RTO.
    let o = recv_sack(&mut c, 15 * MS, s(1), &[(4, 5)]);
    assert!(o.retransmit);
    assert_eq!(c.retransmit_segment(), Some(out(s(1), M, false)));
}

#[test]
fn the_tail_loss_probe_sends_new_data_when_the_window_allows() {
    let mut c = sampled_then_sent(3, 10 * M);
    // cwnd would allow more, but say the peer's window held it back: new data goes first.
    probe_unanswered(&mut c, out(s(4), M, false));
    assert_eq!(c.snd_nxt(), s(5));
    // Unanswered, it is followed by another after twice the wait (2 · 4 ms).
    assert_eq!(
        c.timer(),
        Timer::LossProbe {
            at: 14 * MS + 8 * MS
        }
    );
    probe_unanswered(&mut c, out(s(5), M, false));
    assert_eq!(
        c.timer(),
        Timer::LossProbe {
            at: 22 * MS + 16 * MS
        }
    );
}

#[test]
fn an_unanswered_tail_loss_probe_is_followed_by_another_after_twice_the_wait() {
    // docs/design/tcp.md, "Probes repeat": in and out of recovery, a probe that draws no answer
    // is followed by another after twice the wait, until the doubled wait would reach the
    // RTO (200 ms), which then runs. PTO 4 ms: probes after 4, 8, 16, 32, 64 and 128 ms;
    // 256 would pass the RTO. (A probe of new data is followed so, above; this one, the
    // last segment sent again, must be too.)
    let mut c = sampled_then_sent(4, 4 * M);
    let mut at = 10 * MS;
    for wait in [4, 8, 16, 32, 64, 128] {
        at += wait * MS;
        assert_eq!(c.timer(), Timer::LossProbe { at }, "wait {wait} ms");
        probe_unanswered(&mut c, out(s(4), M, false));
    }
    assert_eq!(c.timer(), Timer::Retransmit { at: at + 200 * MS });
    assert_eq!(c.retries(), 0);
    assert_eq!(
        c.on_timer(at + 200 * MS, STALL, RETRIES),
        TimerAction::Retransmit
    );
}

#[test]
fn a_lone_segment_waits_for_a_delayed_ack_before_a_probe() {
    let c = sampled_then_sent(1, M);
    assert_eq!(
        c.timer(),
        Timer::LossProbe {
            at: 10 * MS + (1_500_000 + DELACK_MAX_NS).min(c.rtt().rto_ns())
        }
    );
}

#[test]
fn no_probe_without_sack() {
    let mut c = established();
    c.queue(M);
    send_all(&mut c, 0);
    recv_ack(&mut c, MS, s(1));
    c.queue(4 * M);
    send_all(&mut c, 10 * MS);
    assert!(
        matches!(c.timer(), Timer::Retransmit { .. }),
        "no SACK, no probe"
    );
}

#[test]
fn in_recovery_an_unanswered_retransmission_is_probed_again() {
    let mut c = sampled_then_sent(8, 8 * M);
    let o = recv_sack(&mut c, 11 * MS, s(1), &[(2, 9)]);
    assert!(o.retransmit);
    let r = c.retransmit_segment().unwrap();
    c.on_sent(&r, 11 * MS);
    // The peer holds out-of-order data, so it answers a retransmission at once: none in
    // SRTT and RACK's reordering window (SRTT/4) means it was lost.
    assert_eq!(
        c.timer(),
        Timer::LossProbe {
            at: 11 * MS + 1250 * 1000
        }
    );
    let ssthresh = c.congestion().ssthresh;
    // Unanswered probes double the wait (1.25, 2.5, ... 160 ms) until it would reach the
    // RTO (200 ms), which then runs.
    let mut at = 11 * MS;
    for wait_us in [1250, 2500, 5000, 10_000, 20_000, 40_000, 80_000, 160_000] {
        at += wait_us * 1000;
        assert_eq!(c.timer(), Timer::LossProbe { at }, "wait {wait_us} µs");
        probe_unanswered(&mut c, out(s(1), M, false));
        assert!(c.congestion().in_recovery);
        assert_eq!(c.congestion().ssthresh, ssthresh, "no new window reduction");
        assert_eq!(c.retries(), 0);
    }
    assert_eq!(c.timer(), Timer::Retransmit { at: at + 200 * MS });
    assert_eq!(
        c.on_timer(at + 200 * MS, STALL, RETRIES),
        TimerAction::Retransmit
    );
    assert_eq!(c.retries(), 1);
}

#[test]
fn in_recovery_the_probe_wait_is_at_least_a_millisecond() {
    // On a LAN SRTT·5/4 is microseconds; a peer's ACK can be late by more than that.
    let mut c = ten_in_flight(100_000);
    assert!(c.rtt().srtt_us < 10, "the handshake's sample");
    recv_sack(&mut c, MS, s(0), &[(1, 10)]);
    let r = c.retransmit_segment().unwrap();
    c.on_sent(&r, MS);
    assert_eq!(
        c.timer(),
        Timer::LossProbe {
            at: MS + RACK_MIN_NS
        }
    );
}

#[test]
fn progress_resets_the_probe_wait() {
    let mut c = sampled_then_sent(8, 100 * M);
    recv_sack(&mut c, 11 * MS, s(1), &[(3, 9)]);
    let r = c.retransmit_segment().unwrap();
    c.on_sent(&r, 11 * MS);
    probe_unanswered(&mut c, out(s(1), M, false));
    probe_unanswered(&mut c, out(s(1), M, false));
    assert_eq!(
        c.timer(),
        Timer::LossProbe {
            at: 11 * MS + 1250 * 1000 + 2500 * 1000 + 5000 * 1000
        }
    );
    // The first hole arrives (an ACK of new data, still in recovery): the next
    // retransmission's probe waits SRTT·5/4 again.
    let now = 20 * MS;
    let o = recv_sack(&mut c, now, s(2), &[(3, 9)]);
    assert_eq!(o.acked, M);
    assert!(c.congestion().in_recovery);
    let hole = c.next_segment(now, 0).unwrap();
    assert_eq!(hole, out(s(2), M, false));
    c.on_sent(&hole, now);
    let srtt = u64::from(c.rtt().srtt_us) * 1000;
    assert_eq!(
        c.timer(),
        Timer::LossProbe {
            at: now + (srtt + srtt / 4).max(RACK_MIN_NS)
        }
    );
}

#[test]
fn bogus_blocks_do_not_start_recovery() {
    let mut c = ten_in_flight(100_000);
    // Beyond SND.MAX, reversed, below SND.UNA: all ignored.
    let o = recv_sack(&mut c, MS, s(0), &[(5, 40), (6, 3), (0, 0)]);
    assert!(!o.retransmit);
    assert!(c.scoreboard().is_empty());
}
