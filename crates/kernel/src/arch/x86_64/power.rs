//! The ACPI power button and the power-off: what QEMU's `system_powerdown`, libvirt's
//! `virsh shutdown` and a cloud's "stop" send is a press of the fixed-feature power
//! button; the kernel answers with a graceful drain (`bareweb_engine::server::drain`) and,
//! once it is over, puts the machine in S5 (soft off), so the hypervisor ends by itself.
//!
//! Heads up! read ACPI 6.5 §4.8.2.2.1 (the fixed power button: PWRBTN_STS and PWRBTN_EN,
//! the SCI), §4.8.3.1 (PM1 event registers: status then enable, each half the block;
//! status bits are cleared by writing 1), §4.8.3.2 (PM1 control: SCI_EN bit 0, SLP_TYP
//! bits 10-12, SLP_EN bit 13), §4.8.3.1.1 / §16.1.6 (SMI_CMD and ACPI_ENABLE: handing
//! the hardware to the OS), §5.2.9 (the FADT), §7.4.2 (`\_S5`).
//!
//! - [`setup`] (once, at serve time, after the I/O APICs are masked): ACPI mode on if the
//!   firmware left it off, PWRBTN_STS cleared, PWRBTN_EN set, and the SCI routed through
//!   the I/O APIC to core 0 on [`SCI_VECTOR`] (level-triggered, active low unless the
//!   MADT's interrupt override says otherwise: QEMU's says level, active high on IRQ 9).
//! - The SCI handler ([`on_sci`], from `irq`) and core 0's once-a-second look
//!   ([`poll`]: interrupts reach a core only while it halts, and a busy core 0 does not)
//!   both find PWRBTN_STS, clear it and ask for the drain; the handler also wakes every
//!   other core (an IPI), so a halted core sees the drain at once. An SCI that is not the
//!   button masks the line (no other SCI source is enabled; a stuck one must not storm).
//! - [`power_off`]: SLP_TYP of S5 and SLP_EN into PM1a_CNT (and PM1b_CNT): SLP_TYP is
//!   read from the DSDT's `\_S5` package (`acpi::s5_sleep_type`); without one, QEMU's
//!   documented value, 0 (its DSDT's `Name (_S5, Package (4) { Zero, Zero, Zero, Zero })`
//!   on both `pc` and `q35`), is used and the console says so. If the machine is still
//!   on after that, isa-debug-exit, then a halt.
//!
//! The machine kinds this does not cover are said on the console at setup: a
//! hardware-reduced machine (QEMU's `microvm`: the button is a GED device), and a FADT
//! whose power button is a control-method device (it needs AML).

use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering};

use bareweb_engine::server::drain::Drain;

use super::acpi::{self, Fadt};
use super::cpu::{inw, outb, outw, relax};
use super::{apic, ioapic, irq, smp};

/// The SCI's vector.
pub const SCI_VECTOR: u8 = 0xF3;

const PWRBTN: u16 = 1 << 8;
const SCI_EN: u16 = 1;
const SLP_EN: u16 = 1 << 13;

static PM1A_EVT: AtomicU32 = AtomicU32::new(0);
static PM1B_EVT: AtomicU32 = AtomicU32::new(0);
/// Half a PM1 event block: where the enable register lies after the status one.
static EVT_HALF: AtomicU32 = AtomicU32::new(0);
static PM1A_CNT: AtomicU32 = AtomicU32::new(0);
static PM1B_CNT: AtomicU32 = AtomicU32::new(0);
/// SLP_TYPa | SLP_TYPb << 8 of S5.
static S5: AtomicU32 = AtomicU32::new(0);
/// The SCI's GSI + 1 (0: not routed).
static SCI_GSI: AtomicU32 = AtomicU32::new(0);
static ARMED: AtomicBool = AtomicBool::new(false);
static PRESSES: AtomicU32 = AtomicU32::new(0);
static DRAIN: AtomicPtr<Drain> = AtomicPtr::new(core::ptr::null_mut());

/// What [`setup`] did, for the console.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setup {
    /// The button drains, the SCI on this GSI; S5's SLP_TYP from the DSDT (true) or
    /// QEMU's value (false).
    Armed {
        /// The SCI's GSI.
        gsi: u32,
        /// Whether S5's sleep type came from the DSDT.
        s5_from_dsdt: bool,
    },
    /// No FADT (or no MADT): no button, no power-off.
    NoFadt,
    /// A hardware-reduced machine: no PM1 registers.
    HwReduced,
    /// The power button is a control-method device.
    ControlMethod,
    /// The SCI's line is on no I/O APIC.
    NoRoute,
}

fn port(v: u32) -> Option<u16> {
    u16::try_from(v).ok().filter(|&p| p != 0)
}

/// Arms the power button to ask `drain` for a graceful drain (see the module doc), with
/// the FADT and S5's sleep type read at boot. Call once, after `ioapic::init`.
pub fn setup(fadt: Option<Fadt>, s5: Option<(u8, u8)>, drain: &'static Drain) -> Setup {
    let Some(f) = fadt else {
        return Setup::NoFadt;
    };
    if f.hw_reduced {
        return Setup::HwReduced;
    }
    if !f.fixed_button {
        return Setup::ControlMethod;
    }
    let (Some(evt), Some(cnt)) = (port(f.pm1a_evt), port(f.pm1a_cnt)) else {
        return Setup::NoFadt;
    };
    PM1A_EVT.store(u32::from(evt), Ordering::Relaxed);
    PM1B_EVT.store(f.pm1b_evt & 0xFFFF, Ordering::Relaxed);
    EVT_HALF.store(u32::from(f.pm1_evt_len / 2).max(2), Ordering::Relaxed);
    PM1A_CNT.store(u32::from(cnt), Ordering::Relaxed);
    PM1B_CNT.store(f.pm1b_cnt & 0xFFFF, Ordering::Relaxed);
    let (a, b) = s5.unwrap_or((0, 0));
    S5.store(u32::from(a) | u32::from(b) << 8, Ordering::Relaxed);
    DRAIN.store(core::ptr::from_ref(drain).cast_mut(), Ordering::Release);
    // SAFETY: PM1a_CNT is the FADT's PM1 control port (QEMU: the PIIX4 or ICH9 PM block),
    // SMI_CMD its SMI command port; the kernel alone drives them.
    unsafe {
        if inw(cnt) & SCI_EN == 0 {
            if let (Some(smi), true) = (port(f.smi_cmd), f.acpi_enable != 0) {
                outb(smi, f.acpi_enable);
                // The firmware sets SCI_EN when it has handed over (QEMU: at once).
                for _ in 0..1_000_000 {
                    if inw(cnt) & SCI_EN != 0 {
                        break;
                    }
                    relax();
                }
            }
        }
    }
    for blk in [
        PM1A_EVT.load(Ordering::Relaxed),
        PM1B_EVT.load(Ordering::Relaxed),
    ] {
        if let Some(sts) = port(blk) {
            let en = sts + EVT_HALF.load(Ordering::Relaxed) as u16;
            // SAFETY: the PM1 event block's status and enable registers (FADT): a stale
            // button status is cleared (write 1), then the button's enable bit set.
            unsafe {
                outw(sts, PWRBTN);
                outw(en, inw(en) | PWRBTN);
            }
        }
    }
    let (gsi, level, low) = if f.sci < 16 {
        acpi::isa_irq(f.sci as u8)
    } else {
        (u32::from(f.sci), true, true)
    };
    if !ioapic::route(gsi, SCI_VECTOR, smp::apic_id(0), level, low) {
        // The button still works through core 0's look every second.
        ARMED.store(true, Ordering::Release);
        return Setup::NoRoute;
    }
    SCI_GSI.store(gsi + 1, Ordering::Relaxed);
    ARMED.store(true, Ordering::Release);
    ioapic::unmask(gsi);
    Setup::Armed {
        gsi,
        s5_from_dsdt: s5.is_some(),
    }
}

/// Whether the button was pressed since the last look: PWRBTN_STS read and cleared, the
/// drain asked for. Interrupts off (the handler, or a core that is not halted).
fn take_press() -> bool {
    if !ARMED.load(Ordering::Acquire) {
        return false;
    }
    let mut pressed = false;
    for blk in [
        PM1A_EVT.load(Ordering::Relaxed),
        PM1B_EVT.load(Ordering::Relaxed),
    ] {
        if let Some(sts) = port(blk) {
            // SAFETY: the PM1 status register (FADT); writing 1 clears the button's bit.
            unsafe {
                if inw(sts) & PWRBTN != 0 {
                    outw(sts, PWRBTN);
                    pressed = true;
                }
            }
        }
    }
    if pressed {
        PRESSES.fetch_add(1, Ordering::Relaxed);
        let d = DRAIN.load(Ordering::Acquire);
        // SAFETY: DRAIN is null or the `&'static Drain` given to `setup`.
        if let Some(d) = unsafe { d.as_ref() } {
            if !d.draining() {
                d.request();
                // A halted core 0 holds no console lock; another core's is brief.
                let (grace, timeout) = d.limits_ms();
                crate::kprintln!(
                    "drain: power button: /healthz answers 503; new connections served for {grace} ms, the rest reset at {timeout} ms"
                );
            }
        }
    }
    pressed
}

/// The SCI's handler (from `irq::bw_irq`, interrupts off): a press asks for the drain and
/// wakes every other core so each sees it now; anything else masks the line.
pub fn on_sci() {
    if take_press() {
        let me = smp::core_index().unwrap_or(0);
        for core in (0..smp::cores()).filter(|&c| c != me) {
            apic::send_ipi(smp::apic_id(core), irq::WAKE_VECTOR);
        }
    } else if let Some(gsi) = SCI_GSI.load(Ordering::Relaxed).checked_sub(1) {
        ioapic::mask(gsi);
    }
}

/// Core 0's look (once a second): a press its SCI could not deliver yet (a busy core
/// takes no interrupt). The other cores see the drain at their next poll round, or by the
/// handler's wake-up.
pub fn poll() -> bool {
    take_press()
}

/// Presses seen so far.
pub fn presses() -> u32 {
    PRESSES.load(Ordering::Relaxed)
}

/// S5's SLP_TYPa as it will be written.
pub fn s5_type() -> u8 {
    S5.load(Ordering::Relaxed) as u8
}

/// Soft off (ACPI S5): SLP_TYP and SLP_EN into the PM1 control registers; QEMU then
/// exits with status 0. If the machine is still on a moment later (no ACPI), QEMU's
/// isa-debug-exit (status 33), else halt.
pub fn power_off() -> ! {
    smp::stop_others();
    let s5 = S5.load(Ordering::Relaxed);
    let slp = |t: u32| ((t & 7) as u16) << 10 | SLP_EN;
    for (blk, t) in [
        (PM1A_CNT.load(Ordering::Relaxed), s5 & 0xFF),
        (PM1B_CNT.load(Ordering::Relaxed), s5 >> 8),
    ] {
        if let Some(cnt) = port(blk) {
            // SAFETY: the PM1 control register (FADT): SLP_EN with S5's SLP_TYP ends the
            // machine; SCI_EN is kept as it is.
            unsafe { outw(cnt, (inw(cnt) & SCI_EN) | slp(t)) };
        }
    }
    for _ in 0..10_000_000 {
        relax();
    }
    super::exit::finish()
}
