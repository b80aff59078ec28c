//! The options every server command shares, and the value types clap parses them into.
//!
//! One validation style (issue 17): every value is parsed by a clap value parser into a
//! typed value before anything runs — addresses by std's `Ipv4Addr`/`SocketAddrV4`
//! parsers, counts by ranged integer parsers, choices by `ValueEnum` — so a bad value is
//! a clap usage error (exit 2, clap's format) naming the option. Checks that need two
//! options at once are [`ServerOpts::check`] and the commands' own `check`, run by `main`
//! right after parsing and reported the same way.
//!
//! [`ServerOpts`] is flattened into `serve`, `run` and `build` (for a bootable image it
//! becomes the image's built-in kernel command line), so the same option has the same name
//! and meaning in all three. The kernel command line is checked with the kernel's own
//! parser ([`kernel_cmdline`], crates/kernel/src/cmdline.rs compiled in here), so a word the
//! kernel would refuse on its console is refused here before boot.

use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

use bareweb_engine::server::{Config, Sched, Timeouts};
use bareweb_engine::wire::{EthernetAddress, Ipv4Address};
use clap::ValueEnum;

/// The kernel's command-line parser, the same source the kernel is built from.
#[path = "../../kernel/src/cmdline.rs"]
#[allow(dead_code)]
pub mod kernel_cmdline;

/// Most TCBs a server may be given: ~9.3 KiB each, so 1 Mi is ~9.3 GiB (the kernel's
/// `tcbs=` has the same bound).
pub const MAX_TCBS: usize = 1 << 20;

/// A count of TCBs or connections, 1 to [`MAX_TCBS`].
pub fn count(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=MAX_TCBS).contains(&n) => Ok(n),
        _ => Err(format!("expected a number from 1 to {MAX_TCBS}")),
    }
}

/// An IPv4 address and prefix length, `A.B.C.D/N` (`/24` when the prefix is left out).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    pub ip: Ipv4Addr,
    pub prefix: u8,
}

impl Cidr {
    pub fn addr(&self) -> Ipv4Address {
        Ipv4Address(self.ip.octets())
    }
}

impl FromStr for Cidr {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (ip, len) = s.split_once('/').unwrap_or((s, "24"));
        let ip = ip
            .parse::<Ipv4Addr>()
            .map_err(|_| format!("{ip:?} is not an IPv4 address (A.B.C.D)"))?;
        let prefix = match len.parse::<u8>() {
            Ok(n) if n <= 32 && len.bytes().all(|b| b.is_ascii_digit()) => n,
            _ => return Err(format!("{len:?} is not a prefix length (0 to 32)")),
        };
        Ok(Cidr { ip, prefix })
    }
}

/// The server's address, `--ip`: `A.B.C.D/N`, or `dhcp` (the kernel's: run and bootable
/// images get it from a DHCP server).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpArg {
    /// A fixed address and prefix.
    Fixed(Cidr),
    /// From DHCP.
    Dhcp,
}

impl FromStr for IpArg {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "dhcp" {
            return Ok(IpArg::Dhcp);
        }
        s.parse::<Cidr>()
            .map(IpArg::Fixed)
            .map_err(|e| format!("{e}, or dhcp"))
    }
}

impl fmt::Display for IpArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IpArg::Fixed(c) => c.fmt(f),
            IpArg::Dhcp => f.write_str("dhcp"),
        }
    }
}

/// A client network, `A.B.C.D/N` or one address `A.B.C.D` (`/32`): `--stats-allow`.
pub fn network(s: &str) -> Result<Cidr, String> {
    if s.contains('/') {
        s.parse()
    } else {
        format!("{s}/32").parse()
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.ip, self.prefix)
    }
}

/// An IPv4 address or `none` (`--gw`, `--host-ip`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OrNone {
    None,
    Addr(Ipv4Addr),
}

impl OrNone {
    pub fn addr(self) -> Option<Ipv4Address> {
        match self {
            OrNone::None => None,
            OrNone::Addr(a) => Some(Ipv4Address(a.octets())),
        }
    }
}

impl FromStr for OrNone {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "none" {
            return Ok(OrNone::None);
        }
        s.parse::<Ipv4Addr>()
            .map(OrNone::Addr)
            .map_err(|_| format!("{s:?} is neither an IPv4 address (A.B.C.D) nor `none`"))
    }
}

impl fmt::Display for OrNone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OrNone::None => f.write_str("none"),
            OrNone::Addr(a) => a.fmt(f),
        }
    }
}

/// A MAC address, six pairs of hex digits separated by `:` or `-`. (std has no MAC type;
/// this is the one form `ip link`, QEMU and the tests write, so a small strict parser
/// here rather than a crate that also takes Cisco's dotted form.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mac(pub [u8; 6]);

impl Mac {
    pub fn ethernet(self) -> EthernetAddress {
        EthernetAddress(self.0)
    }
}

impl FromStr for Mac {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("{s:?} is not a MAC address (six hex pairs: 52:54:00:12:34:56)");
        let parts: Vec<&str> = s.split([':', '-']).collect();
        if parts.len() != 6 {
            return Err(bad());
        }
        let mut m = [0u8; 6];
        for (b, p) in m.iter_mut().zip(parts) {
            if p.len() != 2 || !p.bytes().all(|c| c.is_ascii_hexdigit()) {
                return Err(bad());
            }
            *b = u8::from_str_radix(p, 16).map_err(|_| bad())?;
        }
        if m[0] & 1 != 0 {
            return Err(format!("{s:?} is a multicast address (first byte odd)"));
        }
        Ok(Mac(m))
    }
}

impl fmt::Display for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        EthernetAddress(self.0).fmt(f)
    }
}

/// An amount of memory in QEMU's `-m` syntax: a number of MiB, or a number with a `K`,
/// `M`, `G` or `T` suffix (either case). Kept in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemSize(pub u64);

impl MemSize {
    pub fn mib(self) -> u64 {
        self.0 >> 20
    }
}

impl FromStr for MemSize {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("{s:?} is not a memory size (e.g. 256M, 1G)");
        let (num, unit) = match s.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
            Some((i, _)) => s.split_at(i),
            None => (s, "M"),
        };
        let shift = match unit {
            "K" | "k" => 10,
            "M" | "m" => 20,
            "G" | "g" => 30,
            "T" | "t" => 40,
            _ => return Err(bad()),
        };
        let n: u64 = num.parse().map_err(|_| bad())?;
        let bytes = n
            .checked_mul(1 << shift)
            .filter(|b| b % (1 << 20) == 0 && *b >= 32 << 20 && *b <= 1 << 40)
            .ok_or_else(|| format!("{s:?}: give whole MiB from 32M to 1T"))?;
        Ok(MemSize(bytes))
    }
}

impl fmt::Display for MemSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}M", self.mib())
    }
}

/// HTTP scheduling policy (paper 004).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum SchedArg {
    /// Look at receive after every HTTP step.
    #[default]
    Imt,
    /// Serve the whole run list in one pass.
    Ist,
}

impl SchedArg {
    pub fn sched(self) -> Sched {
        match self {
            SchedArg::Imt => Sched::Imt,
            SchedArg::Ist => Sched::Ist,
        }
    }
}

/// TCP congestion control (docs/tcp.md, docs/performance.md "Loss recovery").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum CcArg {
    /// CUBIC with proportional rate reduction, unpaced (Linux's default).
    #[default]
    Cubic,
    /// BBR v1: a model of the path's bandwidth and delay, paced; keeps its window through
    /// random loss.
    Bbr,
}

impl CcArg {
    pub fn algorithm(self) -> bareweb_engine::tcp::Algorithm {
        use bareweb_engine::tcp::Algorithm;
        match self {
            CcArg::Bbr => Algorithm::Bbr,
            CcArg::Cubic => Algorithm::Cubic,
        }
    }
}

/// How several cores share the NIC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// The papers' design: core 0 owns the NIC and hands connections to HTTP cores.
    Netcore,
    /// A NIC queue pair and a whole server per core.
    Perqueue,
}

impl ModeArg {
    pub fn asked(self) -> bareweb_engine::cores::plan::Asked {
        use bareweb_engine::cores::plan::Asked;
        match self {
            ModeArg::Netcore => Asked::NetCore,
            ModeArg::Perqueue => Asked::PerQueue,
        }
    }
}

/// How the NICs of a set are used (paper 002's configurations).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BondArg {
    /// One NIC receives and sends (the others are not used).
    Off,
    /// One NIC only receives (and answers ARP), the others only send.
    Split,
    /// One NIC receives, every NIC sends.
    Spread,
}

impl BondArg {
    pub fn mode(self) -> bareweb_engine::bond::Mode {
        use bareweb_engine::bond::Mode;
        match self {
            BondArg::Off => Mode::Off,
            BondArg::Split => Mode::Split,
            BondArg::Spread => Mode::Spread,
        }
    }
}

/// How a connection's send NIC is chosen at its SYN.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum PolicyArg {
    /// The paper's: a client's connections on one NIC, clients spread n/2 per NIC.
    #[default]
    PerClient,
    /// Frames without payload on one NIC, data on the others.
    Size,
    /// The NIC with the fewest response bytes waiting to be acknowledged.
    LeastQueued,
}

impl PolicyArg {
    pub fn policy(self) -> bareweb_engine::bond::Policy {
        use bareweb_engine::bond::Policy;
        match self {
            PolicyArg::PerClient => Policy::PerClient,
            PolicyArg::Size => Policy::Size,
            PolicyArg::LeastQueued => Policy::LeastQueued,
        }
    }
}

/// The command-line spelling of a `ValueEnum` value (`qboot`, `e1000`), for messages.
pub fn value_name(v: impl ValueEnum) -> String {
    v.to_possible_value()
        .map_or_else(String::new, |p| p.get_name().to_string())
}

/// The server's settings, shared by `serve`, `run` and `build` (bootable images) with the
/// same names and meanings. Every field is optional so `build` bakes only what was given;
/// the defaults are the kernel's (which are `run`'s) except where `serve` says otherwise.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct ServerOpts {
    /// The server's address and prefix, or `dhcp` (run and images: from a DHCP server,
    /// renewed while serving) [serve: 10.0.0.2/24; run and -o X.elf: 10.0.2.15/24, QEMU
    /// user networking's guest address; --iso and --disk images: dhcp].
    #[arg(long, value_name = "A.B.C.D/N|dhcp")]
    pub ip: Option<IpArg>,
    /// Router for clients beyond the link, or `none` [serve: none; run and images:
    /// 10.0.2.2].
    #[arg(long, value_name = "A.B.C.D|none")]
    pub gw: Option<OrNone>,
    /// TCP port to serve, 1 to 65535 [80].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub port: Option<u16>,
    /// HTTP scheduling policy (paper 004): imt looks at receive after every HTTP step, ist
    /// serves the whole run list in one pass [imt].
    #[arg(long, value_enum)]
    pub sched: Option<SchedArg>,
    /// TCP congestion control: cubic (Linux's default, unpaced; fastest on a clean link)
    /// or bbr (paced; far faster through heavy random loss) [cubic].
    #[arg(long, value_enum)]
    pub cc: Option<CcArg>,
    /// Number of TCBs (most connections at once, per core), 1 to 1048576 (~9.3 KiB
    /// each) [1024].
    #[arg(long, value_parser = count)]
    pub tcbs: Option<usize>,
    /// Most connections from one client address at once (a SYN beyond it is refused with
    /// a RST), 1 to 1048576 [half of --tcbs].
    #[arg(long, value_parser = count)]
    pub max_per_ip: Option<usize>,
    /// Half-open connections held at once; past it SYNs are answered with SYN cookies and
    /// no TCB (RFC 4987), 1 to 1048576 [half of --tcbs].
    #[arg(long, value_parser = count)]
    pub syn_backlog: Option<usize>,
    /// Seconds a client has from connecting to send a whole request head (then 408 and
    /// close), 1 to 86400 [10].
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub request_timeout: Option<u64>,
    /// Seconds an idle keep-alive connection is kept, 1 to 86400 [30].
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub idle_timeout: Option<u64>,
    /// A Common Log Format line per response (serve: on stdout; run and images: on the
    /// kernel console, slow: a VM exit per byte).
    #[arg(long)]
    pub access_log: bool,
    /// Do not answer /.well-known/bareweb/ (HTML) and /.well-known/bareweb/stats (JSON).
    #[arg(long)]
    pub no_stats_page: bool,
    /// Only clients in this network may read the stats JSON and /metrics (others get the
    /// site's answer, normally 404), A.B.C.D/N or one address [the site's `[stats] allow`;
    /// everyone].
    #[arg(long, value_name = "A.B.C.D/N", value_parser = network)]
    pub stats_allow: Option<Cidr>,
    /// How several cores share the NIC: `perqueue` (a queue pair and a whole server per
    /// core; the default when the NIC has a queue per core) or `netcore` (the papers'
    /// design: core 0 owns the NIC and hands connections to HTTP cores round robin). With
    /// one core either is the one-core server (said at start).
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// Network-core mode: core 0 serves HTTP too.
    #[arg(long)]
    pub bsp_http: bool,
    /// Also serve paper 001's stateless UDP protocol (docs/udp-protocol.md) on this UDP
    /// port, 1 to 65535 [off].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub udp_port: Option<u16>,
    /// Packets the server sends per UDP GET (the paper's n, 4 to 8 there), 1 to 64 [8].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(1..=64))]
    pub udp_burst: Option<u8>,
    /// Request ids on the UDP server's stack (most UDP requests in progress at once), 1 to
    /// 65535 [5000].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub udp_ids: Option<u16>,
    /// UDP GETs answered per second per client address that proved it receives our
    /// packets, 0 for no limit (unproven addresses: 16 per second) [20000].
    #[arg(long, value_name = "N")]
    pub udp_rate: Option<u32>,
    /// Paper 001 as written: no amplification bound, no address tokens, no rate limit. A
    /// small spoofed GET then draws up to n large packets at its claimed source: only on a
    /// network you trust (docs/security.md).
    #[arg(long)]
    pub udp_paper_mode: bool,
    /// With two NICs or more (serve: --tap twice; run: --net twice), how they are used
    /// (paper 002): `split` one NIC only receives and the others only send, `spread` one
    /// receives and all send, `off` the first NIC alone [spread with two NICs or more].
    #[arg(long, value_enum)]
    pub bond: Option<BondArg>,
    /// How a connection's send NIC is chosen at its SYN: `per-client` (the paper's: one
    /// NIC per client, clients spread evenly), `size` (frames without payload on one NIC,
    /// data on the others), `least-queued` (the NIC with the fewest response bytes
    /// waiting) [per-client].
    #[arg(long, value_enum)]
    pub bond_policy: Option<PolicyArg>,
    /// Milliseconds between two readings of every NIC's link (failover), 1 to 60000 [100].
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u32).range(1..=60_000))]
    pub bond_monitor_ms: Option<u32>,
}

impl ServerOpts {
    /// Checks that need more than one option.
    pub fn check(&self) -> Result<(), String> {
        if self.bsp_http && self.mode != Some(ModeArg::Netcore) {
            return Err("--bsp-http only applies to --mode netcore".into());
        }
        let udp_tuning = self.udp_burst.is_some()
            || self.udp_ids.is_some()
            || self.udp_rate.is_some()
            || self.udp_paper_mode;
        if udp_tuning && self.udp_port.is_none() {
            return Err(
                "--udp-burst, --udp-ids, --udp-rate and --udp-paper-mode need --udp-port".into(),
            );
        }
        Ok(())
    }

    /// Whether any option was given (a plain site image carries none of them).
    pub fn any(&self) -> bool {
        self.ip.is_some()
            || self.gw.is_some()
            || self.port.is_some()
            || self.sched.is_some()
            || self.cc.is_some()
            || self.tcbs.is_some()
            || self.max_per_ip.is_some()
            || self.syn_backlog.is_some()
            || self.request_timeout.is_some()
            || self.idle_timeout.is_some()
            || self.access_log
            || self.no_stats_page
            || self.stats_allow.is_some()
            || self.mode.is_some()
            || self.bsp_http
            || self.udp_port.is_some()
            || self.bond.is_some()
            || self.bond_policy.is_some()
            || self.bond_monitor_ms.is_some()
    }

    /// The UDP protocol's configuration, when `--udp-port` is given (core 0's: the plan
    /// gives each core its id).
    pub fn udp(&self) -> Option<bareweb_engine::udp::Config> {
        let d = bareweb_engine::udp::Config::new(self.udp_port?);
        Some(bareweb_engine::udp::Config {
            burst: self.udp_burst.unwrap_or(d.burst),
            ids: self.udp_ids.unwrap_or(d.ids),
            rate: self.udp_rate.unwrap_or(d.rate),
            paper_mode: self.udp_paper_mode,
            ..d
        })
    }

    /// ` and bwudp://IP:PORT/` for a start banner when the UDP protocol is served.
    pub fn udp_banner(&self, host: impl fmt::Display) -> String {
        match self.udp_port {
            Some(p) => format!(
                " and bwudp://{host}:{p}/{}",
                if self.udp_paper_mode {
                    " (UDP paper mode: no bounds)"
                } else {
                    ""
                }
            ),
            None => String::new(),
        }
    }

    /// The bonding asked for with `nics` NICs: `None` for one NIC (or `--bond off`), else
    /// the mode, policy and link check interval; an error for `split`/`spread` with one.
    pub fn bonding(
        &self,
        nics: usize,
    ) -> Result<
        Option<(
            bareweb_engine::bond::Mode,
            bareweb_engine::bond::Policy,
            u32,
        )>,
        String,
    > {
        let mode = match (self.bond, nics) {
            (Some(BondArg::Off), _) => return Ok(None),
            (Some(b), n) if n < 2 => {
                return Err(format!(
                    "--bond {} needs two NICs or more (give --tap or --net twice)",
                    value_name(b)
                ))
            }
            (None, n) if n < 2 => return Ok(None),
            (b, _) => b.unwrap_or(BondArg::Spread),
        };
        Ok(Some((
            mode.mode(),
            self.bond_policy.unwrap_or_default().policy(),
            self.bond_monitor_ms.unwrap_or(100),
        )))
    }

    /// The engine configuration for `serve` (its defaults: 10.0.0.2/24, no router).
    pub fn config(&self, isn_key: [u8; 16]) -> Config {
        let ip = match self.ip {
            Some(IpArg::Fixed(c)) => c,
            // `serve` refuses dhcp (ServeArgs::check); the default otherwise.
            _ => Cidr {
                ip: Ipv4Addr::new(10, 0, 0, 2),
                prefix: 24,
            },
        };
        let mut cfg = Config::new(ip.addr(), ip.prefix, isn_key);
        cfg.gateway = self.gw.and_then(OrNone::addr);
        cfg.port = self.port.unwrap_or(80);
        cfg.tcbs = self.tcbs.unwrap_or(1024);
        cfg.max_per_ip = self.max_per_ip;
        cfg.syn_backlog = self.syn_backlog;
        cfg.sched = self.sched.unwrap_or_default().sched();
        cfg.congestion = self.cc.unwrap_or_default().algorithm();
        cfg.timeouts = Timeouts {
            request_ms: self.request_timeout.unwrap_or(10) * 1000,
            idle_ms: self.idle_timeout.unwrap_or(30) * 1000,
            ..Timeouts::default()
        };
        cfg.udp = self.udp();
        cfg
    }

    /// The kernel command-line words for the options given (the kernel's defaults stand
    /// for the others), `log_stats` adding `log=stats`.
    pub fn kernel_words(&self, log_stats: bool) -> Vec<String> {
        let mut w = Vec::new();
        if let Some(ip) = self.ip {
            w.push(format!("ip={ip}"));
        }
        if let Some(gw) = self.gw {
            w.push(format!("gw={gw}"));
        }
        if let Some(p) = self.port {
            w.push(format!("port={p}"));
        }
        if let Some(s) = self.sched {
            w.push(format!("sched={}", value_name(s)));
        }
        if let Some(c) = self.cc {
            w.push(format!("cc={}", value_name(c)));
        }
        for (k, v) in [
            ("tcbs", self.tcbs),
            ("max_per_ip", self.max_per_ip),
            ("syn_backlog", self.syn_backlog),
        ] {
            if let Some(v) = v {
                w.push(format!("{k}={v}"));
            }
        }
        for (k, v) in [
            ("request_timeout", self.request_timeout),
            ("idle_timeout", self.idle_timeout),
        ] {
            if let Some(v) = v {
                w.push(format!("{k}={v}"));
            }
        }
        match (self.access_log, log_stats) {
            (true, true) => w.push("log=access,stats".into()),
            (true, false) => w.push("log=access".into()),
            (false, true) => w.push("log=stats".into()),
            (false, false) => {}
        }
        if self.no_stats_page {
            w.push("stats_page=off".into());
        }
        if let Some(n) = self.stats_allow {
            w.push(format!("stats_allow={n}"));
        }
        if let Some(m) = self.mode {
            w.push(format!("mode={}", value_name(m)));
        }
        if self.bsp_http {
            w.push("bsp_http=on".into());
        }
        if let Some(u) = self.udp() {
            w.push(format!("udp_port={}", u.port));
            for (k, v, given) in [
                ("udp_burst", u32::from(u.burst), self.udp_burst.is_some()),
                ("udp_ids", u32::from(u.ids), self.udp_ids.is_some()),
                ("udp_rate", u.rate, self.udp_rate.is_some()),
            ] {
                if given {
                    w.push(format!("{k}={v}"));
                }
            }
            if u.paper_mode {
                w.push("udp_paper=on".into());
            }
        }
        if let Some(b) = self.bond {
            w.push(format!("bond={}", value_name(b)));
        }
        if let Some(p) = self.bond_policy {
            w.push(format!("bond_policy={}", value_name(p)));
        }
        if let Some(ms) = self.bond_monitor_ms {
            w.push(format!("bond_monitor_ms={ms}"));
        }
        w
    }
}

/// `--append WORDS`: kernel command-line words the kernel accepts.
pub fn kernel_words(s: &str) -> Result<String, String> {
    kernel_settings(s)?;
    Ok(s.trim().to_string())
}

/// `IFACE[:N]`: an interface name ([`ifname`]) and, after a colon, a number in `range`
/// (`what` names it in the error: "a queue number").
pub fn ifname_and_number(
    s: &str,
    what: &str,
    range: std::ops::RangeInclusive<u32>,
) -> Result<(String, Option<u32>), String> {
    let (name, n) = match s.split_once(':') {
        Some((name, n)) => {
            let n = n
                .parse::<u32>()
                .ok()
                .filter(|n| range.contains(n))
                .ok_or_else(|| {
                    format!("{n:?} is not {what} ({} to {})", range.start(), range.end())
                })?;
            (name, Some(n))
        }
        None => (s, None),
    };
    Ok((ifname(name)?, n))
}

/// A network interface name as Linux takes it: 1 to 15 bytes, no `/`, `:`, `,` or space.
pub fn ifname(s: &str) -> Result<String, String> {
    if s.is_empty()
        || s.len() > 15
        || s.bytes()
            .any(|b| b == b'/' || b == b':' || b == b',' || !b.is_ascii_graphic())
    {
        return Err(format!(
            "{s:?} is not an interface name (1 to 15 characters, no '/', ':', ',' or spaces)"
        ));
    }
    Ok(s.to_string())
}

/// The settings the kernel will have from `line` (over its defaults), or the first word
/// it would refuse, said as the kernel would say it.
pub fn kernel_settings(line: &str) -> Result<kernel_cmdline::Settings, String> {
    let mut bad = None;
    let s = kernel_cmdline::parse(line, |c| {
        bad.get_or_insert_with(|| format!("kernel command line word {:?}: {}", c.word, c.why));
    });
    match bad {
        Some(b) => Err(b),
        None => Ok(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xdp_interface_and_queue_arguments() {
        use crate::load_udp::XdpQueueArg;
        use crate::serve_xdp::XdpArg;
        let q = |s: &str| s.parse::<XdpQueueArg>().map(|a| (a.iface, a.queue));
        assert_eq!(q("xc0"), Ok(("xc0".into(), 0)));
        assert_eq!(q("xc0:255"), Ok(("xc0".into(), 255)));
        assert_eq!(
            q("xc0:256"),
            Err("\"256\" is not a queue number (0 to 255)".into())
        );
        let n = |s: &str| s.parse::<XdpArg>().map(|a| (a.iface, a.queues));
        assert_eq!(n("eth1"), Ok(("eth1".into(), None)));
        assert_eq!(n("eth1:4"), Ok(("eth1".into(), Some(4))));
        assert_eq!(
            n("eth1:0"),
            Err("\"0\" is not a queue count (1 to 256)".into())
        );
        for bad in ["", ":2", "a/b:1", "eth1:-1", "eth1:x", "sixteen-bytes-xx:1"] {
            assert!(n(bad).is_err() && q(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn addresses_are_parsed_strictly() {
        assert_eq!(
            "10.0.0.2/16".parse::<Cidr>().unwrap(),
            Cidr {
                ip: Ipv4Addr::new(10, 0, 0, 2),
                prefix: 16
            }
        );
        assert_eq!("10.0.0.2".parse::<Cidr>().unwrap().prefix, 24);
        for bad in [
            "+10.0.02.+15/24",
            "10.0.0.2/+8",
            "10.0.0.2/33",
            "10.0.0/24",
            "010.0.0.2",
            "10.0.0.2/",
            "",
        ] {
            assert!(bad.parse::<Cidr>().is_err(), "{bad}");
        }
        assert_eq!("none".parse::<OrNone>().unwrap(), OrNone::None);
        assert!("10.0.0.1".parse::<OrNone>().unwrap().addr().is_some());
        assert!("None".parse::<OrNone>().is_err());
        assert!("10.0.0.256".parse::<OrNone>().is_err());
    }

    #[test]
    fn macs_are_six_hex_pairs() {
        assert_eq!(
            "52:54:00:12:34:5f".parse::<Mac>().unwrap().0,
            [0x52, 0x54, 0, 0x12, 0x34, 0x5f]
        );
        assert!("52-54-00-12-34-56".parse::<Mac>().is_ok());
        for bad in [
            "1:2:3:4:5:+6",
            "1:2:3:4:5:6",
            "52:54:00:12:34",
            "52:54:00:12:34:56:78",
            "52:54:00:12:34:5g",
            "01:00:5e:00:00:01",
        ] {
            assert!(bad.parse::<Mac>().is_err(), "{bad}");
        }
    }

    #[test]
    fn memory_sizes_as_qemu_takes_them() {
        assert_eq!("256M".parse::<MemSize>().unwrap().mib(), 256);
        assert_eq!("256".parse::<MemSize>().unwrap().mib(), 256);
        assert_eq!("1g".parse::<MemSize>().unwrap().mib(), 1024);
        assert_eq!("65536K".parse::<MemSize>().unwrap().mib(), 64);
        for bad in ["16M", "1.5G", "-1G", "lots", "256MB", "1025K", "2T", ""] {
            assert!(bad.parse::<MemSize>().is_err(), "{bad}");
        }
    }

    #[test]
    fn kernel_words_are_the_kernels_own() {
        let o = ServerOpts {
            ip: Some("10.1.2.3/16".parse().unwrap()),
            gw: Some(OrNone::None),
            port: Some(8080),
            sched: Some(SchedArg::Ist),
            cc: Some(CcArg::Cubic),
            tcbs: Some(64),
            max_per_ip: Some(8),
            syn_backlog: Some(16),
            request_timeout: Some(5),
            idle_timeout: Some(7),
            access_log: true,
            no_stats_page: true,
            stats_allow: Some(network("10.9.0.0/16").unwrap()),
            mode: Some(ModeArg::Netcore),
            bsp_http: true,
            udp_port: Some(8081),
            udp_burst: Some(4),
            udp_ids: Some(100),
            udp_rate: Some(0),
            udp_paper_mode: true,
            bond: Some(BondArg::Split),
            bond_policy: Some(PolicyArg::LeastQueued),
            bond_monitor_ms: Some(40),
        };
        let line = o.kernel_words(true).join(" ");
        let s = kernel_settings(&line).unwrap();
        assert_eq!(
            s.udp.config(),
            o.udp(),
            "the kernel's UDP settings are serve's"
        );
        assert_eq!(s.bond, Some(BondArg::Split.mode()));
        assert_eq!(s.bond_policy, PolicyArg::LeastQueued.policy());
        assert_eq!(s.bond_monitor_ms, 40);
        assert_eq!(s.ip, Ipv4Address([10, 1, 2, 3]));
        assert_eq!((s.prefix, s.gateway, s.port), (16, None, 8080));
        assert_eq!((s.sched, s.tcbs), (Sched::Ist, 64));
        assert_eq!(s.cc, CcArg::Cubic.algorithm());
        assert_eq!((s.max_per_ip, s.syn_backlog), (Some(8), Some(16)));
        assert_eq!((s.request_timeout_s, s.idle_timeout_s), (5, 7));
        assert!(s.log_access && s.log_stats && !s.stats_page && s.bsp_http);
        assert_eq!(s.mode, Some(kernel_cmdline::CoreMode::NetCore));
        assert_eq!(s.stats_allow, Some((Ipv4Address([10, 9, 0, 0]), 16)));
        assert_eq!(network("10.0.2.2").unwrap().to_string(), "10.0.2.2/32");
        assert!(network("10.0.2.0/33").is_err() && network("10.0.2/8").is_err());
        assert_eq!(
            ServerOpts::default().kernel_words(false),
            Vec::<String>::new()
        );
        for bad in ["crash=maybe", "colour=blue", "tcbs=0", "loose"] {
            assert!(kernel_settings(bad).is_err(), "{bad}");
        }
        assert!(kernel_settings("crash=panic cores=2").is_ok());
    }

    #[test]
    fn bonding_needs_two_nics() {
        let o = |bond| ServerOpts {
            bond,
            ..ServerOpts::default()
        };
        use bareweb_engine::bond::{Mode, Policy};
        assert_eq!(o(None).bonding(1), Ok(None));
        assert_eq!(
            o(None).bonding(2),
            Ok(Some((Mode::Spread, Policy::PerClient, 100)))
        );
        assert_eq!(o(Some(BondArg::Off)).bonding(2), Ok(None));
        assert!(o(Some(BondArg::Split))
            .bonding(1)
            .unwrap_err()
            .contains("--bond split needs two NICs"));
        assert_eq!(
            o(Some(BondArg::Split)).bonding(3).unwrap().map(|b| b.0),
            Some(Mode::Split)
        );
    }

    #[test]
    fn combinations_are_checked() {
        let bsp = ServerOpts {
            bsp_http: true,
            ..ServerOpts::default()
        };
        assert!(bsp.check().is_err());
    }
}
