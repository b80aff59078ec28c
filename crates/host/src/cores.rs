//! Many cores on Linux (issue 4): one thread per core, pinned to a CPU, each running the
//! engine's per-core loop (`cores::run::run_core`) over its own queue pair.
//!
//! - **Per-queue mode**: a multi-queue TAP (one fd per queue); thread `k` owns queue `k`
//!   and a whole `Server`. Nothing is shared on the request path.
//! - **Network-core mode**: thread 0 owns the single TAP queue wrapped in the engine's
//!   `NetCoreNic`; threads 1.. run `Server`s over ring-backed queue pairs (`RingNic`).
//!
//! Idle policy: a queue-owning thread sleeps in `poll(2)` on its fd as the one-core server
//! always did. In network-core mode a thread spins a short while, then sleeps on an
//! eventfd ([`Wake`]) after announcing it on its [`Doze`](bareweb_engine::ring::Doze):
//! core 0 nudges an HTTP core after forwarding frames to it, an HTTP core nudges core 0
//! after a flush that put frames on its DLIST, and a nudge writes the eventfd only when
//! the other side announced sleep (the engine's doze protocol loses no wake-up). Core 0
//! polls the TAP and its eventfd together. Sleeps are still bounded (1 ms with
//! connections open, so the server's timers run; 10 ms without) and timer slack is 1 µs
//! on these threads.

use std::io;
use std::sync::atomic::AtomicBool;

use bareweb_engine::cores::board::{Board, Role};
use bareweb_engine::cores::netcore::{
    links_dozing, Addressing, NetCoreNic, NetCoreSetup, RingNic, RingSizes,
};
use bareweb_engine::cores::run::{run_core, CoreCtx, Idle, RunSummary};
use bareweb_engine::nic::{Nic, NicCaps, NicCounters};
use bareweb_engine::resource::Lookup;
use bareweb_engine::server::{AccessLog, Config, Server};
use bareweb_engine::stats::{CoreTimes, Stats, Stay};
use bareweb_engine::wire::EthernetAddress;

use crate::wake::{wait_fds_us, Wake};
use crate::{SystemClock, Tap};

/// How the cores share the work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// One core, one queue: the server as it always was.
    Single,
    /// The papers' design: core 0 owns the NIC; with `bsp_http` it serves HTTP too.
    NetCore {
        /// Core 0 serves HTTP as well.
        bsp_http: bool,
    },
    /// One queue pair per core.
    PerQueue,
}

impl Mode {
    /// The board's name for the mode.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Single => "single",
            Mode::NetCore { .. } => "netcore",
            Mode::PerQueue => "perqueue",
        }
    }

    /// Each core's role.
    pub fn roles(self, cores: usize) -> Vec<Role> {
        (0..cores)
            .map(|k| match (self, k) {
                (Mode::Single, _) => Role::Single,
                (Mode::PerQueue, _) => Role::Queue,
                (Mode::NetCore { bsp_http: true }, 0) => Role::NetHttp,
                (Mode::NetCore { bsp_http: false }, 0) => Role::Net,
                (Mode::NetCore { .. }, _) => Role::Http,
            })
            .collect()
    }
}

/// What one core did, for the summary printed at stop.
#[derive(Debug, Clone)]
pub struct CoreReport {
    /// Core number.
    pub core: usize,
    /// Its role.
    pub role: Role,
    /// Its server's counters.
    pub stats: Stats,
    /// RCV / HTTP time.
    pub times: CoreTimes,
    /// Stay times.
    pub stay: Stay,
    /// Its queue pair's counters.
    pub nic: NicCounters,
    /// Elapsed time and idle polls.
    pub run: RunSummary,
    /// Time spent waiting for a lock or the team (the shared-server runners of
    /// `runners`; 0 here, where nothing is shared).
    pub lock_ns: u64,
}

/// Everything every core shares.
pub struct Plan<'a, L> {
    /// The site (copied into every core's server).
    pub site: L,
    /// Server configuration (each core gets a copy; `tcbs` is per core).
    pub cfg: Config,
    /// The server's MAC.
    pub mac: EthernetAddress,
    /// The stats board, if the stats page is on.
    pub board: Option<&'static Board>,
    /// Set to stop every core.
    pub stop: &'a AtomicBool,
    /// Pin thread `k` to CPU `k % cpus`.
    pub pin: bool,
    /// What the transmit sides can do, for servers driven through the split round (the
    /// runners); a server that polls a device asks the device.
    pub caps: NicCaps,
}

/// Pins the calling thread to `cpu`.
pub fn pin_to(cpu: usize) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; zeroed is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: CPU_SET writes one bit inside `set`, whose size bounds `cpu` (checked).
    unsafe {
        if cpu >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "cpu out of range",
            ));
        }
        libc::CPU_SET(cpu, &mut set);
    }
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is this thread.
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// CPUs this process may run on.
pub fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn report<L: Lookup<'static>, N: Nic>(
    core: usize,
    role: Role,
    server: &Server<L>,
    nic: &N,
    run: RunSummary,
) -> CoreReport {
    CoreReport {
        core,
        role,
        stats: server.stats().clone(),
        times: server.times().clone(),
        stay: server.stay().clone(),
        nic: nic.counters(),
        run,
        lock_ns: 0,
    }
}

fn pin(plan_pin: bool, core: usize) {
    if plan_pin {
        if let Err(e) = pin_to(core % cpus()) {
            eprintln!("bareweb: core {core}: cannot pin to a CPU: {e}");
        }
    }
}

/// Runs one `Server` per TAP queue (one queue: the single-core server), each on its own
/// thread, until `plan.stop` is set. `make_log(core)` builds each core's access log.
pub fn run_queues<L, A, F>(taps: Vec<Tap>, plan: &Plan<'_, L>, make_log: F) -> Vec<CoreReport>
where
    L: Lookup<'static> + Copy + Send,
    A: AccessLog,
    F: Fn(usize) -> A + Sync,
{
    let single = taps.len() == 1;
    let role = if single { Role::Single } else { Role::Queue };
    let clock = SystemClock::new();
    std::thread::scope(|s| {
        let handles: Vec<_> = taps
            .into_iter()
            .enumerate()
            .map(|(core, mut tap)| {
                let make_log = &make_log;
                let cfg = plan.cfg.clone();
                let (site, mac, board, stop) = (plan.site, plan.mac, plan.board, plan.stop);
                let pin_it = plan.pin && !single;
                std::thread::Builder::new()
                    .name(format!("bareweb-core{core}"))
                    .spawn_scoped(s, move || {
                        pin(pin_it, core);
                        let mut server = Server::new(cfg, site, mac);
                        if let Some(b) = board {
                            server.serve_stats(b, core);
                        }
                        let mut log = make_log(core);
                        let ctx = CoreCtx { core, board, stop };
                        // Sleep on the queue's fd when idle, as the one-core server does.
                        let run =
                            run_core(&mut server, &mut tap, &clock, &mut log, &ctx, |t, _| {
                                t.wait(10)
                            });
                        report(core, role, &server, &tap, run)
                    })
                    .expect("spawn core thread")
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("core thread panicked"))
            .collect()
    })
}

/// Spins before sleeping, counted in empty polls: core 0's poll is a `read` on the TAP,
/// an HTTP core's a look at its ring (measured: fewer spins on either side cost
/// connection-per-request latency at one connection, more cost CPU the client needs).
const SPIN_POLLS_CORE0: u32 = 64;
const SPIN_POLLS_HTTP: u32 = 2048;
/// Longest sleep while connections are open (their timers tick every 10 ms), in µs.
const SLEEP_BUSY_US: u64 = 1_000;
/// Longest sleep with no connection (bounds how late a stop is noticed), in µs.
const SLEEP_IDLE_US: u64 = 10_000;

/// Lets short sleeps of this thread be short (the default slack is 50 µs).
fn fine_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes an unsigned long by value and touches no memory.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong, 0, 0, 0) };
}

/// Runs the network-core mode over one TAP queue with `cores` cores (core 0 plus
/// `cores - 1` HTTP cores) until `plan.stop` is set.
pub fn run_netcore<L, A, F>(
    tap: Tap,
    cores: usize,
    bsp_http: bool,
    plan: &Plan<'_, L>,
    make_log: F,
) -> Vec<CoreReport>
where
    L: Lookup<'static> + Copy + Send,
    A: AccessLog,
    F: Fn(usize) -> A + Sync,
{
    let clock = SystemClock::new();
    let http = cores.saturating_sub(1);
    let sizes = RingSizes::for_tcbs(plan.cfg.tcbs);
    let wake0 = Wake::new().expect("eventfd for core 0");
    let doze0 = wake0.doze();
    let wakes: Vec<Wake> = (0..http)
        .map(|_| Wake::new().expect("eventfd for an HTTP core"))
        .collect();
    let (net_ends, http_ends): (Vec<_>, Vec<_>) = wakes
        .iter()
        .map(|w| links_dozing(sizes, &doze0, w.doze()))
        .unzip();
    let setup = NetCoreSetup {
        ends: net_ends,
        http_tcbs: plan.cfg.tcbs,
        bsp_tcbs: bsp_http.then_some(plan.cfg.tcbs),
        addressing: Addressing::new(&plan.cfg, plan.mac),
    };
    let (rx, tx) = tap.into_rings();
    let core0_nic = NetCoreNic::new(rx, tx, plan.mac, clock, setup);
    std::thread::scope(|s| {
        let make_log = &make_log;
        let mut handles = Vec::new();
        {
            let mut cfg = plan.cfg.clone();
            if !bsp_http {
                cfg.tcbs = 1; // core 0's own server then only answers ARP, ICMP and strays
            }
            let (site, mac, board, stop, pin_it) =
                (plan.site, plan.mac, plan.board, plan.stop, plan.pin);
            let mut nic = core0_nic;
            let role = if bsp_http { Role::NetHttp } else { Role::Net };
            handles.push(
                std::thread::Builder::new()
                    .name("bareweb-core0".into())
                    .spawn_scoped(s, move || {
                        pin(pin_it, 0);
                        let mut server = Server::new(cfg, site, mac);
                        if let Some(b) = board {
                            server.serve_stats(b, 0);
                        }
                        let mut log = make_log(0);
                        let ctx = CoreCtx {
                            core: 0,
                            board,
                            stop,
                        };
                        fine_timer_slack();
                        let run = run_core(
                            &mut server,
                            &mut nic,
                            &clock,
                            &mut log,
                            &ctx,
                            |n, i: Idle| {
                                if i.polls <= SPIN_POLLS_CORE0 {
                                    std::hint::spin_loop();
                                    return;
                                }
                                doze0.announce();
                                if !n.output_pending() {
                                    let us = if i.connections == 0 && n.map().is_empty() {
                                        SLEEP_IDLE_US
                                    } else {
                                        SLEEP_BUSY_US
                                    };
                                    wait_fds_us(&[n.inner().0.raw_fd(), wake0.raw_fd()], us);
                                    wake0.clear();
                                }
                                doze0.awake();
                            },
                        );
                        report(0, role, &server, &nic, run)
                    })
                    .expect("spawn core thread"),
            );
        }
        for (i, (ends, wake)) in http_ends.into_iter().zip(wakes).enumerate() {
            let core = i + 1;
            let cfg = plan.cfg.clone();
            let (site, mac, board, stop, pin_it) =
                (plan.site, plan.mac, plan.board, plan.stop, plan.pin);
            handles.push(
                std::thread::Builder::new()
                    .name(format!("bareweb-core{core}"))
                    .spawn_scoped(s, move || {
                        pin(pin_it, core);
                        fine_timer_slack();
                        let mut nic = RingNic::new(ends, mac);
                        let mut server = Server::new(cfg, site, mac);
                        if let Some(b) = board {
                            server.serve_stats(b, core);
                        }
                        let mut log = make_log(core);
                        let ctx = CoreCtx { core, board, stop };
                        let run = run_core(
                            &mut server,
                            &mut nic,
                            &clock,
                            &mut log,
                            &ctx,
                            |n: &mut RingNic, i: Idle| {
                                if i.polls <= SPIN_POLLS_HTTP {
                                    std::hint::spin_loop();
                                    return;
                                }
                                n.doze().announce();
                                if !n.input_pending() {
                                    wake.wait_us(if i.connections == 0 {
                                        SLEEP_IDLE_US
                                    } else {
                                        SLEEP_BUSY_US
                                    });
                                }
                                n.doze().awake();
                            },
                        );
                        report(core, Role::Http, &server, &nic, run)
                    })
                    .expect("spawn core thread"),
            );
        }
        handles
            .into_iter()
            .map(|h| h.join().expect("core thread panicked"))
            .collect()
    })
}
