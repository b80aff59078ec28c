//! TCB pressure: eviction of the connection silent longest when the table is
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
    // Eight half-open connections hold every TCB. A ninth SYN gets a SYN cookie
    // (no TCB); when its ACK returns the cookie, the connection takes the TCB of the
    // oldest half-open one, which is reset.
    let mut s = server();
    let mut nic = FakeNic::new(SERVER_MAC);
    let mut clock = ManualClock(1_000_000);
    for p in 0..8u16 {
        clock.0 += 1_000_000;
        let syn = tcp_frame(
            7000 + p,
            1,
            None,
            flags(true, false, false, false),
            &[],
            None,
        );
        nic.rx.inbox.push_back(syn);
        run(&mut s, &mut nic, &clock);
    }
    assert_eq!(s.active(), 8);
    // The ninth from another address (one address may hold every TCB here); frames to it
    // are read raw (`run` checks checksums against the usual client's address).
    let other = Ipv4Address([10, 0, 0, 9]);
    let raw = |nic: &mut FakeNic| -> Vec<(u16, wtcp::Flags, u32)> {
        core::mem::take(&mut nic.tx.outbox)
            .iter()
            .map(|f| {
                let t = TcpPacket::new_unchecked(&f[L2L3..]);
                (t.dst_port(), t.flags(), t.seq_number())
            })
            .collect()
    };
    let syn = tcp_frame(7008, 1, None, flags(true, false, false, false), &[], None);
    nic.rx.inbox.push_back(from_ip(syn, other));
    s.poll(&mut nic, &clock, &mut NoLog);
    let sent = raw(&mut nic);
    assert!(sent.len() == 1 && sent[0].1.syn, "{sent:?}");
    assert_eq!(s.stats().tcp_syncookies_sent, 1);
    let ack = tcp_frame(
        7008,
        2,
        Some(sent[0].2.wrapping_add(1)),
        flags(false, true, false, false),
        &[],
        None,
    );
    nic.rx.inbox.push_back(from_ip(ack, other));
    s.poll(&mut nic, &clock, &mut NoLog);
    let sent = raw(&mut nic);
    assert!(
        sent.len() == 1 && sent[0].0 == 7000 && sent[0].1.rst,
        "{sent:?}"
    );
    assert_eq!(s.active(), 8);
    assert_eq!(s.stats().tcp_evicted, 1);
    assert_eq!(s.stats().tcp_syncookies_ok, 1);
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
    // The SYN gets a cookie; its ACK finds every connection sending: no TCB, no reset of
    // anyone, and nothing sent (the client will retransmit).
    let other = Ipv4Address([10, 0, 0, 9]);
    let syn = tcp_frame(7200, 1, None, flags(true, false, false, false), &[], None);
    nic.rx.inbox.push_back(from_ip(syn, other));
    s.poll(&mut nic, &clock, &mut NoLog);
    let synack = nic.tx.outbox.pop().expect("a SYN-ACK");
    let cookie = TcpPacket::new_unchecked(&synack[L2L3..]).seq_number();
    let ack = tcp_frame(
        7200,
        2,
        Some(cookie.wrapping_add(1)),
        flags(false, true, false, false),
        &[],
        None,
    );
    nic.rx.inbox.push_back(from_ip(ack, other));
    s.poll(&mut nic, &clock, &mut NoLog);
    assert!(nic.tx.outbox.is_empty());
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

#[test]
fn past_the_syn_backlog_syns_get_cookies_and_the_ack_opens_the_connection() {
    let mut cfg = Config::new(SERVER_IP, 24, [0x42; 16]);
    cfg.tcbs = 8;
    cfg.max_per_ip = Some(8);
    cfg.syn_backlog = Some(2);
    let mut s = Server::new(cfg, TestSite::new(), SERVER_MAC);
    let mut nic = FakeNic::new(SERVER_MAC);
    let clock = ManualClock(1_000_000);
    let syn = |port| {
        tcp_frame(
            port,
            5000,
            None,
            flags(true, false, false, false),
            &[],
            Some(1460),
        )
    };
    for p in 0..3u16 {
        nic.rx.inbox.push_back(syn(7400 + p));
    }
    let out = run(&mut s, &mut nic, &clock);
    assert_eq!(out.iter().filter(|o| o.syn && o.has_ack).count(), 3);
    assert_eq!(
        s.active(),
        2,
        "two half-open TCBs; the third SYN got a cookie"
    );
    assert_eq!(s.stats().tcp_syncookies_sent, 1);
    // The client of the cookie completes the handshake with its request on the ACK.
    let cookie = out[2].seq;
    assert_eq!(out[2].ack, 5001);
    nic.rx.inbox.push_back(tcp_frame(
        7402,
        5001,
        Some(cookie.wrapping_add(1)),
        flags(false, true, false, false),
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        None,
    ));
    let out = run(&mut s, &mut nic, &clock);
    let body: Vec<u8> = out.iter().flat_map(|o| o.payload.clone()).collect();
    assert!(body.starts_with(b"HTTP/1.1 200 OK\r\n"), "{out:?}");
    assert_eq!(out[0].seq, cookie.wrapping_add(1));
    assert_eq!(s.stats().tcp_syncookies_ok, 1);
    assert_eq!(s.active(), 3);
    // A forged cookie is answered with a RST and opens nothing.
    nic.rx.inbox.push_back(tcp_frame(
        7403,
        9001,
        Some(12345),
        flags(false, true, false, false),
        &[],
        None,
    ));
    let out = run(&mut s, &mut nic, &clock);
    assert!(out.len() == 1 && out[0].rst, "{out:?}");
    assert_eq!(s.active(), 3);
}

#[test]
fn a_syn_flood_holds_no_more_than_the_backlog_and_a_client_is_served() {
    // Once 50,000 spoofed SYNs took every TCB for 15 s. Now the flood holds at most
    // the backlog; a client completing its handshake (through a cookie) is served at once.
    let mut cfg = Config::new(SERVER_IP, 24, [0x42; 16]);
    cfg.tcbs = 8;
    cfg.syn_backlog = Some(2);
    let mut s = Server::new(cfg, TestSite::new(), SERVER_MAC);
    let mut nic = FakeNic::new(SERVER_MAC);
    let clock = ManualClock(1_000_000);
    for i in 0..5_000u32 {
        let src = Ipv4Address([10, 0, 0, 10 + (i % 240) as u8]); // on the link (no gateway)
        let syn = tcp_frame(
            1024 + (i % 60000) as u16,
            i,
            None,
            flags(true, false, false, false),
            &[],
            None,
        );
        nic.rx.inbox.push_back(from_ip(syn, src));
        if i % 32 == 31 {
            s.poll(&mut nic, &clock, &mut NoLog);
            nic.tx.outbox.clear();
        }
    }
    s.poll(&mut nic, &clock, &mut NoLog);
    nic.tx.outbox.clear();
    assert!(s.active() <= 2, "{} TCBs held by the flood", s.active());
    assert!(s.stats().tcp_syncookies_sent >= 4_990);
    let (cseq, sseq) = {
        nic.rx.inbox.push_back(tcp_frame(
            7500,
            100,
            None,
            flags(true, false, false, false),
            &[],
            None,
        ));
        let out = run(&mut s, &mut nic, &clock);
        assert_eq!(out.len(), 1);
        (101, out[0].seq.wrapping_add(1))
    };
    nic.rx.inbox.push_back(tcp_frame(
        7500,
        cseq,
        Some(sseq),
        flags(false, true, false, false),
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        None,
    ));
    let out = run(&mut s, &mut nic, &clock);
    let body: Vec<u8> = out.iter().flat_map(|o| o.payload.clone()).collect();
    assert!(body.starts_with(b"HTTP/1.1 200 OK\r\n"), "{out:?}");
}

#[test]
fn a_full_transmit_ring_holds_input_back_instead_of_dropping_answers() {
    // Backpressure (the bare machine under a SYN flood): 100 SYNs wait while
    // the transmit ring has room for 10 frames. A round takes 10 of them and answers each;
    // the other 90 stay in the receive ring (none is read and its answer thrown away).
    // When the device has sent the 10, the rest are answered: 100 SYN-ACKs, none lost.
    let mut s = server();
    let mut nic = FakeNic::new(SERVER_MAC);
    let clock = ManualClock(1_000_000);
    for p in 0..100u16 {
        // From 100 addresses: none meets the per-address cap; past the 8 TCBs, cookies.
        let syn = tcp_frame(
            9000 + p,
            1,
            None,
            flags(true, false, false, false),
            &[],
            None,
        );
        nic.rx
            .inbox
            .push_back(from_ip(syn, Ipv4Address([10, 0, 0, 20 + p as u8])));
    }
    nic.tx.room = Some(10);
    assert!(s.poll(&mut nic, &clock, &mut NoLog));
    assert_eq!((nic.tx.outbox.len(), nic.rx.inbox.len()), (10, 90));
    assert_eq!(s.stats().tx_ring_full, 0);
    assert!(s.stats().rx_held >= 1);
    // Still full: nothing is read, and the caller is told to poll again.
    assert!(s.poll(&mut nic, &clock, &mut NoLog));
    assert_eq!(nic.rx.inbox.len(), 90);
    nic.tx.room = Some(1000);
    s.poll(&mut nic, &clock, &mut NoLog);
    let answered: Vec<_> = nic
        .tx
        .outbox
        .iter()
        .map(|f| TcpPacket::new_unchecked(&f[L2L3..]))
        .filter(|t| t.flags().syn && t.flags().ack)
        .map(|t| t.dst_port())
        .collect();
    assert_eq!(answered, (9000..9100).collect::<Vec<_>>());
    assert_eq!(s.stats().tx_ring_full, 0);
}

#[test]
fn timestamps_are_negotiated_through_a_syn_cookie() {
    // The cookie has no bits for timestamps: the ACK that returns it carries the option
    // exactly when the SYN did (RFC 7323 §3.2), and the TCB made from it uses them. One
    // half-open connection spends the backlog: the next SYN gets a cookie.
    let mut cfg = Config::new(SERVER_IP, 24, [0x42; 16]);
    cfg.tcbs = 8;
    cfg.syn_backlog = Some(1);
    let mut s = Server::new(cfg, TestSite::new(), SERVER_MAC);
    let mut nic = FakeNic::new(SERVER_MAC);
    let clock = ManualClock(5_000_000_000);
    let first = tcp_frame(7299, 1, None, flags(true, false, false, false), &[], None);
    nic.rx.inbox.push_back(first);
    s.poll(&mut nic, &clock, &mut NoLog);
    nic.tx.outbox.clear();
    let syn = tcp_frame_ts(
        7300,
        1000,
        None,
        flags(true, false, false, false),
        &[],
        Some(1460),
        Some((777, 0)),
    );
    nic.rx.inbox.push_back(syn);
    s.poll(&mut nic, &clock, &mut NoLog);
    assert_eq!(s.stats().tcp_syncookies_sent, 1);
    assert_eq!(s.active(), 1);
    let opts = |f: &[u8]| {
        let t = TcpPacket::new_unchecked(&f[L2L3..]);
        (
            t.seq_number(),
            wtcp::parse_options(t.options()).unwrap().timestamps,
            f.len() - L2L3 - usize::from(t.header_len()),
        )
    };
    let synack = nic.tx.outbox.pop().expect("a SYN-ACK");
    let (cookie, ts, _) = opts(&synack);
    let (our_ts, echo) = ts.expect("the SYN-ACK answers timestamps");
    assert_eq!(echo, 777);
    let req = b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n";
    let ack = tcp_frame_ts(
        7300,
        1001,
        Some(cookie.wrapping_add(1)),
        flags(false, true, false, false),
        req,
        None,
        Some((778, our_ts)),
    );
    nic.rx.inbox.push_back(ack);
    s.poll(&mut nic, &clock, &mut NoLog);
    assert_eq!(s.stats().tcp_syncookies_ok, 1);
    assert_eq!(s.stats().http_requests, 1);
    let sent: Vec<_> = nic.tx.outbox.iter().map(|f| opts(f)).collect();
    assert!(sent.len() >= 2, "{sent:?}");
    for (_, ts, len) in &sent {
        let (_, echo) = ts.expect("every segment carries timestamps");
        assert_eq!(echo, 778);
        assert!(
            *len <= 1448,
            "a full segment is the MSS less the option: {len}"
        );
    }
    assert_eq!(sent[1].2, 1448);
}

#[test]
fn tcbs_and_their_buffers_are_made_as_connections_first_need_them() {
    // The boot budget (docs/kernel.md): a new server writes none of its TCB table; each connection
    // beyond those ever open makes one TCB (and its buffers) in the reserved capacity, a
    // freed one is taken again first, and the limit holds.
    let mut s = server();
    assert_eq!(
        (s.conns.made(), s.rx_slab.len(), s.head_slab.len()),
        (0, 0, 0)
    );
    assert!(s.conns.reserved() >= 8 && s.rx_slab.capacity() >= 8 * s.cfg.rx_buffer);
    let mut nic = FakeNic::new(SERVER_MAC);
    let clock = ManualClock(1_000_000);
    for p in 0..3u16 {
        let syn = tcp_frame(
            7000 + p,
            1,
            None,
            flags(true, false, false, false),
            &[],
            None,
        );
        nic.rx.inbox.push_back(syn);
        run(&mut s, &mut nic, &clock);
    }
    assert_eq!((s.active(), s.conns.made()), (3, 3));
    assert_eq!(s.rx_slab.len(), 3 * s.cfg.rx_buffer);
    assert_eq!(s.head_slab.len(), 3 * http::HEAD_MAX);
    let cap = s.rx_slab.capacity();
    s.free_tcb(1);
    assert_eq!(s.take_tcb(), Some(1), "the freed TCB first");
    for _ in 3..8 {
        assert!(s.take_tcb().is_some());
    }
    assert_eq!((s.take_tcb(), s.conns.made()), (None, 8));
    assert!(!s.tcb_left());
    assert_eq!(s.rx_slab.capacity(), cap, "growing never reallocated");
}
