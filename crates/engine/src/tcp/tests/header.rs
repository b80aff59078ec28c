//! `Connection::header`: the ACK number is RCV.NXT, the window `min(rx_space, 65535)`
//! (we offer shift 0), the MSS option only on the SYN-ACK, the window-scale option (0)
//! only on the SYN-ACK and only when the peer offered one, PSH on data and FIN, and
//! building a header pays the owed ACK. Also `ack_segment`.

use super::*;
use crate::wire::tcp::Repr;

fn header(c: &mut Connection, s: &Segment, rx: u32) -> Repr {
    c.header(s, LOCAL_PORT, REMOTE_PORT, rx, 0)
}

#[test]
fn the_syn_ack_header() {
    let mut c = Connection::accept(&SYN_TEMPL, ISS, 0);
    let s = c.syn_ack(0);
    assert_eq!(
        header(&mut c, &s, RX),
        Repr {
            src_port: LOCAL_PORT,
            dst_port: REMOTE_PORT,
            seq_number: ISS,
            ack_number: Some(REMOTE_SEQ),
            flags: Flags {
                syn: true,
                ack: true,
                ..NO_FLAGS
            },
            window_len: 8192,
            max_seg_size: Some(1460),
            window_scale: None,
            sack_permitted: false,
            timestamps: None,
        }
    );
}

#[test]
fn the_syn_ack_answers_a_window_scale_option_with_shift_0() {
    let syn = ParsedRepr {
        options: Options {
            window_scale: Some(9),
            ..SYN_TEMPL.options
        },
        ..SYN_TEMPL
    };
    let mut c = Connection::accept(&syn, ISS, 0);
    let s = c.syn_ack(0);
    let h = header(&mut c, &s, RX);
    assert_eq!(h.window_scale, Some(0));
    assert_eq!(h.max_seg_size, Some(1460));
    assert_eq!(h.header_len(), 28);
}

#[test]
fn data_segments_carry_no_options() {
    let syn = ParsedRepr {
        options: Options {
            window_scale: Some(9),
            ..SYN_TEMPL.options
        },
        ..SYN_TEMPL
    };
    let mut c = established_with(&syn, 100);
    c.queue(100);
    let s = send_one(&mut c, 0);
    let h = header(&mut c, &s, RX);
    assert_eq!(
        h,
        Repr {
            src_port: LOCAL_PORT,
            dst_port: REMOTE_PORT,
            seq_number: LOCAL_SEQ,
            ack_number: Some(REMOTE_SEQ),
            flags: Flags {
                psh: true,
                ack: true,
                ..NO_FLAGS
            },
            window_len: 8192,
            max_seg_size: None,
            window_scale: None,
            sack_permitted: false,
            timestamps: None,
        }
    );
}

#[test]
fn a_pure_ack_has_no_psh() {
    let mut c = established();
    let s = c.ack_segment();
    assert_eq!(s, out(LOCAL_SEQ, 0, false));
    let h = header(&mut c, &s, RX);
    assert_eq!(h.flags, ACK);
    assert_eq!(h.seq_number, LOCAL_SEQ);
}

#[test]
fn a_fin_has_psh() {
    let mut c = established();
    c.close();
    let s = send_one(&mut c, 0);
    let h = header(&mut c, &s, RX);
    assert_eq!(
        h.flags,
        Flags {
            psh: true,
            ..FIN_ACK
        }
    );
    assert_eq!(h.seq_number, LOCAL_SEQ);
}

#[test]
fn the_advertised_window_is_the_receive_space_capped() {
    let mut c = established();
    let s = c.ack_segment();
    assert_eq!(header(&mut c, &s, 0).window_len, 0);
    assert_eq!(header(&mut c, &s, 1234).window_len, 1234);
    assert_eq!(header(&mut c, &s, 65_535).window_len, 65_535);
    assert_eq!(header(&mut c, &s, 65_536).window_len, 65_535);
    assert_eq!(header(&mut c, &s, u32::MAX).window_len, 65_535);
}

#[test]
fn the_ack_number_follows_rcv_nxt() {
    let mut c = established();
    recv(
        &mut c,
        0,
        ParsedRepr {
            payload: data(77),
            ..RECV_TEMPL
        },
    );
    let s = c.ack_segment();
    assert_eq!(
        header(&mut c, &s, RX - 77).ack_number,
        Some(REMOTE_SEQ + 77)
    );
    recv(
        &mut c,
        0,
        ParsedRepr {
            seq_number: REMOTE_SEQ + 77,
            flags: FIN_ACK,
            ..RECV_TEMPL
        },
    );
    assert_eq!(header(&mut c, &s, RX).ack_number, Some(REMOTE_SEQ + 78));
}

#[test]
fn building_a_header_pays_the_owed_ack() {
    let mut c = established();
    recv(
        &mut c,
        0,
        ParsedRepr {
            payload: data(10),
            ..RECV_TEMPL
        },
    );
    assert!(c.ack_pending());
    // Data going out carries the ACK.
    c.queue(100);
    let s = send_one(&mut c, 0);
    assert!(c.ack_pending(), "next_segment/on_sent do not pay it");
    header(&mut c, &s, RX);
    assert!(!c.ack_pending());
    // owe_ack and a bare ACK.
    c.owe_ack();
    assert!(c.ack_pending());
    let s = c.ack_segment();
    header(&mut c, &s, RX);
    assert!(!c.ack_pending());
}

#[test]
fn the_ack_segment_is_at_snd_nxt() {
    let mut c = established();
    c.queue(3000);
    send_all(&mut c, 0);
    assert_eq!(c.ack_segment(), out(LOCAL_SEQ + 3000, 0, false));
}

#[test]
fn a_retransmission_header_is_at_snd_una() {
    let mut c = established();
    c.queue(3000);
    send_all(&mut c, 0);
    let s = c.retransmit_segment().unwrap();
    let h = header(&mut c, &s, RX);
    assert_eq!(h.seq_number, LOCAL_SEQ);
    assert!(h.flags.psh && !h.flags.fin && !h.flags.syn);
    assert_eq!(h.max_seg_size, None);
}
