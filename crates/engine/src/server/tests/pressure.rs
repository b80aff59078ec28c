//! TCB pressure (issue 15): eviction of the connection silent longest when the table is
//! full, never of one sending a response; the per-address cap.

use super::*;

/// `frame` as sent from `ip` instead of the client's address (checksums redone).
fn from_ip(mut frame: Vec<u8>, ip: Ipv4Address) -> Vec<u8> {
    let mut p = Ipv4Packet::new_unchecked(&mut frame[crate::wire::ethernet::HEADER_LEN..]);
    p.set_src_addr(ip);
    p.fill_checksum();
    TcpPacket::new_unchecked(&mut frame[L2L3..]).fill_checksum(ip, SERVER_IP);
    frame
}

#[test]
fn a_full_table_evicts_the_oldest_connection_without_a_response() {
    // Issue 15: eight half-open connections hold every TCB; a ninth SYN takes the TCB of
    // the oldest of them (reset), not nothing.
    let mut s = server();
    let mut nic = FakeNic::new(SERVER_MAC);
    let mut clock = ManualClock(1_000_000);
    for p in 0..9u16 {
        clock.0 += 1_000_000;
        let syn = tcp_frame(
            7000 + p,
            1,
            None,
            flags(true, false, false, false),
            &[],
            None,
        );
        // The ninth from another address (one address may hold every TCB here).
        let syn = if p == 8 {
            from_ip(syn, Ipv4Address([10, 0, 0, 9]))
        } else {
            syn
        };
        nic.rx.inbox.push_back(syn);
        if p < 8 {
            run(&mut s, &mut nic, &clock);
            continue;
        }
        // The RST to the oldest (port 7000), then the SYN-ACK to the newcomer (read raw:
        // `run` checks checksums against the usual client's address).
        s.poll(&mut nic, &clock, &mut NoLog);
        let sent: Vec<(u16, wtcp::Flags)> = core::mem::take(&mut nic.tx.outbox)
            .iter()
            .map(|f| {
                let t = TcpPacket::new_unchecked(&f[L2L3..]);
                (t.dst_port(), t.flags())
            })
            .collect();
        assert_eq!(sent.len(), 2, "{sent:?}");
        assert!(sent[0].0 == 7000 && sent[0].1.rst, "{sent:?}");
        assert!(
            sent[1].0 == 7008 && sent[1].1.syn && sent[1].1.ack,
            "{sent:?}"
        );
    }
    assert_eq!(s.active(), 8);
    assert_eq!(s.stats().tcp_evicted, 1);
    assert_eq!(s.stats().tcp_no_tcb, 0);
    // The evicted client's ACK now finds no connection: RST.
    nic.rx.inbox.push_back(tcp_frame(
        7000,
        2,
        Some(1),
        flags(false, true, false, false),
        &[],
        None,
    ));
    let out = run(&mut s, &mut nic, &clock);
    assert!(out.len() == 1 && out[0].rst, "{out:?}");
}

#[test]
fn connections_sending_responses_are_never_evicted() {
    // Every TCB holds a connection whose 1 MiB response is in flight: a new SYN finds no
    // TCB (counted) rather than breaking a download.
    let mut s = server();
    let mut nic = FakeNic::new(SERVER_MAC);
    let clock = ManualClock(1_000_000);
    for p in 0..8u16 {
        let (cseq, sseq) = handshake(&mut s, &mut nic, &clock, 7100 + p);
        let req = b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n";
        nic.rx.inbox.push_back(tcp_frame(
            7100 + p,
            cseq,
            Some(sseq),
            flags(false, true, false, false),
            req,
            None,
        ));
        assert!(!run(&mut s, &mut nic, &clock).is_empty());
    }
    let syn = tcp_frame(7200, 1, None, flags(true, false, false, false), &[], None);
    nic.rx
        .inbox
        .push_back(from_ip(syn, Ipv4Address([10, 0, 0, 9])));
    let out = run(&mut s, &mut nic, &clock);
    assert!(out.iter().all(|o| !o.syn && !o.rst), "{out:?}");
    assert_eq!(s.stats().tcp_no_tcb, 1);
    assert_eq!(s.stats().tcp_evicted, 0);
}

#[test]
fn one_address_gets_at_most_max_per_ip_connections() {
    let mut cfg = Config::new(SERVER_IP, 24, [0x42; 16]);
    cfg.tcbs = 8;
    cfg.max_per_ip = Some(3);
    let mut s = Server::new(cfg, TestSite::new(), SERVER_MAC);
    let mut nic = FakeNic::new(SERVER_MAC);
    let clock = ManualClock(1_000_000);
    for p in 0..4u16 {
        nic.rx.inbox.push_back(tcp_frame(
            7300 + p,
            1,
            None,
            flags(true, false, false, false),
            &[],
            None,
        ));
    }
    let out = run(&mut s, &mut nic, &clock);
    assert_eq!(out.iter().filter(|o| o.syn).count(), 3);
    let rst: Vec<&Out> = out.iter().filter(|o| o.rst).collect();
    assert_eq!(rst.len(), 1, "the fourth is refused at once: {out:?}");
    assert_eq!(rst[0].ack, 2, "RST for a SYN: ACK = SEG.SEQ + 1");
    assert_eq!(s.stats().tcp_per_ip_refused, 1);
    assert_eq!(s.active(), 3);
}
