//! `bareweb serve --cores N --mode netcore|perqueue [--bsp-http] [--no-stats-page]`: the
//! many-core part of `serve`. Opens the TAP (multi-queue when per-queue mode may
//! be had), lets the engine's `cores::plan` decide the mode from what it got (one core: the
//! single server, whatever was asked, with a word why), runs one thread per core (pinned
//! unless `--no-pin`), and at stop prints per-core counters, the time split, and the totals
//! (as `name value` lines, as one core did). With several TAPs (bonding) every core's
//! queue pair is a `bond::BondNic` over its queue of each TAP, core 0's with the link
//! monitor, and the summary adds a line per NIC.

use std::sync::atomic::AtomicBool;
use std::sync::Mutex;

use bareweb_engine::bond::{Bond, BondNic, BondRole, LinkWatch, Mode as BondMode, Policy};
use bareweb_engine::cores::board::WithStatsPage;
use bareweb_engine::cores::pages::PageSettings;
use bareweb_engine::cores::plan::{self, Mode, Plan};
use bareweb_engine::nic::LinkSense;
use bareweb_engine::nic::Nic;
use bareweb_engine::resource::Lookup;
use bareweb_engine::server::Server;
use bareweb_engine::server::{AccessLog, Config, NoLog};
use bareweb_engine::site::Site;
use bareweb_engine::stats::{STATS_FIELDS, STAT_NAMES};
use bareweb_engine::wire::EthernetAddress;
use bareweb_host::cores::{self, CoreReport, HostQueue, Threads};
use bareweb_host::netif::TapLink;
use bareweb_host::reload::{CoreHook, Generations, Swap};

use crate::acme::AcmeTick;
use bareweb_host::xdp::V6Steer;
use bareweb_host::{SystemClock, Tap};

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

/// Whether `name` is a network interface that exists and is not a TUN/TAP device (the
/// host's NIC, `lo`, a bridge, a veth): TUNSETIFF on it fails with EINVAL, and the right
/// answer is another name, never deleting it.
pub fn exists_but_not_a_tap(name: &str) -> bool {
    let dev = std::path::Path::new("/sys/class/net").join(name);
    dev.exists() && !dev.join("tun_flags").exists()
}

/// The message for a TAP that cannot be opened: not a TAP at all, busy, not permitted, or
/// something else.
pub fn tap_open_error(name: &str, e: &std::io::Error, multi: bool) -> String {
    let mq = if multi { " multi_queue" } else { "" };
    if exists_but_not_a_tap(name) {
        return format!(
            "cannot open TAP {name:?}: {name} is a network interface of this host, not a TAP \
             device; give --tap a name no interface has (serve creates the TAP), e.g. --tap bw0"
        );
    }
    match e.raw_os_error() {
        Some(libc::EBUSY) => format!(
            "cannot open TAP {name:?}: it is in use by another process (another bareweb serve?); \
             stop that one or give --tap ANOTHER"
        ),
        Some(libc::EPERM) | Some(libc::EACCES) => format!(
            "cannot open TAP {name:?}: {e}. Creating a TAP and giving its host side an address \
             need CAP_NET_ADMIN: run as root, or give bareweb the capability once \
             (sudo setcap cap_net_admin=ep \"$(command -v bareweb)\"), or prepare the TAP for \
             your user and leave its host side alone: sudo ip tuntap add {name} mode tap{mq} \
             user $USER && sudo ip addr add 10.0.0.1/24 dev {name} && sudo ip link set {name} \
             up, then serve with --host-ip none"
        ),
        Some(libc::EINVAL) => format!(
            "cannot open TAP {name:?}: {e} (a TAP of that name exists with other flags{}: \
             give --tap ANOTHER, or remove that TAP if it is yours: sudo ip tuntap del {name} mode tap{})",
            if multi { ", perhaps not multi_queue" } else { ", perhaps multi_queue" },
            if multi { "" } else { " multi_queue" },
        ),
        _ => format!("cannot open TAP {name:?}: {e}"),
    }
}

/// A reload's generations and how the cores' site type is made from a site.
pub type Reload<'a, L> = (&'a Generations, fn(Site<'static>) -> L);

/// What `serve` prepared before the cores start.
pub struct Prepared<'a, L, F> {
    pub site: L,
    /// SIGHUP's reloads, swapped in by every core (`None`: the site is fixed).
    pub reload: Option<Reload<'a, L>>,
    pub cfg: Config,
    /// One MAC per TAP.
    pub macs: &'a [EthernetAddress],
    /// The TAPs (more than one: a NIC set, with `bonding`).
    pub taps: &'a [String],
    /// Mode, policy and link check interval of the NIC set, if the TAPs are one.
    pub bonding: Option<(BondMode, Policy, u32)>,
    /// Offer TCP segmentation offload to the engine (`--no-offload` turns it off).
    pub tso: bool,
    /// Configures the host side of the TAPs once they exist (given their kernel names).
    pub configure: F,
    pub stop: &'static AtomicBool,
    /// Prints the start banner, given where the server runs.
    pub banner: &'a dyn Fn(&str),
    /// The ACME client, run by core 0 (`--acme-domain`).
    pub acme: Option<&'static crate::acme::Acme>,
}

/// Runs `serve` on the chosen cores; returns when `stop` is set.
pub fn serve<L, F, A, G>(args: &Layout, p: Prepared<'_, L, F>, make_log: G) -> Result<(), String>
where
    L: Lookup<'static> + Copy + Send + Sync,
    F: FnOnce(&[String]) -> Result<(), String>,
    A: AccessLog,
    G: Fn(usize) -> A + Sync,
{
    let asked = args.mode.map(ModeArg::asked);
    let want = plan::queues_wanted(args.cores, asked);
    // Every TAP's queues, NIC k's at k.
    let mut nics: Vec<Vec<Tap>> = Vec::with_capacity(p.taps.len());
    for (tap, &mac) in p.taps.iter().zip(p.macs) {
        let open_err = |e: std::io::Error| tap_open_error(tap, &e, want > 1);
        let queues = if want > 1 {
            match Tap::open_multi(tap, mac, want) {
                Ok(q) => q,
                // Per-queue is only the default when the device offers a queue per core.
                Err(e) if asked.is_none() => {
                    eprintln!("bareweb: {tap} offers no queue per core ({e})");
                    vec![Tap::open(tap, mac).map_err(open_err)?]
                }
                Err(e) => return Err(open_err(e)),
            }
        } else {
            vec![Tap::open(tap, mac).map_err(open_err)?]
        };
        nics.push(queues);
    }
    // A set has as many queue pairs as its NIC with the fewest.
    let got = nics.iter().map(Vec::len).min().unwrap_or(1);
    let decision = plan::decide(args.cores, asked, args.bsp_http, got);
    if decision.worth_saying() {
        eprintln!("bareweb: mode {}: {}", decision.mode.name(), decision.why);
    }
    let mode = decision.mode;
    let used = match mode {
        Mode::NetCore { .. } => 1,
        _ => got,
    };
    for queues in &mut nics {
        queues.truncate(used);
        for q in queues.iter_mut() {
            q.set_tso(p.tso);
            // The cores poll again straight after their work (Tap::set_one_read_per_burst).
            q.set_one_read_per_burst(true);
        }
    }
    let names: Vec<String> = nics.iter().map(|q| q[0].name().to_string()).collect();
    (p.configure)(&names)?;
    let on = names.join(" + ");
    match mode {
        Mode::PerQueue => (p.banner)(&format!("{on}, {} cores, one TAP queue each", args.cores)),
        Mode::NetCore { bsp_http } => (p.banner)(&format!(
            "{on}, {} cores: core 0 owns the TAP{}{}",
            args.cores,
            if names.len() > 1 { "s" } else { "" },
            if bsp_http { " and serves HTTP" } else { "" }
        )),
        Mode::Single => (p.banner)(&on),
    }
    let threads = Threads {
        stop: p.stop,
        pin: args.pin,
    };
    let mut cfg = p.cfg;
    let Some((bmode, policy, monitor_ms)) = p.bonding else {
        let queues = nics.swap_remove(0);
        let reports = run_plan(
            args, mode, p.site, cfg, p.macs[0], queues, threads, &make_log, p.reload, None, p.acme,
        );
        print_summary(mode, &reports);
        return Ok(());
    };
    let bond = Bond::new(bmode, policy, p.macs, monitor_ms, args.cores)
        .map_err(|e| e.to_string())?
        .leak();
    cfg.bond = Some(BondRole {
        bond,
        core: 0,
        announcer: true,
    });
    eprintln!(
        "bareweb: bond {}: {} receives, {} send; policy {}, links read every {monitor_ms} ms",
        bmode.name(),
        names[0],
        match bmode {
            BondMode::Split => names[1..].join(", "),
            _ => names.join(", "),
        },
        policy.name()
    );
    // Queue pair q of every NIC, one set per core; core 0's watches the links.
    let mut sets = Vec::with_capacity(used);
    for q in 0..used {
        let members: Vec<Tap> = nics.iter_mut().map(|queues| queues.remove(0)).collect();
        let mut set = BondNic::from_nics(bond, q, members, Tap::into_rings);
        if q == 0 {
            let links = names
                .iter()
                .map(|n| {
                    TapLink::new(n)
                        .map(|l| Box::new(l) as Box<dyn LinkSense>)
                        .map_err(|e| format!("cannot watch {n}'s link: {e}"))
                })
                .collect::<Result<Vec<_>, String>>()?;
            set = set.with_watch(LinkWatch::new(bond, links, Box::new(SystemClock::new())));
        }
        sets.push(set);
    }
    let reports = run_plan(
        args, mode, p.site, cfg, p.macs[0], sets, threads, &make_log, p.reload, None, p.acme,
    );
    print_summary(mode, &reports);
    print_nics(bond, &names);
    Ok(())
}

/// Runs the cores of the plan made from `mode`, `site` and `cfg` over `queues` (with the
/// stats page and its board when asked); `steer6`: AF_XDP's IPv6 steering, which core 0
/// keeps to its link's addresses.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_plan<Q, L, A, G>(
    args: &Layout,
    mode: Mode,
    site: L,
    cfg: Config,
    mac: EthernetAddress,
    queues: Vec<Q>,
    threads: Threads<'_>,
    make_log: &G,
    reload: Option<Reload<'_, L>>,
    steer6: Option<Mutex<V6Steer>>,
    acme: Option<&'static crate::acme::Acme>,
) -> Vec<CoreReport>
where
    Q: HostQueue,
    Q::Rx: Send,
    Q::Tx: Send,
    L: Lookup<'static> + Copy + Send + Sync,
    A: AccessLog,
    G: Fn(usize) -> A + Sync,
{
    // The site type differs with the stats page (one more monomorphisation, no branch
    // per request); the board is there when any of the server's pages is on.
    let pages = args.pages;
    // A reload's swap on every core: the new site in the same wrapper (without a reload
    // the hook never runs, and the start's site stands in for `wrap`).
    let reload = reload.filter(|(g, _)| {
        let same = g.cores() == args.cores;
        if !same {
            eprintln!("bareweb: reload off: the cores differ from the plan's");
        }
        same
    });
    let wrap = move |s: Site<'static>| reload.map_or(site, |(_, w)| w(s));
    let ipv6 = cfg.ipv6;
    let gens = reload.map(|(g, _)| g);
    let http01 = acme.map(|a| a.http01);
    let issuance = acme.map(|a| a.issuance);
    if pages.stats {
        let base = pages.base;
        let plan = Plan::new(mode, args.cores, WithStatsPage(site, base), cfg, mac)
            .with_http01(http01)
            .with_issuance(issuance);
        let hook = Swap {
            gens,
            wrap: move |s| WithStatsPage(wrap(s), base),
        };
        let hook = AcmeTick(Ipv6News(hook, ipv6, steer6), acme);
        cores::run_hooked(&plan.with_board(pages), queues, threads, make_log, &hook)
    } else if pages.any() || http01.is_some() {
        // ACME's HTTP-01 answers are the board's page's: a board even with no page on.
        let plan = Plan::new(mode, args.cores, site, cfg, mac)
            .with_http01(http01)
            .with_issuance(issuance);
        let hook = AcmeTick(Ipv6News(Swap { gens, wrap }, ipv6, steer6), acme);
        cores::run_hooked(&plan.with_board(pages), queues, threads, make_log, &hook)
    } else {
        let plan = Plan::new(mode, args.cores, site, cfg, mac);
        let hook = Ipv6News(Swap { gens, wrap }, ipv6, steer6);
        cores::run_hooked(&plan, queues, threads, make_log, &hook)
    }
}

/// How often core 0 looks for news of its IPv6 address.
const IPV6_NEWS_EVERY_NS: u64 = 100_000_000;
/// How often, under AF_XDP, core 0 takes the router advertisements and queries its
/// packet socket copied.
const STEER6_EVERY_NS: u64 = 10_000_000;

/// A core hook that also says on stderr, from core 0 (whose server holds the link's IPv6
/// address), what became of the address: taken after duplicate address detection, found
/// in use by another host (and the next one tried), or given up. The address is not
/// known at the `serving` line: detection takes about a second after it. Under AF_XDP it
/// keeps the program's IPv6 map to the link's destinations (its lock taken by core 0
/// alone, each tick: never on the request path).
struct Ipv6News<H>(H, bool, Option<Mutex<V6Steer>>);

impl<L: Lookup<'static>, H: CoreHook<L>> CoreHook<L> for Ipv6News<H> {
    fn every_ns(&self) -> u64 {
        match (self.1, &self.2) {
            // Router advertisements and queries the host keeps, copied every 10 ms (the
            // map follows the link's addresses at once: `cores::run`).
            (true, Some(_)) => self.0.every_ns().min(STEER6_EVERY_NS),
            (true, None) => self.0.every_ns().min(IPV6_NEWS_EVERY_NS),
            (false, _) => self.0.every_ns(),
        }
    }

    fn tick<N: Nic>(&self, core: usize, server: &mut Server<L>, nic: &mut N) {
        if core == 0 {
            while let Some(e) = server.take_ipv6_news() {
                if let Some(line) = e.news() {
                    eprintln!("bareweb: {line}");
                }
            }
            if let Some(steer) = &self.2 {
                if let Ok(mut s) = steer.lock() {
                    // What the host's stack keeps (router advertisements, queries to
                    // all-nodes), copied; then the map to the link's addresses.
                    s.heard(|f| server.link_frame(f, nic));
                    if let Some(link) = server.ipv6_link() {
                        s.sync(&link.destinations());
                    }
                }
            }
        }
        self.0.tick(core, server, nic);
    }
}

/// A line per NIC of the set: its role and link now, its counters over every core.
fn print_nics(bond: &Bond, names: &[String]) {
    let links = bond.links();
    let send = bond.senders(links);
    eprintln!(
        "  per NIC (bond {}, policy {}):",
        bond.mode().name(),
        bond.policy().name()
    );
    for (k, name) in names.iter().enumerate().take(bond.count()) {
        let role = match (usize::from(links.receive) == k, send & (1 << k) != 0) {
            (true, true) => "receive+send",
            (true, false) => "receive",
            (false, true) => "send",
            (false, false) => "idle",
        };
        let (downs, ups, _) = bond.events(k);
        let c = bond.counts(k);
        let counts: Vec<String> = c.fields().iter().map(|(n, v)| format!("{n}={v}")).collect();
        eprintln!(
            "  nic {k} {name} {} {role} link={} link_downs={downs} link_ups={ups} {}",
            bond.mac(k),
            if links.is_up(k) { "up" } else { "down" },
            counts.join(" ")
        );
    }
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
pub(crate) fn print_summary(mode: Mode, reports: &[CoreReport]) {
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
    // The UDP paper's request ids in network-core mode live on core 0 (one line, as `name
    // value` words the tests and scripts read like the totals).
    if let Some(r) = reports.iter().find(|r| r.dispatch.udp_dispatched > 0) {
        let d = &r.dispatch;
        eprintln!("  {:22} {}", "udp_dispatched", d.udp_dispatched);
        eprintln!("  {:22} {}", "udp_core0_no_id", d.udp_no_id);
        eprintln!("  {:22} {}", "udp_core0_ids_max", d.udp_ids_max);
        eprintln!("  {:22} {}", "udp_core0_done", d.udp_done);
        eprintln!(
            "  {:22} {}",
            "udp_core0_time_mean_ns",
            d.udp_time_sum_ns.checked_div(d.udp_done).unwrap_or(0)
        );
        eprintln!("  {:22} {}", "udp_core0_time_max_ns", d.udp_time_max_ns);
    }
    print_totals(reports);
}

/// The counters summed over the reports, as `  name value` lines (maxima: the largest).
pub fn print_totals(reports: &[CoreReport]) {
    let mut total = [0u64; STATS_FIELDS];
    for r in reports {
        for (i, (n, v)) in r.stats.fields().iter().enumerate() {
            total[i] = if n.ends_with("_max") {
                total[i].max(*v)
            } else {
                total[i] + v
            };
        }
    }
    for (n, v) in STAT_NAMES.iter().zip(total) {
        eprintln!("  {n:22} {v}");
    }
}

/// An access log for core `core` that drops everything (no `--access-log`).
pub fn no_log(_core: usize) -> NoLog {
    NoLog
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host's own interfaces are not TAPs: say so, and never advise deleting them.
    #[test]
    fn a_host_interface_is_not_a_tap() {
        assert!(exists_but_not_a_tap("lo"));
        assert!(!exists_but_not_a_tap("bw-no-such0"));
        for errno in [libc::EINVAL, libc::EPERM, libc::EBUSY] {
            let e = tap_open_error("lo", &std::io::Error::from_raw_os_error(errno), false);
            assert!(
                e.contains("lo is a network interface of this host, not a TAP"),
                "{e}"
            );
            assert!(!e.contains("del"), "{e}");
        }
        // A TAP that exists with other flags: another name, or remove it as a TAP.
        let e = tap_open_error(
            "bw-no-such0",
            &std::io::Error::from_raw_os_error(libc::EINVAL),
            true,
        );
        assert!(
            e.contains("ip tuntap del bw-no-such0 mode tap") && !e.contains("ip link del"),
            "{e}"
        );
    }

    /// Without root the hint names the capability and every way to have it.
    #[test]
    fn the_non_root_hint_is_complete() {
        let e = tap_open_error(
            "bw9",
            &std::io::Error::from_raw_os_error(libc::EPERM),
            false,
        );
        for part in [
            "CAP_NET_ADMIN",
            "setcap cap_net_admin=ep",
            "ip tuntap add bw9 mode tap user $USER",
            "--host-ip none",
        ] {
            assert!(e.contains(part), "{part}: {e}");
        }
    }
}
