//! The client's state machine on its own: a packet or a timeout in, the step out.

use std::vec::Vec;

use super::*;
use crate::udp::wire::{FLAG_TOKEN, HEADER_LEN};

/// Collects what a transfer delivers.
#[derive(Default)]
struct Got {
    total: Option<u64>,
    head: Vec<u8>,
    body: Vec<u8>,
    writes: usize,
}

impl Sink for Got {
    fn begin(&mut self, total: u64) -> bool {
        self.total = Some(total);
        self.body = vec![0xee; total as usize];
        total < 1 << 30
    }
    fn head(&mut self, head: &[u8]) {
        self.head = head.to_vec();
    }
    fn data(&mut self, offset: u64, bytes: &[u8]) {
        self.writes += 1;
        self.body[offset as usize..offset as usize + bytes.len()].copy_from_slice(bytes);
    }
}

const TOKEN: [u8; 8] = [9; 8];
const MS: u64 = 1_000_000;

fn file(total: usize) -> Vec<u8> {
    (0..total).map(|i| (i % 253) as u8).collect()
}

fn pkt(state: State, flags: u8, a: u32, b: u32, payload: &[u8]) -> Vec<u8> {
    let mut v = vec![0u8; HEADER_LEN];
    Header {
        state,
        version: VERSION,
        request_id: 7,
        core: 1,
        flags,
        unit: UNIT as u16,
        a,
        b,
    }
    .emit(&mut v);
    v.extend_from_slice(payload);
    v
}

fn get_ack(total: usize) -> Vec<u8> {
    let count = 1 + total.div_ceil(UNIT);
    pkt(
        State::GetAck,
        FLAG_TOKEN,
        total as u32,
        count as u32,
        &TOKEN,
    )
}

/// Packet `k` of `f` in state `s` (1: the head "HTTP/1.1 200 OK").
fn numbered(f: &[u8], k: u32, s: State) -> Vec<u8> {
    if k == 1 {
        return pkt(State::Header, 0, 17, 1, b"HTTP/1.1 200 OK\r\n");
    }
    let off = (k as usize - 2) * UNIT;
    let data = &f[off..(off + UNIT).min(f.len())];
    pkt(s, 0, data.len() as u32, k, data)
}

#[test]
fn a_whole_small_file_in_one_burst() {
    let f = file(4096);
    let mut t = Transfer::new(Timing::default(), None);
    let mut g = Got::default();
    assert_eq!(t.begin(0), Step::Send(Start::Initial));
    assert_eq!(t.deadline(), 50 * MS);
    assert_eq!(t.on_packet(&get_ack(4096), MS, &mut g), Step::Wait);
    assert_eq!(t.token(), Some(&TOKEN));
    assert_eq!(
        t.meta(),
        Some(Meta {
            total: 4096,
            count: 4
        })
    );
    assert_eq!(
        t.on_packet(&numbered(&f, 1, State::Header), MS, &mut g),
        Step::Wait
    );
    assert_eq!(
        t.on_packet(&numbered(&f, 2, State::Data), MS, &mut g),
        Step::Wait
    );
    assert_eq!(
        t.on_packet(&numbered(&f, 3, State::Data), MS, &mut g),
        Step::Wait
    );
    assert_eq!(
        t.on_packet(&numbered(&f, 4, State::Last), MS, &mut g),
        Step::Done
    );
    assert_eq!(g.body, f);
    assert_eq!(g.head, b"HTTP/1.1 200 OK\r\n");
    assert_eq!(t.deadline(), u64::MAX);
    assert_eq!(t.counts.gets, 1);
    assert_eq!(t.counts.packets, 5);
}

#[test]
fn last_data_now_asks_for_the_next_burst_and_a_gap_first() {
    let f = file(20 * UNIT);
    let mut t = Transfer::new(Timing::default(), None);
    let mut g = Got::default();
    t.begin(0);
    t.on_packet(&get_ack(f.len()), MS, &mut g);
    for k in 1..=9 {
        let s = if k == 9 { State::LastNow } else { State::Data };
        if k == 5 {
            continue; // lost
        }
        let step = t.on_packet(&numbered(&f, k, s), MS, &mut g);
        if k == 9 {
            assert_eq!(step, Step::Send(Start::From(5)), "from the first gap");
        } else {
            assert_eq!(step, Step::Wait);
        }
    }
    assert_eq!(t.counts.rerequested, 1, "packet 5 asked for again");
    // The burst from 5 brings 5 (new) and 6..=12 (6..9 duplicates).
    for k in 5..=12 {
        let s = if k == 12 { State::LastNow } else { State::Data };
        let step = t.on_packet(&numbered(&f, k, s), 2 * MS, &mut g);
        if k == 12 {
            assert_eq!(step, Step::Send(Start::From(13)));
        }
    }
    assert_eq!(t.counts.duplicates, 4);
    for k in 13..=21 {
        let s = if k == 21 { State::Last } else { State::Data };
        t.on_packet(&numbered(&f, k, s), 3 * MS, &mut g);
    }
    assert!(t.is_done());
    assert_eq!(g.body, f);
}

#[test]
fn reordered_and_duplicated_packets() {
    let f = file(5 * UNIT + 3);
    let mut t = Transfer::new(Timing::default(), None);
    let mut g = Got::default();
    t.begin(0);
    t.on_packet(&get_ack(f.len()), MS, &mut g);
    let order = [7u32, 3, 1, 3, 2, 6, 4, 5, 7, 2];
    let mut last = Step::Wait;
    for k in order {
        let s = if k == 7 { State::Last } else { State::Data };
        last = t.on_packet(&numbered(&f, k, s), MS, &mut g);
        if last == Step::Done {
            break;
        }
    }
    assert_eq!(last, Step::Done);
    assert_eq!(g.body, f);
    assert_eq!(g.writes, 6, "each range written once");
}

#[test]
fn timeouts_resend_back_off_and_give_up() {
    let mut t = Transfer::new(
        Timing {
            rto_ns: 10 * MS,
            rto_max_ns: 40 * MS,
            tries: 3,
        },
        None,
    );
    t.begin(0);
    assert_eq!(t.on_timeout(5 * MS), Step::Wait, "not yet");
    assert_eq!(t.on_timeout(10 * MS), Step::Send(Start::Initial));
    assert_eq!(t.deadline(), 30 * MS, "doubled");
    assert_eq!(t.on_timeout(30 * MS), Step::Send(Start::Initial));
    assert_eq!(t.deadline(), 70 * MS, "capped at 40 ms");
    assert_eq!(t.on_timeout(70 * MS), Step::Send(Start::Initial));
    assert_eq!(t.on_timeout(110 * MS), Step::Failed(Failure::Timeout));
    assert_eq!(t.deadline(), u64::MAX);
}

#[test]
fn progress_resets_the_timeout_and_a_resend_asks_from_the_first_gap() {
    let f = file(3 * UNIT);
    let mut t = Transfer::new(Timing::default(), None);
    let mut g = Got::default();
    t.begin(0);
    t.on_timeout(50 * MS);
    t.on_packet(&get_ack(f.len()), 60 * MS, &mut g);
    t.on_packet(&numbered(&f, 1, State::Header), 60 * MS, &mut g);
    assert_eq!(t.on_timeout(160 * MS), Step::Send(Start::From(2)));
    assert_eq!(t.deadline(), 160 * MS + 100 * MS, "the back-off went on");
    t.on_packet(&numbered(&f, 2, State::Data), 170 * MS, &mut g);
    t.on_packet(&numbered(&f, 4, State::Last), 170 * MS, &mut g);
    // The Last ended a burst with 3 missing: ask for it now.
    assert_eq!(t.counts.gets, 4);
    assert_eq!(
        t.on_packet(&numbered(&f, 3, State::Data), 171 * MS, &mut g),
        Step::Done
    );
}

#[test]
fn lost_get_ack_is_asked_for_again_at_the_burst_end() {
    let f = file(4096);
    let mut t = Transfer::new(Timing::default(), None);
    let mut g = Got::default();
    t.begin(0);
    assert_eq!(
        t.on_packet(&numbered(&f, 1, State::Header), MS, &mut g),
        Step::Wait
    );
    assert_eq!(
        t.on_packet(&numbered(&f, 4, State::Last), MS, &mut g),
        Step::Send(Start::Initial)
    );
    assert_eq!(t.counts.bad, 2);
}

#[test]
fn errors_and_bad_packets() {
    let mut g = Got::default();
    let mut t = Transfer::new(Timing::default(), None);
    t.begin(0);
    let e = pkt(State::Error, 0, ErrorCode::BadStart.code(), 4, &[]);
    assert_eq!(
        t.on_packet(&e, MS, &mut g),
        Step::Failed(Failure::Refused(ErrorCode::BadStart))
    );
    let mut t = Transfer::new(Timing::default(), None);
    t.begin(0);
    let e = pkt(State::Error, 0, 99, 0, &[]);
    assert_eq!(
        t.on_packet(&e, MS, &mut g),
        Step::Failed(Failure::RefusedUnknown(99))
    );
    // Garbage, a wrong size, a number beyond the count, an inconsistent Get-Ack.
    let f = file(4096);
    let mut t = Transfer::new(Timing::default(), None);
    t.begin(0);
    t.on_packet(&get_ack(4096), MS, &mut g);
    assert_eq!(t.on_packet(b"\x31junk", MS, &mut g), Step::Wait);
    assert_eq!(
        t.on_packet(&pkt(State::Data, 0, 3, 2, b"abc"), MS, &mut g),
        Step::Wait
    );
    assert_eq!(
        t.on_packet(&pkt(State::Data, 0, 3, 9, b"abc"), MS, &mut g),
        Step::Wait
    );
    assert_eq!(
        t.on_packet(&pkt(State::Header, 0, 3, 2, &f[..3]), MS, &mut g),
        Step::Wait
    );
    assert_eq!(t.counts.bad, 4);
    assert_eq!(
        t.on_packet(&pkt(State::GetAck, 0, 4096, 5, &[]), MS, &mut g),
        Step::Failed(Failure::Inconsistent)
    );
    let mut t = Transfer::new(Timing::default(), None);
    t.begin(0);
    assert_eq!(
        t.on_packet(&pkt(State::GetAck, 0, 4096, 3, &[]), MS, &mut g),
        Step::Failed(Failure::Inconsistent)
    );
    let mut t = Transfer::new(Timing::default(), None);
    t.begin(0);
    assert_eq!(
        t.on_packet(
            &pkt(
                State::GetAck,
                0,
                u32::MAX,
                1 + (u32::MAX as usize).div_ceil(UNIT) as u32,
                &[]
            ),
            MS,
            &mut g
        ),
        Step::Failed(Failure::TooLarge)
    );
}

#[test]
fn a_bounded_answer_is_counted_and_the_token_kept() {
    let f = file(10 * UNIT);
    let mut g = Got::default();
    let mut t = Transfer::new(Timing::default(), None);
    t.begin(0);
    let count = 11;
    let ack = pkt(
        State::GetAck,
        FLAG_TOKEN | FLAG_BOUNDED,
        f.len() as u32,
        count,
        &TOKEN,
    );
    t.on_packet(&ack, MS, &mut g);
    t.on_packet(&numbered(&f, 1, State::Header), MS, &mut g);
    t.on_packet(&numbered(&f, 2, State::Data), MS, &mut g);
    assert_eq!(
        t.on_packet(&numbered(&f, 3, State::LastNow), MS, &mut g),
        Step::Send(Start::From(4))
    );
    assert_eq!(t.counts.bounded, 1);
    assert_eq!(t.token(), Some(&TOKEN));
}

#[test]
fn stale_burst_ends_do_not_trigger_requests() {
    let f = file(30 * UNIT);
    let mut g = Got::default();
    let mut t = Transfer::new(Timing::default(), None);
    t.begin(0);
    t.on_packet(&get_ack(f.len()), MS, &mut g);
    for k in 1..=9 {
        t.on_packet(
            &numbered(&f, k, if k == 9 { State::LastNow } else { State::Data }),
            MS,
            &mut g,
        );
    }
    // Now asking from 10; a duplicate of the old burst end changes nothing.
    assert_eq!(
        t.on_packet(&numbered(&f, 9, State::LastNow), MS, &mut g),
        Step::Wait
    );
    assert_eq!(t.counts.gets, 2);
}

#[test]
fn a_huge_file_uses_the_window_only() {
    // 3000 packets: the window slides; the state stays its fixed size.
    let total = 3000 * UNIT;
    let mut t = Transfer::new(Timing::default(), None);
    let mut g = Counting(0);
    t.begin(0);
    let count = 1 + 3000;
    t.on_packet(&pkt(State::GetAck, 0, total as u32, count, &[]), MS, &mut g);
    let data = vec![1u8; UNIT];
    t.on_packet(&pkt(State::Header, 0, 1, 1, b"H"), MS, &mut g);
    for k in 2..=count {
        let s = if k == count { State::Last } else { State::Data };
        let step = t.on_packet(&pkt(s, 0, UNIT as u32, k, &data), MS, &mut g);
        assert_eq!(step == Step::Done, k == count);
    }
    assert_eq!(g.0, total as u64);
    // Beyond the window: refused, not stored.
    let mut t = Transfer::new(Timing::default(), None);
    t.begin(0);
    t.on_packet(&pkt(State::GetAck, 0, total as u32, count, &[]), MS, &mut g);
    assert_eq!(
        t.on_packet(&pkt(State::Data, 0, UNIT as u32, 2000, &data), MS, &mut g),
        Step::Wait
    );
    assert_eq!(t.counts.bad, 1);
}

struct Counting(u64);

impl Sink for Counting {
    fn begin(&mut self, _: u64) -> bool {
        true
    }
    fn head(&mut self, _: &[u8]) {}
    fn data(&mut self, _: u64, bytes: &[u8]) {
        self.0 += bytes.len() as u64;
    }
}
