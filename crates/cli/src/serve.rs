//! `bareweb serve`: the engine on a TAP device until Ctrl-C; the cores themselves are run
//! by [`crate::cores`] (one core unless `--cores`), or by another runner with `--runner`
//! ([`crate::runners`]).

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use bareweb_engine::server::{AccessLog, AccessRecord, Config, Sched, Timeouts};
use bareweb_engine::wire::EthernetAddress;
use bareweb_host::netif;

use crate::{cores, runners};

use crate::util::{load_site, parse_cidr, parse_ip, parse_mac, random_bytes};
use crate::{SchedArg, ServeArgs};

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
    let mut cfg = Config::new(ip, prefix, random_bytes());
    cfg.gateway = gateway;
    cfg.port = a.port;
    cfg.tcbs = a.tcbs;
    cfg.max_per_ip = a.max_per_ip;
    cfg.syn_backlog = a.syn_backlog;
    cfg.sched = match a.sched {
        SchedArg::Imt => Sched::Imt,
        SchedArg::Ist => Sched::Ist,
    };
    cfg.timeouts = Timeouts {
        request_ms: a.request_timeout * 1000,
        idle_ms: a.idle_timeout * 1000,
        ..Timeouts::default()
    };
    cfg.udp = a.udp.config();
    let udp = a.udp.banner(ip);
    let files = site.len();
    install_signal_handlers();
    let host = host_ip.map_or("unchanged".to_string(), |h| format!("{h}/{prefix}"));
    let port = a.port;
    let banner = move |on: &str| {
        eprintln!(
            "bareweb: serving {files} files at http://{ip}:{port}/{udp} on {on} (server MAC {mac}, host side {host}); Ctrl-C stops"
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
    match (a.runner.runner, a.access_log) {
        (Some(r), true) => {
            runners::serve(r, a.runner.threads, a.cores.no_stats_page, prepared, clf)
        }
        (Some(r), false) => runners::serve(
            r,
            a.runner.threads,
            a.cores.no_stats_page,
            prepared,
            cores::no_log,
        ),
        (None, true) => cores::serve(&a.cores, prepared, clf),
        (None, false) => cores::serve(&a.cores, prepared, cores::no_log),
    }
}
