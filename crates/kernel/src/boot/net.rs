//! The last boot step: the NICs brought up with as many queue pairs as the plan can use
//! (every NIC found when bonding, of any models, else the first), the UDP client or `ip=dhcp`'s
//! lease on the first, the engine's plan chosen from what they gave, and its launch onto
//! the cores ([`crate::launch`]).

use alloc::boxed::Box;
use alloc::vec::Vec;

use bareweb_engine::bond::{Bond, BondRole};
use bareweb_engine::cores::pages::{Allow, PageSettings};
use bareweb_engine::cores::plan::{self, Asked, Mode, Plan};
use bareweb_engine::dhcp::shared::Shared as DhcpShared;
use bareweb_engine::dhcp::{Client as DhcpClient, Timing as DhcpTiming};
use bareweb_engine::server::drain::Drain;
use bareweb_engine::server::Config;
use bareweb_engine::wire::{EthernetAddress, Ipv4Address};

use super::{Booted, Nics};
use crate::adapters::{isn_key, Pages};
use crate::arch::clock::TscClock;
use crate::arch::pci::Device;
use crate::arch::{power, smp};
use crate::cmdline::CoreMode;
use crate::drivers::any::AnyNic;
use crate::drivers::virtio::mmio::Slot;
use crate::drivers::virtio_net::VirtioNet;
use crate::drivers::{Driver, Open};
use crate::queue::Queue;
use crate::{fatal, kprintln, launch, nics};

/// Serves on the NICs found; never returns.
pub fn serve(booted: Booted, found: Nics) -> ! {
    match found {
        Nics::Pci(devs) => booted.serve_found(&devs),
        Nics::Mmio(slot) => booted.serve_mmio(slot),
    }
}

impl Booted {
    /// The engine's configuration, with the graceful drain the power button asks for
    /// (armed here: `arch::power`).
    fn config(&self) -> Config {
        let mut cfg = self.settings.config(isn_key());
        cfg.dhcp = self.dhcp;
        cfg.tls = self.tls;
        let t = cfg.timeouts;
        let drain: &'static Drain =
            Box::leak(Box::new(Drain::new(t.drain_grace_ms, t.drain_timeout_ms)));
        cfg.drain = Some(drain);
        let (grace, timeout) = drain.limits_ms();
        match power::setup(self.fadt, self.s5, drain) {
            power::Setup::Armed { gsi, s5_from_dsdt } => kprintln!(
                "power: the ACPI power button drains (SCI on GSI {gsi}; grace {} s, timeout {} s), then S5 (SLP_TYP {}, {})",
                grace / 1000,
                timeout / 1000,
                power::s5_type(),
                if s5_from_dsdt {
                    "from the DSDT's \\_S5"
                } else {
                    "no \\_S5 in the DSDT: QEMU's value"
                }
            ),
            power::Setup::NoRoute => kprintln!(
                "power: the ACPI power button drains (its SCI has no I/O APIC line: seen within a second)"
            ),
            why => kprintln!("power: no power button to drain on ({why:?})"),
        }
        cfg
    }

    /// `ip=dhcp`: gets a lease on the first NIC before serving (see [`crate::dhcp`]); the
    /// servers start on its address, core 0's with the client. Returns the lease's DNS
    /// server (option 6).
    fn acquire_address(
        &mut self,
        opened: &mut nics::Opened,
    ) -> Option<bareweb_engine::wire::Ipv4Address> {
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
        lease.dns
    }

    /// ACME: the frames of its connection handed over by every core, and its agent made
    /// with our MAC, for core 0 to run.
    fn acme_on(&mut self, cfg: &mut Config, mac: EthernetAddress, dhcp_dns: Option<Ipv4Address>) {
        if let Some(p) = self.acme.take() {
            cfg.divert = Some(p.divert);
            self.agent = Some(p.agent(mac, dhcp_dns));
        }
    }

    /// The plan of `mode` over `cfg`, with the board and, with ACME, its HTTP-01 answers
    /// and issuance.
    fn plan(&self, mode: Mode, cfg: Config, mac: EthernetAddress, acme: Acme) -> Plan<Pages> {
        Plan::new(mode, self.cores, self.pages(), cfg, mac)
            .with_http01(acme.map(|a| a.0))
            .with_issuance(acme.map(|a| a.1))
            .with_board(self.page_settings())
    }

    /// The server's own pages: the stats page as the command line and the site say;
    /// metrics and the health check only if the site's configuration turns them on; who
    /// may read the stats page, its JSON and the metrics as `stats_allow=` says, else the
    /// site, else everyone (under `run`'s user networking every client is QEMU's 10.0.2.2
    /// behind a forward on the host's loopback; docs/usage.md, "Monitoring").
    fn page_settings(&self) -> PageSettings {
        let mut p = PageSettings::resolve(
            &self.site.pages(),
            self.settings.stats_page,
            false,
            false,
            Allow::Everyone,
        );
        if let Some((net, len)) = self.settings.stats_allow {
            p.allow = Allow::network(net.0, len);
        }
        p
    }

    fn pages(&self) -> Pages {
        let p = self.page_settings();
        if p.stats {
            Pages::WithStats(bareweb_engine::cores::board::WithStatsPage(
                self.site, p.base,
            ))
        } else {
            Pages::Plain(self.site)
        }
    }

    /// The plan's mode as `mode=` asks it (None: the plan chooses).
    fn asked(&self) -> Option<Asked> {
        self.settings.mode.map(|m| match m {
            CoreMode::NetCore => Asked::NetCore,
            CoreMode::PerQueue => Asked::PerQueue,
        })
    }

    /// Serves on the NICs `devs` (every drivable one found, in PCI order), each with its
    /// own driver: a set may mix models (the bond takes the fewest queue pairs and the
    /// least offloads any of them gives).
    fn serve_found(self, devs: &[Device]) -> ! {
        let dev = &devs[0];
        if AnyNic::matches(dev) {
            let devs: Vec<Device> = devs
                .iter()
                .filter(|d| AnyNic::matches(d))
                .copied()
                .collect();
            self.serve_pci(&devs)
        } else {
            fatal!("pci: no driver for {}", dev.addr)
        }
    }

    /// Brings the PCI NICs up with as many queue pairs as the plan can use (every NIC found
    /// when bonding, else the first) and serves.
    fn serve_pci(self, devs: &[Device]) -> ! {
        let asked = self.asked();
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
    fn serve_mmio(self, slot: Slot) -> ! {
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
        let asked = self.asked();
        self.serve_opened(opened, None, asked)
    }

    /// IPv6 on the link, as `ip6=` asks (`slaac` by default): the multicast filter of
    /// every NIC served (a bond's each, as any may become the receive NIC) taken for core
    /// 0 to program. In per-queue mode the other cores follow core 0's link
    /// (docs/design/ipv6.md, "Where it runs").
    fn ipv6_on(&mut self, opened: &nics::Opened, bonded: bool) {
        if !self.settings.ip6 {
            return;
        }
        let served = if bonded { opened.nics.len() } else { 1 };
        self.multicast = opened
            .nics
            .iter()
            .take(served)
            .filter_map(|q| q.first().map(Driver::multicast))
            .collect();
    }

    /// Serves on the NICs opened: the UDP client or the DHCP lease first, then the plan
    /// the engine chooses from the queue pairs they gave, launched onto the cores; on a
    /// NIC set, every core's queue pair is a `BondNic`.
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
            // The UDP client on the first NIC.
            let first = opened.nics.into_iter().next().unwrap_or_default();
            crate::fetcher::run(&self.settings, self.clock, first);
        }
        let dhcp_dns = if self.settings.dhcp {
            self.acquire_address(&mut opened)
        } else {
            None
        };
        let queues = opened.nics.first().map_or(0, Vec::len);
        let decision = plan::decide(self.cores, asked, self.settings.bsp_http, queues);
        self.ipv6_on(&opened, bonding.is_some());
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
        let acme = self.acme.as_ref().map(|p| (p.http01, p.issuance));
        self.acme_on(&mut cfg, mac, dhcp_dns);
        let Some((mode, policy, ms)) = bonding else {
            let plan = self.plan(decision.mode, cfg, mac, acme);
            let nics = opened.nics.into_iter().next().unwrap_or_default();
            launch::run(self, &plan, queues_of(nics), driver, t)
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
        let models = nics::models(&opened);
        kprintln!(
            "bond: {} over {} {} NICs, NIC 0 receives, policy {}, links read every {ms} ms",
            mode.name(),
            bond.count(),
            models,
            policy.name()
        );
        let plan = self.plan(decision.mode, cfg, mac, acme);
        let name = alloc::format!("{} {}", bond.count(), models);
        // Network-core mode: one set for core 0, which alone touches the NICs.
        let sets = match decision.mode {
            Mode::NetCore { .. } => 1,
            Mode::Single | Mode::PerQueue => plan.cores,
        };
        let sets = nics::sets(bond, opened, sets, self.clock);
        launch::run(self, &plan, queues_of(sets), &name, t)
    }
}

/// ACME's HTTP-01 answers and issuance, for the plan's board.
type Acme = Option<(
    &'static bareweb_engine::cores::challenge::Http01,
    &'static bareweb_engine::cores::challenge::Issuance,
)>;

/// Queue pairs as the one type the cores serve over (`crate::queue`).
fn queues_of<N: Into<Queue>>(nics: Vec<N>) -> Vec<Queue> {
    nics.into_iter().map(Into::into).collect()
}
