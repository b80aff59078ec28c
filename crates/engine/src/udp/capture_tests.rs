//! The protocol's formats against bytes captured from a real exchange
//! (`testdata/bwudp/`: requests and answers of `bareweb serve --udp-port` on a TAP, the
//! exchanges of docs/udp-protocol.md §9; each `.ans` is the answer datagrams with a
//! 2-octet length before each).

use std::vec::Vec;

use super::fetch::{Failure, Sink, Step, Timing, Transfer};
use super::wire::{parse_request, ErrorCode, Header, Start, State, TokenField, UNIT};

fn answers(bytes: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while rest.len() >= 2 {
        let n = usize::from(u16::from_be_bytes([rest[0], rest[1]]));
        out.push(&rest[2..2 + n]);
        rest = &rest[2 + n..];
    }
    out
}

const FILE_4K: &[u8] = include_bytes!("../../../../examples/site/files/4k.html");

#[derive(Default)]
struct Got(Vec<u8>, Vec<u8>);

impl Sink for Got {
    fn begin(&mut self, total: u64) -> bool {
        self.0 = vec![0; total as usize];
        true
    }
    fn head(&mut self, h: &[u8]) {
        self.1 = h.to_vec();
    }
    fn data(&mut self, off: u64, b: &[u8]) {
        self.0[off as usize..off as usize + b.len()].copy_from_slice(b);
    }
}

#[test]
fn captured_requests_parse() {
    let r = parse_request(include_bytes!("../../testdata/bwudp/initial.req")).unwrap();
    assert_eq!(r.start, Start::Initial);
    assert_eq!(r.token, TokenField::Absent);
    assert!(r
        .head
        .starts_with(b"GET /files/4k.html HTTP/1.1\r\nHost: 10.0.0.2:8081\r\n\r\n"));
    let r = parse_request(include_bytes!("../../testdata/bwudp/subsequent.req")).unwrap();
    assert_eq!(r.start, Start::From(4));
    assert!(matches!(r.token, TokenField::Token(_)));
    assert!(parse_request(include_bytes!("../../testdata/bwudp/malformed.req")).is_err());
}

#[test]
fn captured_answers_carry_the_spec_fields() {
    let a = answers(include_bytes!("../../testdata/bwudp/initial.ans"));
    let h: Vec<Header> = a.iter().map(|p| Header::parse(p).unwrap().0).collect();
    assert_eq!(
        h.iter().map(|h| h.state).collect::<Vec<_>>(),
        [State::GetAck, State::Header, State::Data, State::LastNow]
    );
    assert_eq!((h[0].a, h[0].b, h[0].flags), (4096, 4, 0x03));
    assert!(h
        .iter()
        .all(|h| h.core == 0 && h.unit as usize == UNIT && h.request_id == 1));
    assert_eq!((h[2].a, h[2].b, h[3].b), (1408, 2, 3));
    let e = answers(include_bytes!("../../testdata/bwudp/bad-start.ans"));
    let (eh, _) = Header::parse(e[0]).unwrap();
    assert_eq!(
        (eh.state, eh.a, eh.b),
        (State::Error, ErrorCode::BadStart.code(), 4)
    );
}

#[test]
fn the_client_completes_a_captured_transfer() {
    let mut t = Transfer::new(Timing::default(), None);
    let mut g = Got::default();
    assert_eq!(t.begin(0), Step::Send(Start::Initial));
    let mut step = Step::Wait;
    for p in answers(include_bytes!("../../testdata/bwudp/initial.ans")) {
        step = t.on_packet(p, 1, &mut g);
    }
    assert_eq!(
        step,
        Step::Send(Start::From(4)),
        "the bounded answer ended at 3"
    );
    for p in answers(include_bytes!("../../testdata/bwudp/subsequent.ans")) {
        step = t.on_packet(p, 2, &mut g);
    }
    assert_eq!(step, Step::Done);
    assert_eq!(g.0, FILE_4K);
    assert!(g.1.starts_with(b"HTTP/1.1 200 OK\r\n"));
    // The captured refusal ends a transfer with its code.
    let mut t = Transfer::new(Timing::default(), None);
    t.begin(0);
    let e = answers(include_bytes!("../../testdata/bwudp/malformed.ans"));
    assert_eq!(
        t.on_packet(e[0], 1, &mut g),
        Step::Failed(Failure::Refused(ErrorCode::Malformed))
    );
}
