//! The server's options, declared once: every setting that `bareweb serve`, `bareweb run`
//! and bootable images (`bareweb build`) share, as one row of [`OPTIONS`] each — the
//! kernel's command-line word, the CLI's long option, the kind of value (with the choices
//! and their help), the help text, and how the value sets [`Settings`]. [`Settings`] holds
//! the defaults (taken from the engine's own `Config::new`, `Timeouts::default` and
//! `udp::Config::new` where the engine has one) and [`Settings::config`] turns it into the
//! engine's [`Config`].
//!
//! Users of the table:
//! - the kernel's command line ([`kernel`]): a `word=value` whose word is a row's is given
//!   to that row's `set`; [`kernel`] itself keeps only the words of the bare machine alone
//!   (cores, APIC, idling, offloads, virtio-mmio devices, the bare UDP client, `crash=`);
//! - the CLI (crates/cli/src/opts.rs): builds a clap argument per row at start-up (name,
//!   value name, help, choices) whose value parser is the row's `set`, so `--tcbs 0` and
//!   `tcbs=0` are refused in the same words; an option given becomes `word=value` for the
//!   kernel, and `serve` applies the same words to [`Settings::tap`];
//! - the engine: only through [`Settings::config`] (the engine knows nothing of this table).
//!
//! The value a user writes is the same text on both sides (`--bond-policy least-queued`
//! is `bond_policy=least-queued`), except for flags ([`Arg::Flag`]), which are one word
//! with a fixed value (`--no-stats-page` is `stats_page=off`).
//!
//! # Adding an option
//!
//! One row, and its use. Say a `--max-header-kib` for the engine's `Config::max_header`:
//!
//! 1. A field in [`Settings`] and its default in `Settings::default` (read it from the
//!    engine's `Config::new` when the engine has one, so the default lives there alone).
//! 2. A row in [`OPTIONS`], in the order `--help` should list it:
//!    ```text
//!    Opt {
//!        word: "max_header_kib",
//!        long: "max-header-kib",
//!        arg: Arg::Value("KIB"),
//!        help: help!("Largest request head accepted, KiB, 1 to 64 [default: 8]"),
//!        set: |s, v| number(v, 1, 64, "expected a number from 1 to 64").map(|n| s.max_header_kib = n),
//!    },
//!    ```
//! 3. Its use in [`Settings::config`]: `cfg.max_header = s.max_header_kib as usize * 1024;`.
//!
//! That is all: `serve`, `run` and `build` now take `--max-header-kib`, the kernel takes
//! `max_header_kib=`, and the round-trip test (`every_option_round_trips`) walks the new
//! row too (add its example value to `EXAMPLES` there; the test fails until you do).
//! docs/design/adding-an-option.md says the same with the reasons.
#![no_std]
#![deny(unsafe_code)]
#![warn(missing_docs)]

#[cfg(test)]
extern crate std;

pub mod kernel;
pub mod tls_payload;

use core::net::Ipv4Addr;

use bareweb_engine::bond::{Mode as BondMode, Policy as BondPolicy};
use bareweb_engine::cores::plan::Asked;
use bareweb_engine::http::log::LogFormat;
use bareweb_engine::iface::Vips;
use bareweb_engine::server::{Config, ProxySources, Sched, Timeouts};
use bareweb_engine::tcp::Algorithm;
use bareweb_engine::wire::Ipv4Address;

/// Most TCBs a server may be given: ~9.3 KiB each, so 1 Mi is ~9.3 GiB.
pub const MAX_TCBS: usize = 1 << 20;

/// The settings the options control, with the defaults of `bareweb run` and the kernel
/// (QEMU user networking's guest address); `serve`'s are [`Settings::tap`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Our address (with `dhcp`: until a lease gives one).
    pub ip: Ipv4Address,
    /// Prefix length of the link.
    pub prefix: u8,
    /// `ip=dhcp`: the address, prefix and router come from a DHCP server.
    pub dhcp: bool,
    /// Router for off-link clients (QEMU's user-mode host is one).
    pub gateway: Option<Ipv4Address>,
    /// `ip6=slaac` or `ip6=ADDR/PREFIX`: IPv6 on the link (a link-local address,
    /// neighbour discovery, echo, and global addresses).
    pub ip6: bool,
    /// `ip6=ADDR/PREFIX`: a configured global address (`None`: from router
    /// advertisements, SLAAC).
    pub ip6_static: Option<Ip6Static>,
    /// `ip6=dhcp6`: the global address from DHCPv6 alone, asked for at start (no SLAAC).
    pub ip6_dhcp6: bool,
    /// `ip6_secret=HEX`: the RFC 7217 secret of the stable IPv6 address (`None`: random
    /// per start).
    pub ip6_secret: Option<[u8; 16]>,
    /// `gw6=ADDR`: the IPv6 router for peers beyond the link (`None`, `gw6=auto`: an
    /// advertised one).
    pub gateway6: Option<[u8; 16]>,
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
    /// Seconds a drain keeps serving new connections.
    pub drain_grace_s: u64,
    /// Seconds from a drain's start to the reset of what is left.
    pub drain_timeout_s: u64,
    /// An access log line per response.
    pub log_access: bool,
    /// The access log's line format.
    pub log_format: LogFormat,
    /// A counters line every second (the kernel's console; `--stats-log`).
    pub log_stats: bool,
    /// Answer `/.well-known/bareweb/` and `/.well-known/bareweb/stats`.
    pub stats_page: bool,
    /// The clients allowed the stats JSON and metrics, a network and prefix length (over
    /// the site's `[stats] allow`; None: the site's).
    pub stats_allow: Option<(Ipv4Address, u8)>,
    /// The balancers whose connections begin with a PROXY protocol header (and only
    /// theirs may).
    pub proxy_protocol: ProxySources,
    /// How the cores share the NIC (None: the platform's choice).
    pub mode: Option<Asked>,
    /// Network-core mode: core 0 serves HTTP too.
    pub bsp_http: bool,
    /// The stateless UDP protocol; served when its port is set.
    pub udp: Udp,
    /// How the NICs are used (None: `spread` with two or more, else `off`).
    pub bond: Option<BondMode>,
    /// How a connection's send NIC is chosen.
    pub bond_policy: BondPolicy,
    /// Milliseconds between two readings of the NICs' links.
    pub bond_monitor_ms: u32,
    /// Virtual addresses served besides `ip` (direct server return), never answered in
    /// ARP.
    pub vips: Vips,
    /// HTTPS.
    pub tls: Tls,
    /// Certificates obtained over ACME.
    pub acme: Acme,
}

/// The ACME client's settings. The names, directory, contact and CA file are read by the
/// platform from the values given (as the certificate files are); this keeps what the
/// checks need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Acme {
    /// `--acme-domain` names given (each checked).
    pub domains: u8,
    /// `--acme-directory` was given (else Let's Encrypt's production directory).
    pub directory: bool,
    /// `--acme-email` was given.
    pub email: bool,
    /// `--acme-challenge tls-alpn-01` (else HTTP-01).
    pub tls_alpn: bool,
    /// `--dns`: the DNS servers, in order.
    pub dns: [Option<(Ipv4Address, u16)>; 3],
}

impl Acme {
    /// Whether certificates are obtained over ACME.
    pub fn on(&self) -> bool {
        self.domains > 0
    }

    /// The DNS servers given.
    pub fn dns_servers(&self) -> impl Iterator<Item = (Ipv4Address, u16)> + '_ {
        self.dns.iter().flatten().copied()
    }
}

/// Let's Encrypt's production directory: `--acme-directory`'s default.
pub const LETS_ENCRYPT: &str = "https://acme-v02.api.letsencrypt.org/directory";

/// Whether `name` is a host name a CA can validate over HTTP-01 or TLS-ALPN-01: labels of
/// letters, digits and inner hyphens, 1 to 63 each, at most 253 in all, no wildcard.
pub fn acme_name_ok(name: &str) -> bool {
    name.len() <= 253
        && !name.is_empty()
        && name.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

const ACME_DOMAIN: &str =
    "expected host names (letters, digits, inner hyphens; no wildcard), at most 8 in all";
const DNS_SERVER: &str = "expected A.B.C.D or A.B.C.D:PORT, at most 3 servers";

/// HTTPS's settings. The certificate and key files are read by the platform (`serve`;
/// `run` and `build` put their bytes in the image, [`tls_payload`]), which has their
/// names; here is only whether they were given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tls {
    /// `--tls-cert` was given.
    pub cert: bool,
    /// `--tls-key` was given.
    pub key: bool,
    /// `--https-port` (None: 443 when a certificate is given).
    pub port: Option<u16>,
    /// `--http-redirect`.
    pub redirect: bool,
    /// `--tls-min 1.3`.
    pub min13: bool,
    /// `--hsts`: the `Strict-Transport-Security` policy of HTTPS responses (None: off).
    pub hsts: Option<bareweb_engine::http::Hsts>,
}

impl Tls {
    /// Any HTTPS option given.
    pub fn any(&self) -> bool {
        *self != Tls::default()
    }

    /// The HTTPS port: `--https-port`, else 443.
    pub fn port(&self) -> u16 {
        self.port.unwrap_or(443)
    }
}

/// The kernel words of HTTPS.
pub const TLS_WORDS: &[&str] = &[
    "tls_cert",
    "tls_key",
    "https_port",
    "http_redirect",
    "tls_min",
    "hsts",
];

/// The UDP protocol's settings.
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

impl Default for Settings {
    /// The engine's defaults, on QEMU user networking's addresses (10.0.2.15/24 by the
    /// router 10.0.2.2): the kernel's and `bareweb run`'s.
    fn default() -> Self {
        let engine = Config::new(Ipv4Address([10, 0, 2, 15]), 24, [0; 16]);
        let udp = bareweb_engine::udp::Config::new(0);
        Settings {
            ip: engine.ip,
            prefix: engine.prefix_len,
            dhcp: false,
            gateway: Some(Ipv4Address([10, 0, 2, 2])),
            // IPv6 on by default (`ip6=slaac`), unlike the engine's own Config.
            ip6: true,
            ip6_static: None,
            ip6_dhcp6: false,
            ip6_secret: engine.ipv6_secret,
            gateway6: None,
            port: engine.port,
            sched: engine.sched,
            cc: engine.congestion,
            tcbs: engine.tcbs,
            max_per_ip: engine.max_per_ip,
            syn_backlog: engine.syn_backlog,
            request_timeout_s: engine.timeouts.request_ms / 1000,
            idle_timeout_s: engine.timeouts.idle_ms / 1000,
            drain_grace_s: engine.timeouts.drain_grace_ms / 1000,
            drain_timeout_s: engine.timeouts.drain_timeout_ms / 1000,
            log_access: false,
            log_format: LogFormat::default(),
            log_stats: false,
            stats_page: true,
            stats_allow: None,
            proxy_protocol: engine.proxy_protocol,
            mode: None,
            bsp_http: false,
            udp: Udp {
                port: None,
                ids: udp.ids,
                burst: udp.burst,
                rate: udp.rate,
                paper: udp.paper_mode,
            },
            bond: None,
            bond_policy: BondPolicy::default(),
            bond_monitor_ms: 100,
            vips: engine.vips,
            tls: Tls::default(),
            acme: Acme::default(),
        }
    }
}

/// `serve`'s defaults over [`Settings::default`], as words: a TAP's usual address and no
/// router (the host is on the link).
pub const TAP_DEFAULTS: &[(&str, &str)] = &[("ip", "10.0.0.2/24"), ("gw", "none")];

impl Settings {
    /// `serve`'s defaults: [`TAP_DEFAULTS`] over [`Settings::default`].
    pub fn tap() -> Settings {
        let mut s = Settings::default();
        for (word, value) in TAP_DEFAULTS {
            // The table's own words: a test holds them to it.
            let _ = s.set(word, value);
        }
        s
    }

    /// Sets the option whose kernel word is `word` from `value`: `None` when no row has
    /// that word, else the row's verdict (on `Err`, `self` is unchanged).
    pub fn set(&mut self, word: &str, value: &str) -> Option<Result<(), &'static str>> {
        let opt = find(word)?;
        let mut s = *self;
        Some((opt.set)(&mut s, value).map(|()| *self = s))
    }

    /// The engine's configuration for these settings, with the ISN secret (random bytes
    /// from the platform). `dhcp`, `platform` and `drain` are the platform's to fill in
    /// (the drain from `cfg.timeouts`).
    pub fn config(&self, isn_key: [u8; 16]) -> Config {
        let mut cfg = Config::new(self.ip, self.prefix, isn_key);
        cfg.gateway = self.gateway;
        cfg.ipv6 = self.ip6;
        cfg.ipv6_secret = self.ip6_secret;
        cfg.ipv6_dhcp6 = self.ip6_dhcp6;
        cfg.ipv6_gateway = self.gateway6.map(bareweb_engine::wire::Ipv6Address);
        cfg.ipv6_static = self
            .ip6_static
            .map(|a| (bareweb_engine::wire::Ipv6Address(a.addr), a.prefix));
        cfg.port = self.port;
        cfg.sched = self.sched;
        cfg.congestion = self.cc;
        cfg.tcbs = self.tcbs;
        cfg.max_per_ip = self.max_per_ip;
        cfg.syn_backlog = self.syn_backlog;
        cfg.timeouts = Timeouts {
            request_ms: self.request_timeout_s * 1000,
            idle_ms: self.idle_timeout_s * 1000,
            drain_grace_ms: self.drain_grace_s * 1000,
            drain_timeout_ms: self.drain_timeout_s * 1000,
            ..Timeouts::default()
        };
        cfg.udp = self.udp.config();
        cfg.vips = self.vips;
        cfg.proxy_protocol = self.proxy_protocol;
        // The session maker (`cfg.tls`) is the platform's, from the files it reads.
        cfg.https_redirect = self.tls.redirect.then(|| self.tls.port());
        cfg.hsts = self.tls.hsts;
        cfg
    }
}

/// One option: its names on both sides, its value, its help, and what it sets.
pub struct Opt {
    /// The kernel's word (`tcbs` in `tcbs=64`).
    pub word: &'static str,
    /// The CLI's long option, without the dashes (`max-per-ip`).
    pub long: &'static str,
    /// What the CLI takes.
    pub arg: Arg,
    /// The CLI's help (`--help`), ending with the default in brackets; written
    /// `help!("…")`, empty without the `help` feature (the kernel's build).
    pub help: &'static str,
    /// Sets the option from the kernel word's value (the CLI's value, or a flag's fixed
    /// value), or says what was expected; a value refused leaves `Settings` as it was.
    pub set: fn(&mut Settings, &str) -> Result<(), &'static str>,
}

/// What an option takes on the CLI.
pub enum Arg {
    /// A value, shown in help under this name (`SECONDS`).
    Value(&'static str),
    /// One of these names (the kernel word takes the same), shown in help under the value
    /// name.
    Choice(&'static str, &'static [Choice]),
    /// No value: given, it is the kernel word with this value (`--no-stats-page` is
    /// `stats_page=off`).
    Flag(&'static str),
    /// A comma-separated list, shown in help under this name: the CLI takes the option
    /// repeatedly (its values joined with commas), the kernel word once or several times.
    List(&'static str),
}

/// One of a [`Arg::Choice`]'s names and its help.
pub struct Choice {
    /// The name, on both sides (`least-queued`).
    pub name: &'static str,
    /// One line of help (`help!("…")`, as [`Opt::help`]).
    pub help: &'static str,
}

/// The row whose kernel word is `word`.
pub fn find(word: &str) -> Option<&'static Opt> {
    OPTIONS.iter().find(|o| o.word == word)
}

impl Opt {
    /// The kernel word's value for the CLI's `value` (a flag's fixed value).
    pub fn word_value<'a>(&self, value: &'a str) -> &'a str {
        match self.arg {
            Arg::Flag(v) => v,
            _ => value,
        }
    }
}

/// `A.B.C.D` as std writes it (no leading zeros, no signs).
/// 32 hex digits as 16 octets.
/// A configured IPv6 address and its prefix length (`--ip6 ADDR/PREFIX`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ip6Static {
    /// The address.
    pub addr: [u8; 16],
    /// The prefix length of its link, 1 to 128.
    pub prefix: u8,
}

/// `--ip6`'s value when it is an address: [`ip6_cidr`], or what else it may be.
fn ip6_static(v: &str) -> Result<Ip6Static, &'static str> {
    ip6_cidr(v).map_err(|e| match e {
        WANT_CIDR => {
            "expected slaac, dhcp6, off or ADDR/PREFIX (an IPv6 address and a prefix \
             length, e.g. 2001:db8::80/64)"
        }
        e => e,
    })
}

/// Whether an interface on a link can hold `a`: not unspecified, loopback, multicast
/// or IPv4-mapped (the link drops frames from those).
pub(crate) fn link_unicast(a: &core::net::Ipv6Addr) -> bool {
    !a.is_unspecified() && !a.is_loopback() && !a.is_multicast() && a.to_ipv4_mapped().is_none()
}

/// `--gw6 ADDR`: a unicast address a router on the link can hold.
pub fn gw6(v: &str) -> Result<[u8; 16], &'static str> {
    match v.parse::<core::net::Ipv6Addr>() {
        Ok(a) if link_unicast(&a) => Ok(a.octets()),
        Ok(_) => Err(
            "--gw6 needs a router's unicast address (not ::, ::1, a multicast or \
                      an IPv4-mapped one), or auto",
        ),
        Err(_) => Err("expected a router's IPv6 address (e.g. fe80::1) or auto"),
    }
}

const WANT_CIDR: &str =
    "expected ADDR/PREFIX (an IPv6 address and a prefix length, e.g. 2001:db8::80/64)";

/// `ADDR/PREFIX`: a global unicast IPv6 address. The link-local one is always derived
/// (RFC 7217), so fe80::/10 is refused, as are addresses no interface may hold
/// (unspecified, loopback, multicast, IPv4-mapped).
pub fn ip6_cidr(v: &str) -> Result<Ip6Static, &'static str> {
    const WANT: &str = WANT_CIDR;
    let (a, p) = v.split_once('/').ok_or(WANT)?;
    let addr: core::net::Ipv6Addr = a.parse().map_err(|_| WANT)?;
    let prefix: u8 = p.parse().map_err(|_| WANT)?;
    if !(1..=128).contains(&prefix) {
        return Err("the prefix length of --ip6 ADDR/PREFIX is 1 to 128");
    }
    let o = addr.octets();
    if o[0] == 0xfe && o[1] & 0xc0 == 0x80 {
        return Err(
            "a link-local address is not configured: the link-local one is \
                    derived (RFC 7217, --ip6-secret); give a global address",
        );
    }
    if !link_unicast(&addr) {
        return Err(
            "--ip6 ADDR/PREFIX needs a unicast address an interface can hold \
                    (not ::, ::1, a multicast or an IPv4-mapped one)",
        );
    }
    Ok(Ip6Static { addr: o, prefix })
}

fn hex16(s: &str) -> Option<[u8; 16]> {
    let b = s.as_bytes();
    if b.len() != 32 {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut out = [0u8; 16];
    for (o, pair) in out.iter_mut().zip(b.chunks_exact(2)) {
        *o = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(out)
}

pub(crate) fn addr(s: &str) -> Option<Ipv4Address> {
    s.parse::<Ipv4Addr>().ok().map(|a| Ipv4Address(a.octets()))
}

/// The part of an `A.B.C.D/N` value that [`network`] refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadNetwork<'a> {
    /// The address, `A.B.C.D`.
    Addr(&'a str),
    /// The prefix length after the `/`.
    Prefix(&'a str),
}

/// `A.B.C.D/N` (`N` one or two digits, at most 32), or `A.B.C.D` with the prefix `bare`:
/// every address-and-prefix value of the kernel's words and the command line.
pub fn network(s: &str, bare: u8) -> Result<(Ipv4Address, u8), BadNetwork<'_>> {
    let (ip, len) = match s.split_once('/') {
        Some((ip, len)) => (ip, Some(len)),
        None => (s, None),
    };
    let ip = addr(ip).ok_or(BadNetwork::Addr(ip))?;
    let prefix = match len {
        None => bare,
        Some(l) if !l.is_empty() && l.len() <= 2 && l.bytes().all(|b| b.is_ascii_digit()) => l
            .parse::<u8>()
            .ok()
            .filter(|n| *n <= 32)
            .ok_or(BadNetwork::Prefix(l))?,
        Some(l) => return Err(BadNetwork::Prefix(l)),
    };
    Ok((ip, prefix))
}

/// The bits of a `/prefix` network mask.
fn mask(prefix: u8) -> u32 {
    u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0)
}

/// Whether `ip` may be a host's own address on the network `ip/prefix`: not 0.0.0.0, a
/// multicast or the limited broadcast address, and (on a network with room for hosts,
/// prefix 30 or shorter) neither the network's own address (host bits all 0) nor its
/// broadcast address (all 1). A /31 (RFC 3021) and a /32 have no such addresses.
pub fn host_address(ip: Ipv4Address, prefix: u8) -> Result<(), &'static str> {
    let a = u32::from_be_bytes(ip.0);
    let host = a & !mask(prefix);
    if a == 0 || a == u32::MAX || (224..=239).contains(&ip.0[0]) {
        return Err("not a host's address (0.0.0.0, multicast or broadcast)");
    }
    if prefix <= 30 && host == 0 {
        return Err("that is the network's own address (host bits all 0), not a host's: give one from the network, e.g. .1 or .2 on a /24");
    }
    if prefix <= 30 && host == !mask(prefix) {
        return Err("that is the network's broadcast address (host bits all 1), not a host's: give one from the network, e.g. .1 or .2 on a /24");
    }
    Ok(())
}

/// Whether `peer` (the host side of `serve`'s TAP) can talk to a server at `ip/prefix`
/// with no router between them: another address than the server's, of the same network,
/// and a host's ([`host_address`]). The one check `serve` runs on `--host-ip`, next to
/// the `ip` row's own.
pub fn peer_address(ip: Ipv4Address, prefix: u8, peer: Ipv4Address) -> Result<(), &'static str> {
    if peer == ip {
        return Err(
            "it is the server's own address (--ip): the two sides of a link need an address each",
        );
    }
    let m = mask(prefix);
    if u32::from_be_bytes(peer.0) & m != u32::from_be_bytes(ip.0) & m {
        return Err("it is outside the server's network (--ip A.B.C.D/N): the host would have no route to the server, nor the server to the host (it sends off-link frames only to --gw)");
    }
    host_address(peer, prefix)
}

/// A decimal number from `min` to `max` (`why` otherwise).
fn number<T: core::str::FromStr + PartialOrd>(
    v: &str,
    min: T,
    max: T,
    why: &'static str,
) -> Result<T, &'static str> {
    v.parse::<T>()
        .ok()
        .filter(|n| *n >= min && *n <= max)
        .ok_or(why)
}

/// `on` or `off`.
pub(crate) fn on_off(v: &str) -> Result<bool, &'static str> {
    match v {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err("expected on or off"),
    }
}

/// The index of `v` among `choices`' names.
fn choice(v: &str, choices: &[Choice], why: &'static str) -> Result<usize, &'static str> {
    choices.iter().position(|c| c.name == v).ok_or(why)
}

/// A help text: kept where `--help` is written (the CLI turns the `help` feature on), an
/// empty string in the kernel, which never shows it (some 5 KiB of its 512 KiB budget).
macro_rules! help {
    ($text:literal) => {{
        #[cfg(any(test, feature = "help"))]
        let text = $text;
        #[cfg(not(any(test, feature = "help")))]
        let text = "";
        text
    }};
}

const COUNT: &str = "expected a number from 1 to 1048576";
const SECONDS: &str = "expected a number of seconds from 1 to 86400";
const DRAIN_GRACE: &str = "expected a number of seconds from 0 to 3600";
const VIP: &str = "expected unicast IPv4 addresses A.B.C.D other than --ip, separated by commas";
const VIPS: &str = "expected at most 8 virtual addresses";
const PORT: &str = "expected a port number from 1 to 65535";

const SCHED: &[Choice] = &[
    Choice {
        name: "imt",
        help: help!("Look at receive after every HTTP step"),
    },
    Choice {
        name: "ist",
        help: help!("Serve the whole run list in one pass"),
    },
];
const LOG_FORMAT: &[Choice] = &[
    Choice {
        name: "common",
        help: help!("Common Log Format, as Apache's and nginx's default"),
    },
    Choice {
        name: "combined",
        help: help!("Common, then the quoted Referer and User-Agent"),
    },
    Choice {
        name: "json",
        help: help!(
            "One JSON object per line: time, client, method, path, protocol, status, bytes, \
             duration_us, host, referer, user_agent"
        ),
    },
];
const CC: &[Choice] = &[
    Choice {
        name: "cubic",
        help: help!("CUBIC with proportional rate reduction, unpaced (Linux's default)"),
    },
    Choice {
        name: "bbr",
        help: help!(
            "BBR v1: a model of the path's bandwidth and delay, paced; keeps its window \
               through random loss"
        ),
    },
];
const MODE: &[Choice] = &[
    Choice {
        name: "netcore",
        help: help!("The papers' design: core 0 owns the NIC and hands connections to HTTP cores"),
    },
    Choice {
        name: "perqueue",
        help: help!("A NIC queue pair and a whole server per core"),
    },
];
const BOND: &[Choice] = &[
    Choice {
        name: "off",
        help: help!("One NIC receives and sends (the others are not used)"),
    },
    Choice {
        name: "split",
        help: help!("One NIC only receives (and answers ARP), the others only send"),
    },
    Choice {
        name: "spread",
        help: help!("One NIC receives, every NIC sends"),
    },
];
const POLICY: &[Choice] = &[
    Choice {
        name: "per-client",
        help: help!("The paper's: a client's connections on one NIC, clients spread n/2 per NIC"),
    },
    Choice {
        name: "size",
        help: help!("Frames without payload on one NIC, data on the others"),
    },
    Choice {
        name: "least-queued",
        help: help!("The NIC with the fewest response bytes waiting to be acknowledged"),
    },
];

const TLS_MIN: &[Choice] = &[
    Choice {
        name: "1.2",
        help: help!("TLS 1.2 (ECDHE with AEAD suites only) and TLS 1.3"),
    },
    Choice {
        name: "1.3",
        help: help!("TLS 1.3 only"),
    },
];

/// A file's name: not empty, no NUL (the CLI reads it; the bare machine has no files).
fn file(v: &str) -> Result<(), &'static str> {
    if v.is_empty() || v.contains('\0') {
        return Err("expected a file name");
    }
    Ok(())
}

const _: () = assert!(
    bareweb_engine::udp::MAX_BURST == 64,
    "udp_burst's range says 64"
);

/// Every shared option, in `--help`'s order (and the order of the kernel words the CLI
/// writes).
pub static OPTIONS: [Opt; 42] = [
    Opt {
        word: "ip",
        long: "ip",
        arg: Arg::Value("A.B.C.D/N|dhcp"),
        help: help!(
            "The server's address and prefix (a host of the network: not its network or \
               broadcast address), or `dhcp` (run and images: from a DHCP server, renewed while \
               serving) [default: serve: 10.0.0.2/24; run: 10.0.2.15/24, QEMU user networking's \
               guest address; bootable images (-o X.elf, X.iso, X.img, --iso, --disk): dhcp]"
        ),
        set: |s, v| {
            if v == "dhcp" {
                s.dhcp = true;
                return Ok(());
            }
            let (ip, prefix) = network(v, 24)
                .map_err(|_| "expected A.B.C.D/N (N from 0 to 32; /24 if left out) or dhcp")?;
            host_address(ip, prefix)?;
            (s.ip, s.prefix, s.dhcp) = (ip, prefix, false);
            Ok(())
        },
    },
    Opt {
        word: "gw",
        long: "gw",
        arg: Arg::Value("A.B.C.D|none"),
        help: help!(
            "Router for clients beyond the link, or `none` [default: serve: none; run and images: \
               10.0.2.2]"
        ),
        set: |s, v| {
            s.gateway = match v {
                "none" => None,
                _ => Some(addr(v).ok_or("expected an IPv4 address (A.B.C.D) or none")?),
            };
            Ok(())
        },
    },
    Opt {
        word: "ip6",
        long: "ip6",
        arg: Arg::Value("slaac|dhcp6|ADDR/PREFIX|off"),
        help: help!(
            "IPv6 on the link: `slaac` (a stable link-local address, RFC 7217, checked by \
               duplicate address detection; neighbour discovery, ping, MLD; global addresses \
               from router advertisements, and from DHCPv6 when a router's M flag asks), \
               `dhcp6` (the same, but the global address from DHCPv6 alone, asked for at \
               start), `ADDR/PREFIX` (this global address instead, e.g. 2001:db8::80/64) \
               or `off` [default: slaac]"
        ),
        set: |s, v| {
            (s.ip6, s.ip6_static, s.ip6_dhcp6) = match v {
                "slaac" => (true, None, false),
                "dhcp6" => (true, None, true),
                "off" => (false, None, false),
                _ => (true, Some(ip6_static(v)?), false),
            };
            Ok(())
        },
    },
    Opt {
        word: "gw6",
        long: "gw6",
        arg: Arg::Value("ADDR|auto"),
        help: help!(
            "IPv6 router for peers beyond the link (its link-local address, e.g. fe80::1, \
               or a global one on the link), or `auto`: the first router that advertises \
               itself. With no router, only peers on the link are answered over IPv6, as \
               over IPv4 without --gw [default: auto]"
        ),
        set: |s, v| {
            s.gateway6 = match v {
                "auto" => None,
                _ => Some(gw6(v)?),
            };
            Ok(())
        },
    },
    Opt {
        word: "ip6_secret",
        long: "ip6-secret",
        arg: Arg::Value("HEX"),
        help: help!(
            "The secret key of the stable IPv6 address (RFC 7217), 32 hex digits: the same \
               key on the same interface gives the same address across restarts [default: \
               random at each start]"
        ),
        set: |s, v| {
            s.ip6_secret = Some(hex16(v).ok_or("expected 32 hex digits")?);
            Ok(())
        },
    },
    Opt {
        word: "port",
        long: "port",
        arg: Arg::Value("PORT"),
        help: help!("TCP port to serve, 1 to 65535 [default: 80]"),
        set: |s, v| number(v, 1, u16::MAX, PORT).map(|n| s.port = n),
    },
    Opt {
        word: "sched",
        long: "sched",
        arg: Arg::Choice("SCHED", SCHED),
        help: help!(
            "HTTP scheduling policy (the scheduling paper): imt looks at receive after every \
               HTTP step, ist serves the whole run list in one pass [default: imt]"
        ),
        set: |s, v| {
            s.sched = [Sched::Imt, Sched::Ist][choice(v, SCHED, "expected imt or ist")?];
            Ok(())
        },
    },
    Opt {
        word: "cc",
        long: "cc",
        arg: Arg::Choice("CC", CC),
        help: help!(
            "TCP congestion control: cubic (Linux's default, unpaced; fastest on a clean link) \
               or bbr (paced; far faster through heavy random loss) [default: cubic]"
        ),
        set: |s, v| {
            s.cc = [Algorithm::Cubic, Algorithm::Bbr][choice(v, CC, "expected cubic or bbr")?];
            Ok(())
        },
    },
    Opt {
        word: "tcbs",
        long: "tcbs",
        arg: Arg::Value("TCBS"),
        help: help!(
            "Number of TCBs (most connections at once, per core), 1 to 1048576 (~9.3 KiB \
               each) [default: 1024]"
        ),
        set: |s, v| number(v, 1, MAX_TCBS, COUNT).map(|n| s.tcbs = n),
    },
    Opt {
        word: "max_per_ip",
        long: "max-per-ip",
        arg: Arg::Value("MAX_PER_IP"),
        help: help!(
            "Most connections from one client address at once (a SYN beyond it is refused \
               with a RST), 1 to 1048576 [default: half of --tcbs]"
        ),
        set: |s, v| number(v, 1, MAX_TCBS, COUNT).map(|n| s.max_per_ip = Some(n)),
    },
    Opt {
        word: "syn_backlog",
        long: "syn-backlog",
        arg: Arg::Value("SYN_BACKLOG"),
        help: help!(
            "Half-open connections held at once; past it SYNs are answered with SYN cookies \
               and no TCB (RFC 4987), 1 to 1048576 [default: half of --tcbs]"
        ),
        set: |s, v| number(v, 1, MAX_TCBS, COUNT).map(|n| s.syn_backlog = Some(n)),
    },
    Opt {
        word: "request_timeout",
        long: "request-timeout",
        arg: Arg::Value("SECONDS"),
        help: help!(
            "Seconds a client has from connecting to send a whole request head (then 408 and \
               close), 1 to 86400 [default: 10]"
        ),
        set: |s, v| number(v, 1, 86_400, SECONDS).map(|n| s.request_timeout_s = n),
    },
    Opt {
        word: "idle_timeout",
        long: "idle-timeout",
        arg: Arg::Value("SECONDS"),
        help: help!("Seconds an idle keep-alive connection is kept, 1 to 86400 [default: 30]"),
        set: |s, v| number(v, 1, 86_400, SECONDS).map(|n| s.idle_timeout_s = n),
    },
    Opt {
        word: "drain_grace",
        long: "drain-grace",
        arg: Arg::Value("SECONDS"),
        help: help!(
            "Seconds a graceful drain (serve: SIGTERM; the kernel: the ACPI power button) keeps \
               serving new connections while /healthz answers 503, 0 to 3600 [default: 5]"
        ),
        set: |s, v| number(v, 0, 3_600, DRAIN_GRACE).map(|n| s.drain_grace_s = n),
    },
    Opt {
        word: "drain_timeout",
        long: "drain-timeout",
        arg: Arg::Value("SECONDS"),
        help: help!(
            "Seconds from a drain's start until the connections left are reset and the server \
               stops, 1 to 86400 [default: 30]"
        ),
        set: |s, v| number(v, 1, 86_400, SECONDS).map(|n| s.drain_timeout_s = n),
    },
    Opt {
        word: "log",
        long: "access-log",
        arg: Arg::Flag("access"),
        help: help!(
            "A Common Log Format line per response (serve: on stdout; run and images: on the \
               kernel console, slow: a VM exit per byte)"
        ),
        // The kernel's `log=` is a list: `access` (this option) and `stats` (`--stats-log`
        // of run and build, a counters line every second).
        set: |s, v| {
            let (mut access, mut stats) = (s.log_access, s.log_stats);
            for item in v.split(',') {
                match item {
                    "access" => access = true,
                    "stats" => stats = true,
                    "none" | "" => {}
                    _ => return Err("expected access, stats or none, comma-separated"),
                }
            }
            (s.log_access, s.log_stats) = (access, stats);
            Ok(())
        },
    },
    Opt {
        word: "log_format",
        long: "log-format",
        arg: Arg::Choice("FORMAT", LOG_FORMAT),
        help: help!(
            "The access log's lines (--access-log; serve's --access-log-file): common, \
               combined (adds referer and user agent) or json (one object per line) \
               [default: common]"
        ),
        set: |s, v| {
            s.log_format =
                LogFormat::from_name(v).ok_or("expected common, combined or json")?;
            Ok(())
        },
    },
    Opt {
        word: "stats_page",
        long: "no-stats-page",
        arg: Arg::Flag("off"),
        help: help!(
            "Do not answer /.well-known/bareweb/ (HTML) and /.well-known/bareweb/stats (JSON)"
        ),
        set: |s, v| on_off(v).map(|b| s.stats_page = b),
    },
    Opt {
        word: "stats_allow",
        long: "stats-allow",
        arg: Arg::Value("A.B.C.D/N"),
        help: help!(
            "Only clients in this network may read the stats page, its JSON and /metrics \
               (others get 403), A.B.C.D/N or one address; 0.0.0.0/0: everyone [default: the site's \
               `[stats] allow`, else serve: the host side of the TAP only; run and images: \
               everyone]"
        ),
        set: |s, v| {
            let n =
                network(v, 32).map_err(|_| "expected A.B.C.D/N (N from 0 to 32) or one address")?;
            s.stats_allow = Some(n);
            Ok(())
        },
    },
    Opt {
        word: "proxy_protocol",
        long: "proxy-protocol",
        arg: Arg::List("A.B.C.D/N"),
        help: help!(
            "A load balancer that sends the PROXY protocol (HAProxy's send-proxy or \
               send-proxy-v2): connections from this network must begin with a PROXY header \
               (version 1 or 2), whose client address is then the one logged, limited by \
               --max-per-ip and checked by --stats-allow; from anywhere else a PROXY header \
               is refused. A.B.C.D/N or one address; repeat it (or separate with commas) \
               for up to 8 [default: none]"
        ),
        set: |s, v| {
            for item in v.split(',') {
                let (net, len) = network(item, 32)
                    .map_err(|_| "expected A.B.C.D/N (N from 0 to 32) or one address")?;
                if !s.proxy_protocol.add(net, len) {
                    return Err("at most 8 networks");
                }
            }
            Ok(())
        },
    },
    Opt {
        word: "mode",
        long: "mode",
        arg: Arg::Choice("MODE", MODE),
        help: help!(
            "How several cores share the NIC: `perqueue` (a queue pair and a whole server per \
               core; the default when the NIC has a queue per core) or `netcore` (the papers' \
               design: core 0 owns the NIC and hands connections to HTTP cores round robin). \
               With one core either is the one-core server (said at start)"
        ),
        set: |s, v| {
            let m =
                [Asked::NetCore, Asked::PerQueue][choice(v, MODE, "expected netcore or perqueue")?];
            s.mode = Some(m);
            Ok(())
        },
    },
    Opt {
        word: "bsp_http",
        long: "bsp-http",
        arg: Arg::Flag("on"),
        help: help!("Network-core mode: core 0 serves HTTP too"),
        set: |s, v| on_off(v).map(|b| s.bsp_http = b),
    },
    Opt {
        word: "udp_port",
        long: "udp-port",
        arg: Arg::Value("UDP_PORT"),
        help: help!(
            "Also serve the UDP paper's stateless protocol (docs/udp-protocol.md) on this UDP \
               port, 1 to 65535 [default: off]"
        ),
        set: |s, v| number(v, 1, u16::MAX, PORT).map(|n| s.udp.port = Some(n)),
    },
    Opt {
        word: "udp_burst",
        long: "udp-burst",
        arg: Arg::Value("N"),
        help: help!(
            "Packets the server sends per UDP GET (the paper's n, 4 to 8 there), 1 to 64 [default: 8]"
        ),
        set: |s, v| number(v, 1, 64, "expected a number from 1 to 64").map(|n| s.udp.burst = n),
    },
    Opt {
        word: "udp_ids",
        long: "udp-ids",
        arg: Arg::Value("N"),
        help: help!(
            "Request ids on the UDP server's stack (most UDP requests in progress at once), 1 \
               to 65535 [default: 5000]"
        ),
        set: |s, v| {
            number(v, 1, u16::MAX, "expected a number from 1 to 65535").map(|n| s.udp.ids = n)
        },
    },
    Opt {
        word: "udp_rate",
        long: "udp-rate",
        arg: Arg::Value("N"),
        help: help!(
            "UDP GETs answered per second per client address that proved it receives our \
               packets, 0 for no limit (unproven addresses: 16 per second) [default: 20000]"
        ),
        set: |s, v| {
            number(v, 0, u32::MAX, "expected a number from 0 to 4294967295").map(|n| s.udp.rate = n)
        },
    },
    Opt {
        word: "udp_paper",
        long: "udp-paper-mode",
        arg: Arg::Flag("on"),
        help: help!(
            "The UDP paper as written: no amplification bound, no address tokens, no rate \
               limit. A small spoofed GET then draws up to n large packets at its claimed \
               source: only on a network you trust (docs/security.md)"
        ),
        set: |s, v| on_off(v).map(|b| s.udp.paper = b),
    },
    Opt {
        word: "bond",
        long: "bond",
        arg: Arg::Choice("BOND", BOND),
        help: help!(
            "With two NICs or more (serve: --tap twice; run: --net twice), how they are used \
               (the bonding paper): `split` one NIC only receives and the others only send, \
               `spread` one receives and all send, `off` the first NIC alone [default: spread with two \
               NICs or more]"
        ),
        set: |s, v| {
            let m = [BondMode::Off, BondMode::Split, BondMode::Spread]
                [choice(v, BOND, "expected off, split or spread")?];
            s.bond = Some(m);
            Ok(())
        },
    },
    Opt {
        word: "bond_policy",
        long: "bond-policy",
        arg: Arg::Choice("BOND_POLICY", POLICY),
        help: help!(
            "How a connection's send NIC is chosen at its SYN: `per-client` (the paper's: one \
               NIC per client, clients spread evenly), `size` (frames without payload on one \
               NIC, data on the others), `least-queued` (the NIC with the fewest response bytes \
               waiting) [default: per-client]"
        ),
        set: |s, v| {
            s.bond_policy = [
                BondPolicy::PerClient,
                BondPolicy::Size,
                BondPolicy::LeastQueued,
            ][choice(v, POLICY, "expected per-client, size or least-queued")?];
            Ok(())
        },
    },
    Opt {
        word: "bond_monitor_ms",
        long: "bond-monitor-ms",
        arg: Arg::Value("MS"),
        help: help!(
            "Milliseconds between two readings of every NIC's link (failover), 1 to 60000 \
               [default: 100]"
        ),
        set: |s, v| {
            number(
                v,
                1,
                60_000,
                "expected a number of milliseconds from 1 to 60000",
            )
            .map(|n| s.bond_monitor_ms = n)
        },
    },
    Opt {
        word: "vip",
        long: "vip",
        arg: Arg::List("A.B.C.D"),
        help: help!(
            "A virtual address served besides --ip (direct server return, behind IPVS-DR, \
               keepalived or ECMP): TCP to it is answered from it, ARP for it never; repeat \
               it, or give a comma-separated list, at most 8 [default: none]"
        ),
        set: |s, v| {
            let mut vips = s.vips;
            for a in v.split(',') {
                let ip = addr(a.trim()).ok_or(VIP)?;
                if ip == s.ip || ip.is_unspecified() || ip.is_multicast() || ip.is_broadcast() {
                    return Err(VIP);
                }
                if !vips.add(ip) {
                    return Err(VIPS);
                }
            }
            s.vips = vips;
            Ok(())
        },
    },
    Opt {
        word: "tls_cert",
        long: "tls-cert",
        arg: Arg::Value("FILE"),
        help: help!(
            "HTTPS: the certificate chain, PEM, leaf first, for an ECDSA P-256 or P-384 key; \
               HTTPS is served on --https-port besides plain HTTP on --port"
        ),
        set: |s, v| file(v).map(|()| s.tls.cert = true),
    },
    Opt {
        word: "tls_key",
        long: "tls-key",
        arg: Arg::Value("FILE"),
        help: help!(
            "HTTPS: the certificate's private key, PEM (PKCS#8 or SEC1), ECDSA P-256 or P-384; \
               RSA is refused (no constant-time RSA signing without OS crypto libraries)"
        ),
        set: |s, v| file(v).map(|()| s.tls.key = true),
    },
    Opt {
        word: "https_port",
        long: "https-port",
        arg: Arg::Value("PORT"),
        help: help!("TCP port of HTTPS, 1 to 65535 [default: 443 with --tls-cert]"),
        set: |s, v| number(v, 1, u16::MAX, PORT).map(|n| s.tls.port = Some(n)),
    },
    Opt {
        word: "http_redirect",
        long: "http-redirect",
        arg: Arg::Flag("on"),
        help: help!(
            "Plain HTTP answers every request with a 308 to the same URL on https://, except \
               /.well-known/acme-challenge/ (ACME's HTTP-01 challenges); needs --tls-cert"
        ),
        set: |s, v| on_off(v).map(|b| s.tls.redirect = b),
    },
    Opt {
        word: "tls_min",
        long: "tls-min",
        arg: Arg::Choice("VERSION", TLS_MIN),
        help: help!("The lowest TLS version accepted [default: 1.2]"),
        set: |s, v| {
            s.tls.min13 = match v {
                "1.2" => false,
                "1.3" => true,
                _ => return Err("expected 1.2 or 1.3"),
            };
            Ok(())
        },
    },
    Opt {
        word: "hsts",
        long: "hsts",
        arg: Arg::Value("POLICY"),
        help: help!(
            "HTTPS responses carry Strict-Transport-Security: POLICY, max-age=SECONDS then \
               ;includeSubDomains and ;preload if wanted (never on plain HTTP); browsers keep \
               it for max-age, so it is off unless given [default: off]"
        ),
        set: |s, v| {
            bareweb_engine::http::Hsts::parse(v)
                .map(|h| s.tls.hsts = Some(h))
                .ok_or(bareweb_engine::http::HSTS_EXPECTED)
        },
    },
    Opt {
        word: "acme_domain",
        long: "acme-domain",
        arg: Arg::List("NAME"),
        help: help!(
            "Obtain and renew the HTTPS certificate over ACME for NAME (repeat it, or give a \
               comma-separated list, at most 8): HTTPS is served once the CA issued it, plain \
               HTTP meanwhile; NAME's A record must point at this server, ports 80 and 443 \
               reachable (docs/deploy.md) [default: no ACME]"
        ),
        // The whole list in one value (the CLI joins the option given again); a second
        // word replaces the first, so parsing a line twice changes nothing.
        set: |s, v| {
            let mut n = 0;
            for name in v.split(',') {
                if !acme_name_ok(name.trim()) || n >= 8 {
                    return Err(ACME_DOMAIN);
                }
                n += 1;
            }
            s.acme.domains = n;
            Ok(())
        },
    },
    Opt {
        word: "acme_directory",
        long: "acme-directory",
        arg: Arg::Value("URL"),
        help: help!(
            "The ACME CA's directory, https:// [default: Let's Encrypt's production, \
               https://acme-v02.api.letsencrypt.org/directory]"
        ),
        set: |s, v| match v.strip_prefix("https://") {
            Some(rest) if !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_graphic()) => {
                s.acme.directory = true;
                Ok(())
            }
            _ => Err("expected an https:// URL"),
        },
    },
    Opt {
        word: "acme_email",
        long: "acme-email",
        arg: Arg::Value("ADDR"),
        help: help!(
            "The contact address the ACME account is registered with (the CA writes about \
               expiring certificates and policy changes) [default: none]"
        ),
        set: |s, v| match v.split_once('@') {
            Some((user, host))
                if !user.is_empty()
                    && acme_name_ok(host)
                    && v.bytes().all(|b| b.is_ascii_graphic() && b != b',') =>
            {
                s.acme.email = true;
                Ok(())
            }
            _ => Err("expected an e-mail address, USER@HOST"),
        },
    },
    Opt {
        word: "acme_challenge",
        long: "acme-challenge",
        arg: Arg::Choice("KIND", ACME_CHALLENGE),
        help: help!("How the CA checks we hold the names [default: http-01]"),
        set: |s, v| {
            s.acme.tls_alpn = match v {
                "http-01" => false,
                "tls-alpn-01" => true,
                _ => return Err("expected http-01 or tls-alpn-01"),
            };
            Ok(())
        },
    },
    Opt {
        word: "dns",
        long: "dns",
        arg: Arg::List("A.B.C.D[:PORT]"),
        help: help!(
            "DNS servers the ACME client asks for the CA's address, needed when the \
               directory's host is a name (repeat it, or give a comma-separated list, at most \
               3; recursion is theirs) [default: none]"
        ),
        // The whole list in one value, as --acme-domain's.
        set: |s, v| {
            let mut dns = [None; 3];
            for a in v.split(',') {
                let a = a.trim();
                let (ip, port) = match a.split_once(':') {
                    Some((ip, p)) => (ip, p.parse::<u16>().ok().filter(|&p| p != 0).ok_or(DNS_SERVER)?),
                    None => (a, 53),
                };
                let ip = addr(ip).filter(|ip| !ip.is_unspecified()).ok_or(DNS_SERVER)?;
                let free = dns.iter_mut().find(|d| d.is_none()).ok_or(DNS_SERVER)?;
                *free = Some((ip, port));
            }
            s.acme.dns = dns;
            Ok(())
        },
    },
];

const ACME_CHALLENGE: &[Choice] = &[
    Choice {
        name: "http-01",
        help: help!("the answer at http://NAME/.well-known/acme-challenge/ on port 80"),
    },
    Choice {
        name: "tls-alpn-01",
        help: help!("a certificate of the answer's for ALPN acme-tls/1 on port 443"),
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use std::format;

    #[test]
    fn gw6_takes_a_routers_unicast_address_or_auto() {
        let mut s = Settings::default();
        assert_eq!(s.gateway6, None);
        assert_eq!(s.set("gw6", "fe80::1"), Some(Ok(())));
        let want: core::net::Ipv6Addr = "fe80::1".parse().unwrap();
        assert_eq!(s.gateway6, Some(want.octets()));
        assert_eq!(
            s.config([1; 16]).ipv6_gateway,
            Some(bareweb_engine::wire::Ipv6Address(want.octets()))
        );
        assert_eq!(s.set("gw6", "2001:db8::1"), Some(Ok(())));
        assert_eq!(s.set("gw6", "auto"), Some(Ok(())));
        assert_eq!((s.gateway6, s.config([1; 16]).ipv6_gateway), (None, None));
        s.set("gw6", "fe80::1").unwrap().unwrap();
        for bad in [
            "::",
            "::1",
            "ff02::2",
            "::ffff:10.0.0.1",
            "10.0.0.1",
            "fe80::1/64",
            "",
        ] {
            assert!(matches!(s.set("gw6", bad), Some(Err(_))), "{bad}");
            assert_eq!(s.gateway6, Some(want.octets()), "{bad}: kept");
        }
    }

    #[test]
    fn ip6_takes_slaac_off_or_a_global_address_and_its_prefix() {
        let mut s = Settings::tap();
        assert_eq!(s.set("ip6", "2001:db8::80/64"), Some(Ok(())));
        assert!(s.ip6);
        let want = Ip6Static {
            addr: "2001:db8::80"
                .parse::<core::net::Ipv6Addr>()
                .unwrap()
                .octets(),
            prefix: 64,
        };
        assert_eq!(s.ip6_static, Some(want));
        let cfg = s.config([0; 16]);
        assert_eq!(
            cfg.ipv6_static,
            Some((bareweb_engine::wire::Ipv6Address(want.addr), 64))
        );
        assert_eq!(s.set("ip6", "dhcp6"), Some(Ok(())));
        assert_eq!((s.ip6, s.ip6_static, s.ip6_dhcp6), (true, None, true));
        assert!(s.config([0; 16]).ipv6_dhcp6);
        assert_eq!(s.set("ip6", "slaac"), Some(Ok(())));
        assert_eq!((s.ip6, s.ip6_static, s.ip6_dhcp6), (true, None, false));
        s.set("ip6", "2001:db8::80/128").unwrap().unwrap();
        assert_eq!(s.set("ip6", "off"), Some(Ok(())));
        assert_eq!((s.ip6, s.ip6_static), (false, None));
        // Refused, each with its reason, and nothing changed.
        for (bad, why) in [
            ("2001:db8::80", "expected slaac"),
            ("2001:db8::80/0", "1 to 128"),
            ("2001:db8::80/129", "1 to 128"),
            ("2001:db8::zz/64", "expected slaac"),
            ("fe80::1/64", "link-local"),
            ("::/64", "unicast"),
            ("::1/128", "unicast"),
            ("ff02::1/64", "unicast"),
            ("::ffff:10.0.0.1/96", "unicast"),
            ("on", "expected slaac"),
        ] {
            match s.set("ip6", bad) {
                Some(Err(e)) => assert!(e.contains(why), "{bad}: {e}"),
                other => panic!("{bad}: {other:?}"),
            }
            assert_eq!((s.ip6, s.ip6_static), (false, None), "{bad}");
        }
    }

    #[test]
    fn names_are_unique_and_spelled_alike() {
        for (i, o) in OPTIONS.iter().enumerate() {
            for p in &OPTIONS[..i] {
                assert!(
                    o.word != p.word && o.long != p.long,
                    "{} / {}",
                    o.word,
                    p.word
                );
            }
            // Letters, then letters, digits (`ip6`) and the separator.
            let name = |n: &str, sep: u8| {
                n.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
                    && n.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == sep)
            };
            assert!(name(o.word, b'_'), "{}", o.word);
            assert!(name(o.long, b'-'), "{}", o.long);
            assert!(!o.help.ends_with('.'), "clap's style: no final period");
        }
    }

    /// The default a row's help shows in brackets, when it is a value (`[default: 1024]`,
    /// not `[default: half of --tcbs]`), is the one `Settings::default` has: the defaults
    /// live in `Settings::default` (and the engine's `Config::new`) alone. Every bracket
    /// that ends a help is written `[default: X]`, as clap writes its own.
    #[test]
    fn acme_lists_are_whole_values_so_a_second_parse_changes_nothing() {
        let mut s = Settings::default();
        for _ in 0..2 {
            assert_eq!(s.set("acme_domain", "a.test,b.test"), Some(Ok(())));
            assert_eq!(s.set("dns", "10.0.0.1,10.0.0.2:5353"), Some(Ok(())));
        }
        assert_eq!(s.acme.domains, 2);
        let dns: std::vec::Vec<_> = s.acme.dns_servers().collect();
        assert_eq!(
            dns,
            [
                (Ipv4Address([10, 0, 0, 1]), 53),
                (Ipv4Address([10, 0, 0, 2]), 5353)
            ]
        );
        assert!(s
            .set("dns", "1.1.1.1,2.2.2.2,3.3.3.3,4.4.4.4")
            .unwrap()
            .is_err());
    }

    #[test]
    fn help_shows_the_defaults() {
        let mut shown = 0;
        for o in &OPTIONS {
            if o.help.ends_with(']') {
                assert!(o.help.contains("[default: "), "{}: {}", o.word, o.help);
            }
            let Some(d) = o
                .help
                .strip_suffix(']')
                .and_then(|h| h.rsplit_once("[default: "))
                .map(|(_, d)| d)
            else {
                continue;
            };
            let mut s = Settings::default();
            if (o.set)(&mut s, d).is_ok() {
                assert_eq!(s, Settings::default(), "{}: [default: {d}]", o.word);
                shown += 1;
            }
        }
        assert!(shown >= 10, "{shown}");
    }

    #[test]
    fn tap_defaults_are_the_tables_words() {
        let mut s = Settings::default();
        for (w, v) in TAP_DEFAULTS {
            assert_eq!(s.set(w, v), Some(Ok(())), "{w}={v}");
        }
        assert_eq!(s, Settings::tap());
        assert_eq!(
            (s.ip, s.prefix, s.gateway),
            (Ipv4Address([10, 0, 0, 2]), 24, None)
        );
    }

    /// With nothing given, the engine gets its own defaults (and IPv6 on).
    #[test]
    fn defaults_are_the_engines() {
        let s = Settings::default();
        let own = Config {
            gateway: s.gateway,
            ipv6: true,
            ..Config::new(s.ip, s.prefix, [1; 16])
        };
        assert_eq!(format!("{:?}", s.config([1; 16])), format!("{own:?}"));
    }

    /// A network's own and broadcast addresses are not a host's (the server's or the host
    /// side's), on the command line and the kernel's alike; /31 and /32 have none.
    #[test]
    fn network_and_broadcast_addresses_are_refused() {
        let mut s = Settings::default();
        for bad in [
            "10.66.0.0/24",
            "10.66.0.255/24",
            "10.66.0.255",
            "10.0.0.0/8",
            "10.255.255.255/8",
            "192.168.1.3/30",
            "0.0.0.0/0",
            "224.0.0.1/24",
            "255.255.255.255/32",
        ] {
            assert!(s.set("ip", bad).unwrap().is_err(), "{bad}");
        }
        assert_eq!(s, Settings::default());
        for good in [
            "10.66.0.1/24",
            "10.66.0.254/24",
            "10.66.1.0/16",
            "10.0.0.0/31",
            "10.0.0.1/31",
            "10.0.0.7/32",
        ] {
            assert_eq!(s.set("ip", good), Some(Ok(())), "{good}");
        }
        let ip = Ipv4Address([10, 66, 0, 1]);
        assert!(peer_address(ip, 24, Ipv4Address([10, 66, 0, 2])).is_ok());
        assert!(peer_address(ip, 24, ip)
            .unwrap_err()
            .contains("server's own"));
        assert!(peer_address(ip, 24, Ipv4Address([10, 67, 0, 2]))
            .unwrap_err()
            .contains("outside"));
        assert!(peer_address(ip, 24, Ipv4Address([10, 66, 0, 255]))
            .unwrap_err()
            .contains("broadcast"));
        assert!(peer_address(ip, 16, Ipv4Address([10, 66, 200, 9])).is_ok());
    }

    #[test]
    fn a_refused_value_changes_nothing() {
        let mut s = Settings::default();
        assert_eq!(s.set("tcbs", "0"), Some(Err(COUNT)));
        assert_eq!(
            s.set("log", "access,loud"),
            Some(Err("expected access, stats or none, comma-separated"))
        );
        assert_eq!(s, Settings::default());
        assert_eq!(
            s.set("cores", "2"),
            None,
            "a boot-only word is not the table's"
        );
    }
}
