//! Start-up after the boot information is read, as a sequence of steps, each returning
//! what the next ones need:
//!
//! 1. [`settings`]: the command line (the image's built-in words, then the loader's);
//! 2. [`cpus`]: the processors, from the ACPI MADT (read before the heap may cover the
//!    firmware's tables);
//! 3. [`site_image`]: where the site lies (embedded in the kernel, or boot module 0);
//! 4. [`heap`]: the heap, around the kernel, the site and the framebuffer;
//! 5. [`clock_and_site`]: the local APIC, then the clock calibrated while the site is
//!    checked; [`tls`]: HTTPS's randomness and listener, when asked for;
//!    [`crate::acme::prepare`]: with `acme_domain=`, the state disk read and HTTPS
//!    awaiting its certificate;
//! 6. [`cores`]: the other cores started (each waits for its job) and the interrupts that
//!    wake a halted core;
//! 7. [`nics`]: the NICs found (a PCI scan, else a microVM's virtio-mmio device);
//! 8. [`net::serve`]: the NICs brought up with a queue pair per core when the plan can use
//!    them, `ip=dhcp`'s lease, the engine's plan, and its launch onto the cores
//!    ([`crate::launch`]).
//!
//! The plan is the engine's `cores::plan`, the same code the host runs: it chooses the
//! mode from the cores, the `mode=` word and the queue pairs the NIC gave, the role and
//! server configuration of each core, and wires the network core. Every step is generic
//! over the [`Driver`](crate::drivers::Driver), so a new driver plugs in without a copy of
//! this module.

mod early;
mod net;

use bareweb_engine::dhcp::shared::Shared as DhcpShared;
use bareweb_engine::dhcp::Client as DhcpClient;
use bareweb_engine::site::Site;

use crate::arch::apic;
use crate::arch::clock::TscClock;
use crate::arch::pci::Device;
use crate::boot_info::{BootInfo, Region};
use crate::cmdline::Settings;
use crate::drivers::virtio::mmio::Slot;

pub use early::{clock_and_site, cores, cpus, heap, nics, settings, site_image, tls};

/// Boots the rest of the way and serves; never returns.
pub fn boot(info: &BootInfo) -> ! {
    let settings = settings(info);
    crate::crash::early(settings.crash);
    let cpus = cpus(info);
    let image = site_image(info);
    let _heap = heap(info, &image);
    let (site, clocks, carried) = clock_and_site(info, &settings, &image);
    let mut tls = tls(&settings, clocks.clock, carried.pems);
    let acme = crate::acme::prepare(&settings, lines(info), carried.ca, clocks.clock);
    if let Some(a) = &acme {
        tls = Some(a.listen);
    }
    // The site's configuration can turn the stats page off too (bareweb.toml [stats]).
    let mut settings = settings;
    settings.stats_page &= site.pages().stats.or(true);
    let cores = cores(&settings, &cpus, &clocks);
    let found = nics(&settings, &cpus, clocks.clock.hz);
    let booted = Booted {
        site,
        settings,
        clock: clocks.clock,
        cores: cores.count,
        timer: cores.timer,
        dhcp: None,
        dhcp_client: None,
        fadt: cpus.0.as_ref().ok().and_then(|p| p.fadt),
        s5: cpus.0.as_ref().ok().and_then(|p| p.s5),
        tls,
        multicast: alloc::vec::Vec::new(),
        acme,
        agent: None,
    };
    net::serve(booted, found)
}

/// The command line's two sources: the image's built-in words, then the loader's.
fn lines(info: &BootInfo) -> [&'static str; 2] {
    let baked =
        crate::embedded::get().map_or("", |(_, _, c)| core::str::from_utf8(c).unwrap_or(""));
    let line: &'static str = alloc::string::String::leak(info.cmdline().trim().into());
    [baked, line]
}

/// What the image carries after the site (`bareweb_settings::tls_payload`).
pub struct Carried {
    /// HTTPS's certificate chain and key (PEM).
    pub pems: Option<crate::tls::Pems>,
    /// The ACME client's roots (PEM, `--acme-ca`).
    pub ca: Option<&'static [u8]>,
}

/// The processors the firmware lists (step 2).
pub struct Cpus(pub Result<crate::arch::acpi::Processors, crate::arch::acpi::Error>);

/// Where the site image lies (step 3).
pub struct SiteImage {
    /// Its bytes' span in RAM.
    pub span: Region,
    /// Where it came from, for the console: `embedded` or `module 0`.
    pub from: &'static str,
}

/// The clocks (step 5).
#[derive(Clone, Copy)]
pub struct Clocks {
    /// The TSC clock, calibrated.
    pub clock: TscClock,
    /// The boot CPU's local APIC mode.
    pub apic: apic::Mode,
    /// The local APIC timer's rate (0: it does not count).
    pub apic_hz: u64,
}

/// The cores running (step 6).
#[derive(Clone, Copy)]
pub struct Cores {
    /// How many cores run (1: the boot CPU alone).
    pub count: usize,
    /// The idle cores' timer (None: cores poll and never halt).
    pub timer: Option<apic::Timer>,
}

/// The NICs found (step 7).
pub enum Nics {
    /// Every PCI function a driver here drives, in PCI order.
    Pci(alloc::vec::Vec<Device>),
    /// No PCI NIC: a microVM's virtio-net on virtio-mmio.
    Mmio(Slot),
}

/// What serving needs once the machine is up.
pub struct Booted {
    /// The site, checked.
    pub site: Site<'static>,
    /// The command line's settings (with `ip=dhcp`'s lease once acquired).
    pub settings: Settings,
    /// The calibrated clock.
    pub clock: TscClock,
    /// How many cores run.
    pub cores: usize,
    /// The idle cores' timer (None: cores poll and never halt).
    pub timer: Option<apic::Timer>,
    /// `ip=dhcp`: the address the cores share, once acquired.
    pub dhcp: Option<&'static DhcpShared>,
    /// `ip=dhcp`: the client, bound, until core 0's server takes it.
    pub dhcp_client: Option<DhcpClient>,
    /// The FADT's power registers (the power button, S5), read at boot.
    pub fadt: Option<crate::arch::acpi::Fadt>,
    /// S5's sleep types from the DSDT, read at boot.
    pub s5: Option<(u8, u8)>,
    /// HTTPS (`tls_cert=` and the image's certificate and key).
    pub tls: Option<bareweb_engine::server::tls::TlsListen>,
    /// ACME (`acme_domain=`): what boot prepared, until the plan is made (boxed: a
    /// `Booted` is moved through core 0's boot frames, which stay under its loop).
    pub acme: Option<alloc::boxed::Box<crate::acme::Prepared>>,
    /// ACME's agent, made with the NIC's MAC, for core 0 to run.
    pub agent: Option<alloc::boxed::Box<bareweb_engine::acme::Agent>>,
    /// IPv6: the serving NICs' multicast filters (a bond's each), which core 0 keeps set to the groups
    /// the link listens to (`launch`).
    pub multicast: alloc::vec::Vec<alloc::boxed::Box<dyn crate::drivers::Multicast>>,
}
