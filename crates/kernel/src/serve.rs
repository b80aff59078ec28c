//! Start-up after the boot information is read, and what every core runs.
//!
//! Order: command line → processors (ACPI MADT, read before the heap may cover the
//! firmware's tables) → site → heap → clock → site check → APIC and the other cores (each
//! waits for its job) → PCI scan → NIC (the first device a [`Driver`] drives), with a queue
//! pair per core when the plan can use them → the engine's plan → one `Server` per serving
//! core, the stats board → heap sealed → a job for every other core → core 0's loop.
//!
//! The plan (issue 4) is the engine's `cores::plan`, the same code the host runs: it
//! chooses the mode from the cores, the `mode=` word and the queue pairs the NIC gave, the
//! role and server configuration of each core, and wires the network core. Here only the
//! cores are started and the driver is brought up; every step is generic over the
//! [`Driver`], so a new driver plugs in without a copy of this file.
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
//! line read. Without a PCI NIC, a virtio-mmio one (a microVM) is looked for.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::AtomicBool;

use bareweb_engine::bond::{Bond, BondRole};
use bareweb_engine::cores::board::{Board, WithStatsPage};
use bareweb_engine::cores::pages::PageSettings;
use bareweb_engine::cores::plan::{self, Asked, Mode, Plan};
use bareweb_engine::cores::run::{run_core_hooked, CoreCtx};
use bareweb_engine::cores::CoreQueue;
use bareweb_engine::dhcp::shared::Shared as DhcpShared;
use bareweb_engine::dhcp::{Client as DhcpClient, Timing as DhcpTiming};
use bareweb_engine::nic::{Clock, NicCounters, RxRing, TxRing};
use bareweb_engine::resource::{Found, Lookup, Redirect, Resource};
use bareweb_engine::ring::Doze;
use bareweb_engine::server::{AccessLog, AccessRecord, Config, Server};
use bareweb_engine::site::Site;
use bareweb_engine::wire::EthernetAddress;

use crate::arch::{apic, smp};
use crate::boot_info::{BootInfo, Region};
use crate::clock::{Calibration, TscClock};
use crate::cmdline::{self, CoreMode, Settings};
use crate::drivers::any::AnyNic;
use crate::drivers::e1000::E1000;
use crate::drivers::virtio_net::VirtioNet;
use crate::drivers::Driver;
use crate::drivers::{Open, WakeRx};
use crate::nics;
use crate::pci::{self, Device};
use crate::rest::{self, Policy, Rest, Sleeper};
use crate::{acpi, embedded, fatal, kprintln, mem};

/// Whether a driver here drives `d` (the list is `drivers::any`'s: a new driver is a
/// [`Driver`] impl and a variant there).
fn drivable(d: &Device) -> bool {
    AnyNic::matches(d)
}

/// Never set: the kernel's cores run until the machine stops.
static STOP: AtomicBool = AtomicBool::new(false);

/// Boots the rest of the way and serves; never returns.
pub fn boot(info: &BootInfo) -> ! {
    let emb = embedded::get();
    // The command line baked into a single-file image comes first; the loader's words
    // (QEMU -append, GRUB) override it.
    let baked = emb.map_or("", |(_, _, c)| core::str::from_utf8(c).unwrap_or(""));
    let line = info.cmdline().trim();
    kprintln!(
        "boot: {} cmdline {:?} (built in: {:?})",
        info.protocol,
        line,
        baked
    );
    let complain = |c: cmdline::Complaint<'_>| kprintln!("cmdline: {:?}: {}", c.word, c.why);
    let settings = cmdline::parse(baked, complain);
    let settings = cmdline::parse_over(settings, line, complain);
    match settings.crash {
        Some(cmdline::Crash::Panic) => panic!("crash=panic on the command line"),
        Some(cmdline::Crash::Fault) => {
            // SAFETY: deliberately reads an unmapped address (above the 4 GiB identity
            // map) to raise a page fault; the handler reports it and stops.
            let v = unsafe { core::ptr::read_volatile(0x10_0000_0000 as *const u64) };
            kprintln!("crash=fault: read {v} and did not fault");
        }
        _ => {}
    }
    // Firmware tables may lie in RAM the loader calls usable: read them before the heap.
    let procs = acpi::processors(info);
    crate::boot_trace::mark("acpi");
    let (site_at, site_len, from) = match (emb, info.modules().first()) {
        (Some((a, l, _)), _) => (a, l, "embedded"),
        (None, Some(m)) => (m.start, m.len, "module 0"),
        (None, None) => fatal!("no site: give one as boot module 0 (QEMU -initrd) or embed it (bareweb build -o site.elf)"),
    };
    let site_span = Region {
        start: site_at,
        end: site_at + site_len,
    };
    let reserved = [site_span, info.framebuffer_span()];
    let heap = match mem::init(info, &reserved) {
        Some(h) => h,
        None => fatal!("no usable memory for the heap in the memory map"),
    };
    let k = mem::kernel_span();
    kprintln!(
        "mem: kernel {:#x}..{:#x}, site {:#x}..{:#x} ({from}), heap {:#x}..{:#x} ({} MiB)",
        k.start,
        k.end,
        site_at,
        site_at + site_len,
        heap.start,
        heap.end,
        (heap.end - heap.start) >> 20
    );
    crate::boot_trace::mark("heap");
    // The local APIC first: the calibration window that overlaps the site check measures
    // its timer too.
    let apic_mode = apic::init_bsp(settings.x2apic);
    let cal = Calibration::begin(apic_mode != apic::Mode::None && !settings.poll_always);
    let t_site = crate::arch::cpu::rdtsc();
    // SAFETY: the site lies in RAM below 4 GiB (checked by the loader's placement and
    // embedded::get), identity-mapped, and excluded from the heap: nothing writes it.
    let image: &'static [u8] =
        unsafe { core::slice::from_raw_parts(site_at as *const u8, site_len as usize) };
    let site = Site::load(image);
    let site_ticks = crate::arch::cpu::rdtsc() - t_site;
    crate::boot_trace::mark("site");
    let (clock, apic_hz) = cal.finish();
    kprintln!(
        "clock: TSC {}.{:03} MHz ({}{}), RTC {}",
        clock.hz / 1_000_000,
        clock.hz / 1000 % 1000,
        if clock.calibrated {
            "PIT-calibrated"
        } else {
            "NOT calibrated: CPUID/guess"
        },
        if clock.invariant {
            ", invariant"
        } else {
            ", not invariant"
        },
        bareweb_engine::http::clf_date(bareweb_engine::nic::Clock::unix_secs(&clock))
    );
    crate::boot_trace::mark("clock");
    let site = match site {
        Ok(s) => s,
        Err(e) => fatal!("site image ({from}, {site_len} bytes): {e}"),
    };
    let ms = |t: u64| (crate::arch::cpu::rdtsc() - t) * 1000 / clock.hz;
    kprintln!(
        "site: {} files checked in {} ms",
        site.len(),
        site_ticks * 1000 / clock.hz
    );
    crate::console::screen_up(info, clock.hz);
    // The site's configuration can turn the stats page off too (bareweb.toml [stats]).
    let mut settings = settings;
    settings.stats_page &= site.pages().stats.or(true);
    let t_smp = crate::arch::cpu::rdtsc();
    let cores = crate::cores::start_cores(&settings, &procs, &clock, apic_mode);
    kprintln!("smp: {cores} core(s) running in {} ms", ms(t_smp));
    crate::boot_trace::mark("smp");
    let timer = rest::wake_setup(&settings, &procs, &clock, apic_hz);
    if matches!(
        settings.crash,
        Some(cmdline::Crash::FaultAp | cmdline::Crash::OverflowAp)
    ) && cores == 1
    {
        kprintln!("crash: there is no application core to fail");
    }
    let t_pci = crate::arch::cpu::rdtsc();
    let mut found: Vec<Device> = Vec::new();
    pci::enumerate(|d| {
        kprintln!(
            "pci: {} {:04x}:{:04x} class {:02x}{:02x}",
            d.addr,
            d.vendor,
            d.device,
            d.class.0,
            d.class.1
        );
        if drivable(d) {
            found.push(*d);
        }
    });
    kprintln!("pci: scanned in {} ms", ms(t_pci));
    crate::boot_trace::mark("pci");
    let ctx = Start {
        site,
        settings,
        clock,
        cores,
        timer,
        dhcp: None,
        dhcp_client: None,
    };
    if found.is_empty() {
        // No PCI NIC: a microVM's virtio-mmio one, if there is one.
        match crate::drivers::virtio::mmio::find_net(&ctx.settings, &procs) {
            Some(slot) => ctx.serve_mmio(slot),
            None => fatal!(
                "no supported NIC: no virtio-net or e1000 on PCI, no virtio-mmio network device"
            ),
        }
    }
    ctx.serve_found(&found)
}

/// What every plan needs.
struct Start {
    site: Site<'static>,
    settings: Settings,
    clock: TscClock,
    cores: usize,
    /// The idle cores' timer (None: cores poll and never halt).
    timer: Option<apic::Timer>,
    /// `ip=dhcp`: the address the cores share, once acquired.
    dhcp: Option<&'static DhcpShared>,
    /// `ip=dhcp`: the client, bound, until core 0's server takes it.
    dhcp_client: Option<DhcpClient>,
}

/// The site, with or without the stats page (`stats_page=`): one type for every core.
#[derive(Clone, Copy)]
enum Pages {
    Plain(Site<'static>),
    WithStats(WithStatsPage<Site<'static>>),
}

impl Lookup<'static> for Pages {
    fn lookup(&self, path: &[u8]) -> Found<'static> {
        match self {
            Pages::Plain(s) => s.lookup(path),
            Pages::WithStats(s) => s.lookup(path),
        }
    }

    fn redirect(&self, path: &[u8]) -> Option<Redirect<'static>> {
        match self {
            Pages::Plain(s) => s.redirect(path),
            Pages::WithStats(s) => s.redirect(path),
        }
    }

    fn error_page(&self, status: u16) -> Option<Resource<'static>> {
        match self {
            Pages::Plain(s) => s.error_page(status),
            Pages::WithStats(s) => s.error_page(status),
        }
    }

    fn common_headers(&self) -> &'static str {
        match self {
            Pages::Plain(s) => s.common_headers(),
            Pages::WithStats(s) => s.common_headers(),
        }
    }
}

/// Common Log Format lines on the console (one VM exit per byte: for debugging), when on;
/// on the screen, rate-limited ([`crate::console::print_busy`]).
struct ConsoleLog(bool);

impl AccessLog for ConsoleLog {
    fn record(&mut self, r: &AccessRecord<'_>) {
        if !self.0 {
            return;
        }
        crate::console::print_busy(format_args!("{}\n", r.clf()));
    }
}

fn isn_key() -> [u8; 16] {
    let a = crate::arch::cpu::rdrand().unwrap_or_else(crate::arch::cpu::rdtsc);
    let b = crate::arch::cpu::rdrand()
        .unwrap_or_else(|| crate::arch::cpu::rdtsc().rotate_left(29) ^ 0x9E37_79B9_7F4A_7C15);
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&a.to_le_bytes());
    k[8..].copy_from_slice(&b.to_le_bytes());
    k
}

impl Start {
    fn config(&self) -> Config {
        let mut cfg = self.settings.config(isn_key());
        cfg.dhcp = self.dhcp;
        cfg
    }

    /// `ip=dhcp`: gets a lease on the first NIC before serving (see [`crate::dhcp`]); the
    /// servers start on its address, core 0's with the client.
    fn acquire_address(&mut self, opened: &mut nics::Opened) {
        let clock: &'static TscClock = Box::leak(Box::new(self.clock));
        let shared: &'static DhcpShared = Box::leak(Box::new(DhcpShared::new().with_clock(clock)));
        let mac = opened.macs[0];
        let mut client = DhcpClient::new(mac, crate::dhcp::seed(), DhcpTiming::default());
        let Some(first) = opened.nics.first_mut() else {
            fatal!("dhcp: no NIC")
        };
        let lease = crate::dhcp::acquire(first, mac, &self.clock, &mut client, shared);
        self.settings.ip = lease.address;
        self.settings.prefix = lease.prefix_len;
        self.settings.gateway = lease.router;
        self.dhcp = Some(shared);
        self.dhcp_client = Some(client);
    }

    /// The server's own pages: the stats page as the command line and the site say;
    /// metrics and the health check only if the site's configuration turns them on; who
    /// may read the stats and metrics as `stats_allow=` says, else the site.
    fn page_settings(&self) -> PageSettings {
        let mut p =
            PageSettings::resolve(&self.site.pages(), self.settings.stats_page, false, false);
        if let Some((net, len)) = self.settings.stats_allow {
            p.allow = (net.0, len);
        }
        p
    }

    fn pages(&self) -> Pages {
        let p = self.page_settings();
        if p.stats {
            Pages::WithStats(WithStatsPage(self.site, p.base))
        } else {
            Pages::Plain(self.site)
        }
    }

    /// Serves on the NICs `devs` (every drivable one found, in PCI order) with the driver
    /// of the first (see [`drivable`]); a set is of one driver.
    fn serve_found(self, devs: &[Device]) -> ! {
        let dev = &devs[0];
        if AnyNic::matches(dev) {
            // A set is of one driver: the first's.
            let same = |d: &&Device| {
                VirtioNet::matches(d) == VirtioNet::matches(dev)
                    && E1000::matches(d) == E1000::matches(dev)
            };
            let devs: Vec<Device> = devs.iter().filter(same).copied().collect();
            self.serve(&devs)
        } else {
            fatal!("pci: no driver for {}", dev.addr)
        }
    }

    /// Brings the NICs up with as many queue pairs as the plan can use (every NIC of the
    /// driver when bonding, else the first), lets the engine's plan choose the mode from
    /// what they gave, and serves; on a NIC set, every core's queue pair is a `BondNic`.
    fn serve(self, devs: &[Device]) -> ! {
        let asked = self.settings.mode.map(|m| match m {
            CoreMode::NetCore => Asked::NetCore,
            CoreMode::PerQueue => Asked::PerQueue,
        });
        let want = plan::queues_wanted(self.cores, asked);
        let found = devs.len();
        let bonding = nics::bonding(&self.settings, found);
        let max = if bonding.is_some() { found } else { 1 };
        let wake = self.wake_targets();
        let with = Open {
            pairs: want,
            wake: &wake,
            offload: self.settings.offload,
        };
        let opened = nics::open(devs, &with, max, self.clock.hz);
        self.serve_opened(opened, bonding, asked)
    }

    /// Queue pair k belongs to core k: its receive interrupt wakes that core (none when
    /// the cores never halt).
    fn wake_targets(&self) -> Vec<u32> {
        match self.timer {
            Some(_) => (0..self.cores).map(smp::apic_id).collect(),
            None => Vec::new(),
        }
    }

    /// Serves on the virtio-net device of a virtio-mmio slot (a microVM): one queue pair.
    fn serve_mmio(self, slot: crate::drivers::virtio::mmio::Slot) -> ! {
        let wake = self.wake_targets();
        let with = Open {
            pairs: 1,
            wake: &wake,
            offload: self.settings.offload,
        };
        let t = crate::arch::cpu::rdtsc();
        let queues = match VirtioNet::open_mmio(slot, &with) {
            Ok(q) => q.into_iter().map(AnyNic::from).collect(),
            Err(e) => fatal!("virtio-net at virtio-mmio {:#x}: {e:?}", slot.base),
        };
        let at = alloc::format!("virtio-mmio {:#x} (GSI {})", slot.base, slot.gsi);
        let opened = nics::opened(queues, 1, &at, self.settings.offload, t, self.clock.hz);
        let asked = self.settings.mode.map(|m| match m {
            CoreMode::NetCore => Asked::NetCore,
            CoreMode::PerQueue => Asked::PerQueue,
        });
        self.serve_opened(opened, None, asked)
    }

    /// Serves on the NICs opened (see [`Start::serve`]).
    fn serve_opened(
        mut self,
        mut opened: nics::Opened,
        bonding: Option<(
            bareweb_engine::bond::Mode,
            bareweb_engine::bond::Policy,
            u32,
        )>,
        asked: Option<Asked>,
    ) -> ! {
        let driver = opened
            .nics
            .first()
            .and_then(|q| q.first())
            .map_or("NIC", AnyNic::name);
        if self.settings.client.on {
            // The UDP client (issue 13) on the first NIC.
            let first = opened.nics.into_iter().next().unwrap_or_default();
            crate::client::run(&self.settings, self.clock, first);
        }
        if self.settings.dhcp {
            self.acquire_address(&mut opened);
        }
        let queues = opened.nics.first().map_or(0, Vec::len);
        let decision = plan::decide(self.cores, asked, self.settings.bsp_http, queues);
        crate::boot_trace::mark("nic");
        kprintln!(
            "mode: {} ({}), {} of {} queue pair(s)",
            decision.mode.name(),
            decision.why,
            queues,
            opened.offered
        );
        let t = crate::arch::cpu::rdtsc();
        let mut cfg = self.config();
        let mac = opened.macs[0];
        let Some((mode, policy, ms)) = bonding else {
            let plan = Plan::new(decision.mode, self.cores, self.pages(), cfg, mac)
                .with_board(self.page_settings());
            let mut nics = opened.nics.into_iter().next().unwrap_or_default();
            match decision.mode {
                Mode::NetCore { .. } => match nics.pop() {
                    Some(nic) if nics.is_empty() => {
                        let (rx, tx) = nic.into_rings();
                        self.netcore(&plan, rx, tx, nics::device_counters, driver, t)
                    }
                    _ => fatal!("netcore: {} queue pairs for one NIC owner", nics.len() + 1),
                },
                Mode::Single | Mode::PerQueue => self.per_queue(&plan, nics, driver, t),
            }
        };
        let bond = match Bond::new(mode, policy, &opened.macs, ms, self.cores) {
            Ok(b) => b.leak(),
            Err(e) => fatal!("bond: {e}"),
        };
        cfg.bond = Some(BondRole {
            bond,
            core: 0,
            announcer: true,
        });
        kprintln!(
            "bond: {} over {} {} NICs, NIC 0 receives, policy {}, links read every {ms} ms",
            mode.name(),
            bond.count(),
            driver,
            policy.name()
        );
        let plan = Plan::new(decision.mode, self.cores, self.pages(), cfg, mac)
            .with_board(self.page_settings());
        let name = alloc::format!("{} {}", bond.count(), driver);
        match decision.mode {
            Mode::NetCore { .. } => {
                let mut sets = nics::sets(bond, opened, 1, self.clock);
                let Some(set) = sets.pop() else {
                    fatal!("netcore: no queue pair for the NIC owner")
                };
                let (rx, tx) = set.into_rings();
                self.netcore(&plan, rx, tx, nics::bond_counters, &name, t)
            }
            Mode::Single | Mode::PerQueue => {
                let sets = nics::sets(bond, opened, plan.cores, self.clock);
                self.per_queue(&plan, sets, &name, t)
            }
        }
    }

    /// A core per queue pair, each with a whole `Server` (one core: the single server).
    fn per_queue<N: CoreQueue + Sleeper + Send + 'static>(
        mut self,
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
        for (core, nic) in nics.into_iter().enumerate() {
            let mut server = plan.server(core);
            if core == 0 {
                if let Some(c) = self.dhcp_client.take() {
                    server.own_dhcp(c);
                }
                mine = Some((server, nic));
            } else {
                jobs.push(self.ap_job(core, server, nic, board));
            }
        }
        let what = match plan.mode {
            Mode::Single => "one core".into(),
            _ => alloc::format!("perqueue: {n} cores, a {name} queue pair and a server each"),
        };
        self.start_serving(t, name, mac, &what, jobs);
        match mine {
            Some((server, nic)) => self.run_core0(server, nic, board),
            None => fatal!("{}: no queue pair for core 0", plan.mode.name()),
        }
    }

    /// Network-core mode: core 0 owns the device's two sides `rx` and `tx` (a driver's or
    /// a NIC set's, whose counters `device` reads), HTTP cores are fed by the engine's
    /// rings.
    fn netcore<R: RxRing + WakeRx + 'static, T: TxRing + 'static>(
        mut self,
        plan: &Plan<Pages>,
        rx: R,
        tx: T,
        device: fn(&R, &T, &mut NicCounters),
        name: &str,
        t: u64,
    ) -> ! {
        let board = plan.board.expect("the kernel's plan has a board");
        // Halting cores wake each other with an IPI when a ring gets work; cores that
        // never halt get doze-less links (a nudge is a branch).
        let doze = |core: usize| match self.timer {
            Some(_) => rest::ipi_doze(smp::apic_id(core)),
            None => Doze::none(),
        };
        let doze0 = doze(0);
        let queues = plan.netcore(rx, tx, self.clock, &doze0, doze);
        let mut jobs: Vec<smp::Job> = Vec::with_capacity(plan.cores);
        for (i, ring) in queues.http.into_iter().enumerate() {
            let core = i + 1;
            jobs.push(self.ap_job(core, plan.server(core), ring, board));
        }
        let mut server = plan.server(0);
        if let Some(c) = self.dhcp_client.take() {
            server.own_dhcp(c);
        }
        let bsp_http = matches!(plan.mode, Mode::NetCore { bsp_http: true });
        let what = alloc::format!(
            "netcore: core 0 owns the NIC{}, {} HTTP core(s)",
            if bsp_http { " and serves HTTP" } else { "" },
            plan.cores - 1
        );
        self.start_serving(t, name, plan.mac, &what, jobs);
        let nic = crate::cores::Core0 {
            nic: queues.core0,
            device,
            doze: doze0,
        };
        self.run_core0(server, nic, board)
    }

    /// A job for application core `core`: serve over `nic` forever, polling.
    fn ap_job<N: CoreQueue + Sleeper + Send + 'static>(
        &self,
        core: usize,
        mut server: Server<Pages>,
        mut nic: N,
        board: &'static Board,
    ) -> smp::Job {
        let clock = self.clock;
        let log_access = self.settings.log_access;
        let mut rest = self.rest(core);
        let crash = if core + 1 == self.cores {
            self.settings.crash
        } else {
            None
        };
        Box::new(move || {
            match crash {
                Some(cmdline::Crash::FaultAp) => {
                    // SAFETY: deliberately reads an unmapped address to raise a page fault
                    // on this core; the handler reports it and stops the machine.
                    let v = unsafe { core::ptr::read_volatile(0x10_0000_0000 as *const u64) };
                    kprintln!("crash=fault-ap: read {v} and did not fault");
                }
                Some(cmdline::Crash::OverflowAp) => {
                    let v = recurse(1);
                    kprintln!("crash=overflow-ap: returned {v}");
                }
                _ => {}
            }
            let ctx = CoreCtx {
                core,
                board: Some(board),
                stop: &STOP,
            };
            run_core_hooked(
                &mut server,
                &mut nic,
                &clock,
                &mut ConsoleLog(log_access),
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
        &self,
        t: u64,
        nic: &str,
        mac: EthernetAddress,
        plan: &str,
        jobs: Vec<smp::Job>,
    ) {
        let jobs: Vec<Box<smp::Job>> = jobs.into_iter().map(Box::new).collect();
        mem::seal();
        crate::boot_trace::mark("engine");
        kprintln!(
            "engine: tables allocated in {} ms",
            (crate::arch::cpu::rdtsc() - t) * 1000 / self.clock.hz
        );
        for (i, job) in jobs.into_iter().enumerate() {
            if smp::run_on(i + 1, job).is_err() {
                fatal!("no core {} to run its job", i + 1);
            }
        }
        let s = &self.settings;
        let entry = crate::ENTRY_TSC.load(core::sync::atomic::Ordering::Relaxed);
        let us = |t: u64| t / (self.clock.hz / 1_000_000).max(1);
        kprintln!(
            "boot: ready {} us after the kernel's first instruction, which came {} us after the CPU's reset (firmware and loader); stages in us:{}",
            us(crate::arch::cpu::rdtsc().saturating_sub(entry)),
            us(entry),
            crate::boot_trace::Stages {
                since: entry,
                hz: self.clock.hz
            }
        );
        kprintln!(
            "bareweb: ready: serving {} files at http://{}:{}/{} on {nic} (MAC {mac}, {}/{} gw {}), sched {:?}, cc {:?}, {} TCBs per core, {plan}, stats page {}, heap used {} KiB",
            self.site.len(),
            s.ip,
            s.port,
            UdpUrl(s.ip, s.udp),
            s.ip,
            s.prefix,
            Gw(s.gateway),
            s.sched,
            s.cc,
            s.tcbs,
            if s.stats_page { "on" } else { "off" },
            mem::used() >> 10
        );
    }

    /// Core `core`'s idle policy.
    fn rest(&self, core: usize) -> Rest {
        let policy = Policy {
            poll_always: self.timer.is_none(),
            idle_poll_us: self.settings.idle_poll_us,
        };
        let timer = self.timer.unwrap_or(apic::Timer::TscDeadline);
        Rest::new(core, policy, timer, self.clock)
    }

    /// Core 0's loop, with the console counters line every second when `log=stats`.
    fn run_core0<N: CoreQueue + Sleeper>(
        self,
        mut server: Server<Pages>,
        mut nic: N,
        board: &'static Board,
    ) -> ! {
        let ctx = CoreCtx {
            core: 0,
            board: Some(board),
            stop: &STOP,
        };
        let log_stats = self.settings.log_stats;
        // The DHCP address's changes are said within a second.
        let every = if log_stats || self.dhcp.is_some() {
            1_000_000_000
        } else {
            u64::MAX
        };
        let mut watch = self.dhcp.map(crate::dhcp::Watch::new);
        let clock = self.clock;
        let mut rest = self.rest(0);
        // Tell the link our address now: the first packets for us need not wait for ARP.
        server.announce(&mut nic);
        run_core_hooked(
            &mut server,
            &mut nic,
            &clock,
            &mut ConsoleLog(self.settings.log_access),
            &ctx,
            &mut rest,
            every,
            |_, _| {
                if let Some(w) = watch.as_mut() {
                    w.check();
                }
                if log_stats {
                    print_stats(board, &clock);
                }
            },
        );
        crate::arch::cpu::halt_forever()
    }
}

/// ` and bwudp://IP:PORT/` when the UDP protocol is served (nothing otherwise).
struct UdpUrl(bareweb_engine::wire::Ipv4Address, crate::cmdline::Udp);

impl core::fmt::Display for UdpUrl {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.1.port {
            Some(p) => write!(
                f,
                " and bwudp://{}:{p}/{}",
                self.0,
                if self.1.paper { " (paper mode)" } else { "" }
            ),
            None => Ok(()),
        }
    }
}

/// One line of `key=value` counters on the console: the engine's and the devices', summed
/// over every core's published row.
pub fn print_stats(board: &Board, clock: &TscClock) {
    // No allocation here (the heap is sealed): a snapshot per core and name, once a second.
    let st = |name: &str| {
        (0..board.cores())
            .map(|c| board.snapshot(c).stat(name))
            .sum::<u64>()
    };
    let nic = |name: &str| {
        (0..board.cores())
            .map(|c| board.snapshot(c).nic(name))
            .sum::<u64>()
    };
    let stack = (0..board.cores()).map(smp::stack_used).max().unwrap_or(0);
    kprintln!(
        "stats: uptime_ms={} cores={} http_requests={} http_2xx={} rx_frames={} tx_frames={} tcbs_in_use={} tcp_accepted={} tcp_rto_retransmits={} tx_ring_full={} nic_rx={} nic_tx={} doorbells={} rx_doorbells={} suppressed={} rx_bad={} tx_bad={} tx_full={} dispatched={} drained={} conn_map={} udp_initial={} udp_subsequent={} udp_packets={} udp_bounded={} udp_rate_limited={} udp_ids_max={} late_allocs={} stack_max={}",
        clock.now_ns() / 1_000_000,
        board.cores(),
        st("http_requests"),
        st("http_2xx"),
        st("rx_frames"),
        st("tx_frames"),
        st("tcbs_in_use"),
        st("tcp_accepted"),
        st("tcp_rto_retransmits"),
        st("tx_ring_full"),
        nic("device_rx_frames"),
        nic("device_tx_frames"),
        nic("doorbells"),
        nic("rx_doorbells"),
        nic("doorbells_suppressed"),
        nic("device_rx_bad"),
        nic("device_tx_bad"),
        nic("device_tx_full"),
        nic("dispatched"),
        nic("drained"),
        nic("conn_map"),
        st("udp_initial"),
        st("udp_subsequent"),
        st("udp_packets"),
        st("udp_bounded"),
        st("udp_rate_limited"),
        (0..board.cores())
            .map(|c| board.snapshot(c).stat("udp_ids_max"))
            .max()
            .unwrap_or(0),
        mem::late_allocs(),
        stack
    );
    nics::print_bond(board);
    rest::print_sleeps(board);
}

/// Recursion that only a stack's end stops (`crash=overflow-ap`).
#[inline(never)]
fn recurse(n: u64) -> u64 {
    let frame = core::hint::black_box([n; 32]);
    if n == u64::MAX {
        return 0;
    }
    recurse(n + 1).wrapping_add(frame[7])
}

/// An optional gateway, displayed as the address or `none`.
struct Gw(Option<bareweb_engine::wire::Ipv4Address>);

impl core::fmt::Display for Gw {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            Some(ip) => write!(f, "{ip}"),
            None => f.write_str("none"),
        }
    }
}
