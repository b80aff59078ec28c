//! `bareweb load --udp` over ordinary sockets: the engine's load core
//! (`bareweb_engine::udp::load::Load`: schedule, slots, transfers, counters) driven by one
//! epoll thread. Each request gets a UDP socket of its own (a fresh port, as the paper's
//! client indexes requests by port), closed when the request ends; a timerfd wakes the loop
//! for the schedule and the transfers' timeouts with nanosecond precision. Bodies are
//! checked against the expected files as their packets arrive (no buffering), when
//! `--verify` gave them.

use std::net::UdpSocket;
use std::time::{Duration, Instant};

use bareweb_engine::udp::fetch::Sink;
use bareweb_engine::udp::load::{Config, Load, Outcome};
use bareweb_engine::udp::wire::{write_request, Start, MAX_REQUEST, PAD_TO};

use super::report::UdpReport;
use super::UdpTarget;
use crate::sys::{self, Epoll, Timer};

/// A URL of the run and, with `--verify`, the file it must return.
#[derive(Debug, Clone)]
pub struct UdpUrl {
    /// The path.
    pub path: String,
    /// The file's bytes.
    pub expect: Option<Vec<u8>>,
}

/// A run's settings.
#[derive(Debug, Clone)]
pub struct UdpLoadConfig {
    /// The server.
    pub target: UdpTarget,
    /// URLs, fetched round robin.
    pub urls: Vec<UdpUrl>,
    /// Schedule, slots, requests, timing.
    pub load: Config,
    /// The run stops starting requests after this long; it ends when the last is done.
    pub seconds: f64,
    /// Pad initial GETs to 1200 octets (docs/udp-protocol.md §6).
    pub pad: bool,
    /// Progress lines every so often.
    pub progress_every: Option<Duration>,
}

/// A request's socket and what its sink found.
struct Io {
    sock: Option<UdpSocket>,
    status: u16,
    verify_bad: bool,
}

/// The sink of one slot: the head's status, the body against the expected file.
struct Check<'a> {
    io: &'a mut Io,
    expect: Option<&'a [u8]>,
}

impl Sink for Check<'_> {
    fn begin(&mut self, total: u64) -> bool {
        if let Some(e) = self.expect {
            self.io.verify_bad |= e.len() as u64 != total;
        }
        true
    }
    fn head(&mut self, head: &[u8]) {
        self.io.status = head
            .get(9..12)
            .and_then(|c| std::str::from_utf8(c).ok()?.parse().ok())
            .unwrap_or(0);
    }
    fn data(&mut self, offset: u64, bytes: &[u8]) {
        if let Some(e) = self.expect {
            let o = offset as usize;
            self.io.verify_bad |= e.get(o..o + bytes.len()) != Some(bytes);
        }
    }
}

const TIMER: u64 = u64::MAX;

fn send(io: &Io, cfg: &UdpLoadConfig, url: &str, start: Start, token: Option<&[u8; 8]>) {
    let mut buf = [0u8; MAX_REQUEST];
    let pad = if cfg.pad && start == Start::Initial {
        PAD_TO
    } else {
        0
    };
    if let (Some(s), Some(n)) = (
        &io.sock,
        write_request(&mut buf, &cfg.target.host, url, start, token, pad),
    ) {
        // A full socket buffer is a lost datagram: the transfer's timeout covers it.
        let _ = s.send(&buf[..n]);
    }
}

/// Runs the load; `progress` is called every `progress_every`.
pub fn run(cfg: &UdpLoadConfig, progress: &mut dyn FnMut(f64, &Load)) -> Result<UdpReport, String> {
    if cfg.urls.is_empty() {
        return Err("no URL given".into());
    }
    for u in &cfg.urls {
        let mut b = [0u8; MAX_REQUEST];
        write_request(
            &mut b,
            &cfg.target.host,
            &u.path,
            Start::From(1),
            Some(&[0; 8]),
            0,
        )
        .ok_or_else(|| format!("{}: the request would not fit one datagram", u.path))?;
    }
    sys::raise_nofile();
    let epoll = Epoll::new().map_err(|e| format!("epoll: {e}"))?;
    let timer = Timer::new().map_err(|e| format!("timerfd: {e}"))?;
    epoll
        .add_in(timer.fd(), TIMER)
        .map_err(|e| format!("epoll: {e}"))?;
    let t0 = Instant::now();
    let now = || t0.elapsed().as_nanos() as u64;
    let end_ns = (cfg.seconds * 1e9) as u64;
    let mut load = Load::new(cfg.load, cfg.urls.len(), now());
    let mut ios: Vec<Io> = (0..cfg.load.slots.max(1))
        .map(|_| Io {
            sock: None,
            status: 0,
            verify_bad: false,
        })
        .collect();
    let cpu0 = sys::thread_cpu_secs();
    let mut events = vec![sys::empty_event(); 256];
    let mut buf = [0u8; 2048];
    let mut verify_errors = 0u64;
    let mut socket_errors = 0u64;
    let mut next_progress = cfg.progress_every.map(|d| d.as_nanos() as u64);
    let mut timeouts: Vec<(u32, Outcome)> = Vec::with_capacity(ios.len());
    let finished = |load: &mut Load, io: &mut Io, ok: bool, verify_errors: &mut u64| {
        // Closing the socket takes it out of the epoll set (no other fd refers to it).
        io.sock = None;
        if ok {
            if !(200..300).contains(&io.status) {
                load.count_bad_status();
            } else if io.verify_bad {
                *verify_errors += 1;
            }
        }
    };
    loop {
        let t = now();
        let starting = t < end_ns;
        if load.finished() {
            break;
        }
        if starting {
            for _ in 0..load.due(t) {
                let Some((i, start)) = load.start(t) else {
                    continue;
                };
                let io = &mut ios[i as usize];
                *io = Io {
                    sock: None,
                    status: 0,
                    verify_bad: false,
                };
                match open(cfg, &epoll, i) {
                    Ok(s) => io.sock = Some(s),
                    Err(_) => socket_errors += 1,
                }
                let url = &cfg.urls[load.slot(i).url as usize].path;
                send(io, cfg, url, start, load.token());
            }
        } else if load.busy() == 0 {
            break;
        }
        timeouts.clear();
        load.on_timeouts(t, |i, o| {
            timeouts.push((i, o));
            true
        });
        for &(i, o) in &timeouts {
            let io = &mut ios[i as usize];
            match o {
                Outcome::Going(Some(start)) => {
                    let url = &cfg.urls[load.slot(i).url as usize].path;
                    send(io, cfg, url, start, load.token());
                }
                Outcome::Going(None) => {}
                Outcome::Finished(ok) => finished(&mut load, io, ok, &mut verify_errors),
            }
        }
        if let Some(p) = next_progress {
            if t >= p {
                progress(t as f64 / 1e9, &load);
                next_progress = cfg.progress_every.map(|d| p + d.as_nanos() as u64);
            }
        }
        let mut wake = load.next_deadline();
        if starting {
            wake = wake.min(load.next_due()).min(end_ns);
        }
        if let Some(p) = next_progress {
            wake = wake.min(p);
        }
        let t = now();
        if wake == u64::MAX {
            timer
                .arm_in(100_000_000)
                .map_err(|e| format!("timerfd: {e}"))?;
        } else if wake > t {
            timer
                .arm_in(wake - t)
                .map_err(|e| format!("timerfd: {e}"))?;
        }
        let n = if wake <= t {
            epoll.wait(&mut events, 0)
        } else {
            epoll.wait(&mut events, -1)
        }
        .map_err(|e| format!("epoll: {e}"))?;
        for ev in &events[..n] {
            let token = sys::event_parts(ev).0;
            if token == TIMER {
                timer.clear();
                continue;
            }
            let i = token as u32;
            loop {
                let io = &mut ios[i as usize];
                let Some(sock) = io.sock.as_ref() else { break };
                let got = match sock.recv(&mut buf) {
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    // ICMP errors (port unreachable): the timeout handles the request.
                    Err(_) => break,
                };
                let url = load.slot(i).url as usize;
                let mut sink = Check {
                    io,
                    expect: cfg.urls[url].expect.as_deref(),
                };
                match load.on_packet(i, &buf[..got], now(), &mut sink) {
                    Outcome::Going(Some(start)) => {
                        send(io, cfg, &cfg.urls[url].path, start, load.token())
                    }
                    Outcome::Going(None) => {}
                    Outcome::Finished(ok) => {
                        finished(&mut load, io, ok, &mut verify_errors);
                        break;
                    }
                }
            }
        }
    }
    let elapsed = t0.elapsed().as_secs_f64();
    let cpu = sys::thread_cpu_secs() - cpu0;
    Ok(UdpReport::new(
        cfg,
        &load.counters,
        elapsed,
        cpu,
        verify_errors,
        socket_errors,
    ))
}

/// A fresh UDP socket for slot `i`, connected to the server, registered with `epoll`.
fn open(cfg: &UdpLoadConfig, epoll: &Epoll, i: u32) -> std::io::Result<UdpSocket> {
    let s = super::socket_to(cfg.target.addr)?;
    s.set_nonblocking(true)?;
    epoll.add_in(&s, u64::from(i))?;
    Ok(s)
}
