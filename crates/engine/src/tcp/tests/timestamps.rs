//! RFC 7323 timestamps: negotiation (the SYN offers, the SYN-ACK answers; a full segment
//! has 12 bytes less payload), TSval and TSecr on every segment, TS.Recent and its update
//! rule (§4.3), PAWS (§5.3), and RTT samples from TSecr on ACKs of new data, retransmitted
//! ones included (§4, Appendix G).

use super::*;
use crate::tcp::conn::{TS_OPTION_LEN, TS_TICK_NS};
use crate::tcp::output::TimerAction;

/// Our timestamp offset for these tests.
const OFF: u32 = 0x7000_0000;
/// The peer's first TSval.
const PEER_TS: u32 = 5_000;

/// The peer's SYN offering timestamps.
const TS_SYN: ParsedRepr<'static> = ParsedRepr {
    options: Options {
        timestamps: Some((PEER_TS, 0)),
        ..SYN_TEMPL.options
    },
    ..SYN_TEMPL
};

/// Established with timestamps at time 0; the completing ACK echoed our SYN-ACK's TSval
/// and carried TSval PEER_TS + 1.
fn ts_established() -> Connection {
    let mut c = Connection::accept(&TS_SYN, ISS, 0).with_ts_offset(OFF);
    c.syn_ack(0);
    let syn = Segment {
        syn: true,
        ..out(ISS, 0, false)
    };
    c.header(&syn, LOCAL_PORT, REMOTE_PORT, RX, 0);
    let o = recv(&mut c, 0, with_ts(RECV_TEMPL, PEER_TS + 1, OFF));
    assert!(o.established);
    c
}

fn with_ts(seg: ParsedRepr<'static>, tsval: u32, tsecr: u32) -> ParsedRepr<'static> {
    ParsedRepr {
        options: Options {
            timestamps: Some((tsval, tsecr)),
            ..seg.options
        },
        ..seg
    }
}

#[test]
fn the_syn_ack_answers_timestamps_and_segments_carry_them() {
    let mut c = Connection::accept(&TS_SYN, ISS, 0).with_ts_offset(OFF);
    assert!(c.ts_ok());
    assert_eq!(
        c.mss(),
        1460 - TS_OPTION_LEN,
        "every segment carries 12 option bytes"
    );
    let syn = c.syn_ack(3 * MS);
    let h = c.header(&syn, LOCAL_PORT, REMOTE_PORT, RX, 3 * MS);
    assert_eq!(
        h.timestamps,
        Some((OFF + 3, PEER_TS)),
        "TSval = clock + offset, TSecr = SYN's"
    );
    assert_eq!(h.header_len(), 20 + 4 + 12);
    // Without the option in the SYN: none sent, the MSS unchanged.
    let mut plain = syn_received();
    assert!(!plain.ts_ok());
    assert_eq!(plain.mss(), 1460);
    let syn = plain.syn_ack(0);
    assert_eq!(
        plain
            .header(&syn, LOCAL_PORT, REMOTE_PORT, RX, 0)
            .timestamps,
        None
    );
    // Established: data segments and ACKs carry TSval of their time and TS.Recent.
    let mut c = ts_established();
    assert_eq!(c.ts_recent(), PEER_TS + 1);
    c.queue(5000);
    let s = send_one(&mut c, 250 * MS);
    assert_eq!(s.len, 1460 - TS_OPTION_LEN);
    let h = c.header(&s, LOCAL_PORT, REMOTE_PORT, RX, 250 * MS);
    assert_eq!(h.timestamps, Some((OFF + 250, PEER_TS + 1)));
    assert_eq!(h.header_len(), 32);
}

#[test]
fn paws_drops_an_older_timestamp_with_an_ack() {
    let mut c = ts_established();
    // A request with an older TSval: an old duplicate; not taken, answered with an ACK.
    let old = with_ts(
        ParsedRepr {
            payload: data(10),
            ..RECV_TEMPL
        },
        PEER_TS,
        OFF,
    );
    let o = recv(&mut c, MS, old);
    assert!(o.paws_rejected);
    assert_eq!(o.reply, Reply::Ack);
    assert_eq!(o.deliver, None);
    assert_eq!(c.rcv_nxt(), REMOTE_SEQ);
    // The same with a current TSval is taken, and TS.Recent follows it.
    let fresh = with_ts(
        ParsedRepr {
            payload: data(10),
            ..RECV_TEMPL
        },
        PEER_TS + 9,
        OFF,
    );
    let o = recv(&mut c, 2 * MS, fresh);
    assert!(!o.paws_rejected);
    assert_eq!(o.deliver, Some((0, 10)));
    assert_eq!(c.ts_recent(), PEER_TS + 9);
    // A RST is not subject to PAWS (§5.3 R1): the exact one resets.
    let rst = with_ts(
        ParsedRepr {
            seq_number: c.rcv_nxt(),
            flags: RST,
            ack_number: None,
            ..RECV_TEMPL
        },
        1,
        0,
    );
    assert!(recv(&mut c, 3 * MS, rst).reset);
}

#[test]
fn paws_answers_are_rate_limited_like_challenge_acks() {
    let mut c = ts_established();
    let old = with_ts(RECV_TEMPL, PEER_TS - 100, OFF);
    assert_eq!(recv(&mut c, MS, old).reply, Reply::Ack);
    let o = recv(&mut c, 2 * MS, old);
    assert!(o.paws_rejected && o.challenge_limited);
    assert_eq!(o.reply, Reply::None);
}

#[test]
fn ts_recent_is_taken_only_from_segments_at_or_before_the_last_ack_sent() {
    let mut c = ts_established();
    // Data the server has not acknowledged yet (the ACK of the handshake's ACK was never
    // sent: Last.ACK.sent is RCV.NXT of the SYN-ACK, REMOTE_SEQ).
    let first = with_ts(
        ParsedRepr {
            payload: data(100),
            ..RECV_TEMPL
        },
        PEER_TS + 2,
        OFF,
    );
    recv(&mut c, MS, first);
    assert_eq!(c.ts_recent(), PEER_TS + 2, "starts at Last.ACK.sent");
    // A second segment before we ACK the first: it lies past Last.ACK.sent, so the echo
    // stays the first one's TSval (§4.3: the earliest unacknowledged segment's, which
    // makes the peer's RTT sample include our delayed ACK).
    let second = with_ts(
        ParsedRepr {
            seq_number: REMOTE_SEQ + 100,
            payload: data(100),
            ..RECV_TEMPL
        },
        PEER_TS + 3,
        OFF,
    );
    recv(&mut c, 2 * MS, second);
    assert_eq!(c.rcv_nxt(), REMOTE_SEQ + 200);
    assert_eq!(c.ts_recent(), PEER_TS + 2);
    let ack = c.ack_segment();
    let h = c.header(&ack, LOCAL_PORT, REMOTE_PORT, RX, 3 * MS);
    assert_eq!(h.timestamps, Some((OFF + 3, PEER_TS + 2)));
}

#[test]
fn a_segment_without_the_option_is_accepted() {
    // §3.2 says SHOULD drop; Linux accepts, and so does this TCP.
    let mut c = ts_established();
    let o = recv(
        &mut c,
        MS,
        ParsedRepr {
            payload: data(10),
            ..RECV_TEMPL
        },
    );
    assert_eq!(o.deliver, Some((0, 10)));
    assert_eq!(c.ts_recent(), PEER_TS + 1, "nothing to take");
}

#[test]
fn tsecr_gives_rtt_samples_after_a_retransmission() {
    // Karn's rule leaves a retransmitted segment untimed; the echoed TSval still says how
    // long ago the transmission it answers went out.
    let mut c = ts_established();
    c.queue(1000);
    send_one(&mut c, 0);
    let rto = c.rtt().rto_ns();
    assert_eq!(c.on_timer(rto, STALL, RETRIES), TimerAction::Retransmit);
    let again = send_one(&mut c, rto);
    assert_eq!(again.seq, LOCAL_SEQ);
    assert!(!c.rtt().timing());
    assert_eq!(
        c.rtt().srtt_us,
        1,
        "only the handshake's sample (0, taken as 1 µs)"
    );
    // The ACK of the retransmission arrives 30 ms after it, echoing its TSval: smoothed
    // in, 1 + (30 000 − 1)/8 = 3750.875.
    let tsval_rxt = OFF + (rto / TS_TICK_NS) as u32;
    let ack = with_ts(ack_of(&c, LOCAL_SEQ + 1000), PEER_TS + 2, tsval_rxt);
    recv(&mut c, rto + 30 * MS, ack);
    assert_eq!(c.rtt().srtt_us, 3751);
    // An echo from the future (a forged or broken TSecr) gives no sample.
    c.queue(1000);
    send_one(&mut c, rto + 40 * MS);
    c.rtt.stop();
    let bogus = with_ts(
        ack_of(&c, LOCAL_SEQ + 2000),
        PEER_TS + 3,
        tsval_rxt + 100_000,
    );
    recv(&mut c, rto + 50 * MS, bogus);
    assert_eq!(c.rtt().srtt_us, 3751);
}

#[test]
fn tsecr_gives_the_handshake_sample_after_a_retransmitted_syn_ack() {
    // The SYN-ACK sent again is not timed (Karn), but the ACK's echo says which one it
    // answers: the first sample, so RFC 6298 §5.7's 3 s does not apply.
    let mut c = Connection::accept(&TS_SYN, ISS, 0).with_ts_offset(OFF);
    c.syn_ack(0);
    assert_eq!(c.on_timer(SEC, STALL, RETRIES), TimerAction::ResendSynAck);
    c.syn_ack(SEC);
    assert!(!c.rtt().timing());
    // The ACK answers the second SYN-ACK (TSval OFF + 1000 ms), 40 ms after it.
    let ack = with_ts(RECV_TEMPL, PEER_TS + 1, OFF + (SEC / TS_TICK_NS) as u32);
    assert!(recv(&mut c, SEC + 40 * MS, ack).established);
    let r = c.rtt();
    assert_eq!((r.srtt_us, r.rttvar_us), (40_000, 20_000));
    assert_eq!(r.rto_ms, 200, "40 + 4 · 20 ms, floored; not 3 s");
    // A SYN cookie's TCB: its SYN-ACK untimed, the echo gives the sample.
    let mut c = Connection::accept(&TS_SYN, ISS, 0).with_ts_offset(OFF);
    c.syn_ack_sent(0);
    let ack = with_ts(RECV_TEMPL, PEER_TS + 1, OFF);
    assert!(recv(&mut c, 25 * MS, ack).established);
    assert_eq!(c.rtt().srtt_us, 25_000);
}
