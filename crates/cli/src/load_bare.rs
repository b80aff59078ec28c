//! `bareweb load URL --tap NAME --ip A/N` (without `--udp`): the bare HTTP load client
//! (issue 18). The engine's own client (`bareweb_engine::client`: its TCP in active open,
//! ARP, a response reader) speaks through a TAP of its own, so the client's TCP costs stay
//! in this process and are not charged to the server through the kernel's TAP write path.
//! This module owns the bare client's load loop ([`run`], generic over the engine's `Nic`)
//! and its per-slot bookkeeping; what it counts goes into the socket client's
//! [`Tally`], so its report is the socket client's [`Report`] (client kind "bare-tap").
//!
//! Modes, as the socket client runs them ([`bareweb_loadgen::load`]): parallel
//! (`--parallel N`, N fetches in flight) and rate (`--rate R`, a fetch begun every 1/R s on
//! a free slot of `--max-conns`, a `no_slot` error when none is free), each with a
//! connection per fetch or kept alive (`-k`), URLs drawn at random from the list with
//! `--seed`. Session mode (`--sessions-rate`) is refused with a clear error: it is the
//! socket client's. `--verify DIR` checks each body's length and SHA-256. Every failed
//! fetch is counted by its reason (the report's `errors`), and the command exits non-zero
//! if any failed. Ctrl-C ends the run early, with its report.

use std::sync::atomic::Ordering;

use bareweb_engine::client::{http, Client, Config, End, Failure, Handler};
use bareweb_engine::nic::{Clock, TxRing};
use bareweb_engine::wire::{EthernetAddress, Ipv4Address};
use bareweb_host::cores::HostQueue;
use bareweb_host::{netif, xdp, SystemClock, Tap};
use bareweb_loadgen::rng::Rng;
use bareweb_loadgen::{ErrorKind, LoadConfig, Mode, Progress, Report, Tally};
use sha2::{Digest, Sha256};

use crate::load::LoadArgs;
use crate::load_udp::XdpQueueArg;

/// The bare client's MAC: `--mac`, or a random locally administered one.
pub(crate) fn client_mac(a: &LoadArgs) -> EthernetAddress {
    match a.udp.mac {
        Some(m) => m.ethernet(),
        None => {
            let mut m: [u8; 6] = crate::util::random_bytes();
            m[0] = (m[0] & 0xfe) | 0x02;
            EthernetAddress(m)
        }
    }
}

/// Opens (creating if missing) and brings up the bare client's TAP.
pub(crate) fn open_tap(tap: &str, mac: EthernetAddress) -> Result<Tap, String> {
    let nic = Tap::open(tap, mac).map_err(|e| format!("cannot open TAP {tap:?}: {e}"))?;
    netif::set_up(nic.name()).map_err(|e| format!("cannot bring {tap} up: {e}"))?;
    Ok(nic)
}

pub fn load(a: &LoadArgs, cfg: &LoadConfig) -> Result<(), String> {
    if a.udp.kernel {
        return Err(
            "--kernel is for the UDP client (--udp); the bare HTTP client runs as a process".into(),
        );
    }
    if matches!(cfg.mode, Mode::Sessions { .. }) {
        return Err("the bare client runs --parallel and --rate; Surge sessions need the socket client (no --tap)".into());
    }
    if let Some(x) = &a.udp.xdp {
        return load_xdp(a, cfg, x);
    }
    let tap = a.udp.tap.as_deref().ok_or("--tap or --xdp needed")?;
    let mac = client_mac(a);
    let mut nic = open_tap(tap, mac)?;
    let report = run(&mut nic, mac, "bare-tap", &format!("TAP {tap}"), a, cfg)?;
    finish(a, &report)
}

/// The bare client on an AF_XDP socket: the steering program on the interface for the
/// client's address only, one socket on the queue asked; detached when this returns
/// (also after Ctrl-C, which ends the run).
fn load_xdp(a: &LoadArgs, cfg: &LoadConfig, x: &XdpQueueArg) -> Result<(), String> {
    let iface = x.iface.as_str();
    let cidr = a.udp.ip.ok_or("--xdp needs --ip")?;
    let ip = cidr.addr();
    if let Some((_, h, _)) = netif::local_ipv4().into_iter().find(|(_, h, _)| *h == ip) {
        return Err(format!(
            "{h} is an address of this host: the bare client needs an address of its own on {iface}'s link (--ip), \
             or the host would lose its traffic to it"
        ));
    }
    let spec = xdp::Spec {
        iface: iface.to_string(),
        queues: Some(1),
        first_queue: x.queue,
        mode: a.udp.xdp_mode.mode(),
        ip,
        netlink: false,
        busy_poll_us: 0,
    };
    // Signals caught before the program is attached: Ctrl-C then ends the run, and the
    // guard's drop detaches the program.
    crate::util::catch_stop_signals();
    let (guard, mut sockets) = xdp::open(&spec)?;
    for n in &guard.notes {
        eprintln!("bareweb: {n}");
    }
    let mut q = sockets.pop().ok_or("no AF_XDP socket was opened")?;
    if !a.quiet {
        eprintln!(
            "bareweb: the bare client at {ip} on {iface} queue {} through AF_XDP ({} XDP, {}, program id {}, MAC {})",
            x.queue,
            guard.attach,
            match guard.bind {
                xdp::Bind::ZeroCopy => "zero-copy",
                xdp::Bind::Copy => "copy mode",
            },
            guard.prog_id,
            guard.mac
        );
    }
    let run = run(
        &mut q,
        guard.mac,
        "bare-xdp",
        &format!("{iface} (AF_XDP)"),
        a,
        cfg,
    );
    drop(q);
    drop(guard);
    if !a.quiet {
        eprintln!("bareweb: XDP program detached from {iface}");
    }
    finish(a, &run?)
}

/// Prints the report; an error (exit status non-zero) if any fetch failed.
fn finish(a: &LoadArgs, r: &Report) -> Result<(), String> {
    crate::load::emit(a, r, &r.text())?;
    if r.errors_total > 0 {
        let list: Vec<String> = r.errors.iter().map(|(k, v)| format!("{k} {v}")).collect();
        return Err(format!(
            "{} of {} fetches failed ({})",
            r.errors_total,
            r.fetches_started,
            list.join(", ")
        ));
    }
    Ok(())
}

/// What the load loop knows of each slot's fetch, and the tally. Every table is sized
/// once, to the slots: nothing here allocates per fetch.
struct Fetches<'a> {
    cfg: &'a LoadConfig,
    t: Tally,
    url: Vec<u32>,
    /// When the request went: the fetch began on a kept connection, or its new one was
    /// established (the socket client's moment: after connect).
    sent_at: Vec<u64>,
    first_at: Vec<u64>,
    hash: Vec<Sha256>,
    /// Slots whose fetch ended, to take again.
    ended: Vec<u32>,
    in_flight: u64,
}

impl Fetches<'_> {
    fn verifying(&self, slot: usize) -> bool {
        self.cfg.urls[self.url[slot] as usize].expect.is_some()
    }
}

/// The error a failed fetch counts as (the socket client's kinds).
fn kind(f: Failure, heard: bool) -> ErrorKind {
    match f {
        Failure::Refused => ErrorKind::Refused,
        Failure::NoAnswer => ErrorKind::ConnectTimeout,
        Failure::Reset => ErrorKind::Reset,
        Failure::Closed if heard => ErrorKind::Truncated,
        Failure::Closed => ErrorKind::NoResponse,
        Failure::BadResponse => ErrorKind::BadHead,
        Failure::Stalled => ErrorKind::ResponseTimeout,
        Failure::NoResources => ErrorKind::ConnectFailed,
    }
}

impl Handler for Fetches<'_> {
    fn connected(&mut self, slot: u32, now: u64) {
        let s = slot as usize;
        self.t.connect.record(now.saturating_sub(self.sent_at[s]));
        self.sent_at[s] = now;
    }

    fn first_byte(&mut self, slot: u32, now: u64) {
        self.first_at[slot as usize] = now;
    }

    fn body(&mut self, slot: u32, _: u64, data: &[u8]) {
        if self.verifying(slot as usize) {
            self.hash[slot as usize].update(data);
        }
    }

    fn end(&mut self, slot: u32, end: End, now: u64) {
        let s = slot as usize;
        self.in_flight -= 1;
        let sent = self.sent_at[s];
        match end {
            End::Done { status, body } => {
                let expect = self.cfg.urls[self.url[s] as usize].expect.as_ref();
                let hash = &mut self.hash[s];
                let v = bareweb_loadgen::tally::verdict(
                    self.cfg.expect_status,
                    expect,
                    status,
                    body,
                    || hash.finalize_reset().into(),
                );
                let first = self.first_at[s].max(sent) - sent;
                self.t
                    .response(status, body, first, now.saturating_sub(sent), v);
            }
            End::Failed(f) => self.t.error(kind(f, self.first_at[s] != 0), 1),
        }
        self.ended.push(slot);
    }
}

/// Runs the load of `cfg` with the engine's client on `nic` (of MAC `mac`; `kind` names
/// the client in the report, `link` the NIC in messages) until its fetches are done, its
/// time is up or Ctrl-C.
fn run<N: HostQueue>(
    nic: &mut N,
    mac: EthernetAddress,
    kind: &str,
    link: &str,
    a: &LoadArgs,
    cfg: &LoadConfig,
) -> Result<Report, String> {
    let positive = |v: f64| v > 0.0 && v.is_finite();
    if !positive(cfg.seconds) || !positive(cfg.timeout) {
        return Err("--seconds and --timeout must be > 0".into());
    }
    let (slots, interval_ns) = match cfg.mode {
        Mode::Parallel(n) => (n.max(1), 0.0),
        Mode::Rate(r) if positive(r) => (cfg.max_conns.max(1), 1e9 / r),
        Mode::Rate(_) => return Err("--rate must be a positive number".into()),
        Mode::Sessions { .. } => return Err("sessions: not in this loop".into()),
    };
    let cidr = a.udp.ip.ok_or("the bare client needs --ip")?;
    let server = Ipv4Address(cfg.target.addr.ip().octets());
    let mut c = Config::new(
        mac,
        cidr.addr(),
        cidr.prefix,
        server,
        cfg.target.addr.port(),
        slots,
    );
    c.gateway = a.udp.gw.map(|g| Ipv4Address(g.octets()));
    c.stall_ns = (cfg.timeout * 1e9) as u64;
    c.isn_key = crate::util::random_bytes();
    let mut client = Client::new(c);
    let mut h = Fetches {
        cfg,
        t: Tally::new(),
        url: vec![0; slots],
        sent_at: vec![0; slots],
        first_at: vec![0; slots],
        hash: vec![Sha256::new(); slots],
        ended: Vec::with_capacity(slots),
        in_flight: 0,
    };
    crate::util::catch_stop_signals();
    let stop = crate::util::stop_flag();
    let mut progress = crate::load::progress_printer(a.quiet);
    let mut rng = Rng::new(cfg.seed);
    let clock = SystemClock::new();
    let cpu0 = bareweb_loadgen::sys::thread_cpu_secs();
    // ARP for the next hop first; the run's clock starts when it answers.
    while !client.ready() {
        let now = clock.now_ns();
        if now > 3_000_000_000 {
            return Err(format!(
                "no ARP answer from {} on {link} in 3 s (is it on the server's link?)",
                a.udp.gw.map_or(server, |g| Ipv4Address(g.octets()))
            ));
        }
        if stop.load(Ordering::Relaxed) {
            return Err("stopped before the server's link answered".into());
        }
        if !client.poll(nic, now, &mut h) {
            nic.wait_us(1000);
        }
    }
    let start = clock.now_ns();
    let end_ns = start + (cfg.seconds * 1e9) as u64;
    let mut free: Vec<u32> = (0..slots as u32).rev().collect();
    let mut launched = 0u64;
    let mut next_progress = start + 1_000_000_000;
    let mut last = (start, 0u64);
    let end = loop {
        let now = clock.now_ns();
        let mut worked = client.poll(nic, now, &mut h);
        free.append(&mut h.ended);
        if now >= end_ns || stop.load(Ordering::Relaxed) {
            break now.min(end_ns);
        }
        // Begin what is due.
        let mut begun = false;
        while launched < cfg.fetches {
            if interval_ns > 0.0 {
                if start + (launched as f64 * interval_ns) as u64 > now {
                    break;
                }
            } else if h.in_flight >= slots as u64 {
                break;
            }
            launched += 1;
            h.t.fetches_started += 1;
            let Some(slot) = free.pop() else {
                h.t.error(ErrorKind::NoSlot, 1); // rate mode: none free when one was due
                continue;
            };
            let url = if cfg.urls.len() == 1 {
                0
            } else {
                rng.below(cfg.urls.len() as u64) as u32
            };
            let close = !cfg.keepalive;
            let path = &cfg.urls[url as usize].path;
            let Some(n) = http::write_get(client.request_buf(slot), &cfg.target.host, path, close)
            else {
                return Err(format!("{path}: request too long"));
            };
            let s = slot as usize;
            h.url[s] = url;
            h.sent_at[s] = now;
            h.first_at[s] = 0;
            h.hash[s].reset();
            h.in_flight += 1;
            client.get(slot, n, close, now, nic.split().1, &mut h);
            free.append(&mut h.ended);
            begun = true;
        }
        if begun {
            nic.split().1.flush();
            worked = true;
        }
        h.t.max_parallel = h.t.max_parallel.max((slots - free.len()) as u64);
        if launched >= cfg.fetches && h.in_flight == 0 {
            break now;
        }
        if now >= next_progress {
            progress(&Progress {
                elapsed_secs: (now - start) as f64 / 1e9,
                fetches: h.t.fetches,
                errors: h.t.errors_total(),
                open: client.open_connections() as u64,
                recent_rate: (h.t.fetches - last.1) as f64 * 1e9 / (now - last.0).max(1) as f64,
                sessions: 0,
            });
            last = (now, h.t.fetches);
            next_progress += 1_000_000_000;
        }
        if !worked {
            let mut wake = (now + 1_000_000).min(next_progress).min(end_ns);
            if interval_ns > 0.0 && launched < cfg.fetches {
                wake = wake.min(start + (launched as f64 * interval_ns) as u64);
            }
            let us = wake.saturating_sub(clock.now_ns()) / 1000;
            if us > 0 {
                nic.wait_us(us);
            }
        }
    };
    crate::load::progress_done(a.quiet);
    let unfinished = h.in_flight;
    // Close the kept connections, for at most a second (fetches still in flight are
    // left: the process ends); what comes now is past the run and not counted.
    struct Past;
    impl Handler for Past {
        fn end(&mut self, _: u32, _: End, _: u64) {}
    }
    let now = clock.now_ns();
    client.close_all(now, nic.split().1);
    while client.open_connections() > unfinished as usize && clock.now_ns() < now + 1_000_000_000 {
        if !client.poll(nic, clock.now_ns(), &mut Past) {
            nic.wait_us(1000);
        }
    }
    let cpu = bareweb_loadgen::sys::thread_cpu_secs() - cpu0;
    h.t.connections = client.counters.connections;
    let mut r = h.t.report(
        cfg.describe(),
        kind,
        (end - start) as f64 / 1e9,
        unfinished,
        cpu,
    );
    r.retransmits = client.counters.retransmits;
    Ok(r)
}
