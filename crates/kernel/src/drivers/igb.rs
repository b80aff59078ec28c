//! Intel 82576 ("igb"; QEMU ≥ 8 `-device igb`): the 82540EM's register core and queue
//! code ([`super::e1000`]'s `Regs`, `E1000Rx`, `E1000Tx`, shared, not copied), brought up
//! the 82576's way: advanced one-buffer receive descriptors (SRRCTL), per-queue enables
//! (RXDCTL, TXDCTL), and up to [`QUEUES`] queue pairs with receive-side scaling.
//!
//! Heads up! read the Intel 82576EB GbE Controller datasheet, §7.1.5 (advanced receive
//! descriptors), §7.1.2.10 (RSS), §8.10 (queue registers: queues 0-3 keep the 82574's
//! addresses, 0x2800 + 0x100 × k, as aliases of 0xC000 + 0x40 × k); Linux igb
//! `igb_configure_rx_ring`, `igb_setup_mrqc`; QEMU `hw/net/igb_core.c` (a queue takes
//! frames only with RXDCTL.ENABLE set).
//!
//! - Advanced one-buffer receive descriptors write back status/errors at 8 and the length
//!   at 12, as the 82574's extended ones ([`Layout::EXTENDED`]): the receive path, its
//!   range checks and its shadow of buffers are the 82540EM's.
//! - RSS (two or more pairs): MRQC = RSS on the 4-tuple of TCP/IPv4 and the IPv4 pair;
//!   the 128-entry redirection table holds the queue number in each byte (not bit 7 as
//!   on the 82574).
//! - Wake-ups: INTx, probed as on the 82540EM (ICR.RXT0 is the 82576's RXDW in legacy
//!   interrupt mode), waking pair 0's core; the other pairs' cores wake by timer.
//!   MSI-X (GPIE, IVAR, EIMS: the 82576's extended interrupts) is not driven yet.
//! - Transmit: legacy descriptors (the 82576 takes them), complete checksums from the
//!   engine; no segmentation offload yet (the advanced context descriptor differs from
//!   the 82574's).
//! - Link: STATUS.LU, as on the 82540EM.

use alloc::boxed::Box;
use alloc::vec::Vec;

use bareweb_engine::nic::{LinkSense, Nic, NicCounters};
use bareweb_engine::wire::EthernetAddress;

use super::e1000::{self, E1000Link, E1000Rx, E1000Tx, Error, Layout, Regs, RxWake, E1000};
use super::hal::{Hal, Identity, Mmio, Reg, WO};
use super::{Driver, Open};
use crate::pci::{Bar, Device};

/// 82576 (QEMU's igb, tested there), and its copper/fibre/serdes/quad variants sharing
/// the register set (not tested). The i350 (0x1521..) and i210 (0x1533..) are igb-family
/// parts with other queue and interrupt layouts: not accepted until tested.
pub const DEVICES: [u16; 8] = [
    0x10C9, 0x10E6, 0x10E7, 0x10E8, 0x1526, 0x150A, 0x1518, 0x150D,
];

/// Queue pairs driven (the 82576 has 16; the kernel's cores are fewer).
pub const QUEUES: usize = 4;

const MDIC: usize = 0x0020;
const SRRCTL: usize = 0x280C;
const RXDCTL: usize = 0x2828;
const TXDCTL: usize = 0x3828;
const MRQC: usize = 0x5818;
const RETA: usize = 0x5C00;
const RSSRK: usize = 0x5C80;

/// SRRCTL: 2 KiB packet buffers (BSIZEPACKET in KiB), advanced one-buffer descriptors
/// (DESCTYPE 001), drop when no descriptor is free (DROP_EN).
pub const SRRCTL_BITS: u32 = 2 | 1 << 25 | 1 << 31;
/// MDIC: write (OP 01) PHY 1's control register (BMCR, 0): auto-negotiation on and
/// restarted, 1000 Mb/s full duplex. QEMU's 82576 keeps its link down after a reset until
/// the driver restarts auto-negotiation (as Linux igb's PHY setup does); STATUS.LU rises
/// when it completes.
pub const MDIC_AUTONEG: u32 = 0x1340 | 1 << 21 | 1 << 26;
/// RXDCTL/TXDCTL.ENABLE.
pub const QUEUE_ENABLE: u32 = 1 << 25;
/// MRQC: RSS (multiple queues), hashing TCP/IPv4 and IPv4.
pub const MRQC_RSS: u32 = 2 | 1 << 16 | 1 << 17;

/// The Toeplitz key (the one Microsoft's RSS specification gives as its example).
const RSS_KEY: [u8; 40] = [
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
    0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
    0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
];

/// A RETA dword for `pairs` queues: four entries, each a queue number, round robin.
pub fn reta_word(i: usize, pairs: usize) -> u32 {
    (0..4).fold(0, |w, b| w | (((4 * i + b) % pairs) as u32) << (8 * b))
}

/// One queue pair of an 82576: the 82540EM's pair type, brought up the 82576's way.
pub struct Igb<H: Hal = Identity>(E1000<H>);

impl Igb {
    /// Whether `dev` is an 82576 we drive.
    pub fn matches(dev: &Device) -> bool {
        dev.vendor == e1000::VENDOR && DEVICES.contains(&dev.device)
    }
}

impl<H: Hal> Igb<H> {
    /// The 82540EM-typed queue pair inside.
    pub fn into_inner(self) -> E1000<H> {
        self.0
    }

    /// Resets the device whose registers are `m` and brings up `pairs` queue pairs
    /// (1 to [`QUEUES`]), RSS on with two or more, interrupts masked.
    pub fn bring_up(m: &Mmio, pairs: usize) -> Result<Vec<Igb<H>>, Error> {
        let regs = Regs::new(m).ok_or(Error::NoRegisters)?;
        let reg =
            |off: usize| -> Result<Reg<u32, WO>, Error> { m.reg(off).ok_or(Error::NoRegisters) };
        let pairs = pairs.clamp(1, QUEUES);
        let mac = regs.reset()?;
        reg(MDIC)?.write(MDIC_AUTONEG);
        let mut sides = Vec::with_capacity(pairs);
        for k in 0..pairs {
            let rd = Regs::queue(m, 0x2800, k).ok_or(Error::NoRegisters)?;
            let td = Regs::queue(m, 0x3800, k).ok_or(Error::NoRegisters)?;
            let rx = E1000Rx::new::<H>(&regs, &rd, Layout::EXTENDED)?;
            let tx = E1000Tx::<H>::new(&td)?;
            reg(SRRCTL + 0x100 * k)?.write(SRRCTL_BITS);
            reg(RXDCTL + 0x100 * k)?.write(QUEUE_ENABLE);
            reg(TXDCTL + 0x100 * k)?.write(QUEUE_ENABLE);
            sides.push((rx, tx));
        }
        if pairs > 1 {
            for (i, w) in RSS_KEY.chunks_exact(4).enumerate() {
                reg(RSSRK + 4 * i)?.write(u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
            }
            for i in 0..32 {
                reg(RETA + 4 * i)?.write(reta_word(i, pairs));
            }
            reg(MRQC)?.write(MRQC_RSS);
        } else {
            reg(MRQC)?.write(0);
        }
        regs.enable_tx();
        regs.enable_rx();
        Ok(sides
            .into_iter()
            .map(|(mut rx, tx)| {
                rx.refill();
                Igb(E1000::from_parts(rx, tx, mac, regs))
            })
            .collect())
    }

    /// The device's link: STATUS.LU, as on the 82540EM.
    pub fn link_sense(&self) -> E1000Link {
        self.0.link_sense()
    }
}

impl<H: Hal> bareweb_engine::cores::CoreQueue for Igb<H> {}

impl<H: Hal> Nic for Igb<H> {
    type Rx = E1000Rx;
    type Tx = E1000Tx<H>;

    fn split(&mut self) -> (&mut E1000Rx, &mut E1000Tx<H>) {
        self.0.split()
    }

    fn mac(&self) -> EthernetAddress {
        self.0.mac()
    }

    fn caps(&self) -> bareweb_engine::nic::NicCaps {
        self.0.caps()
    }

    fn counters(&self) -> NicCounters {
        self.0.counters()
    }
}

impl<H: Hal> Driver for Igb<H> {
    type Error = Error;
    const NAME: &'static str = "igb";

    fn matches(dev: &Device) -> bool {
        Igb::matches(dev)
    }

    /// Up to [`QUEUES`] queue pairs (RSS with two or more); pair 0's receive queue wakes
    /// `wake[0]`'s core by the probed INTx line.
    fn open(dev: &Device, with: &Open<'_>) -> Result<(Vec<Igb<H>>, usize), Error> {
        let base = match dev.bars[0] {
            Bar::Mem { addr, size, .. } if addr != 0 && size >= e1000::REGION as u64 => addr,
            _ => return Err(Error::NoRegisters),
        };
        dev.enable();
        // SAFETY: BAR 0 of an 82576, at least REGION bytes (checked above).
        let m = unsafe { Mmio::map::<H>(base, e1000::REGION) };
        let mut pairs = Igb::<H>::bring_up(&m, with.pairs)?;
        if let Some(&apic) = with.wake.first() {
            let regs = Regs::new(&m).ok_or(Error::NoRegisters)?;
            if let Some(g) = e1000::probe_line(dev, &regs, apic) {
                pairs[0].0.rx_mut().set_wake(RxWake::Line(g));
            }
        }
        Ok((pairs, QUEUES))
    }

    fn rx_counters(rx: &E1000Rx, c: &mut NicCounters) {
        <E1000<H>>::rx_counters(rx, c)
    }

    fn tx_counters(tx: &E1000Tx<H>, c: &mut NicCounters) {
        <E1000<H>>::tx_counters(tx, c)
    }

    fn into_rings(self) -> (E1000Rx, E1000Tx<H>) {
        self.0.into_rings()
    }

    fn link(&self) -> Box<dyn LinkSense> {
        Box::new(self.link_sense())
    }
}

#[cfg(test)]
mod tests {
    //! The driver against `drivers::fake`'s register file playing an 82576: advanced
    //! write-backs (the device overwrites the buffer address), four queues, and lies.
    use super::super::fake::{FakeE1000, FakeHal};
    use super::*;
    use bareweb_engine::nic::{RxFrame, RxRing, TxRing};

    const MAC: [u8; 6] = [0x52, 0x54, 0, 0x12, 0x34, 0x59];
    const RING: u32 = 256;

    fn up(pairs: usize) -> (FakeE1000, Vec<Igb<FakeHal>>) {
        let mut dev = FakeE1000::default();
        dev.set_reg(0x5400, u32::from_le_bytes([MAC[0], MAC[1], MAC[2], MAC[3]]));
        dev.set_reg(0x5404, u32::from_le_bytes([MAC[4], MAC[5], 0, 0]) | 1 << 31);
        dev.set_reg(0x0008, 1 << 1);
        let nic = dev.resetting(|m| {
            let mut nic = Err(Error::NoReset);
            for _ in 0..1000 {
                nic = Igb::<FakeHal>::bring_up(&m, pairs);
                if nic.as_ref().err() != Some(&Error::NoReset) {
                    break;
                }
            }
            nic
        });
        (dev, nic.unwrap())
    }

    #[test]
    fn four_pairs_get_advanced_descriptors_enabled_queues_and_rss() {
        let (dev, mut pairs) = up(QUEUES);
        assert_eq!(pairs.len(), 4);
        assert_eq!(dev.reg(MRQC), MRQC_RSS);
        assert_eq!(dev.reg(MDIC), MDIC_AUTONEG, "auto-negotiation restarted");
        assert_eq!(dev.reg(RSSRK), 0xda56_5a6d);
        assert_eq!(dev.reg(RETA), 0x0302_0100, "queue numbers, round robin");
        assert!((0..32).all(|i| dev.reg(RETA + 4 * i) == 0x0302_0100));
        assert_eq!(dev.reg(0x00D8), 0xFFFF_FFFF, "interrupts masked");
        assert_eq!(dev.reg(0x0100) & 2, 2, "receiver on");
        assert_eq!(dev.reg(0x0400) & 2, 2, "transmitter on");
        for q in 0..4 {
            assert_eq!(dev.reg(SRRCTL + 0x100 * q), SRRCTL_BITS);
            assert_eq!(dev.reg(RXDCTL + 0x100 * q) & QUEUE_ENABLE, QUEUE_ENABLE);
            assert_eq!(dev.reg(TXDCTL + 0x100 * q) & QUEUE_ENABLE, QUEUE_ENABLE);
            for base in [0x2800, 0x3800] {
                let (at, n) = dev.ring_at(base + 0x100 * q);
                assert_eq!(n, RING);
                assert!(FakeHal::translate(at, RING as usize * 16).is_some());
            }
            assert_eq!(dev.reg(e1000::RDT + 0x100 * q), RING - 1);
        }
        for p in &mut pairs {
            assert_eq!(p.mac(), EthernetAddress(MAC));
            assert!(p.link_sense().link_up());
        }
    }

    #[test]
    fn one_pair_leaves_rss_off_and_three_make_a_three_way_table() {
        let (dev, pairs) = up(1);
        assert_eq!(pairs.len(), 1);
        assert_eq!(dev.reg(MRQC), 0);
        assert_eq!(dev.ring_at(0x2900).1, 0, "queue 1's ring never set up");
        assert_eq!(up(16).1.len(), QUEUES);
        let (dev, _) = up(3);
        let entries: Vec<u8> = (0..32)
            .flat_map(|i| dev.reg(RETA + 4 * i).to_le_bytes())
            .collect();
        assert!(entries
            .iter()
            .enumerate()
            .all(|(i, &q)| q as usize == i % 3));
    }

    #[test]
    fn each_queue_receives_and_sends_its_own_frames() {
        static BODY: [u8; 300] = [9; 300];
        let (mut dev, mut pairs) = up(4);
        let frames: Vec<Vec<u8>> = (0..4u8)
            .map(|q| vec![q + 1; 60 + 100 * q as usize])
            .collect();
        for (q, f) in frames.iter().enumerate() {
            assert!(dev.deliver_q(q, f));
        }
        let mut out = [RxFrame { buf: 0, len: 0 }; 8];
        for (p, want) in pairs.iter_mut().zip(&frames) {
            let (rx, tx) = p.split();
            assert_eq!(rx.burst(&mut out), 1);
            assert_eq!(rx.bytes(&out[0]), &want[..]);
            rx.recycle(out[0]);
            tx.slot().unwrap()[..54].fill(want[0]);
            tx.post(54, &BODY).unwrap();
            tx.flush();
        }
        for q in 0..4 {
            let sent = dev.transmitted_q(q);
            assert_eq!(sent.len(), 1, "queue {q}");
            assert_eq!(sent[0][0], q as u8 + 1);
        }
    }

    #[test]
    fn a_lying_device_on_advanced_descriptors_is_counted_and_dropped() {
        let (mut dev, mut pairs) = up(2);
        let (rx, _) = pairs[1].split();
        dev.write_back_rx_q(1, 0, 60, 0x03, 0);
        dev.write_back_rx_q(1, 1, 60, 0x01, 0); // no EOP
        dev.write_back_rx_q(1, 2, 0, 0x03, 0);
        dev.write_back_rx_q(1, 3, 2049, 0x03, 0); // one past the buffer
        dev.write_back_rx_q(1, 4, u16::MAX, 0x03, 0);
        dev.write_back_rx_q(1, 5, 1514, 0x03, 0);
        dev.write_back_rx_q(1, RING - 1, 60, 0x03, 0); // never posted
        let mut out = [RxFrame { buf: 0, len: 0 }; 2 * RING as usize];
        let n = rx.burst(&mut out);
        assert_eq!(n, 2);
        assert_eq!((out[0].len, out[1].len), (60, 1514));
        assert_eq!(rx.tally().1, 4);
        assert!(out[..n].iter().all(|f| rx.holds(rx.bytes(f))));
        assert_eq!(pairs[0].split().0.burst(&mut out), 0);
    }
}
