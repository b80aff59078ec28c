//! The engine's client side (the bare load client's TCP): a connection in SYN-SENT
//! (`tcp::active`) fed arbitrary segments, each made of 24 bytes of the input (flags,
//! window, sequence and acknowledgment numbers near the ones that matter, options) and its
//! payload, with the timer run between them; and the client's response reader
//! (`client::http::Reader`) fed the input in pieces of the size its first byte picks.
//! Neither may panic, and the reader never reports more body than it was given.
#![no_main]

use bareweb_engine::fetch::http::Reader;
use bareweb_engine::tcp::{Connection, Reply, TimerAction};
use bareweb_engine::wire::tcp::{parse_options, Flags, Options, ParsedRepr};
use libfuzzer_sys::fuzz_target;

const ISS: u32 = 0xffff_ff00; // wraps soon: sequence arithmetic is exercised
const IRS: u32 = 1000;

fn word(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fuzz_target!(|data: &[u8]| {
    // The reader.
    if let Some((&piece, rest)) = data.split_first() {
        let mut r = Reader::new();
        let mut body = 0usize;
        for chunk in rest.chunks(usize::from(piece) + 1) {
            match r.feed(chunk) {
                Ok(f) => {
                    assert!(f.used <= chunk.len() && f.body.0 <= f.body.1 && f.body.1 <= f.used);
                    body += f.body.1 - f.body.0;
                    if f.done {
                        r.reset();
                    }
                }
                Err(_) => break,
            }
        }
        assert!(body <= rest.len());
        r.end_of_stream();
    }

    // The active open.
    let mut c = Connection::connect(ISS, 0);
    c.syn(0);
    let mut now = 0u64;
    let mut at = 0;
    while at + 24 <= data.len() {
        let h = &data[at..at + 24];
        let plen = usize::from(h[3] & 0x3f);
        let payload = data.get(at + 24..at + 24 + plen).unwrap_or(&[]);
        at += 24 + payload.len();
        let f = h[0];
        let flags = Flags {
            fin: f & 1 != 0,
            syn: f & 2 != 0,
            rst: f & 4 != 0,
            psh: f & 8 != 0,
            ack: f & 16 != 0,
        };
        // Near the numbers that matter, or anywhere.
        let seq = if f & 32 != 0 { word(&h[4..]) } else { IRS.wrapping_add(u32::from(h[4])) };
        let ack = if f & 64 != 0 { word(&h[8..]) } else { ISS.wrapping_add(u32::from(h[8]) % 8) };
        let options = parse_options(&h[12..24]).unwrap_or(Options::default());
        let seg = ParsedRepr {
            src_port: 80,
            dst_port: 40000,
            seq_number: seq,
            ack_number: flags.ack.then_some(ack),
            flags,
            window_len: u16::from_be_bytes([h[1], h[2]]),
            options,
            payload,
        };
        now += u64::from(h[3] >> 6) * 700_000_000;
        let out = c.input(&seg, now, 65535);
        if let Some((s, e)) = out.deliver {
            assert!(s <= e && e <= payload.len());
        }
        if out.reply == Reply::SynAck {
            c.syn_ack(now);
        }
        c.queue(10);
        while let Some(s) = c.next_segment(now, 0) {
            c.on_sent(&s, now);
            if s.fin {
                break;
            }
        }
        if let TimerAction::ResendSynAck = c.on_timer(now, 60_000_000_000, 8) {
            c.syn_ack(now);
        }
        let _ = c.header(&c.ack_segment(), 40000, 80, 65535, now);
    }
});
