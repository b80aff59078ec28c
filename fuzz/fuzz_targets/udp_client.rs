//! The UDP protocol's client state machine fed anything: each input is a sequence of
//! events (a tag octet: even = a datagram whose 2-octet length follows, odd = a clock step
//! and a timeout). Nothing may panic; the sink is only handed octets inside the body the
//! Get-Ack announced, each packet's range once; a finished transfer stays finished; the
//! deadline never goes backwards while the transfer waits.
#![no_main]

use bareweb_engine::udp::fetch::{Sink, Step, Timing, Transfer};
use libfuzzer_sys::fuzz_target;

#[derive(Default)]
struct Check {
    total: Option<u64>,
    seen: Vec<(u64, usize)>,
}

impl Sink for Check {
    fn begin(&mut self, total: u64) -> bool {
        assert!(self.total.is_none(), "begin twice");
        self.total = Some(total);
        total < 1 << 24
    }
    fn head(&mut self, _: &[u8]) {
        assert!(self.total.is_some(), "head before the Get-Ack");
    }
    fn data(&mut self, offset: u64, bytes: &[u8]) {
        let total = self.total.expect("data before the Get-Ack");
        assert!(offset + bytes.len() as u64 <= total, "past the end");
        assert!(!self.seen.contains(&(offset, bytes.len())), "a range twice");
        self.seen.push((offset, bytes.len()));
    }
}

fuzz_target!(|data: &[u8]| {
    let mut t = Transfer::new(Timing::default(), None);
    let mut sink = Check::default();
    let mut now = 0u64;
    let mut finished = matches!(t.begin(now), Step::Done | Step::Failed(_));
    let mut rest = data;
    while let Some((&tag, tail)) = rest.split_first() {
        rest = tail;
        let step = if tag % 2 == 0 {
            if rest.len() < 2 {
                break;
            }
            let len = usize::from(u16::from_be_bytes([rest[0], rest[1]])).min(rest.len() - 2);
            let pkt = &rest[2..2 + len];
            rest = &rest[2 + len..];
            t.on_packet(pkt, now, &mut sink)
        } else {
            now += u64::from(tag) * 1_000_000;
            t.on_timeout(now)
        };
        match step {
            Step::Done | Step::Failed(_) => {
                finished = true;
                assert_eq!(t.deadline(), u64::MAX);
            }
            Step::Send(_) | Step::Wait => {
                assert!(!finished || matches!(step, Step::Wait), "a finished transfer sent");
            }
        }
    }
});
