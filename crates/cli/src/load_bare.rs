//! `bareweb load URL --tap NAME --ip A/N` (without `--udp`): the bare HTTP load client.
//! The engine's own client (`bareweb_engine::fetch`: its TCP in active open, ARP, a
//! response reader) speaks through a TAP of its own, so the client's TCP costs stay
//! in this process and are not charged to the server through the kernel's TAP write path.
//! This module owns the bare client's load loop ([`run`], generic over the engine's `Nic`)
//! and its per-slot bookkeeping; what it counts goes into the socket client's
//! [`Tally`], so its report is the socket client's [`Report`] (client kind "bare-tap", or
//! "bare-tap-spin" when it polls: `--spin-us`).
//!
//! Modes, as the socket client runs them ([`bareweb_loadgen::load`]): parallel
//! (`--parallel N`, N fetches in flight) and rate (`--rate R`, a fetch begun every 1/R s on
//! a free slot of `--max-conns`, a `no_slot` error when none is free), each with a
//! connection per fetch or kept alive (`-k`), URLs drawn at random from the list with
//! `--seed`; and Surge sessions (`--sessions-rate R --surge DIR`): R sessions begin per
//! second, each on a slot of its own with one kept connection (a new one if the server
//! closed it while the session thought), a burst of a page and its embedded objects drawn
//! by popularity and sent pipelined, a think time, the next burst, and the connection
//! closed at the session's end; a bad response fails its session, as there.
//! `--verify DIR` checks each body's length and SHA-256.
//!
//! The TAP takes receive offloads unless `--no-offload` (`Tap::enable_rx_offload`): a
//! server's TSO/GSO super-frames arrive whole (one read and one ACK for up to 64 KiB, and
//! the server is not charged for segmenting them for us), frames from this host's memory
//! with their checksum vouched for; the report's `offloaded_frames` counts the
//! super-frames. Each connection advertises a receive window of its share of what the
//! TAP's queue holds, 64 KiB to 1 MiB ([`rx_window`]; window scaling, RFC 7323), so a
//! server can send a bulk response in whole 64 KiB frames, not a 64 KiB window at a
//! time. Every failed
//! fetch is counted by its reason (the report's `errors`), and the command exits non-zero
//! if any failed. Ctrl-C ends the run early, with its report.

use std::sync::atomic::Ordering;

use bareweb_engine::fetch::{http, Config, End, Failure, Fetcher, Handler};
use bareweb_engine::iface::FetchV6;
use bareweb_engine::nic::{Clock, TxRing};
use bareweb_engine::wire::EthernetAddress;
use bareweb_host::cores::HostQueue;
use bareweb_host::{netif, xdp, SystemClock};
use bareweb_loadgen::rng::{Rng, Zipf};
use bareweb_loadgen::surge::{SurgeParams, MAX_BURST};
use bareweb_loadgen::{ErrorKind, LoadConfig, Mode, Progress, Report, Tally};
use sha2::{Digest, Sha256};

use crate::load_common::{bare_link, client_mac, open_tap, LoadArgs, XdpQueueArg};

pub fn load(a: &LoadArgs, cfg: &LoadConfig) -> Result<(), String> {
    if a.udp.kernel {
        return Err(
            "--kernel is for the UDP client (--udp); the bare HTTP client runs as a process".into(),
        );
    }
    if let Some(x) = &a.udp.xdp {
        return load_xdp(a, cfg, x);
    }
    let tap = a.udp.tap.as_deref().ok_or("--tap or --xdp needed")?;
    // The client's address for the server's family, checked before the TAP is made.
    bare_link(a, EthernetAddress([0; 6]), cfg.target.addr)?;
    let mac = client_mac(a);
    let mut nic = open_tap(tap, mac)?;
    // The load loop polls again straight after its work (Tap::set_one_read_per_burst).
    nic.set_one_read_per_burst(true);
    // Over IPv6 the link verifies every checksum: a super-frame's partial one would not
    // pass, so receive offloads stay off.
    let offload = !a.udp.no_offload && cfg.target.addr.is_ipv4();
    if offload {
        nic.enable_rx_offload().map_err(|e| {
            format!("cannot enable receive offloads on TAP {tap} (--no-offload goes without): {e}")
        })?;
    }
    let queue = tap_queue_bytes(tap, offload);
    let link = format!("TAP {tap}");
    let mut report = run(&mut nic, mac, "bare-tap", &link, Some(queue), a, cfg)?;
    let c = nic.rx_offload_counts();
    report.offloaded_frames = c.gso_frames;
    if !a.quiet && offload {
        eprintln!(
            "bareweb: receive offloads on TAP {tap}: {} super-frames, {} frames with the checksum vouched for, {} bad headers dropped",
            c.gso_frames, c.csum_trusted, c.bad_header
        );
    }
    finish(a, &report)
}

/// The bare client on an AF_XDP socket: the steering program on the interface for the
/// client's address only, one socket on the queue asked; detached when this returns
/// (also after Ctrl-C, which ends the run).
fn load_xdp(a: &LoadArgs, cfg: &LoadConfig, x: &XdpQueueArg) -> Result<(), String> {
    let iface = x.iface.as_str();
    if cfg.target.addr.is_ipv6() {
        return Err(
            "the bare client on AF_XDP speaks IPv4 only (its XDP program steers one IPv4 address); use --tap for an IPv6 server".into(),
        );
    }
    let cidr = a.udp.ip.ok_or("--xdp needs --ip")?;
    let ip = cidr.addr();
    if let Some((_, h, _)) = netif::local_ipv4().into_iter().find(|(_, h, _)| *h == ip) {
        return Err(format!(
            "{h} is an address of this host: the bare client needs an address of its own on {iface}'s link (--ip), \
             or the host would lose its traffic to it"
        ));
    }
    let spec = xdp::Spec {
        ipv6: false,
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
        None,
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
    crate::load_common::emit(a, r, &r.text())?;
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

/// What the load loop knows of each slot's fetches (a burst of up to [`MAX_BURST`]
/// pipelined in session mode, else one), and the tally. Every table is sized once, to
/// the slots: nothing here allocates per fetch.
struct Fetches<'a> {
    cfg: &'a LoadConfig,
    t: Tally,
    /// The URLs of the slot's burst, in order, and which one is being read.
    urls: Vec<[u32; MAX_BURST]>,
    at: Vec<u8>,
    /// Responses of the burst still to come.
    left: Vec<u32>,
    /// When the requests went: the fetch began on a kept connection, or its new one was
    /// established (the socket client's moment: after connect).
    sent_at: Vec<u64>,
    first_at: Vec<u64>,
    hash: Vec<Sha256>,
    /// The slot runs a session; a response of it failed its checks.
    in_session: Vec<bool>,
    session_bad: Vec<bool>,
    /// Slots whose burst (or fetch) ended, for the loop to go on with.
    ended: Vec<u32>,
    /// Fetches begun and not ended.
    in_flight: u64,
}

impl Fetches<'_> {
    fn url(&self, slot: usize) -> u32 {
        self.urls[slot][usize::from(self.at[slot]).min(MAX_BURST - 1)]
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
        let s = slot as usize;
        if !self.cfg.urls[self.url(s) as usize].expect.is_empty() {
            self.hash[s].update(data);
        }
    }

    fn end(&mut self, slot: u32, end: End, now: u64) {
        let s = slot as usize;
        self.in_flight = self.in_flight.saturating_sub(1);
        let sent = self.sent_at[s];
        let good = match end {
            End::Done { status, body } => {
                let expect = self.cfg.urls[self.url(s) as usize].expect.as_slice();
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
                    .response(status, body, first, now.saturating_sub(sent), v)
            }
            End::Failed(f) => {
                self.t.error(kind(f, self.first_at[s] != 0), 1);
                false
            }
        };
        self.session_bad[s] |= !good && self.in_session[s];
        // The next response of the burst, if any.
        self.first_at[s] = 0;
        self.hash[s].reset();
        self.at[s] = self.at[s].saturating_add(1);
        self.left[s] = self.left[s].saturating_sub(1);
        if self.left[s] == 0 {
            self.ended.push(slot);
        }
    }
}

/// The load loop's state beside the client and its handler.
struct Load<'a> {
    cfg: &'a LoadConfig,
    client: Fetcher,
    h: Fetches<'a>,
    rng: Rng,
    /// Session mode: the Surge model and its popularity.
    surge: Option<(&'a SurgeParams, Zipf)>,
    free: Vec<u32>,
    /// Sessions thinking between bursts, and until when (per slot).
    thinking: Vec<u32>,
    think_until: Vec<u64>,
    bursts_left: Vec<u32>,
    session_start: Vec<u64>,
    sessions_active: u64,
}

impl Load<'_> {
    /// Whether the next fetch or session can start: no free slot is counted by the begin
    /// functions (`no_slot`); a free slot whose fetch would find no TCB or local port
    /// (connections still closing hold them) cannot. Without this check such a fetch would
    /// fail at once and free its slot, and a closed loop would fail every fetch left in a
    /// tight loop.
    fn can_begin(&self) -> bool {
        self.free.last().is_none_or(|&s| self.client.can_start(s))
    }

    /// A fetch or session was due (rate modes) and could not start: counted as the
    /// socket client counts one with no free slot.
    fn no_room(&mut self) {
        if self.surge.is_some() {
            self.h.t.sessions_started += 1;
            self.h.t.sessions_failed += 1;
        } else {
            self.h.t.fetches_started += 1;
        }
        self.h.t.error(ErrorKind::NoSlot, 1);
    }

    /// Begins one fetch (parallel and rate modes) on a free slot.
    fn begin_fetch<T: TxRing>(&mut self, now: u64, tx: &mut T) -> Result<(), String> {
        self.h.t.fetches_started += 1;
        let Some(slot) = self.free.pop() else {
            self.h.t.error(ErrorKind::NoSlot, 1); // rate mode: none free when one was due
            return Ok(());
        };
        let url = if self.cfg.urls.len() == 1 {
            0
        } else {
            self.rng.below(self.cfg.urls.len() as u64) as u32
        };
        self.send(slot, &[url], !self.cfg.keepalive, now, tx)
    }

    /// Begins one session on a free slot: its first burst.
    fn begin_session<T: TxRing>(&mut self, now: u64, tx: &mut T) -> Result<(), String> {
        self.h.t.sessions_started += 1;
        let Some(slot) = self.free.pop() else {
            self.h.t.error(ErrorKind::NoSlot, 1);
            self.h.t.sessions_failed += 1;
            return Ok(());
        };
        let Some((params, _)) = self.surge else {
            return Ok(());
        };
        let s = slot as usize;
        self.sessions_active += 1;
        self.h.in_session[s] = true;
        self.h.session_bad[s] = false;
        self.session_start[s] = now;
        self.bursts_left[s] = params.draw_bursts(&mut self.rng);
        self.burst(slot, now, tx)
    }

    /// A session's next burst: a page and its embedded objects, drawn by popularity and
    /// sent pipelined on the session's connection (a new one if the server closed it).
    fn burst<T: TxRing>(&mut self, slot: u32, now: u64, tx: &mut T) -> Result<(), String> {
        let Some((params, zipf)) = &self.surge else {
            return Ok(());
        };
        let k = params.draw_burst(&mut self.rng).min(MAX_BURST);
        let mut urls = [0u32; MAX_BURST];
        for u in &mut urls[..k] {
            *u = zipf.sample(&mut self.rng) as u32;
        }
        self.h.t.fetches_started += k as u64;
        self.send(slot, &urls[..k], false, now, tx)
    }

    /// Writes the requests for `urls` into the slot's buffer and sends them.
    fn send<T: TxRing>(
        &mut self,
        slot: u32,
        urls: &[u32],
        close: bool,
        now: u64,
        tx: &mut T,
    ) -> Result<(), String> {
        let s = slot as usize;
        let buf = self.client.request_buf(slot);
        let mut len = 0;
        for &u in urls {
            let path = &self.cfg.urls[u as usize].path;
            let Some(n) = buf
                .get_mut(len..)
                .and_then(|b| http::write_get(b, &self.cfg.target.host, path, close))
            else {
                return Err(format!("{path}: request too long"));
            };
            len += n;
        }
        self.h.urls[s][..urls.len()].copy_from_slice(urls);
        self.h.at[s] = 0;
        self.h.left[s] = urls.len() as u32;
        self.h.sent_at[s] = now;
        self.h.first_at[s] = 0;
        self.h.hash[s].reset();
        self.h.in_flight += urls.len() as u64;
        let n = urls.len() as u32;
        if !self
            .client
            .get_pipelined(slot, len, n, close, now, tx, &mut self.h)
        {
            return Err("the client refused a fetch on a free slot".into());
        }
        Ok(())
    }

    /// Goes on with every slot whose burst or fetch ended: a fetch's slot is free again;
    /// a session thinks before its next burst, or ends (its connection closed).
    fn settle<T: TxRing>(&mut self, now: u64, tx: &mut T) {
        while let Some(slot) = self.h.ended.pop() {
            let s = slot as usize;
            if !self.h.in_session[s] {
                self.free.push(slot);
                continue;
            }
            self.bursts_left[s] = self.bursts_left[s].saturating_sub(1);
            let bad = self.h.session_bad[s];
            if self.bursts_left[s] == 0 || bad {
                if bad {
                    self.h.t.sessions_failed += 1;
                } else {
                    self.h.t.sessions_completed += 1;
                    self.h.t.session.record(now - self.session_start[s]);
                }
                self.sessions_active -= 1;
                self.h.in_session[s] = false;
                self.client.close_slot(slot, now, tx);
                self.free.push(slot);
                continue;
            }
            let think = self
                .surge
                .as_ref()
                .map_or(0.0, |(p, _)| p.draw_think(&mut self.rng));
            self.think_until[s] = now + (think * 1e9) as u64;
            self.thinking.push(slot);
        }
    }

    /// Sessions whose think time is over begin their next burst.
    fn wake<T: TxRing>(&mut self, now: u64, tx: &mut T) -> Result<(), String> {
        let mut i = 0;
        while i < self.thinking.len() {
            let slot = self.thinking[i];
            if self.think_until[slot as usize] > now {
                i += 1;
                continue;
            }
            if !self.client.can_start(slot) {
                // No TCB or port for a new connection yet: think until the next scan.
                i += 1;
                continue;
            }
            self.thinking.swap_remove(i);
            self.burst(slot, now, tx)?;
        }
        Ok(())
    }

    /// The next think time to end.
    fn next_wake(&self) -> u64 {
        self.thinking
            .iter()
            .map(|&s| self.think_until[s as usize])
            .min()
            .unwrap_or(u64::MAX)
    }
}

/// Why the bare client over IPv6 could not start: its address not held, no router, or
/// no answer from the next hop.
fn not_ready6(client: &Fetcher, v6: &FetchV6, link: &str) -> String {
    let Some(l) = client.link6() else {
        return "the IPv6 link was not made".into();
    };
    if l.slot_of(v6.ip).is_none() {
        return format!(
            "--ip6 {} is not in use on {link} after 10 s: duplicate address detection found it held by another node, or did not end",
            v6.ip
        );
    }
    match v6.next_hop(l.slaac.default_router()) {
        None => format!(
            "{} is outside --ip6's prefix and no router advertised itself on {link} in 10 s: give one with --gw6 ADDR",
            v6.server
        ),
        Some(hop) => format!(
            "no neighbour advertisement from {hop} on {link} in 10 s (is it on the server's link?)"
        ),
    }
}

/// What the TAP's queue to us holds (bytes): `tx_queue_len` frames (the tun driver drops
/// what finds its ring full), each a super-frame counted at 32 KiB with receive
/// offloads (half the 64 KiB frames a server sends once its window has opened), else a
/// 1448-byte segment. Linux's default of 500 frames when the length cannot be read.
fn tap_queue_bytes(tap: &str, offload: bool) -> u64 {
    let frames = std::fs::read_to_string(format!("/sys/class/net/{tap}/tx_queue_len"))
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .filter(|&n| n > 0)
        .unwrap_or(500);
    frames * if offload { 32 * 1024 } else { 1448 }
}

/// The receive window of each of `slots` connections when the link's queue to us holds
/// `queue` bytes: an equal share of half of it, so that the servers filling every window
/// do not overflow the queue (a loss, repaired, but a stall; a share of the whole queue
/// without offloads made 6% of a server's frames retransmissions in 1 MiB downloads), from 64 KiB (the
/// unscaled most) to 1 MiB. A window of 64 KiB costs a bulk download a round trip between the two
/// processes per 64 KiB, in frames a quarter that size from bareweb (docs/performance.md,
/// "The bare client's window"); 1 MiB lets a 1 MiB response go in one round trip once the
/// server's window has opened.
pub(crate) fn rx_window(queue: u64, slots: usize) -> u32 {
    (queue / 2 / slots.max(1) as u64).clamp(65_535, 1 << 20) as u32
}

/// `--spin-us`'s default: sleep at once, as the socket clients (`bareweb load`, wrk) do in
/// `epoll_wait`. Polling instead (the bench's client kind `bare-tap-spin`) spares a server
/// the client's wake-ups but changes a kernel server's receive batching: measured, and why,
/// in docs/performance.md ("A client that polls").
const SPIN_US_DEFAULT: u64 = 0;

/// The load run on `nic`; `queue`: what the link's queue to us holds (bytes), which sets
/// the receive window ([`rx_window`]; `None`: the engine's 64 KiB default). `kind` names
/// the client in the report, with "-spin" added when it polls (`--spin-us`), `link` the
/// NIC in messages; until its fetches (or sessions) are done, its time is up or Ctrl-C.
fn run<N: HostQueue>(
    nic: &mut N,
    mac: EthernetAddress,
    kind: &str,
    link: &str,
    queue: Option<u64>,
    a: &LoadArgs,
    cfg: &LoadConfig,
) -> Result<Report, String> {
    // How long to poll for a frame while fetches are in flight before sleeping.
    let spin_ns = a.udp.spin_us.unwrap_or(SPIN_US_DEFAULT) * 1000;
    let positive = |v: f64| v > 0.0 && v.is_finite();
    if !positive(cfg.seconds) || !positive(cfg.timeout) {
        return Err("--seconds and --timeout must be > 0".into());
    }
    let (slots, interval_ns, limit, surge) = match &cfg.mode {
        Mode::Parallel(n) => ((*n).max(1), 0.0, cfg.fetches, None),
        Mode::Rate(r) if positive(*r) => (cfg.max_conns.max(1), 1e9 / r, cfg.fetches, None),
        Mode::Sessions { rate, params } if positive(*rate) => {
            params.check()?;
            let zipf = Zipf::new(cfg.urls.len(), params.zipf_alpha);
            (
                cfg.max_conns.max(1),
                1e9 / rate,
                cfg.sessions,
                Some((params, zipf)),
            )
        }
        _ => return Err("--rate and --sessions-rate must be positive numbers".into()),
    };
    let burst = if surge.is_some() { MAX_BURST } else { 1 };
    let longest = cfg
        .urls
        .iter()
        .map(|u| {
            let mut b = vec![0u8; u.path.len() + cfg.target.host.len() + 64];
            http::write_get(&mut b, &cfg.target.host, &u.path, true).unwrap_or(b.len())
        })
        .max()
        .unwrap_or(0);
    let place = bare_link(a, mac, cfg.target.addr)?;
    let mut c = Config::new(
        mac,
        place.ip,
        place.prefix_len,
        place.server,
        place.port,
        slots,
    );
    c.link = place;
    c.stall_ns = (cfg.timeout * 1e9) as u64;
    // One key per boot and a clock from boot: a run's ISNs and timestamps follow on from
    // the last run's, whose connections a kernel server may still hold in TIME-WAIT on
    // the ports this run reuses (a fresh key or a clock from 0 made those SYNs wait a
    // 1 s retransmission).
    c.isn_key = crate::util::boot_secret("tcp-client-isn-key");
    // The ports, though, begin at a random place per run (the key is the boot's).
    c.port_start = u16::from_le_bytes(crate::util::random_bytes());
    c.request_max = (longest * burst).max(bareweb_engine::fetch::REQUEST_MAX);
    if let Some(q) = queue {
        c.rx_window = rx_window(q, slots);
    }
    let (v6, hop4) = (c.link.v6, c.link.next_hop());
    let mut l = Load {
        cfg,
        client: Fetcher::new(c),
        h: Fetches {
            cfg,
            t: Tally::new(),
            urls: vec![[0; MAX_BURST]; slots],
            at: vec![0; slots],
            left: vec![0; slots],
            sent_at: vec![0; slots],
            first_at: vec![0; slots],
            hash: vec![Sha256::new(); slots],
            in_session: vec![false; slots],
            session_bad: vec![false; slots],
            ended: Vec::with_capacity(slots),
            in_flight: 0,
        },
        rng: Rng::new(cfg.seed),
        surge,
        free: (0..slots as u32).rev().collect(),
        thinking: Vec::with_capacity(slots),
        think_until: vec![u64::MAX; slots],
        bursts_left: vec![0; slots],
        session_start: vec![0; slots],
        sessions_active: 0,
    };
    crate::util::catch_stop_signals();
    let stop = crate::util::stop_flag();
    let mut progress = crate::load_common::progress_printer(a.quiet);
    let clock = SystemClock::since_boot();
    let cpu0 = bareweb_loadgen::sys::thread_cpu_secs();
    // ARP (or, over IPv6, duplicate address detection and a neighbour solicitation) for
    // the next hop first; the run's clock starts when it answers.
    let arp_from = clock.now_ns();
    let limit_ns = if v6.is_some() { 10 } else { 3 } * 1_000_000_000;
    while !l.client.ready() {
        let now = clock.now_ns();
        if now > arp_from + limit_ns {
            return Err(match v6 {
                Some(v6) => not_ready6(&l.client, &v6, link),
                None => format!(
                    "no ARP answer from {} on {link} in 3 s (is it on the server's link?)",
                    hop4
                ),
            });
        }
        if stop.load(Ordering::Relaxed) {
            return Err("stopped before the server's link answered".into());
        }
        if !l.client.poll(nic, now, &mut l.h) {
            nic.wait_us(1000);
        }
    }
    let start = clock.now_ns();
    let end_ns = start + (cfg.seconds * 1e9) as u64;
    let mut launched = 0u64;
    let mut next_progress = start + 1_000_000_000;
    let mut next_scan = start;
    let mut last = (start, 0u64);
    let mut last_work = start;
    let end = loop {
        let now = clock.now_ns();
        let mut worked = l.client.poll(nic, now, &mut l.h);
        l.settle(now, nic.split().1);
        if now >= end_ns || stop.load(Ordering::Relaxed) {
            break now.min(end_ns);
        }
        // Begin what is due.
        let sent = l.client.counters.tx;
        while launched < limit {
            if interval_ns > 0.0 {
                if start + (launched as f64 * interval_ns) as u64 > now {
                    break;
                }
            } else if l.h.in_flight >= slots as u64 {
                break;
            }
            if !l.can_begin() {
                // Every TCB or local port is held by a connection still closing. A closed
                // loop waits for one, as a socket client's connect would; at a set rate the
                // fetch (or session) that is due has no slot to run on.
                if interval_ns > 0.0 {
                    launched += 1;
                    l.no_room();
                    continue;
                }
                break;
            }
            launched += 1;
            if l.surge.is_some() {
                l.begin_session(now, nic.split().1)?;
            } else {
                l.begin_fetch(now, nic.split().1)?;
            }
            l.settle(now, nic.split().1);
        }
        if now >= next_scan {
            l.wake(now, nic.split().1)?;
            l.settle(now, nic.split().1);
            next_scan = now + 1_000_000;
        }
        // ACKs held back for kept connections that no new request carried.
        l.client.flush_acks(now, nic.split().1);
        if l.client.counters.tx != sent {
            nic.split().1.flush();
            worked = true;
        }
        l.h.t.max_parallel = l.h.t.max_parallel.max((slots - l.free.len()) as u64);
        let busy = if l.surge.is_some() {
            l.sessions_active
        } else {
            l.h.in_flight
        };
        if launched >= limit && busy == 0 {
            break now;
        }
        if now >= next_progress {
            let t = &l.h.t;
            progress(&Progress {
                elapsed_secs: (now - start) as f64 / 1e9,
                fetches: t.fetches,
                errors: t.errors_total(),
                open: l.client.open_connections() as u64,
                recent_rate: (t.fetches - last.1) as f64 * 1e9 / (now - last.0).max(1) as f64,
                sessions: t.sessions_completed,
            });
            last = (now, t.fetches);
            next_progress += 1_000_000_000;
        }
        if worked {
            last_work = now;
        } else if l.h.in_flight > 0 && now.saturating_sub(last_work) < spin_ns {
            // A frame is due: poll again rather than sleep (`--spin-us`).
            std::hint::spin_loop();
        } else {
            let mut wake = (now + 1_000_000)
                .min(next_progress)
                .min(end_ns)
                .min(l.next_wake());
            if interval_ns > 0.0 && launched < limit {
                wake = wake.min(start + (launched as f64 * interval_ns) as u64);
            }
            let us = wake.saturating_sub(clock.now_ns()) / 1000;
            if us > 0 {
                nic.wait_us(us);
            }
        }
    };
    crate::load_common::progress_done(a.quiet);
    let unfinished = l.h.in_flight;
    // Close the kept connections, for at most a second; what comes now is past the run
    // and not counted.
    struct Past;
    impl Handler for Past {
        fn end(&mut self, _: u32, _: End, _: u64) {}
    }
    let now = clock.now_ns();
    l.client.close_all(now, nic.split().1);
    while l.client.open_connections() > unfinished as usize && clock.now_ns() < now + 1_000_000_000
    {
        if !l.client.poll(nic, clock.now_ns(), &mut Past) {
            nic.wait_us(1000);
        }
    }
    // Whatever is still open (fetches in flight, closes not done) is reset, so the server
    // is left holding nothing of ours: a later run's SYN on one of these 4-tuples would
    // otherwise meet a connection it still held and wait out a 1 s retransmission.
    l.client.abort_all(nic.split().1);
    let cpu = bareweb_loadgen::sys::thread_cpu_secs() - cpu0;
    l.h.t.connections = l.client.counters.connections;
    let kind = if spin_ns > 0 {
        format!("{kind}-spin")
    } else {
        kind.to_string()
    };
    let mut r = l.h.t.report(
        cfg.describe(),
        &kind,
        (end - start) as f64 / 1e9,
        unfinished,
        cpu,
    );
    r.retransmits = l.client.counters.retransmits;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::rx_window;

    #[test]
    fn the_window_is_a_share_of_the_tap_queue_from_64_kib_to_1_mib() {
        // 500 super-frames counted at 32 KiB: 1 MiB for up to 7 connections.
        assert_eq!(rx_window(500 * 32_768, 7), 1 << 20);
        assert_eq!(rx_window(500 * 32_768, 16), 512_000);
        assert_eq!(rx_window(500 * 32_768, 2048), 65_535);
        // Without offloads, 500 segments of 1448: 181,000 bytes each for 2.
        assert_eq!(rx_window(500 * 1448, 2), 181_000);
        assert_eq!(rx_window(500 * 1448, 8), 65_535);
        assert_eq!(rx_window(0, 0), 65_535);
    }
}
