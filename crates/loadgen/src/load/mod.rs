//! The load generator's loop: one thread, non-blocking sockets, edge-triggered epoll.
//!
//! Every connection lives in a slot of a table allocated once at start (its write
//! buffer, response parser and pipeline queue included), free slots and idle keep-alive
//! connections sit on index stacks, and requests are copied from bytes built once per
//! URL: over `http://` nothing is allocated per request. Time comes from the monotonic
//! clock (vDSO).
//!
//! Over `https://` ([`tls`]) each connection also holds a rustls client connection, and
//! rustls allocates: the connection's state and buffers and the handshake's messages and
//! key shares per connection, a buffer per record sent (and received records' plaintext
//! as chunks). Its figures therefore measure the client's TLS as well as the server: the
//! handshake's key exchange and certificate checks, the records' encryption and
//! decryption, those allocations; the report's client CPU time shows how much.
//!
//! Modes (as http_load and httperf):
//! - parallel N: keep N fetches in flight;
//! - rate R: begin R fetches per second, whatever the server does;
//! - sessions R: R Surge sessions per second arrive (module [`crate::surge`]); each holds
//!   one persistent connection, sends a burst of requests pipelined, reads the
//!   responses, thinks, and so on.
//!
//! A run always ends: after `fetches` (or `sessions`) have been begun and finished, or
//! when `seconds` have passed, whichever is first; fetches still in flight then are
//! counted as unfinished. Every connect and every response must make progress within
//! `timeout` or is counted as a timeout.

mod config;
mod conn;
pub mod tls;

use std::time::Instant;

pub use config::{parse_url, parse_url_with, Expect, LoadConfig, Mode, Progress, Target, UrlEntry};
use conn::{close_all, current, launch_fetch, launch_session, on_event, scan, Ctx};

use crate::report::Report;
use crate::sys;

/// Runs a load and returns its report. `progress` is called every
/// `cfg.progress_every` while it runs.
pub fn run(cfg: &LoadConfig, progress: &mut dyn FnMut(&Progress)) -> Result<Report, String> {
    if cfg.urls.is_empty() {
        return Err("no URLs to fetch".into());
    }
    if cfg.urls.len() > u32::MAX as usize {
        return Err("too many URLs".into());
    }
    let positive = |v: f64| v > 0.0 && v.is_finite();
    if !positive(cfg.seconds) || !positive(cfg.timeout) {
        return Err("seconds and timeout must be > 0".into());
    }
    match &cfg.mode {
        Mode::Parallel(n) if *n == 0 => return Err("parallel must be >= 1".into()),
        Mode::Rate(r) | Mode::Sessions { rate: r, .. } if !(*r > 0.0 && r.is_finite()) => {
            return Err("rate must be > 0".into())
        }
        Mode::Sessions { params, .. } => params.check()?,
        _ => {}
    }
    let nofile = sys::raise_nofile();
    let max_conns = cfg.max_conns.max(1);
    if max_conns as u64 + 16 > nofile {
        return Err(format!(
            "{max_conns} connections need more open files than the limit ({nofile}): raise it (ulimit -n) or lower --max-conns"
        ));
    }
    let (mut ctx, mut slots) = Ctx::new(cfg, max_conns)?;
    let mut rbuf = vec![0u8; 256 * 1024];
    // HTTPS: the plaintext of records, taken from TLS for the parser.
    let mut pbuf = vec![0u8; 64 * 1024];
    let mut events = vec![sys::empty_event(); 1024];

    let cpu0 = sys::thread_cpu_secs();
    let start = Instant::now();
    ctx.start = start;
    let now_ns = || start.elapsed().as_nanos() as u64;
    let end_ns = (cfg.seconds * 1e9) as u64;
    let prog_ns = cfg.progress_every.map(|d| d.as_nanos() as u64);
    let mut next_prog = prog_ns.unwrap_or(u64::MAX);
    let mut prog_last = (0u64, 0u64);
    let mut launched: u64 = 0;
    let mut last_event = 0u64;
    let mut next_scan = 0u64;
    const SCAN_NS: u64 = 10_000_000;
    let (limit, interval_ns) = match &cfg.mode {
        Mode::Parallel(_) => (cfg.fetches, 0.0),
        Mode::Rate(r) => (cfg.fetches, 1e9 / r),
        Mode::Sessions { rate, .. } => (cfg.sessions, 1e9 / rate),
    };
    let mut timed_out = false;
    loop {
        let mut now = now_ns();
        if now >= end_ns {
            timed_out = true;
            break;
        }
        // Begin what is due.
        match &cfg.mode {
            Mode::Parallel(n) => {
                while launched < limit && ctx.in_flight < *n as u64 {
                    launched += 1;
                    launch_fetch(&mut ctx, &mut slots, now);
                }
            }
            Mode::Rate(_) => {
                while launched < limit && (launched as f64 * interval_ns) as u64 <= now {
                    launched += 1;
                    launch_fetch(&mut ctx, &mut slots, now);
                }
            }
            Mode::Sessions { params, .. } => {
                while launched < limit && (launched as f64 * interval_ns) as u64 <= now {
                    launched += 1;
                    launch_session(&mut ctx, &mut slots, params, now);
                }
            }
        }
        let busy = match cfg.mode {
            Mode::Sessions { .. } => ctx.sessions_active,
            _ => ctx.in_flight,
        };
        if launched >= limit && busy == 0 {
            break;
        }
        if now >= next_scan {
            scan(&mut ctx, &mut slots, now);
            next_scan = now + SCAN_NS;
        }
        if now >= next_prog {
            let p = Progress {
                elapsed_secs: now as f64 / 1e9,
                fetches: ctx.t.fetches,
                errors: ctx.t.errors.iter().sum(),
                open: ctx.open,
                recent_rate: (ctx.t.fetches - prog_last.1) as f64 * 1e9
                    / (now - prog_last.0).max(1) as f64,
                sessions: ctx.t.sessions_completed,
            };
            progress(&p);
            prog_last = (now, ctx.t.fetches);
            next_prog = now + prog_ns.unwrap_or(u64::MAX / 2);
        }
        // Sleep until the next launch, scan, progress line or the end.
        let mut wake = next_scan.min(end_ns).min(next_prog);
        if launched < limit && interval_ns > 0.0 {
            wake = wake.min((launched as f64 * interval_ns) as u64);
        }
        let timeout_ms = if wake <= now {
            0
        } else {
            (wake - now).div_ceil(1_000_000).min(1000) as i32
        };
        let n = ctx
            .epoll
            .wait(&mut events, timeout_ms)
            .map_err(|e| format!("epoll_wait: {e}"))?;
        if n > 0 {
            now = now_ns();
        }
        for ev in &events[..n] {
            let (tok, flags) = sys::event_parts(ev);
            let Some((i, slot)) = current(&mut slots, tok) else {
                continue; // a stale event for a connection already closed
            };
            on_event(&mut ctx, slot, i, flags, &mut rbuf, &mut pbuf, now);
            last_event = now;
        }
    }
    let end = if timed_out {
        end_ns
    } else {
        now_ns().max(last_event)
    };
    let unfinished = close_all(&mut slots);
    let cpu = sys::thread_cpu_secs() - cpu0;
    Ok(ctx
        .t
        .report(cfg.describe(), "socket", end as f64 / 1e9, unfinished, cpu))
}
