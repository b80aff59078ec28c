//! The UDP protocol's request parser and the answer to it (docs/udp-protocol.md): any
//! datagram is split or refused without a panic, and whatever the answer, its packets to
//! a source that has not proved its address add up to at most three times the datagram
//! (the amplification bound), each packet's stored-sum checksum equals its bytes' sum, and
//! every packet parses back as what was meant.
#![no_main]

use std::sync::OnceLock;

use bareweb_engine::http::HEAD_MAX;
use bareweb_engine::site::{build_from_files, Site};
use bareweb_engine::udp::answer::{answer, Answer, Params, Payload};
use bareweb_engine::udp::wire::{parse_request, Header, HEADER_LEN};
use bareweb_engine::wire::checksum;
use libfuzzer_sys::fuzz_target;

fn site() -> Site<'static> {
    static IMAGE: OnceLock<Vec<u8>> = OnceLock::new();
    let image = IMAGE.get_or_init(|| {
        build_from_files(&[
            ("/index.html".into(), b"<h1>fuzz</h1>".to_vec(), 1_700_000_000),
            ("/big.bin".into(), (0..30_000u32).map(|i| i as u8).collect(), 1_700_000_000),
        ])
        .expect("fuzz site builds")
    });
    Site::load(image).expect("fuzz site loads")
}

fuzz_target!(|data: &[u8]| {
    let Ok(req) = parse_request(data) else {
        return;
    };
    assert!(req.head.len() + 4 == data.len());
    // The last octet of the input chooses the burst and whether the bound applies.
    let knob = data.last().copied().unwrap_or(0);
    let budget = (knob & 0x80 == 0).then(|| 3 * data.len());
    let p = Params {
        burst: (knob & 0x3f).max(1),
        budget,
        token: budget.map(|_| [knob; 8]),
        request_id: 1,
        core: 0,
    };
    let mut head = [0u8; HEAD_MAX];
    let site = site();
    match answer(&req, &site, 1_700_000_000, "fuzz", &mut head, p) {
        Answer::Send(mut b) => {
            let mut sent = 0;
            let mut buf = Vec::new();
            while let Some(pkt) = b.next() {
                sent += HEADER_LEN + pkt.payload.len();
                buf.clear();
                buf.resize(HEADER_LEN, 0);
                pkt.header.emit(&mut buf);
                match pkt.payload {
                    Payload::None => {}
                    Payload::Token(t) => buf.extend_from_slice(&t),
                    Payload::Head(n) => buf.extend_from_slice(&head[..n]),
                    Payload::Body { data, sum } => {
                        assert_eq!(sum, checksum::sum(data));
                        buf.extend_from_slice(data);
                    }
                }
                let (h, _) = Header::parse(&buf).expect("an emitted packet parses");
                assert_eq!(h, pkt.header);
            }
            if let Some(limit) = budget {
                assert!(sent <= limit, "{sent} > {limit}");
            }
        }
        Answer::Refuse(..) | Answer::Nothing => {}
    }
});
