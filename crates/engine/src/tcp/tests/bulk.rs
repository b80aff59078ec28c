//! A 1 MiB download between two of our own connections, state machine to state machine:
//! the client (active open, offering the window scale its receive window needs, as
//! `crate::fetch` does with `Config::rx_window`) and the server (passive open, frames of
//! up to `TSO_LIMIT` bytes, as on its TAP). The client takes every frame of a burst and
//! then acknowledges once (a stretch ACK, as a receiver that reads a burst of
//! super-frames before it answers sends). Each round is one burst and its ACK: the round
//! trips the transfer costs.
//!
//! Pinned: the SYN offers the scale with an unscaled window; later segments advertise the
//! scaled window and the server uses all of it; with a window of 1 MiB the server's frames
//! are whole 64 KiB offload frames, where a 64 KiB window (no scaling: the bare client
//! before) cut them to a quarter window, 16 KiB, and cost a round trip per 64 KiB; a
//! stretch ACK of a whole burst doubles the server's window in slow start.

use super::*;
use crate::fetch::window_shift;
use crate::iface::egress::TSO_LIMIT;
use crate::wire::tcp::{Repr, SackBlocks};

const CLIENT_ISS: u32 = 0x3000_0000;
const CLIENT_PORT: u16 = 40_000;
const REQUEST: &[u8] = b"GET /files/1m.bin HTTP/1.1\r\nHost: x\r\n\r\n";
const BODY: u32 = 1 << 20;
/// Half the round trip between the two (the time a burst or an ACK takes to arrive).
const HALF_RTT: u64 = 50_000;
static ZEROS: [u8; 65_536] = [0; 65_536];

/// What the other side parses from the header `r` with `payload`.
fn parsed<'a>(r: &Repr, payload: &'a [u8]) -> ParsedRepr<'a> {
    ParsedRepr {
        src_port: r.src_port,
        dst_port: r.dst_port,
        seq_number: r.seq_number,
        ack_number: r.ack_number,
        flags: r.flags,
        window_len: r.window_len,
        options: Options {
            mss: r.max_seg_size,
            window_scale: r.window_scale,
            sack_permitted: r.sack_permitted,
            sack: SackBlocks::NONE,
            timestamps: r.timestamps,
        },
        payload,
    }
}

/// How the download went.
#[derive(Debug)]
struct Download {
    /// The window field of the client's SYN and the shift it offered.
    syn_window: (u16, Option<u8>),
    /// The window field of the client's ACKs, and the server's view of the window.
    ack_window: u16,
    snd_wnd: u32,
    /// Payload bytes of each frame the server sent.
    frames: Vec<u32>,
    /// Bursts (each followed by one ACK).
    rounds: u32,
    /// Most bytes the server had in flight.
    max_flight: u32,
}

/// The client with receive window `rx` fetches `BODY` bytes from a new connection.
fn download(rx: u32) -> Download {
    let mut now = 0;
    let mut cl = Connection::connect(CLIENT_ISS, now);
    cl.offer_rcv_shift(window_shift(rx));
    let syn = cl.syn(now);
    let r = cl.header(&syn, CLIENT_PORT, LOCAL_PORT, rx, now);
    let syn_window = (r.window_len, r.window_scale);
    now += HALF_RTT;
    let mut sv = Connection::accept(&parsed(&r, &[]), ISS, now);
    let sa = sv.syn_ack(now);
    let r = sv.header(&sa, LOCAL_PORT, CLIENT_PORT, RX, now);
    now += HALF_RTT;
    assert!(cl.input(&parsed(&r, &[]), now, rx).established);
    // The request rides the ACK of the SYN-ACK.
    cl.queue(REQUEST.len() as u32);
    let s = cl.next_segment(now, 0).expect("the request");
    cl.on_sent(&s, now);
    let r = cl.header(&s, CLIENT_PORT, LOCAL_PORT, rx, now);
    now += HALF_RTT;
    let o = sv.input(&parsed(&r, REQUEST), now, RX);
    assert_eq!(o.deliver, Some((0, REQUEST.len())));
    sv.queue(BODY);
    let mut d = Download {
        syn_window,
        ack_window: r.window_len,
        snd_wnd: sv.snd_wnd(),
        frames: Vec::new(),
        rounds: 0,
        max_flight: 0,
    };
    let mut got = 0;
    while got < BODY {
        d.rounds += 1;
        assert!(d.rounds < 1000, "no progress: {d:?}");
        let burst = send_all_max(&mut sv, now, TSO_LIMIT as u32);
        d.max_flight = d.max_flight.max(sv.flight());
        let sent = now;
        now += HALF_RTT;
        for s in &burst {
            let r = sv.header(s, LOCAL_PORT, CLIENT_PORT, RX, sent);
            let o = cl.input(&parsed(&r, &ZEROS[..s.len as usize]), now, rx);
            assert_eq!(o.deliver, Some((0, s.len as usize)), "{s:?}");
            got += s.len;
            d.frames.push(s.len);
        }
        let a = cl.ack_segment();
        let r = cl.header(&a, CLIENT_PORT, LOCAL_PORT, rx, now);
        d.ack_window = r.window_len;
        now += HALF_RTT;
        sv.input(&parsed(&r, &[]), now, RX);
        d.snd_wnd = sv.snd_wnd();
    }
    assert!(sv.all_acked());
    d
}

#[test]
fn a_1_mib_window_is_offered_scaled_and_used_whole() {
    let d = download(1 << 20);
    assert_eq!(window_shift(1 << 20), 5);
    assert_eq!(
        d.syn_window,
        (65_535, Some(5)),
        "a SYN's window is never scaled"
    );
    assert_eq!(d.ack_window, 32_768, "1 MiB >> 5");
    assert_eq!(d.snd_wnd, 1 << 20);
    assert!(d.max_flight > 7 * 65_535, "{d:?}");
    // 45 segments of 1448 (MSS less timestamps): the most a 64 KiB offload frame holds.
    let full = TSO_LIMIT as u32 / 1448 * 1448;
    assert_eq!(full, 65_160);
    assert_eq!(d.frames.iter().max(), Some(&full));
    // Slow start doubles per round trip on one ACK per burst: 14 KiB, 29, 58, 116, 232
    // (in frames of a quarter window until that reaches a whole frame), 463 (whole
    // frames), then the rest: 7 rounds, 32 frames.
    assert_eq!(d.rounds, 7, "{d:?}");
    assert_eq!(d.frames.len(), 32, "{d:?}");
    assert!(
        d.frames.iter().filter(|&&f| f == full).count() >= 9,
        "the last half of the body in whole frames: {d:?}"
    );
}

#[test]
fn an_unscaled_64_kib_window_costs_a_round_trip_per_64_kib_in_quarter_window_frames() {
    // The bare client before it scaled its window: a quarter of 65,535 per frame
    // (eleven segments), at most 64 KiB per round trip.
    let d = download(65_535);
    assert_eq!(d.syn_window, (65_535, Some(0)));
    assert_eq!((d.ack_window, d.snd_wnd), (65_535, 65_535));
    assert!(d.max_flight <= 65_535);
    // Every frame but the one that ends the body: at most eleven segments.
    let (last, rest) = d.frames.split_last().unwrap();
    assert!(rest.iter().all(|&f| f <= 11 * 1448), "{d:?}");
    assert!(*last <= 65_535);
    assert_eq!(d.rounds, 18, "{d:?}");
    assert_eq!(d.frames.len(), 84, "{d:?}");
}

#[test]
fn without_the_servers_answer_the_window_stays_unscaled() {
    let mut c = Connection::connect(CLIENT_ISS, 0);
    c.offer_rcv_shift(5);
    let syn = c.syn(0);
    assert_eq!(
        c.header(&syn, CLIENT_PORT, LOCAL_PORT, 1 << 20, 0)
            .window_scale,
        Some(5)
    );
    // A SYN-ACK without the option: neither side scales (RFC 7323 §1.3).
    let sa = ParsedRepr {
        seq_number: IRS,
        ack_number: Some(CLIENT_ISS + 1),
        flags: Flags {
            syn: true,
            ack: true,
            ..NO_FLAGS
        },
        dst_port: CLIENT_PORT,
        ..RECV_TEMPL
    };
    assert!(c.input(&sa, MS, 1 << 20).established);
    assert_eq!(c.rcv_shift(), 0);
    let a = c.ack_segment();
    let r = c.header(&a, CLIENT_PORT, LOCAL_PORT, 1 << 20, MS);
    assert_eq!(r.window_len, 65_535);
    // And the window it accepts is the 65,535 it advertised.
    let at = |off: u32| ParsedRepr {
        seq_number: IRS + 1 + off,
        ack_number: Some(CLIENT_ISS + 1),
        dst_port: CLIENT_PORT,
        payload: &ZEROS[..1],
        ..RECV_TEMPL
    };
    assert!(c.input(&at(65_535), MS, 1 << 20).out_of_window);
    assert!(!c.input(&at(65_534), MS, 1 << 20).out_of_window);
}

#[test]
fn a_scaled_window_is_whole_units_and_accepts_what_it_advertised() {
    let mut c = Connection::connect(CLIENT_ISS, 0);
    c.offer_rcv_shift(5);
    c.syn(0);
    let sa = ParsedRepr {
        seq_number: IRS,
        ack_number: Some(CLIENT_ISS + 1),
        flags: Flags {
            syn: true,
            ack: true,
            ..NO_FLAGS
        },
        dst_port: CLIENT_PORT,
        options: Options {
            window_scale: Some(7),
            ..NO_OPTIONS
        },
        ..RECV_TEMPL
    };
    assert!(c.input(&sa, MS, 1 << 20).established);
    assert_eq!(c.rcv_shift(), 5);
    assert_eq!(c.rcv_wnd(1 << 20), 1 << 20);
    assert_eq!(
        c.rcv_wnd(100_000),
        100_000 / 32 * 32,
        "rounded down to whole units"
    );
    assert_eq!(
        c.rcv_wnd(u32::MAX),
        65_535 << 5,
        "what 16 bits of units can say"
    );
    let at = |off: u32| ParsedRepr {
        seq_number: IRS + 1 + off,
        ack_number: Some(CLIENT_ISS + 1),
        dst_port: CLIENT_PORT,
        payload: &ZEROS[..1],
        ..RECV_TEMPL
    };
    assert!(!c.input(&at((1 << 20) - 1), MS, 1 << 20).out_of_window);
    assert!(c.input(&at(1 << 20), MS, 1 << 20).out_of_window);
    // Offering more than 14 offers 14 (RFC 7323 §2.3).
    let mut c = Connection::connect(CLIENT_ISS, 0);
    c.offer_rcv_shift(20);
    let syn = c.syn(0);
    assert_eq!(
        c.header(&syn, CLIENT_PORT, LOCAL_PORT, u32::MAX, 0)
            .window_scale,
        Some(14)
    );
}

#[test]
fn window_shift_is_the_least_that_says_the_window() {
    assert_eq!(window_shift(0), 0);
    assert_eq!(window_shift(65_535), 0);
    assert_eq!(window_shift(65_536), 1);
    assert_eq!(window_shift(131_070), 1);
    assert_eq!(window_shift(262_144), 3);
    assert_eq!(window_shift(u32::MAX), 14);
}
