//! The engine's plan launched onto the cores, in the shape of the host's
//! (`host/src/cores.rs`): [`run`] takes the plan and the queue pairs and, by the plan's
//! mode, gives each core its server and queue pair; the host starts a thread per core,
//! the kernel gives each application core a job ([`crate::arch::smp::run_on`]) and runs
//! core 0's loop itself.
//!
//! - **one core**: one `Server` over the NIC, as the kernel always served, whatever
//!   `mode=` says (the console says why);
//! - **per-queue** (`mode=perqueue`, the default when the NIC has a queue pair for every
//!   core: virtio-net multiqueue): core k owns queue pair k and a whole `Server`; nothing
//!   is shared on the request path;
//! - **network-core** (`mode=netcore`, the default otherwise: one queue): the papers'
//!   design, with the engine's `cores::netcore`: core 0 alone touches the NIC through
//!   `NetCoreNic` (ARP/ICMP, SYN dispatch round robin, draining the send rings), cores 1..
//!   run a `Server` over `RingNic`; `bsp_http=on` puts core 0 in the round robin.
//!
//! Every core runs the engine's `cores::run` loop: it polls while there is work and, after
//! an idle spell, halts until its NIC, its timer or another core wakes it ([`crate::rest`];
//! `poll=always` polls without ever halting, as the papers' cores do). Every core
//! publishes to one stats `Board`, which the stats page and the console's `log=stats`
//! line read ([`crate::report`]).

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::AtomicBool;

use bareweb_engine::cores::board::Board;
use bareweb_engine::cores::plan::{Mode, Plan};
use bareweb_engine::cores::run::{run_core_hooked, CoreCtx, SpinThenSleep};
use bareweb_engine::cores::CoreQueue;
use bareweb_engine::nic::{Clock, NicCounters};
use bareweb_engine::ring::Doze;
use bareweb_engine::server::Server;
use bareweb_engine::wire::EthernetAddress;

use crate::adapters::{ConsoleLog, Pages};
use crate::arch::{apic, power, smp};
use crate::boot::Booted;
use crate::drivers::WakeRx;
use crate::queue::Queue;
use crate::rest::{self, Policy, Rest, Sleeper};
use crate::{fatal, mem, report};

/// Set by the last core to finish a graceful drain (`cores::run`): every core's loop
/// ends, and core 0 powers the machine off.
static STOP: AtomicBool = AtomicBool::new(false);

/// Runs the cores of `plan` over `queues` (network-core mode: the one queue pair of core
/// 0; otherwise one per core), named `name` on the console; `t` is the TSC when the
/// engine's tables began to be allocated. Never returns: core 0 serves here.
pub fn run(booted: Booted, plan: &Plan<Pages>, mut queues: Vec<Queue>, name: &str, t: u64) -> ! {
    match plan.mode {
        Mode::NetCore { .. } => match queues.pop() {
            Some(q) if queues.is_empty() => {
                let (rx, tx) = q.into_rings();
                netcore(booted, plan, rx, tx, Queue::device_counters, name, t)
            }
            Some(_) => fatal!(
                "netcore: {} queue pairs for one NIC owner",
                queues.len() + 1
            ),
            None => fatal!("netcore: no queue pair for the NIC owner"),
        },
        Mode::Single | Mode::PerQueue => per_queue(booted, plan, queues, name, t),
    }
}

/// A core per queue pair, each with a whole `Server` (one core: the single server).
fn per_queue<N: CoreQueue + Sleeper + Send + 'static>(
    mut booted: Booted,
    plan: &Plan<Pages>,
    nics: Vec<N>,
    name: &str,
    t: u64,
) -> ! {
    let n = nics.len();
    if n != plan.cores {
        fatal!(
            "{}: {n} queue pair(s) for {} cores",
            plan.mode.name(),
            plan.cores
        );
    }
    let board = plan.board.expect("the kernel's plan has a board");
    let mac = plan.mac;
    let mut jobs: Vec<smp::Job> = Vec::with_capacity(n);
    let mut mine = None;
    // Made together: the cores share core 0's IPv6 link (its followers' rings).
    for (core, (nic, mut server)) in nics.into_iter().zip(plan.servers()).enumerate() {
        // Before the heap is sealed (start_serving): the link's tables, every core's.
        server.start_ipv6(booted.clock.now_ns());
        if core == 0 {
            if let Some(c) = booted.dhcp_client.take() {
                server.own_dhcp(c);
            }
            mine = Some((server, nic));
        } else {
            jobs.push(ap_job(&booted, core, server, nic, board));
        }
    }
    let what = match plan.mode {
        Mode::Single => "one core".into(),
        _ => alloc::format!("perqueue: {n} cores, a {name} queue pair and a server each"),
    };
    start_serving(&booted, t, name, mac, &what, jobs);
    match mine {
        Some((server, nic)) => run_core0(booted, server, nic, board),
        None => fatal!("{}: no queue pair for core 0", plan.mode.name()),
    }
}

/// Network-core mode: core 0 owns the device's two sides `rx` and `tx` (a driver's or
/// a NIC set's, whose counters `device` reads), HTTP cores are fed by the engine's
/// rings.
fn netcore<R, T>(
    mut booted: Booted,
    plan: &Plan<Pages>,
    rx: R,
    tx: T,
    device: fn(&R, &T, &mut NicCounters),
    name: &str,
    t: u64,
) -> !
where
    R: bareweb_engine::nic::RxRing + WakeRx + 'static,
    T: bareweb_engine::nic::TxRing + 'static,
{
    let board = plan.board.expect("the kernel's plan has a board");
    // Halting cores wake each other with an IPI when a ring gets work; cores that
    // never halt get doze-less links (a nudge is a branch).
    let doze = |core: usize| match booted.timer {
        Some(_) => rest::ipi_doze(smp::apic_id(core)),
        None => Doze::none(),
    };
    let doze0 = doze(0);
    let queues = plan.netcore(rx, tx, booted.clock, &doze0, doze);
    let mut jobs: Vec<smp::Job> = Vec::with_capacity(plan.cores);
    for (i, ring) in queues.http.into_iter().enumerate() {
        let core = i + 1;
        jobs.push(ap_job(&booted, core, plan.server(core), ring, board));
    }
    let mut server = plan.server(0);
    if let Some(c) = booted.dhcp_client.take() {
        server.own_dhcp(c);
    }
    // Before the heap is sealed (start_serving): the link's tables.
    server.start_ipv6(booted.clock.now_ns());
    let bsp_http = matches!(plan.mode, Mode::NetCore { bsp_http: true });
    let what = alloc::format!(
        "netcore: core 0 owns the NIC{}, {} HTTP core(s)",
        if bsp_http { " and serves HTTP" } else { "" },
        plan.cores - 1
    );
    start_serving(&booted, t, name, plan.mac, &what, jobs);
    let nic = crate::cores::Core0 {
        nic: queues.core0,
        device,
        doze: doze0,
    };
    run_core0(booted, server, nic, board)
}

/// A job for application core `core`: serve over `nic` forever.
fn ap_job<N: CoreQueue + Sleeper + Send + 'static>(
    booted: &Booted,
    core: usize,
    mut server: Server<Pages>,
    mut nic: N,
    board: &'static Board,
) -> smp::Job {
    let clock = booted.clock;
    let mut log = ConsoleLog::of(&booted.settings);
    let mut rest = SpinThenSleep(rest_of(booted, core));
    let crash = if core + 1 == booted.cores {
        booted.settings.crash
    } else {
        None
    };
    Box::new(move || {
        crate::crash::on_ap(crash);
        let ctx = CoreCtx {
            core,
            board: Some(board),
            stop: &STOP,
        };
        run_core_hooked(
            &mut server,
            &mut nic,
            &clock,
            &mut log,
            &ctx,
            &mut rest,
            u64::MAX,
            |_, _| {},
        );
    })
}

/// Seals the heap (every table is allocated), gives the other cores their jobs and says
/// so on the console. Allocates nothing after the seal.
fn start_serving(
    booted: &Booted,
    t: u64,
    nic: &str,
    mac: EthernetAddress,
    plan: &str,
    jobs: Vec<smp::Job>,
) {
    let jobs: Vec<Box<smp::Job>> = jobs.into_iter().map(Box::new).collect();
    mem::seal();
    crate::boot_trace::mark("engine");
    crate::kprintln!(
        "engine: tables allocated in {} ms",
        (crate::arch::cpu::rdtsc() - t) * 1000 / booted.clock.hz
    );
    for (i, job) in jobs.into_iter().enumerate() {
        if smp::run_on(i + 1, job).is_err() {
            fatal!("no core {} to run its job", i + 1);
        }
    }
    report::ready(booted, nic, mac, plan);
}

/// Core `core`'s idle policy.
fn rest_of(booted: &Booted, core: usize) -> Rest {
    let policy = Policy {
        poll_always: booted.timer.is_none(),
        idle_poll_us: booted.settings.idle_poll_us,
    };
    let timer = booted.timer.unwrap_or(apic::Timer::TscDeadline);
    Rest::new(core, policy, timer, booted.clock)
}

/// The serving NICs' multicast filters (a bond's every NIC) and the groups last set in
/// them.
struct Groups {
    filters: Vec<Box<dyn crate::drivers::Multicast>>,
    listened: Option<[EthernetAddress; 2 + bareweb_engine::iface::slaac::MAX_PREFIXES]>,
}

impl Groups {
    /// Sets the filter to the groups `server`'s IPv6 link listens to, if they changed.
    fn sync(&mut self, server: &Server<Pages>) {
        let want = server.ipv6_link().map(|l| l.multicast_macs());
        if let Some(m) = want.filter(|&m| self.listened != Some(m)) {
            for f in &mut self.filters {
                f.set(&m);
            }
            self.listened = Some(m);
        }
    }
}

/// How often core 0 looks at its IPv6 link: the addresses' news for the console, and the
/// groups it listens to for the NIC's multicast filter.
const IPV6_EVERY_NS: u64 = 100_000_000;

/// Core 0's loop, with the console counters line every second when `log=stats`, and
/// with IPv6 its addresses' news and the NIC's multicast filter kept to its groups.
fn run_core0<N: CoreQueue + Sleeper>(
    mut booted: Booted,
    mut server: Server<Pages>,
    mut nic: N,
    board: &'static Board,
) -> ! {
    let ctx = CoreCtx {
        core: 0,
        board: Some(board),
        stop: &STOP,
    };
    let log_stats = booted.settings.log_stats;
    // Every second: the DHCP address's changes, the counters line (`log=stats`), and a
    // press of the power button the SCI cannot deliver to a core that never halts
    // (`poll=always`; a halting core 0 takes the SCI at its next halt). Not otherwise:
    // an idle core 0 sleeps until a packet, a deadline or another core wakes it.
    let second = log_stats || booted.dhcp.is_some() || booted.timer.is_none();
    let ipv6 = server.config().ipv6;
    let every = match (second, ipv6) {
        (_, true) => IPV6_EVERY_NS,
        (true, false) => 1_000_000_000,
        (false, false) => u64::MAX,
    };
    // ACME's agent: its timers (TCP's, DNS's, the order's polls) every 10 ms; frames for
    // it tick the loop at once (`cores::run`).
    let mut agent = booted.agent.take();
    let every = match agent {
        Some(_) => every.min(crate::acme::TICK_NS),
        None => every,
    };
    // The first second's work (the stats line, the DHCP watch) one tick after start, as
    // before the loop's first tick came right after the first round.
    let mut next_second = booted.clock.now_ns().saturating_add(every);
    let mut groups = Groups {
        filters: core::mem::take(&mut booted.multicast),
        listened: None,
    };
    let drain = server.config().drain;
    let mut watch = booted.dhcp.map(crate::dhcp::Watch::new);
    let clock = booted.clock;
    let mut rest = SpinThenSleep(rest_of(&booted, 0));
    // Tell the link our address now: the first packets for us need not wait for ARP.
    server.announce(&mut nic);
    // The IPv6 link was made before the heap was sealed: the NIC's filter is set now,
    // before DAD's probe can be answered (its delay, below a second, runs from the link's
    // making), not at the first tick 100 ms on.
    groups.sync(&server);
    run_core_hooked(
        &mut server,
        &mut nic,
        &clock,
        &mut ConsoleLog::of(&booted.settings),
        &ctx,
        &mut rest,
        every,
        |server, nic| {
            if let Some(a) = agent.as_mut() {
                let (ip, prefix, _) = server.address();
                let gateway = server.config().gateway;
                let (_, tx) = nic.split();
                a.run((ip, prefix, gateway), clock.now_ns(), clock.unix_secs(), tx);
            }
            if ipv6 {
                while let Some(e) = server.take_ipv6_news() {
                    if let Some(news) = e.news() {
                        crate::kprintln!("bareweb: {news}");
                    }
                }
                groups.sync(server);
            }
            let now = clock.now_ns();
            if !second || now < next_second {
                return;
            }
            next_second = now.saturating_add(1_000_000_000);
            if let Some(w) = watch.as_mut() {
                w.check();
            }
            if log_stats {
                report::print_stats(board, &clock);
            }
            power::poll();
        },
    );
    match drain.filter(|d| d.finished()) {
        Some(d) => {
            report::drain_done(d);
            power::power_off()
        }
        None => crate::arch::cpu::halt_forever(),
    }
}
