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

use super::super::hal::{Hal, Identity, Mmio, Reg, RO, RW, WO};
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

/// A virtio-mmio device, version 2: its register page as typed registers.
pub struct MmioTransport {
    page: Mmio,
    device_features: Reg<u32, RO>,
    device_features_sel: Reg<u32, WO>,
    driver_features: Reg<u32, WO>,
    driver_features_sel: Reg<u32, WO>,
    queue_sel: Reg<u32, WO>,
    queue_num_max: Reg<u32, RO>,
    queue_num: Reg<u32, WO>,
    queue_ready: Reg<u32, RW>,
    queue_notify: Reg<u32, WO>,
    interrupt_status: Reg<u32, RO>,
    interrupt_ack: Reg<u32, WO>,
    status: Reg<u32, RW>,
    /// QueueDesc, QueueDriver, QueueDevice: 64-bit, as (low, high) halves.
    queue_rings: [(Reg<u32, WO>, Reg<u32, WO>); 3],
    gsi: u32,
}

/// The register page at `base` through `H`, if `base` may be one (in the 4th GiB, where
/// machines put them).
fn page<H: Hal>(base: u64) -> Option<Mmio> {
    if !(0xC000_0000..0xFFFF_F000).contains(&base) {
        return None;
    }
    // SAFETY: a virtio-mmio register page (from the command line or the machine's layout)
    // in the uncached 4th GiB.
    Some(unsafe { Mmio::map::<H>(base, REGION as usize) })
}

fn r32(page: &Mmio, off: usize) -> u32 {
    page.reg::<u32, RO>(off).map_or(0, Reg::read)
}

/// The device id at `base` if it is a virtio-mmio device (magic checked), with its
/// version: `(device id, version)`; device id 0 means an empty slot.
pub fn probe<H: Hal>(base: u64) -> Option<(u32, u32)> {
    let p = page::<H>(base)?;
    (r32(&p, MAGIC) == MAGIC_VALUE).then(|| (r32(&p, DEVICE_ID), r32(&p, VERSION)))
}

impl MmioTransport {
    /// The device in `slot`, mapped through `H`: checks magic and version 2.
    pub fn new<H: Hal>(slot: Slot) -> Result<MmioTransport, Error> {
        let Some(p) = page::<H>(slot.base) else {
            return Err(Error::NotVirtioMmio(0, 0));
        };
        if (r32(&p, MAGIC), r32(&p, VERSION)) != (MAGIC_VALUE, 2) {
            return Err(Error::NotVirtioMmio(r32(&p, MAGIC), r32(&p, VERSION)));
        }
        MmioTransport::on(p, slot.gsi).ok_or(Error::NotVirtioMmio(0, 0))
    }

    /// The transport over register page `page` (checked already).
    fn on(page: Mmio, gsi: u32) -> Option<MmioTransport> {
        let half = |off| Some((page.reg(off)?, page.reg(off + 4)?));
        Some(MmioTransport {
            device_features: page.reg(DEVICE_FEATURES)?,
            device_features_sel: page.reg(DEVICE_FEATURES_SEL)?,
            driver_features: page.reg(DRIVER_FEATURES)?,
            driver_features_sel: page.reg(DRIVER_FEATURES_SEL)?,
            queue_sel: page.reg(QUEUE_SEL)?,
            queue_num_max: page.reg(QUEUE_NUM_MAX)?,
            queue_num: page.reg(QUEUE_NUM)?,
            queue_ready: page.reg(QUEUE_READY)?,
            queue_notify: page.reg(QUEUE_NOTIFY)?,
            interrupt_status: page.reg(INTERRUPT_STATUS)?,
            interrupt_ack: page.reg(INTERRUPT_ACK)?,
            status: page.reg(STATUS)?,
            queue_rings: [half(QUEUE_DESC)?, half(QUEUE_DRIVER)?, half(QUEUE_DEVICE)?],
            page,
            gsi,
        })
    }
}

impl Transport for MmioTransport {
    fn device_features(&mut self) -> u64 {
        self.device_features_sel.write(0);
        let lo = self.device_features.read() as u64;
        self.device_features_sel.write(1);
        let hi = self.device_features.read() as u64;
        lo | hi << 32
    }

    fn set_driver_features(&mut self, f: u64) {
        self.driver_features_sel.write(0);
        self.driver_features.write(f as u32);
        self.driver_features_sel.write(1);
        self.driver_features.write((f >> 32) as u32);
    }

    fn status(&mut self) -> u8 {
        self.status.read() as u8
    }

    fn set_status(&mut self, s: u8) {
        self.status.write(s as u32);
    }

    fn queue_max(&mut self, q: u16) -> u16 {
        self.queue_sel.write(q as u32);
        if self.queue_ready.read() != 0 {
            return 0;
        }
        self.queue_num_max.read().min(u16::MAX as u32) as u16
    }

    fn queue_enable(
        &mut self,
        q: u16,
        size: u16,
        rings: (u64, u64, u64),
        _wake: Wake,
    ) -> Result<Notify, Error> {
        self.queue_sel.write(q as u32);
        self.queue_num.write(size as u32);
        for ((lo, hi), v) in self.queue_rings.iter().zip([rings.0, rings.1, rings.2]) {
            lo.write(v as u32);
            hi.write((v >> 32) as u32);
        }
        self.queue_ready.write(1);
        Ok(Notify::U32(self.queue_notify))
    }

    fn config_len(&self) -> usize {
        REGION as usize - CONFIG
    }

    fn config8(&self, off: usize) -> u8 {
        // The configuration space follows the registers inside the device's page (byte
        // reads are allowed there, virtio 1.2 §4.2.2.2).
        match CONFIG.checked_add(off) {
            Some(at) => self.page.reg::<u8, RO>(at).map_or(0, Reg::read),
            None => 0,
        }
    }

    fn config_u16(&self, off: usize) -> Option<Reg<u16, RO>> {
        self.page.reg(CONFIG.checked_add(off)?)
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

    fn interrupt_ack(&self) -> Option<(Reg<u32, RO>, Reg<u32, WO>)> {
        Some((self.interrupt_status, self.interrupt_ack))
    }
}

/// The first virtio-mmio network device: from the command line's `virtio_mmio.device=`
/// words (Firecracker's and Linux's convention), else by probing the slots of QEMU's
/// microvm machine (24 register pages from 0xFEB0_0000; their lines are GSIs from the
/// second I/O APIC's first, 24, or from 5 without it: QEMU hw/i386/microvm.c).
pub fn find_net(
    s: &crate::cmdline::Settings,
    procs: &Result<crate::arch::acpi::Processors, crate::arch::acpi::Error>,
) -> Option<Slot> {
    let net = |base: u64, gsi: u32| {
        let (id, version) = probe::<Identity>(base)?;
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
        match probe::<Identity>(base) {
            Some((0, _)) | None => None,
            Some(_) => net(base, base_gsi + i as u32),
        }
    })
}
