//! What every load client shares (`bareweb load`: the socket client [`crate::load`], the
//! bare HTTP client [`crate::load_bare`], the UDP protocol's [`crate::load_udp`]): the
//! options, the progress line and the report's printing, and the bare clients' TAP and MAC.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use bareweb_engine::iface::{FetchLink, FetchV6};
use bareweb_engine::wire::{EthernetAddress, Ipv4Address, Ipv6Address};
use bareweb_host::{netif, Tap};

/// `bareweb load`: fetch URLs from a server under a bounded load and report like http_load.
#[derive(clap::Args)]
pub struct LoadArgs {
    /// URLs to fetch (http://host[:port]/path, https://host[:port]/path); all must name the
    /// same scheme, host and port. In session mode, one URL naming the server.
    pub urls: Vec<String>,
    /// Read more URLs from a file, one per line (http_load's url_file).
    #[arg(long)]
    pub url_file: Option<PathBuf>,
    /// Parallel mode: keep N fetches in flight (the mode when no other is given)
    /// [default: 1]
    #[arg(long, conflicts_with_all = ["rate", "sessions_rate"], value_parser = at_least_one)]
    pub parallel: Option<usize>,
    /// Rate mode: begin R fetches per second.
    #[arg(long, conflicts_with = "sessions_rate", value_parser = positive)]
    pub rate: Option<f64>,
    /// Session mode: R Surge sessions arrive per second (needs --surge).
    #[arg(long, requires = "surge", value_parser = positive)]
    pub sessions_rate: Option<f64>,
    /// The site written by `bareweb surge-site` (its surge.tsv gives files and popularity).
    #[arg(long)]
    pub surge: Option<PathBuf>,
    /// Session mode: multiply think times by this (Surge's are seconds long).
    #[arg(long, default_value_t = 1.0, value_parser = not_negative)]
    pub think_scale: f64,
    /// Reuse connections (HTTP/1.1 keep-alive) instead of one connection per fetch.
    #[arg(long, short = 'k')]
    pub keepalive: bool,
    /// Most fetches to begin (parallel and rate modes).
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub fetches: u64,
    /// Most sessions to begin (session mode).
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub sessions: u64,
    /// The run ends after this many seconds at most.
    #[arg(long, default_value_t = 10.0, value_parser = positive)]
    pub seconds: f64,
    /// Seconds a connect or a response may go without progress.
    #[arg(long, default_value_t = 10.0, value_parser = positive)]
    pub timeout: f64,
    /// Most connections open at once [default: N in parallel mode, else 2048]
    #[arg(long, value_parser = at_least_one)]
    pub max_conns: Option<usize>,
    /// Seed of every random choice (URLs, sessions).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Check each body's length and SHA-256 against the files under this directory. Give it
    /// twice (two versions of a site, across a rolling update) and a body must equal the
    /// file of one of them, whole.
    #[arg(long)]
    pub verify: Vec<PathBuf>,
    /// The status a good response has (as `bareweb get --expect-status`).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u16).range(100..=599))]
    pub expect_status: u16,
    /// Print the report as JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON report to this file.
    #[arg(long)]
    pub json_out: Option<PathBuf>,
    /// No progress lines on stderr.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// https:// URLs: trust the CA certificates of this PEM file instead of the Web PKI's
    /// roots. The server's certificate is always verified (chain, name, dates).
    #[arg(long, value_name = "FILE", conflicts_with = "udp")]
    pub cacert: Option<PathBuf>,
    /// Connect to ADDR for the URLs naming HOST:PORT (curl's syntax; repeatable): the name
    /// stays HOST in the Host field and, over HTTPS, in SNI and the certificate's check.
    #[arg(long, value_name = "HOST:PORT:ADDR", conflicts_with = "udp")]
    pub resolve: Vec<bareweb_loadgen::Resolve>,
    #[command(flatten)]
    pub udp: UdpLoadArgs,
}

/// The UDP protocol's load options (with `--udp`), and the bare clients' link (`--tap`,
/// `--xdp`, `--ip`...).
#[derive(clap::Args, Debug, Clone)]
#[command(group = clap::ArgGroup::new("bare_link").args(["tap", "xdp"]))]
pub struct UdpLoadArgs {
    /// Load the UDP paper's stateless UDP protocol: the URLs are bwudp://HOST[:PORT]/PATH.
    #[arg(long)]
    pub udp: bool,
    /// The paper's schedule: every F units of 1/4 ms, start --maxreq requests (9 and 8:
    /// 3,555 requests per second), 1 to 4000000.
    #[arg(long, value_name = "F", requires_all = ["udp", "maxreq"],
          value_parser = clap::value_parser!(u32).range(1..=4_000_000))]
    pub frequency: Option<u32>,
    /// Requests per --frequency period, 1 to 100000.
    #[arg(long, value_name = "M", requires_all = ["udp", "frequency"],
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub maxreq: Option<u32>,
    /// Seconds before a GET is sent again (doubling per timeout, up to 1 s).
    #[arg(long, default_value_t = 0.05, requires = "udp", value_parser = rto)]
    pub udp_rto: f64,
    /// Timeouts in a row without a new packet before a request is given up, 1 to 100.
    #[arg(long, default_value_t = 8, requires = "udp",
          value_parser = clap::value_parser!(u32).range(1..=100))]
    pub udp_tries: u32,
    /// Send initial GETs unpadded (the paper's client; a server with the amplification
    /// bound then answers an unproven address with the Get-Ack only).
    #[arg(long, requires = "udp")]
    pub no_pad: bool,
    /// The bare client: speak through this TAP device with the engine's own frames (no
    /// OS stack in the path); created if missing and brought up, but not addressed or
    /// bridged (put it on the server's link yourself, e.g. a bridge with the server's TAP).
    /// With --udp the UDP protocol's client, else the bare HTTP client (its own TCP).
    #[arg(long, value_parser = crate::opts::ifname)]
    pub tap: Option<String>,
    /// The bare HTTP client on AF_XDP: an XDP program on IFACE steers the frames for
    /// --ip (and only those: the host keeps the rest) to an AF_XDP socket on queue QUEUE
    /// [default: 0]; the client has IFACE's MAC. Detached at exit and on Ctrl-C; a stale one of a
    /// crashed run is removed (and said). Root (CAP_NET_ADMIN, CAP_NET_RAW, CAP_BPF).
    #[arg(long, value_name = "IFACE[:QUEUE]", requires = "ip", conflicts_with_all = ["tap", "udp", "kernel"])]
    pub xdp: Option<XdpQueueArg>,
    /// With --xdp: native XDP and zero-copy where the driver has them, else copy mode
    /// or the generic path (auto, said at start); or exactly the one asked for.
    #[arg(long, value_enum, default_value_t, requires = "xdp")]
    pub xdp_mode: crate::serve_xdp::XdpModeArg,
    /// The bare client's address and prefix on that link (with --xdp: not an address of
    /// this host).
    #[arg(long, value_name = "A.B.C.D/N", requires = "bare_link")]
    pub ip: Option<crate::opts::Cidr>,
    /// The bare client's router, for a server off its link.
    #[arg(long, value_name = "A.B.C.D", requires = "bare_link")]
    pub gw: Option<std::net::Ipv4Addr>,
    /// The bare client's IPv6 address and prefix on its TAP, for an IPv6 server
    /// (`http://[2001:db8::2]/`, `bwudp://[2001:db8::2]:8081/`): held after duplicate
    /// address detection, beside the link-local address it derives (sent from to a
    /// link-local server).
    #[arg(long, value_name = "ADDR/PREFIX", requires = "tap")]
    pub ip6: Option<crate::opts::Cidr6>,
    /// The bare client's IPv6 router, for a server outside --ip6's prefix; `auto`:
    /// the first router that advertises itself on the link.
    #[arg(
        long,
        value_name = "ADDR|auto",
        default_value = "auto",
        requires = "ip6"
    )]
    pub gw6: Gw6,
    /// The bare client's MAC on a TAP [default: a random locally administered one; with
    /// --xdp the interface's]
    #[arg(long, requires = "tap")]
    pub mac: Option<crate::opts::Mac>,
    /// The bare client booted as a kernel under QEMU (TCG unless KVM is hardware-backed)
    /// on the TAP given with --tap (which must exist, on the server's link), instead of a
    /// process on it: no operating system at all in the client.
    #[arg(long, requires = "tap")]
    pub kernel: bool,
    /// The bare HTTP client: while fetches are in flight and nothing arrives, poll the
    /// link for up to US microseconds before sleeping [default: 0, sleep at once, as the
    /// socket clients do]. A sleeping client is woken by the server's frames, and that wake-up
    /// (on a virtual machine an inter-processor interrupt, a VM exit) is paid in the
    /// server's context; a polling one sends each request as soon as a response is in,
    /// which a kernel server may then receive in smaller batches.
    #[arg(long, value_name = "US", requires = "bare_link", conflicts_with_all = ["udp", "kernel"],
          value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub spin_us: Option<u64>,
    /// The bare HTTP client's TAP takes no receive offloads: every frame it reads is one
    /// segment of at most 1514 bytes with a complete checksum, verified (the kernel cuts
    /// a server's TSO/GSO super-frames for it, in the server's context). By default it
    /// takes them whole, up to 64 KiB per read, their checksum vouched for by the kernel.
    #[arg(long, requires = "tap", conflicts_with_all = ["udp", "kernel"])]
    pub no_offload: bool,
}

/// A count of 1 or more (`--parallel`, `--max-conns`).
fn at_least_one(s: &str) -> Result<usize, String> {
    s.parse::<usize>()
        .ok()
        .filter(|&n| n >= 1)
        .ok_or_else(|| "expected a whole number, 1 or more".into())
}

/// A finite number above 0 (`--rate`, `--seconds`, `--timeout`).
fn positive(s: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0)
        .ok_or_else(|| "expected a number above 0".into())
}

/// A finite number, 0 or above (`--think-scale`).
fn not_negative(s: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| "expected a number, 0 or above".into())
}

/// Seconds from 1 ms to 10 s (`--udp-rto`, as `get --rto`).
fn rto(s: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .ok()
        .filter(|v| (0.001..=10.0).contains(v))
        .ok_or_else(|| "expected seconds from 0.001 to 10".into())
}

/// A run in which fetches were begun and none was good failed (exit status 1, after its
/// report): a server that is down must not look like a finished benchmark.
pub fn none_good(started: u64, good: u64) -> Result<(), String> {
    if started > 0 && good == 0 {
        return Err(format!(
            "no fetch succeeded ({started} begun): the report above says how they failed"
        ));
    }
    Ok(())
}

/// `--xdp IFACE[:QUEUE]`: an interface and one of its receive queues.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XdpQueueArg {
    pub iface: String,
    pub queue: u32,
}

impl std::str::FromStr for XdpQueueArg {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (iface, queue) = crate::opts::ifname_and_number(s, "a queue number", 0..=255)?;
        Ok(XdpQueueArg {
            iface,
            queue: queue.unwrap_or(0),
        })
    }
}

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
    let nic = Tap::open(tap, mac).map_err(|e| crate::cores::tap_open_error(tap, &e, false))?;
    netif::set_up(nic.name()).map_err(|e| format!("cannot bring {tap} up: {e}"))?;
    Ok(nic)
}

/// The progress line of an HTTP load run, every second on stderr (over itself on a
/// terminal); nothing when `quiet`.
pub fn progress_printer(quiet: bool) -> impl FnMut(&bareweb_loadgen::Progress) {
    let tty = std::io::stderr().is_terminal();
    move |p: &bareweb_loadgen::Progress| {
        if quiet {
            return;
        }
        let line = format!(
            "[{:6.1}s] {} fetches ({:.0}/s), {} errors, {} open{}",
            p.elapsed_secs,
            p.fetches,
            p.recent_rate,
            p.errors,
            p.open,
            if p.sessions > 0 {
                format!(", {} sessions done", p.sessions)
            } else {
                String::new()
            }
        );
        let mut e = std::io::stderr().lock();
        let _ = if tty {
            write!(e, "\r{line}   ")
        } else {
            writeln!(e, "{line}")
        };
    }
}

/// Ends the progress line (on a terminal).
pub fn progress_done(quiet: bool) {
    if !quiet && std::io::stderr().is_terminal() {
        eprintln!();
    }
}

/// Prints a report (every load client's: HTTP on sockets or bare, UDP): JSON with
/// `--json`, else `text`; and writes the JSON to `--json-out`.
pub fn emit<R: serde::Serialize>(a: &LoadArgs, report: &R, text: &str) -> Result<(), String> {
    let json = serde_json::to_string_pretty(report).map_err(|e| e.to_string())?;
    if let Some(f) = &a.json_out {
        std::fs::write(f, &json).map_err(|e| format!("{}: {e}", f.display()))?;
    }
    if a.json {
        println!("{json}");
    } else {
        print!("{text}");
    }
    Ok(())
}

/// `--gw6`: a router's IPv6 address, or `auto` (an advertised one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gw6(pub Option<std::net::Ipv6Addr>);

impl std::str::FromStr for Gw6 {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Gw6(None)),
            // The settings table's rule, so `load --kernel` hands the kernel a word it
            // takes.
            _ => match bareweb_settings::gw6(s) {
                Ok(a) => Ok(Gw6(Some(a.into()))),
                Err(e) => Err(format!("{e}, not {s:?}")),
            },
        }
    }
}

/// A bare client's place on its link for a server at `server`: `--ip` (and `--gw`) for an
/// IPv4 server, `--ip6` (and `--gw6`) for an IPv6 one, whichever the server's family asks
/// for, with the MAC `mac`.
pub fn bare_link(
    a: &LoadArgs,
    mac: EthernetAddress,
    server: std::net::SocketAddr,
) -> Result<FetchLink, String> {
    let unused = Ipv4Address([0; 4]);
    let mut link = FetchLink {
        mac,
        ip: unused,
        prefix_len: 0,
        gateway: None,
        server: unused,
        port: server.port(),
        v6: None,
    };
    match server.ip() {
        std::net::IpAddr::V4(ip) => {
            let cidr = a
                .udp
                .ip
                .ok_or("the bare client needs --ip A.B.C.D/N for an IPv4 server")?;
            (link.ip, link.prefix_len) = (cidr.addr(), cidr.prefix);
            link.gateway = a.udp.gw.map(|g| Ipv4Address(g.octets()));
            link.server = Ipv4Address(ip.octets());
        }
        std::net::IpAddr::V6(ip) => {
            let cidr = a
                .udp
                .ip6
                .ok_or("the bare client needs --ip6 ADDR/PREFIX for an IPv6 server")?;
            link.v6 = Some(FetchV6 {
                ip: cidr.ip,
                prefix_len: cidr.prefix,
                gateway: a.udp.gw6.0.map(|g| Ipv6Address(g.octets())),
                server: Ipv6Address(ip.octets()),
            });
        }
    }
    Ok(link)
}
