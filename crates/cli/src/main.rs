//! `bareweb`: build a site image, serve a site on a TAP device with bareweb's own stack.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use bareweb_engine::server::{AccessLog, AccessRecord, Config, Sched, Server, Timeouts};
use bareweb_engine::site::{self, Site};
use bareweb_engine::wire::{EthernetAddress, Ipv4Address};
use bareweb_host::{netif, SystemClock, Tap};
use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser)]
#[command(
    name = "bareweb",
    version,
    about = "A static web server with its own TCP/IP stack"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Build a site image from a directory.
    Build {
        /// The site directory.
        site: PathBuf,
        /// Where to write the image.
        #[arg(short, long, default_value = "site.bws")]
        output: PathBuf,
    },
    /// Serve a site (directory or image) on a TAP device with bareweb's own stack.
    Serve(ServeArgs),
}

#[derive(clap::Args)]
struct ServeArgs {
    /// Site directory (built in memory) or a site image written by `bareweb build`.
    site: PathBuf,
    /// TAP device to use; created if missing (needs CAP_NET_ADMIN).
    #[arg(long, default_value = "bw0")]
    tap: String,
    /// The server's address and prefix.
    #[arg(long, default_value = "10.0.0.2/24")]
    ip: String,
    /// Address given to the host side of the TAP (default: the subnet's first free one);
    /// `none` leaves the host side as it is.
    #[arg(long)]
    host_ip: Option<String>,
    /// TCP port to serve.
    #[arg(long, default_value_t = 80)]
    port: u16,
    /// Router for clients beyond the link.
    #[arg(long)]
    gw: Option<String>,
    /// HTTP scheduling policy (paper 004): imt looks at receive after every HTTP step,
    /// ist serves the whole run list in one pass.
    #[arg(long, value_enum, default_value_t = SchedArg::Imt)]
    sched: SchedArg,
    /// Number of TCBs (most connections at once).
    #[arg(long, default_value_t = 1024)]
    tcbs: usize,
    /// Print an access log line (Common Log Format) per response to stdout.
    #[arg(long)]
    access_log: bool,
    /// Seconds a client has to finish sending its request head (then 408).
    #[arg(long, default_value_t = 10)]
    request_timeout: u64,
    /// Seconds an idle keep-alive connection is kept.
    #[arg(long, default_value_t = 30)]
    idle_timeout: u64,
    /// The server's MAC address (default: a locally administered one).
    #[arg(long)]
    mac: Option<String>,
}

#[derive(Clone, Copy, ValueEnum)]
enum SchedArg {
    Imt,
    Ist,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Build { site, output } => build(&site, &output),
        Cmd::Serve(a) => serve(a),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bareweb: {e}");
            ExitCode::FAILURE
        }
    }
}

fn build(dir: &Path, out: &Path) -> Result<(), String> {
    let image =
        site::build_from_dir(dir).map_err(|e| format!("cannot build {}: {e}", dir.display()))?;
    let loaded =
        Site::load(&image).map_err(|e| format!("built image does not load (a bug): {e}"))?;
    std::fs::write(out, &image).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    println!(
        "{}: {} files, {} bytes",
        out.display(),
        loaded.len(),
        image.len()
    );
    Ok(())
}

/// Reads a site directory or image and keeps it for the life of the process.
fn load_site(path: &Path) -> Result<Site<'static>, String> {
    let bytes = if path.is_dir() {
        site::build_from_dir(path).map_err(|e| format!("cannot build {}: {e}", path.display()))?
    } else {
        std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?
    };
    let image: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    Site::load(image).map_err(|e| format!("{} is not a usable site image: {e}", path.display()))
}

fn parse_ip(s: &str) -> Result<Ipv4Address, String> {
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() != 4 {
        return Err(format!("bad IPv4 address {s:?}"));
    }
    let mut a = [0u8; 4];
    for (i, p) in parts.iter().enumerate() {
        a[i] = p.parse().map_err(|_| format!("bad IPv4 address {s:?}"))?;
    }
    Ok(Ipv4Address(a))
}

fn parse_cidr(s: &str) -> Result<(Ipv4Address, u8), String> {
    let (ip, len) = s.split_once('/').unwrap_or((s, "24"));
    let len: u8 = len
        .parse()
        .ok()
        .filter(|l| *l <= 32)
        .ok_or(format!("bad prefix length in {s:?}"))?;
    Ok((parse_ip(ip)?, len))
}

fn parse_mac(s: &str) -> Result<EthernetAddress, String> {
    let parts: Vec<&str> = s.split(':').collect();
    if parts.len() != 6 {
        return Err(format!("bad MAC address {s:?}"));
    }
    let mut m = [0u8; 6];
    for (i, p) in parts.iter().enumerate() {
        m[i] = u8::from_str_radix(p, 16).map_err(|_| format!("bad MAC address {s:?}"))?;
    }
    Ok(EthernetAddress(m))
}

fn random_bytes<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        let _ = std::io::Read::read_exact(&mut f, &mut b);
    }
    b
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

fn install_signal_handlers() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: on_signal only stores to an atomic, which is async-signal-safe.
        unsafe {
            libc::signal(
                sig,
                on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
            )
        };
    }
}

/// Common Log Format lines on stdout.
struct Clf(std::io::BufWriter<std::io::Stdout>);

impl AccessLog for Clf {
    fn record(&mut self, r: &AccessRecord<'_>) {
        let line = String::from_utf8_lossy(r.request_line);
        let date = bareweb_engine::http::clf_date(r.unix_secs);
        let _ = writeln!(
            self.0,
            "{} - - [{}] \"{}\" {} {}",
            r.peer,
            date,
            line.escape_default(),
            r.status,
            r.bytes
        );
        let _ = self.0.flush();
    }
}

fn serve(a: ServeArgs) -> Result<(), String> {
    let site = load_site(&a.site)?;
    let (ip, prefix) = parse_cidr(&a.ip)?;
    let mac = match &a.mac {
        Some(m) => parse_mac(m)?,
        None => {
            let mut m: [u8; 6] = random_bytes();
            m[0] = (m[0] & 0xfe) | 0x02; // unicast, locally administered
            EthernetAddress(m)
        }
    };
    let gateway = a.gw.as_deref().map(parse_ip).transpose()?;
    let host_ip = match a.host_ip.as_deref() {
        Some("none") => None,
        Some(s) => Some(parse_ip(s)?),
        None => Some(
            netif::first_free(ip, prefix)
                .ok_or("no free address for the host side: give --host-ip")?,
        ),
    };
    let mut tap = Tap::open(&a.tap, mac).map_err(|e| {
        format!("cannot open TAP {:?}: {e} (run as root, or create it first: sudo ip tuntap add {} mode tap user $USER)", a.tap, a.tap)
    })?;
    if let Some(h) = host_ip {
        netif::configure(tap.name(), h, prefix)
            .map_err(|e| format!("cannot configure {}: {e}", tap.name()))?;
    }
    let mut cfg = Config::new(ip, prefix);
    cfg.gateway = gateway;
    cfg.port = a.port;
    cfg.tcbs = a.tcbs;
    cfg.sched = match a.sched {
        SchedArg::Imt => Sched::Imt,
        SchedArg::Ist => Sched::Ist,
    };
    cfg.isn_key = random_bytes();
    cfg.timeouts = Timeouts {
        request_ms: a.request_timeout * 1000,
        idle_ms: a.idle_timeout * 1000,
        ..Timeouts::default()
    };
    let files = site.len();
    let mut server = Server::new(cfg, site, mac);
    let clock = SystemClock::new();
    install_signal_handlers();
    let host = host_ip.map_or("unchanged".to_string(), |h| format!("{h}/{prefix}"));
    eprintln!(
        "bareweb: serving {files} files at http://{ip}:{}/ on {} (server MAC {mac}, host side {host}); Ctrl-C stops",
        a.port,
        tap.name()
    );
    let mut log = Clf(std::io::BufWriter::new(std::io::stdout()));
    while !STOP.load(Ordering::Relaxed) {
        let worked = if a.access_log {
            server.poll(&mut tap, &clock, &mut log)
        } else {
            server.poll(&mut tap, &clock, &mut bareweb_engine::server::NoLog)
        };
        if !worked {
            // Nothing to do: sleep until a frame arrives or the next timer tick.
            tap.wait(10);
        }
    }
    eprintln!("bareweb: stopped; counters:");
    for (name, v) in server.stats().fields() {
        eprintln!("  {name:22} {v}");
    }
    Ok(())
}
