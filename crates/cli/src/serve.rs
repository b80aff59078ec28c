//! `bareweb serve`: the engine on a TAP device until Ctrl-C; the cores themselves are run
//! by [`crate::cores`] (one core unless `--cores`), or by another runner with `--runner`
//! ([`crate::runners`]).

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use bareweb_engine::cores::pages::PageSettings;
use bareweb_engine::server::{AccessLog, AccessRecord};
use bareweb_host::netif;

use crate::cores::{self, CoresArgs, Layout};
use crate::opts::{self, Mac, OrNone, ServerOpts};
use crate::runners::{self, RunnerArgs};
use crate::util::{load_site, random_bytes};

#[derive(clap::Args)]
pub struct ServeArgs {
    /// Site directory (built in memory) or a site image written by `bareweb build`.
    pub site: PathBuf,
    /// The site configuration [default: SITE/bareweb.toml if there is one].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// TAP device to use; created if missing (needs CAP_NET_ADMIN).
    #[arg(long, default_value = "bw0", value_parser = opts::ifname)]
    pub tap: String,
    /// Address given to the host side of the TAP (default: the subnet's first free one);
    /// `none` leaves the host side as it is.
    #[arg(long, value_name = "A.B.C.D|none")]
    pub host_ip: Option<OrNone>,
    /// The server's MAC address (default: a random locally administered one).
    #[arg(long)]
    pub mac: Option<Mac>,
    /// Send every TCP segment as its own frame: no segmentation offload (by default frames
    /// of up to ~64 KiB go to the TAP and the kernel cuts them into segments).
    #[arg(long)]
    pub no_tso: bool,
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
        self.runner.check()
    }
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
        let _ = writeln!(self.0, "{}", r.clf());
        let _ = self.0.flush();
    }
}

pub fn serve(a: ServeArgs) -> Result<(), String> {
    let site = load_site(&a.site, a.config.as_deref())?;
    let mac = match a.mac {
        Some(m) => m.ethernet(),
        None => {
            let mut m: [u8; 6] = random_bytes();
            m[0] = (m[0] & 0xfe) | 0x02; // unicast, locally administered
            bareweb_engine::wire::EthernetAddress(m)
        }
    };
    let cfg = a.server.config(random_bytes());
    let (ip, prefix) = (cfg.ip, cfg.prefix_len);
    let host_ip = match a.host_ip {
        Some(h) => h.addr(),
        None => Some(
            netif::first_free(ip, prefix)
                .ok_or("no free address for the host side: give --host-ip")?,
        ),
    };
    let files = site.len();
    install_signal_handlers();
    let host = host_ip.map_or("unchanged".to_string(), |h| format!("{h}/{prefix}"));
    let port = cfg.port;
    let banner = move |on: &str| {
        eprintln!(
            "bareweb: serving {files} files at http://{ip}:{port}/ on {on} (server MAC {mac}, host side {host}); Ctrl-C stops"
        )
    };
    let prepared = cores::Prepared {
        site,
        cfg,
        mac,
        tap: &a.tap,
        tso: !a.no_tso,
        configure: |name: &str| match host_ip {
            Some(h) => netif::configure(name, h, prefix)
                .map_err(|e| format!("cannot configure {name}: {e}")),
            None => Ok(()),
        },
        stop: &STOP,
        banner: &banner,
    };
    let clf = |_| Clf(std::io::BufWriter::new(std::io::stdout()));
    // The stats page is off if the command line or the site's configuration says so;
    // metrics and the health check are on unless the configuration turns them off.
    let pages = PageSettings::resolve(&site.pages(), !a.server.no_stats_page, true, true);
    let layout = Layout {
        cores: a.cores.cores.into(),
        mode: a.server.mode,
        bsp_http: a.server.bsp_http,
        pages,
        pin: !a.cores.no_pin,
    };
    let threads = a.runner.threads.into();
    match (a.runner.runner, a.server.access_log) {
        (Some(r), true) => runners::serve(r, threads, pages, prepared, clf),
        (Some(r), false) => runners::serve(r, threads, pages, prepared, cores::no_log),
        (None, true) => cores::serve(&layout, prepared, clf),
        (None, false) => cores::serve(&layout, prepared, cores::no_log),
    }
}
