//! State-machine tests of [`Connection`]: a segment in (a [`ParsedRepr`] built from a
//! template with `..` struct update), the [`Outcome`], the state and the segments out
//! (from [`Connection::next_segment`], [`Connection::on_timer`], [`Connection::header`]).
//! No frame and no server: the owner's part is played by the helpers below.
//!
//! Conventions: our ISS is [`ISS`], the peer's is [`IRS`]; [`LOCAL_SEQ`] is the first octet
//! of our stream, [`REMOTE_SEQ`] the first of the peer's. Times are in ns from 0 ([`MS`]).
//!
//! - [`active`]: the active open (connect, SYN-SENT, simultaneous open, the client's close);
//! - [`handshake`]: accept (options), SYN-RECEIVED, the SYN-ACK timer, the handshake's RTT
//!   sample;
//! - [`established`]: acceptability (RFC 9293 §3.10.7.4), receiving data;
//! - [`close`]: both closing orders, simultaneous close, FINs in and out of order;
//! - [`rst_syn`]: RFC 5961 §3.2 (RST) and §4 (SYN), ACKs of unsent data;
//! - [`window`]: the send window, initial window, slow start, CUBIC congestion avoidance,
//!   SWS avoidance, the SND.WL1/WL2 rule, window scaling;
//! - [`offload`]: frames larger than the MSS;
//! - [`bulk`]: a 1 MiB download, client connection to server connection (window
//!   scaling on the receive side, frame sizes, round trips);
//! - [`retransmit`]: RFC 6298 timing, backoff and go-back-N, aborts;
//! - [`recovery`]: RFC 5681 §3.2 / RFC 6582 NewReno;
//! - [`sack`]: RFC 6675 SACK recovery paced by RFC 6937 PRR, and loss probes (RFC 8985's
//!   tail loss probe, and in recovery);
//! - [`timestamps`]: RFC 7323 negotiation, TS.Recent, PAWS, RTT samples from TSecr;
//! - [`persist`]: zero windows and probes;
//! - [`header`]: the header built for a segment;
//! - [`bbr`]: BBR at the connection level: pacing, the TSO goal, rate samples, loss;
//! - [`robustness`]: a property test over arbitrary segment sequences (CUBIC and BBR).

mod active;
mod bbr;
mod bulk;
mod close;
mod established;
mod handshake;
mod header;
mod offload;
mod persist;
mod recovery;
mod retransmit;
mod robustness;
mod rst_syn;
mod sack;
mod timestamps;
mod window;

use std::vec::Vec;

use super::conn::{Connection, Outcome, Reply};
use super::output::Segment;
use super::state::State;
use crate::wire::tcp::{Flags, Options, ParsedRepr};

/// Our port.
pub const LOCAL_PORT: u16 = 80;
/// The peer's port.
pub const REMOTE_PORT: u16 = 49_500;
/// Our initial send sequence number.
pub const ISS: u32 = 0x1000_0000;
/// The peer's initial sequence number.
pub const IRS: u32 = 0x2000_0000;
/// The first octet of our stream.
pub const LOCAL_SEQ: u32 = ISS + 1;
/// The first octet of the peer's stream.
pub const REMOTE_SEQ: u32 = IRS + 1;
/// One millisecond in ns.
pub const MS: u64 = 1_000_000;
/// One second in ns.
pub const SEC: u64 = 1_000 * MS;
/// The receive space the helpers give (the server's default `--rx-buffer`).
pub const RX: u32 = 8192;
/// The stall bound the timer tests pass (the server's default, 60 s).
pub const STALL: u64 = 60 * SEC;
/// The retry bound the timer tests pass (the server's default).
pub const RETRIES: u8 = 8;

/// No control bit.
pub const NO_FLAGS: Flags = Flags {
    fin: false,
    syn: false,
    rst: false,
    psh: false,
    ack: false,
};
/// ACK only.
pub const ACK: Flags = Flags {
    ack: true,
    ..NO_FLAGS
};
/// FIN + ACK.
pub const FIN_ACK: Flags = Flags {
    fin: true,
    ack: true,
    ..NO_FLAGS
};
/// RST (without ACK).
pub const RST: Flags = Flags {
    rst: true,
    ..NO_FLAGS
};
/// No option.
pub const NO_OPTIONS: Options = Options {
    mss: None,
    window_scale: None,
    sack_permitted: false,
    sack: crate::wire::tcp::SackBlocks::NONE,
    timestamps: None,
};

/// A segment from the peer in a synchronized state: ACK of our SYN, window 65535.
pub const RECV_TEMPL: ParsedRepr<'static> = ParsedRepr {
    src_port: REMOTE_PORT,
    dst_port: LOCAL_PORT,
    seq_number: REMOTE_SEQ,
    ack_number: Some(LOCAL_SEQ),
    flags: ACK,
    window_len: 65_535,
    options: NO_OPTIONS,
    payload: &[],
};

/// The peer's SYN: MSS 1460, no SACK, no window scale, window 64240 (the NewReno tests;
/// [`sack`] offers SACK).
pub const SYN_TEMPL: ParsedRepr<'static> = ParsedRepr {
    seq_number: IRS,
    ack_number: None,
    flags: Flags {
        syn: true,
        ..NO_FLAGS
    },
    window_len: 64_240,
    options: Options {
        mss: Some(1460),
        window_scale: None,
        sack_permitted: false,
        sack: crate::wire::tcp::SackBlocks::NONE,
        timestamps: None,
    },
    ..RECV_TEMPL
};

/// Payload bytes for received segments.
static PAYLOAD: [u8; 4096] = [b'x'; 4096];

/// `n` payload bytes.
pub fn data(n: usize) -> &'static [u8] {
    &PAYLOAD[..n]
}

/// A data segment we expect out.
pub const fn out(seq: u32, len: u32, fin: bool) -> Segment {
    Segment {
        seq,
        len,
        syn: false,
        fin,
        probe: false,
    }
}

/// A connection accepted from `syn` at time 0 with its SYN-ACK sent.
pub fn syn_received_with(syn: &ParsedRepr<'_>) -> Connection {
    let mut c = Connection::accept(syn, ISS, 0);
    let s = c.syn_ack(0);
    assert!(s.syn && s.seq == ISS);
    c
}

/// A connection in SYN-RECEIVED from [`SYN_TEMPL`].
pub fn syn_received() -> Connection {
    syn_received_with(&SYN_TEMPL)
}

/// A connection established from `syn` whose completing ACK advertised `window`.
pub fn established_with(syn: &ParsedRepr<'_>, window: u16) -> Connection {
    let mut c = syn_received_with(syn);
    let o = c.input(
        &ParsedRepr {
            window_len: window,
            ..RECV_TEMPL
        },
        0,
        RX,
    );
    assert!(o.established, "{o:?}");
    assert_eq!(c.state(), State::Established);
    c
}

/// The default connection: established at time 0, MSS 1460, window 65535, no scaling.
/// Its SYN-ACK was timed and the completing ACK came at once: the handshake's RTT sample
/// of 0 (taken as 1 µs) leaves SRTT 1 µs, RTTVAR 0 and the RTO at its 200 ms floor.
pub fn established() -> Connection {
    established_with(&SYN_TEMPL, 65_535)
}

/// [`established`] without an RTT sample: its SYN-ACK untimed, as a SYN cookie's TCB's is
/// ([`Connection::syn_ack_sent`]), and no timestamps to echo, so the RTO is still the
/// initial 1 s (RFC 6298 §2.1) and the first data sample is the first sample.
pub fn established_unsampled() -> Connection {
    let mut c = Connection::accept(&SYN_TEMPL, ISS, 0);
    let s = c.syn_ack_sent(0);
    assert!(s.syn && s.seq == ISS);
    assert!(c.input(&RECV_TEMPL, 0, RX).established);
    assert_eq!(c.rtt().srtt_us, 0);
    assert_eq!(c.rtt().rto_ns(), SEC);
    c
}

/// Feeds `seg` at `now` with the default receive space.
pub fn recv(c: &mut Connection, now: u64, seg: ParsedRepr<'_>) -> Outcome {
    c.input(&seg, now, RX)
}

/// A pure ACK of `ack` from the peer at RCV.NXT, window 65535.
pub fn ack_of(c: &Connection, ack: u32) -> ParsedRepr<'static> {
    ParsedRepr {
        seq_number: c.rcv_nxt(),
        ack_number: Some(ack),
        ..RECV_TEMPL
    }
}

/// A pure ACK of `ack` advertising `window`.
pub fn ack_wnd(c: &Connection, ack: u32, window: u16) -> ParsedRepr<'static> {
    ParsedRepr {
        window_len: window,
        ..ack_of(c, ack)
    }
}

/// Feeds a pure ACK of `ack` at `now` (window 65535).
pub fn recv_ack(c: &mut Connection, now: u64, ack: u32) -> Outcome {
    let seg = ack_of(c, ack);
    recv(c, now, seg)
}

/// Feeds a pure ACK of `ack` advertising `window` at `now`.
pub fn recv_ack_wnd(c: &mut Connection, now: u64, ack: u32, window: u16) -> Outcome {
    let seg = ack_wnd(c, ack, window);
    recv(c, now, seg)
}

/// Sends what the connection allows at `now` the way the server's output loop does
/// (until `None` or a FIN), with frames of at most `frame_max` bytes.
pub fn send_all_max(c: &mut Connection, now: u64, frame_max: u32) -> Vec<Segment> {
    let mut v = Vec::new();
    while let Some(s) = c.next_segment(now, frame_max) {
        c.on_sent(&s, now);
        v.push(s);
        assert!(v.len() < 10_000, "runaway output");
        if s.fin {
            break;
        }
    }
    v
}

/// [`send_all_max`] without offload.
pub fn send_all(c: &mut Connection, now: u64) -> Vec<Segment> {
    send_all_max(c, now, 0)
}

/// Sends exactly one segment at `now` (which must be due).
pub fn send_one(c: &mut Connection, now: u64) -> Segment {
    let s = c.next_segment(now, 0).expect("a segment should be due");
    c.on_sent(&s, now);
    s
}

/// Sets the congestion window (to get more than the initial window in flight).
pub fn set_cwnd(c: &mut Connection, cwnd: u32) {
    c.cc.cwnd = cwnd;
}
