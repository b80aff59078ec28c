//! The kernel command line: `ip=A.B.C.D[/N]|dhcp gw=A.B.C.D|none port=N sched=imt|ist
//! cc=bbr|cubic tcbs=N max_per_ip=N syn_backlog=N request_timeout=S idle_timeout=S
//! log=access,stats`,
//! the many-core words `cores=N mode=netcore|perqueue bsp_http=on|off stats_page=on|off
//! apic=auto|xapic`, `stats_allow=A.B.C.D[/N]` (who may read the stats JSON and metrics), the bonding words (issue 14) `bond=off|split|spread
//! bond_policy=per-client|size|least-queued bond_monitor_ms=N`, the UDP protocol's words
//! `udp_port=N udp_ids=N udp_burst=N udp_rate=N udp_paper=on|off` (off unless `udp_port`
//! is given), the bare UDP client's words (`client=udp server=A.B.C.D:PORT paths=/a,/b`,
//! `frequency=F maxreq=M | rate=R | parallel=N`, `requests= seconds= slots= rto_ms=
//! tries= pad=`: see [`UdpClient`]), issue 16's `offload=on|off`, idling `poll=idle|always
//! idle_poll_us=N` and the virtio-mmio devices of a microVM `virtio_mmio.device=SIZE@BASE:IRQ`
//! (Linux's syntax, as Firecracker writes it), and `crash=panic|fault|fault-ap|overflow-ap`
//! which makes the kernel fail on purpose right after boot (the tests use it to prove that
//! failures are reported and stop QEMU).
//!
//! Defaults work under QEMU user networking (10.0.2.15/24, gateway 10.0.2.2, port 80).
//! A bad value is reported on the console and its default kept; an unknown key is
//! reported and ignored. Nothing here panics on any input.
//!
//! `bareweb run` and `bareweb build` compile this same file into the host binary
//! (crates/cli/src/opts.rs) to refuse a bad word before boot, so it depends only on the
//! engine and `core`: keep it free of kernel-only modules.

use bareweb_engine::bond::{Mode as BondMode, Policy as BondPolicy};
use bareweb_engine::server::Sched;
use bareweb_engine::tcp::Algorithm;
use bareweb_engine::wire::Ipv4Address;

/// The settings the command line controls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Our address (with `dhcp`: until a lease gives one).
    pub ip: Ipv4Address,
    /// `ip=dhcp`: the address, prefix and router come from a DHCP server (issue 16).
    pub dhcp: bool,
    /// Prefix length of the link.
    pub prefix: u8,
    /// Router for off-link clients (QEMU's user-mode host is one).
    pub gateway: Option<Ipv4Address>,
    /// TCP port served.
    pub port: u16,
    /// HTTP scheduling policy.
    pub sched: Sched,
    /// TCP congestion control.
    pub cc: Algorithm,
    /// Number of TCBs.
    pub tcbs: usize,
    /// Most connections from one client address (None: half the TCBs).
    pub max_per_ip: Option<usize>,
    /// Half-open connections before SYN cookies (None: half the TCBs).
    pub syn_backlog: Option<usize>,
    /// Seconds a client has to send a whole request head (then 408).
    pub request_timeout_s: u64,
    /// Seconds an idle keep-alive connection is kept.
    pub idle_timeout_s: u64,
    /// Print an access log line per response on the console (slow: one VM exit a byte).
    pub log_access: bool,
    /// Print a counters line every second.
    pub log_stats: bool,
    /// Fail on purpose after boot (tests of the failure path).
    pub crash: Option<Crash>,
    /// Most cores to use (default: every enabled processor in the ACPI MADT).
    pub cores: Option<usize>,
    /// How the cores share the NIC (default: per-queue when the NIC has a queue pair per
    /// core, else network-core).
    pub mode: Option<CoreMode>,
    /// Network-core mode: core 0 serves HTTP too.
    pub bsp_http: bool,
    /// Answer `/.well-known/bareweb/` and `/.well-known/bareweb/stats`.
    pub stats_page: bool,
    /// The clients allowed the stats JSON and metrics, a network and prefix length (over
    /// the site's `[stats] allow`; None: the site's).
    pub stats_allow: Option<(Ipv4Address, u8)>,
    /// Use x2APIC when the CPU offers it (`apic=xapic` forces the memory-mapped xAPIC).
    pub x2apic: bool,
    /// Never halt an idle core (`poll=always`): the papers' behaviour, one host CPU per
    /// core whatever the load.
    pub poll_always: bool,
    /// Longest idle spell before a core halts, µs (`idle_poll_us=`, 0 to 1000000).
    pub idle_poll_us: u64,
    /// Use the NIC's transmit offloads when it has them (`offload=off` sends every segment
    /// as its own frame with the checksums computed here).
    pub offload: bool,
    /// virtio-mmio devices named on the command line: (register base, GSI).
    pub mmio: [(u64, u32); MAX_MMIO],
    /// How many of `mmio` are set.
    pub n_mmio: usize,
    /// How the NICs are used (default: `spread` when two or more are found, else `off`).
    pub bond: Option<BondMode>,
    /// How a connection's send NIC is chosen.
    pub bond_policy: BondPolicy,
    /// Milliseconds between two readings of the NICs' links.
    pub bond_monitor_ms: u32,
    /// Paper 001's stateless UDP protocol (`udp_*` words); served when `udp_port` is set.
    pub udp: Udp,
    /// The bare UDP client (`client=udp` and its words): boot into the load generator of
    /// paper 001 instead of the server.
    pub client: UdpClient,
}

/// Most octets of `paths=`.
pub const PATHS_MAX: usize = 480;

/// The bare client's words: `client=udp server=A.B.C.D:PORT paths=/a,/b` and the schedule
/// (`frequency=F maxreq=M`, `rate=R` or `parallel=N`), `requests=N seconds=S slots=N
/// rto_ms=N tries=N pad=on|off`; its own address is `ip=` (and `gw=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpClient {
    /// `client=udp`.
    pub on: bool,
    /// `server=A.B.C.D:PORT`.
    pub server: Option<(Ipv4Address, u16)>,
    /// `paths=` (comma-separated URL paths).
    paths: [u8; PATHS_MAX],
    paths_len: usize,
    /// `frequency=F maxreq=M`: the paper's schedule.
    pub frequency: Option<u32>,
    /// Requests per period.
    pub maxreq: Option<u32>,
    /// `rate=R`: requests per second.
    pub rate: Option<u32>,
    /// `parallel=N`: a closed loop of N requests.
    pub parallel: Option<u32>,
    /// `requests=N`: most requests started [1000000].
    pub requests: u64,
    /// `seconds=S`: requests start for this long [10].
    pub seconds: u32,
    /// `slots=N`: most requests in progress [4096].
    pub slots: u32,
    /// `rto_ms=N`: first retransmission timeout [50].
    pub rto_ms: u32,
    /// `tries=N`: timeouts in a row before a request is given up [8].
    pub tries: u32,
    /// `pad=on|off`: pad initial GETs to 1200 octets [on].
    pub pad: bool,
}

impl Default for UdpClient {
    fn default() -> Self {
        UdpClient {
            on: false,
            server: None,
            paths: [0; PATHS_MAX],
            paths_len: 0,
            frequency: None,
            maxreq: None,
            rate: None,
            parallel: None,
            requests: 1_000_000,
            seconds: 10,
            slots: 4096,
            rto_ms: 50,
            tries: 8,
            pad: true,
        }
    }
}

impl UdpClient {
    /// The paths, each starting with `/` (`["/"]` when none were given).
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        let text = core::str::from_utf8(&self.paths[..self.paths_len]).unwrap_or("");
        let none = text.is_empty();
        text.split(',')
            .filter(|p| !p.is_empty())
            .chain(none.then_some("/"))
    }

    fn set_paths(&mut self, v: &str) -> bool {
        let ok = v.len() <= PATHS_MAX
            && v.split(',')
                .all(|p| p.starts_with('/') && p.bytes().all(|c| c > b' ' && c != 0x7f));
        if ok {
            self.paths[..v.len()].copy_from_slice(v.as_bytes());
            self.paths_len = v.len();
        }
        ok
    }

    /// Why the words cannot make a run, if they cannot.
    pub fn problem(&self) -> Option<&'static str> {
        let schedules = [
            self.frequency.is_some() || self.maxreq.is_some(),
            self.rate.is_some(),
            self.parallel.is_some(),
        ];
        if self.server.is_none() {
            Some("client=udp needs server=A.B.C.D:PORT")
        } else if schedules.iter().filter(|&&b| b).count() > 1 {
            Some("give one of frequency=/maxreq=, rate= or parallel=")
        } else if self.frequency.is_some() != self.maxreq.is_some() {
            Some("frequency= and maxreq= go together")
        } else {
            None
        }
    }
}

/// The UDP protocol's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Udp {
    /// `udp_port=N`: serve it on this port.
    pub port: Option<u16>,
    /// `udp_ids=N`: request ids, 1 to 65535.
    pub ids: u16,
    /// `udp_burst=N`: packets per GET, 1 to 64.
    pub burst: u8,
    /// `udp_rate=N`: GETs per second per proven address (0: no limit).
    pub rate: u32,
    /// `udp_paper=on`: no amplification bound, token or rate limit.
    pub paper: bool,
}

impl Udp {
    /// The engine's configuration, when the protocol is on.
    pub fn config(&self) -> Option<bareweb_engine::udp::Config> {
        self.port.map(|p| bareweb_engine::udp::Config {
            ids: self.ids,
            burst: self.burst,
            rate: self.rate,
            paper_mode: self.paper,
            ..bareweb_engine::udp::Config::new(p)
        })
    }
}

/// Most `virtio_mmio.device=` words kept.
pub const MAX_MMIO: usize = 4;

/// The default idle spell before halting, µs (chosen by measurement: docs/kernel.md).
pub const IDLE_POLL_US: u64 = 200;

/// How several cores share the NIC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CoreMode {
    /// The papers' design: core 0 owns the NIC and dispatches connections to HTTP cores.
    NetCore,
    /// A NIC queue pair and a whole server per core.
    PerQueue,
}

/// A deliberate failure, for tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Crash {
    /// A Rust panic.
    Panic,
    /// A CPU exception (page fault on an unmapped address).
    Fault,
    /// A CPU exception on the last application core, once it runs (tests that a failure
    /// on any core stops the machine and names the core).
    FaultAp,
    /// Endless recursion on the last application core: its stack's guard page must stop
    /// it (a double fault on the core's own IST stack), not memory below.
    OverflowAp,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            ip: Ipv4Address([10, 0, 2, 15]),
            dhcp: false,
            prefix: 24,
            gateway: Some(Ipv4Address([10, 0, 2, 2])),
            port: 80,
            sched: Sched::Imt,
            cc: Algorithm::default(),
            tcbs: 1024,
            max_per_ip: None,
            syn_backlog: None,
            request_timeout_s: 10,
            idle_timeout_s: 30,
            log_access: false,
            log_stats: false,
            crash: None,
            cores: None,
            mode: None,
            bsp_http: false,
            stats_page: true,
            stats_allow: None,
            x2apic: true,
            poll_always: false,
            idle_poll_us: IDLE_POLL_US,
            offload: true,
            mmio: [(0, 0); MAX_MMIO],
            n_mmio: 0,
            udp: Udp {
                port: None,
                ids: 5000,
                burst: 8,
                rate: 20_000,
                paper: false,
            },
            bond: None,
            bond_policy: BondPolicy::PerClient,
            bond_monitor_ms: 100,
            client: UdpClient::default(),
        }
    }
}

/// A word of the command line that was not understood.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Complaint<'a> {
    /// The `key=value` word.
    pub word: &'a str,
    /// What was wrong with it.
    pub why: &'static str,
}

fn parse_ip(s: &str) -> Option<Ipv4Address> {
    let mut a = [0u8; 4];
    let mut it = s.split('.');
    for b in a.iter_mut() {
        let p = it.next()?;
        if p.is_empty() || p.len() > 3 {
            return None;
        }
        *b = p.parse().ok()?;
    }
    if it.next().is_some() {
        return None;
    }
    Some(Ipv4Address(a))
}

/// `SIZE@BASE:IRQ[:ID]` (size decimal with an optional K/M suffix, base hex with 0x or
/// decimal, IRQ decimal): the register base and the GSI. The size must hold a register
/// page (0x100 bytes at least) and the base be page-aligned to 512 bytes.
fn parse_mmio(v: &str) -> Option<(u64, u32)> {
    let (size, rest) = v.split_once('@')?;
    let (base, rest) = rest.split_once(':')?;
    let irq = rest.split(':').next()?;
    let num = |t: &str| match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => t.parse::<u64>().ok(),
    };
    let size = match size.as_bytes().last()? {
        b'K' | b'k' => num(&size[..size.len() - 1])?.checked_mul(1024)?,
        b'M' | b'm' => num(&size[..size.len() - 1])?.checked_mul(1 << 20)?,
        _ => num(size)?,
    };
    let base = num(base)?;
    let irq = irq.parse::<u32>().ok()?;
    (size >= 0x100 && base % 0x200 == 0 && base != 0 && base < 1 << 32 && irq < 256)
        .then_some((base, irq))
}

fn on_off(v: &str) -> Option<bool> {
    match v {
        "on" => Some(true),
        "off" => Some(false),
        _ => None,
    }
}

/// Parses `line` over the defaults; calls `complain` for every word it cannot use.
pub fn parse<'a>(line: &'a str, complain: impl FnMut(Complaint<'a>)) -> Settings {
    parse_over(Settings::default(), line, complain)
}

/// Parses `line` over `base` (later words win). A leading word that is a path (GRUB
/// may pass the kernel's file name first) is skipped quietly.
pub fn parse_over<'a>(
    base: Settings,
    line: &'a str,
    mut complain: impl FnMut(Complaint<'a>),
) -> Settings {
    let mut s = base;
    for (i, word) in line.split_ascii_whitespace().enumerate() {
        if i == 0 && word.starts_with('/') && !word.contains('=') {
            continue;
        }
        let Some((k, v)) = word.split_once('=') else {
            complain(Complaint {
                word,
                why: "not key=value",
            });
            continue;
        };
        let ok = match k {
            "ip" if v == "dhcp" => {
                s.dhcp = true;
                true
            }
            "ip" => {
                let (ip, len) = v.split_once('/').unwrap_or((v, "24"));
                match (parse_ip(ip), len.parse::<u8>().ok().filter(|l| *l <= 32)) {
                    (Some(ip), Some(len)) => {
                        s.ip = ip;
                        s.prefix = len;
                        s.dhcp = false;
                        true
                    }
                    _ => false,
                }
            }
            "gw" => {
                if v == "none" {
                    s.gateway = None;
                    true
                } else if let Some(g) = parse_ip(v) {
                    s.gateway = Some(g);
                    true
                } else {
                    false
                }
            }
            "port" => match v.parse::<u16>() {
                Ok(p) if p != 0 => {
                    s.port = p;
                    true
                }
                _ => false,
            },
            "sched" => match v {
                "imt" => {
                    s.sched = Sched::Imt;
                    true
                }
                "ist" => {
                    s.sched = Sched::Ist;
                    true
                }
                _ => false,
            },
            "cc" => match v {
                "bbr" => {
                    s.cc = Algorithm::Bbr;
                    true
                }
                "cubic" => {
                    s.cc = Algorithm::Cubic;
                    true
                }
                _ => false,
            },
            "tcbs" => count(v).map(|n| s.tcbs = n).is_some(),
            "max_per_ip" => count(v).map(|n| s.max_per_ip = Some(n)).is_some(),
            "syn_backlog" => count(v).map(|n| s.syn_backlog = Some(n)).is_some(),
            "request_timeout" => seconds(v).map(|n| s.request_timeout_s = n).is_some(),
            "idle_timeout" => seconds(v).map(|n| s.idle_timeout_s = n).is_some(),
            "log" => {
                let mut all = true;
                for item in v.split(',') {
                    match item {
                        "access" => s.log_access = true,
                        "stats" => s.log_stats = true,
                        "none" | "" => {}
                        _ => all = false,
                    }
                }
                all
            }
            "crash" => match v {
                "panic" => {
                    s.crash = Some(Crash::Panic);
                    true
                }
                "fault" => {
                    s.crash = Some(Crash::Fault);
                    true
                }
                "fault-ap" => {
                    s.crash = Some(Crash::FaultAp);
                    true
                }
                "overflow-ap" => {
                    s.crash = Some(Crash::OverflowAp);
                    true
                }
                _ => false,
            },
            "cores" => match v.parse::<usize>() {
                Ok(n) if (1..=256).contains(&n) => {
                    s.cores = Some(n);
                    true
                }
                _ => false,
            },
            "mode" => match v {
                "netcore" => {
                    s.mode = Some(CoreMode::NetCore);
                    true
                }
                "perqueue" => {
                    s.mode = Some(CoreMode::PerQueue);
                    true
                }
                _ => false,
            },
            "bsp_http" => on_off(v).map(|b| s.bsp_http = b).is_some(),
            "offload" => on_off(v).map(|b| s.offload = b).is_some(),
            "udp_port" => match v.parse::<u16>() {
                Ok(p) if p != 0 => {
                    s.udp.port = Some(p);
                    true
                }
                _ => false,
            },
            "bond" => match v {
                "off" => Some(BondMode::Off),
                "split" => Some(BondMode::Split),
                "spread" => Some(BondMode::Spread),
                _ => None,
            }
            .map(|m| s.bond = Some(m))
            .is_some(),
            "bond_policy" => match v {
                "per-client" => Some(BondPolicy::PerClient),
                "size" => Some(BondPolicy::Size),
                "least-queued" => Some(BondPolicy::LeastQueued),
                _ => None,
            }
            .map(|p| s.bond_policy = p)
            .is_some(),
            "bond_monitor_ms" => match v.parse::<u32>() {
                Ok(n) if (1..=60_000).contains(&n) => {
                    s.bond_monitor_ms = n;
                    true
                }
                _ => false,
            },
            "udp_ids" => match v.parse::<u16>() {
                Ok(n) if n != 0 => {
                    s.udp.ids = n;
                    true
                }
                _ => false,
            },
            "udp_burst" => match v.parse::<u8>() {
                Ok(n) if (1..=bareweb_engine::udp::MAX_BURST).contains(&n) => {
                    s.udp.burst = n;
                    true
                }
                _ => false,
            },
            "udp_rate" => v.parse::<u32>().map(|n| s.udp.rate = n).is_ok(),
            "client" => {
                v == "udp" && {
                    s.client.on = true;
                    true
                }
            }
            "server" => match v.split_once(':') {
                Some((ip, port)) => match (parse_ip(ip), port.parse::<u16>()) {
                    (Some(ip), Ok(p)) if p != 0 => {
                        s.client.server = Some((ip, p));
                        true
                    }
                    _ => false,
                },
                None => false,
            },
            "paths" => s.client.set_paths(v),
            "frequency" => positive(v, 4_000_000)
                .map(|n| s.client.frequency = Some(n))
                .is_some(),
            "maxreq" => positive(v, 100_000)
                .map(|n| s.client.maxreq = Some(n))
                .is_some(),
            "rate" => positive(v, 10_000_000)
                .map(|n| s.client.rate = Some(n))
                .is_some(),
            "parallel" => positive(v, 65_536)
                .map(|n| s.client.parallel = Some(n))
                .is_some(),
            "slots" => positive(v, 65_536).map(|n| s.client.slots = n).is_some(),
            "requests" => v
                .parse::<u64>()
                .ok()
                .filter(|&n| n > 0)
                .map(|n| s.client.requests = n)
                .is_some(),
            "seconds" => positive(v, 86_400).map(|n| s.client.seconds = n).is_some(),
            "rto_ms" => positive(v, 10_000).map(|n| s.client.rto_ms = n).is_some(),
            "tries" => positive(v, 100).map(|n| s.client.tries = n).is_some(),
            "pad" => on_off(v).map(|b| s.client.pad = b).is_some(),
            "udp_paper" => on_off(v).map(|b| s.udp.paper = b).is_some(),
            "stats_page" => on_off(v).map(|b| s.stats_page = b).is_some(),
            "poll" => match v {
                "always" => {
                    s.poll_always = true;
                    true
                }
                "idle" => {
                    s.poll_always = false;
                    true
                }
                _ => false,
            },
            "idle_poll_us" => match v.parse::<u64>() {
                Ok(n) if n <= 1_000_000 => {
                    s.idle_poll_us = n;
                    true
                }
                _ => false,
            },
            "virtio_mmio.device" => match parse_mmio(v) {
                Some(d) if s.n_mmio < MAX_MMIO => {
                    s.mmio[s.n_mmio] = d;
                    s.n_mmio += 1;
                    true
                }
                _ => false,
            },
            "stats_allow" => {
                let (ip, len) = v.split_once('/').unwrap_or((v, "32"));
                match (parse_ip(ip), len.parse::<u8>().ok().filter(|l| *l <= 32)) {
                    (Some(ip), Some(len)) => {
                        s.stats_allow = Some((ip, len));
                        true
                    }
                    _ => false,
                }
            }
            "apic" => match v {
                "auto" => {
                    s.x2apic = true;
                    true
                }
                "xapic" => {
                    s.x2apic = false;
                    true
                }
                _ => false,
            },
            _ => {
                complain(Complaint {
                    word,
                    why: "unknown key",
                });
                continue;
            }
        };
        if !ok {
            complain(Complaint {
                word,
                why: "bad value, default kept",
            });
        }
    }
    s
}

/// A count of TCBs or connections: 1 to 2^20, as `bareweb run` checks them.
fn count(v: &str) -> Option<usize> {
    v.parse::<usize>()
        .ok()
        .filter(|n| (1..=1 << 20).contains(n))
}

/// A number from 1 to `max`.
fn positive(v: &str, max: u32) -> Option<u32> {
    v.parse::<u32>().ok().filter(|n| (1..=max).contains(n))
}

/// A timeout in seconds: 1 to 86400, as `bareweb serve` checks them.
fn seconds(v: &str) -> Option<u64> {
    v.parse::<u64>().ok().filter(|n| (1..=86_400).contains(n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    fn parse_all(line: &str) -> (Settings, Vec<(String, &'static str)>) {
        let mut c = Vec::new();
        let s = parse(line, |x| c.push((x.word.into(), x.why)));
        (s, c)
    }
    extern crate std;
    use std::string::String;

    #[test]
    fn defaults_work_under_qemu_user_networking() {
        let (s, c) = parse_all("");
        assert_eq!(s, Settings::default());
        assert!(c.is_empty());
        assert_eq!(s.ip, Ipv4Address([10, 0, 2, 15]));
        assert_eq!(s.gateway, Some(Ipv4Address([10, 0, 2, 2])));
        assert_eq!(s.port, 80);
    }

    #[test]
    fn every_key() {
        let (s, c) = parse_all(
            "ip=192.168.1.50/16 gw=none port=8080 sched=ist cc=cubic tcbs=64 max_per_ip=7 syn_backlog=5 log=access,stats crash=fault \
             request_timeout=5 idle_timeout=60 cores=3 mode=netcore bsp_http=on stats_page=off apic=xapic \
             bond=split bond_policy=least-queued bond_monitor_ms=250 poll=always idle_poll_us=50",
        );
        assert!(c.is_empty(), "{c:?}");
        assert!(s.poll_always && s.idle_poll_us == 50);
        assert!(!parse_all("offload=off").0.offload && Settings::default().offload);
        let (m, mc) =
            parse_all("virtio_mmio.device=512@0xfeb02e00:47 virtio_mmio.device=4K@0xd0000000:5:1");
        assert!(mc.is_empty(), "{mc:?}");
        assert_eq!(&m.mmio[..m.n_mmio], &[(0xFEB0_2E00, 47), (0xD000_0000, 5)]);
        assert!(!parse_all("poll=always poll=idle").0.poll_always);
        assert!(c.is_empty(), "{c:?}");
        assert_eq!(s.bond, Some(BondMode::Split));
        assert_eq!(
            (s.bond_policy, s.bond_monitor_ms),
            (BondPolicy::LeastQueued, 250)
        );
        assert_eq!(parse_all("bond=off").0.bond, Some(BondMode::Off));
        assert_eq!(
            parse_all("bond_policy=size").0.bond_policy,
            BondPolicy::Size
        );
        assert_eq!((s.cores, s.mode), (Some(3), Some(CoreMode::NetCore)));
        assert!(s.bsp_http && !s.stats_page && !s.x2apic);
        assert_eq!(parse_all("mode=perqueue").0.mode, Some(CoreMode::PerQueue));
        assert_eq!(parse_all("crash=fault-ap").0.crash, Some(Crash::FaultAp));
        assert_eq!((s.ip, s.prefix), (Ipv4Address([192, 168, 1, 50]), 16));
        assert_eq!(s.gateway, None);
        assert_eq!((s.port, s.sched, s.tcbs), (8080, Sched::Ist, 64));
        assert_eq!(s.cc, Algorithm::Cubic);
        assert_eq!(parse_all("cc=bbr").0.cc, Algorithm::Bbr);
        assert_eq!((s.max_per_ip, s.syn_backlog), (Some(7), Some(5)));
        assert_eq!((s.request_timeout_s, s.idle_timeout_s), (5, 60));
        assert!(s.log_access && s.log_stats);
        assert_eq!(s.crash, Some(Crash::Fault));
        assert_eq!(parse_all("ip=10.0.0.2").0.prefix, 24);
        assert!(parse_all("ip=dhcp").0.dhcp);
        assert!(!parse_all("ip=dhcp ip=10.0.0.3").0.dhcp);
        assert!(!Settings::default().dhcp);
        assert_eq!(
            parse_all("stats_allow=10.1.0.0/16").0.stats_allow,
            Some((Ipv4Address([10, 1, 0, 0]), 16))
        );
        assert_eq!(
            parse_all("stats_allow=10.0.2.2").0.stats_allow,
            Some((Ipv4Address([10, 0, 2, 2]), 32)),
            "an address alone is that one client"
        );
        let (s, c) = parse_all("udp_port=8081 udp_ids=100 udp_burst=4 udp_rate=0 udp_paper=on");
        assert!(c.is_empty(), "{c:?}");
        let u = s.udp.config().unwrap();
        assert_eq!(
            (u.port, u.ids, u.burst, u.rate, u.paper_mode),
            (8081, 100, 4, 0, true)
        );
        assert_eq!(
            Settings::default().udp.config(),
            None,
            "off unless udp_port is given"
        );
    }

    #[test]
    fn bad_values_keep_defaults_and_are_reported() {
        for w in [
            "ip=1.2.3",
            "ip=1.2.3.4.5",
            "ip=256.1.1.1",
            "ip=1.2.3.4/33",
            "ip=",
            "gw=x",
            "port=0",
            "port=65536",
            "sched=rr",
            "cc=reno",
            "tcbs=0",
            "request_timeout=0",
            "idle_timeout=86401",
            "log=loud",
            "crash=maybe",
            "ip=1..2.3",
            "ip=0001.2.3.4",
            "cores=0",
            "cores=257",
            "mode=fast",
            "bsp_http=yes",
            "stats_page=",
            "stats_allow=10.0.0.0/33",
            "stats_allow=10.0.0/8",
            "apic=x3apic",
            "poll=never",
            "idle_poll_us=-1",
            "idle_poll_us=1000001",
            "virtio_mmio.device=512@0xfeb02e00",
            "virtio_mmio.device=512@0xfeb02e01:5",
            "virtio_mmio.device=16@0xfeb02e00:5",
            "virtio_mmio.device=512@0x1feb02e00:5",
            "virtio_mmio.device=512@zz:5",
            "virtio_mmio.device=99999999999999999999K@0x1000:5",
            "udp_port=0",
            "udp_port=70000",
            "udp_ids=0",
            "udp_burst=65",
            "udp_burst=0",
            "udp_rate=-1",
            "udp_paper=1",
            "client=tcp",
            "server=10.0.0.2",
            "server=10.0.0.2:0",
            "paths=a,b",
            "paths=/a,,/b",
            "frequency=0",
            "rate=-1",
            "pad=yes",
            "bond=on",
            "bond_policy=random",
            "bond_monitor_ms=0",
            "bond_monitor_ms=60001",
        ] {
            let (s, c) = parse_all(w);
            assert_eq!(c, [(w.into(), "bad value, default kept")], "{w}");
            assert_eq!(
                (s.ip, s.port, s.tcbs),
                (Settings::default().ip, 80, 1024),
                "{w}"
            );
        }
        assert_eq!(parse_all("nokey").1[0].1, "not key=value");
        assert_eq!(parse_all("color=blue").1[0].1, "unknown key");
    }

    #[test]
    fn later_words_win_and_a_leading_path_is_skipped() {
        let base = parse("ip=10.0.0.2/24 port=81", |_| panic!());
        let mut c = Vec::new();
        let s = parse_over(base, "/boot/bareweb.elf port=82", |x| c.push(x.word));
        assert!(c.is_empty(), "{c:?}");
        assert_eq!((s.ip, s.port), (Ipv4Address([10, 0, 0, 2]), 82));
    }

    #[test]
    fn arbitrary_text_never_panics() {
        let mut x = 0x1234_5678u32;
        for _ in 0..2000 {
            let mut b = Vec::new();
            for _ in 0..(x % 64) {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                b.push(b"ip=gw/.0123456789 port=sched,log=a"[(x % 34) as usize]);
            }
            if let Ok(s) = core::str::from_utf8(&b) {
                let _ = parse(s, |_| {});
            }
        }
    }
}
