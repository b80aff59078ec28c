//! The graceful drain at the level of one server (`server::drain`): the drain asked for →
//! the next response carries `Connection: close`; new connections served during the grace
//! and refused after it; an idle kept-alive connection closed when the grace ends; a
//! response in flight finishes; what is left at the timeout is reset and counted; the
//! server is then done and the shared drain finished.

use super::*;
use crate::server::drain::{Drain, Phase};

const MS: u64 = 1_000_000;

/// A server that drains by `drain` (grace 1 s, timeout 3 s unless given).
fn draining_server(grace_ms: u64, timeout_ms: u64) -> (Server<TestSite>, &'static Drain) {
    let d: &'static Drain = Box::leak(Box::new(Drain::new(grace_ms, timeout_ms)));
    let mut cfg = Config::new(SERVER_IP, 24, [0x42; 16]);
    cfg.tcbs = 8;
    cfg.max_per_ip = Some(8);
    cfg.syn_backlog = Some(8);
    cfg.drain = Some(d);
    (Server::new(cfg, TestSite::new(), SERVER_MAC), d)
}

fn ack_only() -> wtcp::Flags {
    flags(false, true, false, false)
}

/// Sends `req` on the connection of `port` and returns the server's segments.
fn ask(
    s: &mut Server<TestSite>,
    nic: &mut FakeNic,
    clock: &ManualClock,
    port: u16,
    (cseq, sseq): (u32, u32),
    req: &[u8],
) -> Vec<Out> {
    nic.rx
        .inbox
        .push_back(tcp_frame(port, cseq, Some(sseq), ack_only(), req, None));
    run(s, nic, clock)
}

const GET: &[u8] = b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n";

#[test]
fn once_asked_the_next_response_closes_and_new_connections_come_in_until_the_grace_ends() {
    let (mut s, d) = draining_server(1_000, 3_000);
    let mut nic = FakeNic::new(SERVER_MAC);
    let mut clock = ManualClock(MS);
    let (cseq, sseq) = handshake(&mut s, &mut nic, &clock, 5001);
    let out = ask(&mut s, &mut nic, &clock, 5001, (cseq, sseq), GET);
    let text = String::from_utf8_lossy(&out[0].payload).into_owned();
    assert!(!text.contains("Connection: close") && !out[0].fin, "{text}");
    let (cseq, sseq) = (cseq + GET.len() as u32, sseq + out[0].payload.len() as u32);
    // The response acknowledged; the drain is asked for.
    assert!(ask(&mut s, &mut nic, &clock, 5001, (cseq, sseq), &[]).is_empty());
    d.request();
    clock.0 += MS;
    let out = ask(&mut s, &mut nic, &clock, 5001, (cseq, sseq), GET);
    assert_eq!(s.drain_phase(), Phase::Grace);
    let text = String::from_utf8_lossy(&out[0].payload).into_owned();
    assert!(text.contains("\r\nConnection: close\r\n"), "{text}");
    assert!(out.last().unwrap().fin, "the FIN follows the last response");
    assert_eq!(s.stats().drain_closed, 1);
    let end = sseq + out.iter().map(|o| o.payload.len() as u32).sum::<u32>() + 1;
    ask(
        &mut s,
        &mut nic,
        &clock,
        5001,
        (cseq + GET.len() as u32, end),
        &[],
    );
    // During the grace a new connection is still served, and told to close.
    clock.0 += 500 * MS;
    let (c2, s2) = handshake(&mut s, &mut nic, &clock, 5002);
    let out = ask(&mut s, &mut nic, &clock, 5002, (c2, s2), GET);
    let text = String::from_utf8_lossy(&out[0].payload).into_owned();
    assert!(text.starts_with("HTTP/1.1 200 OK") && text.contains("Connection: close"));
    assert_eq!(s.stats().drain_closed, 2);
    // Past the grace a SYN gets a RST.
    clock.0 = d.deadlines().unwrap().0;
    nic.rx.inbox.push_back(tcp_frame(
        5003,
        9000,
        None,
        flags(true, false, false, false),
        &[],
        Some(1460),
    ));
    let out = run(&mut s, &mut nic, &clock);
    assert!(out.iter().any(|o| o.rst && o.ack == 9001), "{out:?}");
    assert_eq!(s.stats().drain_refused, 1);
    assert!(!s.drained(), "two connections still close");
}

#[test]
fn an_idle_kept_alive_connection_is_closed_when_the_grace_ends_and_the_drain_finishes() {
    let (mut s, d) = draining_server(1_000, 3_000);
    let mut nic = FakeNic::new(SERVER_MAC);
    let mut clock = ManualClock(MS);
    let (cseq, sseq) = handshake(&mut s, &mut nic, &clock, 5101);
    let out = ask(&mut s, &mut nic, &clock, 5101, (cseq, sseq), GET);
    let (cseq, sseq) = (cseq + GET.len() as u32, sseq + out[0].payload.len() as u32);
    assert!(ask(&mut s, &mut nic, &clock, 5101, (cseq, sseq), &[]).is_empty());
    d.request();
    clock.0 += MS;
    assert!(
        run(&mut s, &mut nic, &clock).is_empty(),
        "idle during the grace"
    );
    let grace_end = d.deadlines().unwrap().0;
    assert_eq!(
        s.next_deadline_ns(),
        grace_end,
        "a sleeping core wakes for it"
    );
    clock.0 = grace_end;
    let mut out = run(&mut s, &mut nic, &clock);
    out.extend(run(&mut s, &mut nic, &clock));
    let fin = out
        .iter()
        .find(|o| o.fin)
        .expect("a FIN at the grace's end");
    assert_eq!(fin.seq, sseq);
    assert_eq!(s.stats().drain_closed, 1);
    // The client acknowledges and closes: nothing left, the drain is over.
    nic.rx.inbox.push_back(tcp_frame(
        5101,
        cseq,
        Some(sseq + 1),
        flags(false, true, true, false),
        &[],
        None,
    ));
    run(&mut s, &mut nic, &clock);
    assert_eq!(s.active(), 0);
    assert!(s.drained() && d.finished());
    assert_eq!(d.counts().closed, 1);
    assert_eq!(d.counts().reset, 0);
    assert_eq!(d.counts().took_ms, 1_000);
}

#[test]
fn a_response_in_flight_finishes_after_the_grace() {
    let (mut s, d) = draining_server(1_000, 30_000);
    let mut nic = FakeNic::new(SERVER_MAC);
    let mut clock = ManualClock(MS);
    let (cseq, sseq) = handshake(&mut s, &mut nic, &clock, 5201);
    let req = b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n";
    let cseq = cseq + req.len() as u32;
    let mut out = ask(
        &mut s,
        &mut nic,
        &clock,
        5201,
        (cseq - req.len() as u32, sseq),
        req,
    );
    d.request();
    let mut got = 0usize;
    let mut fin = false;
    let mut asked_grace_end = false;
    for _ in 0..10_000 {
        let Some(last) = out.iter().max_by_key(|o| o.seq.wrapping_sub(sseq)) else {
            // All acknowledged: the next timer scan closes the connection, now idle.
            clock.0 += 10 * MS;
            out = run(&mut s, &mut nic, &clock);
            out.extend(run(&mut s, &mut nic, &clock));
            fin = out
                .iter()
                .any(|o| o.fin && o.seq == sseq.wrapping_add(got as u32));
            break;
        };
        got = got.max((last.seq.wrapping_sub(sseq)) as usize + last.payload.len());
        fin |= out.iter().any(|o| o.fin);
        if fin {
            break;
        }
        clock.0 += MS;
        if !asked_grace_end && clock.0 > 5 * MS {
            // Half way through, the grace ends: the download goes on.
            clock.0 = d.deadlines().unwrap().0 + MS;
            asked_grace_end = true;
        }
        out = ask(
            &mut s,
            &mut nic,
            &clock,
            5201,
            (cseq, sseq.wrapping_add(got as u32)),
            &[],
        );
    }
    assert!(asked_grace_end && s.drain_phase() == Phase::Closing);
    assert!(fin, "the response finished and the connection closed");
    assert!(got > 1_048_576, "{got}");
    assert_eq!(s.stats().drain_reset, 0);
    assert_eq!(
        s.stats().drain_closed,
        1,
        "closed once, when it became idle"
    );
}

#[test]
fn what_is_left_at_the_timeout_is_reset_and_counted() {
    let (mut s, d) = draining_server(1_000, 3_000);
    let mut nic = FakeNic::new(SERVER_MAC);
    let mut clock = ManualClock(MS);
    let (cseq, sseq) = handshake(&mut s, &mut nic, &clock, 5301);
    // A client that asks for the big file and never acknowledges anything.
    let req = b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n";
    assert!(!ask(&mut s, &mut nic, &clock, 5301, (cseq, sseq), req).is_empty());
    d.request();
    run(&mut s, &mut nic, &clock);
    clock.0 = d.deadlines().unwrap().0 + MS;
    run(&mut s, &mut nic, &clock);
    assert!(!s.drained(), "in flight: kept until the timeout");
    let timeout = d.deadlines().unwrap().1;
    assert!(s.next_deadline_ns() <= timeout);
    clock.0 = timeout;
    let out = run(&mut s, &mut nic, &clock);
    assert!(out.iter().any(|o| o.rst), "{out:?}");
    assert_eq!(s.stats().drain_reset, 1);
    assert_eq!(s.active(), 0);
    assert!(s.drained() && d.finished());
    assert_eq!(d.counts().reset, 1);
    assert_eq!(
        s.next_deadline_ns(),
        u64::MAX,
        "done: nothing more to wake for"
    );
}

#[test]
fn without_a_request_nothing_changes() {
    let (mut s, d) = draining_server(1_000, 3_000);
    let mut nic = FakeNic::new(SERVER_MAC);
    let clock = ManualClock(10_000 * MS);
    let (cseq, sseq) = handshake(&mut s, &mut nic, &clock, 5401);
    let out = ask(&mut s, &mut nic, &clock, 5401, (cseq, sseq), GET);
    assert!(!String::from_utf8_lossy(&out[0].payload).contains("Connection: close"));
    assert_eq!(s.drain_phase(), Phase::Serving);
    assert!(!d.draining() && d.start_ns().is_none());
}
