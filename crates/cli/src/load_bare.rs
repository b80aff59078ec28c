//! `bareweb load URL --tap NAME --ip A/N` (without `--udp`): the bare HTTP load client
//! (issue 18). The engine's own client (`bareweb_engine::client`: its TCP in active open,
//! ARP, a response reader) speaks through a TAP of its own, so the client's TCP costs stay
//! in this process and are not charged to the server through the kernel's TAP write path.
//!
//! Modes: parallel (`--parallel N`, a closed loop of N slots) and rate (`--rate R`, a fetch
//! begun every 1/R s on a free slot of `--max-conns`), each with a connection per fetch or
//! kept alive (`-k`). Session mode (`--sessions-rate`) is refused with a clear error: it is
//! the socket client's. `--verify DIR` checks each body's length and SHA-256. Every failed
//! fetch is counted by its reason and reported, and the command exits non-zero if any
//! failed.

use bareweb_engine::client::{http, Client, Config, End, Failure, Handler};
use bareweb_engine::wire::{EthernetAddress, Ipv4Address};
use bareweb_loadgen::{Expect, LoadConfig, Mode};
use sha2::{Digest, Sha256};

use crate::load::LoadArgs;

/// Per-slot state of the handler.
struct Slots {
    url: Vec<usize>,
    hash: Vec<Sha256>,
    bytes: Vec<u64>,
    expect: Vec<Option<Expect>>,
    expect_status: u16,
    ok: u64,
    bad_status: u64,
    verify_errors: u64,
    failed: [u64; 7],
    body_bytes: u64,
    /// Slots whose fetch ended (to start the next).
    ended: Vec<u32>,
}

fn reason(f: Failure) -> usize {
    match f {
        Failure::Refused => 0,
        Failure::NoAnswer => 1,
        Failure::Reset => 2,
        Failure::Closed => 3,
        Failure::BadResponse => 4,
        Failure::Stalled => 5,
        Failure::NoResources => 6,
    }
}

const REASONS: [&str; 7] = [
    "refused",
    "no_answer",
    "reset",
    "closed_early",
    "bad_response",
    "stalled",
    "no_resources",
];

impl Handler for Slots {
    fn body(&mut self, slot: u32, _: u64, data: &[u8]) {
        let s = slot as usize;
        self.bytes[s] += data.len() as u64;
        if self.expect[self.url[s]].is_some() {
            self.hash[s].update(data);
        }
    }

    fn end(&mut self, slot: u32, end: End, _: u64) {
        let s = slot as usize;
        match end {
            End::Done { status, body } => {
                self.body_bytes += body;
                if status != self.expect_status {
                    self.bad_status += 1;
                } else if let Some(e) = &self.expect[self.url[s]] {
                    let sum: [u8; 32] = std::mem::take(&mut self.hash[s]).finalize().into();
                    if e.len != body || e.sha256 != sum {
                        self.verify_errors += 1;
                    } else {
                        self.ok += 1;
                    }
                } else {
                    self.ok += 1;
                }
            }
            End::Failed(f) => self.failed[reason(f)] += 1,
        }
        self.ended.push(slot);
    }
}

pub fn load(a: &LoadArgs, cfg: &LoadConfig) -> Result<(), String> {
    use bareweb_engine::nic::Clock;
    use bareweb_host::{netif, SystemClock, Tap};
    let tap = a.udp.tap.as_deref().ok_or("--tap needed")?;
    if a.udp.kernel {
        return Err(
            "--kernel is for the UDP client (--udp); the bare HTTP client runs as a process".into(),
        );
    }
    let (slots, interval_ns) = match cfg.mode {
        Mode::Parallel(n) => (n.max(1), None),
        Mode::Rate(r) if r > 0.0 && r.is_finite() => (cfg.max_conns.max(1), Some((1e9 / r).max(1.0) as u64)),
        Mode::Rate(_) => return Err("--rate must be a positive number".into()),
        Mode::Sessions { .. } => {
            return Err("the bare client runs --parallel and --rate; Surge sessions need the socket client (no --tap)".into())
        }
    };
    let cidr = a.udp.ip.ok_or("--tap needs --ip")?;
    let mac = match a.udp.mac {
        Some(m) => m.ethernet(),
        None => {
            let mut m: [u8; 6] = crate::util::random_bytes();
            m[0] = (m[0] & 0xfe) | 0x02;
            EthernetAddress(m)
        }
    };
    let mut nic = Tap::open(tap, mac).map_err(|e| format!("cannot open TAP {tap:?}: {e}"))?;
    netif::set_up(nic.name()).map_err(|e| format!("cannot bring {tap} up: {e}"))?;
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
    let mut h = Slots {
        url: vec![0; slots],
        hash: vec![Sha256::new(); slots],
        bytes: vec![0; slots],
        expect: cfg.urls.iter().map(|u| u.expect.clone()).collect(),
        expect_status: cfg.expect_status,
        ok: 0,
        bad_status: 0,
        verify_errors: 0,
        failed: [0; 7],
        body_bytes: 0,
        ended: Vec::with_capacity(slots),
    };
    let clock = SystemClock::new();
    let cpu0 = bareweb_loadgen::sys::thread_cpu_secs();
    let run_ns = (cfg.seconds * 1e9) as u64;
    let mut free: Vec<u32> = (0..slots as u32).rev().collect();
    let (mut begun, mut next_url, mut skipped) = (0u64, 0usize, 0u64);
    let mut next_start = 0u64;
    let mut start_ns = 0u64;
    let mut next_progress = 1_000_000_000u64;
    let mut max_parallel = 0usize;
    loop {
        let now = clock.now_ns();
        let worked = client.poll(&mut nic, now, &mut h);
        free.append(&mut h.ended);
        if !client.ready() {
            if now > 3_000_000_000 {
                return Err(format!(
                    "no ARP answer from {server} on {tap} in 3 s (is the TAP on the server's link?)"
                ));
            }
            if !worked {
                bareweb_host::wake::wait_fds_us(&[nic.rx_fd()], 1000);
            }
            continue;
        }
        if start_ns == 0 {
            start_ns = now.max(1);
            next_start = now;
        }
        let stopping = now >= start_ns + run_ns || begun >= cfg.fetches;
        // Start what the mode allows.
        while !stopping && begun < cfg.fetches {
            if let Some(iv) = interval_ns {
                if now < next_start {
                    break;
                }
                next_start += iv;
            }
            let Some(slot) = free.pop() else {
                if interval_ns.is_some() {
                    skipped += 1; // rate mode: no free slot when a fetch was due
                    continue;
                }
                break;
            };
            let url = next_url;
            next_url = (next_url + 1) % cfg.urls.len();
            let close = !cfg.keepalive;
            let Some(n) = http::write_get(
                client.request_buf(slot),
                &cfg.target.host,
                &cfg.urls[url].path,
                close,
            ) else {
                return Err(format!("{}: request too long", cfg.urls[url].path));
            };
            h.url[slot as usize] = url;
            h.bytes[slot as usize] = 0;
            h.hash[slot as usize] = Sha256::new();
            begun += 1;
            let (_, tx) = bareweb_engine::nic::Nic::split(&mut nic);
            client.get(slot, n, close, now, tx, &mut h);
            free.append(&mut h.ended);
        }
        bareweb_engine::nic::TxRing::flush(bareweb_engine::nic::Nic::split(&mut nic).1);
        max_parallel = max_parallel.max(slots - free.len());
        if !a.quiet && now >= next_progress {
            let done = h.ok + h.bad_status + h.verify_errors + h.failed.iter().sum::<u64>();
            eprintln!(
                "[{:6.1}s] {done} fetches, {} failed, {} open",
                (now - start_ns) as f64 / 1e9,
                h.failed.iter().sum::<u64>(),
                client.open_connections()
            );
            next_progress += 1_000_000_000;
        }
        if stopping && free.len() == slots {
            // Every fetch ended; let kept connections go.
            break;
        }
        if now >= start_ns + run_ns + (cfg.timeout * 1e9) as u64 + 1_000_000_000 {
            break; // fetches still open past the run and the timeout: counted below
        }
        if !worked {
            let wake = if interval_ns.is_some() && !stopping {
                next_start
            } else {
                now + 1_000_000
            };
            let us = wake.saturating_sub(clock.now_ns()) / 1000;
            if us > 0 {
                bareweb_host::wake::wait_fds_us(&[nic.rx_fd()], us.min(1000));
            }
        }
    }
    let elapsed = (clock.now_ns() - start_ns) as f64 / 1e9;
    // Close the kept connections (keep-alive), for at most a second.
    let now = clock.now_ns();
    client.close_all(now, bareweb_engine::nic::Nic::split(&mut nic).1);
    while client.open_connections() > 0 && clock.now_ns() < now + 1_000_000_000 {
        if !client.poll(&mut nic, clock.now_ns(), &mut h) {
            bareweb_host::wake::wait_fds_us(&[nic.rx_fd()], 1000);
        }
    }
    let cpu = bareweb_loadgen::sys::thread_cpu_secs() - cpu0;
    let unfinished = (slots - free.len()) as u64;
    let failed: u64 = h.failed.iter().sum::<u64>() + unfinished;
    let done = h.ok + h.bad_status + h.verify_errors;
    let mut failures = serde_json::Map::new();
    for (i, r) in REASONS.iter().enumerate() {
        failures.insert((*r).into(), h.failed[i].into());
    }
    failures.insert("unfinished".into(), unfinished.into());
    let report = serde_json::json!({
        "client": "bare-tap",
        "mode": match interval_ns { Some(_) => "rate", None => "parallel" },
        "keepalive": cfg.keepalive,
        "fetches": begun,
        "completed": done,
        "good": h.ok,
        "bad_status": h.bad_status,
        "verify_errors": h.verify_errors,
        "failed": failed,
        "failures": failures,
        "skipped": skipped,
        "bytes": h.body_bytes,
        "seconds": elapsed,
        "fetches_per_sec": done as f64 / elapsed.max(1e-9),
        "bytes_per_sec": h.body_bytes as f64 / elapsed.max(1e-9),
        "max_parallel": max_parallel,
        "connections": client.counters.connections,
        "retransmits": client.counters.retransmits,
        "client_cpu_secs": cpu,
        "client_cpu_us_per_fetch": cpu * 1e6 / (done.max(1) as f64),
    });
    let json = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
    if let Some(f) = &a.json_out {
        std::fs::write(f, &json).map_err(|e| format!("{}: {e}", f.display()))?;
    }
    if a.json {
        println!("{json}");
    } else {
        println!(
            "{done} fetches completed ({} good), {} max parallel, {} bytes, in {elapsed:.3} seconds\n\
             {:.1} fetches/sec, {:.0} bytes/sec, {} connections, {} retransmissions\n\
             client CPU {cpu:.3} s ({:.1} us per fetch)\n\
             {failed} failed ({}), {} bad status, {} verify errors, {skipped} due with no free slot",
            h.ok,
            max_parallel,
            h.body_bytes,
            done as f64 / elapsed.max(1e-9),
            h.body_bytes as f64 / elapsed.max(1e-9),
            client.counters.connections,
            client.counters.retransmits,
            cpu * 1e6 / (done.max(1) as f64),
            REASONS
                .iter()
                .enumerate()
                .map(|(i, r)| format!("{r} {}", h.failed[i]))
                .chain(std::iter::once(format!("unfinished {unfinished}")))
                .collect::<Vec<_>>()
                .join(", "),
            h.bad_status,
            h.verify_errors,
        );
    }
    if failed + h.bad_status + h.verify_errors > 0 {
        return Err(format!(
            "{failed} fetches failed, {} bad status, {} verify errors",
            h.bad_status, h.verify_errors
        ));
    }
    Ok(())
}
