//! SACK (RFC 2018) loss recovery (RFC 6675's pipe, with RFC 8985's "sent later and
//! delivered" rule) and the tail loss probe (RFC 8985 §7): the scoreboard from the peer's blocks, when
//! recovery starts, which holes go and in what order within the pipe, lost
//! retransmissions, timeouts that skip what the peer holds, and probes.

use super::*;
use crate::tcp::output::{TimerAction, DELACK_MAX_NS, PTO_MIN_NS};
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
    assert_eq!(cc.cwnd, cc.ssthresh, "RFC 6675: no inflation");
    assert_eq!(cc.ssthresh, 5 * M);
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
    c.on_sent(&first, MS);
    // pipe = 1 (retransmitted) + 0 beyond the highest SACK; cwnd 5: the rest of the hole
    // in one frame, then one new segment.
    let segs = send_all_max(&mut c, MS, 65_535);
    assert_eq!(segs, [out(s(1), 3 * M, false), out(s(10), M, false)]);
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
    c.on_sent(&r, MS);
    // pipe: 1 retransmitted; cwnd 5 → hole 2, then new data from segment 10.
    let segs = send_all(&mut c, MS);
    assert_eq!(
        segs,
        [
            out(s(2), M, false),
            out(s(10), M, false),
            out(s(11), M, false),
            out(s(12), M, false)
        ]
    );
    assert_eq!(c.pipe(), 5 * M);
    assert_eq!(c.next_segment(MS, 0), None, "the pipe is full");
    // The retransmitted segment 0 arrives: ACK up to the hole at 2 (still out): a partial
    // ACK, no deflation, one more segment in.
    let o = recv_sack(&mut c, 2 * MS, s(2), &[(3, 10)]);
    assert!(!o.retransmit);
    assert!(c.congestion().in_recovery);
    assert_eq!(send_all(&mut c, 2 * MS), [out(s(13), M, false)]);
    // Segment 2 arrives: everything up to 10 is acknowledged; recovery ends when the ACK
    // passes what was outstanding at its start.
    recv_sack(&mut c, 3 * MS, s(10), &[]);
    assert!(!c.congestion().in_recovery);
    assert!(c.scoreboard().is_empty());
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
    // The rest of the hole follows within the pipe (cwnd 5, pipe 1).
    let segs = send_all_max(&mut c, MS, 65_535);
    assert_eq!(segs, [out(s(1), 4 * M, false)]);
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
    assert_eq!(send_all_max(&mut c, 2 * MS, 65_535), [out(s(9), M, true)]);
}

#[test]
fn a_timeout_goes_back_but_skips_what_the_peer_holds() {
    let mut c = ten_in_flight(10 * M);
    // Segments 0 and 5 lost; the ACKs were lost too except one SACK, before recovery
    // could start (the ACK does not pass `recover` after an earlier timeout).
    c.cc.recover = s(10);
    recv_sack(&mut c, MS, s(0), &[(1, 5), (6, 10)]);
    assert!(!c.congestion().in_recovery);
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
    assert_eq!(c.on_timer(2 * SEC, STALL, RETRIES), TimerAction::Retransmit);
    assert!(!c.scoreboard().is_empty());
    send_all(&mut c, 2 * SEC);
    assert_eq!(
        c.on_timer(10 * SEC, STALL, RETRIES),
        TimerAction::Retransmit
    );
    assert!(c.scoreboard().is_empty(), "the peer may have reneged");
}

/// SACK established with an RTT sample of 1 ms, `n` segments of new data sent at 10 ms.
fn sampled_then_sent(n: u32, queued: u32) -> Connection {
    let mut c = established_with(&SACK_SYN, 65_535);
    set_cwnd(&mut c, 20 * M);
    c.queue(M);
    send_all(&mut c, 0);
    recv_ack(&mut c, MS, s(1));
    assert_eq!(c.rtt().srtt_us, 1000);
    c.queue(queued);
    for _ in 0..n {
        send_one(&mut c, 10 * MS);
    }
    c
}

#[test]
fn the_tail_loss_probe_resends_the_last_segment() {
    let mut c = sampled_then_sent(4, 4 * M);
    // PTO = max(2 SRTT, 10 ms), well before the RTO (200 ms).
    assert_eq!(
        c.timer(),
        Timer::LossProbe {
            at: 10 * MS + PTO_MIN_NS
        }
    );
    assert_eq!(c.on_timer(19 * MS, STALL, RETRIES), TimerAction::None);
    let TimerAction::LossProbe(p) = c.on_timer(20 * MS, STALL, RETRIES) else {
        panic!("{:?}", c.timer());
    };
    assert_eq!(p, out(s(4), M, false), "the last segment sent, again");
    c.on_sent(&p, 20 * MS);
    assert!(
        matches!(c.timer(), Timer::Retransmit { .. }),
        "the RTO runs behind it"
    );
    // The probe's SACK shows segments 1..4 lost: recovery, without waiting for the RTO.
    let o = recv_sack(&mut c, 21 * MS, s(1), &[(4, 5)]);
    assert!(o.retransmit);
    assert_eq!(c.retransmit_segment(), Some(out(s(1), M, false)));
}

#[test]
fn the_tail_loss_probe_sends_new_data_when_the_window_allows() {
    let mut c = sampled_then_sent(3, 10 * M);
    // cwnd would allow more, but say the peer's window held it back: new data goes first.
    let TimerAction::LossProbe(p) = c.on_timer(20 * MS, STALL, RETRIES) else {
        panic!("{:?}", c.timer());
    };
    assert_eq!(p, out(s(4), M, false));
    c.on_sent(&p, 20 * MS);
    assert_eq!(c.snd_nxt(), s(5));
    // One probe at a time: the next expiry is the RTO.
    assert!(matches!(c.timer(), Timer::Retransmit { .. }));
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
    // two round trips (at least 10 ms) means it was lost.
    assert_eq!(
        c.timer(),
        Timer::LossProbe {
            at: 11 * MS + PTO_MIN_NS
        }
    );
    let TimerAction::LossProbe(p) = c.on_timer(21 * MS, STALL, RETRIES) else {
        panic!("{:?}", c.timer());
    };
    assert_eq!(p, out(s(1), M, false), "the first hole again");
    c.on_sent(&p, 21 * MS);
    assert!(c.congestion().in_recovery, "no new window reduction");
    assert!(
        matches!(c.timer(), Timer::Retransmit { .. }),
        "then the RTO"
    );
    assert_eq!(c.retries(), 0);
}

#[test]
fn bogus_blocks_do_not_start_recovery() {
    let mut c = ten_in_flight(100_000);
    // Beyond SND.MAX, reversed, below SND.UNA: all ignored.
    let o = recv_sack(&mut c, MS, s(0), &[(5, 40), (6, 3), (0, 0)]);
    assert!(!o.retransmit);
    assert!(c.scoreboard().is_empty());
}
