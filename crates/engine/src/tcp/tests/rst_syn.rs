//! RFC 5961 in synchronized states: a RST at exactly RCV.NXT resets, one elsewhere in the
//! window gets a challenge ACK, one outside the window is dropped silently (§3.2); a SYN,
//! whatever its sequence number, gets a challenge ACK (§4). Also RFC 9293 §3.10.7.4's ACK
//! of something not yet sent (an ACK reply, the segment dropped).

use super::*;
use crate::tcp::conn::Reply;
use crate::tcp::timer::Timer;

fn rst_at(seq: u32) -> ParsedRepr<'static> {
    ParsedRepr {
        seq_number: seq,
        ack_number: None,
        flags: RST,
        ..RECV_TEMPL
    }
}

fn syn_at(seq: u32) -> ParsedRepr<'static> {
    ParsedRepr {
        seq_number: seq,
        ack_number: None,
        flags: Flags {
            syn: true,
            ..NO_FLAGS
        },
        ..RECV_TEMPL
    }
}

/// Established with 1000 bytes in flight (the timer armed).
fn busy() -> Connection {
    let mut c = established();
    c.queue(1000);
    send_all(&mut c, 0);
    assert!(c.timer().is_armed());
    c
}

#[test]
fn a_rst_at_rcv_nxt_resets() {
    let mut c = busy();
    let o = recv(&mut c, 0, rst_at(REMOTE_SEQ));
    assert_eq!(
        o,
        Outcome {
            reset: true,
            ..Outcome::default()
        }
    );
    assert_eq!(c.state(), State::Closed);
    assert!(c.state().is_done());
    assert_eq!(c.timer(), Timer::Idle);
}

#[test]
fn a_rst_with_ack_at_rcv_nxt_resets() {
    let mut c = busy();
    let o = recv(
        &mut c,
        0,
        ParsedRepr {
            ack_number: Some(LOCAL_SEQ + 5),
            flags: Flags { ack: true, ..RST },
            ..rst_at(REMOTE_SEQ)
        },
    );
    assert!(o.reset);
    assert_eq!(o.acked, 0, "the ACK of a RST is not processed");
    assert_eq!(c.state(), State::Closed);
}

#[test]
fn a_rst_in_the_window_but_not_at_rcv_nxt_gets_a_challenge_ack() {
    for seq in [REMOTE_SEQ + 1, REMOTE_SEQ + 100, REMOTE_SEQ + RX - 1] {
        let mut c = busy();
        let before = c;
        let o = recv(&mut c, 0, rst_at(seq));
        assert_eq!(
            o,
            Outcome {
                reply: Reply::Ack,
                challenge_ack: true,
                ..Outcome::default()
            },
            "seq {seq:#x}"
        );
        let mut expect = before;
        expect.last_challenge_ns = 1; // the rate limit's clock (at time 0)
        assert_eq!(c, expect);
        // The challenge ACK is a plain ACK at SND.NXT acknowledging RCV.NXT.
        let h = c.header(&c.ack_segment(), LOCAL_PORT, REMOTE_PORT, RX, 0);
        assert_eq!(
            (h.seq_number, h.ack_number),
            (LOCAL_SEQ + 1000, Some(REMOTE_SEQ))
        );
        assert!(!h.flags.rst && h.flags.ack);
    }
}

#[test]
fn a_rst_outside_the_window_is_dropped_silently() {
    for seq in [
        REMOTE_SEQ + RX,
        REMOTE_SEQ - 1,
        IRS,
        REMOTE_SEQ + 0x4000_0000,
    ] {
        let mut c = busy();
        let before = c;
        let o = recv(&mut c, 0, rst_at(seq));
        assert_eq!(
            o,
            Outcome {
                out_of_window: true,
                ..Outcome::default()
            },
            "seq {seq:#x}: no ACK for a RST"
        );
        assert_eq!(c, before);
    }
}

#[test]
fn with_a_zero_window_only_the_exact_rst_counts() {
    let mut c = busy();
    let o = c.input(&rst_at(REMOTE_SEQ + 1), 0, 0);
    assert!(o.out_of_window && !o.reset && !o.challenge_ack);
    assert_eq!(o.reply, Reply::None);
    let o = c.input(&rst_at(REMOTE_SEQ), 0, 0);
    assert!(o.reset);
    assert_eq!(c.state(), State::Closed);
}

#[test]
fn a_rst_resets_every_synchronized_state() {
    // CLOSE-WAIT.
    let mut c = established();
    recv(
        &mut c,
        0,
        ParsedRepr {
            flags: FIN_ACK,
            ..RECV_TEMPL
        },
    );
    assert_eq!(c.state(), State::CloseWait);
    assert!(recv(&mut c, 0, rst_at(REMOTE_SEQ + 1)).reset);
    assert_eq!(c.state(), State::Closed);
    // FIN-WAIT-1 and FIN-WAIT-2.
    let mut c = established();
    c.close();
    send_all(&mut c, 0);
    assert_eq!(c.state(), State::FinWait1);
    let mut c2 = c;
    assert!(recv(&mut c, 0, rst_at(REMOTE_SEQ)).reset);
    assert_eq!(c.state(), State::Closed);
    recv_ack(&mut c2, 0, LOCAL_SEQ + 1);
    assert_eq!(c2.state(), State::FinWait2);
    assert!(recv(&mut c2, 0, rst_at(REMOTE_SEQ)).reset);
    assert_eq!(c2.state(), State::Closed);
}

#[test]
fn a_rst_in_syn_received_off_rcv_nxt_gets_a_challenge_ack() {
    let mut c = syn_received();
    let o = recv(&mut c, 0, rst_at(REMOTE_SEQ + 10));
    assert!(o.challenge_ack);
    assert_eq!(o.reply, Reply::Ack);
    assert_eq!(c.state(), State::SynReceived);
}

#[test]
fn a_syn_in_established_gets_a_challenge_ack_whatever_its_sequence() {
    for seq in [
        IRS,
        REMOTE_SEQ,
        REMOTE_SEQ + 100,
        REMOTE_SEQ + 1_000_000,
        IRS - 1_000_000,
    ] {
        let mut c = busy();
        let before = c;
        let o = recv(&mut c, 0, syn_at(seq));
        assert_eq!(
            o,
            Outcome {
                reply: Reply::Ack,
                challenge_ack: true,
                ..Outcome::default()
            },
            "seq {seq:#x}"
        );
        let mut expect = before;
        expect.last_challenge_ns = 1; // the rate limit's clock (at time 0)
        assert_eq!(c, expect, "RFC 5961 §4: the connection is untouched");
    }
}

#[test]
fn a_syn_ack_with_data_in_established_is_not_taken() {
    let mut c = busy();
    let o = recv(
        &mut c,
        0,
        ParsedRepr {
            ack_number: Some(LOCAL_SEQ + 1000),
            flags: Flags {
                syn: true,
                ack: true,
                ..NO_FLAGS
            },
            payload: data(10),
            ..syn_at(REMOTE_SEQ)
        },
    );
    assert!(o.challenge_ack);
    assert_eq!((o.deliver, o.acked), (None, 0));
    assert_eq!(c.snd_una(), LOCAL_SEQ);
    assert_eq!(c.rcv_nxt(), REMOTE_SEQ);
}

#[test]
fn a_syn_in_closing_states_gets_a_challenge_ack() {
    let mut c = established();
    recv(
        &mut c,
        0,
        ParsedRepr {
            flags: FIN_ACK,
            ..RECV_TEMPL
        },
    );
    let o = recv(&mut c, 0, syn_at(IRS));
    assert!(o.challenge_ack);
    assert_eq!(c.state(), State::CloseWait);
    let mut c = established();
    c.close();
    send_all(&mut c, 0);
    recv_ack(&mut c, 0, LOCAL_SEQ + 1);
    assert_eq!(c.state(), State::FinWait2);
    let o = recv(&mut c, 0, syn_at(REMOTE_SEQ + 7));
    assert!(o.challenge_ack);
    assert_eq!(c.state(), State::FinWait2);
}

#[test]
fn an_ack_of_unsent_data_gets_an_ack_and_is_dropped() {
    let mut c = busy();
    let o = recv(
        &mut c,
        0,
        ParsedRepr {
            ack_number: Some(LOCAL_SEQ + 1001),
            window_len: 100,
            payload: data(10),
            ..RECV_TEMPL
        },
    );
    assert_eq!(
        o,
        Outcome {
            reply: Reply::Ack,
            ack_seen: true,
            ..Outcome::default()
        }
    );
    assert_eq!(c.snd_una(), LOCAL_SEQ);
    assert_eq!(c.snd_wnd(), 65_535, "no window update from it");
    assert_eq!(c.rcv_nxt(), REMOTE_SEQ, "its data is dropped");
}

#[test]
fn an_ack_of_exactly_snd_max_is_fine() {
    let mut c = busy();
    let o = recv_ack(&mut c, MS, LOCAL_SEQ + 1000);
    assert_eq!(o.reply, Reply::None);
    assert_eq!(o.acked, 1000);
}

#[test]
fn challenge_acks_are_limited_to_one_per_half_second() {
    // RFC 5961 §7, per connection: a blind attacker cannot make the server send a stream
    // of ACKs, and learns nothing about other connections from the limit.
    use crate::tcp::conn::CHALLENGE_ACK_INTERVAL_NS as GAP;
    let mut c = busy();
    let o = recv(&mut c, 10 * MS, rst_at(REMOTE_SEQ + 100));
    assert!(o.challenge_ack && o.reply == Reply::Ack && !o.challenge_limited);
    let o = recv(&mut c, 10 * MS + GAP - 1, syn_at(REMOTE_SEQ + 7));
    assert!(o.challenge_ack && o.challenge_limited);
    assert_eq!(o.reply, Reply::None, "withheld");
    // The answer to a too-old ACK counts against the same limit.
    let old = ParsedRepr {
        ack_number: Some(LOCAL_SEQ.wrapping_sub(200_000)),
        ..ack_of(&c, LOCAL_SEQ)
    };
    let o = recv(&mut c, 10 * MS + GAP - 1, old);
    assert!(o.bad_ack && o.challenge_limited && o.reply == Reply::None);
    let o = recv(&mut c, 10 * MS + GAP, rst_at(REMOTE_SEQ + 100));
    assert!(
        o.challenge_ack && o.reply == Reply::Ack,
        "due again after the interval"
    );
    assert_eq!(c.state(), State::Established, "nothing else changed");
}
