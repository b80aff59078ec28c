//! The bare-machine kernel's command line: the shared server options of the table
//! ([`crate::OPTIONS`]: `ip= gw= port= sched= cc= tcbs= max_per_ip= syn_backlog=
//! request_timeout= idle_timeout= log= stats_page= stats_allow= proxy_protocol= mode= bsp_http= udp_port=
//! udp_burst= udp_ids= udp_rate= udp_paper= bond= bond_policy= bond_monitor_ms=`), and the
//! words of the bare machine alone, which this module parses itself: `cores=N`,
//! `apic=auto|xapic`, idling `poll=idle|always idle_poll_us=N`, `offload=on|off`, the
//! virtio-mmio devices of a microVM `virtio_mmio.device=SIZE@BASE:IRQ` (Linux's syntax, as
//! Firecracker writes it), the bare UDP fetcher's words (`client=udp server=A.B.C.D:PORT
//! paths=/a,/b`, `frequency=F maxreq=M | rate=R | parallel=N`, `requests= seconds= slots=
//! rto_ms= tries= pad=`: see [`UdpFetcher`]), and `crash=panic|fault|fault-ap|overflow-ap`
//! which makes the kernel fail on purpose right after boot (the tests use it to prove that
//! failures are reported and stop QEMU).
//!
//! Defaults work under QEMU user networking (10.0.2.15/24, gateway 10.0.2.2, port 80).
//! A bad value is reported on the console (a shared option's in the table's words, the
//! same `bareweb serve` uses) and its default kept; an unknown key is reported and ignored.
//! Nothing here panics on any input.
//!
//! The kernel parses its command line with this module, and `bareweb run` and `bareweb
//! build` with the same one to refuse a bad word before boot; so it lives in this no_std
//! crate, free of the kernel's own modules.

use core::ops::{Deref, DerefMut};

use bareweb_engine::wire::Ipv4Address;

pub use crate::Udp;

/// The settings the command line controls: the shared server options ([`crate::Settings`],
/// reached through `Deref`: `settings.tcbs`) and the bare machine's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// The server's options (the table's).
    pub server: crate::Settings,
    /// Fail on purpose after boot (tests of the failure path).
    pub crash: Option<Crash>,
    /// Most cores to use (default: every enabled processor in the ACPI MADT).
    pub cores: Option<usize>,
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
    /// The bare UDP fetcher (`client=udp` and its words): boot into the UDP paper's load
    /// generator instead of the server.
    pub client: UdpFetcher,
}

impl Deref for Settings {
    type Target = crate::Settings;
    fn deref(&self) -> &crate::Settings {
        &self.server
    }
}

impl DerefMut for Settings {
    fn deref_mut(&mut self) -> &mut crate::Settings {
        &mut self.server
    }
}

/// Most octets of `paths=`.
pub const PATHS_MAX: usize = 480;

/// The bare fetcher's words: `client=udp server=A.B.C.D:PORT paths=/a,/b` and the schedule
/// (`frequency=F maxreq=M`, `rate=R` or `parallel=N`), `requests=N seconds=S slots=N
/// rto_ms=N tries=N pad=on|off`; its own address is `ip=` (and `gw=`); to an IPv6 server
/// (`server=[ADDR]:PORT`) `ip6=ADDR/PREFIX` (and `gw6=ADDR`, else an advertised router:
/// the settings table's words, as the server's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpFetcher {
    /// `client=udp`.
    pub on: bool,
    /// `server=A.B.C.D:PORT`.
    pub server: Option<(Ipv4Address, u16)>,
    /// `server=[ADDR]:PORT`: an IPv6 server instead.
    pub server6: Option<([u8; 16], u16)>,
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
    /// `requests=N`: most requests started (default 1000000).
    pub requests: u64,
    /// `seconds=S`: requests start for this long (default 10).
    pub seconds: u32,
    /// `slots=N`: most requests in progress (default 4096).
    pub slots: u32,
    /// `rto_ms=N`: first retransmission timeout (default 50).
    pub rto_ms: u32,
    /// `tries=N`: timeouts in a row before a request is given up (default 8).
    pub tries: u32,
    /// `pad=on|off`: pad initial GETs to 1200 octets (default on).
    pub pad: bool,
}

impl Default for UdpFetcher {
    fn default() -> Self {
        UdpFetcher {
            on: false,
            server: None,
            server6: None,
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

impl UdpFetcher {
    /// The paths, each starting with `/` (`["/"]` when none were given).
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        let text = core::str::from_utf8(&self.paths[..self.paths_len]).unwrap_or("");
        let none = text.is_empty();
        text.split(',')
            .filter(|p| !p.is_empty())
            .chain(none.then_some("/"))
    }

    /// The fetcher's words: `None` for a word that is not one, else whether the value was
    /// taken.
    pub fn set(&mut self, k: &str, v: &str) -> Option<bool> {
        let ok = match k {
            "client" => {
                v == "udp" && {
                    self.on = true;
                    true
                }
            }
            "server" if v.starts_with('[') => match v.parse::<core::net::SocketAddrV6>() {
                // A unicast address a link can carry (not loopback, not IPv4-mapped: the
                // link drops answers from those).
                Ok(a) if a.port() != 0 && crate::link_unicast(a.ip()) => {
                    (self.server, self.server6) = (None, Some((a.ip().octets(), a.port())));
                    true
                }
                _ => false,
            },
            "server" => match v.split_once(':') {
                Some((ip, port)) => match (crate::addr(ip), port.parse::<u16>()) {
                    (Some(ip), Ok(p)) if p != 0 => {
                        (self.server, self.server6) = (Some((ip, p)), None);
                        true
                    }
                    _ => false,
                },
                None => false,
            },
            "paths" => self.set_paths(v),
            "frequency" => positive(v, 4_000_000)
                .map(|n| self.frequency = Some(n))
                .is_some(),
            "maxreq" => positive(v, 100_000)
                .map(|n| self.maxreq = Some(n))
                .is_some(),
            "rate" => positive(v, 10_000_000)
                .map(|n| self.rate = Some(n))
                .is_some(),
            "parallel" => positive(v, 65_536)
                .map(|n| self.parallel = Some(n))
                .is_some(),
            "slots" => positive(v, 65_536).map(|n| self.slots = n).is_some(),
            "requests" => v
                .parse::<u64>()
                .ok()
                .filter(|&n| n > 0)
                .map(|n| self.requests = n)
                .is_some(),
            "seconds" => positive(v, 86_400).map(|n| self.seconds = n).is_some(),
            "rto_ms" => positive(v, 10_000).map(|n| self.rto_ms = n).is_some(),
            "tries" => positive(v, 100).map(|n| self.tries = n).is_some(),
            "pad" => crate::on_off(v).map(|b| self.pad = b).is_ok(),
            _ => return None,
        };
        Some(ok)
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
        if self.server.is_none() && self.server6.is_none() {
            Some("client=udp needs server=A.B.C.D:PORT or server=[ADDR]:PORT")
        } else if schedules.iter().filter(|&&b| b).count() > 1 {
            Some("give one of frequency=/maxreq=, rate= or parallel=")
        } else if self.frequency.is_some() != self.maxreq.is_some() {
            Some("frequency= and maxreq= go together")
        } else {
            None
        }
    }
}

/// Most `virtio_mmio.device=` words kept.
pub const MAX_MMIO: usize = 4;

/// The default idle spell before halting, µs (chosen by measurement: docs/kernel.md).
pub const IDLE_POLL_US: u64 = 200;

/// How several cores share the NIC (`mode=`): the engine's plan's own.
pub use bareweb_engine::cores::plan::Asked as CoreMode;

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

/// A word of the command line that was not understood.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Complaint<'a> {
    /// The `key=value` word.
    pub word: &'a str,
    /// What was wrong with it.
    pub why: &'static str,
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

/// What a bad value of a boot-only word is told.
const BAD: &str = "bad value, default kept";

/// Parses `line` over the defaults; calls `complain` for every word it cannot use.
pub fn parse<'a>(line: &'a str, complain: impl FnMut(Complaint<'a>)) -> Settings {
    parse_over(Settings::default(), line, complain)
}

/// Parses `line` over `base` (later words win): each `key=value` goes to the table's
/// option of that word, else to the bare machine's own ([`Settings::set_boot`]), else
/// the fetcher's ([`UdpFetcher::set`]). A leading word that is a path (GRUB may pass the
/// kernel's file name first) is skipped quietly.
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
        let verdict = match s.server.set(k, v) {
            Some(r) => r,
            None => match s.set_boot(k, v).or_else(|| s.client.set(k, v)) {
                Some(true) => Ok(()),
                Some(false) => Err(BAD),
                None => Err("unknown key"),
            },
        };
        if let Err(why) = verdict {
            complain(Complaint { word, why });
        }
    }
    s
}

impl Default for Settings {
    /// The table's defaults and the bare machine's own.
    fn default() -> Self {
        Settings {
            server: crate::Settings::default(),
            crash: None,
            cores: None,
            x2apic: true,
            poll_always: false,
            idle_poll_us: IDLE_POLL_US,
            offload: true,
            mmio: [(0, 0); MAX_MMIO],
            n_mmio: 0,
            client: UdpFetcher::default(),
        }
    }
}

impl Settings {
    /// The bare machine's own words: `None` for a word that is not one, else whether the
    /// value was taken.
    pub fn set_boot(&mut self, k: &str, v: &str) -> Option<bool> {
        let ok = match k {
            "crash" => match v {
                "panic" => Some(Crash::Panic),
                "fault" => Some(Crash::Fault),
                "fault-ap" => Some(Crash::FaultAp),
                "overflow-ap" => Some(Crash::OverflowAp),
                _ => None,
            }
            .map(|c| self.crash = Some(c))
            .is_some(),
            "cores" => v
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=256).contains(n))
                .map(|n| self.cores = Some(n))
                .is_some(),
            "apic" => match v {
                "auto" => Some(true),
                "xapic" => Some(false),
                _ => None,
            }
            .map(|b| self.x2apic = b)
            .is_some(),
            "poll" => match v {
                "always" => Some(true),
                "idle" => Some(false),
                _ => None,
            }
            .map(|b| self.poll_always = b)
            .is_some(),
            "idle_poll_us" => v
                .parse::<u64>()
                .ok()
                .filter(|n| *n <= 1_000_000)
                .map(|n| self.idle_poll_us = n)
                .is_some(),
            "offload" => crate::on_off(v).map(|b| self.offload = b).is_ok(),
            "virtio_mmio.device" => match parse_mmio(v) {
                Some(d) if self.n_mmio < MAX_MMIO => {
                    self.mmio[self.n_mmio] = d;
                    self.n_mmio += 1;
                    true
                }
                _ => false,
            },
            _ => return None,
        };
        Some(ok)
    }
}

/// A number from 1 to `max`.
fn positive(v: &str, max: u32) -> Option<u32> {
    v.parse::<u32>().ok().filter(|n| (1..=max).contains(n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bareweb_engine::bond::{Mode as BondMode, Policy as BondPolicy};
    use bareweb_engine::server::Sched;
    use bareweb_engine::tcp::Algorithm;
    use std::vec::Vec;

    fn parse_all(line: &str) -> (Settings, Vec<(String, &'static str)>) {
        let mut c = Vec::new();
        let s = parse(line, |x| c.push((x.word.into(), x.why)));
        (s, c)
    }
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
    fn ipv6_is_on_by_default_and_each_form_is_taken() {
        let (s, c) = parse_all("");
        assert!(s.server.ip6 && s.server.ip6_static.is_none() && c.is_empty());
        // The client's IPv6 server and router.
        let (s, c) =
            parse_all("client=udp server=[2001:db8::2]:8081 gw6=fe80::1 ip6=2001:db8::3/64");
        assert!(c.is_empty(), "{c:?}");
        let v6: core::net::Ipv6Addr = "2001:db8::2".parse().unwrap();
        assert_eq!(s.client.server6, Some((v6.octets(), 8081)));
        assert_eq!(s.client.server, None);
        assert_eq!(
            s.server.gateway6.map(core::net::Ipv6Addr::from),
            "fe80::1".parse().ok()
        );
        assert_eq!(s.client.problem(), None);
        let (s, c) = parse_all("ip6=off");
        assert!(!s.server.ip6 && c.is_empty());
        let (s, c) = parse_all("ip6=2001:db8::80/64");
        assert!(s.server.ip6 && c.is_empty());
        assert_eq!(s.server.ip6_static.map(|a| a.prefix), Some(64));
        let (s, c) = parse_all("ip6=fe80::1/64");
        assert!(s.server.ip6 && s.server.ip6_static.is_none());
        assert_eq!(c.len(), 1, "a link-local address is refused: {c:?}");
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
        let (s, c) = parse_all("proxy_protocol=10.1.0.0/16 proxy_protocol=10.0.2.9,10.1.2.3/16");
        assert!(c.is_empty(), "{c:?}");
        assert_eq!(
            s.proxy_protocol.nets(),
            &[([10, 1, 0, 0], 16), ([10, 0, 2, 9], 32)][..],
            "repeated and comma-separated add up; a network given twice is kept once"
        );
        assert!(
            s.proxy_protocol.contains([10, 1, 200, 7]) && !s.proxy_protocol.contains([10, 0, 2, 8])
        );
        let nine = "proxy_protocol=1.0.0.1,1.0.0.2,1.0.0.3,1.0.0.4,1.0.0.5,1.0.0.6,1.0.0.7,1.0.0.8,1.0.0.9";
        assert_eq!(parse_all(nine).1.len(), 1, "at most 8");
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
            "server=[2001:db8::2]",
            "server=[ff02::1]:80",
            "server=[2001:db8::2]:0",
            "server=[::1]:80",
            "server=[::ffff:10.0.0.2]:80",
            "gw6=10.0.0.1",
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
            // A shared option's word is refused in the table's words (the same `bareweb
            // serve` says); a boot-only word's with "bad value, default kept".
            let (k, v) = w.split_once('=').unwrap();
            let why = match crate::find(k) {
                Some(o) => (o.set)(&mut crate::Settings::default(), v).unwrap_err(),
                None => "bad value, default kept",
            };
            assert_eq!(c, [(w.into(), why)], "{w}");
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
