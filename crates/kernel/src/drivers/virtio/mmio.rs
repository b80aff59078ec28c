//! The virtio MMIO transport, version 2 (virtio 1.2 §4.2.2): one register page per device,
//! as QEMU's microvm machine, Firecracker and Cloud Hypervisor provide. There is no bus to
//! enumerate: the kernel is told where the devices are (the `virtio_mmio.device=` words
//! QEMU's microvm and Firecracker append to the command line, or the microvm layout of 24
//! slots of 512 bytes from 0xFEB0_0000, probed by magic). Interrupts are one
//! level-triggered line per device, routed through the I/O APIC; the driver lowers it by
//! acknowledging InterruptStatus.
//!
//! The legacy interface (version 1, QEMU's default `force-legacy=on`) is refused with a
//! clear error: `bareweb run --machine microvm` asks QEMU for version 2.

use core::ptr::{read_volatile, write_volatile};

use super::{Error, Notify, Transport, Wake};
use crate::arch::{ioapic, irq::NIC_VECTOR};

const MAGIC: usize = 0x000;
const VERSION: usize = 0x004;
const DEVICE_ID: usize = 0x008;
const DEVICE_FEATURES: usize = 0x010;
const DEVICE_FEATURES_SEL: usize = 0x014;
const DRIVER_FEATURES: usize = 0x020;
const DRIVER_FEATURES_SEL: usize = 0x024;
const QUEUE_SEL: usize = 0x030;
const QUEUE_NUM_MAX: usize = 0x034;
const QUEUE_NUM: usize = 0x038;
const QUEUE_READY: usize = 0x044;
const QUEUE_NOTIFY: usize = 0x050;
const INTERRUPT_STATUS: usize = 0x060;
const INTERRUPT_ACK: usize = 0x064;
const STATUS: usize = 0x070;
const QUEUE_DESC: usize = 0x080;
const QUEUE_DRIVER: usize = 0x090;
const QUEUE_DEVICE: usize = 0x0A0;
const CONFIG: usize = 0x100;

/// "virt", little-endian.
pub const MAGIC_VALUE: u32 = 0x7472_6976;
/// Bytes of one device's register page.
pub const REGION: u64 = 0x200;
/// The microvm machine's virtio-mmio slots: base, count (QEMU hw/i386/microvm.c).
pub const MICROVM_SLOTS: (u64, usize) = (0xFEB0_0000, 24);

/// One virtio-mmio device: its register page and interrupt line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    /// Physical address of the register page.
    pub base: u64,
    /// Its interrupt line as a GSI (0: unknown).
    pub gsi: u32,
}

/// A virtio-mmio device, version 2.
pub struct MmioTransport {
    base: *mut u8,
    gsi: u32,
}

fn r32(base: u64, off: usize) -> u32 {
    // SAFETY: base is a virtio-mmio register page (from the command line or the machine's
    // layout) in the identity-mapped, uncached 4th GiB; off is a 32-bit register in it.
    unsafe { read_volatile((base as usize + off) as *const u32) }
}

/// The device id at `base` if it is a virtio-mmio device (magic checked), with its
/// version: `(device id, version)`; device id 0 means an empty slot.
pub fn probe(base: u64) -> Option<(u32, u32)> {
    if !(0xC000_0000..0xFFFF_F000).contains(&base) {
        return None;
    }
    (r32(base, MAGIC) == MAGIC_VALUE).then(|| (r32(base, DEVICE_ID), r32(base, VERSION)))
}

impl MmioTransport {
    /// The device in `slot`: checks magic and version 2.
    pub fn new(slot: Slot) -> Result<MmioTransport, Error> {
        match probe(slot.base) {
            Some((_, 2)) => Ok(MmioTransport {
                base: slot.base as *mut u8,
                gsi: slot.gsi,
            }),
            _ if slot.base == 0 => Err(Error::NotVirtioMmio(0, 0)),
            _ => Err(Error::NotVirtioMmio(
                r32(slot.base, MAGIC),
                r32(slot.base, VERSION),
            )),
        }
    }

    fn r(&self, off: usize) -> u32 {
        r32(self.base as u64, off)
    }

    fn w(&self, off: usize, v: u32) {
        // SAFETY: as r32: a register of this device's page.
        unsafe { write_volatile(self.base.add(off).cast::<u32>(), v) }
    }
}

impl Transport for MmioTransport {
    fn device_features(&mut self) -> u64 {
        self.w(DEVICE_FEATURES_SEL, 0);
        let lo = self.r(DEVICE_FEATURES) as u64;
        self.w(DEVICE_FEATURES_SEL, 1);
        let hi = self.r(DEVICE_FEATURES) as u64;
        lo | hi << 32
    }

    fn set_driver_features(&mut self, f: u64) {
        self.w(DRIVER_FEATURES_SEL, 0);
        self.w(DRIVER_FEATURES, f as u32);
        self.w(DRIVER_FEATURES_SEL, 1);
        self.w(DRIVER_FEATURES, (f >> 32) as u32);
    }

    fn status(&mut self) -> u8 {
        self.r(STATUS) as u8
    }

    fn set_status(&mut self, s: u8) {
        self.w(STATUS, s as u32);
    }

    fn queue_max(&mut self, q: u16) -> u16 {
        self.w(QUEUE_SEL, q as u32);
        if self.r(QUEUE_READY) != 0 {
            return 0;
        }
        self.r(QUEUE_NUM_MAX).min(u16::MAX as u32) as u16
    }

    fn queue_enable(
        &mut self,
        q: u16,
        size: u16,
        (desc, driver, device): (u64, u64, u64),
        _wake: Wake,
    ) -> Result<Notify, Error> {
        self.w(QUEUE_SEL, q as u32);
        self.w(QUEUE_NUM, size as u32);
        for (off, v) in [
            (QUEUE_DESC, desc),
            (QUEUE_DRIVER, driver),
            (QUEUE_DEVICE, device),
        ] {
            self.w(off, v as u32);
            self.w(off + 4, (v >> 32) as u32);
        }
        self.w(QUEUE_READY, 1);
        // SAFETY: QueueNotify is a register of this device's page.
        Ok(Notify::u32(unsafe { self.base.add(QUEUE_NOTIFY) }.cast()))
    }

    fn config_len(&self) -> usize {
        REGION as usize - CONFIG
    }

    fn config8(&self, off: usize) -> u8 {
        if off >= self.config_len() {
            return 0;
        }
        // SAFETY: the configuration space follows the registers inside the device's page
        // (byte reads are allowed there, virtio 1.2 §4.2.2.2).
        unsafe { read_volatile(self.base.add(CONFIG + off)) }
    }

    fn config_ptr(&self, off: usize, len: usize) -> Option<*const u8> {
        (off + len <= self.config_len()).then(|| self.base.wrapping_add(CONFIG + off).cast_const())
    }

    fn wake_for(&mut self, k: u16, apic: u32) -> Wake {
        // One line per device: only the first queue pair's core can be woken by it.
        if k != 0 || self.gsi == 0 {
            return Wake::None;
        }
        if ioapic::route(self.gsi, NIC_VECTOR, apic, true, false) {
            // Core k owns queue pair k: its handler masks the line until it re-arms.
            crate::arch::irq::set_level_line(k as usize, Some(self.gsi));
            Wake::Line(self.gsi)
        } else {
            Wake::None
        }
    }

    fn interrupt_ack(&self) -> Option<(*mut u32, *mut u32)> {
        // SAFETY: both registers lie inside the device's page.
        unsafe {
            Some((
                self.base.add(INTERRUPT_STATUS).cast(),
                self.base.add(INTERRUPT_ACK).cast(),
            ))
        }
    }
}

/// The first virtio-mmio network device: from the command line's `virtio_mmio.device=`
/// words (Firecracker's and Linux's convention), else by probing the slots of QEMU's
/// microvm machine (24 register pages from 0xFEB0_0000; their lines are GSIs from the
/// second I/O APIC's first, 24, or from 5 without it: QEMU hw/i386/microvm.c).
pub fn find_net(
    s: &crate::cmdline::Settings,
    procs: &Result<crate::acpi::Processors, crate::acpi::Error>,
) -> Option<Slot> {
    let net = |base: u64, gsi: u32| {
        let (id, version) = probe(base)?;
        crate::kprintln!("virtio-mmio: {base:#x} device {id} version {version} GSI {gsi}");
        (id == super::super::virtio_net::DEVICE_ID_NET).then_some(Slot { base, gsi })
    };
    if s.n_mmio > 0 {
        return s.mmio[..s.n_mmio].iter().find_map(|&(b, g)| net(b, g));
    }
    let base_gsi = match procs {
        Ok(p) if p.ioapics().len() >= 2 => p.ioapics()[1].1,
        _ => 5,
    };
    let (first, n) = MICROVM_SLOTS;
    (0..n).find_map(|i| {
        let base = first + i as u64 * REGION;
        match probe(base) {
            Some((0, _)) | None => None,
            Some(_) => net(base, base_gsi + i as u32),
        }
    })
}
