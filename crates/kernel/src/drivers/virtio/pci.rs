//! The virtio 1.x PCI transport ("modern": vendor capabilities, virtio 1.2 §4.1.4): common
//! configuration, notification and device configuration regions in the function's memory
//! BARs; interrupts by MSI-X, one table entry per receive queue aimed at the core that
//! owns the queue pair (INTx stays disabled).

use super::super::hal::{Hal, Mmio, Reg, RO, RW};
use super::{Error, Notify, Transport, Wake};
use crate::arch::irq::NIC_VECTOR;
use crate::arch::pci::msix::MsiX;
use crate::arch::pci::{Bar, Device};

const NO_VECTOR: u16 = 0xFFFF;

/// The common configuration structure (virtio 1.2 §4.1.4.3), each field a typed register.
struct Common {
    device_feature_select: Reg<u32, RW>,
    device_feature: Reg<u32, RO>,
    driver_feature_select: Reg<u32, RW>,
    driver_feature: Reg<u32, RW>,
    msix_config: Reg<u16, RW>,
    device_status: Reg<u8, RW>,
    queue_select: Reg<u16, RW>,
    queue_size: Reg<u16, RW>,
    queue_msix_vector: Reg<u16, RW>,
    queue_enable: Reg<u16, RW>,
    queue_notify_off: Reg<u16, RO>,
    /// queue_desc, queue_driver, queue_device: 64-bit, written as two 32-bit halves.
    queue_rings: [(Reg<u32, RW>, Reg<u32, RW>); 3],
}

impl Common {
    fn new(m: &Mmio) -> Option<Common> {
        let half = |off| Some((m.reg(off)?, m.reg(off + 4)?));
        Some(Common {
            device_feature_select: m.reg(0)?,
            device_feature: m.reg(4)?,
            driver_feature_select: m.reg(8)?,
            driver_feature: m.reg(12)?,
            msix_config: m.reg(16)?,
            device_status: m.reg(20)?,
            queue_select: m.reg(22)?,
            queue_size: m.reg(24)?,
            queue_msix_vector: m.reg(26)?,
            queue_enable: m.reg(28)?,
            queue_notify_off: m.reg(30)?,
            queue_rings: [half(32)?, half(40)?, half(48)?],
        })
    }
}

/// A virtio PCI function's regions.
pub struct PciTransport {
    common: Common,
    device: Mmio,
    notify: Mmio,
    notify_mult: u32,
    msix: Option<MsiX>,
}

/// The region `off..off + len` of memory BAR `bar`, mapped through `H`.
fn bar_region<H: Hal>(dev: &Device, bar: u8, off: u32, len: u32) -> Option<Mmio> {
    match dev.bars.get(bar as usize)? {
        Bar::Mem { addr, size, .. } if *addr != 0 && off as u64 + len as u64 <= *size => {
            // SAFETY: inside an assigned memory BAR of the function (checked just above).
            Some(unsafe { Mmio::map::<H>(*addr + off as u64, len as usize) })
        }
        _ => None,
    }
}

impl PciTransport {
    /// Finds the regions of virtio function `dev`, maps them through `H` and enables its
    /// memory decoding and bus mastering (INTx masked).
    pub fn new<H: Hal>(dev: &Device) -> Result<PciTransport, Error> {
        dev.enable();
        let (mut common, mut device, mut notify, mut mult) = (None, None, None, 0);
        for (id, at) in dev.capabilities() {
            if id != 0x09 {
                continue;
            }
            let a = dev.addr;
            let cfg_type = a.read8(at + 3);
            let bar = a.read8(at + 4);
            let off = a.read32(at + 8);
            let len = a.read32(at + 12);
            match cfg_type {
                1 if common.is_none() => common = bar_region::<H>(dev, bar, off, len.max(56)),
                2 if notify.is_none() => {
                    notify = bar_region::<H>(dev, bar, off, len);
                    mult = a.read32(at + 16);
                }
                4 if device.is_none() => device = bar_region::<H>(dev, bar, off, len.max(6)),
                _ => {}
            }
        }
        let common = common.ok_or(Error::MissingCapability("common configuration"))?;
        Ok(PciTransport {
            common: Common::new(&common).ok_or(Error::MissingCapability("common configuration"))?,
            device: device.ok_or(Error::MissingCapability("device configuration"))?,
            notify: notify.ok_or(Error::MissingCapability("notification"))?,
            notify_mult: mult,
            msix: MsiX::find::<H>(dev),
        })
    }
}

impl Transport for PciTransport {
    fn device_features(&mut self) -> u64 {
        let c = &self.common;
        c.device_feature_select.write(0);
        let lo = c.device_feature.read() as u64;
        c.device_feature_select.write(1);
        let hi = c.device_feature.read() as u64;
        lo | hi << 32
    }

    fn set_driver_features(&mut self, f: u64) {
        let c = &self.common;
        c.driver_feature_select.write(0);
        c.driver_feature.write(f as u32);
        c.driver_feature_select.write(1);
        c.driver_feature.write((f >> 32) as u32);
        // Configuration-change interrupts are never wanted.
        c.msix_config.write(NO_VECTOR);
    }

    fn status(&mut self) -> u8 {
        self.common.device_status.read()
    }

    fn set_status(&mut self, s: u8) {
        self.common.device_status.write(s);
    }

    fn queue_max(&mut self, q: u16) -> u16 {
        self.common.queue_select.write(q);
        self.common.queue_size.read()
    }

    fn queue_enable(
        &mut self,
        q: u16,
        size: u16,
        rings: (u64, u64, u64),
        wake: Wake,
    ) -> Result<Notify, Error> {
        let c = &self.common;
        c.queue_select.write(q);
        // The device's offset is device data: the doorbell must lie inside the
        // notification region (a view past it is refused).
        let off = c.queue_notify_off.read() as u64 * self.notify_mult as u64;
        let bell = usize::try_from(off)
            .ok()
            .and_then(|off| self.notify.reg(off))
            .ok_or(Error::BadNotifyOffset(q))?;
        c.queue_size.write(size);
        let vector = match wake {
            Wake::Msi(entry) => entry,
            _ => NO_VECTOR,
        };
        c.queue_msix_vector.write(vector);
        if vector != NO_VECTOR && c.queue_msix_vector.read() != vector {
            // The device could not take the vector: this queue will not interrupt.
            c.queue_msix_vector.write(NO_VECTOR);
        }
        for ((lo, hi), v) in c.queue_rings.iter().zip([rings.0, rings.1, rings.2]) {
            lo.write(v as u32);
            hi.write((v >> 32) as u32);
        }
        c.queue_enable.write(1);
        Ok(Notify::U16(bell))
    }

    fn config_len(&self) -> usize {
        self.device.len()
    }

    fn config8(&self, off: usize) -> u8 {
        self.device.reg::<u8, RO>(off).map_or(0, Reg::read)
    }

    fn config_u16(&self, off: usize) -> Option<Reg<u16, RO>> {
        self.device.reg(off)
    }

    fn wake_for(&mut self, k: u16, apic: u32) -> Wake {
        match &self.msix {
            Some(m) if m.set(k, apic, NIC_VECTOR) => Wake::Msi(k),
            _ => Wake::None,
        }
    }

    fn interrupts_on(&mut self) {
        if let Some(m) = &self.msix {
            m.enable();
        }
    }
}
