//! Admission under a full table: SYN cookies meet eviction. Two addresses hold every TCB
//! (each its half, the default per-address limit); a third address's probe gets a cookie,
//! takes a TCB when its ACK returns it, and must then be served: a connection that has
//! just been established is not the next eviction victim, and a connection the server
//! has reset never comes back through the cookie its client still holds.

use super::*;

const A: Ipv4Address = CLIENT_IP;
const B: Ipv4Address = Ipv4Address([10, 0, 0, 7]);
const PROBE: Ipv4Address = Ipv4Address([10, 0, 0, 9]);

/// A client → server segment from `ip` (checksums for that address).
fn seg(ip: Ipv4Address, sport: u16, seq: u32, ack: Option<u32>, payload: &[u8]) -> Vec<u8> {
    let f = flags(ack.is_none(), ack.is_some(), false, false);
    let mut frame = tcp_frame(sport, seq, ack, f, payload, Some(1460));
    let mut p = Ipv4Packet::new_unchecked(&mut frame[crate::wire::ethernet::HEADER_LEN..]);
    p.set_src_addr(ip);
    p.fill_checksum();
    TcpPacket::new_unchecked(&mut frame[L2L3..]).fill_checksum(ip, SERVER_IP);
    frame
}

/// A frame the server sent, read raw: (to, port, flags, seq, payload).
type Raw = (Ipv4Address, u16, wtcp::Flags, u32, Vec<u8>);

fn feed_all(
    s: &mut Server<TestSite>,
    nic: &mut FakeNic,
    clock: &ManualClock,
    f: Vec<u8>,
) -> Vec<Raw> {
    nic.rx.inbox.push_back(f);
    s.poll(nic, clock, &mut NoLog);
    core::mem::take(&mut nic.tx.outbox)
        .iter()
        .map(|f| {
            let ip = Ipv4Packet::new_unchecked(&f[crate::wire::ethernet::HEADER_LEN..]);
            let t = TcpPacket::new_unchecked(&f[L2L3..]);
            let to = ip.dst_addr();
            (
                to,
                t.dst_port(),
                t.flags(),
                t.seq_number(),
                t.payload().to_vec(),
            )
        })
        .collect()
}

/// [`feed_all`] without the frames to the connections holding the table (their downloads
/// are retransmitted as time passes: not what is tested).
fn feed(s: &mut Server<TestSite>, nic: &mut FakeNic, clock: &ManualClock, f: Vec<u8>) -> Vec<Raw> {
    let mut out = feed_all(s, nic, clock, f);
    out.retain(|o| !matches!((o.0, o.1), (A, 7000..=7003) | (B, 7100..=7102)));
    out
}

/// Opens a connection from `ip`:`port` and asks for `/big.bin` (a response that stays in
/// flight: never evictable), or asks nothing when `idle`.
fn connect(
    s: &mut Server<TestSite>,
    nic: &mut FakeNic,
    clock: &ManualClock,
    ip: Ipv4Address,
    port: u16,
    idle: bool,
) {
    let out = feed_all(s, nic, clock, seg(ip, port, 1000, None, &[]));
    assert!(out.len() == 1 && out[0].2.syn, "{out:?}");
    let iss = out[0].3;
    assert!(feed_all(
        s,
        nic,
        clock,
        seg(ip, port, 1001, Some(iss.wrapping_add(1)), &[])
    )
    .is_empty());
    if !idle {
        let req = b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n";
        let out = feed_all(
            s,
            nic,
            clock,
            seg(ip, port, 1001, Some(iss.wrapping_add(1)), req),
        );
        assert!(!out.is_empty());
    }
}

/// The scene of the attack run, with eight TCBs: A holds four sending connections, B three
/// sending and one idle for a second; then the probe's SYN gets a cookie and its ACK evicts B's idle
/// connection. Returns the server, the probe's port and its cookie (our ISS).
fn scene(nic: &mut FakeNic, clock: &mut ManualClock) -> (Server<TestSite>, u32) {
    let mut cfg = Config::new(SERVER_IP, 24, [0x42; 16]);
    cfg.tcbs = 8; // the per-address limit and the SYN backlog are the defaults: half
    let mut s = Server::new(cfg, TestSite::new(), SERVER_MAC);
    for p in 0..4 {
        connect(&mut s, nic, clock, A, 7000 + p, false);
    }
    for p in 0..4 {
        connect(&mut s, nic, clock, B, 7100 + p, p == 3);
    }
    assert_eq!(s.active(), 8);
    assert_eq!(s.stats().tcp_per_ip_refused, 0);
    // B's idle connection is no longer new.
    clock.0 += EVICT_GRACE_NS;
    let out = feed(&mut s, nic, clock, seg(PROBE, 9000, 5000, None, &[]));
    assert!(
        out.len() == 1 && out[0].2.syn && out[0].0 == PROBE,
        "{out:?}"
    );
    let cookie = out[0].3;
    assert_eq!(s.stats().tcp_syncookies_sent, 1);
    let out = feed(
        &mut s,
        nic,
        clock,
        seg(PROBE, 9000, 5001, Some(cookie.wrapping_add(1)), &[]),
    );
    assert!(
        out.len() == 1 && out[0].0 == B && out[0].1 == 7103 && out[0].2.rst,
        "B's idle connection is the victim: {out:?}"
    );
    assert_eq!(s.stats().tcp_syncookies_ok, 1);
    assert_eq!(s.stats().tcp_evicted, 1);
    (s, cookie)
}

/// B reconnects on the TCB its idle connection lost: a cookie, and the ACK returning it.
fn b_reconnects(
    s: &mut Server<TestSite>,
    nic: &mut FakeNic,
    clock: &ManualClock,
) -> (Vec<u8>, Vec<Raw>) {
    let out = feed(s, nic, clock, seg(B, 7200, 3000, None, &[]));
    assert!(out.len() == 1 && out[0].2.syn && out[0].0 == B, "{out:?}");
    let ack = seg(B, 7200, 3001, Some(out[0].3.wrapping_add(1)), &[]);
    let out = feed(s, nic, clock, ack.clone());
    (ack, out)
}

#[test]
fn a_just_established_connection_is_not_the_eviction_victim() {
    let mut nic = FakeNic::new(SERVER_MAC);
    let mut clock = ManualClock(1_000_000);
    let (mut s, cookie) = scene(&mut nic, &mut clock);
    // B's cookie ACK wants a TCB: the probe's, established 10 µs ago and waiting for its
    // request, is the only one not sending. It is kept; B's ACK finds no TCB (its
    // retransmission will try again).
    clock.0 += 10_000;
    let (_, out) = b_reconnects(&mut s, &mut nic, &clock);
    assert!(out.is_empty(), "nothing reset, nothing opened: {out:?}");
    assert_eq!(s.stats().tcp_evicted, 1);
    assert_eq!(s.stats().tcp_no_tcb, 1);
    // The probe's GET, 48 µs later, is answered on its connection: a 200 and no RST.
    clock.0 += 48_000;
    let get = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    let out = feed(
        &mut s,
        &mut nic,
        &clock,
        seg(PROBE, 9000, 5001, Some(cookie.wrapping_add(1)), get),
    );
    assert!(
        !out.is_empty() && out.iter().all(|o| o.0 == PROBE && !o.2.rst),
        "{out:?}"
    );
    assert!(out[0].4.starts_with(b"HTTP/1.1 200 OK\r\n"), "{out:?}");
    assert_eq!(out[0].3, cookie.wrapping_add(1));
    assert_eq!(
        s.stats().tcp_syncookies_ok,
        1,
        "served on the connection, not a new one"
    );
}

#[test]
fn a_connection_reset_by_eviction_does_not_come_back_through_its_cookie() {
    let mut nic = FakeNic::new(SERVER_MAC);
    let mut clock = ManualClock(1_000_000);
    let (mut s, cookie) = scene(&mut nic, &mut clock);
    // The probe stays silent past the grace a new connection has: B's ACK evicts it.
    clock.0 += 10_000;
    let (ack, out) = b_reconnects(&mut s, &mut nic, &clock);
    assert!(out.is_empty(), "{out:?}");
    clock.0 += EVICT_GRACE_NS;
    let out = feed(&mut s, &mut nic, &clock, ack);
    assert!(
        out.len() == 1 && out[0].0 == PROBE && out[0].1 == 9000 && out[0].2.rst,
        "the silent probe is evicted: {out:?}"
    );
    assert_eq!(s.stats().tcp_evicted, 2);
    assert_eq!(s.stats().tcp_syncookies_ok, 2);
    // Its GET still carries a valid cookie, but the server reset that connection: a RST
    // again, never a 200 on a connection its client was told is gone.
    let get = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    let out = feed(
        &mut s,
        &mut nic,
        &clock,
        seg(PROBE, 9000, 5001, Some(cookie.wrapping_add(1)), get),
    );
    assert!(
        out.len() == 1 && out[0].0 == PROBE && out[0].2.rst,
        "{out:?}"
    );
    assert_eq!(s.stats().tcp_syncookies_ok, 2);
    assert_eq!(s.stats().tcp_evicted, 2);
    assert_eq!(s.active(), 8);
}
