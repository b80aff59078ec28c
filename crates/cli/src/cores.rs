//! `bareweb serve --cores N --mode netcore|perqueue [--bsp-http] [--no-stats-page]`: the
//! many-core part of `serve` (issue 4). Opens the TAP (multi-queue when per-queue mode may
//! be had), lets the engine's `cores::plan` decide the mode from what it got (one core: the
//! single server, whatever was asked, with a word why), runs one thread per core (pinned
//! unless `--no-pin`), and at stop prints per-core counters, the time split, and the totals
//! (as `name value` lines, as one core did).

use std::sync::atomic::AtomicBool;

use bareweb_engine::cores::board::WithStatsPage;
use bareweb_engine::cores::pages::PageSettings;
use bareweb_engine::cores::plan::{self, Mode, Plan};
use bareweb_engine::resource::Lookup;
use bareweb_engine::server::{AccessLog, Config, NoLog};
use bareweb_engine::stats::Stats;
use bareweb_engine::wire::EthernetAddress;
use bareweb_host::cores::{self, CoreReport, Threads};
use bareweb_host::Tap;

use crate::opts::ModeArg;

/// The many-core options of `serve` (`--mode` and `--bsp-http` are the shared
/// [`crate::opts::ServerOpts`]).
#[derive(clap::Args)]
pub struct CoresArgs {
    /// Cores (threads pinned one per CPU) to serve with, 1 to 256.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub cores: u16,
    /// Leave the core threads unpinned, placed by the OS scheduler (for a server that
    /// shares few CPUs with other busy work, such as a load generator on the same host).
    #[arg(long)]
    pub no_pin: bool,
}

/// How `serve` lays the work on cores.
pub struct Layout {
    pub cores: usize,
    pub mode: Option<ModeArg>,
    pub bsp_http: bool,
    /// The server's own pages (stats, metrics, health check).
    pub pages: PageSettings,
    pub pin: bool,
}

/// The message for a TAP that cannot be opened: busy, not permitted, or something else.
pub fn tap_open_error(name: &str, e: &std::io::Error, multi: bool) -> String {
    let mq = if multi { " multi_queue" } else { "" };
    match e.raw_os_error() {
        Some(libc::EBUSY) => format!(
            "cannot open TAP {name:?}: it is in use by another process (another bareweb serve?); \
             stop that one or give --tap ANOTHER"
        ),
        Some(libc::EPERM) | Some(libc::EACCES) => format!(
            "cannot open TAP {name:?}: {e} (run as root, or create it first: sudo ip tuntap add {name} mode tap{mq} user $USER)"
        ),
        Some(libc::EINVAL) => format!(
            "cannot open TAP {name:?}: {e} (it exists with other flags{}: delete it with `ip link del {name}`, or give --tap ANOTHER)",
            if multi { ", perhaps not multi_queue" } else { ", perhaps multi_queue" }
        ),
        _ => format!("cannot open TAP {name:?}: {e}"),
    }
}

/// What `serve` prepared before the cores start.
pub struct Prepared<'a, L, F> {
    pub site: L,
    pub cfg: Config,
    pub mac: EthernetAddress,
    pub tap: &'a str,
    /// Offer TCP segmentation offload to the engine (`--no-tso` turns it off).
    pub tso: bool,
    /// Configures the host side of the TAP once it exists (given its kernel name).
    pub configure: F,
    pub stop: &'static AtomicBool,
    /// Prints the start banner, given where the server runs.
    pub banner: &'a dyn Fn(&str),
}

/// Runs `serve` on the chosen cores; returns when `stop` is set.
pub fn serve<L, F, A, G>(args: &Layout, p: Prepared<'_, L, F>, make_log: G) -> Result<(), String>
where
    L: Lookup<'static> + Copy + Send + Sync,
    F: FnOnce(&str) -> Result<(), String>,
    A: AccessLog,
    G: Fn(usize) -> A + Sync,
{
    let asked = args.mode.map(ModeArg::asked);
    let want = plan::queues_wanted(args.cores, asked);
    let open_err = |e: std::io::Error| tap_open_error(p.tap, &e, want > 1);
    let mut queues = if want > 1 {
        match Tap::open_multi(p.tap, p.mac, want) {
            Ok(q) => q,
            // Per-queue is only the default when the device offers a queue per core.
            Err(e) if asked.is_none() => {
                eprintln!("bareweb: {} offers no queue per core ({e})", p.tap);
                vec![Tap::open(p.tap, p.mac).map_err(open_err)?]
            }
            Err(e) => return Err(open_err(e)),
        }
    } else {
        vec![Tap::open(p.tap, p.mac).map_err(open_err)?]
    };
    let decision = plan::decide(args.cores, asked, args.bsp_http, queues.len());
    if decision.worth_saying() {
        eprintln!("bareweb: mode {}: {}", decision.mode.name(), decision.why);
    }
    let mode = decision.mode;
    for q in &mut queues {
        q.set_tso(p.tso);
    }
    let name = queues[0].name().to_string();
    (p.configure)(&name)?;
    match mode {
        Mode::PerQueue => (p.banner)(&format!("{name}, {} cores, one TAP queue each", args.cores)),
        Mode::NetCore { bsp_http } => (p.banner)(&format!(
            "{name}, {} cores: core 0 owns the TAP{}",
            args.cores,
            if bsp_http { " and serves HTTP" } else { "" }
        )),
        Mode::Single => (p.banner)(&name),
    }
    let threads = Threads {
        stop: p.stop,
        pin: args.pin,
    };
    // The site type differs with the stats page (one more monomorphisation, no branch
    // per request); the board is there when any of the server's pages is on.
    let pages = args.pages;
    let reports = if pages.stats {
        let site = WithStatsPage(p.site, pages.base);
        let plan = Plan::new(mode, args.cores, site, p.cfg, p.mac);
        cores::run(&plan.with_board(pages), queues, threads, &make_log)
    } else if pages.any() {
        let plan = Plan::new(mode, args.cores, p.site, p.cfg, p.mac);
        cores::run(&plan.with_board(pages), queues, threads, &make_log)
    } else {
        let plan = Plan::new(mode, args.cores, p.site, p.cfg, p.mac);
        cores::run(&plan, queues, threads, &make_log)
    };
    print_summary(mode, &reports);
    Ok(())
}

pub fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// Per-core lines (more than two words each) and then the totals as `  name value`, the
/// format one core always printed.
fn print_summary(mode: Mode, reports: &[CoreReport]) {
    eprintln!("bareweb: stopped; counters:");
    if reports.len() > 1 {
        eprintln!(
            "  per core ({}): core role requests rx_frames tx_frames tcbs_max max_parallel rcv% http% send% main% clist_high dlist_high",
            mode.name()
        );
        for r in reports {
            let el = r.run.elapsed_ns;
            let rcv = r.times.rcv_ns + r.dispatch.dispatch_ns;
            let busy = rcv + r.times.http_ns + r.dispatch.drain_ns;
            eprintln!(
                "  core {} {:?} {} {} {} {} {} {:.1}% {:.1}% {:.1}% {:.1}% {} {}",
                r.core,
                r.role,
                r.stats.http_requests,
                r.stats.rx_frames,
                r.stats.tx_frames,
                r.stats.tcbs_max,
                r.stay.parallel_max,
                pct(rcv, el),
                pct(r.times.http_ns, el),
                pct(r.dispatch.drain_ns, el),
                pct(el.saturating_sub(busy), el),
                r.nic.rx_ring_high,
                r.nic.tx_ring_high,
            );
        }
    }
    print_totals(reports);
}

/// The counters summed over the reports, as `  name value` lines (maxima: the largest).
pub fn print_totals(reports: &[CoreReport]) {
    let mut total = [0u64; bareweb_engine::stats::STATS_FIELDS];
    let mut names = Stats::default().fields().map(|(n, _)| n);
    for r in reports {
        for (i, (n, v)) in r.stats.fields().iter().enumerate() {
            names[i] = n;
            total[i] = if n.ends_with("_max") {
                total[i].max(*v)
            } else {
                total[i] + v
            };
        }
    }
    for (n, v) in names.iter().zip(total) {
        eprintln!("  {n:22} {v}");
    }
}

/// An access log for core `core` that drops everything (no `--access-log`).
pub fn no_log(_core: usize) -> NoLog {
    NoLog
}
