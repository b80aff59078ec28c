//! The answer, packet by packet: states, numbers, sizes, flags, the bound, the errors.

use std::vec::Vec;

use super::*;
use crate::resource::{block_sums_into, Body, Found, Resource};
use crate::udp::wire::{parse_request, write_request, PAD_TO};
use crate::wire::checksum;

struct Site(Vec<(&'static str, Resource<'static>)>);

fn body(data: Vec<u8>) -> Body<'static> {
    let data: &'static [u8] = Vec::leak(data);
    let mut sums = vec![0u8; 2 * Body::blocks_for(data.len())];
    block_sums_into(data, &mut sums);
    Body {
        data,
        block_sums: Vec::leak(sums),
    }
}

fn site() -> Site {
    let res = |n: usize| Resource {
        content_type: "application/octet-stream",
        etag: "\"e\"",
        last_modified: 1_700_000_000,
        identity: body((0..n).map(|i| (i * 7 + i / 251) as u8).collect()),
        gzip: None,
        br: None,
        zstd: None,
        headers: "",
    };
    Site(vec![
        ("/4k", res(4096)),
        ("/empty", res(0)),
        ("/one", res(UNIT)),
        ("/big", res(100 * UNIT + 5)),
    ])
}

impl Lookup<'static> for Site {
    fn lookup(&self, path: &[u8]) -> Found<'static> {
        match self.0.iter().find(|(p, _)| p.as_bytes() == path) {
            Some((_, r)) => Found::Resource(*r),
            None => Found::NotFound,
        }
    }
}

const TOKEN: [u8; 8] = [1, 2, 3, 4, 5, 6, 7, 8];

fn params(budget: Option<usize>) -> Params {
    Params {
        burst: 8,
        budget,
        token: Some(TOKEN),
        request_id: 42,
        core: 2,
    }
}

/// A packet as (state, A, B, flags, payload length).
type Seen = (State, u32, u32, u8, usize);

/// The packets answering a GET of `path` from `start`, as (state, a, b, flags, payload).
fn packets(path: &str, start: Start, pad: usize, p: Params) -> Result<Vec<Seen>, Answer<'static>> {
    let mut buf = [0u8; 1500];
    let n = write_request(&mut buf, "h", path, start, None, pad).unwrap();
    let req = parse_request(&buf[..n]).unwrap();
    let mut head = [0u8; http::HEAD_MAX];
    match answer(&req, &site(), 1_700_000_000, "bareweb", &mut head, p) {
        Answer::Send(mut b) => {
            let mut out = Vec::new();
            let before = b.remaining();
            while let Some(p) = b.next() {
                assert_eq!(p.header.request_id, 42);
                assert_eq!(p.header.core, 2);
                assert_eq!(p.header.unit as usize, UNIT);
                assert_eq!(p.header.version, VERSION);
                if let Payload::Body { data, sum } = p.payload {
                    assert_eq!(
                        sum,
                        checksum::sum(data),
                        "stored sums give the packet's sum"
                    );
                }
                out.push((
                    p.header.state,
                    p.header.a,
                    p.header.b,
                    p.header.flags,
                    p.payload.len(),
                ));
            }
            assert_eq!(before, out.len());
            Ok(out)
        }
        other => Err(other),
    }
}

#[test]
fn initial_get_of_4k_is_get_ack_header_and_three_data_packets() {
    let p = packets("/4k", Start::Initial, 0, params(None)).unwrap();
    let states: Vec<_> = p.iter().map(|x| x.0).collect();
    assert_eq!(
        states,
        [
            State::GetAck,
            State::Header,
            State::Data,
            State::Data,
            State::Last
        ]
    );
    assert_eq!(p[0], (State::GetAck, 4096, 4, FLAG_TOKEN, 8));
    assert_eq!((p[1].2, p[1].1 as usize, p[1].4), (1, p[1].4, p[1].4));
    assert_eq!(p[2], (State::Data, 1408, 2, 0, 1408));
    assert_eq!(p[3], (State::Data, 1408, 3, 0, 1408));
    assert_eq!(p[4], (State::Last, 1280, 4, 0, 1280));
}

#[test]
fn bursts_of_a_large_file_end_with_last_data_now() {
    // 100 full packets + 5 octets: 101 data packets, count 102.
    let p = packets("/big", Start::Initial, 0, params(None)).unwrap();
    assert_eq!(p[0].1, (100 * UNIT + 5) as u32);
    assert_eq!(p[0].2, 102);
    assert_eq!(p.len(), 1 + 1 + 8, "Get-Ack, header, n = 8 data packets");
    assert_eq!(p[9], (State::LastNow, 1408, 9, 0, 1408));
    // A subsequent GET: n packets from its start, no Get-Ack (with a proven source).
    let p = packets("/big", Start::From(10), 0, params(None)).unwrap();
    let nums: Vec<_> = p.iter().map(|x| x.2).collect();
    assert_eq!(nums, (10..18).collect::<Vec<_>>());
    assert_eq!(p[7].0, State::LastNow);
    assert!(p[..7].iter().all(|x| x.0 == State::Data));
    // The end of the file.
    let p = packets("/big", Start::From(100), 0, params(None)).unwrap();
    assert_eq!(p.iter().map(|x| x.2).collect::<Vec<_>>(), [100, 101, 102]);
    assert_eq!(p[2], (State::Last, 5, 102, 0, 5));
    // From the header again.
    let p = packets("/big", Start::From(1), 0, params(None)).unwrap();
    assert_eq!(p[0].0, State::Header);
    assert_eq!(p.len(), 8);
    assert_eq!(p[7], (State::LastNow, 1408, 8, 0, 1408));
}

#[test]
fn no_body_means_one_packet() {
    let p = packets("/empty", Start::Initial, 0, params(None)).unwrap();
    assert_eq!(p.len(), 2);
    assert_eq!((p[0].1, p[0].2), (0, 1));
    assert_eq!(p[1].0, State::Header);
    // 404: the head with its small page, in packet 1.
    let p = packets("/missing", Start::Initial, 0, params(None)).unwrap();
    assert_eq!(p.len(), 2);
    assert_eq!((p[0].1, p[0].2), (0, 1));
    // Exactly one unit: one data packet, Last.
    let p = packets("/one", Start::Initial, 0, params(None)).unwrap();
    assert_eq!(p[2], (State::Last, UNIT as u32, 2, 0, UNIT));
}

#[test]
fn refusals() {
    assert_eq!(
        packets("/4k", Start::From(5), 0, params(None)),
        Err(Answer::Refuse(ErrorCode::BadStart, 4))
    );
    assert_eq!(
        packets("/4k", Start::From(0), 0, params(None)),
        Err(Answer::Refuse(ErrorCode::BadStart, 4))
    );
    let req =
        parse_request(b"GET /4k HTTP/1.1\r\nHost: h\r\nBW-Version: 2\r\n\r\n\x99\x99\x99\x99")
            .unwrap();
    let mut head = [0u8; http::HEAD_MAX];
    assert_eq!(
        answer(&req, &site(), 0, "b", &mut head, params(None)),
        Answer::Refuse(ErrorCode::Version, 0)
    );
    // A head HTTP refuses is answered in HTTP: 400 in packet 1.
    let req = parse_request(b"GET /4k HTTP/1.1\r\n\r\n\x99\x99\x99\x99").unwrap();
    match answer(&req, &site(), 0, "b", &mut head, params(None)) {
        Answer::Send(b) => assert_eq!((b.status, b.count), (400, 1)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_bound_holds_for_every_request_size() {
    for pad in [0, 40, 100, 200, 500, PAD_TO, 1472] {
        for start in [
            Start::Initial,
            Start::From(1),
            Start::From(2),
            Start::From(50),
        ] {
            let mut buf = [0u8; 1500];
            let n = write_request(&mut buf, "h", "/big", start, None, pad).unwrap();
            match packets("/big", start, pad, params(Some(3 * n))) {
                Ok(p) => {
                    let sent: usize = p.iter().map(|x| HEADER_LEN + x.4).sum();
                    assert!(sent <= 3 * n, "pad {pad} {start:?}: {sent} > 3 x {n}");
                    assert_eq!(p[0].0, State::GetAck, "a Get-Ack carries the token");
                    let all = match start {
                        Start::Initial => 10,
                        _ => 9,
                    };
                    let cut = p.len() < all;
                    assert_eq!(p[0].3 & FLAG_BOUNDED != 0, cut, "pad {pad} {start:?}");
                    // A cut answer ends with Last-data-now when it got to the data.
                    if cut && p.len() > 2 {
                        assert_eq!(p.last().unwrap().0, State::LastNow);
                    }
                }
                Err(Answer::Nothing) => assert!(3 * n < HEADER_LEN + 8),
                Err(other) => panic!("{other:?}"),
            }
        }
    }
    // A padded initial GET earns the Get-Ack, the head and two data packets.
    let p = packets("/big", Start::Initial, PAD_TO, params(Some(3 * PAD_TO))).unwrap();
    assert_eq!(p.len(), 4);
    assert_eq!(p[3].0, State::LastNow);
}

#[test]
fn paper_mode_has_no_token_and_no_get_ack_on_subsequent_gets() {
    let p = Params {
        token: None,
        ..params(None)
    };
    let a = packets("/4k", Start::Initial, 0, p).unwrap();
    assert_eq!(a[0], (State::GetAck, 4096, 4, 0, 0));
    let b = packets("/big", Start::From(3), 0, p).unwrap();
    assert_eq!(b[0].0, State::Data);
}

#[test]
fn ranges_and_head_requests_follow_http() {
    let mut head = [0u8; http::HEAD_MAX];
    let req = parse_request(
        b"GET /4k HTTP/1.1\r\nHost: h\r\nRange: bytes=100-1607\r\n\r\n\x99\x99\x99\x99",
    )
    .unwrap();
    let Answer::Send(mut b) = answer(&req, &site(), 0, "b", &mut head, params(None)) else {
        panic!()
    };
    assert_eq!((b.status, b.total, b.count), (206, 1508, 3));
    b.next();
    b.next();
    let p = b.next().unwrap();
    let Payload::Body { data, .. } = p.payload else {
        panic!()
    };
    let want: Vec<u8> = (100..100 + UNIT).map(|i| (i * 7 + i / 251) as u8).collect();
    assert_eq!(data, &want[..]);
    let req = parse_request(b"HEAD /4k HTTP/1.1\r\nHost: h\r\n\r\n\x99\x99\x99\x99").unwrap();
    let Answer::Send(b) = answer(&req, &site(), 0, "b", &mut head, params(None)) else {
        panic!()
    };
    assert_eq!((b.status, b.total, b.count), (200, 0, 1));
}
