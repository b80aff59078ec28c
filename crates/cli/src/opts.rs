//! The options every server command shares, and the value types clap parses them into.
//!
//! One validation style: every value is parsed by a clap value parser into a typed value
//! before anything runs — addresses by std's `Ipv4Addr`/`SocketAddrV4` parsers, counts by
//! ranged integer parsers, choices by `ValueEnum` or the choices of a table row — so a bad
//! value is a clap usage error (exit 2, clap's format) naming the option. Checks that need
//! two options at once are [`ServerOpts::check`] and the commands' own `check`, run by
//! `main` right after parsing and reported the same way.
//!
//! [`ServerOpts`] is flattened into `serve`, `run` and `build` (for a bootable image it
//! becomes the image's built-in kernel command line), so the same option has the same name
//! and meaning in all three. Its options are not written here: they are the rows of
//! bareweb-settings' table ([`bareweb_settings::OPTIONS`]: name, value, help, what it
//! sets), turned into clap arguments at start-up ([`ServerOpts`]'s `clap::Args`); a value
//! is checked by the row's own parser, the one the kernel runs on its command line, so
//! `--tcbs 0` and `tcbs=0` are refused in the same words. The kernel command line as a
//! whole is checked with the kernel's own parser ([`kernel_cmdline`], the same crate), so
//! a word the kernel would refuse on its console is refused here before boot.

use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

use bareweb_engine::cores::plan::Asked;
use bareweb_engine::server::Config;
use bareweb_engine::wire::{EthernetAddress, Ipv4Address, Ipv6Address};
use bareweb_settings::{Arg, BadNetwork, Opt, Settings, OPTIONS};
use clap::builder::{PossibleValue, PossibleValuesParser};
use clap::{ArgAction, ArgMatches, ValueEnum};

/// The kernel's command-line parser, the one the kernel is built with.
pub use bareweb_settings::kernel as kernel_cmdline;

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
        match bareweb_settings::network(s, 24) {
            Ok((ip, prefix)) => Ok(Cidr {
                ip: Ipv4Addr::from(ip.0),
                prefix,
            }),
            Err(BadNetwork::Addr(ip)) => Err(format!("{ip:?} is not an IPv4 address (A.B.C.D)")),
            Err(BadNetwork::Prefix(len)) => {
                Err(format!("{len:?} is not a prefix length (0 to 32)"))
            }
        }
    }
}

/// `ADDR/PREFIX`: an IPv6 address an interface may hold (global unicast) and its link's
/// prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr6 {
    pub ip: Ipv6Address,
    pub prefix: u8,
}

impl FromStr for Cidr6 {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let c = bareweb_settings::ip6_cidr(s).map_err(|e| e.replace("--ip6 ", ""))?;
        Ok(Cidr6 {
            ip: Ipv6Address(c.addr),
            prefix: c.prefix,
        })
    }
}

impl fmt::Display for Cidr6 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.ip, self.prefix)
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

/// The command-line spelling of a `ValueEnum` value (`qboot`, `e1000`), for messages.
pub fn value_name(v: impl ValueEnum) -> String {
    v.to_possible_value()
        .map_or_else(String::new, |p| p.get_name().to_string())
}

/// The server's settings, shared by `serve`, `run` and `build` (bootable images) with the
/// same names and meanings: the options of bareweb-settings' table, as clap arguments (see
/// the `clap::Args` impl below). Every one is optional so `build` bakes only what was
/// given; the defaults are the kernel's (which are `run`'s) except where `serve` says
/// otherwise ([`Settings::tap`]).
#[derive(Clone, Debug, Default)]
pub struct ServerOpts {
    /// The options given: (index in [`OPTIONS`], the value as given; `""` for a flag), in
    /// the table's order.
    given: Vec<(usize, String)>,
    /// The options given over the kernel's defaults (for `serve`'s, see [`Self::config`]).
    pub settings: Settings,
}

/// The clap id of a table row: its long name with `_` for `-` (`max_per_ip`), the name
/// clap's derive gives a field, which other arguments' `conflicts_with` name.
fn clap_id(o: &Opt) -> String {
    o.long.replace('-', "_")
}

/// The clap argument of a table row: its long name, help, and a value parser that is the
/// row's own (for a choice, clap's list of the row's names).
fn clap_arg(o: &'static Opt) -> clap::Arg {
    // clap takes only 'static ids (without its "string" feature): a few bytes per row,
    // once per command built.
    let id: &'static str = Box::leak(clap_id(o).into_boxed_str());
    let a = clap::Arg::new(id).long(o.long).help(o.help);
    match o.arg {
        Arg::Flag(_) => a.action(ArgAction::SetTrue),
        Arg::Value(name) => {
            a.value_name(name)
                .value_parser(move |v: &str| -> Result<String, String> {
                    (o.set)(&mut Settings::default(), v)
                        .map(|()| v.to_string())
                        .map_err(String::from)
                })
        }
        Arg::List(name) => a.value_name(name).action(ArgAction::Append).value_parser(
            move |v: &str| -> Result<String, String> {
                (o.set)(&mut Settings::default(), v)
                    .map(|()| v.to_string())
                    .map_err(String::from)
            },
        ),
        Arg::Choice(name, choices) => a.value_name(name).value_parser(PossibleValuesParser::new(
            choices
                .iter()
                .map(|c| PossibleValue::new(c.name).help(c.help)),
        )),
    }
}

impl clap::Args for ServerOpts {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        OPTIONS.iter().fold(cmd, |c, o| c.arg(clap_arg(o)))
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

impl clap::FromArgMatches for ServerOpts {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut o = ServerOpts::default();
        o.update_from_arg_matches(m)?;
        Ok(o)
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        for (i, o) in OPTIONS.iter().enumerate() {
            let v = match o.arg {
                Arg::Flag(_) => m.get_flag(&clap_id(o)).then(String::new),
                Arg::List(_) => m
                    .get_many::<String>(&clap_id(o))
                    .map(|v| v.cloned().collect::<Vec<_>>().join(",")),
                _ => m.get_one::<String>(&clap_id(o)).cloned(),
            };
            if let Some(v) = v {
                (o.set)(&mut self.settings, o.word_value(&v)).map_err(|why| {
                    clap::Error::raw(
                        clap::error::ErrorKind::ValueValidation,
                        format!("--{} {v}: {why}\n", o.long),
                    )
                })?;
                self.given.retain(|(j, _)| *j != i);
                self.given.push((i, v));
                self.given.sort_by_key(|(j, _)| *j);
            }
        }
        Ok(())
    }
}

impl ServerOpts {
    /// The options parsed from `args` (CLI words, e.g. `["--tcbs", "64"]`), as `serve`
    /// would: for tests.
    #[cfg(test)]
    pub fn parse(args: &[&str]) -> Result<ServerOpts, clap::Error> {
        use clap::{Args, FromArgMatches};
        let cmd = ServerOpts::augment_args(clap::Command::new("serve"));
        let m = cmd.try_get_matches_from(std::iter::once("serve").chain(args.iter().copied()))?;
        ServerOpts::from_arg_matches(&m)
    }

    /// The value given for the option `--long` (`""` for a flag), if it was given.
    pub fn given(&self, long: &str) -> Option<&str> {
        self.given
            .iter()
            .find(|(i, _)| OPTIONS[*i].long == long)
            .map(|(_, v)| v.as_str())
    }

    /// The `[tls]` and `[acme]` tables of the site's `bareweb.toml` (`config`, else
    /// `SITE/bareweb.toml` when SITE is a directory): each key whose option the command
    /// line did not give is applied as if it had been (the command line wins). A value the
    /// option refuses is an error naming the file, line and key. A file that does not parse
    /// is left to the site's build, which reports it. Returns `[acme] ca`'s path, which is
    /// the command's own `--acme-ca` (not a table option), for the caller to apply when
    /// the command line gave none. `--tls-cert`/`--tls-key` on the command line set the
    /// file's `[acme]` aside.
    pub fn apply_site_tls(
        &mut self,
        site: &std::path::Path,
        config: Option<&std::path::Path>,
    ) -> Result<Option<std::path::PathBuf>, String> {
        let file = match config {
            Some(f) => f.to_path_buf(),
            None if site.is_dir() => site.join(bareweb_site::CONFIG_NAME),
            None => return Ok(None),
        };
        if !file.is_file() {
            return Ok(None);
        }
        let Ok(c) = bareweb_site::config::Config::read(&file) else {
            return Ok(None);
        };
        let mut ca = None;
        // A certificate given on the command line stands in for the file's [acme] (which
        // would otherwise conflict with it): the command line wins.
        let cli_cert = self.given("tls-cert").is_some() || self.given("tls-key").is_some();
        for k in &c.tls {
            if k.table == "acme" && cli_cert {
                continue;
            }
            if k.long == "acme-ca" {
                ca = Some(std::path::PathBuf::from(&k.value));
                continue;
            }
            if self.given(k.long).is_some() {
                continue;
            }
            let i = OPTIONS
                .iter()
                .position(|o| o.long == k.long)
                .expect("[tls] and [acme] keys name options of the table");
            if k.long == "tls-key" && site.is_dir() {
                let inside = |p: &std::path::Path| {
                    let root = std::fs::canonicalize(site).ok()?;
                    Some(std::fs::canonicalize(p).ok()?.starts_with(root))
                };
                if inside(std::path::Path::new(&k.value)) == Some(true) {
                    return Err(format!(
                        "{}:{}: [tls] key = {:?} is inside the site {}: it would be served to \
                         anyone; keep the private key outside the site's directory",
                        file.display(),
                        k.line,
                        k.value,
                        site.display()
                    ));
                }
            }
            let value = OPTIONS[i].word_value(&k.value);
            match self.settings.set(OPTIONS[i].word, value) {
                Some(Ok(())) => {
                    self.given.push((i, k.value.clone()));
                    self.given.sort_by_key(|(j, _)| *j);
                }
                Some(Err(why)) => {
                    return Err(format!(
                        "{}:{}: [{}] {} = {:?}: {why}",
                        file.display(),
                        k.line,
                        k.table,
                        k.key,
                        k.value
                    ))
                }
                None => unreachable!("every option has its word"),
            }
        }
        Ok(ca)
    }

    /// Checks that need more than one option.
    pub fn check(&self) -> Result<(), String> {
        let tls = self.settings.tls;
        if tls.cert != tls.key {
            return Err("HTTPS needs both --tls-cert and --tls-key".into());
        }
        let acme = self.settings.acme;
        if acme.on() && tls.cert {
            return Err(
                "--acme-domain obtains the certificate itself: give it or --tls-cert, not both"
                    .into(),
            );
        }
        let acme_given = ["acme-directory", "acme-email", "acme-challenge", "dns"]
            .iter()
            .any(|l| self.given(l).is_some());
        if acme_given && !acme.on() {
            return Err(
                "--acme-directory, --acme-email, --acme-challenge and --dns need --acme-domain"
                    .into(),
            );
        }
        if acme.on() {
            let (lo, hi) = bareweb_engine::acme::TCP_PORTS;
            for (name, port) in [
                ("--port", self.serve_settings().port),
                ("--https-port", tls.port()),
            ] {
                if (lo..=hi).contains(&port) {
                    return Err(format!(
                        "{name} {port}: ports {lo}-{hi} are the ACME client's own connections"
                    ));
                }
            }
            if let Some(p) = self
                .settings
                .udp
                .port
                .filter(|&p| p >= bareweb_engine::acme::UDP_PORTS.0)
            {
                return Err(format!(
                    "--udp-port {p}: ports {}-65535 are the ACME client's DNS queries'",
                    bareweb_engine::acme::UDP_PORTS.0
                ));
            }
        }
        if tls.any() && !tls.cert && !acme.on() {
            return Err(
                "--https-port, --http-redirect, --tls-min and --hsts need --tls-cert and --tls-key \
                 (or --acme-domain)"
                    .into(),
            );
        }
        if (tls.cert || acme.on()) && tls.port() == self.serve_settings().port {
            return Err(format!(
                "--https-port {} is --port too: give HTTPS a port of its own",
                tls.port()
            ));
        }
        if self.settings.bsp_http && self.settings.mode != Some(Asked::NetCore) {
            return Err("--bsp-http only applies to --mode netcore".into());
        }
        let udp_tuning = ["udp-burst", "udp-ids", "udp-rate", "udp-paper-mode"]
            .iter()
            .any(|l| self.given(l).is_some());
        if udp_tuning && self.settings.udp.port.is_none() {
            return Err(
                "--udp-burst, --udp-ids, --udp-rate and --udp-paper-mode need --udp-port".into(),
            );
        }
        Ok(())
    }

    /// For `run` and `build`, what `serve` checks only once it starts: ACME's directory
    /// named by a host name needs `--dns` to look it up, or DHCP's lease (`dhcp`: `--ip
    /// dhcp`, or a bootable image's default), refused before anything is built or booted.
    pub fn check_bare(&self, dhcp: bool) -> Result<(), String> {
        crate::acme::check_directory_host(self, dhcp || self.settings.dhcp)
    }

    /// Whether any option was given (a plain site image carries none of them).
    pub fn any(&self) -> bool {
        !self.given.is_empty()
    }

    /// `--mode`, as the other commands' `ModeArg`.
    pub fn mode(&self) -> Option<ModeArg> {
        self.settings.mode.map(|m| match m {
            Asked::NetCore => ModeArg::Netcore,
            Asked::PerQueue => ModeArg::Perqueue,
        })
    }

    /// ` and bwudp://IP:PORT/` for a start banner when the UDP protocol is served.
    pub fn udp_banner(&self, host: impl fmt::Display) -> String {
        match self.settings.udp.port {
            Some(p) => format!(
                " and bwudp://{host}:{p}/{}",
                if self.settings.udp.paper {
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
        use bareweb_engine::bond::Mode;
        let mode = match (self.settings.bond, nics) {
            (Some(Mode::Off), _) => return Ok(None),
            (Some(_), n) if n < 2 => {
                return Err(format!(
                    "--bond {} needs two NICs or more (give --tap or --net twice)",
                    self.given("bond").unwrap_or_default()
                ))
            }
            (None, n) if n < 2 => return Ok(None),
            (b, _) => b.unwrap_or(Mode::Spread),
        };
        Ok(Some((
            mode,
            self.settings.bond_policy,
            self.settings.bond_monitor_ms,
        )))
    }

    /// The engine configuration for `serve`: the options given over `serve`'s defaults
    /// ([`Settings::tap`]: 10.0.0.2/24, no router).
    pub fn config(&self, isn_key: [u8; 16]) -> Config {
        self.serve_settings().config(isn_key)
    }

    /// `serve`'s settings: the options given over [`Settings::tap`].
    pub fn serve_settings(&self) -> Settings {
        let mut s = Settings::tap();
        for (i, v) in &self.given {
            let o = &OPTIONS[*i];
            // `serve` refuses dhcp (ServeArgs::check); every value was taken once already.
            let _ = (o.set)(&mut s, o.word_value(v));
        }
        s
    }

    /// The kernel command-line words for the options given (the kernel's defaults stand
    /// for the others), in the table's order; `log_stats` (`--stats-log`, of run and
    /// build) joins `--access-log` in the kernel's one `log=` word.
    pub fn kernel_words(&self, log_stats: bool) -> Vec<String> {
        let mut w = Vec::new();
        for (i, o) in OPTIONS.iter().enumerate() {
            let given = self.given.iter().find(|(j, _)| *j == i);
            let value = match (o.word, given, log_stats) {
                ("log", Some(_), true) => "access,stats",
                ("log", None, true) => "stats",
                // The files' bytes go in the image (`tls_payload`); the kernel gets their
                // names, for its console, without the directories or white space.
                ("tls_cert" | "tls_key", Some((_, v)), _) => {
                    let name = std::path::Path::new(v)
                        .file_name()
                        .map_or("image".into(), |n| n.to_string_lossy());
                    let name: String = name
                        .chars()
                        .take(64)
                        .map(|c| if c.is_ascii_graphic() { c } else { '_' })
                        .collect();
                    w.push(format!("{}={name}", o.word));
                    continue;
                }
                // One kernel word: the policy, or a list (`a.test, b.test`: each element is
                // trimmed by the option), without its optional white space.
                ("hsts" | "acme_domain" | "dns", Some((_, v)), _) => {
                    let v: String = v.chars().filter(|c| !c.is_whitespace()).collect();
                    w.push(format!("{}={v}", o.word));
                    continue;
                }
                (_, Some((_, v)), _) => o.word_value(v),
                (_, None, _) => continue,
            };
            w.push(format!("{}={value}", o.word));
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
        use crate::load_common::XdpQueueArg;
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
        // The settings crate's parser, in the CLI's words.
        assert_eq!(
            "10.0.0.2/33".parse::<Cidr>(),
            Err("\"33\" is not a prefix length (0 to 32)".into())
        );
        assert_eq!(
            "10.0.0/8".parse::<Cidr>(),
            Err("\"10.0.0\" is not an IPv4 address (A.B.C.D)".into())
        );
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
        use bareweb_engine::bond::{Mode, Policy};
        use bareweb_engine::server::Sched;
        use bareweb_engine::tcp::Algorithm;
        let o = ServerOpts::parse(&[
            "--ip=10.1.2.3/16",
            "--gw=none",
            "--port=8080",
            "--sched=ist",
            "--cc=cubic",
            "--tcbs=64",
            "--max-per-ip=8",
            "--syn-backlog=16",
            "--request-timeout=5",
            "--idle-timeout=7",
            "--access-log",
            "--no-stats-page",
            "--stats-allow=10.9.0.0/16",
            "--mode=netcore",
            "--bsp-http",
            "--udp-port=8081",
            "--udp-burst=4",
            "--udp-ids=100",
            "--udp-rate=0",
            "--udp-paper-mode",
            "--bond=split",
            "--bond-policy=least-queued",
            "--bond-monitor-ms=40",
        ])
        .unwrap();
        let line = o.kernel_words(true).join(" ");
        let s = kernel_settings(&line).unwrap();
        assert_eq!(
            s.udp.config(),
            o.settings.udp.config(),
            "the kernel's UDP settings are serve's"
        );
        assert_eq!(s.bond, Some(Mode::Split));
        assert_eq!(s.bond_policy, Policy::LeastQueued);
        assert_eq!(s.bond_monitor_ms, 40);
        assert_eq!(s.ip, Ipv4Address([10, 1, 2, 3]));
        assert_eq!((s.prefix, s.gateway, s.port), (16, None, 8080));
        assert_eq!((s.sched, s.tcbs), (Sched::Ist, 64));
        assert_eq!(s.cc, Algorithm::Cubic);
        assert_eq!((s.max_per_ip, s.syn_backlog), (Some(8), Some(16)));
        assert_eq!((s.request_timeout_s, s.idle_timeout_s), (5, 7));
        assert!(s.log_access && s.log_stats && !s.stats_page && s.bsp_http);
        assert_eq!(s.mode, Some(kernel_cmdline::CoreMode::NetCore));
        assert_eq!(s.stats_allow, Some((Ipv4Address([10, 9, 0, 0]), 16)));
        let one = ServerOpts::parse(&["--stats-allow", "10.0.2.2"]).unwrap();
        assert_eq!(
            kernel_settings(&one.kernel_words(false).join(" "))
                .unwrap()
                .stats_allow,
            Some((Ipv4Address([10, 0, 2, 2]), 32)),
            "an address alone is that one client"
        );
        for bad in ["10.0.2.0/33", "10.0.2/8"] {
            assert!(ServerOpts::parse(&["--stats-allow", bad]).is_err(), "{bad}");
        }
        let twice = ServerOpts::parse(&[
            "--proxy-protocol",
            "10.0.3.0/24",
            "--proxy-protocol=10.0.4.7",
        ])
        .unwrap();
        assert_eq!(
            twice.kernel_words(false),
            ["proxy_protocol=10.0.3.0/24,10.0.4.7"],
            "a repeated option is one kernel word"
        );
        assert_eq!(
            kernel_settings(&twice.kernel_words(false).join(" "))
                .unwrap()
                .proxy_protocol
                .nets(),
            &[([10, 0, 3, 0], 24), ([10, 0, 4, 7], 32)][..]
        );
        // A list written with spaces is one kernel word the kernel reads as the option did.
        let spaced = ServerOpts::parse(&[
            "--acme-domain",
            "a.test, b.test",
            "--dns",
            "10.0.0.1, 10.0.0.2",
        ])
        .unwrap();
        let words = spaced.kernel_words(false);
        assert_eq!(
            words,
            ["acme_domain=a.test,b.test", "dns=10.0.0.1,10.0.0.2"]
        );
        let k = kernel_settings(&words.join(" ")).unwrap();
        assert_eq!((k.acme.domains, k.acme.dns_servers().count()), (2, 2));
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
    fn ipv6_is_on_on_a_bond_too() {
        let bonded = ServerOpts::parse(&["--bond", "split"]).unwrap();
        bonded.check().unwrap();
        assert!(bonded.serve_settings().ip6);
        let off = ServerOpts::parse(&["--bond", "split", "--ip6", "off"]).unwrap();
        off.check().unwrap();
        assert!(!off.serve_settings().ip6);
    }

    #[test]
    fn ipv6_is_on_for_serve_and_the_bare_machine_alike() {
        assert!(ServerOpts::parse(&[]).unwrap().serve_settings().ip6);
        assert!(kernel_settings("").unwrap().server.ip6);
        let off = ServerOpts::parse(&["--ip6", "off"]).unwrap();
        assert!(!off.serve_settings().ip6);
        assert_eq!(off.kernel_words(false), ["ip6=off"]);
        assert!(!kernel_settings("ip6=off").unwrap().server.ip6);
    }

    /// An example value of every shared option, unlike its default, and one out of its
    /// range (or not one of its choices); a flag has none of either.
    const EXAMPLES: &[(&str, &str, &str)] = &[
        ("ip", "10.1.2.3/16", "10.0.0.2/33"),
        ("gw", "10.1.0.1", "10.0.0.256"),
        ("ip6", "off", "on"),
        ("gw6", "fe80::1", "ff02::2"),
        ("ip6-secret", "000102030405060708090a0b0c0d0e0f", "0001"),
        ("port", "8080", "0"),
        ("sched", "ist", "rr"),
        ("cc", "bbr", "reno"),
        ("tcbs", "64", "1048577"),
        ("max-per-ip", "8", "0"),
        ("syn-backlog", "16", "0"),
        ("request-timeout", "5", "86401"),
        ("idle-timeout", "7", "0"),
        ("drain-grace", "0", "3601"),
        ("drain-timeout", "60", "0"),
        ("access-log", "", ""),
        ("log-format", "json", "xml"),
        ("no-stats-page", "", ""),
        ("stats-allow", "10.9.0.0/16", "10.9.0.0/33"),
        ("proxy-protocol", "10.9.0.0/16,10.0.0.5", "10.9.0.0/33"),
        ("mode", "netcore", "fast"),
        ("bsp-http", "", ""),
        ("udp-port", "8081", "65536"),
        ("udp-burst", "4", "65"),
        ("udp-ids", "100", "0"),
        ("udp-rate", "0", "-1"),
        ("udp-paper-mode", "", ""),
        ("bond", "split", "on"),
        ("bond-policy", "size", "random"),
        ("bond-monitor-ms", "40", "60001"),
        ("vip", "10.0.0.100,10.0.0.101", "10.0.0.300"),
        ("tls-cert", "cert.pem", ""),
        ("tls-key", "key.pem", ""),
        ("https-port", "8443", "65536"),
        ("http-redirect", "", ""),
        ("tls-min", "1.3", "1.1"),
        ("hsts", "max-age=31536000; includeSubDomains", "max-age=1y"),
        (
            "acme-domain",
            "example.org,www.example.org",
            "*.example.org",
        ),
        (
            "acme-directory",
            "https://ca.test:14000/dir",
            "http://ca.test/dir",
        ),
        ("acme-email", "ops@example.org", "ops"),
        ("acme-challenge", "tls-alpn-01", "dns-01"),
        ("dns", "10.0.0.1,10.0.0.3:5353", "10.0.0.1:0"),
    ];

    /// Every option of the table, one at a time: the CLI's value becomes kernel words,
    /// the kernel's parser gives the same settings `serve` has, and so the same engine
    /// `Config`; an out-of-range value is refused by `serve` and by the kernel in the same
    /// words (a choice: clap lists the possible values, the kernel names them).
    #[test]
    fn every_option_round_trips() {
        assert_eq!(EXAMPLES.len(), OPTIONS.len(), "an example for every row");
        let key = [7; 16];
        for (o, &(long, good, bad)) in OPTIONS.iter().zip(EXAMPLES) {
            assert_eq!(o.long, long, "EXAMPLES in the table's order");
            assert!(
                !o.help.is_empty(),
                "--{long}: the help feature is on for the CLI"
            );
            let flag = matches!(o.arg, Arg::Flag(_));
            // What the option needs to be given (check()'s combinations).
            let mut args = vec![format!("--{long}")];
            if !flag {
                args.push(good.to_string());
            }
            let needs: &[&str] = match long {
                "bsp-http" => &["--mode", "netcore"],
                l if l.starts_with("udp-") && l != "udp-port" => &["--udp-port", "9"],
                "tls-cert" => &["--tls-key", "k.pem"],
                "tls-key" => &["--tls-cert", "c.pem"],
                "https-port" | "http-redirect" | "tls-min" | "hsts" => {
                    &["--tls-cert", "c.pem", "--tls-key", "k.pem"]
                }
                "acme-directory" | "acme-email" | "acme-challenge" | "dns" => {
                    &["--acme-domain", "example.org"]
                }
                _ => &[],
            };
            args.extend(needs.iter().map(|s| s.to_string()));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let cli = ServerOpts::parse(&args).unwrap();
            cli.check().unwrap();
            assert_ne!(
                cli.settings,
                Settings::default(),
                "--{long} {good} sets nothing"
            );
            let words = cli.kernel_words(false);
            assert!(
                words.iter().any(|w| w.starts_with(&format!("{}=", o.word))),
                "{words:?}"
            );
            if bareweb_settings::TLS_WORDS.contains(&o.word) && !flag && !bad.is_empty() {
                assert!(ServerOpts::parse(&[&format!("--{long}={bad}")]).is_err());
            }
            let kernel = kernel_settings(&words.join(" ")).unwrap();
            assert_eq!(kernel.server, cli.settings, "--{long} {good}: {words:?}");
            assert_eq!(
                format!("{:?}", kernel.config(key)),
                format!("{:?}", cli.settings.config(key)),
                "--{long} {good}"
            );
            // serve's Config differs from the kernel's by the TAP defaults alone.
            let mut tap = kernel.server;
            if cli.given("ip").is_none() {
                (tap.ip, tap.prefix) = (Ipv4Address([10, 0, 0, 2]), 24);
            }
            if cli.given("gw").is_none() {
                tap.gateway = None;
            }
            assert_eq!(
                format!("{:?}", cli.config(key)),
                format!("{:?}", tap.config(key)),
                "--{long} {good}"
            );
            if flag {
                continue;
            }
            let refused = ServerOpts::parse(&[&format!("--{long}={bad}")]).unwrap_err();
            let mut why = Vec::new();
            kernel_cmdline::parse(&format!("{}={bad}", o.word), |c| why.push(c.why));
            assert_eq!(why.len(), 1, "{}={bad}", o.word);
            let said = refused.to_string();
            assert!(said.contains(&format!("--{long}")), "{said}");
            match o.arg {
                Arg::Choice(_, choices) => {
                    for c in choices {
                        assert!(said.contains(c.name) && why[0].contains(c.name), "{said}");
                    }
                }
                _ => assert!(said.contains(why[0]), "{said} / {}", why[0]),
            }
        }
    }

    #[test]
    fn bonding_needs_two_nics() {
        let o = |bond: Option<&str>| match bond {
            Some(b) => ServerOpts::parse(&["--bond", b]).unwrap(),
            None => ServerOpts::default(),
        };
        use bareweb_engine::bond::{Mode, Policy};
        assert_eq!(o(None).bonding(1), Ok(None));
        assert_eq!(
            o(None).bonding(2),
            Ok(Some((Mode::Spread, Policy::PerClient, 100)))
        );
        assert_eq!(o(Some("off")).bonding(2), Ok(None));
        assert!(o(Some("split"))
            .bonding(1)
            .unwrap_err()
            .contains("--bond split needs two NICs"));
        assert_eq!(
            o(Some("split")).bonding(3).unwrap().map(|b| b.0),
            Some(Mode::Split)
        );
    }

    #[test]
    fn the_sites_tls_table_fills_what_the_command_line_leaves() {
        let d = std::env::temp_dir().join(format!("bareweb-opts-tls-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let toml = d.join("bareweb.toml");
        std::fs::write(
            &toml,
            "[tls]\ncert = \"pki/cert.pem\"\nkey = \"pki/key.pem\"\nhttps_port = 8443\n\
             http_redirect = true\nmin = \"1.3\"\nhsts = \"max-age=300\"\n",
        )
        .unwrap();
        let mut o = ServerOpts::parse(&["--https-port", "9443"]).unwrap();
        o.apply_site_tls(&d, None).unwrap();
        o.check().unwrap();
        let cert = d.join("pki/cert.pem");
        assert_eq!(
            o.given("tls-cert"),
            Some(cert.to_str().unwrap()),
            "beside the file"
        );
        assert_eq!(o.settings.tls.port, Some(9443), "the command line wins");
        assert!(o.settings.tls.redirect && o.settings.tls.min13);
        assert_eq!(o.settings.tls.hsts.map(|h| h.max_age), Some(300));
        assert!(o
            .kernel_words(false)
            .contains(&"hsts=max-age=300".to_string()));
        // A value the option refuses names the file, the line and the key.
        std::fs::write(
            &toml,
            "[tls]\ncert = \"c.pem\"\nkey = \"k.pem\"\nhsts = \"1 year\"\n",
        )
        .unwrap();
        let mut o = ServerOpts::parse(&[]).unwrap();
        let e = o.apply_site_tls(&d, None).unwrap_err();
        assert!(
            e.contains("bareweb.toml:4: [tls] hsts = \"1 year\": expected max-age"),
            "{e}"
        );
        // A private key the site would serve is refused.
        std::fs::write(d.join("k.pem"), "x").unwrap();
        std::fs::write(&toml, "[tls]\ncert = \"c.pem\"\nkey = \"k.pem\"\n").unwrap();
        let mut o = ServerOpts::parse(&[]).unwrap();
        let e = o.apply_site_tls(&d, None).unwrap_err();
        assert!(e.contains("it would be served"), "{e}");
        // Only a key without the certificate: the usual check refuses it.
        std::fs::write(&toml, "[tls]\nhttps_port = 8443\n").unwrap();
        let mut o = ServerOpts::parse(&[]).unwrap();
        o.apply_site_tls(&d, None).unwrap();
        assert!(o.check().unwrap_err().contains("need --tls-cert"));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn the_sites_acme_table_applies_under_the_command_line() {
        let d = std::env::temp_dir().join(format!("bareweb-opts-acme-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let toml = d.join("bareweb.toml");
        std::fs::write(
            &toml,
            "[acme]\ndomains = [\"a.test\", \"b.test\"]\nemail = \"ops@a.test\"\n\
             challenge = \"tls-alpn-01\"\ndns = [\"10.0.0.1\", \"10.0.0.9:5353\"]\n\
             ca = \"ca.pem\"\n",
        )
        .unwrap();
        let mut o = ServerOpts::parse(&["--acme-email", "me@a.test"]).unwrap();
        let ca = o.apply_site_tls(&d, None).unwrap();
        o.check().unwrap();
        assert_eq!(ca, Some(d.join("ca.pem")), "the CA beside the file");
        assert_eq!(o.given("acme-domain"), Some("a.test,b.test"));
        assert_eq!(o.settings.acme.domains, 2);
        assert_eq!(
            o.given("acme-email"),
            Some("me@a.test"),
            "the command line wins"
        );
        assert!(o.settings.acme.tls_alpn);
        assert_eq!(o.settings.acme.dns_servers().count(), 2);
        // A value the option refuses names the file, the line, the table and the key.
        std::fs::write(
            &toml,
            "[acme]\ndomains = \"a.test\"\nchallenge = \"dns-01\"\n",
        )
        .unwrap();
        let mut o = ServerOpts::parse(&[]).unwrap();
        let e = o.apply_site_tls(&d, None).unwrap_err();
        assert!(
            e.contains("bareweb.toml:3: [acme] challenge = \"dns-01\""),
            "{e}"
        );
        // A certificate on the command line wins over the file's [acme].
        let mut o = ServerOpts::parse(&["--tls-cert", "c.pem", "--tls-key", "k.pem"]).unwrap();
        assert_eq!(o.apply_site_tls(&d, None).unwrap(), None);
        assert!(!o.settings.acme.on());
        o.check().unwrap();
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn combinations_are_checked() {
        let bsp = ServerOpts::parse(&["--bsp-http"]).unwrap();
        assert!(bsp.check().is_err());
    }
}
