//! The cores: the other processors started (their APIC ids from the ACPI MADT, INIT and
//! STARTUP IPIs, each then waits for its job: [`crate::arch::smp`]), and core 0's queue
//! pair in network-core mode ([`Core0`]), which also sleeps as [`crate::rest`] asks.

use bareweb_engine::cores::netcore::{Dispatch, Drain, NetCoreNic};
use bareweb_engine::cores::{CoreQueue, DispatchCounters};
use bareweb_engine::nic::{Nic, NicCaps, NicCounters, RxRing, TxRing};
use bareweb_engine::ring::Doze;
use bareweb_engine::tcp::port_table::Peer;
use bareweb_engine::wire::EthernetAddress;

use crate::arch::acpi;
use crate::arch::clock::TscClock;
use crate::arch::{apic, smp};
use crate::cmdline::Settings;
use crate::drivers::{Arm, WakeRx};
use crate::kprintln;
use crate::rest::Sleeper;

/// Sets up the APIC and starts the other processors (as many as `cores=` allows); returns
/// how many cores run.
pub fn start_cores(
    s: &Settings,
    procs: &Result<acpi::Processors, acpi::Error>,
    clock: &TscClock,
    mode: apic::Mode,
) -> usize {
    let me = apic::id();
    smp::set_bsp_apic_id(me);
    let procs = match procs {
        Ok(p) => p,
        Err(e) => {
            kprintln!("smp: {e}: serving on the boot CPU only");
            return 1;
        }
    };
    let ids = procs.apic_ids();
    kprintln!(
        "smp: {} processor(s) in the ACPI MADT (RSDP {}){}, APIC ids {:?}, boot CPU {me}, {:?}",
        ids.len(),
        procs.source,
        if procs.over > 0 {
            ", more than the kernel uses"
        } else {
            ""
        },
        ids,
        mode
    );
    if mode == apic::Mode::None {
        kprintln!("smp: no local APIC: serving on the boot CPU only");
        return 1;
    }
    let limit = s.cores.unwrap_or(usize::MAX).min(smp::MAX_CPUS);
    let mut aps = [0u32; smp::MAX_CPUS];
    let mut n = 0;
    for &id in ids {
        if id != me && n + 1 < limit {
            aps[n] = id;
            n += 1;
        }
    }
    // SAFETY: once, on the boot CPU; heap, IDT, APIC and clock are up; page 8 is ours.
    unsafe {
        smp::start_aps(&aps[..n], clock.hz, |id, r| match r {
            smp::Start::Up(core, us, sipis) => {
                let (off, adj) = smp::tsc_offset(core);
                kprintln!(
                    "smp: core {core} up (APIC id {id}) {us} us after INIT, {sipis} STARTUP IPI(s); TSC offset from core 0: {off} cycles{}",
                    if adj {
                        " (corrected with IA32_TSC_ADJUST)"
                    } else {
                        ""
                    }
                );
            }
            smp::Start::NoAnswer => {
                kprintln!("smp: the processor with APIC id {id} did not start: not used")
            }
            smp::Start::NoMemory => kprintln!("smp: no memory for APIC id {id}'s stack"),
        });
    }
    smp::cores()
}

/// Core 0's queue pair in network-core mode: the engine's `NetCoreNic` over the device's
/// two sides (a driver's, or a NIC set's), reporting the device's counters (doorbells) to
/// the board as well, through `device`.
pub struct Core0<R: RxRing, T: TxRing> {
    /// The engine's network-core NIC over the device.
    pub nic: NetCoreNic<R, T, TscClock>,
    /// Adds the device's own counters (doorbells) to the engine's.
    pub device: fn(&R, &T, &mut NicCounters),
    /// HTTP cores wake core 0 through it when they leave frames or close notes.
    pub doze: Doze,
}

impl<R: RxRing + WakeRx, T: TxRing> Sleeper for Core0<R, T> {
    fn arm(&mut self) -> Arm {
        self.doze.announce();
        let a = if self.nic.output_pending() {
            Arm::Pending
        } else {
            self.nic.inner_mut().0.arm()
        };
        if a == Arm::Pending {
            self.doze.awake();
        }
        a
    }

    fn disarm(&mut self) {
        self.nic.inner_mut().0.disarm();
        self.doze.awake();
    }
}

impl<R: RxRing, T: TxRing> Nic for Core0<R, T> {
    type Rx = Dispatch<R, TscClock>;
    type Tx = Drain<T, TscClock>;

    fn split(&mut self) -> (&mut Self::Rx, &mut Self::Tx) {
        self.nic.split()
    }

    fn mac(&self) -> EthernetAddress {
        self.nic.mac()
    }

    fn caps(&self) -> NicCaps {
        self.nic.caps()
    }

    fn counters(&self) -> NicCounters {
        let mut c = self.nic.counters();
        let (r, t) = self.nic.inner();
        (self.device)(r, t, &mut c);
        c
    }
}

impl<R: RxRing, T: TxRing> CoreQueue for Core0<R, T> {
    fn connections_closed(&mut self, closed: &[(Peer, u64)]) {
        self.nic.connections_closed(closed);
    }

    fn dispatch_counters(&self) -> DispatchCounters {
        self.nic.dispatch_counters()
    }

    fn set_address(&mut self, ip: bareweb_engine::wire::Ipv4Address, prefix: u8, gw: bool) {
        self.nic.set_address(ip, prefix, gw);
    }
}
