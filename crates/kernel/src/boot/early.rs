//! The boot steps up to the NICs: the command line, the processors, the site, the heap,
//! the clocks, the other cores, the NIC scan. Each prints its console line and marks the
//! boot trace.

use alloc::boxed::Box;
use alloc::vec::Vec;

use bareweb_engine::server::tls::TlsListen;
use bareweb_engine::site::Site;

use super::{Carried, Clocks, Cores, Cpus, Nics, SiteImage};
use crate::arch::clock::{Calibration, TscClock};
use crate::arch::pci::{self, Device};
use crate::arch::{apic, irq};
use crate::boot_info::{BootInfo, Region};
use crate::cmdline::{self, Settings};
use crate::drivers::any::AnyNic;
use crate::drivers::Driver;
use crate::tls::Pems;
use crate::{embedded, fatal, kprintln, mem, rest};

/// The command line: the one baked into a single-file image first, the loader's words
/// (QEMU -append, GRUB) over it.
pub fn settings(info: &BootInfo) -> Settings {
    let emb = embedded::get();
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
    cmdline::parse_over(settings, line, complain)
}

/// The processors, from the ACPI MADT. Firmware tables may lie in RAM the loader calls
/// usable: read them before the heap.
pub fn cpus(info: &BootInfo) -> Cpus {
    let procs = crate::arch::acpi::processors(info);
    crate::boot_trace::mark("acpi");
    Cpus(procs)
}

/// Where the site lies: embedded in the kernel, else boot module 0; stops without one.
pub fn site_image(info: &BootInfo) -> SiteImage {
    let (at, len, from) = match (embedded::get(), info.modules().first()) {
        (Some((a, l, _)), _) => (a, l, "embedded"),
        (None, Some(m)) => (m.start, m.len, "module 0"),
        (None, None) => fatal!("no site: give one as boot module 0 (QEMU -initrd) or embed it (bareweb build -o site.elf)"),
    };
    SiteImage {
        span: Region {
            start: at,
            end: at + len,
        },
        from,
    }
}

/// The heap: usable RAM that is neither the kernel, the site nor the framebuffer.
pub fn heap(info: &BootInfo, image: &SiteImage) -> Region {
    let reserved = [image.span, info.framebuffer_span()];
    let heap = match mem::init(info, &reserved) {
        Some(h) => h,
        None => fatal!("no usable memory for the heap in the memory map"),
    };
    let k = mem::kernel_span();
    kprintln!(
        "mem: kernel {:#x}..{:#x}, site {:#x}..{:#x} ({}), heap {:#x}..{:#x} ({} MiB)",
        k.start,
        k.end,
        image.span.start,
        image.span.end,
        image.from,
        heap.start,
        heap.end,
        (heap.end - heap.start) >> 20
    );
    crate::boot_trace::mark("heap");
    heap
}

/// The legacy PICs masked, then the local APIC (the calibration window that overlaps the
/// site check measures its timer too), then the clock, calibrated while the site is
/// checked. Stops if the site is not a valid image; brings the screen console up.
pub fn clock_and_site(
    info: &BootInfo,
    settings: &Settings,
    image: &SiteImage,
) -> (Site<'static>, Clocks, Carried) {
    // The legacy PICs first, while the firmware's virtual wire (LINT0 as ExtINT) still
    // carries their output: see `irq::mask_legacy_pic`.
    irq::mask_legacy_pic();
    let apic_mode = apic::init_bsp(settings.x2apic);
    let cal = Calibration::begin(apic_mode != apic::Mode::None && !settings.poll_always);
    let t_site = crate::arch::cpu::rdtsc();
    let site_len = image.span.end - image.span.start;
    // SAFETY: the site lies in RAM below 4 GiB (checked by the loader's placement and
    // embedded::get), identity-mapped, and excluded from the heap: nothing writes it.
    let module: &'static [u8] =
        unsafe { core::slice::from_raw_parts(image.span.start as *const u8, site_len as usize) };
    // The site image, then the certificate and key, and the ACME client's roots, when
    // the image carries them.
    let (site, carried) = match bareweb_settings::tls_payload::split(module) {
        Ok(s) => (
            Site::load(s.site),
            Carried {
                pems: s.pems,
                ca: s.ca,
            },
        ),
        Err(e) => fatal!(
            "site image ({}): bytes after the site that are not a certificate and key or an ACME CA ({e:?})",
            image.from
        ),
    };
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
        Err(e) => fatal!("site image ({}, {site_len} bytes): {e}", image.from),
    };
    kprintln!(
        "site: {} files checked in {} ms",
        site.len(),
        site_ticks * 1000 / clock.hz
    );
    crate::console::screen_up(info, clock.hz);
    let clocks = Clocks {
        clock,
        apic: apic_mode,
        apic_hz,
    };
    (site, clocks, carried)
}

/// HTTPS, when the command line asks for it (`tls_cert=`): the randomness (a CPU without
/// RDSEED or RDRAND gets none: the boot stops saying so), then the listener from the
/// image's certificate and key, checked as `serve` checks them. Stops on any failure:
/// nothing starts half configured.
pub fn tls(settings: &Settings, clock: TscClock, pems: Option<Pems>) -> Option<TlsListen> {
    let t = settings.tls;
    if !t.cert {
        if pems.is_some() {
            kprintln!("tls: the image carries a certificate but the command line has no tls_cert=: plain HTTP only");
        }
        return None;
    }
    let Some((cert, key)) = pems else {
        fatal!("tls: tls_cert= is given but the image carries no certificate and key (give --tls-cert and --tls-key to `bareweb run` or `bareweb build`)");
    };
    let Some(rng) = crate::tls::Csprng::from_cpu() else {
        fatal!("tls: HTTPS refused: this CPU has neither RDSEED nor RDRAND (CPUID), and the kernel has no other source of randomness for keys; run on a CPU that has them (QEMU: -cpu host or -cpu max), or drop --tls-cert");
    };
    let source = rng.source();
    let rng: &'static crate::tls::Csprng = Box::leak(Box::new(rng));
    let t0 = crate::arch::cpu::rdtsc();
    match crate::tls::listen(&t, cert, key, clock, rng) {
        Ok(l) => {
            kprintln!(
                "tls: HTTPS on port {} (TLS {}), certificate chain {} bytes; randomness ChaCha20 seeded from {}; AES-GCM on {}; set up in {} ms",
                l.port,
                if t.min13 { "1.3" } else { "1.2 and 1.3" },
                cert.len(),
                source.name(),
                if bareweb_tls::provider::aesni::available() {
                    "AES-NI"
                } else {
                    "portable code (no AES-NI/PCLMULQDQ/SSSE3)"
                },
                ms(t0, clock.hz)
            );
            Some(l)
        }
        Err(e) => fatal!("tls: {e}"),
    }
}

/// Starts the other cores (as many as `cores=` allows; each waits for its job) and sets
/// up the interrupts that wake a halted core.
pub fn cores(settings: &Settings, cpus: &Cpus, clocks: &Clocks) -> Cores {
    let t_smp = crate::arch::cpu::rdtsc();
    let count = crate::cores::start_cores(settings, &cpus.0, &clocks.clock, clocks.apic);
    kprintln!(
        "smp: {count} core(s) running in {} ms",
        ms(t_smp, clocks.clock.hz)
    );
    crate::boot_trace::mark("smp");
    let timer = rest::wake_setup(settings, &cpus.0, &clocks.clock, clocks.apic_hz);
    if crate::crash::wants_ap(settings.crash) && count == 1 {
        kprintln!("crash: there is no application core to fail");
    }
    Cores { count, timer }
}

/// The NICs: every PCI function a driver here drives (the list is `drivers::any`'s: a
/// new driver is a [`Driver`](crate::drivers::Driver) impl and a variant there); without
/// one, a microVM's virtio-mmio device. Stops if there is neither.
pub fn nics(settings: &Settings, cpus: &Cpus, hz: u64) -> Nics {
    let t_pci = crate::arch::cpu::rdtsc();
    let mut found: Vec<Device> = Vec::new();
    let mut seen: Vec<(u16, u16)> = Vec::new();
    pci::enumerate(|d| {
        seen.push((d.vendor, d.device));
        kprintln!(
            "pci: {} {:04x}:{:04x} class {:02x}{:02x}",
            d.addr,
            d.vendor,
            d.device,
            d.class.0,
            d.class.1
        );
        if AnyNic::matches(d) {
            found.push(*d);
        }
    });
    kprintln!("pci: scanned in {} ms", ms(t_pci, hz));
    crate::boot_trace::mark("pci");
    if !found.is_empty() {
        return Nics::Pci(found);
    }
    match crate::drivers::virtio::mmio::find_net(settings, &cpus.0) {
        Some(slot) => Nics::Mmio(slot),
        None => {
            crate::kprint!("no supported NIC: PCI devices found:");
            for (v, d) in &seen {
                crate::kprint!(" {v:04x}:{d:04x}");
            }
            fatal!(
                "\n  none of them a NIC this kernel drives ({}), and no virtio-mmio network device",
                crate::drivers::any::Supported
            )
        }
    }
}

/// Milliseconds since TSC reading `t`, at `hz`.
fn ms(t: u64, hz: u64) -> u64 {
    (crate::arch::cpu::rdtsc() - t) * 1000 / hz
}
