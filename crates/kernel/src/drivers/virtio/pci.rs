//! The virtio 1.x PCI transport ("modern": vendor capabilities, virtio 1.2 §4.1.4): common
//! configuration, notification and device configuration regions in the function's memory
//! BARs; interrupts by MSI-X, one table entry per receive queue aimed at the core that
//! owns the queue pair (INTx stays disabled).

use core::ptr::{read_volatile, write_volatile};

use super::{Error, Notify, Transport, Wake};
use crate::arch::irq::NIC_VECTOR;
use crate::pci::msix::MsiX;
use crate::pci::{Bar, Device};

// Common configuration offsets (virtio 1.2 §4.1.4.3).
const DEVICE_FEATURE_SELECT: usize = 0;
const DEVICE_FEATURE: usize = 4;
const DRIVER_FEATURE_SELECT: usize = 8;
const DRIVER_FEATURE: usize = 12;
const MSIX_CONFIG: usize = 16;
const DEVICE_STATUS: usize = 20;
const QUEUE_SELECT: usize = 22;
const QUEUE_SIZE: usize = 24;
const QUEUE_MSIX_VECTOR: usize = 26;
const QUEUE_ENABLE: usize = 28;
const QUEUE_NOTIFY_OFF: usize = 30;
const QUEUE_DESC: usize = 32;
const QUEUE_DRIVER: usize = 40;
const QUEUE_DEVICE: usize = 48;
const NO_VECTOR: u16 = 0xFFFF;

/// A virtio PCI function's regions.
pub struct PciTransport {
    common: *mut u8,
    device: *mut u8,
    device_len: usize,
    notify: *mut u8,
    notify_len: u32,
    notify_mult: u32,
    msix: Option<MsiX>,
}

fn bar_addr(dev: &Device, bar: u8, off: u32, len: u32) -> Option<*mut u8> {
    match dev.bars.get(bar as usize)? {
        Bar::Mem { addr, size, .. } if *addr != 0 && off as u64 + len as u64 <= *size => {
            Some((*addr + off as u64) as *mut u8)
        }
        _ => None,
    }
}

impl PciTransport {
    /// Finds the regions of virtio function `dev` and enables its memory decoding and bus
    /// mastering (INTx masked).
    pub fn new(dev: &Device) -> Result<PciTransport, Error> {
        dev.enable();
        let (mut common, mut device, mut notify, mut mult) = (None, None, None, 0);
        let (mut device_len, mut notify_len) = (0, 0);
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
                1 if common.is_none() => common = bar_addr(dev, bar, off, len.max(56)),
                2 if notify.is_none() => {
                    notify = bar_addr(dev, bar, off, len);
                    notify_len = len;
                    mult = a.read32(at + 16);
                }
                4 if device.is_none() => {
                    device = bar_addr(dev, bar, off, len.max(6));
                    device_len = len.max(6) as usize;
                }
                _ => {}
            }
        }
        Ok(PciTransport {
            common: common.ok_or(Error::MissingCapability("common configuration"))?,
            device: device.ok_or(Error::MissingCapability("device configuration"))?,
            device_len,
            notify: notify.ok_or(Error::MissingCapability("notification"))?,
            notify_len,
            notify_mult: mult,
            msix: MsiX::find(dev),
        })
    }

    fn r8(&self, off: usize) -> u8 {
        // SAFETY: off is a field of the common configuration structure, inside its BAR
        // (the capability's length was checked against the BAR, at least 56 bytes).
        unsafe { read_volatile(self.common.add(off)) }
    }
    fn w8(&self, off: usize, v: u8) {
        // SAFETY: as r8.
        unsafe { write_volatile(self.common.add(off), v) }
    }
    fn r16(&self, off: usize) -> u16 {
        // SAFETY: as r8; fields are naturally aligned.
        unsafe { read_volatile(self.common.add(off).cast()) }
    }
    fn w16(&self, off: usize, v: u16) {
        // SAFETY: as r16.
        unsafe { write_volatile(self.common.add(off).cast(), v) }
    }
    fn r32(&self, off: usize) -> u32 {
        // SAFETY: as r16.
        unsafe { read_volatile(self.common.add(off).cast()) }
    }
    fn w32(&self, off: usize, v: u32) {
        // SAFETY: as r16.
        unsafe { write_volatile(self.common.add(off).cast(), v) }
    }
    fn w64(&self, off: usize, v: u64) {
        self.w32(off, v as u32);
        self.w32(off + 4, (v >> 32) as u32);
    }
}

impl Transport for PciTransport {
    fn device_features(&mut self) -> u64 {
        self.w32(DEVICE_FEATURE_SELECT, 0);
        let lo = self.r32(DEVICE_FEATURE) as u64;
        self.w32(DEVICE_FEATURE_SELECT, 1);
        let hi = self.r32(DEVICE_FEATURE) as u64;
        lo | hi << 32
    }

    fn set_driver_features(&mut self, f: u64) {
        self.w32(DRIVER_FEATURE_SELECT, 0);
        self.w32(DRIVER_FEATURE, f as u32);
        self.w32(DRIVER_FEATURE_SELECT, 1);
        self.w32(DRIVER_FEATURE, (f >> 32) as u32);
        // Configuration-change interrupts are never wanted.
        self.w16(MSIX_CONFIG, NO_VECTOR);
    }

    fn status(&mut self) -> u8 {
        self.r8(DEVICE_STATUS)
    }

    fn set_status(&mut self, s: u8) {
        self.w8(DEVICE_STATUS, s);
    }

    fn queue_max(&mut self, q: u16) -> u16 {
        self.w16(QUEUE_SELECT, q);
        self.r16(QUEUE_SIZE)
    }

    fn queue_enable(
        &mut self,
        q: u16,
        size: u16,
        (desc, driver, device): (u64, u64, u64),
        wake: Wake,
    ) -> Result<Notify, Error> {
        self.w16(QUEUE_SELECT, q);
        let off = self.r16(QUEUE_NOTIFY_OFF) as u64 * self.notify_mult as u64;
        if off + 2 > self.notify_len as u64 {
            return Err(Error::BadNotifyOffset(q));
        }
        self.w16(QUEUE_SIZE, size);
        let vector = match wake {
            Wake::Msi(entry) => entry,
            _ => NO_VECTOR,
        };
        self.w16(QUEUE_MSIX_VECTOR, vector);
        if vector != NO_VECTOR && self.r16(QUEUE_MSIX_VECTOR) != vector {
            // The device could not take the vector: this queue will not interrupt.
            self.w16(QUEUE_MSIX_VECTOR, NO_VECTOR);
        }
        self.w64(QUEUE_DESC, desc);
        self.w64(QUEUE_DRIVER, driver);
        self.w64(QUEUE_DEVICE, device);
        self.w16(QUEUE_ENABLE, 1);
        Ok(Notify::u16((self.notify as u64 + off) as *mut u16))
    }

    fn config_len(&self) -> usize {
        self.device_len
    }

    fn config8(&self, off: usize) -> u8 {
        if off >= self.device_len {
            return 0;
        }
        // SAFETY: off lies inside the device configuration region (its capability's
        // length, checked against the BAR).
        unsafe { read_volatile(self.device.add(off)) }
    }

    fn config_ptr(&self, off: usize, len: usize) -> Option<*const u8> {
        // The region lies inside its BAR (checked at `new`); in it, so does the field.
        (off + len <= self.device_len).then(|| self.device.wrapping_add(off).cast_const())
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
