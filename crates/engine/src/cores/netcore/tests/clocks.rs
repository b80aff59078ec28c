//! Time across cores. A connection whose SYN-ACK core 0 sent (a SYN cookie: every HTTP core
//! was full) lives on an HTTP core, which stamps everything after it with its own reading
//! of the clock. If that reading were older than core 0's — taken before the core was
//! preempted, the frames taken after — the connection's timestamps would go backwards
//! (RFC 7323 §5.4; Linux's PAWS drops a segment whose TSval is 2 ms or more behind, and the
//! response waited for the retransmission timeout: the 1 s probes of
//! `test_hostile.py::test_network_core_mode_serves_a_client_after_a_flood_and_among_silent_ones`),
//! and a cookie minted just after a period boundary would look forged. The server reads
//! the clock after taking the frames; and since two cores' clocks (TSCs) may also disagree
//! a little, a cookie connection's timestamp clock catches up with the TSval its ACK echoes
//! and a cookie from the next period is genuine within `SKEW_NS` of its start.

use super::*;
use crate::tcp::syncookie::{PERIOD_NS, SKEW_NS};
use crate::wire::tcp::parse_options;

/// The clock of an HTTP core: `skew` ns behind core 0's (another TSC), and preempted
/// between reading the time and taking its frames: its next read returns the time `lag` ns
/// earlier still (the read made before the pause), later reads its own time.
struct Preempted {
    clock: TestClock,
    lag: Cell<u64>,
    skew: u64,
}

impl Clock for Preempted {
    fn now_ns(&self) -> u64 {
        self.clock.now_ns() - self.skew - self.lag.take()
    }
    fn unix_secs(&self) -> u64 {
        self.clock.unix_secs()
    }
}

const PROBE: u16 = 4000;
const MS: u64 = 1_000_000;

/// What the server sent the probe: (seq, SYN, RST, payload length, TSval).
fn to_probe(frames: &[Vec<u8>]) -> Vec<(u32, bool, bool, usize, Option<u32>)> {
    frames
        .iter()
        .filter_map(|f| {
            let eth = EthernetFrame::new_checked(&f[..]).ok()?;
            let ip = Ipv4Packet::new_checked(eth.payload()).ok()?;
            let t = TcpPacket::new_checked(ip.payload()).ok()?;
            (t.dst_port() == PROBE).then(|| {
                let ts = parse_options(t.options()).ok().and_then(|o| o.timestamps);
                (
                    t.seq_number(),
                    t.syn(),
                    t.rst(),
                    t.payload().len(),
                    ts.map(|t| t.0),
                )
            })
        })
        .collect()
}

/// Core 0 and one full HTTP core (two half-open connections); at `syn_at` a client with
/// timestamps connects, gets core 0's cookie, and 1 ms later sends its ACK and a GET;
/// the HTTP core, its clock `skew` ns behind core 0's, takes them after a pause of `lag`
/// ns that began before the SYN-ACK. Returns core 0's SYN-ACK and what the HTTP core sent the client.
type Sent = Vec<(u32, bool, bool, usize, Option<u32>)>;

fn through_a_cookie(syn_at: u64, lag: u64, skew: u64) -> (Sent, Sent) {
    let (mut core0, mut nics, clock) = setup(1, 2, None);
    clock.0.set(syn_at - 10 * MS);
    let mut cfg0 = config(1);
    cfg0.syn_backlog = Some(0); // core 0's role (`plan::Plan::config`)
    let mut s0 = Server::new(cfg0, site(), SERVER_MAC);
    let mut s1 = Server::new(config(2), site(), SERVER_MAC);
    let mut nic1 = nics.remove(0);
    let c = clock.clone();
    let round0 = |s0: &mut Server<OnePage>, core0: &mut Core0| {
        s0.poll(core0, &c, &mut NoLog);
        core0.connections_closed(s0.closed());
        core::mem::take(&mut core0.inner_mut().1.outbox)
    };
    // Two half-open connections from another address fill the HTTP core.
    let flood = |port| {
        let f = flags(true, false, false, false);
        tcp_frame_ts((Ipv4Address([10, 0, 0, 9]), port), 5, None, f, &[], None)
    };
    core0.inner_mut().0.inbox.extend([flood(1), flood(2)]);
    round0(&mut s0, &mut core0);
    s1.poll(&mut nic1, &clock, &mut NoLog);
    round0(&mut s0, &mut core0);
    assert_eq!(s1.active(), 2);

    clock.0.set(syn_at);
    let syn = tcp_frame_ts(
        (CLIENT_IP, PROBE),
        1000,
        None,
        flags(true, false, false, false),
        &[],
        Some((7, 0)),
    );
    core0.inner_mut().0.inbox.push_back(syn);
    let syn_ack = to_probe(&round0(&mut s0, &mut core0));
    assert_eq!(core0.dispatch_counters().dispatch_cookie_syns, 1);
    let &[(cookie, true, false, 0, Some(ts0))] = &syn_ack[..] else {
        panic!("core 0's cookie SYN-ACK with timestamps: {syn_ack:?}");
    };

    clock.0.set(syn_at + MS);
    let get = b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
    let ack = |payload: &[u8]| {
        let f = flags(false, true, false, false);
        tcp_frame_ts(
            (CLIENT_IP, PROBE),
            1001,
            Some(cookie + 1),
            f,
            payload,
            Some((8, ts0)),
        )
    };
    core0.inner_mut().0.inbox.extend([ack(&[]), ack(get)]);
    round0(&mut s0, &mut core0);
    let preempted = Preempted {
        clock: clock.clone(),
        lag: Cell::new(lag),
        skew,
    };
    s1.poll(&mut nic1, &preempted, &mut NoLog);
    (syn_ack, to_probe(&round0(&mut s0, &mut core0)))
}

/// Every segment of `sent` carries a TSval not behind `ts0` (the SYN-ACK's), and the
/// response went out.
fn stamped_after(ts0: u32, sent: &Sent) {
    let data: usize = sent.iter().map(|s| s.3).sum();
    assert!(data > 3000, "the response went out: {sent:?}");
    for s in sent {
        let ts = s.4.expect("every segment carries timestamps");
        assert!(
            ts.wrapping_sub(ts0) as i32 >= 0,
            "TSval {ts} behind the SYN-ACK's {ts0}: the client's PAWS drops it ({sent:?})"
        );
    }
}

#[test]
fn an_http_core_never_stamps_a_cookie_connection_before_core_0s_syn_ack() {
    // The HTTP core read its clock 2 ms before core 0 sent the SYN-ACK, then paused.
    let (syn_ack, sent) = through_a_cookie(100 * PERIOD_NS + 500 * MS, 3 * MS, 0);
    stamped_after(syn_ack[0].4.unwrap(), &sent);
}

#[test]
fn a_cookie_core_0_minted_in_a_new_period_is_genuine_to_a_core_that_read_the_last() {
    // Core 0 answered 0.5 ms into a cookie period; the HTTP core's reading was from the
    // period before. It must accept the ACK (not answer it with a RST) and serve.
    let (_, sent) = through_a_cookie(100 * PERIOD_NS + MS / 2, 3 * MS, 0);
    assert!(!sent.iter().any(|s| s.2), "no RST: {sent:?}");
    assert!(sent.iter().map(|s| s.3).sum::<usize>() > 3000, "{sent:?}");
}

#[test]
fn an_http_core_whose_clock_runs_behind_core_0s_stamps_after_its_syn_ack() {
    // Taking the frames first is not enough when the HTTP core's clock itself is 5 ms
    // behind core 0's: the connection's timestamp clock catches up with the echoed TSval.
    let (syn_ack, sent) = through_a_cookie(100 * PERIOD_NS + 500 * MS, 0, 5 * MS);
    stamped_after(syn_ack[0].4.unwrap(), &sent);
}

#[test]
fn a_cookie_from_a_clock_ahead_into_a_new_period_is_genuine() {
    // Core 0's clock is 5 ms ahead and 0.5 ms into a new period; the HTTP core's is in the
    // last one. Within SKEW_NS of the boundary the next period is accepted.
    let (syn_ack, sent) = through_a_cookie(100 * PERIOD_NS + MS / 2, 0, 5 * MS);
    assert!(!sent.iter().any(|s| s.2), "no RST: {sent:?}");
    stamped_after(syn_ack[0].4.unwrap(), &sent);
}

#[test]
fn a_clock_further_behind_than_any_skew_is_not_followed() {
    // Beyond SKEW_NS the next period is refused (a cookie from that far ahead is none of
    // ours): the ACK gets a RST and nothing is served.
    let (_, sent) = through_a_cookie(100 * PERIOD_NS + MS / 2, 0, SKEW_NS + 5 * MS);
    assert!(sent.iter().any(|s| s.2), "a RST: {sent:?}");
    assert_eq!(sent.iter().map(|s| s.3).sum::<usize>(), 0, "{sent:?}");
}
