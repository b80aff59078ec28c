//! `bareweb serve`: the engine on a TAP device until Ctrl-C, or until a graceful drain
//! asked for by SIGTERM ends; the cores themselves are run
//! by [`crate::cores`] (one core unless `--cores`), or by another runner with `--runner`
//! ([`crate::runners`]).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use bareweb_engine::cores::pages::{Allow, PageSettings};
use bareweb_host::accesslog::{CoreLog, Target};
use bareweb_host::netif;

use crate::cores::{self, CoresArgs, Layout};
use crate::opts::{self, Mac, OrNone, ServerOpts};
use crate::reload::{self, Reloads};
use crate::runners::{self, RunnerArgs};
use crate::serve_xdp::{self, XdpArg, XdpModeArg, XdpServe};
use crate::util::{
    drain_on_sigterm, drain_report, load_site_owned, random_bytes, stop_flag, watch_drain,
};
use bareweb_engine::site::Site;
use bareweb_engine::stats::platform::ReloadCounters;
use bareweb_engine::wire::{EthernetAddress, Ipv4Address};
use bareweb_host::reload::Generations;

#[derive(clap::Args)]
pub struct ServeArgs {
    /// Site directory (built in memory) or a site image written by `bareweb build`.
    pub site: PathBuf,
    /// The site configuration [default: SITE/bareweb.toml if there is one].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// TAP device to use; created if missing (needs CAP_NET_ADMIN). Given twice or more,
    /// a set of NICs (the bonding paper's configurations, see --bond): one receives, several send.
    #[arg(long = "tap", value_name = "NAME", default_value = "bw0", value_parser = opts::ifname)]
    pub taps: Vec<String>,
    /// Address given to the host side of the TAP, another host of --ip's network; `none`
    /// leaves the host side as it is. With several TAPs the address goes on the bridge
    /// they are put on (--bridge) [default: the network's first free address]
    #[arg(long, value_name = "A.B.C.D|none")]
    pub host_ip: Option<OrNone>,
    /// With several TAPs: the bridge the host puts them on (one link, as a switch joins a
    /// server's NICs), created if missing and then removed at stop. Not used with
    /// --host-ip none (the caller bridged them) [default: the first TAP's name + "br"]
    #[arg(long, value_parser = opts::ifname)]
    pub bridge: Option<String>,
    /// The server's MAC address, once per --tap for a NIC set, in the same order
    /// [default: random locally administered ones]
    #[arg(long = "mac", value_name = "MAC")]
    pub macs: Vec<Mac>,
    /// Send every TCP segment as its own frame: no segmentation offload (by default frames
    /// of up to ~64 KiB go to the TAP and the kernel cuts them into segments). The same
    /// name as run's and build's (the NIC's offloads) and load's; `--no-tso` is its old
    /// spelling, still taken.
    #[arg(long, alias = "no-tso")]
    pub no_offload: bool,
    /// Serve on the queues of interface IFACE through AF_XDP instead of a TAP: the kernel
    /// keeps every frame not for --ip (ARP, SSH, its own addresses). QUEUES: queues 0..N,
    /// one core each. Needs root (docs/architecture.md, "AF_XDP") [default: QUEUES every
    /// receive queue of IFACE]
    #[arg(long, value_name = "IFACE[:QUEUES]",
          conflicts_with_all = ["taps", "host_ip", "bridge", "macs", "no_offload", "runner"])]
    pub xdp: Option<XdpArg>,
    /// With --xdp: `auto` (native XDP and zero-copy where the driver has them, else copy
    /// mode or the generic path, said at start), `zerocopy`, `copy` (native XDP, copy
    /// mode), `generic` (the generic XDP path: any interface, slowest) [default: auto]
    #[arg(long, value_enum, requires = "xdp")]
    pub xdp_mode: Option<XdpModeArg>,
    /// With --xdp: attach the program through netlink, as on kernels before 5.9, instead
    /// of a BPF link (it then outlives a crash; the next start removes it). For tests.
    #[arg(long, hide = true, requires = "xdp")]
    pub xdp_netlink: bool,
    /// With --xdp: busy polling, USECS per poll (SO_BUSY_POLL with SO_PREFER_BUSY_POLL):
    /// the core thread runs the queue's receive processing itself when its ring is
    /// empty, instead of waiting for the kernel's softirq (docs/performance.md,
    /// "AF_XDP") [default: 0, off]
    #[arg(long, value_name = "USECS", requires = "xdp",
          value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub xdp_busy_poll: Option<u32>,
    /// The access log in FILE (appended to, created if missing) instead of stdout;
    /// implies --access-log. SIGUSR1 reopens it (for logrotate: rename, then signal)
    #[arg(long, value_name = "FILE")]
    pub access_log_file: Option<PathBuf>,
    /// Write the process id to FILE while serving (removed at exit), for logrotate's
    /// `kill -USR1` and `bareweb reload`
    #[arg(long, value_name = "FILE")]
    pub pid_file: Option<PathBuf>,
    /// Where the ACME client keeps its account key and the certificate with its key (made
    /// 0700 if missing; the file in it is 0600, replaced by rename): needed with
    /// --acme-domain
    #[arg(long, value_name = "DIR")]
    pub state: Option<PathBuf>,
    /// The root certificates (PEM) the ACME client trusts for the CA's HTTPS, instead of
    /// the Web PKI's built in: a private or test CA
    #[arg(long, value_name = "FILE")]
    pub acme_ca: Option<PathBuf>,
    #[command(flatten)]
    pub server: ServerOpts,
    #[command(flatten)]
    pub cores: CoresArgs,
    #[command(flatten)]
    pub runner: RunnerArgs,
}

impl ServeArgs {
    pub fn check(&self) -> Result<(), String> {
        self.server.check()?;
        self.runner.check()?;
        if self.server.settings.dhcp {
            return Err(
                "--ip dhcp is the bare kernel's (run, build): serve takes a fixed A.B.C.D/N on its TAP"
                    .into(),
            );
        }
        if let Some(h) = self.host_ip.and_then(OrNone::addr) {
            let s = self.server.serve_settings();
            bareweb_settings::peer_address(s.ip, s.prefix, h).map_err(|why| {
                format!("--host-ip {h}: {why} (the server is {}/{})", s.ip, s.prefix)
            })?;
        }
        if self.macs.len() > self.taps.len() {
            return Err(format!(
                "{} --mac for {} --tap: give one MAC per TAP",
                self.macs.len(),
                self.taps.len()
            ));
        }
        if let Some(t) = self
            .taps
            .iter()
            .enumerate()
            .find_map(|(i, t)| self.taps[..i].contains(t).then_some(t))
        {
            return Err(format!("--tap {t} is given twice"));
        }
        let acme = self.server.settings.acme.on();
        if !acme && (self.state.is_some() || self.acme_ca.is_some()) {
            return Err(
                "--state and --acme-ca are the ACME client's: they need --acme-domain".into(),
            );
        }
        if acme && self.runner.runner.is_some() {
            return Err("--acme-domain does not go with --runner (the paper's runners serve one fixed configuration)".into());
        }
        if acme && self.xdp.is_some() {
            return Err("--acme-domain does not go with --xdp yet: serve on a TAP".into());
        }
        if self.xdp.is_some() && self.server.given("bond").is_some() {
            return Err("--bond joins several TAPs: it does not go with --xdp".into());
        }
        let bonded = self.server.bonding(self.taps.len())?.is_some();
        if bonded && self.runner.runner.is_some() {
            return Err(
                "--runner serves on one TAP: it does not go with a NIC set (--bond)".into(),
            );
        }
        if self.server.given("log-format").is_some()
            && !self.server.settings.log_access
            && self.access_log_file.is_none()
        {
            return Err(
                "--log-format chooses the access log's lines: give --access-log (stdout) or \
                 --access-log-file FILE too"
                    .into(),
            );
        }
        if self.bridge.is_some() && self.taps.len() < 2 {
            return Err("--bridge joins several TAPs: give --tap twice or more".into());
        }
        Ok(())
    }
}

/// The bridge this serve made, for [`clean_up_on_panic`] (the release build aborts on a
/// panic: no unwinding, no `Drop`). The TAPs need nothing: serve's TAPs are not
/// persistent, so the kernel removes them, and the host address on them, when the
/// process's descriptors close, however it ends.
static MADE_BRIDGE: Mutex<Option<String>> = Mutex::new(None);

/// A panic removes the bridge serve made before the process aborts.
fn clean_up_on_panic() {
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if let Some(br) = MADE_BRIDGE.try_lock().ok().and_then(|mut b| b.take()) {
            let _ = netif::bridge_remove(&br);
        }
        prev(info);
    }));
}

/// `BAREWEB_CRASH=panic`: panic once serving (TAPs open and configured, a bridge made),
/// as the kernel's `crash=panic` word; the tests use it to prove a panic leaves nothing
/// behind.
fn crash_requested() -> bool {
    std::env::var("BAREWEB_CRASH").is_ok_and(|v| v == "panic")
}

/// The access log's target, if one is asked for: `--access-log-file`, else stdout with
/// `--access-log`. From now on SIGUSR1 reopens the file (logrotate's way; without a file,
/// or without a log, the signal is ignored rather than ending the process).
fn access_log(a: &ServeArgs) -> Result<Option<Arc<Target>>, String> {
    let target = match (&a.access_log_file, a.server.settings.log_access) {
        (Some(p), _) => Some(
            Target::file(p)
                .map_err(|e| format!("cannot open the access log {}: {e}", p.display()))?,
        ),
        (None, true) => {
            Some(Target::stdout().map_err(|e| format!("cannot write the access log: {e}"))?)
        }
        (None, false) => None,
    };
    reopen_on_sigusr1(target.clone());
    Ok(target)
}

/// A thread that reopens `target`'s file on every SIGUSR1 (the handler itself only
/// wakes it: signal-hook's iterator) and says so on stderr.
fn reopen_on_sigusr1(target: Option<Arc<Target>>) {
    use signal_hook::consts::SIGUSR1;
    let mut signals = match signal_hook::iterator::Signals::new([SIGUSR1]) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("bareweb: cannot catch signal {SIGUSR1}: {e}");
            return;
        }
    };
    std::thread::spawn(move || {
        for _ in signals.forever() {
            let Some(t) = &target else { continue };
            let Some(path) = t.path() else { continue };
            match t.reopen() {
                Ok(()) => eprintln!("bareweb: access log {} reopened", path.display()),
                Err(e) => eprintln!(
                    "bareweb: cannot reopen the access log {}: {e} (still writing to the old file)",
                    path.display()
                ),
            }
        }
    });
}

/// `--pid-file`: the process id in a file while serving, removed when serve ends.
struct PidFile(Option<PathBuf>);

impl PidFile {
    fn write(path: Option<&PathBuf>) -> Result<PidFile, String> {
        let Some(p) = path else {
            return Ok(PidFile(None));
        };
        std::fs::write(p, format!("{}\n", std::process::id()))
            .map_err(|e| format!("cannot write --pid-file {}: {e}", p.display()))?;
        Ok(PidFile(Some(p.clone())))
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        if let Some(p) = &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Says at the end how many access log lines could not be written, if any.
fn access_log_report(target: Option<&Arc<Target>>) {
    if let Some(n) = target.map(|t| t.lost()).filter(|&n| n > 0) {
        eprintln!("bareweb: {n} access log lines could not be written");
    }
}

/// A random unicast, locally administered MAC.
fn random_mac() -> EthernetAddress {
    let mut m: [u8; 6] = random_bytes();
    m[0] = (m[0] & 0xfe) | 0x02;
    EthernetAddress(m)
}

pub fn serve(a: ServeArgs) -> Result<(), String> {
    let (bytes, site) = load_site_owned(&a.site, a.config.as_deref())?;
    if let Some(x) = &a.xdp {
        return serve_on_xdp(&a, x, bytes, site);
    }
    let bonding = a.server.bonding(a.taps.len())?;
    // `--bond off` (or one TAP): the first TAP alone, as always.
    let taps = if bonding.is_some() {
        &a.taps[..]
    } else {
        &a.taps[..1]
    };
    if bonding.is_none() && a.taps.len() > 1 {
        eprintln!(
            "bareweb: --bond off: serving on {} alone ({} not used)",
            a.taps[0],
            a.taps[1..].join(", ")
        );
    }
    let mut macs: Vec<EthernetAddress> = Vec::with_capacity(taps.len());
    for i in 0..taps.len() {
        let m = match a.macs.get(i) {
            Some(m) => m.ethernet(),
            None => loop {
                let m = random_mac();
                if !macs.contains(&m) {
                    break m;
                }
            },
        };
        macs.push(m);
    }
    let mut cfg = a.server.config(random_bytes());
    let (tls, renewal) = crate::tls::listen(&a.server)?.unzip();
    cfg.tls = tls;
    let acme = crate::acme::prepare(
        &a.server,
        a.state.as_ref(),
        a.acme_ca.as_ref(),
        &mut cfg,
        macs[0],
    )?;
    let (ip, prefix) = (cfg.ip, cfg.prefix_len);
    let host_ip = match a.host_ip {
        Some(h) => h.addr(),
        None => {
            // Another interface on this subnet (another serve's TAP): its host address
            // would be ours too, and the routes to the subnet ambiguous.
            // Our own TAPs and bridge (left from an earlier run of this same serve) are not
            // another server.
            let default_bridge = format!("{}br", a.taps[0]);
            let ours = |n: &str| {
                a.taps.iter().any(|t| t == n)
                    || a.bridge.as_deref() == Some(n)
                    || n == default_bridge
            };
            if let Some((name, addr)) =
                netif::subnet_taken(ip, prefix, "").filter(|(n, _)| !ours(n))
            {
                return Err(format!(
                    "the subnet of {ip}/{prefix} is already on {name} ({addr}): another server? \
                     Give another --ip subnet, or the host side's address with --host-ip (none: leave it)"
                ));
            }
            Some(
                netif::first_free(ip, prefix)
                    .ok_or("no free address for the host side: give --host-ip")?,
            )
        }
    };
    let files = site.len();
    // Ctrl-C stops: the TAPs, a bridge, the threads go. SIGTERM drains first
    // (docs/design/drain.md). SIGHUP reloads the site (docs/design/reload.md), except
    // with --runner (the paper's runners keep one site).
    let drain = drain_on_sigterm(&mut cfg);
    let gens: Option<&'static Generations> = a.runner.runner.is_none().then(|| {
        // SAFETY: `bytes` is the leaked `Box<[u8]>` of load_site_owned, used only
        // through `site`, which goes to the generations and the cores' plan.
        let g = unsafe { Generations::new(bytes, site, a.cores.cores.into()) };
        &*Box::leak(Box::new(g))
    });
    cfg.reload = gens.map(|g| g as &'static dyn ReloadCounters);
    reload::on_sighup(
        match gens {
            Some(g) => Reloads::On(g),
            None => Reloads::Off("with --runner: restart serve to change the site"),
        },
        reload_source(&a, &cfg, renewal),
    );
    watch_drain(drain);
    clean_up_on_panic();
    let host = host_ip.map_or("unchanged".to_string(), |h| format!("{h}/{prefix}"));
    let port = cfg.port;
    let macs_text = macs
        .iter()
        .map(|m| m.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let udp = a.server.udp_banner(ip);
    let https = cfg
        .tls
        .map_or(String::new(), |t| format!(" and https://{ip}:{}/", t.port));
    let crash = crash_requested();
    let banner = move |on: &str| {
        eprintln!(
            "bareweb: serving {files} files at http://{ip}:{port}/{https}{udp} on {on} (server MAC {macs_text}, host side {host}); Ctrl-C stops, SIGTERM drains, SIGHUP reloads"
        );
        assert!(
            !crash,
            "BAREWEB_CRASH=panic: failing on purpose once serving"
        );
    };
    let bridge =
        match (&a.bridge, taps.len()) {
            (Some(b), _) => Some(b.clone()),
            (None, 1) => None,
            (None, _) => {
                let b = format!("{}br", taps[0]);
                Some(opts::ifname(&b).map_err(|_| {
                    format!("{b:?} is too long for a bridge name: give --bridge NAME")
                })?)
            }
        };
    let mut made_bridge = None;
    let prepared = cores::Prepared {
        site,
        reload: gens.map(|g| (g, same_site as fn(Site<'static>) -> Site<'static>)),
        cfg,
        macs: &macs,
        taps,
        bonding,
        tso: !a.no_offload,
        configure: |names: &[String]| {
            let Some(h) = host_ip else { return Ok(()) };
            let on = match &bridge {
                // Several TAPs: one link, the bridge, holds the host side.
                Some(br) => {
                    if netif::bridge_create(br)
                        .map_err(|e| format!("cannot create bridge {br}: {e}"))?
                    {
                        made_bridge = Some(br.clone());
                        if let Ok(mut b) = MADE_BRIDGE.lock() {
                            *b = Some(br.clone());
                        }
                    }
                    for n in names {
                        netif::bridge_add(br, n)
                            .and_then(|()| netif::set_up(n))
                            .map_err(|e| format!("cannot put {n} on bridge {br}: {e}"))?;
                    }
                    br.as_str()
                }
                None => names[0].as_str(),
            };
            netif::configure(on, h, prefix).map_err(|e| format!("cannot configure {on}: {e}"))
        },
        stop: stop_flag(),
        banner: &banner,
        acme,
    };
    let format = a.server.settings.log_format;
    let target = access_log(&a)?;
    let _pid = PidFile::write(a.pid_file.as_ref())?;
    let core_log = |t: &Arc<Target>| {
        let t = Arc::clone(t);
        move |_| CoreLog::new(Arc::clone(&t), format)
    };
    let layout = layout(&a, &site, host_ip);
    let pages = layout.pages;
    let threads = a.runner.threads.into();
    let r = match (a.runner.runner, &target) {
        (Some(r), Some(t)) => runners::serve(r, threads, pages, prepared, core_log(t)),
        (Some(r), None) => runners::serve(r, threads, pages, prepared, cores::no_log),
        (None, Some(t)) => cores::serve(&layout, prepared, core_log(t)),
        (None, None) => cores::serve(&layout, prepared, cores::no_log),
    };
    drain_report(drain);
    access_log_report(target.as_ref());
    if let Some(br) = made_bridge {
        if let Ok(mut b) = MADE_BRIDGE.lock() {
            *b = None;
        }
        if let Err(e) = netif::bridge_remove(&br) {
            eprintln!("bareweb: cannot remove bridge {br}: {e}");
        }
    }
    r
}

/// The site as it is: the cores' site type without the stats page.
fn same_site(s: Site<'static>) -> Site<'static> {
    s
}

/// What SIGHUP reads again (the site, its configuration, the certificate), and how long an
/// old image may be held.
fn reload_source(
    a: &ServeArgs,
    cfg: &bareweb_engine::server::Config,
    tls: Option<crate::tls::Renewal>,
) -> reload::Source {
    reload::Source {
        tls,
        site: a.site.clone(),
        config: a.config.clone(),
        drain_timeout: std::time::Duration::from_millis(cfg.timeouts.drain_timeout_ms),
    }
}

/// The cores' layout, pages included: the stats page is off if the command line or the
/// site's configuration says so; metrics and the health check are on unless the
/// configuration turns them off. Who may read the stats page, its JSON and the metrics:
/// --stats-allow, else the configuration's [stats] allow, else the machine serve runs
/// on, the host side of the TAP (`host`) and nobody else: the statistics are not public
/// unless the operator says so (with no host side, `--host-ip none` or `--xdp`, nobody).
fn layout(a: &ServeArgs, site: &Site<'static>, host: Option<Ipv4Address>) -> Layout {
    let own = host.map_or(Allow::Nobody, |h| Allow::network(h.0, 32));
    let mut pages =
        PageSettings::resolve(&site.pages(), a.server.settings.stats_page, true, true, own);
    if let Some((net, len)) = a.server.settings.stats_allow {
        pages.allow = Allow::network(net.0, len);
    }
    // The pages keep their own copies of what they take from the configuration: a
    // reload may free the image these came from.
    pages.base = Box::leak(pages.base.into());
    pages.headers = Box::leak(pages.headers.into());
    if pages.stats || pages.metrics {
        eprintln!(
            "bareweb: the stats page, its JSON and /metrics answer {} (others get 403; \
             --stats-allow A.B.C.D/N widens it)",
            pages.allow
        );
    }
    Layout {
        cores: a.cores.cores.into(),
        mode: a.server.mode(),
        bsp_http: a.server.settings.bsp_http,
        pages,
        pin: !a.cores.no_pin,
    }
}

/// `serve --xdp`: the same server on an interface's queues through AF_XDP.
fn serve_on_xdp(
    a: &ServeArgs,
    x: &XdpArg,
    bytes: &'static [u8],
    site: Site<'static>,
) -> Result<(), String> {
    let mut cfg = a.server.config(random_bytes());
    let (tls, renewal) = crate::tls::listen(&a.server)?.unzip();
    cfg.tls = tls;
    let udp = a.server.udp_banner(cfg.ip);
    let files = site.len();
    let drain = drain_on_sigterm(&mut cfg);
    watch_drain(drain);
    let layout = layout(a, &site, None);
    let s = XdpServe {
        site,
        reload: Some(serve_xdp::XdpReload {
            bytes,
            site,
            wrap: same_site,
            source: reload_source(a, &cfg, renewal),
        }),
        cfg,
        arg: x,
        mode: a.xdp_mode.unwrap_or_default(),
        netlink: a.xdp_netlink,
        busy_poll_us: a.xdp_busy_poll.unwrap_or(0),
        cores: a.cores.cores.into(),
        stop: stop_flag(),
        files,
        udp,
    };
    let format = a.server.settings.log_format;
    let target = access_log(a)?;
    let _pid = PidFile::write(a.pid_file.as_ref())?;
    let r = match target {
        Some(t) => {
            let r = serve_xdp::serve(&layout, s, |_| CoreLog::new(Arc::clone(&t), format));
            access_log_report(Some(&t));
            r
        }
        None => serve_xdp::serve(&layout, s, cores::no_log),
    };
    drain_report(drain);
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        serve: ServeArgs,
    }

    fn check(words: &[&str]) -> Result<(), String> {
        let mut v = vec!["bareweb", "site"];
        v.extend_from_slice(words);
        match Cli::try_parse_from(v) {
            Ok(c) => c.serve.check(),
            Err(e) => Err(e.to_string()),
        }
    }

    /// A log format without a log is a mistake, said; with either log it is taken.
    #[test]
    fn log_format_needs_an_access_log() {
        let e = check(&["--log-format", "json"]).unwrap_err();
        assert!(e.contains("--access-log-file"), "{e}");
        check(&["--log-format", "json", "--access-log"]).unwrap();
        check(&[
            "--log-format",
            "combined",
            "--access-log-file",
            "/tmp/x.log",
        ])
        .unwrap();
        let e = check(&["--log-format", "xml", "--access-log"]).unwrap_err();
        assert!(e.contains("possible values: common, combined, json"), "{e}");
    }

    /// The server's address is a host's; the host side's is another host of the same
    /// network (the settings crate's checks, as run and build make them on --ip).
    #[test]
    fn server_and_host_addresses_are_checked() {
        let e = check(&["--ip", "10.66.0.0/24"]).unwrap_err();
        assert!(
            e.contains("--ip") && e.contains("network's own address"),
            "{e}"
        );
        let e = check(&["--ip", "10.66.0.255/24"]).unwrap_err();
        assert!(e.contains("broadcast"), "{e}");
        let e = check(&["--ip", "10.66.0.1/24", "--host-ip", "10.66.0.1"]).unwrap_err();
        assert!(
            e.contains("--host-ip 10.66.0.1: it is the server's own address"),
            "{e}"
        );
        let e = check(&["--ip", "10.66.0.1/24", "--host-ip", "10.77.0.1"]).unwrap_err();
        assert!(e.contains("outside the server's network"), "{e}");
        let e = check(&["--host-ip", "10.0.0.2"]).unwrap_err();
        assert!(e.contains("10.0.0.2/24"), "serve's default address: {e}");
        let e = check(&["--host-ip", "10.0.0.255"]).unwrap_err();
        assert!(e.contains("broadcast"), "{e}");
        check(&["--ip", "10.66.0.1/24", "--host-ip", "10.66.0.2"]).unwrap();
        check(&["--ip", "10.66.0.1/24", "--host-ip", "none"]).unwrap();
        check(&["--host-ip", "10.0.0.1"]).unwrap();
    }
}
