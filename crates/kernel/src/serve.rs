//! Start-up after the boot information is read, and the per-core serving loop.
//!
//! Order: command line → site (embedded or module 0) → heap → clock → PCI scan → first
//! supported NIC → `Server::new` → seal the heap → poll forever. Per-core state is the
//! [`Core`] value (server, NIC queue pair, clock); issue 4 makes one per CPU.

use bareweb_engine::server::{AccessLog, AccessRecord, Config, NoLog, Server};
use bareweb_engine::site::Site;

use crate::boot_info::{BootInfo, Region};
use crate::clock::TscClock;
use crate::cmdline::{self, Settings};
use crate::drivers::e1000::E1000;
use crate::drivers::virtio_net::VirtioNet;
use crate::drivers::Driver;
use crate::pci::{self, Device};
use crate::{embedded, fatal, kprintln, mem};

/// What the PCI scan found that we can drive.
enum Found {
    Virtio(Device),
    E1000(Device),
}

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
        None => {}
    }
    let (site_at, site_len, from) = match (emb, info.modules().first()) {
        (Some((a, l, _)), _) => (a, l, "embedded"),
        (None, Some(m)) => (m.start, m.len, "module 0"),
        (None, None) => fatal!("no site: give one as boot module 0 (QEMU -initrd) or embed it (bareweb build -o site.elf)"),
    };
    let reserved = [Region {
        start: site_at,
        end: site_at + site_len,
    }];
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
    let clock = TscClock::init();
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
    let t_site = crate::arch::cpu::rdtsc();
    // SAFETY: the site lies in RAM below 4 GiB (checked by the loader's placement and
    // embedded::get), identity-mapped, and excluded from the heap: nothing writes it.
    let image: &'static [u8] =
        unsafe { core::slice::from_raw_parts(site_at as *const u8, site_len as usize) };
    let site = match Site::load(image) {
        Ok(s) => s,
        Err(e) => fatal!("site image ({from}, {site_len} bytes): {e}"),
    };
    let ms = |t: u64| (crate::arch::cpu::rdtsc() - t) * 1000 / clock.hz;
    kprintln!("site: {} files checked in {} ms", site.len(), ms(t_site));
    let t_pci = crate::arch::cpu::rdtsc();
    let mut found = None;
    pci::enumerate(|d| {
        kprintln!(
            "pci: {} {:04x}:{:04x} class {:02x}{:02x}",
            d.addr,
            d.vendor,
            d.device,
            d.class.0,
            d.class.1
        );
        if found.is_none() && VirtioNet::matches(d) {
            found = Some(Found::Virtio(*d));
        } else if found.is_none() && E1000::matches(d) {
            found = Some(Found::E1000(*d));
        }
    });
    kprintln!("pci: scanned in {} ms", ms(t_pci));
    let t_nic = crate::arch::cpu::rdtsc();
    match found {
        Some(Found::Virtio(d)) => match VirtioNet::new(&d) {
            Ok(nic) => {
                kprintln!("nic: virtio-net up in {} ms", ms(t_nic));
                run(nic, site, &settings, clock)
            }
            Err(e) => fatal!("virtio-net at {}: {e:?}", d.addr),
        },
        Some(Found::E1000(d)) => match E1000::new(&d) {
            Ok(nic) => {
                kprintln!("nic: e1000 up in {} ms", ms(t_nic));
                run(nic, site, &settings, clock)
            }
            Err(e) => fatal!("e1000 at {}: {e:?}", d.addr),
        },
        None => fatal!("no supported NIC (virtio-net or e1000) found on PCI"),
    }
}

/// One core's state: the server, its NIC queue pair and the clock.
pub struct Core<D: Driver> {
    server: Server<Site<'static>>,
    nic: D,
    clock: TscClock,
}

/// Common Log Format lines on the console (one VM exit per byte: for debugging).
struct ConsoleLog;

impl AccessLog for ConsoleLog {
    fn record(&mut self, r: &AccessRecord<'_>) {
        let line = core::str::from_utf8(r.request_line).unwrap_or("(not UTF-8)");
        kprintln!(
            "{} - - [{}] \"{}\" {} {}",
            r.peer,
            bareweb_engine::http::clf_date(r.unix_secs),
            line.escape_default(),
            r.status,
            r.bytes
        );
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

fn run<D: Driver>(nic: D, site: Site<'static>, s: &Settings, clock: TscClock) -> ! {
    let mac = nic.mac();
    let mut cfg = Config::new(s.ip, s.prefix);
    cfg.gateway = s.gateway;
    cfg.port = s.port;
    cfg.sched = s.sched;
    cfg.tcbs = s.tcbs;
    cfg.isn_key = isn_key();
    let files = site.len();
    let t = crate::arch::cpu::rdtsc();
    let server = Server::new(cfg, site, mac);
    mem::seal();
    kprintln!(
        "engine: tables allocated in {} ms",
        (crate::arch::cpu::rdtsc() - t) * 1000 / clock.hz
    );
    let mut core = Core { server, nic, clock };
    kprintln!(
        "bareweb: ready: serving {files} files at http://{}:{}/ on {} (MAC {mac}, {}/{} gw {}), sched {:?}, {} TCBs, heap used {} KiB",
        s.ip,
        s.port,
        core.nic.name(),
        s.ip,
        s.prefix,
        Gw(s.gateway),
        s.sched,
        s.tcbs,
        mem::used() >> 10
    );
    core.run(s.log_access, s.log_stats)
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

impl<D: Driver> Core<D> {
    /// Polls forever: one engine round per iteration (receive burst, HTTP steps, timers,
    /// one transmit flush), and a counters line every second with `log=stats`.
    pub fn run(&mut self, log_access: bool, log_stats: bool) -> ! {
        let mut next_stats = self.clock.hz;
        loop {
            if log_access {
                self.server
                    .poll(&mut self.nic, &self.clock, &mut ConsoleLog);
            } else {
                self.server.poll(&mut self.nic, &self.clock, &mut NoLog);
            }
            if log_stats && self.clock.ticks() >= next_stats {
                next_stats += self.clock.hz;
                self.print_stats();
            }
        }
    }

    /// One line of `key=value` counters (engine and driver) on the console.
    pub fn print_stats(&self) {
        let st = self.server.stats();
        let c = self.nic.device_counters();
        kprintln!(
            "stats: uptime_ms={} http_requests={} http_2xx={} rx_frames={} tx_frames={} tcbs_in_use={} tcp_accepted={} tcp_rto_retransmits={} tx_ring_full={} nic_rx={} nic_tx={} doorbells={} rx_doorbells={} suppressed={} rx_bad={} tx_bad={} tx_full={} late_allocs={}",
            bareweb_engine::nic::Clock::now_ns(&self.clock) / 1_000_000,
            st.http_requests,
            st.http_2xx,
            st.rx_frames,
            st.tx_frames,
            st.tcbs_in_use,
            st.tcp_accepted,
            st.tcp_rto_retransmits,
            st.tx_ring_full,
            c.rx_frames,
            c.tx_frames,
            c.doorbells,
            c.rx_doorbells,
            c.suppressed,
            c.rx_bad,
            c.tx_bad,
            c.tx_full,
            mem::late_allocs()
        );
    }
}
