//! `bareweb serve --xdp IFACE[:QUEUES] [--xdp-mode auto|zerocopy|copy|generic]`: the
//! engine on an interface's own queues through AF_XDP (docs/design/af-xdp.md). The host crate's
//! `xdp::open` attaches the steering program and opens a socket per queue; each socket is
//! a core's queue pair, run by the same core threads as the TAP ([`crate::cores`]): one
//! core per queue (per-queue mode), or one queue owned by core 0 (`--mode netcore`). At
//! stop the program is detached (the `Xdp` guard) and each socket's counters printed.

use std::sync::atomic::AtomicBool;

use bareweb_engine::cores::plan::{self, Mode};
use bareweb_engine::resource::Lookup;
use bareweb_engine::server::{AccessLog, Config};
use bareweb_engine::site::Site;
use bareweb_host::cores::{CoreReport, Threads};
use bareweb_host::reload::Generations;
use bareweb_host::xdp::{self, Bind};
use clap::ValueEnum;

use crate::cores::{self, Layout};
use crate::opts::ModeArg;
use crate::reload::{self, Reloads};

/// `--xdp IFACE[:QUEUES]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XdpArg {
    pub iface: String,
    pub queues: Option<u32>,
}

impl std::str::FromStr for XdpArg {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (iface, queues) = crate::opts::ifname_and_number(s, "a queue count", 1..=256)?;
        Ok(XdpArg { iface, queues })
    }
}

/// `--xdp-mode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum XdpModeArg {
    /// Native XDP and zero-copy where the driver has them, copy mode or the generic
    /// path otherwise (said at start).
    #[default]
    Auto,
    /// Native XDP with zero-copy sockets, or an error.
    Zerocopy,
    /// Native XDP, sockets in copy mode.
    Copy,
    /// The generic XDP path (any interface; slowest).
    Generic,
}

impl XdpModeArg {
    pub fn mode(self) -> xdp::Mode {
        match self {
            XdpModeArg::Auto => xdp::Mode::Auto,
            XdpModeArg::Zerocopy => xdp::Mode::ZeroCopy,
            XdpModeArg::Copy => xdp::Mode::Copy,
            XdpModeArg::Generic => xdp::Mode::Generic,
        }
    }
}

/// What SIGHUP's reloads start from (the cores are known only once the sockets are open).
pub struct XdpReload<L> {
    /// The start's image (a leaked `Box<[u8]>`) and its site.
    pub bytes: &'static [u8],
    pub site: Site<'static>,
    /// The cores' site type from a site.
    pub wrap: fn(Site<'static>) -> L,
    pub source: reload::Source,
}

/// What `serve` hands over.
pub struct XdpServe<'a, L> {
    pub site: L,
    /// SIGHUP's reloads (`None`: SIGHUP is not caught).
    pub reload: Option<XdpReload<L>>,
    pub cfg: Config,
    pub arg: &'a XdpArg,
    pub mode: XdpModeArg,
    /// Attach through netlink (the path of kernels before 5.9), not a BPF link.
    pub netlink: bool,
    /// `--xdp-busy-poll` microseconds (0: off).
    pub busy_poll_us: u32,
    /// `--cores` as given (1 when not given: then one core per queue).
    pub cores: usize,
    pub stop: &'static AtomicBool,
    pub files: usize,
    pub udp: String,
}

/// Serves on the interface's queues until `stop` is set.
pub fn serve<L, A, G>(layout: &Layout, s: XdpServe<'_, L>, make_log: G) -> Result<(), String>
where
    L: Lookup<'static> + Copy + Send + Sync,
    A: AccessLog,
    G: Fn(usize) -> A + Sync,
{
    let iface = s.arg.iface.as_str();
    let ip = s.cfg.ip;
    if let Some((_, a, _)) = bareweb_host::netif::local_ipv4()
        .into_iter()
        .find(|(_, a, _)| *a == ip)
    {
        return Err(format!(
            "{a} is an address of this host: the server needs an address of its own on {iface}'s link (--ip)"
        ));
    }
    let netcore = layout.mode == Some(ModeArg::Netcore);
    let queues = match (s.arg.queues, netcore) {
        (Some(q), true) if q > 1 => {
            return Err(format!(
                "--mode netcore: core 0 owns one queue; --xdp {iface}:{q} asks for {q}"
            ))
        }
        (_, true) => Some(1),
        (q, false) => q,
    };
    let spec = xdp::Spec {
        iface: iface.to_string(),
        queues,
        first_queue: 0,
        mode: s.mode.mode(),
        ip,
        netlink: s.netlink,
        busy_poll_us: s.busy_poll_us,
        ipv6: s.cfg.ipv6,
    };
    let (mut guard, sockets) = xdp::open(&spec)?;
    // Core 0 keeps the program's IPv6 map to its link's addresses and groups; without
    // them (said in the notes) IPv6 is off.
    let steer6 = guard.take_v6().map(std::sync::Mutex::new);
    let mut cfg = s.cfg;
    cfg.ipv6 &= steer6.is_some();
    for n in &guard.notes {
        eprintln!("bareweb: {n}");
    }
    // The kernel's own counters of each socket (XDP_STATISTICS): on the stats page and in
    // the metrics while serving, and printed at stop. Kept for the life of the program,
    // as the board that shows them is.
    let counters: &'static xdp::SocketsCounters = Box::leak(Box::new(xdp::SocketsCounters(
        sockets
            .iter()
            .filter_map(|q| q.stats_handle().ok())
            .collect(),
    )));
    cfg.platform = Some(counters);
    let got = sockets.len();
    // One core per queue unless --cores says otherwise (network-core mode: --cores).
    let cores = if netcore || s.cores > 1 { s.cores } else { got };
    if !netcore && cores != got {
        return Err(format!(
            "--cores {cores} with {got} queue{} of {iface}: per-queue mode runs one core per queue \
             (--xdp {iface}:{cores}, or --mode netcore for one queue and {cores} cores)",
            if got == 1 { "" } else { "s" }
        ));
    }
    let asked = layout.mode.map(ModeArg::asked);
    let decision = plan::decide(cores, asked, layout.bsp_http, got);
    if decision.worth_saying() {
        eprintln!("bareweb: mode {}: {}", decision.mode.name(), decision.why);
    }
    let mode = decision.mode;
    let bind = match guard.bind {
        Bind::ZeroCopy => "zero-copy",
        Bind::Copy => "copy mode",
    };
    let where_ = match mode {
        Mode::NetCore { .. } => format!("{cores} cores: core 0 owns queue 0"),
        Mode::PerQueue => format!("queues 0..{got}, one core each"),
        Mode::Single => "queue 0".to_string(),
    };
    eprintln!(
        "bareweb: serving {} files at http://{ip}:{}/{} on {iface} through AF_XDP ({where_}; {} XDP, {bind}, program id {}; \
         server MAC {}: the host keeps every other address on {iface}); Ctrl-C stops",
        s.files,
        cfg.port,
        s.udp,
        guard.attach,
        guard.prog_id,
        guard.mac
    );
    let reload = s.reload.map(|r| {
        // SAFETY: `r.bytes` is the leaked `Box<[u8]>` `r.site` was loaded from
        // (load_site_owned), used only through that site from now on.
        let gens: &'static Generations = Box::leak(Box::new(unsafe {
            Generations::new(r.bytes, r.site, cores)
        }));
        cfg.reload = Some(gens);
        reload::on_sighup(Reloads::On(gens), r.source);
        (gens, r.wrap)
    });
    let threads = Threads {
        stop: s.stop,
        pin: layout.pin,
    };
    let layout = Layout {
        cores,
        mode: layout.mode,
        bsp_http: layout.bsp_http,
        pages: layout.pages,
        pin: layout.pin,
    };
    let reports: Vec<CoreReport> = cores::run_plan(
        &layout, mode, s.site, cfg, guard.mac, sockets, threads, &make_log, reload, steer6, None,
    );
    cores::print_summary(mode, &reports);
    let owners = match mode {
        Mode::NetCore { .. } => &reports[..1.min(reports.len())],
        _ => &reports[..],
    };
    print_sockets(owners);
    print_kernel_stats(&counters.0);
    drop(guard);
    eprintln!("bareweb: XDP program detached from {iface}");
    Ok(())
}

/// A line per socket: what the kernel counted (`XDP_STATISTICS`): frames it dropped
/// because our rings were full or empty, and descriptors it refused.
fn print_kernel_stats(handles: &[xdp::StatsHandle]) {
    let mut head = false;
    for h in handles {
        let Ok(st) = h.stats() else { continue };
        let named = st.named();
        if !head {
            let names: Vec<_> = named.iter().map(|(n, _)| *n).collect();
            eprintln!(
                "  per AF_XDP socket, the kernel's XDP_STATISTICS: queue {}",
                names.join(" ")
            );
            head = true;
        }
        let values: Vec<_> = named.iter().map(|(_, v)| v.to_string()).collect();
        eprintln!("  queue {} {}", h.queue, values.join(" "));
    }
}

/// A line per socket: what its queue pair counted.
fn print_sockets(reports: &[CoreReport]) {
    eprintln!("  per AF_XDP socket: core rx_frames tx_frames rx_bad tx_full kicks kicks_saved rx_ring_high tx_in_flight_high");
    for r in reports {
        let n = &r.nic;
        eprintln!(
            "  core {} {} {} {} {} {} {} {} {}",
            r.core,
            n.device_rx_frames,
            n.device_tx_frames,
            n.device_rx_bad,
            n.device_tx_full,
            n.doorbells,
            n.doorbells_suppressed,
            n.rx_ring_high,
            n.tx_ring_high
        );
    }
}
