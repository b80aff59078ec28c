//! Many cores on Linux: one thread per core, pinned to a CPU, each running the
//! engine's per-core loop (`cores::run::run_core`) over its own queue pair. What each core
//! is (its role, its server, the network core's rings) comes from the engine's
//! `cores::plan`, as on the bare machine; this module only starts the threads, pins them
//! and idles them. It is generic over the device ([`HostQueue`]: the TAP, and a set of
//! TAPs bonded into one queue pair per core, for bonding), so another device (AF_XDP) plugs
//! in without a copy of this module.
//!
//! - **Per-queue mode** (and one core): thread `k` owns queue `k` and a whole `Server`.
//!   Nothing is shared on the request path.
//! - **Network-core mode**: thread 0 owns the single queue wrapped in the engine's
//!   `NetCoreNic`; threads 1.. run `Server`s over ring-backed queue pairs (`RingNic`).
//!
//! Idle policy (the engine's `cores::run::SpinThenSleep`, over this module's steps): a
//! queue-owning thread sleeps in `poll(2)` on its fd as the one-core server always did. In network-core mode a thread spins a short while, then sleeps on an
//! eventfd ([`Wake`]) after announcing it on its [`Doze`](bareweb_engine::ring::Doze):
//! core 0 nudges an HTTP core after forwarding frames to it, an HTTP core nudges core 0
//! after a flush that put frames on its DLIST, and a nudge writes the eventfd only when
//! the other side announced sleep (the engine's doze protocol loses no wake-up). Core 0
//! polls the device and its eventfd together. Sleeps are still bounded (1 ms with
//! connections open, so the server's timers run; 10 ms without) and timer slack is 1 µs
//! on these threads.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::AtomicBool;

use bareweb_engine::bond::BondNic;
use bareweb_engine::cores::board::{Board, Role};
use bareweb_engine::cores::netcore::NetCoreNic;
use bareweb_engine::cores::netcore::RingNic;
use bareweb_engine::cores::plan::{Mode, Plan};
use bareweb_engine::cores::run::{
    run_core_hooked, CoreCtx, Idle, Quiet, RunSummary, Sleep, SpinThenSleep,
};
use bareweb_engine::cores::{CoreQueue, DispatchCounters};
use bareweb_engine::nic::{Clock, NicCaps, NicCounters, RxRing, TxRing};
use bareweb_engine::resource::Lookup;
use bareweb_engine::ring::Doze;
use bareweb_engine::server::{AccessLog, Config, Server};
use bareweb_engine::stats::{CoreTimes, Stats, Stay};
use bareweb_engine::wire::EthernetAddress;

use crate::reload::{CoreHook, NoHook};
use crate::tap::{TapRx, TapTx};
use crate::wake::{wait_fds_us, Wake};
use crate::{SystemClock, Tap};

/// A device queue pair the core threads can drive: the engine's [`Nic`] plus what a thread
/// needs to idle on it and to hand its two sides to the network core.
pub trait HostQueue: CoreQueue + Send {
    /// The descriptors that become readable when a frame arrives (an idle thread polls
    /// them, core 0 of network-core mode together with its eventfd).
    fn rx_fds(&self) -> Vec<RawFd>;
    /// Waits up to `us` microseconds for a frame to arrive.
    fn wait_us(&self, us: u64);
    /// The two sides, owned apart (network-core mode's core 0 wraps them).
    fn into_rings(self) -> (Self::Rx, Self::Tx);
}

impl CoreQueue for Tap {}

impl HostQueue for Tap {
    fn rx_fds(&self) -> Vec<RawFd> {
        vec![Tap::rx_fd(self)]
    }

    fn wait_us(&self, us: u64) {
        Tap::wait_us(self, us)
    }

    fn into_rings(self) -> (Self::Rx, Self::Tx) {
        Tap::into_rings(self)
    }
}

/// A TAP queue of every NIC of a set (bonding): its receive side is the receive NIC's,
/// but an idle thread waits on every TAP (a failover may move the receive NIC, and the
/// others' frames are drained and counted).
impl HostQueue for BondNic<TapRx, TapTx> {
    fn rx_fds(&self) -> Vec<RawFd> {
        self.rings().0.iter().map(TapRx::raw_fd).collect()
    }

    fn wait_us(&self, us: u64) {
        wait_fds_us(&self.rx_fds(), us);
    }

    fn into_rings(self) -> (Self::Rx, Self::Tx) {
        BondNic::into_rings(self)
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
    /// Network-core dispatch counters (a runner thread's send time in `drain_ns`).
    pub dispatch: DispatchCounters,
    /// Elapsed time and idle polls.
    pub run: RunSummary,
    /// Time spent waiting for a lock or the team (the shared-server runners of
    /// `runners`; 0 here, where nothing is shared).
    pub lock_ns: u64,
}

/// How the core threads run.
#[derive(Debug, Clone, Copy)]
pub struct Threads<'a> {
    /// Set to stop every core.
    pub stop: &'a AtomicBool,
    /// Pin thread `k` to CPU `k % cpus` (with more than one core).
    pub pin: bool,
}

/// What the threads of a shared-server runner (`runners`) share besides the `Server`.
pub struct Shared<'a, L> {
    /// The site.
    pub site: L,
    /// Server configuration.
    pub cfg: Config,
    /// The server's MAC.
    pub mac: EthernetAddress,
    /// The stats board, if the stats page is on.
    pub board: Option<&'static Board>,
    /// Set to stop every thread.
    pub stop: &'a AtomicBool,
    /// What the transmit sides can do: the server is driven through the split round, so
    /// it cannot ask the device.
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

fn report<L: Lookup<'static>, N: CoreQueue>(
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
        dispatch: nic.dispatch_counters(),
        run,
        lock_ns: 0,
    }
}

fn pin(threads: &Threads<'_>, core: usize) {
    if threads.pin {
        if let Err(e) = pin_to(core % cpus()) {
            eprintln!("bareweb: core {core}: cannot pin to a CPU: {e}");
        }
    }
}

/// Runs the cores of `plan` over `queues` (network-core mode: the first queue; otherwise
/// one queue per core, one queue for the single core), each on its own thread, until
/// `threads.stop` is set. `make_log(core)` builds each core's access log.
///
/// # Panics
///
/// If `queues` does not hold a queue for every core the mode needs (a bug in the caller).
pub fn run<Q, L, A, F>(
    plan: &Plan<L>,
    queues: Vec<Q>,
    threads: Threads<'_>,
    make_log: F,
) -> Vec<CoreReport>
where
    Q: HostQueue,
    Q::Rx: Send,
    Q::Tx: Send,
    L: Lookup<'static> + Copy + Send + Sync,
    A: AccessLog,
    F: Fn(usize) -> A + Sync,
{
    run_hooked(plan, queues, threads, make_log, &NoHook)
}

/// [`run`] with `hook` called on every core between rounds (a reload's swap:
/// [`crate::reload`]).
pub fn run_hooked<Q, L, A, F, H>(
    plan: &Plan<L>,
    queues: Vec<Q>,
    threads: Threads<'_>,
    make_log: F,
    hook: &H,
) -> Vec<CoreReport>
where
    Q: HostQueue,
    Q::Rx: Send,
    Q::Tx: Send,
    L: Lookup<'static> + Copy + Send + Sync,
    A: AccessLog,
    F: Fn(usize) -> A + Sync,
    H: CoreHook<L>,
{
    match plan.mode {
        Mode::NetCore { .. } => {
            let q = queues.into_iter().next().expect("a queue for core 0");
            run_netcore(q, plan, threads, make_log, hook)
        }
        Mode::Single | Mode::PerQueue => {
            assert_eq!(queues.len(), plan.cores, "a queue per core");
            run_queues(queues, plan, threads, make_log, hook)
        }
    }
}

/// One `Server` per queue (one queue: the single-core server).
fn run_queues<Q, L, A, F, H>(
    queues: Vec<Q>,
    plan: &Plan<L>,
    threads: Threads<'_>,
    make_log: F,
    hook: &H,
) -> Vec<CoreReport>
where
    Q: HostQueue,
    L: Lookup<'static> + Copy + Send + Sync,
    A: AccessLog,
    F: Fn(usize) -> A + Sync,
    H: CoreHook<L>,
{
    let single = queues.len() == 1;
    let clock = SystemClock::new();
    // Made together: in the per-queue mode the servers share the IPv6 link.
    let servers = plan.servers();
    std::thread::scope(|s| {
        let handles: Vec<_> = queues
            .into_iter()
            .zip(servers)
            .enumerate()
            .map(|(core, (mut q, mut server))| {
                let make_log = &make_log;
                let threads = Threads {
                    pin: threads.pin && !single,
                    ..threads
                };
                std::thread::Builder::new()
                    .name(format!("bareweb-core{core}"))
                    .spawn_scoped(s, move || {
                        pin(&threads, core);
                        let mut log = make_log(core);
                        let ctx = CoreCtx {
                            core,
                            board: plan.board,
                            stop: threads.stop,
                        };
                        let run = run_core_hooked(
                            &mut server,
                            &mut q,
                            &clock,
                            &mut log,
                            &ctx,
                            &mut SpinThenSleep(OnQueue),
                            hook.every_ns(),
                            |s, n| hook.tick(core, s, n),
                        );
                        report(core, plan.role(core), &server, &q, run)
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

/// A queue-owning thread's steps of the engine's idle policy: no spin, no announcement
/// (the device itself wakes the thread): it sleeps on the queue's descriptors, as the
/// one-core server always did, until the next timer at the latest.
struct OnQueue;

impl<Q: HostQueue> Sleep<Q> for OnQueue {
    /// Microseconds to wait.
    type Until = u64;

    fn spin(&mut self, _: &Idle) -> bool {
        false
    }

    fn until(&mut self, _: &mut Q, i: &Idle, _: &mut dyn Quiet) -> Option<u64> {
        Some(i.timer_in_us.clamp(1, SLEEP_IDLE_US))
    }

    fn announce(&mut self, _: &mut Q) -> bool {
        false
    }

    fn sleep(&mut self, q: &mut Q, us: u64) {
        q.wait_us(us);
    }

    fn awake(&mut self, _: &mut Q) {}
}

/// Network-core mode's core 0: spins [`SPIN_POLLS_CORE0`] polls, then announces its sleep
/// on its doze and waits on the device and its eventfd together, unless an HTTP core's
/// frames wait to be sent.
struct Core0Rest<'a> {
    fds: &'a [RawFd],
    wake: &'a Wake,
    doze: &'a Doze,
}

impl<R: RxRing, T: TxRing, C: Clock + Clone> Sleep<NetCoreNic<R, T, C>> for Core0Rest<'_> {
    /// Microseconds to wait.
    type Until = u64;

    fn spin(&mut self, i: &Idle) -> bool {
        if i.polls <= SPIN_POLLS_CORE0 {
            std::hint::spin_loop();
            return true;
        }
        false
    }

    fn until(&mut self, n: &mut NetCoreNic<R, T, C>, i: &Idle, _: &mut dyn Quiet) -> Option<u64> {
        let us = if i.connections == 0 && n.map().is_empty() {
            SLEEP_IDLE_US
        } else {
            SLEEP_BUSY_US
        };
        Some(us.min(i.timer_in_us.max(1)))
    }

    fn announce(&mut self, n: &mut NetCoreNic<R, T, C>) -> bool {
        self.doze.announce();
        let pending = n.output_pending();
        if pending {
            self.doze.awake();
        }
        pending
    }

    fn sleep(&mut self, _: &mut NetCoreNic<R, T, C>, us: u64) {
        wait_fds_us(self.fds, us);
        self.wake.clear();
    }

    fn awake(&mut self, _: &mut NetCoreNic<R, T, C>) {
        self.doze.awake();
    }
}

/// Network-core mode's HTTP core: spins [`SPIN_POLLS_HTTP`] polls, then announces its
/// sleep on its ring's doze and waits on its eventfd, unless frames came on its ring.
struct HttpRest(Wake);

impl Sleep<RingNic> for HttpRest {
    /// Microseconds to wait.
    type Until = u64;

    fn spin(&mut self, i: &Idle) -> bool {
        if i.polls <= SPIN_POLLS_HTTP {
            std::hint::spin_loop();
            return true;
        }
        false
    }

    fn until(&mut self, _: &mut RingNic, i: &Idle, _: &mut dyn Quiet) -> Option<u64> {
        let us = if i.connections == 0 {
            SLEEP_IDLE_US
        } else {
            SLEEP_BUSY_US
        };
        Some(us.min(i.timer_in_us.max(1)))
    }

    fn announce(&mut self, n: &mut RingNic) -> bool {
        n.doze().announce();
        let pending = n.input_pending();
        if pending {
            n.doze().awake();
        }
        pending
    }

    fn sleep(&mut self, _: &mut RingNic, us: u64) {
        self.0.wait_us(us);
    }

    fn awake(&mut self, n: &mut RingNic) {
        n.doze().awake();
    }
}

/// Network-core mode over one queue: core 0 plus `plan.cores - 1` HTTP cores.
fn run_netcore<Q, L, A, F, H>(
    queue: Q,
    plan: &Plan<L>,
    threads: Threads<'_>,
    make_log: F,
    hook: &H,
) -> Vec<CoreReport>
where
    Q: HostQueue,
    Q::Rx: Send,
    Q::Tx: Send,
    L: Lookup<'static> + Copy + Send + Sync,
    A: AccessLog,
    F: Fn(usize) -> A + Sync,
    H: CoreHook<L>,
{
    let clock = SystemClock::new();
    let wake0 = Wake::new().expect("eventfd for core 0");
    let doze0 = wake0.doze();
    let wakes: Vec<Wake> = (1..plan.cores)
        .map(|_| Wake::new().expect("eventfd for an HTTP core"))
        .collect();
    // The descriptors stay open as long as core 0's queue pair owns the receive side.
    let mut fds = queue.rx_fds();
    fds.push(wake0.raw_fd());
    let (rx, tx) = queue.into_rings();
    let queues = plan.netcore(rx, tx, clock, &doze0, |k| wakes[k - 1].doze());
    std::thread::scope(|s| {
        let make_log = &make_log;
        let mut handles = Vec::new();
        {
            let mut nic = queues.core0;
            handles.push(
                std::thread::Builder::new()
                    .name("bareweb-core0".into())
                    .spawn_scoped(s, move || {
                        pin(&threads, 0);
                        let mut server = plan.server(0);
                        let mut log = make_log(0);
                        let ctx = CoreCtx {
                            core: 0,
                            board: plan.board,
                            stop: threads.stop,
                        };
                        fine_timer_slack();
                        let mut rest = SpinThenSleep(Core0Rest {
                            fds: &fds,
                            wake: &wake0,
                            doze: &doze0,
                        });
                        let run = run_core_hooked(
                            &mut server,
                            &mut nic,
                            &clock,
                            &mut log,
                            &ctx,
                            &mut rest,
                            hook.every_ns(),
                            |s, n| hook.tick(0, s, n),
                        );
                        report(0, plan.role(0), &server, &nic, run)
                    })
                    .expect("spawn core thread"),
            );
        }
        for (i, (mut nic, wake)) in queues.http.into_iter().zip(wakes).enumerate() {
            let core = i + 1;
            handles.push(
                std::thread::Builder::new()
                    .name(format!("bareweb-core{core}"))
                    .spawn_scoped(s, move || {
                        pin(&threads, core);
                        fine_timer_slack();
                        let mut server = plan.server(core);
                        let mut log = make_log(core);
                        let ctx = CoreCtx {
                            core,
                            board: plan.board,
                            stop: threads.stop,
                        };
                        let run = run_core_hooked(
                            &mut server,
                            &mut nic,
                            &clock,
                            &mut log,
                            &ctx,
                            &mut SpinThenSleep(HttpRest(wake)),
                            hook.every_ns(),
                            |s, n| hook.tick(core, s, n),
                        );
                        report(core, plan.role(core), &server, &nic, run)
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
